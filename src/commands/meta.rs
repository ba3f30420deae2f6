//! Meta: `list_methods`, `get_config`, `list_tasks`, `cleanup`. None of them needs a task.

use serde_json::{json, Value};

use crate::command::*;
use crate::error::CommandError;
use crate::protocol::Params;

/// The meta group.
pub const SPECS: &[CommandSpec] = &[
    Group::Meta
        .engine("list_methods", list_methods)
        .summary("List the registered command names, optionally filtered")
        .doc("Names in registry order. `filter` is a substring, matched case-insensitively.")
        .params(&[string("filter", "substring; lower-cased before matching")])
        .example(
            "local names = browser.call(\"list_methods\", { filter = \"click\" }).data.methods",
        ),
    Group::Meta
        .engine("get_config", get_config)
        .summary("Show the effective configuration")
        .doc(
            "Timeouts, directories, the browser settings and the registered commands. With a \
              task id, also that task's browser descriptor.",
        )
        .example("print(browser.call(\"get_config\").data.command.timeoutMs)"),
    Group::Meta
        .engine("list_tasks", list_tasks)
        .summary("List the live tasks with their tabs, URL and title")
        .doc(
            "Every live task with its tab count, capture sequence, how many state reads reused \
              the last capture as their screenshot (`screenshotsReused`: nothing they showed had \
              changed), current URL and title, plus the shared browser (or null) and a \
              `launching` block while it starts.",
        )
        .example(
            "for _, t in ipairs(browser.call(\"list_tasks\").data.tasks) do print(t.id, t.url) end",
        ),
    Group::Meta
        .engine("cleanup", cleanup)
        .summary("Delete old evidence, trace logs or staged uploads (a dry run unless told)")
        .doc(
            "Explicit only: moonpilot never deletes these files on its own. Scans the data \
              directory and/or the trace directory (every day in it) for files older than \
              olderThanHours, keeping the newest keepLatest of each directory; reports what it \
              deleted (or would delete, with dryRun, the default). The upload area (files \
              staged by upload_file) is swept only when scope is `upload`.",
        )
        .params(&[
            string(
                "scope",
                "all | data | trace | upload (all never touches upload)",
            )
            .or("\"all\""),
            int(
                "olderThanHours",
                "only files older than this (negative -> 0)",
            )
            .or("24"),
            int("keepLatest", "always keep the newest N files per directory").or("0"),
            boolean("dryRun", "preview only; pass false to delete").or("true"),
        ])
        .example("browser.call(\"cleanup\", { olderThanHours = 48, dryRun = false })")
        .retry_safe(false),
];

/// What sweeping one area found (or did).
#[derive(Default)]
struct Sweep {
    scanned: u64,
    deleted: u64,
    freed: u64,
    undeletable: Vec<String>,
}

/// Walks `dir` (blocking: run on a blocking thread) and deletes — or only counts, when `dry` —
/// files older than `cutoff`, keeping the newest `keep` of each directory.
fn sweep(
    dir: &std::path::Path,
    cutoff: std::time::SystemTime,
    keep: usize,
    dry: bool,
    skip: Option<&std::path::Path>,
    out: &mut Sweep,
) {
    if skip == Some(dir) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            sweep(&path, cutoff, keep, dry, skip, out);
        } else if meta.is_file() {
            let modified = meta.modified().unwrap_or(std::time::SystemTime::now());
            files.push((modified, meta.len(), path));
        }
    }
    out.scanned += files.len() as u64;
    files.sort_by_key(|f| std::cmp::Reverse(f.0)); // newest first
    for (modified, len, path) in files.into_iter().skip(keep) {
        if modified >= cutoff {
            continue;
        }
        if dry || std::fs::remove_file(&path).is_ok() {
            out.deleted += 1;
            out.freed += len;
        } else {
            out.undeletable.push(path.display().to_string());
        }
    }
}

fn cleanup(p: &mut Params) -> Prepared<Cx> {
    let scope = p
        .str_opt("scope")?
        .unwrap_or_else(|| "all".into())
        .to_lowercase();
    if !matches!(scope.as_str(), "all" | "data" | "trace" | "upload") {
        return Err(CommandError::invalid(
            "scope",
            format!("param `scope`: expected all, data, trace or upload, got `{scope}`"),
        ));
    }
    let hours = p.int_opt("olderThanHours")?.unwrap_or(24).max(0);
    let keep = usize::try_from(p.int_opt("keepLatest")?.unwrap_or(0).max(0)).unwrap_or(0);
    let dry = p.bool_or("dryRun", true)?;
    run(move |cx: Cx| async move {
        let config = &cx.engine.config;
        let mut areas: Vec<(&str, Option<std::path::PathBuf>)> = Vec::new();
        if matches!(scope.as_str(), "all" | "data") {
            areas.push(("data", Some(config.data_dir.clone())));
        }
        if matches!(scope.as_str(), "all" | "trace") {
            areas.push(("trace", config.trace_dir.clone()));
        }
        // Staged files may be in use: only when named.
        if scope == "upload" {
            areas.push(("upload", Some(config.upload_dir.clone())));
        }
        let now = std::time::SystemTime::now();
        let cutoff = now
            .checked_sub(std::time::Duration::from_secs(
                hours.unsigned_abs().saturating_mul(3600),
            ))
            .unwrap_or(std::time::UNIX_EPOCH);
        // Today's trace file is open for appending: never swept.
        let today = crate::trace::today();
        let swept = tokio::task::spawn_blocking(move || {
            areas
                .into_iter()
                .map(|(name, dir)| {
                    let mut s = Sweep::default();
                    if let Some(dir) = &dir {
                        let skip = (name == "trace").then(|| dir.join(&today));
                        sweep(dir, cutoff, keep, dry, skip.as_deref(), &mut s);
                    }
                    (name, dir, s)
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| CommandError::failed(format!("cleanup: {e}")))?;
        if !dry {
            // The evidence keeper counts what data/ holds: it reads it again.
            cx.engine.keeper.rescan();
        }
        let mut data = json!({
            "scope": scope, "olderThanHours": hours, "keepLatest": keep, "dryRun": dry,
        });
        let (mut deleted, mut freed) = (0u64, 0u64);
        let mut notes: Vec<String> = Vec::new();
        for (name, dir, s) in swept {
            deleted += s.deleted;
            freed += s.freed;
            data[name] = match dir {
                Some(dir) => json!({
                    "dir": std::path::absolute(&dir).unwrap_or(dir).display().to_string(),
                    "deletedFiles": s.deleted, "freedBytes": s.freed, "scannedFiles": s.scanned,
                }),
                None => json!({"skipped": "the trace log is off"}),
            };
            notes.extend(
                s.undeletable
                    .into_iter()
                    .map(|f| format!("could not delete {f}")),
            );
        }
        if scope == "all" {
            notes.push("scope all never touches uploads".into());
        }
        data["deletedFiles"] = json!(deleted);
        data["freedBytes"] = json!(freed);
        data["notes"] = json!(notes);
        Ok(data)
    })
}

fn list_methods(p: &mut Params) -> Prepared<Cx> {
    let filter = p.str_opt("filter")?.map(|f| f.to_lowercase());
    run(move |_cx: Cx| async move {
        let methods: Vec<&str> = crate::commands::registry()
            .all()
            .iter()
            .map(|s| s.name)
            .filter(|n| filter.as_deref().is_none_or(|f| n.contains(f)))
            .collect();
        let mut data = json!({"count": methods.len(), "methods": methods, "total": crate::commands::registry().all().len()});
        if let Some(f) = filter {
            data["filter"] = json!(f);
        }
        Ok(data)
    })
}

fn get_config(_p: &mut Params) -> Prepared<Cx> {
    run(move |cx: Cx| async move {
        let c = &cx.engine.config;
        let work_dir = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let browser_mb = match cx.engine.current_browser() {
            Some(b) => b.memory_mb().await,
            None => None,
        };
        let mut data = json!({
            "workDir": work_dir,
            "dataDir": c.data_dir.display().to_string(),
            "evidence": {"keepPerTask": c.evidence.keep_per_task, "maxBytes": c.evidence.max_bytes},
            "engine": "chromium",
            "configuredType": "auto",
            "typeChoices": ["auto", "chromium"],
            "profileDir": {
                // The running browser's own (null while none runs, and for an attached one).
                "resolved": cx.engine.current_browser().map_or(Value::Null, |b| b.describe()["profileDir"].clone()),
                "forType": "chromium",
                "perPort": false,
                "configured": c.launch.profile.as_ref().map(|p| p.display().to_string()),
                "cdpConfigured": c.launch.cdp_url.is_some(),
                "note": "without --profile every browser gets a fresh temporary profile, removed when it stops",
            },
            "chromium": c.launch.chromium.as_ref().map(|p| p.display().to_string()),
            "cdpUrl": c.launch.cdp_url.as_deref().map(crate::browser::endpoint::shown),
            "cdpWaitMs": c.launch.cdp_url.as_ref().map(|_| c.launch.cdp_wait().as_millis() as u64),
            "gridUrl": c.launch.grid_url.as_deref().map(crate::browser::endpoint::shown),
            "recycle": {
                "afterTasks": c.recycle.after_tasks,
                "maxBrowserMb": c.recycle.max_browser_mb,
                "recycled": cx.engine.recycled.load(std::sync::atomic::Ordering::Relaxed),
                "tasksOnBrowser": cx.engine.current_browser().map(|b| b.tasks_started()),
                "browserMb": browser_mb,
            },
            "gridSession": cx.engine.current_browser().and_then(|b| b.grid_session()),
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
            "commands": crate::commands::registry().all().iter().map(|s| s.name).collect::<Vec<_>>(),
            "version": env!("CARGO_PKG_VERSION"),
        });
        if let Some(task) = &cx.task {
            data["browser"] = task.browser.describe();
        }
        Ok(data)
    })
}

fn list_tasks(_p: &mut Params) -> Prepared<Cx> {
    run(move |cx: Cx| async move {
        let mut tasks = Vec::new();
        for task in cx.engine.tasks() {
            let (tabs, _) = task.tabs();
            let mut entry = json!({
                "id": task.id.to_string(),
                "tabCount": tabs.len(),
                "captureSeq": task.capture_seq(),
                "screenshotsReused": task.shots_reused(),
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
    })
}
