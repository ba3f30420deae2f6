//! Hostile input at every door (issue 35 §5): what hostile input found, each pinned by a
//! regression test.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use moonpilot::mcp::McpOptions;
use moonpilot::server::{serve, ServeOptions};
use moonpilot::splash::SplashOptions;
use serde_json::{json, Value};

use super::support::harness::{harness, lua};
use super::support::http::{mcp_post, request, Reply};

/// `core.exec` took the method as a Rust `String`: a name that is not UTF-8 raised mlua's
/// conversion error (a plain string) instead of answering. It names no command.
#[test]
fn regression_a_method_name_that_is_not_utf8_is_an_unknown_method() {
    lua(r#"
eq(browser.call("\xff\xfe", {}).code, "UNKNOWN_METHOD", "browser.call")
eq(page:call("get_\xfftitle", {}).code, "UNKNOWN_METHOD", "task:call")
eq(page["\xff"](page, {}).code, "UNKNOWN_METHOD", "an unknown task method")
"#);
}

/// `browser.start` read its options with `pairs`, which runs `__pairs`: one that errors raised
/// its string, one that never ends hung the script. Every other params table is read raw.
#[test]
fn regression_browser_start_reads_its_options_raw() {
    lua(r#"
local trap = setmetatable({}, { __pairs = function() error("pairs trap") end })
browser.start(trap):close()
local forever = setmetatable({}, { __pairs = function(t) return function() return "k", 1 end, t, nil end })
browser.start(forever):close()
"#);
}

/// `browser.methods` converted its filter to a Rust `String`: a table or invalid UTF-8 raised
/// mlua's conversion error. A filter that is not a string is a bad argument; bytes that are not
/// UTF-8 match nothing.
#[test]
fn regression_browser_methods_checks_its_filter() {
    lua(r#"
local ok, e = pcall(browser.methods, {})
eq(ok, false, "a table filter")
eq(e.code, "INVALID_ARGUMENT", "raised as an error table")
has(e.msg, "browser.methods", "names the function")
eq(#browser.methods("\xff"), 0, "invalid UTF-8 matches nothing")
"#);
}

/// `browser.sleep(math.huge)` (and Splash's `splash:wait(1e308)`) did not sleep at all: a
/// duration `Duration` cannot hold was skipped instead of capped at a day.
#[test]
fn regression_a_sleep_longer_than_duration_holds_still_sleeps() {
    lua(r#"
local forever = browser.spawn(function() browser.sleep(math.huge) end)
local long = browser.spawn(function() browser.sleep(1e308) end)
browser.sleep(300)
eq(forever:done(), false, "math.huge still sleeping")
eq(long:done(), false, "1e308 still sleeping")
forever:cancel()
long:cancel()
"#);
}

/// An MCP server on the shared engine.
fn shared_mcp() -> SocketAddr {
    static ADDR: std::sync::OnceLock<SocketAddr> = std::sync::OnceLock::new();
    *ADDR.get_or_init(|| {
        let h = harness();
        let executor = h.executor.clone();
        let opts = ServeOptions {
            port: 0,
            mcp: Some(McpOptions::default()),
            ..ServeOptions::default()
        };
        h.runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(serve(executor, listener, opts, std::future::pending()));
            addr
        })
    })
}

/// rmcp refused bodies that are no JSON or no JSON-RPC message, a wrong `Accept` and an unknown
/// session in plain text; they are JSON-RPC errors without an id now, with rmcp's status.
#[test]
fn regression_mcp_refusals_are_json_rpc_errors() {
    let addr = shared_mcp();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let refusal = |r: Reply| -> (u16, i64, String) {
        let v = r.json();
        assert_eq!(r.header("content-type"), Some("application/json"), "{v}");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        let msg = v["error"]["message"].as_str().unwrap().to_string();
        (r.status, v["error"]["code"].as_i64().unwrap(), msg)
    };
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, b"{\"jsonrpc\":"));
    assert_eq!((status, code), (415, -32700), "{msg}");
    assert!(msg.contains("EOF while parsing"), "{msg}");
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, b"[1, 2]"));
    assert_eq!((status, code), (415, -32600), "{msg}");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let no_sse = [headers[0], ("Accept", "application/json")];
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &no_sse, ping.as_bytes()));
    assert_eq!((status, code), (406, -32000), "{msg}");
    assert!(msg.starts_with("Not Acceptable"), "{msg}");
    let gone = [
        headers[0],
        headers[1],
        ("Mcp-Session-Id", "no-such-session"),
    ];
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &gone, ping.as_bytes()));
    assert_eq!((status, code), (404, -32001), "{msg}");
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, ping.as_bytes()));
    assert_eq!((status, code), (400, -32000), "no session: {msg}");
    // What the SDK answers as JSON-RPC already is left alone: an initialize opens a session.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = mcp_post(addr, None, None, &init);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let session = r.header("mcp-session-id").expect("a session").to_string();
    let closed = request(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &session)], b"");
    assert!(matches!(closed.status, 200 | 204), "{}", closed.status);
}

/// A Splash script that returned a table containing itself was copied by `plain` (splash.lua)
/// until the Lua stack overflowed: seconds of work and "stack overflow" for a message.
#[test]
fn regression_a_splash_result_that_contains_itself_is_refused_at_once() {
    static ADDR: std::sync::OnceLock<SocketAddr> = std::sync::OnceLock::new();
    let addr = *ADDR.get_or_init(|| {
        let h = harness();
        let executor = h.executor.clone();
        h.runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let opts = SplashOptions {
                port: 0,
                max_timeout: 20.0,
                ..SplashOptions::default()
            };
            tokio::spawn(moonpilot::splash::http::serve(
                executor,
                listener,
                opts,
                std::future::pending(),
            ));
            addr
        })
    });
    for script in [
        "function main(splash) local t = {} t.t = t return t end",
        "function main(splash) local t = {} t[1] = t return {list = t} end",
        "function main(splash) local d = {} local c = d for i = 1, 100000 do c[1] = {} c = c[1] end return d end",
    ] {
        let body = json!({"lua_source": script, "timeout": 10}).to_string();
        let t0 = Instant::now();
        let r = request(
            addr,
            "POST",
            "/execute",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        let took = t0.elapsed();
        let v = r.json();
        assert_eq!(r.status, 400, "{script}: {v}");
        assert_eq!(v["type"], "ScriptError", "{v}");
        let error = v["info"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("nested too deeply"), "{script}: {v}");
        assert!(!error.contains("stack overflow"), "{script}: {v}");
        // A task's start and close included.
        assert!(took < Duration::from_secs(5), "{script}: {took:?}");
    }
}
