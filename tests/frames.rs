//! frames (pending the DOM probes).
