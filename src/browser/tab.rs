//! `Tab`: one page target of the shared browser, with its frames.
//!
//! All CDP traffic of a tab goes through [`Tab::call`] (the page session) or, for out-of-process
//! iframes, through the browser's raw connection. Every call races the browser's death, so a
//! dead browser turns into `BROWSER_GONE` at once instead of a hang.
//!
//! This file holds the tab itself: its attachment (dialogs, console, requests, crashes, routes),
//! its sessions and the bounded CDP call, and the browser-side facts (target URL and title,
//! closing, front). Each other concern of a tab is a child file named for it, adding `impl Tab`
//! methods: `frames.rs` (the frame tree and frame offsets), `probes.rs` (our probes in their
//! worlds), `listeners.rs` (the listener step of a read), `script.rs` (`execute_js`),
//! `navigation.rs` (navigation, history, URL and title), `input.rs` (the mouse and typing at
//! points), `actions.rs` (the index interactions' input, element handles, file inputs,
//! downloads), `screenshot.rs` (screenshots and PDF), and `runtime.rs` (reading the Runtime
//! domain's answers).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::page::EventFrameNavigated;
use chromiumoxide::Page;
use futures::StreamExt;
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
mod frames;
mod input;
mod listeners;
mod navigation;
mod probes;
mod recording;
mod runtime;
mod screenshot;
mod script;

pub use actions::{Button, ElementObject, KeyStroke};
pub use frames::{same_origin, FrameRef, FrameSession, REMOTE_FRAME_TIMEOUT};
pub use input::{MouseButton, Pointer};
pub use listeners::{
    ListenerTargets, CLICK_TYPES, MAX_LISTENER_CANDIDATES, MAX_LISTENER_TARGETS, MAX_LISTENER_TYPES,
};
pub use navigation::{Fetched, HistoryEntry};
pub use navigation::{NavOutcome, NAVIGATION_TIMEOUT};
pub use recording::DialogSeen;
pub use runtime::{exception_json, exception_line, remote_value};
pub use screenshot::{Layout, Shot, ShotArea, MAX_FULL_PAGE_HEIGHT};
pub use script::ScriptGroup;

/// A page target owned by one task.
pub struct Tab {
    browser: Arc<Browser>,
    page: Page,
    target_id: String,
    /// The browser context it lives in, when its task has one of its own (`None`: the
    /// profile's default context, shared by every such task).
    context: Option<String>,
    remote_sessions: Mutex<HashMap<String, String>>,
    /// Isolated-world contexts made in out-of-process frames, by (session, frame id).
    remote_worlds: Mutex<HashMap<(String, String), Value>>,
    /// Probe functions kept in isolated worlds, by (session, execution context id): see
    /// `probes.rs` (`Tab::call_in_probe_world`).
    installed: Mutex<HashMap<(String, i64), std::collections::HashSet<usize>>>,
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
    /// One screenshot at a time: the overlay's hide, the capture and the show of one shot are
    /// never interleaved with another's (a second shot's show could reveal the overlay in the
    /// first one's pixels). It holds the last viewport shot and what the page drew it from,
    /// which a state read may reuse ([`Tab::state_screenshot`]).
    shots: Arc<tokio::sync::Mutex<Option<screenshot::LastShot>>>,
}

fn navigating() -> CommandError {
    CommandError::new(
        ErrorCode::PageNavigating,
        "the page is navigating (no document to run in yet)",
    )
}

impl Tab {
    pub(super) async fn attach(
        browser: Arc<Browser>,
        page: Page,
        events: TabEvents,
        context: Option<String>,
    ) -> Result<Tab, CommandError> {
        events
            .watch_dialogs(&browser, &page)
            .await
            .map_err(|e| from_cdp("Page.javascriptDialogOpening", e))?;
        // Before any page script of the next document: `navigator.webdriver` reads false, and
        // the click watch (`js/click_watch.js`) knows the page's own timers from its start
        // (`runImmediately` covers the document already there).
        let source = format!("{}\n{}", js::STEALTH_JS, js::click_watch_install());
        if let Err(e) = page
            .execute(Raw::new(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": source, "runImmediately": true}),
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
            context,
            remote_sessions: Mutex::new(HashMap::new()),
            remote_worlds: Mutex::new(HashMap::new()),
            installed: Mutex::new(HashMap::new()),
            crashed,
            nav_session: tokio::sync::OnceCell::new(),
            events,
            pointer: Mutex::new(Pointer::default()),
            inflight,
            shots: Arc::default(),
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

    /// The tab's own session on the raw connection (attached on first use): navigations,
    /// route rules and the input of a click go through it.
    pub(super) async fn raw_session(&self) -> Result<(Arc<RawConnection>, String), CommandError> {
        let conn = self.browser.raw().await?;
        let session = self
            .nav_session
            .get_or_try_init(|| conn.attach(&self.target_id))
            .await?
            .clone();
        Ok((conn, session))
    }

    /// Applies the task's current routes and credentials to this tab (see `routes`): its own
    /// session on the raw connection (the one navigations go through) is adopted.
    pub async fn apply_routes(&self) -> Result<(), CommandError> {
        let sync = async {
            let (conn, session) = self.raw_session().await?;
            self.events
                .routes
                .adopt(&self.browser, &conn, &session, false)
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

    /// Its browser context's id, when its task has a context of its own.
    pub fn context(&self) -> Option<&str> {
        self.context.as_deref()
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

    /// Sends `events` (CDP commands of one domain whose order matters, such as the move, press
    /// and release of a click) to the session that owns `frame` all at once, and waits for every
    /// answer. The browser queues them in the order sent; sending the next only once the last was
    /// answered costs an animation frame after a page just drew one (measured: 19 ms against
    /// 2 ms, `cargo bench --bench click`). The tab's own page goes through its session on the
    /// raw connection, which writes each command the moment it is made.
    pub async fn call_all_in(
        &self,
        frame: &FrameRef,
        method: &str,
        events: Vec<Value>,
    ) -> Result<(), CommandError> {
        let sent = async {
            let (conn, session) = match &frame.session {
                FrameSession::Page => self.raw_session().await?,
                FrameSession::Remote {
                    conn, session_id, ..
                } => (conn.clone(), session_id.clone()),
            };
            let calls = events
                .into_iter()
                .map(|ev| conn.call(Some(&session), method, ev));
            futures::future::try_join_all(calls)
                .await
                .map(|_| Value::Null)
        };
        self.answered(method, sent).await.map(drop)
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

    /// Closes the tab.
    pub async fn close(&self) -> Result<(), CommandError> {
        self.browser
            .call("Target.closeTarget", json!({"targetId": self.target_id}))
            .await
            .map(drop)
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
}
