//! `moonpilot report`: a run (or one task) as one page a person reads like Playwright's trace
//! viewer — the commands in order with their params, outcome, key receipt fields, screenshot
//! (the click point drawn on it) and observation text, a timeline with a lane per task, a
//! summary, the script's output and its error linked to the failing step.
//!
//! Data first: [`build`] reads a run's record (`runs.rs`), its trace lines (already redacted
//! by the trace writer: the report shows params exactly as masked there) and its evidence into
//! a [`Report`], which is serialised as it is for `--json` and rendered by `html.rs` (maud:
//! every string from a page, a trace or a script is escaped by the template) into one
//! self-contained file with its CSS and JavaScript inline and no network reference. Evidence
//! that retention removed is said to be so, never a broken image.
//!
//! Bounded: observation texts are cut ([`OBSERVATION_MAX_CHARS`] each,
//! [`OBSERVATIONS_MAX_CHARS`] in all), thumbnails are at most `thumb::MAX_WIDTH` wide, made on
//! every core, and embedded up to [`EMBEDDED_IMAGES_MAX_BYTES`] (the newest first); see README "See a run" for the measured time and size. Everything here
//! is blocking file and CPU work: hosts call it outside the runtime or through
//! `spawn_blocking`.

pub mod cli;
mod hosting;
mod html;
mod read;
pub mod thumb;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use hosting::{Recording, Run};
pub(crate) use html::head as page_head;
pub use read::{run_lines, tagged_lines, task_lines, ReportError};

use crate::runs::{Output, RunRecord, RunStatus};

/// The most characters of one state read's observation text shown.
pub const OBSERVATION_MAX_CHARS: usize = 20_000;
/// The most characters of observation text in one report.
pub const OBSERVATIONS_MAX_CHARS: usize = 2_000_000;
/// The most thumbnail bytes embedded in one page (base64 makes them a third larger); past it the
/// older steps' thumbnails are left out and say so (`--images beside` keeps every one).
pub const EMBEDDED_IMAGES_MAX_BYTES: usize = 12 * 1024 * 1024;
/// How many of the slowest commands the summary names.
const SLOWEST: usize = 5;

/// Where the report's images come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Images {
    /// Thumbnails inside the HTML (data URLs): one file that can be sent anywhere.
    Embed,
    /// Thumbnails and the full screenshots as files in a folder beside the HTML
    /// (`<name>_files/`): a small page, sharp enlargements.
    Beside,
    /// The evidence files as the server serves them (`/data/<task>/<seq>.png`).
    Served,
    /// No images (`--json`).
    Off,
}

/// What the report is of.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A recorded run: its directory (`runs/<id>/`).
    Run(PathBuf),
    /// Every command of one task in a trace directory, its evidence under `data_dir`.
    Task {
        /// The task's id, as traces write it.
        task: String,
        /// The trace directory.
        trace_dir: PathBuf,
        /// The evidence directory.
        data_dir: PathBuf,
    },
}

/// One report: the data both the page and `--json` show.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The page's title.
    pub title: String,
    /// The run, for a run's report.
    pub run: Option<RunRecord>,
    /// The task, for a task's report.
    pub task: Option<String>,
    /// Counts and timings.
    pub summary: Summary,
    /// The task of each lane (`None`: commands of no task, such as `list_methods`), in the
    /// order of their first command.
    pub lanes: Vec<Option<String>>,
    /// The commands, in the order they were traced.
    pub steps: Vec<Step>,
    /// What the script printed.
    pub output: Vec<String>,
    /// Printed lines not kept.
    pub output_cut: usize,
    /// The script's uncaught error.
    pub error: Option<ScriptError>,
}

/// The numbers on top of the page.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Commands traced.
    pub commands: usize,
    /// Commands that failed (`ok: false`).
    pub failures: usize,
    /// From the first command's start to the last one's end, in ms.
    pub total_ms: f64,
    /// The sum of the commands' durations, in ms.
    pub busy_ms: f64,
    /// Screenshots shown.
    pub screenshots: usize,
    /// Screenshots a receipt named that are no longer on disk (retention removed them).
    pub screenshots_removed: usize,
    /// The slowest commands (their step index, 1-based), slowest first.
    pub slowest: Vec<usize>,
    /// Per method: count, failures, p50, p95, max.
    pub methods: Vec<MethodStats>,
}

/// One method's timings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodStats {
    /// The command's name.
    pub method: String,
    /// How many times it ran.
    pub count: usize,
    /// How many of those failed.
    pub failures: usize,
    /// The median duration, in ms (nearest rank).
    pub p50_ms: f64,
    /// The 95th percentile duration, in ms (nearest rank).
    pub p95_ms: f64,
    /// The longest, in ms.
    pub max_ms: f64,
}

/// One command of the trace.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Its position in the report, from 1.
    pub index: usize,
    /// The trace's `seq`.
    pub seq: u64,
    /// When it ended (the trace's `ts`, epoch ms).
    pub ts: u64,
    /// When it started, in ms after the report's first command started.
    pub start_ms: f64,
    /// How long it took, in ms.
    pub duration_ms: f64,
    /// Its task (`None`: an engine command).
    pub task: Option<String>,
    /// Its lane: the index of its task in [`Report::lanes`].
    pub lane: usize,
    /// The command.
    pub method: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its error code when it failed.
    pub code: Option<String>,
    /// Its message.
    pub msg: Option<String>,
    /// Whether it started (`false`: nothing ran, resending is safe).
    pub started: Option<bool>,
    /// Whether retrying is safe.
    pub retryable: Option<bool>,
    /// Its params, masked as the trace masked them.
    pub params: Value,
    /// The receipt's key fields the trace keeps.
    pub fields: Value,
    /// Its evidence screenshot.
    pub screenshot: Option<Screenshot>,
    /// Where a click landed, in CSS pixels of the viewport.
    pub click_point: Option<[f64; 2]>,
    /// A state read's observation text.
    pub observation: Option<Observation>,
    /// The script line that sent it (`file:line`), when a script did.
    pub at: Option<String>,
    /// What it acted on, from its params (`selector #go`, `index 7`, `text "Log in"`, a URL).
    pub target: Option<String>,
}

/// The target of a command as its params name it: index, selector, text, role and name,
/// label, or URL; `None` for a command that names none.
pub fn target_of(params: &Value) -> Option<String> {
    let text = |k: &str| {
        params
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let short = |s: &str| -> String {
        let cut: String = s.chars().take(80).collect();
        if cut.len() < s.len() {
            format!("{cut}…")
        } else {
            cut
        }
    };
    if let Some(i) = params
        .get("index")
        .filter(|v| v.is_number() || v.is_string())
    {
        return Some(format!(
            "index {}",
            i.as_str().map_or_else(|| i.to_string(), str::to_string)
        ));
    }
    if let Some(s) = text("selector") {
        return Some(format!("selector {}", short(s)));
    }
    if let Some(r) = text("role") {
        return Some(match text("name") {
            Some(n) => format!("role {r} \"{}\"", short(n)),
            None => format!("role {r}"),
        });
    }
    if let Some(l) = text("label") {
        return Some(format!("label \"{}\"", short(l)));
    }
    if let Some(t) = text("text").filter(|_| params.get("selector").is_none()) {
        return Some(format!("text \"{}\"", short(t)));
    }
    text("url").map(short)
}

/// A step's screenshot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Screenshot {
    /// The evidence file.
    pub path: PathBuf,
    /// Whether it is still there (false: retention removed it).
    pub present: bool,
    /// The original's size in pixels, when it was read.
    pub size: Option<[u32; 2]>,
    /// The thumbnail's source (a data URL or a relative path; not in `--json`).
    #[serde(skip)]
    pub thumb: Option<String>,
    /// The enlargement's source (the full screenshot beside the page, else the thumbnail).
    #[serde(skip)]
    pub full: Option<String>,
    /// Why it could not be shown although it is there.
    pub error: Option<String>,
    /// For a failed step, which has none of its own: the step (index) whose screenshot this is,
    /// the last one of the same task before it — the page as the failed step found it.
    pub from_step: Option<usize>,
}

/// A state read's observation text.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The state file.
    pub path: PathBuf,
    /// Its text, up to the bound (none when the file is gone).
    pub text: Option<String>,
    /// Characters not shown.
    pub cut: usize,
}

/// The script's uncaught error.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptError {
    /// Its first line.
    pub message: String,
    /// The whole text (with the traceback).
    pub text: String,
    /// The script file the error names.
    pub file: Option<String>,
    /// The line in it.
    pub line: Option<u32>,
    /// That line of the script, when it can be read.
    pub source: Option<String>,
    /// The failing step's index (1-based): the failed command the error reports.
    pub step: Option<usize>,
}

/// Builds the report of `subject` with images from `images` (`out` is where the page will be
/// written: `Images::Beside` writes its folder beside it).
pub fn build(
    subject: &Subject,
    images: &Images,
    out: Option<&Path>,
) -> Result<Report, ReportError> {
    let loaded = read::load(subject)?;
    let mut steps = steps_of(&loaded.lines, &loaded.data_dir);
    let media = read::media(&mut steps, images, out);
    let summary = summarize(&steps, media);
    let lanes = lanes_of(&steps);
    let error = loaded
        .run
        .as_ref()
        .and_then(|r| r.error.as_deref().map(|e| script_error(e, &steps)));
    let title = match (&loaded.run, subject) {
        (Some(run), _) => {
            let name = run
                .script
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{name} · run {}", run.id)
        }
        (None, Subject::Task { task, .. }) => format!("task {task}"),
        (None, Subject::Run(dir)) => dir.display().to_string(),
    };
    let mut report = Report {
        title,
        task: match subject {
            Subject::Task { task, .. } => Some(task.clone()),
            Subject::Run(_) => None,
        },
        run: loaded.run,
        summary,
        lanes,
        steps,
        output: loaded.output,
        output_cut: 0,
        error,
    };
    if let Some(run) = &report.run {
        report.output_cut = run.output_cut;
    }
    if let Some(error) = report.error.as_mut() {
        error.source = read::source_line(error.file.as_deref(), error.line, report.run.as_ref());
    }
    Ok(report)
}

/// The report as one HTML page.
pub fn html(report: &Report) -> String {
    html::page(report)
}

/// What [`write`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The page.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// Commands in it.
    pub commands: usize,
    /// Failed commands in it.
    pub failures: usize,
}

impl Written {
    /// What the hosts say once it is written, `took` after they began.
    pub fn said(&self, took: std::time::Duration) -> String {
        format!(
            "report: {} ({} command(s), {} failed; {} KiB in {} ms)",
            self.path.display(),
            self.commands,
            self.failures,
            self.bytes / 1024,
            took.as_millis()
        )
    }
}

/// Builds the report of `subject` and writes it to `out` whole (a hidden part file renamed
/// over it): the HTML page, or with `json` the report as JSON (no images).
pub fn write(
    subject: &Subject,
    images: &Images,
    out: &Path,
    json: bool,
) -> Result<Written, ReportError> {
    let images = if json { &Images::Off } else { images };
    let report = build(subject, images, Some(out))?;
    let text = if json {
        serde_json::to_string_pretty(&report).unwrap_or_default()
    } else {
        html(&report)
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
            path: out.to_path_buf(),
            source,
        })?;
    }
    crate::evidence::write_whole_blocking(out, text.as_bytes()).map_err(|source| {
        ReportError::Write {
            path: out.to_path_buf(),
            source,
        }
    })?;
    Ok(Written {
        path: out.to_path_buf(),
        bytes: text.len(),
        commands: report.summary.commands,
        failures: report.summary.failures,
    })
}

/// Records the end of the run in `dir` (see `runs.rs`: how it ended, what it printed) and, when
/// `out` is given, writes its report there with embedded images. Blocking.
pub fn end_run(
    run: &mut RunRecord,
    dir: &Path,
    (status, exit_code, error): (RunStatus, Option<u8>, Option<&str>),
    output: &Output,
    out: Option<&Path>,
) -> Result<Option<Written>, ReportError> {
    run.finish(dir, status, exit_code, error, output)
        .map_err(|source| ReportError::Write {
            path: dir.join("run.json"),
            source,
        })?;
    match out {
        Some(out) => write(&Subject::Run(dir.to_path_buf()), &Images::Embed, out, false).map(Some),
        None => Ok(None),
    }
}

/// The steps of trace lines (in their order), their evidence looked up under `data_dir`.
fn steps_of(lines: &[Value], data_dir: &Path) -> Vec<Step> {
    let t0 = lines.iter().map(started_at).fold(f64::INFINITY, f64::min);
    let mut lanes: Vec<Option<String>> = Vec::new();
    let steps =
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                // A `start` is traced without a task; its lane is the task it opened.
                let task = l["taskId"]
                    .as_str()
                    .or_else(|| (l["method"] == "start").then(|| l["result"]["id"].as_str())?)
                    .map(str::to_string);
                let lane = match lanes.iter().position(|t| *t == task) {
                    Some(at) => at,
                    None => {
                        lanes.push(task.clone());
                        lanes.len() - 1
                    }
                };
                let fields = l["result"].clone();
                let screenshot = evidence_path(&fields, "screenshot_path", &task, data_dir, "png")
                    .map(|path| Screenshot {
                        path,
                        present: false,
                        size: None,
                        thumb: None,
                        full: None,
                        error: None,
                        from_step: None,
                    });
                let observation =
                    evidence_path(&fields, "state_file", &task, data_dir, "txt").map(|path| {
                        Observation {
                            path,
                            text: None,
                            cut: 0,
                        }
                    });
                let click_point = match fields["clickPoint"].as_array().map(Vec::as_slice) {
                    Some([x, y]) => x.as_f64().zip(y.as_f64()).map(|(x, y)| [x, y]),
                    _ => None,
                };
                Step {
                    index: i + 1,
                    seq: l["seq"].as_u64().unwrap_or(0),
                    ts: l["ts"].as_u64().unwrap_or(0),
                    start_ms: (started_at(l) - t0).max(0.0),
                    duration_ms: l["durationMs"].as_f64().unwrap_or(0.0),
                    task,
                    lane,
                    method: l["method"].as_str().unwrap_or("?").to_string(),
                    ok: l["ok"].as_bool().unwrap_or(false),
                    code: l["code"].as_str().map(str::to_string),
                    msg: l["msg"].as_str().map(str::to_string),
                    started: l["started"].as_bool(),
                    retryable: l["retryable"].as_bool(),
                    params: l["request"].clone(),
                    fields,
                    screenshot,
                    click_point,
                    observation,
                    at: l["at"].as_str().map(str::to_string),
                    target: target_of(&l["request"]),
                }
            })
            .collect();
    borrow_screenshots(steps)
}

/// Gives each failed step without a screenshot the last one of its task before it (marked
/// `from_step`): the page as the failed step found it.
fn borrow_screenshots(mut steps: Vec<Step>) -> Vec<Step> {
    let mut last: BTreeMap<usize, (usize, Screenshot)> = BTreeMap::new();
    for step in &mut steps {
        match &step.screenshot {
            Some(shot) => {
                last.insert(step.lane, (step.index, shot.clone()));
            }
            None if !step.ok => {
                if let Some((index, shot)) = last.get(&step.lane) {
                    step.screenshot = Some(Screenshot {
                        from_step: Some(*index),
                        ..shot.clone()
                    });
                }
            }
            None => {}
        }
    }
    steps
}

/// When a trace line's command started (epoch ms): its `ts` is when it was recorded, at its
/// end.
fn started_at(line: &Value) -> f64 {
    let ts = line["ts"].as_f64().unwrap_or(0.0);
    ts - line["durationMs"].as_f64().unwrap_or(0.0)
}

/// The evidence file a receipt names under `key` (an absolute path), else the one its `seq`
/// names in the task's directory.
fn evidence_path(
    fields: &Value,
    key: &str,
    task: &Option<String>,
    data_dir: &Path,
    ext: &str,
) -> Option<PathBuf> {
    if let Some(p) = fields[key].as_str() {
        return Some(PathBuf::from(p));
    }
    // A receipt that names a screenshot by URL only (`/data/<task>/<seq>.png`).
    if key == "screenshot_path" && fields["screenshot"].is_string() {
        let seq = fields["seq"].as_u64()?;
        return Some(data_dir.join(task.as_deref()?).join(format!("{seq}.{ext}")));
    }
    None
}

/// The lanes: each step's task, in the order of first appearance.
fn lanes_of(steps: &[Step]) -> Vec<Option<String>> {
    let mut lanes: Vec<Option<String>> = Vec::new();
    for s in steps {
        if !lanes.contains(&s.task) {
            lanes.push(s.task.clone());
        }
    }
    lanes
}

/// The nearest-rank percentile `p` (0–100) of sorted `values`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The summary of `steps`; `media` is (screenshots shown, screenshots removed).
fn summarize(steps: &[Step], media: (usize, usize)) -> Summary {
    let start = steps
        .iter()
        .map(|s| s.start_ms)
        .fold(f64::INFINITY, f64::min);
    let end = steps
        .iter()
        .map(|s| s.start_ms + s.duration_ms)
        .fold(0.0, f64::max);
    let mut by_method: BTreeMap<&str, (Vec<f64>, usize)> = BTreeMap::new();
    for s in steps {
        let entry = by_method.entry(&s.method).or_default();
        entry.0.push(s.duration_ms);
        entry.1 += usize::from(!s.ok);
    }
    let mut methods: Vec<MethodStats> = by_method
        .into_iter()
        .map(|(method, (mut durations, failures))| {
            durations.sort_by(f64::total_cmp);
            MethodStats {
                method: method.to_string(),
                count: durations.len(),
                failures,
                p50_ms: percentile(&durations, 50.0),
                p95_ms: percentile(&durations, 95.0),
                max_ms: durations.last().copied().unwrap_or(0.0),
            }
        })
        .collect();
    methods.sort_by(|a, b| b.p95_ms.total_cmp(&a.p95_ms));
    let mut slowest: Vec<&Step> = steps.iter().collect();
    slowest.sort_by(|a, b| b.duration_ms.total_cmp(&a.duration_ms));
    Summary {
        commands: steps.len(),
        failures: steps.iter().filter(|s| !s.ok).count(),
        total_ms: if steps.is_empty() { 0.0 } else { end - start },
        busy_ms: steps.iter().map(|s| s.duration_ms).sum(),
        screenshots: media.0,
        screenshots_removed: media.1,
        slowest: slowest.iter().take(SLOWEST).map(|s| s.index).collect(),
        methods,
    }
}

/// `file:line` where a Lua error names one (`path/x.lua:14: …`): the first `NAME.lua:DIGITS:`.
fn error_position(text: &str) -> Option<(String, u32)> {
    let mut from = 0;
    while let Some(at) = text[from..].find(".lua:") {
        let end = from + at + ".lua".len();
        let digits: String = text[end + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let after = text[end + 1 + digits.len()..].chars().next();
        if !digits.is_empty() && after == Some(':') {
            let start = text[..end]
                .rfind(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '[')
                .map_or(0, |i| i + 1);
            if let Ok(line) = digits.parse() {
                return Some((text[start..end].to_string(), line));
            }
        }
        from = end;
    }
    None
}

/// The script error of `text`, linked to the failed step it reports: the last failed step
/// whose code and message the error repeats, else the last whose code it names, else the last
/// failed step.
fn script_error(text: &str, steps: &[Step]) -> ScriptError {
    let message = text.lines().next().unwrap_or_default().to_string();
    let position = error_position(text);
    let failed = || steps.iter().rev().filter(|s| !s.ok);
    let names = |s: &&Step, with_msg: bool| {
        let code = s.code.as_deref().is_some_and(|c| message.contains(c));
        code && (!with_msg || s.msg.as_deref().is_some_and(|m| message.contains(m)))
    };
    let step = failed()
        .find(|s| names(s, true))
        .or_else(|| failed().find(|s| names(s, false)))
        .or_else(|| failed().next())
        .map(|s| s.index);
    ScriptError {
        message,
        text: text.to_string(),
        file: position.as_ref().map(|p| p.0.clone()),
        line: position.map(|p| p.1),
        source: None,
        step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(seq: u64, ts: u64, ms: f64, task: &str, method: &str, code: Option<&str>) -> Value {
        json!({"seq": seq, "ts": ts, "durationMs": ms, "taskId": task, "method": method,
               "ok": code.is_none(), "code": code, "msg": code.map(|c| format!("{method}: {c} here")),
               "started": true, "retryable": false, "request": {}, "result": {}})
    }

    #[test]
    fn the_summary_counts_and_times_the_steps() {
        let lines = vec![
            line(1, 1_000, 100.0, "7", "navigate", None),
            line(2, 1_050, 20.0, "8", "get_title", None),
            line(
                3,
                1_300,
                200.0,
                "7",
                "click_element_by_index",
                Some("ELEMENT_NOT_FOUND"),
            ),
            line(4, 1_400, 10.0, "7", "get_title", None),
        ];
        let steps = steps_of(&lines, Path::new("/d"));
        assert_eq!(steps[0].start_ms, 0.0);
        assert_eq!(steps[2].start_ms, 200.0);
        assert_eq!(lanes_of(&steps), [Some("7".into()), Some("8".into())]);
        assert_eq!(steps[1].lane, 1);
        let s = summarize(&steps, (0, 0));
        assert_eq!((s.commands, s.failures), (4, 1));
        assert_eq!(s.total_ms, 500.0);
        assert_eq!(s.busy_ms, 330.0);
        assert_eq!(s.slowest[..2], [3, 1]);
        let title = s.methods.iter().find(|m| m.method == "get_title").unwrap();
        assert_eq!((title.count, title.p50_ms, title.p95_ms), (2, 10.0, 20.0));
        assert_eq!(
            s.methods[0].method, "click_element_by_index",
            "slowest p95 first"
        );
    }

    #[test]
    fn everything_from_a_trace_is_escaped_in_the_page() {
        let evil = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let mut l = line(1, 1_000, 1.0, evil, evil, Some("X"));
        l["msg"] = json!(evil);
        l["request"] = json!({ "text": evil });
        l["result"] = json!({ "title": evil });
        let steps = steps_of(&[l], Path::new("/d"));
        let report = Report {
            title: evil.into(),
            run: None,
            task: Some(evil.into()),
            summary: summarize(&steps, (0, 0)),
            lanes: lanes_of(&steps),
            error: Some(script_error(&format!("{evil}.lua:3: {evil}"), &steps)),
            steps,
            output: vec![evil.into()],
            output_cut: 0,
        };
        let page = html(&report);
        assert!(!page.contains("<script>alert"), "a raw script tag");
        assert!(!page.contains("<img src=x"), "a raw element");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x"));
        // The page's own script is the only one.
        assert_eq!(page.matches("<script>").count(), 1);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn the_error_is_linked_to_the_failed_step_it_reports() {
        let lines = vec![
            line(
                1,
                1_000,
                1.0,
                "7",
                "click_element_by_index",
                Some("ELEMENT_NOT_FOUND"),
            ),
            line(2, 1_100, 1.0, "7", "wait_for_selector", Some("TIMEOUT")),
            line(3, 1_200, 1.0, "7", "get_title", None),
        ];
        let steps = steps_of(&lines, Path::new("/d"));
        let text = "runtime error: /tmp/a b/flow.lua:14: ELEMENT_NOT_FOUND: click_element_by_index: ELEMENT_NOT_FOUND here\nstack traceback:\n\t[C]: in ?";
        let e = script_error(text, &steps);
        assert_eq!(e.file.as_deref(), Some("b/flow.lua"));
        assert_eq!(e.line, Some(14));
        assert_eq!(e.step, Some(1));
        let e = script_error("flow.lua:3: boom", &steps);
        assert_eq!(
            (e.file.as_deref(), e.line, e.step),
            (Some("flow.lua"), Some(3), Some(2))
        );
        assert_eq!(error_position("no position"), None);
        assert_eq!(
            error_position("[string \"x.lua\"]:2: y.lua:9: z"),
            Some(("y.lua".into(), 9))
        );
    }
}
