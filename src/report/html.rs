//! The report page, from maud templates: every value from a trace, a page or a script is
//! escaped by the template; the only unescaped text is the page's own CSS and JavaScript
//! (`report.css`, `report.js`, files of this crate). No external reference: the content
//! security policy forbids every fetch but images from the report's own sources.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

use super::{Report, Screenshot, Step};

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// A duration for people: `850 ms`, `1.25 s`, `2 min 05 s`.
fn ms(v: f64) -> String {
    if v < 1_000.0 {
        format!("{v:.0} ms")
    } else if v < 60_000.0 {
        format!("{:.2} s", v / 1_000.0)
    } else {
        let s = (v / 1_000.0).round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// `HH:MM:SS.mmm` (UTC) of an epoch-ms time.
fn clock(ts: u64) -> String {
    let iso = crate::trace::iso_utc(ts);
    iso.get(11..23).unwrap_or(&iso).to_string()
}

/// A lane's label.
fn lane_label(task: &Option<String>) -> String {
    match task {
        Some(t) => format!("task {t}"),
        None => "engine".to_string(),
    }
}

/// A JSON value in one line, strings without quotes.
fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `<head>` of a report page: its content security policy, its title, the report's style
/// and `extra_css` (also `moonpilot test`'s HTML report).
pub(crate) fn head(csp: &str, title: &str, extra_css: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta http-equiv="Content-Security-Policy" content=(csp);
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) }
            style { (PreEscaped(CSS)) (PreEscaped(extra_css)) }
        }
    }
}

/// The page.
pub(super) fn page(r: &Report) -> String {
    let csp = "default-src 'none'; img-src data: 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'";
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(csp, &format!("moonpilot report · {}", r.title), ""))
            body {
                (header(r))
                (summary(r))
                (error(r))
                (timeline(r))
                (controls(r))
                section #steps {
                    @for step in &r.steps { (step_row(step)) }
                    @if r.steps.is_empty() {
                        p.none { "No command of this run is in the trace (was it run with --no-trace?)." }
                    }
                }
                (output(r))
                div #lightbox hidden {
                    figure {
                        img #lightbox-img alt="enlarged screenshot";
                        span #lightbox-dot .dot hidden {}
                    }
                    p #lightbox-caption {}
                }
                script { (PreEscaped(JS)) }
            }
        }
    };
    markup.into_string()
}

fn header(r: &Report) -> Markup {
    html! {
        header {
            h1 { (r.title) }
            @if let Some(run) = &r.run {
                p.meta {
                    span #run-status .badge .(run.status.as_str()) { (run.status.as_str()) }
                    @if let Some(code) = run.exit_code { " · exit " (code) }
                    " · " code { (run.script.display().to_string()) }
                    " · started " (crate::trace::iso_utc(run.started_ms))
                    @if let Some(end) = run.ended_ms {
                        " · ran " (ms(end.saturating_sub(run.started_ms) as f64))
                    }
                    " · pid " (run.pid)
                }
            }
            @if let Some(task) = &r.task {
                p.meta { "every traced command of task " code { (task) } }
            }
        }
    }
}

fn summary(r: &Report) -> Markup {
    let s = &r.summary;
    let top = s
        .methods
        .iter()
        .map(|m| m.p95_ms)
        .fold(0.0, f64::max)
        .max(1.0);
    html! {
        section #summary data-commands=(s.commands) data-failures=(s.failures)
            data-total-ms=(format!("{:.0}", s.total_ms)) {
            div.stats {
                div.stat #stat-commands { b { (s.commands) } span { "commands" } }
                div.stat #stat-failures .bad[s.failures > 0] { b { (s.failures) } span { "failed" } }
                div.stat #stat-total { b { (ms(s.total_ms)) } span { "total time" } }
                div.stat #stat-busy { b { (ms(s.busy_ms)) } span { "in commands" } }
                div.stat #stat-screenshots { b { (s.screenshots) } span { "screenshots" } }
                @if s.screenshots_removed > 0 {
                    div.stat #stat-removed { b { (s.screenshots_removed) } span { "removed by retention" } }
                }
            }
            div.cols {
                div.slowest {
                    h3 { "Slowest commands" }
                    ol {
                        @for index in &s.slowest {
                            @if let Some(step) = index.checked_sub(1).and_then(|i| r.steps.get(i)) {
                                li {
                                    a href=(format!("#step-{index}")) data-step=(index) {
                                        "#" (index) " " (step.method)
                                    }
                                    " " span.num { (ms(step.duration_ms)) }
                                }
                            }
                        }
                    }
                }
                div.methods {
                    h3 { "Per method: p50 " span.key-p50 {} " / p95 " span.key-p95 {} }
                    table #method-stats {
                        tr { th { "method" } th { "n" } th { "failed" } th { "p50" } th { "p95" } th {} }
                        @for m in &s.methods {
                            tr data-method=(m.method) {
                                td.method { (m.method) }
                                td.num { (m.count) }
                                td.num .bad[m.failures > 0] { (m.failures) }
                                td.num { (ms(m.p50_ms)) }
                                td.num { (ms(m.p95_ms)) }
                                td.chart {
                                    span.p95 style=(format!("width:{:.1}%", m.p95_ms / top * 100.0)) {}
                                    span.p50 style=(format!("width:{:.1}%", m.p50_ms / top * 100.0)) {}
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn error(r: &Report) -> Markup {
    let Some(e) = &r.error else {
        return html! {};
    };
    let step = e.step.and_then(|i| r.steps.get(i.checked_sub(1)?));
    html! {
        section #error {
            h2 { "Script error" }
            pre.error-text { (e.message) }
            p.error-where {
                @if let (Some(file), Some(line)) = (&e.file, e.line) {
                    @match step {
                        Some(step) => a.error-link href=(format!("#step-{}", step.index)) data-step=(step.index) {
                            (file) ":" (line)
                        },
                        None => code { (file) ":" (line) },
                    }
                }
                @if let Some(step) = step {
                    " — failing step "
                    a href=(format!("#step-{}", step.index)) data-step=(step.index) {
                        "#" (step.index) " " (step.method)
                    }
                }
            }
            @if let (Some(source), Some(line)) = (&e.source, e.line) {
                pre.source { span.num { (line) "  " } (source) }
            }
            details {
                summary { "whole error" }
                pre { (e.text) }
            }
        }
    }
}

fn timeline(r: &Report) -> Markup {
    let total = r.summary.total_ms.max(1.0);
    html! {
        section #timeline {
            h2 { "Timeline " span.sub { (ms(r.summary.total_ms)) } }
            @for (k, lane) in r.lanes.iter().enumerate() {
                div.lane data-lane=(k) {
                    span.lane-name .(format!("lane-{}", k % 8)) { (lane_label(lane)) }
                    div.track {
                        @for step in r.steps.iter().filter(|s| s.lane == k) {
                            a.bar .failed[!step.ok] href=(format!("#step-{}", step.index))
                                data-step=(step.index)
                                title=(format!("#{} {} · {}", step.index, step.method, ms(step.duration_ms)))
                                style=(format!("left:{:.3}%;width:{:.3}%", step.start_ms / total * 100.0,
                                    step.duration_ms / total * 100.0)) {}
                        }
                    }
                }
            }
        }
    }
}

fn controls(r: &Report) -> Markup {
    let methods: std::collections::BTreeSet<&str> =
        r.steps.iter().map(|s| s.method.as_str()).collect();
    html! {
        section #controls {
            input #search type="search" placeholder="search methods, params, messages…" aria-label="search";
            select #filter-status aria-label="status" {
                option value="" { "ok and failed" }
                option value="ok" { "ok" }
                option value="failed" { "failed" }
            }
            select #filter-method aria-label="method" {
                option value="" { "every method" }
                @for m in methods { option value=(m) { (m) } }
            }
            select #filter-lane aria-label="task" {
                option value="" { "every task" }
                @for (k, lane) in r.lanes.iter().enumerate() {
                    option value=(k) { (lane_label(lane)) }
                }
            }
            span #shown { (r.steps.len()) " of " (r.steps.len()) " shown" }
        }
    }
}

fn step_row(s: &Step) -> Markup {
    let shot = s.screenshot.as_ref();
    let shown = shot.filter(|x| x.present && x.thumb.is_some());
    let removed = shot.is_some_and(|x| !x.present);
    let size = shot.and_then(|x| x.size).map(|[w, h]| format!("{w},{h}"));
    let click = s.click_point.map(|[x, y]| format!("{x},{y}"));
    html! {
        div.step .failed[!s.ok] id=(format!("step-{}", s.index)) data-index=(s.index)
            data-ok=(s.ok) data-method=(s.method) data-lane=(s.lane)
            data-shot=[shown.and_then(|x| x.thumb.as_deref())]
            data-full=[shown.and_then(|x| x.full.as_deref()).filter(|f| Some(*f) != shown.and_then(|x| x.thumb.as_deref()))]
            data-size=[size] data-click=[click] {
            div.row tabindex="0" {
                span.idx { "#" (s.index) }
                span.time title=(crate::trace::iso_utc(s.ts)) { (clock(s.ts)) }
                span.lane-tag .(format!("lane-{}", s.lane % 8)) { (lane_label(&s.task)) }
                span.method { (s.method) }
                @if let Some(target) = &s.target { span.target title=(target) { (target) } }
                @if let Some(at) = &s.at { span.at title="the script line that sent it" { (at) } }
                span.status { @if s.ok { "ok" } @else { (s.code.as_deref().unwrap_or("failed")) } }
                span.dur { (ms(s.duration_ms)) }
                span.msg { (s.msg.as_deref().unwrap_or("")) }
                @if shown.is_some() {
                    img.thumb data-lazy alt=(format!("screenshot of step {}", s.index));
                } @else if removed {
                    span.removed-tag { "evidence removed by retention" }
                }
            }
            div.detail hidden {
                dl.facts {
                    dt { "outcome" } dd.outcome { @if s.ok { "ok" } @else { "failed · " (s.code.as_deref().unwrap_or("")) } }
                    @if let Some(msg) = &s.msg { dt { "message" } dd.error-msg { (msg) } }
                    dt { "started" } dd { (s.started.map_or("?".into(), |b| b.to_string())) }
                    dt { "retryable" } dd { (s.retryable.map_or("?".into(), |b| b.to_string())) }
                    dt { "duration" } dd { (ms(s.duration_ms)) }
                    dt { "ended" } dd { (crate::trace::iso_utc(s.ts)) }
                    dt { "task" } dd { (lane_label(&s.task)) " · seq " (s.seq) }
                }
                h4 { "params" }
                pre.params { (serde_json::to_string_pretty(&s.params).unwrap_or_default()) }
                @if let Some(fields) = s.fields.as_object().filter(|f| !f.is_empty()) {
                    h4 { "receipt" }
                    dl.fields {
                        @for (k, v) in fields {
                            dt { (k) } dd { (compact(v)) }
                        }
                    }
                }
                @if let Some(shot) = shot { (screenshot(s, shot)) }
                @if let Some(obs) = &s.observation {
                    details.observation {
                        @match &obs.text {
                            Some(text) => {
                                summary { "observation text (" (text.chars().count() + obs.cut) " characters)" }
                                pre { (text) }
                                @if obs.cut > 0 {
                                    p.cut { "… " (obs.cut) " more characters in " code { (obs.path.display().to_string()) } }
                                }
                            },
                            None => {
                                summary { "observation text" }
                                p.removed { "evidence removed by retention" }
                            },
                        }
                    }
                }
            }
        }
    }
}

fn screenshot(s: &Step, shot: &Screenshot) -> Markup {
    let dot = match (s.click_point, shot.size) {
        (Some([x, y]), Some([w, h])) if w > 0 && h > 0 && shot.from_step.is_none() => {
            Some(format!(
                "left:{:.2}%;top:{:.2}%",
                x / f64::from(w) * 100.0,
                y / f64::from(h) * 100.0
            ))
        }
        _ => None,
    };
    html! {
        h4 {
            "screenshot"
            @if let Some(from) = shot.from_step {
                " " span.sub { "(none of its own: the page after step #" (from) ", as this step found it)" }
            }
        }
        @if !shot.present {
            p.removed { "evidence removed by retention" " " code { (shot.path.display().to_string()) } }
        } @else if let Some(e) = &shot.error {
            p.removed { "screenshot not shown: " (e) }
        } @else if shot.thumb.is_some() {
            figure.shot {
                img.shot-img data-lazy alt=(format!("screenshot of step {}", s.index)) title="click to enlarge";
                @if let Some(dot) = dot { span.dot style=(dot) {} }
                figcaption { (shot.path.display().to_string()) }
            }
        }
    }
}

fn output(r: &Report) -> Markup {
    html! {
        section #output {
            h2 { "Output " span.sub { (r.output.len()) " lines" } }
            @if r.output.is_empty() {
                p.none { "The script printed nothing." }
            } @else {
                pre #output-text { @for line in &r.output { (line) "\n" } }
            }
            @if r.output_cut > 0 {
                p.cut { (r.output_cut) " more lines were not kept." }
            }
        }
    }
}
