//! Latency benchmarks against real headless Chromium (`cargo bench --bench latency`).
//!
//! 1. `get_title` from Lua through the executor vs a raw chromiumoxide `Runtime.evaluate` of
//!    `document.title` on the same page.
//! 2. `get_browser_state` on a 4,000-row table page (viewport only and whole page) vs bare CDP
//!    walks of the same document (`DOM.getDocument` with depth -1, `DOMSnapshot.captureSnapshot`)
//!    and, when `BROWSER_USE_DOM_TREE_JS` names a copy of browser-use's `buildDomTree.js`, vs that
//!    in-page builder called the same way as our probe (`Runtime.callFunctionOn`, by value). The
//!    builder is not ours to ship; without the variable its lines are skipped.
//!
//! 3. `get_browser_state` in the viewport (and the DOM index probe alone) on `widgets.html` and a
//!    200-row table, the reads an agent makes most (`BENCH_PAGE_RUNS`, default 30).
//!
//! Prints median and p90 per line and the ratios. Everything runs on one current-thread runtime,
//! as `moonpilot run` does.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::BTreeMap;
use std::time::Instant;

use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use figures::{env_or, line, stats};
use moonpilot::browser::task::TaskId;
use moonpilot::lua::LuaHost;
use moonpilot::Executor;
use serde_json::json;

/// browser-use's XPath step position: its builder scans every sibling of every ancestor of every
/// node (`Array.from(parent.children).filter(...)`), quadratic in the width of a parent (4,000
/// rows of one table). The bench also runs it with this one function replaced by a linear,
/// per-parent memo, so the comparison measures the walk, not that step.
const POSITION_FN: &str = "function getElementPosition(currentElement) {";
const LINEAR_POSITIONS: &str = "const __positions = new WeakMap();
  function getElementPosition(currentElement) {
    const parent = currentElement.parentElement;
    if (!parent) return 0;
    let known = __positions.get(currentElement);
    if (known !== undefined) return known;
    const totals = new Map();
    for (const s of parent.children) { const t = s.nodeName.toLowerCase(); totals.set(t, (totals.get(t) || 0) + 1); }
    const seen = new Map();
    for (const s of parent.children) { const t = s.nodeName.toLowerCase(); const n = (seen.get(t) || 0) + 1; seen.set(t, n); __positions.set(s, totals.get(t) === 1 ? 0 : n); }
    return __positions.get(currentElement);
  }
  function getElementPositionAsPublished(currentElement) {";
/// Removes browser-use's overlay and its scroll listeners (its cleanup functions), and ours.
const CLEAR_OVERLAYS: &str = "() => { (window._highlightCleanupFunctions || []).splice(0).forEach((f) => { try { f(); } catch (e) {} }); document.getElementById('playwright-highlight-container')?.remove(); return true; }";

fn main() {
    let iterations: usize = env_or("BENCH_ITERATIONS", 500);
    let snapshot_runs: usize = env_or("BENCH_SNAPSHOT_RUNS", 15);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let fixtures = server::Fixtures::start().await.unwrap();
        let engine = figures::engine("moonpilot-bench-data");
        let executor = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let host = LuaHost::new(executor.clone(), BTreeMap::new()).unwrap();
        host.lua().globals().set("A", fixtures.a.clone()).unwrap();

        // --- get_title ---------------------------------------------------------------------
        let id: i64 = host
            .eval("page = browser.start{}; page:navigate{ url = A .. '/basic.html' }:unwrap(); return page.id", "setup")
            .await
            .unwrap()
            .into_iter()
            .next()
            .and_then(|v| v.as_i64())
            .unwrap();
        let task = engine.task(TaskId(id as u64)).unwrap();
        let tab = task.tab().unwrap();
        let page = tab.cdp_page().clone();
        let raw_title = || async {
            let eval = EvaluateParams::builder().expression("document.title").return_by_value(true).build().unwrap();
            page.execute(eval).await.unwrap();
        };
        let lua_title: mlua::Function =
            host.lua().load("return function() return page:get_title().ok end").eval().unwrap();
        for _ in 0..50 {
            raw_title().await;
            assert!(lua_title.call_async::<bool>(()).await.unwrap());
        }
        // Calls are interleaved one by one: latency depends on the cadence of calls, so blocks of
        // one kind after the other would compare different rhythms, not different code.
        let (mut raw_us, mut exec_us, mut lua_us) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..iterations {
            // Rotate which kind goes first: the call right after another one sees a different
            // cadence, and that must not count for or against any of them.
            for k in 0..3 {
                match (i + k) % 3 {
                    0 => {
                        let t0 = Instant::now();
                        raw_title().await;
                        raw_us.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    1 => {
                        let t0 = Instant::now();
                        let r = executor.execute(Some(task.id), "get_title", serde_json::Value::Null).await;
                        exec_us.push(t0.elapsed().as_secs_f64() * 1e6);
                        assert!(r.ok);
                    }
                    _ => {
                        let t0 = Instant::now();
                        assert!(lua_title.call_async::<bool>(()).await.unwrap());
                        lua_us.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                }
            }
        }
        // The same comparison from inside one Lua coroutine, as a script sees it: a bench-only
        // Lua function does the raw chromiumoxide call, alternating with page:get_title().
        let raw_page = page.clone();
        let raw_fn = host
            .lua()
            .create_async_function(move |_, ()| {
                let page = raw_page.clone();
                async move {
                    let eval = EvaluateParams::builder().expression("document.title").return_by_value(true).build().unwrap();
                    page.execute(eval).await.map_err(|e| mlua::Error::runtime(e.to_string()))?;
                    Ok(())
                }
            })
            .unwrap();
        host.lua().globals().set("raw_title", raw_fn).unwrap();
        let in_lua: (Vec<f64>, Vec<f64>) = host
            .lua()
            .load(format!(
                "local a, b = {{}}, {{}}
                 for i = 1, {iterations} do
                   for k = 0, 1 do
                     if (i + k) % 2 == 0 then
                       local t0 = browser.clock(); raw_title(); a[#a + 1] = (browser.clock() - t0) * 1e6
                     else
                       local t0 = browser.clock(); assert(page:get_title().ok); b[#b + 1] = (browser.clock() - t0) * 1e6
                     end
                   end
                 end
                 return a, b"
            ))
            .eval_async()
            .await
            .unwrap();
        let (in_raw, in_lua) = (stats(in_lua.0), stats(in_lua.1));
        let (raw, exec, lua) = (stats(raw_us), stats(exec_us), stats(lua_us));
        println!("moonpilot latency benchmark ({iterations} calls each, interleaved)");
        line("raw chromiumoxide Runtime.evaluate(document.title)", "µs", raw);
        line("Rust executor.execute(\"get_title\")", "µs", exec);
        line("Lua page:get_title() through the executor", "µs", lua);
        println!("ratio Lua get_title / raw: median {:.2}x, p90 {:.2}x", lua.0 / raw.0, lua.1 / raw.1);
        println!("inside one Lua coroutine (what a script sees):");
        line("raw chromiumoxide Runtime.evaluate called from Lua", "µs", in_raw);
        line("page:get_title() through the executor", "µs", in_lua);
        println!("ratio in Lua get_title / raw: median {:.2}x, p90 {:.2}x", in_lua.0 / in_raw.0, in_lua.1 / in_raw.1);

        // --- snapshot --------------------------------------------------------------------
        host.eval("page:navigate{ url = A .. '/table?rows=4000' }:unwrap()", "table").await.unwrap();
        let main = tab.main_frame().await.unwrap();
        // browser-use's in-page builder, when its file is given (it is not ours to ship), as
        // published and with its quadratic XPath positions made linear (see LINEAR_POSITIONS).
        let browser_use: Option<&'static str> = std::env::var("BROWSER_USE_DOM_TREE_JS")
            .ok()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| &*Box::leak(text.trim().trim_end_matches(';').to_string().into_boxed_str()));
        let browser_use_linear: Option<&'static str> = browser_use
            .filter(|s| s.contains(POSITION_FN))
            .map(|s| &*Box::leak(s.replacen(POSITION_FN, LINEAR_POSITIONS, 1).into_boxed_str()));
        // Its overlay has our overlay's id; each run starts without either, as browser-use's own
        // `remove_highlights` does before every read.
        let clear_overlay = || async {
            // In the probes' world, where both builders keep their cleanup functions.
            tab.call_function(&main, CLEAR_OVERLAYS, json!({})).await.unwrap();
        };
        let bu_args = |exp: i64, highlight: bool| json!({"doHighlightElements": highlight, "focusHighlightIndex": -1, "viewportExpansion": exp, "debugMode": false});
        let bu_rounds: usize = env_or("BENCH_BROWSER_USE_RUNS", 5);
        let mut walk = Vec::new();
        let mut capture = Vec::new();
        let mut viewport = Vec::new();
        let mut whole = Vec::new();
        let mut probe = Vec::new();
        // browser-use (linear positions): viewport with highlight, viewport without, whole page.
        let mut bu: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for round in 0..snapshot_runs {
            let t0 = Instant::now();
            tab.call("DOM.getDocument", json!({"depth": -1})).await.unwrap();
            walk.push(t0.elapsed().as_secs_f64() * 1e3);
            let t0 = Instant::now();
            tab.call("DOMSnapshot.captureSnapshot", json!({"computedStyles": ["display", "visibility", "opacity", "cursor"]})).await.unwrap();
            capture.push(t0.elapsed().as_secs_f64() * 1e3);
            if let Some(script) = browser_use_linear.filter(|_| round < bu_rounds) {
                for (k, (exp, highlight)) in [(0, true), (0, false), (-1, false)].into_iter().enumerate() {
                    clear_overlay().await;
                    let t0 = Instant::now();
                    let v = tab.call_function(&main, script, bu_args(exp, highlight)).await.unwrap();
                    bu[k].push(t0.elapsed().as_secs_f64() * 1e3);
                    assert!(v["map"].is_object(), "browser-use's builder answered {v}");
                }
                clear_overlay().await;
            }
            let t0 = Instant::now();
            let v = tab
                .call_function(&main, moonpilot::js::DOM_INDEX_JS, json!({"doHighlightElements": true, "viewportExpansion": 0}))
                .await
                .unwrap();
            probe.push(t0.elapsed().as_secs_f64() * 1e3);
            assert_eq!(v["ok"], true);
            // Evidence of one read settles before the next is timed (an agent reads between).
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            let t0 = Instant::now();
            let r = executor.execute(Some(task.id), "get_browser_state", json!({"includeElements": false})).await;
            assert!(r.ok, "{:?}", r.msg);
            viewport.push(t0.elapsed().as_secs_f64() * 1e3);
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            let t0 = Instant::now();
            let r = executor
                .execute(Some(task.id), "get_browser_state", json!({"viewportExpansion": -1, "highlight": false, "includeElements": false}))
                .await;
            assert!(r.ok, "{:?}", r.msg);
            whole.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        // As published, its viewport read takes tens of seconds on this page: one run, and a
        // run past chromiumoxide's 60 s request timeout is reported as such.
        let mut bu_published = None;
        if let Some(script) = browser_use.filter(|_| std::env::var("BENCH_BROWSER_USE_PUBLISHED").map_or(true, |v| v != "0")) {
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            clear_overlay().await;
            let t0 = Instant::now();
            let v = tab.call_function(&main, script, bu_args(0, true)).await;
            let viewport_ms = v.map(|_| t0.elapsed().as_secs_f64() * 1e3).map_err(|e| e.msg);
            clear_overlay().await;
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            let t0 = Instant::now();
            let v = tab.call_function(&main, script, bu_args(-1, false)).await;
            let whole_ms = v.map(|_| t0.elapsed().as_secs_f64() * 1e3).map_err(|e| e.msg);
            bu_published = Some((viewport_ms, whole_ms));
            clear_overlay().await;
        }
        let elements = executor.execute(Some(task.id), "get_browser_state", json!({"viewportExpansion": -1, "highlight": false, "includeElements": false})).await.data["elementCount"].clone();
        let (walk, capture, viewport, whole, probe) = (stats(walk), stats(capture), stats(viewport), stats(whole), stats(probe));
        println!("4,000-row table ({elements} elements indexed for the whole page, {snapshot_runs} runs)");
        line("bare CDP walk: DOM.getDocument(depth -1)", "ms", walk);
        line("bare CDP walk: DOMSnapshot.captureSnapshot", "ms", capture);
        line("DOM index probe alone (viewport, highlight)", "ms", probe);
        line("get_browser_state (viewport)", "ms", viewport);
        line("get_browser_state (viewportExpansion -1, no highlight)", "ms", whole);
        println!(
            "ratio viewport snapshot / DOM.getDocument: {:.2}x; whole page / DOM.getDocument: {:.2}x; whole page / captureSnapshot: {:.2}x",
            viewport.0 / walk.0,
            whole.0 / walk.0,
            whole.0 / capture.0
        );
        if browser_use_linear.is_some() {
            let [vp_hl, vp, all] = bu.map(stats);
            line("browser-use builder, linear positions (viewport, highlight)", "ms", vp_hl);
            line("browser-use builder, linear positions (viewport, no highlight)", "ms", vp);
            line("browser-use builder, linear positions (whole page, no highlight)", "ms", all);
            println!(
                "ratio browser-use (linear positions) / get_browser_state: viewport {:.2}x with highlight, {:.2}x without (target >= 2); whole page {:.2}x (target >= 10)",
                vp_hl.0 / viewport.0,
                vp.0 / viewport.0,
                all.0 / whole.0
            );
        }
        match bu_published {
            Some((vp, all)) => {
                match vp {
                    Ok(ms) => println!(
                        "browser-use builder as published (viewport, highlight), one run: {ms:.0} ms = {:.2}x get_browser_state (viewport) (target >= 2)",
                        ms / viewport.0
                    ),
                    Err(e) => println!("browser-use builder as published (viewport, highlight): did not answer: {e}"),
                }
                match all {
                    Ok(ms) => println!(
                        "browser-use builder as published (whole page, no highlight), one run: {ms:.0} ms = {:.2}x get_browser_state (whole page) (target >= 10)",
                        ms / whole.0
                    ),
                    Err(e) => println!("browser-use builder as published (whole page): did not answer: {e}"),
                }
            }
            None if browser_use.is_none() => {
                println!("(browser-use lines skipped: set BROWSER_USE_DOM_TREE_JS to its buildDomTree.js)")
            }
            None => {}
        }

        // --- viewport reads of everyday pages ----------------------------------------------
        // What an agent pays per look on a widget page and a 200-row table: the probe alone and
        // the whole command (viewport, default highlight), interleaved per round.
        let page_runs: usize = env_or("BENCH_PAGE_RUNS", 30);
        // `BENCH_DOM_INDEX_BASE` names another copy of dom_index.js (say, the one before a
        // change): it is timed interleaved with ours, so a loaded machine weighs on both alike.
        let base_probe: Option<&'static str> = std::env::var("BENCH_DOM_INDEX_BASE")
            .ok()
            .and_then(|path| std::fs::read_to_string(path).ok())
            // Joined as ours is (`probe!` in src/js/mod.rs), so the two cost alike but for the walk.
            .map(|text| &*Box::leak(format!("{}({text})", moonpilot::js::WELL_FORMED_JS).into_boxed_str()));
        println!("viewport reads ({page_runs} runs each)");
        for path in ["/widgets.html", "/table?rows=200"] {
            host.eval(&format!("page:navigate{{ url = A .. '{path}' }}:unwrap()"), "page").await.unwrap();
            let main = tab.main_frame().await.unwrap();
            let (mut probe, mut command, mut base) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..page_runs + 3 {
                // Which probe runs first alternates: the call right after the command sees a
                // different page state (its overlay, its observers), and that must not count
                // for or against either.
                let mut probe_ms = 0.0;
                for k in 0..2 {
                    let ours = (round + k) % 2 == 0;
                    let script = if ours {
                        moonpilot::js::DOM_INDEX_JS
                    } else if let Some(script) = base_probe {
                        script
                    } else {
                        continue;
                    };
                    let t0 = Instant::now();
                    let v = tab
                        .call_function(&main, script, json!({"doHighlightElements": true, "viewportExpansion": 0}))
                        .await
                        .unwrap();
                    let ms = t0.elapsed().as_secs_f64() * 1e3;
                    assert_eq!(v["ok"], true);
                    if ours {
                        probe_ms = ms;
                    } else if round >= 3 {
                        base.push(ms);
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                let t0 = Instant::now();
                let r = executor.execute(Some(task.id), "get_browser_state", json!({"includeElements": false})).await;
                let command_ms = t0.elapsed().as_secs_f64() * 1e3;
                assert!(r.ok, "{:?}", r.msg);
                // The first rounds warm the page's layout and the engine's caches.
                if round >= 3 {
                    probe.push(probe_ms);
                    command.push(command_ms);
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            let probe = stats(probe);
            line(&format!("DOM index probe alone (viewport, highlight) {path}"), "ms", probe);
            if !base.is_empty() {
                let base = stats(base);
                line(&format!("BENCH_DOM_INDEX_BASE probe (viewport, highlight) {path}"), "ms", base);
                println!("ratio probe / base probe: median {:.2}x, p90 {:.2}x", probe.0 / base.0, probe.1 / base.1);
            }
            line(&format!("get_browser_state (viewport) {path}"), "ms", stats(command));
        }
        engine.shutdown().await;
    });
}
