//! `moonpilot splash FILE.lua`: a Splash script run locally, as `/execute` would run it, with
//! its result printed (a binary result goes to `--out`) — Splash users' edit loop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::args::{self, Endpoint};
use super::SplashOptions;
use crate::Executor;

/// Runs the Splash script at `path` with `args` (`--arg k=v`, and `url` when given) on an
/// engine of `config`: 0 when it answered, 1 for a script or render error (Splash's error
/// object on stderr), 2 for a file that cannot be read or a binary result without `--out`.
pub fn run_file(
    config: crate::EngineConfig,
    path: &Path,
    script_args: BTreeMap<String, String>,
    url: Option<String>,
    out: Option<PathBuf>,
) -> ExitCode {
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("moonpilot: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let runtime = match crate::signal::multi_thread_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let mut given: Map<String, Value> = script_args
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    if let Some(url) = url {
        given.insert("url".into(), Value::String(url));
    }
    given.insert("lua_source".into(), Value::String(source));
    runtime.block_on(async move {
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        let outcome = run_once(&executor, given).await;
        engine.shutdown().await;
        engine.flush_trace().await;
        print_answer(outcome, out.as_deref())
    })
}

/// Whether `source` is a Splash script (it defines `main(splash, ...)`), which `moonpilot
/// watch` runs as `moonpilot splash` does.
pub fn is_splash_script(source: &str) -> bool {
    source.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("function main(splash") || l.starts_with("main = function(splash")
    })
}

/// One run of a script whose arguments (its `lua_source` among them) are `given`.
async fn run_once(
    executor: &Executor,
    given: Map<String, Value>,
) -> Result<super::run::Answer, super::run::SplashError> {
    let opts = SplashOptions::default();
    match args::check(Endpoint::Execute, given, &opts) {
        Ok(checked) => super::run::run(executor, checked).await,
        Err(e) => Err(e),
    }
}

/// Prints a run's answer (a binary one to `out`) or its Splash error object: the exit code.
fn print_answer(
    outcome: Result<super::run::Answer, super::run::SplashError>,
    out: Option<&Path>,
) -> ExitCode {
    let answer = match outcome {
        Err(e) => {
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&e.body()).unwrap_or_default()
            );
            return ExitCode::from(1);
        }
        Ok(answer) => answer,
    };
    let text = answer.content_type.starts_with("text/")
        || answer.content_type.starts_with("application/json");
    match (out, text) {
        (Some(file), _) => match std::fs::write(file, &answer.body) {
            Ok(()) => {
                eprintln!(
                    "moonpilot: wrote {} bytes of {} to {}",
                    answer.body.len(),
                    answer.content_type,
                    file.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("moonpilot: cannot write {}: {e}", file.display());
                ExitCode::from(2)
            }
        },
        (None, true) => {
            println!("{}", String::from_utf8_lossy(&answer.body));
            ExitCode::SUCCESS
        }
        (None, false) => {
            eprintln!(
                "moonpilot: the script answered {} bytes of {}: pass --out FILE",
                answer.body.len(),
                answer.content_type
            );
            ExitCode::from(2)
        }
    }
}

/// `moonpilot watch FILE.lua` for a Splash script: runs it as `moonpilot splash` does, and
/// again on every save; the browser stays open between runs (each run is a request of its
/// own, in a fresh browser context, as Splash's are). A binary result is written to `out`
/// (default: `result.<ext>` in the state directory). A save during a run stops it and runs
/// the new version. Ends on Ctrl-C (130).
pub fn watch_file(
    config: crate::EngineConfig,
    path: &Path,
    script_args: BTreeMap<String, String>,
    out: Option<PathBuf>,
) -> ExitCode {
    let script = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let runtime = match crate::signal::multi_thread_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let data_dir = config.data_dir.clone();
    runtime.block_on(async move {
        let mut files = match crate::watch::Files::new() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("moonpilot: cannot watch files: {e}");
                return ExitCode::from(2);
            }
        };
        files.set(std::collections::BTreeSet::from([script.clone()]));
        let mut interrupt = match crate::lua::interrupt_listener() {
            Ok(s) => s,
            Err(code) => return code,
        };
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        // A task of its own holds the browser open between runs.
        let keeper = executor.execute(None, "start", serde_json::json!({})).await;
        let keeper_id = keeper.data["id"].as_str().and_then(|i| i.parse().ok());
        let mut number = 0u64;
        'runs: loop {
            number += 1;
            let source = match std::fs::read_to_string(&script) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("moonpilot: cannot read {}: {e}", script.display());
                    String::new()
                }
            };
            let mut given: Map<String, Value> = script_args
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            given.insert("lua_source".into(), Value::String(source));
            println!("watch: run {number} of {}", script.display());
            let started = std::time::Instant::now();
            let outcome = tokio::select! {
                o = run_once(&executor, given) => o,
                _ = files.next_save() => continue 'runs,
                _ = interrupt.recv() => break 'runs,
            };
            let ext = match outcome.as_ref().map(|a| a.content_type.as_str()) {
                Ok("image/png") => Some("png"),
                Ok("image/jpeg") => Some("jpeg"),
                Ok(t) if !(t.starts_with("text/") || t.starts_with("application/json")) => {
                    Some("bin")
                }
                _ => None,
            };
            // Text is printed; a binary result goes to the file.
            let target = ext.map(|e| {
                out.clone()
                    .unwrap_or_else(|| data_dir.join(format!("result.{e}")))
            });
            let code = print_answer(outcome, target.as_deref());
            println!(
                "watch: run {number} {} in {} ms; waiting for a save (Ctrl-C stops)",
                if code == ExitCode::SUCCESS {
                    "answered"
                } else {
                    "failed"
                },
                started.elapsed().as_millis()
            );
            tokio::select! {
                _ = files.next_save() => {}
                _ = interrupt.recv() => break 'runs,
            }
        }
        if let Some(id) = keeper_id {
            executor
                .close_if_alive(crate::browser::task::TaskId(id), "watch")
                .await;
        }
        engine.shutdown().await;
        engine.flush_trace().await;
        println!("watch: stopped");
        ExitCode::from(130)
    })
}
