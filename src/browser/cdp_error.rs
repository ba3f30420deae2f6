//! The one place where CDP failures get an `ErrorCode`: chromiumoxide's `CdpError` and the
//! `{code, message}` of a protocol error answer. Nothing else looks inside them.

use chromiumoxide::error::CdpError;

use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// How long chromiumoxide waits for the answer to a command (its `REQUEST_TIMEOUT`, fixed for
/// page sessions whatever the browser config says).
pub const CDP_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Classifies a CDP failure of `what` (a short description of the call, e.g. `Runtime.evaluate`).
///
/// This is the only function that looks inside `CdpError`.
pub fn from_cdp(what: &str, err: CdpError) -> CommandError {
    match err {
        CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
            CommandError::browser_gone()
        }
        // chromiumoxide gives every command 30 s: the browser got it and never answered.
        CdpError::Timeout => CommandError::unanswered(what, CDP_REQUEST_TIMEOUT),
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
}
