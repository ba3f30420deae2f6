//! The capture circuit breaker of one task (PROTOCOL.md §8): automatic and manual screenshots
//! share it. `failThreshold` (3) consecutive failures open it for `cooldownMs` (120 s);
//! spurious failures are counted separately and open it for `spuriousCooldownMs` (15 s). An
//! expired cooldown is half-open: the counters start again from zero. A forced probe that fails
//! while it is open keeps the cooldown as it was (never extends it).

use std::time::{Duration, Instant};

use crate::protocol::ErrorCode;

/// Whether a capture failure is noise (event pump, page being replaced) rather than a real
/// one: counted apart, with the short cooldown.
pub fn is_spurious(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::SpuriousDispatch | ErrorCode::PageNavigating
    )
}

/// Consecutive failures (of one kind) that open the breaker.
pub const FAIL_THRESHOLD: u32 = 3;
/// How long non-spurious failures keep it open.
pub const COOLDOWN: Duration = Duration::from_secs(120);
/// How long spurious failures keep it open.
pub const SPURIOUS_COOLDOWN: Duration = Duration::from_secs(15);

/// Whether a capture may go ahead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gate {
    /// Closed: capture.
    Closed {
        /// A cooldown expired and no capture succeeded since.
        half_open: bool,
    },
    /// Open: no capture unless forced.
    Open {
        /// How long the cooldown still runs.
        left: Duration,
    },
}

/// One task's breaker.
#[derive(Debug, Default)]
pub struct Breaker {
    failures: u32,
    spurious: u32,
    open_until: Option<Instant>,
    half_open: bool,
}

impl Breaker {
    /// The gate at `now`; an expired cooldown turns half-open here (counters reset).
    pub fn gate(&mut self, now: Instant) -> Gate {
        match self.open_until {
            Some(until) if until > now => Gate::Open { left: until - now },
            Some(_) => {
                *self = Breaker {
                    half_open: true,
                    ..Breaker::default()
                };
                Gate::Closed { half_open: true }
            }
            None => Gate::Closed {
                half_open: self.half_open,
            },
        }
    }

    /// A capture succeeded: closed, counters reset.
    pub fn succeeded(&mut self) {
        *self = Breaker::default();
    }

    /// A capture failed at `now` (`spurious`: event-pump or navigation noise). While open (a
    /// forced probe) nothing changes; otherwise the failure counts and the threshold opens it.
    pub fn failed(&mut self, spurious: bool, now: Instant) {
        if matches!(self.gate(now), Gate::Open { .. }) {
            return;
        }
        let (count, cooldown) = if spurious {
            (&mut self.spurious, SPURIOUS_COOLDOWN)
        } else {
            (&mut self.failures, COOLDOWN)
        };
        *count += 1;
        if *count >= FAIL_THRESHOLD {
            *self = Breaker {
                open_until: Some(now + cooldown),
                ..Breaker::default()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_open_it_and_an_expired_cooldown_is_half_open() {
        let t0 = Instant::now();
        let mut b = Breaker::default();
        assert_eq!(b.gate(t0), Gate::Closed { half_open: false });
        b.failed(false, t0);
        b.failed(false, t0);
        assert_eq!(b.gate(t0), Gate::Closed { half_open: false });
        b.failed(false, t0);
        assert_eq!(b.gate(t0), Gate::Open { left: COOLDOWN });
        // A forced probe failing while open keeps the cooldown where it was.
        let later = t0 + Duration::from_secs(60);
        b.failed(false, later);
        assert_eq!(
            b.gate(later),
            Gate::Open {
                left: COOLDOWN - Duration::from_secs(60)
            }
        );
        // Expired: half-open, counters reset (two more failures do not reopen it).
        let after = t0 + COOLDOWN + Duration::from_millis(1);
        assert_eq!(b.gate(after), Gate::Closed { half_open: true });
        b.failed(false, after);
        b.failed(false, after);
        assert_eq!(b.gate(after), Gate::Closed { half_open: true });
        b.succeeded();
        assert_eq!(b.gate(after), Gate::Closed { half_open: false });
    }

    #[test]
    fn spurious_failures_count_apart_with_the_short_cooldown() {
        let t0 = Instant::now();
        let mut b = Breaker::default();
        b.failed(false, t0);
        b.failed(false, t0);
        b.failed(true, t0);
        b.failed(true, t0);
        assert_eq!(
            b.gate(t0),
            Gate::Closed { half_open: false },
            "2 + 2 is not 3 of a kind"
        );
        b.failed(true, t0);
        assert_eq!(
            b.gate(t0),
            Gate::Open {
                left: SPURIOUS_COOLDOWN
            }
        );
        // A success in between starts the count again.
        let mut c = Breaker::default();
        c.failed(false, t0);
        c.failed(false, t0);
        c.succeeded();
        c.failed(false, t0);
        assert_eq!(c.gate(t0), Gate::Closed { half_open: false });
    }
}
