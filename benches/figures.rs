//! What the benchmarks share: medians and p90s, one printed line per measurement, settings from
//! the environment, and the engine they measure.

use std::sync::Arc;

use moonpilot::{Engine, EngineConfig};

/// Median and p90 of `samples`.
pub fn stats(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.9))
}

/// One line: `name`, median and p90 in `unit`.
pub fn line(name: &str, unit: &str, (median, p90): (f64, f64)) {
    println!("{name:<66} median {median:>9.2} {unit}   p90 {p90:>9.2} {unit}");
}

/// The integer in environment variable `name`, or `default`.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An engine as real runs have it, its files under the temp dir's `dir`. The trace log is on
/// (its writer thread competes for the CPU); `MOONPILOT_BENCH_TRACE=0` measures without it.
#[allow(dead_code)] // Not every bench runs an engine in-process.
pub fn engine(dir: &str) -> Arc<Engine> {
    Engine::new(config(dir))
}

/// The settings of [`engine`].
#[allow(dead_code)] // Not every bench runs an engine in-process.
pub fn config(dir: &str) -> EngineConfig {
    let data = std::env::temp_dir().join(dir);
    let trace = std::env::var("MOONPILOT_BENCH_TRACE").map_or(true, |v| v != "0");
    EngineConfig {
        trace_dir: trace.then(|| data.join("trace")),
        data_dir: data,
        ..EngineConfig::default()
    }
}

/// An engine in a fresh state directory under the temp dir's `dir`, evidence `capture` on or off.
#[allow(dead_code)] // Not every bench runs an engine in-process.
pub fn fresh_engine(dir: &str, capture: bool) -> Arc<Engine> {
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(dir));
    Engine::new(EngineConfig {
        capture,
        ..config(dir)
    })
}

/// A task started on `ex` and navigated to `url`.
#[allow(dead_code)] // Not every bench runs an engine in-process.
pub async fn task_at(ex: &moonpilot::Executor, url: &str) -> moonpilot::browser::task::TaskId {
    let started = ex.execute(None, "start", serde_json::json!({})).await;
    assert!(started.ok, "{:?}", started.msg);
    let id =
        moonpilot::browser::task::TaskId(started.data["id"].as_str().unwrap().parse().unwrap());
    let r = ex
        .execute(Some(id), "navigate", serde_json::json!({"url": url}))
        .await;
    assert!(r.ok, "{:?}", r.msg);
    id
}

/// Runs `cmd` to its end and answers its wall time in ms; a run that fails fails the bench,
/// with its output.
#[allow(dead_code)] // Not every bench runs child processes.
pub fn timed(mut cmd: std::process::Command) -> f64 {
    use std::process::Stdio;
    let t0 = std::time::Instant::now();
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ms
}
