//! Steady under load (`cargo bench --bench soak`): a child `moonpilot serve` (the real binary,
//! defaults: evidence and trace on, recycling on, a fresh state directory) serves the seed
//! protocol, `/mcp` and Splash's port at once for `BENCH_SOAK_SECS` (480; issue 40's hour is
//! 3600) seconds, `BENCH_SOAK_CLIENTS` (4) clients on each:
//! - seed: a task, `basic.html`, `BENCH_SOAK_STEPS` (20) agent steps (`get_browser_state`,
//!   `click_element_by_index` on the button, `get_url`), close; again and again;
//! - MCP (Streamable HTTP): a session, `navigate`, 5 × (`get_browser_state`,
//!   `click_element_by_index`), the session deleted (its task goes with it); again;
//! - Splash: `render.html` of the page, and `execute` of a script that clicks the button and
//!   returns the page's text, in turns (each request a browser context of its own).
//!
//! Checked, and printed as figures against the targets:
//! - per command, the last window's median at most 1.25× the first window's (windows of ten
//!   minutes in an hour's run, of a minute from five minutes on, else a fifth of the run);
//! - the engine's RSS growth under 10 %: its median over the last window against its median over
//!   the window after the first (the warm-up);
//! - its open file descriptors: the most over the last window no more than over that window;
//! - the browser's memory (`get_config`'s `recycle.browserMb`) and the browsers recycled;
//! - no error answer, and no Chromium of this server left once it has stopped.
//!
//! `BENCH_SOAK_ARGS` adds flags to `serve` (e.g. `--no-capture --no-trace`); `BENCH_SOAK_WRAP`
//! runs it under a tool (e.g. `heaptrack -o /tmp/soak`).

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
#[allow(dead_code)]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

#[path = "../tests/support/load.rs"]
#[allow(dead_code)]
mod load;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use figures::env_or;
use serde_json::{json, Value};

/// One answered command: when it started (seconds into the run), what, how long (ms).
type Sample = (f64, &'static str, f64);

/// Memory and descriptors of the server, seconds into the run.
#[derive(Clone, Copy)]
struct Probe {
    at: f64,
    rss_kb: u64,
    fds: usize,
}

fn probe(pid: u32, at: f64) -> Option<Probe> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some(Probe { at, rss_kb, fds })
}

struct Client {
    addr: SocketAddr,
    t0: Instant,
    samples: Vec<Sample>,
    errors: Vec<String>,
}

impl Client {
    fn new(addr: SocketAddr, t0: Instant) -> Client {
        Client {
            addr,
            t0,
            samples: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Times `f` as command `what`: its answer, or `None` after an error (recorded).
    fn timed<T>(&mut self, what: &'static str, f: impl FnOnce() -> Result<T, String>) -> Option<T> {
        let at = self.t0.elapsed().as_secs_f64();
        let started = Instant::now();
        match f() {
            Ok(v) => {
                self.samples
                    .push((at, what, started.elapsed().as_secs_f64() * 1e3));
                Some(v)
            }
            Err(e) => {
                self.errors.push(format!(
                    "{what}: {}",
                    e.chars().take(300).collect::<String>()
                ));
                None
            }
        }
    }

    /// Sends one command, records its time, answers its `data` (or `None` after an error).
    fn call(&mut self, id: Option<&str>, method: &'static str, params: Value) -> Option<Value> {
        let mut body = json!({"method": method, "params": params});
        if let Some(id) = id {
            body["id"] = json!(id);
        }
        let at = self.t0.elapsed().as_secs_f64();
        let started = Instant::now();
        let reply = http::command(self.addr, &body);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let v = reply.json();
        if v["ok"] != true {
            let msg = format!(
                "{method}: {}",
                v.to_string().chars().take(300).collect::<String>()
            );
            self.errors.push(msg);
            return None;
        }
        self.samples.push((at, method, ms));
        Some(v["data"].clone())
    }
}

fn button(state: &Value) -> Option<u64> {
    state["elements"]
        .as_array()?
        .iter()
        .find(|e| e["snapshotTag"] == "button")?["index"]
        .as_u64()
}

/// One MCP message over Streamable HTTP: the reply and its JSON-RPC messages.
fn mcp(addr: SocketAddr, session: Option<&str>, body: &Value) -> (http::Reply, Vec<Value>) {
    let reply = http::mcp_post(addr, session, None, body);
    let msgs = http::mcp_messages(&reply);
    (reply, msgs)
}

/// An MCP tool call's text, or why it failed.
fn mcp_tool(
    addr: SocketAddr,
    session: &str,
    id: u64,
    tool: &str,
    args: Value,
) -> Result<String, String> {
    let (_, msgs) = mcp(
        addr,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}),
    );
    let answer = msgs
        .iter()
        .find(|m| m["id"] == id)
        .ok_or_else(|| format!("no answer to {tool}"))?;
    if answer["result"]["isError"] != false {
        return Err(answer.to_string());
    }
    Ok(answer["result"]["content"]
        .as_array()
        .and_then(|c| c.iter().find_map(|p| p["text"].as_str()))
        .unwrap_or_default()
        .to_string())
}

/// The `[N]` of the first line of an observation that holds `needle`.
fn index_in(text: &str, needle: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.contains(needle))
        .and_then(|l| l.trim_start().trim_start_matches('*').strip_prefix('['))
        .and_then(|l| l.split(']').next())
        .and_then(|n| n.parse().ok())
}

/// One MCP client's run until `end`: sessions of a navigation and five steps each.
fn mcp_client(addr: SocketAddr, t0: Instant, end: Instant, page: String) -> Client {
    let mut c = Client::new(addr, t0);
    while Instant::now() < end {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "moonpilot-soak", "version": "1"}}});
        let Some(session) = c.timed("mcp initialize", || {
            let (reply, _) = mcp(addr, None, &init);
            reply
                .header("mcp-session-id")
                .map(str::to_string)
                .ok_or_else(|| format!("no session ({})", reply.status))
        }) else {
            load::pause(Duration::from_millis(500));
            continue;
        };
        mcp(
            addr,
            Some(&session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        let mut id = 2;
        if c.timed("mcp navigate", || {
            mcp_tool(addr, &session, id, "navigate", json!({"url": page}))
        })
        .is_some()
        {
            for _ in 0..5 {
                if Instant::now() >= end {
                    break;
                }
                id += 1;
                let Some(state) = c.timed("mcp get_browser_state", || {
                    mcp_tool(addr, &session, id, "get_browser_state", json!({}))
                }) else {
                    break;
                };
                let Some(index) = index_in(&state, "<button") else {
                    c.errors.push("mcp: no button in the observation".into());
                    break;
                };
                id += 1;
                c.timed("mcp click_element_by_index", || {
                    mcp_tool(
                        addr,
                        &session,
                        id,
                        "click_element_by_index",
                        json!({"index": index}),
                    )
                });
            }
        }
        c.timed("mcp delete", || {
            let r = http::request(
                addr,
                "DELETE",
                "/mcp",
                &[
                    ("Mcp-Session-Id", session.as_str()),
                    ("MCP-Protocol-Version", "2025-11-25"),
                ],
                b"",
            );
            (r.status < 300)
                .then_some(())
                .ok_or(format!("{}", r.status))
        });
    }
    c
}

/// One Splash client's run until `end`: render.html and execute, in turns.
fn splash_client(addr: SocketAddr, t0: Instant, end: Instant, page: String) -> Client {
    let mut c = Client::new(addr, t0);
    let script = "function main(splash, args)\n  assert(splash:go(args.url))\n  \
                  splash:select('button'):mouse_click()\n  splash:wait(0.1)\n  \
                  return {text = splash:evaljs('document.body.innerText')}\nend";
    let mut turn = 0u64;
    while Instant::now() < end {
        turn += 1;
        if turn.is_multiple_of(2) {
            let path = format!("/render.html?url={}", url_escape(&page));
            c.timed("splash render.html", || {
                let r = http::request(addr, "GET", &path, &[], b"");
                (r.status == 200)
                    .then_some(())
                    .ok_or_else(|| format!("{} {}", r.status, String::from_utf8_lossy(&r.body)))
            });
        } else {
            let body = json!({"lua_source": script, "url": page}).to_string();
            c.timed("splash execute", || {
                let r = http::request(
                    addr,
                    "POST",
                    "/execute",
                    &[("Content-Type", "application/json")],
                    body.as_bytes(),
                );
                (r.status == 200)
                    .then_some(())
                    .ok_or_else(|| format!("{} {}", r.status, String::from_utf8_lossy(&r.body)))
            });
        }
    }
    c
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One seed-protocol client's run until `end`: tasks of `steps` agent steps each.
fn client(addr: SocketAddr, t0: Instant, end: Instant, page: String, steps: usize) -> Client {
    let mut c = Client::new(addr, t0);
    while Instant::now() < end {
        let Some(started) = c.call(None, "start", json!({})) else {
            load::pause(Duration::from_millis(500));
            continue;
        };
        let id = started["id"].as_str().unwrap().to_string();
        let id = Some(id.as_str());
        if c.call(id, "go_to_url", json!({"url": page})).is_some() {
            for _ in 0..steps {
                if Instant::now() >= end {
                    break;
                }
                let Some(state) = c.call(id, "get_browser_state", json!({})) else {
                    break;
                };
                let Some(index) = button(&state) else {
                    c.errors.push("no button in the state".into());
                    break;
                };
                c.call(id, "click_element_by_index", json!({"index": index}));
                c.call(id, "get_url", json!({}));
            }
        }
        c.call(id, "close", json!({}));
    }
    c
}

/// The median of `v`, if it has any.
fn median(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| figures::stats(v).0)
}

fn main() {
    let secs = env_or("BENCH_SOAK_SECS", 480) as f64;
    let clients = env_or("BENCH_SOAK_CLIENTS", 4);
    let steps = env_or("BENCH_SOAK_STEPS", 20);
    let window = if secs >= 3000.0 {
        600.0
    } else if secs >= 300.0 {
        60.0
    } else {
        secs / 5.0
    };
    let extra: Vec<String> = std::env::var("BENCH_SOAK_ARGS")
        .map(|a| a.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fixtures = rt.block_on(server::Fixtures::start()).unwrap();
    let page = format!("{}/basic.html", fixtures.a);
    let page_b = format!("{}/basic.html", fixtures.b);
    let state_dir =
        std::env::temp_dir().join(format!("moonpilot-bench-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state_dir);
    std::fs::create_dir_all(&state_dir).unwrap();

    // `BENCH_SOAK_WRAP` runs the server under a tool (`heaptrack -o /tmp/soak`); the figures are
    // then those of the process named `moonpilot` under it.
    let wrap: Vec<String> = std::env::var("BENCH_SOAK_WRAP")
        .map(|a| a.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let mut command = match wrap.split_first() {
        Some((tool, args)) => {
            let mut c = Command::new(tool);
            c.args(args).arg(env!("CARGO_BIN_EXE_moonpilot"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_moonpilot")),
    };
    let mut child = command
        .args(["serve", "--port", "0", "--splash-port", "0"])
        .args(&extra)
        .env("MOONPILOT_STATE_DIR", &state_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (addr, splash) = banner_addrs(child.stdout.take().unwrap());
    let pid = if wrap.is_empty() {
        child.id()
    } else {
        let newest = Command::new("pgrep")
            .args(["-n", "-x", "moonpilot"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&newest.stdout)
            .trim()
            .parse()
            .unwrap()
    };
    println!(
        "soak: {clients} clients over `moonpilot serve {}` for {secs:.0} s, {steps} steps a task, windows of {window:.0} s",
        extra.join(" ")
    );

    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(secs);
    let probes = Arc::new(Mutex::new(Vec::<Probe>::new()));
    let sampler = {
        let probes = probes.clone();
        std::thread::spawn(move || {
            while Instant::now() < end {
                if let Some(p) = probe(pid, t0.elapsed().as_secs_f64()) {
                    probes.lock().unwrap().push(p);
                }
                load::pause(Duration::from_secs(2));
            }
            if let Some(p) = probe(pid, t0.elapsed().as_secs_f64()) {
                probes.lock().unwrap().push(p);
            }
        })
    };
    let browser = Arc::new(Mutex::new(Vec::<(f64, u64, u64)>::new()));
    let watcher = {
        let browser = browser.clone();
        std::thread::spawn(move || {
            while Instant::now() < end {
                let r = http::command(addr, &json!({"method": "get_config", "params": {}}));
                let v = r.json();
                let rc = &v["data"]["recycle"];
                if let Some(mb) = rc["browserMb"].as_u64() {
                    browser.lock().unwrap().push((
                        t0.elapsed().as_secs_f64(),
                        mb,
                        rc["recycled"].as_u64().unwrap_or(0),
                    ));
                }
                load::pause(Duration::from_secs(10));
            }
        })
    };
    let mut runs: Vec<std::thread::JoinHandle<Client>> = Vec::new();
    for _ in 0..clients {
        let page = page.clone();
        runs.push(std::thread::spawn(move || {
            client(addr, t0, end, page, steps)
        }));
        let page = page_b.clone();
        runs.push(std::thread::spawn(move || mcp_client(addr, t0, end, page)));
        let page = page_b.clone();
        runs.push(std::thread::spawn(move || {
            splash_client(splash, t0, end, page)
        }));
    }
    let runs: Vec<Client> = runs.into_iter().map(|h| h.join().unwrap()).collect();
    sampler.join().unwrap();
    watcher.join().unwrap();

    // After the clients: the server idles a moment, then the last probe.
    load::pause(Duration::from_secs(3));
    let idle = probe(pid, t0.elapsed().as_secs_f64());
    let files = walk(&state_dir.join("data"));

    // Stop the server as a person does (Ctrl-C) and look for its browsers.
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
    let stop = Instant::now();
    let exited = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if stop.elapsed() > Duration::from_secs(if wrap.is_empty() { 30 } else { 300 }) {
            let _ = child.kill();
            break None;
        }
        load::pause(Duration::from_millis(50));
    };
    load::pause(Duration::from_millis(500));
    let leftovers = Command::new("pgrep")
        .args(["-f", &format!("moonpilot-run-{pid}-")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0);

    // Figures.
    let samples: Vec<Sample> = runs.iter().flat_map(|c| c.samples.clone()).collect();
    let errors: Vec<String> = runs.iter().flat_map(|c| c.errors.clone()).collect();
    let last_from = secs - window;
    let mut by_method: BTreeMap<&str, (Vec<f64>, Vec<f64>, usize)> = BTreeMap::new();
    for &(at, method, ms) in &samples {
        let e = by_method.entry(method).or_default();
        e.2 += 1;
        if at < window {
            e.0.push(ms);
        } else if at >= last_from {
            e.1.push(ms);
        }
    }
    println!(
        "{} commands answered, {} errors, {} state-directory files at the end",
        samples.len(),
        errors.len(),
        files
    );
    for e in errors.iter().take(10) {
        println!("  error: {e}");
    }
    let mut worst: f64 = 0.0;
    for (method, (first, last, n)) in &by_method {
        let (Some(a), Some(b)) = (median(first.clone()), median(last.clone())) else {
            println!("  {method:<24} {n:>6} calls (too few in a window)");
            continue;
        };
        let ratio = b / a;
        if ![
            "start",
            "close",
            "go_to_url",
            "mcp initialize",
            "mcp delete",
            "mcp navigate",
        ]
        .contains(method)
        {
            worst = worst.max(ratio);
        }
        println!(
            "  {method:<24} {n:>6} calls   first window median {a:>8.1} ms   last {b:>8.1} ms   last/first {ratio:.2}"
        );
    }
    // Memory and descriptors, window against window: the first window after the warm-up
    // (the second of the run) against the last, each probe every 2 s. RSS by its median, the
    // descriptors by their most (each in-flight request holds a socket, so single probes vary).
    let probes = probes.lock().unwrap().clone();
    let in_window = |from: f64| -> Vec<Probe> {
        probes
            .iter()
            .filter(|p| p.at >= from && p.at < from + window)
            .copied()
            .collect()
    };
    let (warm, last) = (in_window(window), in_window(last_from));
    let rss_mb = |ps: &[Probe]| median(ps.iter().map(|p| p.rss_kb as f64 / 1024.0).collect());
    let most_fds = |ps: &[Probe]| ps.iter().map(|p| p.fds).max();
    if let (Some(w), Some(l), Some(wf), Some(lf)) = (
        rss_mb(&warm),
        rss_mb(&last),
        most_fds(&warm),
        most_fds(&last),
    ) {
        let growth = (l / w - 1.0) * 100.0;
        let peak = probes.iter().map(|p| p.rss_kb).max().unwrap_or(0);
        println!(
            "RSS median over the window after warm-up {w:.1} MB, over the last window {l:.1} MB ({growth:+.1} %), at the end {:.1} MB, peak {:.1} MB{}",
            probes.last().map_or(0.0, |p| p.rss_kb as f64 / 1024.0),
            peak as f64 / 1024.0,
            idle.map_or(String::new(), |i| format!(
                ", idle after the clients {:.1} MB",
                i.rss_kb as f64 / 1024.0
            ))
        );
        println!(
            "open fds, most over the window after warm-up {wf}, over the last window {lf}{}",
            idle.map_or(String::new(), |i| format!(", idle {}", i.fds))
        );
        println!(
            "targets: worst step-command last/first {worst:.2} (≤ 1.25: {}), RSS growth {growth:+.1} % (< 10: {}), fd growth {} (none: {}), errors {} (0: {})",
            met(worst <= 1.25),
            met(growth < 10.0),
            lf as i64 - wf as i64,
            met(lf <= wf),
            errors.len(),
            met(errors.is_empty())
        );
    }
    let browser = browser.lock().unwrap().clone();
    if let (Some(first), Some(last)) = (browser.first(), browser.last()) {
        let peak = browser.iter().map(|b| b.1).max().unwrap_or(0);
        println!(
            "browser memory (PSS of the current browser): first reading {} MiB, last {} MiB, peak {peak} MiB; browsers recycled {}",
            first.1, last.1, last.2
        );
    }
    println!(
        "server stopped on Ctrl-C: {}; Chromium processes left: {leftovers} ({})",
        exited.map_or("no (killed after 30 s)".to_string(), |s| format!("{s}")),
        met(leftovers == 0)
    );
    let _ = std::fs::remove_dir_all(&state_dir);
}

/// The seed protocol's and Splash's addresses from `serve`'s banner (20 s at most).
fn banner_addrs(stream: impl std::io::Read + Send + 'static) -> (SocketAddr, SocketAddr) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("http://").nth(1) {
                let addr: String = rest.split(' ').next().unwrap_or_default().to_string();
                let _ = tx.send((line.contains("Splash"), addr));
            }
        }
    });
    let (mut seed, mut splash) = (None, None);
    while seed.is_none() || splash.is_none() {
        let (is_splash, addr) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the server prints where it listens");
        let addr: SocketAddr = addr.parse().unwrap();
        if is_splash {
            splash = Some(addr);
        } else {
            seed = Some(addr);
        }
    }
    (seed.unwrap(), splash.unwrap())
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// Files under `dir`, counted.
fn walk(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}
