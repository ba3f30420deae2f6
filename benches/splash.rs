//! Splash's API under load (`cargo bench --bench splash`): eight clients at once, each sending
//! `BENCH_REQUESTS` (10) requests of the same work — open a page of its own, go to a local
//! page, wait 0.2 s, read the HTML, take a PNG, close — once as Splash's `/execute` (one
//! request: `go`, `wait(0.2)`, `html`, `png`) and once through the seed protocol
//! (`start`, a `commands` batch of `go_to_url`, a 0.2 s in-page wait, the HTML and an inline
//! screenshot, `close`), interleaved round by round on one engine in one run. Reports
//! throughput and p50/p95 per request, the ratio (target: the Splash layer adds at most 10 %),
//! and the browser's memory per busy slot (Chromium's RSS while eight requests run, less its
//! RSS idle, over eight). Then, with the engine stopped, a bare CDP client does the same work
//! (`benches/node/contexts.mjs`, skipped without `npm install` there): in the default context,
//! in a context per request, and in contexts made ahead of the round, for what a browser
//! context costs Chromium itself.

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

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use figures::env_or;
use moonpilot::server::ServeOptions;
use moonpilot::splash::SplashOptions;
use moonpilot::Executor;
use serde_json::{json, Value};

/// Clients at once (`BENCH_CLIENTS`, default 8).
fn clients() -> usize {
    env_or("BENCH_CLIENTS", 8)
}

/// The machine's busy CPU time so far (all cores, every process), in seconds: what a round of
/// requests cost the engine and the browser together.
fn busy_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    let busy: f64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .take(8)
        .map(|(_, t)| t)
        .sum();
    busy / 100.0
}

const SCRIPT: &str = "function main(splash, args)\n  assert(splash:go(args.url))\n  splash:wait(0.2)\n  return {html = splash:html(), png = splash:png()}\nend";

/// One Splash request: its time in ms.
fn splash_request(addr: SocketAddr, page: &str) -> f64 {
    let t0 = Instant::now();
    let r = http::request(
        addr,
        "POST",
        "/execute",
        &[("Content-Type", "application/json")],
        json!({"lua_source": SCRIPT, "url": page})
            .to_string()
            .as_bytes(),
    );
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert!(v["html"].as_str().unwrap().contains("<html"));
    assert!(v["png"].as_str().unwrap().len() > 1000);
    ms
}

/// The same work through the seed protocol: its time in ms. With `engine`, the task opens in a
/// browser context of its own, as each Splash request does (the catalogue's `start` has no such
/// param; the engine is told ahead, as Splash's layer tells it).
fn seed_request(addr: SocketAddr, page: &str, engine: Option<&moonpilot::Engine>) -> f64 {
    let t0 = Instant::now();
    let mut start = json!({"method": "start"});
    if let Some(engine) = engine {
        let id = moonpilot::browser::task::TaskId::generate();
        engine.isolate_next_start(id);
        start["id"] = json!(id.to_string());
    }
    let v = http::command(addr, &start).json();
    let id = v["data"]["id"].as_str().unwrap().to_string();
    let steps = json!([
        {"go_to_url": {"url": page}},
        {"execute_js": {"body": "() => new Promise(r => setTimeout(r, 200))"}},
        {"execute_js": {"body": "document.documentElement.outerHTML"}},
        {"screenshot": {"inline": true}},
    ]);
    let b = http::command(
        addr,
        &json!({"id": id, "method": "commands", "params": {"commands": steps, "stopOnError": true}}),
    )
    .json();
    assert_eq!(b["ok"], true, "{b}");
    let closed = http::command(addr, &json!({"id": id, "method": "close"})).json();
    assert_eq!(closed["ok"], true, "{closed}");
    t0.elapsed().as_secs_f64() * 1e3
}

/// Eight clients, `each` requests apiece: (per-request ms, wall seconds).
fn round(each: usize, one: impl Fn() -> f64 + Sync) -> (Vec<f64>, f64, f64) {
    let t0 = Instant::now();
    let cpu0 = busy_cpu();
    let times = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients())
            .map(|_| s.spawn(|| (0..each).map(|_| one()).collect::<Vec<f64>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<f64>>()
    });
    (times, t0.elapsed().as_secs_f64(), busy_cpu() - cpu0)
}

fn pct(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[((samples.len() as f64 - 1.0) * q).round() as usize]
}

/// The resident memory of the browser's processes (the launched one and its children), kB.
fn browser_rss(pid: u32) -> u64 {
    let mut total = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{p}/status")) {
            total += status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Ok(children) = std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")) {
            stack.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    total
}

fn main() {
    let each = env_or("BENCH_REQUESTS", 10);
    let rounds = env_or("BENCH_ROUNDS", 2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(moonpilot::signal::WORKER_STACK)
        .enable_all()
        .build()
        .unwrap();
    let engine = figures::engine("moonpilot-bench-splash");
    let executor = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
    let (fixtures, seed, splash) = rt.block_on(async {
        let fixtures = server::Fixtures::start().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let seed = listener.local_addr().unwrap();
        tokio::spawn(moonpilot::server::serve(
            executor.clone(),
            listener,
            ServeOptions {
                port: 0,
                ..ServeOptions::default()
            },
            std::future::pending(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let splash = listener.local_addr().unwrap();
        tokio::spawn(moonpilot::splash::http::serve(
            executor.clone(),
            listener,
            SplashOptions {
                port: 0,
                ..SplashOptions::default()
            },
            std::future::pending(),
        ));
        (fixtures, seed, splash)
    });
    let page = format!("{}/splash_js.html", fixtures.a);
    // A task that keeps the browser up between requests, as a serving engine has.
    let keeper = http::command(seed, &json!({"method": "start"})).json();
    let pid = keeper["data"]["browser"]["pid"].as_u64().unwrap_or(0) as u32;
    // Warm every path.
    splash_request(splash, &page);
    seed_request(seed, &page, None);
    seed_request(seed, &page, Some(&engine));
    load::pause(Duration::from_millis(500));
    let idle = browser_rss(pid);

    /// One way of doing the work: its request times, wall seconds and busy CPU seconds.
    #[derive(Default)]
    struct Way {
        times: Vec<f64>,
        wall: f64,
        cpu: f64,
    }
    let (mut sp, mut se, mut iso) = (Way::default(), Way::default(), Way::default());
    let peak = std::sync::atomic::AtomicU64::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                peak.fetch_max(browser_rss(pid), std::sync::atomic::Ordering::SeqCst);
                load::pause(Duration::from_millis(100));
            }
        });
        let add = |way: &mut Way, (t, w, c): (Vec<f64>, f64, f64)| {
            way.times.extend(t);
            way.wall += w;
            way.cpu += c;
        };
        for _ in 0..rounds {
            add(&mut sp, round(each, || splash_request(splash, &page)));
            add(&mut se, round(each, || seed_request(seed, &page, None)));
            add(
                &mut iso,
                round(each, || seed_request(seed, &page, Some(&engine))),
            );
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let clients = clients();
    let n = (rounds * each * clients) as f64;
    println!("{clients} clients × {each} requests × {rounds} rounds, go + wait 0.2 + html + png:");
    let show = |name: &str, w: &mut Way| {
        println!(
            "  {name:<44} {:>6.2} req/s   p50 {:>7.1} ms   p95 {:>7.1} ms   CPU {:>5.0} ms/req",
            n / w.wall,
            pct(&mut w.times, 0.5),
            pct(&mut w.times, 0.95),
            w.cpu * 1e3 / n
        );
    };
    show("Splash /execute (a browser context each)", &mut sp);
    show("seed protocol (start, batch, close)", &mut se);
    show("seed protocol, a browser context each", &mut iso);
    println!(
        "  Splash / seed throughput: {:.2}× (target ≥ 0.9); Splash / seed in a context each: {:.2}× (the layer's own cost); p50 ratios {:.2} and {:.2}",
        se.wall / sp.wall,
        iso.wall / sp.wall,
        pct(&mut sp.times, 0.5) / pct(&mut se.times, 0.5),
        pct(&mut sp.times, 0.5) / pct(&mut iso.times, 0.5)
    );
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "  browser RSS idle {:.0} MB, peak {:.0} MB: {:.1} MB per busy slot",
        idle as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(idle) as f64 / 1024.0 / clients as f64
    );
    let v: Value = http::command(seed, &json!({"method": "list_tasks"})).json();
    assert_eq!(v["data"]["count"], 1, "only the keeper is left: {v}");
    rt.block_on(async {
        engine.shutdown().await;
        engine.flush_trace().await;
    });
    bare_client(&page, each, rounds);
}

/// The same work from a bare CDP client (`benches/node/contexts.mjs`), its lines printed as they
/// come; the fixture server keeps serving on the runtime's workers meanwhile.
fn bare_client(page: &str, each: usize, rounds: usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node");
    if !dir.join("node_modules/playwright-core").is_dir() {
        println!("  bare CDP client skipped: run `npm install` in benches/node");
        return;
    }
    let ran = std::process::Command::new("node")
        .arg(dir.join("contexts.mjs"))
        .args([page.to_string(), each.to_string(), rounds.to_string()])
        .status();
    if !matches!(ran, Ok(s) if s.success()) {
        println!("  bare CDP client failed: {ran:?}");
    }
}
