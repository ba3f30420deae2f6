//! Bad input gets a clear, typed failure and changes nothing: unknown methods, wrong params,
//! dead tasks, busy lanes.

use std::time::Duration;

use moonpilot::browser::task::TaskId;
use moonpilot::ErrorCode;
use serde_json::json;

use crate::support::harness::{exec, new_task, private, test_config, url_a};

#[test]
fn unknown_methods_get_near_names() {
    let r = exec(None, "get_titel", json!({}));
    assert_eq!(r.code, Some(ErrorCode::UnknownMethod));
    assert!(!r.started && !r.retryable);
    assert!(
        r.msg
            .as_deref()
            .unwrap()
            .contains("did you mean `get_title`"),
        "{:?}",
        r.msg
    );
    let r = exec(None, "click_by_index", json!({}));
    assert!(
        r.msg
            .as_deref()
            .unwrap()
            .contains("`click_element_by_index`"),
        "{:?}",
        r.msg
    );
}

#[test]
fn wrong_types_and_missing_params_are_invalid_argument() {
    let id = new_task();
    let cases = [
        ("navigate", json!({}), "url", "missing parameter `url`"),
        (
            "navigate",
            json!({"url": {"x": 1}}),
            "url",
            "expected string, got object",
        ),
        (
            "wait",
            json!({"seconds": "soon"}),
            "seconds",
            "expected integer, got string",
        ),
        (
            "wait",
            json!({"seconds": 1.5}),
            "seconds",
            "expected integer, got number",
        ),
        (
            "wait",
            json!({"seconds": 0}),
            "seconds",
            "param `seconds`: must be >= 1, got 0",
        ),
        (
            "request_human_input",
            json!({"prompt": "x", "index": -2}),
            "index",
            "param `index`: must be >= 0, got -2",
        ),
        (
            "get_browser_state",
            json!({"highlight": 3}),
            "highlight",
            "expected boolean, got number",
        ),
        (
            "click_element_by_index",
            json!({"index": -1}),
            "index",
            "must be >= 0",
        ),
        (
            "input_text",
            json!({"index": 0, "text": ""}),
            "text",
            "missing parameter `text`",
        ),
        ("execute_js", json!({}), "body", "missing parameter `body`"),
        (
            "execute_js",
            json!({"bodyFile": "../../etc/passwd"}),
            "bodyFile",
            "leaves the script directory",
        ),
    ];
    for (method, params, param, text) in cases {
        let r = exec(Some(id), method, params.clone());
        assert_eq!(
            r.code,
            Some(ErrorCode::InvalidArgument),
            "{method} {params}: {:?}",
            r.msg
        );
        assert!(!r.started, "{method}: started must be false");
        assert_eq!(r.data["param"], param, "{method}: names the param");
        assert_eq!(r.data["invalidArgument"], true);
        assert!(
            r.data.get("unknownParams").is_none(),
            "{method}: a refused param is not also reported as unknown: {}",
            r.data
        );
        let msg = r.msg.unwrap();
        assert!(msg.starts_with(&format!("{method}: ")), "{msg}");
        assert!(msg.contains(text), "{method}: {msg}");
    }
    exec(Some(id), "close", json!({}));
}

#[test]
fn params_must_be_an_object() {
    let id = new_task();
    let r = exec(Some(id), "get_url", json!([1, 2]));
    assert_eq!(r.code, Some(ErrorCode::InvalidArgument));
    assert!(r.msg.unwrap().contains("must be an object"));
    exec(Some(id), "close", json!({}));
}

#[test]
fn unknown_params_are_reported_not_fatal() {
    let id = new_task();
    let r = exec(
        Some(id),
        "navigate",
        json!({"url": url_a("basic.html"), "urll": 1, "retryOnSpurious": true}),
    );
    assert!(r.ok, "{:?}", r.msg);
    assert_eq!(r.data["unknownParams"], json!(["urll"]));
    let note = r.data["unknownParamNote"].as_str().unwrap();
    assert!(note.contains("did you mean `url`"), "{note}");
    assert!(
        note.contains("Parameters actually used this time: url"),
        "{note}"
    );
    exec(Some(id), "close", json!({}));
}

#[test]
fn dead_or_missing_tasks() {
    let r = exec(Some(TaskId(42)), "get_title", json!({}));
    assert_eq!(r.code, Some(ErrorCode::TaskNotFound));
    assert!(!r.started);
    assert!(r.msg.unwrap().contains("list_tasks"));
    let r = exec(None, "get_title", json!({}));
    assert_eq!(r.code, Some(ErrorCode::InvalidArgument));
    assert!(r.msg.unwrap().contains("missing parameter `id`"));
}

#[test]
fn a_busy_lane_answers_task_busy_without_running() {
    let mut config = test_config();
    config.lane_wait = Duration::from_millis(200);
    private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let slow = {
            let ex = ex.clone();
            tokio::task::spawn_local(async move {
                ex.execute(Some(id), "wait", json!({"seconds": 1})).await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let busy = ex.execute(Some(id), "get_title", json!({})).await;
        assert_eq!(busy.code, Some(ErrorCode::TaskBusy));
        assert!(!busy.started && busy.retryable);
        assert_eq!(busy.data["serialized"], true);
        assert!(slow.await.unwrap().ok, "the running command completes");
        // `close` does not queue behind a running command: it cancels it.
        let slow = {
            let ex = ex.clone();
            tokio::task::spawn_local(async move {
                ex.execute(Some(id), "wait", json!({"seconds": 30})).await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t0 = std::time::Instant::now();
        let closed = ex.execute(Some(id), "close", json!({})).await;
        assert!(closed.ok, "{:?}", closed.msg);
        let cancelled = slow.await.unwrap();
        assert_eq!(
            cancelled.code,
            Some(ErrorCode::TaskNotFound),
            "{:?} {}",
            cancelled.msg,
            cancelled.data
        );
        assert!(t0.elapsed() < Duration::from_secs(3));
        ex.execute(None, "shutdown", json!({})).await;
    });
}

#[test]
fn command_deadline_bounds_a_hanging_command() {
    let mut config = test_config();
    config.long_command_timeout = Duration::from_millis(300);
    private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let r = ex.execute(Some(id), "wait", json!({"seconds": 5})).await;
        assert_eq!(r.code, Some(ErrorCode::CommandTimeout));
        assert!(r.started && !r.retryable);
        assert_eq!(r.data["outcomeUnknown"], true);
        ex.execute(None, "shutdown", json!({})).await;
    });
}

/// Issue 10 #12: values that can never succeed are refused at once, naming the param and its
/// range (`wait{seconds=1e12}` slept 900 s then answered "outcome unknown"; a URL with port
/// 99999 timed out after 30 s), and the page is left as it was.
#[test]
fn issue10_values_that_can_never_succeed_are_invalid_argument() {
    let id = new_task();
    let here = url_a("basic.html");
    assert!(exec(Some(id), "navigate", json!({"url": here})).ok);
    let cases = [
        ("wait", json!({"seconds": 1e12}), "seconds", "range 1..=899"),
        ("wait", json!({"seconds": 900}), "seconds", "range 1..=899"),
        (
            "navigate",
            json!({"url": "http://127.0.0.1:99999/"}),
            "url",
            "within 1..=65535",
        ),
        (
            "go_to_url",
            json!({"url": "http://127.0.0.1:0/x"}),
            "url",
            "within 1..=65535",
        ),
        (
            "execute_js",
            json!({"body": "1", "timeoutMs": 1e9}),
            "timeoutMs",
            "range 0..=90000",
        ),
        (
            "click_element_by_index",
            json!({"index": 0, "timeoutMs": 1e9}),
            "timeoutMs",
            "<= 60000",
        ),
        (
            "get_browser_state",
            json!({"viewportExpansion": -7}),
            "viewportExpansion",
            "range -1..=10000000",
        ),
        (
            "get_human_input",
            json!({"requestId": "hr-1-1", "timeoutSeconds": 1e6}),
            "timeoutSeconds",
            "<= 899",
        ),
        (
            "request_human_input",
            json!({"prompt": "x", "expiresInSeconds": 1e12}),
            "expiresInSeconds",
            "<= 604800",
        ),
    ];
    for (method, params, param, range) in cases {
        let t0 = std::time::Instant::now();
        let r = exec(Some(id), method, params.clone());
        assert_eq!(
            r.code,
            Some(ErrorCode::InvalidArgument),
            "{method} {params}"
        );
        assert!(!r.started && !r.retryable, "{method} {params}: nothing ran");
        let msg = r.msg.clone().unwrap_or_default();
        assert!(
            msg.contains(&format!("param `{param}`")) && msg.contains(range),
            "{method} {params}: {msg}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "{method}: at once");
    }
    let url = exec(Some(id), "get_url", json!({}));
    assert_eq!(url.data["url"], here, "the page did not move");
    // The edges of the ranges are accepted.
    assert!(exec(Some(id), "wait", json!({"seconds": 1})).ok);
    let r = exec(Some(id), "navigate", json!({"url": url_a("second.html")}));
    assert!(r.ok, "{:?}", r.msg);
}

#[test]
fn errors_say_what_to_do_instead() {
    // Issue 36 §7: each message says what the caller meant or why no resend helps.
    crate::support::harness::lua(
        r##"
        -- A param sent under a near name: said, with the one meant.
        local r = page:navigate{ uri = A .. "/basic.html" }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false)
        has(r.msg, "missing parameter `url`"); has(r.msg, "`uri` is not a parameter of `navigate`: did you mean `url`?")
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        -- A URL without a scheme is refused at once, even right after a page-changing command
        -- whose screenshot is still being written.
        page:navigate{ url = A .. "/second.html" }:unwrap()
        local bare = page:navigate{ url = "example.com" }
        eq(bare.code, "INVALID_ARGUMENT"); eq(bare.started, false)
        assert(bare.elapsed_ms < 300, "refused before the lane and the evidence: " .. bare.elapsed_ms .. " ms")
        -- A port the browser refuses: no resend can help.
        local port = page:navigate{ url = "http://127.0.0.1:6000/" }
        eq(port.code, "NETWORK_ERROR"); eq(port.retryable, false)
        eq(port.data.netError, "ERR_UNSAFE_PORT"); has(port.data.hint, "unsafe ports")
        -- An index on a page with nothing indexed says so, not "legal range 0..0".
        page:navigate{ url = A .. "/empty.html" }:unwrap()
        eq(page:get_browser_state{}:unwrap().elementCount, 0)
        local none = page:click_element_by_index{ index = 0 }
        eq(none.code, "STALE_ELEMENT"); has(none.msg, "no indexed element"); hasnt(none.msg, "0..0")
    "##,
    );
}
