//! The HTTP envelopes of PROTOCOL.md §2–§3 and the compact trimming of §9: pure, so the server
//! stays an adapter (bytes → [`parse_request`] → `Executor::execute` → [`response`] → bytes).
//!
//! Request: `{id, method, params, responseMode, diagnostics}`, checked at the entry in the
//! order of §2.1. Response: `{ok, code: 1|0, data, msg}`, always a JSON object; null fields are
//! omitted; HTTP 400 when `data.invalidArgument` (§3).

use serde_json::{json, Map, Value};

use super::Receipt;

/// §2.1: the control endpoint was called with another HTTP method.
pub const NOT_POST: &str =
    "the control endpoint only accepts POST; put {id, method, params} in a JSON body";
/// §2.1: nothing but whitespace in the body.
pub const EMPTY_BODY: &str =
    "request body must not be empty; expected {\"id\":123,\"method\":\"start\",\"params\":{}}";
/// §2.1: the body parsed to `null`.
pub const NOT_AN_OBJECT: &str = "request body is not a valid JSON object";
/// §2.1: `method` absent, not a string or blank.
pub const MISSING_METHOD: &str = "missing parameter method";
/// §2.1: `id` neither a number nor a numeric string.
pub const BAD_ID: &str = "id must be a number or a numeric string";

/// One checked request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The task id (`id` as a number or numeric string), when given.
    pub id: Option<u64>,
    /// The command name (or `commands`), trimmed.
    pub method: String,
    /// `params` as sent (absent = `{}`); a non-object is left for the executor to refuse.
    pub params: Value,
    /// `responseMode: "compact"` (§9).
    pub compact: bool,
    /// `diagnostics: true`: with compact mode, keep the click diagnostics.
    pub diagnostics: bool,
}

/// A request refused at the entry (§2.1): no command logic ran.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryError {
    /// The reason, one of the constants above (or the JSON parser's message).
    pub msg: String,
    /// The method, when the body got that far (for the trace).
    pub method: Option<String>,
    /// The body as parsed, when it parsed (for the trace).
    pub body: Value,
}

fn entry(msg: impl Into<String>, method: Option<String>, body: Value) -> EntryError {
    EntryError {
        msg: msg.into(),
        method,
        body,
    }
}

/// `id` as a task id: a non-negative integer, or a string of one (surrounding blanks allowed).
fn task_id(id: &Value) -> Option<u64> {
    match id {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
}

/// Checks a request body in the order of §2.1: empty, not JSON (top-level arrays and scalars
/// included), `null`, `method`, `id`.
pub fn parse_request(body: &[u8]) -> Result<Request, EntryError> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(entry(EMPTY_BODY, None, Value::Null));
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Err(entry(
                format!("request body is not valid JSON: {e}"),
                None,
                Value::Null,
            ))
        }
    };
    let map = match value {
        Value::Object(map) => map,
        Value::Null => return Err(entry(NOT_AN_OBJECT, None, Value::Null)),
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return Err(entry(
                format!("request body is not valid JSON: expected an object, got {kind}"),
                None,
                other,
            ));
        }
    };
    let method = map
        .get("method")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    let Some(method) = method else {
        return Err(entry(MISSING_METHOD, None, Value::Object(map)));
    };
    let id = match map.get("id") {
        None | Some(Value::Null) => None,
        Some(v) => match task_id(v) {
            Some(id) => Some(id),
            None => return Err(entry(BAD_ID, Some(method), Value::Object(map))),
        },
    };
    let compact = map
        .get("responseMode")
        .and_then(Value::as_str)
        .is_some_and(|m| m.eq_ignore_ascii_case("compact"));
    let diagnostics = map.get("diagnostics") == Some(&Value::Bool(true));
    let params = match map.get("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p) => p.clone(),
    };
    Ok(Request {
        id,
        method,
        params,
        compact,
        diagnostics,
    })
}

/// `{ok:false, code:0, msg}`: a failure outside any command (entry checks, the upload endpoint,
/// a missing token).
pub fn failure(msg: &str) -> Value {
    json!({"ok": false, "code": 0, "msg": msg})
}

/// `{ok:true, code:1, data}`: a success outside any command (health, uploads).
pub fn success(data: Value) -> Value {
    json!({"ok": true, "code": 1, "data": data})
}

/// A receipt as the seed's envelope, with its HTTP status (400 for `invalidArgument`, else
/// 200), trimmed first when the request asked for compact mode.
pub fn response(receipt: Receipt, compact: bool, diagnostics: bool) -> (u16, Value) {
    let mut data = receipt.data;
    if compact {
        trim_compact(&receipt.method, &mut data, diagnostics);
    }
    let status = if data.get("invalidArgument") == Some(&Value::Bool(true)) {
        400
    } else {
        receipt.code.map_or(200, super::ErrorCode::http_status)
    };
    let mut map = Map::new();
    map.insert("ok".into(), json!(receipt.ok));
    map.insert("code".into(), json!(if receipt.ok { 1 } else { 0 }));
    if !data.is_null() {
        map.insert("data".into(), data);
    }
    if let Some(msg) = receipt.msg {
        map.insert("msg".into(), Value::String(msg));
    }
    (status, Value::Object(map))
}

/// The click diagnostics compact mode drops unless `diagnostics:true` (§9).
const CLICK_DIAGNOSTICS: &[&str] = &[
    "urlBefore",
    "urlAfter",
    "tabCountBefore",
    "tabCountAfter",
    "textLengthBefore",
    "textLengthAfter",
    "outerHtml",
];

/// §9: trims the protocol's own fields of `data` for `method` — never page content, script
/// results or params. `screenshot_path` always; the tab block of state reads; the click
/// diagnostics unless `diagnostics`; each step of a batch with its own command's rule.
pub fn trim_compact(method: &str, data: &mut Value, diagnostics: bool) {
    let Some(map) = data.as_object_mut() else {
        return;
    };
    map.remove("screenshot_path");
    if matches!(method, "get_browser_state" | "get_page_snapshot") {
        map.remove("browser_state");
        if map.contains_key("tabs") {
            map.remove("url");
            map.remove("title");
        }
    }
    let clicks = method.starts_with("click_")
        || matches!(method, "double_click_element_by_index" | "hover_and_click");
    if clicks && !diagnostics {
        for key in CLICK_DIAGNOSTICS {
            map.remove(*key);
        }
    }
    if method == "commands" {
        if let Some(Value::Array(steps)) = map.get_mut("results") {
            for step in steps {
                let name = step
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(d) = step.get_mut("data") {
                    trim_compact(&name, d, diagnostics);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    fn err(body: &str) -> String {
        parse_request(body.as_bytes()).unwrap_err().msg
    }

    #[test]
    fn entry_checks_run_in_the_spec_order() {
        assert_eq!(err(""), EMPTY_BODY);
        assert_eq!(err(" \n\t"), EMPTY_BODY);
        assert!(err("{nope").starts_with("request body is not valid JSON: "));
        assert!(err("[1,2]").contains("got an array"));
        assert!(err("42").starts_with("request body is not valid JSON"));
        assert_eq!(err("null"), NOT_AN_OBJECT);
        assert_eq!(err("{}"), MISSING_METHOD);
        assert_eq!(err(r#"{"method":"  "}"#), MISSING_METHOD);
        assert_eq!(err(r#"{"method":5}"#), MISSING_METHOD);
        // `method` is checked before `id`.
        assert_eq!(err(r#"{"id":"abc"}"#), MISSING_METHOD);
        assert_eq!(err(r#"{"id":"abc","method":"get_title"}"#), BAD_ID);
        assert_eq!(err(r#"{"id":-3,"method":"get_title"}"#), BAD_ID);
        assert_eq!(err(r#"{"id":1.5,"method":"get_title"}"#), BAD_ID);
        assert_eq!(err(r#"{"id":{},"method":"get_title"}"#), BAD_ID);
    }

    #[test]
    fn ids_are_numbers_or_numeric_strings() {
        let r = parse_request(br#"{"id":"1001","method":" get_title ","responseMode":"compact"}"#)
            .unwrap();
        assert_eq!(r.id, Some(1001));
        assert_eq!(r.method, "get_title");
        assert_eq!(r.params, json!({}));
        assert!(r.compact && !r.diagnostics);
        let r =
            parse_request(br#"{"id":7,"method":"x","params":{"a":1},"diagnostics":true}"#).unwrap();
        assert_eq!(r.id, Some(7));
        assert_eq!(r.params, json!({"a": 1}));
        assert!(r.diagnostics);
        assert_eq!(
            parse_request(br#"{"id":null,"method":"x"}"#).unwrap().id,
            None
        );
        assert_eq!(
            parse_request(br#"{"id":12.0,"method":"x"}"#).unwrap().id,
            Some(12)
        );
        // A non-object `params` reaches the executor, which refuses it as INVALID_ARGUMENT.
        assert_eq!(
            parse_request(br#"{"method":"x","params":[1]}"#)
                .unwrap()
                .params,
            json!([1])
        );
    }

    #[test]
    fn receipts_become_the_seed_envelope() {
        let ok = Receipt::success("get_title", json!({"title": "T"}), 1.0);
        let (status, body) = response(ok, false, false);
        assert_eq!(status, 200);
        assert_eq!(body, json!({"ok": true, "code": 1, "data": {"title": "T"}}));
        let bad = Receipt::failure(
            "click_element_by_index",
            ErrorCode::InvalidArgument,
            "click_element_by_index: missing index".into(),
            None,
            false,
            0.0,
        );
        let (status, body) = response(bad, false, false);
        assert_eq!(status, 400);
        assert_eq!(body["code"], 0);
        assert_eq!(body["data"]["errorCode"], "INVALID_ARGUMENT");
        assert!(body.get("error").is_none());
        let busy = Receipt::failure(
            "get_title",
            ErrorCode::TaskBusy,
            "b".into(),
            None,
            false,
            0.0,
        );
        assert_eq!(response(busy, false, false).0, 200);
    }

    #[test]
    fn compact_mode_trims_only_protocol_fields() {
        let click = json!({"clicked": true, "urlBefore": "a", "urlAfter": "b", "outerHtml": "<a>",
            "screenshot": "/data/1/2.png", "screenshot_path": "/x/2.png"});
        let mut d = click.clone();
        trim_compact("click_element_by_index", &mut d, false);
        assert_eq!(d, json!({"clicked": true, "screenshot": "/data/1/2.png"}));
        let mut d = click.clone();
        trim_compact("click_element_by_index", &mut d, true);
        assert_eq!(d["urlAfter"], "b");
        assert!(d.get("screenshot_path").is_none());
        let mut s =
            json!({"browser_state": "tabs…", "tabs": [], "url": "u", "title": "t", "text": "x"});
        trim_compact("get_browser_state", &mut s, false);
        assert_eq!(s, json!({"tabs": [], "text": "x"}));
        // A script's result is the caller's data, untouched.
        let mut js = json!({"result": {"screenshot_path": 1, "urlBefore": 2}});
        trim_compact("execute_js", &mut js, false);
        assert_eq!(js["result"]["urlBefore"], 2);
        let mut batch = json!({"results": [{"command": "hover_and_click", "data": {"urlBefore": "a", "ok": 1}},
            {"command": "get_title", "data": {"urlBefore": "kept"}}]});
        trim_compact("commands", &mut batch, false);
        assert!(batch["results"][0]["data"].get("urlBefore").is_none());
        assert_eq!(batch["results"][1]["data"]["urlBefore"], "kept");
        let receipt = Receipt::success("click_element_by_text", click, 0.0);
        let (_, body) = response(receipt, true, false);
        assert!(body["data"].get("outerHtml").is_none());
    }
}
