//! interact (pending the DOM probes).
