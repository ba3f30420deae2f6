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
    /// `/render.jpeg`
    Jpeg,
    /// `/render.json`
    Json,
    /// `/render.har`
    Har,
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
            "/render.jpeg" => Endpoint::Jpeg,
            "/render.har" => Endpoint::Har,
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
            Endpoint::Jpeg => "render.jpeg",
            Endpoint::Har => "render.har",
            Endpoint::Json => "render.json",
            Endpoint::Execute => "execute",
            Endpoint::Run => "run",
        }
    }
}

/// A request that passed the checks.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Where it came.
    pub endpoint: Endpoint,
    /// `splash.args`: for `execute` and `run` every argument as the request gave it (plus
    /// `uid`); for the render endpoints, their own script's, the checked ones in their types.
    pub args: Map<String, Value>,
    /// The request's bound, in seconds (Splash's `timeout`).
    pub timeout: f64,
    /// The `wait`, which Splash's global timer adds to the timeout.
    pub wait: f64,
    /// The timeout as a 504 names it: the request's number, or Splash's default (`30`).
    pub timeout_shown: Value,
    /// The script to run (the request's, or the render endpoints' own).
    pub source: String,
    /// The request's `proxy`, as a URL `start` takes (Splash's default port 1080 and scheme
    /// http filled in).
    pub proxy: Option<String>,
}

/// The largest side of a viewport this engine renders (Chromium's limit; Splash's is 20000).
pub const MAX_VIEWPORT_SIDE: u64 = 16_384;

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

/// The largest number of arguments `save_args` keeps (Splash's `--argument-cache-max-entries`).
const SAVED_MAX: usize = 500;

/// Arguments kept by `save_args` for later requests' `load_args`, by their hash; the oldest
/// saved goes first past [`SAVED_MAX`].
#[derive(Debug, Default)]
pub struct SavedArgs {
    by_hash: std::collections::HashMap<String, Value>,
    order: std::collections::VecDeque<String>,
}

/// A list of argument names: a JSON array of strings or a comma-separated string.
fn names(v: &Value) -> Result<Vec<String>, SplashError> {
    match v {
        Value::String(s) => Ok(s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()),
        Value::Array(a) => a
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("save_args", "'save_args' should be a list of strings".into(), json!({}))),
        _ => Err(bad(
            "save_args",
            "'save_args' should be either a comma-separated string or a JSON array with argument names".into(),
            json!({}),
        )),
    }
}

const LOAD_ARGS_SHAPE: &str = "'load_args' should be either a JSON object with argument hashes or a semicolon-separated list of name=hash pairs";

impl SavedArgs {
    /// Puts the values `load_args` names into `args`, or answers which are gone (498).
    pub fn load(&self, args: &mut Map<String, Value>) -> Result<(), SplashError> {
        let Some(spec) = args.remove("load_args") else {
            return Ok(());
        };
        let pairs: Vec<(String, String)> = match &spec {
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| v.as_str().map(|h| (k.clone(), h.to_string())))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("load_args", LOAD_ARGS_SHAPE.into(), json!({})))?,
            Value::String(s) => s
                .split(';')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    p.split_once('=')
                        .map(|(k, h)| (k.trim().to_string(), h.trim().to_string()))
                })
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    bad(
                        "load_args",
                        "'load_args' string value is not a semicolon-separated list of name=hash pairs".into(),
                        json!({}),
                    )
                })?,
            _ => return Err(bad("load_args", LOAD_ARGS_SHAPE.into(), json!({}))),
        };
        let mut expired = Vec::new();
        for (name, hash) in pairs {
            match self.by_hash.get(&hash) {
                Some(v) => {
                    args.insert(name, v.clone());
                }
                None => expired.push(name),
            }
        }
        if expired.is_empty() {
            Ok(())
        } else {
            Err(SplashError::Expired(expired))
        }
    }

    /// Keeps the arguments `save_args` names; their `name=hash` pairs for the answer's
    /// `X-Splash-Saved-Arguments` header (`None` when nothing was asked).
    pub fn save(&mut self, args: &mut Map<String, Value>) -> Result<Option<String>, SplashError> {
        let Some(spec) = args.remove("save_args") else {
            return Ok(None);
        };
        let mut saved = Vec::new();
        for name in names(&spec)? {
            let Some(value) = args.get(&name) else {
                continue;
            };
            let hash = hash_of(value);
            if !self.by_hash.contains_key(&hash) {
                self.by_hash.insert(hash.clone(), value.clone());
                self.order.push_back(hash.clone());
                while self.order.len() > SAVED_MAX {
                    if let Some(old) = self.order.pop_front() {
                        self.by_hash.remove(&old);
                    }
                }
            }
            saved.push(format!("{name}={hash}"));
        }
        Ok(Some(saved.join(";")))
    }
}

/// The hash an argument is saved under: SHA-256 of its JSON text, in hex.
fn hash_of(v: &Value) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(v.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Arguments every endpoint takes that need what this engine does not have (Adblock filters,
/// JS profiles, domain and content-type filters): a clear error instead of a silent wrong
/// result.
const UNSUPPORTED: &[&str] = &[
    "js",
    "filters",
    "allowed_domains",
    "allowed_content_types",
    "forbidden_content_types",
];

/// Whether argument `name` asks for something (present, not empty, not `0`).
fn asked(args: &Map<String, Value>, name: &str) -> bool {
    match args.get(name) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty() && s != "0",
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::Bool(b)) => *b,
        Some(_) => true,
    }
}

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
    let asked_timeout = number(&args, "timeout")?;
    let timeout = match asked_timeout {
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
    let timeout_shown = match asked_timeout {
        Some(t) => json!(t),
        None if default_timeout.fract() == 0.0 => json!(default_timeout as i64),
        None => json!(default_timeout),
    };
    let wait = match number(&args, "wait")? {
        Some(w) => in_range("wait", w, 0.0, timeout)?,
        None => 0.0,
    };
    if let Some(r) = number(&args, "resource_timeout")? {
        in_range("resource_timeout", r, 0.0, 1e6)?;
    }
    for name in UNSUPPORTED {
        if asked(&args, name) {
            return Err(bad(
                name,
                format!("'{name}' is not supported by moonpilot's Splash API (see the README, 'Coming from Splash')"),
                json!({"engine": "moonpilot"}),
            ));
        }
    }
    let proxy = match args.get("proxy") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.trim().is_empty() => None,
        Some(Value::String(p)) => Some(proxy_url(p)?),
        Some(_) => return Err(wrong_type("proxy", "string")),
    };
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
            check_render(&mut args, wait, &opts.schemes)?;
            args.insert("timeout".into(), json!(timeout));
            args.insert("wait".into(), json!(wait));
            args.insert("endpoint__".into(), json!(endpoint.name()));
            super::RENDER_LUA.to_string()
        }
    };
    Ok(Checked {
        endpoint,
        args,
        timeout,
        wait,
        timeout_shown,
        source,
        proxy,
    })
}

/// Splash's `proxy` argument, `[protocol://][user:password@]proxyhost[:port]` (protocol
/// http or socks5, port 1080 by default), as a URL `start{proxy}` takes. Splash's proxy
/// profiles (a name of a file in its profiles directory) are not here: a bare name is
/// refused as such.
fn proxy_url(raw: &str) -> Result<String, SplashError> {
    let raw = raw.trim();
    let (scheme, rest) = match raw.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), raw),
    };
    if !["http", "socks5"].contains(&scheme.as_str()) {
        return Err(bad(
            "proxy",
            format!("proxy protocol `{scheme}`: Splash's proxies are http or socks5"),
            json!({}),
        ));
    }
    let host_port = rest.rsplit('@').next().unwrap_or(rest);
    if !raw.contains("://")
        && !host_port.contains(':')
        && !rest.contains('@')
        && !host_port.contains('.')
    {
        return Err(bad(
            "proxy",
            format!("proxy `{raw}` reads as a proxy profile's name: moonpilot has no proxy profiles; give a proxy URL ([protocol://][user:password@]host[:port])"),
            json!({"engine": "moonpilot"}),
        ));
    }
    let with_port = if host_port
        .rsplit(']')
        .next()
        .unwrap_or(host_port)
        .contains(':')
    {
        rest.to_string()
    } else {
        format!("{rest}:1080")
    };
    let url = format!("{scheme}://{with_port}");
    crate::browser::settings::Proxy::parse(&url, None).map_err(|e| bad("proxy", e, json!({})))?;
    Ok(url)
}

/// The render endpoints' own arguments, put in the types their script takes.
fn check_render(
    args: &mut Map<String, Value>,
    wait: f64,
    schemes: &[String],
) -> Result<(), SplashError> {
    for name in [
        "images",
        "render_all",
        "html",
        "png",
        "jpeg",
        "har",
        "history",
        "script",
        "console",
        "iframes",
        "response_body",
        "request_body",
        "html5_media",
    ] {
        if let Some(v) = flag(args, name)? {
            args.insert(name.into(), json!(i64::from(v)));
        }
    }
    match args.get("url") {
        Some(Value::String(u)) if !u.trim().is_empty() => {}
        _ => return Err(required("url")),
    }
    // As Splash: a URL whose scheme is not allowed is a bad option, before anything loads.
    for name in ["url", "baseurl"] {
        if let Some(Value::String(u)) = args.get(name) {
            let scheme = u
                .split_once(':')
                .map(|(s, _)| s.trim().to_ascii_lowercase())
                .unwrap_or_default();
            if !schemes.iter().any(|s| s.eq_ignore_ascii_case(&scheme)) {
                return Err(bad(
                    name,
                    format!(
                        "URL scheme is not allowed: `{scheme}:` (allowed: {}; {} widens it)",
                        schemes.join(", "),
                        crate::door::SPLASH_SCHEMES_FLAG
                    ),
                    json!({"type": "bad_url"}),
                ));
            }
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
    let viewport = match args.get("viewport") {
        None | Some(Value::Null) => None,
        Some(Value::String(v)) => Some(v.clone()),
        Some(other) => {
            return Err(bad(
                "viewport",
                format!("Invalid viewport format: {other}"),
                json!({}),
            ))
        }
    };
    match viewport.as_deref() {
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
                    if w > 0
                        && h > 0
                        && w <= MAX_VIEWPORT_SIDE
                        && h <= MAX_VIEWPORT_SIDE
                        && w * h < 16_000_000 => {}
                Some(_) => {
                    return Err(bad(
                        "viewport",
                        format!(
                            "Viewport is out of range ({MAX_VIEWPORT_SIDE}x{MAX_VIEWPORT_SIDE}, area=16000000)"
                        ),
                        json!({"engine": "moonpilot"}),
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
    if let Some(m) = args.get("http_method") {
        let up = m.as_str().unwrap_or("").to_ascii_uppercase();
        if up != "GET" && up != "POST" {
            let shown = m
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| m.to_string());
            return Err(bad(
                "http_method",
                format!("Unsupported HTTP method {shown}"),
                json!({}),
            ));
        }
        if up == "GET" && asked(args, "body") {
            return Err(bad(
                "body",
                "GET request should not have a body".into(),
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
    // The captures' size and quality (Splash's limits: 1920 × 1080, quality 0..100).
    for (name, max) in [("width", 1920.0), ("height", 1080.0), ("quality", 100.0)] {
        if let Some(v) = number(args, name)? {
            let min = if name == "quality" { 0.0 } else { 1.0 };
            let v = in_range(name, v, min, max)?;
            if v.fract() != 0.0 {
                return Err(wrong_type(name, "int"));
            }
            args.insert(name.into(), json!(v as i64));
        }
    }
    if let Some(m) = args.get("scale_method") {
        if m != "raster" && m != "vector" {
            let shown = m
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| m.to_string());
            return Err(bad(
                "scale_method",
                format!("Invalid 'scale_method': {shown}"),
                json!({"allowed": ["raster", "vector"], "received": shown}),
            ));
        }
    }
    Ok(())
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
    fn saved_arguments_load_in_later_requests_and_expire_by_name() {
        let mut saved = SavedArgs::default();
        let mut first = q(&[
            ("lua_source", "function main() return 1 end"),
            ("save_args", "lua_source"),
        ]);
        let header = saved.save(&mut first).unwrap().unwrap();
        assert!(first.get("save_args").is_none());
        let (name, hash) = header.split_once('=').unwrap();
        assert_eq!(name, "lua_source");
        let mut later = Map::new();
        later.insert("load_args".into(), json!({ "lua_source": hash }));
        saved.load(&mut later).unwrap();
        assert_eq!(later["lua_source"], "function main() return 1 end");
        let mut gone = q(&[("load_args", "lua_source=00;x=11")]);
        match saved.load(&mut gone).unwrap_err() {
            SplashError::Expired(names) => assert_eq!(names, vec!["lua_source", "x"]),
            other => panic!("{other:?}"),
        }
        assert!(saved.load(&mut q(&[("load_args", "nonsense")])).is_err());
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
