//! The job registry (PROTOCOL.md §11): background batches (`commands{async=true}`), kept in
//! memory only — the newest `max` (oldest finished evicted first; a new job is refused while
//! `max` are unfinished), at most `concurrency` running at once (the rest wait, `queued:true`,
//! status `running`: first for their task's turn — one job of a task at a time, in order — then
//! for a slot, so a job waiting for a busy task holds none). Stored results are capped
//! ([`MAX_RESULT_BYTES`]); a job whose future is dropped unfinished is recorded failed.
//!
//! A job's batch runs as an ordinary executor call of `commands`; the job reaches it through a
//! task-local ([`scope`] / [`claim`]), so the batch checks its cancel flag before each step and
//! counts its finished steps. Pure bookkeeping: no browser, no executor.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::clock::epoch_ms;
use crate::protocol::Receipt;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for a slot or running its steps.
    Running,
    /// Its batch succeeded.
    Done,
    /// Its batch failed (a step, an assertion, the task closed, ...).
    Failed,
    /// Cancelled before one of its steps.
    Cancelled,
}

impl Status {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone)]
struct Outcome {
    status: Status,
    finished_at: u64,
    duration_ms: u64,
    receipt: Receipt,
}

/// One background job.
#[derive(Debug)]
pub struct Job {
    /// `job-<epochMs>-<seq>`.
    pub id: String,
    /// What it runs (`commands`).
    pub method: &'static str,
    /// The task it runs on.
    pub task: TaskId,
    /// When it was submitted (epoch ms).
    pub started_at: u64,
    t0: Instant,
    cancel: AtomicBool,
    queued: AtomicBool,
    claimed: AtomicBool,
    steps: AtomicU64,
    outcome: Mutex<Option<Outcome>>,
    /// Woken by a cancel (a stored permit when nobody waits yet, so none is missed).
    cancel_wake: tokio::sync::Notify,
}

/// Most bytes of a job's stored result (`data` serialized): past it, the step records' `data`
/// is dropped and `resultTruncated` set (50 jobs of 200 steps must not hold gigabytes).
pub const MAX_RESULT_BYTES: usize = 2 * 1024 * 1024;

/// Keeps `data` (a batch's result) under `cap` serialized bytes: the `data` of the step records
/// past the cap becomes `null` (`dataDropped:true` on the record) and `resultTruncated:true`
/// is set. Answers whether anything was dropped.
fn cap_result(data: &mut Value, cap: usize) -> bool {
    let size = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    if size(data) <= cap {
        return false;
    }
    let Some(results) = data.get_mut("results").and_then(Value::as_array_mut) else {
        return false;
    };
    // Room for the records without their data, then their data in order while it fits.
    let mut used: usize = 0;
    let mut sizes = Vec::with_capacity(results.len());
    for rec in results.iter() {
        sizes.push(rec.get("data").map_or(0, size));
        used += size(rec);
    }
    let mut kept = used - sizes.iter().sum::<usize>();
    for (rec, n) in results.iter_mut().zip(sizes) {
        if kept + n <= cap {
            kept += n;
        } else {
            rec["data"] = Value::Null;
            rec["dataDropped"] = json!(true);
        }
    }
    data["resultTruncated"] = json!(true);
    data["resultCapBytes"] = json!(cap);
    true
}

impl Job {
    /// Asks the job to stop before its next step (or at once while it waits for its turn);
    /// answers whether it was still running. A job that has ended keeps its flag as it was.
    pub fn request_cancel(&self) -> bool {
        if self.status() != Status::Running {
            return false;
        }
        self.cancel.store(true, Ordering::SeqCst);
        self.cancel_wake.notify_one();
        true
    }

    /// Resolves once a cancel was asked for.
    pub async fn cancelled(&self) {
        while !self.cancel_requested() {
            self.cancel_wake.notified().await;
        }
    }

    /// Whether a cancel was asked for.
    pub fn cancel_requested(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Counts one finished step.
    pub fn step_done(&self) {
        self.steps.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks it waiting for a slot (or not any more).
    pub fn set_queued(&self, queued: bool) {
        self.queued.store(queued, Ordering::SeqCst);
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome.lock().ok().and_then(|o| o.clone())
    }

    /// Its status.
    pub fn status(&self) -> Status {
        self.outcome().map_or(Status::Running, |o| o.status)
    }

    /// Records the batch's receipt: done, failed, or cancelled (the batch stopped for the
    /// cancel). The first record wins.
    pub fn finish(&self, mut receipt: Receipt) {
        cap_result(&mut receipt.data, MAX_RESULT_BYTES);
        let cancelled = receipt.data["stopReason"] == "cancelled";
        let status = match (cancelled, receipt.ok) {
            (true, _) => Status::Cancelled,
            (false, true) => Status::Done,
            (false, false) => Status::Failed,
        };
        if let Ok(mut o) = self.outcome.lock() {
            if o.is_none() {
                *o = Some(Outcome {
                    status,
                    finished_at: epoch_ms(),
                    duration_ms: self.t0.elapsed().as_millis() as u64,
                    receipt,
                });
            }
        }
    }

    /// The `get_job` / `list_jobs` description (with the batch's `ok`/`msg`/`data` when
    /// `include_result` and it has ended).
    pub fn describe(&self, include_result: bool) -> Value {
        let outcome = self.outcome();
        let status = outcome.as_ref().map_or(Status::Running, |o| o.status);
        let mut d = json!({
            "jobId": self.id,
            "method": self.method,
            "browserId": self.task.to_string(),
            "status": status.as_str(),
            "startedAt": self.started_at,
            "steps": self.steps.load(Ordering::SeqCst),
            "cancelRequested": self.cancel_requested(),
        });
        match outcome {
            None => {
                d["queued"] = json!(self.queued.load(Ordering::SeqCst));
                d["durationMs"] = json!(self.t0.elapsed().as_millis() as u64);
                d["hint"] = json!("still running: poll get_job again in a second or two (cancel_job stops it before its next step)");
            }
            Some(o) => {
                d["finishedAt"] = json!(o.finished_at);
                d["durationMs"] = json!(o.duration_ms);
                if !o.receipt.ok {
                    d["error"] = json!(o.receipt.msg);
                }
                if include_result {
                    d["ok"] = json!(o.receipt.ok);
                    if let Some(msg) = &o.receipt.msg {
                        d["msg"] = json!(msg);
                    }
                    d["data"] = o.receipt.data.clone();
                }
            }
        }
        d
    }
}

/// The registry.
#[derive(Debug)]
pub struct Jobs {
    max: usize,
    concurrency: usize,
    seq: AtomicU64,
    jobs: Mutex<VecDeque<Arc<Job>>>,
    /// Slots for running jobs.
    pub slots: tokio::sync::Semaphore,
    /// One turn per task: a job takes its task's turn before a slot, so jobs waiting for a busy
    /// task never hold the slots other tasks' jobs need.
    turns: Mutex<HashMap<TaskId, Arc<tokio::sync::Mutex<()>>>>,
}

/// A job's turn on its task (see [`Jobs::turn`]); let go when dropped.
pub struct Turn {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Jobs {
    /// A registry keeping `max` jobs, running `concurrency` at once.
    pub fn new(max: usize, concurrency: usize) -> Jobs {
        Jobs {
            max: max.max(1),
            concurrency: concurrency.max(1),
            seq: AtomicU64::new(0),
            jobs: Mutex::new(VecDeque::new()),
            slots: tokio::sync::Semaphore::new(concurrency.max(1)),
            turns: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for `task`'s turn: the jobs of one task run one after another, in submission
    /// order, and only the one whose turn it is waits for a slot.
    pub async fn turn(&self, task: TaskId) -> Turn {
        let gate = {
            let mut turns = match self.turns.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            // Gates nobody holds or waits for are dropped (closed tasks leave none behind).
            turns.retain(|_, g| Arc::strong_count(g) > 1);
            turns.entry(task).or_default().clone()
        };
        Turn {
            _guard: gate.lock_owned().await,
        }
    }

    /// How many jobs are kept.
    pub fn max(&self) -> usize {
        self.max
    }

    /// How many run at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    fn with<T>(&self, f: impl FnOnce(&mut VecDeque<Arc<Job>>) -> T) -> T {
        let mut guard = match self.jobs.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Registers a new running job of `method` on `task`, evicting the oldest finished jobs
    /// past the limit (running ones are never evicted); refused (the limit, in words) when
    /// `max` jobs are unfinished already.
    pub fn submit(&self, task: TaskId, method: &'static str) -> Result<Arc<Job>, String> {
        let started_at = epoch_ms();
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let job = Arc::new(Job {
            id: format!("job-{started_at}-{seq}"),
            method,
            task,
            started_at,
            t0: Instant::now(),
            cancel: AtomicBool::new(false),
            queued: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            steps: AtomicU64::new(0),
            outcome: Mutex::new(None),
            cancel_wake: tokio::sync::Notify::new(),
        });
        self.with(|jobs| {
            let unfinished = jobs.iter().filter(|j| j.status() == Status::Running).count();
            if unfinished >= self.max {
                return Err(format!(
                    "{unfinished} jobs are unfinished, the limit is {} (browser.jobs.max): wait for one to end (get_job, list_jobs) or cancel one",
                    self.max
                ));
            }
            jobs.push_back(job.clone());
            while jobs.len() > self.max {
                match jobs.iter().position(|j| j.status() != Status::Running) {
                    Some(i) => {
                        jobs.remove(i);
                    }
                    None => break,
                }
            }
            Ok(job.clone())
        })
    }

    /// The job `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.with(|jobs| jobs.iter().find(|j| j.id == id).cloned())
    }

    /// The newest `limit` jobs, newest first.
    pub fn list(&self, limit: usize) -> Vec<Arc<Job>> {
        self.with(|jobs| jobs.iter().rev().take(limit).cloned().collect())
    }

    /// How many are kept now.
    pub fn len(&self) -> usize {
        self.with(|jobs| jobs.len())
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Held by a job's background future: when that future is dropped before the job ended (a
/// panic, its runtime shut down), the job is recorded `failed` instead of `running` forever.
pub struct FinishOnDrop(pub Arc<Job>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish(Receipt::failure(
            self.0.method,
            crate::protocol::ErrorCode::Internal,
            format!(
                "{}: the job's runtime ended before the job did (its outcome is unknown)",
                self.0.method
            ),
            None,
            true,
            0.0,
        ));
    }
}

tokio::task_local! {
    static CURRENT: Arc<Job>;
}

/// Runs `fut` as the work of `job`: the first batch inside it [`claim`]s the job.
pub fn scope<F: Future>(job: Arc<Job>, fut: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(job, fut)
}

/// The job whose work this is, for the first batch that asks (the job's own batch; a recipe's
/// batch inside one of its steps gets `None`).
pub fn claim() -> Option<Arc<Job>> {
    CURRENT
        .try_with(|job| job.clone())
        .ok()
        .filter(|job| !job.claimed.swap(true, Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    fn done(ok: bool) -> Receipt {
        if ok {
            Receipt::success("commands", json!({"count": 1}), 1.0)
        } else {
            Receipt::failure(
                "commands",
                ErrorCode::ActionFailed,
                "step 0 failed".into(),
                None,
                true,
                1.0,
            )
        }
    }

    #[test]
    fn ids_statuses_and_descriptions() {
        let jobs = Jobs::new(50, 2);
        let a = jobs.submit(TaskId(7), "commands").unwrap();
        assert!(a.id.starts_with("job-"));
        assert!(a.id.ends_with("-1"));
        let d = a.describe(true);
        assert_eq!(d["status"], "running");
        assert_eq!(d["browserId"], "7");
        assert!(d.get("finishedAt").is_none());
        a.step_done();
        a.finish(done(true));
        let d = a.describe(true);
        assert_eq!(d["status"], "done");
        assert_eq!(d["steps"], 1);
        assert_eq!(d["data"]["count"], 1);
        assert!(a.describe(false).get("data").is_none());
        let b = jobs.submit(TaskId(7), "commands").unwrap();
        b.finish(done(false));
        assert_eq!(b.describe(false)["status"], "failed");
        assert_eq!(b.describe(false)["error"], "step 0 failed");
        let c = jobs.submit(TaskId(7), "commands").unwrap();
        assert!(c.request_cancel());
        let mut r = done(true);
        r.data["stopReason"] = json!("cancelled");
        c.finish(r);
        assert_eq!(c.status(), Status::Cancelled);
        assert!(!c.request_cancel(), "already over");
        let newest: Vec<String> = jobs.list(2).iter().map(|j| j.id.clone()).collect();
        assert_eq!(newest, vec![c.id.clone(), b.id.clone()]);
    }

    #[test]
    fn retention_evicts_the_oldest_finished_first() {
        let jobs = Jobs::new(3, 2);
        let running = jobs.submit(TaskId(1), "commands").unwrap();
        let old = jobs.submit(TaskId(1), "commands").unwrap();
        old.finish(done(true));
        let mid = jobs.submit(TaskId(1), "commands").unwrap();
        mid.finish(done(true));
        let new = jobs.submit(TaskId(1), "commands").unwrap();
        assert_eq!(jobs.len(), 3);
        assert!(jobs.get(&running.id).is_some(), "running jobs stay");
        assert!(jobs.get(&old.id).is_none(), "the oldest finished goes");
        assert!(jobs.get(&mid.id).is_some() && jobs.get(&new.id).is_some());
    }

    #[test]
    fn the_first_batch_claims_the_job() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let jobs = Jobs::new(5, 1);
        let job = jobs.submit(TaskId(1), "commands").unwrap();
        let (first, second) = rt.block_on(scope(job.clone(), async { (claim(), claim()) }));
        assert_eq!(first.map(|j| j.id.clone()), Some(job.id.clone()));
        assert!(second.is_none());
        assert!(claim().is_none(), "outside a job");
    }

    #[test]
    fn unfinished_jobs_are_capped_and_refused_past_the_limit() {
        let jobs = Jobs::new(3, 2);
        let running: Vec<_> = (0..3)
            .map(|_| jobs.submit(TaskId(1), "commands").unwrap())
            .collect();
        let e = jobs.submit(TaskId(1), "commands").unwrap_err();
        assert!(e.contains("3 jobs are unfinished, the limit is 3"), "{e}");
        assert_eq!(jobs.len(), 3, "nothing registered for the refused one");
        running[0].finish(done(true));
        assert!(jobs.submit(TaskId(1), "commands").is_ok(), "room again");
        assert_eq!(jobs.len(), 3, "the finished one was evicted");
    }

    #[test]
    fn a_cancel_after_the_end_changes_nothing_and_wakes_a_waiter_before() {
        let jobs = Jobs::new(5, 1);
        let j = jobs.submit(TaskId(1), "commands").unwrap();
        j.finish(done(true));
        assert!(!j.request_cancel());
        assert!(!j.cancel_requested(), "a finished job keeps its flag");
        assert_eq!(j.describe(false)["cancelRequested"], false);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let k = jobs.submit(TaskId(1), "commands").unwrap();
        let k2 = k.clone();
        let woke = rt.block_on(async move {
            let waiter = tokio::spawn(async move { k2.cancelled().await });
            tokio::task::yield_now().await;
            assert!(k.request_cancel());
            tokio::time::timeout(std::time::Duration::from_secs(1), waiter).await
        });
        assert!(matches!(woke, Ok(Ok(()))), "the waiter woke at once");
    }

    #[test]
    fn stored_results_are_capped() {
        let jobs = Jobs::new(5, 1);
        let j = jobs.submit(TaskId(1), "commands").unwrap();
        let big = "x".repeat(400 * 1024);
        let results: Vec<Value> = (0..10)
            .map(|i| json!({"index": i, "command": "get_html", "ok": true, "data": {"html": big}}))
            .collect();
        j.finish(Receipt::success(
            "commands",
            json!({"count": 10, "results": results}),
            1.0,
        ));
        let d = j.describe(true);
        let data = &d["data"];
        assert_eq!(data["resultTruncated"], true);
        assert!(serde_json::to_vec(data).unwrap().len() <= MAX_RESULT_BYTES + 1024);
        let r = data["results"].as_array().unwrap();
        assert_eq!(r.len(), 10, "every record stays");
        assert_eq!(r[0]["data"]["html"].as_str().unwrap().len(), big.len());
        assert_eq!(r[9]["data"], Value::Null);
        assert_eq!(r[9]["dataDropped"], true);
        assert_eq!(r[9]["ok"], true);
        // Small results are kept whole.
        let small = jobs.submit(TaskId(1), "commands").unwrap();
        small.finish(done(true));
        assert!(small.describe(true)["data"]
            .get("resultTruncated")
            .is_none());
    }

    #[test]
    fn a_job_whose_future_is_dropped_fails() {
        let jobs = Jobs::new(5, 1);
        let j = jobs.submit(TaskId(1), "commands").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let guard = FinishOnDrop(j.clone());
        rt.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        });
        rt.block_on(tokio::task::yield_now());
        assert_eq!(j.status(), Status::Running);
        drop(rt);
        assert_eq!(j.status(), Status::Failed);
        assert!(j.describe(false)["error"]
            .as_str()
            .unwrap()
            .contains("runtime ended"));
        // A job that ended keeps its record.
        let k = jobs.submit(TaskId(1), "commands").unwrap();
        k.finish(done(true));
        drop(FinishOnDrop(k.clone()));
        assert_eq!(k.status(), Status::Done);
    }
}
