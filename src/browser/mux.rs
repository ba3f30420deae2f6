//! One WebSocket to a browser we attach to, shared by chromiumoxide and our raw CDP client.
//!
//! A fleet endpoint (browserless and its like) starts a new browser for every WebSocket it
//! accepts and counts each against its concurrency limit, so an engine that opened two sockets
//! ran in two browsers and took two slots. Attached, moonpilot opens one socket only: the
//! [`Mux`] holds it. chromiumoxide connects to a one-shot loopback WebSocket the mux serves and
//! talks over it unchanged; the raw client ([`super::raw::RawConnection`]) is a second CDP client
//! on the same socket, living in a browser session of its own (`Target.attachToBrowserTarget`),
//! with command ids from [`RAW_IDS`] up. Upstream messages are routed by id (answers) and by
//! session (events); nothing is rewritten.

use std::borrow::Cow;
use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::{self, Message};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot, watch};

use super::endpoint;

/// The first command id of the raw client. chromiumoxide numbers its commands from 0 and would
/// need a billion of them to get here; Chromium reads ids as 32-bit integers, so both stay below
/// 2^31.
pub const RAW_IDS: u64 = 1 << 30;

/// How long the endpoint may take to answer `Target.attachToBrowserTarget`.
const ATTACH_BOUND: Duration = Duration::from_secs(10);

/// How long chromiumoxide may take to connect to the loopback end.
const ACCEPT_BOUND: Duration = Duration::from_secs(10);

/// How many bytes of what the endpoint sent last are kept to quote why it ended.
const TAIL: usize = 512;

/// The shared socket: the loopback URL chromiumoxide connects to, and the raw client's ends.
pub struct Mux {
    local_url: String,
    raw: Mutex<Option<RawEnds>>,
    browser_session: Option<String>,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    done: watch::Receiver<bool>,
    ended: watch::Receiver<bool>,
}

/// The raw client's ends of the mux: what it sends upstream, what upstream sends it.
pub struct RawEnds {
    /// Messages to the endpoint.
    pub outgoing: mpsc::UnboundedSender<String>,
    /// Messages from the endpoint for the raw client (answers to its ids, events of its
    /// sessions).
    pub incoming: mpsc::UnboundedReceiver<String>,
}

impl Mux {
    /// Opens the one socket to `url` (waiting at most `wait` for the endpoint to accept it: a
    /// fleet queues connections past its limit), attaches a browser session for the raw client
    /// and serves the loopback end. `shown` is the URL as errors show it (token masked). When
    /// the endpoint ends the socket, why is written to `gone` (unless it is already set).
    pub async fn connect(
        url: &str,
        shown: &str,
        wait: Duration,
        gone: Arc<Mutex<Option<String>>>,
    ) -> Result<Mux, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        let host = endpoint::host_of(&parsed)?;
        let port = parsed.port_or_known_default().unwrap_or(80);
        let tls = parsed.scheme() == "wss";
        let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let reached = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handshake = {
            let (seen, reached) = (seen.clone(), reached.clone());
            async move {
                let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                    .await
                    .map_err(tungstenite::Error::Io)?;
                reached.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = tcp.set_nodelay(true);
                // TLS is ours (the same trusted roots as an https /json/version), under the
                // byte tail, so that what the endpoint says last is read in clear.
                let stream: Box<dyn Io> = if tls {
                    let connector = endpoint::tls_connector()
                        .await
                        .map_err(|e| tungstenite::Error::Io(std::io::Error::other(e)))?;
                    let name = rustls::pki_types::ServerName::try_from(host.clone())
                        .map_err(|e| tungstenite::Error::Io(std::io::Error::other(e)))?;
                    Box::new(
                        connector
                            .connect(name, tcp)
                            .await
                            .map_err(tungstenite::Error::Io)?,
                    )
                } else {
                    Box::new(tcp)
                };
                async_tungstenite::tokio::client_async_with_config(
                    url,
                    Tail {
                        inner: stream,
                        seen,
                    },
                    Some(unlimited()),
                )
                .await
            }
        };
        tokio::pin!(handshake);
        let socket = match tokio::time::timeout(wait, &mut handshake).await {
            Ok(Ok((socket, _))) => socket,
            Ok(Err(e)) => return Err(endpoint::explain(shown, &e)),
            Err(_) => {
                // Asked while this connection still waits in the queue, so that it counts.
                let reached = reached.load(std::sync::atomic::Ordering::SeqCst);
                return Err(endpoint::no_browser_within(&parsed, shown, wait, reached).await);
            }
        };
        // The handshake's bytes are not what the endpoint says when it ends the session.
        if let Ok(mut seen) = seen.lock() {
            seen.clear();
        }
        let (mut up_tx, mut up_rx) = socket.split();
        // The raw client's browser session. Messages that come before its answer are kept for
        // the router: chromiumoxide is not connected yet, and none may be lost.
        let mut early = Vec::new();
        let attach = json!({"id": RAW_IDS, "method": "Target.attachToBrowserTarget", "params": {}});
        let asked = async {
            up_tx
                .send(Message::text(attach.to_string()))
                .await
                .map_err(|e| e.to_string())?;
            while let Some(msg) = up_rx.next().await {
                let text = match msg.map_err(|e| e.to_string())? {
                    Message::Text(t) => t.to_string(),
                    Message::Close(frame) => {
                        return Err(format!(
                            "the endpoint closed the connection{}",
                            frame
                                .map(|f| format!(" (code {}: {})", u16::from(f.code), f.reason))
                                .unwrap_or_default()
                        ))
                    }
                    _ => continue,
                };
                let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if value.get("id").and_then(Value::as_u64) == Some(RAW_IDS) {
                    return Ok(value);
                }
                early.push(text);
            }
            Err("the endpoint closed the connection".to_string())
        };
        let browser_session = match tokio::time::timeout(ATTACH_BOUND, asked).await {
            Ok(Ok(answer)) => match answer.pointer("/result/sessionId").and_then(Value::as_str) {
                Some(s) => Some(s.to_string()),
                None => {
                    tracing::warn!(
                        "`{shown}` refused a browser session ({}): no renderer-crash events, \
                         and no commands in cross-site frames",
                        answer
                            .pointer("/error/message")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("?")
                    );
                    None
                }
            },
            Ok(Err(e)) => return Err(format!("`{shown}` ended the connection at once: {e}")),
            Err(_) => {
                return Err(format!(
                    "`{shown}` accepted the WebSocket but answered no CDP command within {} s: \
                     not a DevTools endpoint?",
                    ATTACH_BOUND.as_secs()
                ))
            }
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("no loopback port for the CDP client: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("no loopback port for the CDP client: {e}"))?
            .port();
        // A secret path: nobody else on this machine takes the connection meant for
        // chromiumoxide in the moment between bind and connect.
        let path = format!("/mux/{}", secret().await);
        let (raw_out, raw_out_rx) = mpsc::unbounded_channel();
        let (raw_in_tx, raw_in) = mpsc::unbounded_channel();
        let (shutdown_tx, shutdown) = oneshot::channel();
        let (done_tx, done) = watch::channel(false);
        let (ended_tx, ended) = watch::channel(false);
        let router = Router {
            up_tx,
            up_rx,
            raw_out: raw_out_rx,
            raw_in: raw_in_tx,
            sessions: Sessions::new(browser_session.clone()),
            gone,
            seen,
            ended: ended_tx,
        };
        let local_path = path.clone();
        tokio::spawn(async move {
            router.run(listener, local_path, early, shutdown).await;
            done_tx.send_replace(true);
        });
        Ok(Mux {
            local_url: format!("ws://127.0.0.1:{port}{path}"),
            raw: Mutex::new(Some(RawEnds {
                outgoing: raw_out,
                incoming: raw_in,
            })),
            browser_session,
            shutdown: Mutex::new(Some(shutdown_tx)),
            done,
            ended,
        })
    }

    /// The loopback WebSocket URL chromiumoxide connects to (once).
    pub fn local_url(&self) -> &str {
        &self.local_url
    }

    /// The raw client's browser session, when the endpoint granted one.
    pub fn browser_session(&self) -> Option<&str> {
        self.browser_session.as_deref()
    }

    /// The raw client's ends (once), when the endpoint granted it a browser session. Without
    /// one it would share chromiumoxide's own session, whose attach events chromiumoxide
    /// acts on: no raw client then.
    pub fn take_raw(&self) -> Option<RawEnds> {
        self.browser_session.as_ref()?;
        self.raw.lock().ok()?.take()
    }

    /// Turns true once the socket to the endpoint has ended (or the mux was shut down), the
    /// reason already written.
    pub fn ended_watch(&self) -> watch::Receiver<bool> {
        self.ended.clone()
    }

    /// Closes the socket to the endpoint (which frees a fleet's slot) and waits a second at most
    /// for the close to go out.
    pub async fn shutdown(&self) {
        let sender = self.shutdown.lock().ok().and_then(|mut s| s.take());
        if let Some(s) = sender {
            let _ = s.send(());
        }
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), done.wait_for(|d| *d)).await;
    }
}

/// A WebSocket configuration without size limits (a screenshot answer is tens of MB), as
/// chromiumoxide's own.
fn unlimited() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None)
}

/// 128 random bits in hex.
async fn secret() -> String {
    use tokio::io::AsyncReadExt;
    let mut bytes = [0u8; 16];
    let read = async {
        let mut f = tokio::fs::File::open("/dev/urandom").await?;
        f.read_exact(&mut bytes).await.map(drop)
    };
    if read.await.is_err() {
        // No /dev/urandom: the clock and the process id, which is still unguessable enough for
        // a port that lives for milliseconds.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (now ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sessions whose events go to the raw client: its browser session and every session
/// attached inside one of them.
struct Sessions {
    browser: Option<String>,
    raw: HashSet<String>,
}

/// Where an upstream message goes.
#[derive(Debug, PartialEq, Eq)]
enum Dest {
    Client,
    Raw,
    Drop,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    id: Option<u64>,
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<Inner<'a>>,
    #[serde(borrow)]
    result: Option<Inner<'a>>,
}

#[derive(Deserialize)]
struct Inner<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<Cow<'a, str>>,
}

impl Sessions {
    fn new(browser: Option<String>) -> Sessions {
        Sessions {
            raw: browser.iter().cloned().collect(),
            browser,
        }
    }

    /// Where `text` goes, learning the raw client's new sessions on the way.
    fn route(&mut self, text: &str) -> Dest {
        let Ok(msg) = serde_json::from_str::<Envelope>(text) else {
            // chromiumoxide counts what it cannot read.
            return Dest::Client;
        };
        let inner_session = |inner: &Option<Inner>| {
            inner
                .as_ref()
                .and_then(|i| i.session_id.as_deref())
                .map(str::to_string)
        };
        if let Some(id) = msg.id {
            if id < RAW_IDS {
                return Dest::Client;
            }
            // `Target.attachToTarget`'s answer names the new session (its event may come
            // after).
            if let Some(s) = inner_session(&msg.result) {
                self.raw.insert(s);
            }
            return Dest::Raw;
        }
        let method = msg.method.as_deref().unwrap_or_default();
        match msg.session_id.as_deref() {
            Some(s) if self.raw.contains(s) => {
                match method {
                    "Target.attachedToTarget" => {
                        if let Some(child) = inner_session(&msg.params) {
                            self.raw.insert(child);
                        }
                    }
                    "Target.detachedFromTarget" => {
                        if let Some(child) = inner_session(&msg.params) {
                            if Some(&child) != self.browser.as_ref() {
                                self.raw.remove(&child);
                            }
                        }
                    }
                    _ => {}
                }
                Dest::Raw
            }
            Some(_) => Dest::Client,
            // The one top-level trace of the raw client: the attach of its browser session.
            None if method == "Target.attachedToTarget"
                && self.browser.is_some()
                && inner_session(&msg.params) == self.browser =>
            {
                Dest::Drop
            }
            None => Dest::Client,
        }
    }
}

type Upstream = async_tungstenite::tokio::TokioAdapter<Tail>;

/// What the endpoint's socket runs on: TCP, or TLS over it.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How often the endpoint is pinged, and how long it may stay silent (pongs included) before
/// the connection counts as lost: a network path that drops silently would otherwise hold a
/// fleet's slot until the kernel gives up on the socket.
const PING_EVERY: Duration = Duration::from_secs(15);
const SILENCE: Duration = Duration::from_secs(45);

/// How long a closing message may take to go out.
const CLOSE_BOUND: Duration = Duration::from_secs(1);
type Local = async_tungstenite::tokio::TokioAdapter<tokio::net::TcpStream>;

struct Router {
    up_tx: async_tungstenite::WebSocketSender<Upstream>,
    up_rx: async_tungstenite::WebSocketReceiver<Upstream>,
    raw_out: mpsc::UnboundedReceiver<String>,
    raw_in: mpsc::UnboundedSender<String>,
    sessions: Sessions,
    gone: Arc<Mutex<Option<String>>>,
    seen: Arc<Mutex<Vec<u8>>>,
    ended: watch::Sender<bool>,
}

impl Router {
    async fn run(
        mut self,
        listener: tokio::net::TcpListener,
        path: String,
        early: Vec<String>,
        mut shutdown: oneshot::Receiver<()>,
    ) {
        let accepted = tokio::select! {
            accepted = tokio::time::timeout(ACCEPT_BOUND, accept(&listener, &path)) => accepted,
            _ = &mut shutdown => Ok(None),
        };
        drop(listener);
        let Ok(Some(client)) = accepted else {
            tracing::debug!(target: "moonpilot::cdp", "the CDP client never connected to the mux");
            self.ended.send_replace(true);
            self.close_upstream().await;
            return;
        };
        let (mut c_tx, mut c_rx) = client.split();
        let mut reason = None;
        for text in early {
            if self.deliver(text, &mut c_tx).await.is_err() {
                reason = Some(None);
                break;
            }
        }
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut heard = tokio::time::Instant::now();
        let reason = match reason {
            Some(r) => r,
            None => loop {
                tokio::select! {
                    _ = &mut shutdown => break None,
                    _ = ping.tick() => {
                        if heard.elapsed() > SILENCE {
                            break Some(format!(
                                "the endpoint stopped answering: nothing came for {} s, pings included",
                                SILENCE.as_secs()
                            ));
                        }
                        let _ = tokio::time::timeout(
                            CLOSE_BOUND,
                            self.up_tx.send(Message::Ping(Vec::new().into())),
                        )
                        .await;
                    }
                    msg = self.up_rx.next() => {
                        heard = tokio::time::Instant::now();
                        match msg {
                            Some(Ok(Message::Text(t))) => {
                                if self.deliver(t.to_string(), &mut c_tx).await.is_err() {
                                    break None;
                                }
                            }
                            Some(Ok(Message::Binary(b))) => {
                                let text = String::from_utf8_lossy(&b).into_owned();
                                if self.deliver(text, &mut c_tx).await.is_err() {
                                    break None;
                                }
                            }
                            Some(Ok(Message::Close(frame))) => break Some(match frame {
                                Some(f) if !f.reason.is_empty() => format!(
                                    "the endpoint closed the connection (code {}: {})",
                                    u16::from(f.code),
                                    f.reason
                                ),
                                Some(f) => format!(
                                    "the endpoint closed the connection (code {})",
                                    u16::from(f.code)
                                ),
                                None => "the endpoint closed the connection".to_string(),
                            }),
                            Some(Ok(_)) => {}
                            Some(Err(e)) => break Some(self.why_ended(Some(&e))),
                            None => break Some(self.why_ended(None)),
                        }
                    }
                    msg = c_rx.next() => match msg {
                        Some(Ok(Message::Text(t))) => {
                            if let Err(e) = self.up_tx.send(Message::Text(t)).await {
                                break Some(self.why_ended(Some(&e)));
                            }
                        }
                        // chromiumoxide went away: the engine detached.
                        Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break None,
                        Some(Ok(_)) => {}
                    },
                    Some(text) = self.raw_out.recv() => {
                        if let Err(e) = self.up_tx.send(Message::text(text)).await {
                            break Some(self.why_ended(Some(&e)));
                        }
                    }
                }
            },
        };
        match &reason {
            Some(reason) => {
                tracing::info!(target: "moonpilot::cdp", "{reason}");
                if let Ok(mut g) = self.gone.lock() {
                    g.get_or_insert(crate::redact::text(reason).into_owned());
                }
            }
            None => self.close_upstream().await,
        }
        // The browser counts as gone from here, before the closing below is sent.
        self.ended.send_replace(true);
        let _ = tokio::time::timeout(CLOSE_BOUND, c_tx.send(Message::Close(None))).await;
    }

    /// Sends a Close to the endpoint, a second at most.
    async fn close_upstream(&mut self) {
        let _ = tokio::time::timeout(CLOSE_BOUND, self.up_tx.send(Message::Close(None))).await;
    }

    /// Sends `text` where it belongs. `Err` when chromiumoxide's end is gone.
    async fn deliver(
        &mut self,
        text: String,
        client: &mut async_tungstenite::WebSocketSender<Local>,
    ) -> Result<(), ()> {
        match self.sessions.route(&text) {
            Dest::Client => client.send(Message::text(text)).await.map_err(drop),
            Dest::Raw => {
                let _ = self.raw_in.send(text);
                Ok(())
            }
            Dest::Drop => Ok(()),
        }
    }

    /// Why the endpoint's socket ended, from the error and the last bytes it sent.
    fn why_ended(&self, error: Option<&tungstenite::Error>) -> String {
        let tail = self
            .seen
            .lock()
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .unwrap_or_default();
        ended_because(&tail, error)
    }
}

/// Why the endpoint's socket ended, for a person: `tail` is the last bytes it sent.
fn ended_because(tail: &str, error: Option<&tungstenite::Error>) -> String {
    // browserless ends a session at its TIMEOUT by writing a plain HTTP answer into the
    // upgraded socket: `HTTP/1.1 408 Request Timeout … Request has timed out`. Only a real
    // status line counts (a page's headers travel inside CDP messages, JSON-escaped).
    if let Some((status, body)) = http_answer(tail) {
        let said = if body.is_empty() {
            format!("`{status}`")
        } else {
            format!("`{status}` ({body})")
        };
        if status.split_whitespace().nth(1) == Some("408") {
            return format!(
                "the endpoint ended the session: it answered {said}, which browserless does at \
                 its session TIMEOUT (30 s by default): raise TIMEOUT, or add &timeout=MS to the URL"
            );
        }
        return format!("the endpoint ended the session: it answered {said}");
    }
    match error {
        Some(tungstenite::Error::Protocol(
            tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        )) => "the endpoint dropped the connection without closing it: the browser exited, or \
               the network broke"
            .to_string(),
        Some(tungstenite::Error::Protocol(p)) => {
            format!("the endpoint stopped speaking WebSocket ({p})")
        }
        Some(tungstenite::Error::Io(e)) => format!("the connection to the endpoint broke: {e}"),
        Some(e) => format!("the connection to the endpoint ended: {e}"),
        None => "the endpoint closed the connection".to_string(),
    }
}

/// The last plain HTTP answer in `tail`: its status line and up to 120 characters of its body.
fn http_answer(tail: &str) -> Option<(String, String)> {
    let at = tail.rfind("HTTP/1.")?;
    let answer = &tail[at..];
    let (status, rest) = answer.split_once("\r\n")?;
    let code = status.split_whitespace().nth(1)?;
    let plain = |s: &str| !s.contains(['"', '\\']);
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) || !plain(status) {
        return None;
    }
    let body = rest
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.trim().chars().take(120).collect::<String>())
        .filter(|b| plain(b))
        .unwrap_or_default();
    Some((status.chars().take(80).collect(), body))
}

/// The first connection to `listener` that asks for `path`; others are refused.
// tungstenite's handshake callback returns its own large error response.
#[allow(clippy::result_large_err)]
async fn accept(
    listener: &tokio::net::TcpListener,
    path: &str,
) -> Option<
    async_tungstenite::WebSocketStream<
        async_tungstenite::tokio::TokioAdapter<tokio::net::TcpStream>,
    >,
> {
    use tungstenite::handshake::server::{ErrorResponse, Request, Response};
    loop {
        let (stream, _) = listener.accept().await.ok()?;
        let _ = stream.set_nodelay(true);
        let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
            if req.uri().path() == path {
                Ok(resp)
            } else {
                let mut refused = ErrorResponse::new(None);
                *refused.status_mut() = tungstenite::http::StatusCode::NOT_FOUND;
                Err(refused)
            }
        };
        if let Ok(ws) =
            async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(unlimited()))
                .await
        {
            return Some(ws);
        }
    }
}

/// A stream that keeps the last [`TAIL`] bytes it read.
pub struct Tail {
    inner: Box<dyn Io>,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl AsyncRead for Tail {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &res {
            let new = &buf.filled()[before..];
            if let Ok(mut seen) = this.seen.lock() {
                seen.extend_from_slice(new);
                let len = seen.len();
                if len > TAIL {
                    seen.drain(..len - TAIL);
                }
            }
        }
        res
    }
}

impl AsyncWrite for Tail {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_go_by_id_and_events_by_session() {
        let mut s = Sessions::new(Some("B".into()));
        assert_eq!(s.route(r#"{"id":7,"result":{}}"#), Dest::Client);
        assert_eq!(
            s.route(&format!(
                r#"{{"id":{},"result":{{"sessionId":"S1"}}}}"#,
                RAW_IDS + 3
            )),
            Dest::Raw
        );
        // The session its answer named is the raw client's from now on.
        assert_eq!(
            s.route(r#"{"method":"Network.requestWillBeSent","sessionId":"S1","params":{}}"#),
            Dest::Raw
        );
        assert_eq!(
            s.route(r#"{"method":"Page.loadEventFired","sessionId":"C1","params":{}}"#),
            Dest::Client
        );
        assert_eq!(
            s.route(
                r#"{"method":"Target.targetCrashed","sessionId":"B","params":{"targetId":"T"}}"#
            ),
            Dest::Raw
        );
        // Top-level events are chromiumoxide's, but for the attach of the raw browser session.
        assert_eq!(
            s.route(r#"{"method":"Target.targetCreated","params":{"targetInfo":{}}}"#),
            Dest::Client
        );
        assert_eq!(
            s.route(r#"{"method":"Target.attachedToTarget","params":{"sessionId":"B","targetInfo":{"type":"browser"}}}"#),
            Dest::Drop
        );
        assert_eq!(
            s.route(r#"{"method":"Target.attachedToTarget","params":{"sessionId":"C2"}}"#),
            Dest::Client
        );
    }

    #[test]
    fn sessions_attached_inside_raw_ones_are_raw_until_detached() {
        let mut s = Sessions::new(Some("B".into()));
        s.route(
            r#"{"method":"Target.attachedToTarget","sessionId":"B","params":{"sessionId":"P"}}"#,
        );
        s.route(
            r#"{"method":"Target.attachedToTarget","sessionId":"P","params":{"sessionId":"F"}}"#,
        );
        assert_eq!(
            s.route(r#"{"method":"Runtime.consoleAPICalled","sessionId":"F"}"#),
            Dest::Raw
        );
        s.route(
            r#"{"method":"Target.detachedFromTarget","sessionId":"P","params":{"sessionId":"F"}}"#,
        );
        assert_eq!(
            s.route(r#"{"method":"Runtime.consoleAPICalled","sessionId":"F"}"#),
            Dest::Client
        );
        // A chromiumoxide session attaching something stays chromiumoxide's.
        s.route(
            r#"{"method":"Target.attachedToTarget","sessionId":"C","params":{"sessionId":"G"}}"#,
        );
        assert_eq!(
            s.route(r#"{"method":"Page.frameNavigated","sessionId":"G"}"#),
            Dest::Client
        );
        // Text that is no JSON goes to chromiumoxide, which counts it.
        assert_eq!(s.route("not json"), Dest::Client);
    }

    #[test]
    fn without_a_browser_session_everything_but_raw_answers_is_the_clients() {
        let mut s = Sessions::new(None);
        assert_eq!(
            s.route(r#"{"method":"Target.attachedToTarget","params":{"sessionId":"B"}}"#),
            Dest::Client
        );
        assert_eq!(
            s.route(&format!(r#"{{"id":{RAW_IDS},"error":{{}}}}"#)),
            Dest::Raw
        );
    }

    #[test]
    fn a_session_timeout_is_quoted() {
        let tail =
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\n\r\nRequest has timed out";
        let why = ended_because(tail, None);
        assert!(
            why.contains("`HTTP/1.1 408 Request Timeout` (Request has timed out)"),
            "{why}"
        );
        assert!(
            why.contains("TIMEOUT") && why.contains("&timeout="),
            "{why}"
        );
        assert_eq!(
            ended_because("", None),
            "the endpoint closed the connection"
        );
        // A page's headers inside a CDP message are no answer of the endpoint's.
        let json = r#"{"method":"Network.responseReceivedExtraInfo","params":{"headersText":"HTTP/1.1 200 OK\r\nSet-Cookie: sid=1\r\n"}}"#;
        assert_eq!(http_answer(json), None);
        let reset = tungstenite::Error::Protocol(
            tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        );
        let why = ended_because(json, Some(&reset));
        assert!(
            why.contains("browser exited") && !why.contains("TIMEOUT"),
            "{why}"
        );
    }
}
