//! A pseudo-terminal for driving the binary as a person would: the program runs inside a
//! private tmux server (its own socket, no user config), keys go in with `send-keys`, and tests
//! read the rendered screen with `capture-pane` — what a person would see, escape codes applied.
//! `tools/test` installs tmux when it is missing.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// One program running in a terminal of 160×50.
pub struct Terminal {
    socket: String,
    runtime: tokio::runtime::Runtime,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn tmux(socket: &str, args: &[&str]) -> Output {
    Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .expect("tmux runs (tools/test installs it; `apt-get install tmux` by hand)")
}

/// Quotes one word for the shell tmux runs the command with.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl Terminal {
    /// Starts `program args…` with `env` added, in a fresh terminal. The pane stays after the
    /// program exits, so its last screen can still be read.
    pub fn start(program: &str, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let socket = format!(
            "moonpilot-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut command = String::from("env");
        for (k, v) in env {
            command.push(' ');
            command.push_str(&quote(&format!("{k}={v}")));
        }
        command.push(' ');
        command.push_str(&quote(program));
        for a in args {
            command.push(' ');
            command.push_str(&quote(a));
        }
        let out = tmux(
            &socket,
            &[
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                "160",
                "-y",
                "50",
                &command,
                ";",
                "set-option",
                "-t",
                "main",
                "remain-on-exit",
                "on",
            ],
        );
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        Terminal { socket, runtime }
    }

    /// Types `text` literally (no key names).
    pub fn type_text(&self, text: &str) {
        let out = tmux(&self.socket, &["send-keys", "-t", "main", "-l", "--", text]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Presses named keys (`Enter`, `Tab`, `C-c`, `C-d`, `C-u`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        let out = tmux(&self.socket, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types `line` and presses Enter.
    pub fn line(&self, line: &str) {
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// The screen as text, with the scrollback, trailing blank lines dropped.
    pub fn screen(&self) -> String {
        let out = tmux(
            &self.socket,
            &["capture-pane", "-p", "-J", "-S", "-500", "-t", "main"],
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// Waits until `ready(screen)` holds, polling every 5 ms; panics with the screen after
    /// `timeout`. Answers the screen and how long it took.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> (String, Duration) {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return (screen, started.elapsed());
            }
            if started.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; the screen:\n{screen}");
            }
            self.runtime
                .block_on(async { tokio::time::sleep(Duration::from_millis(5)).await });
        }
    }

    /// Waits until the screen shows `text` `count` times (so the same text printed again
    /// later can be waited for as well).
    pub fn wait_for_nth(&self, text: &str, count: usize, timeout: Duration) -> (String, Duration) {
        self.wait_until(&format!("{text:?} ×{count}"), timeout, |s| {
            s.matches(text).count() >= count
        })
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> (String, Duration) {
        self.wait_for_nth(text, 1, timeout)
    }

    /// Whether the program has exited (the pane stays, marked dead).
    pub fn exited(&self) -> bool {
        let out = tmux(
            &self.socket,
            &["display-message", "-p", "-t", "main", "#{pane_dead}"],
        );
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Waits for the program to exit.
    pub fn wait_exit(&self, timeout: Duration) {
        let started = Instant::now();
        while !self.exited() {
            assert!(
                started.elapsed() < timeout,
                "the program did not exit within {timeout:?}; the screen:\n{}",
                self.screen()
            );
            self.runtime
                .block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // Hangs up the program (SIGHUP) if it still runs; its browser's watchdog cleans up.
        let _ = tmux(&self.socket, &["kill-server"]);
    }
}
