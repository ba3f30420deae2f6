//! Origins and hosts at every HTTP door (issue 42 §1): the seed port (the command and upload
//! endpoints, the views, `/data`, `/report/<task>`), `/mcp` and the Splash port refuse a
//! foreign `Origin` and a foreign `Host` (DNS rebinding) and start nothing; their JSON
//! endpoints take `application/json` only; CORS echoes allowed origins, never `*`;
//! `--allowed-origins` / `--allowed-hosts` widen them. Raw HTTP on loopback, then a real page on
//! a foreign origin (`http://evil.test`, mapped to loopback by Chromium's host resolver) that
//! tries every door with `fetch`. Also the Splash port's credential (issue 35 §4).
//!
//! Refusals are checked on doors over a fresh engine that never starts a browser, so "nothing
//! started" is exact: no task, no browser, no request to the page a refused render names.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use moonpilot::door::http::AllowLists;
use moonpilot::mcp::McpOptions;
use moonpilot::server::{serve, ServeOptions};
use moonpilot::splash::SplashOptions;
use moonpilot::{Engine, Executor};
use serde_json::{json, Value};

use super::support::harness::{harness, private, state_dir, test_config, url_a};
use super::support::http::{request, Reply};

/// A foreign web origin (its port is any).
const EVIL: &str = "http://evil.test:8000";

/// The seed port (with `/mcp`) and the Splash port of one engine.
struct Doors {
    seed: SocketAddr,
    splash: SocketAddr,
    executor: Executor,
}

/// Which port a request goes to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Port {
    Seed,
    Splash,
}

/// One request to a door.
struct Call {
    what: &'static str,
    port: Port,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, &'static str)>,
    body: Vec<u8>,
}

/// Both servers over `executor` with `allowed`, on the harness runtime.
fn doors(executor: Executor, allowed: AllowLists) -> Doors {
    let h = harness();
    h.runtime.block_on(async move {
        let seed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let splash = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addrs = (seed.local_addr().unwrap(), splash.local_addr().unwrap());
        let opts = ServeOptions {
            port: 0,
            mcp: Some(McpOptions::default()),
            allowed: allowed.clone(),
            ..ServeOptions::default()
        };
        tokio::spawn(serve(executor.clone(), seed, opts, std::future::pending()));
        let opts = SplashOptions {
            port: 0,
            max_timeout: 20.0,
            allowed,
            ..SplashOptions::default()
        };
        tokio::spawn(moonpilot::splash::http::serve(
            executor.clone(),
            splash,
            opts,
            std::future::pending(),
        ));
        Doors {
            seed: addrs.0,
            splash: addrs.1,
            executor,
        }
    })
}

/// Doors over an engine of their own that has started nothing (no task, no browser).
fn fresh(allowed: AllowLists) -> Doors {
    let executor = harness().runtime.block_on(async {
        Executor::new(Engine::new(test_config()), moonpilot::lua::recipe_host())
    });
    doors(executor, allowed)
}

fn lists(hosts: &[&str], origins: &[&str]) -> AllowLists {
    AllowLists {
        hosts: hosts.iter().map(|s| s.to_string()).collect(),
        origins: origins.iter().map(|s| s.to_string()).collect(),
    }
}

/// A name no other test uses.
fn unique(stem: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{stem}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// The fixture page `/guarded?key=KEY`, which counts the GETs it gets per key.
fn guarded_url(key: &str) -> String {
    url_a(&format!("guarded?key={key}"))
}

/// How many times a page fetched [`guarded_url`]`(key)`.
fn guarded_hits(key: &str) -> u64 {
    harness().fixtures.count(&format!("guarded-without-{key}"))
}

const MCP_HEADERS: [(&str, &str); 2] = [
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2025-11-25"),
];

fn mcp_initialize() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "doors-test", "version": "0"}}})
    .to_string()
    .into_bytes()
}

/// A request to every door, each one that would change something if it ran: `start`, a staged
/// upload named `key`, a render of [`guarded_url`]`(key)`, an MCP session; and the read-only
/// ones (views, `/data`, `/report`).
fn every_door(key: &str) -> Vec<Call> {
    let json_ct = ("Content-Type", "application/json");
    let splash_script = json!({
        "lua_source": "function main(splash, args)\n  splash:go(args.url)\n  return 1\nend",
        "url": guarded_url(key),
    });
    vec![
        Call {
            what: "seed command",
            port: Port::Seed,
            method: "POST",
            path: "/playwright/command".into(),
            headers: vec![json_ct],
            body: br#"{"method":"start"}"#.to_vec(),
        },
        Call {
            what: "seed upload",
            port: Port::Seed,
            method: "POST",
            path: format!("/playwright/upload?filename={key}.txt"),
            headers: vec![("Content-Type", "text/plain")],
            body: b"from a web page".to_vec(),
        },
        Call {
            what: "seed view",
            port: Port::Seed,
            method: "GET",
            path: "/playwright/tasks".into(),
            headers: vec![],
            body: vec![],
        },
        Call {
            what: "seed data",
            port: Port::Seed,
            method: "GET",
            path: "/data/1/1.png".into(),
            headers: vec![],
            body: vec![],
        },
        Call {
            what: "seed report",
            port: Port::Seed,
            method: "GET",
            path: "/report/1".into(),
            headers: vec![],
            body: vec![],
        },
        Call {
            what: "mcp",
            port: Port::Seed,
            method: "POST",
            path: "/mcp".into(),
            headers: vec![json_ct, MCP_HEADERS[0], MCP_HEADERS[1]],
            body: mcp_initialize(),
        },
        Call {
            what: "splash execute",
            port: Port::Splash,
            method: "POST",
            path: "/execute".into(),
            headers: vec![json_ct],
            body: splash_script.to_string().into_bytes(),
        },
        Call {
            what: "splash render.html",
            port: Port::Splash,
            method: "GET",
            path: format!(
                "/render.html?url={}",
                percent_encoding::utf8_percent_encode(
                    &guarded_url(key),
                    percent_encoding::NON_ALPHANUMERIC
                )
            ),
            headers: vec![],
            body: vec![],
        },
    ]
}

/// Sends `call` with `extra` headers; every answer is checked never to allow any origin (`*`).
fn send(doors: &Doors, call: &Call, extra: &[(&str, &str)]) -> Reply {
    let addr = match call.port {
        Port::Seed => doors.seed,
        Port::Splash => doors.splash,
    };
    let mut headers: Vec<(&str, &str)> = call.headers.clone();
    headers.extend_from_slice(extra);
    let r = request(addr, call.method, &call.path, &headers, &call.body);
    assert_ne!(
        r.header("access-control-allow-origin"),
        Some("*"),
        "{}: no door allows every origin",
        call.what
    );
    r
}

/// A refusal in the door's own shape whose message names `flag`.
fn refused(call: &Call, r: &Reply, status: u16, flag: &str) {
    let v = r.json();
    assert_eq!(r.status, status, "{}: {v}", call.what);
    let msg = match call.port {
        // `/mcp` in MCP's own shape: a JSON-RPC error with no id.
        Port::Seed if call.path.starts_with("/mcp") => {
            assert_eq!(v["jsonrpc"], "2.0", "{}: {v}", call.what);
            assert_eq!(v["id"], Value::Null, "{}: {v}", call.what);
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
        Port::Seed => {
            assert_eq!(v["ok"], false, "{}: {v}", call.what);
            assert_eq!(v["code"], 0, "{}: {v}", call.what);
            v["msg"].as_str().unwrap_or_default().to_string()
        }
        Port::Splash => {
            assert_eq!(v["error"], status, "{}: {v}", call.what);
            assert_eq!(v["type"], "Forbidden", "{}: {v}", call.what);
            v["description"].as_str().unwrap_or_default().to_string()
        }
    };
    assert!(
        msg.contains(flag),
        "{}: {msg} should name {flag}",
        call.what
    );
    assert_eq!(
        r.header("access-control-allow-origin"),
        None,
        "{}",
        call.what
    );
}

/// Nothing ran on the fresh engine of `doors`: no task, no browser, no staged upload named
/// `key`, no request to the guarded page of `key`.
fn nothing_started(doors: &Doors, key: &str) {
    let engine = doors.executor.engine();
    assert!(engine.tasks().is_empty(), "a task was started");
    assert!(engine.current_browser().is_none(), "a browser was launched");
    let staged = engine.config.upload_dir.join(format!("{key}.txt"));
    assert!(!staged.exists(), "{} was staged", staged.display());
    assert_eq!(guarded_hits(key), 0, "the refused render loaded its page");
}

#[test]
fn a_foreign_origin_is_refused_at_every_door_and_starts_nothing() {
    let doors = fresh(AllowLists::default());
    let key = unique("origin");
    for origin in [
        EVIL,
        "null",
        "http://localhost.evil.test",
        "https://127.0.0.2",
    ] {
        for call in every_door(&key) {
            let r = send(&doors, &call, &[("Origin", origin)]);
            refused(&call, &r, 403, "--allowed-origins");
            if origin == EVIL {
                // The message names the origin to allow.
                assert!(String::from_utf8_lossy(&r.body).contains(EVIL));
            }
        }
    }
    // A preflight from a foreign origin gets no allow headers.
    for call in every_door(&key).iter().filter(|c| c.method == "POST") {
        let preflight = Call {
            method: "OPTIONS",
            headers: vec![("Access-Control-Request-Method", "POST")],
            body: vec![],
            what: call.what,
            port: call.port,
            path: call.path.clone(),
        };
        let r = send(&doors, &preflight, &[("Origin", EVIL)]);
        refused(&preflight, &r, 403, "--allowed-origins");
        assert_eq!(r.header("access-control-allow-methods"), None);
    }
    nothing_started(&doors, &key);
}

/// Browsers send no `Origin` with a GET that is not a CORS request (`<img src>`, a link,
/// `location = …`): a foreign page's `Sec-Fetch-Site` and `Referer` give it away.
#[test]
fn a_foreign_page_without_origin_is_known_by_its_fetch_metadata() {
    let doors = fresh(AllowLists::default());
    let key = unique("unnamed");
    for (site, referer) in [
        ("cross-site", Some("http://evil.test:8000/")),
        ("cross-site", None),
        ("same-site", Some("http://127.0.0.1.evil.test/page")),
    ] {
        for mode in ["no-cors", "navigate"] {
            let mut extra = vec![("Sec-Fetch-Site", site), ("Sec-Fetch-Mode", mode)];
            extra.extend(referer.map(|r| ("Referer", r)));
            for call in every_door(&key) {
                let r = send(&doors, &call, &extra);
                // A navigation to the seed port's GETs (a link to a report) is answered: they
                // change nothing. Splash's GETs run scripts.
                if mode == "navigate" && call.port == Port::Seed && call.method == "GET" {
                    assert_ne!(r.status, 403, "{} {extra:?}", call.what);
                    continue;
                }
                refused(&call, &r, 403, "--allowed-origins");
            }
        }
    }
    nothing_started(&doors, &key);
    // A loopback page's `<img>` (its `Referer`) is a web page's request too: refused unless
    // named; the address bar (`none`) is answered.
    let ping = |extra: &[(&str, &str)]| request(doors.splash, "GET", "/_ping", extra, b"");
    let r = ping(&[
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "no-cors"),
        ("Referer", "http://localhost:5173/dashboard"),
    ]);
    assert_eq!(r.status, 403);
    let r = ping(&[("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate")]);
    assert_eq!(r.status, 200);
}

#[test]
fn a_foreign_host_is_refused_at_every_door_and_starts_nothing() {
    let doors = fresh(AllowLists::default());
    let key = unique("host");
    for host in [
        "evil.test",
        "evil.test:10049",
        "127.0.0.1.evil.test",
        "192.0.2.7",
    ] {
        for call in every_door(&key) {
            // A DNS-rebinding page is same-origin with its Host: no `Origin` on a GET.
            let r = send(&doors, &call, &[("Host", host)]);
            refused(&call, &r, 403, "--allowed-hosts");
        }
    }
    nothing_started(&doors, &key);
    // Loopback names, with any port, are answered.
    for host in ["localhost", "localhost:1", "127.0.0.1:10049", "[::1]:8050"] {
        let r = request(
            doors.seed,
            "GET",
            "/playwright/health",
            &[("Host", host)],
            b"",
        );
        assert_eq!(r.status, 200, "{host}");
        let r = request(doors.splash, "GET", "/_ping", &[("Host", host)], b"");
        assert_eq!(r.status, 200, "{host}");
    }
}

#[test]
fn json_endpoints_take_application_json_only() {
    let doors = fresh(AllowLists::default());
    let key = unique("ctype");
    let json_endpoints: Vec<Call> = every_door(&key)
        .into_iter()
        .filter(|c| matches!(c.what, "seed command" | "mcp" | "splash execute"))
        .collect();
    assert_eq!(json_endpoints.len(), 3);
    for call in &json_endpoints {
        for ct in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("text/plain; x=application/json"),
            None,
        ] {
            let mut headers: Vec<(&str, &str)> = call
                .headers
                .iter()
                .copied()
                .filter(|(k, _)| *k != "Content-Type")
                .collect();
            if let Some(ct) = ct {
                headers.push(("Content-Type", ct));
            }
            let addr = match call.port {
                Port::Seed => doors.seed,
                Port::Splash => doors.splash,
            };
            let r = request(addr, "POST", &call.path, &headers, &call.body);
            assert_eq!(r.status, 415, "{} with {ct:?}", call.what);
            let v = r.json();
            if call.path.starts_with("/mcp") {
                assert_eq!(v["error"]["code"], -32000, "{v}");
                assert!(
                    v["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("application/json"),
                    "{v}"
                );
            } else if call.port == Port::Seed {
                assert_eq!(v["ok"], false);
                assert!(
                    v["msg"].as_str().unwrap().contains("application/json"),
                    "{v}"
                );
            } else {
                assert_eq!(v["type"], "UnsupportedContentType", "{v}");
            }
        }
    }
    nothing_started(&doors, &key);
    // `application/json` with a charset reaches the endpoint.
    let r = request(
        doors.seed,
        "POST",
        "/playwright/command",
        &[("Content-Type", "application/json; charset=utf-8")],
        br#"{"method":"list_methods"}"#,
    );
    assert_eq!(r.json()["ok"], true, "{}", r.json());
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Content-Type", "Application/JSON; charset=utf-8"));
    let r = request(doors.seed, "POST", "/mcp", &headers, &mcp_initialize());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("mcp-session-id").is_some());
    // Splash's argument check answers (no `lua_source`): the body got through.
    let r = request(
        doors.splash,
        "POST",
        "/execute",
        &[("Content-Type", "application/json; charset=utf-8")],
        b"{}",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["type"], "BadOption", "{}", r.json());
    // Splash's script body and a POST without a body (arguments in the query) still pass.
    let r = request(
        doors.splash,
        "POST",
        "/execute?timeout=abc",
        &[("Content-Type", "application/javascript")],
        b"1",
    );
    assert_eq!(r.json()["type"], "BadOption", "{}", r.json());
    let r = request(doors.splash, "POST", "/execute?timeout=abc", &[], b"");
    assert_eq!(r.json()["type"], "BadOption", "{}", r.json());
    // The upload endpoint is not a JSON endpoint: raw bytes stay welcome.
    let r = request(
        doors.seed,
        "POST",
        &format!("/playwright/upload?filename={key}-raw.txt"),
        &[("Content-Type", "text/plain")],
        b"raw",
    );
    assert_eq!(r.json()["ok"], true, "{}", r.json());
    assert!(doors.executor.engine().tasks().is_empty());
}

#[test]
fn named_origins_and_no_origin_reach_every_door() {
    let h = harness();
    // A loopback page is refused like any web page unless named (the browser the engine drives
    // can open one): named here.
    let unnamed = doors(h.executor.clone(), AllowLists::default());
    let start = &every_door("unused")[0];
    let r = send(&unnamed, start, &[("Origin", "http://localhost:5173")]);
    refused(start, &r, 403, "--allowed-origins");
    let named = AllowLists {
        hosts: Vec::new(),
        origins: [
            "http://localhost:5173",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
        ]
        .map(str::to_string)
        .to_vec(),
    };
    let doors = doors(h.executor.clone(), named);
    for origin in [
        None,
        Some("http://localhost:5173"),
        Some("https://127.0.0.1:8443"),
        Some("http://[::1]:3000"),
    ] {
        let extra: Vec<(&str, &str)> = origin.iter().map(|o| ("Origin", *o)).collect();
        let echo = |r: &Reply, what: &str| {
            assert_eq!(r.header("access-control-allow-origin"), origin, "{what}");
        };
        // The seed protocol: a task from start to its report.
        let start = &every_door("unused")[0];
        let r = send(&doors, start, &extra);
        let v = r.json();
        assert_eq!(v["ok"], true, "{v}");
        echo(&r, "command");
        assert_eq!(r.header("vary"), Some("Origin"));
        let id = v["data"]["id"].as_str().unwrap().to_string();
        let nav = json!({"id": id, "method": "go_to_url", "params": {"url": url_a("basic.html")}});
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend_from_slice(&extra);
        let r = request(
            doors.seed,
            "POST",
            "/playwright/command",
            &headers,
            nav.to_string().as_bytes(),
        );
        assert_eq!(r.json()["ok"], true, "{}", r.json());
        let r = request(doors.seed, "GET", &format!("/report/{id}"), &extra, b"");
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let close = json!({"id": id, "method": "close"});
        request(
            doors.seed,
            "POST",
            "/playwright/command",
            &headers,
            close.to_string().as_bytes(),
        );
        // A preflight of an allowed origin is answered with the allow headers.
        if let Some(o) = origin {
            let r = request(
                doors.seed,
                "OPTIONS",
                "/playwright/command",
                &[("Origin", o), ("Access-Control-Request-Method", "POST")],
                b"",
            );
            assert_eq!(r.status, 204);
            echo(&r, "preflight");
            assert!(r
                .header("access-control-allow-headers")
                .unwrap()
                .contains("Content-Type"));
        }
        let key = unique("loopback");
        for call in every_door(&key) {
            let r = send(&doors, &call, &extra);
            assert!(
                r.status != 403 && r.status != 415,
                "{} from {origin:?}: {} {}",
                call.what,
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            match call.what {
                "seed command" => {
                    let id = r.json()["data"]["id"].as_str().unwrap().to_string();
                    request(
                        doors.seed,
                        "POST",
                        "/playwright/command",
                        &headers,
                        json!({"id": id, "method": "close"}).to_string().as_bytes(),
                    );
                }
                "seed upload" => {
                    echo(&r, "upload");
                    assert_eq!(r.json()["ok"], true, "{}", r.json());
                }
                "mcp" => assert!(r.header("mcp-session-id").is_some()),
                "splash execute" => assert_eq!(r.body, b"1"),
                "splash render.html" => assert_eq!(r.status, 200),
                _ => {}
            }
        }
        assert_eq!(guarded_hits(&key), 2, "both renders loaded their page");
    }
}

#[test]
fn allowed_origins_and_hosts_widen_the_doors() {
    let key = unique("widen");
    for allowed in [
        lists(&["evil.test"], &["http://evil.test:*"]),
        lists(&["evil.test:8000", "other.test"], &[EVIL, "null"]),
        lists(&["*"], &["*"]),
    ] {
        let doors = fresh(allowed.clone());
        let through = |call: &Call, host: &str, origin: &str| {
            let r = send(&doors, call, &[("Host", host), ("Origin", origin)]);
            assert!(
                r.status != 403,
                "{} with {allowed:?}: {}",
                call.what,
                String::from_utf8_lossy(&r.body)
            );
            r
        };
        let list_methods = Call {
            what: "seed command",
            port: Port::Seed,
            method: "POST",
            path: "/playwright/command".into(),
            headers: vec![("Content-Type", "application/json")],
            body: br#"{"method":"list_methods"}"#.to_vec(),
        };
        let r = through(&list_methods, "evil.test:8000", EVIL);
        assert_eq!(r.json()["ok"], true);
        assert_eq!(r.header("access-control-allow-origin"), Some(EVIL));
        assert_eq!(r.header("vary"), Some("Origin"));
        let mcp = every_door(&key).remove(5);
        assert_eq!(mcp.what, "mcp");
        assert_eq!(through(&mcp, "evil.test:8000", EVIL).status, 200);
        let ping = Call {
            what: "splash ping",
            port: Port::Splash,
            method: "GET",
            path: "/_ping".into(),
            headers: vec![],
            body: vec![],
        };
        assert_eq!(through(&ping, "evil.test:8000", EVIL).status, 200);
        let report = every_door(&key).remove(4);
        assert_eq!(report.what, "seed report");
        assert_eq!(through(&report, "evil.test:8000", EVIL).status, 404);
        if allowed.origins == ["*"] {
            // Any origin is echoed as itself, never as `*`.
            let r = through(&list_methods, "box.lan", "https://anywhere.example");
            assert_eq!(
                r.header("access-control-allow-origin"),
                Some("https://anywhere.example")
            );
            continue;
        }
        // What the lists do not name stays refused.
        let r = send(&doors, &list_methods, &[("Origin", "http://other.example")]);
        refused(&list_methods, &r, 403, "--allowed-origins");
        let r = send(&doors, &ping, &[("Host", "unlisted.test")]);
        refused(&ping, &r, 403, "--allowed-hosts");
        assert!(doors.executor.engine().tasks().is_empty());
    }
}

#[test]
fn bad_allow_list_entries_refuse_to_start() {
    for args in [
        ["--allowed-origins", "evil.test"],
        ["--allowed-origins", "http://evil.test/path"],
        ["--allowed-hosts", "http://evil.test"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("MOONPILOT_STATE_DIR", state_dir())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(args[0]), "{args:?}: {err}");
    }
}

/// The address each `http://` line of `moonpilot serve` names, in order (20 s at most).
fn banner_addrs(stream: impl std::io::Read + Send + 'static, n: usize) -> Vec<SocketAddr> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("http://").nth(1) {
                let addr = rest
                    .split([' ', '/'])
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let _ = tx.send(addr.parse::<SocketAddr>().unwrap());
            }
        }
    });
    (0..n)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("the server prints where it listens")
        })
        .collect()
}

/// Issue 35 §4: the Splash port listens where `serve` does (loopback unless `--bind`), and with
/// `--token` every request needs it, as a bearer or as the password of HTTP basic auth (what
/// scrapy-splash sends with `SPLASH_USER` / `SPLASH_PASS`).
#[test]
fn the_splash_port_shares_the_bind_and_takes_the_token_as_basic_auth() {
    const TOKEN: &str = "sp1ash-t0ken";
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args([
            "serve",
            "--port",
            "0",
            "--splash-port",
            "0",
            "--token",
            TOKEN,
        ])
        .env("MOONPILOT_STATE_DIR", state_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let addrs = banner_addrs(child.stdout.take().unwrap(), 2);
    let splash = addrs[0];
    assert!(splash.ip().is_loopback(), "{addrs:?}");
    let basic = |user_pass: &str| {
        format!(
            "Basic {}",
            moonpilot::encoding::encode_base64(user_pass.as_bytes())
        )
    };
    let bad_arg = |auth: Option<&str>| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = auth {
            headers.push(("Authorization", a));
        }
        request(splash, "POST", "/execute", &headers, b"{}")
    };
    for auth in [
        None,
        Some(basic(&format!("user:{TOKEN}x"))),
        Some(basic("user:")),
        Some(basic(TOKEN)),
        Some(format!("Bearer {TOKEN}x")),
        Some("Basic not-base64!".to_string()),
    ] {
        let r = bad_arg(auth.as_deref());
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(r.json()["type"], "Unauthorized");
        assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    }
    for auth in [
        basic(&format!("user:{TOKEN}")),
        basic(&format!(":{TOKEN}")),
        format!("Bearer {TOKEN}"),
    ] {
        let r = bad_arg(Some(&auth));
        assert_eq!(r.status, 400, "{auth}: the argument check answers");
        assert_eq!(r.json()["type"], "BadOption");
        let r = request(splash, "GET", "/_ping", &[("Authorization", &auth)], b"");
        assert_eq!(r.status, 200, "{auth}");
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(20), "serve did not stop");
        super::support::load::pause(Duration::from_millis(50));
    }
}

/// Chromium launched through a wrapper that maps `evil.test` to loopback, as DNS would for a
/// rebinding site.
fn evil_chromium() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let chromium = moonpilot::browser::find_chromium(None).expect("chromium for the test");
    let path = std::env::temp_dir().join(format!("moonpilot-evil-chromium-{}", std::process::id()));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec '{}' --host-resolver-rules='MAP evil.test 127.0.0.1' \"$@\"\n",
            chromium.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The page's attempts: every door, with a JSON body (a preflight first) and with a `text/plain`
/// body (a CORS "simple" request, sent at once), in `cors` and `no-cors` modes. Each answers
/// `rejected`, `opaque` or what the page could read.
const ATTEMPTS_JS: &str = r#"async () => {
  const doors = {{doors}};
  const out = [];
  for (const d of doors) {
    const ways = d.method === "GET"
      ? [["", "cors"], ["", "no-cors"]]
      : [["application/json", "cors"], ["text/plain", "cors"], ["text/plain", "no-cors"]];
    for (const [ct, mode] of ways) {
      const init = d.method === "GET" ? { mode } : { method: "POST", mode, body: d.body, headers: { "Content-Type": ct } };
      let seen;
      try {
        const r = await fetch(d.url, init);
        seen = r.type === "opaque" ? "opaque" : "read " + r.status + " " + (await r.text()).slice(0, 200);
      } catch (e) {
        seen = "rejected";
      }
      out.push(d.what + " " + (d.method === "GET" ? mode : ct + " " + mode) + ": " + seen);
    }
  }
  return out;
}"#;

/// The issue's "done when": a page on a foreign origin, in a real browser, fetches every door
/// with JSON and with text/plain bodies; it reads no answer and starts nothing. A page on a
/// loopback origin cannot either (a loopback page is a web page too).
#[test]
fn a_page_on_a_foreign_origin_can_neither_read_nor_drive_any_door() {
    let mut config = test_config();
    let wrapper = evil_chromium();
    config.launch.chromium = Some(wrapper.clone());
    let fixture_a = harness().fixtures.a.clone();
    let evil_page = format!("{}/basic.html", fixture_a.replace("127.0.0.1", "evil.test"));
    let key = unique("browser");
    let guarded = guarded_url(&key);
    private(config, move |ex| async move {
        let seed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let splash = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (seed_at, splash_at) = (seed.local_addr().unwrap(), splash.local_addr().unwrap());
        let opts = ServeOptions {
            port: 0,
            mcp: Some(McpOptions::default()),
            ..ServeOptions::default()
        };
        tokio::spawn(serve(ex.clone(), seed, opts, std::future::pending()));
        let opts = SplashOptions {
            port: 0,
            max_timeout: 20.0,
            ..SplashOptions::default()
        };
        tokio::spawn(moonpilot::splash::http::serve(
            ex.clone(),
            splash,
            opts,
            std::future::pending(),
        ));
        let page = ex.execute(None, "start", json!({})).await;
        assert!(page.ok, "{:?}", page.msg);
        let task =
            moonpilot::browser::task::TaskId(page.data["id"].as_str().unwrap().parse().unwrap());
        let nav = ex
            .execute(Some(task), "go_to_url", json!({"url": evil_page}))
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        let url = ex.execute(Some(task), "get_url", json!({})).await;
        assert!(
            url.data.to_string().contains("evil.test"),
            "the page is on the foreign origin: {}",
            url.data
        );
        let seed = format!("http://{seed_at}");
        let splash = format!("http://{splash_at}");
        let script = "function main(splash, args)\n  splash:go(args.url)\n  return 1\nend";
        let targets = json!([
            {"what": "seed command", "method": "POST", "url": format!("{seed}/playwright/command"),
             "body": r#"{"method":"start"}"#},
            {"what": "seed upload", "method": "POST",
             "url": format!("{seed}/playwright/upload?filename={key}.txt"), "body": "from a web page"},
            {"what": "seed view", "method": "GET", "url": format!("{seed}/playwright/tasks")},
            {"what": "seed report", "method": "GET", "url": format!("{seed}/report/{}", task.0)},
            {"what": "mcp", "method": "POST", "url": format!("{seed}/mcp"),
             "body": String::from_utf8(mcp_initialize()).unwrap()},
            {"what": "splash execute", "method": "POST", "url": format!("{splash}/execute"),
             "body": json!({"lua_source": script, "url": guarded}).to_string()},
            {"what": "splash render.html", "method": "GET",
             "url": format!("{splash}/render.html?url={}", percent_encoding::utf8_percent_encode(
                 &guarded, percent_encoding::NON_ALPHANUMERIC))},
        ]);
        let tasks_before = ex.engine().tasks().len();
        let tried = ex
            .execute(
                Some(task),
                "execute_js",
                json!({"body": ATTEMPTS_JS, "vars": {"doors": targets}}),
            )
            .await;
        assert!(tried.ok, "{:?} {}", tried.msg, tried.data);
        let lines: Vec<String> = tried.data["result"]
            .as_array()
            .unwrap_or_else(|| panic!("the attempts' lines: {}", tried.data))
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect();
        // Four POST doors three ways, three GET doors two ways.
        assert_eq!(lines.len(), 4 * 3 + 3 * 2, "{lines:#?}");
        for line in &lines {
            assert!(
                line.ends_with(": rejected") || line.ends_with(": opaque"),
                "the page read an answer: {line}"
            );
        }
        assert_eq!(ex.engine().tasks().len(), tasks_before, "{lines:#?}");
        let staged = ex.engine().config.upload_dir.join(format!("{key}.txt"));
        assert!(!staged.exists(), "the page staged {}", staged.display());
        assert_eq!(guarded_hits(&key), 0, "a Splash render ran: {lines:#?}");

        // The same page on a loopback origin: refused too (named nowhere here).
        let nav = ex
            .execute(
                Some(task),
                "go_to_url",
                json!({"url": format!("{fixture_a}/basic.html")}),
            )
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        let read = ex
            .execute(
                Some(task),
                "execute_js",
                json!({"body": "async () => { const r = await fetch({{url}}, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{\"method\":\"list_tasks\"}'}); return (await r.json()).ok; }",
                       "vars": {"url": format!("{seed}/playwright/command")}}),
            )
            .await;
        // A loopback page is a web page too: the browser an agent drives can open one, and it
        // must not reach the seed port's wider rules through it (no answer readable).
        assert_ne!(
            read.data["result"],
            json!(true),
            "{:?} {}",
            read.msg,
            read.data
        );
        ex.execute(None, "shutdown", json!({})).await;
    });
    let _ = std::fs::remove_file(wrapper);
}
