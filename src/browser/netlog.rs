//! The task's recorder: console messages, page errors, requests and captured response bodies of
//! all its tabs, from each tab's attach on (`get_console_logs`, `get_requests`,
//! `get_response_body`, `wait_for_response`).
//!
//! Every buffer is a bounded ring that counts what it dropped (PROTOCOL.md §16: console and
//! page errors 200 each, requests 200, responses 100, a captured body ≤ 100000 chars, recorded
//! postData ≤ 4000 chars). The network side is fed by the tab's one Network listener set
//! (`netwatch`); the console side by [`TaskLog::watch_console`]. xhr/fetch bodies are copied the
//! moment their request finishes, so they survive the page navigating away. Requests of
//! out-of-process iframes go to their own sessions: [`TaskLog::watch_remote_frames`] attaches
//! to the tab on the raw connection, auto-attaches its iframe targets and records their
//! Network events the same way.
//!
//! The state sits behind a `std::sync::Mutex` locked only to push or copy, never across an
//! `.await`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::log::EventEntryAdded;
use chromiumoxide::cdp::browser_protocol::network::{
    EventRequestWillBeSent, EventResponseReceived,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EventConsoleApiCalled, EventExceptionThrown, RemoteObject,
};
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::{json, Value};

use super::cdp_error::from_cdp;
use super::raw::Raw;
use super::Browser;
use crate::clock::epoch_ms;
use crate::error::CommandError;

/// Console messages kept per task.
pub const CONSOLE_CAP: usize = 200;
/// Page errors kept per task.
pub const ERRORS_CAP: usize = 200;
/// Requests kept per task.
pub const REQUESTS_CAP: usize = 200;
/// Captured response bodies kept per task.
pub const BODIES_CAP: usize = 100;
/// Longest captured body, in chars.
pub const BODY_CHARS: usize = 100_000;
/// Longest recorded postData, in chars.
pub const POST_DATA_CHARS: usize = 4000;
/// Longest console line or page error kept, in chars.
const LINE_CHARS: usize = 4000;
/// How long an out-of-process frame may stay paused while its recording and routes are set
/// up (then it runs regardless).
const FRAME_SETUP: Duration = Duration::from_secs(5);

/// One recorded request.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// CDP's request id (per session).
    pub request_id: String,
    /// Epoch ms when it was issued.
    pub requested_at: u64,
    /// HTTP method.
    pub method: String,
    /// The request URL (the last hop's, for a redirect).
    pub url: String,
    /// Chromium's resource type, lower case (`xhr`, `fetch`, `document`…).
    pub resource_type: String,
    /// The HTTP status, once the response arrived.
    pub status: Option<i64>,
    /// The response's MIME type.
    pub mime_type: Option<String>,
    /// Epoch ms when the response arrived.
    pub responded_at: Option<u64>,
    /// The request body, cut to [`POST_DATA_CHARS`].
    pub post_data: Option<String>,
    /// The full length of the request body in chars.
    pub post_data_length: Option<usize>,
    /// Why the request failed.
    pub failure: Option<String>,
    /// Epoch ms when it finished or failed.
    pub finished_at: Option<u64>,
    /// The response's `Content-Length` when it is the length of the body itself (no
    /// `Content-Encoding` other than identity): how a body read before the request finished
    /// is known to be whole.
    pub body_length: Option<u64>,
    /// The request's headers as sent (an object), for HAR.
    pub request_headers: Value,
    /// The response's headers (an object; null before it arrived), for HAR.
    pub response_headers: Value,
    /// The response's status text.
    pub status_text: String,
    /// The response's protocol (`http/1.1`, `h2`).
    pub protocol: Option<String>,
    /// The frame that issued it.
    pub frame_id: Option<String>,
}

impl RequestRecord {
    /// The record as `get_requests` lists it.
    pub fn to_json(&self) -> Value {
        json!({
            "requestId": self.request_id,
            "requestedAt": self.requested_at,
            "method": self.method,
            "url": self.url,
            "resourceType": self.resource_type,
            "status": self.status,
            "mimeType": self.mime_type,
            "respondedAt": self.responded_at,
            "postData": self.post_data,
            "postDataLength": self.post_data_length,
            "postDataTruncated": self.post_data_length.map(|n| n > POST_DATA_CHARS),
            "failure": self.failure,
            "finishedAt": self.finished_at,
            "correlationMissed": false,
            "correlatedBy": "requestId",
        })
    }
}

/// A response body copied when its request finished.
#[derive(Debug, Clone)]
pub struct BodyRecord {
    /// The request it answered.
    pub request_id: String,
    /// The body (base64 text when `base64`), cut to [`BODY_CHARS`].
    pub body: Option<String>,
    /// The full length in chars.
    pub length: usize,
    /// Whether the browser sent it base64-encoded (binary).
    pub base64: bool,
    /// Why it could not be read.
    pub error: Option<String>,
    /// Epoch ms when it was copied.
    pub captured_at: u64,
}

#[derive(Debug)]
struct LogState {
    logs: VecDeque<String>,
    errors: VecDeque<String>,
    logs_dropped: u64,
    errors_dropped: u64,
    requests: VecDeque<RequestRecord>,
    requests_dropped: u64,
    bodies: VecDeque<BodyRecord>,
    bodies_dropped: u64,
    /// Request ids whose body is being copied.
    capturing: Vec<String>,
}

/// The recorder of one task (shared by its tabs).
#[derive(Debug)]
pub struct TaskLog {
    state: Mutex<LogState>,
    /// Epoch ms when the task's recording started.
    recorded_since: u64,
    /// Bumped on each response, finish, failure or captured body (for `wait_for_response`).
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for TaskLog {
    fn default() -> TaskLog {
        TaskLog {
            state: Mutex::new(LogState {
                logs: VecDeque::new(),
                errors: VecDeque::new(),
                logs_dropped: 0,
                errors_dropped: 0,
                requests: VecDeque::new(),
                requests_dropped: 0,
                bodies: VecDeque::new(),
                bodies_dropped: 0,
                capturing: Vec::new(),
            }),
            recorded_since: epoch_ms(),
            changed: tokio::sync::watch::channel(0).0,
        }
    }
}

/// The console buffers as read.
#[derive(Debug, Clone)]
pub struct ConsoleNow {
    /// `<type>: <text>` lines, oldest first.
    pub logs: Vec<String>,
    /// Uncaught page errors, oldest first.
    pub errors: Vec<String>,
    /// Messages pushed out of the ring since the last clear.
    pub logs_dropped: u64,
    /// Errors pushed out of the ring since the last clear.
    pub errors_dropped: u64,
}

/// The request ring as read.
#[derive(Debug, Clone)]
pub struct RequestsNow {
    /// The records, oldest first.
    pub requests: Vec<RequestRecord>,
    /// Records pushed out of the ring.
    pub dropped: u64,
    /// Epoch ms when recording started.
    pub recorded_since: u64,
}

fn push_capped<T>(ring: &mut VecDeque<T>, cap: usize, item: T, dropped: &mut u64) {
    if ring.len() >= cap {
        ring.pop_front();
        *dropped += 1;
    }
    ring.push_back(item);
}

/// `s` cut to `max` chars, with its full length in chars.
pub fn cut(s: &str, max: usize) -> (String, usize, bool) {
    let len = s.chars().count();
    if len <= max {
        (s.to_string(), len, false)
    } else {
        (s.chars().take(max).collect(), len, true)
    }
}

/// A console argument as text: its primitive value, else its description.
fn arg_text(o: &RemoteObject) -> String {
    match &o.value {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() || o.description.is_none() => v.to_string(),
        _ => o
            .description
            .clone()
            .or_else(|| {
                o.unserializable_value
                    .as_ref()
                    .map(|u| u.as_ref().to_string())
            })
            .unwrap_or_else(|| o.r#type.as_ref().to_string()),
    }
}

impl TaskLog {
    fn with<R>(&self, f: impl FnOnce(&mut LogState) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Epoch ms when the task's recording started.
    pub fn recorded_since(&self) -> u64 {
        self.recorded_since
    }

    /// A receiver that changes on each response, finish, failure or captured body.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn push_log(&self, line: String) {
        let (line, _, _) = cut(&line, LINE_CHARS);
        self.with(|s| push_capped(&mut s.logs, CONSOLE_CAP, line, &mut s.logs_dropped));
    }

    fn push_error(&self, line: String) {
        let (line, _, _) = cut(&line, LINE_CHARS);
        self.with(|s| push_capped(&mut s.errors, ERRORS_CAP, line, &mut s.errors_dropped));
    }

    /// The console buffers now.
    pub fn console(&self) -> ConsoleNow {
        self.with(|s| ConsoleNow {
            logs: s.logs.iter().cloned().collect(),
            errors: s.errors.iter().cloned().collect(),
            logs_dropped: s.logs_dropped,
            errors_dropped: s.errors_dropped,
        })
    }

    /// Empties the console buffers (and their dropped counts); answers how many of each went.
    pub fn clear_console(&self) -> (usize, usize) {
        self.with(|s| {
            let n = (s.logs.len(), s.errors.len());
            s.logs.clear();
            s.errors.clear();
            s.logs_dropped = 0;
            s.errors_dropped = 0;
            n
        })
    }

    /// Records the console messages, page errors and log entries of `page`'s session.
    pub(super) async fn watch_console(
        self: &Arc<TaskLog>,
        browser: &Arc<Browser>,
        page: &Page,
    ) -> Result<(), CommandError> {
        let mut console = page
            .event_listener::<EventConsoleApiCalled>()
            .await
            .map_err(|e| from_cdp("Runtime.consoleAPICalled", e))?;
        let mut thrown = page
            .event_listener::<EventExceptionThrown>()
            .await
            .map_err(|e| from_cdp("Runtime.exceptionThrown", e))?;
        let mut entries = page
            .event_listener::<EventEntryAdded>()
            .await
            .map_err(|e| from_cdp("Log.entryAdded", e))?;
        if let Err(e) = page.execute(Raw::new("Log.enable", json!({}))).await {
            tracing::debug!("Log.enable failed; browser log entries go unrecorded: {e}");
        }
        let me = self.clone();
        browser.spawn(async move {
            loop {
                tokio::select! {
                    ev = console.next() => match ev {
                        Some(ev) => {
                            let text: Vec<String> = ev.args.iter().map(arg_text).collect();
                            me.push_log(format!("{}: {}", ev.r#type.as_ref(), text.join(" ")));
                        }
                        None => break,
                    },
                    ev = thrown.next() => match ev {
                        Some(ev) => {
                            let d = &ev.exception_details;
                            let what = d
                                .exception
                                .as_ref()
                                .and_then(|o| o.description.clone().or_else(|| o.value.as_ref().map(|v| v.to_string())));
                            let line = match what {
                                Some(w) => format!("{}: {}", d.text, w),
                                None => d.text.clone(),
                            };
                            me.push_error(line);
                        }
                        None => break,
                    },
                    ev = entries.next() => match ev {
                        Some(ev) => {
                            let e = &ev.entry;
                            let at = e.url.as_deref().map(|u| format!(" ({u})")).unwrap_or_default();
                            me.push_log(format!("{}: {}{at}", e.level.as_ref(), e.text));
                        }
                        None => break,
                    },
                }
            }
        });
        Ok(())
    }

    /// A request was issued (or redirected: the same id moves to its next hop).
    pub(super) fn request_sent(&self, ev: &EventRequestWillBeSent) {
        let post = ev.request.post_data_entries.as_ref().map(|entries| {
            let mut bytes = Vec::new();
            for e in entries {
                if let Some(b) = &e.bytes {
                    let b64: &str = b.as_ref();
                    bytes.extend(crate::encoding::decode_base64(b64).unwrap_or_default());
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        });
        let (post_data, post_data_length) = match post {
            Some(p) => {
                let (cut_text, len, _) = cut(&p, POST_DATA_CHARS);
                (Some(cut_text), Some(len))
            }
            None => (None, None),
        };
        let record = RequestRecord {
            request_id: ev.request_id.as_ref().to_string(),
            requested_at: epoch_ms(),
            method: ev.request.method.clone(),
            url: ev.request.url.clone(),
            resource_type: ev
                .r#type
                .as_ref()
                .map(|t| t.as_ref().to_ascii_lowercase())
                .unwrap_or_else(|| "other".into()),
            status: None,
            mime_type: None,
            responded_at: None,
            post_data,
            post_data_length,
            failure: None,
            finished_at: None,
            body_length: None,
            request_headers: ev.request.headers.inner().clone(),
            response_headers: Value::Null,
            status_text: String::new(),
            protocol: None,
            frame_id: ev.frame_id.as_ref().map(|f| f.as_ref().to_string()),
        };
        self.with(|s| {
            if let Some(r) = s
                .requests
                .iter_mut()
                .rev()
                .find(|r| r.request_id == record.request_id && r.finished_at.is_none())
            {
                // A redirect hop: the same request, at its new URL.
                r.url = record.url;
                r.method = record.method;
                return;
            }
            push_capped(
                &mut s.requests,
                REQUESTS_CAP,
                record,
                &mut s.requests_dropped,
            );
        });
    }

    /// The response of a request arrived.
    pub(super) fn response_received(&self, ev: &EventResponseReceived) {
        let id = ev.request_id.as_ref();
        self.with(|s| {
            if let Some(r) = s.requests.iter_mut().rev().find(|r| r.request_id == id) {
                r.status = Some(ev.response.status);
                r.url = ev.response.url.clone();
                r.mime_type = Some(ev.response.mime_type.clone());
                r.responded_at = Some(epoch_ms());
                r.body_length = identity_length(ev.response.headers.inner());
                r.response_headers = ev.response.headers.inner().clone();
                r.status_text = ev.response.status_text.clone();
                r.protocol = ev.response.protocol.clone();
            }
        });
        self.bump();
    }

    /// Keeps `body` as the copied body of request `id` (one read before its request finished,
    /// known to be whole), unless one is kept already.
    pub fn keep_body(&self, id: &str, body: String, base64: bool) {
        let (text, length, _) = cut(&body, BODY_CHARS);
        self.with(|s| {
            if s.bodies.iter().any(|b| b.request_id == id) {
                return;
            }
            let rec = BodyRecord {
                request_id: id.to_string(),
                body: Some(text),
                length,
                base64,
                error: None,
                captured_at: epoch_ms(),
            };
            push_capped(&mut s.bodies, BODIES_CAP, rec, &mut s.bodies_dropped);
        });
        self.bump();
    }

    /// A request finished; answers whether its body should be copied now (xhr/fetch).
    pub(super) fn finished(&self, id: &str) -> bool {
        let copy = self.with(|s| {
            let Some(r) = s.requests.iter_mut().rev().find(|r| r.request_id == id) else {
                return false;
            };
            r.finished_at = Some(epoch_ms());
            let copy = matches!(r.resource_type.as_str(), "xhr" | "fetch");
            if copy {
                s.capturing.push(id.to_string());
            }
            copy
        });
        self.bump();
        copy
    }

    /// A request failed.
    pub(super) fn failed(&self, id: &str, error: &str, canceled: bool) {
        self.with(|s| {
            if let Some(r) = s.requests.iter_mut().rev().find(|r| r.request_id == id) {
                r.finished_at = Some(epoch_ms());
                r.failure = Some(if canceled {
                    format!("{error} (canceled)")
                } else {
                    error.to_string()
                });
            }
        });
        self.bump();
    }

    /// Copies the body of finished request `id` through `page`'s session (in the background).
    pub(super) fn capture_body(
        self: &Arc<TaskLog>,
        browser: &Arc<Browser>,
        page: &Page,
        id: String,
    ) {
        let page = page.clone();
        let params = json!({"requestId": id});
        self.capture_with(browser, id, async move {
            page.execute(Raw::new("Network.getResponseBody", params))
                .await
                .map(|r| r.result)
                .map_err(|e| e.to_string())
        });
    }

    /// Copies the body of finished request `id` as `read` answers it (in the background).
    fn capture_with(
        self: &Arc<TaskLog>,
        browser: &Arc<Browser>,
        id: String,
        read: impl std::future::Future<Output = Result<Value, String>> + Send + 'static,
    ) {
        let me = self.clone();
        browser.spawn(async move {
            let read = tokio::time::timeout(std::time::Duration::from_secs(10), read).await;
            let mut rec = BodyRecord {
                request_id: id.clone(),
                body: None,
                length: 0,
                base64: false,
                error: None,
                captured_at: epoch_ms(),
            };
            match read {
                Ok(Ok(resp)) => {
                    let v: &Value = &resp;
                    let body = v.get("body").and_then(Value::as_str).unwrap_or_default();
                    let (text, len, _) = cut(body, BODY_CHARS);
                    rec.body = Some(text);
                    rec.length = len;
                    rec.base64 = v.get("base64Encoded").and_then(Value::as_bool) == Some(true);
                }
                Ok(Err(e)) => rec.error = Some(e),
                Err(_) => rec.error = Some("reading the body took over 10 s".into()),
            }
            me.with(|s| {
                s.capturing.retain(|c| *c != id);
                push_capped(&mut s.bodies, BODIES_CAP, rec, &mut s.bodies_dropped);
            });
            me.bump();
        });
    }

    /// Records the requests of `target`'s out-of-process iframes: a session of its own on the
    /// raw connection auto-attaches them (flattened) and enables Network in each. Runs in the
    /// background until the target goes; a failure only means those requests go unrecorded.
    /// The frames' sessions are also handed to the task's `routes`.
    pub(super) fn watch_remote_frames(
        self: &Arc<TaskLog>,
        browser: &Arc<Browser>,
        target: String,
        routes: Arc<super::routes::Routes>,
    ) {
        let me = self.clone();
        let spawner = browser.clone();
        let browser = browser.clone();
        spawner.spawn(async move {
            let conn = match browser.raw().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!("out-of-process frame requests go unrecorded: {}", e.msg);
                    return;
                }
            };
            let mut events = conn.session_events();
            let mut targets = conn.targets();
            let top = match conn.attach(&target).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!("out-of-process frame requests go unrecorded: {}", e.msg);
                    return;
                }
            };
            // Frames appear paused (waitForDebuggerOnStart) and run once their Network and
            // Fetch are on, so their first requests are recorded and routed too. Their attach
            // events come on a lossless channel: a missed one would leave a frame paused.
            let (attach_tx, mut attached) = tokio::sync::mpsc::unbounded_channel();
            conn.forward(&top, super::raw::Lossless::Attach, attach_tx.clone());
            let auto = json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true});
            if let Err(e) = conn
                .call(Some(&top), "Target.setAutoAttach", auto.clone())
                .await
            {
                tracing::debug!("out-of-process frame requests go unrecorded: {}", e.msg);
                return;
            }
            // The frames' sessions, the page's own one first (it only attaches frames).
            let mut sessions: Vec<String> = vec![top.clone()];
            loop {
                let ev = tokio::select! {
                    Some(ev) = attached.recv() => {
                        let child = ev.params.get("sessionId").and_then(Value::as_str);
                        let kind = ev.params.pointer("/targetInfo/type").and_then(Value::as_str);
                        let Some(child) = child.map(str::to_string) else { continue };
                        let waiting = ev.params.get("waitingForDebugger").and_then(Value::as_bool)
                            == Some(true);
                        let frame = kind == Some("iframe");
                        if frame {
                            sessions.push(child.clone());
                            conn.forward(&child, super::raw::Lossless::Attach, attach_tx.clone());
                        }
                        let (conn, auto, routes) = (conn.clone(), auto.clone(), routes.clone());
                        let browser_too = browser.clone();
                        browser.spawn(async move {
                            if frame {
                                let setup = async {
                                    if let Err(e) =
                                        routes.adopt(&browser_too, &conn, &child, true).await
                                    {
                                        tracing::debug!("a frame missed the task's routes: {}", e.msg);
                                    }
                                    let _ =
                                        conn.call(Some(&child), "Network.enable", json!({})).await;
                                    // Frames nested in it.
                                    let _ =
                                        conn.call(Some(&child), "Target.setAutoAttach", auto).await;
                                };
                                // Bounded: the frame must not stay paused.
                                let _ = tokio::time::timeout(FRAME_SETUP, setup).await;
                            }
                            if waiting {
                                let _ = conn
                                    .call(Some(&child), "Runtime.runIfWaitingForDebugger", json!({}))
                                    .await;
                            }
                        });
                        continue;
                    }
                    ev = events.recv() => ev,
                    t = targets.recv() => match t {
                        Ok(super::raw::TargetEvent::Gone { target: t }) if t == target => break,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                        // Its own end may be among the missed events: ask.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            let info = json!({"targetId": target});
                            if conn.call(None, "Target.getTargetInfo", info).await.is_err() {
                                break;
                            }
                            continue;
                        }
                        _ => continue,
                    },
                };
                let ev = match ev {
                    Ok(ev) => ev,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!("{n} out-of-process frame network events were missed");
                        continue;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                if !sessions.contains(&ev.session) {
                    continue;
                }
                match ev.method.as_str() {
                    "Target.detachedFromTarget" => {
                        if let Some(child) = ev.params.get("sessionId").and_then(Value::as_str) {
                            sessions.retain(|s| s != child);
                        }
                    }
                    _ if ev.session == top => {}
                    "Network.requestWillBeSent" => {
                        if let Ok(e) = serde_json::from_value::<EventRequestWillBeSent>(ev.params) {
                            me.request_sent(&e);
                        }
                    }
                    "Network.responseReceived" => {
                        if let Ok(e) = serde_json::from_value::<EventResponseReceived>(ev.params) {
                            me.response_received(&e);
                        }
                    }
                    "Network.loadingFinished" => {
                        if let Some(id) = ev.params.get("requestId").and_then(Value::as_str) {
                            if me.finished(id) {
                                let conn = conn.clone();
                                let (session, params) =
                                    (ev.session.clone(), json!({"requestId": id}));
                                me.capture_with(&browser, id.to_string(), async move {
                                    conn.call(Some(&session), "Network.getResponseBody", params)
                                        .await
                                        .map_err(|e| e.msg)
                                });
                            }
                        }
                    }
                    "Network.loadingFailed" => {
                        let id = ev.params.get("requestId").and_then(Value::as_str);
                        let text = ev.params.get("errorText").and_then(Value::as_str);
                        let canceled = ev.params.get("canceled").and_then(Value::as_bool);
                        if let (Some(id), Some(text)) = (id, text) {
                            me.failed(id, text, canceled == Some(true));
                        }
                    }
                    _ => {}
                }
            }
            let _ = conn
                .call(None, "Target.detachFromTarget", json!({"sessionId": top}))
                .await;
        });
    }

    /// The request ring now.
    pub fn requests(&self) -> RequestsNow {
        self.with(|s| RequestsNow {
            requests: s.requests.iter().cloned().collect(),
            dropped: s.requests_dropped,
            recorded_since: self.recorded_since,
        })
    }

    /// The captured body of request `id`, and whether its capture is still under way.
    pub fn body(&self, id: &str) -> (Option<BodyRecord>, bool) {
        self.with(|s| {
            (
                s.bodies.iter().rev().find(|b| b.request_id == id).cloned(),
                s.capturing.iter().any(|c| c == id),
            )
        })
    }

    /// Whether any body was pushed out of the last [`BODIES_CAP`].
    pub fn bodies_dropped(&self) -> u64 {
        self.with(|s| s.bodies_dropped)
    }
}

/// The `Content-Length` of response headers `headers` (a JSON object, names in any case)
/// when no `Content-Encoding` other than identity changes what it counts.
fn identity_length(headers: &Value) -> Option<u64> {
    let header = |name: &str| {
        headers.as_object().and_then(|h| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.as_str())
        })
    };
    let encoded = header("content-encoding")
        .is_some_and(|e| !e.trim().is_empty() && !e.trim().eq_ignore_ascii_case("identity"));
    if encoded {
        return None;
    }
    header("content-length").and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_are_bounded_and_count_drops() {
        let log = TaskLog::default();
        for i in 0..(CONSOLE_CAP + 5) {
            log.push_log(format!("log: {i}"));
        }
        let c = log.console();
        assert_eq!(c.logs.len(), CONSOLE_CAP);
        assert_eq!(c.logs_dropped, 5);
        assert_eq!(c.logs[0], "log: 5");
        assert_eq!(log.clear_console(), (CONSOLE_CAP, 0));
        assert_eq!(log.console().logs_dropped, 0);
    }

    #[test]
    fn only_an_identity_content_length_is_the_body_s() {
        assert_eq!(identity_length(&json!({"Content-Length": "9"})), Some(9));
        assert_eq!(
            identity_length(&json!({"content-length": " 12 ", "Content-Encoding": "identity"})),
            Some(12)
        );
        assert_eq!(
            identity_length(&json!({"content-length": "9", "content-encoding": "gzip"})),
            None
        );
        assert_eq!(
            identity_length(&json!({"transfer-encoding": "chunked"})),
            None
        );
        assert_eq!(identity_length(&Value::Null), None);
    }

    #[test]
    fn base64_and_cuts() {
        assert_eq!(cut("héllo", 2), ("hé".to_string(), 5, true));
    }
}
