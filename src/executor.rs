//! The executor: the one path every command takes, whoever calls it.
//!
//! validate params → take the task's lane (bounded wait) → run the handler under a deadline →
//! turn every failure into a typed receipt (panics included). Only this file decides `started`,
//! timeouts and (later) retries, capture and trace.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{json, Value};

use crate::browser::task::{Task, TaskId};
use crate::browser::Tab;
use crate::engine::Engine;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params, Receipt};
use crate::registry::{self, CommandSpec};

/// What a handler gets besides its params.
#[derive(Clone)]
pub struct Cx {
    /// The engine.
    pub engine: Arc<Engine>,
    /// The task id of the envelope, if any (for `start`: the requested id).
    pub task_id: Option<TaskId>,
    /// The live task, for commands that need one.
    pub task: Option<Arc<Task>>,
    /// The spec of the running command.
    pub spec: &'static CommandSpec,
}

impl Cx {
    /// The task (present for every `needs_task` command).
    pub fn task(&self) -> Result<Arc<Task>, CommandError> {
        self.task
            .clone()
            .ok_or_else(|| CommandError::invalid("id", "missing parameter `id` (task id)"))
    }

    /// The task's current tab.
    pub fn tab(&self) -> Result<Arc<Tab>, CommandError> {
        self.task()?.tab()
    }
}

/// Commands followed by a screenshot of the page (PROTOCOL.md §8, PAGE_CHANGING; the ones
/// registered so far among them).
const AUTO_CAPTURE: &[&str] = &[
    "click_element_by_index",
    "close_modal",
    "execute_js",
    "go_back",
    "go_forward",
    "go_to_url",
    "input_text",
    "navigate",
    "reload",
    "type_text",
    "wait",
];
/// The most a capture may add to a command (§8: browser.capture.timeoutMs 8000).
const CAPTURE_BOUND: Duration = Duration::from_secs(8);
/// Consecutive capture failures that open the breaker, and for how long (§8: 3, 120 s).
const CAPTURE_FAIL_THRESHOLD: u32 = 3;
const CAPTURE_COOLDOWN: Duration = Duration::from_secs(120);

/// At most this many extra attempts of a retry-safe command (PROTOCOL.md §5: 2).
const MAX_RETRIES: u32 = 2;
/// The window those attempts share (§5: 30 s, and never past the command's bound).
const RETRY_WINDOW: Duration = Duration::from_secs(30);
/// Pause before resending after spurious noise (§5: 120 ms).
const SPURIOUS_DELAY: Duration = Duration::from_millis(120);
/// Pause before resending while the page navigates (§5: 200..1000 ms).
const NAVIGATING_DELAY: Duration = Duration::from_millis(300);
/// How long reading the page context of a failure may take.
const PAGE_CONTEXT_BOUND: Duration = Duration::from_millis(800);

/// Commands that do not queue behind the task's lane: `close` cancels what runs instead
/// (PROTOCOL.md §18); the human-input commands that never touch the page run beside whatever
/// holds the lane, so a `submit_human_input` is never stuck behind a `get_human_input`
/// long-poll (or a long `wait`) of the same task.
const LANE_FREE: &[&str] = &["close", "ask_user", "submit_human_input", "get_human_input"];

/// The executor: a cheap clone handle.
#[derive(Clone)]
pub struct Executor {
    engine: Arc<Engine>,
}

fn ms_since(t0: Instant) -> f64 {
    (t0.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

impl Executor {
    /// An executor over `engine`.
    pub fn new(engine: Arc<Engine>) -> Executor {
        Executor { engine }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Runs `method` with `params` for `task_id` and answers with a receipt. Never panics,
    /// never waits longer than the command's bound plus the lane wait.
    pub async fn execute(&self, task_id: Option<TaskId>, method: &str, params: Value) -> Receipt {
        let t0 = Instant::now();
        let Some(spec) = registry::lookup(method) else {
            let msg = registry::unknown_method_message(method);
            let receipt = Receipt::failure(
                method,
                ErrorCode::UnknownMethod,
                msg,
                None,
                false,
                ms_since(t0),
            );
            self.engine.trace(task_id, method, params, &receipt);
            return receipt;
        };
        let traced = self.engine.tracing().then(|| params.clone());
        let receipt = self.execute_spec(spec, task_id, method, params, t0).await;
        if let Some(params) = traced {
            self.engine.trace(task_id, method, params, &receipt);
        }
        receipt
    }

    async fn execute_spec(
        &self,
        spec: &'static CommandSpec,
        task_id: Option<TaskId>,
        method: &str,
        params: Value,
        t0: Instant,
    ) -> Receipt {
        let fail = |code: ErrorCode, msg: String, details: Option<Value>, started: bool| {
            Receipt::failure(
                method,
                code,
                format!("{method}: {msg}"),
                details,
                started,
                ms_since(t0),
            )
        };
        // Overload is answered at once, never queued: nothing ran, resending later is safe.
        let exempt = matches!(spec.name, "close" | "shutdown"); // the way out of an overload
        let permit = if exempt {
            None
        } else {
            Some(self.engine.in_flight.try_acquire())
        };
        let Ok(_permit) = permit.transpose() else {
            let limit = self.engine.config.max_in_flight;
            let mut receipt = fail(
                ErrorCode::CommandTimeout,
                format!("not executed: server concurrency full ({limit} commands in flight)"),
                Some(json!({"overloaded": true, "inFlightLimit": limit,
                    "commandTimeoutMs": self.engine.config.command_timeout.as_millis() as u64})),
                false,
            );
            receipt.set_retryable(500);
            return receipt;
        };
        let mut params = match Params::new(params) {
            Ok(p) => p,
            Err(e) => return fail(e.code, e.msg, e.details.map(|d| *d), false),
        };
        let task = match (spec.needs_task, task_id) {
            (true, None) => {
                return fail(
                    ErrorCode::InvalidArgument,
                    "missing parameter `id` (task id); `start` creates one".into(),
                    None,
                    false,
                )
            }
            (true, Some(id)) => match self.engine.task(id) {
                Some(t) => Some(t),
                None => {
                    return fail(
                        ErrorCode::TaskNotFound,
                        self.no_task_message(id),
                        None,
                        false,
                    )
                }
            },
            (false, Some(id)) => self.engine.task(id),
            (false, None) => None,
        };
        let _lane = match &task {
            Some(t) if spec.needs_task && !LANE_FREE.contains(&spec.name) => {
                // Fast path without a timer: the lane is usually free.
                let lane = match t.lane.try_lock() {
                    Ok(guard) => Ok(guard),
                    Err(_) => {
                        tokio::time::timeout(self.engine.config.lane_wait, t.lane.lock()).await
                    }
                };
                match lane {
                    Ok(guard) => Some(guard),
                    Err(_) => {
                        let waited = self.engine.config.lane_wait.as_millis();
                        return fail(
                            ErrorCode::TaskBusy,
                            format!(
                                "not executed: another command of the same task is running; waited {waited} ms"
                            ),
                            Some(json!({"serialized": true})),
                            false,
                        );
                    }
                }
            }
            _ => None,
        };
        if task.as_ref().is_some_and(|t| t.is_closed()) && spec.name != "close" {
            return fail(
                ErrorCode::TaskNotFound,
                "the task was closed while this command waited for its turn".into(),
                None,
                false,
            );
        }
        // Retry-safe commands (or a caller's retryOnSpurious) are resent on page-navigation
        // and spurious-dispatch noise, within one budget (PROTOCOL.md §5): at most
        // MAX_RETRIES extra attempts inside RETRY_WINDOW and the command's own bound.
        let opted_in = params.raw().get("retryOnSpurious") == Some(&Value::Bool(true));
        let retry_safe = spec.retry_safe || opted_in;
        // The engine resends by itself only what cannot act twice: pure reads on any noise,
        // and on the caller's opt-in, spurious noise only (a navigation may follow an action
        // that took effect). Retry-safe navigations (reload, go_back) are resent by callers.
        let auto_navigating = spec.retry_safe && !spec.mutates_page;
        let auto_spurious = auto_navigating || opted_in;
        let raw_params =
            (auto_navigating || auto_spurious).then(|| Value::Object(params.raw().clone()));
        let bound = if spec.long_running {
            self.engine.config.long_command_timeout
        } else {
            self.engine.config.command_timeout
        };
        let window = bound.min(RETRY_WINDOW);
        // The bound counts from here, after the lane: waiting for one's turn is not running.
        let t_run = Instant::now();
        let mut retries = 0u32;
        let mut recovered: Option<(ErrorCode, u32)> = None;
        let outcome = loop {
            let cx = Cx {
                engine: self.engine.clone(),
                task_id,
                task: task.clone(),
                spec,
            };
            // The synchronous part reads params; nothing has touched the browser yet.
            let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                (spec.handler)(cx, &mut params)
            })) {
                Ok(Ok(fut)) => fut,
                Ok(Err(e)) => return self.failed(method, spec, &params, e, false, t0),
                Err(panic) => {
                    return fail(
                        ErrorCode::Internal,
                        format!("internal error: {}", panic_text(&*panic)),
                        None,
                        false,
                    )
                }
            };
            let left = bound.saturating_sub(t_run.elapsed());
            let outcome = self.run_bounded(spec, &task, fut, left, bound).await;
            let noise = match &outcome {
                Err(e) if e.code == ErrorCode::PageNavigating => auto_navigating,
                Err(e) if e.code == ErrorCode::SpuriousDispatch => auto_spurious,
                _ => false,
            };
            let delay = match &outcome {
                Err(e) if e.code == ErrorCode::PageNavigating => NAVIGATING_DELAY,
                _ => SPURIOUS_DELAY,
            };
            let room = window.saturating_sub(t_run.elapsed());
            if !(noise && retries < MAX_RETRIES && room > delay + SPURIOUS_DELAY) {
                break outcome;
            }
            retries += 1;
            if let Err(e) = &outcome {
                recovered = Some((e.code, retries));
            }
            tokio::time::sleep(delay).await;
            if let Some(raw) = &raw_params {
                if let Ok(fresh) = Params::new(raw.clone()) {
                    params = fresh;
                }
            }
        };
        let budget = json!({
            "attempts": retries + 1,
            "retries": retries,
            "commandAttempts": retries + 1,
            "elapsedMs": t_run.elapsed().as_millis() as u64,
            "remainingMs": window.saturating_sub(t_run.elapsed()).as_millis() as u64,
        });
        let mut receipt = match outcome {
            Ok(data) => {
                let mut receipt = Receipt::success(method, data, 0.0);
                self.report_unknown(&mut receipt, spec, &params);
                receipt
            }
            Err(e) => {
                // Nothing ran for a bad argument, nor for an action refused by its own checks.
                let started = !(e.code == ErrorCode::InvalidArgument || e.code.before_acting());
                let code = e.code;
                let mut receipt = self.failed(method, spec, &params, e, started, t0);
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
                let lane_held = _lane.is_some();
                if let Some(t) = task
                    .as_ref()
                    .filter(|_| lane_held && code.wants_page_context())
                {
                    self.add_page_context(&mut receipt, t).await;
                }
                receipt
            }
        };
        if receipt.ok && AUTO_CAPTURE.contains(&spec.name) {
            if let Some(t) = &task {
                let mut captured = receipt.clone();
                match tokio::time::timeout(CAPTURE_BOUND, self.capture(&mut captured, t)).await {
                    Ok(()) => receipt = captured,
                    Err(_) => {
                        self.capture_failed();
                        receipt.add_data_field(
                            "screenshot_error",
                            json!(format!(
                                "no screenshot within {} ms",
                                CAPTURE_BOUND.as_millis()
                            )),
                        );
                    }
                }
            }
        }
        if receipt.data.is_object() {
            receipt.add_data_field("retryBudget", budget);
            if let Some((code, attempts)) = recovered.filter(|_| receipt.ok) {
                let key = if code == ErrorCode::PageNavigating {
                    "pageNavigatingRetry"
                } else {
                    "spuriousRetry"
                };
                receipt.add_data_field(
                    key,
                    json!({"attempts": attempts + 1, "errorCode": code.as_str(), "note": "recovered by resending a retry-safe command"}),
                );
            }
        }
        receipt.elapsed_ms = ms_since(t0);
        receipt
    }

    /// Runs one attempt of a command under `left` of its `bound`, racing browser death and the
    /// task's closing; a panic becomes `INTERNAL`.
    async fn run_bounded(
        &self,
        spec: &CommandSpec,
        task: &Option<Arc<Task>>,
        fut: crate::registry::CommandFuture,
        left: Duration,
        bound: Duration,
    ) -> Result<Value, CommandError> {
        let run = AssertUnwindSafe(fut).catch_unwind();
        // Lifecycle commands stop the browser themselves; they must not read that as a failure.
        let browser_gone = async {
            match task {
                Some(t) if spec.group != "lifecycle" => t.browser.gone().await,
                _ => std::future::pending().await,
            }
        };
        let task_closed = async {
            match task {
                Some(t) if spec.name != "close" => t.closed().await,
                _ => std::future::pending().await,
            }
        };
        // A crashed renderer answers nothing (Chromium does not recover the tab's session for
        // a navigation either): fail at once rather than after the 60 s request timeout.
        let tab_crashed = async {
            match task.as_ref().and_then(|t| t.tab().ok()) {
                Some(tab) if spec.group != "lifecycle" => tab.crashed().await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
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
            _ = browser_gone => Err(CommandError::browser_gone()),
            _ = task_closed => Err(CommandError::new(
                ErrorCode::TaskNotFound,
                "the task was closed while this command ran",
            )),
            _ = tab_crashed => Err(CommandError::new(
                ErrorCode::ActionFailed,
                "the tab's renderer crashed; close this task and start a new one (other tasks are unaffected)",
            ).with_details(json!({"crashed": true}))),
        }
    }

    /// Evidence after a page-changing command (PROTOCOL.md §8): `seq`, `screenshot`,
    /// `screenshot_path` — or why not (`screenshot_skipped`, `screenshot_error`,
    /// `capture_degraded`). Never fails the command; a breaker stops trying after repeated
    /// failures for a while.
    async fn capture(&self, receipt: &mut Receipt, task: &Task) {
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
    fn capture_failed(&self) {
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

    /// Page context on a failure (PROTOCOL.md §4.3): `urlAfter` and `titleAfter`, unless the
    /// command set them; read within a short bound and silently skipped when unreadable.
    async fn add_page_context(&self, receipt: &mut Receipt, task: &Task) {
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

    fn failed(
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

    fn report_unknown(&self, receipt: &mut Receipt, spec: &CommandSpec, params: &Params) {
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
            if let Some(near) =
                registry::suggest_among(name, spec.params.iter().map(|p| p.name)).first()
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

    fn no_task_message(&self, id: TaskId) -> String {
        format!(
            "no task {id} (tasks live in memory only and vanish when the engine restarts; \
             `list_tasks` shows the live ones, `start` creates one)"
        )
    }

    /// How long the lane wait is, for hosts that print it.
    pub fn lane_wait(&self) -> Duration {
        self.engine.config.lane_wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;
    use crate::registry::{CommandFuture, Kind, ParamSpec};

    fn panics_now(_cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
        panic!("boom in the params reader")
    }

    fn panics_later(_cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
        let n = p.int_req("n")?;
        Ok(Box::pin(async move {
            tokio::task::yield_now().await;
            if n > 0 {
                panic!("boom in the handler");
            }
            Ok(json!({"n": n}))
        }))
    }

    const fn spec(name: &'static str, handler: crate::registry::Handler) -> CommandSpec {
        CommandSpec {
            name,
            group: "meta",
            summary: "test",
            doc: "test",
            params: &[ParamSpec {
                name: "n",
                kind: Kind::Int,
                required: false,
                default: None,
                doc: "n",
            }],
            needs_task: false,
            mutates_page: false,
            retry_safe: true,
            long_running: false,
            alias_of: None,
            example: "",
            handler,
        }
    }

    use std::sync::atomic::{AtomicU32, Ordering};

    /// Fails with PAGE_NAVIGATING (or spurious noise with `spurious`) until it has been called
    /// `n` times, counting in `COUNTS[slot]`.
    static COUNTS: [AtomicU32; 4] = [
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
    ];

    fn flaky(_cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
        let n = p.int_req("n")? as u32;
        let slot = p.int_opt("slot")?.unwrap_or(0) as usize;
        let spurious = p.bool_or("spurious", false)?;
        Ok(Box::pin(async move {
            let calls = COUNTS[slot].fetch_add(1, Ordering::SeqCst) + 1;
            if calls < n {
                let code = if spurious {
                    ErrorCode::SpuriousDispatch
                } else {
                    ErrorCode::PageNavigating
                };
                return Err(CommandError::new(code, "noise"));
            }
            Ok(json!({"calls": calls}))
        }))
    }

    const fn flaky_spec(name: &'static str, retry_safe: bool) -> CommandSpec {
        CommandSpec {
            name,
            group: "meta",
            summary: "test",
            doc: "test",
            params: &[
                ParamSpec {
                    name: "n",
                    kind: Kind::Int,
                    required: true,
                    default: None,
                    doc: "n",
                },
                ParamSpec {
                    name: "slot",
                    kind: Kind::Int,
                    required: false,
                    default: None,
                    doc: "slot",
                },
                ParamSpec {
                    name: "spurious",
                    kind: Kind::Bool,
                    required: false,
                    default: None,
                    doc: "s",
                },
            ],
            needs_task: false,
            mutates_page: !retry_safe,
            retry_safe,
            long_running: false,
            alias_of: None,
            example: "",
            handler: flaky,
        }
    }

    static READ: CommandSpec = flaky_spec("flaky_read", true);
    static ACT: CommandSpec = flaky_spec("flaky_action", false);

    #[test]
    fn reads_are_resent_through_navigation_within_the_budget() {
        let r = run(&READ, json!({"n": 3, "slot": 0}));
        assert!(r.ok, "{:?}", r.msg);
        assert_eq!(r.data["calls"], 3);
        assert_eq!(r.data["retryBudget"]["attempts"], 3);
        assert_eq!(r.data["retryBudget"]["retries"], 2);
        assert_eq!(
            r.data["pageNavigatingRetry"]["errorCode"],
            "PAGE_NAVIGATING"
        );
        // Out of retries: the failure stands, retryable for a read.
        let r = run(&READ, json!({"n": 10, "slot": 1}));
        assert_eq!(r.code, Some(ErrorCode::PageNavigating));
        assert!(r.retryable);
        assert_eq!(r.data["retryBudget"]["retries"], 2);
        assert_eq!(
            COUNTS[1].load(Ordering::SeqCst),
            3,
            "one first try and two retries"
        );
    }

    #[test]
    fn actions_are_never_resent_and_say_so() {
        let r = run(&ACT, json!({"n": 2, "slot": 2}));
        assert_eq!(r.code, Some(ErrorCode::PageNavigating));
        assert!(
            !r.retryable,
            "an action that hit a navigation may have acted"
        );
        assert!(r.data["note"].as_str().unwrap().contains("read the page"));
        assert_eq!(COUNTS[2].load(Ordering::SeqCst), 1, "sent once");
        let r = run(&ACT, json!({"n": 2, "slot": 3, "spurious": true}));
        assert_eq!(r.code, Some(ErrorCode::ActionUncertain));
        assert_eq!(r.data["spuriousDispatch"], true);
        assert!(!r.retryable);
        // The caller's opt-in makes the call retry-safe.
        let r = run(
            &ACT,
            json!({"n": 4, "slot": 3, "spurious": true, "retryOnSpurious": true}),
        );
        assert!(r.ok, "{:?}", r.msg);
        assert_eq!(r.data["spuriousRetry"]["errorCode"], "SPURIOUS_DISPATCH");
        assert!(
            r.data.get("unknownParams").is_none(),
            "retryOnSpurious is a framework param"
        );
    }

    static NOW: CommandSpec = spec("panics_now", panics_now);
    static LATER: CommandSpec = spec("panics_later", panics_later);

    fn run(spec: &'static CommandSpec, params: Value) -> Receipt {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ex = Executor::new(Engine::new(EngineConfig::default()));
        rt.block_on(ex.execute_spec(spec, None, spec.name, params, Instant::now()))
    }

    #[test]
    fn panics_become_internal_receipts() {
        let r = run(&NOW, json!({}));
        assert_eq!(r.code, Some(ErrorCode::Internal));
        assert!(!r.started);
        assert!(r.msg.unwrap().contains("boom in the params reader"));
        let r = run(&LATER, json!({"n": 1}));
        assert_eq!(r.code, Some(ErrorCode::Internal));
        assert!(r.started);
        assert!(r.msg.unwrap().contains("boom in the handler"));
        let ok = run(&LATER, json!({"n": 0, "extra": true}));
        assert!(ok.ok);
        assert_eq!(ok.data["n"], 0);
        assert_eq!(ok.data["unknownParams"], json!(["extra"]));
    }
}
