//! A receipt as an MCP tool result: the text the model reads, the receipt's JSON as
//! `structuredContent`, images as image content, `isError` for a failed command.
//!
//! The text is short on purpose (the model reads it on every step): the observation for
//! `get_browser_state`; one line for an action (what happened, what changed); the data for a
//! read. The full receipt is always in `structuredContent`, without the base64 an image
//! content block already carries.

use serde_json::{json, Map, Value};

use crate::protocol::Receipt;

/// The longest text of one result, in characters; the rest is cut with a note (the full
/// receipt stays in `structuredContent`).
const MAX_TEXT: usize = 40_000;

/// Fields of an action's receipt that say what happened, in the order the line gives them.
const ACTION_FIELDS: &[&str] = &[
    "count",
    "succeeded",
    "failed",
    "expectFailed",
    "stopReason",
    "mode",
    "changed",
    "fallbackFrom",
    "fallbackReason",
    "typed",
    "value",
    "selected",
    "key",
    "status",
    "navigated",
    "title",
    "requestId",
    "answer",
    "dialog",
    "coveredBy",
    "note",
    "warning",
    "hint",
];

/// Data fields of an action that hold a value the model asked for (a script's result, a human's
/// answers), given as compact JSON.
const ACTION_VALUES: &[&str] = &["result", "answers", "elicitation", "error"];
/// The longest compact JSON of one such value, and of one batch step's data, in characters.
const VALUE_CHARS: usize = 4_000;
const STEP_CHARS: usize = 600;
/// Fields of a failed command's data that say why, given with its text.
const FAILURE_FIELDS: &[&str] = &["hint", "coveredBy", "error", "errorCode", "note"];

/// Data fields that hold base64 (moved to image content or left out of the text).
const BASE64_FIELDS: &[&str] = &["base64", "imageBase64", "contentBase64"];

/// An image the result carries: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// The bytes, base64.
    pub data: String,
    /// `image/png`, `image/jpeg`, …
    pub mime: String,
}

/// The MIME type of an image file by its name.
pub fn image_mime(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".png") {
        Some("image/png")
    } else if lower.ends_with(".jpg") || lower.ends_with(".jpeg") {
        Some("image/jpeg")
    } else if lower.ends_with(".webp") {
        Some("image/webp")
    } else if lower.ends_with(".gif") {
        Some("image/gif")
    } else {
        None
    }
}

/// Cuts `text` to [`MAX_TEXT`] characters, saying so.
pub fn bounded(text: String) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_TEXT).collect();
    cut.push_str("\n[… cut: the full receipt is in structuredContent]");
    cut
}

/// A scalar as the line shows it.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            let short: String = s.chars().take(120).collect();
            Some(if short.len() < s.len() {
                format!("{short:?}…")
            } else {
                format!("{short:?}")
            })
        }
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The observation a state read gives: page, tabs, scroll hints and the indexed text. The tab
/// block only when there are several tabs: for one, it says the URL and title again.
fn observation(data: &Value) -> String {
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = format!("URL: {}\nTitle: {}\n", s("url"), s("title"));
    let tabs = s("browser_state");
    let one_tab = data
        .get("tabs")
        .and_then(Value::as_array)
        .is_some_and(|t| t.len() <= 1);
    if !tabs.is_empty() && !one_tab {
        out.push_str(tabs.trim_end());
        out.push('\n');
    }
    // The text itself says what lies above and below the viewport.
    out.push_str(s("text").trim_end());
    out.push('\n');
    for k in ["frameHint", "mediaHint", "elementsHint"] {
        if !s(k).is_empty() {
            out.push_str(&format!("{}\n", s(k)));
        }
    }
    out
}

/// Counts an action's line leaves out when they are 0.
const ZERO_UNSAID: &[&str] = &["failed", "expectFailed"];

/// The value of the first line of `page` (an observation) that starts with `label`.
fn page_line<'a>(page: Option<&'a str>, label: &str) -> Option<&'a str> {
    page?.lines().take(2).find_map(|l| l.strip_prefix(label))
}

/// One line for an action: what happened and what changed. With `page`, the observation of the
/// page after that follows it, the line leaves out a `url` or `title` that says the page's again.
fn action_line(receipt: &Receipt, page: Option<&str>) -> String {
    let data = &receipt.data;
    let mut line = format!("{} ok", receipt.method);
    let (page_url, page_title) = (page_line(page, "URL: "), page_line(page, "Title: "));
    let said_by_page = |k: &str, v: &Value| match k {
        "url" => page_url.is_some() && v.as_str() == page_url,
        "title" => page_title.is_some() && v.as_str() == page_title,
        _ => false,
    };
    let before = data.get("urlBefore").and_then(Value::as_str);
    let after = data.get("urlAfter").and_then(Value::as_str);
    if let (Some(b), Some(a)) = (before, after) {
        if a != b && Some(a) == page_url {
            line.push_str("; the URL changed");
        } else if a != b {
            line.push_str(&format!("; the URL changed to {a}"));
        }
    } else if let Some(url) = data
        .get("url")
        .filter(|v| !said_by_page("url", v))
        .and_then(Value::as_str)
    {
        line.push_str(&format!("; url={url}"));
    }
    let tabs = |k: &str| data.get(k).and_then(Value::as_i64);
    if let (Some(b), Some(a)) = (tabs("tabCountBefore"), tabs("tabCountAfter")) {
        if a > b {
            line.push_str(&format!("; a new tab opened ({a} tabs)"));
        } else if a < b {
            line.push_str(&format!("; a tab closed ({a} tabs)"));
        }
    }
    for k in ACTION_FIELDS {
        let Some(value) = data.get(*k) else {
            continue;
        };
        if said_by_page(k, value) || (ZERO_UNSAID.contains(k) && value.as_i64() == Some(0)) {
            continue;
        }
        if let Some(v) = scalar(value) {
            line.push_str(&format!("; {k}={v}"));
        }
    }
    for k in ACTION_VALUES {
        if let Some(v) = data.get(*k).filter(|v| !v.is_null()) {
            line.push_str(&format!("; {k}={}", compact(v, VALUE_CHARS)));
        }
    }
    batch_lines(data, &mut line);
    line
}

/// `v` as compact JSON of at most `max` characters.
fn compact(v: &Value, max: usize) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// A batch's steps: one line per step that failed or whose expectation did not hold, and the
/// data of each read step (an action's page shows in the observation after the batch).
fn batch_lines(data: &Value, line: &mut String) {
    let Some(results) = data.get("results").and_then(Value::as_array) else {
        return;
    };
    let registry = crate::commands::registry();
    for r in results {
        let command = r.get("command").and_then(Value::as_str).unwrap_or("?");
        let index = r.get("index").unwrap_or(&Value::Null);
        if r.get("ok") != Some(&json!(true)) {
            let err = r.get("error");
            line.push_str(&format!(
                "\n  step {index} {command}: {}: {}",
                err.and_then(|e| e.get("code"))
                    .and_then(Value::as_str)
                    .unwrap_or("FAILED"),
                err.and_then(|e| e.get("message"))
                    .or_else(|| r.get("msg"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ));
            continue;
        }
        if let Some(expect) = r
            .get("expectResult")
            .filter(|e| e.get("passed") == Some(&json!(false)))
        {
            line.push_str(&format!(
                "\n  step {index} {command}: expectation failed: {}",
                compact(expect, STEP_CHARS)
            ));
        }
        let read = registry.lookup(command).is_some_and(|s| !s.mutates_page);
        if read {
            if let Some(d) = r
                .get("data")
                .filter(|d| d.as_object().is_some_and(|o| !o.is_empty()))
            {
                line.push_str(&format!(
                    "\n  step {index} {command}: {}",
                    compact(d, STEP_CHARS)
                ));
            }
        }
    }
}

/// The data of a read, without base64, as compact JSON.
fn read_text(receipt: &Receipt) -> String {
    let mut data = receipt.data.clone();
    if let Some(obj) = data.as_object_mut() {
        for k in BASE64_FIELDS {
            if obj.remove(*k).is_some() {
                obj.insert(format!("{k}Omitted"), json!(true));
            }
        }
    }
    let body = match &data {
        Value::Object(o) if o.is_empty() => return format!("{} ok", receipt.method),
        v => serde_json::to_string(v).unwrap_or_default(),
    };
    format!("{} ok: {body}", receipt.method)
}

/// The text of a failed command: code, message, whether a retry is safe, whether it started.
pub fn failure_text(receipt: &Receipt) -> String {
    let code = receipt.code.map(|c| c.as_str()).unwrap_or("FAILED");
    let msg = receipt.msg.as_deref().unwrap_or("");
    let retry = if receipt.retryable {
        match receipt.retry_after_ms {
            Some(ms) => format!("retryable after {ms} ms"),
            None => "retryable".to_string(),
        }
    } else {
        "not retryable".to_string()
    };
    let started = if receipt.started {
        "it started (the page may have changed)"
    } else {
        "it did not start"
    };
    let mut text = format!(
        "{} failed: {code}: {msg} ({retry}; {started})",
        receipt.method
    );
    for k in FAILURE_FIELDS {
        if let Some(v) = receipt.data.get(*k).filter(|v| !v.is_null()) {
            let shown = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| compact(v, VALUE_CHARS));
            if !msg.contains(&shown) {
                text.push_str(&format!("; {k}: {shown}"));
            }
        }
    }
    batch_lines(&receipt.data, &mut text);
    text
}

/// The text the model reads for `receipt` of a command that `mutates` the page or not.
pub fn text(receipt: &Receipt, mutates: bool) -> String {
    text_with_page(receipt, mutates, None)
}

/// [`text`] followed by `page`, the observation of the page after the command (bounded on its
/// own); the action's line then leaves out a URL or title the observation says again.
pub fn text_with_page(receipt: &Receipt, mutates: bool, page: Option<&str>) -> String {
    if !receipt.ok {
        return failure_text(receipt);
    }
    let text = if receipt.method == "get_browser_state" {
        observation(&receipt.data)
    } else if mutates {
        action_line(receipt, page)
    } else {
        read_text(receipt)
    };
    let mut text = bounded(text);
    if let Some(page) = page {
        text.push_str("\n\nPage after:\n");
        text.push_str(page);
    }
    text
}

/// The receipt's JSON for `structuredContent`, without base64 an image block carries.
pub fn structured(receipt: &Receipt) -> Value {
    let mut json = receipt.to_json();
    if let Some(data) = json.get_mut("data").and_then(Value::as_object_mut) {
        for k in BASE64_FIELDS {
            if data.remove(*k).is_some() {
                data.insert(format!("{k}Omitted"), json!(true));
            }
        }
    }
    json
}

/// The inline image of a receipt's data (`base64` of screenshot with `inline`, `imageBase64`
/// of a human-input request), with the MIME type its path or format names.
pub fn inline_image(data: &Value) -> Option<Image> {
    for k in ["base64", "imageBase64"] {
        if let Some(b64) = data.get(k).and_then(Value::as_str) {
            if b64.is_empty() {
                continue;
            }
            let mime = ["path", "imagePath"]
                .iter()
                .find_map(|p| data.get(*p).and_then(Value::as_str).and_then(image_mime))
                .unwrap_or("image/png");
            return Some(Image {
                data: b64.to_string(),
                mime: mime.to_string(),
            });
        }
    }
    None
}

/// A `CallToolResult` as JSON: `text`, then the images, the receipt as `structuredContent`.
pub fn call_tool_result(
    text: String,
    images: &[Image],
    links: &[Value],
    structured: Value,
    is_error: bool,
) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    for img in images {
        content.push(json!({"type": "image", "data": img.data, "mimeType": img.mime}));
    }
    content.extend(links.iter().cloned());
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(content));
    out.insert("structuredContent".into(), structured);
    out.insert("isError".into(), json!(is_error));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn a_failure_says_code_retry_and_start() {
        let r = Receipt::failure(
            "click_element_by_index",
            ErrorCode::ElementNotFound,
            "no element 9".into(),
            None,
            false,
            1.0,
        );
        let t = text(&r, true);
        assert!(
            t.starts_with("click_element_by_index failed: ELEMENT_NOT_FOUND: no element 9"),
            "{t}"
        );
        assert!(
            t.contains("not retryable") && t.contains("did not start"),
            "{t}"
        );
    }

    #[test]
    fn an_action_line_names_what_changed() {
        let r = Receipt::success(
            "click_element_by_index",
            json!({"urlBefore": "http://a/1", "urlAfter": "http://a/2", "tabCountBefore": 1,
                   "tabCountAfter": 2, "changed": true, "mode": "native"}),
            3.0,
        );
        let t = text(&r, true);
        assert!(t.contains("the URL changed to http://a/2"), "{t}");
        assert!(t.contains("a new tab opened (2 tabs)"), "{t}");
        assert!(
            t.contains("mode=\"native\"") && t.contains("changed=true"),
            "{t}"
        );
        let js = Receipt::success("execute_js", json!({"result": {"n": 3}}), 1.0);
        assert!(
            text(&js, true).contains("result={\"n\":3}"),
            "{}",
            text(&js, true)
        );
    }

    #[test]
    fn the_page_after_is_not_said_twice() {
        let nav = Receipt::success(
            "navigate",
            json!({"url": "http://a/checkout", "status": 200, "title": "Checkout"}),
            3.0,
        );
        let page = "URL: http://a/checkout\nTitle: Checkout\n[0]<button >Pay/>\n";
        let t = text_with_page(&nav, true, Some(page));
        assert_eq!(t, format!("navigate ok; status=200\n\nPage after:\n{page}"));
        // Without the page, the line says them.
        let t = text(&nav, true);
        assert!(
            t.contains("url=http://a/checkout") && t.contains("title=\"Checkout\""),
            "{t}"
        );
        // A URL that is not the page's (a closed tab's, a cookie's) stays.
        let other = Receipt::success("close_tab", json!({"url": "http://b/"}), 1.0);
        let t = text_with_page(&other, true, Some(page));
        assert!(t.starts_with("close_tab ok; url=http://b/\n"), "{t}");
        let click = Receipt::success(
            "click_element_by_index",
            json!({"urlBefore": "http://a/1", "urlAfter": "http://a/2", "changed": true}),
            3.0,
        );
        let t = text_with_page(&click, true, Some("URL: http://a/2\n"));
        assert!(
            t.starts_with("click_element_by_index ok; the URL changed; changed=true\n"),
            "{t}"
        );
        // A batch with nothing failed does not count its failures.
        let batch = Receipt::success(
            "commands",
            json!({"count": 2, "succeeded": 2, "failed": 0, "expectFailed": 0, "results": []}),
            3.0,
        );
        assert_eq!(text(&batch, true), "commands ok; count=2; succeeded=2");
        let failed = Receipt::success(
            "commands",
            json!({"count": 2, "succeeded": 1, "failed": 1, "expectFailed": 0, "results": []}),
            3.0,
        );
        assert!(text(&failed, true).contains("failed=1"));
    }

    #[test]
    fn the_observation_lists_tabs_only_when_there_are_several() {
        let block = "Browser tab: 1, Title: \"A\", URL: \"http://a/\".";
        let mut data = json!({"url": "http://a/", "title": "A", "text": "[0]<a >x/>",
            "browser_state": format!("{block}\ncurrent tab is: 1"),
            "tabs": [{"index": 0, "url": "http://a/", "title": "A", "current": true}]});
        let one = text(
            &Receipt::success("get_browser_state", data.clone(), 1.0),
            false,
        );
        assert_eq!(one, "URL: http://a/\nTitle: A\n[0]<a >x/>\n");
        data["tabs"] = json!([{"index": 0}, {"index": 1}]);
        data["browser_state"] = json!(format!(
            "{block}\nBrowser tab: 2, Title: \"B\", URL: \"http://b/\".\ncurrent tab is: 1"
        ));
        let two = text(&Receipt::success("get_browser_state", data, 1.0), false);
        assert!(
            two.contains("Browser tab: 2") && two.contains("current tab is: 1"),
            "{two}"
        );
    }

    #[test]
    fn a_batch_names_its_failed_steps_and_the_data_of_its_reads() {
        let data = json!({"count": 3, "succeeded": 2, "failed": 1, "results": [
            {"index": 0, "command": "click_element_by_index", "ok": true, "data": {"mode": "native"}},
            {"index": 1, "command": "get_element_text", "ok": true, "data": {"text": "Total: 43"}},
            {"index": 2, "command": "input_text", "ok": false,
             "error": {"code": "ELEMENT_NOT_FOUND", "message": "no element 9"}},
        ]});
        let ok = Receipt::success("commands", data.clone(), 1.0);
        let t = text(&ok, true);
        assert!(
            t.contains("step 1 get_element_text: {\"text\":\"Total: 43\"}"),
            "{t}"
        );
        assert!(
            t.contains("step 2 input_text: ELEMENT_NOT_FOUND: no element 9"),
            "{t}"
        );
        assert!(
            !t.contains("step 0"),
            "an action step's page is in the observation: {t}"
        );
        let failed = Receipt::failure(
            "commands",
            ErrorCode::ActionFailed,
            "a step failed".into(),
            Some(data),
            true,
            1.0,
        );
        let ft = text(&failed, true);
        assert!(ft.contains("step 2 input_text: ELEMENT_NOT_FOUND"), "{ft}");
    }

    #[test]
    fn base64_goes_to_the_image_not_the_text() {
        let r = Receipt::success(
            "screenshot",
            json!({"path": "/x/1.png", "base64": "AAAA", "size": 4}),
            3.0,
        );
        assert!(!text(&r, false).contains("AAAA"));
        assert_eq!(structured(&r)["data"]["base64Omitted"], true);
        let img = inline_image(&r.data).expect("an image");
        assert_eq!(img.mime, "image/png");
    }
}
