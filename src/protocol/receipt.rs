//! `Receipt`: the one answer every command gives, whatever the caller (Lua, HTTP, REPL).

use serde_json::{json, Map, Value};

use super::ErrorCode;

/// The outcome of one command.
///
/// Invariants: `ok == code.is_none()`; a receipt with `started == false` describes a command that
/// never ran, so resending it changes nothing; `started == true` on a failure always comes with
/// `retryable == false` unless the code itself is retryable (PROTOCOL.md §4.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// The command did what it was asked (not: the business goal succeeded).
    pub ok: bool,
    /// The failure kind, `None` on success.
    pub code: Option<ErrorCode>,
    /// A human-readable reason, on failure.
    pub msg: Option<String>,
    /// The command's data object (`Value::Null` when there is none).
    pub data: Value,
    /// Safe to send again as it is.
    pub retryable: bool,
    /// Suggested wait before a resend, for retryable failures.
    pub retry_after_ms: Option<u64>,
    /// Whether the command began executing.
    pub started: bool,
    /// The command name as the caller wrote it (an alias stays the alias).
    pub method: String,
    /// Wall time in the engine, in milliseconds.
    pub elapsed_ms: f64,
}

/// Whether a data field holds a URL the receipt echoes (the page's or the caller's): `url`,
/// `urlAfter`, `frameUrl`, `href`, `src`, and the tab block `browser_state`, at any depth.
fn url_echo(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.ends_with("url")
        || k.starts_with("url")
        || matches!(k.as_str(), "href" | "src" | "browser_state")
}

/// Masks the strings under [`url_echo`] keys, at any depth.
fn redact_url_echoes(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    // A script's own value (`execute_js`) is the caller's data, not an echo.
                    _ if k == "result" => {}
                    // Request headers (`set_headers`' echo, recorded requests) and bodies.
                    Value::Object(_) if k == "headers" || k.ends_with("Headers") => {
                        crate::redact::value(v)
                    }
                    Value::String(s) if k == "postData" => {
                        if let std::borrow::Cow::Owned(masked) = crate::redact::body(s) {
                            *s = masked;
                        }
                    }
                    Value::String(s) if url_echo(k) => {
                        if let std::borrow::Cow::Owned(masked) = crate::redact::text(s) {
                            *s = masked;
                        }
                    }
                    _ => redact_url_echoes(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_url_echoes),
        _ => {}
    }
}

impl Receipt {
    /// Masks secrets in what the receipt echoes (PROTOCOL.md §18 "Redaction is one function"):
    /// its message (which may quote a param), the URLs it repeats (`url`, `urlAfter`, the tab
    /// block, `tabs[].url`, elements' `href` and `frameUrl`), request headers (`headers`,
    /// `requestHeaders`…: `Authorization`, cookies) and request bodies (`postData`). Page
    /// content (`text`, `result`, `value`) is the caller's data and is left as read.
    pub fn redact_echoes(&mut self) {
        crate::redact::message(&mut self.msg);
        redact_url_echoes(&mut self.data);
    }

    /// A successful receipt carrying `data`.
    pub fn success(method: &str, data: Value, elapsed_ms: f64) -> Receipt {
        Receipt {
            ok: true,
            code: None,
            msg: None,
            data,
            retryable: false,
            retry_after_ms: None,
            started: true,
            method: method.to_string(),
            elapsed_ms,
        }
    }

    /// A failed receipt. `data` gets the seed's failure fields (`errorCode`, `retryable`,
    /// `retryAfterMs`, `started`, and `invalidArgument` for argument errors) merged in; any other
    /// details the command attached stay, and so does a capture code in `errorCode`.
    pub fn failure(
        method: &str,
        code: ErrorCode,
        msg: String,
        details: Option<Value>,
        started: bool,
        elapsed_ms: f64,
    ) -> Receipt {
        let retry_after_ms = code.retry_after_ms();
        let retryable = retry_after_ms.is_some();
        let mut data = match details {
            Some(Value::Object(map)) => map,
            Some(Value::Null) | None => Map::new(),
            Some(other) => {
                let mut map = Map::new();
                map.insert("result".into(), other);
                map
            }
        };
        // A screenshot's failure names the capture's own code in its data (PROTOCOL.md §5:
        // `CAPTURE_CIRCUIT_OPEN` / `CAPTURE_FAILED` are "screenshot data only"); every other
        // failure's data repeats the receipt's code.
        let capture_code = matches!(
            data.get("errorCode").and_then(Value::as_str),
            Some("CAPTURE_CIRCUIT_OPEN" | "CAPTURE_FAILED")
        );
        if !capture_code {
            data.insert("errorCode".into(), json!(code.as_str()));
        }
        data.insert("retryable".into(), json!(retryable));
        if let Some(ms) = retry_after_ms {
            data.insert("retryAfterMs".into(), json!(ms));
        }
        data.insert("started".into(), json!(started));
        if code == ErrorCode::InvalidArgument {
            data.insert("invalidArgument".into(), json!(true));
        }
        Receipt {
            ok: false,
            code: Some(code),
            msg: Some(msg),
            data: Value::Object(data),
            retryable,
            retry_after_ms,
            started,
            method: method.to_string(),
            elapsed_ms,
        }
    }

    /// The receipt as one JSON object with the field names of LUA-API.md (`ok`, `code`, `msg`,
    /// `data`, `retryable`, `started`, `method`, `elapsed_ms`); absent values are omitted.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("ok".into(), json!(self.ok));
        if let Some(code) = self.code {
            map.insert("code".into(), json!(code.as_str()));
        }
        if let Some(msg) = &self.msg {
            map.insert("msg".into(), json!(msg));
        }
        if !self.data.is_null() {
            map.insert("data".into(), self.data.clone());
        }
        map.insert("retryable".into(), json!(self.retryable));
        if let Some(ms) = self.retry_after_ms {
            map.insert("retryAfterMs".into(), json!(ms));
        }
        map.insert("started".into(), json!(self.started));
        map.insert("method".into(), json!(self.method));
        map.insert("elapsed_ms".into(), json!(self.elapsed_ms));
        Value::Object(map)
    }

    /// This receipt's data with `other`'s outcome (ok, code, msg, retryability, started,
    /// method, elapsed).
    pub fn with_outcome_of(self, other: &Receipt) -> Receipt {
        Receipt {
            data: self.data,
            ok: other.ok,
            code: other.code,
            msg: other.msg.clone(),
            retryable: other.retryable,
            retry_after_ms: other.retry_after_ms,
            started: other.started,
            method: other.method.clone(),
            elapsed_ms: other.elapsed_ms,
        }
    }

    /// Re-labels a failure with `code` (its retryability follows the code).
    pub fn set_code(&mut self, code: ErrorCode) {
        self.code = Some(code);
        self.retry_after_ms = code.retry_after_ms();
        self.retryable = self.retry_after_ms.is_some();
        if let Value::Object(map) = &mut self.data {
            map.insert("errorCode".into(), json!(code.as_str()));
            map.insert("retryable".into(), json!(self.retryable));
            match self.retry_after_ms {
                Some(ms) => map.insert("retryAfterMs".into(), json!(ms)),
                None => map.remove("retryAfterMs"),
            };
        }
    }

    /// Marks a failure that never ran as safe to resend after `ms` (overload receipts).
    pub fn set_retryable(&mut self, ms: u64) {
        self.retryable = true;
        self.retry_after_ms = Some(ms);
        if let Value::Object(map) = &mut self.data {
            map.insert("retryable".into(), json!(true));
            map.insert("retryAfterMs".into(), json!(ms));
        }
    }

    /// Marks the failure as unsafe to resend (drops `retryAfterMs`).
    pub fn set_not_retryable(&mut self) {
        self.retryable = false;
        self.retry_after_ms = None;
        if let Value::Object(map) = &mut self.data {
            map.insert("retryable".into(), json!(false));
            map.remove("retryAfterMs");
        }
    }

    /// Attaches a field to `data` (turning non-object data into `{result: data}`), keeping any
    /// value the command already set.
    pub fn add_data_field(&mut self, key: &str, value: Value) {
        if !self.data.is_object() {
            let old = std::mem::take(&mut self.data);
            let mut map = Map::new();
            if !old.is_null() {
                map.insert("result".into(), old);
            }
            self.data = Value::Object(map);
        }
        if let Value::Object(map) = &mut self.data {
            map.entry(key.to_string()).or_insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_carries_seed_fields() {
        let r = Receipt::failure(
            "click_element_by_index",
            ErrorCode::StaleElement,
            "gone".into(),
            Some(json!({"index": 3})),
            true,
            1.5,
        );
        assert!(!r.ok);
        assert!(r.retryable);
        assert_eq!(r.data["errorCode"], "STALE_ELEMENT");
        assert_eq!(r.data["retryAfterMs"], 300);
        assert_eq!(r.data["index"], 3);
        assert_eq!(r.data["started"], true);
        let j = r.to_json();
        assert_eq!(j["code"], "STALE_ELEMENT");
        assert_eq!(j["method"], "click_element_by_index");
    }

    #[test]
    fn a_capture_code_in_the_details_reaches_the_caller() {
        let details = json!({"errorCode": "CAPTURE_CIRCUIT_OPEN", "retryAfterMs": 90_000});
        let r = Receipt::failure(
            "screenshot",
            ErrorCode::ActionFailed,
            "open".into(),
            Some(details),
            false,
            0.0,
        );
        assert_eq!(r.data["errorCode"], "CAPTURE_CIRCUIT_OPEN");
        assert_eq!(r.data["retryAfterMs"], 90_000);
        assert_eq!(r.to_json()["code"], "ACTION_FAILED");
        // Any other code in the details is the receipt's.
        let r = Receipt::failure(
            "x",
            ErrorCode::ActionFailed,
            "m".into(),
            Some(json!({"errorCode": "NOPE"})),
            true,
            0.0,
        );
        assert_eq!(r.data["errorCode"], "ACTION_FAILED");
    }

    #[test]
    fn invalid_argument_is_flagged_and_not_retryable() {
        let r = Receipt::failure(
            "x",
            ErrorCode::InvalidArgument,
            "m".into(),
            None,
            false,
            0.0,
        );
        assert_eq!(r.data["invalidArgument"], true);
        assert_eq!(r.data["retryable"], false);
        assert!(r.data.get("retryAfterMs").is_none());
    }

    #[test]
    fn add_data_field_wraps_scalars_and_keeps_existing() {
        let mut r = Receipt::success("x", json!(5), 0.0);
        r.add_data_field("urlAfter", json!("u"));
        assert_eq!(r.data, json!({"result": 5, "urlAfter": "u"}));
        r.add_data_field("urlAfter", json!("v"));
        assert_eq!(r.data["urlAfter"], "u");
    }
}
