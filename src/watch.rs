//! `moonpilot watch FILE.lua`: runs the script, and again on every save of it or of a module it
//! `require`d, with the browser and the tasks kept between runs.
//!
//! notify feeds a channel with the paths that changed in the watched files' directories
//! (directories, not files, so editors that save by renaming a new file over the old one are
//! seen); the loop waits a short grace period, drains and de-duplicates, then re-runs once
//! (wezterm's `watch_path`). Each run gets a fresh Lua state over the same executor and the
//! session's [`Journal`], which hands the previous run's tasks over and replays commands up to
//! a checkpoint. A save during a run aborts it and the coroutines it spawned: their futures are
//! dropped, so late results are never seen.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::signal::unix::Signal;
use tokio::sync::mpsc;

use futures::future::LocalBoxFuture;

use crate::browser::task::TaskId;
use crate::command::Opens;
use crate::executor::Executor;
use crate::lua::journal::{AtCheckpoint, Journal, Replayed};
use crate::lua::{adoptable, adopted, opens, run_host, Hook, LuaHost};
use crate::protocol::Receipt;
use crate::report::{Recording, Run};
use crate::runs::{RunRecord, RunStatus};
use crate::EngineConfig;

/// How long a save's events must pause before the re-run starts.
const GRACE: Duration = Duration::from_millis(30);
/// The longest a stream of events can hold a re-run back.
const GRACE_CAP: Duration = Duration::from_millis(150);

/// Whether an event can mean "the file was saved" (reads, including our own, cannot).
fn is_write(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        _ => false,
    }
}

/// How a run ended.
enum Outcome {
    Finished(mlua::Result<()>),
    /// A watched file changed during the run: these ones.
    Saved(BTreeSet<PathBuf>),
    Interrupted,
}

/// The watcher and the set of files it reports (also the Splash scripts' watch,
/// `splash::local::watch_file`).
pub struct Files {
    watcher: notify::RecommendedWatcher,
    /// Paths written, with when notify saw them.
    events: mpsc::UnboundedReceiver<(Instant, PathBuf)>,
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    /// Saved files seen by a `next_save` that was cancelled before it answered.
    pending: BTreeSet<PathBuf>,
    /// When the latest relevant event happened.
    last_event: Instant,
    /// The running script's required modules, live: a module counts from the moment it is
    /// required (its directory is watched from the next [`Files::set`]).
    required: Option<Rc<RefCell<BTreeSet<PathBuf>>>>,
}

impl Files {
    /// A watcher of nothing yet.
    pub fn new() -> notify::Result<Files> {
        let (tx, events) = mpsc::unbounded_channel();
        let watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) if is_write(&event.kind) => {
                    let at = Instant::now();
                    for path in event.paths {
                        let _ = tx.send((at, path));
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("watch: {e}"),
            })?;
        Ok(Files {
            watcher,
            events,
            files: BTreeSet::new(),
            dirs: BTreeSet::new(),
            pending: BTreeSet::new(),
            last_event: Instant::now(),
            required: None,
        })
    }

    /// Watches exactly `files` from now on (through their directories).
    pub fn set(&mut self, files: BTreeSet<PathBuf>) {
        let dirs: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        for gone in self.dirs.difference(&dirs) {
            let _ = self.watcher.unwatch(gone);
        }
        for new in dirs.difference(&self.dirs) {
            if let Err(e) = self.watcher.watch(new, RecursiveMode::NonRecursive) {
                eprintln!("watch: cannot watch {}: {e}", new.display());
            }
        }
        self.dirs = dirs;
        self.files = files;
    }

    fn relevant(&self, path: &Path) -> bool {
        self.files.contains(path)
            || self
                .required
                .as_ref()
                .is_some_and(|r| r.borrow().contains(path))
    }

    /// Waits for a save of a watched file, then for the rest of it: the changed files.
    /// Cancel-safe: what a cancelled call had seen is kept for the next one.
    pub async fn next_save(&mut self) -> BTreeSet<PathBuf> {
        while self.pending.is_empty() {
            let Some((at, path)) = self.events.recv().await else {
                // The watcher is gone: nothing will ever change.
                std::future::pending::<()>().await;
                continue;
            };
            if self.relevant(&path) {
                self.pending.insert(path);
                self.last_event = at;
            }
        }
        // Editors write in several steps (truncate, write, rename, chmod): re-run once the
        // events have paused for GRACE, or after GRACE_CAP at most.
        let first = self.last_event;
        loop {
            tokio::time::sleep_until((self.last_event + GRACE).into()).await;
            let mut more = false;
            while let Ok((at, path)) = self.events.try_recv() {
                if self.relevant(&path) {
                    self.pending.insert(path);
                    if at > self.last_event {
                        self.last_event = at;
                        more = true;
                    }
                }
            }
            if !more || self.last_event.duration_since(first) >= GRACE_CAP {
                return std::mem::take(&mut self.pending);
            }
        }
    }
}

/// Trims the Lua traceback off an error: the message with its file:line is what helps.
fn short_error(e: &mlua::Error) -> String {
    let text = e.to_string();
    match text.find("\nstack traceback:") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Runs the watch loop until Ctrl-C. Each run is recorded under `recording`'s state directory
/// (`runs.rs`), and its report rewritten when `recording` asks for one.
pub fn run(
    config: EngineConfig,
    file: PathBuf,
    args: BTreeMap<String, String>,
    recording: Option<Recording>,
) -> ExitCode {
    let script = std::path::absolute(&file).unwrap_or(file);
    if let Some(out) = recording.as_ref().and_then(|r| r.report.as_ref()) {
        println!("watch: the report of each run goes to {}", out.display());
    }
    run_host(config, args, |host| async move {
        let mut files = match Files::new() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("moonpilot: cannot watch files: {e}");
                return ExitCode::from(2);
            }
        };
        // One listener for the whole session, so a Ctrl-C between two `select!`s is not lost.
        let mut interrupt = match crate::lua::interrupt_listener() {
            Ok(s) => s,
            Err(code) => return code,
        };
        files.set(BTreeSet::from([script.clone()]));
        // Human-input requests are shown on the terminal and answered there.
        if let (true, Some(executor)) = (crate::console::on_terminal(), host.executor()) {
            tokio::task::spawn_local(crate::console::serve(executor));
        }
        let journal = Rc::new(RefCell::new(Journal::default()));
        let mut session = Session {
            host: &host,
            script: &script,
            journal: &journal,
            files: &mut files,
            interrupt: &mut interrupt,
            previous: None,
            recording: recording.as_ref(),
        };
        let mut run_number = 0u64;
        let mut modules_changed = false;
        loop {
            run_number += 1;
            let outcome = match session.run_once(run_number, modules_changed).await {
                Ok(outcome) => outcome,
                Err(e) => {
                    eprintln!("moonpilot: {e}");
                    return ExitCode::from(2);
                }
            };
            let changed = match outcome {
                Outcome::Interrupted => break,
                Outcome::Saved(changed) => changed,
                Outcome::Finished(_) => match session.wait_for_save().await {
                    Some(changed) => changed,
                    None => break,
                },
            };
            modules_changed = changed.iter().any(|p| p != &script);
        }
        if let Some(previous) = session.previous.take() {
            previous.abort_jobs();
        }
        println!("watch: stopped");
        // The loop only ends on Ctrl-C: interrupted, as `run` says it (130).
        ExitCode::from(130)
    })
}

/// What the runs of one watch session share.
struct Session<'a> {
    host: &'a LuaHost,
    script: &'a Path,
    journal: &'a Rc<RefCell<Journal>>,
    files: &'a mut Files,
    interrupt: &'a mut Signal,
    /// The last run's Lua state: its coroutines go on until the next run starts.
    previous: Option<LuaHost>,
    /// Where runs are recorded and their report written.
    recording: Option<&'a Recording>,
}

impl Session<'_> {
    /// Prints what is watched and waits for a save (`None`: Ctrl-C).
    async fn wait_for_save(&mut self) -> Option<BTreeSet<PathBuf>> {
        let modules = match self.files.files.len().saturating_sub(1) {
            0 => String::new(),
            1 => " and 1 module".to_string(),
            n => format!(" and {n} modules"),
        };
        println!(
            "watch: waiting for a save of {}{modules} (Ctrl-C stops)",
            self.script.display()
        );
        tokio::select! {
            changed = self.files.next_save() => Some(changed),
            _ = self.interrupt.recv() => None,
        }
    }

    /// One run: a fresh Lua state, the script to its end (or until a save or Ctrl-C interrupts
    /// it), then the summary line.
    async fn run_once(&mut self, number: u64, modules_changed: bool) -> mlua::Result<Outcome> {
        // A new run aborts the previous one's coroutines; their late results are never seen.
        if let Some(previous) = self.previous.take() {
            previous.abort_jobs();
        }
        let started = Instant::now();
        let source = match tokio::fs::read_to_string(self.script).await {
            Ok(s) => s,
            Err(e) => {
                // Mid-save (renamed away) or deleted: wait for it to come back.
                println!(
                    "watch: run {number} · cannot read {}: {e}",
                    self.script.display()
                );
                return Ok(Outcome::Finished(Ok(())));
            }
        };
        // A script that does not parse runs nothing: say so first, without resuming anything
        // (the journal is left as the last run left it, for the save that fixes it).
        let name = format!("@{}", self.script.display());
        // (Compiled, not run, in the session's own state: no new state per save.)
        if let Err(e) = self
            .host
            .lua()
            .load(source.as_str())
            .set_name(name)
            .into_function()
        {
            println!("error: {}", short_error(&e));
            println!("watch: run {number} · error · the script does not parse: nothing ran");
            return Ok(Outcome::Finished(Err(e)));
        }
        let resume = self
            .journal
            .borrow_mut()
            .begin_run(source.clone(), modules_changed);
        match &resume {
            Some(r) => println!(
                "watch: run {number} · resuming after checkpoint `{}` (line {}): {} command(s) answered from the last run",
                r.name, r.line, r.commands
            ),
            None => println!("watch: run {number}"),
        }
        let lua = self.host.renew(Rc::new(Recorder {
            journal: self.journal.clone(),
        }))?;
        let recorded = match (self.recording, lua.executor()) {
            (Some(r), Some(executor)) => {
                let record = RunRecord::new(self.script, &executor.engine().config, number);
                let run = Run::begin_async(r.clone(), record).await;
                run.attach(&lua)?;
                Some((run, executor))
            }
            _ => None,
        };
        lua.track_requires()?;
        let required = lua.required_files();
        self.files.required = Some(required.clone());
        let outcome = {
            let run = lua.run_source(self.script, &source);
            tokio::pin!(run);
            loop {
                // Watch the directories of modules required so far (the previous run's
                // modules stay watched until this one ends).
                let mut watched = self.files.files.clone();
                watched.extend(required.borrow().iter().cloned());
                if watched != self.files.files {
                    self.files.set(watched);
                }
                tokio::select! {
                    res = &mut run => break Outcome::Finished(res),
                    changed = self.files.next_save() => break Outcome::Saved(changed),
                    // Picks up newly required modules' directories while the run goes on.
                    _ = tokio::time::sleep(Duration::from_millis(250)) => continue,
                    _ = self.interrupt.recv() => break Outcome::Interrupted,
                }
            }
        };
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let (commands, replayed, failures) = {
            let j = self.journal.borrow();
            (j.commands, j.replayed, j.failures)
        };
        let status = match &outcome {
            Outcome::Finished(Ok(())) => "ok".to_string(),
            Outcome::Finished(Err(e)) => {
                println!("error: {}", short_error(e));
                "error".to_string()
            }
            Outcome::Saved(_) => "interrupted by a save".to_string(),
            Outcome::Interrupted => "interrupted".to_string(),
        };
        let replayed = if replayed > 0 {
            format!(" ({replayed} replayed)")
        } else {
            String::new()
        };
        println!(
            "watch: run {number} · {status} · {ms:.0} ms · {commands} command(s){replayed} · {failures} failed"
        );
        if let Some((run, executor)) = recorded {
            end_recorded(run, &executor, &outcome).await;
        }
        // The files the next save is looked for in: the script and this run's modules; a run
        // that failed early keeps the last run's modules too, so fixing one re-runs.
        let mut watched = BTreeSet::from([self.script.to_path_buf()]);
        watched.extend(required.borrow().iter().cloned());
        if !matches!(outcome, Outcome::Finished(Ok(()))) {
            watched.extend(self.files.files.iter().cloned());
        }
        self.files.required = None;
        self.files.set(watched);
        if matches!(outcome, Outcome::Finished(Ok(()))) {
            close_abandoned(&lua, self.journal).await;
        }
        self.previous = Some(lua);
        Ok(outcome)
    }
}

/// Ends a recorded run: its commands' trace lines and screenshots are let reach the disk (each
/// wait bounded), then the record and the report are written off the runtime's thread. The
/// trace keeps the run's id until the next run's (the closing of abandoned tasks is its own).
async fn end_recorded(run: Run, executor: &Executor, outcome: &Outcome) {
    let engine = executor.engine();
    for task in engine.tasks() {
        if task.evidence_pending() {
            let _ = tokio::time::timeout(Duration::from_secs(10), task.evidence_settled()).await;
        }
    }
    engine.flush_trace().await;
    let (status, error) = match outcome {
        Outcome::Finished(Ok(())) => (RunStatus::Ok, None),
        Outcome::Finished(Err(e)) => (RunStatus::Failed, Some(e.to_string())),
        Outcome::Saved(_) | Outcome::Interrupted => (RunStatus::Interrupted, None),
    };
    run.end_async(status, error).await;
}

/// Closes every live task this (successful) run neither started nor took over: those of earlier
/// runs it no longer asks for, and any a save orphaned mid-`start`.
async fn close_abandoned(lua: &LuaHost, journal: &Rc<RefCell<Journal>>) {
    let Some(executor) = lua.executor() else {
        return;
    };
    let kept: Vec<_> = journal.borrow().tasks().to_vec();
    for task in executor.engine().tasks() {
        if !kept.contains(&task.id) {
            executor
                .execute(Some(task.id), "close", serde_json::json!({}))
                .await;
        }
    }
}

/// Watch mode's hook on what a run's Lua state sends: commands go through the session's
/// [`Journal`] (replayed while a re-run resumes, the previous run's tasks handed over for
/// `start`, recorded in the order they were sent), and checkpoints are kept in it.
struct Recorder {
    journal: Rc<RefCell<Journal>>,
}

impl Hook for Recorder {
    fn send<'a>(
        &'a self,
        executor: &'a Executor,
        task: Option<TaskId>,
        method: &'a str,
        params: serde_json::Value,
    ) -> LocalBoxFuture<'a, Receipt> {
        Box::pin(self.record(executor, task, method, params))
    }

    fn replaying(&self) -> bool {
        self.journal.borrow().replaying()
    }

    fn checkpoint<'a>(
        &'a self,
        executor: &'a Executor,
        name: String,
        line: usize,
    ) -> LocalBoxFuture<'a, ()> {
        Box::pin(self.pass_checkpoint(executor, name, line))
    }
}

impl Recorder {
    async fn record(
        &self,
        executor: &Executor,
        task: Option<TaskId>,
        method: &str,
        params: serde_json::Value,
    ) -> Receipt {
        let journal = &self.journal;
        // `browser.start{ id = N }` with N alive takes the task over: no command is sent.
        let opened = opens(method);
        let opens_task = opened == Opens::Task;
        let adopt = adoptable(executor, task, opened);
        let alive = |t: TaskId| executor.engine().task(t).is_some();
        let anonymous_start = opens_task && task.is_none();
        let replayed = journal.borrow_mut().replay_next(task, method, &params);
        match replayed {
            Replayed::Hit(receipt) => {
                let started = opens_task.then(|| started_task(&receipt)).flatten();
                match started {
                    Some(t) if !alive(t) => {
                        notice(&format!(
                            "task {t} of the journal is gone; going on live from command {}",
                            journal.borrow().commands + 1
                        ));
                        journal.borrow_mut().stop_replay();
                    }
                    _ => {
                        let mut j = journal.borrow_mut();
                        if anonymous_start {
                            j.anonymous_start();
                        }
                        if let Some(t) = started {
                            j.started(t, anonymous_start);
                        }
                        j.record(task, method, &params, &receipt);
                        return receipt;
                    }
                }
            }
            Replayed::Diverged { at, expected } => notice(&format!(
            "the script asked for `{method}` where the journal has `{expected}` (command {at}); \
             going on live — the page is where the last run left it"
        )),
            Replayed::Live => {}
        }
        let handed_over = if anonymous_start {
            let candidate = journal.borrow_mut().anonymous_start();
            candidate.filter(|t| alive(*t))
        } else {
            adopt
        };
        if let Some(t) = handed_over {
            let receipt = adopted(method, t);
            let mut j = journal.borrow_mut();
            j.started(t, anonymous_start);
            j.record(task, method, &params, &receipt);
            return receipt;
        }
        let slot = journal.borrow_mut().reserve(task, method, &params);
        let receipt = executor.execute(task, method, params).await;
        let mut j = journal.borrow_mut();
        if opens_task && receipt.ok {
            if let Some(t) = started_task(&receipt) {
                j.started(t, anonymous_start);
            }
        }
        j.complete(slot, &receipt);
        receipt
    }

    async fn pass_checkpoint(&self, executor: &Executor, name: String, line: usize) {
        let journal = &self.journal;
        let (index, outcome) = journal.borrow_mut().checkpoint(&name, line);
        let live = matches!(
            outcome,
            AtCheckpoint::Recorded { live: true } | AtCheckpoint::Diverged
        );
        if live {
            // Where each task is now, for a later run that resumes here.
            let tasks: Vec<TaskId> = journal.borrow().tasks().to_vec();
            let mut urls = Vec::new();
            for t in tasks {
                let r = executor
                    .execute(Some(t), "get_url", serde_json::json!({}))
                    .await;
                if let Some(url) = r.data.get("url").and_then(serde_json::Value::as_str) {
                    urls.push((t, url.to_string()));
                }
            }
            journal.borrow_mut().set_urls(index, urls);
        }
        match outcome {
            AtCheckpoint::Recorded { .. } => {}
            AtCheckpoint::Diverged => notice(&format!(
                "reached checkpoint `{name}` before the one to resume at; going on live"
            )),
            AtCheckpoint::Resumed { urls } => {
                // The page moved on after the previous run passed here: put each task
                // back where it was (a GET), so the code below sees what it saw then.
                let mut moved = Vec::new();
                for (t, url) in urls {
                    let now = executor
                        .execute(Some(t), "get_url", serde_json::json!({}))
                        .await;
                    let here = now.data.get("url").and_then(serde_json::Value::as_str);
                    if now.ok && here != Some(url.as_str()) {
                        executor
                            .execute(Some(t), "navigate", serde_json::json!({ "url": url }))
                            .await;
                        moved.push(url);
                    }
                }
                let back = if moved.is_empty() {
                    String::new()
                } else {
                    format!("; back to {}", moved.join(", "))
                };
                notice(&format!(
                    "resumed after checkpoint `{name}` (line {line}){back}"
                ));
            }
        }
    }
}

/// A watch-mode notice (resume, divergence): printed on its own line, apart from the script's
/// output.
fn notice(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "watch: {text}");
    let _ = out.flush();
}

/// The task a `start` receipt names (`data.id`, a decimal string on the wire).
fn started_task(receipt: &Receipt) -> Option<TaskId> {
    match receipt.data.get("id")? {
        serde_json::Value::String(s) => s.parse().ok().map(TaskId),
        serde_json::Value::Number(n) => n.as_u64().map(TaskId),
        _ => None,
    }
}
