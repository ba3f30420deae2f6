//! The act→observe step against real headless Chromium (`cargo bench --bench step`).
//!
//! 1. One agent step on `basic.html`: `click_element_by_index` on a button that changes the page
//!    at once, then `get_browser_state`, with defaults (evidence on), against Playwright-Node's
//!    `locator.click()` + `locator('body').ariaSnapshot()` on the same page, from the same
//!    Chromium binary with the same flags, interleaved call by call in one run. Playwright runs
//!    in a child process (`benches/node/peer.mjs`; `npm install` in `benches/node` first); that
//!    line is skipped when node or playwright-core is missing.
//! 2. What the pieces cost: the click alone, the read alone, and `Page.captureScreenshot` with
//!    the options an evidence capture could use.
//!
//! A step is timed twice: "with think time", where the evidence of the previous step has
//! settled before the step starts (an agent reads the receipt and decides before it acts again),
//! and "back to back", where the next step starts the moment the previous one answered.
//!
//! Prints median and p90 per line and the ratios. Everything runs on one current-thread runtime,
//! as `moonpilot run` does.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "peer.rs"]
mod peer;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::time::{Duration, Instant};

use figures::{env_or, line, stats};
use moonpilot::browser::task::TaskId;
use moonpilot::Executor;
use peer::Peer;
use serde_json::{json, Value};

/// Prints the step lines: ours (step, back to back, click, read) and Playwright's (step, click,
/// snapshot; empty when the peer did not run).
fn report_steps(steps: usize, ours: [Vec<f64>; 4], theirs: [Vec<f64>; 3]) {
    let [step, b2b, click, read] = ours.map(stats);
    println!("act→observe step on basic.html ({steps} steps each, interleaved)");
    line(
        "moonpilot click_element_by_index + get_browser_state (defaults)",
        "ms",
        step,
    );
    line("  the click (receipt with evidence fields)", "ms", click);
    line(
        "  the read (waits for the click's evidence first)",
        "ms",
        read,
    );
    line(
        "moonpilot step, back to back (waits for the previous evidence)",
        "ms",
        b2b,
    );
    if theirs[0].is_empty() {
        return;
    }
    let [pw, pw_click, pw_snap] = theirs.map(stats);
    line("Playwright locator.click + ariaSnapshot", "ms", pw);
    line("  locator.click", "ms", pw_click);
    line("  ariaSnapshot", "ms", pw_snap);
    println!(
        "ratio Playwright / moonpilot step: median {:.2}x (target >= 1.5; back to back {:.2}x), p90 {:.2}x",
        pw.0 / step.0,
        pw.0 / b2b.0,
        pw.1 / step.1
    );
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let steps: usize = env_or("BENCH_STEPS", 60);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let fixtures = server::Fixtures::start().await.unwrap();
        let engine = figures::engine("moonpilot-bench-step");
        let ex = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let started = ex.execute(None, "start", json!({})).await;
        assert!(started.ok, "{:?}", started.msg);
        let id = TaskId(started.data["id"].as_str().unwrap().parse().unwrap());
        let url = format!("{}/basic.html", fixtures.a);
        let r = ex.execute(Some(id), "navigate", json!({"url": url})).await;
        assert!(r.ok, "{:?}", r.msg);
        let mut peer = Peer::start("peer.mjs", "(Playwright line skipped)").await;
        if let Some(p) = peer.as_mut() {
            p.ask(json!({"op": "open", "url": url})).await;
        }

        let button = |state: &Value| -> u64 {
            state["elements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["snapshotTag"] == "button")
                .unwrap()["index"]
                .as_u64()
                .unwrap()
        };
        let settle = || async {
            // Think time between steps (an agent reads the receipt and decides): longer than a
            // screenshot takes, so the evidence of the previous step has been written.
            tokio::time::sleep(Duration::from_millis(150)).await;
        };
        let mut state = ex.execute(Some(id), "get_browser_state", json!({})).await;
        let (mut ours, mut ours_b2b, mut click, mut read) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut theirs, mut their_click, mut their_snap) = (Vec::new(), Vec::new(), Vec::new());
        // The first five steps warm up; BENCH_STEPS=0 runs only the screenshot part.
        let rounds = if steps == 0 { 0 } else { steps + 5 };
        for i in 0..rounds {
            let warm = i >= 5;
            settle().await;
            let index = button(&state.data);
            let t0 = Instant::now();
            let c = ex
                .execute(Some(id), "click_element_by_index", json!({"index": index}))
                .await;
            let t_click = ms(t0);
            assert!(c.ok, "{:?}", c.msg);
            assert_eq!(c.data["changed"], true, "the click changes the page at once");
            let t1 = Instant::now();
            state = ex.execute(Some(id), "get_browser_state", json!({})).await;
            let t_read = ms(t1);
            assert!(state.ok, "{:?}", state.msg);
            if warm {
                ours.push(ms(t0));
                click.push(t_click);
                read.push(t_read);
            }
            // Back to back: the next step at once.
            let index = button(&state.data);
            let t0 = Instant::now();
            let c = ex
                .execute(Some(id), "click_element_by_index", json!({"index": index}))
                .await;
            assert!(c.ok, "{:?}", c.msg);
            state = ex.execute(Some(id), "get_browser_state", json!({})).await;
            assert!(state.ok, "{:?}", state.msg);
            if warm {
                ours_b2b.push(ms(t0));
            }
            if let Some(p) = peer.as_mut() {
                settle().await;
                let a = p.ask(json!({"op": "step", "selector": "#btn"})).await;
                if warm {
                    theirs.push(a["stepMs"].as_f64().unwrap());
                    their_click.push(a["clickMs"].as_f64().unwrap());
                    their_snap.push(a["snapshotMs"].as_f64().unwrap());
                }
            }
        }
        if steps > 0 {
            report_steps(steps, [ours, ours_b2b, click, read], [theirs, their_click, their_snap]);
        }

        // --- The same click by selector, interleaved with the click by index -----------------
        // Issue 11: a selector click that changes the page at once costs no more than an index
        // click (the selector's choice and the first read are one probe call).
        let (mut by_index, mut by_selector) = (Vec::new(), Vec::new());
        state = ex.execute(Some(id), "get_browser_state", json!({})).await;
        let index = button(&state.data);
        for i in 0..if steps == 0 { 0 } else { steps + 5 } {
            let warm = i >= 5;
            settle().await;
            let t0 = Instant::now();
            let c = ex
                .execute(Some(id), "click_element_by_index", json!({"index": index}))
                .await;
            let t_index = ms(t0);
            assert!(c.ok && c.data["changed"] == true, "{:?}", c.msg);
            settle().await;
            let t0 = Instant::now();
            let c = ex
                .execute(Some(id), "click_element_by_selector", json!({"selector": "#btn"}))
                .await;
            let t_selector = ms(t0);
            assert!(c.ok && c.data["changed"] == true, "{:?}", c.msg);
            if warm {
                by_index.push(t_index);
                by_selector.push(t_selector);
            }
        }
        if steps > 0 {
            let (a, b) = (stats(by_index), stats(by_selector));
            println!("\nclick alone, interleaved ({steps} each):");
            line("  click_element_by_index", "ms", a);
            line("  click_element_by_selector", "ms", b);
            println!("  selector / index (median): {:.2}", b.0 / a.0);
        }

        // --- What a screenshot costs, by option ------------------------------------------------
        let tab = engine.task(id).unwrap().tab().unwrap();
        let variants: &[(&str, Value)] = &[
            ("png", json!({"format": "png"})),
            ("png optimizeForSpeed", json!({"format": "png", "optimizeForSpeed": true})),
            ("jpeg q80", json!({"format": "jpeg", "quality": 80})),
            ("jpeg q80 optimizeForSpeed", json!({"format": "jpeg", "quality": 80, "optimizeForSpeed": true})),
            ("webp q80 optimizeForSpeed", json!({"format": "webp", "quality": 80, "optimizeForSpeed": true})),
            ("png 1x1 clip", json!({"format": "png", "clip": {"x": 0, "y": 0, "width": 1, "height": 1, "scale": 1}})),
            ("png fromSurface false", json!({"format": "png", "optimizeForSpeed": true, "fromSurface": false})),
            ("png captureBeyondViewport true", json!({"format": "png", "optimizeForSpeed": true, "captureBeyondViewport": true})),
            ("png captureBeyondViewport false", json!({"format": "png", "optimizeForSpeed": true, "captureBeyondViewport": false})),
        ];
        let mut shots: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut their_shots: Vec<f64> = Vec::new();
        let mut sizes = vec![0usize; variants.len()];
        let mut overlay = Vec::new();
        // A capture waits for the compositor's next frames, so its time depends on where in the
        // 16.7 ms frame interval it starts; calls made back to back would all start at the same
        // phase (right after the previous one) and compare phases, not options. A pseudo-random
        // pause of 0-17 ms before each call spreads the phase.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut jitter = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            Duration::from_micros((seed >> 33) % 17_000)
        };
        for _ in 0..30 {
            for (k, (_, params)) in variants.iter().enumerate() {
                tokio::time::sleep(jitter()).await;
                let t0 = Instant::now();
                let r = tab.call("Page.captureScreenshot", params.clone()).await.unwrap();
                shots[k].push(ms(t0));
                sizes[k] = r["data"].as_str().unwrap().len() * 3 / 4;
            }
            tokio::time::sleep(jitter()).await;
            let t0 = Instant::now();
            tab.screenshot().await.unwrap();
            overlay.push(ms(t0));
            if let Some(p) = peer.as_mut() {
                tokio::time::sleep(jitter()).await;
                let a = p.ask(json!({"op": "shot", "params": {"format": "png", "optimizeForSpeed": true}})).await;
                their_shots.push(a["ms"].as_f64().unwrap());
            }
        }
        println!("Page.captureScreenshot of basic.html (1280x800), 30 each, random start phase");
        for (k, (name, _)) in variants.iter().enumerate() {
            line(&format!("{name} ({} KB)", sizes[k] / 1024), "ms", stats(shots[k].clone()));
        }
        line("Tab::screenshot (overlay hidden around the capture)", "ms", stats(overlay));
        if !their_shots.is_empty() {
            line("same call in Playwright's Chromium: png optimizeForSpeed", "ms", stats(their_shots));
        }
        let mut raf = Vec::new();
        for _ in 0..30 {
            let t0 = Instant::now();
            tab.call("Runtime.evaluate", json!({"expression": "new Promise(r => requestAnimationFrame(() => r(1)))", "awaitPromise": true})).await.unwrap();
            raf.push(ms(t0));
        }
        line("one animation frame (rAF round trip)", "ms", stats(raf));
        if let Some(p) = peer {
            p.close().await;
        }
        engine.shutdown().await;
    });
}
