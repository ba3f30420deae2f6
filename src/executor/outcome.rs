//! The outcome step of the pipeline: the receipt of a command's outcome with its common fields —
//! page context on failures, `started`/`retryable` of a failed command, the notes on actions
//! that may have acted, a revived page, and the report of params a command never read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ms_since, Call, Executor};
use crate::browser::task::{Revival, Task, TaskId};
use crate::command::{CommandSpec, Group};
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params, Receipt};

/// How long reading the page context of a failure may take.
const PAGE_CONTEXT_BOUND: Duration = Duration::from_millis(800);

impl Executor {
    /// The outcome step: the receipt of the attempts' outcome. On success, the data and
    /// `unknownParams`; on failure, the typed error with `started`, a note on an action that may
    /// have acted, and — while the lane is still held — a revived page and the page context.
    pub(super) async fn outcome(
        &self,
        call: &Call<'_>,
        params: &Params,
        task: Option<&Arc<Task>>,
        lane_held: bool,
        outcome: Result<Value, CommandError>,
        retry_safe: bool,
    ) -> Receipt {
        let (method, spec) = (call.method, call.spec);
        let e = match outcome {
            Ok(data) => {
                let mut receipt = Receipt::success(method, data, 0.0);
                self.report_unknown(&mut receipt, spec, params);
                return receipt;
            }
            Err(e) => e,
        };
        // Nothing ran for a bad argument, nor for an action refused by its own checks; but a
        // command the browser got and never answered has started, whatever its code.
        let started = !e.not_started
            && (e.outcome_unknown
                || !(e.code == ErrorCode::InvalidArgument || e.code.before_acting()));
        let code = e.code;
        // No answer in time from a page that got the command: it may be wedged.
        let unanswered = code == ErrorCode::CommandTimeout
            || (e.outcome_unknown && code == ErrorCode::ActionTimeout);
        let mut receipt = self.failed(method, spec, params, e, started, call.t0);
        if code == ErrorCode::SpuriousDispatch && !retry_safe {
            // It may have acted: never resend blindly (§5.2).
            receipt.add_data_field("spuriousDispatch", json!(true));
            receipt.set_code(ErrorCode::ActionUncertain);
            receipt.set_not_retryable();
            receipt.add_data_field(
                "note",
                json!("event-pump noise hit an action that may have taken effect: read the page before resending (retryOnSpurious:true only after verifying)"),
            );
        }
        if code == ErrorCode::PageNavigating && !retry_safe {
            receipt.add_data_field(
                "note",
                json!("the page navigated under an action that may have taken effect: read the page (get_url, get_browser_state) before resending"),
            );
        }
        // A page that did not answer must not wedge the task: get the tab back before the lane
        // is let go, so the next command meets a page that answers.
        if let Some(t) = task.filter(|_| lane_held && unanswered && spec.group != Group::Lifecycle)
        {
            if let Some(recovery) = recovery_report(t.revive().await) {
                receipt.add_data_field("pageRecovery", recovery);
            }
        }
        if let Some(t) = task.filter(|_| lane_held && code.wants_page_context()) {
            self.add_page_context(&mut receipt, t).await;
        }
        receipt
    }

    /// Page context on a failure (PROTOCOL.md §4.3): `urlAfter` and `titleAfter`, unless the
    /// command set them; read within a short bound and silently skipped when unreadable.
    pub(super) async fn add_page_context(&self, receipt: &mut Receipt, task: &Task) {
        let Ok(tab) = task.tab() else {
            return;
        };
        if tab.is_crashed() {
            return;
        }
        let read = async { (tab.url().await, tab.title().await) };
        if let Ok((url, title)) = tokio::time::timeout(PAGE_CONTEXT_BOUND, read).await {
            if let Ok(url) = url {
                receipt.add_data_field("urlAfter", json!(url));
            }
            if let Ok(title) = title {
                receipt.add_data_field("titleAfter", json!(title));
            }
        }
    }

    pub(super) fn failed(
        &self,
        method: &str,
        spec: &CommandSpec,
        params: &Params,
        e: CommandError,
        started: bool,
        t0: Instant,
    ) -> Receipt {
        let mut receipt = Receipt::failure(
            method,
            e.code,
            format!("{method}: {}", e.msg),
            e.details.map(|d| *d),
            started,
            0.0,
        );
        // A failure may make itself retryable only if it did not start; it may always say that
        // no resend can help (a port the browser refuses).
        match e.retry_as {
            Some(Some(ms)) if !started => receipt.set_retryable(ms),
            Some(None) => receipt.set_not_retryable(),
            _ => {}
        }
        if started && !spec.retry_safe {
            // The command began and may have acted (clicked, typed, submitted): resending is
            // safe only for retry-safe commands (PROTOCOL.md §4: started:true implies
            // retryable:false).
            receipt.set_not_retryable();
        }
        if let Some(param) = e.param {
            receipt.add_data_field("param", json!(param));
        }
        self.report_unknown(&mut receipt, spec, params);
        receipt.elapsed_ms = ms_since(t0);
        receipt
    }

    pub(super) fn report_unknown(
        &self,
        receipt: &mut Receipt,
        spec: &CommandSpec,
        params: &Params,
    ) {
        let unknown = params.unread();
        if unknown.is_empty() {
            return;
        }
        let used = params
            .read_keys()
            .iter()
            .filter(|k| params.raw().contains_key(k.as_str()))
            .cloned()
            .collect::<Vec<_>>();
        let mut note = format!(
            "{} ignored these parameters: {}. They were not used by this command (likely misspelled or unsupported).",
            spec.name,
            unknown.join(", ")
        );
        for name in &unknown {
            // A confusable pair first (PROTOCOL.md §7: `index` for `pageIndex`), then near names.
            let confused = crate::protocol::params::CONFUSABLE
                .iter()
                .find(|(sent, meant)| sent == name && spec.param(meant).is_some());
            if let Some((sent, meant)) = confused {
                note.push_str(&format!(
                    " `{name}`: did you mean `{meant}`? ({})",
                    crate::protocol::params::confusion_hint(sent, meant)
                ));
            } else if let Some(near) =
                crate::registry::suggest_among(name, spec.params.iter().map(|p| p.name)).first()
            {
                note.push_str(&format!(" `{name}`: did you mean `{near}`?"));
            }
        }
        if used.is_empty() {
            note.push_str(" No parameter was read at all.");
        } else {
            note.push_str(&format!(
                " Parameters actually used this time: {}.",
                used.join(", ")
            ));
        }
        receipt.add_data_field("unknownParams", json!(unknown));
        receipt.add_data_field("unknownParamNote", json!(note));
    }

    pub(super) fn no_task_message(&self, id: TaskId) -> String {
        format!(
            "no task {id} (tasks live in memory only and vanish when the engine restarts; \
             `list_tasks` shows the live ones, `start` creates one)"
        )
    }
}

/// The `pageRecovery` field of a receipt whose command met a page that did not answer, or
/// `None` when nothing had to be done.
fn recovery_report(revival: Revival) -> Option<Value> {
    Some(match revival {
        Revival::NoTab | Revival::Crashed | Revival::Answering => return None,
        Revival::ScriptStopped => json!({
            "action": "scriptTerminated",
            "note": "a script kept the page's main thread busy; it was stopped (Runtime.terminateExecution) and the tab answers again. The page's own state is as the script left it: read it before acting again",
        }),
        Revival::Replaced { url, loaded } => json!({
            "action": "tabReplaced",
            "url": url,
            "loaded": loaded,
            "note": "the tab did not answer even after its script was stopped; it was replaced by a fresh tab at the same URL (what was typed or changed on the old page is gone)",
        }),
        Revival::Failed(error) => json!({
            "action": "failed",
            "error": error,
            "note": "the tab does not answer and could not be replaced: close this task and start a new one",
        }),
    })
}
