//! The page-side probes, one real `.js` file each (JS-PROBES.md).
//!
//! A probe file is a function expression that takes one JSON argument, or (for the few
//! one-liners marked below) a plain expression. Values reach probes as call arguments, never
//! spliced into source.

/// DOM index builder with overlay and media hint (§1, §3, §15).
pub const DOM_INDEX_JS: &str = include_str!("dom_index.js");
/// Snapshot consistency stamp (§5).
pub const SNAPSHOT_WATCH_JS: &str = include_str!("snapshot_watch.js");
/// Re-resolution of snapshot locators (§6).
pub const RESOLVE_JS: &str = include_str!("resolve.js");
/// Interaction fingerprint (§7).
pub const FINGERPRINT_JS: &str = include_str!("fingerprint.js");
/// Element inspection, hit test, JS click, value setter and focus helpers (§8, §9).
pub const ELEMENT_PROBE_JS: &str = include_str!("element_probe.js");
/// DOM modal scan of one frame (§12).
pub const MODALS_JS: &str = include_str!("modals.js");
/// Origin of an iframe element's content box (called on the element).
pub const FRAME_OFFSET_JS: &str = include_str!("frame_offset.js");
/// `{url, readyState, title}` of a document.
pub const PAGE_STATUS_JS: &str = include_str!("page_status.js");
/// Hides or shows the highlight overlay around screenshots.
pub const OVERLAY_TOGGLE_JS: &str = include_str!("overlay_toggle.js");
/// Expression: `document.title`.
pub const DOCUMENT_TITLE_JS: &str = include_str!("document_title.js");
/// Expression: `location.href`.
pub const LOCATION_HREF_JS: &str = include_str!("location_href.js");
/// Called on an object: answers the object itself (to fetch a remote object by value).
pub const IDENTITY_JS: &str = include_str!("identity.js");
/// The box of the first element matching a CSS selector, scrolled into view.
pub const ELEMENT_RECT_JS: &str = include_str!("element_rect.js");
/// Called on a caller's prepared `execute_js` script: runs it and answers its result serialised
/// in the page (`{value, notes, more, navigation}`).
pub const SCRIPT_RESULT_JS: &str = include_str!("script_result.js");
