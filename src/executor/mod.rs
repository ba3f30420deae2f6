//! The executor: the one path every command takes, whoever calls it.
//!
//! in-flight bound → params checked against the spec → task → lane (bounded wait) → handler under
//! its deadline (`race.rs`) → retries of retry-safe commands on navigation and event-pump noise →
//! typed failure with page context (`outcome.rs`) → evidence (`capture.rs`, written in the
//! background and awaited before the task's next command) → trace. Only this module decides
//! `started`, deadlines, lanes, retries, capture and trace, and it decides them from the
//! command's spec, never from its name. `Executor::execute_spec` runs these steps, one function
//! each.

mod capture;
mod nested;
mod outcome;
mod race;
mod recipe_host;

pub use recipe_host::{
    Dialect, RecipeHost, RunningScript, Script, ScriptCommand, ScriptEnd, ScriptSource,
};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::SemaphorePermit;

use crate::browser::task::{Task, TaskId};
use crate::command::{CommandFuture, CommandSpec, Cx, Group, Handler, Lane, TaskCx};
use crate::door::Trust;
use crate::engine::Engine;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params, Receipt};

/// At most this many extra attempts of a retry-safe command (PROTOCOL.md §5: 2).
const MAX_RETRIES: u32 = 2;
/// The window those attempts share (§5: 30 s, and never past the command's bound).
const RETRY_WINDOW: Duration = Duration::from_secs(30);
/// Pause before resending after spurious noise (§5: 120 ms).
const SPURIOUS_DELAY: Duration = Duration::from_millis(120);
/// Pause before resending while the page navigates (§5: 200..1000 ms): at least the minimum,
/// then until the main document has made no progress for `NAVIGATING_QUIET`, at most the maximum.
const NAVIGATING_DELAY: Duration = Duration::from_millis(200);
/// See `NAVIGATING_DELAY`.
const NAVIGATING_DELAY_MAX: Duration = Duration::from_millis(1000);
/// See `NAVIGATING_DELAY`.
const NAVIGATING_QUIET: Duration = Duration::from_millis(200);

/// The pause before a read is resent because the page navigated: `NAVIGATING_DELAY`, then
/// until the task's page has been quiet (no lifecycle event, commit or same-document move) for
/// `NAVIGATING_QUIET`, at most `cap` in all. A page that keeps navigating costs the cap; one
/// navigation costs about its own length.
async fn navigation_pause(task: &Task, cap: Duration) {
    let started = Instant::now();
    let progress = match task.tab() {
        Ok(tab) => tab.load_progress().await.ok(),
        Err(_) => None,
    };
    let Some(mut progress) = progress else {
        return tokio::time::sleep(NAVIGATING_DELAY.min(cap)).await;
    };
    let until = started + cap;
    let _ = tokio::time::timeout_at(until.into(), async {
        tokio::time::sleep(NAVIGATING_DELAY).await;
        // Progress already queued during the minimum is drained here, each restarting the quiet.
        while let Ok(Some(())) = tokio::time::timeout(NAVIGATING_QUIET, progress.next()).await {}
    })
    .await;
}

/// How a command holds its task's lane: taken by itself, or inherited from the running command
/// that sent it (a batch step runs inside its batch's lane).
enum LaneHold<'a> {
    /// Taken for this command.
    Own(#[allow(dead_code)] tokio::sync::MutexGuard<'a, ()>),
    /// The sending command holds it.
    Inherited,
}

/// A step's early answer: the receipt that ends the command there (boxed, so that what a step
/// hands the next one stays small).
type Answered = Box<Receipt>;

/// One command on its way through the pipeline: what every step reads of it.
struct Call<'a> {
    spec: &'static CommandSpec,
    method: &'a str,
    task_id: Option<TaskId>,
    /// When the executor got it (`elapsedMs` counts from here).
    t0: Instant,
    /// The running command that sent it, if any.
    within: Option<nested::Within>,
}

impl Call<'_> {
    /// The receipt of a command answered before its handler ran: nothing started.
    fn refused(&self, code: ErrorCode, msg: String, details: Option<Value>) -> Answered {
        Box::new(Receipt::failure(
            self.method,
            code,
            format!("{}: {msg}", self.method),
            details,
            false,
            ms_since(self.t0),
        ))
    }

    /// Whether it runs inside the lane its sender holds (a batch step on the batch's own
    /// task): waiting for that lane would wait for itself.
    fn inherits_lane(&self) -> bool {
        self.within.is_some_and(|w| w.shares_lane(self.task_id))
    }
}

/// Every declared param is checked the same way before the handler runs (kind, presence,
/// range), and before the lane, so a bad argument is answered at once. Nothing has run:
/// `started:false`. Nothing was read either, so no param is reported as unknown.
fn check_params(call: &Call<'_>, params: &Params) -> Result<(), Answered> {
    let Some(e) = call.spec.params.iter().find_map(|p| p.check(params).err()) else {
        return Ok(());
    };
    let param = e.param.clone();
    let mut msg = e.msg;
    // A missing param that the caller sent under a near name (`uri` for `url`): say so.
    if let Some(missing) = param.as_deref().filter(|m| params.raw().get(*m).is_none()) {
        let sent = params.raw().keys().filter(|k| call.spec.param(k).is_none());
        for key in sent {
            if crate::registry::suggest_among(key, [missing]).contains(&missing) {
                msg.push_str(&format!(
                    "; `{key}` is not a parameter of `{}`: did you mean `{missing}`?",
                    call.spec.name
                ));
                break;
            }
        }
    }
    let mut receipt = call.refused(e.code, msg, e.details.map(|d| *d));
    if let Some(param) = param {
        receipt.add_data_field("param", json!(param));
    }
    Err(receipt)
}

/// What a command's attempts came to (the race step).
struct Attempts {
    /// The last attempt's outcome.
    outcome: Result<Value, CommandError>,
    /// Whether the caller may resend it: its spec, or the caller's `retryOnSpurious`.
    retry_safe: bool,
    /// The resends the engine made.
    retries: Retries,
}

/// The resends the engine made, for the receipt.
struct Retries {
    /// `retryBudget`, measured when the attempts ended.
    budget: Value,
    /// The noise the last resend recovered from, and the resends until then.
    recovered: Option<(ErrorCode, u32)>,
}

impl Retries {
    /// `retryBudget` in an object receipt, and after a success, the noise resending recovered
    /// from.
    fn report(self, receipt: &mut Receipt) {
        if !receipt.data.is_object() {
            return;
        }
        receipt.add_data_field("retryBudget", self.budget);
        if let Some((code, attempts)) = self.recovered.filter(|_| receipt.ok) {
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
}

/// The executor: a cheap clone handle.
#[derive(Clone)]
pub struct Executor {
    engine: Arc<Engine>,
    /// The door its commands come through (a local script's unless [`Executor::through`]).
    trust: Arc<Trust>,
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
        Executor {
            engine,
            recipes,
            trust: Arc::new(Trust::local()),
        }
    }

    /// The same executor for commands that come through another door: every command it runs,
    /// and every command of a script or batch it starts, is held to `trust`'s rules.
    pub fn through(&self, trust: Trust) -> Executor {
        Executor {
            engine: self.engine.clone(),
            recipes: self.recipes.clone(),
            trust: Arc::new(trust),
        }
    }

    /// The door its commands come through.
    pub fn trust(&self) -> &Arc<Trust> {
        &self.trust
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Closes task `id` if it is still alive (a host's task whose session or request ended); a
    /// close that fails is logged, named by `host`.
    pub async fn close_if_alive(&self, id: TaskId, host: &str) {
        if self.engine.task(id).is_some() {
            let receipt = self.execute(Some(id), "close", json!({})).await;
            if !receipt.ok {
                tracing::warn!(
                    "{host}: closing task {id}: {}",
                    receipt.msg.unwrap_or_default()
                );
            }
        }
    }

    /// Starts `source` in the recipe host: its commands come back on the answer's `commands`,
    /// for the caller to run (a recipe's inside its lane; MCP's `run_lua` and Splash's requests
    /// through `execute`), its end on `done`; dropping the answer stops the script. Runs a Lua
    /// plan in the sandbox and limits of a Lua recipe.
    pub fn start_script(&self, source: ScriptSource) -> Result<RunningScript, String> {
        let (script, running) = RunningScript::new(source);
        self.recipes.start(self.clone(), script)?;
        Ok(running)
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
            self.engine
                .trace(task_id, method, &[], params, &receipt, None);
            return receipt;
        };
        let traced = self.engine.tracing().then(|| params.clone());
        // An action that takes an index: what the index meant is described for the trace
        // (`moonpilot codegen` writes it as a selector), read with the element.
        let note = (traced.is_some()
            && spec.mutates_page
            && spec.params.iter().any(|p| p.name == "index"))
        .then(crate::trace::ElementNote::default);
        let run = self.execute_spec(spec, task_id, method, params, t0, within);
        let mut receipt = match &note {
            Some(note) => crate::trace::ELEMENT_NOTE.scope(note.clone(), run).await,
            None => run.await,
        };
        // Every caller and the trace see the same masked echoes.
        receipt.redact_echoes();
        if let Some(params) = traced {
            let element = note.and_then(|n| n.take());
            self.engine
                .trace(task_id, method, spec.params, params, &receipt, element);
        }
        receipt
    }

    /// The pipeline of a known command, one named step each: admission, params (and the task),
    /// lane, the handler's attempts (race), the receipt (outcome), evidence (capture). A step
    /// answers what the next one needs, or the receipt that ends the command there.
    async fn execute_spec(
        &self,
        spec: &'static CommandSpec,
        task_id: Option<TaskId>,
        method: &str,
        params: Value,
        t0: Instant,
        within: Option<nested::Within>,
    ) -> Receipt {
        let call = Call {
            spec,
            method,
            task_id,
            t0,
            within,
        };
        match self.pipeline(&call, params).await {
            Ok(receipt) => receipt,
            Err(answered) => *answered,
        }
    }

    /// The steps of [`Executor::execute_spec`], in order; a step's early answer ends it.
    async fn pipeline(&self, call: &Call<'_>, params: Value) -> Result<Receipt, Answered> {
        let _permit = self.admit(call)?;
        let mut params =
            Params::new(params).map_err(|e| call.refused(e.code, e.msg, e.details.map(|d| *d)))?;
        let owned_task = self.find_task(call)?;
        let task = owned_task.as_ref();
        check_params(call, &params)?;
        // Only when the command would wait before its handler reads (its lane taken, or the
        // task's last evidence still being written): otherwise that read comes at once anyway.
        let would_wait = task.is_some_and(|t| {
            t.evidence_pending() || (!call.inherits_lane() && t.lane.try_lock().is_err())
        });
        if would_wait {
            self.read_early(call, &params)?;
        }
        // Held until the receipt is complete: a revival, the page context and the capture of
        // this command happen inside it.
        let lane = self.lane(call, task).await?;
        let lane_held = lane.is_some();
        let earlier_failure = capture::previous_failure(task, lane_held, call.spec).await;
        let waited = call.t0.elapsed();
        let Attempts {
            outcome,
            retry_safe,
            retries,
        } = self.attempts(call, task, &mut params, lane_held).await?;
        let ran = call.t0.elapsed();
        let mut receipt = self
            .outcome(call, &params, task, lane_held, outcome, retry_safe)
            .await;
        self.capture_after(&mut receipt, call.spec, task, earlier_failure);
        tracing::debug!(
            target: "moonpilot::pipeline",
            "{}: lane and evidence {waited:?}, ran by {ran:?}, receipt by {:?}",
            call.method,
            call.t0.elapsed()
        );
        retries.report(&mut receipt);
        receipt.elapsed_ms = ms_since(call.t0);
        Ok(receipt)
    }

    /// The handler's synchronous half run once on a copy of the params before the lane and
    /// the previous command's evidence are awaited (when the command would wait for them), so a
    /// bad argument only the handler can see (a URL without a scheme) is answered at once, not
    /// after them. Pure: the work it returns
    /// is dropped unrun; a panic is left for the real read to report.
    fn read_early(&self, call: &Call<'_>, params: &Params) -> Result<(), Answered> {
        let mut copy = params.clone();
        let read = std::panic::catch_unwind(AssertUnwindSafe(|| match call.spec.handler {
            Handler::Task(read) => read(&mut copy).err(),
            Handler::Engine(read) => read(&mut copy).err(),
        }));
        match read {
            Ok(Some(e)) => Err(Box::new(self.failed(
                call.method,
                call.spec,
                &copy,
                e,
                false,
                call.t0,
            ))),
            _ => Ok(()),
        }
    }

    /// Admission: overload is answered at once, never queued (nothing ran, resending later is
    /// safe). A step inside its sender's lane takes no permit of its own: the sender holds one
    /// (a running batch must not meet "concurrency full" halfway); nor does a way-out command.
    fn admit(&self, call: &Call<'_>) -> Result<Option<SemaphorePermit<'_>>, Answered> {
        if call.spec.way_out || call.inherits_lane() {
            return Ok(None);
        }
        self.engine.in_flight.try_acquire().map(Some).map_err(|_| {
            let limit = self.engine.config.max_in_flight;
            let mut receipt = call.refused(
                ErrorCode::CommandTimeout,
                format!("not executed: server concurrency full ({limit} commands in flight)"),
                Some(json!({"overloaded": true, "inFlightLimit": limit,
                    "commandTimeoutMs": self.engine.config.command_timeout.as_millis() as u64})),
            );
            receipt.set_retryable(500);
            receipt
        })
    }

    /// The task the command addresses: required for a task command, looked up (if named) for
    /// an engine command.
    fn find_task(&self, call: &Call<'_>) -> Result<Option<Arc<Task>>, Answered> {
        match (call.spec.needs_task(), call.task_id) {
            (true, None) => Err(call.refused(
                ErrorCode::InvalidArgument,
                "missing parameter `id` (task id); `start` creates one".into(),
                None,
            )),
            (true, Some(id)) => self.engine.task(id).map(Some).ok_or_else(|| {
                call.refused(ErrorCode::TaskNotFound, self.no_task_message(id), None)
            }),
            (false, Some(id)) => Ok(self.engine.task(id)),
            (false, None) => Ok(None),
        }
    }

    /// The lane: a task command waits for its task's lane (bounded by `lane_wait`) unless its
    /// spec runs lane-free or its sender holds it; then the task must still be open.
    async fn lane<'t>(
        &self,
        call: &Call<'_>,
        task: Option<&'t Arc<Task>>,
    ) -> Result<Option<LaneHold<'t>>, Answered> {
        let spec = call.spec;
        let lane = match task {
            Some(_) if spec.needs_task() && call.inherits_lane() => Some(LaneHold::Inherited),
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
                        return Err(call.refused(
                            ErrorCode::TaskBusy,
                            format!(
                                "not executed: another command of the same task is running; waited {waited} ms"
                            ),
                            Some(json!({"serialized": true})),
                        ));
                    }
                }
            }
            _ => None,
        };
        if task.is_some_and(|t| t.is_closed()) && !spec.way_out {
            return Err(call.refused(
                ErrorCode::TaskNotFound,
                "the task was closed while this command waited for its turn".into(),
                None,
            ));
        }
        Ok(lane)
    }

    /// The race step: the handler's attempts, each raced against its bound, browser death, the
    /// task's closing and a renderer crash (`race.rs`). Retry-safe commands (or a caller's
    /// `retryOnSpurious`) are resent on page-navigation and spurious-dispatch noise, within one
    /// budget (PROTOCOL.md §5): at most MAX_RETRIES extra attempts inside RETRY_WINDOW and the
    /// command's own bound.
    async fn attempts(
        &self,
        call: &Call<'_>,
        task: Option<&Arc<Task>>,
        params: &mut Params,
        lane_held: bool,
    ) -> Result<Attempts, Answered> {
        let spec = call.spec;
        let opted_in = params.raw().get("retryOnSpurious") == Some(&Value::Bool(true));
        let retry_safe = spec.retry_safe || opted_in;
        // The engine resends by itself only what cannot act twice: pure reads on any noise,
        // and on the caller's opt-in, spurious noise only (a navigation may follow an action
        // that took effect). Retry-safe navigations (reload, go_back) are resent by callers.
        let auto_navigating = spec.retry_safe && !spec.mutates_page;
        let auto_spurious = auto_navigating || opted_in;
        let raw_params =
            (auto_navigating || auto_spurious).then(|| Value::Object(params.raw().clone()));
        let bound = self.bound(spec);
        let window = bound.min(RETRY_WINDOW);
        // The bound counts from here, after the lane: waiting for one's turn is not running.
        let t_run = Instant::now();
        let mut retries = 0u32;
        let mut recovered: Option<(ErrorCode, u32)> = None;
        let outcome = loop {
            let fut = self.prepare(call, task, params, t_run + bound, lane_held)?;
            let left = bound.saturating_sub(t_run.elapsed());
            let outcome = self.run_bounded(spec, task, fut, left, bound).await;
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
            let navigated = matches!(&outcome, Err(e) if e.code == ErrorCode::PageNavigating);
            match task.filter(|_| navigated) {
                Some(t) => {
                    let cap = NAVIGATING_DELAY_MAX.min(room.saturating_sub(SPURIOUS_DELAY));
                    navigation_pause(t, cap).await
                }
                None => tokio::time::sleep(delay).await,
            }
            // A screenshot still pending from the previous command holds the renderer's
            // frame-tree answers while a navigation has no frame to give it: a read resent
            // because the page navigated waits for that capture first (each is bounded).
            if let Some(t) = task.filter(|t| navigated && t.evidence_pending()) {
                // The resend keeps some of the window for itself.
                let room = window
                    .saturating_sub(t_run.elapsed())
                    .saturating_sub(SPURIOUS_DELAY);
                let _ = tokio::time::timeout(room, t.evidence_settled()).await;
            }
            if let Some(raw) = &raw_params {
                if let Ok(fresh) = Params::new(raw.clone()) {
                    *params = fresh;
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
        Ok(Attempts {
            outcome,
            retry_safe,
            retries: Retries { budget, recovered },
        })
    }

    /// How long one command's handler may run, all its attempts together.
    fn bound(&self, spec: &CommandSpec) -> Duration {
        let bound = if spec.long_running {
            self.engine.config.long_command_timeout
        } else {
            self.engine.config.command_timeout
        };
        if spec.group == Group::Lifecycle {
            // `start` may wait for a fleet's queue (`--cdp-wait`) longer than a command runs.
            bound.max(self.engine.config.launch_bound() + Duration::from_secs(10))
        } else {
            bound
        }
    }

    /// The handler's synchronous half: it reads its params (nothing has touched the browser
    /// yet) and returns the work, given its context; a refusal or a panic there is the
    /// receipt, with `started:false`.
    fn prepare(
        &self,
        call: &Call<'_>,
        task: Option<&Arc<Task>>,
        params: &mut Params,
        deadline: Instant,
        lane_held: bool,
    ) -> Result<CommandFuture, Answered> {
        let spec = call.spec;
        let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| match (spec.handler, task) {
            (Handler::Task(read), Some(task)) => read(params).map(|work| {
                work(TaskCx {
                    engine: self.engine.clone(),
                    task: task.clone(),
                    spec,
                    deadline,
                    calls: nested::Nested::handle(self, task.id, call.within, lane_held),
                    trust: self.trust.clone(),
                })
            }),
            // Unreachable: a task command without its task was answered by `find_task`.
            (Handler::Task(_), None) => Err(CommandError::new(
                ErrorCode::Internal,
                "internal error: a task command without its task",
            )),
            (Handler::Engine(read), _) => read(params).map(|work| {
                work(Cx {
                    engine: self.engine.clone(),
                    task_id: call.task_id,
                    task: task.cloned(),
                    spec,
                    trust: self.trust.clone(),
                })
            }),
        }));
        match prepared {
            Ok(Ok(fut)) => Ok(fut),
            Ok(Err(e)) => Err(Box::new(self.failed(
                call.method,
                spec,
                params,
                e,
                false,
                call.t0,
            ))),
            Err(panic) => Err(call.refused(
                ErrorCode::Internal,
                format!("internal error: {}", panic_text(&*panic)),
                None,
            )),
        }
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
