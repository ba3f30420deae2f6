//! `CommandError` and `StartError`.
//!
//! Handlers return `Result<Value, CommandError>`; the executor turns the error into a receipt.
//! CDP failures get their `ErrorCode` in `browser/cdp_error.rs`, the only code that looks
//! inside chromiumoxide's errors.

use std::path::PathBuf;

use serde_json::Value;

use crate::protocol::ErrorCode;

/// One failure of one command.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{msg}")]
pub struct CommandError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// The reason, for people: lower-case start, names in backticks.
    pub msg: String,
    /// The parameter at fault, for `INVALID_ARGUMENT`.
    pub param: Option<String>,
    /// Extra fields merged into the receipt's `data` (what was observed, hints).
    pub details: Option<Box<Value>>,
    /// Set when the failure came after the command reached the browser and its effect is not
    /// known (no answer in time): the receipt then says `started:true`, whatever the code.
    pub outcome_unknown: bool,
    /// Set when the command refused before anything reached the browser (a capture circuit
    /// that is open): the receipt then says `started:false`, whatever the code.
    pub not_started: bool,
    /// When set, the receipt's retryability instead of the code's default: `Some(ms)`
    /// retryable after `ms` (only for a failure that did not start), `None` not retryable
    /// (always: no resend can help). A batch none of
    /// whose steps started answers as its first failed step did.
    pub retry_as: Option<Option<u64>>,
}

impl CommandError {
    /// A failure of kind `code`.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> CommandError {
        CommandError {
            code,
            msg: msg.into(),
            param: None,
            details: None,
            outcome_unknown: false,
            not_started: false,
            retry_as: None,
        }
    }

    /// An `INVALID_ARGUMENT` failure naming `param`.
    pub fn invalid(param: &str, msg: impl Into<String>) -> CommandError {
        CommandError {
            code: ErrorCode::InvalidArgument,
            msg: msg.into(),
            param: Some(param.to_string()),
            details: None,
            outcome_unknown: false,
            not_started: false,
            retry_as: None,
        }
    }

    /// An `ACTION_FAILED` failure.
    pub fn failed(msg: impl Into<String>) -> CommandError {
        CommandError::new(ErrorCode::ActionFailed, msg)
    }

    /// The browser is gone.
    pub fn browser_gone() -> CommandError {
        CommandError::new(
            ErrorCode::BrowserGone,
            "the browser process exited or its connection closed; the next `start` launches a new one",
        )
    }

    /// The browser got `what` and gave no answer within `waited`: whether it acted is not known.
    /// `COMMAND_TIMEOUT`, `started:true`, `outcomeUnknown:true`, `pageUnresponsive:true`.
    pub fn unanswered(what: &str, waited: std::time::Duration) -> CommandError {
        CommandError::new(
            ErrorCode::CommandTimeout,
            format!(
                "`{what}` got no answer from the page within {} s (its main thread is busy or \
                 hung); outcome unknown",
                waited.as_secs()
            ),
        )
        .with_details(serde_json::json!({"outcomeUnknown": true, "pageUnresponsive": true}))
        .sent()
    }

    /// Answers with this retryability rather than the code's (see [`CommandError::retry_as`]).
    pub fn retrying_as(mut self, retry_after_ms: Option<u64>) -> CommandError {
        self.retry_as = Some(retry_after_ms);
        self
    }

    /// Marks the failure as refused before anything reached the browser: `started:false`.
    pub fn not_sent(mut self) -> CommandError {
        self.not_started = true;
        self
    }

    /// Marks the failure as one that came after the command reached the browser, with an
    /// unknown effect (`started:true`, `outcomeUnknown:true`).
    pub fn sent(mut self) -> CommandError {
        self.outcome_unknown = true;
        match self.details.as_deref_mut() {
            Some(Value::Object(map)) => {
                map.insert("outcomeUnknown".into(), Value::Bool(true));
            }
            _ => self.details = Some(Box::new(serde_json::json!({"outcomeUnknown": true}))),
        }
        self
    }

    /// The data field `key` of the failure's details.
    pub fn detail(&self, key: &str) -> Option<&Value> {
        self.details.as_deref().and_then(|d| d.get(key))
    }

    /// Attaches data fields (an object) to the failure, merged over those already there.
    pub fn with_details(mut self, details: Value) -> CommandError {
        match (self.details.as_deref_mut(), details) {
            (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
            (_, details) => self.details = Some(Box::new(details)),
        }
        self
    }
}

/// Failure to launch or connect to a browser.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No Chromium executable was found.
    #[error(
        "no Chromium found (tried: {}); install it with `apt-get install chromium`, \
         or pass `--chromium PATH` or set MOONPILOT_CHROMIUM",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NotFound {
        /// Every path that was looked at.
        tried: Vec<PathBuf>,
    },
    /// Chromium started but did not come up.
    #[error("launching `{}` failed: {reason}", path.display())]
    Launch {
        /// The executable that was run.
        path: PathBuf,
        /// The launcher's message, with the tail of Chromium's stderr when there is one.
        reason: String,
    },
    /// Attaching to an existing browser (`--cdp-url`) failed.
    #[error("connecting to `{url}` failed: {reason}")]
    Connect {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The profile directory could not be prepared.
    #[error("preparing the profile directory `{}` failed: {source}", path.display())]
    Profile {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_error_names_what_was_tried() {
        let e = StartError::NotFound {
            tried: vec![
                PathBuf::from("/usr/bin/chromium"),
                PathBuf::from("chromium (PATH)"),
            ],
        };
        let text = e.to_string();
        assert!(text.contains("/usr/bin/chromium") && text.contains("apt-get install chromium"));
        assert!(text.contains("MOONPILOT_CHROMIUM"));
    }
}
