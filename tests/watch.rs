//! `moonpilot watch`: the real binary re-running a temp script on saves — latency, the same
//! browser and task across runs, modules, errors that recover, checkpoints that do not resend a
//! side effect, and a save aborting a running run with its coroutines.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::support::harness::{harness, url_a};

const T: Duration = Duration::from_secs(20);

/// A running `moonpilot watch` and its stdout, line by line with arrival times.
struct Watch {
    child: Child,
    lines: Receiver<(Instant, String)>,
    seen: Vec<String>,
}

impl Watch {
    fn start(script: &Path, args: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
            .env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir())
            .arg("watch")
            .arg(script)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line containing `text`, and when it arrived.
    fn wait_for(&mut self, text: &str) -> (String, Instant) {
        let deadline = Instant::now() + T;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return (line, at);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => panic!(
                    "no line with {text:?} within {T:?}; output so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// The lines that arrive within `window`.
    fn lines_within(&mut self, window: Duration) -> Vec<String> {
        let deadline = Instant::now() + window;
        let mut got = Vec::new();
        while let Ok((_, line)) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line.clone());
            got.push(line);
        }
        got
    }

    /// Ctrl-C: the watch stops, closes the browser and exits 130, as `run` does (issue 10 #15;
    /// it exited 0).
    fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait_for("watch: stopped");
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(130));
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-watch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Saves the way vim and VS Code do: a new file renamed over the old one.
fn save_by_rename(path: &Path, text: &str) -> Instant {
    let tmp = path.with_extension("lua.tmp");
    std::fs::write(&tmp, text).unwrap();
    let at = Instant::now();
    std::fs::rename(&tmp, path).unwrap();
    at
}

/// The whitespace-separated fields of a `RUN` line the scripts print.
fn fields(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

fn script(version: &str) -> String {
    format!(
        "local helper = require('helper')\n\
         local page = browser.start{{}}\n\
         local info = browser.call('list_tasks').data.browser\n\
         print('RUN', '{version}', page.id, info.pid, helper.word, info.profileDir)\n"
    )
}

#[test]
fn reruns_on_save_with_the_same_browser_and_task() {
    let dir = temp_dir("rerun");
    let main = dir.join("script.lua");
    std::fs::write(dir.join("helper.lua"), "return { word = 'alpha' }\n").unwrap();
    std::fs::write(&main, script("v1")).unwrap();
    let mut watch = Watch::start(&main, &[]);
    let (first, _) = watch.wait_for("RUN");
    let first = fields(&first);
    assert!(first[3].parse::<u32>().is_ok(), "Chromium's pid: {first:?}");
    watch.wait_for("watch: run 1 · ok");

    // Saved by rename: re-run within 500 ms, same task and browser.
    let mut latencies = Vec::new();
    for n in 2..=4 {
        let version = format!("v{n}");
        let saved = save_by_rename(&main, &script(&version));
        let (_, started) = watch.wait_for(&format!("watch: run {n}"));
        latencies.push(started.duration_since(saved));
        let (line, _) = watch.wait_for("RUN");
        let got = fields(&line);
        assert_eq!(got[1], version);
        assert_eq!(got[2..4], first[2..4], "same task id and browser process");
        assert_eq!(got[5], first[5], "same browser profile");
        let (summary, _) = watch.wait_for(&format!("watch: run {n} ·"));
        assert!(
            summary.contains("· ok ·") && summary.contains("2 command(s)"),
            "{summary}"
        );
    }
    eprintln!("watch: save → re-run start: {latencies:?}");
    for l in &latencies {
        assert!(*l < Duration::from_millis(500), "{latencies:?}");
    }

    // A required module's save re-runs too.
    std::fs::write(dir.join("helper.lua"), "return { word = 'beta' }\n").unwrap();
    watch.wait_for("watch: run 5");
    let (line, _) = watch.wait_for("RUN");
    assert_eq!(fields(&line)[4], "beta");

    // A syntax error prints file:line and waits; the fix recovers with the same task.
    save_by_rename(&main, "local x = 1\nprint(\n");
    let (error, _) = watch.wait_for("error:");
    assert!(error.contains("script.lua:3:"), "{error}");
    watch.wait_for("watch: run 6 · error");
    // A runtime error, too.
    save_by_rename(&main, "local x = 1\nerror('boom')\n");
    let (error, _) = watch.wait_for("error:");
    assert!(error.contains("script.lua:2: boom"), "{error}");
    save_by_rename(&main, &script("v8"));
    let (line, _) = watch.wait_for("RUN");
    assert_eq!(
        fields(&line)[2],
        first[2],
        "the task survived the failed runs"
    );
    watch.wait_for("watch: run 8 · ok");

    // `browser.start{ id = N }` takes live task N over, run after run.
    let adopt = format!(
        "local page = browser.start{{ id = '{}' }}\nprint('ADOPT', page.id)\n",
        first[2]
    );
    for n in 9..=10 {
        save_by_rename(&main, &format!("{adopt}-- save {n}\n"));
        let (line, _) = watch.wait_for("ADOPT");
        assert_eq!(fields(&line)[1], first[2], "run {n}");
        watch.wait_for(&format!("watch: run {n} · ok"));
    }
    watch.stop();
}

fn checkpoint_script(above: &str, below: &str) -> String {
    format!(
        "-- {above}\n\
         local page = browser.start{{}}\n\
         page:navigate{{ url = browser.args.page }}:unwrap()\n\
         page:execute_js{{ body = \"fetch('/count?key=' + {{{{key}}}}, {{ method: 'POST' }}).then(r => r.status)\", vars = {{ key = browser.args.key }} }}:unwrap()\n\
         browser.checkpoint('submitted')\n\
         print('AFTER', page:get_url().data.url)\n\
         {below}\n"
    )
}

#[test]
fn a_checkpoint_keeps_a_rerun_from_resending_what_came_before_it() {
    let dir = temp_dir("checkpoint");
    let main = dir.join("script.lua");
    let key = format!("watch-{}", std::process::id());
    let page = url_a("basic.html");
    let second = url_a("second.html");
    std::fs::write(&main, checkpoint_script("v1", "")).unwrap();
    let args = [
        "--arg",
        &format!("page={page}"),
        "--arg",
        &format!("key={key}"),
    ];
    let mut watch = Watch::start(&main, &args);
    watch.wait_for("watch: run 1 · ok");
    assert_eq!(harness().fixtures.count(&key), 1);

    // Changed below the checkpoint: the POST is answered from the journal, not sent again.
    let below = format!("page:navigate{{ url = '{second}' }}");
    save_by_rename(&main, &checkpoint_script("v1", &below));
    let (line, _) = watch.wait_for("watch: run 2");
    assert!(
        line.contains("resuming after checkpoint `submitted` (line 5)"),
        "{line}"
    );
    watch.wait_for("resumed after checkpoint `submitted`");
    let (summary, _) = watch.wait_for("watch: run 2 ·");
    assert!(
        summary.contains("(3 replayed)") && summary.contains("· ok ·"),
        "{summary}"
    );
    assert_eq!(harness().fixtures.count(&key), 1, "no second POST");

    // Again: the last run left the page on second.html; the resume puts it back first.
    save_by_rename(
        &main,
        &checkpoint_script("v1", &format!("{below} -- again")),
    );
    let (resumed, _) = watch.wait_for("resumed after checkpoint");
    assert!(resumed.contains(&format!("back to {page}")), "{resumed}");
    let (after, _) = watch.wait_for("AFTER");
    assert!(after.ends_with(&page), "{after}");
    watch.wait_for("watch: run 3 · ok");
    assert_eq!(harness().fixtures.count(&key), 1);

    // A syntax error below it: the error comes first, nothing is resumed or sent.
    save_by_rename(&main, &checkpoint_script("v1", "page:navigate{ url = "));
    let (error, _) = watch.wait_for("error:");
    assert!(error.contains("script.lua:"), "{error}");
    let (summary, _) = watch.wait_for("watch: run 4 ·");
    assert!(summary.contains("does not parse"), "{summary}");
    assert!(
        !watch
            .seen
            .iter()
            .any(|l| l.contains("resuming") && l.contains("run 4")),
        "{:?}",
        watch.seen
    );

    // Changed above it: everything runs live again, the POST included.
    save_by_rename(&main, &checkpoint_script("v2", &below));
    let (line, _) = watch.wait_for("watch: run 5");
    assert!(!line.contains("resuming"), "{line}");
    watch.wait_for("watch: run 5 · ok");
    assert_eq!(harness().fixtures.count(&key), 2);
    watch.stop();
}

#[test]
fn a_save_aborts_the_running_run_and_its_coroutines() {
    let dir = temp_dir("abort");
    let main = dir.join("script.lua");
    std::fs::write(
        &main,
        "browser.spawn(function() while true do print('tick') browser.sleep(50) end end)\n\
         browser.sleep(60000)\n",
    )
    .unwrap();
    let mut watch = Watch::start(&main, &[]);
    watch.wait_for("tick");
    save_by_rename(&main, "print('second run')\nbrowser.sleep(60000)\n");
    watch.wait_for("watch: run 1 · interrupted by a save");
    watch.wait_for("second run");
    let late = watch.lines_within(Duration::from_millis(400));
    assert!(
        !late.iter().any(|l| l.contains("tick")),
        "the first run's coroutine still prints: {late:?}"
    );
    watch.stop();
}

#[test]
fn a_splash_script_is_rerun_as_moonpilot_splash_runs_it() {
    harness();
    let dir = temp_dir("splash");
    let script = dir.join("title.lua");
    let out = dir.join("shot.png");
    let version = |v: &str| {
        format!(
            "function main(splash, args)\n  assert(splash:go(args.url))\n  return {{v = '{v}', title = splash:evaljs('document.title')}}\nend\n"
        )
    };
    std::fs::write(&script, version("one")).unwrap();
    let url = format!("url={}", url_a("splash_js.html"));
    let mut w = Watch::start(&script, &["--arg", &url, "--out", out.to_str().unwrap()]);
    let (line, _) = w.wait_for("\"v\":\"one\"");
    assert!(line.contains("\"title\":\"Written by script\""), "{line}");
    w.wait_for("waiting for a save");
    save_by_rename(&script, &version("two"));
    w.wait_for("\"v\":\"two\"");
    w.wait_for("waiting for a save");
    save_by_rename(
        &script,
        "function main(splash, args)\n  assert(splash:go(args.url))\n  return splash:png()\nend\n",
    );
    w.wait_for("run 3 answered");
    let png = std::fs::read(&out).unwrap();
    assert_eq!(&png[..4], b"\x89PNG", "the binary result went to --out");
    save_by_rename(&script, "function main(splash)\n  error('broken')\nend\n");
    w.wait_for("run 4 failed");
    w.stop();
}

/// Waits (20 s at most) until the file at `path` holds `text`; answers its content.
fn file_with(path: &Path, text: &str) -> String {
    let deadline = Instant::now() + T;
    loop {
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if now.contains(text) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {text:?}",
            path.display()
        );
        crate::support::load::pause(Duration::from_millis(50));
    }
}

#[test]
fn a_report_is_rewritten_after_each_run() {
    let _ = harness();
    let dir = temp_dir("report");
    let main = dir.join("script.lua");
    let report = dir.join("watch.html");
    let version = |word: &str, tail: &str| {
        format!(
            "local page = browser.start{{}}\npage:navigate{{ url = '{}' }}:unwrap()\nprint('{word}')\n{tail}",
            url_a("basic.html")
        )
    };
    std::fs::write(&main, version("version one", "")).unwrap();
    let mut watch = Watch::start(&main, &[&format!("--report={}", report.display())]);
    watch.wait_for("watch: run 1 · ok");
    let first = file_with(&report, "version one");
    assert!(first.contains("data-commands=\"2\""), "start and navigate");
    assert!(first.contains("badge ok"));

    save_by_rename(&main, &version("version two", "error('boom')\n"));
    watch.wait_for("watch: run 2 · error");
    let second = file_with(&report, "version two");
    assert!(!second.contains("version one"), "the latest run only");
    assert!(second.contains("badge failed"));
    assert!(second.contains("script.lua:4: boom"));
    // The second run took the task over: its `start` is not sent again, its navigate is.
    assert!(second.contains("data-commands=\"1\""), "navigate");
    watch.stop();
}
