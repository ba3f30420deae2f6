//! Jobs: the batch `commands` (PROTOCOL.md §10) and its background form — `get_job`,
//! `cancel_job`, `list_jobs` (§11).
//!
//! A batch runs its steps one after another through the executor's whole pipeline
//! (`TaskCx::calls`): each step is checked, retried, captured and traced as a single call would
//! be, *inside the batch's lane* — nothing else of the task runs between two steps, and a step
//! never waits for the lane its own batch holds. Other callers of the task meet the busy lane
//! (`TASK_BUSY` after the bounded wait), as the reference's callers do during a long batch.
//!
//! `async:true` registers a job (`Engine::jobs`) and answers at once; the job waits for one of
//! the registry's slots, then runs the same batch as a fresh `commands` call on the task (which
//! takes the lane once the submitting call let it go). The batch checks the job's cancel flag
//! before each step and counts its finished steps; closing the task ends it (`TASK_NOT_FOUND`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::command::*;
use crate::error::CommandError;
use crate::jobs::Job;
use crate::protocol::{ErrorCode, Params, Receipt};

/// How soon a job whose task's lane was busy asks again.
const JOB_LANE_RETRY: Duration = Duration::from_millis(250);

/// At most this many steps in one batch (`browser.command.maxPerBatch`).
pub const MAX_STEPS: usize = 200;

/// The job commands.
pub const SPECS: &[CommandSpec] = &[
    Group::Jobs
        .engine("get_job", get_job)
        .summary("Read a background batch's status, step count and (when over) its result")
        .doc(
            "Status `running` until the batch ends, then `done`, `failed` (with `error`) or \
              `cancelled`; `steps` counts finished steps. With includeResult (the default) a \
              finished job carries the batch's `ok`, `msg` and `data`. Jobs live in memory \
              only: the newest 50 are kept.",
        )
        .params(&[
            string("jobId", "id from commands{async=true}").req(),
            boolean("includeResult", "include ok/msg/data of the finished batch").or("true"),
        ])
        .example("local job = browser.call(\"get_job\", { jobId = id }).data\nprint(job.status, job.steps)"),
    Group::Jobs
        .engine("cancel_job", cancel_job)
        .summary("Ask a background batch to stop before its next step")
        .doc(
            "Cooperative: the running step is not interrupted; the batch stops before the next \
              one (`stopReason: cancelled`, status `cancelled`).",
        )
        .params(&[string("jobId", "job id").req()])
        .mutates(false)
        .retry_safe(false)
        .example("browser.call(\"cancel_job\", { jobId = id })"),
    Group::Jobs
        .engine("list_jobs", list_jobs)
        .summary("List the background batches, newest first, without their results")
        .doc("The kept jobs (newest 50, memory only), newest first, at most `limit` of them.")
        .params(&[int("limit", "max jobs, newest first").or("20").range(0.0, f64::INFINITY)])
        .example("for _, j in ipairs(browser.call(\"list_jobs\").data.jobs) do print(j.jobId, j.status) end"),
];

const STEPS_DOC: &str =
    "steps; each an object with exactly one command key (value = params object) plus optional 'expect'";

/// `commands`: dispatched like any command, not listed (the reference routes it outside its
/// table, and `list_methods` does not name it).
pub const UNLISTED: &[CommandSpec] = &[Group::Jobs
    .action("commands", commands)
    .no_capture()
    .long()
    .summary("Run a batch of commands in order, with optional assertions (or in background)")
    .doc(
        "Each step `{name = params, expect = {js = ..., equals = ...}}` goes through the whole \
          pipeline of a single call (checks, retries, capture) inside this task's lane. \
          stopOnError (default true) stops after the first failed step; stopOnExpectFailure \
          after the first failed assertion; maxDurationMs is checked before each step. The \
          answer is ok only when no step failed and no assertion failed; `results` always \
          lists every executed step. async=true answers `{jobId}` at once (see get_job).",
    )
    .params(&[
        // Masked in the batch's trace line: each step is traced as its own call, masked by its
        // own spec (a step may type a password).
        array("commands", STEPS_DOC)
            .req()
            .absence_by_handler()
            .secret(Secrecy::Always),
        boolean("stopOnError", "stop at the first failed step").or("true"),
        boolean(
            "async",
            "run in background and return jobId immediately (framework param)",
        )
        .or("false"),
        boolean("stopOnExpectFailure", "stop when an expect assertion fails").or("false"),
        int("maxDurationMs", "overall time cap; checked before each step").range(0.0, f64::INFINITY),
    ])
    .example(
        "local r = page:call(\"commands\", { commands = {\n  { go_to_url = { url = A .. \"/basic.html\" } },\n  { get_title = {}, expect = { js = \"document.title\", contains = \"Basic\" } },\n} })\nprint(r.data.succeeded, r.data.failed)",
    )];

/// A batch, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    steps: Vec<Value>,
    stop_on_error: bool,
    stop_on_expect: bool,
    max_duration_ms: Option<u64>,
}

impl Plan {
    /// `steps` under the stop rules, refused when empty or too long.
    pub(crate) fn new(
        steps: Vec<Value>,
        stop_on_error: bool,
        stop_on_expect: bool,
        max_duration_ms: Option<u64>,
    ) -> Result<Plan, CommandError> {
        if steps.is_empty() {
            return Err(CommandError::invalid("commands", "command array is empty"));
        }
        if steps.len() > MAX_STEPS {
            return Err(CommandError::invalid(
                "commands",
                format!("at most {MAX_STEPS} commands, got {}", steps.len()),
            ));
        }
        Ok(Plan {
            steps,
            stop_on_error,
            stop_on_expect,
            max_duration_ms,
        })
    }

    /// The plan as `commands` params (for a job's own call).
    fn to_params(&self) -> Value {
        let mut p = json!({
            "commands": self.steps,
            "stopOnError": self.stop_on_error,
            "stopOnExpectFailure": self.stop_on_expect,
        });
        if let Some(ms) = self.max_duration_ms {
            p["maxDurationMs"] = json!(ms);
        }
        p
    }

    /// How many steps it has.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }
}

/// Keys of `commands` params that are not a step in the one-step form.
const BATCH_KEYS: &[&str] = &[
    "stopOnError",
    "stopOnExpectFailure",
    "maxDurationMs",
    "async",
    "retryOnSpurious",
];

fn commands(p: &mut Params) -> Prepared<TaskCx> {
    let stop_on_error = p.bool_or("stopOnError", true)?;
    let stop_on_expect = p.bool_or("stopOnExpectFailure", false)?;
    let max_duration_ms = p.int_opt("maxDurationMs")?.map(i64::unsigned_abs);
    let background = p.bool_or("async", false)?;
    let steps =
        match p.array_opt("commands")? {
            Some(steps) => steps,
            None => {
                // The lenient form: params with exactly one other key are that one step.
                let keys: Vec<String> = p
                    .raw()
                    .keys()
                    .filter(|k| !BATCH_KEYS.contains(&k.as_str()))
                    .cloned()
                    .collect();
                match keys.as_slice() {
                    [name] => {
                        p.has(name);
                        let params = p.raw().get(name).cloned().unwrap_or(Value::Null);
                        vec![json!({ name.as_str(): params })]
                    }
                    _ => return Err(CommandError::invalid(
                        "commands",
                        "commands needs params.commands (an array of {command: params} objects)",
                    )),
                }
            }
        };
    let plan = Plan::new(steps, stop_on_error, stop_on_expect, max_duration_ms)?;
    run(move |cx: TaskCx| async move {
        if background {
            return submit(&cx, plan);
        }
        let job = crate::jobs::claim();
        run_batch(&cx, plan, job).await
    })
}

/// Registers the batch as a job and starts it in the background; answers the job's id.
///
/// Refused (`INVALID_ARGUMENT`, nothing registered) from a command that runs inside a lane its
/// sender holds on this task (a recipe's or a batch's call): the job would wait for that lane,
/// so for its own submitter. Refused (`TASK_BUSY`, retryable) when the registry's limit of
/// unfinished jobs is reached.
fn submit(cx: &TaskCx, plan: Plan) -> Result<Value, CommandError> {
    if cx.calls.in_inherited_lane() {
        return Err(CommandError::invalid(
            "async",
            "not executed: async=true from inside a command that holds this task's lane (a recipe or a batch step) would wait for its own lane: run the batch synchronously (async=false) or submit it from outside",
        )
        .not_sent());
    }
    let job = cx
        .engine
        .jobs
        .submit(cx.task.id, "commands")
        .map_err(|why| {
            CommandError::new(ErrorCode::TaskBusy, format!("not executed: {why}"))
                .with_details(json!({"jobsMax": cx.engine.jobs.max()}))
                .not_sent()
        })?;
    let (engine, task, calls, j) = (
        cx.engine.clone(),
        cx.task.clone(),
        cx.calls.clone(),
        job.clone(),
    );
    let params = plan.to_params();
    tokio::spawn(async move {
        // Dropped unfinished (a panic, the runtime's end): recorded failed, not running forever.
        let _record = crate::jobs::FinishOnDrop(j.clone());
        let receipt = run_job(&engine, &task, calls.as_ref(), &j, params).await;
        j.finish(receipt);
    });
    Ok(json!({
        "jobId": job.id,
        "status": "running",
        "browserId": cx.task.id.to_string(),
        "stepCount": plan.len(),
        "hint": "poll get_job{jobId} for status and result; cancel_job{jobId} stops it before its next step; other commands of this task wait while it runs",
    }))
}

/// A job that ran no step: cancelled while it waited.
fn cancelled_before_start(j: &Job, why: &str) -> Receipt {
    let data = json!({"count": 0, "succeeded": 0, "failed": 0,
        "expectFailed": 0, "stopped": true, "stopReason": "cancelled",
        "results": [], "jobId": j.id, "note": why});
    Receipt::success("commands", data, 0.0)
}

/// A job that ran no step: its task closed while it waited.
fn closed_before_start() -> Receipt {
    Receipt::failure(
        "commands",
        ErrorCode::TaskNotFound,
        "commands: not executed: the task was closed before the job could start".into(),
        None,
        false,
        0.0,
    )
}

/// The job's life: its task's turn (jobs of one task run in order), then a slot (at most
/// `jobs_concurrency` run at once) — in that order, so jobs waiting for a busy task never hold
/// the slots other tasks' jobs need — then the batch, sent again while the task's lane is busy
/// with other commands. A cancel or the task's closing ends any wait at once; all of it within
/// the long-command bound.
async fn run_job(
    engine: &crate::engine::Engine,
    task: &crate::browser::task::Task,
    calls: &dyn Calls,
    j: &Arc<Job>,
    params: Value,
) -> Receipt {
    let bound = engine.config.long_command_timeout;
    let deadline = tokio::time::Instant::now() + bound;
    j.set_queued(true);
    let turn_and_slot = async {
        let turn = engine.jobs.turn(task.id).await;
        let slot = engine.jobs.slots.acquire().await;
        slot.ok().map(|s| (turn, s))
    };
    let waited = tokio::select! {
        biased;
        _ = task.closed() => Err(closed_before_start()),
        _ = j.cancelled() => Err(cancelled_before_start(j, "cancelled while waiting for a slot")),
        got = tokio::time::timeout_at(deadline, turn_and_slot) => match got {
            Ok(Some(held)) => Ok(held),
            _ => {
                let mut r = Receipt::failure(
                    "commands",
                    ErrorCode::TaskBusy,
                    format!("commands: not executed: no job slot became free within {} s", bound.as_secs()),
                    Some(json!({"jobsConcurrency": engine.jobs.concurrency()})),
                    false,
                    0.0,
                );
                r.set_retryable(1000);
                Err(r)
            }
        },
    };
    j.set_queued(false);
    let _held = match waited {
        Ok(held) => held,
        Err(receipt) => return receipt,
    };
    // The batch queues behind the task's lane like any call; a `TASK_BUSY` answer means it
    // never ran, so it is sent again (another command of the task runs longer than the lane
    // wait) until the job's bound, a cancel or the task's end.
    loop {
        let r = crate::jobs::scope(
            j.clone(),
            calls.detached(Some(task.id), "commands", params.clone()),
        )
        .await;
        let busy = r.code == Some(ErrorCode::TaskBusy) && !r.started;
        if !busy {
            return r;
        }
        if task.is_closed() {
            return closed_before_start();
        }
        if tokio::time::Instant::now() >= deadline {
            return r;
        }
        tokio::select! {
            biased;
            _ = task.closed() => return closed_before_start(),
            _ = j.cancelled() => return cancelled_before_start(j, "cancelled while waiting for the task's lane"),
            _ = tokio::time::sleep(JOB_LANE_RETRY) => {}
        }
    }
}

/// One step, read from its item: the command, its params, its assertion.
fn parse_step(item: &Value) -> Result<(String, Value, Option<Value>), String> {
    let Value::Object(map) = item else {
        return Err(
            "each command object may contain only one key (the command) plus `expect`".into(),
        );
    };
    let keys: Vec<&String> = map.keys().filter(|k| *k != "expect").collect();
    let name = match keys.as_slice() {
        [name] => name.as_str(),
        [] => return Err("a command object needs one command key".into()),
        many => {
            let list: Vec<&str> = many.iter().map(|k| k.as_str()).collect();
            return Err(format!(
                "each command object may contain only one key besides `expect`, got {}",
                list.join(", ")
            ));
        }
    };
    if name == "commands" {
        return Err("nesting commands is not supported".into());
    }
    let params = match &map[name] {
        Value::Null => json!({}),
        Value::Array(a) if a.is_empty() => json!({}),
        Value::Object(o) => Value::Object(o.clone()),
        other => {
            return Err(format!(
                "the params of `{name}` must be an object, got {}",
                crate::protocol::params::kind_of(other)
            ))
        }
    };
    Ok((name.to_string(), params, map.get("expect").cloned()))
}

/// The truthiness of §10: null, false, 0, an empty collection, a blank string and the
/// strings "false", "0", "null" are false.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => {
            let t = s.trim();
            !(t.is_empty() || t == "false" || t == "0" || t == "null")
        }
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Equality of §10: numbers numerically (numeric strings parsed), booleans by truthiness,
/// otherwise the text.
fn same(actual: &Value, expected: &Value) -> bool {
    let numeric = matches!(expected, Value::Number(_)) || matches!(actual, Value::Number(_));
    if let (true, Some(a), Some(e)) = (numeric, as_number(actual), as_number(expected)) {
        return a == e;
    }
    if matches!(expected, Value::Bool(_)) || matches!(actual, Value::Bool(_)) {
        return truthy(actual) == truthy(expected);
    }
    as_text(actual) == as_text(expected)
}

/// The assertion's matcher (the first present of §10's order) and expected value.
fn matcher(expect: &Map<String, Value>) -> (&'static str, Value) {
    for m in ["equals", "notEquals", "min", "max", "contains", "truthy"] {
        if let Some(v) = expect.get(m) {
            return (m, v.clone());
        }
    }
    ("truthy", json!(true))
}

/// Whether `actual` satisfies `matcher expected`.
pub(crate) fn satisfies(actual: &Value, matcher: &str, expected: &Value) -> bool {
    match matcher {
        "equals" => same(actual, expected),
        "notEquals" => !same(actual, expected),
        "min" => matches!((as_number(actual), as_number(expected)), (Some(a), Some(e)) if a >= e),
        "max" => matches!((as_number(actual), as_number(expected)), (Some(a), Some(e)) if a <= e),
        "contains" => as_text(actual).contains(&as_text(expected)),
        _ => truthy(actual) == truthy(expected),
    }
}

/// Runs a step's assertion in the page (like `execute_js`) and judges it.
async fn check_expect(cx: &TaskCx, expect: &Value) -> Value {
    let Some(map) = expect.as_object() else {
        return json!({"passed": false, "error": "expect must be an object with `js` and a matcher"});
    };
    let (matcher, expected) = matcher(map);
    let Some(js) = map
        .get("js")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    else {
        return json!({"passed": false, "matcher": matcher, "expected": expected,
            "error": "expect needs `js` (a script whose value is checked)"});
    };
    let evaluated = match cx.tab() {
        Ok(tab) => {
            crate::commands::extract::evaluate_main(&tab, js, cx.engine.config.eval_timeout_ms)
                .await
        }
        Err(e) => Err(e),
    };
    match evaluated {
        Ok(Ok(actual)) => json!({
            "passed": satisfies(&actual, matcher, &expected),
            "actual": actual,
            "js": js,
            "matcher": matcher,
            "expected": expected,
        }),
        Ok(Err(threw)) => json!({
            "passed": false, "actual": null, "js": js, "matcher": matcher,
            "expected": expected, "error": threw,
        }),
        Err(e) => json!({
            "passed": false, "actual": null, "js": js, "matcher": matcher,
            "expected": expected, "error": e.msg, "errorCode": e.code.as_str(),
        }),
    }
}

/// The record of a step that could not be sent (a malformed item).
fn refused_step(index: usize, command: &str, msg: String) -> Value {
    json!({
        "index": index,
        "command": command,
        "ok": false,
        "data": {"errorCode": "INVALID_ARGUMENT", "retryable": false, "started": false},
        "msg": msg,
        "error": {"code": "INVALID_ARGUMENT", "message": msg, "retryable": false},
    })
}

/// The record of a step that ran.
fn step_record(index: usize, command: &str, r: &Receipt) -> Value {
    let mut rec = json!({"index": index, "command": command, "ok": r.ok, "data": r.data});
    if let Some(msg) = &r.msg {
        rec["msg"] = json!(msg);
    }
    if !r.ok {
        let mut error = json!({
            "code": r.code.map_or("ACTION_FAILED", |c| c.as_str()),
            "message": r.msg.clone().unwrap_or_default(),
            "retryable": r.retryable,
        });
        if let Some(ms) = r.retry_after_ms {
            error["retryAfterMs"] = json!(ms);
        }
        rec["error"] = error;
    }
    rec
}

/// Runs `plan` on the command's task, step by step, through the executor (`cx.calls`); `job`
/// when it is a background job's batch. `Ok` only when no step and no assertion failed; a
/// failure carries the same data (every executed step in `results`).
pub(crate) async fn run_batch(
    cx: &TaskCx,
    plan: Plan,
    job: Option<Arc<Job>>,
) -> Result<Value, CommandError> {
    let t0 = Instant::now();
    let mut results = Vec::with_capacity(plan.steps.len());
    let (mut succeeded, mut failed, mut expect_failed) = (0u64, 0u64, 0u64);
    let mut stop_reason: Option<String> = None;
    let mut first_failure: Option<String> = None;
    let mut first_assertion: Option<String> = None;
    // The code and retryability of the first failed step, and whether any step started: a
    // batch none of whose steps started has not started either (PROTOCOL.md §4), and answers
    // as that step did.
    let mut first_code: Option<(ErrorCode, Option<u64>)> = None;
    let mut any_started = false;
    let mut closed = false;
    for (index, item) in plan.steps.iter().enumerate() {
        // A closed task ends the batch (its steps could only fail).
        if cx.task.is_closed() {
            closed = true;
            break;
        }
        if job.as_ref().is_some_and(|j| j.cancel_requested()) {
            stop_reason = Some("cancelled".into());
            break;
        }
        if let Some(max) = plan.max_duration_ms {
            if t0.elapsed() >= Duration::from_millis(max) {
                stop_reason = Some(format!("maxDurationMs({max}ms)"));
                break;
            }
        }
        let (command, params, expect) = match parse_step(item) {
            Ok(step) => step,
            Err(msg) => {
                let command = item
                    .as_object()
                    .and_then(|m| m.keys().find(|k| *k != "expect").cloned())
                    .unwrap_or_default();
                failed += 1;
                first_code.get_or_insert((ErrorCode::InvalidArgument, None));
                first_failure
                    .get_or_insert(format!("step {index} command {command} failed: {msg}"));
                results.push(refused_step(index, &command, msg));
                if let Some(j) = &job {
                    j.step_done();
                }
                if plan.stop_on_error {
                    break;
                }
                continue;
            }
        };
        let receipt = cx.calls.step(&command, params).await;
        let mut record = step_record(index, &command, &receipt);
        any_started |= receipt.started;
        let mut assertion_failed = false;
        if receipt.ok {
            succeeded += 1;
            if let Some(expect) = &expect {
                let result = check_expect(cx, expect).await;
                if result["passed"] != true {
                    assertion_failed = true;
                    expect_failed += 1;
                    first_assertion.get_or_insert_with(|| {
                        format!(
                            "step {index} command {command} assertion failed: actual {} does not satisfy {} {}",
                            result["actual"], as_text(&result["matcher"]), result["expected"]
                        )
                    });
                }
                record["expectResult"] = result;
            }
        } else {
            failed += 1;
            first_code.get_or_insert((
                receipt.code.unwrap_or(ErrorCode::ActionFailed),
                receipt
                    .retryable
                    .then(|| receipt.retry_after_ms.unwrap_or(1000)),
            ));
            first_failure.get_or_insert_with(|| {
                format!(
                    "step {index} command {command} failed: {}",
                    receipt.msg.clone().unwrap_or_default()
                )
            });
        }
        results.push(record);
        if let Some(j) = &job {
            j.step_done();
        }
        if !receipt.ok && plan.stop_on_error {
            break;
        }
        if assertion_failed && plan.stop_on_expect {
            stop_reason = Some("stopOnExpectFailure".into());
            break;
        }
    }
    let stopped = stop_reason.is_some()
        || (plan.stop_on_error && failed > 0)
        || (plan.stop_on_expect && expect_failed > 0);
    let mut data = json!({
        "count": results.len(),
        "succeeded": succeeded,
        "failed": failed,
        "expectFailed": expect_failed,
        "stopped": stopped,
        "results": results,
    });
    if let Some(reason) = stop_reason {
        data["stopReason"] = json!(reason);
    }
    if let Some(j) = &job {
        data["jobId"] = json!(j.id);
    }
    if closed || cx.task.is_closed() {
        return Err(CommandError::new(
            ErrorCode::TaskNotFound,
            format!(
                "the task was closed during the batch, after {} step(s)",
                data["count"]
            ),
        )
        .with_details(data));
    }
    if failed == 0 && expect_failed == 0 {
        return Ok(data);
    }
    let msg = match (first_failure, first_assertion) {
        (Some(f), _) => f,
        (None, Some(a)) => {
            data["note"] = json!("every command succeeded but an expect assertion failed: read expectResult.actual of the step");
            a
        }
        (None, None) => "the batch failed".to_string(),
    };
    match first_code.filter(|_| !any_started) {
        // Nothing ran: the first failure's code (and so its retryability), `started:false`.
        Some((code, retry)) => Err(CommandError::new(code, msg)
            .with_details(data)
            .retrying_as(retry)
            .not_sent()),
        None => Err(CommandError::failed(msg).with_details(data)),
    }
}

fn get_job(p: &mut Params) -> Prepared<Cx> {
    let id = p.str_req("jobId")?;
    let include = p.bool_or("includeResult", true)?;
    run(move |cx: Cx| async move {
        match cx.engine.jobs.get(&id) {
            Some(job) => Ok(job.describe(include)),
            None => Err(unknown_job(&cx, &id)),
        }
    })
}

fn unknown_job(cx: &Cx, id: &str) -> CommandError {
    CommandError::new(
        ErrorCode::NotFound,
        format!(
            "no job `{id}`: only the newest {} jobs are kept, in memory only (a restart loses them); list_jobs shows the kept ones",
            cx.engine.jobs.max()
        ),
    )
}

fn cancel_job(p: &mut Params) -> Prepared<Cx> {
    let id = p.str_req("jobId")?;
    run(move |cx: Cx| async move {
        let Some(job) = cx.engine.jobs.get(&id) else {
            return Err(unknown_job(&cx, &id));
        };
        let running = job.request_cancel();
        let note = if running {
            "cancellation is cooperative: takes effect before the next step (the running step finishes)"
        } else {
            "the job has already ended: nothing to cancel"
        };
        Ok(json!({
            "jobId": job.id,
            "cancelRequested": job.cancel_requested(),
            "status": job.status().as_str(),
            "note": note,
        }))
    })
}

fn list_jobs(p: &mut Params) -> Prepared<Cx> {
    let limit = p.int_opt("limit")?.unwrap_or(20).max(0) as usize;
    run(move |cx: Cx| async move {
        let jobs: Vec<Value> = cx
            .engine
            .jobs
            .list(limit)
            .iter()
            .map(|j| j.describe(false))
            .collect();
        Ok(json!({
            "count": jobs.len(),
            "jobs": jobs,
            "kept": cx.engine.jobs.len(),
            "max": cx.engine.jobs.max(),
            "maxConcurrency": cx.engine.jobs.concurrency(),
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthiness_and_matchers_follow_the_spec() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!([]),
            json!({}),
            json!("  "),
            json!("false"),
            json!("0"),
            json!("null"),
        ] {
            assert!(!truthy(&v), "{v} is falsy");
        }
        for v in [
            json!(1),
            json!("x"),
            json!([0]),
            json!(true),
            json!({"a": 1}),
        ] {
            assert!(truthy(&v), "{v} is truthy");
        }
        assert!(satisfies(&json!("3"), "equals", &json!(3)));
        assert!(satisfies(&json!(3.0), "equals", &json!("3")));
        assert!(!satisfies(&json!(2), "equals", &json!(3)));
        assert!(satisfies(&json!("yes"), "equals", &json!(true)));
        assert!(satisfies(&json!(0), "equals", &json!(false)));
        assert!(satisfies(&json!("ab"), "equals", &json!("ab")));
        assert!(satisfies(&json!("ab"), "notEquals", &json!("abc")));
        assert!(satisfies(&json!(5), "min", &json!(5)));
        assert!(!satisfies(&json!("x"), "min", &json!(0)));
        assert!(satisfies(&json!("4"), "max", &json!(5)));
        assert!(satisfies(&json!("hello world"), "contains", &json!("lo w")));
        assert!(satisfies(&json!(""), "truthy", &json!(false)));
        let (m, e) = matcher(
            json!({"js": "1", "max": 3, "equals": 1})
                .as_object()
                .unwrap(),
        );
        assert_eq!((m, e), ("equals", json!(1)));
        let (m, e) = matcher(json!({"js": "1"}).as_object().unwrap());
        assert_eq!((m, e), ("truthy", json!(true)));
    }

    #[test]
    fn steps_are_read_by_the_spec_rules() {
        let (name, params, expect) =
            parse_step(&json!({"click": {"index": 1}, "expect": {"js": "1"}})).unwrap();
        assert_eq!(name, "click");
        assert_eq!(params, json!({"index": 1}));
        assert!(expect.is_some());
        assert_eq!(
            parse_step(&json!({"get_title": null})).unwrap().1,
            json!({})
        );
        assert!(parse_step(&json!({"a": {}, "b": {}}))
            .unwrap_err()
            .contains("only one key"));
        assert!(parse_step(&json!("get_title"))
            .unwrap_err()
            .contains("only one key"));
        assert_eq!(
            parse_step(&json!({"commands": {}})).unwrap_err(),
            "nesting commands is not supported"
        );
        assert!(Plan::new(vec![], true, false, None).is_err());
        let e = Plan::new(vec![json!({}); 201], true, false, None).unwrap_err();
        assert_eq!(e.msg, "at most 200 commands, got 201");
    }
}
