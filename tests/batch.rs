//! The batch `commands` and its background jobs (`get_job`, `cancel_job`, `list_jobs`), through
//! Lua `task:call` / `browser.call`: what the page shows afterwards (a click counter), the
//! counts and per-step records, validation, stops, and jobs polled to their end.

use std::time::{Duration, Instant};

use crate::support::harness::{exec, lua, new_task, private, test_config};
use moonpilot::browser::task::TaskId;
use moonpilot::protocol::ErrorCode;
use moonpilot::{Executor, Receipt};
use serde_json::{json, Value};

const HELPERS: &str = r##"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local inc = { click_element_by_selector = { selector = "#inc" } }
-- Polls get_job until the job is no longer running (20 s at most).
local function settle(id)
  local j
  for _ = 1, 400 do
    j = browser.call("get_job", { jobId = id }):unwrap()
    if j.status ~= "running" then return j end
    browser.sleep(50)
  end
  error("job " .. id .. " still running: " .. tostring(j.steps) .. " steps")
end
"##;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn a_failing_step_stops_the_batch_or_not() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        page:get_browser_state{}:unwrap()
        local steps = {
          inc,
          { click_element_by_index = { index = 999 } },
          inc,
        }
        local r = page:call("commands", { commands = steps })
        eq(r.ok, false, "a failed step fails the batch"); eq(r.code, "ACTION_FAILED")
        eq(r.started, true); eq(r.retryable, false)
        has(r.msg, "step 1 command click_element_by_index failed")
        local d = r.data
        eq(d.count, 2); eq(d.succeeded, 1); eq(d.failed, 1); eq(d.expectFailed, 0)
        eq(d.stopped, true); eq(d.stopReason, nil)
        eq(d.results[1].index, 0); eq(d.results[1].ok, true); eq(d.results[1].command, "click_element_by_selector")
        eq(d.results[1].error, nil)
        eq(type(d.results[1].data.screenshot), "string", "each page-changing step has its own capture")
        local e = d.results[2].error
        eq(e.code, "STALE_ELEMENT"); eq(e.retryable, true); eq(e.retryAfterMs, 300)
        has(e.message, "click_element_by_index")
        eq(d.results[2].data.started, false)
        eq(js("window.clicks"), 1, "the step after the failure did not run")

        -- stopOnError=false: every step runs; the failure is still reported.
        steps[2] = { click_element_by_selector = { selector = "#nothing-here", timeoutMs = 300 } }
        r = page:call("commands", { commands = steps, stopOnError = false })
        eq(r.ok, false); d = r.data
        eq(d.count, 3); eq(d.succeeded, 2); eq(d.failed, 1); eq(d.stopped, false)
        eq(d.results[2].error.code, "ELEMENT_NOT_FOUND"); eq(d.results[2].error.retryable, false)
        eq(d.results[3].ok, true)
        eq(js("window.clicks"), 3, "both clicks around the failure ran")
        eq(js("document.getElementById('count').textContent"), "3")
    "##);
}

#[test]
fn a_failed_assertion_is_no_failed_step() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local steps = {
          { click_element_by_selector = { selector = "#inc" }, expect = { js = "window.clicks", equals = 5 } },
          { get_title = {}, expect = { js = "document.title", contains = "Bat" } },
        }
        local r = page:call("commands", { commands = steps })
        eq(r.ok, false); eq(r.code, "ACTION_FAILED")
        has(r.msg, "step 0 command click_element_by_selector assertion failed: actual 1 does not satisfy equals 5")
        local d = r.data
        eq(d.failed, 0); eq(d.expectFailed, 1); eq(d.succeeded, 2); eq(d.count, 2); eq(d.stopped, false)
        has(d.note, "expect")
        local x = d.results[1].expectResult
        eq(x.passed, false); eq(x.actual, 1); eq(x.matcher, "equals"); eq(x.expected, 5)
        eq(x.js, "window.clicks")
        eq(d.results[1].ok, true, "the step itself succeeded")
        eq(d.results[2].expectResult.passed, true); eq(d.results[2].expectResult.actual, "Batch")

        -- stopOnExpectFailure stops after the failed assertion.
        r = page:call("commands", { commands = steps, stopOnExpectFailure = true })
        eq(r.data.count, 1); eq(r.data.stopped, true); eq(r.data.stopReason, "stopOnExpectFailure")
        eq(js("window.clicks"), 2)

        -- Matchers and the truthiness rule; a script error fails the assertion only.
        r = page:call("commands", { commands = {
          { get_title = {}, expect = { js = "window.clicks", min = 2 } },
          { get_title = {}, expect = { js = "String(window.clicks)", max = 2 } },
          { get_title = {}, expect = { js = "document.title", notEquals = "Other" } },
          { get_title = {}, expect = { js = "document.querySelectorAll('.none').length", truthy = false } },
          { get_title = {}, expect = { js = "'0'" } },
          { get_title = {}, expect = { js = "nosuchvar.x" } },
        } })
        d = r.data
        eq(d.expectFailed, 2); eq(d.failed, 0)
        for i = 1, 4 do eq(d.results[i].expectResult.passed, true, "matcher " .. i) end
        eq(d.results[5].expectResult.passed, false, "'0' is falsy"); eq(d.results[5].expectResult.matcher, "truthy")
        eq(d.results[6].expectResult.passed, false); has(d.results[6].expectResult.error, "nosuchvar")

        r = page:call("commands", { commands = { { get_title = {}, expect = { js = "window.clicks", equals = "2" } } } })
        eq(r.ok, true, tostring(r)); eq(r.data.expectFailed, 0); eq(r.msg, nil)
        -- The batch is a Task method too, though no listed command.
        r = page:commands{ commands = { { get_title = {}, expect = { js = "window.clicks", min = 1 } } } }
        eq(r.ok, true, tostring(r)); eq(r.method, "commands")
        eq(#browser.methods("commands"), 0, "not listed")
    "##);
}

#[test]
fn batches_are_validated_before_anything_runs() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local r = page:call("commands", { commands = {} })
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); has(r.msg, "command array is empty")
        local many = {}
        for i = 1, 201 do many[i] = inc end
        r = page:call("commands", { commands = many })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "at most 200 commands, got 201")
        r = page:call("commands", { a = 1, b = 2 })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "commands needs params.commands")
        r = page:call("commands", { commands = "get_title" })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "expected array")
        r = browser.call("commands", { commands = { { get_title = {} } } })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "missing parameter `id`")
        eq(js("window.clicks"), 0, "nothing ran")

        -- The one-step form: the params are the step.
        r = page:call("commands", { get_title = {} })
        eq(r.ok, true, tostring(r)); eq(r.data.count, 1); eq(r.data.results[1].data.title, "Batch")

        -- Malformed items are failed steps; with stopOnError=false the rest runs.
        r = page:call("commands", { stopOnError = false, commands = {
          { commands = { commands = { inc } } },
          { get_title = {}, get_url = {} },
          "get_title",
          { no_such_command = {} },
          inc,
        } })
        local d = r.data
        eq(d.count, 5); eq(d.failed, 4); eq(d.succeeded, 1)
        has(d.results[1].error.message, "nesting commands is not supported")
        eq(d.results[1].error.code, "INVALID_ARGUMENT")
        has(d.results[2].error.message, "only one key")
        has(d.results[3].error.message, "only one key")
        eq(d.results[4].error.code, "UNKNOWN_METHOD")
        has(r.msg, "step 0 command commands failed: nesting commands is not supported")
        eq(js("window.clicks"), 1, "only the well-formed click ran")

        -- Unknown params of a step are reported on that step, as for a single call.
        r = page:call("commands", { commands = { { get_title = { bogus = 1 } } } })
        eq(r.ok, true); eq(r.data.results[1].data.unknownParams[1], "bogus")
    "##);
}

#[test]
fn max_duration_stops_before_the_next_step() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local r = page:call("commands", { maxDurationMs = 500, commands = {
          { wait = { seconds = 1 } }, inc, inc,
        } })
        local d = r.data
        eq(d.count, 1); eq(d.stopped, true); eq(d.stopReason, "maxDurationMs(500ms)")
        eq(r.ok, true, "a time stop is no failure"); eq(d.failed, 0)
        eq(js("window.clicks"), 0, "no click after the cap")
    "##);
}

#[test]
fn an_async_batch_is_a_job_polled_to_its_end() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local sub = page:call("commands", { async = true, commands = { inc, inc, { get_title = {} } } })
        eq(sub.ok, true, tostring(sub))
        local id = sub.data.jobId
        assert(id:match("^job%-%d+%-%d+$"), id)
        eq(sub.data.status, "running"); eq(sub.data.browserId, tostring(page.id)); has(sub.data.hint, "get_job")
        local j = settle(id)
        eq(j.status, "done"); eq(j.steps, 3); eq(j.ok, true); eq(j.method, "commands")
        eq(j.browserId, tostring(page.id)); eq(j.cancelRequested, false)
        eq(j.data.count, 3); eq(j.data.succeeded, 3); eq(j.data.jobId, id)
        eq(j.data.results[3].data.title, "Batch")
        assert(j.finishedAt >= j.startedAt and j.durationMs >= 0, "times")
        local bare = browser.call("get_job", { jobId = id, includeResult = false }):unwrap()
        eq(bare.status, "done"); eq(bare.data, nil); eq(bare.ok, nil); eq(bare.steps, 3)
        eq(js("window.clicks"), 2)

        -- A failed batch is a failed job, with its message.
        id = page:call("commands", { async = true, commands = { { click_element_by_index = { index = 999 } } } }).data.jobId
        j = settle(id)
        eq(j.status, "failed"); has(j.error, "step 0 command click_element_by_index failed"); eq(j.ok, false)
        eq(j.data.failed, 1)

        local u = browser.call("get_job", { jobId = "job-1-1" })
        eq(u.ok, false); eq(u.code, "NOT_FOUND"); has(u.msg, "newest 50"); has(u.msg, "restart")
        r = browser.call("cancel_job", { jobId = "job-1-1" }); eq(r.code, "NOT_FOUND")
        r = browser.call("get_job", {}); eq(r.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn a_cancelled_job_runs_no_further_step() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local one = { wait = { seconds = 1 } }
        local sub = page:call("commands", { async = true, commands = { inc, one, inc, one, inc, one, inc } })
        local id = sub.data.jobId
        local j
        for _ = 1, 100 do
          j = browser.call("get_job", { jobId = id }):unwrap()
          if j.steps >= 2 then break end
          browser.sleep(50)
        end
        local c = browser.call("cancel_job", { jobId = id }):unwrap()
        eq(c.jobId, id); eq(c.cancelRequested, true); eq(c.status, "running"); has(c.note, "next step")
        j = settle(id)
        eq(j.status, "cancelled"); eq(j.cancelRequested, true); eq(j.data.stopReason, "cancelled")
        eq(j.data.stopped, true)
        assert(j.steps < 7, "steps " .. j.steps)
        eq(j.data.count, j.steps)
        local clicks = 0
        for _, s in ipairs(j.data.results) do
          if s.command == "click_element_by_selector" then clicks = clicks + 1 end
        end
        eq(js("window.clicks"), clicks, "the page saw exactly the clicks that ran")
        assert(clicks < 4, "the remaining clicks did not run")
    "##);
}

#[test]
fn jobs_are_listed_newest_first_and_end_with_their_task() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local first = page:call("commands", { async = true, commands = { { get_title = {} } } }).data.jobId
        settle(first)
        local second = page:call("commands", { async = true, commands = { { get_url = {} } } }).data.jobId
        settle(second)
        local l = browser.call("list_jobs", { limit = 1 }):unwrap()
        eq(l.count, 1); eq(l.jobs[1].jobId, second); eq(l.max, 50); eq(l.maxConcurrency, 2)
        l = browser.call("list_jobs", {}):unwrap()
        eq(l.jobs[1].jobId, second); eq(l.jobs[2].jobId, first)
        eq(l.jobs[1].data, nil, "no results in the list"); eq(l.jobs[1].status, "done")

        -- Closing the job's task ends the job with a typed failure.
        local t = browser.start{}
        t:navigate{ url = A .. "/batch.html" }:unwrap()
        local id = t:call("commands", { async = true, commands = {
          { wait = { seconds = 2 } }, inc, inc,
        } }).data.jobId
        -- Other tests' jobs may hold the slots for a while: close once this one runs its step.
        for _ = 1, 400 do
          if browser.call("get_job", { jobId = id }):unwrap().queued == false then break end
          browser.sleep(50)
        end
        browser.sleep(300)
        t:close():unwrap()
        local j = settle(id)
        eq(j.status, "failed"); has(j.error, "closed"); eq(j.data.errorCode, "TASK_NOT_FOUND")
        -- The steps done so far are in the result: the one the closing cut short.
        eq(j.data.count, 1); eq(j.data.results[1].command, "wait")
        eq(j.data.results[1].error.code, "TASK_NOT_FOUND")

        -- A batch (not a job) whose task closes mid-step answers with its steps too.
        local u = browser.start{}
        u:navigate{ url = A .. "/batch.html" }:unwrap()
        local call = browser.spawn(function()
          return u:call("commands", { commands = { inc, { wait = { seconds = 8 } }, inc } })
        end)
        browser.sleep(2000)
        local t0 = browser.clock()
        u:close():unwrap()
        local r = call:join()
        eq(r.ok, false); eq(r.code, "TASK_NOT_FOUND"); has(r.msg, "closed")
        eq(r.data.count, 2, tostring(r.msg)); eq(r.data.succeeded, 1); eq(r.data.results[1].ok, true)
        eq(r.data.results[2].command, "wait"); eq(r.data.results[2].error.code, "TASK_NOT_FOUND")
        assert(browser.clock() - t0 < 3, "close answers promptly")
    "##);
}

#[test]
fn two_jobs_run_at_once_and_a_job_waits_for_its_tasks_turn() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local other, more = browser.start{}, browser.start{}
        local long = page:call("commands", { async = true, commands = { { wait = { seconds = 3 } } } }).data.jobId
        -- The second job of this task waits for its task's turn, holding no slot.
        local queued = page:call("commands", { async = true, commands = { inc } }).data.jobId
        -- So a job of another task takes the second slot (the private-engine test below checks
        -- that it does at once; here other tests' jobs share the slots).
        local third = other:call("commands", { async = true, commands = { { wait = { seconds = 2 } } } }).data.jobId
        -- Both slots are taken: a fourth job, on a third task, waits for one.
        local fourth = more:call("commands", { async = true, commands = { { get_url = {} } } }).data.jobId
        browser.sleep(500)
        local j4 = browser.call("get_job", { jobId = fourth }):unwrap()
        eq(j4.status, "running"); eq(j4.queued, true, "no slot yet"); eq(j4.steps, 0)
        eq(browser.call("get_job", { jobId = long }):unwrap().queued, false)
        eq(browser.call("get_job", { jobId = queued }):unwrap().queued, true)
        local j1, j2, j3 = settle(long), settle(queued), settle(third)
        j4 = settle(fourth)
        eq(j1.status, "done"); eq(j2.status, "done", tostring(j2.error)); eq(j3.status, "done")
        eq(j4.status, "done")
        assert(j2.finishedAt >= j1.finishedAt, "the queued job ran after its task's first")
        eq(js("window.clicks"), 1, "the queued job's click ran after the lane was free")
        other:close():unwrap(); more:close():unwrap()
    "##);
}

/// How the HTTP adapter calls: `Executor::execute(id, method, params)` with the seed clients'
/// default id (no live task) for the task-less job commands, and a live id for the batch.
#[test]
fn the_executor_takes_the_batch_and_job_commands_as_any_caller_sends_them() {
    let none = Some(TaskId(1001));
    let r = exec(none, "list_jobs", json!({"limit": 5}));
    assert!(r.ok, "{:?}", r.msg);
    let r = exec(none, "get_job", json!({"jobId": "job-0-0"}));
    assert_eq!(r.code.map(|c| c.as_str()), Some("NOT_FOUND"), "{:?}", r.msg);
    let r = exec(none, "list_recipes", json!({}));
    assert!(
        r.ok && r.data["count"].as_u64().unwrap() >= 4,
        "{:?}",
        r.msg
    );
    let r = exec(none, "commands", json!({"commands": [{"get_title": {}}]}));
    assert_eq!(
        r.code.map(|c| c.as_str()),
        Some("TASK_NOT_FOUND"),
        "{:?}",
        r.msg
    );
    let task = new_task();
    let r = exec(
        Some(task),
        "commands",
        json!({"commands": [{"get_url": {}}, {"get_title": {}}]}),
    );
    assert!(r.ok, "{:?}", r.msg);
    assert_eq!(r.data["count"], 2);
    assert_eq!(r.data["results"][0]["command"], "get_url");
    let r = exec(Some(task), "close", json!({}));
    assert!(r.ok, "{:?}", r.msg);
}

#[test]
fn a_batch_none_of_whose_steps_started_has_not_started() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        page:get_browser_state{}:unwrap()
        -- The only step fails before acting (retryable): so does the batch, with that code.
        local r = page:call("commands", { commands = { { click_element_by_index = { index = 999 } } } })
        eq(r.ok, false); eq(r.code, "STALE_ELEMENT", tostring(r.msg)); eq(r.started, false)
        eq(r.retryable, true); eq(r.data.retryAfterMs, 300)
        has(r.msg, "step 0 command click_element_by_index failed")
        eq(r.data.count, 1); eq(r.data.failed, 1); eq(r.data.results[1].error.code, "STALE_ELEMENT")
        -- The only item refused: INVALID_ARGUMENT, nothing started, not retryable.
        r = page:call("commands", { commands = { { get_title = {}, get_url = {} } } })
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); eq(r.retryable, false)
        eq(r.data.count, 1); has(r.msg, "only one key")
        -- One step started: the batch started (and may have acted).
        r = page:call("commands", { stopOnError = false, commands = {
          { click_element_by_index = { index = 999 } }, inc,
        } })
        eq(r.code, "ACTION_FAILED"); eq(r.started, true); eq(r.retryable, false)
        eq(r.data.results[1].error.code, "STALE_ELEMENT")
        eq(js("window.clicks"), 1)
    "##);
}

#[test]
fn an_async_batch_from_inside_its_own_tasks_lane_is_refused_at_once() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local before = browser.call("list_jobs", { limit = 1000 }):unwrap().kept
        local t0 = os.clock()
        -- A recipe holds the task's lane: a job it submits there would wait for its recipe.
        local r = page:run_recipe{ name = "async-own-task" }
        eq(r.ok, true, tostring(r.msg))
        local d = r.data
        eq(d.ok, false); eq(d.code, "INVALID_ARGUMENT"); eq(d.started, false); eq(d.retryable, false)
        has(d.msg, "would wait for its own lane")
        -- Inside a batch step too (a recipe run by a batch on its own task).
        r = page:call("commands", { commands = { { run_recipe = { name = "async-own-task" } } } })
        eq(r.ok, true, tostring(r.msg))
        eq(r.data.results[1].data.code, "INVALID_ARGUMENT")
        -- A batch step that is itself a batch is refused by the batch.
        r = page:call("commands", { commands = { { commands = { async = true, commands = { inc } } } } })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "nesting commands is not supported")
        assert(os.clock() - t0 < 5, "answered promptly")
        eq(browser.call("list_jobs", { limit = 1000 }):unwrap().kept, before, "no job registered")
        eq(js("window.clicks"), 0)
    "##);
}

async fn call(ex: &Executor, task: Option<TaskId>, method: &str, params: Value) -> Receipt {
    ex.execute(task, method, params).await
}

async fn job(ex: &Executor, task: TaskId, steps: Value) -> String {
    let r = call(
        ex,
        Some(task),
        "commands",
        json!({"async": true, "commands": steps}),
    )
    .await;
    assert!(r.ok, "{:?}", r.msg);
    r.data["jobId"].as_str().unwrap().to_string()
}

async fn get(ex: &Executor, id: &str) -> Value {
    let r = call(ex, None, "get_job", json!({"jobId": id})).await;
    assert!(r.ok, "{:?}", r.msg);
    r.data
}

/// Polls `id` until it is no longer running, `within` at most.
async fn settle(ex: &Executor, id: &str, within: Duration) -> Value {
    let t0 = Instant::now();
    loop {
        let j = get(ex, id).await;
        if j["status"] != "running" {
            return j;
        }
        assert!(t0.elapsed() < within, "{id} still running: {j}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A private engine keeping 4 jobs, 2 running at once: a job waiting for its busy task holds
/// no slot, a cancel ends a slot wait at once, unfinished jobs past the limit are refused, and
/// a cancel after the end changes nothing.
#[test]
fn jobs_wait_for_their_task_before_a_slot_and_the_registry_is_bounded() {
    let mut config = test_config();
    config.jobs_max = 4;
    config.jobs_concurrency = 2;
    private(config, |ex| async move {
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let r = call(&ex, None, "start", json!({})).await;
            tasks.push(TaskId(r.data["id"].as_str().unwrap().parse().unwrap()));
        }
        let (a, b, c) = (tasks[0], tasks[1], tasks[2]);
        let long = json!([{"wait": {"seconds": 4}}]);
        let quick = json!([{"get_url": {}}]);
        let a1 = job(&ex, a, long.clone()).await;
        let a2 = job(&ex, a, quick.clone()).await;
        let b1 = job(&ex, b, quick.clone()).await;
        // The second job of the busy task waits for its turn, not in a slot: b's job runs now.
        let j = settle(&ex, &b1, Duration::from_secs(3)).await;
        assert_eq!(j["status"], "done", "{j}");
        assert_eq!(
            get(&ex, &a1).await["status"],
            "running",
            "b1 did not wait for a1"
        );
        assert_eq!(get(&ex, &a2).await["queued"], true);
        // A cancel after the end: nothing changes, and the answer says so.
        let r = call(&ex, None, "cancel_job", json!({"jobId": b1})).await;
        assert!(r.ok);
        assert_eq!(r.data["cancelRequested"], false);
        assert_eq!(r.data["status"], "done");
        assert_eq!(get(&ex, &b1).await["cancelRequested"], false);

        // Both slots taken (a1, c1): a job of b waits for one; a cancel ends that wait at once.
        let c1 = job(&ex, c, long.clone()).await;
        let b2 = job(&ex, b, quick.clone()).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let j = get(&ex, &b2).await;
        assert_eq!(j["queued"], true, "{j}");
        let r = call(&ex, None, "cancel_job", json!({"jobId": b2})).await;
        assert_eq!(r.data["cancelRequested"], true);
        let j = settle(&ex, &b2, Duration::from_millis(300)).await;
        assert_eq!(j["status"], "cancelled", "{j}");
        assert_eq!(j["steps"], 0);
        assert_eq!(j["data"]["stopReason"], "cancelled");

        // a1, a2, c1 unfinished; one more fits the limit of 4, the next is refused.
        let b3 = job(&ex, b, long.clone()).await;
        let r = call(
            &ex,
            Some(b),
            "commands",
            json!({"async": true, "commands": quick}),
        )
        .await;
        assert_eq!(r.code, Some(ErrorCode::TaskBusy), "{:?}", r.msg);
        assert!(!r.started && r.retryable);
        let msg = r.msg.unwrap_or_default();
        assert!(
            msg.contains("4 jobs are unfinished, the limit is 4"),
            "{msg}"
        );
        let kept = call(&ex, None, "list_jobs", json!({})).await.data;
        assert_eq!(kept["kept"], 4, "{kept}");

        for id in [&b3, &c1, &a2] {
            call(&ex, None, "cancel_job", json!({"jobId": id})).await;
        }
        // Waiting ones end at once; a running one after its running step (its last: done).
        for id in [&a2, &b3] {
            let j = settle(&ex, id, Duration::from_millis(300)).await;
            assert_eq!(j["status"], "cancelled", "{id}: {j}");
        }
        assert_eq!(
            settle(&ex, &a1, Duration::from_secs(8)).await["status"],
            "done"
        );
        let j = settle(&ex, &c1, Duration::from_secs(8)).await;
        assert_eq!(j["status"], "done", "{j}");
        assert_eq!(j["cancelRequested"], true);
        call(&ex, None, "shutdown", json!({})).await;
    });
}

/// With one command in flight allowed, a running batch's steps still run: they take no permit
/// of their own inside the batch's lane (the batch holds one).
#[test]
fn a_batchs_steps_take_no_in_flight_permit_of_their_own() {
    let mut config = test_config();
    config.max_in_flight = 1;
    private(config, |ex| async move {
        let r = call(&ex, None, "start", json!({})).await;
        assert!(r.ok, "{:?}", r.msg);
        let t = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let r = call(
            &ex,
            Some(t),
            "commands",
            json!({"commands": [{"get_url": {}}, {"get_title": {}}]}),
        )
        .await;
        assert!(r.ok, "{:?} {}", r.msg, r.data);
        assert_eq!(r.data["count"], 2);
        assert_eq!(r.data["succeeded"], 2);
        call(&ex, None, "shutdown", json!({})).await;
    });
}

/// A job that meets its task's lane busy with another command sends its batch again; the task
/// closed meanwhile ends it `TASK_NOT_FOUND`, not with the busy answer.
#[test]
fn a_job_retrying_a_busy_lane_ends_with_its_task() {
    let mut config = test_config();
    config.lane_wait = Duration::from_millis(200);
    config.jobs_concurrency = 1;
    private(config, |ex| async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let r = call(&ex, None, "start", json!({})).await;
            tasks.push(TaskId(r.data["id"].as_str().unwrap().parse().unwrap()));
        }
        let (a, b) = (tasks[0], tasks[1]);
        // b's job holds the only slot for a second; a's job waits for it.
        let b1 = job(&ex, b, json!([{"wait": {"seconds": 1}}])).await;
        let a1 = job(&ex, a, json!([{"get_url": {}}])).await;
        // Meanwhile a plain command holds a's lane past the lane wait.
        let hold = {
            let ex = ex.clone();
            tokio::task::spawn_local(async move {
                call(&ex, Some(a), "wait", json!({"seconds": 4})).await
            })
        };
        settle(&ex, &b1, Duration::from_secs(5)).await;
        // a1 has its slot now and meets the busy lane (200 ms), then retries.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(get(&ex, &a1).await["status"], "running");
        let r = call(&ex, Some(a), "close", json!({})).await;
        assert!(r.ok, "{:?}", r.msg);
        let j = settle(&ex, &a1, Duration::from_secs(2)).await;
        assert_eq!(j["status"], "failed", "{j}");
        assert_eq!(j["data"]["errorCode"], "TASK_NOT_FOUND", "{j}");
        let e = j["error"].as_str().unwrap_or_default();
        assert!(e.contains("closed"), "{e}");
        let held = hold.await.unwrap();
        assert_eq!(held.code, Some(ErrorCode::TaskNotFound));
        call(&ex, None, "shutdown", json!({})).await;
    });
}
