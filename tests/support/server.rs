//! The fixture server: serves `tests/fixtures/` on two loopback origins that are different
//! *sites* (`http://127.0.0.1:A` and `http://localhost:B`), so a frame of one inside a page of
//! the other is out-of-process, as on real sites.
//!
//! Paths are confined to the fixture directory. Scripted routes put timing in the server's hands:
//! `/slow?ms=N` (`/slow-text?ms=N`: `slow done` as text/plain), `/redirect?to=URL`, `/status/N` (204 and 304 without a body), `/post` (counts
//! POSTs), `/count?key=K` (counts POSTs per key), `/guarded?key=K` (counts GETs
//! per key with and without `X-Task: yes`), `/echo` (the request's headers and cookies
//! as JSON), `/echo-post` (a page showing the request's method and body), `/set-cookie?name=N&value=V` (answers with that `Set-Cookie`), `/auth` (basic auth:
//! 401 with `WWW-Authenticate` unless `user:secret` comes; `/auth-net` the same for `net:pw`), `/cookie-pixel.png`
//! (pixel.png only with the cookie `pass=1`). In served HTML the placeholders `{{A}}` and
//! `{{B}}` become the two origins.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The two running origins.
pub struct Fixtures {
    /// `http://127.0.0.1:PORT`
    pub a: String,
    /// `http://localhost:PORT`
    pub b: String,
    /// POST requests seen on `/post` (the side-effect count of submit tests).
    #[allow(dead_code)]
    pub posts: Arc<AtomicU64>,
    counters: Counters,
}

/// POSTs to `/count?key=K`, per key, so a test's count is not disturbed by others.
type Counters = Arc<std::sync::Mutex<HashMap<String, u64>>>;

struct Shared {
    root: PathBuf,
    a: String,
    b: String,
    posts: Arc<AtomicU64>,
    counters: Counters,
}

impl Fixtures {
    /// How many POSTs `/count?key=KEY` has seen.
    #[allow(dead_code)]
    pub fn count(&self, key: &str) -> u64 {
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        counters.get(key).copied().unwrap_or(0)
    }

    /// Binds both listeners on the current runtime and serves until the runtime ends.
    pub async fn start() -> std::io::Result<Fixtures> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let la = TcpListener::bind("127.0.0.1:0").await?;
        let lb = TcpListener::bind("127.0.0.1:0").await?;
        let a = format!("http://127.0.0.1:{}", la.local_addr()?.port());
        let b = format!("http://localhost:{}", lb.local_addr()?.port());
        let posts = Arc::new(AtomicU64::new(0));
        let counters = Counters::default();
        let shared = Arc::new(Shared {
            root,
            a: a.clone(),
            b: b.clone(),
            posts: posts.clone(),
            counters: counters.clone(),
        });
        for listener in [la, lb] {
            let shared = shared.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        let _ = serve(stream, &shared).await;
                    });
                }
            });
        }
        Ok(Fixtures {
            a,
            b,
            posts,
            counters,
        })
    }
}

fn query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    // Keep-alive: answer requests on this connection until the client closes it.
    let mut buf = Vec::new();
    loop {
        let mut chunk = [0u8; 8192];
        let header_end = loop {
            if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos + 4;
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
        let content_length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
            })
            .unwrap_or(0);
        while buf.len() < header_end + content_length {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let sent: Vec<u8> = buf
            .drain(..header_end + content_length)
            .skip(header_end)
            .collect();
        let mut first = head.lines().next().unwrap_or_default().split_whitespace();
        let method = first.next().unwrap_or_default().to_string();
        let target = first.next().unwrap_or("/").to_string();
        let (path, q) = target.split_once('?').unwrap_or((target.as_str(), ""));
        let (status, ctype, mut body, extra) =
            route(&method, path, &query(q), &head, &sent, shared).await;
        // 204 and 304 responses have neither a body nor a length (RFC 9110 §8.6): bytes after
        // them would be read as the start of the next response on this connection.
        let length = if matches!(status, 204 | 304) {
            body.clear();
            String::new()
        } else {
            format!("Content-Length: {}\r\n", body.len())
        };
        let mut resp = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\n{length}Cache-Control: no-store\r\n{extra}\r\n"
        )
        .into_bytes();
        resp.extend_from_slice(&body);
        stream.write_all(&resp).await?;
    }
}

async fn route(
    method: &str,
    path: &str,
    q: &HashMap<String, String>,
    head: &str,
    sent: &[u8],
    shared: &Shared,
) -> (u16, &'static str, Vec<u8>, String) {
    let html = "text/html; charset=utf-8";
    match path {
        "/echo-post" => {
            let body = String::from_utf8_lossy(sent)
                .replace('&', "&amp;")
                .replace('<', "&lt;");
            (
                200,
                html,
                format!("<title>echo</title><p id=method>{method}</p><pre id=body>{body}</pre>")
                    .into_bytes(),
                String::new(),
            )
        }
        "/echo" => {
            let headers: serde_json::Map<String, serde_json::Value> = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().into()))
                .collect();
            let json = serde_json::Value::Object(headers).to_string();
            (200, "application/json", json.into_bytes(), String::new())
        }
        "/set-cookie" => {
            let name = q.get("name").cloned().unwrap_or_else(|| "c".into());
            let value = q.get("value").cloned().unwrap_or_else(|| "v".into());
            (
                200,
                html,
                format!("<title>cookie set</title><p>{name}</p>").into_bytes(),
                format!("Set-Cookie: {name}={value}; Path=/\r\n"),
            )
        }
        "/auth" | "/auth-net" => {
            // `user:secret` on /auth and `net:pw` on /auth-net, base64, each in a realm of its
            // own: Chromium's auth cache is the profile's, shared by the tests.
            let (want, realm) = if path == "/auth" {
                ("Basic dXNlcjpzZWNyZXQ=", "moonpilot")
            } else {
                ("Basic bmV0OnB3", "moonpilot-net")
            };
            let good = head.lines().any(|l| {
                l.split_once(':').is_some_and(|(k, v)| {
                    k.eq_ignore_ascii_case("authorization") && v.trim() == want
                })
            });
            if good {
                (
                    200,
                    html,
                    b"<title>private</title><p id=private>welcome user</p>".to_vec(),
                    String::new(),
                )
            } else {
                (
                    401,
                    html,
                    b"<title>401</title><p>who are you</p>".to_vec(),
                    format!("WWW-Authenticate: Basic realm=\"{realm}\"\r\n"),
                )
            }
        }
        "/cookie-pixel.png" => {
            // pixel.png, only to a request that carries the cookie `pass=1`.
            let passes = head.lines().any(|l| {
                l.split_once(':').is_some_and(|(k, v)| {
                    k.eq_ignore_ascii_case("cookie") && v.split(';').any(|c| c.trim() == "pass=1")
                })
            });
            if passes {
                let (_, _, bytes, _) = serve_file("/pixel.png", shared).await;
                (200, "image/png", bytes, String::new())
            } else {
                (403, "text/plain", b"no cookie".to_vec(), String::new())
            }
        }
        "/slow-text" => {
            // The issue 21 §3 answer: plain text with a Content-Length, after `ms`.
            let ms = q.get("ms").and_then(|m| m.parse().ok()).unwrap_or(1000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            (
                200,
                "text/plain; charset=utf-8",
                b"slow done".to_vec(),
                String::new(),
            )
        }
        "/slow" => {
            let ms = q.get("ms").and_then(|m| m.parse().ok()).unwrap_or(1000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            (
                200,
                html,
                format!("<title>slow</title><p>waited {ms} ms</p>").into_bytes(),
                String::new(),
            )
        }
        "/redirect" => {
            let to = q.get("to").cloned().unwrap_or_else(|| "/".into());
            (302, html, Vec::new(), format!("Location: {to}\r\n"))
        }
        "/post" => {
            if method == "POST" {
                shared.posts.fetch_add(1, Ordering::SeqCst);
            }
            let n = shared.posts.load(Ordering::SeqCst);
            (
                200,
                html,
                format!("<title>posted</title><p id=count>{n}</p>").into_bytes(),
                String::new(),
            )
        }
        "/guarded" => {
            // Counts hits per key with and without the header `X-Task: yes` (a site that needs
            // the task's header: issue 21 §5).
            let key = q.get("key").cloned().unwrap_or_default();
            let with = head.lines().any(|l| {
                l.split_once(':')
                    .is_some_and(|(k, v)| k.eq_ignore_ascii_case("x-task") && v.trim() == "yes")
            });
            let counter = format!("guarded-{}-{key}", if with { "with" } else { "without" });
            {
                let mut counters = shared.counters.lock().unwrap_or_else(|e| e.into_inner());
                *counters.entry(counter).or_default() += 1;
            }
            let body = if with {
                "<title>in</title>welcome"
            } else {
                "<title>out</title>denied"
            };
            (200, html, body.as_bytes().to_vec(), String::new())
        }
        "/count" => {
            let key = q.get("key").cloned().unwrap_or_default();
            let n = {
                let mut counters = shared.counters.lock().unwrap_or_else(|e| e.into_inner());
                let n = counters.entry(key).or_default();
                if method == "POST" {
                    *n += 1;
                }
                *n
            };
            (
                200,
                html,
                format!("<title>count</title><p id=count>{n}</p>").into_bytes(),
                String::new(),
            )
        }
        "/download" => {
            // A file the browser saves (`?name=` its suggested name, `?bytes=` its size).
            let name = q
                .get("name")
                .cloned()
                .unwrap_or_else(|| "report.csv".into());
            let n: usize = q.get("bytes").and_then(|b| b.parse().ok()).unwrap_or(64);
            let body: Vec<u8> = b"id,name\n1,moonpilot\n"
                .iter()
                .copied()
                .cycle()
                .take(n)
                .collect();
            (
                200,
                "text/csv",
                body,
                format!("Content-Disposition: attachment; filename=\"{name}\"\r\n"),
            )
        }
        "/table" => {
            let rows: usize = q.get("rows").and_then(|r| r.parse().ok()).unwrap_or(4000);
            (200, html, table_page(rows).into_bytes(), String::new())
        }
        p if p.starts_with("/status/") => {
            let code = p.trim_start_matches("/status/").parse().unwrap_or(500);
            (
                code,
                html,
                format!("<title>status {code}</title><p>status {code}</p>").into_bytes(),
                String::new(),
            )
        }
        _ => serve_file(path, shared).await,
    }
}

async fn serve_file(path: &str, shared: &Shared) -> (u16, &'static str, Vec<u8>, String) {
    let rel = Path::new(path.trim_start_matches('/'));
    let confined = rel.components().all(|c| matches!(c, Component::Normal(_)));
    let not_found = (404, "text/plain", b"not found".to_vec(), String::new());
    if !confined {
        return (
            403,
            "text/plain",
            b"outside the fixture directory".to_vec(),
            String::new(),
        );
    }
    let mut file = shared.root.join(rel);
    if file.is_dir() {
        file = file.join("index.html");
    }
    let Ok(bytes) = tokio::fs::read(&file).await else {
        return not_found;
    };
    let ctype = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    };
    let body = if ctype.starts_with("text/html") {
        String::from_utf8_lossy(&bytes)
            .replace("{{A}}", &shared.a)
            .replace("{{B}}", &shared.b)
            .into_bytes()
    } else {
        bytes
    };
    (200, ctype, body, String::new())
}

/// A page with a `rows`-row table; each row holds an input, a button and a link (the snapshot
/// benchmark's page, CDP-NOTES.md).
pub fn table_page(rows: usize) -> String {
    let mut out = String::with_capacity(rows * 200);
    out.push_str(
        "<!doctype html><html><head><meta charset=utf-8><title>Table</title></head><body><table>",
    );
    for i in 0..rows {
        out.push_str(&format!(
            "<tr><td>row {i}</td><td><input name=\"q{i}\" value=\"v{i}\"></td><td><button>go {i}</button></td><td><a href=\"#r{i}\">link {i}</a></td></tr>"
        ));
    }
    out.push_str("</table></body></html>");
    out
}
