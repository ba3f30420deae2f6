//! Execution you can trust: the trace log (one redacted line per command), bounded execution,
//! and fuzzed calls that must answer typed failures without panics or hangs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::harness::{exec, new_task, test_config, url_a};

/// The lines of today's trace file of the shared harness that mention `task`.
fn trace_lines(task: &str, want: usize) -> Vec<Value> {
    let dir = test_config().trace_dir.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut lines = Vec::new();
        for day in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(day.path().join("calls.jsonl")).unwrap_or_default();
            for line in text.lines() {
                let v: Value = serde_json::from_str(line).expect("every trace line is JSON");
                if v["taskId"] == task {
                    lines.push(v);
                }
            }
        }
        if lines.len() >= want || Instant::now() > deadline {
            return lines;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    }
}

#[test]
fn every_command_is_traced_with_secrets_redacted() {
    let task = new_task();
    let nav = exec(Some(task), "navigate", json!({"url": url_a("form.html")}));
    assert!(nav.ok, "{:?}", nav.msg);
    let state = exec(Some(task), "get_browser_state", json!({}));
    let pw = state.data["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "pw")
        .map(|e| e["index"].clone())
        .expect("the password field is indexed");
    let typed = exec(
        Some(task),
        "input_text",
        json!({"index": pw, "text": "s3cr3t-typed"}),
    );
    assert!(typed.ok, "{:?}", typed.msg);
    assert_eq!(typed.data["password"], true);
    let headers = exec(
        Some(task),
        "get_title",
        json!({"headers": {"Authorization": "Bearer xyz-token"}, "note": "card 4111111111111111"}),
    );
    assert!(headers.ok);
    let failed = exec(Some(task), "click_element_by_index", json!({"index": 9999}));
    assert!(!failed.ok);
    let lines = trace_lines(&task.to_string(), 5);
    let methods: Vec<&str> = lines.iter().filter_map(|l| l["method"].as_str()).collect();
    for m in [
        "navigate",
        "get_browser_state",
        "input_text",
        "get_title",
        "click_element_by_index",
    ] {
        assert!(methods.contains(&m), "{m} traced: {methods:?}");
    }
    let text = serde_json::to_string(&lines).unwrap();
    for secret in ["s3cr3t-typed", "xyz-token", "4111111111111111"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the trace: {text}"
        );
    }
    let click = lines
        .iter()
        .find(|l| l["method"] == "click_element_by_index")
        .unwrap();
    assert_eq!(click["ok"], false);
    assert_eq!(click["code"], "STALE_ELEMENT");
    assert!(click["durationMs"].as_f64().is_some() && click["seq"].as_u64().is_some());
    let nav = lines.iter().find(|l| l["method"] == "navigate").unwrap();
    assert_eq!(nav["request"]["url"], url_a("form.html"));
    assert_eq!(nav["result"]["status"], 200);
}

#[test]
fn failures_carry_the_page_they_happened_on() {
    let task = new_task();
    assert!(exec(Some(task), "navigate", json!({"url": url_a("basic.html")})).ok);
    let r = exec(Some(task), "click_element_by_index", json!({"index": 9999}));
    assert_eq!(r.code, Some(moonpilot::ErrorCode::StaleElement));
    assert_eq!(r.data["urlAfter"], url_a("basic.html"));
    assert_eq!(r.data["titleAfter"], "Basic");
    // Not for arguments that never ran.
    let r = exec(Some(task), "click_element_by_index", json!({"index": "x"}));
    assert_eq!(r.code, Some(moonpilot::ErrorCode::InvalidArgument));
    assert!(r.data.get("urlAfter").is_none());
    // Every receipt carries the retry budget.
    let ok = exec(Some(task), "get_title", json!({}));
    assert_eq!(ok.data["retryBudget"]["attempts"], 1);
}

#[test]
fn reads_during_navigations_are_resent_and_succeed() {
    let task = new_task();
    assert!(exec(Some(task), "navigate", json!({"url": url_a("bounce.html")})).ok);
    // The page reloads itself a dozen times over ~0.6 s: every read must still answer.
    let started = Instant::now();
    let mut reads = 0;
    while started.elapsed() < Duration::from_millis(900) {
        for method in ["get_title", "get_browser_state", "list_frames"] {
            let r = exec(Some(task), method, json!({}));
            assert!(r.ok, "{method} during navigations: {:?} {}", r.code, r.data);
            reads += 1;
        }
    }
    assert!(reads >= 3, "{reads} reads");
    let state = exec(Some(task), "get_browser_state", json!({}));
    assert!(
        state.data["text"].as_str().unwrap().contains("bounce 12"),
        "{}",
        state.data["text"]
    );
}
