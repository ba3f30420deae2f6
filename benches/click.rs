//! The click at Playwright's pace (`cargo bench --bench click`), issue 37.
//!
//! On `click_pace.html`, each button clicked by selector, interleaved click by click, on:
//! moonpilot with defaults, moonpilot `--no-capture`, Playwright-Node's `locator(S).click()`
//! (`benches/node/peer.mjs`; `npm install` in `benches/node` first) and a bare CDP client
//! (`bare.rs`: a plain WebSocket; find + scroll + rect in one evaluate, a frame for stability,
//! move/press/release, one evaluate to read the page). The buttons: one that changes nothing,
//! one that changes the page at once, in three animation frames, in 300 ms, when a 200 ms
//! request answers; a toggle of hidden state; a focus; a submit that validation holds back.
//!
//! Prints median and p90 per button and engine, the ratios against Playwright (the issue's
//! target: a click that changes nothing ≤ 3× Playwright's click with defaults), how each
//! receipt's window ended, and the bare client's phases. Then where a click's time goes: the
//! three mouse events alone and right after one or two animation frames (a stability check ends
//! in one) on moonpilot's tab, the bare client (events one by one, and all at once) and
//! Playwright's page (`page.mouse.click`, and the same events over its raw CDP session one by
//! one, with its exact params, and all at once). `MOONPILOT_BENCH_BARE_ARGS` adds Chromium
//! flags to the bare client's browser and `MOONPILOT_BENCH_BARE_SETUP` page settings
//! (`focus`, `metrics`, `bounds`, `lifecycle`), to find what makes the difference.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "peer.rs"]
mod peer;

#[path = "bare.rs"]
mod bare;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use figures::{env_or, line, stats};
use moonpilot::browser::task::TaskId;
use moonpilot::Executor;
use peer::Peer;
use serde_json::{json, Value};

/// The buttons, by selector, and what a click on each does.
const BUTTONS: &[(&str, &str)] = &[
    ("#noop", "changes nothing"),
    ("#toggle", "toggles hidden state"),
    ("#field", "focuses a field"),
    ("#submit", "submit held back by validation"),
    ("#now", "changes the page at once"),
    ("#frames", "changes it in three frames"),
    ("#later", "changes it in 300 ms"),
    ("#fetch", "changes it when a 200 ms request answers"),
];

struct Ours {
    engine: Arc<moonpilot::Engine>,
    ex: Executor,
    id: TaskId,
}

impl Ours {
    async fn open(dir: &str, capture: bool, url: &str) -> Ours {
        let engine = figures::fresh_engine(dir, capture);
        let ex = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let id = figures::task_at(&ex, url).await;
        Ours { engine, ex, id }
    }

    async fn click(&self, selector: &str) -> (f64, Value) {
        let t0 = Instant::now();
        let r = self
            .ex
            .execute(
                Some(self.id),
                "click_element_by_selector",
                json!({"selector": selector}),
            )
            .await;
        let t = ms(t0);
        assert!(r.ok, "{selector}: {:?}", r.msg);
        (t, r.data)
    }
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// The bare client's click on `selector`, phase by phase: (find+rect, stable frame, dispatch,
/// read).
async fn bare_click(b: &mut bare::Bare, selector: &str) -> [f64; 4] {
    let t0 = Instant::now();
    let p = b
        .eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); e.scrollIntoView({{block: 'nearest'}}); \
             const r = e.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2; \
             const hit = document.elementFromPoint(x, y); return [x, y, e === hit || e.contains(hit)]; }})()"
        ))
        .await;
    let find = ms(t0);
    let t1 = Instant::now();
    b.eval(&format!(
        "new Promise(r => requestAnimationFrame(() => {{ const e = document.querySelector({selector:?}); \
         r(JSON.stringify(e.getBoundingClientRect())); }}))"
    ))
    .await;
    let stable = ms(t1);
    let t2 = Instant::now();
    b.click_at(p[0].as_f64().unwrap(), p[1].as_f64().unwrap())
        .await;
    let dispatch = ms(t2);
    let t3 = Instant::now();
    b.eval("document.body.innerText.length").await;
    let read = ms(t3);
    [find, stable, dispatch, read]
}

fn main() {
    let rounds: usize = env_or("BENCH_CLICKS", 20);
    // `MOONPILOT_LOG=moonpilot::click=debug` prints the engine's own phases to stderr.
    if let Ok(filter) = std::env::var("MOONPILOT_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let fixtures = server::Fixtures::start().await.unwrap();
        let url = format!("{}/click_pace.html", fixtures.a);
        let ours = Ours::open("moonpilot-bench-click", true, &url).await;
        let nocap = Ours::open("moonpilot-bench-click-nocap", false, &url).await;
        let mut peer = Peer::start("peer.mjs", "(Playwright lines skipped)").await;
        if let Some(p) = peer.as_mut() {
            p.ask(json!({"op": "open", "url": url})).await;
        }
        let mut bare = bare::Bare::start().await;
        bare.open(&url).await;

        let mut times: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
        let mut ends: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
        let mut phases: Vec<[f64; 4]> = Vec::new();
        for i in 0..rounds + 3 {
            let warm = i >= 3;
            for &(selector, _) in BUTTONS {
                // Think time, as an agent's; the previous click's evidence is written.
                tokio::time::sleep(Duration::from_millis(150)).await;
                let (t, r) = ours.click(selector).await;
                if warm {
                    times.entry((selector, "defaults")).or_default().push(t);
                    let end = format!(
                        "{} changed={}",
                        r["observationEnd"].as_str().unwrap_or("-"),
                        r["changed"]
                    );
                    *ends.entry(selector).or_default().entry(end).or_default() += 1;
                }
                tokio::time::sleep(Duration::from_millis(150)).await;
                let (t, _) = nocap.click(selector).await;
                if warm {
                    times.entry((selector, "--no-capture")).or_default().push(t);
                }
                if let Some(p) = peer.as_mut() {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    let a = p.ask(json!({"op": "click", "selector": selector})).await;
                    if warm {
                        times.entry((selector, "Playwright")).or_default().push(a["ms"].as_f64().unwrap());
                    }
                }
                tokio::time::sleep(Duration::from_millis(150)).await;
                let ph = bare_click(&mut bare, selector).await;
                if warm {
                    times.entry((selector, "bare CDP")).or_default().push(ph.iter().sum());
                    if selector == "#noop" {
                        phases.push(ph);
                    }
                }
            }
            // Changes that land later must have landed before the next round.
            tokio::time::sleep(Duration::from_millis(400)).await;
        }

        println!("click_element_by_selector on click_pace.html, {rounds} clicks each, interleaved");
        for &(selector, what) in BUTTONS {
            println!("{selector} ({what}):");
            for engine in ["defaults", "--no-capture", "Playwright", "bare CDP"] {
                if let Some(t) = times.get(&(selector, engine)) {
                    line(&format!("  {engine}"), "ms", stats(t.clone()));
                }
            }
            if let Some(pw) = times.get(&(selector, "Playwright")) {
                let pw = stats(pw.clone()).0;
                let d = stats(times[&(selector, "defaults")].clone()).0;
                let n = stats(times[&(selector, "--no-capture")].clone()).0;
                println!("  moonpilot / Playwright: defaults {:.2}x, --no-capture {:.2}x", d / pw, n / pw);
            }
            println!("  how the window ended: {:?}", ends.get(selector).cloned().unwrap_or_default());
        }
        if let Some(pw) = times.get(&("#noop", "Playwright")) {
            let pw = stats(pw.clone()).0;
            let d = stats(times[&("#noop", "defaults")].clone()).0;
            println!("a click that changes nothing: {:.2}x Playwright's click with defaults (target <= 3.0)", d / pw);
        }
        let col = |k: usize| stats(phases.iter().map(|p| p[k]).collect());
        println!("bare CDP click on #noop, phase by phase:");
        line("  find + scroll + rect + hit test (one evaluate)", "ms", col(0));
        line("  one animation frame (stability)", "ms", col(1));
        line("  move + press + release", "ms", col(2));
        line("  read the page (one evaluate)", "ms", col(3));

        // The same three mouse events on moonpilot's tab (through its CDP client) and on the
        // bare client's, at the no-op button, interleaved.
        let tab = ours.engine.task(ours.id).unwrap().tab().unwrap();
        let point = bare
            .eval("(() => { const r = document.querySelector('#noop').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
            .await;
        let (x, y) = (point[0].as_f64().unwrap(), point[1].as_f64().unwrap());
        let (mut ours_mouse, mut bare_mouse) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let t0 = Instant::now();
            tab.mouse_click(x, y).await.unwrap();
            ours_mouse.push(ms(t0));
            tokio::time::sleep(Duration::from_millis(50)).await;
            let t0 = Instant::now();
            bare.click_at(x, y).await;
            bare_mouse.push(ms(t0));
        }
        // What comes just before the events changes what they take: after one or two animation
        // frames (a stability check ends in one), on both clients.
        for (name, before) in [
            ("after one rAF", "new Promise(r => requestAnimationFrame(() => r(1)))"),
            ("after two rAFs", "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"),
        ] {
            let (mut o, mut b) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                tokio::time::sleep(Duration::from_millis(50)).await;
                tab.call("Runtime.evaluate", json!({"expression": before, "awaitPromise": true})).await.unwrap();
                let t0 = Instant::now();
                tab.mouse_click(x, y).await.unwrap();
                o.push(ms(t0));
                tokio::time::sleep(Duration::from_millis(50)).await;
                bare.eval(before).await;
                let t0 = Instant::now();
                bare.click_at(x, y).await;
                b.push(ms(t0));
            }
            let mut c = Vec::new();
            for _ in 0..rounds {
                tokio::time::sleep(Duration::from_millis(50)).await;
                bare.eval(before).await;
                let t0 = Instant::now();
                bare.click_at_once(x, y).await;
                c.push(ms(t0));
            }
            line(&format!("  {name}: bare CDP client, events sent at once"), "ms", stats(c));
            line(&format!("  {name}: moonpilot's tab"), "ms", stats(o));
            line(&format!("  {name}: bare CDP client"), "ms", stats(b));
        }
        {
            // The move sent while the two frames of a stability check run, then press + release.
            let two = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))";
            let (mut seq, mut overlap) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let t0 = Instant::now();
                tab.call("Runtime.evaluate", json!({"expression": two, "awaitPromise": true})).await.unwrap();
                tab.mouse_click(x, y).await.unwrap();
                seq.push(ms(t0));
                tokio::time::sleep(Duration::from_millis(50)).await;
                let t0 = Instant::now();
                let (a, b) = futures::join!(
                    tab.call("Runtime.evaluate", json!({"expression": two, "awaitPromise": true})),
                    tab.call("Input.dispatchMouseEvent", json!({"type": "mouseMoved", "x": x, "y": y}))
                );
                a.unwrap();
                b.unwrap();
                for kind in ["mousePressed", "mouseReleased"] {
                    tab.call("Input.dispatchMouseEvent", json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1})).await.unwrap();
                }
                overlap.push(ms(t0));
            }
            if let Some(p) = peer.as_mut() {
                let (mut r, mut m) = (Vec::new(), Vec::new());
                for _ in 0..rounds {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let a = p.ask(json!({"op": "rafs_click", "x": x, "y": y})).await;
                    r.push(a["rafsMs"].as_f64().unwrap());
                    m.push(a["mouseMs"].as_f64().unwrap());
                }
                line("  Playwright's page: two rAFs", "ms", stats(r));
                line("  Playwright's page: then page.mouse.click", "ms", stats(m));
                for variant in ["plain", "exact", "concurrent"] {
                    let mut m = Vec::new();
                    for _ in 0..rounds {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let a = p.ask(json!({"op": "raw_rafs_click", "x": x, "y": y, "variant": variant})).await;
                        m.push(a["mouseMs"].as_f64().unwrap());
                    }
                    line(&format!("  Playwright's page, raw CDP session: two rAFs, then events ({variant})"), "ms", stats(m));
                }
            }
            line("  two rAFs, then move + press + release", "ms", stats(seq));
            line("  two rAFs while the move goes, then press + release", "ms", stats(overlap));
        }
        println!("move + press + release on #noop alone:");
        line("  moonpilot's tab (Tab::mouse_click)", "ms", stats(ours_mouse));
        line("  bare CDP client", "ms", stats(bare_mouse));

        if let Some(p) = peer {
            p.close().await;
        }
        bare.close().await;
        ours.engine.shutdown().await;
        nocap.engine.shutdown().await;
    });
}
