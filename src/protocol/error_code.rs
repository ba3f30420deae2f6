//! `ErrorCode`: what kind of failure a receipt reports.
//!
//! The set is closed and the wire strings are stable (PROTOCOL.md §5.4 and §18). Whether a retry
//! is safe, and after how long, is a property of the code, never of a message text.

use std::fmt;

/// One kind of failure. Callers branch on this, never on `msg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Generic failure: the site or the engine refused the action. Change approach; not retryable.
    ActionFailed,
    /// Parameters failed validation; nothing ran. Fix the call and resend.
    InvalidArgument,
    /// The element never became actionable in time; it may still exist. Retry after 1500 ms.
    ActionTimeout,
    /// The action may or may not have taken effect. Read the page first; never resend blindly.
    ActionUncertain,
    /// Event-pump noise around an unrelated object; the page is usually fine.
    SpuriousDispatch,
    /// `execute_js` exceeded its in-page budget; the script may have half-run.
    EvalTimeout,
    /// The command's wall-clock bound expired (or it never got to run: see `started`).
    CommandTimeout,
    /// A selector matched nothing; fix the selector.
    ElementNotFound,
    /// The page was being rebuilt or navigated while the command ran.
    PageNavigating,
    /// Chrome showed its own network error page (`net::ERR_*`). Retry after 5000 ms.
    NetworkError,
    /// The element is read-only (`readonly` or `aria-readonly`).
    ElementReadOnly,
    /// The element is disabled.
    ElementDisabled,
    /// Another element receives the pointer at the target point; auto mode will not click through.
    ElementObscured,
    /// The element is not visible.
    ElementHidden,
    /// The element does not accept text.
    ElementNotEditable,
    /// The index is not in the current snapshot (or the element detached). Re-read the page.
    StaleElement,
    /// The site is throttling. Retry after 35 s.
    RateLimited,
    /// No command of that name; `msg` lists near names.
    UnknownMethod,
    /// No live task with that id.
    TaskNotFound,
    /// No object with the id the caller gave (a human-input `requestId`); fix the id. The
    /// Lua API's `NOT_FOUND` (LUA-API.md "Result").
    NotFound,
    /// The browser process died or its connection closed; the next `start` launches a new one.
    BrowserGone,
    /// The task's lane could not be taken within the bounded wait; nothing ran. Safe to resend.
    TaskBusy,
    /// A bug: a panic caught at the executor boundary. The process keeps serving.
    Internal,
}

impl ErrorCode {
    /// Every code, in the order of PROTOCOL.md §5.4 followed by §18.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::ActionFailed,
        ErrorCode::InvalidArgument,
        ErrorCode::ActionTimeout,
        ErrorCode::ActionUncertain,
        ErrorCode::SpuriousDispatch,
        ErrorCode::EvalTimeout,
        ErrorCode::CommandTimeout,
        ErrorCode::ElementNotFound,
        ErrorCode::PageNavigating,
        ErrorCode::NetworkError,
        ErrorCode::ElementReadOnly,
        ErrorCode::ElementDisabled,
        ErrorCode::ElementObscured,
        ErrorCode::ElementHidden,
        ErrorCode::ElementNotEditable,
        ErrorCode::StaleElement,
        ErrorCode::RateLimited,
        ErrorCode::UnknownMethod,
        ErrorCode::TaskNotFound,
        ErrorCode::NotFound,
        ErrorCode::BrowserGone,
        ErrorCode::TaskBusy,
        ErrorCode::Internal,
    ];

    /// The stable wire string (`SCREAMING_SNAKE`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ActionFailed => "ACTION_FAILED",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::ActionTimeout => "ACTION_TIMEOUT",
            ErrorCode::ActionUncertain => "ACTION_UNCERTAIN",
            ErrorCode::SpuriousDispatch => "SPURIOUS_DISPATCH",
            ErrorCode::EvalTimeout => "EVAL_TIMEOUT",
            ErrorCode::CommandTimeout => "COMMAND_TIMEOUT",
            ErrorCode::ElementNotFound => "ELEMENT_NOT_FOUND",
            ErrorCode::PageNavigating => "PAGE_NAVIGATING",
            ErrorCode::NetworkError => "NETWORK_ERROR",
            ErrorCode::ElementReadOnly => "ELEMENT_READ_ONLY",
            ErrorCode::ElementDisabled => "ELEMENT_DISABLED",
            ErrorCode::ElementObscured => "ELEMENT_OBSCURED",
            ErrorCode::ElementHidden => "ELEMENT_HIDDEN",
            ErrorCode::ElementNotEditable => "ELEMENT_NOT_EDITABLE",
            ErrorCode::StaleElement => "STALE_ELEMENT",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::UnknownMethod => "UNKNOWN_METHOD",
            ErrorCode::TaskNotFound => "TASK_NOT_FOUND",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::BrowserGone => "BROWSER_GONE",
            ErrorCode::TaskBusy => "TASK_BUSY",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// Parses a wire string.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// Whether resending the same command is safe by default for this kind of failure.
    ///
    /// `COMMAND_TIMEOUT` is not retryable in itself: the executor marks the "never started"
    /// variants retryable explicitly (PROTOCOL.md §4.2).
    pub fn retryable(self) -> bool {
        self.retry_after_ms().is_some()
    }

    /// The suggested wait before a resend, for retryable codes.
    pub fn retry_after_ms(self) -> Option<u64> {
        match self {
            ErrorCode::ActionTimeout => Some(1500),
            ErrorCode::PageNavigating => Some(1000),
            ErrorCode::NetworkError => Some(5000),
            ErrorCode::StaleElement => Some(300),
            ErrorCode::RateLimited => Some(35_000),
            ErrorCode::TaskBusy => Some(1000),
            _ => None,
        }
    }

    /// Whether this failure is raised by the checks an action makes before it acts (the
    /// element is stale, missing, hidden, covered, disabled, read-only, not editable, or never
    /// became actionable; the tab or request looked up does not exist): nothing was done.
    pub fn before_acting(self) -> bool {
        matches!(
            self,
            ErrorCode::StaleElement
                | ErrorCode::ActionTimeout
                | ErrorCode::ElementNotFound
                | ErrorCode::NotFound
                | ErrorCode::ElementObscured
                | ErrorCode::ElementHidden
                | ErrorCode::ElementDisabled
                | ErrorCode::ElementReadOnly
                | ErrorCode::ElementNotEditable
        )
    }

    /// Whether a failure with this code gets the page's URL and title attached (PROTOCOL.md
    /// §4.3): not when nothing ran, when the browser or task is gone, when the lane belongs to
    /// another command, nor after a timeout (the page is likely unresponsive).
    pub fn wants_page_context(self) -> bool {
        !matches!(
            self,
            ErrorCode::CommandTimeout
                | ErrorCode::EvalTimeout
                | ErrorCode::InvalidArgument
                | ErrorCode::BrowserGone
                | ErrorCode::TaskNotFound
                | ErrorCode::NotFound
                | ErrorCode::TaskBusy
                | ErrorCode::UnknownMethod
        )
    }

    /// The HTTP status the server answers with for this code (PROTOCOL.md §3).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidArgument => 400,
            _ => 200,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_strings_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
        assert_eq!(seen.len(), 23);
    }

    #[test]
    fn retry_table_matches_protocol() {
        let table = [
            ("ACTION_FAILED", None),
            ("INVALID_ARGUMENT", None),
            ("ACTION_TIMEOUT", Some(1500)),
            ("ACTION_UNCERTAIN", None),
            ("EVAL_TIMEOUT", None),
            ("ELEMENT_NOT_FOUND", None),
            ("PAGE_NAVIGATING", Some(1000)),
            ("NETWORK_ERROR", Some(5000)),
            ("ELEMENT_OBSCURED", None),
            ("STALE_ELEMENT", Some(300)),
            ("RATE_LIMITED", Some(35000)),
            ("TASK_BUSY", Some(1000)),
            ("BROWSER_GONE", None),
            ("NOT_FOUND", None),
            ("INTERNAL", None),
        ];
        for (name, after) in table {
            let code = ErrorCode::parse(name).unwrap();
            assert_eq!(code.retry_after_ms(), after, "{name}");
            assert_eq!(code.retryable(), after.is_some(), "{name}");
        }
        assert_eq!(ErrorCode::InvalidArgument.http_status(), 400);
        assert_eq!(ErrorCode::ActionFailed.http_status(), 200);
    }
}
