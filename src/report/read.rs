//! The report's reading: a run's record, the trace lines of a run or a task, and the evidence
//! files they name (screenshots scaled on every core, observation texts cut to their bound).
//! Blocking file work, on the caller's thread.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use super::{
    thumb, Images, Step, Subject, EMBEDDED_IMAGES_MAX_BYTES, OBSERVATIONS_MAX_CHARS,
    OBSERVATION_MAX_CHARS,
};
use crate::runs::RunRecord;

/// Why no report could be made (`moonpilot report` exits 2 on each).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The state directory holds no recorded run.
    #[error("no recorded run in {0} (a run is recorded by `moonpilot run` and `moonpilot watch`; pass a run's directory or --state-dir)")]
    NoRun(PathBuf),
    /// The directory given is no run.
    #[error("{0}")]
    BadDir(String),
    /// The trace holds no command of the task.
    #[error("no command of task `{task}` in the trace at {dir}")]
    NoTask {
        /// The task asked for.
        task: String,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// The page could not be written.
    #[error("cannot write the report to {path}: {source}")]
    Write {
        /// Where it was to go.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

/// What a subject's report is made from.
pub(super) struct Loaded {
    pub run: Option<RunRecord>,
    pub lines: Vec<Value>,
    pub output: Vec<String>,
    pub data_dir: PathBuf,
}

/// A `yyyymmdd` day directory name.
fn is_day(name: &str) -> bool {
    name.len() == 8 && name.bytes().all(|b| b.is_ascii_digit())
}

/// The trace's day directories from `first` to `last` (`yyyymmdd`, inclusive), in order.
fn days(trace_dir: &Path, first: &str, last: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(trace_dir) else {
        return Vec::new();
    };
    let mut days: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            (is_day(&name) && first <= name.as_str() && name.as_str() <= last)
                .then(|| (name, e.path()))
        })
        .collect();
    days.sort();
    days.into_iter().map(|(_, p)| p).collect()
}

/// The trace lines of `days` that contain `needle` and pass `keep`, in order.
fn lines_of(days: &[PathBuf], needle: &str, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    for day in days {
        let Ok(file) = std::fs::File::open(day.join("calls.jsonl")) else {
            continue;
        };
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            // Most lines of a shared day file are another run's: skip them unparsed.
            if !line.contains(needle) {
                continue;
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if keep(&v) {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The trace lines of `task` (its own commands, and the `start` that opened it), from the day
/// it was opened to today.
pub fn task_lines(task: &str, trace_dir: &Path) -> Vec<Value> {
    // Task ids are `(epoch ms << 12) | n`: the day it was opened.
    let opened = task.parse::<u64>().map(|id| id >> 12).unwrap_or(0);
    let first = crate::trace::utc_date(opened);
    let last = crate::trace::today();
    lines_of(&days(trace_dir, &first, &last), task, |v| {
        v["taskId"].as_str() == Some(task)
            || (v["method"] == "start" && v["result"]["id"].as_str() == Some(task))
    })
}

/// The trace lines of recorded run `run`, in order (none when it ran without a trace).
pub fn run_lines(run: &RunRecord) -> Vec<Value> {
    let Some(trace_dir) = &run.trace_dir else {
        return Vec::new();
    };
    tagged_lines(trace_dir, &run.id, run.started_ms, run.ended_ms)
}

/// The trace lines tagged with run id `tag` (`Engine::set_trace_run`) from day `from_ms` to
/// day `to_ms` (none: today), in order.
pub fn tagged_lines(trace_dir: &Path, tag: &str, from_ms: u64, to_ms: Option<u64>) -> Vec<Value> {
    let first = crate::trace::utc_date(from_ms);
    let last = crate::trace::utc_date(to_ms.unwrap_or_else(crate::clock::epoch_ms));
    let needle = format!("\"run\":\"{tag}\"");
    lines_of(&days(trace_dir, &first, &last), &needle, |v| {
        v["run"].as_str() == Some(tag)
    })
}

pub(super) fn load(subject: &Subject) -> Result<Loaded, ReportError> {
    match subject {
        Subject::Run(dir) => {
            let run = RunRecord::load(dir).map_err(ReportError::BadDir)?;
            let lines = run_lines(&run);
            Ok(Loaded {
                output: RunRecord::output(dir),
                data_dir: run.data_dir.clone(),
                run: Some(run),
                lines,
            })
        }
        Subject::Task {
            task,
            trace_dir,
            data_dir,
        } => {
            let lines = task_lines(task, trace_dir);
            if lines.is_empty() {
                return Err(ReportError::NoTask {
                    task: task.clone(),
                    dir: trace_dir.clone(),
                });
            }
            Ok(Loaded {
                run: None,
                lines,
                output: Vec::new(),
                data_dir: data_dir.clone(),
            })
        }
    }
}

/// A PNG's size from its header (`IHDR`: width and height, big-endian, at bytes 16 and 20).
fn png_size(path: &Path) -> Option<[u32; 2]> {
    use std::io::Read;
    let mut head = [0u8; 24];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    if &head[..8] != b"\x89PNG\r\n\x1a\n" || &head[12..16] != b"IHDR" {
        return None;
    }
    let be = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    Some([be(16), be(20)])
}

/// A folder name for `out`'s images: its stem with anything but `[A-Za-z0-9._-]` replaced, so
/// that the page's relative URLs need no escaping.
fn beside_dir(out: &Path) -> (PathBuf, String) {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let name = format!("{}_files", crate::encoding::file_name_safe(&stem));
    let dir = out.parent().unwrap_or(Path::new(".")).join(&name);
    (dir, name)
}

/// Fills in the steps' evidence: whether each screenshot is still there, its size and its
/// sources for `images`, and the observation texts. Answers (screenshots shown, screenshots
/// removed by retention).
pub(super) fn media(steps: &mut [Step], images: &Images, out: Option<&Path>) -> (usize, usize) {
    observations(steps);
    let beside = match (images, out) {
        (Images::Beside, Some(out)) => {
            let (dir, name) = beside_dir(out);
            match std::fs::create_dir_all(&dir) {
                Ok(()) => Some((dir, name)),
                Err(e) => {
                    tracing::warn!("report: cannot create {}: {e}", dir.display());
                    None
                }
            }
        }
        _ => None,
    };
    // Screenshots are scaled on every core: decoding is most of a report's time.
    let jobs: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.screenshot.is_some())
        .map(|(i, _)| i)
        .collect();
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, super::Screenshot)>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let work = || loop {
        let at = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = jobs.get(at) else { break };
        let step = &steps[i];
        let Some(shot) = step.screenshot.clone() else {
            continue;
        };
        let shot = screenshot(shot, step, images, beside.as_ref());
        if let Ok(mut d) = done.lock() {
            d.push((i, shot));
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    let mut done = done.into_inner().unwrap_or_default();
    // The newest steps keep their embedded thumbnails when the budget runs out.
    done.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
    let mut budget = EMBEDDED_IMAGES_MAX_BYTES;
    let (mut shown, mut removed) = (0, 0);
    for (i, mut shot) in done {
        if let Some(data) = shot.thumb.as_deref().filter(|t| t.starts_with("data:")) {
            // Base64 holds 3 bytes in 4 characters.
            let bytes = data.len() / 4 * 3;
            if bytes > budget {
                shot.thumb = None;
                shot.full = None;
                shot.error = Some(format!(
                    "not embedded: the page's {} MiB of images are spent (--images beside keeps every one)",
                    EMBEDDED_IMAGES_MAX_BYTES / (1024 * 1024)
                ));
            } else {
                budget -= bytes;
            }
        }
        // A failed step's borrowed screenshot is counted with the step it belongs to.
        if shot.from_step.is_none() {
            if shot.present {
                shown += 1;
            } else {
                removed += 1;
            }
        }
        steps[i].screenshot = Some(shot);
    }
    (shown, removed)
}

/// One screenshot's presence, size and sources.
fn screenshot(
    mut shot: super::Screenshot,
    step: &Step,
    images: &Images,
    beside: Option<&(PathBuf, String)>,
) -> super::Screenshot {
    shot.size = png_size(&shot.path);
    shot.present = shot.path.is_file();
    if !shot.present {
        return shot;
    }
    match images {
        Images::Off => {}
        Images::Served => {
            // `/data/<task>/<file>`, as the server serves the evidence directory.
            let name = shot.path.file_name().and_then(|n| n.to_str());
            if let (Some(task), Some(name)) = (&step.task, name) {
                let url = format!("/data/{task}/{name}");
                shot.thumb = Some(url.clone());
                shot.full = Some(url);
            }
        }
        Images::Embed | Images::Beside => {
            let scaled = std::fs::read(&shot.path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| thumb::thumbnail(&bytes));
            let thumb = match scaled {
                Ok(t) => t,
                Err(e) => {
                    shot.error = Some(e);
                    return shot;
                }
            };
            shot.size = Some([thumb.source_width, thumb.source_height]);
            match beside {
                Some((dir, name)) => {
                    let t = format!("t{}.png", step.index);
                    let f = format!("f{}.png", step.index);
                    let written = std::fs::write(dir.join(&t), &thumb.png)
                        .and_then(|()| std::fs::copy(&shot.path, dir.join(&f)).map(|_| ()));
                    match written {
                        Ok(()) => {
                            shot.thumb = Some(format!("{name}/{t}"));
                            shot.full = Some(format!("{name}/{f}"));
                        }
                        Err(e) => shot.error = Some(e.to_string()),
                    }
                }
                None => {
                    let url = format!(
                        "data:image/png;base64,{}",
                        crate::encoding::encode_base64(&thumb.png)
                    );
                    shot.full = Some(url.clone());
                    shot.thumb = Some(url);
                }
            }
        }
    }
    shot
}

/// Reads the state reads' observation texts, each and all within their bounds.
fn observations(steps: &mut [Step]) {
    let mut budget = OBSERVATIONS_MAX_CHARS;
    for step in steps {
        let Some(obs) = step.observation.as_mut() else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&obs.path) else {
            continue;
        };
        let keep = OBSERVATION_MAX_CHARS.min(budget);
        let total = text.chars().count();
        let shown: String = text.chars().take(keep).collect();
        budget -= shown.chars().count();
        obs.cut = total - shown.chars().count();
        obs.text = Some(shown);
    }
}

/// Line `line` of the script the error names: the run's script when the error names it (by
/// its path's end), else the file as named.
pub(super) fn source_line(
    file: Option<&str>,
    line: Option<u32>,
    run: Option<&RunRecord>,
) -> Option<String> {
    let (file, line) = (file?, line?);
    let path = match run {
        Some(r) if r.script.ends_with(file) || r.script.to_string_lossy().ends_with(file) => {
            r.script.clone()
        }
        _ => PathBuf::from(file),
    };
    let text = std::fs::read_to_string(path).ok()?;
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    // Redacted like every text the engine writes: a script may hold a secret literally.
    text.lines()
        .nth(at)
        .map(|l| crate::redact::text(&l.chars().take(300).collect::<String>()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_folders_need_no_escaping() {
        let (dir, name) = beside_dir(Path::new("/tmp/my report#1.html"));
        assert_eq!(name, "my_report_1_files");
        assert_eq!(dir, Path::new("/tmp/my_report_1_files"));
        assert!(is_day("20260101") && !is_day("2026010") && !is_day("2026010x"));
    }
}
