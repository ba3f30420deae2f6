//! The HTTP host (`moonpilot serve`, `moonpilot repl --serve`): the seed's protocol
//! (PROTOCOL.md §1–§3, §13) over the one executor, so the seed's own clients work unchanged.
//!
//! An adapter and nothing more: request bytes → `protocol::envelope` → `Executor::execute` →
//! `Receipt` → envelope bytes. Every method (`commands` included) goes to the executor as it
//! came; the executor decides whether a command needs a task, so an `id` that names no live
//! task does not fail `list_methods`, `cleanup` and the like. Beside the command endpoint:
//! health and the read-only views (through the executor, without a task), the upload staging
//! endpoint (its rules live in `commands/staging.rs`) and `/data/<task>/<file>`, which serves
//! the evidence files receipts name (`screenshot`, `imageUrl`, …).
//!
//! Bounds: a command body is at most [`ServeOptions::max_body_bytes`], an upload at most
//! `upload_max_bytes` (plus its encoding); a larger body is drained (so the client reads the
//! answer instead of a reset connection) and answered 413 in the seed's failure shape. Every
//! answer is a JSON object (unknown paths too) except the files of `/data`.
//! Whichever HTTP crate is used stays inside this file and `splash/http.rs` (Splash's API, on
//! a listener of its own).
//!
//! Every request, `/mcp` included, first passes the door's guard (`door::http`, issue 42 §1):
//! a `Host` that is not loopback, the bound address or `--allowed-hosts` is refused 403 (DNS
//! rebinding), so is an `Origin` that is not loopback or `--allowed-origins` (without `Origin`,
//! a browser's `Sec-Fetch-Site` and `Referer` tell whose page sent it); then the token;
//! then `POST /playwright/command` and `POST /mcp` take `application/json` only (415), so a web
//! page cannot reach them with a CORS "simple" request. CORS headers echo an allowed origin,
//! never `*`.

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::commands::staging;
use crate::door::http::{self as guard, AllowLists, Refusal};
use crate::protocol::envelope;
use crate::{ErrorCode, Executor, Receipt};

/// The seed's port (`server.port`).
pub const DEFAULT_PORT: u16 = 10049;
/// The command body bound: a 50 MiB upload sent inline as base64 (`upload_file.contentBase64`,
/// 66.7 MiB) still fits.
pub const MAX_COMMAND_BODY: usize = 70 * 1024 * 1024;
/// The upload size cap (`browser.upload.maxBytes`: 50 MiB).
pub const MAX_UPLOAD: u64 = 50 * 1024 * 1024;
/// How much of an oversized body is read and dropped so the client gets the 413 answer.
const DRAIN_MAX: usize = 256 * 1024 * 1024;
/// How long draining an oversized body may take.
const DRAIN_TIME: Duration = Duration::from_secs(10);
/// How long `/downloads` waits for a download in progress.
const DOWNLOAD_WAIT: Duration = Duration::from_secs(60);
/// How long `/data` waits for a task's evidence being written.
const EVIDENCE_WAIT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish once the server is told to stop.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// How the server listens and what it accepts.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to bind (127.0.0.1 unless asked otherwise).
    pub bind: IpAddr,
    /// The port (0 = any free one).
    pub port: u16,
    /// `Authorization: Bearer <token>` required on every request when set (mandatory for a
    /// non-loopback bind).
    pub token: Option<String>,
    /// The largest command body.
    pub max_body_bytes: usize,
    /// The largest staged upload (0 = no cap of its own; a body stays under 256 MiB).
    pub upload_max_bytes: u64,
    /// Same name → same file (`existed:true`); false → `a-1.jpg`, `a-2.jpg`, …
    pub upload_overwrite: bool,
    /// Stop serving after a successful `shutdown` command (the seed keeps serving).
    pub exit_on_shutdown: bool,
    /// MCP Streamable HTTP at `/mcp` with these options (none: no `/mcp`).
    pub mcp: Option<crate::mcp::McpOptions>,
    /// Splash's HTTP API on a port of its own (none: not served).
    pub splash: Option<crate::splash::SplashOptions>,
    /// `--allow-unrestricted-file-access`: off loopback, file params and `file:` URLs are not
    /// confined (`door.rs`).
    pub unrestricted_files: bool,
    /// The `Host` and `Origin` values answered beyond loopback and the bound address
    /// (`--allowed-hosts`, `--allowed-origins`), on every door of this server: the seed
    /// protocol, `/mcp` and the Splash port.
    pub allowed: AllowLists,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            token: None,
            max_body_bytes: MAX_COMMAND_BODY,
            upload_max_bytes: MAX_UPLOAD,
            upload_overwrite: true,
            exit_on_shutdown: false,
            mcp: None,
            splash: None,
            unrestricted_files: false,
            allowed: AllowLists::default(),
        }
    }
}

impl ServeOptions {
    /// Refuses what must not start (PROTOCOL.md §18): a non-loopback bind without a token, an
    /// empty token, or an allow-list entry that is not a host or an origin.
    pub fn check(&self) -> Result<(), String> {
        self.allowed.check()?;
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err("--token must not be empty".into());
        }
        if !self.bind.is_loopback() && self.token.is_none() {
            return Err(format!(
                "refusing to listen on {} without a token: a non-loopback address needs \
                 --token T (clients then send `Authorization: Bearer T`)",
                self.bind
            ));
        }
        Ok(())
    }
}

/// Binds the listener (after [`ServeOptions::check`]).
pub async fn bind(opts: &ServeOptions) -> std::io::Result<tokio::net::TcpListener> {
    opts.check()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    tokio::net::TcpListener::bind(SocketAddr::new(opts.bind, opts.port)).await
}

/// The line printed when the server is up.
pub fn banner(addr: SocketAddr, opts: &ServeOptions) -> String {
    let mcp = if opts.mcp.is_some() {
        format!(" and MCP at http://{addr}/mcp")
    } else {
        String::new()
    };
    format!(
        "moonpilot: serving the seed protocol on http://{addr} (POST /playwright/command){mcp}{}",
        if opts.token.is_some() {
            ", token required"
        } else {
            ""
        }
    )
}

/// `moonpilot serve`: a multi-threaded runtime, one engine, the server until Ctrl-C or SIGTERM
/// (or `shutdown`, with `exit_on_shutdown`); then every task and the browser are closed.
/// A refused configuration or a port that cannot be bound is exit code 2.
pub fn run(config: crate::EngineConfig, opts: ServeOptions) -> std::process::ExitCode {
    use std::process::ExitCode;
    if let Err(e) = opts.check() {
        eprintln!("moonpilot: {e}");
        return ExitCode::from(2);
    }
    let runtime = match crate::signal::multi_thread_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let listener = match bind(&opts).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "moonpilot: cannot listen on {}: {e}",
                    SocketAddr::new(opts.bind, opts.port)
                );
                return ExitCode::from(2);
            }
        };
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        let (splash_stop, splash_stopped) = tokio::sync::watch::channel(false);
        if let Some(mut splash) = opts.splash.clone() {
            let at = SocketAddr::new(opts.bind, splash.port);
            let splash_listener = match tokio::net::TcpListener::bind(at).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("moonpilot: cannot listen on {at} for the Splash API: {e}");
                    return ExitCode::from(2);
                }
            };
            if let Ok(addr) = splash_listener.local_addr() {
                println!("moonpilot: serving Splash's HTTP API on http://{addr} (render.html, render.png, render.json, execute, run)");
            }
            splash.token = opts.token.clone();
            splash.allowed = opts.allowed.clone();
            let mut stopped = splash_stopped;
            tokio::spawn(crate::splash::http::serve(
                executor.clone(),
                splash_listener,
                splash,
                async move {
                    let _ = stopped.wait_for(|s| *s).await;
                },
            ));
        }
        if let Ok(addr) = listener.local_addr() {
            println!("{}", banner(addr, &opts));
        }
        let res = serve(executor, listener, opts, crate::signal::stop_signal()).await;
        let _ = splash_stop.send(true);
        engine.shutdown().await;
        engine.flush_trace().await;
        match res {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("moonpilot: the server stopped: {e}");
                ExitCode::from(1)
            }
        }
    })
}

struct Shared {
    executor: Executor,
    opts: ServeOptions,
    port: u16,
    /// Which hosts and origins are answered, for the listener's address.
    door: guard::Guard,
    /// Set by a successful `shutdown` when `exit_on_shutdown`.
    stop: tokio::sync::Notify,
}

/// Serves on `listener` until `stop` resolves (or a `shutdown` command, with
/// `exit_on_shutdown`); requests in flight then get [`STOP_GRACE`] to finish. The engine is not
/// shut down here: its host does that.
pub async fn serve(
    executor: Executor,
    listener: tokio::net::TcpListener,
    opts: ServeOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The seed's commands are held to the seed port's rules (`door.rs`); /mcp derives its
    // own from the same engine.
    let executor = {
        let config = &executor.engine().config;
        let trust = crate::door::Trust::seed(
            !opts.bind.is_loopback(),
            opts.unrestricted_files,
            &config.data_dir,
            &config.upload_dir,
        );
        executor.through(trust)
    };
    let local = listener.local_addr()?;
    let door = guard::Guard::new(local.ip(), &opts.allowed)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let shared = Arc::new(Shared {
        executor,
        opts,
        port: local.port(),
        door,
        stop: tokio::sync::Notify::new(),
    });
    let (stopping_tx, mut stopping) = tokio::sync::watch::channel(false);
    let signal = {
        let shared = shared.clone();
        async move {
            tokio::select! {
                _ = stop => {}
                _ = shared.stop.notified() => {}
            }
            let _ = stopping_tx.send(true);
        }
    };
    let mcp_stop = tokio_util::sync::CancellationToken::new();
    let _stop_mcp = mcp_stop.clone().drop_guard();
    let app = router(shared, mcp_stop);
    let server = axum::serve(listener, app).with_graceful_shutdown(signal);
    let grace = async move {
        let _ = stopping.wait_for(|s| *s).await;
        tokio::time::sleep(STOP_GRACE).await;
    };
    tokio::select! {
        res = server.into_future() => res,
        _ = grace => Ok(()),
    }
}

fn router(shared: Arc<Shared>, mcp_stop: tokio_util::sync::CancellationToken) -> Router {
    let mut app = Router::new();
    if let Some(mcp) = shared.opts.mcp.clone() {
        let service = crate::mcp::host::http_service(shared.executor.clone(), mcp, mcp_stop);
        app = app.merge(
            Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn(delete_answer))
                .layer(axum::middleware::from_fn(typed_refusal)),
        );
    }
    app.route("/playwright/command", any(command))
        .route("/playwright/upload", any(upload))
        .route("/playwright/health", any(health))
        .route("/playwright/methods", any(methods))
        .route("/playwright/config", any(config))
        .route("/playwright/tasks", any(tasks))
        .route("/data/{*path}", any(data_file))
        .route("/downloads/{*path}", any(download_file))
        .route("/report/{task}", any(task_report))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// MCP's `DELETE /mcp` (the end of a session) answers 202 from the SDK; clients take 200 or 204
/// as done (the Python SDK logs anything else as a failed termination).
async fn delete_answer(req: Request, next: Next) -> Response {
    let delete = req.method() == Method::DELETE;
    let mut res = next.run(req).await;
    if delete && res.status() == StatusCode::ACCEPTED {
        *res.status_mut() = StatusCode::NO_CONTENT;
    }
    res
}

/// The SDK refuses a message no session sees (a body that is no JSON or no JSON-RPC message, a
/// wrong `Accept` or `Content-Type`, an unknown session, a body too large) in plain text. MCP's
/// transport lets that answer carry "a JSON-RPC error response that has no id", which is what a
/// client can branch on: the same status and headers, the SDK's sentence as the error's message,
/// the codes of the TypeScript SDK (-32700 unparsable JSON, -32600 JSON that is no JSON-RPC
/// message, -32001 no such session, -32000 the rest; -32603 for a 5xx).
async fn typed_refusal(req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    let status = res.status();
    let typed = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.starts_with("application/json") || ct.starts_with("text/event-stream")
        });
    if typed || !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    // One sentence of the SDK's.
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let code = match status.as_u16() {
        // serde_json's syntax errors name where they are; "unrecognized JSON-RPC message" does not.
        415 if text.starts_with("fail to deserialize") && text.contains(" at line ") => -32700,
        415 if text.starts_with("fail to deserialize") => -32600,
        404 => -32001,
        s if s >= 500 => -32603,
        _ => -32000,
    };
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": text}});
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body.to_string()))
}

fn json_response(status: u16, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{\"ok\":false,\"code\":0}".to_vec());
    let mut res = Response::new(Body::from(bytes));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    res
}

fn fail(status: u16, msg: &str) -> Response {
    json_response(status, &envelope::failure(msg))
}

/// Whether the request carries the token (constant time in the token's length).
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The door's guard, in order: `Host` and `Origin` ([`admit`]), CORS preflights of the command
/// and upload endpoints (they carry no credentials and run nothing), the token, the JSON-only
/// body of `POST /playwright/command` and `POST /mcp`. The command and upload endpoints answer
/// CORS headers for an allowed `Origin` (echoed, with `Vary: Origin`), never `*`.
async fn guard(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    // `/mcp` refuses in MCP's own shape: a JSON-RPC error with no id (see `typed_refusal`).
    let mcp = path == "/mcp" || path.starts_with("/mcp/");
    let fail = |status: u16, msg: &str| {
        if mcp {
            let body =
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": msg}});
            json_response(status, &body)
        } else {
            fail(status, msg)
        }
    };
    let cors = matches!(path, "/playwright/command" | "/playwright/upload");
    let json_only = req.method() == Method::POST && (path == "/playwright/command" || mcp);
    let preflight = req.method() == Method::OPTIONS;
    // Its GETs change nothing: a link from another site's page to a report is answered.
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    let echo = match admit(&s.door, &req, read) {
        Ok(echo) => echo,
        Err(refusal) => return fail(refusal.status(), &refusal.message()),
    };
    let mut res = match &s.opts.token {
        Some(token) if !preflight && !authorized(req.headers(), token) => {
            let mut res = fail(
                401,
                "unauthorized: this server needs `Authorization: Bearer <token>` (the --token it was started with)",
            );
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            res
        }
        _ if preflight && cors => {
            let mut res = Response::new(Body::empty());
            *res.status_mut() = StatusCode::NO_CONTENT;
            res
        }
        _ => match json_only
            .then(|| guard::json_body(header_value(req.headers(), header::CONTENT_TYPE)))
        {
            Some(Err(refusal)) => fail(refusal.status(), &refusal.message()),
            _ => next.run(req).await,
        },
    };
    if cors {
        let h = res.headers_mut();
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        if let Some(origin) = echo {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            for (name, value) in [
                (
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    "GET, POST, DELETE, OPTIONS",
                ),
                (
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    "Content-Type, Authorization, X-Filename",
                ),
                (header::ACCESS_CONTROL_MAX_AGE, "600"),
            ] {
                h.insert(name, HeaderValue::from_static(value));
            }
        }
    }
    res
}

/// A header's value as text (bytes that are not UTF-8 become U+FFFD, which no rule allows).
fn header_value(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// The door's `Host` and `Origin` rule (`guard::Guard::admit`): the `Origin` to echo in
/// CORS headers (`None`: no `Origin`), or why the request is refused. `navigations`: a GET or
/// HEAD of a door whose GETs change nothing.
fn admit(
    door: &guard::Guard,
    req: &Request,
    navigations: bool,
) -> Result<Option<HeaderValue>, Refusal> {
    let sent = guard::Sent::of_request(req);
    let echo = door.admit(&sent, navigations)?;
    Ok(echo.and_then(|_| req.headers().get(header::ORIGIN).cloned()))
}

/// A body larger than its bound: how much was seen.
struct Oversized(usize);

/// Reads `body` up to `limit` bytes. A larger one is drained (up to [`DRAIN_MAX`] and
/// [`DRAIN_TIME`]) so the client, still sending, reads the answer instead of a reset.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, Oversized> {
    let mut stream = body.into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    let started = Instant::now();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            break;
        };
        seen = seen.saturating_add(chunk.len());
        if seen > limit {
            buf = Vec::new();
            if seen > DRAIN_MAX || started.elapsed() > DRAIN_TIME {
                return Err(Oversized(seen));
            }
            continue;
        }
        buf.extend_from_slice(&chunk);
    }
    if seen > limit {
        return Err(Oversized(seen));
    }
    Ok(Bytes::from(buf))
}

fn too_large(seen: usize, limit: usize) -> Response {
    let mut res = fail(
        413,
        &format!(
            "request body too large: more than {limit} bytes (read {seen}); stage big files \
             through /playwright/upload"
        ),
    );
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// Traces a request refused at the entry (PROTOCOL.md §2.1: entry failures are recorded too).
fn trace_entry(s: &Shared, id: Option<TaskId>, method: Option<&str>, body: Value, msg: &str) {
    let method = method.unwrap_or("unknown");
    let receipt = Receipt::failure(
        method,
        ErrorCode::InvalidArgument,
        msg.to_string(),
        Some(json!({"entry": true})),
        false,
        0.0,
    );
    s.executor
        .engine()
        .trace(id, method, &[], body, &receipt, None);
}

/// `POST /playwright/command`.
async fn command(State(s): State<Arc<Shared>>, method: Method, body: Body) -> Response {
    if method != Method::POST {
        trace_entry(&s, None, None, Value::Null, envelope::NOT_POST);
        return fail(200, envelope::NOT_POST);
    }
    let bytes = match read_body(body, s.opts.max_body_bytes).await {
        Ok(b) => b,
        Err(Oversized(seen)) => {
            trace_entry(&s, None, None, Value::Null, "request body too large");
            return too_large(seen, s.opts.max_body_bytes);
        }
    };
    let req = match envelope::parse_request(&bytes) {
        Ok(r) => r,
        Err(e) => {
            trace_entry(&s, None, e.method.as_deref(), e.body, &e.msg);
            return fail(200, &e.msg);
        }
    };
    let receipt = s
        .executor
        .execute(req.id.map(TaskId), &req.method, req.params)
        .await;
    if s.opts.exit_on_shutdown && req.method == "shutdown" && receipt.ok {
        s.stop.notify_one();
    }
    let (status, body) = envelope::response(receipt, req.compact, req.diagnostics);
    json_response(status, &body)
}

/// A read-only view: one command run without a task, answered as its envelope.
async fn view(s: &Shared, method: &Method, command: &str) -> Response {
    if method != Method::GET {
        return fail(200, "this endpoint only answers GET");
    }
    let receipt = s.executor.execute(None, command, json!({})).await;
    let (status, body) = envelope::response(receipt, false, false);
    json_response(status, &body)
}

/// `GET /playwright/methods` (= `list_methods`).
async fn methods(State(s): State<Arc<Shared>>, method: Method) -> Response {
    view(&s, &method, "list_methods").await
}

/// `GET /playwright/config` (= `get_config` without a task: no `browser` block).
async fn config(State(s): State<Arc<Shared>>, method: Method) -> Response {
    view(&s, &method, "get_config").await
}

/// `GET /playwright/tasks` (= `list_tasks`).
async fn tasks(State(s): State<Arc<Shared>>, method: Method) -> Response {
    view(&s, &method, "list_tasks").await
}

/// `GET /playwright/health`: `{name, pid, startedAt, port}` — what clients compare to tell that
/// another instance now owns the port.
async fn health(State(s): State<Arc<Shared>>, method: Method) -> Response {
    if method != Method::GET {
        return fail(200, "this endpoint only answers GET");
    }
    let started = s
        .executor
        .engine()
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    json_response(
        200,
        &envelope::success(json!({
            "name": "playwright-server",
            "engine": "moonpilot",
            "version": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(),
            "startedAt": crate::trace::iso_utc(started),
            "port": s.port,
            "tasks": s.executor.engine().tasks().len(),
        })),
    )
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    fail(
        404,
        &format!(
            "no such endpoint: {method} {}; commands go to POST /playwright/command",
            uri.path()
        ),
    )
}

/// `/playwright/upload`: stage (POST), list (GET), delete (DELETE `?name=`).
async fn upload(
    State(s): State<Arc<Shared>>,
    method: Method,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let dir = s.executor.engine().config.upload_dir.clone();
    match method {
        Method::GET => {
            let mut data = staging::list(&dir).await;
            data["maxBytes"] = json!(s.opts.upload_max_bytes);
            data["enabled"] = json!(true);
            data["overwrite"] = json!(s.opts.upload_overwrite);
            json_response(200, &envelope::success(data))
        }
        Method::DELETE => {
            let name = q.get("name").or_else(|| q.get("filename"));
            match staging::delete(&dir, name.map_or("", String::as_str)).await {
                Ok(data) => json_response(200, &envelope::success(data)),
                Err(e) => fail(200, &format!("delete failed: {}", e.msg)),
            }
        }
        Method::POST => stage(&s, &dir, &q, &headers, body).await,
        other => fail(
            200,
            &format!("the upload endpoint answers POST, GET and DELETE, not {other}"),
        ),
    }
}

/// One file to stage, as the request carried it.
struct Incoming {
    bytes: Vec<u8>,
    filename: Option<String>,
    content_type: Option<String>,
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A header value that clients percent-encode to carry non-ASCII names (`%E6%8A%A5.pdf`);
/// left as it is when it does not decode to UTF-8.
fn percent_decoded(value: &str) -> String {
    percent_encoding::percent_decode_str(value)
        .decode_utf8()
        .map_or_else(|_| value.to_string(), |s| s.into_owned())
}

/// The file of a multipart body: the field `?field=` (default `file`), else any field with a
/// file name.
async fn from_multipart(bytes: Bytes, boundary: String, field: &str) -> Result<Incoming, String> {
    let stream = futures::stream::once(async move { Ok::<Bytes, std::convert::Infallible>(bytes) });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut fallback: Option<Incoming> = None;
    loop {
        let next = form
            .next_field()
            .await
            .map_err(|e| format!("malformed multipart body: {e}"))?;
        let Some(f) = next else {
            break;
        };
        let named = f.name() == Some(field);
        let has_file = f.file_name().is_some();
        let filename = f.file_name().map(str::to_string);
        let content_type = f.content_type().map(|m| m.to_string());
        if !named && (!has_file || fallback.is_some()) {
            continue;
        }
        let data = f
            .bytes()
            .await
            .map_err(|e| format!("malformed multipart body: {e}"))?;
        let incoming = Incoming {
            bytes: data.to_vec(),
            filename,
            content_type,
        };
        if named {
            return Ok(incoming);
        }
        fallback = Some(incoming);
    }
    fallback.ok_or_else(|| format!("no file in the multipart body (field `{field}`)"))
}

/// `{filename, contentBase64}` or `{filename, content}` (UTF-8 text, default `upload.txt`).
fn from_json(bytes: &[u8]) -> Result<Incoming, String> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("request body is not valid JSON: {e}"))?;
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let content_type = text("contentType");
    if let Some(b64) = v.get("contentBase64").and_then(Value::as_str) {
        let bytes = staging::decode_inline(b64).map_err(|e| e.msg)?;
        return Ok(Incoming {
            bytes,
            filename: text("filename"),
            content_type,
        });
    }
    if let Some(content) = v.get("content").and_then(Value::as_str) {
        return Ok(Incoming {
            bytes: content.as_bytes().to_vec(),
            filename: text("filename").or_else(|| Some("upload.txt".into())),
            content_type: content_type.or_else(|| Some("text/plain".into())),
        });
    }
    Err("a JSON upload needs `contentBase64` (or `content`, UTF-8 text) and `filename`".into())
}

/// POST: reads the body (bounded), takes the file out of it and stages it.
async fn stage(
    s: &Shared,
    dir: &Path,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let max = s.opts.upload_max_bytes;
    // Room for the encoding (base64 is 4/3, multipart adds its framing).
    let limit = if max == 0 {
        DRAIN_MAX
    } else {
        usize::try_from(max.saturating_mul(4) / 3 + 1024 * 1024).unwrap_or(DRAIN_MAX)
    };
    let bytes = match read_body(body, limit).await {
        Ok(b) => b,
        Err(Oversized(seen)) => return too_large(seen, limit),
    };
    let content_type = header_text(headers, header::CONTENT_TYPE.as_str());
    let kind = content_type
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let given_name = q.get("filename").filter(|n| !n.is_empty()).cloned();
    let incoming = if kind.starts_with("multipart/form-data") {
        match multer::parse_boundary(content_type.as_deref().unwrap_or_default()) {
            Ok(boundary) => {
                let field = q.get("field").map_or("file", String::as_str);
                from_multipart(bytes, boundary, field).await
            }
            Err(e) => Err(format!("malformed multipart content type: {e}")),
        }
    } else if kind.starts_with("application/json") {
        from_json(&bytes)
    } else if bytes.is_empty() {
        Err("empty body: send the file's bytes (name it with ?filename=)".into())
    } else {
        Ok(Incoming {
            bytes: bytes.to_vec(),
            filename: q
                .get("name")
                .filter(|n| !n.is_empty())
                .cloned()
                .or_else(|| header_text(headers, "x-filename").map(|n| percent_decoded(&n))),
            content_type: content_type.clone(),
        })
    };
    let mut incoming = match incoming {
        Ok(i) => i,
        Err(msg) => return fail(200, &format!("upload failed: {msg}")),
    };
    if given_name.is_some() {
        incoming.filename = given_name;
    }
    if max > 0 && incoming.bytes.len() as u64 > max {
        return fail(
            413,
            &format!(
                "upload failed: {} bytes, more than the {max} a staged file may have",
                incoming.bytes.len()
            ),
        );
    }
    let staged = staging::stage_as(
        dir,
        &incoming.bytes,
        incoming.filename.as_deref(),
        incoming.content_type.as_deref(),
        s.opts.upload_overwrite,
    )
    .await;
    match staged {
        Ok((path, mut info)) => {
            info["path"] = json!(path.display().to_string());
            let trace_dir = s.executor.engine().config.trace_dir.clone();
            staging::log_upload(trace_dir.as_deref(), &info).await;
            json_response(200, &envelope::success(info))
        }
        Err(e) => fail(200, &format!("upload failed: {}", e.msg)),
    }
}

/// A `/data` path's file under `root`: plain components only (no `..`, no root, no
/// backslashes), else `None`.
fn data_path(root: &Path, rel: &str) -> Option<PathBuf> {
    if rel.is_empty() || rel.contains('\\') || rel.contains('\0') {
        return None;
    }
    let p = Path::new(rel);
    if !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(p))
}

fn content_type_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "pdf" => "application/pdf",
        "txt" | "log" => "text/plain; charset=utf-8",
        "json" => "application/json",
        // Anything else (page HTML among it) is bytes, never rendered as a page of this origin.
        _ => "application/octet-stream",
    }
}

/// `GET /data/<task>/<file>`: an evidence file of the data directory.
async fn data_file(
    State(s): State<Arc<Shared>>,
    method: Method,
    axum::extract::Path(rel): axum::extract::Path<String>,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return fail(200, "/data only answers GET");
    }
    let root = s.executor.engine().config.data_dir.clone();
    let Some(path) = data_path(&root, &rel) else {
        return fail(404, &format!("no such file: /data/{rel}"));
    };
    let is_file = |path: PathBuf| async move {
        tokio::fs::metadata(&path)
            .await
            .map(|m| m.is_file())
            .unwrap_or(false)
    };
    if !is_file(path.clone()).await {
        // A receipt names its files at once and the task writes them in the background (the
        // executor's evidence jobs, each bounded): a client that asks straight away waits for
        // them instead of getting a 404.
        let task = rel
            .split('/')
            .next()
            .and_then(|t| t.parse::<u64>().ok())
            .and_then(|id| s.executor.engine().task(TaskId(id)));
        if let Some(task) = task.filter(|t| t.evidence_pending()) {
            let _ = tokio::time::timeout(EVIDENCE_WAIT, task.evidence_settled()).await;
        }
        if !is_file(path.clone()).await {
            return fail(404, &format!("no such file: /data/{rel}"));
        }
    }
    file_answer(&path, &format!("/data/{rel}")).await
}

/// `GET /downloads/<task>/<file>`: a file a task's page downloaded (a receipt's `downloads`
/// name them); one still downloading is waited for, a bounded time.
async fn download_file(
    State(s): State<Arc<Shared>>,
    method: Method,
    axum::extract::Path(rel): axum::extract::Path<String>,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return fail(200, "/downloads only answers GET");
    }
    let root = s.executor.engine().config.download_dir.clone();
    // The browser's own directory of files in progress is not served.
    let path =
        data_path(&root, &rel).filter(|_| !rel.starts_with(crate::browser::downloads::INCOMING));
    let Some(path) = path else {
        return fail(404, &format!("no such file: /downloads/{rel}"));
    };
    let done =
        |path: PathBuf| async move { tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) };
    if !done(path.clone()).await {
        let task = rel
            .split('/')
            .next()
            .and_then(|t| t.parse::<u64>().ok())
            .and_then(|id| s.executor.engine().task(TaskId(id)));
        if let Some(task) = task {
            task.downloads_settled(0, DOWNLOAD_WAIT).await;
        }
        if !done(path.clone()).await {
            return fail(404, &format!("no such file: /downloads/{rel}"));
        }
    }
    file_answer(&path, &format!("/downloads/{rel}")).await
}

/// A file of the state directory as an answer (its type by its extension, never sniffed).
async fn file_answer(path: &Path, shown: &str) -> Response {
    let bytes = tokio::fs::read(path).await;
    match bytes {
        Ok(bytes) => {
            let mut res = Response::new(Body::from(bytes));
            let h = res.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type_of(path)),
            );
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            res
        }
        Err(e) => fail(404, &format!("cannot read {shown}: {e}")),
    }
}

/// `GET /report/<task>`: the HTML report of one task's traced commands (`report.rs`), its
/// screenshots served from `/data`. A task with no traced command is 404.
async fn task_report(
    State(s): State<Arc<Shared>>,
    method: Method,
    axum::extract::Path(task): axum::extract::Path<String>,
) -> Response {
    use crate::report::{build, html, Images, Subject};
    if method != Method::GET && method != Method::HEAD {
        return fail(200, "/report only answers GET");
    }
    let engine = s.executor.engine();
    let Some(trace_dir) = engine.config.trace_dir.clone() else {
        return fail(404, "no report: the trace is off (--no-trace)");
    };
    if task.is_empty() || !task.bytes().all(|b| b.is_ascii_digit()) {
        return fail(404, &format!("no such task: `{task}`"));
    }
    // The task's latest commands are in the trace's queue still.
    engine.flush_trace().await;
    let subject = Subject::Task {
        task,
        trace_dir,
        data_dir: engine.config.data_dir.clone(),
    };
    // Reading the trace and the evidence is file work: off the runtime's threads.
    let page = tokio::task::spawn_blocking(move || {
        build(&subject, &Images::Served, None).map(|report| html(&report))
    })
    .await;
    match page {
        Ok(Ok(page)) => {
            let mut res = Response::new(Body::from(page));
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            res
        }
        Ok(Err(e)) => fail(404, &e.to_string()),
        Err(e) => fail(500, &format!("the report failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_bind_needs_a_token() {
        let mut o = ServeOptions::default();
        assert!(o.check().is_ok());
        o.bind = "0.0.0.0".parse().unwrap();
        assert!(o.check().unwrap_err().contains("without a token"));
        o.token = Some("  ".into());
        assert!(o.check().is_err());
        o.token = Some("t0k".into());
        assert!(o.check().is_ok());
        o.bind = "::1".parse().unwrap();
        o.token = None;
        assert!(o.check().is_ok());
    }

    #[test]
    fn data_paths_stay_under_the_root() {
        let root = Path::new("/state/data");
        assert_eq!(
            data_path(root, "12/3.png").unwrap(),
            Path::new("/state/data/12/3.png")
        );
        assert!(data_path(root, "../x").is_none());
        assert!(data_path(root, "12/../../x").is_none());
        assert!(data_path(root, "/etc/passwd").is_none());
        assert!(data_path(root, "12\\..\\x").is_none());
        assert!(data_path(root, "./12/3.png").is_none());
        assert_eq!(content_type_of(Path::new("a.PNG")), "image/png");
        assert_eq!(
            content_type_of(Path::new("a.html")),
            "application/octet-stream"
        );
    }

    #[test]
    fn header_names_may_be_percent_encoded() {
        assert_eq!(percent_decoded("%E6%8A%A5%E5%91%8A.pdf"), "报告.pdf");
        assert_eq!(percent_decoded("plain.txt"), "plain.txt");
        assert_eq!(percent_decoded("100%.txt"), "100%.txt");
        assert_eq!(percent_decoded("%FF.bin"), "%FF.bin");
    }

    #[test]
    fn tokens_are_compared_whole() {
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, "abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert!(authorized(&h, "abc"));
        assert!(!authorized(&h, "abcd"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert!(!authorized(&h, "abc"));
    }
}
