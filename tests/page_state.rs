//! page_state (pending the DOM probes).
