//! Evidence after a page-changing command (PROTOCOL.md §8): a screenshot written to the task's
//! data dir, bounded, behind a circuit breaker; never a reason for the command to fail.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Executor;
use crate::browser::task::Task;
use crate::protocol::Receipt;

/// The most a capture may add to a command (§8: browser.capture.timeoutMs 8000).
pub(super) const CAPTURE_BOUND: Duration = Duration::from_secs(8);
/// Consecutive capture failures that open the breaker, and for how long (§8: 3, 120 s).
const CAPTURE_FAIL_THRESHOLD: u32 = 3;
const CAPTURE_COOLDOWN: Duration = Duration::from_secs(120);

impl Executor {
    /// Evidence after a page-changing command (PROTOCOL.md §8): `seq`, `screenshot`,
    /// `screenshot_path` — or why not (`screenshot_skipped`, `screenshot_error`,
    /// `capture_degraded`). Never fails the command; a breaker stops trying after repeated
    /// failures for a while.
    pub(super) async fn capture(&self, receipt: &mut Receipt, task: &Task) {
        if !self.engine.config.capture {
            receipt.add_data_field("screenshot_skipped", json!("capture is off"));
            return;
        }
        let open_until = {
            let b = self
                .engine
                .capture_breaker
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            b.1.filter(|until| *until > Instant::now())
        };
        if let Some(until) = open_until {
            receipt.add_data_field("capture_degraded", json!(true));
            receipt.add_data_field(
                "capture_note",
                json!(format!(
                    "screenshots failed repeatedly; capture resumes in {} s",
                    until.saturating_duration_since(Instant::now()).as_secs()
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
        receipt.add_data_field("seq", json!(seq));
        let shot = match tab.screenshot().await {
            Ok(png) => {
                let dir = self.engine.config.data_dir.join(task.id.to_string());
                let path = dir.join(format!("{seq}.png"));
                let written = async {
                    tokio::fs::create_dir_all(&dir).await?;
                    tokio::fs::write(&path, &png).await
                };
                written
                    .await
                    .map(|()| std::path::absolute(&path).unwrap_or(path))
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.msg),
        };
        let mut breaker = self
            .engine
            .capture_breaker
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match shot {
            Ok(path) => {
                *breaker = (0, None);
                receipt.add_data_field("screenshot", json!(format!("/data/{}/{seq}.png", task.id)));
                receipt.add_data_field("screenshot_path", json!(path.display().to_string()));
            }
            Err(e) => {
                drop(breaker);
                self.capture_failed();
                receipt.add_data_field("screenshot_error", json!(e));
            }
        }
    }

    /// Counts a capture failure; the third in a row opens the breaker.
    pub(super) fn capture_failed(&self) {
        let mut breaker = self
            .engine
            .capture_breaker
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        breaker.0 += 1;
        if breaker.0 >= CAPTURE_FAIL_THRESHOLD {
            *breaker = (0, Some(Instant::now() + CAPTURE_COOLDOWN));
        }
    }
}
