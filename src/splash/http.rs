//! The Splash HTTP server: its own listener beside the seed protocol's, the same executor.
//! GET query arguments and POST `application/json` bodies (`application/javascript` for
//! `js_source`); `/_ping`; slots and a bounded queue.
//!
//! Every request first passes the guard: `Host` and `Origin` by the rule of every HTTP door
//! (`door::http`: loopback, the bound address, `--allowed-hosts` / `--allowed-origins`; 403 in
//! Splash's error shape; a GET runs a script, so one from another site's page is refused even
//! as a navigation), then the token, then a POST's content type: `application/json` or
//! `application/javascript`, neither of which a web page can send without a CORS preflight
//! (415). The port answers no CORS headers.

use std::future::{Future, IntoFuture};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use serde_json::{json, Map, Value};

use super::args::{self, Endpoint};
use super::run::{self, SplashError};
use super::SplashOptions;
use crate::door::http::{self as guard, Refusal};
use crate::Executor;

/// The largest request body Splash's API takes (a script, its arguments).
const MAX_BODY: usize = 8 * 1024 * 1024;

struct Shared {
    executor: Executor,
    opts: SplashOptions,
    slots: tokio::sync::Semaphore,
    /// Requests waiting for a slot or holding one.
    admitted: AtomicUsize,
    /// What `save_args` kept.
    saved: std::sync::Mutex<args::SavedArgs>,
    /// Which hosts and origins are answered, for the listener's address.
    door: guard::Guard,
}

/// Serves Splash's API on `listener` until `stop` resolves. The engine is its host's.
pub async fn serve(
    executor: Executor,
    listener: tokio::net::TcpListener,
    opts: SplashOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Every command of every request, and of its script, is held to the Splash port's rules.
    let executor = executor.through(crate::door::Trust::splash(&opts.schemes));
    let door = guard::Guard::new(listener.local_addr()?.ip(), &opts.allowed)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let shared = Arc::new(Shared {
        door,
        executor,
        slots: tokio::sync::Semaphore::new(opts.slots.max(1)),
        opts,
        admitted: AtomicUsize::new(0),
        saved: Default::default(),
    });
    let app = Router::new()
        .route("/_ping", any(ping))
        .fallback(any(endpoint))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared);
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .into_future()
        .await
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut res = Response::new(Body::from(serde_json::to_vec(body).unwrap_or_default()));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn error_response(e: &SplashError) -> Response {
    json_response(e.status(), &e.body())
}

/// A refusal of the guard in Splash's error shape (`{error, type, description}`).
fn refused(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::ContentType(given) => unsupported(given.as_deref().unwrap_or("")),
        Refusal::Host(_) | Refusal::Origin(_) | Refusal::Site(_) => json_response(
            refusal.status(),
            &json!({"error": refusal.status(), "type": "Forbidden",
            "description": refusal.message()}),
        ),
    }
}

/// Splash's 415 for a POST body of another content type.
fn unsupported(received: &str) -> Response {
    json_response(
        415,
        &json!({"error": 415, "type": "UnsupportedContentType",
        "description": "Request Content-Type is not supported",
        "info": {"supported": ["application/json", "application/javascript"], "received": received}}),
    )
}

/// A POST's body: `application/json` or `application/javascript` (neither can come from a
/// web page without a CORS preflight); without a content type, only an empty body (the
/// arguments are in the query).
fn post_body(headers: &HeaderMap) -> Result<(), Refusal> {
    let given = headers.get(header::CONTENT_TYPE).map(|v| {
        v.to_str()
            .map_or_else(|_| "\u{fffd}".to_string(), str::to_string)
    });
    let empty = headers
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() == b"0")
        || (!headers.contains_key(header::CONTENT_LENGTH)
            && !headers.contains_key(header::TRANSFER_ENCODING));
    match given.as_deref() {
        None if empty => Ok(()),
        Some(ct) if guard::essence(ct) == "application/javascript" => Ok(()),
        other => guard::json_body(other),
    }
}

/// `Host` and `Origin` (the rule of every door), then, with a token, the token:
/// `Authorization: Bearer T`, or HTTP basic auth whose password is T (what scrapy-splash sends
/// with `SPLASH_USER` / `SPLASH_PASS`); then a POST's content type.
async fn guard(
    State(s): State<Arc<Shared>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let sent = guard::Sent::of_request(&req);
    // Its GETs run scripts: a navigation from another site's page is refused like the rest.
    if let Err(refusal) = s.door.admit(&sent, false) {
        return refused(&refusal);
    }
    if let Some(token) = s.opts.token.as_deref() {
        if !token_given(req.headers(), token) {
            let mut res = json_response(
                401,
                &json!({"error": 401, "type": "Unauthorized",
                "description": "this server needs its token: Authorization: Bearer T, or basic auth with T as the password"}),
            );
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"moonpilot\""),
            );
            return res;
        }
    }
    if req.method() == Method::POST {
        if let Err(refusal) = post_body(req.headers()) {
            return refused(&refusal);
        }
    }
    next.run(req).await
}

/// Whether the request carries `token`: as a bearer, or as basic auth's password.
fn token_given(headers: &HeaderMap, token: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if let Some(b) = given.strip_prefix("Bearer ") {
        same_secret(b.trim().as_bytes(), token.as_bytes())
    } else if let Some(b) = given.strip_prefix("Basic ") {
        crate::encoding::decode_base64(b.trim())
            .and_then(|d| String::from_utf8(d).ok())
            .and_then(|up| {
                up.split_once(':')
                    .map(|(_, p)| same_secret(p.as_bytes(), token.as_bytes()))
            })
            .unwrap_or(false)
    } else {
        false
    }
}

/// Whether `given` is `token`, in a time that does not tell how much of it matched.
fn same_secret(given: &[u8], token: &[u8]) -> bool {
    let mut diff = given.len() ^ token.len();
    for (i, t) in token.iter().enumerate() {
        diff |= usize::from(given.get(i).copied().unwrap_or(0) ^ t);
    }
    diff == 0
}

/// `/_ping`: Splash's liveness answer.
async fn ping(State(s): State<Arc<Shared>>) -> Response {
    json_response(
        200,
        &json!({"status": "ok", "maxrss": 0, "engine": "moonpilot",
                "slots": s.opts.slots, "busy": s.opts.slots.saturating_sub(s.slots.available_permits())}),
    )
}

/// Counts a request in while it waits for or holds a slot.
struct Admitted<'a>(&'a AtomicUsize);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn endpoint(
    State(s): State<Arc<Shared>>,
    method: Method,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    req: Request,
) -> Response {
    let Some(endpoint) = Endpoint::of_path(req.uri().path()) else {
        let path = req.uri().path().to_string();
        return json_response(
            404,
            &json!({"error": 404, "type": "NotFound",
            "description": format!("no Splash endpoint at {path}")}),
        );
    };
    let mut first: Map<String, Value> = Map::new();
    for (k, v) in query {
        first.entry(k).or_insert(Value::String(v));
    }
    let body = if method == Method::POST {
        let ct = guard::essence(
            headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        );
        let bytes: Bytes = match axum::body::to_bytes(req.into_body(), MAX_BODY).await {
            Ok(b) => b,
            Err(_) => {
                return json_response(
                    413,
                    &json!({"error": 413, "type": "PayloadTooLarge",
                    "description": format!("the body is over {MAX_BODY} bytes")}),
                )
            }
        };
        if ct == "application/json" {
            Some(bytes)
        } else if ct == "application/javascript" {
            first.insert(
                "js_source".into(),
                Value::String(String::from_utf8_lossy(&bytes).into()),
            );
            None
        } else if bytes.is_empty() {
            None
        } else {
            return unsupported(&ct);
        }
    } else {
        None
    };
    let mut merged = match args::merge(first, body.as_deref()) {
        Ok(m) => m,
        Err(e) => return error_response(&e),
    };
    // `load_args` first (a 498 tells the client to send the values again), then `save_args`.
    let saved_header = {
        let mut saved = match s.saved.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        match saved
            .load(&mut merged)
            .and_then(|()| saved.save(&mut merged))
        {
            Ok(h) => h,
            Err(e) => return error_response(&e),
        }
    };
    let checked = match args::check(endpoint, merged, &s.opts) {
        Ok(c) => c,
        Err(e) => return error_response(&e),
    };
    // Admission: the slots plus a bounded queue.
    if s.admitted.fetch_add(1, Ordering::SeqCst) >= s.opts.slots + s.opts.queue {
        s.admitted.fetch_sub(1, Ordering::SeqCst);
        return error_response(&SplashError::Busy);
    }
    let _admitted = Admitted(&s.admitted);
    let Ok(_slot) = s.slots.acquire().await else {
        return error_response(&SplashError::Busy);
    };
    let mut res = answer(run::run(&s.executor, checked).await);
    if let Some(v) = saved_header.and_then(|h: String| HeaderValue::from_str(&h).ok()) {
        res.headers_mut().insert("X-Splash-Saved-Arguments", v);
    }
    res
}

fn answer(ran: Result<run::Answer, SplashError>) -> Response {
    match ran {
        Ok(a) => {
            let mut res = Response::new(Body::from(a.body));
            *res.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
            if let Ok(v) = HeaderValue::from_str(&a.content_type) {
                res.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            for (k, v) in a.headers {
                if let (Ok(k), Ok(v)) =
                    (HeaderName::try_from(k.as_str()), HeaderValue::from_str(&v))
                {
                    res.headers_mut().insert(k, v);
                }
            }
            res
        }
        Err(e) => error_response(&e),
    }
}
