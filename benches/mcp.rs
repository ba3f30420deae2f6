//! MCP side by side with `@playwright/mcp` (`cargo bench --bench mcp`; its peer is installed by
//! `npm install` in benches/node and drives the same Chromium binary):
//!
//! 1. the tool list a client loads (characters of the `tools/list` result, which the model reads
//!    on every turn): moonpilot's default list against the peer's;
//! 2. a checkout flow on `checkout.html` (open, read, fill three fields, submit, verify the
//!    result text) as an agent runs it: tool calls, and characters of the tool results' text
//!    (what the model reads; with moonpilot's `structuredContent` too, for clients that pass it
//!    on), for moonpilot's tools (one `commands` batch, and one call per step as an agent that
//!    does not batch runs it), for one `run_lua` call, and for the peer;
//! 3. the overhead of a tool call over Streamable HTTP (`/mcp`) against the same command over the
//!    seed protocol (`POST /playwright/command`), on one in-process server, alternating
//!    (`BENCH_MCP_RUNS`, default 200).
//!
//! Prints the figures and the ratios against the targets of issue 23.

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

use std::process::Stdio;
use std::time::Instant;

use figures::{env_or, line, stats};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// An MCP server over a child's stdio.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Calls made and characters of their results' text (and of the whole results).
    calls: usize,
    text_chars: usize,
    result_chars: usize,
}

impl Client {
    async fn start(mut cmd: Command) -> Client {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
            next: 1,
            calls: 0,
            text_chars: 0,
            result_chars: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "moonpilot-bench", "version": "1"}}),
        )
        .await;
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        c
    }

    async fn send(&mut self, msg: Value) {
        self.stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let mut text = String::new();
            self.stdout.read_line(&mut text).await.unwrap();
            let msg: Value = serde_json::from_str(&text).unwrap();
            if msg["id"] == json!(id) && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    async fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        let result = r
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: {r}"));
        self.calls += 1;
        self.text_chars += result_text(&result).chars().count();
        self.result_chars += result.to_string().chars().count();
        result
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(20), self.child.wait()).await;
    }
}

/// The text blocks of a tool result, joined.
fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The bracketed index or ref on the first line of `text` containing `needle`.
fn mark_of(text: &str, needle: &str, open: &str, close: char) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in:\n{text}"));
    let start = line.find(open).unwrap() + open.len();
    line[start..].split(close).next().unwrap().to_string()
}

fn moonpilot_mcp(state: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    cmd.arg("mcp").arg("--state-dir").arg(state);
    cmd
}

fn playwright_mcp() -> Option<Command> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node");
    let cli = dir.join("node_modules/@playwright/mcp/cli.js");
    if !cli.is_file() {
        println!("@playwright/mcp: skipped: run `npm install` in benches/node");
        return None;
    }
    let chromium = moonpilot::browser::find_chromium(None).ok()?;
    let out = std::env::temp_dir().join(format!("moonpilot-bench-pwmcp-{}", std::process::id()));
    let mut cmd = Command::new("node");
    cmd.arg(cli)
        .args([
            "--headless",
            "--isolated",
            "--no-sandbox",
            "--executable-path",
        ])
        .arg(chromium)
        .arg("--output-dir")
        .arg(out);
    Some(cmd)
}

async fn tools_list_chars(c: &mut Client) -> (usize, usize) {
    let r = c.request("tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap().len();
    (r["result"].to_string().chars().count(), tools)
}

/// The flow through moonpilot's tools: navigate (the result carries the observation), then one
/// `commands` batch that fills, selects and submits (its result shows the page after).
async fn moonpilot_flow(c: &mut Client, url: &str) {
    let obs = result_text(&c.call("navigate", json!({"url": url})).await);
    let idx = |needle: &str| -> u64 { mark_of(&obs, needle, "[", ']').parse().unwrap() };
    let steps = json!([
        {"input_text": {"index": idx("label='Email'"), "text": "ann@example.com"}},
        {"input_text": {"index": idx("label='Full name'"), "text": "Ann Lee"}},
        {"select_dropdown_option": {"index": idx("label='Shipping'"), "text": "Express"}},
        {"click_element_by_index": {"index": idx("Place order")}},
    ]);
    let done = c.call("commands", json!({"commands": steps})).await;
    assert!(result_text(&done).contains("Order placed #1042"), "{done}");
}

/// The same flow with one tool call per step (each action's result shows the page after).
async fn moonpilot_steps(c: &mut Client, url: &str) {
    let obs = result_text(&c.call("navigate", json!({"url": url})).await);
    let idx = |needle: &str| -> u64 { mark_of(&obs, needle, "[", ']').parse().unwrap() };
    let (email, name, shipping, order) = (
        idx("label='Email'"),
        idx("label='Full name'"),
        idx("label='Shipping'"),
        idx("Place order"),
    );
    c.call(
        "input_text",
        json!({"index": email, "text": "ann@example.com"}),
    )
    .await;
    c.call("input_text", json!({"index": name, "text": "Ann Lee"}))
        .await;
    c.call(
        "select_dropdown_option",
        json!({"index": shipping, "text": "Express"}),
    )
    .await;
    let done = c
        .call("click_element_by_index", json!({"index": order}))
        .await;
    assert!(result_text(&done).contains("Order placed #1042"), "{done}");
}

const CHECKOUT_LUA: &str = r#"
page:navigate{ url = browser.args.url }:unwrap()
local s = page:get_browser_state():unwrap()
local function idx(needle)
  for line in s.text:gmatch("[^\n]+") do
    if line:find(needle, 1, true) then return tonumber(line:match("%[(%d+)%]")) end
  end
  error("no line with " .. needle)
end
page:input_text{ index = idx("label='Email'"), text = "ann@example.com" }:unwrap()
page:input_text{ index = idx("label='Full name'"), text = "Ann Lee" }:unwrap()
page:select_dropdown_option{ index = idx("label='Shipping'"), text = "Express" }:unwrap()
page:click_element_by_index{ index = idx("Place order") }:unwrap()
return page:wait_for_text{ text = "Order placed" }:unwrap() and "Order placed"
"#;

/// The flow through the peer: navigate, snapshot (its actions write their snapshot to a file
/// unless asked), fill the form, click, and a snapshot to verify.
async fn playwright_flow(c: &mut Client, url: &str) {
    c.call("browser_navigate", json!({"url": url})).await;
    let snap = result_text(&c.call("browser_snapshot", json!({})).await);
    let r = |needle: &str| -> String { mark_of(&snap, needle, "[ref=", ']') };
    let fields = json!([
        {"name": "Email", "type": "textbox", "target": r("textbox \"Email\""), "value": "ann@example.com"},
        {"name": "Full name", "type": "textbox", "target": r("textbox \"Full name\""), "value": "Ann Lee"},
        {"name": "Shipping", "type": "combobox", "target": r("combobox \"Shipping\""), "value": "Express"},
    ]);
    let filled = c.call("browser_fill_form", json!({"fields": fields})).await;
    assert!(filled["isError"] != true, "{filled}");
    let clicked = c
        .call(
            "browser_click",
            json!({"element": "Place order button", "target": r("button \"Place order\"")}),
        )
        .await;
    assert!(clicked["isError"] != true, "{clicked}");
    let after = result_text(&c.call("browser_snapshot", json!({})).await);
    assert!(after.contains("Order placed #1042"), "{after}");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fixtures = server::Fixtures::start().await.unwrap();
        let url = format!("{}/checkout.html", fixtures.a);
        let state = std::env::temp_dir().join(format!("moonpilot-bench-mcp-{}", std::process::id()));

        println!("MCP against @playwright/mcp (one run)");
        let mut ours = Client::start(moonpilot_mcp(&state)).await;
        let (our_list, our_tools) = tools_list_chars(&mut ours).await;
        moonpilot_flow(&mut ours, &url).await;
        let (our_calls, our_text, our_all) = (ours.calls, ours.text_chars, ours.result_chars);
        ours.calls = 0;
        ours.text_chars = 0;
        ours.result_chars = 0;
        let lua = ours
            .call("run_lua", json!({"script": CHECKOUT_LUA, "args": {"url": url}}))
            .await;
        assert!(lua["isError"] == false, "{lua}");
        let (lua_calls, lua_text, lua_all) = (ours.calls, ours.text_chars, ours.result_chars);
        ours.close().await;
        let mut stepper = Client::start(moonpilot_mcp(&state)).await;
        moonpilot_steps(&mut stepper, &url).await;
        let (step_calls, step_text, step_all) =
            (stepper.calls, stepper.text_chars, stepper.result_chars);
        stepper.close().await;

        println!("tools/list: moonpilot {our_list} characters ({our_tools} tools)");
        println!(
            "checkout: moonpilot tools {our_calls} calls, {our_text} characters of text ({our_all} with structuredContent)"
        );
        println!(
            "checkout: moonpilot tools one call per step {step_calls} calls, {step_text} characters of text ({step_all} with structuredContent)"
        );
        println!("checkout: moonpilot run_lua {lua_calls} call, {lua_text} characters of text ({lua_all} with structuredContent)");
        if let Some(cmd) = playwright_mcp() {
            let mut peer = Client::start(cmd).await;
            let (pw_list, pw_tools) = tools_list_chars(&mut peer).await;
            playwright_flow(&mut peer, &url).await;
            let (pw_calls, pw_text, pw_all) = (peer.calls, peer.text_chars, peer.result_chars);
            peer.close().await;
            println!("tools/list: @playwright/mcp {pw_list} characters ({pw_tools} tools)");
            println!("checkout: @playwright/mcp {pw_calls} calls, {pw_text} characters of text ({pw_all} in all)");
            println!(
                "ratios: tools/list {:.2}x (target <= 1.00); calls {our_calls} vs {pw_calls} (target <=); \
                 result text {:.2}x (target <= 0.80), with structuredContent {:.2}x; \
                 one call per step {:.2}x; run_lua text {:.2}x",
                our_list as f64 / pw_list as f64,
                our_text as f64 / pw_text as f64,
                our_all as f64 / pw_all as f64,
                step_text as f64 / pw_text as f64,
                lua_text as f64 / pw_text as f64,
            );
        }

        // 3. A tool call over /mcp against the same command over the seed protocol.
        let engine = figures::engine("mcp-http");
        let executor = moonpilot::Executor::new(engine.clone(), moonpilot::lua::recipe_host());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = moonpilot::server::ServeOptions {
            port: 0,
            mcp: Some(moonpilot::mcp::McpOptions::default()),
            ..moonpilot::server::ServeOptions::default()
        };
        tokio::spawn(moonpilot::server::serve(executor, listener, opts, std::future::pending()));
        let runs = env_or("BENCH_MCP_RUNS", 200);
        let page = format!("{}/basic.html", fixtures.a);
        let (mcp_ms, seed_ms) = tokio::task::spawn_blocking(move || over_http(addr, &page, runs))
            .await
            .unwrap();
        let (m, s) = (stats(mcp_ms), stats(seed_ms));
        line("get_tabs over /mcp (tools/call)", "ms", m);
        line("get_tabs over the seed protocol", "ms", s);
        println!(
            "ratio MCP / seed: median {:.2}x (target <= 1.10), p90 {:.2}x",
            m.0 / s.0,
            m.1 / s.1
        );
        engine.shutdown().await;
    });
}

/// `runs` alternating get_tabs calls over MCP and over the seed protocol, each on a task that
/// shows `page`; answers the two series in ms.
fn over_http(addr: std::net::SocketAddr, page: &str, runs: usize) -> (Vec<f64>, Vec<f64>) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}});
    let reply = http::mcp_post(addr, None, None, &init);
    let session = reply.header("mcp-session-id").unwrap().to_string();
    http::mcp_post(
        addr,
        Some(&session),
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let call = |id: usize, tool: &str, args: Value| {
        let r = http::mcp_post(
            addr,
            Some(&session),
            None,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}}),
        );
        assert!(String::from_utf8_lossy(&r.body).contains("\"isError\":false"));
    };
    call(2, "navigate", json!({"url": page}));
    let start = http::command(addr, &json!({"method": "start", "params": {}}));
    let task = start.json()["data"]["id"].as_str().unwrap().to_string();
    http::command(
        addr,
        &json!({"id": task, "method": "navigate", "params": {"url": page}}),
    );
    let (mut mcp, mut seed) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let t0 = Instant::now();
        call(10 + i, "get_tabs", json!({}));
        mcp.push(t0.elapsed().as_secs_f64() * 1e3);
        let t0 = Instant::now();
        let r = http::command(
            addr,
            &json!({"id": task, "method": "get_tabs", "params": {}}),
        );
        assert!(
            r.json()["ok"] == true,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        seed.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    (mcp, seed)
}
