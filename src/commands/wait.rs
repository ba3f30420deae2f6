//! Waiting: `wait` (a fixed pause). The conditional `wait_for_*` commands come later.

use std::time::Duration;

use serde_json::json;

use crate::command::*;
use crate::protocol::Params;

/// The wait group.
pub const SPECS: &[CommandSpec] = &[Group::Wait
    .read("wait", wait)
    .summary("Pause for a whole number of seconds (prefer the wait_for_* conditions)")
    .doc("Sleeps without blocking anything else; `seconds` must be a positive integer.")
    .params(
        &[int("seconds", "fixed sleep in whole seconds; must be > 0")
            .req()
            .range(1.0, f64::INFINITY)],
    )
    .example("page:wait{ seconds = 1 }")
    .capture()
    .long()];

fn wait(p: &mut Params) -> Prepared<TaskCx> {
    // At least 1: the executor checked the range.
    let seconds = p.int_req("seconds")?;
    run(move |_cx: TaskCx| async move {
        tokio::time::sleep(Duration::from_secs(seconds.unsigned_abs())).await;
        Ok(json!({"waitedMs": seconds * 1000}))
    })
}
