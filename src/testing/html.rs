//! `--reporter html=FILE`: the run as one self-contained page, one section per test, failures
//! first. A failed or flaky test shows each failed attempt's assertion (expected, last seen,
//! target, how long it waited, where), its failure screenshot and comparison images, and the
//! commands its pages ran, from the trace, with their evidence thumbnails; a passed test shows
//! its commands without images. Built from `report`'s data (`report::build` of each page's
//! task) and style; maud escapes every value. Blocking file and CPU work: called through
//! `spawn_blocking` after the engine stopped and the trace is flushed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use maud::{html, Markup, DOCTYPE};

use super::report::ms;
use super::{Failure, Outcome, Status};
use crate::report::{self, Images, Step, Subject};

/// What the page is made of.
pub struct Job {
    /// Where it goes.
    pub path: PathBuf,
    /// The tests, as they ended.
    pub outcomes: Vec<Outcome>,
    /// The run's wall time.
    pub wall: Duration,
    /// Whether Ctrl-C stopped the run.
    pub interrupted: bool,
    /// The trace the steps come from (`None`: `--no-trace`).
    pub trace_dir: Option<PathBuf>,
    /// The evidence directory.
    pub data_dir: PathBuf,
}

/// Writes the page whole; answers its size in bytes.
pub fn write(job: &Job) -> std::io::Result<usize> {
    let page = page(job);
    if let Some(dir) = job.path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::evidence::write_whole_blocking(&job.path, page.as_bytes())?;
    Ok(page.len())
}

/// An image file as a data URL, scaled to a thumbnail (the original when it cannot be).
fn data_url(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let png = report::thumb::thumbnail(&bytes).map_or(bytes, |t| t.png);
    Some(format!(
        "data:image/png;base64,{}",
        crate::encoding::encode_base64(&png)
    ))
}

/// The commands of a test's pages, in order (none without a trace).
fn steps(job: &Job, o: &Outcome) -> Vec<Step> {
    let Some(trace_dir) = &job.trace_dir else {
        return Vec::new();
    };
    let images = match o.status {
        Status::Failed | Status::Flaky => Images::Embed,
        _ => Images::Off,
    };
    let mut all: Vec<Step> = Vec::new();
    for task in o.tasks.iter().flatten() {
        let subject = Subject::Task {
            task: task.clone(),
            trace_dir: trace_dir.clone(),
            data_dir: job.data_dir.clone(),
        };
        if let Ok(r) = report::build(&subject, &images, None) {
            all.extend(r.steps);
        }
    }
    all.sort_by_key(|s| s.ts);
    for (i, s) in all.iter_mut().enumerate() {
        s.index = i + 1;
    }
    all
}

fn page(job: &Job) -> String {
    let csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";
    let mut order: Vec<&Outcome> = job.outcomes.iter().collect();
    let rank = |s: Status| match s {
        Status::Failed => 0,
        Status::Flaky => 1,
        Status::Passed => 2,
        Status::Skipped => 3,
    };
    order.sort_by_key(|o| rank(o.status));
    let count = |s: Status| job.outcomes.iter().filter(|o| o.status == s).count();
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (report::page_head(csp, "moonpilot test report", EXTRA_CSS))
            body {
                header {
                    h1 { "moonpilot test" }
                    p.meta {
                        (job.outcomes.len()) " tests in " (ms(job.wall))
                        @if job.interrupted { " · " span.badge.interrupted { "interrupted" } }
                    }
                }
                section #summary {
                    div.stats {
                        div.stat { b { (count(Status::Passed)) } span { "passed" } }
                        div.stat.bad { b #failed-count { (count(Status::Failed)) } span { "failed" } }
                        div.stat { b { (count(Status::Flaky)) } span { "flaky" } }
                        div.stat { b { (count(Status::Skipped)) } span { "skipped" } }
                    }
                    @if job.trace_dir.is_none() {
                        p.none { "Run with --no-trace: the tests' commands are not shown." }
                    }
                }
                section #tests {
                    @for o in order { (test(job, o)) }
                }
            }
        }
    };
    markup.into_string()
}

fn test(job: &Job, o: &Outcome) -> Markup {
    let status = o.status.as_str();
    let steps = steps(job, o);
    let open = matches!(o.status, Status::Failed | Status::Flaky);
    html! {
        details.test .(status) open[open] data-status=(status) data-title=(o.test.title) {
            summary {
                span.badge .(status) { (status) }
                " " b.title { (o.test.title) }
                @if o.repeat > 1 { " (repeat " (o.repeat) ")" }
                " " span.sub { code { (o.test.file.display().to_string()) ":" (o.test.line) } }
                @if o.status != Status::Skipped { " " span.dur { (ms(o.duration)) } }
                @if o.attempts > 1 { " " span.sub { (o.attempts) " attempts" } }
            }
            @for (i, f) in o.failures.iter().enumerate() {
                (failure(f, i + 1, o.failures.len()))
            }
            @if !steps.is_empty() {
                details.steps open[open] {
                    summary { (steps.len()) " commands" }
                    table {
                        tr { th { "#" } th { "command" } th { "target" } th { "line" } th { "outcome" } th { "time" } th {} }
                        @for s in &steps { (step(s)) }
                    }
                }
            }
        }
    }
}

fn failure(f: &Failure, n: usize, of: usize) -> Markup {
    html! {
        div.failure {
            @if of > 1 { h4 { "attempt " (n) } }
            pre.error-text { (f.message) }
            dl {
                @if let Some(at) = &f.location { dt { "at" } dd { code { (at) } } }
                @if let Some(t) = &f.target { dt { "target" } dd { code { (t) } } }
                @if let Some(e) = &f.expected { dt { "expected" } dd.expected { (e) } }
                @if let Some(a) = &f.actual { dt { "last seen" } dd.actual { (a) } }
                @if let Some(w) = f.waited_ms { dt { "waited" } dd { (w) " ms" } }
            }
            div.images {
                @if let Some(p) = &f.screenshot { (image(p, "the page when it failed")) }
                @for p in &f.images { (image(p, &p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())) }
            }
        }
    }
}

fn image(path: &Path, caption: &str) -> Markup {
    html! {
        figure.shot {
            @match data_url(path) {
                Some(src) => { img.shot-img src=(src) alt=(caption); }
                None => { p.removed { "not readable: " (path.display().to_string()) } }
            }
            figcaption { (caption) " · " code { (path.display().to_string()) } }
        }
    }
}

fn step(s: &Step) -> Markup {
    let thumb = s
        .screenshot
        .as_ref()
        .filter(|x| x.present)
        .and_then(|x| x.thumb.as_deref());
    html! {
        tr.failed[!s.ok] {
            td.num { (s.index) }
            td { b { (s.method) } }
            td { code { (s.target.as_deref().unwrap_or("")) } }
            td { code { (s.at.as_deref().unwrap_or("")) } }
            td { @if s.ok { "ok" } @else { (s.code.as_deref().unwrap_or("failed")) ": " (s.msg.as_deref().unwrap_or("")) } }
            td.num { (format!("{:.0} ms", s.duration_ms)) }
            td { @if let Some(src) = thumb { img.thumb src=(src) alt=(format!("after step {}", s.index)); } }
        }
    }
}

const EXTRA_CSS: &str = "
.test { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--ok); margin: 6px 0; padding: 6px 12px; border-radius: 3px; }
.test.failed { border-left-color: var(--bad); } .test.flaky { border-left-color: #ef6c00; } .test.skipped { border-left-color: var(--muted); }
.test > summary { cursor: pointer; }
.badge.passed { background: var(--ok); } .badge.flaky { background: #ef6c00; }
.failure { margin: 8px 0; padding: 8px; background: var(--bad-bg); border-radius: 3px; }
.failure .error-text { color: var(--bad); }
.images { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 8px; }
.steps { margin-top: 8px; } .steps > summary { cursor: pointer; color: var(--mark); }
tr.failed td { color: var(--bad); }
";
