//! `Params`: the typed, read-tracking reader of a command's `params` object.
//!
//! Every getter checks presence and type and fails with `INVALID_ARGUMENT` naming the parameter
//! (PROTOCOL.md §2 and §18). Reads are recorded so the executor can report params the command
//! never looked at (`unknownParams`, PROTOCOL.md §7). Messages never name the command: the
//! executor adds that prefix.

use serde_json::{Map, Value};

use crate::error::CommandError;

/// Framework params that any command may carry and that are never reported as unknown.
pub const FRAMEWORK_PARAMS: &[&str] = &["retryOnSpurious", "async", "strict"];

/// The seed's confusable param names (PROTOCOL.md §7): (what callers send, what is meant).
/// Tab lists answer `index`; the tab commands take `pageIndex`.
pub const CONFUSABLE: &[(&str, &str)] = &[("index", "pageIndex")];

/// The hint for a caller who sent `sent` where `meant` is the param.
pub fn confusion_hint(sent: &str, meant: &str) -> String {
    format!(
        "you sent `{sent}`: the response field is called `{sent}`, but this parameter is `{meant}`"
    )
}

/// The `params` object of one call, with the set of keys read so far.
#[derive(Debug, Clone, Default)]
pub struct Params {
    map: Map<String, Value>,
    read: Vec<String>,
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The params reader's coercions, shared with the executor's check of declared params
/// (`ParamSpec::check`), so the two can never disagree about what a value means.
pub mod coerce {
    use serde_json::Value;

    /// A string: a string, or a number's decimal text.
    pub fn string(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// An integer: `Some(None)` for a blank string (counts as absent); numeric strings are
    /// parsed, fractions refused.
    pub fn int(v: &Value) -> Option<Option<i64>> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .map(Some),
            Value::String(s) if s.trim().is_empty() => Some(None),
            Value::String(s) => s.trim().parse::<i64>().ok().map(Some),
            _ => None,
        }
    }

    /// A finite number; numeric strings are parsed.
    pub fn number(v: &Value) -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            _ => None,
        }
    }

    /// A boolean; `"true"`/`"false"` strings are accepted.
    pub fn boolean(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s == "true" => Some(true),
            Value::String(s) if s == "false" => Some(false),
            _ => None,
        }
    }

    /// An array; an empty object counts as an empty array (Lua cannot tell `{}` from `[]`).
    pub fn array(v: &Value) -> Option<Vec<Value>> {
        match v {
            Value::Array(a) => Some(a.clone()),
            Value::Object(m) if m.is_empty() => Some(Vec::new()),
            _ => None,
        }
    }
}

pub(crate) fn wrong_type(name: &str, expected: &str, got: &Value) -> CommandError {
    CommandError::invalid(
        name,
        format!("param `{name}`: expected {expected}, got {}", kind_of(got)),
    )
}

impl Params {
    /// Wraps a `params` value: an object, or `null`/absent for none. Anything else is refused.
    pub fn new(value: Value) -> Result<Params, CommandError> {
        match value {
            Value::Object(map) => Ok(Params {
                map,
                read: Vec::new(),
            }),
            Value::Null => Ok(Params::default()),
            other => Err(CommandError::invalid(
                "params",
                format!("`params` must be an object, got {}", kind_of(&other)),
            )),
        }
    }

    /// The raw object, for echoing into traces.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.map
    }

    fn take(&mut self, name: &str) -> Option<&Value> {
        if !self.read.iter().any(|r| r == name) {
            self.read.push(name.to_string());
        }
        match self.map.get(name) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// Whether the caller sent `name` with a non-null value (counts as a read).
    pub fn has(&mut self, name: &str) -> bool {
        self.take(name).is_some()
    }

    /// The `INVALID_ARGUMENT` for a missing `name` (with the seed's confusable-name hint).
    pub fn missing(&self, name: &str) -> CommandError {
        let mut msg = format!("missing parameter `{name}`");
        if let Some(hint) = self.confused_for(name) {
            msg.push_str("; ");
            msg.push_str(&hint);
        }
        CommandError::invalid(name, msg)
    }

    /// When the caller sent a name that is confused with `name` (PROTOCOL.md §7) and not `name`
    /// itself, the hint that says so. Reads nothing.
    pub fn confused_for(&self, name: &str) -> Option<String> {
        if self.map.get(name).is_some_and(|v| !v.is_null()) {
            return None;
        }
        CONFUSABLE
            .iter()
            .find(|(sent, meant)| *meant == name && self.map.contains_key(*sent))
            .map(|(sent, meant)| confusion_hint(sent, meant))
    }

    /// An optional string. `""` counts as absent; a number becomes its decimal text.
    pub fn str_opt(&mut self, name: &str) -> Result<Option<String>, CommandError> {
        Ok(self.str_keep_empty(name)?.filter(|s| !s.is_empty()))
    }

    /// An optional string where `""` is a legal value (`prompt`, `answer`).
    pub fn str_keep_empty(&mut self, name: &str) -> Result<Option<String>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => coerce::string(v)
                .map(Some)
                .ok_or_else(|| wrong_type(name, "string", v)),
        }
    }

    /// A required string; absent, `null` and `""` are missing.
    pub fn str_req(&mut self, name: &str) -> Result<String, CommandError> {
        self.str_opt(name)?.ok_or_else(|| self.missing(name))
    }

    /// An optional integer; numeric strings are parsed, fractions refused.
    pub fn int_opt(&mut self, name: &str) -> Result<Option<i64>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => coerce::int(v).ok_or_else(|| wrong_type(name, "integer", v)),
        }
    }

    /// A required integer.
    pub fn int_req(&mut self, name: &str) -> Result<i64, CommandError> {
        self.int_opt(name)?.ok_or_else(|| self.missing(name))
    }

    /// An optional number; numeric strings are parsed.
    pub fn num_opt(&mut self, name: &str) -> Result<Option<f64>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => coerce::number(v)
                .map(Some)
                .ok_or_else(|| wrong_type(name, "number", v)),
        }
    }

    /// An optional boolean; `"true"`/`"false"` strings are accepted.
    pub fn bool_opt(&mut self, name: &str) -> Result<Option<bool>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => coerce::boolean(v)
                .map(Some)
                .ok_or_else(|| wrong_type(name, "boolean", v)),
        }
    }

    /// A boolean with a default for absent.
    pub fn bool_or(&mut self, name: &str, default: bool) -> Result<bool, CommandError> {
        Ok(self.bool_opt(name)?.unwrap_or(default))
    }

    /// An optional JSON object.
    pub fn object_opt(&mut self, name: &str) -> Result<Option<Map<String, Value>>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(other) => Err(wrong_type(name, "object", other)),
        }
    }

    /// An optional JSON array. An empty object counts as an empty array (Lua cannot tell
    /// `{}` from `[]`).
    pub fn array_opt(&mut self, name: &str) -> Result<Option<Vec<Value>>, CommandError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => coerce::array(v)
                .map(Some)
                .ok_or_else(|| wrong_type(name, "array", v)),
        }
    }

    /// A required absolute URL (`http`, `https`, `file`, `data`, `about`).
    pub fn url_req(&mut self, name: &str) -> Result<String, CommandError> {
        let url = self.str_req(name)?;
        check_url(&url).map_err(|why| {
            CommandError::invalid(name, format!("param `{name}`: `{url}` is not {why}"))
        })?;
        check_authority(&url)
            .map_err(|why| CommandError::invalid(name, format!("param `{name}`: {why}")))?;
        Ok(url)
    }

    /// Keys the caller sent that no getter read, in request order, minus framework params.
    pub fn unread(&self) -> Vec<String> {
        self.map
            .keys()
            .filter(|k| !self.read.iter().any(|r| r == *k))
            .filter(|k| !FRAMEWORK_PARAMS.contains(&k.as_str()))
            .cloned()
            .collect()
    }

    /// Keys read so far, in the order they were read.
    pub fn read_keys(&self) -> &[String] {
        &self.read
    }
}

/// Checks that `url` is an absolute URL with a scheme moonpilot navigates to.
fn check_url(url: &str) -> Result<(), &'static str> {
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err("an absolute URL (no scheme)");
    };
    let valid_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic());
    if !valid_scheme {
        return Err("an absolute URL (bad scheme)");
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => {
            let host = rest
                .strip_prefix("//")
                .map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
            match host {
                Some(h) if !h.is_empty() && !h.contains(char::is_whitespace) => Ok(()),
                _ => Err("an absolute URL (no host)"),
            }
        }
        "file" | "data" | "about" => Ok(()),
        _ => Err("a URL with a supported scheme (http, https, file, data, about)"),
    }
}

/// The host and port of an `http(s)` URL (after [`check_url`]): a port in 1..=65535 (or none),
/// a host that can be looked up (no spaces, quotes or brackets outside an IPv6 literal). A URL
/// that fails here could only time out in the browser.
fn check_authority(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(());
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Ok(());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Credentials come before the last `@` and are the page's business.
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        let Some((inside, after)) = v6.split_once(']') else {
            return Err(format!("the IPv6 host of `{url}` has no closing `]`"));
        };
        if inside.is_empty()
            || !inside
                .chars()
                .all(|c| c.is_ascii_hexdigit() || ":.".contains(c))
        {
            return Err(format!("`[{inside}]` is not an IPv6 address"));
        }
        match after {
            "" => (inside, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (inside, Some(port)),
                None => return Err(format!("unexpected `{after}` after the IPv6 host")),
            },
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let bad_host = |c: char| c.is_whitespace() || c.is_control() || "<>\"'`{}|^[]\\".contains(c);
    if host.is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    if let Some(c) = host.chars().find(|c| bad_host(*c)) {
        return Err(format!("the host `{host}` contains `{c}`"));
    }
    match port {
        // `http://host:/` is the default port, as browsers read it.
        None | Some("") => Ok(()),
        Some(p) => match p.parse::<u32>() {
            Ok(n) if (1..=65_535).contains(&n) && p.chars().all(|c| c.is_ascii_digit()) => Ok(()),
            _ => Err(format!(
                "port `{p}` of `{url}` is out of range: a port is an integer within 1..=65535"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;
    use serde_json::json;

    fn p(v: Value) -> Params {
        Params::new(v).unwrap()
    }

    #[test]
    fn non_object_params_are_refused() {
        let e = Params::new(json!([1])).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("must be an object"), "{}", e.msg);
        assert!(Params::new(Value::Null).is_ok());
    }

    #[test]
    fn strings() {
        let mut ps = p(json!({"a": "x", "b": "", "c": 12345, "d": {"k": 1}, "e": true}));
        assert_eq!(ps.str_req("a").unwrap(), "x");
        assert_eq!(ps.str_opt("b").unwrap(), None);
        assert_eq!(ps.str_keep_empty("b").unwrap(), Some(String::new()));
        assert_eq!(ps.str_req("c").unwrap(), "12345");
        let e = ps.str_req("d").unwrap_err();
        assert_eq!(e.msg, "param `d`: expected string, got object");
        assert_eq!(e.param.as_deref(), Some("d"));
        assert!(ps.str_opt("e").is_err());
        assert_eq!(ps.str_req("zz").unwrap_err().msg, "missing parameter `zz`");
        assert_eq!(ps.str_req("b").unwrap_err().msg, "missing parameter `b`");
    }

    #[test]
    fn integers_and_numbers() {
        let mut ps = p(json!({"a": 3, "b": "42", "c": 2.5, "d": "x", "e": 4.0, "f": [1]}));
        assert_eq!(ps.int_req("a").unwrap(), 3);
        assert_eq!(ps.int_req("b").unwrap(), 42);
        assert_eq!(
            ps.int_req("c").unwrap_err().msg,
            "param `c`: expected integer, got number"
        );
        assert_eq!(
            ps.int_req("d").unwrap_err().msg,
            "param `d`: expected integer, got string"
        );
        assert_eq!(ps.int_req("e").unwrap(), 4);
        assert!(ps.int_opt("f").is_err());
        assert_eq!(ps.int_opt("none").unwrap(), None);
        assert_eq!(ps.num_opt("c").unwrap(), Some(2.5));
        assert_eq!(ps.num_opt("b").unwrap(), Some(42.0));
    }

    #[test]
    fn booleans() {
        let mut ps = p(json!({"a": true, "b": "false", "c": 1, "d": null}));
        assert_eq!(ps.bool_opt("a").unwrap(), Some(true));
        assert_eq!(ps.bool_opt("b").unwrap(), Some(false));
        assert_eq!(
            ps.bool_opt("c").unwrap_err().msg,
            "param `c`: expected boolean, got number"
        );
        assert!(ps.bool_or("d", true).unwrap());
    }

    #[test]
    fn urls() {
        for ok in [
            "http://a/b",
            "https://x.y:8/?q",
            "about:blank",
            "data:text/html,hi",
            "file:///tmp/x",
            "http://127.0.0.1:65535/",
            "http://[::1]:8080/x",
            "http://user:pw@host:81/",
            "http://a:/",
        ] {
            assert!(p(json!({"url": ok})).url_req("url").is_ok(), "{ok}");
        }
        for bad in [
            "example.com",
            "http://",
            "ftp://x",
            "javascript:alert(1)",
            "http:// x",
            "1http://a",
            // Issue 10 #12: URLs that can never load.
            "http://127.0.0.1:99999/",
            "http://a:0/",
            "http://a:-1/",
            "http://a:8o/",
            "https://[::1/",
            "http://a<b/",
            "http://user@:80/",
        ] {
            let e = p(json!({"url": bad})).url_req("url").unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad}");
            assert!(e.msg.starts_with("param `url`"), "{}", e.msg);
        }
        let e = p(json!({"url": "http://127.0.0.1:99999/"}))
            .url_req("url")
            .unwrap_err();
        assert_eq!(
            e.msg,
            "param `url`: port `99999` of `http://127.0.0.1:99999/` is out of range: a port is an integer within 1..=65535"
        );
    }

    #[test]
    fn unread_keys_in_request_order_without_framework_params() {
        let mut ps = p(json!({"zeta": 1, "url": "http://a", "retryOnSpurious": true, "alpha": 2}));
        ps.url_req("url").unwrap();
        assert_eq!(ps.unread(), vec!["zeta".to_string(), "alpha".to_string()]);
    }

    #[test]
    fn page_index_confusion_hint() {
        let e = p(json!({"index": 2})).int_req("pageIndex").unwrap_err();
        assert!(e.msg.contains("you sent `index`"), "{}", e.msg);
    }
}
