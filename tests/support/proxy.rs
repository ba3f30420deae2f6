//! A forward HTTP proxy on loopback that records what passes through it (issue 40's per-task
//! proxies): plain requests (`GET http://host/path`) are sent on to their origin with
//! `Connection: close`, `CONNECT` is tunnelled. With credentials it answers 407 until a
//! request carries the right `Proxy-Authorization: Basic …`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `CONNECT`…
    pub method: String,
    /// The request target (`http://127.0.0.1:1234/basic.html`, `host:443`).
    pub target: String,
    /// The `Proxy-Authorization` it carried, decoded (`user:password`).
    pub auth: Option<String>,
    /// Its `User-Agent`.
    pub user_agent: Option<String>,
    /// Its `Accept-Language`.
    pub accept_language: Option<String>,
    /// Whether it was let through.
    pub passed: bool,
}

/// A running proxy.
pub struct Proxy {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Proxy {
    /// Starts a proxy on the harness's runtime; with `credentials` (`user:password`) it asks
    /// for them.
    pub fn start(credentials: Option<&str>) -> Proxy {
        let runtime = &crate::support::harness::harness().runtime;
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a port for the proxy");
        let addr = listener.local_addr().expect("its address");
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let want = credentials.map(str::to_string);
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, want) = (log.clone(), want.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &log, want.as_deref()).await;
                });
            }
        });
        Proxy { addr, seen }
    }

    /// Its URL, with `userinfo@` when given.
    pub fn url(&self, userinfo: Option<&str>) -> String {
        match userinfo {
            Some(u) => format!("http://{u}@{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }

    /// What it saw so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

fn basic(value: &str) -> Option<String> {
    let b64 = value.strip_prefix("Basic ")?;
    String::from_utf8(moonpilot::encoding::decode_base64(b64.trim())?).ok()
}

async fn serve(
    mut client: TcpStream,
    log: &Mutex<Vec<Seen>>,
    want: Option<&str>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut first = head.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (
        first.next().unwrap_or_default().to_string(),
        first.next().unwrap_or_default().to_string(),
    );
    let auth = header(&head, "Proxy-Authorization").and_then(|v| basic(&v));
    let passed = want.is_none_or(|w| auth.as_deref() == Some(w));
    if let Ok(mut l) = log.lock() {
        l.push(Seen {
            method: method.clone(),
            target: target.clone(),
            auth: auth.clone(),
            user_agent: header(&head, "User-Agent"),
            accept_language: header(&head, "Accept-Language"),
            passed,
        });
    }
    if !passed {
        client
            .write_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"moonpilot-test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await?;
        return Ok(());
    }
    if method == "CONNECT" {
        let mut upstream = TcpStream::connect(&target).await?;
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return Ok(());
    }
    // `GET http://host:port/path HTTP/1.1` → `GET /path`, to host:port, closed after.
    let rest = target.strip_prefix("http://").unwrap_or(&target);
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    for line in head.lines().skip(1) {
        let name = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if line.is_empty() || name.starts_with("proxy-") || name == "connection" {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut upstream = TcpStream::connect(host).await?;
    upstream.write_all(out.as_bytes()).await?;
    upstream.write_all(&buf[end..]).await?;
    // A body longer than what came with the head (uploads) is not needed by these tests. The
    // fixture server keeps connections alive: the response is read by its length, and the
    // client's connection closed after it.
    let mut response = Vec::new();
    let head_end = loop {
        if let Some(p) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = upstream.read(&mut chunk).await?;
        if n == 0 {
            client.write_all(&response).await?;
            return Ok(());
        }
        response.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&response[..head_end]).into_owned();
    let length: usize = header(&head, "Content-Length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while response.len() < head_end + length {
        let n = upstream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
    }
    let mut out = String::new();
    for line in head.lines() {
        if line.is_empty() || line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    client.write_all(out.as_bytes()).await?;
    client.write_all(&response[head_end..]).await?;
    client.shutdown().await?;
    Ok(())
}
