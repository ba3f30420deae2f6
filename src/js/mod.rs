//! The page-side probes, one real `.js` file each (JS-PROBES.md), and their reply envelope.
//!
//! A probe file is a function expression that takes one JSON argument, or (for the few
//! one-liners marked below) a plain expression. Values reach probes as call arguments, never
//! spliced into source.
//!
//! The element probes share `probe_lib.js` (the one locator resolver, the identity rule, the hit
//! test, value read-back and the page fingerprint). It is joined in front of each of them at
//! compile time with `concat!`: the library is an expression that takes the probe, written as
//! `((args, lib) => ...)`, and answers the one-argument function Chromium calls. Nothing is
//! assembled at run time.
//!
//! Every function probe answers one envelope, `{ok:true, value}` or
//! `{ok:false, code, msg[, data]}`; [`reply`] turns it into a typed `Result`.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// A function probe, joined inside `well_formed.js` (every string it answers well-formed).
macro_rules! probe {
    ($file:literal) => {
        concat!(
            include_str!("well_formed.js"),
            "(",
            include_str!($file),
            ")"
        )
    };
}

/// An element probe: `probe_lib.js` applied to the probe, inside `well_formed.js`.
macro_rules! lib_probe {
    ($file:literal) => {
        concat!(
            include_str!("well_formed.js"),
            "((",
            include_str!("probe_lib.js"),
            ")(",
            include_str!($file),
            "))"
        )
    };
}

/// The wrapper every function probe is joined inside (exposed alone for the tests below).
pub const WELL_FORMED_JS: &str = include_str!("well_formed.js");
/// The helpers joined in front of the element probes (exposed alone for the tests below).
pub const PROBE_LIB_JS: &str = include_str!("probe_lib.js");
/// DOM index builder with overlay and media hint (§1, §3, §15).
pub const DOM_INDEX_JS: &str = lib_probe!("dom_index.js");
/// What an action set going, in the page's main world: `install`, `arm`, `settle`.
pub const CLICK_WATCH_JS: &str = probe!("click_watch.js");
/// Snapshot consistency stamp (§5).
pub const SNAPSHOT_WATCH_JS: &str = probe!("snapshot_watch.js");
/// Re-resolution of snapshot locators with the identity check (§6).
pub const RESOLVE_JS: &str = lib_probe!("resolve.js");
/// Interaction fingerprint (§7): the page mark `{url, textLength, fingerprint}`.
pub const FINGERPRINT_JS: &str = lib_probe!("fingerprint.js");
/// Element inspection with hit test, JS click, value setter, focus and read-back (§8, §9).
pub const ELEMENT_PROBE_JS: &str = lib_probe!("element_probe.js");
/// What a mouse click at a viewport point reaches, with the page mark before it.
pub const POINT_PROBE_JS: &str = lib_probe!("point_probe.js");
/// What the conditional waits look for in a frame: selector matches, text matches, body text.
pub const WAIT_MATCH_JS: &str = lib_probe!("wait_match.js");
/// Content fingerprint of `wait_for_stable` (§11).
pub const CONTENT_FINGERPRINT_JS: &str = probe!("content_fingerprint.js");
/// The index interactions' element ops: check state, focus, drop-downs, scrolling, file
/// inputs and their read-back, the focused element (§9, §14).
pub const ELEMENT_ACTIONS_JS: &str = lib_probe!("element_actions.js");
/// `moonpilot record`'s page-side recorder: called once per frame, in an isolated world, with
/// `{binding, testId}`; reports what a person does through the binding (src/record/).
pub const RECORDER_JS: &str = lib_probe!("recorder.js");
/// Expression, evaluated in a frame's main world: its `document` as a remote object, the root
/// that `Tab::listener_targets` lists event listeners under.
pub const LISTENER_ROOT_JS: &str = include_str!("listener_root.js");
/// Called in a frame's probe world with remote nodes as arguments: stores the listener-only
/// targets in the world-global WeakSets `__mpListen` / `__mpFramework` that the DOM index reads.
pub const LISTENER_STORE_JS: &str = include_str!("listener_store.js");
/// Called in a frame's main world: the elements carrying a React/Vue click handler, only when the
/// page has a React or Vue root (answers an array, not the envelope).
pub const FRAMEWORK_TARGETS_JS: &str = include_str!("framework_targets.js");
/// Framework traces of event listeners (§13.1), called on an element in the page's main world.
pub const LISTENER_TRACES_JS: &str = probe!("listener_traces.js");
/// The image behind an element: its URL, alt text and natural size (download_image).
pub const IMAGE_INFO_JS: &str = lib_probe!("image_info.js");
/// Element reads: text (with the canvas diagnosis), HTML, value, attribute, checked state,
/// framework listener traces, and the element itself for a remote handle (§9, §13).
pub const ELEMENT_READ_JS: &str = lib_probe!("element_read.js");
/// Reading a frame as data: body text and links, tables, Markdown, text search (§15).
pub const PAGE_READ_JS: &str = lib_probe!("page_read.js");
/// The form-state reader of `get_form_state` (§10); password values never leave the page.
pub const FORM_STATE_JS: &str = lib_probe!("form_state.js");
/// DOM modal scan of one frame (§12).
pub const MODALS_JS: &str = probe!("modals.js");
/// Origin of an iframe element's content box (called on the element).
pub const FRAME_OFFSET_JS: &str = probe!("frame_offset.js");
/// `{url, readyState, title}` of a document.
pub const PAGE_STATUS_JS: &str = probe!("page_status.js");
/// Whether `{zone}` is a time zone the browser knows (`start{timezone}`).
pub const TIME_ZONE_JS: &str = probe!("time_zone.js");
/// Hides or shows the highlight overlay around screenshots.
pub const OVERLAY_TOGGLE_JS: &str = probe!("overlay_toggle.js");
/// Expression: `document.title`.
pub const DOCUMENT_TITLE_JS: &str = include_str!("document_title.js");
/// Expression: `location.href`.
pub const LOCATION_HREF_JS: &str = include_str!("location_href.js");
/// The box of the first element matching a CSS selector, scrolled into view.
pub const ELEMENT_RECT_JS: &str = probe!("element_rect.js");
/// Reads, writes or clears the current origin's `localStorage` (`{op, key, value}`).
pub const LOCAL_STORAGE_JS: &str = probe!("local_storage.js");
/// The init script every tab gets before any page script: hides `navigator.webdriver`.
pub const STEALTH_JS: &str = include_str!("stealth.js");

/// The key the click watch's state is found by (through the Proxy of `setTimeout`): random per
/// process, so no page can guess it, and never shown to one except as a probe's argument.
pub fn click_watch_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut key = String::from("mp");
        for _ in 0..2 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            key.push_str(&format!("{:016x}", h.finish()));
        }
        key
    })
}

/// The init script that installs the click watch before any page script, so the timers a
/// page sets from its start are known as its own, not an action's.
pub fn click_watch_install() -> String {
    let arg = serde_json::json!({"op": "install", "key": click_watch_key()});
    format!("({CLICK_WATCH_JS})({arg});")
}
/// Called on a caller's prepared `execute_js` script: runs it and answers its result serialised
/// in the page (`{value, notes, more, navigation}`).
pub const SCRIPT_RESULT_JS: &str = probe!("script_result.js");

/// Opens a probe's reply envelope: the `value` of `{ok:true, value}` deserialised as `T`, or
/// the failure of `{ok:false, code, msg, data}` with its code (`PROBE_FAILED` and unknown
/// codes are `ACTION_FAILED`) and `data` as the error's details. A reply without the envelope,
/// or a value of the wrong shape, is `ACTION_FAILED`.
pub fn reply<T: DeserializeOwned>(raw: Value) -> Result<T, CommandError> {
    let Value::Object(mut map) = raw else {
        return Err(CommandError::failed("probe returned no result"));
    };
    match map.get("ok").and_then(Value::as_bool) {
        Some(true) => {
            let value = map.remove("value").unwrap_or(Value::Null);
            serde_json::from_value(value)
                .map_err(|e| CommandError::failed(format!("unreadable probe reply: {e}")))
        }
        Some(false) => {
            let code = map
                .get("code")
                .and_then(Value::as_str)
                .and_then(ErrorCode::parse)
                .unwrap_or(ErrorCode::ActionFailed);
            let msg = map
                .get("msg")
                .and_then(Value::as_str)
                .unwrap_or("probe failed")
                .to_string();
            let err = CommandError::new(code, msg);
            Err(match map.remove("data") {
                Some(data @ Value::Object(_)) => err.with_details(data),
                _ => err,
            })
        }
        None => Err(CommandError::failed("probe returned no result")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn joined_probes_are_the_library_applied_to_the_probe_inside_well_formed() {
        const WF: &str = WELL_FORMED_JS;
        for probe in [
            RESOLVE_JS,
            FINGERPRINT_JS,
            ELEMENT_PROBE_JS,
            ELEMENT_ACTIONS_JS,
            ELEMENT_READ_JS,
            IMAGE_INFO_JS,
            WAIT_MATCH_JS,
            POINT_PROBE_JS,
            PAGE_READ_JS,
            FORM_STATE_JS,
            DOM_INDEX_JS,
        ] {
            // `wf((lib)(probe))`: the probe half is a parenthesised function.
            let inner = probe.strip_prefix(WF).and_then(|p| p.strip_prefix("(("));
            let inner = inner.and_then(|p| p.strip_prefix(PROBE_LIB_JS));
            let inner = inner.and_then(|p| p.strip_prefix(")("));
            assert!(inner.is_some_and(
                |p| p.trim_start().starts_with("((args, lib) =>") && p.ends_with("))")
            ));
        }
        for probe in [MODALS_JS, SCRIPT_RESULT_JS, PAGE_STATUS_JS] {
            assert!(probe.starts_with(concat!(include_str!("well_formed.js"), "(")));
        }
        assert!(PROBE_LIB_JS.trim_end().ends_with(')'));
        assert!(WF.trim_end().ends_with(')'));
    }

    #[test]
    fn replies_are_typed_or_failures_with_their_code() {
        let v: Vec<u32> = reply(json!({"ok": true, "value": [1, 2]})).unwrap();
        assert_eq!(v, vec![1, 2]);
        let e = reply::<Value>(json!({"ok": false, "code": "STALE_ELEMENT", "msg": "gone",
            "data": {"reason": "gone"}}))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::StaleElement);
        assert_eq!(e.msg, "gone");
        assert_eq!(e.details.unwrap()["reason"], "gone");
        let e = reply::<Value>(json!({"ok": false, "code": "PROBE_FAILED"})).unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (ErrorCode::ActionFailed, "probe failed")
        );
        let e = reply::<Value>(json!([1])).unwrap_err();
        assert_eq!(e.msg, "probe returned no result");
        let e = reply::<Vec<u32>>(json!({"ok": true, "value": "x"})).unwrap_err();
        assert!(e.msg.starts_with("unreadable probe reply"), "{}", e.msg);
    }
}
