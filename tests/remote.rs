//! Remote browsers: an engine attached over `--cdp-url` keeps one socket to one browser.
//!
//! The first tests attach to a plain Chromium started with `--remote-debugging-port` (and to
//! it behind a TLS proxy, for `https://`/`wss://`). The `browserless_*` tests need a real
//! browserless: `tools/test-remote` installs and starts one and names it in
//! `MOONPILOT_TEST_BROWSERLESS` (`http://127.0.0.1:PORT?token=T`, CONCURRENT=2); without it they
//! say so and pass.

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::browser::LaunchConfig;
use moonpilot::{ErrorCode, Executor};
use serde_json::{json, Value};

use crate::support::harness::{private, test_config, url_a};

/// Waits on a test thread (no runtime runs here, so nothing else is held up).
#[allow(clippy::disallowed_methods)]
fn nap(d: Duration) {
    std::thread::sleep(d);
}

/// A Chromium of its own with a DevTools port, killed (and its profile removed) on drop.
struct RemoteChromium {
    child: std::process::Child,
    profile: std::path::PathBuf,
    port: u16,
}

impl RemoteChromium {
    fn launch(name: &str) -> RemoteChromium {
        let chromium = moonpilot::browser::find_chromium(None).expect("chromium for the test");
        let profile =
            std::env::temp_dir().join(format!("moonpilot-remote-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        let child = Command::new(&chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                &format!("--user-data-dir={}", profile.display()),
                "about:blank",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the remote chromium starts");
        // Chromium writes the port it took into the profile (seconds on a loaded machine).
        let file = profile.join("DevToolsActivePort");
        let t0 = Instant::now();
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.lines().next()?.trim().parse().ok())
            {
                break port;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "no DevTools port");
            nap(Duration::from_millis(50));
        };
        RemoteChromium {
            child,
            profile,
            port,
        }
    }

    /// Whether the browser still runs and answers `/json/version`.
    fn answers(&mut self) -> bool {
        if self.child.try_wait().ok().flatten().is_some() {
            return false;
        }
        std::net::TcpStream::connect(("127.0.0.1", self.port))
            .and_then(|mut s| {
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                write!(
                    s,
                    "GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                )?;
                let mut answer = String::new();
                let _ = s.read_to_string(&mut answer);
                Ok(answer.starts_with("HTTP/1.1 200"))
            })
            .unwrap_or(false)
    }
}

impl Drop for RemoteChromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// `start`, then the task id.
async fn start(ex: &Executor) -> (TaskId, Value) {
    let r = ex.execute(None, "start", json!({})).await;
    assert!(r.ok, "start failed: {:?}", r.msg);
    let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
    (id, r.data)
}

/// Navigates `id` to the frames fixture, clicks the cross-site frame's button by index and
/// returns the page text afterwards.
async fn click_in_the_cross_site_frame(ex: &Executor, id: TaskId) -> String {
    let nav = ex
        .execute(Some(id), "navigate", json!({"url": url_a("frames.html")}))
        .await;
    assert!(nav.ok, "{:?}", nav.msg);
    let state = ex
        .execute(
            Some(id),
            "get_browser_state",
            json!({"includeFrames": true}),
        )
        .await;
    assert!(state.ok, "{:?}", state.msg);
    let b = &crate::support::harness::harness().fixtures.b;
    let button = state.data["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|el| el["frameUrl"] == format!("{b}/child.html") && el["tag"] == "BUTTON")
        .unwrap_or_else(|| panic!("no cross-site button in {}", state.data["text"]))
        .clone();
    let click = ex
        .execute(
            Some(id),
            "click_element_by_index",
            json!({"index": button["index"]}),
        )
        .await;
    assert!(click.ok, "{:?}", click.msg);
    assert_eq!(click.data["hit"]["id"], "child-btn", "{}", click.data);
    let after = ex
        .execute(
            Some(id),
            "get_browser_state",
            json!({"includeFrames": true}),
        )
        .await;
    after.data["text"].as_str().unwrap_or_default().to_string()
}

/// Kills `id`'s renderer and asserts that its next call is `crashed` within 10 s.
async fn crash_and_see_it(ex: &Executor, id: TaskId) {
    let tab = ex.engine().task(id).unwrap().tab().unwrap();
    // chrome://crash kills the renderer (the call may never answer: bounded).
    let crash = tab.call("Page.navigate", json!({"url": "chrome://crash"}));
    let _ = tokio::time::timeout(Duration::from_secs(2), crash).await;
    let t0 = Instant::now();
    let r = ex.execute(Some(id), "get_title", json!({})).await;
    assert_eq!(r.code, Some(ErrorCode::ActionFailed), "{:?}", r.msg);
    assert_eq!(r.data["crashed"], true, "{}", r.data);
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the crash event reached the task: {:?}",
        t0.elapsed()
    );
}

#[test]
fn an_attached_chromium_gets_one_socket_for_frames_and_crash_events() {
    let mut remote = RemoteChromium::launch("one-socket");
    let port = remote.port;
    let mut config = test_config();
    config.launch = LaunchConfig {
        cdp_url: Some(format!("http://127.0.0.1:{}", remote.port)),
        ..LaunchConfig::default()
    };
    let second = format!(
        "{}/second.html",
        crate::support::harness::harness().fixtures.b
    );
    private(config, move |ex| async move {
        let (id, data) = start(&ex).await;
        assert_eq!(data["browser"]["mode"], "cdp");
        let cdp = &data["browser"]["cdp"];
        assert_eq!(cdp["connections"], 1, "{cdp}");
        assert_eq!(cdp["browserSession"], true, "{cdp}");
        // Commands inside an out-of-process frame travel on the shared socket.
        let text = click_in_the_cross_site_frame(&ex, id).await;
        assert!(text.contains("child clicked 1"), "{text}");
        // One connection to the browser, the cross-site frame's commands included (a
        // launched engine holds two).
        assert_eq!(clients(port), 1, "connections to the DevTools port");
        // A second task on another site: its renderer crash is its own.
        let (other, _) = start(&ex).await;
        let nav = ex
            .execute(Some(other), "navigate", json!({"url": second}))
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        crash_and_see_it(&ex, other).await;
        let title = ex.execute(Some(id), "get_title", json!({})).await;
        assert_eq!(title.data["title"], "Frames", "{:?}", title.msg);
        let config = ex.execute(Some(id), "get_config", json!({})).await;
        assert_eq!(config.data["cdpUrl"], format!("http://127.0.0.1:{port}"));
        ex.execute(None, "shutdown", json!({})).await;
    });
    // Attached, the engine detaches: the browser it did not launch keeps running.
    nap(Duration::from_secs(1));
    assert!(
        remote.answers(),
        "the remote browser was stopped by a detach"
    );
    assert_eq!(clients(port), 0, "the engine's connection is closed");
}

/// Established TCP connections to `port` on loopback (the clients' ends of them).
fn clients(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            f.len() > 3 && f[2].ends_with(&port) && f[3] == "01"
        })
        .count()
}

#[test]
fn a_remote_browser_that_exits_is_browser_gone_and_the_next_start_says_why_it_cannot() {
    let remote = RemoteChromium::launch("exits");
    let mut config = test_config();
    config.launch = LaunchConfig {
        cdp_url: Some(format!("http://127.0.0.1:{}", remote.port)),
        ..LaunchConfig::default()
    };
    let remote = std::sync::Arc::new(std::sync::Mutex::new(remote));
    let killer = remote.clone();
    private(config, move |ex| async move {
        let (id, _) = start(&ex).await;
        let nav = ex
            .execute(Some(id), "navigate", json!({"url": url_a("basic.html")}))
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        {
            let mut r = killer.lock().unwrap();
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        let t0 = Instant::now();
        let r = ex.execute(Some(id), "get_title", json!({})).await;
        assert_eq!(r.code, Some(ErrorCode::BrowserGone), "{:?}", r.msg);
        let msg = r.msg.unwrap_or_default();
        assert!(msg.contains("is gone: the endpoint"), "{msg}");
        assert!(
            !msg.contains("TIMEOUT"),
            "not blamed on a fleet's timeout: {msg}"
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        let again = ex.execute(None, "start", json!({})).await;
        assert!(!again.ok);
        let msg = again.msg.unwrap_or_default();
        assert!(msg.contains("nothing answers at 127.0.0.1"), "{msg}");
    });
    drop(remote);
}

/// The `moonpilot` binary with the tests' state directory, and no endpoint from the caller's
/// environment.
fn moonpilot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    command
        .env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir())
        .env_remove("MOONPILOT_CDP_URL")
        .env_remove("MOONPILOT_CDP_WAIT");
    command
}

/// `moonpilot run script` attached to `url`: by `--cdp-url`, or by `MOONPILOT_CDP_URL` when
/// `by_env`.
fn attached(script: &std::path::Path, url: &str, by_env: bool) -> Command {
    let mut c = moonpilot();
    c.arg("run").arg(script);
    if by_env {
        c.env("MOONPILOT_CDP_URL", url);
    } else {
        c.arg("--cdp-url").arg(url);
    }
    c
}

/// The exit code, stdout and stderr of running `c`.
fn outcome(c: &mut Command) -> (Option<i32>, String, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A Lua script file of the tests' own, `name.lua` holding `body`.
fn script_file(name: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, body).unwrap();
    path
}

/// A script file that starts a task, opens `url` and prints its title.
fn title_script(name: &str, url: &str, hold_ms: u64) -> std::path::PathBuf {
    script_file(
        name,
        &format!(
            "local page = browser.start{{}}\n\
             page:navigate{{ url = {url:?} }}:unwrap()\n\
             browser.sleep({hold_ms})\n\
             print('title: ' .. page:get_title{{}}:unwrap().title)\n"
        ),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn attach_failures_exit_2_naming_the_masked_url_and_the_fix() {
    let script = title_script("fails", &url_a("basic.html"), 0);
    let run = |url: &str, env: bool| {
        let (code, _, err) = outcome(&mut attached(&script, url, env));
        (code, err)
    };
    let port = free_port();
    for env in [false, true] {
        let (code, err) = run(
            &format!("ws://127.0.0.1:{port}/chromium?token=SEKRIT1"),
            env,
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("nothing listens at 127.0.0.1:{port}")),
            "{err}"
        );
        assert!(
            err.contains("token=***") && !err.contains("SEKRIT1"),
            "{err}"
        );
        // The launch hint is for launches.
        assert!(!err.contains("choose the browser with --chromium"), "{err}");
    }
    let remote = RemoteChromium::launch("errors");
    let (code, err) = run(
        &format!(
            "ws://127.0.0.1:{}/devtools/browser/nope?token=SEKRIT2",
            remote.port
        ),
        false,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("answered HTTP 404") && err.contains("no such path or browser id"),
        "{err}"
    );
    assert!(!err.contains("SEKRIT2"), "{err}");
    // The fixture server speaks HTTP but is no DevTools endpoint.
    let (code, err) = run(
        &format!("{}?token=SEKRIT3", url_a("").trim_end_matches('/')),
        false,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("answered HTTP 404: not a Chrome DevTools endpoint"),
        "{err}"
    );
    assert!(!err.contains("SEKRIT3"), "{err}");
    // A bad wait is a usage error.
    let (code, _, err) =
        outcome(attached(&script, "ws://127.0.0.1:1/", false).args(["--cdp-wait", "0"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("invalid value '0' for '--cdp-wait"), "{err}");
}

/// A TLS proxy (Python) in front of `port`, with a CA of its own that `SSL_CERT_FILE` trusts.
/// `None` where openssl or python3 is missing.
struct TlsProxy {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl TlsProxy {
    fn start(target: u16) -> Option<TlsProxy> {
        let dir = std::env::temp_dir().join(format!("moonpilot-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sh = |script: &str| {
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let made = sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=moonpilot test CA' \
             && openssl req -newkey rsa:2048 -nodes -keyout key.pem -out srv.csr -subj '/CN=localhost' \
             && printf 'subjectAltName=DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > ext.cnf \
             && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 -extfile ext.cnf \
             && openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj '/CN=another CA'");
        if !made {
            eprintln!("skipped the TLS part: openssl could not make a certificate");
            return None;
        }
        let port = free_port();
        let proxy =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/tls_proxy.py");
        let mut child = Command::new("python3")
            .arg(proxy)
            .args([port.to_string(), target.to_string()])
            .arg(dir.join("cert.pem"))
            .arg(dir.join("key.pem"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        let stdout = child.stdout.take()?;
        std::io::BufReader::new(stdout).read_line(&mut line).ok()?;
        if line.trim() != "ready" {
            let _ = child.kill();
            return None;
        }
        Some(TlsProxy { child, dir, port })
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn https_and_wss_endpoints_are_reached_over_tls() {
    let remote = RemoteChromium::launch("tls");
    let Some(proxy) = TlsProxy::start(remote.port) else {
        return;
    };
    let script = title_script("tls", &url_a("basic.html"), 0);
    let ca = proxy.dir.join("ca.pem");
    // https: /json/version over TLS names a ws:// URL, reached as wss:// through the proxy.
    let https = format!("https://localhost:{}", proxy.port);
    let (code, stdout, stderr) =
        outcome(attached(&script, &https, false).env("SSL_CERT_FILE", &ca));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("title: Basic"), "{stdout}");
    // Trusting another CA only, the certificate is not trusted: a start error that says so.
    let wss = format!("wss://localhost:{}/devtools/browser/x", proxy.port);
    let (code, _, err) =
        outcome(attached(&script, &wss, false).env("SSL_CERT_FILE", proxy.dir.join("other.pem")));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("TLS with localhost:"), "{err}");
}

// ---- browserless (tools/test-remote) ----

/// The browserless endpoint under test, or `None` (said on stderr) when none is given.
struct Browserless {
    /// `http://127.0.0.1:PORT?token=T`.
    http: String,
    port: u16,
    token: String,
}

fn browserless() -> Option<Browserless> {
    let Ok(http) = std::env::var("MOONPILOT_TEST_BROWSERLESS") else {
        eprintln!("skipped: MOONPILOT_TEST_BROWSERLESS is unset (tools/test-remote sets it)");
        return None;
    };
    let url = url::Url::parse(&http).expect("MOONPILOT_TEST_BROWSERLESS is a URL");
    let token = url
        .query_pairs()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .expect("a token in MOONPILOT_TEST_BROWSERLESS");
    Some(Browserless {
        port: url.port().expect("a port"),
        token,
        http,
    })
}

impl Browserless {
    fn ws(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}?token={}", self.port, self.token)
    }

    /// `GET path?token=T` as JSON.
    fn get(&self, path: &str) -> Value {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "GET {path}?token={} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            self.token
        )
        .unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
        // Chunked or not: the JSON is the part between the first `[`/`{` and the last `]`/`}`.
        let start = body.find(['[', '{']).unwrap_or(0);
        let end = body.rfind([']', '}']).map_or(body.len(), |e| e + 1);
        serde_json::from_str(&body[start..end]).unwrap_or(Value::Null)
    }

    /// browserless's sessions: `(type, browserId, url)`.
    fn sessions(&self) -> Vec<(String, String, String)> {
        self.get("/sessions")
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|s| {
                let f = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                (f("type"), f("browserId"), f("url"))
            })
            .collect()
    }

    fn browsers(&self) -> Vec<String> {
        self.sessions()
            .into_iter()
            .filter(|(t, _, _)| t == "browser")
            .map(|(_, id, _)| id)
            .collect()
    }

    /// `(running, queued)` of `/pressure`.
    fn pressure(&self) -> (u64, u64) {
        let v = self.get("/pressure");
        let p = &v["pressure"];
        (
            p["running"].as_u64().unwrap_or(0),
            p["queued"].as_u64().unwrap_or(0),
        )
    }

    /// Waits until no session of an earlier test is left.
    fn idle(&self) {
        let t0 = Instant::now();
        while !self.browsers().is_empty() && t0.elapsed() < Duration::from_secs(15) {
            nap(Duration::from_millis(200));
        }
        assert!(
            self.browsers().is_empty(),
            "sessions left: {:?}",
            self.sessions()
        );
    }
}

#[test]
fn browserless_runs_a_task_in_one_browser_with_frames_and_crashes() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let mut config = test_config();
    config.launch = LaunchConfig {
        cdp_url: Some(bl.ws("/chromium")),
        ..LaunchConfig::default()
    };
    let second = format!(
        "{}/second.html",
        crate::support::harness::harness().fixtures.b
    );
    let token = bl.token.clone();
    private(config, move |ex| async move {
        let (id, data) = start(&ex).await;
        assert_eq!(data["browser"]["cdp"]["connections"], 1);
        let text = click_in_the_cross_site_frame(&ex, id).await;
        assert!(text.contains("child clicked 1"), "{text}");
        let (other, _) = start(&ex).await;
        let nav = ex
            .execute(Some(other), "navigate", json!({"url": second}))
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        // One browser holds both tasks' pages.
        let bl = browserless().unwrap();
        let browsers = bl.browsers();
        assert_eq!(browsers.len(), 1, "{:?}", bl.sessions());
        let pages: Vec<_> = bl
            .sessions()
            .into_iter()
            .filter(|(t, _, _)| t == "page")
            .collect();
        assert!(pages.iter().all(|(_, b, _)| *b == browsers[0]), "{pages:?}");
        assert!(
            pages.iter().any(|(_, _, u)| u.ends_with("/frames.html")),
            "{pages:?}"
        );
        assert!(
            pages.iter().any(|(_, _, u)| u.ends_with("/second.html")),
            "{pages:?}"
        );
        // Another engine reaches this very browser through /devtools/browser/<browserId>.
        let script = title_script("joins", &url_a("basic.html?joined=1"), 2000);
        let joined = spawn_run(
            &script,
            &bl.ws(&format!("/devtools/browser/{}", browsers[0])),
            None,
        );
        let t0 = Instant::now();
        let mut seen = None;
        while seen.is_none() && t0.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            seen = bl
                .sessions()
                .into_iter()
                .find(|(t, _, u)| t == "page" && u.contains("joined=1"))
                .map(|(_, b, _)| b);
        }
        assert_eq!(
            seen.as_ref(),
            Some(&browsers[0]),
            "the joining engine's page"
        );
        let out = joined.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Its detach left this engine's browser running.
        assert!(ex.execute(Some(id), "get_title", json!({})).await.ok);
        crash_and_see_it(&ex, other).await;
        assert!(ex.execute(Some(id), "get_title", json!({})).await.ok);
        let config = ex.execute(Some(id), "get_config", json!({})).await;
        let shown = config.data["cdpUrl"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            shown.ends_with("token=***") && !shown.contains(&token),
            "{shown}"
        );
        ex.execute(None, "shutdown", json!({})).await;
    });
    // Detaching ends the session: the slot is free again.
    bl.idle();
}

#[test]
fn browserless_session_timeout_is_browser_gone_with_its_reason_and_start_reconnects() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let mut config = test_config();
    config.launch = LaunchConfig {
        cdp_url: Some(format!("{}&timeout=8000", bl.ws("/chromium"))),
        ..LaunchConfig::default()
    };
    private(config, move |ex| async move {
        let (id, _) = start(&ex).await;
        let nav = ex
            .execute(Some(id), "navigate", json!({"url": url_a("basic.html")}))
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        // The session ends 8 s after it began; poll past it.
        let t0 = Instant::now();
        let r = loop {
            let r = ex.execute(Some(id), "get_title", json!({})).await;
            if !r.ok || t0.elapsed() > Duration::from_secs(30) {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        assert_eq!(r.code, Some(ErrorCode::BrowserGone), "{:?}", r.msg);
        let msg = r.msg.clone().unwrap_or_default();
        assert!(msg.contains("408") && msg.contains("TIMEOUT"), "{msg}");
        assert!(msg.contains("the next `start` connects again"), "{msg}");
        // The next start connects again, to a new session.
        let (again, _) = start(&ex).await;
        let nav = ex
            .execute(
                Some(again),
                "navigate",
                json!({"url": url_a("second.html")}),
            )
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        let title = ex.execute(Some(again), "get_title", json!({})).await;
        assert_eq!(title.data["title"], "Second", "{:?}", title.msg);
        ex.execute(None, "shutdown", json!({})).await;
    });
}

#[test]
fn browserless_over_wss_quotes_its_session_timeout_too() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let Some(proxy) = TlsProxy::start(bl.port) else {
        return;
    };
    let script = script_file(
        "wss-timeout",
        &format!(
            "local page = browser.start{{}}\n\
             page:navigate{{ url = {:?} }}:unwrap()\n\
             local r\n\
             for _ = 1, 120 do r = page:get_title{{}}; if not r.ok then break end; browser.sleep(250) end\n\
             print(r.code, r.msg)\n",
            url_a("basic.html")
        ),
    );
    // TLS is the engine's own, under the tail it reads the endpoint's last words from.
    let url = format!(
        "wss://localhost:{}/chromium?token={}&timeout=6000",
        proxy.port, bl.token
    );
    let (code, stdout, stderr) =
        outcome(attached(&script, &url, false).env("SSL_CERT_FILE", proxy.dir.join("ca.pem")));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("BROWSER_GONE"), "{stdout}");
    assert!(
        stdout.contains("`HTTP/1.1 408 Request Timeout`") && stdout.contains("TIMEOUT"),
        "{stdout}"
    );
    assert!(!stdout.contains(&bl.token), "{stdout}");
}

#[test]
fn browserless_url_forms_users_paste_all_work() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let script = title_script("forms", &url_a("basic.html"), 0);
    let forms = [
        (bl.http.clone(), false),
        (
            format!("http://127.0.0.1:{}/?token={}", bl.port, bl.token),
            false,
        ),
        (
            format!("ws://127.0.0.1:{}?token={}", bl.port, bl.token),
            false,
        ),
        (bl.ws("/chromium"), true),
    ];
    for (url, env) in forms {
        // A log level set: chromiumoxide's drift warnings and the WebSocket library's
        // handshake lines (with the token) stay off all the same.
        let (code, stdout, stderr) =
            outcome(attached(&script, &url, env).env("MOONPILOT_LOG", "debug"));
        assert_eq!(code, Some(0), "{url}: {stderr}");
        assert!(stdout.contains("title: Basic"), "{stdout}");
        assert!(!stderr.contains("WS Invalid message"), "{stderr}");
        assert!(
            !stderr.contains(&bl.token),
            "the token stays out of the log"
        );
    }
    let no_token = format!("ws://127.0.0.1:{}/chromium", bl.port);
    let (code, _, err) = outcome(&mut attached(&script, &no_token, false));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("HTTP 401") && err.contains("token"), "{err}");
}

/// A child process killed when dropped (a failed assertion must not leave it holding a fleet
/// slot for the next test).
struct Run(Option<std::process::Child>);

impl Run {
    fn child(&mut self) -> &mut std::process::Child {
        self.0.as_mut().unwrap()
    }

    fn wait_with_output(mut self) -> std::io::Result<std::process::Output> {
        self.0.take().unwrap().wait_with_output()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `moonpilot run` on `script` against `url` in the background.
fn spawn_run(script: &std::path::Path, url: &str, wait: Option<u64>) -> Run {
    let mut c = attached(script, url, false);
    if let Some(secs) = wait {
        c.arg("--cdp-wait").arg(secs.to_string());
    }
    Run(Some(
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

#[test]
fn browserless_three_engines_with_a_limit_of_two_all_finish_one_browser_each() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let url = bl.ws("/chromium");
    let mut children: Vec<_> = (1..=3)
        .map(|k| {
            let script = title_script(
                &format!("engine{k}"),
                &url_a(&format!("basic.html?engine={k}")),
                3000,
            );
            spawn_run(&script, &url, None)
        })
        .collect();
    let t0 = Instant::now();
    let (mut most, mut queued_seen) = (0, false);
    // browserId → the engines whose pages it held.
    let mut held: std::collections::HashMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    let mut done = [None; 3];
    while done.iter().any(Option::is_none) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the engines did not finish"
        );
        let sessions = bl.sessions();
        most = most.max(sessions.iter().filter(|(t, _, _)| t == "browser").count());
        for (t, browser, url) in &sessions {
            if let (true, Some(k)) = (t == "page", url.split("engine=").nth(1)) {
                held.entry(browser.clone())
                    .or_default()
                    .insert(k.to_string());
            }
        }
        queued_seen |= bl.pressure().1 >= 1;
        for (k, child) in children.iter_mut().enumerate() {
            if done[k].is_none() {
                done[k] = child.child().try_wait().unwrap();
            }
        }
        nap(Duration::from_millis(200));
    }
    for (k, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "engine {}: {}",
            k + 1,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("title: Basic"));
    }
    assert!(most <= 2, "at most CONCURRENT browsers at once, saw {most}");
    assert!(queued_seen, "the third engine waited in the queue");
    // One Chromium per engine: three browsers, each holding one engine's pages.
    assert_eq!(held.len(), 3, "{held:?}");
    let engines: std::collections::BTreeSet<_> = held.values().flatten().cloned().collect();
    assert_eq!(engines.len(), 3, "{held:?}");
    assert!(held.values().all(|e| e.len() == 1), "{held:?}");
}

#[test]
fn browserless_a_full_queue_ends_at_the_cdp_wait_with_a_start_error() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let url = bl.ws("/chromium");
    let hold = title_script("holder", &url_a("basic.html"), 8000);
    let holders: Vec<_> = (0..2).map(|_| spawn_run(&hold, &url, None)).collect();
    let t0 = Instant::now();
    while bl.pressure().0 < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the holders did not start"
        );
        nap(Duration::from_millis(100));
    }
    let script = title_script("queued", &url_a("basic.html"), 0);
    let t0 = Instant::now();
    let out = spawn_run(&script, &url, Some(2))
        .wait_with_output()
        .unwrap();
    let waited = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("opened no browser within 2 s"), "{err}");
    assert!(err.contains("queued 1"), "its /pressure is quoted: {err}");
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
    for h in holders {
        let out = h.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- `moonpilot test` on a remote browser ----

/// Runs a suite of four tests with two workers on the browser at `url`: each test checks that
/// it runs there (an attached browser, `mode: "cdp"`) and reads its page. The output.
fn test_suite_on(name: &str, url: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!(
        "moonpilot-remote-tests-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let page = url_a("basic.html");
    let tests: String = (1..=4)
        .map(|n| {
            format!(
                "it('remote {n}', function(page)\n\
                   page:navigate{{ url = {page:?} }}:unwrap()\n\
                   expect(browser.call('list_tasks').data.browser.mode):to_equal('cdp')\n\
                   expect(page):to_have_title{{ title = 'Basic' }}\n\
                 end)\n"
            )
        })
        .collect();
    std::fs::write(dir.join("remote_spec.lua"), tests).unwrap();
    let out = moonpilot()
        .current_dir(&dir)
        .args([
            "test",
            "--workers",
            "2",
            "--no-trace",
            "--no-capture",
            "--cdp-url",
            url,
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn moonpilot_test_runs_its_workers_on_an_attached_browser_and_leaves_it_as_it_was() {
    let mut remote = RemoteChromium::launch("tests");
    let (code, text) = test_suite_on("attached", &format!("http://127.0.0.1:{}", remote.port));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("Running 4 tests using 2 workers") && text.contains("4 passed"),
        "{text}"
    );
    assert!(remote.answers(), "the attached browser is left running");
    // Every test's page and context is closed: only the browser's own first tab is left.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", remote.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(
        !answer.contains("basic.html"),
        "a test's page is left: {answer}"
    );
}

#[test]
fn browserless_runs_moonpilot_tests_workers() {
    let Some(bl) = browserless() else { return };
    bl.idle();
    let (code, text) = test_suite_on("browserless", &bl.ws("/chromium"));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("4 passed"), "{text}");
    bl.idle();
}

/// The Selenium Grid `tools/test-grid` started (`MOONPILOT_TEST_GRID`), or `None` with a note.
fn grid() -> Option<String> {
    match std::env::var("MOONPILOT_TEST_GRID") {
        Ok(url) => Some(url),
        Err(_) => {
            eprintln!("skipped: MOONPILOT_TEST_GRID is unset (tools/test-grid sets it)");
            None
        }
    }
}

/// The session ids the Grid holds now.
fn grid_sessions(grid: &str) -> Vec<String> {
    let out = Command::new("curl")
        .args(["-sf", &format!("{grid}/status")])
        .output()
        .expect("curl");
    let v: Value = serde_json::from_slice(&out.stdout).expect("the Grid's /status is JSON");
    v["value"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|n| n["slots"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["session"]["sessionId"].as_str().map(str::to_string))
        .collect()
}

/// Asserts that the Grid holds no session within 10 s (a deleted one goes at once; its
/// browser a moment later).
fn assert_no_grid_session(grid: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !grid_sessions(grid).is_empty() && Instant::now() < deadline {
        nap(Duration::from_millis(200));
    }
    assert!(grid_sessions(grid).is_empty(), "{:?}", grid_sessions(grid));
}

/// `moonpilot run` of `script` with `args`: exit code, stdout, stderr.
fn run_with(script: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("moonpilot-grid-{}", TaskId::generate()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("job.lua");
    std::fs::write(&file, script).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("run")
        .arg(&file)
        .args(args)
        .env("MOONPILOT_STATE_DIR", dir.join("state"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn grid_hands_out_a_browser_that_runs_tasks_and_its_session_goes_with_the_engine() {
    let Some(grid) = grid() else { return };
    assert!(grid_sessions(&grid).is_empty(), "a clean Grid to begin");
    let script = format!(
        r##"
        local a = browser.start{{}}
        local b = browser.start{{ locale = "de-DE" }}
        a:navigate{{ url = "{page}" }}:unwrap()
        b:navigate{{ url = "{frames}" }}:unwrap()
        -- A cross-site frame through the Grid's proxied socket.
        b:click_element_by_selector{{ selector = "#child-btn", frame = "localhost" }}:unwrap()
        local c = browser.call("get_config"):unwrap()
        print("title", a:get_title():unwrap().title)
        print("child", b:execute_js{{ body = "document.getElementById('child-btn').textContent", frame = "localhost" }}:unwrap().result)
        print("session", c.gridSession)
        print("mode", browser.call("start"):unwrap().browser.mode)
        "##,
        page = url_a("basic.html"),
        frames = url_a("frames.html"),
    );
    let (code, out, err) = run_with(&script, &["--grid", &grid]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("title\tBasic"), "{out}");
    assert!(out.contains("child\tchild clicked 1"), "{out}");
    assert!(out.contains("mode\tcdp"), "{out}");
    let session = out
        .lines()
        .find_map(|l| l.strip_prefix("session\t"))
        .unwrap_or_default()
        .to_string();
    assert_eq!(session.len(), 32, "a WebDriver session id: {out}");
    // The engine stopped: the Grid holds no session (and no Chromium of it).
    assert_no_grid_session(&grid);
}

#[test]
fn grid_full_and_refused_sessions_are_start_errors_with_the_grids_word() {
    let Some(grid) = grid() else { return };
    // Every slot taken by other clients.
    let hold = |_: usize| {
        let out = Command::new("curl")
            .args([
                "-sf",
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json; charset=utf-8",
                &format!("{grid}/session"),
                "-d",
                r#"{"capabilities":{"alwaysMatch":{"browserName":"chrome","goog:chromeOptions":{"args":["--headless=new","--no-sandbox"]}}}}"#,
            ])
            .output()
            .expect("curl");
        let v: Value = serde_json::from_slice(&out.stdout).expect("a session");
        v["value"]["sessionId"].as_str().expect("an id").to_string()
    };
    let held: Vec<String> = (0..2).map(hold).collect();
    let t0 = Instant::now();
    let (code, out, err) = run_with("browser.start{}", &["--grid", &grid, "--cdp-wait", "3"]);
    let took = t0.elapsed();
    for id in &held {
        let _ = Command::new("curl")
            .args(["-sf", "-X", "DELETE", &format!("{grid}/session/{id}")])
            .output();
    }
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("handed out no session within 3 s"),
        "a full Grid says so: {err}"
    );
    assert!(took < Duration::from_secs(40), "{took:?}");
    // A path where no Grid is: refused, with what the server said.
    let (code, _, err) = run_with("browser.start{}", &["--grid", &format!("{grid}/nope")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("refused a session (404)"), "{err}");
    assert_no_grid_session(&grid);
}
