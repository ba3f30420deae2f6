//! What attaching costs (`cargo bench --bench attach`): one plain Chromium started with
//! `--remote-debugging-port`, reached two ways in one run, calls interleaved one by one:
//!
//! 1. `Runtime.evaluate` of `document.title` on a page, by chromiumoxide connected straight to
//!    the browser (the peer) vs by the engine's chromiumoxide through the mux's shared socket
//!    (`--cdp-url`: one WebSocket per engine, a loopback hop for chromiumoxide's messages).
//! 2. `get_title`, and a click inside the cross-site frame of `frames.html` (commands that go
//!    through the raw client), on the attached engine vs an engine that launched its own
//!    Chromium.
//!
//! `BENCH_ITERATIONS` (default 300) rounds; median and p90 per line, and the ratios.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::time::{Duration, Instant};

use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use figures::{env_or, line, stats};
use futures::StreamExt;
use moonpilot::browser::task::TaskId;
use moonpilot::Executor;
use serde_json::json;

fn main() {
    let iterations = env_or("BENCH_ITERATIONS", 300);
    let chromium = moonpilot::browser::find_chromium(None).unwrap();
    let profile =
        std::env::temp_dir().join(format!("moonpilot-bench-attach-{}", std::process::id()));
    let mut remote = std::process::Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let port_file = profile.join("DevToolsActivePort");
        let port = loop {
            if let Ok(text) = tokio::fs::read_to_string(&port_file).await {
                if let Some(p) = text
                    .lines()
                    .next()
                    .and_then(|l| l.trim().parse::<u16>().ok())
                {
                    break p;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let fixtures = server::Fixtures::start().await.unwrap();
        let frames = format!("{}/frames.html", fixtures.a);

        let mut attached_config = figures::engine("moonpilot-bench-attach").config.clone();
        attached_config.launch.cdp_url = Some(format!("http://127.0.0.1:{port}"));
        let attached = Executor::new(
            moonpilot::Engine::new(attached_config),
            moonpilot::lua::recipe_host(),
        );
        let managed = Executor::new(
            figures::engine("moonpilot-bench-attach-managed"),
            moonpilot::lua::recipe_host(),
        );
        let mut tasks = Vec::new();
        for ex in [&attached, &managed] {
            let r = ex.execute(None, "start", json!({})).await;
            assert!(r.ok, "{:?}", r.msg);
            let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
            assert!(
                ex.execute(Some(id), "navigate", json!({"url": frames}))
                    .await
                    .ok
            );
            let s = ex
                .execute(
                    Some(id),
                    "get_browser_state",
                    json!({"includeFrames": true}),
                )
                .await;
            let cross = s.data["elements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|el| {
                    el["frameUrl"]
                        .as_str()
                        .is_some_and(|u| u.starts_with(&fixtures.b))
                        && el["tag"] == "BUTTON"
                })
                .unwrap()["index"]
                .clone();
            tasks.push((ex.clone(), id, cross));
        }

        // The peer: chromiumoxide straight to the same browser, on a page of its own.
        let (direct, mut handler) =
            chromiumoxide::Browser::connect(format!("http://127.0.0.1:{port}"))
                .await
                .unwrap();
        tokio::task::spawn_local(async move { while handler.next().await.is_some() {} });
        // In a window of its own, as the engines' tabs: a new tab in a task's window would put
        // that task's tab in the background (no frames, mouse events held for seconds).
        let mut params =
            chromiumoxide::cdp::browser_protocol::target::CreateTargetParams::new(frames.as_str());
        params.new_window = Some(true);
        let direct_page = direct.new_page(params).await.unwrap();
        let muxed_page = attached
            .engine()
            .task(tasks[0].1)
            .unwrap()
            .tab()
            .unwrap()
            .cdp_page()
            .clone();
        let title = || {
            EvaluateParams::builder()
                .expression("document.title")
                .return_by_value(true)
                .build()
                .unwrap()
        };
        for _ in 0..30 {
            direct_page.execute(title()).await.unwrap();
            muxed_page.execute(title()).await.unwrap();
        }

        let (mut direct_us, mut muxed_us) = (Vec::new(), Vec::new());
        let mut get_title = [Vec::new(), Vec::new()];
        let mut click = [Vec::new(), Vec::new()];
        for i in 0..iterations {
            for k in 0..2 {
                let t0 = Instant::now();
                if (i + k) % 2 == 0 {
                    direct_page.execute(title()).await.unwrap();
                    direct_us.push(t0.elapsed().as_secs_f64() * 1e6);
                } else {
                    muxed_page.execute(title()).await.unwrap();
                    muxed_us.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            for k in 0..2 {
                let which = (i + k) % 2;
                let (ex, id, _) = &tasks[which];
                let t0 = Instant::now();
                assert!(ex.execute(Some(*id), "get_title", json!({})).await.ok);
                get_title[which].push(t0.elapsed().as_secs_f64() * 1e3);
            }
            if i % 10 == 0 {
                for k in 0..2 {
                    let which = (i / 10 + k) % 2;
                    let (ex, id, index) = &tasks[which];
                    let t0 = Instant::now();
                    let r = ex
                        .execute(Some(*id), "click_element_by_index", json!({"index": index}))
                        .await;
                    assert!(r.ok, "{:?}", r.msg);
                    click[which].push(t0.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let direct_s = stats(direct_us);
        let muxed_s = stats(muxed_us);
        line(
            "Runtime.evaluate, chromiumoxide straight to the browser (peer)",
            "us",
            direct_s,
        );
        line(
            "Runtime.evaluate, chromiumoxide through the mux (attached engine)",
            "us",
            muxed_s,
        );
        println!("  ratio mux / straight: {:.2}x", muxed_s.0 / direct_s.0);
        let [gt_attached, gt_managed] = get_title.map(stats);
        line("get_title, attached engine (--cdp-url)", "ms", gt_attached);
        line("get_title, launched engine", "ms", gt_managed);
        println!(
            "  ratio attached / launched: {:.2}x",
            gt_attached.0 / gt_managed.0
        );
        let [c_attached, c_managed] = click.map(stats);
        line(
            "click_element_by_index in the cross-site frame, attached",
            "ms",
            c_attached,
        );
        line(
            "click_element_by_index in the cross-site frame, launched",
            "ms",
            c_managed,
        );
        println!(
            "  ratio attached / launched: {:.2}x",
            c_attached.0 / c_managed.0
        );
        for (ex, _, _) in &tasks {
            ex.execute(None, "shutdown", json!({})).await;
        }
    });
    let _ = remote.kill();
    let _ = remote.wait();
    let _ = std::fs::remove_dir_all(profile);
}
