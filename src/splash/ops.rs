//! What Splash's `splash` object does that no catalogue command says exactly: its cookies in
//! HAR form (domain, path, expires, httpOnly, secure), its captures (PNG or JPEG, scaled to a
//! width, cut to a height or a region), `autoload` scripts, and a GET through the browser's
//! network stack (`http_get`, `autoload` of a URL). A script's `page["splash.<op>"]` call
//! comes to [`run`](super::run) like any command and is answered here, on the request's own
//! task and its own browser context, as a receipt.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::browser::netlog::RequestRecord;
use crate::browser::routes::{Decision, RouteAction, Rule};
use crate::browser::tab::{Tab, MAX_FULL_PAGE_HEIGHT};
use crate::browser::task::Task;
use crate::browser::task::TaskId;
use crate::{ErrorCode, Executor, Receipt};

/// The prefix of the methods answered here.
pub const PREFIX: &str = "splash.";

/// Answers `method` (`splash.get_cookies` …) for `task`, in the task's lane as a command is,
/// on a task of the runtime of its own (a fresh stack, not the HTTP handler's).
pub async fn answer(executor: &Executor, task: TaskId, method: &str, params: Value) -> Receipt {
    let started = std::time::Instant::now();
    let (executor, name) = (executor.clone(), method.to_string());
    let work = tokio::spawn(async move {
        let live = executor
            .engine()
            .task(task)
            .ok_or_else(|| format!("task {task} is gone"))?;
        // The held requests are taken and answered while a command of the task waits for
        // them (a navigation waits for its document's request): outside the lane.
        // A held request sent on to another URL (`request:set_url`) is held to the door's
        // schemes as a navigation is.
        if name.trim_start_matches(PREFIX) == "decide" {
            if let Some(url) = params["url"].as_str() {
                executor.trust().url("url", url).await.map_err(|e| e.msg)?;
            }
        }
        match name.trim_start_matches(PREFIX) {
            "asked" => return Ok(asked(&live, &params).await),
            "decide" => return decide(&live, &params).await,
            "finished" => return Ok(finished(&live, &params)),
            _ => {}
        }
        // A URL fetched outside a navigation (autoload, http_get / http_post) is held to the
        // door's schemes as a page's is.
        let op = name.trim_start_matches(PREFIX);
        if matches!(op, "fetch" | "http") {
            if let Some(url) = params["url"].as_str() {
                executor.trust().url("url", url).await.map_err(|e| e.msg)?;
            }
        }
        let _lane = live.lane.lock().await;
        let tab = live.tab().map_err(|e| e.msg)?;
        match name.trim_start_matches(PREFIX) {
            "har" => har(&live, &tab, &params).await,
            "images" => images(&live, &params).await,
            "on_request" => hold(&live, ON_REQUEST, RouteAction::Ask, &params).await,
            "on_response_headers" => {
                hold(
                    &live,
                    ON_RESPONSE_HEADERS,
                    RouteAction::AskResponse,
                    &params,
                )
                .await
            }
            "get_cookies" => get_cookies(&tab).await,
            "add_cookie" => add_cookie(&tab, &params).await,
            "delete_cookies" => delete_cookies(&tab, &params).await,
            "clear_cookies" => clear_cookies(&tab).await,
            "capture" => capture(&tab, &params).await,
            "autoload" => autoload(&tab, &params).await,
            "autoload_reset" => autoload_reset(&tab, &params).await,
            "fetch" => fetch(&tab, &params).await,
            "http" => http(&tab, &params).await,
            "main_frame" => tab
                .main_frame()
                .await
                .map(|f| json!(f.frame_id))
                .map_err(|e| e.msg),
            other => Err(format!("no Splash operation `{other}`")),
        }
    });
    // Dropped (the script's coroutine was cancelled): the operation stops too; a long-poll
    // left running would take held requests no one answers.
    let abort = work.abort_handle();
    let _stop = AbortGuard(abort);
    let done = work
        .await
        .unwrap_or_else(|e| Err(format!("the operation ended early: {e}")));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match done {
        Ok(data) => Receipt::success(method, data, ms),
        Err(msg) => Receipt::failure(method, ErrorCode::ActionFailed, msg, None, false, ms),
    }
}

/// Aborts a task when dropped.
struct AbortGuard(tokio::task::AbortHandle);

impl Drop for AbortGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every cookie of the task's context, in HAR's form: `expires` an ISO instant for a cookie
/// that expires, absent for a session cookie.
async fn get_cookies(tab: &Arc<Tab>) -> Result<Value, String> {
    let cookies = tab.all_cookies().await.map_err(|e| e.msg)?;
    Ok(Value::Array(cookies.iter().map(har_cookie).collect()))
}

fn har_cookie(c: &Value) -> Value {
    let mut out = Map::new();
    for key in ["name", "value", "path", "domain", "httpOnly", "secure"] {
        if let Some(v) = c.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let expires = c["expires"].as_f64().filter(|e| *e > 0.0);
    let session = c["session"].as_bool().unwrap_or(false);
    if let (Some(e), false) = (expires, session) {
        out.insert("expires".into(), json!(iso_seconds(e as u64)));
    }
    Value::Object(out)
}

/// `2016-07-24T19:20:30Z`, as scrapy-splash writes and reads a HAR cookie's `expires`.
fn iso_seconds(secs: u64) -> String {
    let full = crate::trace::iso_utc(secs * 1000);
    // `…:30.000Z` → `…:30Z`
    match full.split_once('.') {
        Some((head, _)) => format!("{head}Z"),
        None => full,
    }
}

/// An ISO-8601 instant (`2016-07-24T19:20:30Z`, `…+02:00`, `….123Z`) as Unix seconds.
pub fn parse_iso(s: &str) -> Option<f64> {
    let s = s.trim();
    let (date, rest) = s.split_once(['T', ' '])?;
    let mut d = date.split('-');
    let (y, m, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (time, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    let mut t = time.split(':');
    let h: f64 = t.next()?.parse().ok()?;
    let min: f64 = t.next()?.parse().ok()?;
    let sec: f64 = t.next().map_or(Some(0.0), |v| v.parse().ok())?;
    let offset_secs = match offset {
        "" | "Z" | "z" => 0.0,
        o => {
            let sign = if o.starts_with('-') { -1.0 } else { 1.0 };
            let (oh, om) = o[1..].split_once(':').unwrap_or((&o[1..], "0"));
            sign * (oh.parse::<f64>().ok()? * 3600.0 + om.parse::<f64>().ok()? * 60.0)
        }
    };
    // Howard Hinnant's days-from-civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + sec - offset_secs)
}

/// Sets one cookie: `{name, value, path?, domain?, expires?, httpOnly?, secure?, url}` (the
/// page's URL, for a cookie with no domain). Answers whether the browser took it.
async fn add_cookie(tab: &Tab, p: &Value) -> Result<Value, String> {
    let name = p["name"].as_str().ok_or("add_cookie: `name` is required")?;
    let value = match &p["value"] {
        Value::String(s) => s.clone(),
        Value::Null => return Err("add_cookie: `value` is required".into()),
        other => other.to_string(),
    };
    let mut cookie = json!({"name": name, "value": value});
    match p["domain"].as_str().filter(|d| !d.is_empty()) {
        Some(domain) => {
            cookie["domain"] = json!(domain);
            cookie["path"] = json!(p["path"].as_str().unwrap_or("/"));
        }
        None => {
            let url = p["url"].as_str().unwrap_or("");
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "add_cookie: a cookie without `domain` belongs to the current page, and `{url}` has no cookie domain"
                ));
            }
            cookie["url"] = json!(url);
            if let Some(path) = p["path"].as_str() {
                cookie["path"] = json!(path);
            }
        }
    }
    for key in ["httpOnly", "secure"] {
        if let Some(b) = p[key].as_bool() {
            cookie[key] = json!(b);
        }
    }
    match &p["expires"] {
        Value::Null => {}
        Value::String(s) => {
            let at = parse_iso(s)
                .ok_or_else(|| format!("add_cookie: `expires` `{s}` is not an ISO-8601 time"))?;
            cookie["expires"] = json!(at);
        }
        Value::Number(n) => cookie["expires"] = json!(n),
        other => return Err(format!("add_cookie: `expires` {other} is not a time")),
    }
    Ok(json!(tab.add_cookie(cookie).await.map_err(|e| e.msg)?))
}

/// Deletes the cookies named `name`, or those a request to `url` carries, or both filters:
/// how many went (nothing without either, as in Splash).
async fn delete_cookies(tab: &Arc<Tab>, p: &Value) -> Result<Value, String> {
    let name = p["name"].as_str();
    let url = p["url"].as_str();
    if name.is_none() && url.is_none() {
        return Ok(json!(0));
    }
    let cookies = match url {
        Some(u) => tab.cookies_for(u).await.map_err(|e| e.msg)?,
        None => tab.all_cookies().await.map_err(|e| e.msg)?,
    };
    let mut removed = 0;
    for c in cookies
        .iter()
        .filter(|c| name.is_none_or(|n| c["name"] == n))
    {
        let field = |k: &str| c[k].as_str().unwrap_or("").to_string();
        tab.delete_cookie(&field("name"), &field("domain"), &field("path"))
            .await
            .map_err(|e| e.msg)?;
        removed += 1;
    }
    Ok(json!(removed))
}

/// Deletes every cookie of the task's context: how many there were.
async fn clear_cookies(tab: &Arc<Tab>) -> Result<Value, String> {
    let before = tab.all_cookies().await.map_err(|e| e.msg)?.len();
    tab.clear_all_cookies().await.map_err(|e| e.msg)?;
    Ok(json!(before))
}

fn num(p: &Value, key: &str) -> Option<f64> {
    p[key].as_f64().filter(|v| v.is_finite())
}

/// A capture as Splash takes one: `{format: png | jpeg, quality?, render_all?, width?,
/// height?, region?: [left, top, right, bottom]}`. Answers `{base64}` (`null` for an empty
/// area, as Splash answers nil).
async fn capture(tab: &Arc<Tab>, p: &Value) -> Result<Value, String> {
    let l = tab.layout().await.map_err(|e| e.msg)?;
    let (x, y, mut w, mut h) = if p["render_all"].as_bool().unwrap_or(false) {
        (
            0.0,
            0.0,
            l.content_width.max(l.width),
            l.content_height.max(l.height),
        )
    } else if let Some(region) = p["region"].as_array() {
        let r: Vec<f64> = region.iter().filter_map(Value::as_f64).collect();
        let [left, top, right, bottom] = r[..] else {
            return Err(
                "region must be a table containing 4 numbers {left, top, right, bottom}".into(),
            );
        };
        (
            l.scroll_x + left,
            l.scroll_y + top,
            right - left,
            bottom - top,
        )
    } else {
        (l.scroll_x, l.scroll_y, l.width, l.height)
    };
    let scale = match num(p, "width") {
        Some(width) if w > 0.0 => width / w,
        _ => 1.0,
    };
    if let Some(height) = num(p, "height") {
        h = height / scale;
    }
    h = h.min(MAX_FULL_PAGE_HEIGHT);
    w = w.min(MAX_FULL_PAGE_HEIGHT);
    if w < 1.0 || h < 1.0 {
        return Ok(json!({"base64": null}));
    }
    let quality = match p["format"].as_str() {
        Some("jpeg") => Some(num(p, "quality").unwrap_or(75.0).clamp(0.0, 100.0) as u8),
        _ => None,
    };
    let bytes = tab
        .capture_clip([x, y, w, h], scale, quality)
        .await
        .map_err(|e| e.msg)?;
    Ok(json!({"base64": crate::encoding::encode_base64(&bytes)}))
}

/// Adds `source` to run in every new document of the page before its own scripts: its id.
async fn autoload(tab: &Tab, p: &Value) -> Result<Value, String> {
    let source = p["source"]
        .as_str()
        .ok_or("autoload: `source` is required")?;
    tab.add_init_script(source).await.map_err(|e| e.msg)
}

/// Removes the autoload scripts `ids`.
async fn autoload_reset(tab: &Tab, p: &Value) -> Result<Value, String> {
    for id in p["ids"].as_array().into_iter().flatten() {
        tab.remove_init_script(id).await.map_err(|e| e.msg)?;
    }
    Ok(Value::Null)
}

/// A GET of `url` through the page's network stack: `{ok, status, headers, base64, error?}`.
/// A request that fails is `ok = false` with its reason, not an error (Splash's `http_get`).
async fn fetch(tab: &Tab, p: &Value) -> Result<Value, String> {
    let url = p["url"].as_str().ok_or("`url` is required")?;
    let got = tab.load_resource(url).await.map_err(|e| e.msg)?;
    Ok(json!({
        "ok": got.loaded && (200..400).contains(&got.status),
        "status": got.status,
        "headers": got.headers,
        "error": got.error,
        "base64": crate::encoding::encode_base64(&got.body),
    }))
}

/// The longest a request outside the page may take.
const HTTP_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// A request outside the page (Splash's `http_get` / `http_post`): `{method, url, headers?,
/// body? (base64), follow_redirects?}`, with the context's cookies for the URL (unless the
/// headers carry their own) and the cookies it answers with kept in the context. Answers
/// `{ok, status, url, headers, base64, error?}`; a request that fails is `ok = false`.
async fn http(tab: &Tab, p: &Value) -> Result<Value, String> {
    let url = p["url"].as_str().ok_or("`url` is required")?.to_string();
    let method = match p["method"].as_str().unwrap_or("GET") {
        "POST" => reqwest::Method::POST,
        _ => reqwest::Method::GET,
    };
    let follow = p["follow_redirects"].as_bool().unwrap_or(true);
    let tls = crate::browser::endpoint::tls_config().await?;
    let client = reqwest::Client::builder()
        .use_preconfigured_tls((*tls).clone())
        .redirect(if follow {
            reqwest::redirect::Policy::limited(10)
        } else {
            reqwest::redirect::Policy::none()
        })
        .timeout(HTTP_BOUND)
        .build()
        .map_err(|e| e.to_string())?;
    let mut req = client.request(method, &url);
    let mut has_cookie = false;
    for (k, v) in p["headers"].as_object().into_iter().flatten() {
        has_cookie |= k.eq_ignore_ascii_case("cookie");
        req = req.header(k.as_str(), v.as_str().unwrap_or_default());
    }
    if !has_cookie {
        let jar = tab.cookies_for(&url).await.map_err(|e| e.msg)?;
        let line: Vec<String> = jar
            .iter()
            .filter_map(|c| Some(format!("{}={}", c["name"].as_str()?, c["value"].as_str()?)))
            .collect();
        if !line.is_empty() {
            req = req.header("Cookie", line.join("; "));
        }
    }
    if let Some(b) = p["body"].as_str() {
        req = req.body(crate::encoding::decode_base64(b).unwrap_or_default());
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            return Ok(json!({"ok": false, "status": 0, "url": url, "headers": {},
                "base64": "", "error": e.to_string()}))
        }
    };
    let status = resp.status().as_u16();
    let final_url = resp.url().to_string();
    let mut headers = Map::new();
    for (k, v) in resp.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        if k == reqwest::header::SET_COOKIE {
            // Kept for the page, as the browser would keep it.
            if let Some((pair, _)) = v.split_once(';').or(Some((v.as_str(), ""))) {
                if let Some((name, value)) = pair.split_once('=') {
                    let cookie =
                        json!({"name": name.trim(), "value": value.trim(), "url": final_url});
                    let _ = tab.add_cookie(cookie).await;
                }
            }
        }
        match headers.get_mut(k.as_str()) {
            Some(Value::String(prev)) => {
                prev.push('\n');
                prev.push_str(&v);
            }
            _ => {
                headers.insert(k.as_str().to_string(), json!(v));
            }
        }
    }
    let body = resp.bytes().await.map_err(|e| e.to_string())?;
    Ok(
        json!({"ok": (200..400).contains(&status), "status": status, "url": final_url,
        "headers": headers, "base64": crate::encoding::encode_base64(&body)}),
    )
}

/// The route rule that keeps images out (`splash.images_enabled = false`, `images=0`).
const NO_IMAGES: &str = "splash:images_enabled=false";

/// Lets images load or fails every image request of the task (`{enabled}`).
async fn images(task: &Arc<Task>, p: &Value) -> Result<Value, String> {
    let enabled = p["enabled"].as_bool().unwrap_or(true);
    let changed = if enabled {
        task.change_routes(|r| r.remove(Some(NO_IMAGES)) > 0).await
    } else {
        let rule = Rule {
            pattern: NO_IMAGES.to_string(),
            matcher: Arc::new(|_: &str| true),
            action: RouteAction::Abort,
            resource_type: Some("Image".to_string()),
        };
        task.change_routes(|r| r.set(rule)).await
    };
    changed.map(|(c, _)| json!(c)).map_err(|e| e.msg)
}

/// The route rule that holds every request for the script's `on_request` callbacks.
const ON_REQUEST: &str = "splash:on_request";
/// The route rule that holds every response's headers for `on_response_headers` callbacks.
const ON_RESPONSE_HEADERS: &str = "splash:on_response_headers";

/// Holds every request (or response headers) of the task for the script under rule
/// `pattern` (`{on: true}`), or stops and lets the held ones go (`{on: false}`).
async fn hold(
    task: &Arc<Task>,
    pattern: &str,
    action: RouteAction,
    p: &Value,
) -> Result<Value, String> {
    let on = p["on"].as_bool().unwrap_or(true);
    let changed = if on {
        let rule = Rule {
            pattern: pattern.to_string(),
            matcher: Arc::new(|_: &str| true),
            action,
            resource_type: None,
        };
        task.change_routes(|r| r.set(rule)).await
    } else {
        let out = task.change_routes(|r| r.remove(Some(pattern)) > 0).await;
        let response = action == RouteAction::AskResponse;
        task.events.routes.release_held(response).await;
        out
    };
    changed.map(|(c, _)| json!(c)).map_err(|e| e.msg)
}

/// The requests held since the last call, waiting up to `wait_ms` for one.
async fn asked(task: &Arc<Task>, p: &Value) -> Value {
    let wait = p["wait_ms"].as_u64().unwrap_or(200).min(5_000);
    Value::Array(
        task.events
            .routes
            .next_asked(std::time::Duration::from_millis(wait))
            .await,
    )
}

/// Answers a held request: `{id, abort?, url?, method?, body?, headers?: {name: value}}`.
async fn decide(task: &Arc<Task>, p: &Value) -> Result<Value, String> {
    let id = p["id"].as_str().ok_or("decide: `id` is required")?;
    let decision = Decision {
        abort: p["abort"].as_bool().unwrap_or(false),
        url: p["url"].as_str().map(str::to_string),
        method: p["method"].as_str().map(str::to_string),
        body: p["body"].as_str().map(|b| b.as_bytes().to_vec()),
        headers: p["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default(),
    };
    task.events
        .routes
        .decide(id, decision)
        .await
        .map(|held| json!(held))
        .map_err(|e| e.msg)
}

/// The requests that ended after `after` (epoch ms), in the order they ended, as Splash's
/// `on_response` shows them: `{responses: [{url, status, headers, mimeType, ok, failure,
/// request: {url, method, headers}, body?}], last}` (bodies when `bodies` and the recorder
/// kept one: xhr and fetch).
fn finished(task: &Arc<Task>, p: &Value) -> Value {
    let after = p["after"].as_u64().unwrap_or(0);
    let bodies = p["bodies"].as_bool().unwrap_or(false);
    let mut done: Vec<RequestRecord> = task
        .events
        .log
        .requests()
        .requests
        .into_iter()
        .filter(|r| r.finished_at.is_some_and(|t| t > after))
        .collect();
    done.sort_by_key(|r| r.finished_at);
    if bodies {
        // A body still being copied is waited for: that response and the later ones come in
        // the next call.
        if let Some(at) = done
            .iter()
            .position(|r| task.events.log.body(&r.request_id).1)
        {
            done.truncate(at);
        }
    }
    let last = done.last().and_then(|r| r.finished_at).unwrap_or(after);
    let responses: Vec<Value> = done
        .iter()
        .map(|r| {
            let mut v = json!({
                "url": r.url, "status": r.status, "headers": r.response_headers,
                "mimeType": r.mime_type, "ok": r.failure.is_none() && r.status.is_some_and(|s| s < 400),
                "failure": r.failure,
                "request": {"url": r.url, "method": r.method, "headers": r.request_headers},
            });
            if bodies {
                if let (Some(b), _) = task.events.log.body(&r.request_id) {
                    if let Some(text) = b.body {
                        v["body"] = json!(if b.base64 {
                            text
                        } else {
                            crate::encoding::encode_base64(text.as_bytes())
                        });
                    }
                }
            }
            v
        })
        .collect();
    json!({"responses": responses, "last": last})
}

/// HAR's `[{name, value}]` of a CDP headers object.
fn har_headers(h: &Value) -> Value {
    let mut out = Vec::new();
    for (k, v) in h.as_object().into_iter().flatten() {
        // Chromium joins a repeated header with newlines.
        for line in v.as_str().unwrap_or("").split('\n') {
            out.push(json!({"name": k, "value": line}));
        }
    }
    Value::Array(out)
}

fn iso_ms(ms: u64) -> String {
    crate::trace::iso_utc(ms)
}

/// A HAR 1.2 entry of `r` (bodies when `bodies` and the recorder copied one).
fn har_entry(task: &Task, r: &RequestRecord, bodies: bool) -> Value {
    let query: Vec<Value> = url::Url::parse(&r.url)
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect()
        })
        .unwrap_or_default();
    let http_version = r
        .protocol
        .as_deref()
        .map(|p| match p {
            "h2" => "HTTP/2".to_string(),
            "h3" => "HTTP/3".to_string(),
            other => other.to_ascii_uppercase(),
        })
        .unwrap_or_else(|| "HTTP/1.1".into());
    let mut request = json!({
        "method": r.method, "url": r.url, "httpVersion": http_version, "cookies": [],
        "headers": har_headers(&r.request_headers), "queryString": query,
        "headersSize": -1, "bodySize": r.post_data_length.unwrap_or(0),
    });
    if let Some(post) = &r.post_data {
        let mime = r.request_headers["Content-Type"]
            .as_str()
            .or(r.request_headers["content-type"].as_str())
            .unwrap_or("");
        request["postData"] = json!({"mimeType": mime, "text": post});
    }
    let mut content = json!({"size": r.body_length.map_or(-1, |n| n as i64),
        "mimeType": r.mime_type.clone().unwrap_or_default()});
    if bodies {
        if let (Some(b), _) = task.events.log.body(&r.request_id) {
            if let Some(text) = b.body {
                content["text"] = json!(text);
                if b.base64 {
                    content["encoding"] = json!("base64");
                }
            }
        }
    }
    let location = r.response_headers["location"]
        .as_str()
        .or(r.response_headers["Location"].as_str())
        .unwrap_or("");
    let wait = r
        .responded_at
        .map_or(-1, |t| t.saturating_sub(r.requested_at) as i64);
    let receive = match (r.responded_at, r.finished_at) {
        (Some(a), Some(b)) => b.saturating_sub(a) as i64,
        _ => -1,
    };
    let total = r
        .finished_at
        .map_or(0, |t| t.saturating_sub(r.requested_at));
    json!({
        "pageref": "1",
        "startedDateTime": iso_ms(r.requested_at),
        "time": total,
        "request": request,
        "response": {
            "status": r.status.unwrap_or(0), "statusText": r.status_text,
            "httpVersion": http_version, "cookies": [],
            "headers": har_headers(&r.response_headers), "content": content,
            "redirectURL": location, "headersSize": -1, "bodySize": -1,
        },
        "cache": {},
        "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0,
                    "wait": wait, "receive": receive},
        "_splash_processing_state": if r.failure.is_some() { "error" }
            else if r.finished_at.is_some() { "finished" } else { "headers" },
        "_moonpilot_failure": r.failure,
        "_moonpilot_resource_type": r.resource_type,
    })
}

/// The task's traffic since `since` (epoch ms) as HAR 1.2 (`{since, bodies, history}`):
/// `history` keeps only the main frame's documents (Splash's `history()`).
async fn har(task: &Arc<Task>, tab: &Tab, p: &Value) -> Result<Value, String> {
    let since = p["since"].as_u64().unwrap_or(0);
    let bodies = p["bodies"].as_bool().unwrap_or(false);
    let main = if p["history"].as_bool().unwrap_or(false) {
        Some(tab.main_frame().await.map_err(|e| e.msg)?.frame_id)
    } else {
        None
    };
    let now = task.events.log.requests();
    let entries: Vec<Value> = now
        .requests
        .iter()
        .filter(|r| r.requested_at >= since)
        .filter(|r| match &main {
            Some(m) => r.resource_type == "document" && r.frame_id.as_deref() == Some(m),
            None => true,
        })
        .map(|r| har_entry(task, r, bodies))
        .collect();
    if main.is_some() {
        return Ok(Value::Array(entries));
    }
    let started = now
        .requests
        .iter()
        .find(|r| r.requested_at >= since)
        .map_or(crate::clock::epoch_ms(), |r| r.requested_at);
    let title = p["title"].as_str().unwrap_or("");
    Ok(json!({"log": {
        "version": "1.2",
        "creator": {"name": "moonpilot", "version": env!("CARGO_PKG_VERSION")},
        "browser": {"name": "Chromium", "version": ""},
        "pages": [{"id": "1", "startedDateTime": iso_ms(started), "title": title,
                   "pageTimings": {}}],
        "entries": entries,
        "_moonpilot_dropped": now.dropped,
    }}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_times_read_and_write_as_scrapy_splash_does() {
        assert_eq!(parse_iso("2009-07-24T19:20:30Z"), Some(1_248_463_230.0));
        assert_eq!(
            parse_iso("2009-07-24T21:20:30+02:00"),
            Some(1_248_463_230.0)
        );
        assert_eq!(parse_iso("2009-07-24T19:20:30.500Z"), Some(1_248_463_230.5));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(iso_seconds(1_248_463_230), "2009-07-24T19:20:30Z");
        let c = har_cookie(&json!({"name": "a", "value": "1", "expires": -1, "session": true}));
        assert!(c.get("expires").is_none(), "{c}");
        let c = har_cookie(&json!({"name": "a", "value": "1", "expires": 1_248_463_230.2}));
        assert_eq!(c["expires"], "2009-07-24T19:20:30Z");
    }
}
