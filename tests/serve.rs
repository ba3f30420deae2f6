//! The HTTP host (`moonpilot serve`): the seed's protocol over real HTTP on loopback, against
//! servers started in-process on the shared engine (port 0), and the binary for start-up
//! refusals. Entry validation, the envelope, commands with and without a task, the token,
//! bounded bodies, upload staging, `/data` files, the human-input long-poll and a short load.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::protocol::envelope;
use moonpilot::server::{serve, ServeOptions};
use serde_json::{json, Value};

use super::support::harness::{exec, harness, url_a};
use super::support::http::{banner_addr, command, request, Reply};
use super::support::load;

/// The token of the second server.
const TOKEN: &str = "s3cret-t0ken";
/// The bounds the test servers run with (small, so "too large" is cheap to send).
const BODY_MAX: usize = 1024 * 1024;
const UPLOAD_MAX: u64 = 64 * 1024;

/// A server on the shared engine, started once per binary on the harness runtime.
fn start(opts: ServeOptions) -> SocketAddr {
    let h = harness();
    let executor = h.executor.clone();
    h.runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(executor, listener, opts, std::future::pending()));
        addr
    })
}

/// The open server: no token, overwrite on.
pub(crate) fn open() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        start(ServeOptions {
            port: 0,
            max_body_bytes: BODY_MAX,
            upload_max_bytes: UPLOAD_MAX,
            ..ServeOptions::default()
        })
    })
}

/// The guarded server: a token, and uploads never overwrite.
fn guarded() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        start(ServeOptions {
            port: 0,
            token: Some(TOKEN.into()),
            upload_overwrite: false,
            max_body_bytes: BODY_MAX,
            upload_max_bytes: UPLOAD_MAX,
            ..ServeOptions::default()
        })
    })
}

fn post_raw(addr: SocketAddr, body: &str) -> Reply {
    request(
        addr,
        "POST",
        "/playwright/command",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
}

/// Asserts an entry failure: status 200, exactly `{ok:false, code:0, msg}`.
fn entry_failure(reply: &Reply, msg_start: &str) {
    let v = reply.json();
    assert_eq!(reply.status, 200, "{v}");
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["code"], 0, "{v}");
    assert!(
        v["msg"].as_str().unwrap().starts_with(msg_start),
        "{v} should start with {msg_start}"
    );
    assert!(v.get("data").is_none(), "entry failures carry no data: {v}");
    assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
}

/// Runs `method` over HTTP for task `id` and answers the envelope.
pub(crate) fn call(addr: SocketAddr, id: Option<&str>, method: &str, params: Value) -> Value {
    let mut body = json!({"method": method, "params": params});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    command(addr, &body).json()
}

/// A task started over HTTP, at fixture `page` (origin A): its id.
pub(crate) fn task_at(addr: SocketAddr, page: &str) -> String {
    let id = start_task(addr);
    let nav = call(addr, Some(&id), "go_to_url", json!({"url": url_a(page)}));
    assert_eq!(nav["ok"], true, "{nav}");
    id
}

/// `start` over HTTP: the new task's id (a string).
fn start_task(addr: SocketAddr) -> String {
    let v = call(addr, None, "start", json!({}));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["code"], 1);
    v["data"]["id"]
        .as_str()
        .expect("ids are strings")
        .to_string()
}

#[test]
fn entry_validation_fails_in_order_with_the_seed_shape() {
    let addr = open();
    entry_failure(
        &request(addr, "GET", "/playwright/command", &[], b""),
        envelope::NOT_POST,
    );
    entry_failure(
        &request(addr, "PUT", "/playwright/command", &[], b"{}"),
        envelope::NOT_POST,
    );
    entry_failure(&post_raw(addr, ""), envelope::EMPTY_BODY);
    entry_failure(&post_raw(addr, "  \n "), envelope::EMPTY_BODY);
    entry_failure(
        &post_raw(addr, "{\"id\":1,"),
        "request body is not valid JSON: ",
    );
    entry_failure(&post_raw(addr, "[1,2,3]"), "request body is not valid JSON");
    entry_failure(
        &post_raw(addr, "\"text\""),
        "request body is not valid JSON",
    );
    entry_failure(&post_raw(addr, "null"), envelope::NOT_AN_OBJECT);
    entry_failure(&post_raw(addr, "{}"), envelope::MISSING_METHOD);
    entry_failure(
        &post_raw(addr, r#"{"method":""}"#),
        envelope::MISSING_METHOD,
    );
    entry_failure(
        &post_raw(addr, r#"{"id":"abc","method":"get_title"}"#),
        envelope::BAD_ID,
    );
    entry_failure(
        &post_raw(addr, r#"{"id":[1],"method":"get_title"}"#),
        envelope::BAD_ID,
    );
    // Not JSON at all, binary included: still the failure shape, never a dropped connection.
    entry_failure(
        &request(
            addr,
            "POST",
            "/playwright/command",
            &[("Content-Type", "application/json")],
            &[0xff, 0xfe, 0x00, 0x7b],
        ),
        "request body is not valid JSON",
    );
    // `params` that is not an object reaches the executor: INVALID_ARGUMENT, HTTP 400.
    let r = post_raw(addr, r#"{"id":1001,"method":"list_methods","params":[1]}"#);
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["code"], 0);
    assert_eq!(v["data"]["errorCode"], "INVALID_ARGUMENT");
    assert_eq!(v["data"]["invalidArgument"], true);
    // An unknown method is a typed failure, with near names.
    let v = call(addr, Some("1001"), "get_titel", json!({}));
    assert_eq!(v["ok"], false);
    assert_eq!(v["data"]["errorCode"], "UNKNOWN_METHOD");
    assert!(v["msg"].as_str().unwrap().contains("get_title"), "{v}");
    // Unknown paths answer JSON too; CORS preflights are answered on the two endpoints, for
    // loopback origins (the others: tests/doors_http.rs).
    let r = request(addr, "GET", "/nope", &[], b"");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["ok"], false);
    let r = request(
        addr,
        "OPTIONS",
        "/playwright/command",
        &[
            ("Origin", "http://localhost:5173"),
            ("Access-Control-Request-Method", "POST"),
        ],
        b"",
    );
    // A loopback page is a web page like any other: its preflight is refused unless
    // `--allowed-origins` names it (tests/doors_http.rs has the named case).
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = post_raw(addr, "{}");
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("vary"), Some("Origin"));
    assert!(request(addr, "GET", "/playwright/health", &[], b"")
        .header("access-control-allow-origin")
        .is_none());
    // Entry failures are traced like every other call.
    let h = harness();
    h.runtime.block_on(h.executor.engine().flush_trace());
    let trace = h.executor.engine().config.trace_dir.clone().unwrap();
    let calls =
        std::fs::read_to_string(trace.join(moonpilot::trace::today()).join("calls.jsonl")).unwrap();
    assert!(
        calls
            .lines()
            .any(|l| l.contains(envelope::BAD_ID) && l.contains("\"get_title\"")),
        "the refused request is in the trace"
    );
}

#[test]
fn commands_without_a_task_ignore_the_id_and_the_views_answer() {
    let addr = open();
    // The seed's clients send id 1001 even to commands that need no task.
    let v = call(addr, Some("1001"), "list_methods", json!({}));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["code"], 1);
    let methods = v["data"]["methods"].as_array().unwrap();
    assert_eq!(v["data"]["count"], methods.len());
    assert!(methods.iter().any(|m| m == "get_title"));
    assert!(!methods.iter().any(|m| m == "commands"));
    assert!(v.get("msg").is_none(), "null fields are omitted: {v}");
    let numeric = command(addr, &json!({"id": 1001, "method": "list_tasks"})).json();
    assert_eq!(numeric["ok"], true, "{numeric}");
    let v = call(addr, Some("1001"), "get_config", json!({}));
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["data"].get("browser").is_none());

    let r = request(addr, "GET", "/playwright/methods", &[], b"");
    assert_eq!(r.status, 200);
    let m = r.json();
    assert_eq!(m["data"]["methods"], json!(methods));
    let h = request(addr, "GET", "/playwright/health", &[], b"").json();
    assert_eq!(h["ok"], true);
    assert_eq!(h["data"]["name"], "playwright-server");
    assert_eq!(h["data"]["pid"], std::process::id());
    assert_eq!(h["data"]["port"], addr.port());
    let started = h["data"]["startedAt"].as_str().unwrap();
    assert!(started.ends_with('Z') && started.contains('T'), "{started}");
    let c = request(addr, "GET", "/playwright/config", &[], b"").json();
    assert_eq!(c["data"]["engine"], "chromium");
    assert!(c["data"].get("browser").is_none(), "no per-task block: {c}");
    let t = request(addr, "GET", "/playwright/tasks", &[], b"").json();
    assert!(t["data"]["tasks"].is_array(), "{t}");
    let wrong = request(addr, "POST", "/playwright/health", &[], b"").json();
    assert_eq!(wrong["ok"], false);
}

#[test]
fn a_task_lives_over_http_from_start_to_close() {
    let addr = open();
    let id = start_task(addr);
    let nav = call(
        addr,
        Some(&id),
        "go_to_url",
        json!({"url": url_a("basic.html")}),
    );
    assert_eq!(nav["ok"], true, "{nav}");
    assert!(nav["data"]["screenshot"]
        .as_str()
        .unwrap()
        .starts_with(&format!("/data/{id}/")));
    // The id as a number works as well as a string.
    let numeric: u64 = id.parse().unwrap();
    let title = command(addr, &json!({"id": numeric, "method": "get_title"})).json();
    assert_eq!(title["ok"], true, "{title}");
    assert_eq!(title["data"]["title"], "Basic");
    let tasks = request(addr, "GET", "/playwright/tasks", &[], b"").json();
    let listed = tasks["data"]["tasks"].as_array().unwrap();
    let mine = listed
        .iter()
        .find(|t| t["id"] == json!(id))
        .expect("listed");
    assert_eq!(mine["title"], "Basic");
    // Compact mode trims the protocol's own fields only.
    let full = call(addr, Some(&id), "get_browser_state", json!({}));
    assert!(full["data"].get("browser_state").is_some(), "{full}");
    assert!(full["data"].get("screenshot_path").is_some());
    let compact = command(
        addr,
        &json!({"id": id, "method": "get_browser_state", "responseMode": "compact"}),
    )
    .json();
    assert_eq!(compact["ok"], true);
    assert!(compact["data"].get("browser_state").is_none(), "{compact}");
    assert!(compact["data"].get("screenshot_path").is_none());
    assert_eq!(compact["data"]["text"], full["data"]["text"]);
    // A missing required param: HTTP 400, INVALID_ARGUMENT, nothing ran.
    let r = command(
        addr,
        &json!({"id": id, "method": "go_to_url", "params": {}}),
    );
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["data"]["errorCode"], "INVALID_ARGUMENT");
    assert_eq!(v["data"]["started"], false);
    let v = call(
        addr,
        Some(&id),
        "click_element_by_index",
        json!({"index": "x"}),
    );
    assert_eq!(v["data"]["errorCode"], "INVALID_ARGUMENT", "{v}");
    // The page did not move under the bad calls.
    let title = call(addr, Some(&id), "get_url", json!({}));
    assert_eq!(title["data"]["url"], url_a("basic.html"));
    let closed = call(addr, Some(&id), "close", json!({}));
    assert_eq!(closed["ok"], true, "{closed}");
    // Unknown (or closed) task ids: TASK_NOT_FOUND, at HTTP 200.
    for gone in [id.as_str(), "424242"] {
        let r = command(addr, &json!({"id": gone, "method": "get_title"}));
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(v["ok"], false);
        assert_eq!(v["code"], 0);
        assert_eq!(v["data"]["errorCode"], "TASK_NOT_FOUND");
        assert_eq!(v["data"]["retryable"], false);
        assert!(v["msg"].as_str().unwrap().contains(gone), "{v}");
    }
    // A task command without any id.
    let v = call(addr, None, "get_title", json!({}));
    assert_eq!(v["data"]["errorCode"], "INVALID_ARGUMENT", "{v}");
}

#[test]
fn the_token_guards_every_request() {
    let addr = guarded();
    for (method, path) in [
        ("POST", "/playwright/command"),
        ("GET", "/playwright/health"),
        ("GET", "/playwright/upload"),
        ("GET", "/data/1/1.png"),
    ] {
        let r = request(
            addr,
            method,
            path,
            &[],
            br#"{"id":1001,"method":"list_methods"}"#,
        );
        assert_eq!(r.status, 401, "{method} {path}");
        let v = r.json();
        assert_eq!(v["ok"], false);
        assert_eq!(v["code"], 0);
        assert!(v["msg"].as_str().unwrap().contains("Bearer"));
    }
    let wrong = request(
        addr,
        "GET",
        "/playwright/health",
        &[("Authorization", "Bearer nope")],
        b"",
    );
    assert_eq!(wrong.status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let ok = request(
        addr,
        "POST",
        "/playwright/command",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        br#"{"id":1001,"method":"list_methods"}"#,
    );
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["ok"], true);
    // Preflights carry no credentials and run nothing.
    let pre = request(addr, "OPTIONS", "/playwright/upload", &[], b"");
    assert_eq!(pre.status, 204);
}

#[test]
fn a_public_bind_without_a_token_refuses_to_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["serve", "--bind", "0.0.0.0", "--port", "0"])
        .env("MOONPILOT_STATE_DIR", super::support::harness::state_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without a token"), "{err}");
}

#[test]
fn oversized_bodies_get_the_failure_shape() {
    let addr = open();
    let big = format!(
        r#"{{"id":1001,"method":"list_methods","params":{{"pad":"{}"}}}}"#,
        "x".repeat(BODY_MAX + 10)
    );
    let r = post_raw(addr, &big);
    assert_eq!(r.status, 413);
    let v = r.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["code"], 0);
    assert!(v["msg"].as_str().unwrap().contains("too large"), "{v}");
    // Just under the bound is a normal command.
    let fits = format!(
        r#"{{"id":1001,"method":"list_methods","params":{{"pad":"{}"}}}}"#,
        "x".repeat(BODY_MAX - 200)
    );
    let v = post_raw(addr, &fits).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["data"]["unknownParams"], json!(["pad"]));
}

/// A name no other test (or run) uses.
fn unique(stem: &str, ext: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{stem}-{}-{n}-{}.{ext}",
        std::process::id(),
        moonpilot::clock::epoch_ms()
    )
}

fn upload_dir() -> std::path::PathBuf {
    harness().executor.engine().config.upload_dir.clone()
}

fn upload_json(addr: SocketAddr, body: impl ToString) -> Reply {
    request(
        addr,
        "POST",
        "/playwright/upload",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

fn upload_raw(addr: SocketAddr, query: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    request(
        addr,
        "POST",
        &format!("/playwright/upload{query}"),
        headers,
        body,
    )
}

#[test]
fn uploads_are_sanitised_bounded_and_confined() {
    let addr = open();
    let dir = upload_dir();
    // Raw bytes named by ?filename=: a traversal keeps the base name, inside the staging dir.
    let name = unique("escape", "txt");
    let r = upload_raw(
        addr,
        &format!("?filename=..%2F..%2F{name}"),
        &[("Content-Type", "text/plain")],
        b"abc",
    );
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    let d = &v["data"];
    assert_eq!(d["filename"], name.as_str());
    assert_eq!(d["relativePath"], name.as_str());
    assert_eq!(d["size"], 3);
    assert_eq!(d["existed"], false);
    assert_eq!(d["contentType"], "text/plain");
    assert_eq!(
        d["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let path = std::path::PathBuf::from(d["path"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), std::path::absolute(&dir).unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), b"abc");
    assert!(!dir.parent().unwrap().join(&name).exists());
    assert!(!dir.parent().unwrap().parent().unwrap().join(&name).exists());
    // Control characters are dropped (in a query value and in X-Filename).
    let ctl = unique("ctl", "txt");
    let v = upload_raw(
        addr,
        &format!("?filename=%07%0A{ctl}%00"),
        &[("Content-Type", "application/octet-stream")],
        b"x",
    )
    .json();
    assert_eq!(v["data"]["filename"], ctl.as_str(), "{v}");
    let hdr = unique("header", "bin");
    let v = upload_raw(addr, "", &[("X-Filename", &format!("a\\b/{hdr}"))], b"xyz").json();
    assert_eq!(v["data"]["filename"], hdr.as_str(), "{v}");
    let encoded_cjk = unique("发票", "pdf");
    let encoded =
        percent_encoding::utf8_percent_encode(&encoded_cjk, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
    let v = upload_raw(addr, "", &[("X-Filename", &encoded)], b"%PDF").json();
    assert_eq!(v["data"]["filename"], encoded_cjk.as_str(), "{v}");
    // A name made of dots only gets a generated one, with the content type's extension.
    let v = upload_raw(
        addr,
        "?filename=..",
        &[("Content-Type", "image/png")],
        b"png",
    )
    .json();
    let generated = v["data"]["filename"].as_str().unwrap();
    assert!(
        generated.starts_with("upload-") && generated.ends_with(".png"),
        "{v}"
    );
    // CJK names are kept (JSON text upload).
    let cjk = unique("报告", "txt");
    let v = upload_json(addr, json!({"filename": cjk, "content": "你好"})).json();
    assert_eq!(v["data"]["filename"], cjk.as_str(), "{v}");
    assert_eq!(v["data"]["size"], 6);
    assert!(dir.join(&cjk).is_file());
    // JSON + base64; broken base64 is refused.
    let b64 = unique("b64", "txt");
    let v = upload_json(
        addr,
        json!({"filename": b64, "contentBase64": "aGVs\nbG8="}),
    )
    .json();
    assert_eq!(v["data"]["size"], 5, "{v}");
    let v = upload_json(addr, r#"{"filename":"bad.txt","contentBase64":"!!"}"#).json();
    assert_eq!(v["ok"], false);
    assert!(v["msg"].as_str().unwrap().contains("base64"), "{v}");
    // Multipart: the `file` field, its own file name.
    let mp = unique("multi", "csv");
    let boundary = "XbOuNdArYx";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nignored\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{mp}\"\r\n\
         Content-Type: text/csv\r\n\r\na,b\n1,2\n\r\n--{boundary}--\r\n"
    );
    let ct = format!("multipart/form-data; boundary={boundary}");
    let v = upload_raw(addr, "", &[("Content-Type", &ct)], form.as_bytes()).json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["data"]["filename"], mp.as_str());
    assert_eq!(v["data"]["size"], 8);
    assert_eq!(v["data"]["contentType"], "text/csv");
    // Too large: raw bytes past the read bound, and base64 that decodes past the cap.
    let r = upload_raw(
        addr,
        "?filename=big.bin",
        &[],
        &vec![b'z'; (UPLOAD_MAX * 2) as usize],
    );
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["ok"], false);
    let over = vec![b'q'; UPLOAD_MAX as usize + 1];
    let big = unique("big", "bin");
    let r = upload_json(
        addr,
        json!({"filename": big, "contentBase64": moonpilot::encoding::encode_base64(&over)}),
    );
    assert_eq!(r.status, 413);
    assert!(r.json()["msg"].as_str().unwrap().contains("more than"));
    assert!(!dir.join(&big).exists());
    // Empty raw body, and other methods.
    assert_eq!(
        upload_raw(addr, "?filename=e.txt", &[], b"").json()["ok"],
        false
    );
    assert_eq!(
        request(addr, "PUT", "/playwright/upload", &[], b"x").json()["ok"],
        false
    );
    // The list, then deletes: escaping names refused, a real one removed.
    let list = request(addr, "GET", "/playwright/upload", &[], b"").json();
    let files = list["data"]["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["name"] == json!(name)), "{list}");
    assert_eq!(list["data"]["maxBytes"], UPLOAD_MAX);
    assert_eq!(list["data"]["overwrite"], true);
    for bad in ["..%2Fx", "%2Fetc%2Fpasswd", "", "no-such-file.txt"] {
        let v = request(
            addr,
            "DELETE",
            &format!("/playwright/upload?name={bad}"),
            &[],
            b"",
        )
        .json();
        assert_eq!(v["ok"], false, "{bad}: {v}");
    }
    let v = request(
        addr,
        "DELETE",
        &format!("/playwright/upload?name={ctl}"),
        &[],
        b"",
    )
    .json();
    assert_eq!(v["data"]["deleted"], true, "{v}");
    assert!(!dir.join(&ctl).exists());
    // Each upload left a metadata line in the trace directory.
    let trace = harness()
        .executor
        .engine()
        .config
        .trace_dir
        .clone()
        .unwrap();
    let log =
        std::fs::read_to_string(trace.join(moonpilot::trace::today()).join("uploads.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(&name) && l.contains("sha256")),
        "{log}"
    );
}

#[test]
fn same_names_overwrite_or_get_numbered() {
    let name = unique("same", "jpg");
    let once = |addr: SocketAddr, auth: &[(&str, &str)], body: &[u8]| {
        upload_raw(addr, &format!("?filename={name}"), auth, body).json()
    };
    let a = once(open(), &[], b"one");
    let b = once(open(), &[], b"two");
    assert_eq!(a["data"]["existed"], false);
    assert_eq!(b["data"]["existed"], true);
    assert_eq!(a["data"]["path"], b["data"]["path"]);
    assert_eq!(std::fs::read(upload_dir().join(&name)).unwrap(), b"two");
    // The guarded server does not overwrite: a-1.jpg, a-2.jpg.
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    let c = once(guarded(), &auth, b"three");
    let d = once(guarded(), &auth, b"four");
    let stem = name.trim_end_matches(".jpg");
    assert_eq!(c["data"]["filename"], format!("{stem}-1.jpg"), "{c}");
    assert_eq!(d["data"]["filename"], format!("{stem}-2.jpg"), "{d}");
    assert_eq!(std::fs::read(upload_dir().join(&name)).unwrap(), b"two");
}

#[test]
fn a_staged_upload_reaches_a_file_input_by_relative_path() {
    let addr = open();
    let name = unique("hello", "txt");
    let staged = upload_raw(addr, &format!("?filename={name}"), &[], b"hello world").json();
    let rel = staged["data"]["relativePath"].as_str().unwrap().to_string();
    let id = task_at(addr, "widgets.html");
    let up = call(
        addr,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": rel}),
    );
    assert_eq!(up["ok"], true, "{up}");
    assert_eq!(up["data"]["filesLength"], 1);
    let js = |script: &str| {
        call(addr, Some(&id), "execute_js", json!({"body": script}))["data"]["result"].clone()
    };
    assert_eq!(
        js("document.getElementById('file-shown').textContent"),
        format!("file: {name}")
    );
    assert_eq!(js("document.getElementById('file').files[0].size"), 11);
    assert_eq!(js("window.counts.file"), 1);
    // A staged name that is not there: INVALID_ARGUMENT naming the upload endpoint, no change.
    let missing = call(
        addr,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": "gone.txt"}),
    );
    assert_eq!(missing["data"]["errorCode"], "INVALID_ARGUMENT");
    assert_eq!(js("window.counts.file"), 1);
    call(addr, Some(&id), "close", json!({}));
}

#[test]
fn data_urls_serve_the_evidence_files() {
    let addr = open();
    let id = task_at(addr, "basic.html");
    let shot = call(addr, Some(&id), "screenshot", json!({}));
    assert_eq!(shot["ok"], true, "{shot}");
    let url = shot["data"]["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&format!("/data/{id}/shot-")), "{url}");
    let r = request(addr, "GET", &url, &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/png"));
    assert_eq!(&r.body[..8], b"\x89PNG\r\n\x1a\n");
    let on_disk = std::fs::read(shot["data"]["path"].as_str().unwrap()).unwrap();
    assert_eq!(r.body, on_disk);
    // The auto-capture of the navigation, and the state text, by their receipts' URLs.
    let state = call(addr, Some(&id), "get_browser_state", json!({}));
    let png = request(
        addr,
        "GET",
        state["data"]["screenshot"].as_str().unwrap(),
        &[],
        b"",
    );
    assert_eq!(png.status, 200);
    assert_eq!(&png.body[..4], b"\x89PNG");
    let file = state["data"]["state_file"].as_str().unwrap();
    let name = std::path::Path::new(file)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let txt = request(addr, "GET", &format!("/data/{id}/{name}"), &[], b"");
    assert_eq!(txt.status, 200);
    assert_eq!(
        txt.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(String::from_utf8_lossy(&txt.body).contains("Basic"));
    // No traversal, no directory listings, missing files are JSON 404s.
    for bad in [
        format!("/data/{id}/../../etc/passwd"),
        format!("/data/{id}/%2e%2e/%2e%2e/x"),
        format!("/data/{id}"),
        format!("/data/{id}/nope.png"),
    ] {
        let r = request(addr, "GET", &bad, &[], b"");
        assert_eq!(r.status, 404, "{bad}");
        assert_eq!(r.json()["ok"], false);
    }
    call(addr, Some(&id), "close", json!({}));
}

/// A human-input request on a fresh task at basic.html: (task id, request id).
fn human_request(addr: SocketAddr, with_image: bool) -> (String, String) {
    let id = task_at(addr, "basic.html");
    let mut params = json!({"prompt": "type the code", "timeoutSeconds": 120});
    if with_image {
        params["selector"] = json!("h1");
        params["inline"] = json!(false);
    }
    let r = call(addr, Some(&id), "request_human_input", params);
    assert_eq!(r["ok"], true, "{r}");
    (id, r["data"]["requestId"].as_str().unwrap().to_string())
}

/// Starts a 30 s long-poll over HTTP on another thread: its answer and when it came.
fn long_poll(
    addr: SocketAddr,
    id: &str,
    request_id: &str,
) -> std::thread::JoinHandle<(Value, Instant)> {
    let body = json!({"id": id, "method": "get_human_input",
        "params": {"requestId": request_id, "timeoutSeconds": 30}});
    std::thread::spawn(move || {
        let v = command(addr, &body).json();
        (v, Instant::now())
    })
}

#[test]
fn a_long_poll_is_answered_by_a_submit_over_http() {
    let addr = open();
    let (id, request_id) = human_request(addr, true);
    let poll = long_poll(addr, &id, &request_id);
    load::pause(Duration::from_millis(700));
    let t_submit = Instant::now();
    let s = call(
        addr,
        Some(&id),
        "submit_human_input",
        json!({"requestId": request_id, "answer": "42"}),
    );
    assert_eq!(s["ok"], true, "{s}");
    let (v, answered) = poll.join().unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["data"]["status"], "answered");
    assert_eq!(v["data"]["answer"], "42");
    // Timed from here, not from inside the poll's thread: on a loaded machine that thread may
    // start late, and a poll that waited would look short.
    assert!(answered >= t_submit, "it waited for the submit");
    assert!(
        t_submit.elapsed() < Duration::from_secs(5),
        "answered at once, not at the timeout"
    );
    // The request's image is served where its receipt says.
    let again = call(
        addr,
        Some(&id),
        "get_human_input",
        json!({"requestId": request_id}),
    );
    assert_eq!(again["data"]["status"], "answered");
    call(addr, Some(&id), "close", json!({}));
}

#[test]
fn a_long_poll_over_http_is_answered_from_the_same_executor_in_process() {
    // The REPL's path: the server and the person's commands share one executor.
    let addr = open();
    let (id, request_id) = human_request(addr, true);
    let task = TaskId(id.parse().unwrap());
    let shown = exec(
        Some(task),
        "get_human_input",
        json!({"requestId": request_id}),
    );
    assert_eq!(shown.data["status"], "pending");
    let poll = long_poll(addr, &id, &request_id);
    load::pause(Duration::from_millis(500));
    let t_submit = Instant::now();
    let s = exec(
        Some(task),
        "submit_human_input",
        json!({"requestId": request_id, "answer": "from the terminal"}),
    );
    assert!(s.ok, "{:?}", s.msg);
    let (v, answered) = poll.join().unwrap();
    assert_eq!(v["data"]["answer"], "from the terminal", "{v}");
    assert!(answered - t_submit < Duration::from_secs(10));
    exec(Some(task), "close", json!({}));
}

#[test]
fn request_human_input_names_its_image_by_a_served_url() {
    let addr = open();
    let id = task_at(addr, "basic.html");
    let r = call(
        addr,
        Some(&id),
        "request_human_input",
        json!({"prompt": "look", "selector": "h1", "inline": false}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let url = r["data"]["imageUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("imageUrl: {r}"));
    assert!(url.starts_with(&format!("/data/{id}/")), "{url}");
    let png = request(addr, "GET", url, &[], b"");
    assert_eq!(png.status, 200);
    assert_eq!(&png.body[..4], b"\x89PNG");
    call(addr, Some(&id), "close", json!({}));
}

#[test]
fn fifty_clients_on_five_tasks_lose_nothing() {
    // An engine (and Chromium) of its own: 50 clients fill the engine-wide in-flight bound,
    // which the other tests on the shared engine must not meet.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = moonpilot::Engine::new(super::support::harness::test_config());
    let executor = moonpilot::Executor::new(engine.clone(), moonpilot::lua::recipe_host());
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = ServeOptions {
            port: 0,
            ..ServeOptions::default()
        };
        tokio::spawn(serve(
            executor.clone(),
            listener,
            opts,
            std::future::pending(),
        ));
        addr
    });
    let secs: u64 = std::env::var("SERVE_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let ids: Vec<TaskId> = (0..5)
        .map(|_| {
            let id = task_at(addr, "basic.html");
            TaskId(id.parse().unwrap())
        })
        .collect();
    let http = load::over_http(addr, &ids, 50, Duration::from_secs(secs));
    let inproc = load::in_process(&executor, &ids, 50, Duration::from_secs(secs));
    println!("{}", http.summary("get_title over HTTP"));
    println!("{}", inproc.summary("get_title in-process"));
    for l in [&http, &inproc] {
        assert!(
            l.other.is_empty(),
            "only typed busy answers may fail: {:?}",
            &l.other[..l.other.len().min(3)]
        );
        assert_eq!(l.ok + l.busy, l.sent, "every request answered");
        assert!(l.ok > 0);
    }
    let tasks = call(addr, None, "list_tasks", json!({}));
    assert_eq!(tasks["data"]["tasks"].as_array().unwrap().len(), 5);
    rt.block_on(engine.shutdown());
}

/// Waits (20 s at most) for `child` to exit; its exit code.
fn exit_code(child: &mut std::process::Child) -> Option<i32> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        load::pause(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("the server did not stop");
}

fn moonpilot_serve(args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("serve")
        .args(args)
        .env("MOONPILOT_STATE_DIR", super::support::harness::state_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap()
}

#[test]
fn the_binary_serves_until_ctrl_c_or_a_shutdown() {
    // Ctrl-C: a clean stop, exit code 0.
    let mut child = moonpilot_serve(&["--port", "0"]);
    let addr = banner_addr(child.stdout.take().unwrap());
    let h = request(addr, "GET", "/playwright/health", &[], b"").json();
    assert_eq!(h["data"]["pid"], child.id());
    assert_eq!(h["data"]["port"], addr.port());
    // `shutdown` closes the browser and tasks; the seed's server keeps serving.
    let v = command(addr, &json!({"id": 1001, "method": "shutdown"})).json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        request(addr, "GET", "/playwright/health", &[], b"").status,
        200
    );
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert_eq!(exit_code(&mut child), Some(0));
    // With --exit-on-shutdown, `shutdown` over HTTP ends the process once it has answered.
    let mut child = moonpilot_serve(&["--port", "0", "--exit-on-shutdown", "--token", TOKEN]);
    let addr = banner_addr(child.stdout.take().unwrap());
    assert_eq!(command(addr, &json!({"method": "shutdown"})).status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let r = request(
        addr,
        "POST",
        "/playwright/command",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        br#"{"method":"shutdown"}"#,
    );
    assert_eq!(r.json()["ok"], true);
    assert_eq!(exit_code(&mut child), Some(0));
}

#[test]
fn the_repl_and_http_share_one_engine() {
    use std::io::Write;
    let data = std::env::temp_dir().join(format!("moonpilot-repl-serve-{}", std::process::id()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["repl", "--serve", "0"])
        .env("XDG_DATA_HOME", &data)
        .env("MOONPILOT_STATE_DIR", super::support::harness::state_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr = banner_addr(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    // The REPL's `page` is the one task the server sees.
    let t0 = Instant::now();
    let id = loop {
        let tasks = request(addr, "GET", "/playwright/tasks", &[], b"").json();
        if let Some(id) = tasks["data"]["tasks"][0]["id"].as_str() {
            break id.to_string();
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no task: {tasks}");
        load::pause(Duration::from_millis(100));
    };
    // The person navigates; the agent reads the title over HTTP.
    writeln!(
        stdin,
        "page:navigate{{ url = \"{}\" }}",
        url_a("basic.html")
    )
    .unwrap();
    let t0 = Instant::now();
    loop {
        let v = call(addr, Some(&id), "get_title", json!({}));
        if v["data"]["title"] == "Basic" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{v}");
        load::pause(Duration::from_millis(100));
    }
    // The agent navigates; the person reads it at the prompt.
    let v = call(
        addr,
        Some(&id),
        "go_to_url",
        json!({"url": url_a("widgets.html")}),
    );
    assert_eq!(v["ok"], true, "{v}");
    writeln!(stdin, "print('title=' .. page:get_title().data.title)").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("title=Widgets"), "{text}");
}

/// A non-loopback IPv4 address of this machine, if it has one (the source address of a route
/// outwards; a UDP connect sends nothing).
fn public_ip() -> Option<std::net::IpAddr> {
    ["8.8.8.8:53", "10.255.255.255:1", "192.0.2.1:9"]
        .iter()
        .find_map(|target| {
            let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            s.connect(target).ok()?;
            let ip = s.local_addr().ok()?.ip();
            (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
        })
}

#[test]
fn a_non_loopback_bind_answers_401_without_the_token() {
    let Some(ip) = public_ip() else {
        println!("skipped: this machine has no non-loopback address");
        return;
    };
    let ip = ip.to_string();
    let mut child = moonpilot_serve(&["--bind", &ip, "--port", "0", "--token", TOKEN]);
    let addr = banner_addr(child.stdout.take().unwrap());
    assert_eq!(addr.ip().to_string(), ip);
    let r = request(addr, "GET", "/playwright/health", &[], b"");
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["ok"], false);
    let r = command(addr, &json!({"id": 1001, "method": "list_methods"}));
    assert_eq!(r.status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let ok = request(
        addr,
        "GET",
        "/playwright/health",
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["data"]["pid"], child.id());
    // Only that address: loopback at the port is not this server. (Another test's server may
    // hold the same port number there: binding one address does not reserve the others.)
    let loopback: SocketAddr = format!("127.0.0.1:{}", addr.port()).parse().unwrap();
    if let Ok(mut s) = std::net::TcpStream::connect(loopback) {
        use std::io::{Read, Write};
        let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let _ = write!(
            s,
            "GET /playwright/health HTTP/1.0\r\nAuthorization: {bearer}\r\n\r\n"
        );
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(
            !answer.contains(&format!("\"pid\":{}", child.id())),
            "the server also answers on loopback: {answer}"
        );
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert_eq!(exit_code(&mut child), Some(0));
}

/// Polls `get_job` over HTTP until the job has ended (within 20 s).
fn settle_job(addr: SocketAddr, job: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let j = call(addr, Some("1001"), "get_job", json!({"jobId": job}));
        assert_eq!(j["ok"], true, "{j}");
        if j["data"]["status"] != "running" || std::time::Instant::now() > deadline {
            return j;
        }
        load::pause(Duration::from_millis(100));
    }
}

#[test]
fn batches_jobs_and_recipes_over_http() {
    let addr = open();
    let id = task_at(addr, "batch.html");
    let clicks = |addr| {
        let v = call(
            addr,
            Some(&id),
            "execute_js",
            json!({"body": "return window.clicks"}),
        );
        v["data"]["result"].as_i64().unwrap()
    };
    let inc = json!({"click_element_by_selector": {"selector": "#inc"}});
    let bad = json!({"click_element_by_selector": {"selector": "#nothing-here"}});
    // A failing step: stopOnError (the default) stops there; false runs the rest.
    let b = call(
        addr,
        Some(&id),
        "commands",
        json!({"commands": [inc, bad, inc]}),
    );
    assert_eq!(b["ok"], false, "{b}");
    assert_eq!(b["data"]["count"], 2, "{b}");
    assert_eq!(b["data"]["failed"], 1);
    assert_eq!(b["data"]["stopped"], true);
    assert_eq!(
        b["data"]["results"][1]["error"]["code"],
        "ELEMENT_NOT_FOUND"
    );
    assert_eq!(clicks(addr), 1);
    let b = call(
        addr,
        Some(&id),
        "commands",
        json!({"stopOnError": false, "commands": [inc, bad, inc]}),
    );
    assert_eq!(b["data"]["count"], 3, "{b}");
    assert_eq!(b["data"]["succeeded"], 2);
    assert_eq!(clicks(addr), 3);
    // A failed assertion: not a failed step.
    let expect = json!({"get_title": {}, "expect": {"js": "window.clicks", "equals": 99}});
    let b = call(addr, Some(&id), "commands", json!({"commands": [expect]}));
    assert_eq!(b["ok"], false, "{b}");
    assert_eq!(b["data"]["expectFailed"], 1);
    assert_eq!(b["data"]["failed"], 0);
    assert_eq!(b["data"]["results"][0]["expectResult"]["passed"], false);
    assert_eq!(b["data"]["results"][0]["expectResult"]["actual"], 3);
    // An async batch, polled to its end.
    let sub = call(
        addr,
        Some(&id),
        "commands",
        json!({"async": true, "commands": [inc, inc]}),
    );
    assert_eq!(sub["ok"], true, "{sub}");
    let job = sub["data"]["jobId"].as_str().unwrap().to_string();
    assert!(job.starts_with("job-"), "{sub}");
    let j = settle_job(addr, &job);
    assert_eq!(j["data"]["status"], "done", "{j}");
    assert_eq!(j["data"]["steps"], 2);
    assert_eq!(clicks(addr), 5);
    // One cancelled between its steps.
    let wait = json!({"wait": {"seconds": 1}});
    let sub = call(
        addr,
        Some(&id),
        "commands",
        json!({"async": true, "commands": [inc, wait, inc, wait, inc]}),
    );
    let job = sub["data"]["jobId"].as_str().unwrap().to_string();
    load::pause(Duration::from_millis(300));
    let c = call(addr, Some("1001"), "cancel_job", json!({"jobId": job}));
    assert_eq!(c["data"]["cancelRequested"], true, "{c}");
    let j = settle_job(addr, &job);
    assert_eq!(j["data"]["status"], "cancelled", "{j}");
    let ran = j["data"]["steps"].as_i64().unwrap();
    assert!(ran < 5, "{j}");
    assert!(clicks(addr) < 8, "the remaining clicks did not run");
    let listed = call(addr, Some("1001"), "list_jobs", json!({"limit": 1}));
    assert_eq!(listed["data"]["jobs"][0]["jobId"], job.as_str(), "{listed}");
    // A JSON recipe (vars over defaults) and a Lua one.
    let r = call(
        addr,
        Some(&id),
        "run_recipe",
        json!({"name": "fill-name", "vars": {"who": "Grace"}}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["data"]["recipe"], "fill-name");
    let echo = call(
        addr,
        Some(&id),
        "execute_js",
        json!({"body": "return document.getElementById('echo').textContent"}),
    );
    assert_eq!(echo["data"]["result"], "Grace");
    let r = call(
        addr,
        Some(&id),
        "run_recipe",
        json!({"name": "echo-args", "vars": {"who": "Lin"}}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["data"]["greeting"], "hello Lin");
    let listed = call(addr, Some("1001"), "list_recipes", json!({}));
    assert!(listed["data"]["count"].as_u64().unwrap() >= 4, "{listed}");
    call(addr, Some(&id), "close", json!({}));
}

#[test]
fn a_download_is_served_from_its_receipt_s_url() {
    // Issue 36 §1, over HTTP: the receipt's downloadUrl answers the file once it is complete.
    let addr = open();
    let id = task_at(addr, "basic.html");
    let inject = "document.body.insertAdjacentHTML('beforeend', '<a id=\"dl\" href=\"/download?name=%E6%8A%A5%E5%91%8A.csv&bytes=500\">Report</a>'); true";
    call(addr, Some(&id), "execute_js", json!({"body": inject}));
    let c = call(
        addr,
        Some(&id),
        "click_element_by_selector",
        json!({"selector": "#dl"}),
    );
    assert_eq!(c["ok"], true, "{c}");
    let d = &c["data"]["downloads"][0];
    assert_eq!(d["fileName"], "报告.csv", "{c}");
    let url = d["downloadUrl"].as_str().unwrap().to_string();
    let path: String = url
        .split('/')
        .map(|seg| {
            percent_encoding::utf8_percent_encode(seg, percent_encoding::NON_ALPHANUMERIC)
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("/");
    let got = request(addr, "GET", &path, &[], b"");
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    assert_eq!(got.body.len(), 500);
    assert!(got.body.starts_with(b"id,name"));
    // Nothing else of the download directory is served.
    let incoming = request(addr, "GET", "/downloads/.incoming/x", &[], b"");
    assert_eq!(incoming.status, 404);
    let escape = request(addr, "GET", "/downloads/../data/x", &[], b"");
    assert_ne!(escape.status, 200);
    call(addr, Some(&id), "close", json!({}));
}
