//! Where `--cdp-url` leads: the browser's DevTools WebSocket, from a `ws(s)://` URL as given
//! or from an `http://` endpoint's `/json/version`, with errors that say what to fix.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the `/json/version` exchange may take.
const ASK_BOUND: Duration = Duration::from_secs(5);
/// The most of a `/json/version` answer that is read.
const ANSWER_LIMIT: u64 = 1 << 20;

/// The browser WebSocket URL that `given` leads to, or why it leads nowhere (for people).
pub async fn websocket_url(given: &str) -> Result<String, String> {
    let url = url::Url::parse(given).map_err(|e| {
        format!("not a URL ({e}): use ws://HOST:PORT/devtools/browser/ID or http://HOST:PORT")
    })?;
    match url.scheme() {
        "ws" | "wss" => Ok(given.to_string()),
        "http" => ask_version(&url).await,
        "https" => Err(
            "https endpoints are not supported: pass the browser's wss:// URL \
                        (`webSocketDebuggerUrl` of its /json/version)"
                .into(),
        ),
        other => Err(format!(
            "`{other}:` URLs are not DevTools endpoints: use ws://HOST:PORT/devtools/browser/ID or \
             http://HOST:PORT"
        )),
    }
}

/// `webSocketDebuggerUrl` of `url`'s `/json/version` (the query string is kept, as a token is).
async fn ask_version(url: &url::Url) -> Result<String, String> {
    let host = url.host_str().ok_or("the URL has no host")?.to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let path = match url.query() {
        Some(q) => format!("/json/version?{q}"),
        None => "/json/version".to_string(),
    };
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| {
                format!(
                    "nothing answers at {host}:{port} ({e}): is the browser running with \
                     --remote-debugging-port={port}?"
                )
            })?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("sending to {host}:{port} failed: {e}"))?;
        // Read until the answer is whole: servers that keep the connection open despite
        // `Connection: close` are common.
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        while !is_complete(&answer) && (answer.len() as u64) < ANSWER_LIMIT {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("reading from {host}:{port} failed: {e}"))?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(ASK_BOUND, exchange)
        .await
        .map_err(|_| {
            format!(
                "{host}:{port} did not answer /json/version within {} s",
                ASK_BOUND.as_secs()
            )
        })??;
    let version = format!("http://{host}:{port}/json/version");
    let (status, body) = parse_response(&answer)
        .ok_or_else(|| format!("{version} did not answer HTTP: not a DevTools endpoint"))?;
    match status {
        200 => {}
        401 | 403 => {
            return Err(format!(
                "{version} refused the request (HTTP {status}): the endpoint wants a token, e.g. \
                 http://{host}:{port}?token=…"
            ))
        }
        _ => {
            return Err(format!(
                "{version} answered HTTP {status}: not a Chrome DevTools endpoint (a browser \
                 started with --remote-debugging-port answers there)"
            ))
        }
    }
    let ws = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("webSocketDebuggerUrl")?.as_str().map(str::to_string))
        .ok_or_else(|| {
            format!("{version} has no `webSocketDebuggerUrl`: not a Chrome DevTools endpoint")
        })?;
    Ok(with_query(&ws, url.query()))
}

/// `ws` with the query string `query` when it has none of its own (endpoints that take a token
/// in the query string answer a WebSocket URL without it).
fn with_query(ws: &str, query: Option<&str>) -> String {
    match query {
        Some(q) if !ws.contains('?') && !q.is_empty() => format!("{ws}?{q}"),
        _ => ws.to_string(),
    }
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
    fn other_schemes_say_what_to_pass() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let e = rt.block_on(websocket_url("ftp://x")).unwrap_err();
        assert!(e.contains("ws://HOST:PORT"), "{e}");
        let e = rt.block_on(websocket_url("https://x")).unwrap_err();
        assert!(e.contains("wss://"), "{e}");
        assert_eq!(
            rt.block_on(websocket_url("ws://127.0.0.1:9222/devtools/browser/a")),
            Ok("ws://127.0.0.1:9222/devtools/browser/a".to_string())
        );
    }
}
