//! Lifecycle: `start`, `close`, `shutdown`.
//!
//! One shared browser serves every task; a task owns its tabs. The first `start` launches the
//! browser, the last `close` (or `shutdown`) stops it.

use serde_json::{json, Value};

use crate::browser::task::{Task, TaskId};
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};

/// The lifecycle group.
pub const SPECS: &[CommandSpec] = &[
    Group::Lifecycle
        .engine("start", start)
        .summary("Create a task with its own tab, launching the shared browser if needed")
        .doc("Creates a task (the seed's browser instance) that owns one fresh tab. The first task \
              launches the shared Chromium; later tasks open a tab in it. With an envelope id that \
              is already live the call fails: close it first or use another id.")
        .params(&[
            boolean("headless", "run without a window; absent means headless (unless the host was started with --headful)").or("true"),
            string("browser", "auto | chromium (chrome, edge and firefox are refused: moonpilot drives Chromium)"),
            boolean("networkRecording", "per-task request/response recording on or off; absent = global setting"),
        ])
        .example("local page = browser.start{ headless = true }")
        .mutates(true)
        .retry_safe(false)
        .opens(Opens::Task),
    Group::Lifecycle
        .action("close", close)
        .summary("Close the task's tabs and forget the task; the last task stops the browser")
        .doc("Closes only this task's tabs. A command still running on the task ends with \
              TASK_NOT_FOUND; close never queues behind it. When no task is left the shared \
              browser exits (a persistent --profile keeps its login state).")
        .example("page:close()")
        .no_capture()
        .lane_free()
        .way_out(),
    Group::Lifecycle
        .engine("shutdown", shutdown)
        .summary("Close every task and the shared browser")
        .doc("Closes every task and stops the shared browser; the host keeps running.")
        .example("browser.call(\"shutdown\")")
        .mutates(true)
        .retry_safe(false)
        .way_out(),
];

const BROWSER_CHOICES: &str = "auto, chromium, chrome, edge, firefox";

/// Normalises the `browser` param; only Chromium is honoured.
fn requested_browser(value: Option<String>) -> Result<String, CommandError> {
    let Some(raw) = value else {
        return Ok("auto".into());
    };
    let norm = match raw.trim().to_ascii_lowercase().as_str() {
        "auto" | "default" => "auto",
        "chromium" | "bundled" | "bundled-chromium" | "playwright-chromium" => "chromium",
        "chrome" | "google-chrome" | "googlechrome" => "chrome",
        "edge" | "msedge" | "ms-edge" | "microsoft-edge" => "edge",
        "firefox" | "ff" | "gecko" => "firefox",
        _ => {
            return Err(CommandError::invalid(
                "browser",
                format!("param `browser`: unknown browser `{raw}`; allowed: {BROWSER_CHOICES}"),
            ))
        }
    };
    if matches!(norm, "chrome" | "edge" | "firefox") {
        return Err(CommandError::new(
            ErrorCode::ActionFailed,
            format!(
                "browser `{norm}` is not available: moonpilot drives Chromium (use `auto` or \
                 `chromium`); it never falls back silently"
            ),
        ));
    }
    Ok(norm.to_string())
}

fn start(p: &mut Params) -> Prepared<Cx> {
    let headless = p.bool_opt("headless")?;
    let requested = requested_browser(p.str_opt("browser")?)?;
    let recording = p.bool_opt("networkRecording")?;
    run(move |cx: Cx| async move {
        let headless = headless.unwrap_or(!cx.engine.config.launch.headful);
        let id = cx.task_id.unwrap_or_else(TaskId::generate);
        // Taken first: a start that fails from here on leaves no isolation pending.
        let isolated = cx.engine.take_isolated(id);
        if cx.engine.task(id).is_some() {
            // Checked before anything runs: an invalid argument, nothing was started.
            return Err(CommandError::invalid(
                "id",
                format!("task {id} is already running; close it first or use another id"),
            ));
        }
        let _starting = cx.engine.begin_start();
        let browser = cx.engine.browser_for_start(headless).await?;
        // Boxed: a tab's attach is a large future, and `start` runs on its caller's stack.
        let task = match Box::pin(Task::open(id, browser.clone(), isolated)).await {
            Ok(t) => t,
            Err(e) => {
                cx.engine.stop_browser_if_idle().await;
                return Err(e);
            }
        };
        if let Err(task) = cx.engine.insert_task(task) {
            // Another `start` with the same id won the race.
            task.close_tabs().await;
            return Err(CommandError::failed(format!(
                "task {id} is already running"
            )));
        }
        let (profile_seen_before, profile_note) = match &browser.mode {
            crate::browser::Mode::Managed {
                profile_seen_before: true,
                ..
            } => (true, "the profile directory had content before launch: earlier logins may still be valid"),
            crate::browser::Mode::Managed { temporary: true, .. } => {
                (false, "fresh temporary profile: no login state; it is removed when the browser stops")
            }
            crate::browser::Mode::Managed { .. } => (false, "new profile directory: no earlier login state"),
            crate::browser::Mode::Attached { .. } => (false, "attached over CDP: the remote browser's profile is used"),
        };
        Ok(json!({
            "id": id.to_string(),
            "networkRecording": match recording {
                Some(true) => Value::from("on"),
                Some(false) => Value::from("off"),
                None => Value::from("on (global setting)"),
            },
            "browser": browser.describe(),
            "requestedBrowser": requested,
            "effectiveBrowser": "chromium",
            "engineHonored": true,
            "profileSeenBefore": profile_seen_before,
            "profileNote": profile_note,
        }))
    })
}

fn close(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let engine = cx.engine.clone();
        // Its own task: marking the task closed ends whatever runs on it — a batch or a
        // recipe this close is a step of included — and that must not cut the close itself off.
        finish(async move {
            task.mark_closed();
            engine.remove_task(task.id);
            task.close_tabs().await;
            engine.stop_browser_if_idle().await;
        })
        .await?;
        Ok(json!({}))
    })
}

fn shutdown(_p: &mut Params) -> Prepared<Cx> {
    run(move |cx: Cx| async move {
        let engine = cx.engine.clone();
        // Its own task, as `close`: a shutdown that is a batch step ends its own batch.
        let closed = finish(async move { engine.shutdown().await }).await?;
        let ids: Vec<String> = closed.iter().map(|id| id.to_string()).collect();
        Ok(json!({"closedTasks": ids, "remainingTasks": cx.engine.tasks().len()}))
    })
}

/// Runs `work` to its end in a task of its own: dropping the caller does not stop it.
async fn finish<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, CommandError> {
    tokio::spawn(work)
        .await
        .map_err(|e| CommandError::failed(format!("the work was lost: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_choices() {
        assert_eq!(requested_browser(None).unwrap(), "auto");
        assert_eq!(
            requested_browser(Some("Bundled".into())).unwrap(),
            "chromium"
        );
        assert_eq!(
            requested_browser(Some("ff".into())).unwrap_err().code,
            ErrorCode::ActionFailed
        );
        let e = requested_browser(Some("netscape".into())).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("allowed: auto, chromium"), "{}", e.msg);
    }
}
