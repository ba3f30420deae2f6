//! Where `--cdp-url` leads: the browser's DevTools WebSocket, from a `ws(s)://` URL as given
//! or from an `http(s)://` endpoint's `/json/version`, with errors that say what to fix.
//!
//! Every URL in a message is shown through [`shown`]: a token in the query string is masked.

use std::sync::Arc;
use std::time::Duration;

use async_tungstenite::tungstenite;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How long the `/json/version` exchange may take.
const ASK_BOUND: Duration = Duration::from_secs(5);
/// The most of a `/json/version` answer that is read.
const ANSWER_LIMIT: u64 = 1 << 20;

/// `url` as messages and `get_config` show it: tokens, keys and passwords masked.
pub fn shown(url: &str) -> String {
    crate::redact::text(url).into_owned()
}

/// The browser WebSocket URL that `given` leads to, or why it leads nowhere (for people).
pub async fn websocket_url(given: &str) -> Result<String, String> {
    let url = url::Url::parse(given).map_err(|e| {
        format!("not a URL ({e}): use ws://HOST:PORT/devtools/browser/ID or http://HOST:PORT")
    })?;
    match url.scheme() {
        // Normalised: `ws://h:3000?token=T` asks for `?token=T` without a path, which
        // endpoints answer 400; `ws://h:3000/?token=T` is what was meant.
        "ws" | "wss" => Ok(url.to_string()),
        "http" | "https" => ask_version(&url).await,
        other => Err(format!(
            "`{other}:` URLs are not DevTools endpoints: use ws://HOST:PORT/devtools/browser/ID or \
             http://HOST:PORT"
        )),
    }
}

/// The host of `url` as a socket address takes it: an IPv6 address without its brackets.
pub fn host_of(url: &url::Url) -> Result<String, String> {
    match url.host() {
        Some(url::Host::Ipv6(a)) => Ok(a.to_string()),
        Some(url::Host::Ipv4(a)) => Ok(a.to_string()),
        Some(url::Host::Domain(d)) => Ok(d.to_string()),
        None => Err("the URL has no host".to_string()),
    }
}

/// `webSocketDebuggerUrl` of `url`'s `/json/version` (the query string is kept, as a token is).
async fn ask_version(url: &url::Url) -> Result<String, String> {
    let host = url.host_str().ok_or("the URL has no host")?.to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let hint_port = url.port().unwrap_or(9222);
    let path = match url.query() {
        Some(q) => format!("/json/version?{q}"),
        None => "/json/version".to_string(),
    };
    let version = shown(&format!("{}://{host}:{port}{path}", url.scheme()));
    let (status, body) = http_get(url, &path, ASK_BOUND)
        .await
        .map_err(|e| match e {
            Fetch::Refused(e) => format!(
                "nothing answers at {host}:{port} ({e}): is the browser running with \
                 --remote-debugging-port={hint_port}, or the endpoint started?"
            ),
            Fetch::Late => format!(
                "{host}:{port} did not answer /json/version within {} s",
                ASK_BOUND.as_secs()
            ),
            Fetch::Other(e) => e,
        })?
        .ok_or_else(|| format!("`{version}` did not answer HTTP: not a DevTools endpoint"))?;
    match status {
        200 => {}
        401 | 403 => {
            return Err(format!(
                "`{version}` refused the request (HTTP {status}{}): a wrong or missing token \
                 (browserless takes it as the `token` query parameter)",
                excerpt(&body).map(|b| format!(": {b}")).unwrap_or_default()
            ))
        }
        _ => {
            return Err(format!(
                "`{version}` answered HTTP {status}: not a Chrome DevTools endpoint (a browser \
                 started with --remote-debugging-port answers there)"
            ))
        }
    }
    let ws = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("webSocketDebuggerUrl")?.as_str().map(str::to_string))
        .ok_or_else(|| {
            format!("`{version}` has no `webSocketDebuggerUrl`: not a Chrome DevTools endpoint")
        })?;
    let ws = url::Url::parse(&ws)
        .map_err(|e| format!("`{version}` answered a WebSocket URL that is none ({e})"))?;
    Ok(with_query(as_asked(ws, url).as_ref(), url.query()))
}

/// The WebSocket URL an endpoint answered, reachable the way it was asked: an endpoint that
/// names its own loopback or wildcard bind address (browserless answers `ws://127.0.0.1:3000`)
/// is reached at the host and port asked, and one asked over TLS is spoken to over TLS.
fn as_asked(mut ws: url::Url, asked: &url::Url) -> url::Url {
    let local = matches!(
        ws.host_str(),
        Some("127.0.0.1" | "localhost" | "0.0.0.0" | "[::1]" | "[::]")
    );
    // Host or port: a container's published port (`-p 3001:3000`) differs from its own.
    if local
        && (ws.host_str() != asked.host_str()
            || ws.port_or_known_default() != asked.port_or_known_default())
    {
        let _ = ws.set_host(asked.host_str());
        let _ = ws.set_port(asked.port_or_known_default());
    }
    if asked.scheme() == "https" && ws.scheme() == "ws" {
        let _ = ws.set_scheme("wss");
    }
    ws
}

/// `ws` with the query string `query` when it has none of its own (endpoints that take a token
/// in the query string answer a WebSocket URL without it).
fn with_query(ws: &str, query: Option<&str>) -> String {
    match query {
        Some(q) if !ws.contains('?') && !q.is_empty() => format!("{ws}?{q}"),
        _ => ws.to_string(),
    }
}

/// Why an HTTP exchange got no answer.
pub enum Fetch {
    /// The connection was refused or the host is unknown.
    Refused(String),
    /// No whole answer within the bound.
    Late,
    /// Anything else (TLS, a broken connection).
    Other(String),
}

impl Fetch {
    /// What happened, for a message.
    pub fn said(&self) -> String {
        match self {
            Fetch::Refused(e) => format!("no connection ({e})"),
            Fetch::Late => "no whole answer in time".into(),
            Fetch::Other(e) => e.clone(),
        }
    }
}

/// `GET path` of `url`'s host over HTTP or HTTPS: the status and body, or `None` when what
/// answered is not HTTP.
async fn http_get(
    url: &url::Url,
    path: &str,
    bound: Duration,
) -> Result<Option<(u16, Vec<u8>)>, Fetch> {
    http_call(url, "GET", path, None, bound).await
}

/// `method path` of `url`'s host over HTTP or HTTPS, with a JSON `body` when given: the status
/// and body, or `None` when what answered is not HTTP.
pub async fn http_call(
    url: &url::Url,
    method: &str,
    path: &str,
    body: Option<&str>,
    bound: Duration,
) -> Result<Option<(u16, Vec<u8>)>, Fetch> {
    let host = host_of(url).map_err(Fetch::Other)?;
    let port = url.port_or_known_default().unwrap_or(80);
    let authority = url.host_str().unwrap_or_default();
    let content = match body {
        // Selenium Grid's `POST /session` wants the charset said.
        Some(b) => format!(
            "Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        ),
        None => "\r\n".to_string(),
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}:{port}\r\nAccept: application/json\r\nConnection: close\r\n{content}"
    );
    let tls = matches!(url.scheme(), "https" | "wss");
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| Fetch::Refused(e.to_string()))?;
        if tls {
            let connector = tls_connector().await.map_err(Fetch::Other)?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| Fetch::Other(format!("`{host}` is no TLS server name: {e}")))?;
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|e| Fetch::Other(format!("TLS with {host}:{port} failed: {e}")))?;
            exchange(stream, &request).await
        } else {
            exchange(tcp, &request).await
        }
        .map_err(|e| Fetch::Other(format!("talking to {host}:{port} failed: {e}")))
    };
    let answer = tokio::time::timeout(bound, exchange)
        .await
        .map_err(|_| Fetch::Late)??;
    Ok(parse_response(&answer))
}

/// Sends `request` and reads the answer until it is whole (servers that keep the connection
/// open despite `Connection: close` are common).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &str,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 8192];
    while !is_complete(&answer) && (answer.len() as u64) < ANSWER_LIMIT {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    Ok(answer)
}

/// A TLS client trusting the system's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured).
pub async fn tls_connector() -> Result<tokio_rustls::TlsConnector, String> {
    Ok(tokio_rustls::TlsConnector::from(tls_config().await?))
}

/// The TLS settings of [`tls_connector`] (the system's roots, loaded once).
pub async fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: tokio::sync::OnceCell<Arc<rustls::ClientConfig>> =
        tokio::sync::OnceCell::const_new();
    let config = CONFIG
        .get_or_try_init(|| async {
            // Reading the certificate files blocks.
            tokio::task::spawn_blocking(|| {
                let mut roots = rustls::RootCertStore::empty();
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    let _ = roots.add(cert);
                }
                if roots.is_empty() {
                    return Err(
                        "no trusted TLS roots on this machine (set SSL_CERT_FILE)".to_string()
                    );
                }
                Ok(Arc::new(
                    rustls::ClientConfig::builder()
                        .with_root_certificates(roots)
                        .with_no_client_auth(),
                ))
            })
            .await
            .map_err(|e| e.to_string())?
        })
        .await?;
    Ok(config.clone())
}

/// At most 120 characters of an answer's body, on one line.
fn excerpt(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    let mut cut: String = line.chars().take(120).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    Some(cut)
}

/// Why the WebSocket handshake with `shown` failed, and what to do about it.
pub fn explain(shown: &str, error: &tungstenite::Error) -> String {
    let target = url::Url::parse(&shown.replace("***", "x")).ok();
    let at = target
        .as_ref()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_else(|| shown.to_string());
    match error {
        tungstenite::Error::Http(response) => {
            let status = response.status().as_u16();
            let said = response
                .body()
                .as_deref()
                .and_then(excerpt)
                .map(|b| format!(" ({b})"))
                .unwrap_or_default();
            let fix = match status {
                401 | 403 => "a wrong or missing token (browserless takes it as the `token` query parameter)"
                    .to_string(),
                400 => "the path is not one the endpoint serves: browserless takes \
                        ws://HOST:PORT/chromium with its token, a plain Chromium \
                        ws://HOST:PORT/devtools/browser/ID (or pass http://HOST:PORT)"
                    .to_string(),
                404 => "no such path or browser id: pass http://HOST:PORT to ask /json/version \
                        for the current one, or ws://HOST:PORT/chromium with its token for browserless"
                    .to_string(),
                429 => "the endpoint's concurrency limit and its queue are both full \
                        (browserless CONCURRENT + QUEUED): retry later, or raise them"
                    .to_string(),
                s if s >= 500 => "the endpoint failed: see its log".to_string(),
                _ => "not a DevTools WebSocket".to_string(),
            };
            format!("`{shown}` answered HTTP {status}{said}: {fix}")
        }
        tungstenite::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!(
                "nothing listens at {at} ({e}): start the browser or the endpoint, or fix the port"
            )
        }
        tungstenite::Error::Io(e) if e.to_string().contains("lookup") => {
            format!("unknown host in `{shown}` ({e})")
        }
        // rustls reports through the stream's io::Error; reading the roots too.
        tungstenite::Error::Io(e)
            if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
                || e.to_string().contains("PEM") =>
        {
            format!(
                "TLS with {at} failed ({e}): is its certificate trusted (SSL_CERT_FILE names \
                 the roots to trust)?"
            )
        }
        tungstenite::Error::Io(e) => format!("connecting to {at} failed: {e}"),
        tungstenite::Error::Tls(e) => format!(
            "TLS with {at} failed ({e}): is it a wss:// endpoint, and is its certificate trusted \
             (SSL_CERT_FILE)?"
        ),
        tungstenite::Error::Protocol(e) => format!(
            "`{shown}` answered, but not as a DevTools WebSocket ({e}): pass the browser's \
             webSocketDebuggerUrl, or http://HOST:PORT"
        ),
        e => format!("`{shown}`: {e}"),
    }
}

/// Why no browser came within `wait`: the endpoint took the TCP connection (`reached`) and kept
/// the handshake waiting, as browserless does with connections past its CONCURRENT limit, or
/// nothing answered at all. Asks browserless's `/pressure` (for a second) to say how full it is.
pub async fn no_browser_within(
    url: &url::Url,
    shown: &str,
    wait: Duration,
    reached: bool,
) -> String {
    let secs = wait.as_secs_f64();
    if !reached {
        return format!(
            "`{shown}` took no connection within {secs} s: a host that drops packets, or a \
             firewall"
        );
    }
    let mut http = url.clone();
    let _ = http.set_scheme(if url.scheme() == "wss" {
        "https"
    } else {
        "http"
    });
    let path = match url.query() {
        Some(q) => format!("/pressure?{q}"),
        None => "/pressure".to_string(),
    };
    let pressure = match http_get(&http, &path, Duration::from_secs(1)).await {
        Ok(Some((200, body))) => serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            let p = v.get("pressure").unwrap_or(&v);
            Some(format!(
                " (its /pressure: running {}, queued {}, maxConcurrent {})",
                p.get("running")?,
                p.get("queued")?,
                p.get("maxConcurrent").unwrap_or(&Value::from("?"))
            ))
        }),
        _ => None,
    }
    .unwrap_or_default();
    format!(
        "`{shown}` accepted the connection but opened no browser within {secs} s{pressure}: \
         browserless queues connections past its CONCURRENT limit until a session ends; wait \
         longer with --cdp-wait SECS, raise CONCURRENT, or end the other sessions"
    )
}

/// Whether `raw` holds a whole HTTP response: its head, and all of a body whose length is known
/// (`Content-Length`, or the last chunk of a chunked one).
fn is_complete(raw: &[u8]) -> bool {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let body = &raw[split + 4..];
    for line in head.split("\r\n") {
        if let Some(n) = line.strip_prefix("content-length:") {
            return n.trim().parse::<usize>().is_ok_and(|n| body.len() >= n);
        }
        if line.starts_with("transfer-encoding:") && line.contains("chunked") {
            return body.ends_with(b"0\r\n\r\n");
        }
    }
    false
}

/// The status and body of an HTTP/1.x response (chunked bodies decoded).
fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    if !status_line.starts_with("HTTP/") {
        return None;
    }
    let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let mut body = raw[split + 4..].to_vec();
    if chunked {
        body = dechunk(&body)?;
    }
    Some((status, body))
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_read_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain), Some((200, b"{}".to_vec())));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Some((200, b"{\"a\":1}".to_vec())));
        assert_eq!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n"), None);
        assert!(is_complete(plain) && is_complete(chunked));
        assert!(!is_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}"
        ));
    }

    #[test]
    fn a_token_in_the_query_string_follows_the_websocket_url() {
        assert_eq!(
            with_query("ws://h:3000/devtools/browser/x", Some("token=T")),
            "ws://h:3000/devtools/browser/x?token=T"
        );
        assert_eq!(
            with_query("ws://h/x?token=A", Some("token=T")),
            "ws://h/x?token=A"
        );
        assert_eq!(with_query("ws://h/x", None), "ws://h/x");
    }

    #[test]
    fn other_schemes_say_what_to_pass_and_websocket_urls_are_normalised() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let e = rt.block_on(websocket_url("ftp://x")).unwrap_err();
        assert!(e.contains("ws://HOST:PORT"), "{e}");
        assert_eq!(
            rt.block_on(websocket_url("ws://127.0.0.1:9222/devtools/browser/a")),
            Ok("ws://127.0.0.1:9222/devtools/browser/a".to_string())
        );
        // Without a path the request would ask for `?token=T`, which endpoints answer 400.
        assert_eq!(
            rt.block_on(websocket_url("ws://h:3000?token=T")),
            Ok("ws://h:3000/?token=T".to_string())
        );
        assert_eq!(
            rt.block_on(websocket_url("wss://h/chromium?token=T&timeout=5")),
            Ok("wss://h/chromium?token=T&timeout=5".to_string())
        );
    }

    #[test]
    fn an_answered_url_is_reached_the_way_it_was_asked() {
        let asked = url::Url::parse("https://fleet.example:8443/?token=T").expect("url");
        let answered = url::Url::parse("ws://127.0.0.1:3000").expect("url");
        assert_eq!(
            as_asked(answered, &asked).as_str(),
            "wss://fleet.example:8443/"
        );
        // A published port that differs from the container's own.
        let asked = url::Url::parse("http://127.0.0.1:3001?token=T").expect("url");
        let answered = url::Url::parse("ws://127.0.0.1:3000").expect("url");
        assert_eq!(as_asked(answered, &asked).as_str(), "ws://127.0.0.1:3001/");
        let asked = url::Url::parse("http://10.0.0.5:9222").expect("url");
        let answered = url::Url::parse("ws://10.0.0.5:9222/devtools/browser/x").expect("url");
        assert_eq!(
            as_asked(answered.clone(), &asked).as_str(),
            answered.as_str()
        );
    }

    #[test]
    fn handshake_failures_say_what_to_fix_without_the_token() {
        let shown = shown("ws://h:3000/chromium?token=SECRET");
        assert_eq!(shown, "ws://h:3000/chromium?token=***");
        let answered = |status: u16, body: &str| {
            let mut response = tungstenite::http::Response::new(Some(body.as_bytes().to_vec()));
            *response.status_mut() =
                tungstenite::http::StatusCode::from_u16(status).expect("status");
            explain(&shown, &tungstenite::Error::Http(Box::new(response)))
        };
        let e = answered(401, "Bad or missing authentication.");
        assert!(
            e.contains("HTTP 401 (Bad or missing authentication.)"),
            "{e}"
        );
        assert!(e.contains("token") && !e.contains("SECRET"), "{e}");
        assert!(answered(400, "").contains("/chromium"));
        assert!(answered(404, "Not Found").contains("no such path or browser id"));
        assert!(answered(429, "Too many requests").contains("CONCURRENT + QUEUED"));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = explain(&shown, &tungstenite::Error::Io(refused));
        assert!(e.starts_with("nothing listens at h:3000"), "{e}");
        let v6 = url::Url::parse("ws://[::1]:9222/devtools/browser/x").expect("url");
        assert_eq!(host_of(&v6), Ok("::1".to_string()));
    }
}
