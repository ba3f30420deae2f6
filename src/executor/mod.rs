//! The executor: the one path every command takes, whoever calls it.
//!
//! in-flight bound → params checked against the spec → task → lane (bounded wait) → handler under
//! its deadline (`race.rs`) → retries of retry-safe commands on navigation and event-pump noise →
//! typed failure with page context (`outcome.rs`) → evidence (`capture.rs`, written in the
//! background and awaited before the task's next command) → trace. Only this module decides
//! `started`, deadlines, lanes, retries, capture and trace, and it decides them from the
//! command's spec, never from its name.

mod capture;
mod nested;
mod outcome;
mod race;
mod recipe_host;

pub use recipe_host::{RecipeHost, Script, ScriptCommand, ScriptEnd};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::command::{CommandSpec, Cx, Group, Handler, Lane, TaskCx};
use crate::engine::Engine;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params, Receipt};
use outcome::recovery_report;

/// At most this many extra attempts of a retry-safe command (PROTOCOL.md §5: 2).
const MAX_RETRIES: u32 = 2;
/// The window those attempts share (§5: 30 s, and never past the command's bound).
const RETRY_WINDOW: Duration = Duration::from_secs(30);
/// Pause before resending after spurious noise (§5: 120 ms).
const SPURIOUS_DELAY: Duration = Duration::from_millis(120);
/// Pause before resending while the page navigates (§5: 200..1000 ms).
const NAVIGATING_DELAY: Duration = Duration::from_millis(300);

/// How a command holds its task's lane: taken by itself, or inherited from the running command
/// that sent it (a batch step runs inside its batch's lane).
enum LaneHold<'a> {
    /// Taken for this command.
    Own(#[allow(dead_code)] tokio::sync::MutexGuard<'a, ()>),
    /// The sending command holds it.
    Inherited,
}

/// The executor: a cheap clone handle.
#[derive(Clone)]
pub struct Executor {
    engine: Arc<Engine>,
    /// What runs a recipe's script (`run_recipe` of a Lua recipe).
    recipes: Arc<dyn RecipeHost>,
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
    /// An executor over `engine` whose recipe scripts run in `recipes` (the Lua bridge's:
    /// `lua::recipe_host()`).
    pub fn new(engine: Arc<Engine>, recipes: Arc<dyn RecipeHost>) -> Executor {
        Executor { engine, recipes }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Runs `method` with `params` for `task_id` and answers with a receipt. Never panics,
    /// never waits longer than the command's bound plus the lane wait, plus — when the page did
    /// not answer — the revival of its tab (`Task::revive`, 20 s at most).
    pub async fn execute(&self, task_id: Option<TaskId>, method: &str, params: Value) -> Receipt {
        self.execute_in(task_id, method, params, None).await
    }

    /// [`Executor::execute`] for a call made by a running command (`within`): a call on the
    /// task whose lane that command holds runs inside it instead of waiting for it.
    async fn execute_in(
        &self,
        task_id: Option<TaskId>,
        method: &str,
        params: Value,
        within: Option<nested::Within>,
    ) -> Receipt {
        let t0 = Instant::now();
        let registry = crate::commands::registry();
        let Some(spec) = registry.lookup(method) else {
            let msg = registry.unknown_method_message(method);
            let mut receipt = Receipt::failure(
                method,
                ErrorCode::UnknownMethod,
                msg,
                None,
                false,
                ms_since(t0),
            );
            receipt.redact_echoes();
            self.engine.trace(task_id, method, &[], params, &receipt);
            return receipt;
        };
        let traced = self.engine.tracing().then(|| params.clone());
        let mut receipt = self
            .execute_spec(spec, task_id, method, params, t0, within)
            .await;
        // Every caller and the trace see the same masked echoes.
        receipt.redact_echoes();
        if let Some(params) = traced {
            self.engine
                .trace(task_id, method, spec.params, params, &receipt);
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
        within: Option<nested::Within>,
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
        // A call of a running command on that command's own task (a batch step) runs inside the
        // lane that command holds: waiting for it would wait for itself.
        let inherited = within.filter(|w| w.shares_lane(task_id));
        // Overload is answered at once, never queued: nothing ran, resending later is safe. A
        // step inside its sender's lane takes no permit of its own: the sender holds one (a
        // running batch must not meet "concurrency full" halfway).
        let permit = if spec.way_out || inherited.is_some() {
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
        let task = match (spec.needs_task(), task_id) {
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
        // Every declared param is checked the same way before the handler runs (kind, presence,
        // range), and before the lane, so a bad argument is answered at once. Nothing has run:
        // `started:false`. Nothing was read either, so no param is reported as unknown.
        if let Some(e) = spec.params.iter().find_map(|p| p.check(&params).err()) {
            let param = e.param.clone();
            let mut receipt = fail(e.code, e.msg, e.details.map(|d| *d), false);
            if let Some(param) = param {
                receipt.add_data_field("param", json!(param));
            }
            return receipt;
        }
        let _lane = match &task {
            Some(_) if spec.needs_task() && inherited.is_some() => Some(LaneHold::Inherited),
            Some(t) if spec.needs_task() && spec.lane == Lane::Queued => {
                // Fast path without a timer: the lane is usually free.
                let lane = match t.lane.try_lock() {
                    Ok(guard) => Ok(guard),
                    Err(_) => {
                        tokio::time::timeout(self.engine.config.lane_wait, t.lane.lock()).await
                    }
                };
                match lane {
                    Ok(guard) => Some(LaneHold::Own(guard)),
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
        if task.as_ref().is_some_and(|t| t.is_closed()) && !spec.way_out {
            return fail(
                ErrorCode::TaskNotFound,
                "the task was closed while this command waited for its turn".into(),
                None,
                false,
            );
        }
        // Evidence of the task's previous command may still be being written (capture.rs): the
        // files its receipt named exist before this command touches the page. Each job is
        // bounded (EVIDENCE_BOUND), so this wait is too. A job that failed is reported here.
        let earlier_failure = match (&task, &_lane) {
            (Some(t), Some(_)) => {
                if t.evidence_pending() {
                    t.evidence_settled().await;
                }
                t.take_evidence_failure()
            }
            _ => None,
        };
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
        let mut bound = if spec.long_running {
            self.engine.config.long_command_timeout
        } else {
            self.engine.config.command_timeout
        };
        if spec.group == Group::Lifecycle {
            // `start` may wait for a fleet's queue (`--cdp-wait`) longer than a command runs.
            bound = bound.max(self.engine.config.launch_bound() + Duration::from_secs(10));
        }
        let window = bound.min(RETRY_WINDOW);
        // The bound counts from here, after the lane: waiting for one's turn is not running.
        let t_run = Instant::now();
        let mut retries = 0u32;
        let mut recovered: Option<(ErrorCode, u32)> = None;
        let outcome = loop {
            // The synchronous part reads params; nothing has touched the browser yet.
            let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
                match (spec.handler, &task) {
                    (Handler::Task(read), Some(task)) => read(&mut params).map(|work| {
                        work(TaskCx {
                            engine: self.engine.clone(),
                            task: task.clone(),
                            spec,
                            deadline: t_run + bound,
                            calls: nested::Nested::handle(self, task.id, within, _lane.is_some()),
                        })
                    }),
                    // Unreachable: a task command without its task was answered above.
                    (Handler::Task(_), None) => Err(CommandError::new(
                        ErrorCode::Internal,
                        "internal error: a task command without its task",
                    )),
                    (Handler::Engine(read), _) => read(&mut params).map(|work| {
                        work(Cx {
                            engine: self.engine.clone(),
                            task_id,
                            task: task.clone(),
                            spec,
                        })
                    }),
                }
            }));
            let fut = match prepared {
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
                // Nothing ran for a bad argument, nor for an action refused by its own checks;
                // but a command the browser got and never answered has started, whatever its code.
                let started = !e.not_started
                    && (e.outcome_unknown
                        || !(e.code == ErrorCode::InvalidArgument || e.code.before_acting()));
                let code = e.code;
                // No answer in time from a page that got the command: it may be wedged.
                let unanswered = code == ErrorCode::CommandTimeout
                    || (e.outcome_unknown && code == ErrorCode::ActionTimeout);
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
                // A page that did not answer must not wedge the task: get the tab back before
                // the lane is let go, so the next command meets a page that answers.
                if let Some(t) = task
                    .as_ref()
                    .filter(|_| lane_held && unanswered && spec.group != Group::Lifecycle)
                {
                    if let Some(recovery) = recovery_report(t.revive().await) {
                        receipt.add_data_field("pageRecovery", recovery);
                    }
                }
                if let Some(t) = task
                    .as_ref()
                    .filter(|_| lane_held && code.wants_page_context())
                {
                    self.add_page_context(&mut receipt, t).await;
                }
                receipt
            }
        };
        if receipt.ok && spec.auto_capture {
            if let Some(t) = &task {
                self.capture(&mut receipt, t);
            }
        }
        if let Some((seq, error)) = earlier_failure {
            receipt.add_data_field(
                "previous_capture_error",
                json!({"seq": seq, "screenshot_error": error}),
            );
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

    /// How long the lane wait is, for hosts that print it.
    pub fn lane_wait(&self) -> Duration {
        self.engine.config.lane_wait
    }
}

#[cfg(test)]
impl Executor {
    /// An executor for unit tests, which run no recipe script.
    pub(crate) fn bare(engine: Arc<Engine>) -> Executor {
        Executor::new(engine, Arc::new(recipe_host::NoRecipes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{boolean, int, Group, ParamSpec, Prepared};
    use crate::engine::EngineConfig;
    use crate::error::CommandError;

    fn panics_now(_p: &mut Params) -> Prepared<Cx> {
        panic!("boom in the params reader")
    }

    fn panics_later(p: &mut Params) -> Prepared<Cx> {
        let n = p.int_req("n")?;
        crate::command::run(move |_cx| async move {
            tokio::task::yield_now().await;
            if n > 0 {
                panic!("boom in the handler");
            }
            Ok(json!({"n": n}))
        })
    }

    const N: &[ParamSpec] = &[int("n", "n")];

    const fn spec(name: &'static str, handler: fn(&mut Params) -> Prepared<Cx>) -> CommandSpec {
        Group::Meta.engine(name, handler).summary("test").params(N)
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

    fn flaky(p: &mut Params) -> Prepared<Cx> {
        let n = p.int_req("n")? as u32;
        let slot = p.int_opt("slot")?.unwrap_or(0) as usize;
        let spurious = p.bool_or("spurious", false)?;
        crate::command::run(move |_cx| async move {
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
        })
    }

    const FLAKY: &[ParamSpec] = &[
        int("n", "n").req(),
        int("slot", "slot"),
        boolean("spurious", "s"),
    ];

    const fn flaky_spec(name: &'static str, retry_safe: bool) -> CommandSpec {
        Group::Meta
            .engine(name, flaky)
            .summary("test")
            .params(FLAKY)
            .mutates(!retry_safe)
            .retry_safe(retry_safe)
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
        let ex = Executor::bare(Engine::new(EngineConfig::default()));
        rt.block_on(ex.execute_spec(spec, None, spec.name, params, Instant::now(), None))
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
