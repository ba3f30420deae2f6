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
        let opts = SplashOptions::default();
        let outcome = match args::check(Endpoint::Execute, given, &opts) {
            Ok(checked) => super::run::run(&executor, checked).await,
            Err(e) => Err(e),
        };
        engine.shutdown().await;
        engine.flush_trace().await;
        match outcome {
            Err(e) => {
                eprintln!(
                    "{}",
                    serde_json::to_string_pretty(&e.body()).unwrap_or_default()
                );
                ExitCode::from(1)
            }
            Ok(answer) => {
                let text = answer.content_type.starts_with("text/")
                    || answer.content_type.starts_with("application/json");
                match (&out, text) {
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
        }
    })
}
