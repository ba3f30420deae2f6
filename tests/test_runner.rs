//! `moonpilot test`: the runner's own suite, through the binary against the fixture pages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::harness::{harness, state_dir};

fn moonpilot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    command
        .env("MOONPILOT_STATE_DIR", state_dir())
        .env("MOONPILOT_TEST_A", &harness().fixtures.a);
    command
}

/// A fresh directory holding `files` (name, Lua source).
fn suite(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-tests-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, source) in files {
        std::fs::write(dir.join(file), source).unwrap();
    }
    dir
}

/// Runs `moonpilot test` in `dir` with `args` and a JSON report: the output and the report.
fn run(dir: &Path, args: &[&str]) -> (Output, Value) {
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let out = moonpilot()
        .current_dir(dir)
        .arg("test")
        .args(args)
        .arg("--reporter")
        .arg(format!("list,json={}", report.display()))
        .args(["--no-trace", "--no-capture"])
        .output()
        .unwrap();
    let json = std::fs::read_to_string(&report)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (out, json)
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The titles of a JSON report's tests, in order.
fn titles(report: &Value) -> Vec<String> {
    report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect()
}

fn status_of<'a>(report: &'a Value, title: &str) -> &'a str {
    report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("no test `{title}` in {report}"))["status"]
        .as_str()
        .unwrap()
}

const MAIN_SPEC: &str = r##"
local A = os.getenv("MOONPILOT_TEST_A")
describe("pages", function()
  before_each(function(page) page:navigate{ url = A .. "/basic.html" }:unwrap() end)

  it("waits for a change 500 ms late", function(page)
    page:execute_js{ body = "setTimeout(() => { document.title = 'late'; document.body.insertAdjacentHTML('beforeend', '<p id=late>arrived</p>') }, 500)" }:unwrap()
    expect(page):to_have_title{ title = "late" }
    expect(page):to_have_text{ selector = "#late", text = "arrived" }
    expect(page):to_be_visible{ selector = "#late" }
    expect(page):to_have_count{ selector = "#late", count = 1 }
    expect(page):to_have_url{ pattern = "basic%.html$" }
  end)

  it("fails when the text never comes", function(page)
    expect(page):to_have_text{ selector = "h1", text = "never there", timeoutMs = 600 }
  end)

  it("fails fast on a selector that cannot parse", function(page)
    expect(page):to_be_visible{ selector = "h1[[", timeoutMs = 20000 }
  end)

  it.skip("is skipped", function() error("never runs") end)
end)

describe("hooks", function()
  before_each(function() error("the hook broke") end)
  it("does not run its body", function() error("the body ran") end)
end)

test("flaky: fails once, then passes", function()
  local file = os.getenv("MOONPILOT_TEST_DIR") .. "/flaky-count"
  local f = io.open(file, "r")
  local n = f and tonumber(f:read("a")) or 0
  if f then f:close() end
  f = io.open(file, "w"); f:write(tostring(n + 1)); f:close()
  expect(n):to_be(1)
end)

test("times out", function() browser.sleep(10000) end)

test("plain values", function()
  expect({ 1, { a = "x" } }):to_equal({ 1, { a = "x" } })
  expect("moonpilot"):to_match("^moon")
  expect({ "a", "b" }):to_contain("b")
  expect(nil):to_be_falsy()
  expect(1):not_to_equal(2)
end)
"##;

#[test]
fn a_suite_reports_passed_failed_flaky_skipped_and_timed_out_tests() {
    let dir = suite("main", &[("main_spec.lua", MAIN_SPEC)]);
    let junit = dir.join("junit.xml");
    let t0 = std::time::Instant::now();
    let out = moonpilot()
        .current_dir(&dir)
        .env("MOONPILOT_TEST_DIR", &dir)
        .args(["test", "--retries", "1", "--timeout", "3", "--workers", "2"])
        .arg("--reporter")
        .arg(format!(
            "list,junit={},json={}",
            junit.display(),
            dir.join("report.json").display()
        ))
        .args(["--no-trace", "--no-capture"])
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed test is exit 1:\n{all}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        status_of(&report, "pages › waits for a change 500 ms late"),
        "passed",
        "{all}"
    );
    assert_eq!(
        status_of(&report, "pages › fails when the text never comes"),
        "failed"
    );
    assert_eq!(status_of(&report, "pages › is skipped"), "skipped");
    assert_eq!(
        status_of(&report, "hooks › does not run its body"),
        "failed"
    );
    assert_eq!(
        status_of(&report, "flaky: fails once, then passes"),
        "flaky",
        "{all}"
    );
    assert_eq!(status_of(&report, "times out"), "failed");
    assert_eq!(status_of(&report, "plain values"), "passed", "{all}");
    let find = |title: &str| {
        report["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"] == title)
            .unwrap()
            .clone()
    };
    // The failed assertion says what it expected, what it last saw, how long, where.
    let never = find("pages › fails when the text never comes");
    let f = &never["failures"][0];
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("expected text \"never there\""),
        "{f}"
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("last seen \"Basic page\"")
            || f["actual"].as_str().is_some_and(|a| !a.is_empty()),
        "{f}"
    );
    assert!(
        f["location"]
            .as_str()
            .unwrap()
            .ends_with("main_spec.lua:16"),
        "{f}"
    );
    assert!(f["waitedMs"].as_u64().unwrap() >= 600, "{f}");
    let shot = f["screenshot"]
        .as_str()
        .expect("a screenshot of the failed page");
    assert!(
        dir.join(shot).is_file() || Path::new(shot).is_file(),
        "{shot}"
    );
    assert_eq!(never["attempts"], 2, "retried once");
    // A target that can never match fails at once, not after its 20 s.
    let bad = find("pages › fails fast on a selector that cannot parse");
    assert!(bad["durationMs"].as_f64().unwrap() < 10_000.0, "{bad}");
    // The hook's failure is the test's; the body never ran.
    let hooks = find("hooks › does not run its body");
    let m = hooks["failures"][0]["message"].as_str().unwrap();
    assert!(
        m.contains("before_each hook failed") && m.contains("the hook broke"),
        "{m}"
    );
    assert!(!all.contains("the body ran"), "{all}");
    let timed = find("times out");
    assert!(
        timed["failures"][0]["message"]
            .as_str()
            .unwrap()
            .contains("timed out after 3 s"),
        "{timed}"
    );
    assert!(
        t0.elapsed().as_secs() < 60,
        "the timeouts cut the 10 s sleeps"
    );
    // The list reporter: a line per test, the failures, the summary.
    assert!(all.contains("Running 8 tests using 2 workers"), "{all}");
    assert!(
        all.contains("2 passed, 4 failed, 1 flaky, 1 skipped"),
        "{all}"
    );
    // JUnit, read back by a real XML parser when Python is there.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(
            "<testsuite name=\"./main_spec.lua\" tests=\"8\" failures=\"4\" skipped=\"1\""
        ),
        "{xml}"
    );
    let parsed = Command::new("python3")
        .arg("-c")
        .arg("import sys, xml.etree.ElementTree as ET\nr = ET.parse(sys.argv[1]).getroot()\ncases = list(r.iter('testcase'))\nprint(len(cases), sum(1 for c in cases if c.find('failure') is not None), sum(1 for c in cases if c.find('skipped') is not None), sum(1 for c in cases if c.find('flakyFailure') is not None))")
        .arg(&junit)
        .output();
    if let Ok(p) = parsed {
        if p.status.success() {
            assert_eq!(String::from_utf8_lossy(&p.stdout).trim(), "8 4 1 1");
        }
    }
}

#[test]
fn only_forbid_only_grep_and_load_errors() {
    let dir = suite(
        "only",
        &[
            (
                "a_spec.lua",
                "it('one', function() end)\nit.only('two', function() end)\n",
            ),
            (
                "b_test.lua",
                "describe('group', function() it('three', function() end) end)\n",
            ),
            ("helper.lua", "error('not a test file: never loaded')\n"),
        ],
    );
    let (out, report) = run(&dir, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let titles = titles(&report);
    assert_eq!(titles, ["two"], "only the .only test runs");
    let (out, _) = run(&dir, &["--forbid-only"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("a_spec.lua:2"), "{}", text(&out));
    // --grep over the full title (without the .only file).
    let (out, report) = run(&dir, &["b_test.lua", "--grep", "group › thr"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report["tests"][0]["title"], "group › three");
    // A file that does not parse: exit 2 with file:line.
    std::fs::write(
        dir.join("broken_spec.lua"),
        "it('x', function()\n  local = 1\nend)\n",
    )
    .unwrap();
    let (out, _) = run(&dir, &["broken_spec.lua"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("broken_spec.lua:2"), "{}", text(&out));
    // No test file at all: exit 2.
    let empty = suite("empty", &[]);
    let (out, _) = run(&empty, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no test files"), "{}", text(&out));
}

#[test]
fn shards_partition_the_suite_and_last_failed_reruns_the_failures() {
    let mut files = Vec::new();
    let sources: Vec<(String, String)> = (0..3)
        .map(|f| {
            let tests: String = (0..4)
                .map(|t| {
                    let body = if f == 1 && t == 2 {
                        "error('broken')"
                    } else {
                        ""
                    };
                    format!("it('t{f}{t}', function() {body} end)\n")
                })
                .collect();
            (format!("f{f}_spec.lua"), tests)
        })
        .collect();
    for (name, src) in &sources {
        files.push((name.as_str(), src.as_str()));
    }
    let dir = suite("shard", &files);
    let mut seen = Vec::new();
    for i in 1..=3 {
        let (_, report) = run(&dir, &["--shard", &format!("{i}/3")]);
        let titles = titles(&report);
        assert!(!titles.is_empty(), "shard {i}/3 has tests");
        seen.extend(titles);
    }
    seen.sort();
    let mut all: Vec<String> = (0..3)
        .flat_map(|f| (0..4).map(move |t| format!("t{f}{t}")))
        .collect();
    all.sort();
    assert_eq!(seen, all, "the shards are the suite, without overlap");
    let (out, _) = run(&dir, &[]);
    assert_eq!(out.status.code(), Some(1));
    let (out, report) = run(&dir, &["--last-failed"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let titles = titles(&report);
    assert_eq!(titles, ["t12"]);
    let (_, report) = run(&dir, &["--repeat-each", "2", "--grep", "t00"]);
    assert_eq!(report["tests"].as_array().unwrap().len(), 2);
}

#[test]
fn screenshots_are_compared_against_their_baseline() {
    let spec = r#"
local A = os.getenv("MOONPILOT_TEST_A")
it("looks the same", function(page)
  page:navigate{ url = A .. "/basic.html" }:unwrap()
  if os.getenv("MOONPILOT_TEST_CHANGE") then
    page:execute_js{ body = "document.querySelector('h1').style.background = 'red'" }:unwrap()
  end
  expect(page):to_have_screenshot{ name = "heading", selector = "h1", timeoutMs = 500 }
end)
"#;
    let dir = suite("shots", &[("shot_spec.lua", spec)]);
    let baseline = dir.join("__screenshots__/shot_spec.lua/heading.png");
    let (out, _) = run(&dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a missing baseline fails:\n{}",
        text(&out)
    );
    assert!(text(&out).contains("no baseline yet"), "{}", text(&out));
    assert!(baseline.is_file(), "and is written");
    let (out, _) = run(&dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the same page matches:\n{}",
        text(&out)
    );
    let out = moonpilot()
        .current_dir(&dir)
        .env("MOONPILOT_TEST_CHANGE", "1")
        .args(["test", "--no-trace", "--no-capture", "--output", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("pixels"), "{}", text(&out));
    let diffs: Vec<_> = walk(&dir.join("out"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with("heading-diff.png"))
        .collect();
    assert_eq!(diffs.len(), 1, "a diff image is kept");
    let before = std::fs::read(&baseline).unwrap();
    let out = moonpilot()
        .current_dir(&dir)
        .env("MOONPILOT_TEST_CHANGE", "1")
        .args(["test", "--no-trace", "--no-capture", "--update-snapshots"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_ne!(
        std::fs::read(&baseline).unwrap(),
        before,
        "the baseline was rewritten"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A running `moonpilot test` with its stdout, line by line.
struct Live {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Live {
    fn start(dir: &Path, args: &[&str]) -> Live {
        let mut child = moonpilot()
            .current_dir(dir)
            .arg("test")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // stdout and stderr, each line as it comes.
        let (tx, lines) = std::sync::mpsc::channel();
        let out: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
        let err: Box<dyn std::io::Read + Send> = Box::new(child.stderr.take().unwrap());
        for stream in [out, err] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in std::io::BufRead::lines(std::io::BufReader::new(stream)) {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Live {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The lines up to the next one containing `text` (that one included).
    fn until(&mut self, text: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    got.push(line.clone());
                    if line.contains(text) {
                        return got;
                    }
                }
                Err(_) => panic!(
                    "no line with {text:?}; output so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the exit (at most 30 s): its code. (A test thread, no runtime: it may sleep.)
    #[allow(clippy::disallowed_methods)]
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still running; output:\n{}",
                self.seen.join("\n")
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const HOLDING_SPEC: &str = r##"
local A = os.getenv("MOONPILOT_TEST_A")
it("passes first", function(page)
  page:navigate{ url = A .. "/basic.html" }:unwrap()
  expect(page):to_have_title{ title = "Basic" }
end)

it("fails <with> a screenshot", function(page)
  page:navigate{ url = A .. "/basic.html" }:unwrap()
  expect(page):to_have_text{ selector = "h1", text = "not this", timeoutMs = 300 }
end)

it("holds", function(page)
  page:navigate{ url = A .. "/basic.html" }:unwrap()
  print("PROFILE " .. browser.call("list_tasks").data.browser.profileDir)
  io.stdout:flush()
  browser.sleep(60000)
end)
"##;

#[test]
fn ctrl_c_stops_the_run_closes_the_browser_and_writes_every_report_with_the_html_one() {
    let dir = suite("interrupt", &[("hold_spec.lua", HOLDING_SPEC)]);
    let reporters = format!(
        "list,json={},junit={},html={}",
        dir.join("r.json").display(),
        dir.join("j.xml").display(),
        dir.join("r.html").display()
    );
    // Traced and captured (the HTML report shows each test's commands with their
    // screenshots), one worker: the file's order.
    let mut live = Live::start(
        &dir,
        &["--workers", "1", "--capture", "--reporter", &reporters],
    );
    let line = live.until("PROFILE ").pop().unwrap();
    let profile = PathBuf::from(line.trim_start_matches("PROFILE ").trim());
    assert!(profile.is_dir(), "{profile:?}");
    let t0 = std::time::Instant::now();
    live.interrupt();
    assert_eq!(live.exit_code(), Some(130), "{}", live.seen.join("\n"));
    assert!(t0.elapsed().as_secs() < 20, "Ctrl-C cut the 60 s sleep");
    assert!(
        !profile.exists(),
        "the browser was closed, its profile removed"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    assert_eq!(report["stats"]["interrupted"], true, "{report}");
    assert_eq!(status_of(&report, "passes first"), "passed");
    assert_eq!(status_of(&report, "fails <with> a screenshot"), "failed");
    assert_eq!(report["tests"].as_array().unwrap().len(), 2, "{report}");
    let xml = std::fs::read_to_string(dir.join("j.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    // The HTML report: failures first, escaped titles, the assertion, its screenshot, the
    // commands each test ran.
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    let failed_at = html
        .find("fails &lt;with&gt; a screenshot")
        .expect("the failed test");
    let passed_at = html.find("passes first").expect("the passed test");
    assert!(failed_at < passed_at, "failures first");
    assert!(!html.contains("<with>"), "titles are escaped");
    assert!(
        html.contains("expected text \"not this\"")
            || html.contains("expected text &quot;not this&quot;"),
        "the assertion"
    );
    assert!(html.contains("hold_spec.lua:10"), "its line");
    assert!(
        html.contains("data:image/png;base64,"),
        "the failure screenshot"
    );
    assert!(
        html.contains("interrupted"),
        "the run says it was interrupted"
    );
    assert!(
        html.contains("class=\"thumb\""),
        "a step's screenshot (--capture)"
    );
    let navigations = html.matches("<b>navigate</b>").count();
    assert_eq!(navigations, 2, "each finished test's navigate step");
    assert!(!html.contains("src=\"http"), "no external image");
}

#[test]
fn watch_reruns_the_file_a_save_concerns_on_the_same_browser() {
    let dir = suite(
        "watch",
        &[
            (
                "a_spec.lua",
                "local h = require('helper')\nit('a uses the helper', function(page)\n  page:navigate{ url = os.getenv('MOONPILOT_TEST_A') .. '/basic.html' }:unwrap()\n  print('PID ' .. tostring(browser.call('list_tasks').data.browser.pid))\n  expect(h.value):to_equal(1)\nend)\n",
            ),
            ("b_spec.lua", "it('b alone', function() end)\n"),
            ("helper.lua", "return { value = 1 }\n"),
        ],
    );
    let mut live = Live::start(
        &dir,
        &["--watch", "--workers", "2", "--no-trace", "--no-capture"],
    );
    let first = live.until("watch: waiting");
    let all = first.join("\n");
    assert!(
        all.contains("a uses the helper") && all.contains("b alone"),
        "{all}"
    );
    assert!(all.contains("2 passed"), "{all}");
    assert!(
        all.contains("2 test files or 1 module"),
        "the helper is watched: {all}"
    );
    let pid = first
        .iter()
        .find_map(|l| l.strip_prefix("PID "))
        .expect("the browser's pid")
        .to_string();
    // A save of the module re-runs the file that requires it, and only that one.
    std::fs::write(dir.join("helper.lua"), "return { value = 2 }\n").unwrap();
    let second = live.until("watch: waiting");
    let all = second.join("\n");
    assert!(all.contains("helper.lua saved: re-running 1 file"), "{all}");
    assert!(
        all.contains("a uses the helper") && !all.contains("b alone"),
        "{all}"
    );
    assert!(all.contains("0 passed, 1 failed"), "{all}");
    assert!(
        second
            .iter()
            .any(|l| l.strip_prefix("PID ") == Some(pid.as_str())),
        "the same browser: {all}"
    );
    // A save of a test file re-runs it alone.
    std::fs::write(
        dir.join("b_spec.lua"),
        "it('b alone', function() end)\nit('b again', function() end)\n",
    )
    .unwrap();
    let third = live.until("watch: waiting").join("\n");
    assert!(
        third.contains("b again") && !third.contains("a uses the helper"),
        "{third}"
    );
    assert!(third.contains("2 passed"), "{third}");
    // A save that does not load says why and waits for the next.
    std::fs::write(
        dir.join("b_spec.lua"),
        "it('b', function()\n  local = 1\nend)\n",
    )
    .unwrap();
    live.until("b_spec.lua:2");
    live.interrupt();
    live.until("watch: stopped");
    assert_eq!(live.exit_code(), Some(130));
}
