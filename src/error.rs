//! `CommandError` and `StartError`, and the one place where CDP failures get an `ErrorCode`.
//!
//! Handlers return `Result<Value, CommandError>`; the executor turns the error into a receipt.
//! Nothing outside this file inspects `chromiumoxide::error::CdpError`.

use std::path::PathBuf;

use chromiumoxide::error::CdpError;
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
}

impl CommandError {
    /// A failure of kind `code`.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> CommandError {
        CommandError {
            code,
            msg: msg.into(),
            param: None,
            details: None,
        }
    }

    /// An `INVALID_ARGUMENT` failure naming `param`.
    pub fn invalid(param: &str, msg: impl Into<String>) -> CommandError {
        CommandError {
            code: ErrorCode::InvalidArgument,
            msg: msg.into(),
            param: Some(param.to_string()),
            details: None,
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

    /// Attaches data fields (an object) to the failure.
    pub fn with_details(mut self, details: Value) -> CommandError {
        self.details = Some(Box::new(details));
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

/// Classifies a CDP failure of `what` (a short description of the call, e.g. `Runtime.evaluate`).
///
/// This is the only function that looks inside `CdpError`.
pub fn from_cdp(what: &str, err: CdpError) -> CommandError {
    match err {
        CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
            CommandError::browser_gone()
        }
        CdpError::Timeout => CommandError::new(
            ErrorCode::ActionTimeout,
            format!("`{what}` got no answer from the browser in time"),
        ),
        CdpError::Chrome(e) => from_protocol_error(what, e.code, &e.message),
        CdpError::JavascriptException(details) => CommandError::new(
            ErrorCode::ActionFailed,
            format!("`{what}`: page script threw: {}", exception_text(&details)),
        ),
        CdpError::FrameNotFound(_) => CommandError::new(
            ErrorCode::PageNavigating,
            format!("`{what}`: the frame is gone (navigated or detached)"),
        ),
        CdpError::NotFound => CommandError::failed(format!("`{what}`: target not found")),
        other => CommandError::failed(format!("`{what}` failed: {other}")),
    }
}

/// Whether `err`, yielded by chromiumoxide's handler stream, means the connection is lost (the
/// pump then stops and publishes "browser gone") rather than one undecodable message.
pub fn is_connection_lost(err: &CdpError) -> bool {
    matches!(
        err,
        CdpError::Ws(_) | CdpError::Io(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse
    )
}

/// Classifies a CDP protocol error (`{code, message}` of a command response).
pub fn from_protocol_error(what: &str, code: i64, message: &str) -> CommandError {
    let lower = message.to_ascii_lowercase();
    let kind = if lower.contains("execution context was destroyed")
        || lower.contains("cannot find context with specified id")
        || lower.contains("inspected target navigated or closed")
        || lower.contains("frame was detached")
        || lower.contains("cannot find default execution context")
    {
        ErrorCode::PageNavigating
    } else if lower.contains("no node with given id")
        || lower.contains("could not find node with given id")
        || lower.contains("node is detached")
        || lower.contains("could not find object with given id")
    {
        ErrorCode::StaleElement
    } else {
        ErrorCode::ActionFailed
    };
    CommandError::new(
        kind,
        format!("`{what}` failed: {message} (CDP error {code})"),
    )
}

fn exception_text(details: &chromiumoxide::cdp::js_protocol::runtime::ExceptionDetails) -> String {
    let described = details
        .exception
        .as_ref()
        .and_then(|e| e.description.clone())
        .unwrap_or_else(|| details.text.clone());
    described.lines().next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_errors_are_classified_by_cdp_fields() {
        let e = from_protocol_error(
            "Runtime.callFunctionOn",
            -32000,
            "Execution context was destroyed.",
        );
        assert_eq!(e.code, ErrorCode::PageNavigating);
        let e = from_protocol_error("DOM.resolveNode", -32000, "No node with given id found");
        assert_eq!(e.code, ErrorCode::StaleElement);
        let e = from_protocol_error("Page.navigate", -32000, "Cannot navigate to invalid URL");
        assert_eq!(e.code, ErrorCode::ActionFailed);
        assert!(e.msg.contains("Cannot navigate"), "{}", e.msg);
    }

    #[test]
    fn lost_connection_is_browser_gone() {
        assert_eq!(
            from_cdp("x", CdpError::NoResponse).code,
            ErrorCode::BrowserGone
        );
    }

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
