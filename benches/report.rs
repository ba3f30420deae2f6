//! The report's bound (issue 25, `cargo bench --bench report`): a synthetic 3,000-command run
//! with 200 screenshots of 1280x800 (what the engine takes and retention keeps) written as one
//! HTML page, and the page opened from `file://` in Chromium through the engine until its
//! script has run. Prints median and p90 of each and the page's size; fails when a median is
//! over 2 s.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::time::Instant;

use figures::{env_or, line, stats};
use moonpilot::report::{write, Images, Subject};
use moonpilot::Executor;
use serde_json::json;

fn main() {
    let runs: usize = env_or("BENCH_REPORT_RUNS", 7);
    let dir = std::env::temp_dir().join(format!("moonpilot-bench-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run_dir = synthetic::synthetic_run(&dir, 3_000, (1280, 800));
    let out = dir.join("report.html");
    let mut writes = Vec::new();
    let mut size = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let written = write(&Subject::Run(run_dir.clone()), &Images::Embed, &out, false).unwrap();
        writes.push(t0.elapsed().as_secs_f64() * 1e3);
        assert_eq!(written.commands, 3_000);
        size = written.bytes;
    }
    println!(
        "moonpilot report: 3,000 commands, 200 screenshots of 1280x800, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let write_ms = stats(writes);
    line("write the page (embedded thumbnails)", "ms", write_ms);
    println!("{:<66} {:>9.2} MiB", "page size", size as f64 / 1048576.0);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let open_ms = local.block_on(&rt, async {
        let engine = figures::engine("moonpilot-bench-report-engine");
        let executor = Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let start = executor.execute(None, "start", json!({})).await;
        let task =
            moonpilot::browser::task::TaskId(start.data["id"].as_str().unwrap().parse().unwrap());
        let url = format!("file://{}", out.display());
        let mut opens = Vec::new();
        for _ in 0..runs {
            executor
                .execute(Some(task), "navigate", json!({"url": "about:blank"}))
                .await;
            let t0 = Instant::now();
            let nav = executor
                .execute(Some(task), "navigate", json!({"url": url}))
                .await;
            assert!(nav.ok, "{:?}", nav.msg);
            // The page's own script has run once the count says so.
            let shown = executor
                .execute(
                    Some(task),
                    "execute_js",
                    json!({"body": "document.getElementById('shown').textContent"}),
                )
                .await;
            opens.push(t0.elapsed().as_secs_f64() * 1e3);
            assert_eq!(shown.data["result"], "3000 of 3000 shown");
        }
        engine.shutdown().await;
        stats(opens)
    });
    line(
        "open it in Chromium (navigate from file:// + the page's script)",
        "ms",
        open_ms,
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(write_ms.0 < 2_000.0, "writing took {:.0} ms", write_ms.0);
    assert!(open_ms.0 < 2_000.0, "opening took {:.0} ms", open_ms.0);
}
