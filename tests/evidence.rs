//! Evidence off the critical path (PROTOCOL.md §8): receipts name their screenshot at once and
//! the file is written while the caller reads the receipt. What must hold: the file exists,
//! complete, before the task's next command starts, before `close` returns, and at the end of a
//! run; a capture that fails after its receipt is reported on the next one and counts for the
//! breaker.

use std::path::Path;
use std::time::UNIX_EPOCH;

use serde_json::json;

use moonpilot::browser::task::TaskId;
use moonpilot::Receipt;

use crate::support::harness::{exec, harness, new_task, test_config, url_a};

/// A complete PNG: signature first, `IEND` chunk (with its fixed CRC) last.
fn assert_png(path: &str) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(bytes.len() > 100, "{path}: only {} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{path}: PNG signature");
    assert_eq!(
        &bytes[bytes.len() - 8..],
        b"IEND\xae\x42\x60\x82",
        "{path}: the file ends with IEND (fully written)"
    );
}

/// Milliseconds since the epoch at which `path` was last written.
fn written_ms(path: &str) -> u128 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Reads the page and clicks its `#btn` by index (what an agent step does).
fn click_button(task: TaskId) -> Receipt {
    let state = exec(Some(task), "get_browser_state", json!({}));
    assert!(state.ok, "{:?}", state.msg);
    let index = state.data["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "btn")
        .map(|e| e["index"].clone())
        .unwrap();
    exec(
        Some(task),
        "click_element_by_index",
        json!({"index": index}),
    )
}

#[test]
fn a_click_screenshot_exists_before_the_next_command_starts() {
    let task = new_task();
    let nav = exec(Some(task), "navigate", json!({"url": url_a("basic.html")}));
    assert!(nav.ok, "{:?}", nav.msg);
    for round in 0..3 {
        let click = click_button(task);
        assert!(click.ok, "{:?}", click.msg);
        assert_eq!(click.data["changed"], true, "round {round}");
        let path = click.data["screenshot_path"].as_str().unwrap().to_string();
        let seq = click.data["seq"].as_u64().unwrap();
        assert_eq!(click.data["screenshot"], format!("/data/{task}/{seq}.png"));
        assert!(path.ends_with(&format!("{task}/{seq}.png")), "{path}");
        // The next command reads the page clock as its first act: the file was complete by then.
        let next = exec(
            Some(task),
            "execute_js",
            json!({"body": "return Date.now()"}),
        );
        assert!(next.ok, "{:?}", next.msg);
        let started = next.data["result"].as_f64().unwrap() as u128;
        assert_png(&path);
        assert!(
            written_ms(&path) <= started,
            "round {round}: {path} written at {} ms, the next command ran at {started} ms",
            written_ms(&path)
        );
        assert!(next.data.get("previous_capture_error").is_none());
    }
    exec(Some(task), "close", json!({}));
}

#[test]
fn browser_state_files_exist_before_the_next_command_starts() {
    let task = new_task();
    let nav = exec(Some(task), "navigate", json!({"url": url_a("basic.html")}));
    assert!(nav.ok, "{:?}", nav.msg);
    let state = exec(Some(task), "get_browser_state", json!({}));
    assert!(state.ok, "{:?}", state.msg);
    let png = state.data["screenshot_path"].as_str().unwrap().to_string();
    let txt = state.data["state_file"].as_str().unwrap().to_string();
    let next = exec(
        Some(task),
        "execute_js",
        json!({"body": "return Date.now()"}),
    );
    let started = next.data["result"].as_f64().unwrap() as u128;
    assert_png(&png);
    assert!(written_ms(&png) <= started && written_ms(&txt) <= started);
    let body = std::fs::read_to_string(&txt).unwrap();
    assert_eq!(
        body,
        format!(
            "{}\n\n{}",
            state.data["browser_state"].as_str().unwrap(),
            state.data["text"].as_str().unwrap()
        )
    );
    exec(Some(task), "close", json!({}));
}

#[test]
fn close_waits_for_the_last_screenshot() {
    let task = new_task();
    let nav = exec(Some(task), "navigate", json!({"url": url_a("basic.html")}));
    let click = click_button(task);
    assert!(nav.ok && click.ok, "{:?} {:?}", nav.msg, click.msg);
    let closed = exec(Some(task), "close", json!({}));
    assert!(closed.ok, "{:?}", closed.msg);
    assert_png(nav.data["screenshot_path"].as_str().unwrap());
    assert_png(click.data["screenshot_path"].as_str().unwrap());
}

#[test]
fn a_run_ends_with_every_named_screenshot_written() {
    // `moonpilot run` in a directory of its own (its data dir is `./data`): the script exits
    // right after the click; the engine's shutdown must write the file first.
    let dir = std::env::temp_dir().join(format!("moonpilot-evidence-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("click.lua");
    std::fs::write(
        &script,
        "local page = browser.start{}\n\
         page:navigate{ url = browser.args.url }:unwrap()\n\
         local s = page:get_browser_state{}:unwrap()\n\
         local c = page:click_element_by_index{ index = s.elements[2].index }:unwrap()\n\
         print(c.screenshot_path)\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .current_dir(&dir)
        .env("MOONPILOT_STATE_DIR", &dir)
        .arg("run")
        .arg(&script)
        .args(["--arg", &format!("url={}", url_a("basic.html"))])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = stdout.trim().to_string();
    assert!(
        Path::new(&path).starts_with(&dir),
        "{path} is under the run's data dir"
    );
    assert_png(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_capture_that_fails_late_is_reported_next_and_opens_the_breaker() {
    // A data dir that cannot be created (its parent is a file): every screenshot write fails
    // after its receipt is out.
    let root = std::env::temp_dir().join(format!("moonpilot-evidence-bad-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let blocker = root.join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let mut config = test_config();
    config.data_dir = blocker.join("data");
    config.trace_dir = None;
    let url = url_a("basic.html");
    let _ = harness();
    crate::support::harness::private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = moonpilot::browser::task::TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let mut receipts = Vec::new();
        for _ in 0..4 {
            let nav = ex.execute(Some(id), "navigate", json!({"url": url})).await;
            assert!(
                nav.ok,
                "a failed capture never fails the command: {:?}",
                nav.msg
            );
            receipts.push(nav);
        }
        // The first three name a file and fail after their receipt; each failure is reported
        // by the receipt that follows it.
        for k in 0..3 {
            assert!(
                receipts[k].data["seq"].is_u64(),
                "{k}: {}",
                receipts[k].data
            );
            let reported = &receipts[k + 1].data["previous_capture_error"];
            assert_eq!(reported["seq"], receipts[k].data["seq"], "{k}: {reported}");
            assert!(reported["screenshot_error"].is_string(), "{reported}");
        }
        // Three failures in a row open the breaker: the fourth does not try.
        assert_eq!(
            receipts[3].data["capture_degraded"], true,
            "{}",
            receipts[3].data
        );
        assert!(receipts[3].data.get("seq").is_none());
        ex.execute(None, "shutdown", json!({})).await;
    });
    let _ = std::fs::remove_dir_all(&root);
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// Issue 10 #4: secrets in URLs (query and fragment, a GET login form's password) and a card
/// number typed into a field reach neither the trace log nor the state files, nor the URLs a
/// receipt echoes; the page itself still has them.
#[test]
fn issue10_secrets_never_reach_disk_or_receipt_echoes() {
    let dir = std::env::temp_dir().join(format!("moonpilot-test-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = test_config();
    config.data_dir = dir.join("data");
    config.trace_dir = Some(dir.join("trace"));
    let start = format!(
        "{}?api_key=APIKEY123&x=1#access_token=FRAGTOK456",
        url_a("login_get.html")
    );
    crate::support::harness::private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let run = |method: &'static str, params: serde_json::Value| {
            let ex = ex.clone();
            async move { ex.execute(Some(id), method, params).await }
        };
        let nav = run("navigate", json!({"url": start})).await;
        assert!(nav.ok, "{:?}", nav.msg);
        let state = run("get_browser_state", json!({})).await;
        assert!(state.ok, "{:?}", state.msg);
        let index_of = |id_attr: &str| {
            state.data["elements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == id_attr)
                .and_then(|e| e["index"].as_u64())
                .unwrap_or_else(|| panic!("#{id_attr} in {}", state.data["elements"]))
        };
        for (field, text) in [
            ("user", "alice"),
            ("password", "Hunter2Secret"),
            ("card", "4111111111111111"),
        ] {
            let r = run(
                "input_text",
                json!({"index": index_of(field), "text": text}),
            )
            .await;
            assert!(r.ok, "{field}: {:?}", r.msg);
        }
        // The card number shows in the field's value in the state text.
        let filled = run("get_browser_state", json!({})).await;
        assert!(filled.ok, "{:?}", filled.msg);
        assert!(
            filled.data["text"]
                .as_str()
                .unwrap()
                .contains("4111111111111111"),
            "the receipt's page text is the page's: {}",
            filled.data["text"]
        );
        let click = run("click_element_by_index", json!({"index": index_of("go")})).await;
        assert!(click.ok, "{:?}", click.msg);
        // The page really has the secrets in its URL.
        let href = run("execute_js", json!({"body": "location.search"})).await;
        let search = href.data["result"].as_str().unwrap_or_default().to_string();
        assert!(search.contains("password=Hunter2Secret"), "{search}");
        let after = run("get_browser_state", json!({})).await;
        assert!(after.ok, "{:?}", after.msg);
        let url = run("get_url", json!({})).await;
        let shown = url.data["url"].as_str().unwrap().to_string();
        assert!(
            shown.contains("password=***") && shown.contains("user=alice"),
            "the echoed URL is masked: {shown}"
        );
        for r in [&nav, &after, &url] {
            let data = r.data.to_string();
            for secret in [
                "APIKEY123",
                "FRAGTOK456",
                "Hunter2Secret",
                "4111111111111111",
            ] {
                assert!(
                    !data.contains(secret),
                    "{} echoes {secret}: {data}",
                    r.method
                );
            }
        }
        run("close", json!({})).await;
        ex.engine().flush_trace().await;
        ex.execute(None, "shutdown", json!({})).await;
    });
    let files = files_under(&dir);
    let texts: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "txt" || e == "jsonl"))
        .collect();
    assert!(
        texts
            .iter()
            .filter(|p| p.extension().unwrap() == "txt")
            .count()
            >= 3,
        "three state files: {files:?}"
    );
    assert!(
        texts.iter().any(|p| p.ends_with("calls.jsonl")),
        "{files:?}"
    );
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [
            "APIKEY123",
            "FRAGTOK456",
            "Hunter2Secret",
            "4111111111111111",
        ] {
            assert!(!text.contains(secret), "{} holds {secret}", path.display());
        }
    }
    // What was masked is still there, as a mask.
    let all: String = texts
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        all.contains("password=***") && all.contains("access_token=***"),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
