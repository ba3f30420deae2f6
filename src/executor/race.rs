//! One attempt of a command, raced against its bound, browser death, its task's closing and a
//! renderer crash; a panic becomes `INTERNAL`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{json, Value};

use super::{panic_text, Executor};
use crate::browser::task::Task;
use crate::command::{CommandFuture, CommandSpec, Group};
use crate::error::CommandError;
use crate::protocol::ErrorCode;

impl Executor {
    /// Runs one attempt of a command under `left` of its `bound`, racing browser death and the
    /// task's closing; a panic becomes `INTERNAL`.
    pub(super) async fn run_bounded(
        &self,
        spec: &CommandSpec,
        task: Option<&Arc<Task>>,
        fut: CommandFuture,
        left: Duration,
        bound: Duration,
    ) -> Result<Value, CommandError> {
        let run = AssertUnwindSafe(fut).catch_unwind();
        // Lifecycle commands stop the browser themselves; they must not read that as a failure.
        let browser_gone = async {
            match task {
                Some(t) if spec.group != Group::Lifecycle => t.browser.gone().await,
                _ => std::future::pending().await,
            }
        };
        let task_closed = async {
            match task {
                Some(t) if !spec.way_out => t.closed().await,
                _ => std::future::pending().await,
            }
        };
        // A crashed renderer answers nothing (Chromium does not recover the tab's session for
        // a navigation either): fail at once rather than after the 60 s request timeout.
        let tab_crashed = async {
            match task.as_ref().and_then(|t| t.tab().ok()) {
                Some(tab) if spec.group != Group::Lifecycle => tab.crashed().await,
                _ => std::future::pending().await,
            }
        };
        let closed_error = || {
            CommandError::new(
                ErrorCode::TaskNotFound,
                "the task was closed while this command ran",
            )
        };
        // `biased`, the command first: when its task closes, a command that answers the closing
        // itself in the same poll wins — a batch's steps race the closing too, so the batch
        // returns its partial results (PROTOCOL.md §10) instead of the bare error below.
        let res = tokio::select! {
            biased;
            res = run => match res {
                Ok(res) => res,
                Err(panic) => Err(CommandError::new(
                    ErrorCode::Internal,
                    format!("internal error: {}", panic_text(&*panic)),
                )),
            },
            _ = tokio::time::sleep(left) => Err(CommandError::new(
                ErrorCode::CommandTimeout,
                format!("timed out after {} ms; outcome unknown", bound.as_millis()),
            ).with_details(json!({"outcomeUnknown": true, "commandTimeoutMs": bound.as_millis() as u64}))),
            // Before browser death: closing the last task stops the browser, and the closing is
            // what the command met.
            _ = task_closed => Err(closed_error()),
            // Said with its reason below, as a call that met the lost connection itself.
            _ = browser_gone => Err(CommandError::browser_gone()),
            _ = tab_crashed => Err(CommandError::new(
                ErrorCode::ActionFailed,
                "the tab's renderer crashed; close this task and start a new one (other tasks are unaffected)",
            ).with_details(json!({"crashed": true}))),
        };
        match res {
            // Closing the last task stops the browser: a command that meets the browser's end
            // first (its own calls race it too) met the closing.
            Err(e)
                if e.code == ErrorCode::BrowserGone
                    && task.as_ref().is_some_and(|t| t.is_closed()) =>
            {
                Err(closed_error())
            }
            // A call that met the lost connection itself says why it was lost, when known.
            Err(e) if e.code == ErrorCode::BrowserGone && spec.group != Group::Lifecycle => {
                Err(match task {
                    Some(t) if !t.browser.is_alive() => t.browser.gone_error(),
                    _ => e,
                })
            }
            other => other,
        }
    }
}
