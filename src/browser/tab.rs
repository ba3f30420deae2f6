//! `Tab`: one page target of the shared browser, with its frames.
//!
//! All CDP traffic of a tab goes through [`Tab::call`] (the page session) or, for out-of-process
//! iframes, through the browser's raw connection. Every call races the browser's death, so a
//! dead browser turns into `BROWSER_GONE` at once instead of a hang.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, EventResponseReceived};
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventLifecycleEvent, EventLoadEventFired, EventNavigatedWithinDocument,
    FrameId,
};
use chromiumoxide::Page;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::cdp_error::from_cdp;
use super::events::TabEvents;
use super::netwatch::{Inflight, InflightNow};
use super::raw::{Raw, RawConnection};
use super::Browser;
use crate::encoding::decode_base64;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

mod actions;
pub use actions::{Button, ElementObject, KeyStroke};

/// How long [`Tab::screenshot`] and [`Tab::screenshot_box`] may take (state files and
/// human-input crops); the capture commands pass their own budget to [`Tab::shoot`].
const SCREENSHOT_BOUND: Duration = Duration::from_secs(3);

/// The `Input.dispatchMouseEvent` params of a left click at (`x`, `y`): move, press, release.
fn click_events(x: f64, y: f64) -> [Value; 3] {
    let press = |kind: &str, buttons: u8| json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1});
    [
        json!({"type": "mouseMoved", "x": x, "y": y}),
        press("mousePressed", 1),
        press("mouseReleased", 0),
    ]
}

/// A mouse button of `Input.dispatchMouseEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseButton {
    /// The primary button.
    Left,
    /// The secondary button.
    Right,
    /// The wheel button.
    Middle,
}

impl MouseButton {
    /// The button a `button` param names: `right`, `middle`, anything else is left
    /// (COMMANDS.md, mouse group).
    pub fn parse(raw: Option<&str>) -> MouseButton {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            Some("right") => MouseButton::Right,
            Some("middle") => MouseButton::Middle,
            _ => MouseButton::Left,
        }
    }

    /// The CDP spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        }
    }

    /// Its bit in the `buttons` mask (as in DOM `MouseEvent.buttons`).
    fn bit(self) -> u8 {
        match self {
            MouseButton::Left => 1,
            MouseButton::Right => 2,
            MouseButton::Middle => 4,
        }
    }
}

/// How long freeing the listener step's remote handles may take.
const LISTENER_RELEASE: Duration = Duration::from_secs(1);
/// The object group of [`Tab::listener_targets`]' remote objects (released while the reader
/// reads, by [`Tab::release_listener_targets`]).
const LISTENER_GROUP: &str = "moonpilot-listen";
/// The listener types that make a node a click target of its own.
pub const CLICK_TYPES: [&str; 7] = [
    "click",
    "dblclick",
    "mousedown",
    "mouseup",
    "pointerdown",
    "pointerup",
    "touchstart",
];
/// A node with more listener types than this is a delegation root, not a target.
pub const MAX_LISTENER_TYPES: usize = 6;
/// At most this many listener-only targets are stored per frame: those nearest the viewport.
pub const MAX_LISTENER_TARGETS: usize = 300;
/// At most this many listened nodes are looked at (resolved) to choose them from.
pub const MAX_LISTENER_CANDIDATES: usize = 1000;

/// What [`Tab::listener_targets`] stored for one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerTargets {
    /// Elements stored because the browser holds a click-like listener for them.
    pub listeners: usize,
    /// Elements stored because of a React/Vue click handler.
    pub traces: usize,
}

/// The backendNodeIds of `DOMDebugger.getEventListeners`' answer that are click targets: at
/// least one of [`CLICK_TYPES`], at most [`MAX_LISTENER_TYPES`] types, in listing order, at
/// most [`MAX_LISTENER_CANDIDATES`] (the store keeps the [`MAX_LISTENER_TARGETS`] nearest the
/// viewport).
fn click_targets(listed: &Value) -> Vec<i64> {
    // Per node, a bit per click-like type it listens to, in listing order. Only click-like
    // types count towards a delegation root: a drawing pad also listens to moves, wheels, keys.
    let mut order: Vec<i64> = Vec::new();
    let mut kinds: HashMap<i64, u8> = HashMap::new();
    for l in listed
        .get("listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(id), Some(kind)) = (
            l.get("backendNodeId").and_then(Value::as_i64),
            l.get("type").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(bit) = CLICK_TYPES.iter().position(|t| *t == kind) else {
            continue;
        };
        *kinds.entry(id).or_insert_with(|| {
            order.push(id);
            0
        }) |= 1 << bit;
    }
    order
        .into_iter()
        .filter(|id| {
            kinds
                .get(id)
                .is_some_and(|m| m.count_ones() as usize <= MAX_LISTENER_TYPES)
        })
        .take(MAX_LISTENER_CANDIDATES)
        .collect()
}

/// Where the tab's mouse is and which buttons it holds, as the mouse commands left them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pointer {
    /// Viewport x of the main frame, CSS px.
    pub x: f64,
    /// Viewport y of the main frame, CSS px.
    pub y: f64,
    /// The pressed buttons, as a DOM `buttons` mask (1 left, 2 right, 4 middle).
    pub buttons: u8,
}

impl Pointer {
    /// The button a move reports while buttons are held (the first of left, right, middle).
    fn held(&self) -> &'static str {
        [MouseButton::Left, MouseButton::Right, MouseButton::Middle]
            .into_iter()
            .find(|b| self.buttons & b.bit() != 0)
            .map_or("none", MouseButton::as_str)
    }
}

/// Where commands for a frame go.
#[derive(Clone)]
pub enum FrameSession {
    /// The tab's own page session (main frame and in-process child frames).
    Page,
    /// An out-of-process iframe's session on the raw connection.
    Remote {
        /// The connection.
        conn: Arc<RawConnection>,
        /// The flat session id.
        session_id: String,
        /// The frame id of the session's root frame.
        root_frame_id: String,
    },
}

/// One frame of a tab, in depth-first order (main frame = ordinal 0).
#[derive(Clone)]
pub struct FrameRef {
    /// Position in the depth-first walk.
    pub ordinal: usize,
    /// CDP frame id.
    pub frame_id: String,
    /// Frame URL.
    pub url: String,
    /// Frame name (the iframe's `name`), possibly empty.
    pub name: String,
    /// Ordinal of the parent frame.
    pub parent: Option<usize>,
    /// Nesting depth (main = 0).
    pub depth: usize,
    /// The frame's security origin as CDP reports it.
    pub origin: String,
    /// Whether the frame runs in another renderer process (cross-site).
    pub out_of_process: bool,
    /// Where its commands go.
    pub session: FrameSession,
}

impl FrameRef {
    /// Whether this is the main frame.
    pub fn is_main(&self) -> bool {
        self.parent.is_none()
    }

    /// The frame as JSON (`list_frames` shape).
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.ordinal,
            "url": self.url,
            "name": self.name,
            "isMain": self.is_main(),
            "depth": self.depth,
            "parentIndex": self.parent,
            "outOfProcess": self.out_of_process,
        })
    }
}

/// Whether `origin` counts as the same origin as `main` (unknown counts as same, JS-PROBES §4).
pub fn same_origin(main: &str, origin: &str) -> bool {
    matches!(origin, "" | "://" | "null") || origin == main
}

/// What a navigation produced.
#[derive(Debug, Clone)]
pub struct NavOutcome {
    /// HTTP status of the main response, 0 when there was none (a same-document navigation);
    /// also set for a failed navigation that got a response (204 No Content).
    pub status: i64,
    /// Chrome's error text (`net::ERR_…`) when the navigation failed.
    pub error_text: Option<String>,
    /// Whether the navigation stayed in the current document (a fragment change, also of a
    /// URL reached by `history.pushState`): no request, same document, same elements.
    pub same_document: bool,
    /// Whether the response was a download instead of a document.
    pub is_download: bool,
}

/// A page target owned by one task.
pub struct Tab {
    browser: Arc<Browser>,
    page: Page,
    target_id: String,
    remote_sessions: Mutex<HashMap<String, String>>,
    /// Isolated-world contexts made in out-of-process frames, by (session, frame id).
    remote_worlds: Mutex<HashMap<(String, String), Value>>,
    /// True once the renderer crashed (a crashed page answers nothing: commands would wait for
    /// chromiumoxide's 60 s request timeout).
    crashed: Arc<tokio::sync::watch::Sender<bool>>,
    /// This page's session on the raw connection, which `Page.navigate` goes through (see
    /// [`Tab::navigate`]); attached on first use.
    nav_session: tokio::sync::OnceCell<String>,
    /// The task's event-fed state (dialogs).
    events: TabEvents,
    /// The mouse as the mouse commands left it (locked only to copy or replace).
    pointer: Mutex<Pointer>,
    /// The page session's requests in flight.
    inflight: Arc<Inflight>,
}

/// How long an out-of-process frame may take to be attached and listed before it is skipped.
pub const REMOTE_FRAME_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a navigation may take to reach `load`.
pub const NAVIGATION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a failed navigation may take to report its request's failure after `Page.navigate`
/// answered with an error (it follows at once in practice; it only makes the status known).
const FAILURE_REPORT_BOUND: Duration = Duration::from_secs(1);

/// How long a navigation event may trail another one the engine has already seen: chromiumoxide
/// hands each listener its events separately (see `response_status`). Microseconds in
/// practice, more on a loaded machine.
const RESPONSE_TRAIL: Duration = Duration::from_millis(200);

/// How many conversions `execute_js` lists in its receipt (the rest are counted).
const SCRIPT_NOTES: u32 = 20;

/// How long a same-document navigation may take to report its new URL after `Page.navigate`
/// answered (a few ms in practice; the event only confirms what already happened).
const SAME_DOCUMENT_BOUND: Duration = Duration::from_secs(2);

impl Tab {
    pub(super) async fn attach(
        browser: Arc<Browser>,
        page: Page,
        events: TabEvents,
    ) -> Result<Tab, CommandError> {
        events
            .watch_dialogs(&browser, &page)
            .await
            .map_err(|e| from_cdp("Page.javascriptDialogOpening", e))?;
        // Before any page script of the next document: `navigator.webdriver` reads false
        // (`runImmediately` covers the document already there).
        if let Err(e) = page
            .execute(Raw::new(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": js::STEALTH_JS, "runImmediately": true}),
            ))
            .await
        {
            tracing::debug!("the stealth init script was not added: {e}");
        }
        let target_id = page.target_id().as_ref().to_string();
        events.log.watch_console(&browser, &page).await?;
        let inflight =
            Inflight::watch(&browser, &page, target_id.clone(), events.log.clone()).await?;
        events
            .log
            .watch_remote_frames(&browser, target_id.clone(), events.routes.clone());
        let crashed = Arc::new(tokio::sync::watch::channel(false).0);
        // Crashes come from the browser's discovering connection. A crashed tab stays crashed
        // (its session is dead; the task is closed). The page's own event stream only tells
        // the watcher when the tab is gone, so it ends with it.
        let mut crashes = match browser.raw().await {
            Ok(conn) => {
                // Its popups are held for its task (`hold_new_pages`).
                conn.note_page(&target_id);
                Some(conn.crashes())
            }
            Err(e) => {
                tracing::warn!("renderer crashes of a tab go unnoticed: {}", e.msg);
                None
            }
        };
        let mut page_events = page
            .event_listener::<EventFrameNavigated>()
            .await
            .map_err(|e| from_cdp("Page.frameNavigated", e))?;
        let flag = crashed.clone();
        let me = target_id.clone();
        browser.spawn(async move {
            loop {
                let crash = async {
                    match crashes.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    crash = crash => match crash {
                        Ok(target) if target == me => {
                            tracing::warn!(target: "moonpilot::cdp", "a tab's renderer crashed");
                            flag.send_replace(true);
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => crashes = None,
                    },
                    event = page_events.next() => if event.is_none() {
                        break;
                    },
                }
            }
        });
        let tab = Tab {
            browser,
            page,
            target_id,
            remote_sessions: Mutex::new(HashMap::new()),
            remote_worlds: Mutex::new(HashMap::new()),
            crashed,
            nav_session: tokio::sync::OnceCell::new(),
            events,
            pointer: Mutex::new(Pointer::default()),
            inflight,
        };
        if tab.events.routes.active() {
            // Boxed: this future is part of every tab's attach (revivals included).
            Box::pin(tab.apply_routes()).await?;
        }
        Ok(tab)
    }

    /// The body of response `request_id` of the page session, read now (`Network.getResponseBody`):
    /// the text and whether it is base64 (binary). Gone once its document is.
    pub async fn response_body(&self, request_id: &str) -> Result<(String, bool), CommandError> {
        let v = self
            .call("Network.getResponseBody", json!({"requestId": request_id}))
            .await?;
        Ok((
            v.get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            v.get("base64Encoded").and_then(Value::as_bool) == Some(true),
        ))
    }

    /// What Chromium holds of request `request_id`'s body before the request finished:
    /// `Network.streamResourceContent`'s buffered data (which also has later data streamed).
    /// A fetch whose body the page never reads is never reported finished, and
    /// `Network.getResponseBody` has nothing for it, while the bytes that arrived are held.
    /// Answers the body (text when it is UTF-8, else base64), whether it is base64, and its
    /// length in bytes.
    pub async fn buffered_body(
        &self,
        request_id: &str,
    ) -> Result<(String, bool, usize), CommandError> {
        let v = self
            .call(
                "Network.streamResourceContent",
                json!({"requestId": request_id}),
            )
            .await?;
        let data = v
            .get("bufferedData")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let bytes = decode_base64(data).ok_or_else(|| {
            CommandError::failed("Network.streamResourceContent answered data that is not base64")
        })?;
        let n = bytes.len();
        Ok(match String::from_utf8(bytes) {
            Ok(text) => (text, false, n),
            Err(_) => (data.to_string(), true, n),
        })
    }

    /// Applies the task's current routes and credentials to this tab (see `routes`): its own
    /// session on the raw connection (the one navigations go through) is adopted.
    pub async fn apply_routes(&self) -> Result<(), CommandError> {
        let sync = async {
            let conn = self.browser.raw().await?;
            let session = self
                .nav_session
                .get_or_try_init(|| conn.attach(&self.target_id))
                .await?;
            self.events
                .routes
                .adopt(&self.browser, &conn, session, false)
                .await?;
            // Idempotent: every tab's call brings all the task's frames up to date too.
            self.events.routes.apply_frames(&conn).await;
            Ok(())
        };
        self.answered("Fetch.enable", async { sync.await.map(|()| Value::Null) })
            .await
            .map(drop)
    }

    /// The requests of the tab's page session in flight now (see `netwatch`).
    pub fn inflight(&self) -> InflightNow {
        self.inflight.now()
    }

    /// A stream that yields each time the main document's loading or URL moves on (a lifecycle
    /// event, a commit, a same-document navigation), for waits that re-check on each. It is
    /// registered when this answers: a re-check made after it sees every later change.
    pub async fn load_progress(&self) -> Result<BoxStream<'static, ()>, CommandError> {
        let lifecycle = self
            .page
            .event_listener::<EventLifecycleEvent>()
            .await
            .map_err(|e| from_cdp("Page.lifecycleEvent", e))?;
        let committed = self
            .page
            .event_listener::<EventFrameNavigated>()
            .await
            .map_err(|e| from_cdp("Page.frameNavigated", e))?;
        let within = self
            .page
            .event_listener::<EventNavigatedWithinDocument>()
            .await
            .map_err(|e| from_cdp("Page.navigatedWithinDocument", e))?;
        let main = self.target_id.clone();
        let main_too = main.clone();
        let lifecycle = lifecycle
            .filter(move |ev| std::future::ready(ev.frame_id.as_ref() == main))
            .map(drop);
        let committed = committed
            .filter(move |ev| std::future::ready(ev.frame.parent_id.is_none()))
            .map(drop);
        let within = within
            .filter(move |ev| std::future::ready(ev.frame_id.as_ref() == main_too))
            .map(drop);
        Ok(futures::stream::select(lifecycle, futures::stream::select(committed, within)).boxed())
    }

    /// Whether the tab's renderer has crashed.
    pub fn is_crashed(&self) -> bool {
        *self.crashed.borrow()
    }

    /// Resolves when the tab's renderer crashes (at once if it has).
    pub async fn crashed(&self) {
        let mut rx = self.crashed.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// The underlying chromiumoxide page, for benchmarks that compare against raw CDP.
    pub fn cdp_page(&self) -> &Page {
        &self.page
    }

    /// The CDP target id.
    pub fn target_id(&self) -> &str {
        &self.target_id
    }

    /// The shared browser.
    pub fn browser(&self) -> &Arc<Browser> {
        &self.browser
    }

    /// Sends a CDP command on the tab's page session; a page that does not answer within the
    /// browser's answer bound makes it `COMMAND_TIMEOUT`, outcome unknown.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CommandError> {
        let call = self.page.execute(Raw::new(method, params));
        self.answered(method, async {
            call.await
                .map(|r| r.result)
                .map_err(|e| from_cdp(method, e))
        })
        .await
    }

    /// `call` (a CDP command of this tab, on any session) under the browser's answer bound, and
    /// racing browser death: a page that does not answer in time makes it `COMMAND_TIMEOUT`,
    /// outcome unknown.
    async fn answered(
        &self,
        method: &str,
        call: impl std::future::Future<Output = Result<Value, CommandError>>,
    ) -> Result<Value, CommandError> {
        let bound = self.browser.answer_bound;
        self.browser
            .guard(async {
                tokio::time::timeout(bound, call)
                    .await
                    .unwrap_or_else(|_| Err(CommandError::unanswered(method, bound)))
            })
            .await
    }

    /// Sends a CDP command to the session that owns `frame`.
    pub async fn call_in(
        &self,
        frame: &FrameRef,
        method: &str,
        params: Value,
    ) -> Result<Value, CommandError> {
        match &frame.session {
            FrameSession::Page => self.call(method, params).await,
            FrameSession::Remote {
                conn, session_id, ..
            } => {
                self.answered(method, conn.call(Some(session_id), method, params))
                    .await
            }
        }
    }

    /// Evaluates one of our expression files (`js/*.js`) in the main frame's utility world.
    /// Falls back to the main world when the utility world is not (or no longer) there, as
    /// right after a navigation.
    pub async fn eval_expression(&self, expression: &'static str) -> Result<Value, CommandError> {
        let params = json!({"expression": expression, "returnByValue": true});
        if let Ok(Some(ctx)) = self.page.secondary_execution_context().await {
            let mut utility = params.clone();
            utility["contextId"] = json!(ctx.inner());
            if let Ok(value) = self
                .call("Runtime.evaluate", utility)
                .await
                .and_then(|res| remote_value("Runtime.evaluate", res))
            {
                return Ok(value);
            }
        }
        let res = self.call("Runtime.evaluate", params).await?;
        remote_value("Runtime.evaluate", res)
    }

    /// The execution context our probes run in for `frame`: an isolated ("utility") world that
    /// shares the DOM with the page but not its JavaScript globals, so a page that patches
    /// `Array.prototype` or `JSON` cannot break (or see) the probes. Falls back to the main world
    /// while the utility world of a fresh document does not exist yet.
    async fn probe_context(&self, frame: &FrameRef, fresh: bool) -> Result<Value, CommandError> {
        match &frame.session {
            FrameSession::Page => {
                let id: FrameId = frame.frame_id.clone().into();
                let utility = if frame.is_main() {
                    self.page.secondary_execution_context().await
                } else {
                    self.page
                        .frame_secondary_execution_context(id.clone())
                        .await
                };
                let ctx = match utility {
                    Ok(Some(ctx)) => Some(ctx),
                    _ if frame.is_main() => self.page.execution_context().await.ok().flatten(),
                    _ => self.page.frame_execution_context(id).await.ok().flatten(),
                };
                ctx.map(|c| json!(c.inner())).ok_or_else(navigating)
            }
            FrameSession::Remote { session_id, .. } => {
                let key = (session_id.clone(), frame.frame_id.clone());
                if !fresh {
                    if let Some(ctx) = self
                        .remote_worlds
                        .lock()
                        .ok()
                        .and_then(|m| m.get(&key).cloned())
                    {
                        return Ok(ctx);
                    }
                }
                let world = self
                    .call_in(
                        frame,
                        "Page.createIsolatedWorld",
                        json!({"frameId": frame.frame_id, "worldName": "moonpilot"}),
                    )
                    .await?;
                let ctx = world
                    .get("executionContextId")
                    .cloned()
                    .ok_or_else(navigating)?;
                if let Ok(mut m) = self.remote_worlds.lock() {
                    m.insert(key, ctx.clone());
                }
                Ok(ctx)
            }
        }
    }

    /// The execution context id of `frame`'s main world (where the page's own scripts run), for
    /// frames of the page session; `None` for out-of-process frames or while it is not known.
    async fn main_world(&self, frame: &FrameRef) -> Option<Value> {
        let ctx = match &frame.session {
            FrameSession::Page if frame.is_main() => self.page.execution_context().await,
            FrameSession::Page => {
                self.page
                    .frame_execution_context(frame.frame_id.clone().into())
                    .await
            }
            FrameSession::Remote { .. } => return None,
        };
        ctx.ok().flatten().map(|c| json!(c.inner()))
    }

    /// Calls a function file of `js/` in `frame`'s utility world (see `probe_context`) with one
    /// JSON argument and returns its JSON result (promises awaited).
    pub async fn call_function(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<Value, CommandError> {
        let mut params = json!({
            "functionDeclaration": function,
            "arguments": [{"value": arg}],
            "returnByValue": true,
            "awaitPromise": true,
        });
        params["executionContextId"] = self.probe_context(frame, false).await?;
        let mut res = self
            .call_in(frame, "Runtime.callFunctionOn", params.clone())
            .await;
        if matches!(&res, Err(e) if e.code == ErrorCode::PageNavigating)
            && matches!(frame.session, FrameSession::Remote { .. })
        {
            // The cached world died with its document: make a new one, once.
            params["executionContextId"] = self.probe_context(frame, true).await?;
            res = self.call_in(frame, "Runtime.callFunctionOn", params).await;
        }
        remote_value("Runtime.callFunctionOn", res?)
    }

    /// Calls a probe that answers the reply envelope (`{ok:true, value}` or
    /// `{ok:false, code, msg, data}`, see [`js::reply`]) and deserialises its value as `T`; a
    /// failure keeps the probe's code.
    pub async fn call_probe<T: DeserializeOwned>(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<T, CommandError> {
        js::reply(self.call_function(frame, function, arg).await?)
    }

    /// Calls a probe like [`Tab::call_probe`] but in `frame`'s main world, where the page's own
    /// expando properties (framework traces such as Vue's `_vei` or React's `__reactProps$`)
    /// and globals (`jQuery`) are visible. Out-of-process frames use their utility world.
    pub async fn call_probe_in_page_world<T: DeserializeOwned>(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<T, CommandError> {
        let Some(ctx) = self.main_world(frame).await else {
            return self.call_probe(frame, function, arg).await;
        };
        let params = json!({
            "functionDeclaration": function,
            "arguments": [{"value": arg}],
            "returnByValue": true,
            "awaitPromise": true,
            "executionContextId": ctx,
        });
        let res = self
            .call_in(frame, "Runtime.callFunctionOn", params)
            .await?;
        js::reply(remote_value("Runtime.callFunctionOn", res)?)
    }

    /// The event listener types the browser itself knows for the element that `function` (a
    /// probe answering an element, or null) finds in `frame` (`DOMDebugger.getEventListeners`,
    /// depth 1, piercing shadow roots; JS-PROBES.md §13.2). `None` when the probe found no
    /// element. The remote object is always released.
    pub async fn event_listener_types(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<Option<Vec<String>>, CommandError> {
        let params = json!({
            "functionDeclaration": function,
            "arguments": [{"value": arg}],
            "returnByValue": false,
            "objectGroup": "moonpilot-listeners",
            "executionContextId": self.probe_context(frame, false).await?,
        });
        let res = self
            .call_in(frame, "Runtime.callFunctionOn", params)
            .await?;
        if res.get("exceptionDetails").is_some() {
            return Err(CommandError::failed(format!(
                "listener probe threw: {}",
                exception_line(&res["exceptionDetails"])
            )));
        }
        let Some(object_id) = res
            .pointer("/result/objectId")
            .and_then(Value::as_str)
            .filter(|_| res.pointer("/result/subtype").and_then(Value::as_str) == Some("node"))
            .map(str::to_string)
        else {
            return Ok(None);
        };
        let listed = self.listener_types_of(frame, &object_id).await;
        let _ = self
            .call_in(
                frame,
                "Runtime.releaseObjectGroup",
                json!({"objectGroup": "moonpilot-listeners"}),
            )
            .await;
        Ok(Some(listed?))
    }

    /// The event types the browser holds listeners for on the remote node `object_id` of
    /// `frame`, whichever world added them (`DOMDebugger.getEventListeners`, depth 1, piercing
    /// shadow roots; sorted, unique).
    pub(crate) async fn listener_types_of(
        &self,
        frame: &FrameRef,
        object_id: &str,
    ) -> Result<Vec<String>, CommandError> {
        let listed = self
            .call_in(
                frame,
                "DOMDebugger.getEventListeners",
                json!({"objectId": object_id, "depth": 1, "pierce": true}),
            )
            .await?;
        let mut types: Vec<String> = listed
            .get("listeners")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|x| x.get("type").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        types.sort();
        types.dedup();
        Ok(types)
    }

    /// Finds the listener-only click targets of `frame` and stores them where the DOM index
    /// probe (`dom_index.js`, JS-PROBES.md §1.7 rules 7b/7d) reads them: the world-global
    /// WeakSets `__mpListen` (elements the browser holds a click-like listener for) and
    /// `__mpFramework` (elements with a React/Vue click handler on a page with a React/Vue
    /// root) of the probe's isolated world. Both sets are replaced on every call, so a set never
    /// outlives the read that made it unless the call fails (the caller then tells the probe
    /// not to read them).
    ///
    /// `DOMDebugger.getEventListeners` on the document (depth -1, piercing shadow roots and
    /// same-process frames; the document is taken in the frame's main world, see
    /// `listener_root.js`) lists every node's listeners with its backendNodeId; a node counts when it has one of
    /// [`CLICK_TYPES`] and at most [`MAX_LISTENER_TYPES`] listener types (more is a delegation
    /// root, e.g. a React 17+ root container); the document, html and body are dropped by the
    /// store. At most [`MAX_LISTENER_CANDIDATES`] nodes are resolved (`DOM.resolveNode` into the
    /// probe world, concurrently) and the [`MAX_LISTENER_TARGETS`] nearest the viewport are
    /// stored with one `Runtime.callFunctionOn`. The framework
    /// scan runs in the main world and only for frames of the page session (an out-of-process
    /// frame has no main-world context here). The whole call is bounded by `within`; its remote
    /// objects are released afterwards. A document of more than 10,000 elements is not listed
    /// (an error: see `listener_root.js`).
    pub async fn listener_targets(
        &self,
        frame: &FrameRef,
        within: Duration,
    ) -> Result<ListenerTargets, CommandError> {
        tokio::time::timeout(within, self.find_listener_targets(frame))
            .await
            .unwrap_or_else(|_| Err(CommandError::unanswered("listener targets", within)))
    }

    /// Frees the remote handles [`Tab::listener_targets`] made in `frame` (the stored set
    /// holds the elements themselves, so this may run while the reader reads). Bounded; a
    /// failure leaves them to the next release or to the document's end.
    pub async fn release_listener_targets(&self, frame: &FrameRef) {
        let release = self.call_in(
            frame,
            "Runtime.releaseObjectGroup",
            json!({"objectGroup": LISTENER_GROUP}),
        );
        let _ = tokio::time::timeout(LISTENER_RELEASE, release).await;
    }

    async fn find_listener_targets(
        &self,
        frame: &FrameRef,
    ) -> Result<ListenerTargets, CommandError> {
        let ctx = self.probe_context(frame, false).await?;
        // The document in the frame's main world (see listener_root.js for why not ours).
        let mut root_params = json!({
            "expression": js::LISTENER_ROOT_JS,
            "returnByValue": false,
            "objectGroup": LISTENER_GROUP,
        });
        match &frame.session {
            FrameSession::Page => {
                root_params["contextId"] = self.main_world(frame).await.ok_or_else(navigating)?;
            }
            // The session's default context is its root frame's main world; a frame below it
            // lists another document, whose nodes the store drops (not in its document).
            FrameSession::Remote { .. } => {}
        }
        let root = self.call_in(frame, "Runtime.evaluate", root_params).await?;
        let document = root
            .pointer("/result/objectId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                CommandError::failed(
                    "listener targets: no document, or more than 10,000 elements (not listed)",
                )
            })?
            .to_string();
        // The listeners and the framework traces are looked up at once (independent calls).
        let listing = self.call_in(
            frame,
            "DOMDebugger.getEventListeners",
            json!({"objectId": document, "depth": -1, "pierce": true}),
        );
        let tracing = async {
            match frame.session {
                FrameSession::Page => self
                    .framework_targets(frame, MAX_LISTENER_TARGETS)
                    .await
                    .unwrap_or_default(),
                FrameSession::Remote { .. } => Vec::new(),
            }
        };
        let (listed, traced) = tokio::join!(listing, tracing);
        let listener_ids = click_targets(&listed?);
        let framework_ids: Vec<i64> = traced
            .into_iter()
            .filter(|id| !listener_ids.contains(id))
            .take(MAX_LISTENER_TARGETS)
            .collect();
        let resolve = |id: i64| {
            let ctx = ctx.clone();
            async move {
                self.call_in(
                    frame,
                    "DOM.resolveNode",
                    json!({"backendNodeId": id, "executionContextId": ctx, "objectGroup": LISTENER_GROUP}),
                )
                .await
                .ok()
                .and_then(|r| r.pointer("/object/objectId").and_then(Value::as_str).map(str::to_string))
            }
        };
        let resolved = futures::future::join_all(
            listener_ids
                .iter()
                .chain(framework_ids.iter())
                .map(|&id| resolve(id)),
        )
        .await;
        let (listened, traced) = resolved.split_at(listener_ids.len().min(resolved.len()));
        let listeners: Vec<String> = listened.iter().flatten().cloned().collect();
        let traces: Vec<String> = traced.iter().flatten().cloned().collect();
        let mut arguments = vec![
            json!({"value": listeners.len()}),
            json!({"value": MAX_LISTENER_TARGETS}),
        ];
        arguments.extend(
            listeners
                .iter()
                .chain(traces.iter())
                .map(|id| json!({"objectId": id})),
        );
        let stored = self
            .call_in(
                frame,
                "Runtime.callFunctionOn",
                json!({
                    "functionDeclaration": js::LISTENER_STORE_JS,
                    "executionContextId": ctx,
                    "arguments": arguments,
                    "returnByValue": true,
                }),
            )
            .await?;
        let value = remote_value("Runtime.callFunctionOn", stored)?;
        let count = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        Ok(ListenerTargets {
            listeners: count("listeners"),
            traces: count("traces"),
        })
    }

    /// The backendNodeIds of the elements of `frame` (a frame of the page session) that carry
    /// a React/Vue click handler, at most `max` (`framework_targets.js` in the main world, then
    /// `DOM.describeNode` on each element it answered).
    async fn framework_targets(
        &self,
        frame: &FrameRef,
        max: usize,
    ) -> Result<Vec<i64>, CommandError> {
        let Some(ctx) = self.main_world(frame).await else {
            return Ok(Vec::new());
        };
        let found = self
            .call_in(
                frame,
                "Runtime.callFunctionOn",
                json!({
                    "functionDeclaration": js::FRAMEWORK_TARGETS_JS,
                    "executionContextId": ctx,
                    "arguments": [{"value": max}],
                    "returnByValue": false,
                    "objectGroup": LISTENER_GROUP,
                }),
            )
            .await?;
        let Some(array) = found.pointer("/result/objectId").and_then(Value::as_str) else {
            return Ok(Vec::new());
        };
        if found.pointer("/result/description").and_then(Value::as_str) == Some("Array(0)") {
            return Ok(Vec::new());
        }
        let props = self
            .call_in(
                frame,
                "Runtime.getProperties",
                json!({"objectId": array, "ownProperties": true}),
            )
            .await?;
        let elements: Vec<String> = props
            .get("result")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|p| {
                        p.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| n.parse::<usize>().is_ok())
                    })
                    .filter_map(|p| p.pointer("/value/objectId").and_then(Value::as_str))
                    .map(str::to_string)
                    .take(max)
                    .collect()
            })
            .unwrap_or_default();
        let described = futures::future::join_all(
            elements
                .iter()
                .map(|id| self.call_in(frame, "DOM.describeNode", json!({"objectId": id}))),
        )
        .await;
        Ok(described
            .into_iter()
            .filter_map(|r| r.ok()?.pointer("/node/backendNodeId")?.as_i64())
            .collect())
    }

    /// Evaluates caller-supplied script text in `frame`'s main world (`execute_js`): promises
    /// awaited, the user gesture flag set. `timeout_ms` asks Chromium to terminate synchronous
    /// execution after that long. Primitives come back inline; objects stay remote (in the
    /// object group `moonpilot-js`) for [`Tab::script_result`]. Answers the raw CDP result.
    pub async fn evaluate_script(
        &self,
        frame: &FrameRef,
        expression: &str,
        timeout_ms: Option<u64>,
    ) -> Result<Value, CommandError> {
        let mut params = json!({
            "expression": expression,
            "returnByValue": false,
            "objectGroup": "moonpilot-js",
            "awaitPromise": true,
            "userGesture": true,
        });
        if let Some(ms) = timeout_ms {
            params["timeout"] = json!(ms);
        }
        match &frame.session {
            FrameSession::Page => {
                let ctx = if frame.is_main() {
                    self.page.execution_context().await
                } else {
                    self.page
                        .frame_execution_context(frame.frame_id.clone().into())
                        .await
                }
                .map_err(|e| from_cdp("Runtime.executionContext", e))?
                .ok_or_else(navigating)?;
                params["contextId"] = json!(ctx.inner());
            }
            // Frames nested inside an out-of-process iframe get an isolated world; the root
            // frame of the session evaluates in its default (main) world.
            FrameSession::Remote { root_frame_id, .. } if *root_frame_id != frame.frame_id => {
                params["contextId"] = self.probe_context(frame, false).await?;
            }
            FrameSession::Remote { .. } => {}
        }
        self.call_in(frame, "Runtime.evaluate", params).await
    }

    /// Runs `js/script_result.js` on the remote object `object_id` of `frame` (see
    /// [`Tab::evaluate_script`]): with `call`, the object is the caller's script as a function,
    /// called and awaited first. The result is serialised in the page and answered by value in
    /// the same call (`{value, notes, more, navigation}`), so a navigation the script starts
    /// cannot lose it. Answers the raw CDP result (`exceptionDetails` when the script threw).
    ///
    /// `Runtime.callFunctionOn` has no `timeout`: the caller bounds it and stops the script with
    /// [`Tab::terminate_execution`].
    pub async fn script_result(
        &self,
        frame: &FrameRef,
        object_id: &str,
        call: bool,
    ) -> Result<Value, CommandError> {
        self.call_in(
            frame,
            "Runtime.callFunctionOn",
            json!({
                "objectId": object_id,
                "functionDeclaration": js::SCRIPT_RESULT_JS,
                "arguments": [{"value": {"call": call, "maxNotes": SCRIPT_NOTES}}],
                "returnByValue": true,
                "awaitPromise": true,
                "userGesture": true,
            }),
        )
        .await
    }

    /// Releases the objects `execute_js` results left in `frame`'s page (object group
    /// `moonpilot-js`); best effort.
    pub async fn release_script_objects(&self, frame: &FrameRef) {
        let _ = self
            .call_in(
                frame,
                "Runtime.releaseObjectGroup",
                json!({"objectGroup": "moonpilot-js"}),
            )
            .await;
    }

    /// Stops whatever script runs in `frame`'s renderer (after an `execute_js` budget expired,
    /// or when a page stopped answering). Chromium handles `Runtime.terminateExecution` on the
    /// renderer's I/O thread, so it gets through while the main thread spins.
    pub async fn terminate_execution(&self, frame: &FrameRef) -> Result<(), CommandError> {
        self.call_in(frame, "Runtime.terminateExecution", json!({}))
            .await
            .map(drop)
    }

    /// Whether the page's main thread answers a trivial evaluation within `within` (a page
    /// whose script spins, or a renderer that hangs, does not).
    pub async fn answers(&self, within: Duration) -> bool {
        let probe = self.call(
            "Runtime.evaluate",
            json!({"expression": "0", "returnByValue": true}),
        );
        matches!(tokio::time::timeout(within, probe).await, Ok(Ok(_)))
    }

    /// The tab's URL as the browser process knows it (`Target.getTargetInfo`), which answers
    /// when the renderer does not.
    pub async fn target_url(&self) -> Result<String, CommandError> {
        let info = self
            .browser
            .call("Target.getTargetInfo", json!({"targetId": self.target_id}))
            .await?;
        Ok(info
            .pointer("/targetInfo/url")
            .and_then(Value::as_str)
            .unwrap_or("about:blank")
            .to_string())
    }

    /// The main frame without asking the browser: enough for probes, input and the main
    /// session, which address it by session and not by frame id (its `frame_id`, `url`, `name`
    /// and `origin` are empty).
    pub fn main_frame_local(&self) -> FrameRef {
        FrameRef {
            ordinal: 0,
            frame_id: String::new(),
            url: String::new(),
            name: String::new(),
            parent: None,
            depth: 0,
            origin: String::new(),
            out_of_process: false,
            session: FrameSession::Page,
        }
    }

    /// The main frame (ordinal 0) without walking the tree.
    pub async fn main_frame(&self) -> Result<FrameRef, CommandError> {
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let frame = tree.pointer("/frameTree/frame").ok_or_else(navigating)?;
        Ok(frame_ref(frame, 0, None, 0, FrameSession::Page, false))
    }

    /// Every frame, depth-first from the main frame. With `include_remote`, out-of-process
    /// iframes are attached and walked too (their children follow the in-process children).
    pub async fn frames(&self, include_remote: bool) -> Result<Vec<FrameRef>, CommandError> {
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let root = tree.get("frameTree").cloned().ok_or_else(navigating)?;
        let iframe_targets = if include_remote {
            let targets = self.browser.call("Target.getTargets", json!({})).await?;
            targets
                .get("targetInfos")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter(|t| t["type"] == "iframe")
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        // An explicit stack keeps the walk iterative (async recursion would need boxing).
        let mut stack: Vec<(Value, Option<usize>, usize, FrameSession, bool)> =
            vec![(root, None, 0, FrameSession::Page, false)];
        while let Some((node, parent, depth, session, oop)) = stack.pop() {
            let Some(frame) = node.get("frame") else {
                continue;
            };
            let ordinal = out.len();
            let fref = frame_ref(frame, ordinal, parent, depth, session.clone(), oop);
            let frame_id = fref.frame_id.clone();
            out.push(fref);
            let mut children: Vec<(Value, Option<usize>, usize, FrameSession, bool)> = node
                .get("childFrames")
                .and_then(Value::as_array)
                .map(|kids| {
                    kids.iter()
                        .map(|k| (k.clone(), Some(ordinal), depth + 1, session.clone(), oop))
                        .collect()
                })
                .unwrap_or_default();
            for target in iframe_targets
                .iter()
                .filter(|t| t["parentFrameId"] == frame_id.as_str())
            {
                let Some(target_id) = target["targetId"].as_str() else {
                    continue;
                };
                // A frame whose renderer hangs must not hold up the whole walk.
                let remote =
                    tokio::time::timeout(REMOTE_FRAME_TIMEOUT, self.remote_tree(target_id))
                        .await
                        .unwrap_or_else(|_| {
                            Err(CommandError::new(
                                ErrorCode::ActionTimeout,
                                "the frame did not answer",
                            ))
                        });
                match remote {
                    Ok((remote_session, remote_root)) => {
                        children.push((remote_root, Some(ordinal), depth + 1, remote_session, true))
                    }
                    Err(e) => tracing::debug!("skipping out-of-process frame {target_id}: {e}"),
                }
            }
            // Reverse so that the first child is popped first (depth-first, in order).
            stack.extend(children.into_iter().rev());
        }
        Ok(out)
    }

    async fn remote_tree(&self, target_id: &str) -> Result<(FrameSession, Value), CommandError> {
        let conn = self.browser.raw().await?;
        let cached = self
            .remote_sessions
            .lock()
            .ok()
            .and_then(|m| m.get(target_id).cloned());
        let mut session_id = match cached {
            Some(s) => s,
            None => conn.attach(target_id).await?,
        };
        let tree = match conn
            .call(Some(&session_id), "Page.getFrameTree", json!({}))
            .await
        {
            Ok(t) => t,
            Err(_) => {
                // The cached session died with a navigation of the frame: attach again once.
                session_id = conn.attach(target_id).await?;
                conn.call(Some(&session_id), "Page.getFrameTree", json!({}))
                    .await?
            }
        };
        if let Ok(mut m) = self.remote_sessions.lock() {
            m.insert(target_id.to_string(), session_id.clone());
        }
        let root = tree.get("frameTree").cloned().ok_or_else(navigating)?;
        let root_frame_id = root
            .pointer("/frame/id")
            .and_then(Value::as_str)
            .unwrap_or(target_id)
            .to_string();
        Ok((
            FrameSession::Remote {
                conn,
                session_id,
                root_frame_id,
            },
            root,
        ))
    }

    /// The origin of `frame`'s content box in the main frame's viewport (CSS pixels), summing
    /// the offsets of every ancestor iframe element.
    pub async fn frame_offset(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
    ) -> Result<(f64, f64), CommandError> {
        self.offset_up_to(frames, frame, false).await
    }

    /// The origin of `frame`'s content box in the viewport of the session its input events go
    /// to (see [`Tab::mouse_click_in`]): the main viewport for frames of the page session, the
    /// out-of-process iframe's own viewport for frames of its session. `(0, 0)` for the main
    /// frame and for the root of an out-of-process session, without a CDP call.
    pub async fn offset_in_session(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
    ) -> Result<(f64, f64), CommandError> {
        self.offset_up_to(frames, frame, true).await
    }

    /// Sums the content-box origins of `frame`'s iframe elements up to the main frame, or with
    /// `session_root` up to the root frame of `frame`'s session.
    async fn offset_up_to(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
        session_root: bool,
    ) -> Result<(f64, f64), CommandError> {
        #[derive(serde::Deserialize)]
        struct Origin {
            x: f64,
            y: f64,
        }
        let mut x = 0.0;
        let mut y = 0.0;
        let mut current = frame.clone();
        while let Some(parent_ordinal) = current.parent {
            if session_root
                && matches!(&current.session, FrameSession::Remote { root_frame_id, .. } if *root_frame_id == current.frame_id)
            {
                break;
            }
            let parent = frames
                .iter()
                .find(|f| f.ordinal == parent_ordinal)
                .ok_or_else(navigating)?;
            let owner = self
                .call_in(
                    parent,
                    "DOM.getFrameOwner",
                    json!({"frameId": current.frame_id}),
                )
                .await?;
            let backend = owner.get("backendNodeId").cloned().ok_or_else(navigating)?;
            // The iframe element is read from the isolated world, where the page's patches of
            // `getBoundingClientRect` and `getComputedStyle` are not seen.
            let mut resolve = json!({"backendNodeId": backend});
            if let Ok(ctx) = self.probe_context(parent, false).await {
                resolve["executionContextId"] = ctx;
            }
            let node = self.call_in(parent, "DOM.resolveNode", resolve).await?;
            let object_id = node
                .pointer("/object/objectId")
                .and_then(Value::as_str)
                .ok_or_else(navigating)?
                .to_string();
            let res = self
                .call_in(
                    parent,
                    "Runtime.callFunctionOn",
                    json!({"objectId": object_id, "functionDeclaration": js::FRAME_OFFSET_JS, "returnByValue": true}),
                )
                .await?;
            let origin: Origin = js::reply(remote_value("Runtime.callFunctionOn", res)?)?;
            x += origin.x;
            y += origin.y;
            current = parent.clone();
        }
        Ok((x, y))
    }

    /// A trusted left click at viewport point (`x`, `y`) of the main frame.
    pub async fn mouse_click(&self, x: f64, y: f64) -> Result<(), CommandError> {
        for ev in click_events(x, y) {
            self.call("Input.dispatchMouseEvent", ev).await?;
        }
        self.set_pointer(Pointer {
            x,
            y,
            ..self.pointer()
        });
        Ok(())
    }

    /// Where the mouse is and which buttons it holds (the mouse commands' view: a click of
    /// another command moves it too).
    pub fn pointer(&self) -> Pointer {
        match self.pointer.lock() {
            Ok(p) => *p,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set_pointer(&self, pointer: Pointer) {
        match self.pointer.lock() {
            Ok(mut p) => *p = pointer,
            Err(poisoned) => *poisoned.into_inner() = pointer,
        }
    }

    /// Moves the mouse to viewport point (`x`, `y`) of the main frame (`Input.dispatchMouseEvent`
    /// `mouseMoved`), carrying the buttons held since [`Tab::mouse_down`]: a move between down
    /// and up is a drag.
    pub async fn mouse_move(&self, x: f64, y: f64) -> Result<(), CommandError> {
        let p = self.pointer();
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y, "button": p.held(), "buttons": p.buttons}),
        )
        .await?;
        self.set_pointer(Pointer { x, y, ..p });
        Ok(())
    }

    /// Presses (`down`) or releases `button` where the mouse is; answers the pointer after.
    pub async fn mouse_button(
        &self,
        button: MouseButton,
        down: bool,
        click_count: u32,
    ) -> Result<Pointer, CommandError> {
        let p = self.pointer();
        let buttons = if down {
            p.buttons | button.bit()
        } else {
            p.buttons & !button.bit()
        };
        self.call(
            "Input.dispatchMouseEvent",
            json!({
                "type": if down { "mousePressed" } else { "mouseReleased" },
                "x": p.x, "y": p.y, "button": button.as_str(), "buttons": buttons,
                "clickCount": click_count.max(1),
            }),
        )
        .await?;
        let after = Pointer { buttons, ..p };
        self.set_pointer(after);
        Ok(after)
    }

    /// Turns the wheel by (`dx`, `dy`) CSS px where the mouse is (`mouseWheel`; positive `dy`
    /// scrolls down).
    pub async fn mouse_wheel(&self, dx: f64, dy: f64) -> Result<Pointer, CommandError> {
        let p = self.pointer();
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseWheel", "x": p.x, "y": p.y, "deltaX": dx, "deltaY": dy, "buttons": p.buttons}),
        )
        .await?;
        Ok(p)
    }

    /// `count` trusted clicks of `button` at viewport point (`x`, `y`) of the main frame: a
    /// move there, then press and release with `clickCount` 1..=count (a double click is two
    /// pairs, as a real mouse makes it).
    pub async fn mouse_click_with(
        &self,
        x: f64,
        y: f64,
        button: MouseButton,
        count: u32,
    ) -> Result<(), CommandError> {
        self.mouse_move(x, y).await?;
        for n in 1..=count.max(1) {
            self.mouse_button(button, true, n).await?;
            self.mouse_button(button, false, n).await?;
        }
        Ok(())
    }

    /// A trusted left click at point (`x`, `y`) of the viewport of `frame`'s session: the main
    /// viewport for the page session, the out-of-process iframe's own viewport for a remote one.
    ///
    /// Sent on the frame's own session, the events go straight to that frame's renderer. Sent on
    /// the page session, Chromium routes them into an out-of-process iframe by hit-testing the
    /// compositor's surfaces, which a background tab does not produce: such clicks are lost.
    /// In a background tab the `mouseMoved` answer also waits about 5 s (mouse moves wait for
    /// an animation frame), here as in [`Tab::mouse_click`]; press and release answer at once.
    pub async fn mouse_click_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
    ) -> Result<(), CommandError> {
        for ev in click_events(x, y) {
            self.call_in(frame, "Input.dispatchMouseEvent", ev).await?;
        }
        Ok(())
    }

    /// A trusted mouse move to point (`x`, `y`) of the viewport of `frame`'s session (hover),
    /// sent like [`Tab::mouse_click_in`].
    pub async fn mouse_move_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
    ) -> Result<(), CommandError> {
        self.call_in(
            frame,
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        )
        .await
        .map(drop)
    }

    /// A trusted Delete key press at the focused element (clears a selection).
    pub async fn press_delete(&self) -> Result<(), CommandError> {
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46}),
            )
            .await?;
        }
        Ok(())
    }

    /// Inserts `text` at the focused element as one input (works for any script, CJK included).
    pub async fn insert_text(&self, text: &str) -> Result<(), CommandError> {
        self.call("Input.insertText", json!({"text": text}))
            .await
            .map(drop)
    }

    /// Types `text` key by key: ASCII characters as key events, others through `insertText`.
    pub async fn type_keys(&self, text: &str) -> Result<(), CommandError> {
        for ch in text.chars() {
            match ch {
                '\n' | '\r' => {
                    for kind in ["keyDown", "keyUp"] {
                        let mut ev = json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13});
                        if kind == "keyDown" {
                            ev["text"] = json!("\r");
                        }
                        self.call("Input.dispatchKeyEvent", ev).await?;
                    }
                }
                c if c.is_ascii() && !c.is_ascii_control() => {
                    let s = c.to_string();
                    self.call(
                        "Input.dispatchKeyEvent",
                        json!({"type": "keyDown", "key": s, "text": s, "unmodifiedText": s}),
                    )
                    .await?;
                    self.call("Input.dispatchKeyEvent", json!({"type": "keyUp", "key": s}))
                        .await?;
                }
                c => self.insert_text(&c.to_string()).await?,
            }
        }
        Ok(())
    }

    /// The current URL (`location.href` of the main frame).
    pub async fn url(&self) -> Result<String, CommandError> {
        Ok(self
            .eval_expression(js::LOCATION_HREF_JS)
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// The current title (`''` when unreadable).
    pub async fn title(&self) -> Result<String, CommandError> {
        Ok(self
            .eval_expression(js::DOCUMENT_TITLE_JS)
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Navigates the main frame to `url` and waits for its `load` (bounded by
    /// [`NAVIGATION_TIMEOUT`]).
    ///
    /// `Page.navigate` answers once the navigation is ready to commit, or has failed
    /// (`errorText`), or stayed in the document (no `loaderId`); Chromium 156 answers a 204, a
    /// download and a cancelled navigation with `net::ERR_ABORTED`. It goes over the raw
    /// connection because chromiumoxide holds back the answer of a `Page.navigate` sent on its own
    /// session until its frame tracker sees a new document's `load`: same-document navigations
    /// and navigations that never commit then hang until its 30 s request timeout.
    pub async fn navigate(&self, url: &str) -> Result<NavOutcome, CommandError> {
        // One deadline for the answer and the load together.
        let deadline = tokio::time::Instant::now() + NAVIGATION_TIMEOUT;
        let mut responses = self
            .page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(|e| from_cdp("Network.responseReceived", e))?;
        let mut lifecycle = self
            .page
            .event_listener::<EventLifecycleEvent>()
            .await
            .map_err(|e| from_cdp("Page.lifecycleEvent", e))?;
        let mut failures = self
            .page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(|e| from_cdp("Network.loadingFailed", e))?;
        let mut within = self
            .page
            .event_listener::<EventNavigatedWithinDocument>()
            .await
            .map_err(|e| from_cdp("Page.navigatedWithinDocument", e))?;
        // Listeners are registered by messages on the page's command channel, and the navigation
        // goes over another connection: one round trip on that channel (answered by the browser
        // process, so an open dialog cannot hold it) puts them in place first.
        self.call("Page.getNavigationHistory", json!({})).await?;
        let conn = self.browser.raw().await?;
        let session = self
            .nav_session
            .get_or_try_init(|| conn.attach(&self.target_id))
            .await?;
        // A dialog that the page being left raises and the browser then refuses to let us
        // answer blocks that page's unload, and this navigation, for good: fail at once with
        // `dialogStuck` (the navigate command replaces the tab) instead of at the deadline.
        let mut stuck = self.events.stuck_dialogs();
        stuck.mark_unchanged();
        let stuck_dialog = async {
            // Another tab of the task may be the one that is stuck.
            while stuck.changed().await.is_ok() {
                if stuck.borrow_and_update().1 == self.target_id {
                    return Err::<(), _>(dialog_stuck(url));
                }
            }
            std::future::pending().await
        };
        tokio::pin!(stuck_dialog);
        let nav = tokio::time::timeout_at(
            deadline,
            async {
                tokio::select! {
                    res = self.browser.guard(conn.call(Some(session), "Page.navigate", json!({"url": url}))) => res,
                    Err(e) = &mut stuck_dialog => Err(e),
                }
            },
        )
        .await
        .map_err(|_| {
            CommandError::new(
                ErrorCode::ActionTimeout,
                format!(
                    "navigation to `{url}` did not commit within {} s (no response from the server)",
                    NAVIGATION_TIMEOUT.as_secs()
                ),
            )
            .sent()
        })??;
        let frame_id = nav["frameId"].as_str().unwrap_or(&self.target_id);
        let loader = nav.get("loaderId").and_then(Value::as_str);
        let is_download = nav["isDownload"] == true;
        let mut error_text = nav
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if is_download && error_text.is_none() {
            // Older Chromium answered downloads without an error; the document never changes.
            error_text = Some("net::ERR_ABORTED".to_string());
        }
        let Some(loader) = loader.filter(|_| error_text.is_none()) else {
            if error_text.is_none() {
                // Same document: the URL changed in place. Wait for the event that reports it
                // so that reads right after see the new URL; it is not worth a failure.
                let reported = async {
                    while let Some(ev) = within.next().await {
                        if ev.frame_id.as_ref() == frame_id {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(SAME_DOCUMENT_BOUND, reported).await;
            }
            if let (Some(loader), Some(_)) = (loader, &error_text) {
                // The answer comes over another connection than the events: wait until the
                // request's failure has come in on the page's session, after the document's
                // response (a 204's status) if there was one.
                let reported = async {
                    while let Some(ev) = failures.next().await {
                        if ev.request_id.as_ref() == loader {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(FAILURE_REPORT_BOUND, reported).await;
            }
            let same_document = error_text.is_none();
            let loaders: Vec<&str> = loader.into_iter().collect();
            return Ok(NavOutcome {
                status: document_status(&mut responses, &loaders).await,
                error_text,
                same_document,
                is_download,
            });
        };
        // Committing documents: ours, then any that replaced it (a script redirect while it
        // loaded). The `load` of the last one ends the wait.
        let mut documents = Vec::new();
        // A document request that fails before it commits leaves the old page in place and no
        // `load` ever comes: that failure ends the wait, unless the commit turns up within
        // RESPONSE_TRAIL (each listener gets its events separately, see `response_status`).
        let mut failure: Option<String> = None;
        let settle = tokio::time::sleep(NAVIGATION_TIMEOUT);
        tokio::pin!(settle);
        let wait = async {
            loop {
                tokio::select! {
                    Err(e) = &mut stuck_dialog => return Err(e),
                    ev = lifecycle.next() => {
                        let Some(ev) = ev else {
                            return Err(CommandError::new(
                                ErrorCode::PageNavigating,
                                "the tab went away while the page was loading",
                            ));
                        };
                        if lifecycle_step(&ev, frame_id, loader, &mut documents) {
                            return Ok(None);
                        }
                    }
                    Some(ev) = failures.next(), if failure.is_none() => {
                        if ev.request_id.as_ref() == loader && documents.is_empty() {
                            failure = Some(ev.error_text.clone());
                            settle
                                .as_mut()
                                .reset(tokio::time::Instant::now() + RESPONSE_TRAIL);
                        }
                    }
                    () = &mut settle, if failure.is_some() => {
                        if documents.is_empty() {
                            return Ok(failure.take());
                        }
                        // It committed after all (the body failed later): wait for its load.
                        failure = None;
                    }
                }
            }
        };
        let failed = tokio::time::timeout_at(deadline, wait)
            .await
            .map_err(|_| {
                CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "navigation to `{url}` did not finish loading within {} s",
                        NAVIGATION_TIMEOUT.as_secs()
                    ),
                )
                .sent()
            })??;
        let mut loaders = vec![loader];
        loaders.extend(documents.iter().map(String::as_str));
        Ok(NavOutcome {
            status: document_status(&mut responses, &loaders).await,
            error_text: failed,
            same_document: false,
            is_download,
        })
    }

    /// Runs a history or reload step (`method`) and waits until the page has loaded again;
    /// returns the HTTP status of the main document response seen meanwhile (0 when none, as
    /// for pages restored from the back-forward cache).
    ///
    /// `expect_url_change` waits for the URL to move away from its old value (history steps may
    /// be served from the back-forward cache without a `load` event); otherwise a `load` event is
    /// awaited (reload).
    pub async fn navigate_with(
        &self,
        method: &str,
        params: Value,
        expect_url_change: Option<&str>,
    ) -> Result<i64, CommandError> {
        let mut responses = self
            .page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(|e| from_cdp("Network.responseReceived", e))?;
        let mut loads = self
            .page
            .event_listener::<EventLoadEventFired>()
            .await
            .map_err(|e| from_cdp("Page.loadEventFired", e))?;
        self.call(method, params).await?;
        let wait = async {
            match expect_url_change {
                None => {
                    loads.next().await;
                }
                Some(old) => loop {
                    // Mid-navigation the context is gone; those reads fail and are retried.
                    if let Ok(status) = self.call_page_status().await {
                        if status["url"] != old && status["readyState"] == "complete" {
                            break;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                },
            }
        };
        tokio::time::timeout(NAVIGATION_TIMEOUT, wait)
            .await
            .map_err(|_| {
                CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "`{method}` did not finish loading within {} s",
                        NAVIGATION_TIMEOUT.as_secs()
                    ),
                )
                .sent()
            })?;
        let is_main = |ev: &EventResponseReceived| {
            ev.r#type.as_ref() == "Document"
                && ev.frame_id.as_ref().map(|f| f.as_ref()) == Some(self.target_id.as_str())
        };
        Ok(response_status(&mut responses, is_main).await)
    }

    /// `{url, readyState, title}` of the main frame.
    pub async fn call_page_status(&self) -> Result<Value, CommandError> {
        self.call_probe(&self.main_frame_local(), js::PAGE_STATUS_JS, Value::Null)
            .await
    }

    /// A PNG screenshot of the viewport, with the highlight overlay hidden while it is taken,
    /// within [`SCREENSHOT_BOUND`].
    pub async fn screenshot(self: &Arc<Self>) -> Result<Vec<u8>, CommandError> {
        self.shoot(ShotArea::Viewport, SCREENSHOT_BOUND)
            .await
            .map(|s| s.png)
    }

    /// A screenshot of `area` within `within`, the highlight overlay hidden while it is taken
    /// and restored afterwards, also when the caller stops waiting (the restore then runs on
    /// its own). A shot that takes longer fails with `captureTimeout` in its details.
    pub async fn shoot(
        self: &Arc<Self>,
        area: ShotArea,
        within: Duration,
    ) -> Result<Shot, CommandError> {
        let deadline = tokio::time::Instant::now() + within;
        let timed_out = || {
            CommandError::failed(format!(
                "the screenshot took longer than its budget of {} ms",
                within.as_millis()
            ))
            .with_details(json!({"captureTimeout": true}))
        };
        let work = async {
            let (params, page_height) = match area {
                ShotArea::Viewport => (json!({"format": "png", "optimizeForSpeed": true}), None),
                ShotArea::FullPage => {
                    let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
                    let size = |k: &str| metrics["cssContentSize"][k].as_f64().unwrap_or(0.0);
                    let (width, height) = (size("width").max(1.0), size("height").max(1.0));
                    let shown = height.min(MAX_FULL_PAGE_HEIGHT);
                    let params = json!({"format": "png", "captureBeyondViewport": true,
                        "clip": {"x": 0, "y": 0, "width": width, "height": shown, "scale": 1}});
                    (params, Some(height))
                }
                ShotArea::Box(rect) => {
                    // `Page.captureScreenshot` clips in document coordinates: add the visual
                    // viewport's scroll offset.
                    let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
                    let scroll = |k: &str| metrics["cssVisualViewport"][k].as_f64().unwrap_or(0.0);
                    let params = json!({"format": "png", "clip": {
                        "x": rect[0] + scroll("pageX"), "y": rect[1] + scroll("pageY"),
                        "width": rect[2], "height": rect[3], "scale": 1,
                    }});
                    (params, None)
                }
            };
            let png = self.capture_png(params, deadline).await?;
            Ok(Shot {
                png,
                page_height,
                clamped: page_height.is_some_and(|h| h > MAX_FULL_PAGE_HEIGHT),
            })
        };
        tokio::time::timeout_at(deadline, work)
            .await
            .unwrap_or_else(|_| Err(timed_out()))
    }

    /// The page as a PDF (`Page.printToPDF`, backgrounds printed).
    pub async fn print_pdf(&self) -> Result<Vec<u8>, CommandError> {
        let res = self
            .call("Page.printToPDF", json!({"printBackground": true}))
            .await?;
        res["data"]
            .as_str()
            .and_then(decode_base64)
            .ok_or_else(|| CommandError::failed("`Page.printToPDF` returned no data"))
    }

    /// `Page.captureScreenshot` with `params` by `deadline`, the highlight overlay hidden while
    /// it is taken (restored by a guard, also when this future is dropped).
    async fn capture_png(
        self: &Arc<Self>,
        params: Value,
        deadline: tokio::time::Instant,
    ) -> Result<Vec<u8>, CommandError> {
        let main = self.main_frame().await?;
        // Armed before the overlay is hidden: dropped while the hide is in flight, it shows it.
        let mut guard = OverlayGuard {
            tab: Some((self.clone(), main.clone())),
        };
        let hidden = self
            .call_probe::<Overlay>(&main, js::OVERLAY_TOGGLE_JS, json!({"show": false}))
            .await
            .is_ok_and(|o| o.existed);
        if !hidden {
            guard.tab = None;
        }
        // A page that is being replaced produces no frame, and Chromium then holds the
        // capture until chromiumoxide's request timeout: bound it by the caller's deadline.
        let capture = self.call("Page.captureScreenshot", params);
        let shot = match tokio::time::timeout_at(deadline, capture).await {
            Ok(shot) => shot,
            Err(_) => Err(CommandError::failed(
                "no frame to capture before the screenshot's budget ran out (the page may be busy or being replaced)",
            )
            .with_details(json!({"captureTimeout": true}))),
        };
        if let Some((tab, main)) = guard.tab.clone() {
            // Disarmed only once shown: a caller that stops waiting meanwhile leaves the
            // guard to show it.
            let _ = tab
                .call_probe::<Overlay>(&main, js::OVERLAY_TOGGLE_JS, json!({"show": true}))
                .await;
            guard.tab = None;
        }
        let data = shot?
            .get("data")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| CommandError::failed("`Page.captureScreenshot` returned no data"))?;
        decode_base64(&data).ok_or_else(|| CommandError::failed("screenshot data is not base64"))
    }

    /// Closes the tab.
    pub async fn close(&self) -> Result<(), CommandError> {
        self.browser
            .call("Target.closeTarget", json!({"targetId": self.target_id}))
            .await
            .map(drop)
    }

    /// A PNG of the box `[x, y, width, height]` (CSS pixels of the main viewport), the
    /// highlight overlay hidden, within [`SCREENSHOT_BOUND`].
    pub async fn screenshot_box(self: &Arc<Self>, rect: [f64; 4]) -> Result<Vec<u8>, CommandError> {
        self.shoot(ShotArea::Box(rect), SCREENSHOT_BOUND)
            .await
            .map(|s| s.png)
    }

    /// The URL and title the browser shows for the tab (`Target.getTargetInfo`: answered by the
    /// browser process, so a busy page does not hold it). An error means the target is gone.
    pub async fn target_info(&self) -> Result<(String, String), CommandError> {
        let info = self
            .browser
            .call("Target.getTargetInfo", json!({"targetId": self.target_id}))
            .await?;
        let field = |k: &str| {
            info.pointer(&format!("/targetInfo/{k}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Ok((field("url"), field("title")))
    }

    /// Resolves once the tab's target is gone (`Target.closeTarget` answers before it is),
    /// polling `Target.getTargets` every 50 ms for at most `within`; answers whether it went.
    pub async fn wait_gone(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let listed = match self.browser.call("Target.getTargets", json!({})).await {
                Ok(list) => list["targetInfos"]
                    .as_array()
                    .is_some_and(|ts| ts.iter().any(|t| t["targetId"] == self.target_id.as_str())),
                Err(_) => return false,
            };
            if !listed {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Brings the tab to the front (`Page.bringToFront`).
    pub async fn bring_to_front(&self) -> Result<(), CommandError> {
        self.call("Page.bringToFront", json!({})).await.map(drop)
    }

    /// The tab's history: the current entry's position and every entry's `(id, url)`
    /// (`Page.getNavigationHistory`).
    pub async fn history(&self) -> Result<(i64, Vec<(Value, String)>), CommandError> {
        let history = self.call("Page.getNavigationHistory", json!({})).await?;
        let current = history["currentIndex"].as_i64().unwrap_or(0);
        let entries = history["entries"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|e| {
                        let url = e["url"].as_str().unwrap_or_default().to_string();
                        (e["id"].clone(), url)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok((current, entries))
    }

    /// Steps to history entry `entry_id` (from `old_url`) and answers the document's status.
    pub async fn go_to_history_entry(
        &self,
        entry_id: Value,
        old_url: &str,
    ) -> Result<i64, CommandError> {
        self.navigate_with(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry_id }),
            Some(old_url),
        )
        .await
    }

    /// Reloads the main frame and answers the document's status.
    pub async fn reload(&self) -> Result<i64, CommandError> {
        self.navigate_with("Page.reload", json!({}), None).await
    }
}

/// The reply of `overlay_toggle.js`: whether the highlight overlay was there.
#[derive(serde::Deserialize)]
struct Overlay {
    existed: bool,
}

/// Shows the highlight overlay again when dropped while it is still hidden (a screenshot whose
/// caller stopped waiting): the restore runs as its own task.
struct OverlayGuard {
    tab: Option<(Arc<Tab>, FrameRef)>,
}

impl Drop for OverlayGuard {
    fn drop(&mut self) {
        let Some((tab, main)) = self.tab.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = tab
                    .call_probe::<Overlay>(&main, js::OVERLAY_TOGGLE_JS, json!({"show": true}))
                    .await;
            });
        }
    }
}

/// What a screenshot covers.
#[derive(Clone, Copy, Debug)]
pub enum ShotArea {
    /// The viewport.
    Viewport,
    /// The whole scrollable page, at most [`MAX_FULL_PAGE_HEIGHT`] CSS px tall.
    FullPage,
    /// A box `[x, y, width, height]` in CSS pixels of the main viewport.
    Box([f64; 4]),
}

/// A screenshot: the PNG and, for a full page, the page's CSS height and whether the shot
/// was cut at [`MAX_FULL_PAGE_HEIGHT`].
pub struct Shot {
    /// The image.
    pub png: Vec<u8>,
    /// A full page's CSS height (taller than the shot when `clamped`).
    pub page_height: Option<f64>,
    /// The full page was cut at [`MAX_FULL_PAGE_HEIGHT`].
    pub clamped: bool,
}

/// The tallest full-page screenshot, in CSS px (taller pages are cut there).
pub const MAX_FULL_PAGE_HEIGHT: f64 = 16384.0;

/// The failure of a navigation to `url` that a dialog of the page being left blocks for good.
fn dialog_stuck(url: &str) -> CommandError {
    CommandError::new(
        ErrorCode::ActionFailed,
        format!(
            "navigation to `{url}` is blocked: the page being left raised a dialog the browser \
             no longer lets anyone answer"
        ),
    )
    .with_details(json!({"dialogStuck": true}))
    .sent()
}

fn navigating() -> CommandError {
    CommandError::new(
        ErrorCode::PageNavigating,
        "the page is navigating (no document to run in yet)",
    )
}

/// Follows the main frame's lifecycle during a navigation to `loader`: records documents that
/// commit (`init`: ours, then any that replace it) in `documents`, and answers true at the `load`
/// of the newest one.
fn lifecycle_step(
    ev: &EventLifecycleEvent,
    frame_id: &str,
    loader: &str,
    documents: &mut Vec<String>,
) -> bool {
    if ev.frame_id.as_ref() != frame_id {
        return false;
    }
    let ev_loader = ev.loader_id.as_ref();
    match ev.name.as_str() {
        "init" if ev_loader == loader || !documents.is_empty() => {
            documents.push(ev_loader.to_string());
            false
        }
        "load" => match documents.last() {
            Some(last) => last == ev_loader,
            // A `load` before the `init` was seen can only be ours if it names our loader.
            None => ev_loader == loader,
        },
        _ => false,
    }
}

/// The HTTP status of the last main-document response of one of `loaders`, 0 when there was
/// none (`about:blank`, a refused connection, a same-document navigation).
async fn document_status(
    responses: &mut chromiumoxide::listeners::EventStream<EventResponseReceived>,
    loaders: &[&str],
) -> i64 {
    if loaders.is_empty() {
        return 0;
    }
    let is_ours = |ev: &EventResponseReceived| {
        ev.r#type.as_ref() == "Document" && loaders.contains(&ev.loader_id.as_ref())
    };
    response_status(responses, is_ours).await
}

/// The HTTP status of the last response in `responses` that `is_ours`, 0 when there is none.
///
/// chromiumoxide hands each listener its events separately, from the thread that runs its
/// handler: the response may trail the event that ended a navigation's wait by a moment, so a
/// missing one is awaited for [`RESPONSE_TRAIL`] at most.
async fn response_status(
    responses: &mut chromiumoxide::listeners::EventStream<EventResponseReceived>,
    is_ours: impl Fn(&EventResponseReceived) -> bool,
) -> i64 {
    let mut status = None;
    while let Some(Some(ev)) = responses.next().now_or_never() {
        if is_ours(&ev) {
            status = Some(ev.response.status);
        }
    }
    if status.is_none() {
        let trailing = async {
            while let Some(ev) = responses.next().await {
                if is_ours(&ev) {
                    return Some(ev.response.status);
                }
            }
            None
        };
        status = tokio::time::timeout(RESPONSE_TRAIL, trailing)
            .await
            .ok()
            .flatten();
    }
    status.unwrap_or(0)
}

fn frame_ref(
    frame: &Value,
    ordinal: usize,
    parent: Option<usize>,
    depth: usize,
    session: FrameSession,
    out_of_process: bool,
) -> FrameRef {
    let s = |k: &str| {
        frame
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut url = s("url");
    if let Some(fragment) = frame.get("urlFragment").and_then(Value::as_str) {
        url.push_str(fragment);
    }
    FrameRef {
        ordinal,
        frame_id: s("id"),
        url,
        name: s("name"),
        parent,
        depth,
        origin: s("securityOrigin"),
        out_of_process,
        session,
    }
}

/// The JSON value of a `Runtime.evaluate`/`callFunctionOn` answer; a thrown exception becomes
/// an `ACTION_FAILED` error naming the exception.
pub fn remote_value(what: &str, res: Value) -> Result<Value, CommandError> {
    if let Some(ex) = res.get("exceptionDetails") {
        return Err(CommandError::failed(format!(
            "`{what}`: page script threw: {}",
            exception_line(ex)
        ))
        .with_details(json!({"error": exception_json(ex)})));
    }
    Ok(res.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

/// The first line of an exception's description.
pub fn exception_line(ex: &Value) -> String {
    ex.pointer("/exception/description")
        .and_then(Value::as_str)
        .or_else(|| ex.get("text").and_then(Value::as_str))
        .unwrap_or("unknown error")
        .lines()
        .next()
        .unwrap_or("unknown error")
        .to_string()
}

/// `{name, message, stack}` of an exception (stack: page frames only, at most 12).
pub fn exception_json(ex: &Value) -> Value {
    let description = ex
        .pointer("/exception/description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let class = ex
        .pointer("/exception/className")
        .and_then(Value::as_str)
        .unwrap_or("Error");
    let first = description.lines().next().unwrap_or_default();
    let message = first
        .strip_prefix(&format!("{class}: "))
        .unwrap_or(first)
        .to_string();
    let stack: Vec<&str> = description
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| l.starts_with("at "))
        .take(12)
        .collect();
    json!({"name": class, "message": message, "stack": stack})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn click_targets_keep_click_like_nodes_and_drop_delegation_roots() {
        let l = |id: i64, kind: &str| json!({"type": kind, "backendNodeId": id});
        let mut listeners = vec![
            l(7, "pointerdown"),
            l(9, "keydown"),
            l(8, "click"),
            l(8, "click"),
            l(8, "mouseover"),
        ];
        // Node 3 listens to every click-like type: a delegation root (React's root container).
        for kind in CLICK_TYPES.iter().chain(&["keydown", "input"]) {
            listeners.push(l(3, kind));
        }
        // Node 5 is a drawing pad: seven types, but only three of them click-like.
        for kind in [
            "mousedown",
            "mousemove",
            "mouseup",
            "mouseout",
            "touchstart",
            "touchmove",
            "wheel",
        ] {
            listeners.push(l(5, kind));
        }
        listeners.push(json!({"type": "click"}));
        let ids = click_targets(&json!({ "listeners": listeners }));
        assert_eq!(
            ids,
            [7, 8, 5],
            "listing order; keydown-only 9 and the root 3 dropped, the pad kept"
        );
        let many: Vec<Value> = (0..1200).map(|i| l(i, "click")).collect();
        let capped = click_targets(&json!({ "listeners": many }));
        assert_eq!(capped.len(), MAX_LISTENER_CANDIDATES);
        assert_eq!(capped[999], 999);
        assert!(click_targets(&json!({})).is_empty());
    }

    #[test]
    fn exceptions_are_summarised() {
        let ex = json!({"text": "Uncaught", "exception": {"className": "TypeError",
            "description": "TypeError: x is not a function\n    at <anonymous>:1:1\n    at foo (a.js:2:3)"}});
        assert_eq!(exception_line(&ex), "TypeError: x is not a function");
        let j = exception_json(&ex);
        assert_eq!(j["name"], "TypeError");
        assert_eq!(j["message"], "x is not a function");
        assert_eq!(j["stack"].as_array().unwrap().len(), 2);
    }

    fn lifecycle(frame: &str, loader: &str, name: &str) -> EventLifecycleEvent {
        serde_json::from_value(json!({
            "frameId": frame, "loaderId": loader, "name": name, "timestamp": 1.0
        }))
        .unwrap()
    }

    #[test]
    fn navigation_waits_for_the_load_of_its_own_document() {
        let mut docs = Vec::new();
        // The old document's late events and other frames' events do not count.
        assert!(!lifecycle_step(
            &lifecycle("F", "OLD", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("C", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "DOMContentLoaded"),
            "F",
            "L",
            &mut docs
        ));
        assert!(lifecycle_step(
            &lifecycle("F", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert_eq!(docs, ["L"]);
    }

    #[test]
    fn navigation_follows_a_document_that_replaced_its_own() {
        let mut docs = Vec::new();
        // A document before ours committed is not ours, nor one that replaces it.
        assert!(!lifecycle_step(
            &lifecycle("F", "X", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(docs.is_empty());
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "init"),
            "F",
            "L",
            &mut docs
        ));
        // A script redirect while ours loaded: its load ends the wait, ours would not.
        assert!(!lifecycle_step(
            &lifecycle("F", "M", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(lifecycle_step(
            &lifecycle("F", "M", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert_eq!(docs, ["L", "M"]);
    }

    #[test]
    fn unknown_origins_count_as_same() {
        assert!(same_origin("http://a", "://"));
        assert!(same_origin("http://a", "http://a"));
        assert!(!same_origin("http://a", "http://b"));
    }
}
