//! What an agent reads, in characters (`cargo bench --bench observation`; issue 14).
//!
//! Per fixture page: the length of moonpilot's `get_browser_state` text (the default viewport
//! read, and the whole page with `viewportExpansion = -1`; the frames page also with
//! `includeFrames = true`) against Playwright's ARIA snapshot of the same page on the same
//! Chromium (`page.ariaSnapshot()`, refs-free, and `page.ariaSnapshot({mode:'ai'})`, which also
//! reads frame content), measured by `benches/node/peer.mjs` (`npm install` in `benches/node`
//! first). Lengths are Unicode scalar values on both sides (Lua `utf8.len`, JS `[...s].length`).
//!
//! The issue's target: the text at `viewportExpansion = -1` is ≤ 0.8× `aria` on pages without
//! frames, and the frames page with `includeFrames = true` is ≤ 0.8× `ai`. The `met` column says
//! which pages meet it. Without node or playwright-core the bench prints why and exits 0.
//!
//! `MOONPILOT_BENCH_WRITE_BASELINE=1` rewrites `benches/observation_baseline.json` with the
//! figures; `MOONPILOT_BENCH_SHOW=1` also prints every text.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
#[allow(dead_code)]
mod figures;

#[path = "peer.rs"]
mod peer;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::BTreeMap;
use std::path::Path;

use moonpilot::lua::LuaHost;
use moonpilot::Executor;
use peer::Peer;
use serde_json::{json, Value};

/// The pages the issue names, by name and path on the fixture server (site A). `frames` marks
/// the page whose target is held against `ai` with `includeFrames = true`.
const PAGES: &[(&str, &str, bool)] = &[
    ("checkout", "/checkout.html", false),
    ("shop", "/shop.html", false),
    ("form_errors", "/form_errors.html", false),
    ("modals", "/modals.html", false),
    ("widgets", "/widgets.html", false),
    ("listener_only", "/listener_only.html", false),
    ("table200", "/table?rows=200", false),
    ("frames", "/frames.html", true),
];

/// The issue's target ratio.
const TARGET: f64 = 0.8;

/// Reads a page the way an agent does: navigate, then `get_browser_state` without the overlay.
/// Returns the text's length in characters and the element count; `vx` nil is the default.
const READ_LUA: &str = r#"
return function(url, vx, frames, show)
  page:navigate{ url = url }:unwrap()
  local s = page:get_browser_state{ highlight = false, viewportExpansion = vx, includeFrames = frames }:unwrap()
  if show then print(("--- moonpilot %s vx=%s includeFrames=%s\n%s"):format(url, tostring(vx), tostring(frames), s.text)) end
  return utf8.len(s.text) or #s.text, s.elementCount
end
"#;

fn main() {
    let show = std::env::var("MOONPILOT_BENCH_SHOW").is_ok_and(|v| v == "1");
    let write = std::env::var("MOONPILOT_BENCH_WRITE_BASELINE").is_ok_and(|v| v == "1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let Some(mut peer) = Peer::start("peer.mjs", "observation bench skipped").await else {
            return;
        };
        let fixtures = server::Fixtures::start().await.unwrap();
        let engine = figures::engine("moonpilot-bench-observation");
        let executor = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let host = LuaHost::new(executor, BTreeMap::new()).unwrap();
        host.eval("page = browser.start{}", "setup").await.unwrap();
        let read: mlua::Function = host.lua().load(READ_LUA).eval().unwrap();

        println!(
            "moonpilot observation benchmark: Chromium {}, playwright-core {}",
            peer.ready["version"].as_str().unwrap_or("?"),
            peer.ready["playwright"].as_str().unwrap_or("?")
        );
        println!(
            "{:<14} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8}  met (≤ {TARGET}×)",
            "page", "ours0", "ours-1", "oursFr", "aria", "ai", "0/aria", "ratio"
        );
        let mut pages = serde_json::Map::new();
        for &(name, path, frames) in PAGES {
            let url = format!("{}{path}", fixtures.a);
            let (ours0, count0): (i64, i64) = read
                .call_async((url.clone(), mlua::Value::Nil, false, show))
                .await
                .unwrap();
            let (ours_all, count_all): (i64, i64) =
                read.call_async((url.clone(), -1, false, show)).await.unwrap();
            let with_frames: Option<(i64, i64)> = if frames {
                Some(read.call_async((url.clone(), -1, true, show)).await.unwrap())
            } else {
                None
            };
            let peer_answer = peer.ask(json!({"op": "measure", "url": url, "show": show})).await;
            if show {
                println!("--- aria {url}\n{}", peer_answer["aria"].as_str().unwrap_or(""));
                println!("--- ai {url}\n{}", peer_answer["ai"].as_str().unwrap_or(""));
            }
            let aria = peer_answer["ariaChars"].as_i64().unwrap_or(0);
            let ai = peer_answer["aiChars"].as_i64().unwrap_or(0);
            // The target: the whole page against aria, or with frames read against ai.
            let (ours, against) = match with_frames {
                Some((n, _)) => (n, ai),
                None => (ours_all, aria),
            };
            let ratio = ours as f64 / against.max(1) as f64;
            let met = ratio <= TARGET;
            println!(
                "{name:<14} {ours0:>7} {ours_all:>7} {:>7} {aria:>7} {ai:>7} {:>7.2}× {ratio:>7.2}×  {}{}",
                with_frames.map_or("–".to_string(), |(n, _)| n.to_string()),
                ours0 as f64 / aria.max(1) as f64,
                if met { "yes" } else { "no" },
                if frames { " (includeFrames vs ai)" } else { "" },
            );
            let mut entry = json!({
                "path": path,
                "ours": {"viewport": ours0, "whole": ours_all},
                "elements": {"viewport": count0, "whole": count_all},
                "aria": aria,
                "ai": ai,
                "ratio": (ratio * 100.0).round() / 100.0,
                "against": if frames { "ai" } else { "aria" },
            });
            if let Some((n, count)) = with_frames {
                entry["ours"]["includeFrames"] = json!(n);
                entry["elements"]["includeFrames"] = json!(count);
            }
            pages.insert(name.to_string(), entry);
        }
        let versions = (peer.ready["version"].clone(), peer.ready["playwright"].clone());
        peer.close().await;
        if write {
            let baseline = json!({
                "note": "issue 14: characters of get_browser_state text (ours: viewport = default read, whole = viewportExpansion=-1, includeFrames = whole page with frames) vs Playwright ariaSnapshot() (aria) and ariaSnapshot({mode:'ai'}) (ai); ratio = whole/aria, or includeFrames/ai on frame pages. Written by `MOONPILOT_BENCH_WRITE_BASELINE=1 cargo bench --bench observation`.",
                "chromium": versions.0,
                "playwright": versions.1,
                "target": TARGET,
                "pages": Value::Object(pages),
            });
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/observation_baseline.json");
            std::fs::write(&path, serde_json::to_string_pretty(&baseline).unwrap() + "\n").unwrap();
            println!("baseline written to {}", path.display());
        }
    });
}
