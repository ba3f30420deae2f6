//! Recorded runs: what `moonpilot run` and each run of `moonpilot watch` leave beside the trace
//! and the evidence, so that `moonpilot report` can show one run as a whole.
//!
//! Before this there was no "run" on disk: the trace is one file per UTC day shared by every
//! engine (`logs/trace/<yyyymmdd>/calls.jsonl`) and evidence is one directory per task
//! (`data/<task>/`). A recorded run adds the smallest honest marker:
//!
//! - `runs/<id>/run.json` under the state directory ([`RunRecord`]): the script, when it
//!   started and ended, how it ended (exit code, the error text), and where its trace and
//!   evidence went;
//! - `runs/<id>/output.txt`: what the script printed, bounded ([`OUTPUT_MAX_BYTES`],
//!   [`OUTPUT_MAX_LINES`]) and redacted like every file the engine writes;
//! - the trace lines of its commands carry `"run": "<id>"` (`Engine::set_trace_run`), so the
//!   report takes exactly them, even when other engines wrote to the same day file.
//!
//! Ids sort as their start times do (`20261230-235959.999-<pid>-<n>`), so the newest run is
//! the greatest name. The newest [`KEEP_RUNS`] run directories are kept; an older one goes when
//! a new run begins. Everything here is blocking file work: hosts call it from their own
//! thread outside the runtime, or through `spawn_blocking`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How many run directories are kept.
pub const KEEP_RUNS: usize = 50;
/// The most bytes of printed output a run keeps.
pub const OUTPUT_MAX_BYTES: usize = 256 * 1024;
/// The most printed lines a run keeps.
pub const OUTPUT_MAX_LINES: usize = 5_000;

/// The runs directory under a state directory.
pub fn runs_dir(state: &Path) -> PathBuf {
    state.join("runs")
}

/// How a run ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still running, or the process died without finishing the record.
    Running,
    /// The script ran to its end.
    Ok,
    /// The script raised an uncaught error (or did not parse).
    Failed,
    /// Ctrl-C, or a save in watch mode, stopped it.
    Interrupted,
}

impl RunStatus {
    /// The word shown for it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// `run.json`: one run of a script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// The run's id: its directory's name and the `run` of its trace lines.
    pub id: String,
    /// The script, as an absolute path.
    pub script: PathBuf,
    /// When it started (epoch ms).
    pub started_ms: u64,
    /// When it ended (epoch ms).
    pub ended_ms: Option<u64>,
    /// How it ended.
    pub status: RunStatus,
    /// The process's exit code for it (`moonpilot run`; none in watch mode).
    pub exit_code: Option<u8>,
    /// The uncaught error's text (redacted), with its `file:line` and traceback.
    pub error: Option<String>,
    /// Where its trace lines are (none: the trace was off).
    pub trace_dir: Option<PathBuf>,
    /// Where its evidence is (`data/`).
    pub data_dir: PathBuf,
    /// The engine's process.
    pub pid: u32,
    /// Printed lines that were not kept (over the bound).
    #[serde(default)]
    pub output_cut: usize,
}

/// What a run printed, bounded: the first [`OUTPUT_MAX_LINES`] lines and [`OUTPUT_MAX_BYTES`]
/// bytes, each line redacted; the rest is counted.
#[derive(Debug, Default, Clone)]
pub struct Output {
    lines: Vec<String>,
    bytes: usize,
    cut: usize,
}

impl Output {
    /// Keeps one `print`'s text (several lines when it holds newlines).
    pub fn push(&mut self, printed: &str) {
        for line in printed.split('\n') {
            if self.lines.len() >= OUTPUT_MAX_LINES || self.bytes + line.len() > OUTPUT_MAX_BYTES {
                self.cut += 1;
                continue;
            }
            let line = crate::redact::text(line).into_owned();
            self.bytes += line.len() + 1;
            self.lines.push(line);
        }
    }

    /// The kept lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// How many lines were not kept.
    pub fn cut(&self) -> usize {
        self.cut
    }
}

/// A run's id from its start (epoch ms), the process and the host's run number.
pub fn run_id(started_ms: u64, pid: u32, number: u64) -> String {
    // `2026-12-30T23:59:59.999Z` → `20261230-235959.999`.
    let iso = crate::trace::iso_utc(started_ms);
    let stamp: String = iso
        .chars()
        .filter(|c| !matches!(c, '-' | ':' | 'Z'))
        .map(|c| if c == 'T' { '-' } else { c })
        .collect();
    format!("{stamp}-{pid}-{number}")
}

impl RunRecord {
    /// A run of `script` starting now, its evidence and trace where `config` puts them.
    pub fn new(script: &Path, config: &crate::EngineConfig, number: u64) -> RunRecord {
        let started_ms = crate::clock::epoch_ms();
        let pid = std::process::id();
        RunRecord {
            id: run_id(started_ms, pid, number),
            script: std::path::absolute(script).unwrap_or_else(|_| script.to_path_buf()),
            started_ms,
            ended_ms: None,
            status: RunStatus::Running,
            exit_code: None,
            error: None,
            trace_dir: config.trace_dir.clone(),
            data_dir: config.data_dir.clone(),
            pid,
            output_cut: 0,
        }
    }

    /// Writes `run.json` (status `running`) into a new `runs/<id>/` of `state` and removes the
    /// run directories past the newest [`KEEP_RUNS`]. Answers the run's directory.
    pub fn begin(&self, state: &Path) -> std::io::Result<PathBuf> {
        let runs = runs_dir(state);
        let dir = runs.join(&self.id);
        std::fs::create_dir_all(&dir)?;
        self.save(&dir)?;
        prune(&runs, KEEP_RUNS);
        Ok(dir)
    }

    /// Records how the run ended, with what it printed, in its directory `dir`.
    pub fn finish(
        &mut self,
        dir: &Path,
        status: RunStatus,
        exit_code: Option<u8>,
        error: Option<&str>,
        output: &Output,
    ) -> std::io::Result<()> {
        self.ended_ms = Some(crate::clock::epoch_ms());
        self.status = status;
        self.exit_code = exit_code;
        self.error = error.map(|e| crate::redact::text(e).into_owned());
        self.output_cut = output.cut();
        let mut text = output.lines().join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        crate::evidence::write_whole_blocking(&dir.join("output.txt"), text.as_bytes())?;
        self.save(dir)
    }

    fn save(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::evidence::write_whole_blocking(&dir.join("run.json"), &json)
    }

    /// Reads the run recorded in `dir`; a clear message when it is none.
    pub fn load(dir: &Path) -> Result<RunRecord, String> {
        let file = dir.join("run.json");
        let bytes = std::fs::read(&file).map_err(|e| {
            if dir.is_dir() {
                format!(
                    "{} is no recorded run: cannot read {}: {e}",
                    dir.display(),
                    file.display()
                )
            } else {
                format!("no such run directory: {}", dir.display())
            }
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| format!("{} is not a run record: {e}", file.display()))
    }

    /// The printed lines recorded in `dir` (none when there is no output file).
    pub fn output(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("output.txt"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// The run directories under `runs`, oldest first (by name, which is by start time).
fn run_dirs(runs: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Removes all but the newest `keep` run directories (errors ignored: a directory another
/// process removed is gone either way).
fn prune(runs: &Path, keep: usize) {
    let dirs = run_dirs(runs);
    let extra = dirs.len().saturating_sub(keep);
    for dir in dirs.into_iter().take(extra) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The newest recorded run's directory in the state directory `state`.
pub fn newest(state: &Path) -> Option<PathBuf> {
    run_dirs(&runs_dir(state)).pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_as_their_start_times() {
        assert_eq!(run_id(1_798_675_199_999, 42, 1), "20261230-235959.999-42-1");
        let early = run_id(1_798_675_199_999, 99_999, 9);
        let late = run_id(1_798_675_200_000, 1, 1);
        assert!(early < late, "{early} < {late}");
    }

    #[test]
    fn output_is_bounded_and_redacted() {
        let mut out = Output::default();
        out.push("a\nhttps://x.test/?token=abc123");
        assert_eq!(out.lines(), ["a", "https://x.test/?token=***"]);
        for _ in 0..OUTPUT_MAX_LINES {
            out.push("line");
        }
        assert_eq!(out.lines().len(), OUTPUT_MAX_LINES);
        assert_eq!(out.cut(), 2);
    }

    #[test]
    fn the_newest_runs_are_kept() {
        let state = std::env::temp_dir().join(format!("moonpilot-runs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        let config = crate::EngineConfig::in_state_dir(&state);
        let mut last = PathBuf::new();
        for n in 0..(KEEP_RUNS as u64 + 3) {
            let mut record = RunRecord::new(Path::new("x.lua"), &config, n);
            record.id = format!("20260101-000000.000-1-{n:03}");
            last = record.begin(&state).unwrap();
        }
        assert_eq!(run_dirs(&runs_dir(&state)).len(), KEEP_RUNS);
        assert_eq!(newest(&state), Some(last.clone()));
        let mut record = RunRecord::load(&last).unwrap();
        assert_eq!(record.status, RunStatus::Running);
        let mut out = Output::default();
        out.push("hello");
        record
            .finish(
                &last,
                RunStatus::Failed,
                Some(1),
                Some("x.lua:2: boom"),
                &out,
            )
            .unwrap();
        let again = RunRecord::load(&last).unwrap();
        assert_eq!(again.status, RunStatus::Failed);
        assert_eq!(again.error.as_deref(), Some("x.lua:2: boom"));
        assert_eq!(RunRecord::output(&last), ["hello"]);
        assert!(RunRecord::load(&state.join("nope"))
            .unwrap_err()
            .contains("no such run directory"));
        let _ = std::fs::remove_dir_all(&state);
    }
}
