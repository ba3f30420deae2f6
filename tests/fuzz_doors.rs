//! Hostile input at every door (issue 35 §5): what hostile input found, each pinned by a
//! regression test.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use moonpilot::splash::SplashOptions;
use serde_json::json;

use super::support::harness::{harness, lua};
use super::support::http::request;

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
