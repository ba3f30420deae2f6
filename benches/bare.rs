//! A bare CDP client for the benchmarks: Chromium launched with moonpilot's flags, one page
//! attached over a plain WebSocket (flattened session), and nothing else — no probes, no
//! evidence, no events handled. What it takes for a piece of work is the floor that an engine
//! on CDP can approach.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

type Socket = async_tungstenite::WebSocketStream<async_tungstenite::tokio::ConnectStream>;

pub struct Bare {
    child: Child,
    profile: PathBuf,
    socket: Socket,
    next: u64,
    session: String,
}

impl Bare {
    /// Launches Chromium (headless, moonpilot's flags, a fresh profile) and opens one page.
    pub async fn start() -> Bare {
        let chromium = moonpilot::browser::find_chromium(None).unwrap();
        let profile =
            std::env::temp_dir().join(format!("moonpilot-bench-bare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).unwrap();
        let child = Command::new(chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--remote-debugging-port=0",
                "--window-size=1280,800",
            ])
            .args(
                moonpilot::browser::LAUNCH_ARGS
                    .iter()
                    .map(|a| format!("--{a}")),
            )
            .arg("about:blank")
            .arg(format!("--user-data-dir={}", profile.display()))
            // Extra flags, space-separated, to measure what a flag does to the same calls.
            .args(
                std::env::var("MOONPILOT_BENCH_BARE_ARGS")
                    .unwrap_or_default()
                    .split_whitespace(),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let port_file = profile.join("DevToolsActivePort");
        let mut text = String::new();
        for _ in 0..200 {
            if let Ok(t) = std::fs::read_to_string(&port_file) {
                if t.lines().count() >= 2 {
                    text = t;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let mut lines = text.lines();
        let port = lines.next().unwrap();
        let path = lines.next().unwrap();
        // No Nagle, as the engine's own sockets: a click's events go out at once.
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap()))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        let (socket, _) =
            async_tungstenite::tokio::client_async_tls(format!("ws://127.0.0.1:{port}{path}"), tcp)
                .await
                .unwrap();
        let mut bare = Bare {
            child,
            profile,
            socket,
            next: 0,
            session: String::new(),
        };
        let targets = bare.browser_call("Target.getTargets", json!({})).await;
        let page = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .unwrap()["targetId"]
            .clone();
        let attached = bare
            .browser_call(
                "Target.attachToTarget",
                json!({"targetId": page, "flatten": true}),
            )
            .await;
        bare.session = attached["sessionId"].as_str().unwrap().to_string();
        bare.call("Page.enable", json!({})).await;
        bare.call("Runtime.enable", json!({})).await;
        // Page settings to measure, comma-separated: `focus`, `metrics`, `lifecycle`.
        let setup = std::env::var("MOONPILOT_BENCH_BARE_SETUP").unwrap_or_default();
        for what in setup.split(',').filter(|w| !w.is_empty()) {
            match what {
                "focus" => bare.call("Emulation.setFocusEmulationEnabled", json!({"enabled": true})).await,
                "metrics" => bare.call("Emulation.setDeviceMetricsOverride", json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false, "screenWidth": 1280, "screenHeight": 800})).await,
                "lifecycle" => bare.call("Page.setLifecycleEventsEnabled", json!({"enabled": true})).await,
                "bounds" => {
                    let w = bare.browser_call("Browser.getWindowForTarget", json!({"targetId": page})).await;
                    bare.browser_call("Browser.setWindowBounds", json!({"windowId": w["windowId"], "bounds": {"width": 1280, "height": 800}})).await
                }
                _ => panic!("unknown bare setup {what}"),
            };
        }
        bare
    }

    async fn send(&mut self, method: &str, params: Value, session: Option<String>) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::text(msg.to_string()))
            .await
            .unwrap();
        while let Some(Ok(m)) = self.socket.next().await {
            if let Message::Text(t) = m {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["id"] == id {
                    assert!(v.get("error").is_none(), "{method}: {v}");
                    return v["result"].clone();
                }
            }
        }
        panic!("the bare connection closed");
    }

    async fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None).await
    }

    /// One command on the page's session.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(session)).await
    }

    /// `Runtime.evaluate` of `expression` (awaiting a promise), by value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        r["result"]["value"].clone()
    }

    /// Navigates and waits until the document is complete.
    pub async fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        for _ in 0..200 {
            if self.eval("document.readyState").await == "complete" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A trusted left click at a viewport point: move, press, release.
    pub async fn click_at(&mut self, x: f64, y: f64) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        )
        .await;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
        }
    }

    /// [`Bare::click_at`] with the three events sent at once, then their answers read.
    pub async fn click_at_once(&mut self, x: f64, y: f64) {
        let first = self.next + 1;
        let session = self.session.clone();
        let events = [
            json!({"type": "mouseMoved", "x": x, "y": y}),
            json!({"type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1}),
            json!({"type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1}),
        ];
        for ev in events {
            self.next += 1;
            let msg = json!({"id": self.next, "method": "Input.dispatchMouseEvent", "params": ev, "sessionId": session});
            self.socket
                .send(Message::text(msg.to_string()))
                .await
                .unwrap();
        }
        let mut answered = 0;
        while answered < 3 {
            if let Some(Ok(Message::Text(t))) = self.socket.next().await {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["id"].as_u64().is_some_and(|id| id >= first) {
                    answered += 1;
                }
            }
        }
    }

    pub async fn close(mut self) {
        let msg = json!({"id": 0, "method": "Browser.close", "params": {}});
        let _ = self.socket.send(Message::text(msg.to_string())).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
