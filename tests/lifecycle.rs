//! Lifecycle: start, close, shutdown, list_tasks, browser death, attaching over --cdp-url.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::{Engine, ErrorCode};
use serde_json::json;

use crate::support::harness::{exec, lua, new_task, private, test_config, url_a};

#[test]
fn start_describes_the_shared_browser() {
    let r = exec(None, "start", json!({}));
    assert!(r.ok, "{:?}", r.msg);
    let id: u64 = r.data["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(r.data["browser"]["type"], "chromium");
    assert_eq!(r.data["browser"]["mode"], "managed");
    assert_eq!(r.data["browser"]["headless"], true);
    assert!(r.data["browser"]["cdp"]["product"]
        .as_str()
        .unwrap()
        .contains("Chrome"));
    assert_eq!(r.data["engineHonored"], true);
    let again = exec(Some(TaskId(id)), "start", json!({}));
    assert_eq!(
        again.code,
        Some(ErrorCode::InvalidArgument),
        "starting a live id again fails"
    );
    assert!(!again.started);
    assert!(again.msg.unwrap().contains("already running"));
    let close = exec(Some(TaskId(id)), "close", json!({}));
    assert!(close.ok);
    let after = exec(Some(TaskId(id)), "get_url", json!({}));
    assert_eq!(after.code, Some(ErrorCode::TaskNotFound));
    assert!(!after.started);
}

#[test]
fn refused_browsers_and_bad_start_params() {
    let r = exec(None, "start", json!({"browser": "firefox"}));
    assert_eq!(r.code, Some(ErrorCode::ActionFailed));
    assert!(r.msg.unwrap().contains("drives Chromium"));
    let r = exec(None, "start", json!({"browser": "netscape"}));
    assert_eq!(r.code, Some(ErrorCode::InvalidArgument));
    let r = exec(None, "start", json!({"headless": "maybe"}));
    assert_eq!(r.code, Some(ErrorCode::InvalidArgument));
    assert_eq!(r.data["param"], "headless");
}

#[test]
fn list_tasks_shows_url_and_title() {
    let id = new_task();
    assert!(exec(Some(id), "navigate", json!({"url": url_a("basic.html")})).ok);
    let r = exec(None, "list_tasks", json!({}));
    let tasks = r.data["tasks"].as_array().unwrap();
    let me = tasks
        .iter()
        .find(|t| t["id"] == id.to_string())
        .expect("the task is listed");
    assert_eq!(me["title"], "Basic");
    assert_eq!(me["tabCount"], 1);
    assert_eq!(r.data["browser"]["type"], "chromium");
    exec(Some(id), "close", json!({}));
    let r = exec(None, "list_tasks", json!({}));
    assert!(r.data["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["id"] != id.to_string()));
}

#[test]
fn lua_start_with_a_live_id_returns_the_same_task() {
    lua(r#"
        local again = browser.start{ id = page.id }
        eq(again.id, page.id, "same task")
        eq(browser.task(page.id).id, page.id, "browser.task finds it")
        eq(browser.task(12345), nil, "unknown id")
    "#);
}

#[test]
fn shutdown_closes_every_task_and_the_browser() {
    private(test_config(), |ex| async move {
        let a = ex.execute(None, "start", json!({})).await;
        let b = ex.execute(None, "start", json!({})).await;
        assert!(a.ok && b.ok);
        let profile = std::path::PathBuf::from(a.data["browser"]["profileDir"].as_str().unwrap());
        assert!(
            profile.is_dir(),
            "a fresh profile exists while the browser runs"
        );
        assert_eq!(a.data["profileSeenBefore"], false);
        let r = ex.execute(None, "shutdown", json!({})).await;
        assert!(r.ok);
        assert_eq!(r.data["closedTasks"].as_array().unwrap().len(), 2);
        assert_eq!(r.data["remainingTasks"], 0);
        let tasks = ex.execute(None, "list_tasks", json!({})).await;
        assert_eq!(tasks.data["count"], 0);
        assert!(tasks.data["browser"].is_null(), "browser stopped");
        assert!(!profile.exists(), "the temporary profile is removed");
        // The next start launches a fresh browser.
        let c = ex.execute(None, "start", json!({})).await;
        assert!(c.ok, "{:?}", c.msg);
        ex.execute(None, "shutdown", json!({})).await;
    });
}

#[test]
fn browser_death_fails_pending_and_later_commands_fast() {
    private(test_config(), |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let engine: Arc<Engine> = ex.engine().clone();
        let task = engine.task(id).unwrap();
        // A command that would wait 30 s is pending when the browser dies.
        let pending = {
            let ex = ex.clone();
            tokio::task::spawn_local(async move {
                ex.execute(Some(id), "wait", json!({"seconds": 30})).await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t0 = Instant::now();
        task.browser.kill().await;
        let r = pending.await.unwrap();
        eprintln!(
            "browser killed -> pending command answered BROWSER_GONE in {:?}",
            t0.elapsed()
        );
        assert_eq!(r.code, Some(ErrorCode::BrowserGone), "{:?}", r.msg);
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "took {:?}",
            t0.elapsed()
        );
        let later = ex.execute(Some(id), "get_title", json!({})).await;
        assert_eq!(
            later.code,
            Some(ErrorCode::BrowserGone),
            "{:?} {:?}",
            later.msg,
            later.data
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        // The next start launches a new browser.
        let again = ex.execute(None, "start", json!({})).await;
        assert!(again.ok, "{:?}", again.msg);
        ex.execute(None, "shutdown", json!({})).await;
    });
}

#[test]
fn a_persistent_profile_keeps_state_across_browsers() {
    let dir = std::env::temp_dir().join(format!("moonpilot-profile-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = test_config();
    config.launch.profile = Some(dir.clone());
    let page = url_a("basic.html");
    private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        assert!(r.ok, "{:?}", r.msg);
        assert_eq!(r.data["profileSeenBefore"], false);
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        assert!(
            ex.execute(Some(id), "navigate", json!({"url": page}))
                .await
                .ok
        );
        let set = ex
            .execute(
                Some(id),
                "execute_js",
                json!({"body": "localStorage.setItem('who', 'kept'); return 1"}),
            )
            .await;
        assert!(set.ok, "{:?}", set.msg);
        ex.execute(None, "shutdown", json!({})).await;
        // A new browser on the same profile sees what the first one stored.
        let r = ex.execute(None, "start", json!({})).await;
        assert!(r.ok, "{:?}", r.msg);
        assert_eq!(r.data["profileSeenBefore"], true);
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        assert!(
            ex.execute(Some(id), "navigate", json!({"url": page}))
                .await
                .ok
        );
        let got = ex
            .execute(
                Some(id),
                "execute_js",
                json!({"body": "localStorage.getItem('who')"}),
            )
            .await;
        assert_eq!(got.data["result"], "kept");
        ex.execute(None, "shutdown", json!({})).await;
    });
    assert!(dir.is_dir(), "a persistent profile is not removed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn get_config_reports_effective_settings() {
    let r = exec(None, "get_config", json!({}));
    assert!(r.ok);
    assert_eq!(r.data["command"]["timeoutMs"], 90_000);
    assert_eq!(r.data["command"]["hardTimeoutMs"], 900_000);
    assert_eq!(r.data["command"]["laneWaitMs"], 5000);
    assert_eq!(r.data["action"]["timeoutMs"], 5000);
    assert_eq!(r.data["eval"]["timeoutMs"], 60_000);
    assert!(r.data["commands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "get_browser_state"));
    assert!(r.data.get("browser").is_none(), "no task, no browser block");
    let id = new_task();
    let r = exec(Some(id), "get_config", json!({}));
    assert_eq!(r.data["browser"]["type"], "chromium");
    // The seed's client reads the running browser's profile from profileDir.resolved.
    let resolved = r.data["profileDir"]["resolved"].as_str().unwrap();
    assert_eq!(resolved, r.data["browser"]["profileDir"].as_str().unwrap());
    assert!(std::path::Path::new(resolved).is_dir(), "{resolved}");
    assert_eq!(r.data["profileDir"]["cdpConfigured"], false);
    exec(Some(id), "close", json!({}));
}

/// The process id of task `id`'s browser (one the engine launched).
fn browser_pid(ex: &moonpilot::Executor, id: TaskId) -> u32 {
    let task = ex.engine().task(id).expect("a live task");
    match &task.browser.mode {
        moonpilot::browser::Mode::Managed { pid: Some(pid), .. } => *pid,
        _ => panic!("a launched browser"),
    }
}

async fn started(ex: &moonpilot::Executor) -> TaskId {
    let r = ex.execute(None, "start", json!({})).await;
    assert!(r.ok, "{:?}", r.msg);
    TaskId(r.data["id"].as_str().unwrap().parse().unwrap())
}

/// Waits (5 s at most) until process `pid` is gone.
async fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

#[test]
fn the_browser_is_recycled_after_n_tasks_and_the_old_one_stops_with_its_last_task() {
    let mut config = test_config();
    config.recycle = moonpilot::engine::Recycle {
        after_tasks: Some(2),
        max_browser_mb: None,
    };
    private(config, |ex| async move {
        let (a, b) = (started(&ex).await, started(&ex).await);
        let old = browser_pid(&ex, a);
        assert_eq!(browser_pid(&ex, b), old, "two tasks on the first browser");
        let c = started(&ex).await;
        let new = browser_pid(&ex, c);
        assert_ne!(new, old, "the third task is on a fresh browser");
        // The old browser's tasks go on where they are.
        for id in [a, c] {
            let r = ex
                .execute(Some(id), "navigate", json!({"url": url_a("basic.html")}))
                .await;
            assert!(r.ok, "{:?}", r.msg);
        }
        let config = ex.execute(None, "get_config", json!({})).await;
        assert_eq!(config.data["recycle"]["recycled"], 1, "{}", config.data);
        assert_eq!(config.data["recycle"]["tasksOnBrowser"], 1);
        ex.execute(Some(a), "close", json!({})).await;
        assert!(
            std::path::Path::new(&format!("/proc/{old}")).exists(),
            "b still runs on the old browser"
        );
        let r = ex.execute(Some(b), "get_title", json!({})).await;
        assert!(r.ok, "{:?}", r.msg);
        ex.execute(Some(b), "close", json!({})).await;
        assert!(gone(old).await, "the old browser stops with its last task");
        assert!(std::path::Path::new(&format!("/proc/{new}")).exists());
        ex.execute(None, "shutdown", json!({})).await;
        assert!(gone(new).await, "and the new one with the engine");
    });
}

#[test]
fn a_browser_over_its_memory_bound_is_recycled_for_the_next_task() {
    let mut config = test_config();
    config.recycle = moonpilot::engine::Recycle {
        after_tasks: None,
        max_browser_mb: Some(1),
    };
    private(config, |ex| async move {
        let a = started(&ex).await;
        let old = browser_pid(&ex, a);
        let b = started(&ex).await;
        assert_ne!(browser_pid(&ex, b), old, "over 1 MiB: a fresh browser");
        let cfg = ex.execute(None, "get_config", json!({})).await;
        assert!(
            cfg.data["recycle"]["browserMb"].as_u64().unwrap_or(0) > 1,
            "{}",
            cfg.data["recycle"]
        );
        ex.execute(Some(a), "close", json!({})).await;
        assert!(gone(old).await, "the old browser stops with its last task");
        ex.execute(None, "shutdown", json!({})).await;
    });
}

/// Waits (20 s at most) until nothing holds any of `browsers` any more.
async fn all_dropped(browsers: &[std::sync::Weak<moonpilot::browser::Browser>]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let held = browsers.iter().filter(|w| w.strong_count() > 0).count();
        if held == 0 || Instant::now() > deadline {
            return held;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_stopped_browser_is_let_go_with_its_tabs_and_their_event_loops() {
    // `serve` with one task at a time launches a browser per task: each one stopped must be
    // freed, or the engine grows by a browser's worth of memory and a socket every task.
    private(test_config(), |ex| async move {
        let mut browsers = Vec::new();
        for round in 0..3 {
            let id = started(&ex).await;
            let task = ex.engine().task(id).expect("a live task");
            browsers.push(Arc::downgrade(&task.browser));
            drop(task);
            // A page with frames, network traffic and a dialog's subscription: every
            // per-tab loop runs.
            let r = ex
                .execute(Some(id), "navigate", json!({"url": url_a("frames.html")}))
                .await;
            assert!(r.ok, "round {round}: {:?}", r.msg);
            let r = ex.execute(Some(id), "get_browser_state", json!({})).await;
            assert!(r.ok, "round {round}: {:?}", r.msg);
            let r = ex.execute(Some(id), "close", json!({})).await;
            assert!(r.ok, "round {round}: {:?}", r.msg);
        }
        assert_eq!(
            all_dropped(&browsers).await,
            0,
            "stopped browsers still held"
        );
        ex.execute(None, "shutdown", json!({})).await;
    });
}
