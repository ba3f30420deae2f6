//! Splash's arguments: the query string merged with a JSON body (the body wins), checked as
//! Splash's `RenderOptions` checks them, with its error objects (`BadOption` and its `info`).

use serde_json::{json, Map, Value};

use super::error::SplashError;
use super::SplashOptions;

/// The endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/render.html`
    Html,
    /// `/render.png`
    Png,
    /// `/render.json`
    Json,
    /// `/execute`: `lua_source` defines `main`.
    Execute,
    /// `/run`: `lua_source` is `main`'s body.
    Run,
}

impl Endpoint {
    /// The endpoint of a path (`/render.html` …), if any.
    pub fn of_path(path: &str) -> Option<Endpoint> {
        Some(match path.trim_end_matches('/') {
            "/render.html" => Endpoint::Html,
            "/render.png" => Endpoint::Png,
            "/render.json" => Endpoint::Json,
            "/execute" => Endpoint::Execute,
            "/run" => Endpoint::Run,
            _ => return None,
        })
    }

    /// Its name, as the render script takes it.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Html => "render.html",
            Endpoint::Png => "render.png",
            Endpoint::Json => "render.json",
            Endpoint::Execute => "execute",
            Endpoint::Run => "run",
        }
    }

    fn renders(self) -> bool {
        matches!(self, Endpoint::Html | Endpoint::Png | Endpoint::Json)
    }
}

/// A request that passed the checks.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Where it came.
    pub endpoint: Endpoint,
    /// `splash.args`: every argument, with the checked ones in their types.
    pub args: Map<String, Value>,
    /// The whole request's bound, in seconds (Splash's `timeout`).
    pub timeout: f64,
    /// The script to run (the request's, or the render endpoints' own).
    pub source: String,
}

fn bad(argument: &str, description: String, extra: Value) -> SplashError {
    let mut info =
        json!({"type": "bad_argument", "argument": argument, "description": description});
    if let (Some(i), Value::Object(e)) = (info.as_object_mut(), extra) {
        i.extend(e);
    }
    SplashError::BadOption(info)
}

fn required(argument: &str) -> SplashError {
    SplashError::BadOption(json!({"type": "argument_required", "argument": argument,
        "description": format!("Required argument is missing: {argument}")}))
}

fn wrong_type(argument: &str, ty: &str) -> SplashError {
    bad(
        argument,
        format!("Argument '{argument}' has a wrong type"),
        json!({"required_type": ty}),
    )
}

/// A number argument (a JSON number or a numeric string).
fn number(args: &Map<String, Value>, name: &str) -> Result<Option<f64>, SplashError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| wrong_type(name, "float")),
        Some(_) => Err(wrong_type(name, "float")),
    }
}

fn in_range(name: &str, v: f64, min: f64, max: f64) -> Result<f64, SplashError> {
    if v < min || v > max {
        return Err(bad(
            name,
            "Argument is out of the allowed range".into(),
            json!({"min": min, "max": max, "value": v}),
        ));
    }
    Ok(v)
}

/// A 0/1 flag (`1`, `"1"`, `true`).
fn flag(args: &Map<String, Value>, name: &str) -> Result<Option<bool>, SplashError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => {
            let n = match v {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            }
            .ok_or_else(|| wrong_type(name, "int"))?;
            if !(0..=1).contains(&n) {
                return Err(bad(
                    name,
                    "Argument is out of the allowed range".into(),
                    json!({"min": 0, "max": 1, "value": n}),
                ));
            }
            Ok(Some(n == 1))
        }
    }
}

/// Merges the query string and a JSON body (its keys win), as Splash does.
pub fn merge(
    query: Map<String, Value>,
    body: Option<&[u8]>,
) -> Result<Map<String, Value>, SplashError> {
    let mut args = query;
    if let Some(body) = body.filter(|b| !b.iter().all(u8::is_ascii_whitespace)) {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(o)) => args.extend(o),
            Ok(_) => {
                return Err(SplashError::BadOption(json!({"type": "invalid_json",
                    "description": "Can't decode JSON", "message": "the body is not a JSON object"})))
            }
            Err(e) => {
                return Err(SplashError::BadOption(json!({"type": "invalid_json",
                    "description": "Can't decode JSON", "message": e.to_string()})))
            }
        }
    }
    Ok(args)
}

/// The arguments no engine here honours yet: a clear error instead of a silent wrong result.
const NOT_YET: &[&str] = &[
    "proxy",
    "js",
    "filters",
    "allowed_domains",
    "allowed_content_types",
    "forbidden_content_types",
    "save_args",
    "load_args",
    "width",
    "height",
    "iframes",
    "script",
    "console",
    "history",
    "har",
    "jpeg",
    "response_body",
    "request_body",
];

/// Checks `args` for `endpoint` as Splash would.
pub fn check(
    endpoint: Endpoint,
    mut args: Map<String, Value>,
    opts: &SplashOptions,
) -> Result<Checked, SplashError> {
    // Splash's engines: `webkit` (its default, what scrapy-splash sends) and `chromium` both
    // render with this engine's Chromium.
    match args.get("engine") {
        None | Some(Value::Null) => {}
        Some(Value::String(e)) if e == "webkit" || e == "chromium" => {}
        Some(other) => {
            let shown = other
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string());
            return Err(bad(
                "engine",
                format!("Unknown render engine {shown}"),
                json!({}),
            ));
        }
    }
    let default_timeout = 30f64.min(opts.max_timeout);
    let timeout = match number(&args, "timeout")? {
        Some(t) if t <= 0.0 => {
            return Err(bad(
                "timeout",
                "Argument is out of the allowed range".into(),
                json!({"min": 0, "max": opts.max_timeout, "value": t}),
            ))
        }
        Some(t) => in_range("timeout", t, 0.0, opts.max_timeout)?,
        None => default_timeout,
    };
    let wait = match number(&args, "wait")? {
        Some(w) => in_range("wait", w, 0.0, timeout)?,
        None => 0.0,
    };
    if let Some(r) = number(&args, "resource_timeout")? {
        in_range("resource_timeout", r, 0.0, 1e6)?;
    }
    for name in ["images", "render_all", "html", "png", "html5_media"] {
        if let Some(v) = flag(&args, name)? {
            args.insert(name.into(), json!(i64::from(v)));
        }
    }
    if endpoint.renders() {
        match args.get("url") {
            Some(Value::String(u)) if !u.trim().is_empty() => {}
            _ => return Err(required("url")),
        }
    }
    let render_all = args.get("render_all") == Some(&json!(1));
    if render_all && wait == 0.0 {
        return Err(bad(
            "render_all",
            "Pass non-zero 'wait' to render full webpage".into(),
            json!({}),
        ));
    }
    match args.get("viewport").and_then(Value::as_str) {
        None => {}
        Some("full") if wait == 0.0 => {
            return Err(bad(
                "viewport",
                "Pass non-zero 'wait' to render full webpage".into(),
                json!({}),
            ))
        }
        Some("full") => {}
        Some(v) => {
            let size = v
                .split_once('x')
                .and_then(|(w, h)| Some((w.parse::<u64>().ok()?, h.parse::<u64>().ok()?)));
            match size {
                Some((w, h))
                    if w > 0 && h > 0 && w <= 20000 && h <= 20000 && w * h < 16_000_000 => {}
                Some(_) => {
                    return Err(bad(
                        "viewport",
                        "Viewport is out of range (20000x20000, area=16000000)".into(),
                        json!({}),
                    ))
                }
                None => {
                    return Err(bad(
                        "viewport",
                        format!("Invalid viewport format: {v}"),
                        json!({}),
                    ))
                }
            }
        }
    }
    if let Some(m) = args.get("http_method").and_then(Value::as_str) {
        let up = m.to_ascii_uppercase();
        if up != "GET" && up != "POST" {
            return Err(bad(
                "http_method",
                format!("Unsupported HTTP method {m}"),
                json!({}),
            ));
        }
    }
    if let Some(h) = args.get("headers") {
        let fits = match h {
            Value::Object(o) => o.values().all(Value::is_string),
            Value::Array(a) => a.iter().all(|p| {
                p.as_array()
                    .is_some_and(|p| p.len() == 2 && p.iter().all(Value::is_string))
            }),
            _ => false,
        };
        if !fits {
            return Err(bad(
                "headers",
                "'headers' must be either a JSON array of (name, value) pairs or a JSON object"
                    .into(),
                json!({}),
            ));
        }
        if let Value::Array(pairs) = h.clone() {
            let mut o = Map::new();
            for p in pairs {
                if let [Value::String(k), v] = p.as_array().map(Vec::as_slice).unwrap_or_default() {
                    o.insert(k.clone(), v.clone());
                }
            }
            args.insert("headers".into(), Value::Object(o));
        }
    }
    if endpoint.renders() {
        for name in NOT_YET {
            let asked = match args.get(*name) {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.is_empty() && s != "0",
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::Bool(b)) => *b,
                Some(_) => true,
            };
            if asked {
                return Err(bad(
                    name,
                    format!("'{name}' is not supported by moonpilot's Splash API yet"),
                    json!({"engine": "moonpilot"}),
                ));
            }
        }
        if args.get("images") == Some(&json!(0)) {
            return Err(bad(
                "images",
                "'images=0' is not supported by moonpilot's Splash API yet".into(),
                json!({}),
            ));
        }
    }
    args.insert("timeout".into(), json!(timeout));
    args.insert("wait".into(), json!(wait));
    // Splash gives every request an id scripts can read (`splash.args.uid`).
    args.entry("uid")
        .or_insert_with(|| json!(crate::browser::task::TaskId::generate().0));
    let source = match endpoint {
        Endpoint::Execute | Endpoint::Run => {
            let Some(Value::String(src)) = args.get("lua_source") else {
                return Err(required("lua_source"));
            };
            if endpoint == Endpoint::Run {
                ["function main(splash, args)\n", src.as_str(), "\nend"].concat()
            } else {
                src.clone()
            }
        }
        _ => {
            args.insert("endpoint__".into(), json!(endpoint.name()));
            super::RENDER_LUA.to_string()
        }
    };
    Ok(Checked {
        endpoint,
        args,
        timeout,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    }

    fn info(e: SplashError) -> Value {
        match e {
            SplashError::BadOption(i) => i,
            other => panic!("not a BadOption: {other:?}"),
        }
    }

    #[test]
    fn a_render_needs_its_url_and_a_script_its_source() {
        let opts = SplashOptions::default();
        let e = info(check(Endpoint::Html, q(&[]), &opts).unwrap_err());
        assert_eq!(e["type"], "argument_required");
        assert_eq!(e["argument"], "url");
        let e = info(check(Endpoint::Execute, q(&[]), &opts).unwrap_err());
        assert_eq!(e["argument"], "lua_source");
        let ok = check(Endpoint::Run, q(&[("lua_source", "return 1")]), &opts).unwrap();
        assert!(ok
            .source
            .starts_with("function main(splash, args)\nreturn 1"));
    }

    #[test]
    fn numbers_ranges_flags_and_engines_are_checked() {
        let opts = SplashOptions::default();
        let e = info(
            check(
                Endpoint::Html,
                q(&[("url", "http://x"), ("wait", "soon")]),
                &opts,
            )
            .unwrap_err(),
        );
        assert_eq!(e["description"], "Argument 'wait' has a wrong type");
        let e = info(
            check(
                Endpoint::Html,
                q(&[("url", "http://x"), ("timeout", "500")]),
                &opts,
            )
            .unwrap_err(),
        );
        assert_eq!(e["description"], "Argument is out of the allowed range");
        assert_eq!(e["max"], 90.0);
        let e = info(
            check(
                Endpoint::Html,
                q(&[("url", "http://x"), ("wait", "40")]),
                &opts,
            )
            .unwrap_err(),
        );
        assert_eq!(e["argument"], "wait", "wait stays under the timeout");
        let e = info(
            check(
                Endpoint::Png,
                q(&[("url", "http://x"), ("render_all", "1")]),
                &opts,
            )
            .unwrap_err(),
        );
        assert_eq!(
            e["description"],
            "Pass non-zero 'wait' to render full webpage"
        );
        let e = info(
            check(
                Endpoint::Html,
                q(&[("url", "http://x"), ("engine", "gecko")]),
                &opts,
            )
            .unwrap_err(),
        );
        assert_eq!(e["description"], "Unknown render engine gecko");
        for engine in ["webkit", "chromium"] {
            assert!(check(
                Endpoint::Html,
                q(&[("url", "http://x"), ("engine", engine)]),
                &opts
            )
            .is_ok());
        }
        let ok = check(
            Endpoint::Json,
            q(&[("url", "http://x"), ("html", "1"), ("wait", "0.5")]),
            &opts,
        )
        .unwrap();
        assert_eq!(ok.args["html"], 1);
        assert_eq!(ok.args["wait"], 0.5);
        assert_eq!(ok.timeout, 30.0);
    }

    #[test]
    fn a_json_body_wins_over_the_query() {
        let merged = merge(
            q(&[("url", "http://a"), ("wait", "1")]),
            Some(br#"{"url": "http://b"}"#),
        )
        .unwrap();
        assert_eq!(merged["url"], "http://b");
        assert_eq!(merged["wait"], "1");
        let e = info(merge(Map::new(), Some(b"{oops")).unwrap_err());
        assert_eq!(e["type"], "invalid_json");
    }
}
