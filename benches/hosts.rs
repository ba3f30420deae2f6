//! The hosts' latency, through the real binary: `moonpilot watch` from a save (by rename, as
//! editors do) to the re-run starting and to its summary line, and a `moonpilot repl` command's
//! round trip from the line written to its receipt printed. `cargo bench --bench hosts`.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const ROUNDS: usize = 30;

fn lines_of(stdout: std::process::ChildStdout) -> Receiver<(Instant, String)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for(lines: &Receiver<(Instant, String)>, text: &str) -> Instant {
    loop {
        let (at, line) = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no line with {text:?}"));
        if line.contains(text) {
            return at;
        }
    }
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<40} median {:>7.2} ms   p90 {:>7.2} ms   min {:>7.2} ms   (n={})",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() * 9 / 10]),
        ms(samples[0]),
        samples.len()
    );
}

fn save(path: &Path, text: &str) -> Instant {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    let at = Instant::now();
    std::fs::rename(&tmp, path).unwrap();
    at
}

fn watch() {
    let dir = std::env::temp_dir().join(format!("moonpilot-bench-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("bench.lua");
    let body = |n: usize| {
        format!(
            "local page = browser.start{{}}\nprint('title', page:get_title().data.title, {n})\n"
        )
    };
    std::fs::write(&script, body(0)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("watch")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    wait_for(&lines, "watch: run 1 ·");
    let (mut to_start, mut to_end) = (Vec::new(), Vec::new());
    for n in 2..ROUNDS + 2 {
        let saved = save(&script, &body(n));
        let started = wait_for(&lines, &format!("watch: run {n}"));
        let ended = wait_for(&lines, &format!("watch: run {n} ·"));
        to_start.push(started - saved);
        to_end.push(ended - saved);
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    report("watch: save → re-run starts", to_start);
    report("watch: save → re-run done (2 commands)", to_end);
}

fn repl() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("repl")
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("moonpilot-bench-repl"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    writeln!(stdin, "print('ready')").unwrap();
    wait_for(&lines, "ready");
    let mut trips = Vec::new();
    for _ in 0..ROUNDS * 3 {
        let sent = Instant::now();
        writeln!(stdin, "page:get_title()").unwrap();
        stdin.flush().unwrap();
        trips.push(wait_for(&lines, "get_title ok") - sent);
    }
    drop(stdin);
    let _ = child.wait();
    report("repl: line → get_title receipt printed", trips);
}

fn main() {
    watch();
    repl();
}
