//! Raw CDP: a command type for any method name, and a second connection for out-of-process
//! iframe sessions.
//!
//! chromiumoxide auto-attaches to cross-site iframe targets but offers no way to send commands
//! into their sessions (CDP-NOTES.md, "Frames"). [`RawConnection`] is a small CDP client of the
//! same browser: it attaches to such targets with `flatten:true` and sends commands with their
//! `sessionId`. To a browser we launched it has a websocket of its own; to one we attached to it
//! shares the engine's one socket through [`super::mux::Mux`], in a browser session of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_tungstenite::tungstenite::Message;
use chromiumoxide::types::{Command, Method, MethodId};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};

use super::cdp_error::from_protocol_error;
use crate::error::CommandError;

/// A CDP command given by name, with JSON params and a JSON response.
#[derive(Debug, Clone)]
pub struct Raw {
    method: String,
    params: Value,
}

impl Raw {
    /// `method` with `params` (an object).
    pub fn new(method: &str, params: Value) -> Raw {
        Raw {
            method: method.to_string(),
            params,
        }
    }
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.params.serialize(s)
    }
}

impl Method for Raw {
    fn identifier(&self) -> MethodId {
        self.method.clone().into()
    }
}

impl Command for Raw {
    type Response = Value;
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, CommandError>>>>>;

/// Per session and kind, where its events go that must all arrive (see [`Lossless`]).
type Sinks = Arc<Mutex<HashMap<(String, Lossless), mpsc::UnboundedSender<SessionEvent>>>>;

/// The events of a session that a consumer can ask to get without loss (the broadcast of
/// [`RawConnection::session_events`] drops events for a lagging receiver).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lossless {
    /// `Fetch.*`: a paused request nobody answers hangs the page.
    Fetch,
    /// `Target.attachedToTarget`: an auto-attached target waiting for the debugger stays
    /// paused until it is told to run.
    Attach,
}

/// A CDP client on its own websocket, or on one shared through [`super::mux::Mux`]. When
/// `on_close` is given, the connection's end is published there too (the browser's liveness).
pub struct RawConnection {
    next_id: AtomicU64,
    pending: Pending,
    outgoing: mpsc::UnboundedSender<String>,
    alive: watch::Receiver<bool>,
    /// The event channels, dropped when the connection ends: their receivers then close, and
    /// the loops reading them (which hold the browser) end with it.
    channels: Arc<Mutex<Option<Channels>>>,
    /// Sessions whose events of a kind must all arrive.
    sinks: Sinks,
    /// The browser session commands without a session go to (on a shared socket).
    browser_session: Option<String>,
    /// New pages are auto-attached paused: their popups are announced paused, not created.
    pausing: Arc<AtomicBool>,
    /// Page targets this engine has as tabs (or is adopting): a held popup of another page
    /// (another engine's, on a shared browser) is not this engine's to hold.
    pages: Mutex<std::collections::HashSet<String>>,
}

/// The senders of a connection's event broadcasts.
#[derive(Clone)]
struct Channels {
    /// Target ids whose renderer crashed (`Target.targetCrashed`, once target discovery is on).
    crashes: tokio::sync::broadcast::Sender<String>,
    /// Downloads beginning and progressing (see [`RawConnection::downloads`]).
    downloads: tokio::sync::broadcast::Sender<DownloadEvent>,
    /// Page targets opened by another page (popups) and targets that went away.
    targets: tokio::sync::broadcast::Sender<TargetEvent>,
    /// Events of attached sessions that recorders follow (see [`SessionEvent`]).
    session_events: tokio::sync::broadcast::Sender<SessionEvent>,
}

/// An event of a session attached on this connection: `Network.*` and
/// `Target.attachedToTarget` / `Target.detachedFromTarget` (a lagging receiver misses some).
#[derive(Debug, Clone)]
pub struct SessionEvent {
    /// The session it came from.
    pub session: String,
    /// The CDP event name.
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// A download's `Browser.downloadWillBegin` (`begins`: its `frameId`, `guid`, `url`,
/// `suggestedFilename`) or `Browser.downloadProgress` (`guid`, `receivedBytes`, `totalBytes`,
/// `state`: inProgress, completed or canceled).
#[derive(Debug, Clone)]
pub struct DownloadEvent {
    /// Whether it is the beginning.
    pub begins: bool,
    /// The event's params.
    pub params: Value,
}

/// A page target opened by a page, or a target that went away (once target discovery is on).
#[derive(Debug, Clone)]
pub enum TargetEvent {
    /// `target` is a page that `opener` opened (`window.open`, a `target=_blank` link).
    Opened {
        /// The new page's target id.
        target: String,
        /// The target id of the page that opened it.
        opener: String,
    },
    /// A page target that browser-level auto-attach ([`RawConnection::pause_new_pages`])
    /// holds before its first request: it stays paused until `Runtime.runIfWaitingForDebugger`
    /// goes to `session` (the task that owns its opener sends it once the task's settings are
    /// on; the browser's resumer after a bound, and at once for a page without an opener).
    Paused {
        /// The new page's target id.
        target: String,
        /// The target id of the page that opened it, if a page did.
        opener: Option<String>,
        /// This connection's session on it.
        session: String,
    },
    /// `target` is gone (closed by its page or by anyone else).
    Gone {
        /// Its target id.
        target: String,
    },
}

impl RawConnection {
    /// Connects to the browser websocket at `ws_url` (a socket of its own).
    pub async fn connect(
        ws_url: &str,
        runtime: &tokio::runtime::Handle,
        on_close: Option<Arc<watch::Sender<bool>>>,
    ) -> Result<RawConnection, CommandError> {
        let failed = |e: &dyn std::fmt::Display| {
            CommandError::failed(format!("opening a CDP connection failed: {e}"))
        };
        let url = url::Url::parse(ws_url).map_err(|e| failed(&e))?;
        let host = super::endpoint::host_of(&url).map_err(|e| failed(&e))?;
        let port = url.port_or_known_default().unwrap_or(80);
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| failed(&e))?;
        // Without it, the move, press and release of a click (sent at once) wait behind the
        // first one's acknowledgement (Nagle), which the browser sends with its answer: after an
        // animation frame, a mouse move is answered only at the next one, so every click right
        // after a stability check cost a frame (18 ms against 3 ms, `cargo bench --bench click`).
        let _ = tcp.set_nodelay(true);
        let (socket, _) = async_tungstenite::tokio::client_async_tls(ws_url, tcp)
            .await
            .map_err(|e| failed(&e))?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<String>();
        let (incoming_tx, incoming) = mpsc::unbounded_channel::<String>();
        runtime.spawn(async move {
            while let Some(text) = outgoing_rx.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
        });
        runtime.spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                if let Message::Text(text) = msg {
                    if incoming_tx.send(text.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(RawConnection::over(
            outgoing, incoming, runtime, on_close, None, 1,
        ))
    }

    /// A client over channels to a connection another owns ([`super::mux::Mux`]): it sends
    /// `outgoing`, reads `incoming` until it closes, numbers its commands from `first_id`, and
    /// speaks to the browser through `browser_session` when one is given (commands without a
    /// session go to it, and its events count as the browser's).
    pub fn over(
        outgoing: mpsc::UnboundedSender<String>,
        mut incoming: mpsc::UnboundedReceiver<String>,
        runtime: &tokio::runtime::Handle,
        on_close: Option<Arc<watch::Sender<bool>>>,
        browser_session: Option<String>,
        first_id: u64,
    ) -> RawConnection {
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (alive_tx, alive) = watch::channel(true);
        let reader_pending = pending.clone();
        let out = Channels {
            crashes: tokio::sync::broadcast::channel(16).0,
            downloads: tokio::sync::broadcast::channel(256).0,
            targets: tokio::sync::broadcast::channel(256).0,
            session_events: tokio::sync::broadcast::channel(1024).0,
        };
        let Channels {
            crashes: crash_tx,
            downloads: download_tx,
            targets: target_tx,
            session_events: session_tx,
        } = out.clone();
        let channels = Arc::new(Mutex::new(Some(out)));
        let reader_channels = channels.clone();
        let sinks: Sinks = Arc::default();
        let fetch_sinks = sinks.clone();
        let own_session = browser_session.clone();
        let pausing = Arc::new(AtomicBool::new(false));
        let reader_pausing = pausing.clone();
        runtime.spawn(async move {
            while let Some(text) = incoming.recv().await {
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    tracing::debug!(target: "moonpilot::cdp", "undecodable raw CDP message");
                    continue;
                };
                let Some(id) = value.get("id").and_then(Value::as_u64) else {
                    // Events of the browser session are the browser's own.
                    let session = value
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .filter(|s| Some(*s) != own_session.as_deref());
                    if let (Some(session), Some(method)) =
                        (session, value.get("method").and_then(Value::as_str))
                    {
                        let kind = if method.starts_with("Fetch.") {
                            Some(Lossless::Fetch)
                        } else if method == "Target.attachedToTarget" {
                            Some(Lossless::Attach)
                        } else {
                            None
                        };
                        if let Some(kind) = kind {
                            let key = (session.to_string(), kind);
                            let sink = fetch_sinks.lock().ok().and_then(|f| f.get(&key).cloned());
                            if let Some(sink) = sink {
                                let _ = sink.send(SessionEvent {
                                    session: session.to_string(),
                                    method: method.to_string(),
                                    params: value.get("params").cloned().unwrap_or(Value::Null),
                                });
                                continue;
                            }
                            if kind == Lossless::Fetch {
                                continue;
                            }
                        }
                        if method == "Target.detachedFromTarget" {
                            let child = value.pointer("/params/sessionId").and_then(Value::as_str);
                            if let (Some(child), Ok(mut f)) = (child, fetch_sinks.lock()) {
                                f.retain(|(s, _), _| s != child);
                            }
                        }
                        if method.starts_with("Network.")
                            || method == "Runtime.bindingCalled"
                            || method == "Target.attachedToTarget"
                            || method == "Target.detachedFromTarget"
                        {
                            let _ = session_tx.send(SessionEvent {
                                session: session.to_string(),
                                method: method.to_string(),
                                params: value.get("params").cloned().unwrap_or(Value::Null),
                            });
                        }
                        continue;
                    }
                    // Events: renderer crashes, and page targets coming and going.
                    let target = |key: &str| {
                        value
                            .pointer(&format!("/params/{key}"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    };
                    match value.get("method").and_then(Value::as_str) {
                        // Downloads of the browser's pages (once `Browser.setDownloadBehavior`
                        // asked for their events on this connection).
                        Some(m @ ("Browser.downloadWillBegin" | "Browser.downloadProgress")) => {
                            let _ = download_tx.send(DownloadEvent {
                                begins: m == "Browser.downloadWillBegin",
                                params: value.get("params").cloned().unwrap_or(Value::Null),
                            });
                        }
                        Some("Target.targetCrashed") => {
                            if let Some(t) = target("targetId") {
                                let _ = crash_tx.send(t);
                            }
                        }
                        Some("Target.attachedToTarget")
                            if value.pointer("/params/waitingForDebugger")
                                == Some(&Value::from(true)) =>
                        {
                            if let Some(session) = target("sessionId") {
                                let _ = target_tx.send(TargetEvent::Paused {
                                    target: target("targetInfo/targetId").unwrap_or_default(),
                                    opener: target("targetInfo/openerId"),
                                    session,
                                });
                            }
                        }
                        Some("Target.targetCreated")
                            if value.pointer("/params/targetInfo/type")
                                == Some(&Value::from("page"))
                                && !reader_pausing.load(Ordering::Relaxed) =>
                        {
                            if let (Some(t), Some(opener)) =
                                (target("targetInfo/targetId"), target("targetInfo/openerId"))
                            {
                                let _ = target_tx.send(TargetEvent::Opened { target: t, opener });
                            }
                        }
                        // A session of this connection ended: its Fetch events with it.
                        Some("Target.detachedFromTarget") => {
                            if let (Some(session), Ok(mut f)) =
                                (target("sessionId"), fetch_sinks.lock())
                            {
                                f.retain(|(s, _), _| *s != session);
                            }
                        }
                        Some("Target.targetDestroyed") => {
                            if let Some(t) = target("targetId") {
                                let _ = target_tx.send(TargetEvent::Gone { target: t });
                            }
                        }
                        _ => {}
                    }
                    continue;
                };
                let sender = reader_pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let Some(sender) = sender {
                    let res = match value.get("error") {
                        Some(err) => Err(from_protocol_error(
                            "raw CDP call",
                            err.get("code").and_then(Value::as_i64).unwrap_or(0),
                            err.get("message").and_then(Value::as_str).unwrap_or(""),
                        )),
                        None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = sender.send(res);
                }
            }
            alive_tx.send_replace(false);
            if let Some(browser_alive) = on_close {
                browser_alive.send_replace(false);
            }
            if let Ok(mut p) = reader_pending.lock() {
                p.clear();
            }
            if let Ok(mut f) = fetch_sinks.lock() {
                f.clear();
            }
            // With the reader's own senders (dropped as it returns), every receiver closes.
            if let Ok(mut c) = reader_channels.lock() {
                c.take();
            }
        });
        RawConnection {
            next_id: AtomicU64::new(first_id),
            pending,
            outgoing,
            alive,
            channels,
            sinks,
            browser_session,
            pausing,
            pages: Mutex::default(),
        }
    }

    /// Notes `target` as a page of this engine (see [`RawConnection::owns_page`]).
    pub fn note_page(&self, target: &str) {
        if let Ok(mut p) = self.pages.lock() {
            p.insert(target.to_string());
        }
    }

    /// Forgets page `target` (it went away).
    pub fn forget_page(&self, target: &str) {
        if let Ok(mut p) = self.pages.lock() {
            p.remove(target);
        }
    }

    /// Whether `target` is a page of this engine.
    pub fn owns_page(&self, target: &str) -> bool {
        self.pages.lock().is_ok_and(|p| p.contains(target))
    }

    /// Holds every new page before its first request (browser-level auto-attach, waiting for
    /// the debugger, pages only): a popup is then announced as [`TargetEvent::Paused`], so its
    /// task's settings, routes and credentials are on before it loads. Someone must resume each
    /// ([`RawConnection::resume`]); see `Browser::raw`.
    pub async fn pause_new_pages(&self) -> Result<(), CommandError> {
        self.call(
            None,
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{"type": "page", "exclude": false}, {"exclude": true}],
            }),
        )
        .await?;
        self.pausing.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Lets the page held on `session` run and detaches from it (what was set on the session,
    /// its headers and request interception, goes with it).
    pub async fn let_go(&self, session: &str) -> Result<(), CommandError> {
        self.resume(session).await?;
        self.call(
            None,
            "Target.detachFromTarget",
            json!({"sessionId": session}),
        )
        .await
        .map(drop)
    }

    /// Lets the page held on `session` run (a page already running is not affected).
    pub async fn resume(&self, session: &str) -> Result<(), CommandError> {
        self.call(Some(session), "Runtime.runIfWaitingForDebugger", json!({}))
            .await
            .map(drop)
    }

    /// Sends every event of `kind` of `session` from now on to `sink`, none missed (unlike
    /// [`RawConnection::session_events`], which no longer sees them); the sink is dropped when
    /// the session or the connection ends. A later call for the same session and kind takes the
    /// events from the earlier one.
    pub fn forward(
        &self,
        session: &str,
        kind: Lossless,
        sink: mpsc::UnboundedSender<SessionEvent>,
    ) {
        if let Ok(mut f) = self.sinks.lock() {
            // After the connection's end (the reader clears the sinks after saying so) the
            // sink is dropped at once: its receiver closes.
            if *self.alive.borrow() {
                f.insert((session.to_string(), kind), sink);
            }
        }
    }

    /// Every `Fetch.*` event of `session` from now on (see [`RawConnection::forward`]).
    pub fn fetch_events(&self, session: &str) -> mpsc::UnboundedReceiver<SessionEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.forward(session, Lossless::Fetch, tx);
        rx
    }

    /// Crashed target ids from now on (see [`RawConnection::discover_targets`]).
    pub fn crashes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.subscribe(|c| &c.crashes)
    }

    /// A receiver of one of the event channels; a closed one once the connection has ended.
    fn subscribe<T: Clone>(
        &self,
        which: impl Fn(&Channels) -> &tokio::sync::broadcast::Sender<T>,
    ) -> tokio::sync::broadcast::Receiver<T> {
        let channels = self.channels.lock().ok();
        match channels.as_ref().and_then(|c| c.as_ref()) {
            Some(c) => which(c).subscribe(),
            None => tokio::sync::broadcast::channel(1).1,
        }
    }

    /// Downloads beginning and progressing, from now on (after `Browser.setDownloadBehavior`
    /// with `eventsEnabled` on this connection).
    pub fn downloads(&self) -> tokio::sync::broadcast::Receiver<DownloadEvent> {
        self.subscribe(|c| &c.downloads)
    }

    /// Pages opened by pages, and targets that went away, from now on.
    pub fn targets(&self) -> tokio::sync::broadcast::Receiver<TargetEvent> {
        self.subscribe(|c| &c.targets)
    }

    /// Events of sessions attached on this connection, from now on: `Network.*`,
    /// `Runtime.bindingCalled` (a recorder in an out-of-process frame) and child sessions
    /// attaching and detaching.
    pub fn session_events(&self) -> tokio::sync::broadcast::Receiver<SessionEvent> {
        self.subscribe(|c| &c.session_events)
    }

    /// Turns target discovery on for this connection, so `Target.targetCrashed` arrives.
    pub async fn discover_targets(&self) -> Result<(), CommandError> {
        self.call(
            None,
            "Target.setDiscoverTargets",
            serde_json::json!({"discover": true}),
        )
        .await
        .map(drop)
    }

    /// Sends `method` to `session` (or the browser when `None`) and awaits the result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CommandError> {
        if !*self.alive.borrow() {
            return Err(CommandError::browser_gone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session.or(self.browser_session.as_deref()) {
            msg["sessionId"] = Value::from(s);
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        // Removes the entry if this call is dropped before its answer (a cancelled command).
        let _entry = PendingEntry {
            pending: &self.pending,
            id,
        };
        if self.outgoing.send(msg.to_string()).is_err() {
            return Err(CommandError::browser_gone());
        }
        match rx.await {
            Ok(res) => res.map_err(|mut e| {
                e.msg = e.msg.replacen("raw CDP call", method, 1);
                e
            }),
            Err(_) => Err(CommandError::browser_gone()),
        }
    }

    /// Attaches to `target_id` with a flat session and returns the session id.
    pub async fn attach(&self, target_id: &str) -> Result<String, CommandError> {
        let res = self
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await?;
        res.get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| CommandError::failed("`Target.attachToTarget` returned no session"))
    }
}

struct PendingEntry<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for PendingEntry<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&self.id);
        }
    }
}
