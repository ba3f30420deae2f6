//! The Playwright child process the benchmarks compare against (`benches/node/*.mjs`), one JSON
//! request per line. Its pipes are async: the fixture server runs on the same runtime and must
//! keep serving while the peer waits for a page.

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The peer's first line (`{"ok":true,"ready":true,...}`).
    pub ready: Value,
}

impl Peer {
    /// Starts `node benches/node/<script>`, or prints `<skipped>: why` and returns None when
    /// playwright-core is not installed, node does not start or the peer does not say ready.
    pub async fn start(script: &str, skipped: &str) -> Option<Peer> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node");
        if !dir.join("node_modules/playwright-core").is_dir() {
            println!("{skipped}: run `npm install` in benches/node");
            return None;
        }
        let mut child = Command::new("node")
            .arg(dir.join(script))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| println!("{skipped}: node did not start: {e}"))
            .ok()?;
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut peer = Peer {
            child,
            stdin,
            stdout,
            ready: Value::Null,
        };
        let ready = peer.read().await;
        if ready["ok"] != true {
            println!("{skipped}: {ready}");
            return None;
        }
        peer.ready = ready;
        Some(peer)
    }

    async fn read(&mut self) -> Value {
        let mut text = String::new();
        match self.stdout.read_line(&mut text).await {
            Ok(_) => serde_json::from_str(&text).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        }
    }

    /// Sends one request and waits for its answer.
    pub async fn ask(&mut self, req: Value) -> Value {
        self.stdin
            .write_all(format!("{req}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
        let answer = self.read().await;
        assert!(answer["ok"] == true, "peer failed: {answer}");
        answer
    }

    pub async fn close(mut self) {
        self.ask(json!({"op": "close"})).await;
        let _ = self.child.wait().await;
    }
}
