//! Waiting: `wait` (a fixed pause). The conditional `wait_for_*` commands come later.

use std::time::Duration;

use serde_json::json;

use crate::command::*;
use crate::protocol::Params;

/// The longest sleep `wait` takes: under the long-command bound (PROTOCOL.md §4.2, 900 s), so
/// a wait that is accepted can answer instead of timing out with its outcome unknown.
const MAX_WAIT_S: f64 = 899.0;

/// The wait group.
pub const SPECS: &[CommandSpec] = &[Group::Wait
    .read("wait", wait)
    .summary("Pause for a whole number of seconds (prefer the wait_for_* conditions)")
    .doc("Sleeps without blocking anything else; `seconds` must be a positive integer.")
    .params(&[int(
        "seconds",
        "fixed sleep in whole seconds, 1..=899 (less than the 15-min long-command bound)",
    )
    .req()
    .range(1.0, MAX_WAIT_S)])
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
