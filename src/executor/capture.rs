//! Evidence after a page-changing command (PROTOCOL.md §8): a screenshot written to the task's
//! data dir, bounded, behind the task's circuit breaker; never a reason for the command to fail.
//!
//! The receipt names the file at once and the screenshot is taken and written in the background
//! ([`Task::defer_evidence`]): the caller reads the receipt while the browser encodes the PNG.
//! The receipt says `files_pending`. The file exists before the task's next page-changing, wait
//! or capture command starts (the executor waits for it; a read does not), and before `close` or
//! engine shutdown let the task go. A capture that fails after the receipt is out is reported on
//! the task's next receipt (`previous_capture_error`) and counts for the breaker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Executor;
use crate::browser::breaker::{is_spurious, Gate};
use crate::browser::tab::ShotArea;
use crate::browser::task::Task;
use crate::command::CommandSpec;
use crate::protocol::Receipt;

/// The most a capture may take (§8: browser.capture.timeoutMs 8000).
const CAPTURE_BOUND: Duration = Duration::from_secs(8);

/// Evidence of the task's previous command may still be being written. A command that can
/// change the page waits for it, so the pixels show the page as that command found it; each
/// job is bounded (EVIDENCE_BOUND), so this wait is too. A command that only reads goes on at
/// once (issue 22: a read paid for the previous capture) — screenshots of one tab take turns
/// (`Tab::shoot`), and an overlay drawn meanwhile starts hidden — unless it captures itself
/// (capture commands, waits). Only a command that holds the lane waits; a job that failed is
/// answered (its `seq` and error) for this command's receipt.
pub(super) async fn previous_failure(
    task: Option<&Arc<Task>>,
    lane_held: bool,
    spec: &CommandSpec,
) -> Option<(u64, String)> {
    let t = task.filter(|_| lane_held)?;
    // A capture command takes its shot after the pending one too (their outcomes reach the
    // task's capture breaker in the order they were asked for), and so does a wait, which
    // captures after it and may run the caller's script (wait_for_function).
    let waits =
        spec.mutates_page || spec.auto_capture || spec.group == crate::command::Group::Capture;
    if waits && t.evidence_pending() {
        t.evidence_settled().await;
    }
    t.take_evidence_failure()
}

impl Executor {
    /// The capture step: evidence after a successful command whose spec asks for it, and the
    /// failure of the task's previous capture (`previous_capture_error`), if any.
    pub(super) fn capture_after(
        &self,
        receipt: &mut Receipt,
        spec: &CommandSpec,
        task: Option<&Arc<Task>>,
        earlier_failure: Option<(u64, String)>,
    ) {
        if receipt.ok && spec.auto_capture {
            if let Some(t) = task {
                self.capture(receipt, t);
            }
        }
        if let Some((seq, error)) = earlier_failure {
            receipt.add_data_field(
                "previous_capture_error",
                json!({"seq": seq, "screenshot_error": error}),
            );
        }
    }

    /// Evidence after a page-changing command (PROTOCOL.md §8): `seq`, `screenshot`,
    /// `screenshot_path` — or why not (`screenshot_skipped`, `capture_degraded`). Never fails the
    /// command and never waits for the screenshot: everything that can be decided without the
    /// browser is decided here, the capture itself runs in the background.
    pub(super) fn capture(&self, receipt: &mut Receipt, task: &Arc<Task>) {
        if !self.engine.config.capture {
            receipt.add_data_field("screenshot_skipped", json!("capture is off"));
            return;
        }
        let gate = task.capture_breaker(|b| b.gate(Instant::now()));
        if let Gate::Open { left } = gate {
            receipt.add_data_field("capture_degraded", json!(true));
            receipt.add_data_field(
                "capture_note",
                json!(format!(
                    "screenshots of this task failed repeatedly; capture resumes in {} s",
                    left.as_secs()
                )),
            );
            return;
        }
        if task.events.dialog_open() {
            // A screenshot would wait for the dialog (PROTOCOL.md §8).
            receipt.add_data_field("screenshot_skipped", json!("a native dialog is open"));
            return;
        }
        let Ok(tab) = task.tab() else {
            return;
        };
        let seq = task.next_capture_seq();
        let dir = self.engine.config.data_dir.join(task.id.to_string());
        let path = dir.join(format!("{seq}.png"));
        // `absolute` only joins the working directory: no file system access.
        let shown = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        receipt.add_data_field("seq", json!(seq));
        receipt.add_data_field("screenshot", json!(format!("/data/{}/{seq}.png", task.id)));
        receipt.add_data_field("screenshot_path", json!(shown.display().to_string()));
        // Written in the background: `r:wait_files()` (Lua) or a GET of `screenshot` (HTTP)
        // waits for it (issue 22 §5).
        receipt.add_data_field("files_pending", json!(true));
        let keeper = self.engine.keeper.clone();
        let owner = task.clone();
        task.defer_evidence(seq, async move {
            let shot = async {
                let png = tab
                    .shoot(ShotArea::Viewport, CAPTURE_BOUND)
                    .await
                    .map_err(|e| (e.msg, is_spurious(e.code)))?
                    .png;
                let io = |e: std::io::Error| (e.to_string(), false);
                tokio::fs::create_dir_all(&dir).await.map_err(io)?;
                keeper.save(&path, &png).await.map_err(io)?;
                Ok::<(), (String, bool)>(())
            };
            let outcome = shot.await;
            owner.capture_breaker(|b| match &outcome {
                Ok(()) => b.succeeded(),
                Err((_, spurious)) => b.failed(*spurious, Instant::now()),
            });
            outcome.map_err(|(msg, _)| msg)
        });
    }
}
