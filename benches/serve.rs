//! The HTTP server under load (`cargo bench --bench serve`): `get_title` over HTTP
//! (`POST /playwright/command`, one connection per request) beside the same call in-process
//! (`Executor::execute`), on one engine in one run.
//!
//! 1. One client, calls interleaved one by one (HTTP, in-process): the adapter's own cost.
//! 2. 50 concurrent clients on 5 tasks for `BENCH_SECS` (30) seconds, first over HTTP, then
//!    in-process: requests/s, p50/p99 of the answered calls, and the typed busy answers
//!    (`TASK_BUSY`, overload), which are the only failures allowed — every request is answered.
//!
//! The engine and the server run on a two-worker runtime, as `moonpilot serve` has them.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

#[path = "../tests/support/load.rs"]
mod load;

use std::time::{Duration, Instant};

use figures::{env_or, line, stats};
use moonpilot::browser::task::TaskId;
use moonpilot::server::ServeOptions;
use moonpilot::Executor;
use serde_json::json;

fn main() {
    let secs = env_or("BENCH_SECS", 30) as u64;
    let iterations = env_or("BENCH_ITERATIONS", 300);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = figures::engine("moonpilot-bench-serve");
    let executor = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
    let (fixtures, addr) = rt.block_on(async {
        let fixtures = server::Fixtures::start().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = ServeOptions {
            port: 0,
            ..ServeOptions::default()
        };
        tokio::spawn(moonpilot::server::serve(
            executor.clone(),
            listener,
            opts,
            std::future::pending(),
        ));
        (fixtures, addr)
    });
    let page = format!("{}/basic.html", fixtures.a);
    let ids: Vec<TaskId> = (0..5)
        .map(|_| {
            let v = http::command(addr, &json!({"method": "start"})).json();
            let id = v["data"]["id"].as_str().unwrap().to_string();
            let nav = http::command(
                addr,
                &json!({"id": id, "method": "go_to_url", "params": {"url": page}}),
            )
            .json();
            assert_eq!(nav["ok"], true, "{nav}");
            TaskId(id.parse().unwrap())
        })
        .collect();

    // 1. One client, interleaved.
    let one = ids[0];
    let body = json!({"id": one.0.to_string(), "method": "get_title"});
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut over_http, mut in_process) = (Vec::new(), Vec::new());
    for i in 0..iterations + 20 {
        let t0 = Instant::now();
        let v = http::command(addr, &body).json();
        let h = t0.elapsed().as_secs_f64() * 1e3;
        assert_eq!(v["ok"], true);
        let t0 = Instant::now();
        let r = local.block_on(executor.execute(Some(one), "get_title", json!({})));
        let p = t0.elapsed().as_secs_f64() * 1e3;
        assert!(r.ok);
        if i >= 20 {
            over_http.push(h);
            in_process.push(p);
        }
    }
    println!("one client, {iterations} calls each (median, p90):");
    line("  get_title over HTTP", "ms", stats(over_http));
    line(
        "  get_title in-process (Executor::execute)",
        "ms",
        stats(in_process),
    );

    // 2. 50 clients on 5 tasks.
    println!("50 clients on 5 tasks, {secs} s each:");
    let d = Duration::from_secs(secs);
    let http_load = load::over_http(addr, &ids, 50, d);
    println!("  {}", http_load.summary("get_title over HTTP"));
    let inproc = load::in_process(&executor, &ids, 50, d);
    println!("  {}", inproc.summary("get_title in-process"));
    for l in [&http_load, &inproc] {
        assert!(
            l.other.is_empty(),
            "untyped failures: {:?}",
            &l.other[..l.other.len().min(3)]
        );
        assert_eq!(l.ok + l.busy, l.sent);
    }
    rt.block_on(async {
        engine.shutdown().await;
        engine.flush_trace().await;
    });
}
