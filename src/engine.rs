//! `Engine`: the shared browser slot, the live tasks and the configuration.
//!
//! The engine owns no command semantics; the executor drives it and the lifecycle commands
//! (`start`, `close`, `shutdown`) change it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::browser::task::{Task, TaskId};
use crate::browser::{Browser, LaunchConfig};
use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// Engine-wide settings (PROTOCOL.md §16 where the seed has a key).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How to launch or attach to the browser.
    pub launch: LaunchConfig,
    /// Where captures and state files go (`<dir>/<task>/<seq>.png|txt`): `data/` of the state
    /// directory (`evidence::state_dir`).
    pub data_dir: PathBuf,
    /// Where `upload_file` stages inline and downloaded content and resolves relative paths:
    /// `upload/` of the state directory (`evidence::upload_dir`).
    pub upload_dir: PathBuf,
    /// Where the files its pages download go, a directory per task (`downloads/` of the
    /// state directory: `evidence::download_dir`).
    pub download_dir: PathBuf,
    /// How much evidence is kept (newest files per task, total size); the rest is deleted
    /// after each write.
    pub evidence: crate::evidence::Bound,
    /// How long a command waits for its task's lane (PROTOCOL.md §4.1: 5000 ms).
    pub lane_wait: Duration,
    /// The bound of a normal command (`browser.command.timeoutMs`, 90 s).
    pub command_timeout: Duration,
    /// The bound of a long-running command (`browser.command.hardTimeoutMs`, 15 min).
    pub long_command_timeout: Duration,
    /// Actionability timeout of element actions (`browser.action.timeoutMs`, 5000 ms).
    pub action_timeout_ms: u64,
    /// `execute_js` in-page budget (`browser.eval.timeoutMs`, 60000 ms).
    pub eval_timeout_ms: u64,
    /// How long a launch may take (`browser.launch.timeoutMs`, 60 s); an attach may take
    /// longer when `--cdp-wait` says so ([`EngineConfig::launch_bound`]).
    pub launch_timeout: Duration,
    /// When the shared browser is replaced for new tasks (its running tasks finish on it).
    pub recycle: Recycle,
    /// Where the trace log goes (`browser.trace.dir`, `logs/trace` of the state directory);
    /// `None` turns it off.
    pub trace_dir: Option<PathBuf>,
    /// Screenshots after page-changing commands (`browser.capture.enabled`, true).
    pub capture: bool,
    /// Commands in flight at once, engine-wide; one more is refused at once (not queued) with
    /// a `started:false` receipt (PROTOCOL.md §4.2: pool 24 + queue 24).
    pub max_in_flight: usize,
    /// Most characters of the snapshot's `text` (`get_browser_state`, 100,000): page text past
    /// it is not read from the page, and the receipt says what was cut (`textTruncated`).
    pub state_text_max_chars: usize,
    /// Where `run_recipe` / `list_recipes` look for `<name>.json`, in order (PROTOCOL.md §18:
    /// `recipes/` of the project directory, then of the state directory).
    pub recipe_dirs: Vec<PathBuf>,
    /// Where they look for Lua recipes `<name>.lua`, in order (`scripts/` of the project
    /// directory, then of the state directory).
    pub script_dirs: Vec<PathBuf>,
    /// Jobs kept in memory (`browser.jobs.max`, 50).
    pub jobs_max: usize,
    /// Jobs running at once (`browser.jobs.maxConcurrency`, 2); more wait for a slot.
    pub jobs_concurrency: usize,
}

/// `recipes/` and `scripts/` of the project (current) directory, then of `state`.
fn recipe_and_script_dirs(state: &std::path::Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let project = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    (
        vec![project.join("recipes"), state.join("recipes")],
        vec![project.join("scripts"), state.join("scripts")],
    )
}

impl EngineConfig {
    /// How long getting a browser may take: the launch timeout, or for an attach, the time an
    /// endpoint may keep the connection queued (`--cdp-wait`) and a margin for the rest (asking
    /// `/json/version`, the browser session, the CDP client: 30 s).
    pub fn launch_bound(&self) -> Duration {
        match self
            .launch
            .cdp_url
            .as_ref()
            .or(self.launch.grid_url.as_ref())
        {
            Some(_) => self
                .launch_timeout
                .max(self.launch.cdp_wait() + Duration::from_secs(30)),
            None => self.launch_timeout,
        }
    }

    /// The defaults, with `data/` and `logs/trace` under the state directory `state`.
    pub fn in_state_dir(state: &std::path::Path) -> EngineConfig {
        let (recipe_dirs, script_dirs) = recipe_and_script_dirs(state);
        EngineConfig {
            recipe_dirs,
            script_dirs,
            data_dir: crate::evidence::data_dir(state),
            upload_dir: crate::evidence::upload_dir(state),
            download_dir: crate::evidence::download_dir(state),
            trace_dir: Some(crate::evidence::trace_dir(state)),
            ..EngineConfig::default()
        }
    }
}

impl Default for EngineConfig {
    /// Files under the state directory (`evidence::state_dir(None)`); without one (no
    /// `HOME`), under `moonpilot-state` of the temporary directory — never the current one.
    fn default() -> Self {
        let state = crate::evidence::state_dir(None)
            .unwrap_or_else(|| std::env::temp_dir().join("moonpilot-state"));
        let (recipe_dirs, script_dirs) = recipe_and_script_dirs(&state);
        EngineConfig {
            recipe_dirs,
            script_dirs,
            jobs_max: 50,
            jobs_concurrency: 2,
            launch: LaunchConfig::default(),
            data_dir: crate::evidence::data_dir(&state),
            upload_dir: crate::evidence::upload_dir(&state),
            download_dir: crate::evidence::download_dir(&state),
            evidence: crate::evidence::Bound::default(),
            lane_wait: Duration::from_millis(5000),
            command_timeout: Duration::from_millis(90_000),
            long_command_timeout: Duration::from_millis(900_000),
            action_timeout_ms: 5000,
            eval_timeout_ms: 60_000,
            launch_timeout: Duration::from_secs(60),
            state_text_max_chars: 100_000,
            trace_dir: Some(crate::evidence::trace_dir(&state)),
            max_in_flight: 48,
            capture: true,
            recycle: Recycle::default(),
        }
    }
}

/// When the shared browser is recycled: new tasks go to a fresh browser, the tasks running on
/// the old one finish there, and it stops with its last task. Only a browser the engine
/// launched on a temporary profile is recycled (a `--profile` is locked by the browser that
/// runs it; an attached browser is the fleet's). What the shared default context held
/// (cookies of tasks that were not isolated) stays with the old browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recycle {
    /// After this many tasks were started on it (`--recycle-after`; `None`: never).
    pub after_tasks: Option<u64>,
    /// Once its processes hold more than this many MiB of memory (`--max-browser-mb`, read
    /// at a start at most every 5 s; a browser the engine launched only; `None`: no bound).
    pub max_browser_mb: Option<u64>,
}

impl Default for Recycle {
    fn default() -> Recycle {
        Recycle {
            after_tasks: Some(RECYCLE_AFTER_TASKS),
            max_browser_mb: Some(MAX_BROWSER_MB),
        }
    }
}

/// `--recycle-after`'s default.
pub const RECYCLE_AFTER_TASKS: u64 = 500;
/// `--max-browser-mb`'s default.
pub const MAX_BROWSER_MB: u64 = 2048;

/// The engine: one shared browser, many tasks.
pub struct Engine {
    /// Its settings.
    pub config: EngineConfig,
    /// When the engine started (for `TASK_NOT_FOUND` messages and health).
    pub started_at: SystemTime,
    browser: tokio::sync::Mutex<Option<Arc<Browser>>>,
    /// Browsers recycled while tasks still ran on them: each stops with its last task.
    retired: Mutex<Vec<Arc<Browser>>>,
    /// How many browsers were recycled (for `get_config`).
    pub recycled: AtomicUsize,
    launching: Mutex<Option<(Instant, bool)>>,
    starting: AtomicUsize,
    tasks: Mutex<BTreeMap<TaskId, Arc<Task>>>,
    /// Task ids whose next `start` opens them in a browser context of their own.
    isolated: Mutex<std::collections::HashSet<TaskId>>,
    /// Human-input requests (no lane: a submit never waits behind a long-poll).
    desk: Mutex<crate::human::Desk>,
    /// The desk's version, for long-polls and hosts that show new requests.
    desk_changed: tokio::sync::watch::Sender<u64>,
    /// The trace log's writer, when on.
    tracer: Option<crate::trace::Tracer>,
    /// Permits for commands in flight (`max_in_flight`).
    pub in_flight: tokio::sync::Semaphore,
    /// Background jobs (async batches).
    pub jobs: crate::jobs::Jobs,
    /// Keeps `data/` within `config.evidence`, off every command's path.
    pub keeper: crate::evidence::Keeper,
}

impl Engine {
    /// A new engine; nothing is launched until the first `start`.
    pub fn new(config: EngineConfig) -> Arc<Engine> {
        Arc::new(Engine {
            started_at: SystemTime::now(),
            browser: tokio::sync::Mutex::new(None),
            retired: Mutex::new(Vec::new()),
            recycled: AtomicUsize::new(0),
            launching: Mutex::new(None),
            starting: AtomicUsize::new(0),
            tasks: Mutex::new(BTreeMap::new()),
            isolated: Mutex::new(Default::default()),
            desk: Mutex::new(crate::human::Desk::default()),
            desk_changed: tokio::sync::watch::channel(0).0,
            tracer: config.trace_dir.clone().map(crate::trace::Tracer::start),
            in_flight: tokio::sync::Semaphore::new(config.max_in_flight.max(1)),
            jobs: crate::jobs::Jobs::new(config.jobs_max, config.jobs_concurrency),
            keeper: crate::evidence::Keeper::start(config.data_dir.clone(), config.evidence),
            config,
        })
    }

    /// Runs `f` on the human-input desk (locked only for `f`, never across an `.await`), and
    /// tells waiters when it changed.
    pub fn with_desk<T>(&self, f: impl FnOnce(&mut crate::human::Desk) -> T) -> T {
        let (out, version) = {
            let mut desk = match self.desk.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            let before = desk.version;
            let out = f(&mut desk);
            (out, (desk.version != before).then_some(desk.version))
        };
        if let Some(v) = version {
            self.desk_changed.send_replace(v);
        }
        out
    }

    /// Whether commands are traced.
    pub fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// Tags the trace lines of the commands from now on with the recorded run `run` (none:
    /// untagged); see `runs.rs`.
    pub fn set_trace_run(&self, run: Option<&str>) {
        if let Some(t) = &self.tracer {
            t.set_run(run);
        }
    }

    /// Queues one command's trace record (never blocks, never fails), with the description of
    /// the element the command's index meant, if it had one.
    pub fn trace(
        &self,
        task: Option<TaskId>,
        method: &str,
        declared: &'static [crate::command::param::ParamSpec],
        params: serde_json::Value,
        receipt: &crate::Receipt,
        element: Option<serde_json::Value>,
    ) {
        if let Some(t) = &self.tracer {
            t.record(task, method, declared, params, receipt, element);
        }
    }

    /// Wakes on every change of the human-input desk.
    pub fn desk_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.desk_changed.subscribe()
    }

    fn with_tasks<T>(&self, f: impl FnOnce(&mut BTreeMap<TaskId, Arc<Task>>) -> T) -> T {
        let mut guard = match self.tasks.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// The live task `id`.
    pub fn task(&self, id: TaskId) -> Option<Arc<Task>> {
        self.with_tasks(|t| t.get(&id).cloned())
    }

    /// Every live task, by id.
    pub fn tasks(&self) -> Vec<Arc<Task>> {
        self.with_tasks(|t| t.values().cloned().collect())
    }

    /// Registers a task; fails if the id is taken.
    pub fn insert_task(&self, task: Arc<Task>) -> Result<(), Arc<Task>> {
        self.with_tasks(|t| {
            if t.contains_key(&task.id) {
                return Err(task);
            }
            t.insert(task.id, task);
            Ok(())
        })
    }

    /// Forgets a task.
    pub fn remove_task(&self, id: TaskId) -> Option<Arc<Task>> {
        // Its waiting human-input requests can no longer be acted on.
        self.with_desk(|d| d.close_task(id.0));
        self.with_tasks(|t| t.remove(&id))
    }

    /// Has the next `start` of `id` open it in a browser context of its own (its cookies and
    /// storage its own, gone when it closes), as Splash's private mode wants for each request.
    /// The catalogue's `start` has no such param: this is for the hosts that open tasks.
    pub fn isolate_next_start(&self, id: TaskId) {
        match self.isolated.lock() {
            Ok(mut g) => g.insert(id),
            Err(poisoned) => poisoned.into_inner().insert(id),
        };
    }

    /// Whether `id`'s `start` is to be isolated (and forgets it).
    pub fn take_isolated(&self, id: TaskId) -> bool {
        match self.isolated.lock() {
            Ok(mut g) => g.remove(&id),
            Err(poisoned) => poisoned.into_inner().remove(&id),
        }
    }

    /// Marks a `start` in progress until the guard drops: the shared browser is not stopped
    /// for lack of tasks meanwhile.
    pub fn begin_start(&self) -> StartGuard<'_> {
        self.starting.fetch_add(1, Ordering::SeqCst);
        StartGuard(&self.starting)
    }

    /// Keeps the shared browser running while no task uses it, until the guard drops: for a
    /// host that closes a task and opens the next in a row (`moonpilot test`), which would
    /// otherwise stop and relaunch the browser (or reconnect to a remote one) between them.
    pub fn keep_browser(&self) -> StartGuard<'_> {
        self.begin_start()
    }

    /// The `launching` block of `list_tasks`, while a launch is in progress.
    pub fn launching(&self) -> Option<(Instant, bool)> {
        self.launching.lock().ok().and_then(|l| *l)
    }

    /// The running shared browser, if any. Never waits: while a launch holds the slot the
    /// answer is `None` (and [`Engine::launching`] says so).
    pub fn current_browser(&self) -> Option<Arc<Browser>> {
        self.browser
            .try_lock()
            .ok()
            .and_then(|slot| slot.clone())
            .filter(|b| b.is_alive())
    }

    /// The shared browser for a new task, launching it if none runs (or the last one died).
    pub async fn browser_for_start(&self, headless: bool) -> Result<Arc<Browser>, CommandError> {
        let mut slot = self.browser.lock().await;
        if let Some(b) = slot.as_ref() {
            if b.is_alive() {
                let others = self.with_tasks(|t| t.len());
                if b.headless != headless && others > 0 {
                    return Err(CommandError::invalid(
                        "headless",
                        format!(
                            "the shared browser runs {} and {others} task(s) use it; close them \
                             first or start with `headless={}`",
                            if b.headless {
                                "headless"
                            } else {
                                "with a window"
                            },
                            b.headless
                        ),
                    ));
                }
                if b.headless == headless {
                    match self.recycle_reason(b).await {
                        None => {
                            b.count_task();
                            return Ok(b.clone());
                        }
                        Some(why) => {
                            // New tasks go to a fresh browser; the running ones finish here,
                            // and it stops with the last of them.
                            tracing::info!("recycling the shared browser: {why}");
                            if let Some(old) = slot.take() {
                                self.retire(old);
                            }
                        }
                    }
                }
            }
        }
        if slot.is_some() {
            // Dead, or idle with the other headless flag: rebuild.
            let old = slot.take();
            self.with_tasks(|t| t.retain(|_, task| task.browser.is_alive()));
            if let Some(old) = old {
                old.stop().await;
            }
        }
        let mut launch = self.config.launch.clone();
        launch.headful = !headless;
        launch.download_dir = Some(self.config.download_dir.clone());
        let res = {
            // Cleared on drop, so a start whose future is dropped mid-launch does not leave a
            // "launching" block behind.
            let _launching = Launching::begin(&self.launching, headless);
            tokio::time::timeout(self.config.launch_bound(), Browser::start(&launch)).await
        };
        let browser = match res {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(CommandError::failed(e.to_string())),
            Err(_) => {
                return Err(CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "the browser did not start within {} s",
                        self.config.launch_bound().as_secs()
                    ),
                ))
            }
        };
        browser.count_task();
        *slot = Some(browser.clone());
        Ok(browser)
    }

    /// Why `b` should be recycled now, if it should: its task count or its memory.
    async fn recycle_reason(&self, b: &Browser) -> Option<String> {
        // Only a browser launched on a temporary profile: a kept profile is locked by the
        // running browser, and an attached one is someone else's to recycle.
        if !matches!(
            b.mode,
            crate::browser::Mode::Managed {
                temporary: true,
                ..
            }
        ) {
            return None;
        }
        let r = self.config.recycle;
        if let Some(n) = r.after_tasks.filter(|n| *n > 0) {
            if b.tasks_started() >= n {
                return Some(format!("{n} tasks were started on it (--recycle-after)"));
            }
        }
        let bound = r.max_browser_mb.filter(|mb| *mb > 0)?;
        let mb = b.memory_mb().await?;
        (mb > bound).then(|| format!("its processes hold {mb} MiB (--max-browser-mb {bound})"))
    }

    /// Keeps `old` for the tasks running on it (stopped at once when none does).
    fn retire(&self, old: Arc<Browser>) {
        self.recycled.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut r) = self.retired.lock() {
            r.push(old);
        }
    }

    /// Stops the recycled browsers no task runs on any more (or that died).
    async fn reap_retired(&self) {
        let idle: Vec<Arc<Browser>> = {
            let Ok(mut r) = self.retired.lock() else {
                return;
            };
            let in_use = |b: &Arc<Browser>| {
                self.with_tasks(|t| t.values().any(|task| Arc::ptr_eq(&task.browser, b)))
            };
            let (idle, busy): (Vec<_>, Vec<_>) =
                r.drain(..).partition(|b| !b.is_alive() || !in_use(b));
            *r = busy;
            idle
        };
        for b in idle {
            b.stop().await;
        }
    }

    /// Stops the shared browser when no task is left.
    pub async fn stop_browser_if_idle(&self) {
        self.reap_retired().await;
        let mut slot = self.browser.lock().await;
        // A `start` between its launch and registering its task counts as a user of the browser.
        if self.with_tasks(|t| t.is_empty()) && self.starting.load(Ordering::SeqCst) == 0 {
            if let Some(b) = slot.take() {
                b.stop().await;
            }
        }
    }

    /// Waits (1 s at most) until the trace log holds every record sent so far: the end of a
    /// host's run.
    pub async fn flush_trace(&self) {
        if let Some(t) = &self.tracer {
            t.flush().await;
        }
    }

    /// Closes every task and the shared browser, after the evidence files their receipts named
    /// are written; returns the closed ids.
    pub async fn shutdown(&self) -> Vec<TaskId> {
        let t0 = Instant::now();
        let tasks: Vec<Arc<Task>> = self.with_tasks(|t| std::mem::take(t).into_values().collect());
        let mut closed = Vec::new();
        for task in tasks {
            task.mark_closed();
            // Evidence files that receipts already named are written before the tabs go (each
            // job is bounded by EVIDENCE_BOUND, so a hung browser cannot hold this up for long).
            task.evidence_settled().await;
            tracing::debug!(target: "moonpilot::stop", "task {}: evidence written after {:?}", task.id, t0.elapsed());
            // Bounded: a dead or hung browser must not hold up the shutdown.
            let _ = tokio::time::timeout(Duration::from_secs(5), task.close_tabs()).await;
            tracing::debug!(target: "moonpilot::stop", "task {}: tabs closed after {:?}", task.id, t0.elapsed());
            closed.push(task.id);
        }
        if let Some(b) = self.browser.lock().await.take() {
            b.stop().await;
            tracing::debug!(target: "moonpilot::stop", "browser stopped after {:?}", t0.elapsed());
        }
        // No task is left: every recycled browser goes too.
        self.reap_retired().await;
        // What the bound does not keep is gone before the process exits.
        self.keeper.flush(Duration::from_secs(2)).await;
        closed
    }
}

/// A `start` in progress, or a host keeping the browser (see [`Engine::begin_start`],
/// [`Engine::keep_browser`]).
pub struct StartGuard<'a>(&'a AtomicUsize);

impl Drop for StartGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The `launching` block, set for the life of the guard.
struct Launching<'a>(&'a Mutex<Option<(Instant, bool)>>);

impl<'a> Launching<'a> {
    fn begin(slot: &'a Mutex<Option<(Instant, bool)>>, headless: bool) -> Launching<'a> {
        if let Ok(mut l) = slot.lock() {
            *l = Some((Instant::now(), headless));
        }
        Launching(slot)
    }
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        if let Ok(mut l) = self.0.lock() {
            *l = None;
        }
    }
}
