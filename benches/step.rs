//! The act→observe step against real headless Chromium (`cargo bench --bench step`), issue 22.
//!
//! 1. One agent step on `basic.html`: `click_element_by_index` on a button that changes the page
//!    at once, then `get_browser_state`, on three engines (defaults in a fresh state directory;
//!    defaults in one holding 150 earlier tasks' evidence, 6,900 files; `--no-capture`) and
//!    Playwright-Node's `locator.click()` + `locator('body').ariaSnapshot()` on the same page,
//!    from the same Chromium binary with the same flags, interleaved step by step in one run.
//!    Playwright runs in a child process (`benches/node/peer.mjs`; `npm install` in
//!    `benches/node` first); its lines are skipped when node or playwright-core is missing.
//!    Each step follows 150 ms of think time (an agent reads the receipt and decides); one more
//!    runs back to back.
//! 2. Leftovers: a command right after a state read or a click, against the same command after
//!    a 300 ms pause.
//! 3. The `screenshot` command against `Page.captureScreenshot` in the same format, from
//!    chromiumoxide on the same page and from Playwright's CDP session.
//! 4. The click by selector against the click by index, and what a capture costs by option.
//!
//! Prints median and p90 per line and the ratios against the targets. Everything runs
//! on one current-thread runtime, as `moonpilot run` does.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "peer.rs"]
mod peer;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use figures::{env_or, line, stats};
use moonpilot::browser::task::TaskId;
use moonpilot::Executor;
use peer::Peer;
use serde_json::{json, Value};

/// One engine the step runs on: its executor, task and last state read.
struct Ours {
    name: &'static str,
    engine: Arc<moonpilot::Engine>,
    ex: Executor,
    id: TaskId,
    state: Value,
    step: Vec<f64>,
    click: Vec<f64>,
    read: Vec<f64>,
}

impl Ours {
    async fn open(name: &'static str, engine: Arc<moonpilot::Engine>, url: &str) -> Ours {
        let ex = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let id = figures::task_at(&ex, url).await;
        let state = ex
            .execute(Some(id), "get_browser_state", json!({}))
            .await
            .data;
        Ours {
            name,
            engine,
            ex,
            id,
            state,
            step: Vec::new(),
            click: Vec::new(),
            read: Vec::new(),
        }
    }

    /// One step: the click by index on the button, then the state read. Answers (click, read).
    async fn step(&mut self) -> (f64, f64) {
        let index = button(&self.state);
        let t0 = Instant::now();
        let c = self
            .ex
            .execute(
                Some(self.id),
                "click_element_by_index",
                json!({"index": index}),
            )
            .await;
        let t_click = ms(t0);
        assert!(c.ok, "{:?}", c.msg);
        assert_eq!(
            c.data["changed"], true,
            "the click changes the page at once"
        );
        let t1 = Instant::now();
        let state = self
            .ex
            .execute(Some(self.id), "get_browser_state", json!({}))
            .await;
        let t_read = ms(t1);
        assert!(state.ok, "{:?}", state.msg);
        self.state = state.data;
        (t_click, t_read)
    }

    async fn timed_step(&mut self, warm: bool) {
        let (c, r) = self.step().await;
        if warm {
            self.step.push(c + r);
            self.click.push(c);
            self.read.push(r);
        }
    }

    fn report(&self) -> f64 {
        let step = stats(self.step.clone());
        line(
            &format!("moonpilot click + get_browser_state ({})", self.name),
            "ms",
            step,
        );
        line("  the click", "ms", stats(self.click.clone()));
        line("  the read", "ms", stats(self.read.clone()));
        step.0
    }
}

fn button(state: &Value) -> u64 {
    state["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["snapshotTag"] == "button")
        .unwrap()["index"]
        .as_u64()
        .unwrap()
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// A state directory as a day of use leaves it: `tasks` earlier tasks' evidence, `files` each
/// (4 KB apiece: the walk's cost is per file, not per byte). Made once, reused by later runs.
fn history(dir: &std::path::Path, tasks: usize, files: usize) {
    for t in 0..tasks {
        let d = dir.join(format!("{}", 1_000_000 + t));
        if d.join(format!("{}.png", files - 1)).exists() {
            continue;
        }
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..files {
            let ext = if i % 2 == 0 { "png" } else { "txt" };
            std::fs::write(d.join(format!("{i}.{ext}")), vec![0u8; 4096]).unwrap();
        }
    }
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
        let url = format!("{}/basic.html", fixtures.a);
        // The same step on three engines, interleaved with Playwright's, step by step: a fresh
        // state directory, one with 150 earlier tasks' evidence (6,900 files), and capture off.
        let used = std::env::temp_dir().join("moonpilot-bench-step-history");
        history(&used.join("data"), 150, 46);
        let _ = std::fs::remove_dir_all(used.join("trace"));
        let mut fresh = Ours::open("defaults, fresh state dir", figures::fresh_engine("moonpilot-bench-step", true), &url).await;
        let mut old = Ours::open("defaults, 6,900 files of history", figures::engine("moonpilot-bench-step-history"), &url).await;
        let mut bare = Ours::open("--no-capture", figures::fresh_engine("moonpilot-bench-step-bare", false), &url).await;
        let mut peer = Peer::start("peer.mjs", "(Playwright line skipped)").await;
        if let Some(p) = peer.as_mut() {
            p.ask(json!({"op": "open", "url": url})).await;
        }
        let settle = || async {
            // Think time between steps (an agent reads the receipt and decides): longer than a
            // screenshot takes, so the evidence of the previous step has been written.
            tokio::time::sleep(Duration::from_millis(150)).await;
        };
        let mut b2b = Vec::new();
        let (mut theirs, mut their_click, mut their_snap) = (Vec::new(), Vec::new(), Vec::new());
        // The first five steps warm up; BENCH_STEPS=0 runs only the screenshot part.
        let rounds = if steps == 0 { 0 } else { steps + 5 };
        for i in 0..rounds {
            let warm = i >= 5;
            for o in [&mut fresh, &mut old, &mut bare] {
                settle().await;
                o.timed_step(warm).await;
            }
            // Back to back: the next step the moment the previous one answered.
            let t0 = Instant::now();
            fresh.step().await;
            if warm {
                b2b.push(ms(t0));
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
            println!("act→observe step on basic.html ({steps} steps each, interleaved)");
            let f = fresh.report();
            let h = old.report();
            let n = bare.report();
            let b = stats(b2b);
            line("moonpilot step back to back (defaults, fresh)", "ms", b);
            println!("history cost: {:.2}x the fresh step (target <= 1.10)", h / f);
            if !theirs.is_empty() {
                let pw = stats(theirs);
                line("Playwright locator.click + ariaSnapshot", "ms", pw);
                line("  locator.click", "ms", stats(their_click));
                line("  ariaSnapshot", "ms", stats(their_snap));
                println!(
                    "ratio Playwright / moonpilot: defaults {:.2}x (target >= 1.0), --no-capture {:.2}x (target >= 1.5), history {:.2}x, back to back {:.2}x",
                    pw.0 / f, pw.0 / n, pw.0 / h, pw.0 / b.0
                );
            }
        }
        let ex = fresh.ex.clone();
        let id = fresh.id;
        let engine = fresh.engine.clone();

        // --- No leftovers: a command right after a state read or a click against the same
        // command after a 300 ms pause.
        if steps > 0 {
            // Each sample costs about a second: fewer than the steps.
            let leftover_rounds = steps.min(15);
            println!("\nleftovers: a command right after X / after a 300 ms pause ({leftover_rounds} each)");
            for (after, first) in [("get_browser_state", "get_browser_state"), ("click", "click_element_by_index")] {
                for next in ["get_url", "get_title", "get_browser_state", "click_element_by_index"] {
                    let (mut at_once, mut paused) = (Vec::new(), Vec::new());
                    for i in 0..leftover_rounds + 3 {
                        for pause in [false, true] {
                            let st = ex.execute(Some(id), "get_browser_state", json!({})).await;
                            let idx = button(&st.data);
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            let p = if first == "click_element_by_index" { json!({"index": idx}) } else { json!({}) };
                            let r = ex.execute(Some(id), first, p).await;
                            assert!(r.ok, "{:?}", r.msg);
                            if pause {
                                tokio::time::sleep(Duration::from_millis(300)).await;
                            }
                            let p = if next == "click_element_by_index" { json!({"index": idx}) } else { json!({}) };
                            let t0 = Instant::now();
                            let r = ex.execute(Some(id), next, p).await;
                            let t = ms(t0);
                            assert!(r.ok, "{next}: {:?}", r.msg);
                            if i >= 3 {
                                if pause { paused.push(t) } else { at_once.push(t) }
                            }
                        }
                    }
                    let (a, p) = (stats(at_once), stats(paused));
                    println!(
                        "  {next:<24} after {after:<18} {:>8.2} ms   after a pause {:>8.2} ms   {:.2}x (target <= 1.10)",
                        a.0, p.0, a.0 / p.0
                    );
                }
            }
        }

        // --- The screenshot command against Page.captureScreenshot of the same page in the
        // same format, from chromiumoxide (ours, raw) and from Playwright's CDP session.
        if steps > 0 {
            let tab = engine.task(id).unwrap().tab().unwrap();
            let (mut cmd, mut raw, mut pw) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..steps + 3 {
                tokio::time::sleep(Duration::from_millis(20 + (i as u64 * 7) % 17)).await;
                let t0 = Instant::now();
                let r = ex.execute(Some(id), "screenshot", json!({})).await;
                let t = ms(t0);
                assert!(r.ok, "{:?}", r.msg);
                tokio::time::sleep(Duration::from_millis(20 + (i as u64 * 11) % 17)).await;
                let t0 = Instant::now();
                tab.call("Page.captureScreenshot", json!({"format": "png"})).await.unwrap();
                let t_raw = ms(t0);
                if i >= 3 {
                    cmd.push(t);
                    raw.push(t_raw);
                }
                if let Some(p) = peer.as_mut() {
                    tokio::time::sleep(Duration::from_millis(20 + (i as u64 * 5) % 17)).await;
                    let a = p.ask(json!({"op": "shot", "params": {"format": "png"}})).await;
                    if i >= 3 {
                        pw.push(a["ms"].as_f64().unwrap());
                    }
                }
            }
            println!("\nscreenshot of basic.html, png ({steps} each, interleaved)");
            let (c, r) = (stats(cmd), stats(raw));
            line("  the screenshot command", "ms", c);
            line("  Page.captureScreenshot png (chromiumoxide, same page)", "ms", r);
            if !pw.is_empty() {
                let p = stats(pw);
                line("  Page.captureScreenshot png (Playwright's CDP session)", "ms", p);
                println!("  command / Playwright's raw call: {:.2}x (target <= 1.15)", c.0 / p.0);
            }
            println!("  command / raw call: {:.2}x (target <= 1.15)", c.0 / r.0);
        }

        // --- The same click by selector, interleaved with the click by index -----------------
        // Issue 11: a selector click that changes the page at once costs no more than an index
        // click (the selector's choice and the first read are one probe call).
        let (mut by_index, mut by_selector) = (Vec::new(), Vec::new());
        let state = ex.execute(Some(id), "get_browser_state", json!({})).await;
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
        for o in [fresh, old, bare] {
            o.engine.shutdown().await;
        }
    });
}
