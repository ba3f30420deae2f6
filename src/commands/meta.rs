//! Meta: `list_methods`, `get_config`, `list_tasks`. None of them needs a task.

use serde_json::{json, Value};

use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::Params;
use crate::registry::{self, CommandFuture, CommandSpec, Kind, ParamSpec};

/// The meta group.
pub const SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "list_methods",
        group: "meta",
        summary: "List the registered command names, optionally filtered",
        doc: "Names in registry order. `filter` is a substring, matched case-insensitively.",
        params: &[ParamSpec {
            name: "filter",
            kind: Kind::String,
            required: false,
            default: None,
            doc: "substring; lower-cased before matching",
        }],
        needs_task: false,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example:
            "local names = browser.call(\"list_methods\", { filter = \"click\" }).data.methods",
        handler: list_methods,
    },
    CommandSpec {
        name: "get_config",
        group: "meta",
        summary: "Show the effective configuration",
        doc: "Timeouts, directories, the browser settings and the registered commands. With a \
              task id, also that task's browser descriptor.",
        params: &[],
        needs_task: false,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "print(browser.call(\"get_config\").data.command.timeoutMs)",
        handler: get_config,
    },
    CommandSpec {
        name: "list_tasks",
        group: "meta",
        summary: "List the live tasks with their tabs, URL and title",
        doc: "Every live task with its tab count, capture sequence, current URL and title, plus \
              the shared browser (or null) and a `launching` block while it starts.",
        params: &[],
        needs_task: false,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example:
            "for _, t in ipairs(browser.call(\"list_tasks\").data.tasks) do print(t.id, t.url) end",
        handler: list_tasks,
    },
];

fn list_methods(_cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let filter = p.str_opt("filter")?.map(|f| f.to_lowercase());
    Ok(Box::pin(async move {
        let methods: Vec<&str> = registry::all()
            .iter()
            .map(|s| s.name)
            .filter(|n| filter.as_deref().is_none_or(|f| n.contains(f)))
            .collect();
        let mut data =
            json!({"count": methods.len(), "methods": methods, "total": registry::all().len()});
        if let Some(f) = filter {
            data["filter"] = json!(f);
        }
        Ok(data)
    }))
}

fn get_config(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        let c = &cx.engine.config;
        let work_dir = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let mut data = json!({
            "workDir": work_dir,
            "dataDir": c.data_dir.display().to_string(),
            "engine": "chromium",
            "configuredType": "auto",
            "typeChoices": ["auto", "chromium"],
            "profileDir": {
                "configured": c.launch.profile.as_ref().map(|p| p.display().to_string()),
                "note": "without --profile every browser gets a fresh temporary profile, removed when it stops",
            },
            "chromium": c.launch.chromium.as_ref().map(|p| p.display().to_string()),
            "cdpUrl": c.launch.cdp_url,
            "headful": c.launch.headful,
            "action": {"timeoutMs": c.action_timeout_ms, "jsFallback": true, "mouseFallback": true},
            "launchTimeoutMs": c.launch_timeout.as_millis() as u64,
            "eval": {"timeoutMs": c.eval_timeout_ms},
            "command": {
                "timeoutMs": c.command_timeout.as_millis() as u64,
                "hardTimeoutMs": c.long_command_timeout.as_millis() as u64,
                "laneWaitMs": c.lane_wait.as_millis() as u64,
            },
            "tasks": cx.engine.tasks().len(),
            "commands": registry::all().iter().map(|s| s.name).collect::<Vec<_>>(),
            "version": env!("CARGO_PKG_VERSION"),
        });
        if let Some(task) = &cx.task {
            data["browser"] = task.browser.describe();
        }
        Ok(data)
    }))
}

fn list_tasks(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        let mut tasks = Vec::new();
        for task in cx.engine.tasks() {
            let (tabs, _) = task.tabs();
            let mut entry = json!({
                "id": task.id.to_string(),
                "tabCount": tabs.len(),
                "captureSeq": task.capture_seq(),
                "inflight": task.lane.try_lock().is_err(),
            });
            // A task busy with a command (or behind a dialog) is not read: list_tasks must answer.
            if let Ok(tab) = task.tab() {
                let read = tokio::time::timeout(std::time::Duration::from_millis(500), async {
                    Ok::<_, CommandError>((tab.url().await?, tab.title().await?))
                })
                .await;
                match read {
                    Ok(Ok((url, title))) => {
                        entry["url"] = json!(url);
                        entry["title"] = json!(title);
                    }
                    Ok(Err(e)) => entry["pageError"] = json!(e.msg),
                    Err(_) => entry["pageError"] = json!("the page did not answer within 500 ms"),
                }
            }
            tasks.push(entry);
        }
        let browser = match cx.engine.current_browser() {
            Some(b) => b.describe(),
            None => Value::Null,
        };
        let launching = cx.engine.launching().map(|(since, headless)| {
            json!({"elapsedMs": since.elapsed().as_millis() as u64, "browser": "chromium", "headless": headless,
                   "note": "the shared browser is starting"})
        });
        Ok(
            json!({"count": tasks.len(), "tasks": tasks, "browser": browser, "launching": launching}),
        )
    }))
}
