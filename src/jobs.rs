//! The job registry (PROTOCOL.md §11): background batches (`commands{async=true}`), kept in
//! memory only — the newest `max` (oldest finished evicted first), at most `concurrency`
//! running at once (the rest wait for a slot, `queued:true`, status `running`).
//!
//! A job's batch runs as an ordinary executor call of `commands`; the job reaches it through a
//! task-local ([`scope`] / [`claim`]), so the batch checks its cancel flag before each step and
//! counts its finished steps. Pure bookkeeping: no browser, no executor.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::protocol::Receipt;

/// Milliseconds since the Unix epoch.
fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

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
}

impl Job {
    /// Asks the job to stop before its next step; answers whether it was still running.
    pub fn request_cancel(&self) -> bool {
        self.cancel.store(true, Ordering::SeqCst);
        self.status() == Status::Running
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
    pub fn finish(&self, receipt: Receipt) {
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
    /// past the limit (running ones are never evicted).
    pub fn submit(&self, task: TaskId, method: &'static str) -> Arc<Job> {
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
        });
        self.with(|jobs| {
            jobs.push_back(job.clone());
            while jobs.len() > self.max {
                match jobs.iter().position(|j| j.status() != Status::Running) {
                    Some(i) => {
                        jobs.remove(i);
                    }
                    None => break,
                }
            }
        });
        job
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
        let a = jobs.submit(TaskId(7), "commands");
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
        let b = jobs.submit(TaskId(7), "commands");
        b.finish(done(false));
        assert_eq!(b.describe(false)["status"], "failed");
        assert_eq!(b.describe(false)["error"], "step 0 failed");
        let c = jobs.submit(TaskId(7), "commands");
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
        let running = jobs.submit(TaskId(1), "commands");
        let old = jobs.submit(TaskId(1), "commands");
        old.finish(done(true));
        let mid = jobs.submit(TaskId(1), "commands");
        mid.finish(done(true));
        let new = jobs.submit(TaskId(1), "commands");
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
        let job = jobs.submit(TaskId(1), "commands");
        let (first, second) = rt.block_on(scope(job.clone(), async { (claim(), claim()) }));
        assert_eq!(first.map(|j| j.id.clone()), Some(job.id.clone()));
        assert!(second.is_none());
        assert!(claim().is_none(), "outside a job");
    }
}
