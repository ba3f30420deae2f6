//! Wall-clock time as the receipts, the trace and the recorders stamp it: milliseconds since the
//! Unix epoch.
//!
//! A leaf: it imports nothing of the crate, so every layer (the browser's recorders, the trace,
//! the jobs, the hosts) can stamp a time without importing another. Durations are measured with
//! `Instant`, never with this clock; the pure modules (`human.rs`) are handed the time instead.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch now (0 for a clock set before 1970).
pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
