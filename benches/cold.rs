//! A cold run through the real binary (`cargo bench --bench cold`): `moonpilot run` of a script
//! that launches the browser, opens a local page, reads its title and ends (the engine shuts
//! down, writing the evidence the receipts named), against `chromium --headless --dump-dom` of
//! the same page, from the same binary and with the same flags, alternating run by run.
//!
//! Also timed: the same run with `--no-capture` (no evidence to write before the exit), to show
//! what the evidence costs at the end of a run. Prints median and p90 and the ratios.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use figures::{env_or, line, stats, timed};
use std::process::Command;

fn main() {
    let runs: usize = env_or("BENCH_COLD_RUNS", 12);
    // The fixture server runs on its own threads: the bench blocks on child processes.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fixtures = rt.block_on(server::Fixtures::start()).unwrap();
    let url = format!("{}/basic.html", fixtures.a);
    let chromium =
        std::env::var("MOONPILOT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let dir = std::env::temp_dir().join(format!("moonpilot-bench-cold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("cold.lua");
    std::fs::write(
        &script,
        "local page = browser.start{}\n\
         page:navigate{ url = browser.args.url }:unwrap()\n\
         assert(page:get_title():unwrap().title == 'Basic')\n",
    )
    .unwrap();
    let moonpilot = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
        cmd.current_dir(&dir)
            .arg("run")
            .arg(&script)
            .args(["--arg", &format!("url={url}"), "--no-trace"])
            .args(extra);
        cmd
    };
    // The flags moonpilot launches with (browser/mod.rs), a fresh profile each run.
    let dump = |n: usize| {
        let mut cmd = Command::new(&chromium);
        cmd.args(["--headless", "--no-sandbox", "--window-size=1280,800"])
            .args(
                moonpilot::browser::LAUNCH_ARGS
                    .iter()
                    .map(|a| format!("--{a}")),
            )
            .arg(format!(
                "--user-data-dir={}",
                dir.join(format!("profile-{n}")).display()
            ))
            .args(["--dump-dom", &url]);
        cmd
    };
    // One of each first: disk caches warm, nothing measured.
    timed(moonpilot(&[]));
    timed(dump(usize::MAX));
    let (mut ours, mut ours_nocap, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..runs {
        // Rotate the order, so neither always runs right after the other.
        for k in 0..3 {
            match (n + k) % 3 {
                0 => ours.push(timed(moonpilot(&[]))),
                1 => ours_nocap.push(timed(moonpilot(&["--no-capture"]))),
                _ => theirs.push(timed(dump(n))),
            }
        }
    }
    let (ours, ours_nocap, theirs) = (stats(ours), stats(ours_nocap), stats(theirs));
    println!("cold run of basic.html ({runs} runs each, alternating)");
    line(
        "moonpilot run (launch, navigate, get_title, shutdown)",
        "ms",
        ours,
    );
    line("moonpilot run --no-capture", "ms", ours_nocap);
    line("chromium --headless --dump-dom", "ms", theirs);
    println!(
        "ratio moonpilot / dump-dom: median {:.2}x (target <= 1.10), p90 {:.2}x; --no-capture {:.2}x",
        ours.0 / theirs.0,
        ours.1 / theirs.1,
        ours_nocap.0 / theirs.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}
