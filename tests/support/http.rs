//! A tiny blocking HTTP/1.1 client for the server tests and the serve bench: one connection per
//! request (`Connection: close`), any method, raw bytes in and out — so tests can send what a
//! real client library would refuse to (empty bodies, broken JSON, odd methods).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// One answer.
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body (chunked encoding undone).
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON; panics (a failed test) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}), status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&raw[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < end + 2 + size {
            return out;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
}

/// Sends one request and reads the whole answer (a 120 s bound on each read). `Host` is the
/// address unless `headers` has one.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("the server accepts connections");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    // `Host` is the address, unless the test sends one of its own (a DNS-rebinding page's).
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A server that answers early (a body too large) may stop reading: that is not an error here.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

/// `POST /playwright/command` with a JSON body.
pub fn command(addr: SocketAddr, body: &Value) -> Reply {
    request(
        addr,
        "POST",
        "/playwright/command",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

/// POSTs one MCP message to `/mcp` (Streamable HTTP, protocol 2025-11-25) in `session`, with
/// `token` as the bearer when given.
pub fn mcp_post(
    addr: SocketAddr,
    session: Option<&str>,
    token: Option<&str>,
    body: &Value,
) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    if let Some(a) = auth.as_deref() {
        headers.push(("Authorization", a));
    }
    request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes())
}

/// The JSON-RPC messages of an MCP reply: its event stream's `data:` lines, or its JSON body.
pub fn mcp_messages(reply: &Reply) -> Vec<Value> {
    let raw = String::from_utf8_lossy(&reply.body).to_string();
    if reply
        .header("content-type")
        .is_some_and(|c| c.contains("text/event-stream"))
    {
        raw.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    } else {
        serde_json::from_str(&raw).into_iter().collect()
    }
}

/// The address a `moonpilot serve` (or `repl --serve`) prints in its banner on `stream` (20 s at
/// most).
pub fn banner_addr(stream: impl std::io::Read + Send + 'static) -> SocketAddr {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("http://").nth(1) {
                let addr = rest.split(' ').next().unwrap_or_default().to_string();
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the server prints where it listens");
    addr.parse().unwrap()
}
