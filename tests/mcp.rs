//! MCP: `moonpilot mcp` over stdio (the binary, its own browser) and `/mcp` of `serve` over
//! Streamable HTTP (in-process, on the shared engine), spoken by a small JSON-RPC client here
//! (the Python SDK's client runs in `tools/test-clients`). The tool list, a checkout flow on a
//! fixture page, a failing command, an unknown tool, bad arguments, an image, `run_lua`,
//! resources, progress and cancellation, elicitation for human input, two sessions side by
//! side, the token and a session's task closed with the session.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::mcp::McpOptions;
use moonpilot::server::{serve, ServeOptions};
use serde_json::{json, Value};

use super::support::harness::{harness, url_a};
use super::support::http::{mcp_messages, mcp_post, request, Reply};
use super::support::load::pause;

/// `@playwright/mcp` 0.0.86's own `tools/list` result, in characters of compact JSON (as
/// benches/mcp.rs measures it): the default list must not cost the model more.
const PLAYWRIGHT_MCP_TOOLS_CHARS: usize = 21_209;

const TOKEN: &str = "mcp-t0ken";

/// A JSON-RPC client over a child's stdin/stdout (one JSON message per line).
pub(crate) struct StdioClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next: u64,
    /// Server-to-client messages that were not the awaited answer (notifications, requests).
    seen: Vec<Value>,
    /// The workspace roots it answers `roots/list` with (as `file://` URIs), if it offers any.
    pub(crate) roots: Option<Vec<String>>,
    /// The server's state directory.
    pub(crate) state: std::path::PathBuf,
}

impl StdioClient {
    pub(crate) fn start(extra: &[&str]) -> StdioClient {
        StdioClient::start_in(extra, None, &[])
    }

    /// `moonpilot mcp` with `extra` args, run in `cwd` (when given) with `env` added.
    pub(crate) fn start_in(
        extra: &[&str],
        cwd: Option<&std::path::Path>,
        env: &[(&str, &str)],
    ) -> StdioClient {
        let state = std::env::temp_dir().join(format!(
            "moonpilot-mcp-state-{}-{}",
            std::process::id(),
            TaskId::generate()
        ));
        let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
        if let Some(dir) = cwd {
            command.current_dir(dir);
        }
        command.envs(env.iter().copied());
        let mut child = command
            .arg("mcp")
            .arg("--state-dir")
            .arg(&state)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("moonpilot mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        StdioClient {
            child,
            stdin,
            lines: rx,
            next: 1,
            seen: Vec::new(),
            roots: None,
            state,
        }
    }

    pub(crate) fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request; answers its response (`result` or `error`), keeping what came before.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id, Duration::from_secs(90))
    }

    fn answer(&mut self, id: u64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return msg;
            }
            if msg["method"] == "roots/list" {
                if let Some(roots) = self.roots.clone() {
                    let roots: Vec<Value> = roots.iter().map(|u| json!({"uri": u})).collect();
                    let answer =
                        json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": roots}});
                    self.send(&answer);
                    continue;
                }
            }
            self.seen.push(msg);
        }
    }

    /// The next request the server sends with `method` (30 s at most), skipping notifications.
    fn next_request(&mut self, method: &str) -> Value {
        loop {
            let msg = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no {method} request"));
            if msg["method"] == method {
                return msg;
            }
        }
    }

    pub(crate) fn initialize(&mut self, capabilities: Value) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "moonpilot-test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: a JSON-RPC error: {r}"))
    }

    /// Closes stdin and waits for the process to end.
    pub(crate) fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("moonpilot mcp did not exit after stdin closed");
            }
            pause(Duration::from_millis(50));
        }
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result's first content block.
pub(crate) fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text block first: {result}"))
        .to_string()
}

/// The index of the observation line that contains `needle`.
fn index_of(observation: &str, needle: &str) -> u64 {
    observation
        .lines()
        .find(|l| l.contains(needle))
        .and_then(|l| l.trim_start().strip_prefix('['))
        .and_then(|l| l.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no indexed line with {needle} in:\n{observation}"))
}

#[test]
fn mcp_over_stdio_lists_tools_runs_a_checkout_and_answers_failures_as_tool_errors() {
    harness();
    let mut c = StdioClient::start(&[]);
    let init = c.initialize(json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "moonpilot");

    // The tool list: the default set, run_lua, no engine-wide command, within the peer's size.
    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for want in [
        "navigate",
        "get_browser_state",
        "click_element_by_index",
        "input_text",
        "screenshot",
        "commands",
        "run_lua",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for engine_wide in ["shutdown", "start", "list_tasks", "cleanup"] {
        assert!(
            !names.contains(&engine_wide),
            "{engine_wide} is a tool by default"
        );
    }
    let chars = list["result"].to_string().chars().count();
    assert!(
        chars <= PLAYWRIGHT_MCP_TOOLS_CHARS,
        "tools/list is {chars} characters"
    );
    let click = tools
        .iter()
        .find(|t| t["name"] == "click_element_by_index")
        .unwrap();
    assert_eq!(click["inputSchema"]["required"], json!(["index"]));
    assert_eq!(
        click["inputSchema"]["properties"]["index"]["type"],
        "integer"
    );
    assert_eq!(click["annotations"]["readOnlyHint"], false);
    let state = tools
        .iter()
        .find(|t| t["name"] == "get_browser_state")
        .unwrap();
    assert_eq!(state["annotations"]["readOnlyHint"], true);
    assert_eq!(state["annotations"]["idempotentHint"], true);

    // Checkout: open (the result carries the observation), fill and submit in one batch.
    let opened = c.call("navigate", json!({"url": url_a("checkout.html")}));
    assert_eq!(opened["isError"], false, "{opened}");
    let obs = text(&opened);
    assert!(
        obs.contains("Page after:") && obs.contains("Title: Checkout"),
        "{obs}"
    );
    // Said once: not again on the action's line, nor in a block for the one tab.
    assert_eq!(
        obs.matches(&url_a("checkout.html")).count(),
        1,
        "the URL once: {obs}"
    );
    let steps = json!([
        {"input_text": {"index": index_of(&obs, "label='Email'"), "text": "ann@example.com"}},
        {"input_text": {"index": index_of(&obs, "label='Full name'"), "text": "Ann Lee"}},
        {"select_dropdown_option": {"index": index_of(&obs, "label='Shipping'"), "text": "Express"}},
        {"click_element_by_index": {"index": index_of(&obs, "Place order")}},
    ]);
    let done = c.call("commands", json!({"commands": steps}));
    let t = text(&done);
    assert_eq!(done["isError"], false, "{t}");
    assert!(
        t.contains("Order placed #1042"),
        "the page after the batch shows the order: {t}"
    );
    assert!(
        t.contains("value='ann@example.com'") && t.contains("value='Express'"),
        "{t}"
    );
    assert_eq!(done["structuredContent"]["data"]["succeeded"], 4, "{done}");
    let task = done["structuredContent"]["task"]
        .as_str()
        .expect("the session's task")
        .to_string();

    // A failing command is a tool error with code, retryable and started.
    let failed = c.call("click_element_by_index", json!({"index": 999}));
    assert_eq!(failed["isError"], true);
    let ft = text(&failed);
    assert!(ft.starts_with("click_element_by_index failed: "), "{ft}");
    assert!(ft.contains("did not start"), "{ft}");
    assert_eq!(failed["structuredContent"]["ok"], false);
    assert!(failed["structuredContent"]["code"].is_string(), "{failed}");
    assert!(failed["structuredContent"]["retryable"].is_boolean());
    assert_eq!(failed["structuredContent"]["started"], false);

    // Arguments that do not fit: a tool error naming the parameter.
    let typo = c.call("click_element_by_index", json!({"indx": 1}));
    assert_eq!(typo["isError"], true);
    assert!(text(&typo).contains("`indx`"), "{typo}");
    let wrong = c.call("click_element_by_index", json!({"index": "first"}));
    assert_eq!(wrong["isError"], true);
    let wt = text(&wrong);
    assert!(wt.contains("`index`") && wt.contains("integer"), "{wt}");

    // A script's value in the action's line.
    let js = c.call("execute_js", json!({"body": "({n: 6 * 7})"}));
    assert!(text(&js).contains("result={\"n\":42}"), "{js}");

    // Nothing reaches past the session: engine-wide commands are refused in a batch (before it
    // runs) and in a script, and `async` batches (polled engine-wide) too.
    let batch = c.call(
        "commands",
        json!({"commands": [{"get_tabs": {}}, {"shutdown": {}}]}),
    );
    assert_eq!(batch["isError"], true);
    let bt = text(&batch);
    assert!(
        bt.contains("step 1") && bt.contains("--tools engine"),
        "{bt}"
    );
    let job = c.call(
        "commands",
        json!({"commands": [{"get_tabs": {}}], "async": true}),
    );
    assert_eq!(job["isError"], true);
    assert!(text(&job).contains("`async`"), "{job}");
    let reach = c.call(
        "run_lua",
        json!({"script": "local l = browser.call('list_tasks')\n\
                          local ok, e = pcall(browser.start, {})\n\
                          return {list = l.ok, listCode = l.code, started = ok, why = tostring(e)}"}),
    );
    let v = &reach["structuredContent"]["value"];
    assert_eq!(v["list"], false, "{reach}");
    assert_eq!(v["listCode"], "INVALID_ARGUMENT", "{reach}");
    assert_eq!(
        v["started"], false,
        "a script opens no task of its own: {reach}"
    );
    assert!(
        v["why"].as_str().unwrap_or("").contains("--tools engine"),
        "{reach}"
    );
    let missing = c.call("run_lua", json!({}));
    assert_eq!(missing["isError"], true);
    assert!(text(&missing).contains("`script`"), "{missing}");

    // An unknown tool (and a command outside the list) is the JSON-RPC error -32602.
    for unknown in ["no_such_tool", "shutdown"] {
        let r = c.request("tools/call", json!({"name": unknown, "arguments": {}}));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains(unknown),
            "{r}"
        );
    }
    // The message helps: a command left out of the list says how to reach it, a near miss gets
    // the nearest listed names.
    let r = c.request(
        "tools/call",
        json!({"name": "input_text_by_selector", "arguments": {}}),
    );
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("--tools all") && msg.contains("run_lua"),
        "{r}"
    );
    let r = c.request("tools/call", json!({"name": "navigat", "arguments": {}}));
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("mean `navigate`"), "{r}");

    // An image result: the PNG itself, with its MIME type.
    let shot = c.call("screenshot", json!({}));
    let image = shot["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("an image block: {shot}"));
    assert_eq!(image["mimeType"], "image/png");
    let png = moonpilot::encoding::decode_base64(image["data"].as_str().unwrap()).expect("base64");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        !text(&shot).contains(image["data"].as_str().unwrap()),
        "no base64 in the text"
    );

    // run_lua: a plan in one call, with its value, output and log; an error with its line.
    let ran = c.call(
        "run_lua",
        json!({"script": "local s = page:get_browser_state():unwrap()\nprint('title', s.title)\n\
                          local v = page:execute_js{body = \"document.querySelector('#email').value\"}:unwrap()\n\
                          return {email = v.result, n = browser.args.n}",
               "args": {"n": 7}}),
    );
    let rt = text(&ran);
    assert_eq!(ran["isError"], false, "{rt}");
    assert_eq!(
        ran["structuredContent"]["value"],
        json!({"email": "ann@example.com", "n": 7}),
        "{ran}"
    );
    assert_eq!(
        ran["structuredContent"]["output"],
        json!(["title\tCheckout"])
    );
    assert_eq!(
        ran["structuredContent"]["log"].as_array().unwrap().len(),
        2,
        "{ran}"
    );
    assert!(rt.contains("get_browser_state ok"), "{rt}");
    let broke = c.call(
        "run_lua",
        json!({"script": "local x = 1\npage:click_element_by_index{index = 999}:unwrap()\nreturn x"}),
    );
    assert_eq!(broke["isError"], true);
    let bt = text(&broke);
    assert!(bt.contains("run_lua:2:"), "the failing line: {bt}");
    assert_eq!(
        broke["structuredContent"]["failedReceipt"]["method"], "click_element_by_index",
        "{broke}"
    );

    // Evidence as resources, named by the results.
    let listed = c.request("resources/list", json!({}));
    let resources = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .clone();
    let png_uri = resources
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .find(|u| u.ends_with(".png"))
        .unwrap_or_else(|| panic!("a screenshot among {listed}"))
        .to_string();
    assert!(
        png_uri.starts_with(&format!("moonpilot://evidence/{task}/")),
        "{png_uri}"
    );
    let read = c.request("resources/read", json!({"uri": png_uri}));
    let blob = read["result"]["contents"][0]["blob"]
        .as_str()
        .expect("a blob");
    assert_eq!(
        &moonpilot::encoding::decode_base64(blob).unwrap()[..4],
        b"\x89PNG"
    );
    let outside = c.request(
        "resources/read",
        json!({"uri": format!("moonpilot://evidence/{task}/../x")}),
    );
    assert!(outside.get("error").is_some(), "{outside}");
    let links = opened["content"].as_array().unwrap();
    assert!(
        links.iter().any(|b| b["type"] == "resource_link"
            && b["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("moonpilot://evidence/"))),
        "an action's evidence is a resource link: {opened}"
    );

    let status = c.finish();
    assert!(status.success(), "exit status {status}");
}

#[test]
fn mcp_progress_cancellation_and_elicitation_over_stdio() {
    harness();
    let mut c = StdioClient::start(&["--no-observe"]);
    c.initialize(json!({"elicitation": {"form": {}}}));
    let opened = c.call("navigate", json!({"url": url_a("basic.html")}));
    assert!(
        !text(&opened).contains("Page after:"),
        "--no-observe: {opened}"
    );

    // A long wait reports progress and stops when the client cancels it.
    let id = 900;
    c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait_for_text", "arguments": {"text": "never shown", "timeoutSeconds": 60},
                   "_meta": {"progressToken": "p1"}}}));
    let t0 = Instant::now();
    let mut progress = 0;
    while progress < 2 {
        let msg = c
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("progress arrives");
        if msg["method"] == "notifications/progress" {
            assert_eq!(msg["params"]["progressToken"], "p1");
            progress += 1;
        }
    }
    c.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "the test is done waiting"}}),
    );
    // The lane is free at once: the next command answers long before the wait's 60 s.
    let next = c.call("get_tabs", json!({}));
    assert_eq!(next["isError"], false, "{next}");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());

    // Human input through the client's form: the result already holds the answer.
    let hid = 901;
    c.send(&json!({"jsonrpc": "2.0", "id": hid, "method": "tools/call",
        "params": {"name": "request_human_input", "arguments": {"prompt": "Type the code from the SMS"}}}));
    let ask = c.next_request("elicitation/create");
    assert_eq!(
        ask["params"]["message"], "Type the code from the SMS",
        "{ask}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["answer"]["type"],
        "string"
    );
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "424242"}}}));
    let answered = c.answer(hid, Duration::from_secs(30));
    let r = &answered["result"];
    assert_eq!(r["isError"], false, "{answered}");
    assert_eq!(
        r["structuredContent"]["data"]["status"], "answered",
        "{answered}"
    );
    assert_eq!(r["structuredContent"]["data"]["answer"], "424242");
    assert_eq!(
        r["structuredContent"]["data"]["elicitation"]["action"],
        "accepted"
    );
    assert!(
        text(r).contains("answer=\"424242\""),
        "the model reads the answer: {answered}"
    );

    // Declined: the request stays pending and the text says so.
    let did = 902;
    c.send(&json!({"jsonrpc": "2.0", "id": did, "method": "tools/call",
        "params": {"name": "request_human_input", "arguments": {"prompt": "Approve the payment"}}}));
    let ask = c.next_request("elicitation/create");
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}));
    let declined = c.answer(did, Duration::from_secs(30));
    let dt = text(&declined["result"]);
    assert!(
        dt.contains("declined") && dt.contains("requestId="),
        "{declined}"
    );
    assert_eq!(
        declined["result"]["structuredContent"]["data"]["elicitation"]["action"], "declined",
        "{declined}"
    );

    assert!(c.finish().success());
}

/// A serve with MCP on the shared engine: open, and guarded by a token.
fn mcp_server(token: Option<&str>) -> SocketAddr {
    let h = harness();
    let executor = h.executor.clone();
    let opts = ServeOptions {
        port: 0,
        token: token.map(str::to_string),
        mcp: Some(McpOptions::default()),
        ..ServeOptions::default()
    };
    h.runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(executor, listener, opts, std::future::pending()));
        addr
    })
}

pub(crate) fn open_server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| mcp_server(None))
}

/// One MCP session over Streamable HTTP.
pub(crate) struct HttpSession {
    addr: SocketAddr,
    id: String,
    token: Option<&'static str>,
    next: u64,
}

/// POSTs one message to `/mcp`; answers the reply and the JSON-RPC messages of its body
/// (JSON or an event stream).
fn post(
    addr: SocketAddr,
    session: Option<&str>,
    token: Option<&str>,
    body: &Value,
) -> (Reply, Vec<Value>) {
    let reply = mcp_post(addr, session, token, body);
    let msgs = mcp_messages(&reply);
    (reply, msgs)
}

impl HttpSession {
    pub(crate) fn open(addr: SocketAddr, token: Option<&'static str>) -> HttpSession {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "moonpilot-test", "version": "1"}}});
        let (reply, msgs) = post(addr, None, token, &init);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(
            msgs[0]["result"]["serverInfo"]["name"], "moonpilot",
            "{msgs:?}"
        );
        let id = reply
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let (r, _) = post(
            addr,
            Some(&id),
            token,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert!(r.status == 202 || r.status == 200, "{}", r.status);
        HttpSession {
            addr,
            id,
            token,
            next: 2,
        }
    }

    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
        let (reply, msgs) = post(self.addr, Some(&self.id), self.token, &msg);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        msgs.into_iter()
            .find(|m| m["id"] == json!(id))
            .and_then(|m| m.get("result").cloned())
            .unwrap_or_else(|| {
                panic!(
                    "{tool}: no result in {}",
                    String::from_utf8_lossy(&reply.body)
                )
            })
    }

    pub(crate) fn close(self) -> u16 {
        let mut headers = vec![("Mcp-Session-Id", self.id.as_str())];
        let auth = self.token.map(|t| format!("Bearer {t}"));
        if let Some(a) = auth.as_deref() {
            headers.push(("Authorization", a));
        }
        request(self.addr, "DELETE", "/mcp", &headers, b"").status
    }
}

#[test]
fn mcp_over_http_gives_each_session_its_own_task_and_closes_it_with_the_session() {
    let addr = open_server();
    let mut a = HttpSession::open(addr, None);
    let mut b = HttpSession::open(addr, None);
    let ra = a.call("navigate", json!({"url": url_a("basic.html")}));
    let rb = b.call("navigate", json!({"url": url_a("checkout.html")}));
    assert_eq!(ra["isError"], false, "{ra}");
    assert_eq!(rb["isError"], false, "{rb}");
    let (ta, tb) = (
        ra["structuredContent"]["task"]
            .as_str()
            .unwrap()
            .to_string(),
        rb["structuredContent"]["task"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    assert_ne!(ta, tb, "two sessions, two tasks");
    // Neither sees the other's tab.
    let tabs_a = a.call("get_tabs", json!({}));
    let tabs_b = b.call("get_tabs", json!({}));
    let urls = |r: &Value| -> Vec<String> {
        r["structuredContent"]["data"]["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["url"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(urls(&tabs_a).len(), 1, "{tabs_a}");
    assert!(urls(&tabs_a)[0].ends_with("/basic.html"), "{tabs_a}");
    assert_eq!(urls(&tabs_b).len(), 1, "{tabs_b}");
    assert!(urls(&tabs_b)[0].ends_with("/checkout.html"), "{tabs_b}");
    // Nor can a script of B reach A's task.
    let reach = b.call(
        "run_lua",
        json!({"script": format!("local t = browser.task({ta})\nreturn t and t:get_tabs().msg")}),
    );
    let msg = reach["structuredContent"]["value"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(msg.contains("not this MCP session's"), "{reach}");
    let state_b = b.call("get_browser_state", json!({}));
    assert!(text(&state_b).contains("Title: Checkout"), "{state_b}");

    // Closing session A closes its task; B's lives on.
    let engine = harness().executor.engine().clone();
    let id_a = TaskId(ta.parse().unwrap());
    let id_b = TaskId(tb.parse().unwrap());
    assert!(engine.task(id_a).is_some());
    let status = a.close();
    assert!(
        status == 200 || status == 202 || status == 204,
        "DELETE answered {status}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while engine.task(id_a).is_some() {
        assert!(
            Instant::now() < deadline,
            "task {id_a} outlived its session"
        );
        pause(Duration::from_millis(100));
    }
    assert!(
        engine.task(id_b).is_some(),
        "the other session's task is untouched"
    );
    let still = b.call("get_tabs", json!({}));
    assert_eq!(still["isError"], false, "{still}");
    b.close();
}

#[test]
fn mcp_over_http_is_guarded_by_the_token() {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    let addr = *ADDR.get_or_init(|| mcp_server(Some(TOKEN)));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (reply, _) = post(addr, None, None, &init);
    assert_eq!(
        reply.status,
        401,
        "no token: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let (reply, _) = post(addr, None, Some("wrong"), &init);
    assert_eq!(reply.status, 401);
    let mut s = HttpSession::open(addr, Some(TOKEN));
    let r = s.call("get_tabs", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    s.close();
}
