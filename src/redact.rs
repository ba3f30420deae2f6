//! Redaction: the one place that decides what a secret looks like, applied to everything the
//! engine writes or echoes (PROTOCOL.md §18 "Redaction is one function") — the trace log, the
//! state text files under `data/`, and the receipts' echoes of messages and URLs.
//!
//! It masks values under secret-looking keys (JSON keys, URL query and fragment parameters,
//! form-encoded pairs: `password`, `passwd`, `pwd`, `token`, `access_token`, `api_key`,
//! `apikey`, `secret`, `session`, `sig`, `auth`, `cookie`, `credential`), `Bearer` tokens,
//! `scheme://user:pass@` credentials and card-like digit runs (16–19 digits, single spaces or
//! dashes allowed between groups). What a param's spec calls secret is the trace's business
//! (`trace.rs`); this module knows nothing about commands. Best effort: names and addresses are
//! not caught.

use std::borrow::Cow;

use serde_json::{json, Value};

/// What replaces a redacted value.
pub const MASK: &str = "***";

/// Whether a key names a secret (`X-API-Key`, `api_key`, `sessionId`, `Authorization`,
/// `access_token`, `sig`…). Whole words only: `author` or `tokenizer` are not secrets.
pub fn secret_key(key: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "auth",
        "authorization",
        "cookie",
        "apikey",
        "credential",
        "credentials",
        "session",
        "sig",
        "signature",
    ];
    // `api_key`, `X-API-Key`, `csrftoken`, `client_secret`: the key run together ends in one.
    const ENDINGS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "sessionid",
    ];
    let whole: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if WORDS.contains(&whole.as_str()) || ENDINGS.iter().any(|e| whole.ends_with(e)) {
        return true;
    }
    // Words of the key: split at separators and at lower→upper case changes (`sessionId`).
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        let boundary = !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && prev_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    words.push(word);
    words.iter().any(|w| WORDS.contains(&w.as_str()))
}

/// Masks secrets in a JSON value in place: values under secret keys, and [`text`] on every
/// string (keys are kept).
pub fn value(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if secret_key(k) && !v.is_null() && !v.is_boolean() {
                    *v = json!(MASK);
                } else {
                    value(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(value),
        Value::String(s) => {
            if let Cow::Owned(masked) = text(s) {
                *s = masked;
            }
        }
        _ => {}
    }
}

/// Masks the secrets inside one string (a URL, a message, a page's text).
pub fn text(s: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(s);
    if let Some(masked) = mask_inline_credentials(&out) {
        out = Cow::Owned(masked);
    }
    if let Some(masked) = mask_secret_pairs(&out) {
        out = Cow::Owned(masked);
    }
    if let Some(masked) = mask_card_numbers(&out) {
        out = Cow::Owned(masked);
    }
    out
}

/// Masks the secrets inside a request body: a JSON body by its keys (as [`value`]), any other
/// (form-encoded pairs, text) as [`text`].
pub fn body(s: &str) -> Cow<'_, str> {
    if let Ok(mut v @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(s) {
        let before = v.clone();
        value(&mut v);
        if v != before {
            return Cow::Owned(v.to_string());
        }
        return Cow::Borrowed(s);
    }
    text(s)
}

/// [`text`] in place, on an optional message.
pub fn message(msg: &mut Option<String>) {
    if let Some(m) = msg.as_mut() {
        if let Cow::Owned(masked) = text(m) {
            *m = masked;
        }
    }
}

/// Masks `Bearer <token>` and `scheme://user:pass@` inside a string.
fn mask_inline_credentials(s: &str) -> Option<String> {
    let mut out = s.to_string();
    let mut changed = false;
    let mut from = 0;
    while let Some(at) = out[from..].find("Bearer ") {
        let start = from + at + "Bearer ".len();
        let end = out[start..]
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .map_or(out.len(), |i| start + i);
        if end > start && &out[start..end] != MASK {
            out.replace_range(start..end, MASK);
            changed = true;
        }
        from = start;
    }
    let mut from = 0;
    while let Some(scheme) = out[from..].find("://") {
        let rest = from + scheme + 3;
        let host_end = out[rest..]
            .find(['/', '?', '#', ' ', '"', '\'', '\n'])
            .map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..host_end].rfind('@') {
            if &out[rest..rest + at] != MASK {
                out.replace_range(rest..rest + at, MASK);
                changed = true;
            }
        }
        from = rest.min(out.len());
    }
    changed.then_some(out)
}

/// Masks the values of secret-looking `name=value` pairs: URL query and fragment parameters
/// (`?password=…`, `&token=…`, `#access_token=…`, `;jsessionid=…`) and form-encoded bodies
/// (`password=…&user=…` at the start of the text). A value ends at `&`, `#`, whitespace, a
/// quote or an angle bracket.
fn mask_secret_pairs(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'=' {
            i += 1;
            continue;
        }
        // The name: back to a separator.
        let mut start = i;
        while start > 0 && is_name_byte(bytes[start - 1]) {
            start -= 1;
        }
        let separator = start.checked_sub(1).map(|j| bytes[j]);
        let at_pair_start = matches!(separator, None | Some(b'?' | b'&' | b'#' | b';'));
        // A path parameter (`;jsessionid=…`) ends where the path or the query goes on.
        let in_path = separator == Some(b';');
        let name = &s[start..i];
        let value_start = i + 1;
        let mut end = value_start;
        while end < bytes.len()
            && !is_value_end(bytes[end])
            && !(in_path && matches!(bytes[end], b'?' | b'/'))
        {
            end += 1;
        }
        if at_pair_start && !name.is_empty() && secret_key(name) && end > value_start {
            let value = &s[value_start..end];
            if value != MASK {
                out.push_str(&s[last..value_start]);
                out.push_str(MASK);
                last = end;
                changed = true;
            }
        }
        i = end.max(i + 1);
    }
    if !changed {
        return None;
    }
    out.push_str(&s[last..]);
    Some(out)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']' | b'%')
}

fn is_value_end(b: u8) -> bool {
    // A backtick too: messages quote URLs in backticks (`ws://h/?token=…`).
    b.is_ascii_whitespace() || matches!(b, b'&' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b';')
}

/// Masks card-like numbers: 16–19 digits, possibly in groups split by one space or dash
/// (`4111 1111 1111 1111`, `4111-1111-1111-1111`), not part of a longer digit run.
fn mask_card_numbers(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // The longest run of digits with single separators between them.
        let mut end = i;
        let mut digits = 0;
        let mut last_digit = i;
        while end < chars.len() {
            let c = chars[end];
            if c.is_ascii_digit() {
                digits += 1;
                last_digit = end;
                end += 1;
            } else if (c == ' ' || c == '-')
                && end + 1 < chars.len()
                && chars[end + 1].is_ascii_digit()
                && end > i
                && chars[end - 1].is_ascii_digit()
            {
                end += 1;
            } else {
                break;
            }
        }
        let run: String = chars[i..=last_digit].iter().collect();
        let separated = run.contains([' ', '-']);
        // A separated run is a card only when it is all digits in groups of at least three
        // (not a date `2024-01-02` or a list `1 2 3`).
        let grouped = !separated || run.split([' ', '-']).all(|g| g.len() >= 3);
        if (16..=19).contains(&digits) && grouped {
            out.push_str(MASK);
            changed = true;
        } else {
            out.push_str(&run);
        }
        i = last_digit + 1;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_whole_words() {
        for key in [
            "password",
            "api_key",
            "X-API-Key",
            "sessionId",
            "Authorization",
            "access_token",
            "sig",
            "csrftoken",
            "client_secret",
            "user-auth",
            "Set-Cookie",
            "pwd",
        ] {
            assert!(secret_key(key), "{key}");
        }
        for key in [
            "author",
            "tokenizer",
            "designation",
            "authority",
            "q",
            "sigma",
        ] {
            assert!(!secret_key(key), "{key}");
        }
    }

    #[test]
    fn secrets_are_masked_and_the_rest_kept() {
        let mut v = json!({
            "url": "https://x/?a=1",
            "headers": {"Authorization": "Bearer abc", "X-Other": "ok", "Cookie": "s=1"},
            "password": "hunter2",
            "body": "card 4111111111111111 ok, order 12345",
            "nested": [{"apiKey": "k"}],
            "empty": null,
        });
        value(&mut v);
        assert_eq!(v["headers"]["Authorization"], MASK);
        assert_eq!(v["headers"]["Cookie"], MASK);
        assert_eq!(v["headers"]["X-Other"], "ok");
        assert_eq!(v["password"], MASK);
        assert_eq!(v["body"], "card *** ok, order 12345");
        assert_eq!(v["nested"][0]["apiKey"], MASK);
        assert_eq!(v["url"], "https://x/?a=1");
        let mut v = json!({
            "body": "fetch(u, {headers: {Authorization: 'Bearer abc.def'}})",
            "url": "https://alice:pw@host/path",
            "X-API-Key": "k1", "sessionId": "s1",
        });
        value(&mut v);
        assert_eq!(
            v["body"],
            "fetch(u, {headers: {Authorization: 'Bearer ***'}})"
        );
        assert_eq!(v["url"], "https://***@host/path");
        assert_eq!(v["X-API-Key"], MASK);
        assert_eq!(v["sessionId"], MASK);
    }

    /// Issue 10 #4: secrets in URLs, fragments and form bodies.
    #[test]
    fn secret_url_parameters_and_fragments_are_masked() {
        let cases = [
            (
                "http://h/login?user=al&password=hunter2&x=1",
                "http://h/login?user=al&password=***&x=1",
            ),
            ("http://h/?token=abc#top", "http://h/?token=***#top"),
            (
                "`ws://h:1/?token=abc` answered",
                "`ws://h:1/?token=***` answered",
            ),
            (
                "http://h/cb#access_token=eyJ.abc&state=9",
                "http://h/cb#access_token=***&state=9",
            ),
            (
                "http://h/?api_key=K1&apikey=K2",
                "http://h/?api_key=***&apikey=***",
            ),
            (
                "http://h/x;jsessionid=S1?q=1",
                "http://h/x;jsessionid=***?q=1",
            ),
            (
                "http://h/?sig=ab12&pwd=p&passwd=q",
                "http://h/?sig=***&pwd=***&passwd=***",
            ),
            ("password=hunter2&user=al", "password=***&user=al"),
            (
                "URL: \"http://h/?secret=s3\".",
                "URL: \"http://h/?secret=***\".",
            ),
            // Not secrets: other names, a name inside a word, an empty value.
            ("http://h/?keyword=a&page=2", "http://h/?keyword=a&page=2"),
            ("http://h/?password=", "http://h/?password="),
        ];
        for (raw, want) in cases {
            assert_eq!(text(raw), want, "{raw}");
        }
        assert!(matches!(text("plain words"), Cow::Borrowed(_)));
    }

    #[test]
    fn card_like_digit_runs_are_masked_not_dates_or_ids() {
        let cases = [
            ("value='4111111111111111'", "value='***'"),
            ("4111 1111 1111 1111 exp", "*** exp"),
            ("4111-1111-1111-1111", "***"),
            ("on 2024-01-02 at 12:00", "on 2024-01-02 at 12:00"),
            ("ts 1700000000000", "ts 1700000000000"),
            (
                "1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7",
                "1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7",
            ),
            ("12345678901234567890", "12345678901234567890"),
        ];
        for (raw, want) in cases {
            assert_eq!(text(raw), want, "{raw}");
        }
    }

    #[test]
    fn request_bodies_are_masked_by_their_shape() {
        assert_eq!(body("user=ann&password=HUNTER2"), "user=ann&password=***");
        assert_eq!(
            body(r#"{"user":"ann","password":"HUNTER2"}"#),
            r#"{"user":"ann","password":"***"}"#
        );
        assert!(
            matches!(body(r#"{"user":"ann"}"#), Cow::Borrowed(_)),
            "nothing to mask"
        );
        assert_eq!(body("plain text"), "plain text");
    }

    #[test]
    fn receipts_mask_echoed_headers_and_bodies() {
        let mut r = crate::protocol::Receipt::success(
            "get_requests",
            json!({
                "headers": {"Authorization": "Bearer TOKEN999", "X-Plain": "v"},
                "requests": [{"postData": "password=HUNTER2", "requestHeaders": {"Cookie": "s=1"}}],
            }),
            1.0,
        );
        r.redact_echoes();
        let out = r.data.to_string();
        assert!(
            !out.contains("TOKEN999") && !out.contains("HUNTER2") && !out.contains("s=1"),
            "{out}"
        );
        assert!(out.contains("\"X-Plain\":\"v\""), "{out}");
    }
}
