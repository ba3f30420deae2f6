//! The console group: `get_console_logs`, `clear_console_logs`.
//!
//! Console messages (`Runtime.consoleAPICalled`, browser `Log.entryAdded`) and uncaught page
//! errors (`Runtime.exceptionThrown`) of all the task's tabs, recorded from each tab's attach on
//! by the task's recorder (`browser/netlog.rs`) in two rings of 200 that count what they
//! dropped. Not to be confused with `src/console.rs`, the terminal console of human input.

use serde_json::json;

use crate::browser::netlog::{CONSOLE_CAP, ERRORS_CAP};
use crate::command::*;
use crate::protocol::Params;

/// The console group.
pub const SPECS: &[CommandSpec] = &[
    Group::Console
        .read("get_console_logs", get_console_logs)
        .summary("The task's recent console messages and uncaught page errors")
        .doc(
            "Recorded from each tab's attach on, for all the task's tabs: the last 200 \
              messages as '<type>: <text>' and the last 200 page errors, oldest first. \
              logsDropped / errorsDropped count what the rings pushed out since the last clear.",
        )
        .example("local c = page:get_console_logs():unwrap()\nfor _, l in ipairs(c.logs) do print(l) end"),
    Group::Console
        .read("clear_console_logs", clear_console_logs)
        .summary("Empty the task's console and page-error buffers")
        .doc("Also resets the dropped counts; answers how many messages and errors went.")
        .example("page:clear_console_logs()"),
];

fn get_console_logs(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let c = cx.task.events.log.console();
        Ok(json!({
            "logs": c.logs,
            "errors": c.errors,
            "logCount": c.logs.len(),
            "errorCount": c.errors.len(),
            "logsDropped": c.logs_dropped,
            "errorsDropped": c.errors_dropped,
            "cap": {"logs": CONSOLE_CAP, "errors": ERRORS_CAP},
        }))
    })
}

fn clear_console_logs(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let (logs, errors) = cx.task.events.log.clear_console();
        Ok(json!({"clearedLogs": logs, "clearedErrors": errors}))
    })
}
