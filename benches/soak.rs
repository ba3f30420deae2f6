//! Steady under load (`cargo bench --bench soak`): four clients drive a child `moonpilot serve`
//! (the real binary, defaults: evidence and trace on, a fresh state directory) for
//! `BENCH_SOAK_SECS` (480) seconds. Each client opens a task, loads `basic.html`, takes
//! `BENCH_SOAK_STEPS` (20) agent steps (`get_browser_state`, `click_element_by_index` on the
//! button, `get_url`) and closes the task, again and again, so the state directory grows as a
//! long-running server's does.
//!
//! Checked, and printed as figures against the targets:
//! - per command, the last window's median at most 1.25× the first window's (windows of a minute,
//!   or of a fifth of the run when it is shorter than five minutes);
//! - the engine's RSS growth from the end of the first window (warm-up) to the end under 10 %;
//! - its open file descriptors no more at the end than after the warm-up;
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

/// One client's run until `end`: tasks of `steps` agent steps each.
fn client(addr: SocketAddr, t0: Instant, end: Instant, page: String, steps: usize) -> Client {
    let mut c = Client {
        addr,
        t0,
        samples: Vec::new(),
        errors: Vec::new(),
    };
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
    let window = if secs >= 300.0 { 60.0 } else { secs / 5.0 };
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
        .args(["serve", "--port", "0"])
        .args(&extra)
        .env("MOONPILOT_STATE_DIR", &state_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = http::banner_addr(child.stdout.take().unwrap());
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
    let runs: Vec<_> = (0..clients)
        .map(|_| {
            let page = page.clone();
            std::thread::spawn(move || client(addr, t0, end, page, steps))
        })
        .collect();
    let runs: Vec<Client> = runs.into_iter().map(|h| h.join().unwrap()).collect();
    sampler.join().unwrap();

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
        if *method != "start" && *method != "close" && *method != "go_to_url" {
            worst = worst.max(ratio);
        }
        println!(
            "  {method:<24} {n:>6} calls   first window median {a:>8.1} ms   last {b:>8.1} ms   last/first {ratio:.2}"
        );
    }
    let probes = probes.lock().unwrap().clone();
    let warm = probes.iter().find(|p| p.at >= window).or(probes.first());
    let last = probes.last();
    if let (Some(w), Some(l)) = (warm, last) {
        let growth = (l.rss_kb as f64 / w.rss_kb as f64 - 1.0) * 100.0;
        let peak = probes.iter().map(|p| p.rss_kb).max().unwrap_or(0);
        println!(
            "RSS after warm-up {:.1} MB, at the end {:.1} MB ({growth:+.1} %), peak {:.1} MB{}",
            w.rss_kb as f64 / 1024.0,
            l.rss_kb as f64 / 1024.0,
            peak as f64 / 1024.0,
            idle.map_or(String::new(), |i| format!(
                ", idle after the clients {:.1} MB",
                i.rss_kb as f64 / 1024.0
            ))
        );
        println!(
            "open fds after warm-up {}, at the end {}{}",
            w.fds,
            l.fds,
            idle.map_or(String::new(), |i| format!(", idle {}", i.fds))
        );
        println!(
            "targets: worst step-command last/first {worst:.2} (≤ 1.25: {}), RSS growth {growth:+.1} % (< 10: {}), fd growth {} (none: {}), errors {} (0: {})",
            met(worst <= 1.25),
            met(growth < 10.0),
            l.fds as i64 - w.fds as i64,
            met(l.fds <= w.fds),
            errors.len(),
            met(errors.is_empty())
        );
    }
    println!(
        "server stopped on Ctrl-C: {}; Chromium processes left: {leftovers} ({})",
        exited.map_or("no (killed after 30 s)".to_string(), |s| format!("{s}")),
        met(leftovers == 0)
    );
    let _ = std::fs::remove_dir_all(&state_dir);
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
