//! The reporters of `moonpilot test`: `list` (a line per test as it ends, then a summary and
//! the failures), `dot` (a character per test), `junit=FILE` (JUnit XML as Jenkins and GitLab
//! read it: a testsuite per file, a testcase per test), `json=FILE` and `html=FILE` (written
//! by `html.rs` once the engine stopped). Several at once; at most one of `list` and `dot`
//! prints.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Outcome, Status};

/// The reporters asked for.
pub struct Reporters {
    /// `list` or `dot` on stdout.
    terminal: Option<Terminal>,
    junit: Option<PathBuf>,
    json: Option<PathBuf>,
    html: Option<PathBuf>,
    done: usize,
    total: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Terminal {
    List,
    Dot,
}

impl Reporters {
    /// From `--reporter` values (`list` when none prints).
    pub fn parse(given: &[String]) -> Result<Reporters, String> {
        let mut r = Reporters {
            terminal: None,
            junit: None,
            json: None,
            html: None,
            done: 0,
            total: 0,
        };
        for g in given.iter().map(|g| g.trim()).filter(|g| !g.is_empty()) {
            let (name, file) = match g.split_once('=') {
                Some((n, f)) => (n, Some(PathBuf::from(f))),
                None => (g, None),
            };
            match (name, file) {
                ("list", None) => r.terminal = Some(Terminal::List),
                ("dot", None) => r.terminal = Some(Terminal::Dot),
                ("junit", Some(f)) => r.junit = Some(f),
                ("json", Some(f)) => r.json = Some(f),
                ("html", Some(f)) => r.html = Some(f),
                ("junit" | "json" | "html", None) => {
                    return Err(format!("--reporter {name} needs a file: {name}=FILE"))
                }
                (other, _) => {
                    return Err(format!(
                        "no reporter `{other}`: list, dot, junit=FILE, json=FILE, html=FILE"
                    ))
                }
            }
        }
        if r.terminal.is_none() {
            r.terminal = Some(Terminal::List);
        }
        Ok(r)
    }

    /// The HTML report's file, written after the engine stopped (`html.rs`).
    pub fn html_file(&self) -> Option<&PathBuf> {
        self.html.as_ref()
    }

    /// The run begins.
    pub fn begin(&mut self, total: usize, workers: usize) {
        self.total = total;
        if self.terminal == Some(Terminal::List) {
            println!(
                "Running {total} test{} using {workers} worker{}\n",
                plural(total),
                plural(workers)
            );
        }
    }

    /// A test ended.
    pub fn ended(&mut self, o: &Outcome) {
        self.done += 1;
        match self.terminal {
            Some(Terminal::List) => {
                let mark = match o.status {
                    Status::Passed => "✓",
                    Status::Failed => "✘",
                    Status::Flaky => "±",
                    Status::Skipped => "-",
                };
                let mut line = format!(
                    "  {mark} {:>3}/{} {}:{} › {}",
                    self.done,
                    self.total,
                    o.test.file.display(),
                    o.test.line,
                    o.test.title
                );
                if o.repeat > 1 {
                    let _ = write!(line, " (repeat {})", o.repeat);
                }
                if o.status != Status::Skipped {
                    let _ = write!(line, " ({})", ms(o.duration));
                }
                if o.attempts > 1 {
                    let _ = write!(line, " [{} attempts]", o.attempts);
                }
                println!("{line}");
            }
            Some(Terminal::Dot) => {
                let c = match o.status {
                    Status::Passed => '·',
                    Status::Failed => 'F',
                    Status::Flaky => '±',
                    Status::Skipped => '°',
                };
                print!("{c}");
                let _ = std::io::stdout().flush();
            }
            None => {}
        }
    }

    /// The run ended: the summary, the failures, the files.
    pub fn finish(&mut self, outcomes: &[Outcome], wall: Duration, interrupted: bool) {
        if self.terminal == Some(Terminal::Dot) {
            println!();
        }
        let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
        let failed: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.status == Status::Failed || o.status == Status::Flaky)
            .collect();
        let color = std::io::stdout().is_terminal();
        for (n, o) in failed.iter().enumerate() {
            let kind = if o.status == Status::Flaky {
                "flaky"
            } else {
                "failed"
            };
            println!(
                "\n  {}) {}:{} › {} ({kind})",
                n + 1,
                o.test.file.display(),
                o.test.line,
                o.test.title
            );
            for (i, f) in o.failures.iter().enumerate() {
                if o.failures.len() > 1 {
                    println!("     attempt {}:", i + 1);
                }
                println!("     {}", indent(&failure_text(f), 5));
            }
        }
        let mut parts = vec![format!("{} passed", count(Status::Passed))];
        for (s, name) in [
            (Status::Failed, "failed"),
            (Status::Flaky, "flaky"),
            (Status::Skipped, "skipped"),
        ] {
            let n = count(s);
            if n > 0 {
                parts.push(format!("{n} {name}"));
            }
        }
        if interrupted {
            parts.push(format!(
                "{} not run (interrupted)",
                self.total.saturating_sub(outcomes.len())
            ));
        }
        let summary = format!("\n  {} ({})", parts.join(", "), ms(wall));
        if color && count(Status::Failed) > 0 {
            println!("\x1b[31m{summary}\x1b[0m");
        } else {
            println!("{summary}");
        }
        if let Some(path) = &self.junit {
            write_file(path, &junit(outcomes));
        }
        if let Some(path) = &self.json {
            let v = json_report(outcomes, wall, interrupted);
            write_file(path, &serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    }
}

fn write_file(path: &PathBuf, text: &str) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("moonpilot: cannot write {}: {e}", path.display());
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

fn indent(text: &str, n: usize) -> String {
    text.replace('\n', &format!("\n{}", " ".repeat(n)))
}

/// A failure as people read it: the message, where, the last seen value, the images.
pub fn failure_text(f: &super::Failure) -> String {
    let mut s = match &f.location {
        Some(at) if !f.message.starts_with(at.as_str()) => format!("{at}: {}", f.message),
        _ => f.message.clone(),
    };
    if let Some(p) = &f.screenshot {
        let _ = write!(s, "\nscreenshot: {}", p.display());
    }
    for p in &f.images {
        let _ = write!(s, "\nimage: {}", p.display());
    }
    s
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 cannot hold other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: a testsuite per file, a testcase per test (`classname` the file, `name` the
/// title), `failure` with the message and the details, `skipped`; a flaky test passes with a
/// `flakyFailure` note per failed attempt (as Maven Surefire writes them) and its failures in
/// `system-out`.
pub fn junit(outcomes: &[Outcome]) -> String {
    let mut files: Vec<&std::path::Path> = Vec::new();
    for o in outcomes {
        if !files.contains(&o.test.file.as_path()) {
            files.push(&o.test.file);
        }
    }
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let total: f64 = outcomes.iter().map(|o| o.duration.as_secs_f64()).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"moonpilot test\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"{total:.3}\">",
        outcomes.len(),
        count(Status::Failed),
        count(Status::Skipped)
    );
    for file in files {
        let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.test.file == file).collect();
        let c = |s: Status| mine.iter().filter(|o| o.status == s).count();
        let t: f64 = mine.iter().map(|o| o.duration.as_secs_f64()).sum();
        let name = xml(&file.display().to_string());
        let _ = writeln!(
            x,
            "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"{t:.3}\">",
            mine.len(),
            c(Status::Failed),
            c(Status::Skipped)
        );
        for o in mine {
            let mut title = o.test.title.clone();
            if o.repeat > 1 {
                let _ = write!(title, " (repeat {})", o.repeat);
            }
            let _ = write!(
                x,
                "    <testcase classname=\"{name}\" name=\"{}\" time=\"{:.3}\"",
                xml(&title),
                o.duration.as_secs_f64()
            );
            match o.status {
                Status::Passed => x.push_str("/>\n"),
                Status::Skipped => x.push_str(">\n      <skipped/>\n    </testcase>\n"),
                Status::Failed => {
                    x.push_str(">\n");
                    let last = o.failures.last().cloned().unwrap_or_default();
                    let details: Vec<String> = o.failures.iter().map(failure_text).collect();
                    let _ = writeln!(
                        x,
                        "      <failure message=\"{}\" type=\"AssertionError\">{}</failure>",
                        xml(&last.message),
                        xml(&details.join("\n\n"))
                    );
                    x.push_str("    </testcase>\n");
                }
                Status::Flaky => {
                    x.push_str(">\n");
                    for f in &o.failures {
                        let _ = writeln!(
                            x,
                            "      <flakyFailure message=\"{}\" type=\"AssertionError\"/>",
                            xml(&f.message)
                        );
                    }
                    let details: Vec<String> = o.failures.iter().map(failure_text).collect();
                    let _ = writeln!(
                        x,
                        "      <system-out>flaky: passed on attempt {} of {}\n{}</system-out>",
                        o.attempts,
                        o.attempts,
                        xml(&details.join("\n\n"))
                    );
                    x.push_str("    </testcase>\n");
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

fn json_report(outcomes: &[Outcome], wall: Duration, interrupted: bool) -> Value {
    let tests: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "file": o.test.file.display().to_string(),
                "line": o.test.line,
                "title": o.test.title,
                "repeat": o.repeat,
                "status": o.status.as_str(),
                "durationMs": (o.duration.as_secs_f64() * 1e3).round(),
                "attempts": o.attempts,
                "failures": o.failures.iter().map(|f| json!({
                    "message": f.message,
                    "location": f.location,
                    "expected": f.expected,
                    "actual": f.actual,
                    "target": f.target,
                    "waitedMs": f.waited_ms,
                    "screenshot": f.screenshot.as_ref().map(|p| p.display().to_string()),
                    "images": f.images.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    json!({
        "stats": {
            "passed": count(Status::Passed),
            "failed": count(Status::Failed),
            "flaky": count(Status::Flaky),
            "skipped": count(Status::Skipped),
            "durationMs": (wall.as_secs_f64() * 1e3).round(),
            "interrupted": interrupted,
        },
        "tests": tests,
    })
}
