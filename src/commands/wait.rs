//! Waiting: `wait` (a fixed pause). The conditional `wait_for_*` commands come later.

use std::time::Duration;

use serde_json::json;

use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::Params;
use crate::registry::{CommandFuture, CommandSpec, Kind, ParamSpec};

/// The wait group.
pub const SPECS: &[CommandSpec] = &[CommandSpec {
    name: "wait",
    group: "wait",
    summary: "Pause for a whole number of seconds (prefer the wait_for_* conditions)",
    doc: "Sleeps without blocking anything else; `seconds` must be a positive integer.",
    params: &[ParamSpec {
        name: "seconds",
        kind: Kind::Int,
        required: true,
        default: None,
        doc: "fixed sleep in whole seconds; must be > 0",
    }],
    needs_task: true,
    mutates_page: false,
    retry_safe: true,
    long_running: true,
    alias_of: None,
    example: "page:wait{ seconds = 1 }",
    handler: wait,
}];

fn wait(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let seconds = p.int_req("seconds")?;
    if seconds <= 0 {
        return Err(CommandError::invalid(
            "seconds",
            format!("param `seconds`: must be a positive integer, got {seconds}"),
        ));
    }
    Ok(Box::pin(async move {
        cx.task()?;
        tokio::time::sleep(Duration::from_secs(seconds.unsigned_abs())).await;
        Ok(json!({"waitedMs": seconds * 1000}))
    }))
}
