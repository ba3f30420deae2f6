//! `Task`: one automation session — the tabs it owns, its lane and its command-owned state.
//!
//! The lane (`tokio::sync::Mutex<()>`) is acquired by the executor and only by it, so commands
//! of one task never interleave. State that commands read and write sits behind a
//! `std::sync::Mutex` locked only to copy or replace, never across an `.await`.
//!
//! Evidence files (screenshots, state files) that a receipt names may still be written after the
//! receipt is out ([`Task::defer_evidence`]); the executor waits for them before the task's next
//! command, and `close_tabs` and engine shutdown wait for them too ([`Task::evidence_settled`]).

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::watch;

use super::downloads::{self, Download};
use super::events::TabEvents;
use super::raw::{RawConnection, TargetEvent};
use super::settings::{Setting, Settings};
use super::{Browser, Tab};
use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// A task id (the seed's "browser id"): a 64-bit integer, serialised as a string on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u64);

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl TaskId {
    /// A fresh snowflake-style id: milliseconds since 2020 shifted left, plus a sequence.
    pub fn generate() -> TaskId {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let ms = crate::clock::epoch_ms().saturating_sub(1_577_836_800_000);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) & 0xfff;
        TaskId((ms << 12) | seq)
    }
}

/// One indexed element of a snapshot: where it lives and how to find it again.
#[derive(Debug, Clone)]
pub struct SnapElement {
    /// The `[index]` shown to the caller.
    pub index: u32,
    /// Ordinal of the frame that holds it.
    pub frame: usize,
    /// The locator the DOM probe resolves (positional xpath, or a shadow-aware variant).
    pub locator: String,
    /// Lower-case tag.
    pub tag: String,
    /// `id` attribute at snapshot time.
    pub id: Option<String>,
    /// `name` attribute at snapshot time.
    pub name: Option<String>,
    /// Element text as rendered.
    pub text: String,
    /// Why the snapshot indexed it (`IndexedElement::reason`); `None` when not from a snapshot.
    pub reason: Option<String>,
    /// The box the snapshot read (`[left, top, width, height]`, CSS px, rounded); `None` when
    /// not from a snapshot. An action's stability check counts it as the first of two reads.
    pub rect: Option<[i64; 4]>,
}

/// A frame as recorded in a snapshot (for re-finding it when it reloads).
#[derive(Debug, Clone)]
pub struct SnapFrame {
    /// Ordinal at snapshot time.
    pub ordinal: usize,
    /// CDP frame id at snapshot time.
    pub frame_id: String,
    /// URL at snapshot time.
    pub url: String,
    /// Name at snapshot time.
    pub name: String,
    /// Whether its document was read (a skipped cross-origin frame was not).
    pub read: bool,
}

/// The task's index snapshot: what `[index]` numbers mean until the next `get_browser_state`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// When it was taken.
    pub created: Instant,
    /// The tab it was taken in.
    pub tab_target: String,
    /// Frames that were read.
    pub frames: Vec<SnapFrame>,
    /// Indexed elements, by index order.
    pub elements: Vec<SnapElement>,
    /// The main document's total mutation count when it was taken.
    pub mutations: u64,
    /// The main document's identity (`snapshot_watch.js` documentId) when it was taken; empty
    /// when it could not be read. New-element marks compare only within one document.
    pub document_id: String,
}

impl Snapshot {
    /// The element with `index`.
    pub fn element(&self, index: u32) -> Option<&SnapElement> {
        self.elements.iter().find(|e| e.index == index)
    }
}

/// The most a deferred evidence job may take; past it the job is dropped and reported as failed,
/// so nobody waits on evidence for longer (PROTOCOL.md §8: capture bound 8000 ms, plus the
/// state file and some slack for a loaded machine).
pub const EVIDENCE_BOUND: Duration = Duration::from_secs(10);
/// How many failed evidence jobs a task remembers for `wait_files`.
const FAILED_KEPT: usize = 16;

/// Makes the pages that a task's tabs open (`window.open`, `target=_blank`) tabs of that task:
/// counted, listed, closed with it; a tab that its page (or anyone) closed leaves the list. Ends
/// with the task.
async fn adopt_popups(
    task: std::sync::Weak<Task>,
    mut targets: tokio::sync::broadcast::Receiver<TargetEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let event = match targets.recv().await {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("{n} tab events were missed; popups among them are not adopted");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(task) = task.upgrade() else { return };
        if task.is_closed() {
            return;
        }
        let (target, opener, held) = match event {
            TargetEvent::Opened { target, opener } => (target, opener, None),
            // Held before its first request: it runs once the task's settings are on it.
            TargetEvent::Paused {
                target,
                opener: Some(opener),
                session,
            } => (target, opener, Some(session)),
            // No page opened it: the engine's own tab, resumed by the browser.
            TargetEvent::Paused { opener: None, .. } => continue,
            TargetEvent::Gone { target } => {
                drop_gone_tab(&task, &target);
                continue;
            }
        };
        let ours = task.state(|s| {
            s.tabs.iter().any(|t| t.target_id() == opener) || s.adopting.contains(&opener)
        });
        if !ours {
            continue;
        }
        task.state(|s| s.adopting.push(target.clone()));
        // Attached on its own task of the runtime: a popup of a popup can open meanwhile.
        let browser = task.browser.clone();
        let events = task.events.clone();
        let me = Arc::downgrade(&task);
        task.browser.spawn(async move {
            // A held page gets what shapes its first request on the held session itself
            // (commands that need its renderer would wait for it), then runs; the tab's own
            // sessions take over as it is attached.
            let held = match (held, browser.raw().await, me.upgrade()) {
                (Some(session), Ok(conn), Some(task)) => {
                    task.prepare_held(&conn, &session).await;
                    Some((conn, session))
                }
                _ => None,
            };
            let context = me.upgrade().and_then(|t| t.context.clone());
            let adopted = browser.adopt_tab(&target, events, context.as_deref()).await;
            let task = me.upgrade().filter(|t| !t.is_closed());
            if let Some(task) = &task {
                task.state(|s| s.adopting.retain(|t| *t != target));
            }
            match (adopted, task) {
                // Its task is gone: so is the popup.
                (Ok(tab), None) => {
                    let _ = tokio::time::timeout(REVIVE_PROBE, tab.close()).await;
                }
                // Closed while it was being attached: not listed.
                (Ok(tab), Some(_)) if tab.target_url().await.is_err() => {}
                (Ok(tab), Some(task)) => {
                    let tab = Arc::new(tab);
                    task.state(|s| s.tabs.push(tab.clone()));
                    task.join_tab(&tab).await;
                    // A close that took the tabs meanwhile did not see this one.
                    if task.is_closed() {
                        let _ = tokio::time::timeout(REVIVE_PROBE, tab.close()).await;
                    }
                }
                (Err(e), Some(task)) => tracing::warn!("task {}: {}", task.id, e.msg),
                (Err(_), None) => {}
            }
            // The held session's headers and routes are the tab's own sessions' now.
            if let Some((conn, session)) = held {
                let _ = tokio::time::timeout(REVIVE_PROBE, conn.let_go(&session)).await;
            }
        });
    }
}

/// Takes tab `target`, which went away, off the task's list (the last tab stays listed: the
/// task's commands then say what happened to it).
fn drop_gone_tab(task: &Task, target: &str) {
    task.state(|s| {
        let Some(at) = s.tabs.iter().position(|t| t.target_id() == target) else {
            return;
        };
        if s.tabs.len() == 1 {
            return;
        }
        s.tabs.remove(at);
        if s.current == at {
            s.snapshot = None;
            s.current = s.tabs.len() - 1;
        } else if s.current > at {
            s.current -= 1;
        }
    });
}

/// How long a page that did not answer a command gets to answer a trivial evaluation.
const ANSWER_LOOK: Duration = Duration::from_millis(500);
/// How long stopping its script, or closing a tab, may take.
const REVIVE_PROBE: Duration = Duration::from_secs(3);
/// How long a page gets to answer once its running script was stopped.
pub const REVIVE_BOUND: Duration = Duration::from_secs(5);
/// The most a revival may take as a whole (each step has its own bound too).
const REVIVE_TOTAL: Duration = Duration::from_secs(20);
/// How long a replacement tab may take to load the hung tab's URL.
const REPLACEMENT_LOAD: Duration = Duration::from_secs(5);

/// What [`Task::revive`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Revival {
    /// The task has no tab.
    NoTab,
    /// The renderer crashed (nothing to revive; the task is to be closed).
    Crashed,
    /// The page answers again by itself.
    Answering,
    /// A script kept the main thread busy; it was stopped and the page answers.
    ScriptStopped,
    /// The renderer did not answer even then: the tab was replaced by a fresh one at `url`
    /// (`loaded`: whether it loaded within the bound).
    Replaced {
        /// The URL the hung tab showed.
        url: String,
        /// Whether the fresh tab loaded it in time.
        loaded: bool,
    },
    /// Replacing the tab failed.
    Failed(String),
}

#[derive(Default)]
struct TaskState {
    tabs: Vec<Arc<Tab>>,
    current: usize,
    snapshot: Option<Arc<Snapshot>>,
    /// The indexed text of the last get_browser_state / diff_dom_text (what diff_dom_text
    /// compares with).
    state_text: Option<Arc<String>>,
    capture_seq: u64,
    /// State reads whose screenshot was the tab's last capture, reused (nothing it showed had
    /// changed).
    shots_reused: u64,
    /// The capture circuit breaker (PROTOCOL.md §8), shared by auto-capture and screenshots.
    breaker: super::breaker::Breaker,
    /// Per file name prefix (`shot-`, `page-`, `img-`), the last number handed out.
    file_numbers: std::collections::HashMap<String, u64>,
    /// One receiver per deferred evidence job; it reads true once the job is over.
    evidence: Vec<watch::Receiver<bool>>,
    /// A deferred job that failed and that no receipt has reported yet: (seq, error).
    evidence_failure: Option<(u64, String)>,
    /// The recent failed jobs, newest last (at most [`FAILED_KEPT`]), for `wait_files`: the
    /// slot above is taken by the next receipt that reports it.
    evidence_failed: std::collections::VecDeque<(u64, String)>,
    /// Target ids of popups being attached (their own popups are ours too).
    adopting: Vec<String>,
    /// What the settings commands set, for every tab of the task.
    settings: Settings,
    /// Bumped on each settings change, so a tab joining meanwhile is brought up to date.
    settings_gen: u64,
    /// The downloads its pages began, oldest first (`downloads.rs`).
    downloads: Vec<Download>,
    /// Called with each tab that joins the task (a recording follows it).
    tab_hooks: Vec<TabHook>,
}

/// What a tab joining a task is handed to ([`Task::on_tab_joined`]).
pub type TabHook = Arc<dyn Fn(Arc<Tab>) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// How long a hook may take with a joining tab.
const HOOK_BOUND: Duration = Duration::from_secs(3);

/// A browser context that is disposed when this drops (on the browser's runtime).
struct DisposeOnDrop {
    browser: Arc<Browser>,
    context: String,
}

impl Drop for DisposeOnDrop {
    fn drop(&mut self) {
        let (browser, context) = (self.browser.clone(), std::mem::take(&mut self.context));
        if context.is_empty() {
            return;
        }
        let runner = browser.clone();
        runner.spawn(async move { browser.dispose_context(&context).await });
    }
}

/// One task.
pub struct Task {
    /// Its id.
    pub id: TaskId,
    /// The shared browser it runs in.
    pub browser: Arc<Browser>,
    /// Event-fed state (dialogs) shared by its tabs.
    pub events: TabEvents,
    /// Held by the executor for the whole of one command.
    pub lane: tokio::sync::Mutex<()>,
    /// When it was created.
    pub created: Instant,
    /// Its own browser context (cookies, storage, cache), when it was opened isolated; else
    /// it shares the profile's default context with every other such task.
    pub context: Option<String>,
    closed_tx: watch::Sender<bool>,
    state: Mutex<TaskState>,
}

impl Task {
    /// Creates a task with one fresh tab; `isolated`, in a browser context of its own (as an
    /// incognito window: its cookies and storage are its own, and go with it). A task with a
    /// `proxy` always has a context of its own: the proxy is the context's.
    pub async fn open(
        id: TaskId,
        browser: Arc<Browser>,
        isolated: bool,
        proxy: Option<&super::settings::Proxy>,
    ) -> Result<Arc<Task>, CommandError> {
        let events = TabEvents::default();
        let t0 = Instant::now();
        // Subscribed before the first tab exists, so no popup or download of its pages goes
        // unseen.
        let (targets, downloads) = match browser.raw().await {
            Ok(conn) => (Some(conn.targets()), Some(conn.downloads())),
            Err(e) => {
                tracing::warn!("popups of task {id} are not adopted: {}", e.msg);
                (None, None)
            }
        };
        let context = match (isolated, proxy) {
            (false, None) => None,
            (_, proxy) => Some(browser.create_context(proxy).await?),
        };
        // Its downloads go to the state directory (a browser we launched), not ~/Downloads.
        if let Err(e) = browser.allow_downloads(context.as_deref()).await {
            tracing::warn!(
                "downloads of task {id} keep the browser's default: {}",
                e.msg
            );
        }
        // Disposed if this open fails or is dropped before the task owns the context.
        let mut pending = context.clone().map(|c| DisposeOnDrop {
            browser: browser.clone(),
            context: c,
        });
        tracing::debug!(target: "moonpilot::start", "context and downloads after {:?}", t0.elapsed());
        let tab = browser.new_tab(events.clone(), context.as_deref()).await?;
        tracing::debug!(target: "moonpilot::start", "tab attached after {:?}", t0.elapsed());
        if let Some(p) = pending.as_mut() {
            // The task owns it now (an empty name disarms the guard).
            p.context.clear();
        }
        let (closed_tx, _) = watch::channel(false);
        let task = Arc::new(Task {
            id,
            browser,
            events,
            lane: tokio::sync::Mutex::new(()),
            created: Instant::now(),
            context,
            closed_tx,
            state: Mutex::new(TaskState {
                tabs: vec![Arc::new(tab)],
                ..TaskState::default()
            }),
        });
        if let Some(targets) = targets {
            task.browser
                .spawn(adopt_popups(Arc::downgrade(&task), targets));
        }
        if let (Some(events), Some(root)) = (downloads, task.browser.download_dir()) {
            let dir = root.join(task.id.to_string());
            let incoming = root.join(downloads::INCOMING);
            task.browser.spawn(follow_downloads(
                Arc::downgrade(&task),
                dir,
                incoming,
                events,
            ));
        }
        Ok(task)
    }

    /// Whether `frame` (a frame id) is one of this task's pages (a page's main frame has its
    /// target's id). Answered from memory: the download pump must never wait on a page, or it
    /// would lag behind the events it has to see.
    pub fn owns_frame(&self, frame: &str) -> bool {
        self.tabs().0.iter().any(|t| t.target_id() == frame)
    }

    /// A file name for a new download in `dir`: `wanted`, or `stem-N.ext` when a file of the
    /// directory or a download still in progress has that name.
    pub fn reserve_download_name(&self, wanted: &str, dir: &std::path::Path) -> String {
        self.state(|s| {
            let taken = |n: &str| {
                dir.join(n).exists()
                    || s.downloads
                        .iter()
                        .any(|d| d.path.file_name().is_some_and(|f| f == n))
            };
            downloads::unique_name(wanted, &taken)
        })
    }

    /// Records a download that began in one of its pages.
    pub fn add_download(&self, download: Download) {
        self.state(|s| s.downloads.push(download));
    }

    /// The download the browser calls `guid`, if it is this task's.
    pub fn download(&self, guid: &str) -> Option<Download> {
        self.state(|s| s.downloads.iter().find(|d| d.guid == guid).cloned())
    }

    /// Changes the download `guid` (progress, completion).
    pub fn update_download(&self, guid: &str, change: impl FnOnce(&mut Download)) {
        self.state(|s| {
            if let Some(d) = s.downloads.iter_mut().find(|d| d.guid == guid) {
                change(d);
            }
        });
    }

    /// How many downloads its pages have begun.
    pub fn downloads_begun(&self) -> usize {
        self.state(|s| s.downloads.len())
    }

    /// Its downloads from the `from`-th on (those an action began).
    pub fn downloads_since(&self, from: usize) -> Vec<Download> {
        self.state(|s| s.downloads.iter().skip(from).cloned().collect())
    }

    /// Waits, at most `bound`, until none of its downloads from the `from`-th on is in
    /// progress; answers them as they are then.
    pub async fn downloads_settled(&self, from: usize, bound: Duration) -> Vec<Download> {
        let until = Instant::now() + bound;
        loop {
            let now = self.downloads_since(from);
            if !now.iter().any(Download::in_progress) || Instant::now() >= until {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn state<T>(&self, f: impl FnOnce(&mut TaskState) -> T) -> T {
        // A poisoned lock only means a panic happened while it was held; the data is still the
        // last consistent copy, so keep serving.
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// The current tab.
    pub fn tab(&self) -> Result<Arc<Tab>, CommandError> {
        self.state(|s| s.tabs.get(s.current).cloned())
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::TaskNotFound,
                    format!("task {} has no open tab", self.id),
                )
            })
    }

    /// All tabs, in opening order, and the current index.
    pub fn tabs(&self) -> (Vec<Arc<Tab>>, usize) {
        self.state(|s| (s.tabs.clone(), s.current))
    }

    /// Whether a page one of its tabs opened is being attached (it joins the tabs soon).
    pub fn popups_pending(&self) -> bool {
        self.state(|s| !s.adopting.is_empty())
    }

    /// Adds `tab` (opened for this task) to its tabs and makes it current; the index snapshot
    /// is dropped (indices belong to one page). Answers its index.
    pub fn add_tab(&self, tab: Arc<Tab>) -> usize {
        self.state(|s| {
            s.tabs.push(tab);
            s.current = s.tabs.len() - 1;
            s.snapshot = None;
            s.current
        })
    }

    /// Makes `tab` current when it is still one of the task's tabs (found by identity, so a
    /// popup adopted or a tab closed meanwhile does not shift it). Switching to another tab
    /// drops the index snapshot. Answers its index, `None` when it is no longer listed.
    pub fn select_tab(&self, tab: &Arc<Tab>) -> Option<usize> {
        self.state(|s| {
            let at = s.tabs.iter().position(|t| Arc::ptr_eq(t, tab))?;
            if at != s.current {
                s.current = at;
                s.snapshot = None;
            }
            Some(at)
        })
    }

    /// Takes `tab` off the task's list (after it was closed) and makes `current` current, or the
    /// first remaining tab when that is `None` or no longer listed; a change of the current tab
    /// drops the index snapshot. The caller names the current tab from before the close: the
    /// close's own `targetDestroyed` may have moved it already. Answers the current index.
    pub fn forget_tab(&self, tab: &Arc<Tab>, current: Option<&Arc<Tab>>) -> usize {
        self.state(|s| {
            let was = s.tabs.get(s.current).cloned();
            s.tabs.retain(|t| !Arc::ptr_eq(t, tab));
            s.current = current
                .and_then(|c| s.tabs.iter().position(|t| Arc::ptr_eq(t, c)))
                .unwrap_or(0);
            let same = match (&was, s.tabs.get(s.current)) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if !same {
                s.snapshot = None;
            }
            s.current
        })
    }

    /// The index snapshot, if one is usable.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.state(|s| s.snapshot.clone())
    }

    /// Replaces (or drops, with `None`) the index snapshot.
    pub fn set_snapshot(&self, snapshot: Option<Snapshot>) {
        self.state(|s| s.snapshot = snapshot.map(Arc::new));
    }

    /// The indexed text of the last full read (get_browser_state, diff_dom_text).
    pub fn state_text(&self) -> Option<Arc<String>> {
        self.state(|s| s.state_text.clone())
    }

    /// Replaces the indexed text of the last full read.
    pub fn set_state_text(&self, text: String) {
        self.state(|s| s.state_text = Some(Arc::new(text)));
    }

    /// The next capture sequence number (per task, from 1).
    pub fn next_capture_seq(&self) -> u64 {
        self.state(|s| {
            s.capture_seq += 1;
            s.capture_seq
        })
    }

    /// The last capture sequence number handed out.
    pub fn capture_seq(&self) -> u64 {
        self.state(|s| s.capture_seq)
    }

    /// How many state reads reused the tab's last capture as their screenshot.
    pub fn shots_reused(&self) -> u64 {
        self.state(|s| s.shots_reused)
    }

    /// Counts a state read's screenshot that reused the last capture.
    pub fn count_shot_reused(&self) {
        self.state(|s| s.shots_reused += 1);
    }

    /// Runs `f` on the task's capture circuit breaker (locked only for `f`).
    pub fn capture_breaker<T>(&self, f: impl FnOnce(&mut super::breaker::Breaker) -> T) -> T {
        self.state(|s| f(&mut s.breaker))
    }

    /// The next number of a `<prefix>N` file: above `on_disk` (the highest already in the
    /// task's data dir) and above every number handed out before.
    pub fn next_file_number(&self, prefix: &str, on_disk: u64) -> u64 {
        self.state(|s| {
            let last = s.file_numbers.entry(prefix.to_string()).or_insert(0);
            *last = (*last).max(on_disk) + 1;
            *last
        })
    }

    /// Writes evidence the current command's receipt already names (capture `seq`) in the
    /// background, on the browser's runtime, so the receipt does not wait for it. The job is
    /// bounded by [`EVIDENCE_BOUND`]; a failure is kept for [`Task::take_evidence_failure`].
    pub fn defer_evidence<F>(self: &Arc<Self>, seq: u64, job: F)
    where
        F: Future<Output = Result<(), String>> + Send + 'static,
    {
        let (done_tx, done_rx) = watch::channel(false);
        self.state(|s| {
            s.evidence.retain(|rx| !*rx.borrow());
            s.evidence.push(done_rx);
        });
        let task = self.clone();
        self.browser.spawn(async move {
            let outcome = match tokio::time::timeout(EVIDENCE_BOUND, job).await {
                Ok(outcome) => outcome,
                Err(_) => Err(format!(
                    "evidence not written within {} ms",
                    EVIDENCE_BOUND.as_millis()
                )),
            };
            if let Err(e) = outcome {
                tracing::warn!(target: "moonpilot::capture", "evidence {seq} of task {}: {e}", task.id);
                task.state(|s| {
                    if s.evidence_failed.len() >= FAILED_KEPT {
                        s.evidence_failed.pop_front();
                    }
                    s.evidence_failed.push_back((seq, e.clone()));
                    s.evidence_failure = Some((seq, e));
                });
            }
            // Sent last, so a waiter that wakes up sees the failure recorded above. A job that
            // is dropped (its runtime gone) drops the sender, which also wakes the waiters.
            done_tx.send_replace(true);
        });
    }

    /// Resolves once every deferred evidence job started so far is over, its files written (or
    /// its failure recorded). Each job is bounded, so this is too.
    pub async fn evidence_settled(&self) {
        let pending: Vec<watch::Receiver<bool>> = self.state(|s| s.evidence.clone());
        for mut rx in pending {
            // An error means the job was dropped: nothing is left to wait for.
            let _ = rx.wait_for(|done| *done).await;
        }
        self.state(|s| s.evidence.retain(|rx| !*rx.borrow()));
    }

    /// Whether a deferred evidence job is still running.
    pub fn evidence_pending(&self) -> bool {
        self.state(|s| s.evidence.iter().any(|rx| !*rx.borrow()))
    }

    /// The failure of the evidence job of `seq`, if it is among the recent failures.
    pub fn evidence_failure_of(&self, seq: u64) -> Option<String> {
        self.state(|s| {
            s.evidence_failed
                .iter()
                .rev()
                .find(|(failed, _)| *failed == seq)
                .map(|(_, e)| e.clone())
        })
    }

    /// The failure of a deferred evidence job that no receipt has reported yet, as (seq, error).
    pub fn take_evidence_failure(&self) -> Option<(u64, String)> {
        self.state(|s| s.evidence_failure.take())
    }

    /// Gets the current tab back after a command met a page that did not answer (PROTOCOL.md
    /// §4.2's stuck command, issue: a hung page must not wedge its task): first the script
    /// that keeps its main thread busy is stopped (`Runtime.terminateExecution`); when the
    /// renderer still does not answer, the tab is replaced by a fresh one at the same URL.
    /// Bounded: about [`REVIVE_BOUND`] plus the replacement's load wait.
    pub async fn revive(&self) -> Revival {
        tokio::select! {
            revival = tokio::time::timeout(REVIVE_TOTAL, self.revive_tab()) => {
                revival.unwrap_or_else(|_| Revival::Failed(format!(
                    "the tab was not back within {} s", REVIVE_TOTAL.as_secs()
                )))
            }
            // Closing wins: there is nothing left to revive.
            () = self.closed() => Revival::NoTab,
            () = self.browser.gone() => Revival::NoTab,
        }
    }

    async fn revive_tab(&self) -> Revival {
        let Ok(tab) = self.tab() else {
            return Revival::NoTab;
        };
        if tab.is_crashed() {
            return Revival::Crashed;
        }
        // The command already waited for the page: a short look only.
        if tab.answers(ANSWER_LOOK).await {
            return Revival::Answering;
        }
        let main = tab.main_frame_local();
        let _ = tokio::time::timeout(REVIVE_PROBE, tab.terminate_execution(&main)).await;
        if tab.answers(REVIVE_BOUND).await {
            return Revival::ScriptStopped;
        }
        let url = tab
            .target_url()
            .await
            .unwrap_or_else(|_| "about:blank".to_string());
        let fresh = match self.replace_tab(&tab).await {
            Ok(t) => t,
            Err(e) => return Revival::Failed(e.msg),
        };
        // A page that hangs again on load must not hold the answer: the fresh tab is there
        // either way, and the next command meets whatever the page does.
        let loaded = match url.as_str() {
            "about:blank" | "" => true,
            _ => matches!(
                tokio::time::timeout(REPLACEMENT_LOAD, fresh.navigate(&url)).await,
                Ok(Ok(_))
            ),
        };
        Revival::Replaced { url, loaded }
    }

    /// Puts a fresh tab on `about:blank` in the place of `old`, one of the task's tabs whose page
    /// is wedged, and closes `old` (through the browser process, which answers when the renderer
    /// does not). The index snapshot is dropped.
    pub async fn replace_tab(&self, old: &Arc<Tab>) -> Result<Arc<Tab>, CommandError> {
        let fresh = Arc::new(self.new_tab().await?);
        let placed = !self.is_closed()
            && self.state(|s| {
                s.snapshot = None;
                match s.tabs.iter_mut().find(|t| Arc::ptr_eq(t, old)) {
                    Some(slot) => {
                        *slot = fresh.clone();
                        true
                    }
                    None => false,
                }
            });
        if !placed {
            // Closed meanwhile, or the old tab is gone already: the fresh one belongs nowhere.
            let _ = tokio::time::timeout(REVIVE_PROBE, fresh.close()).await;
            return Err(CommandError::new(
                ErrorCode::TaskNotFound,
                "the tab went away (or its task was closed) while it was being replaced",
            ));
        }
        let _ = tokio::time::timeout(REVIVE_PROBE, old.close()).await;
        self.join_tab(&fresh).await;
        Ok(fresh)
    }

    /// Changes one setting for the whole task: the current tab first (its failure is the
    /// command's, and nothing is recorded then), then it is recorded for tabs that join later
    /// and applied to the task's other tabs (a failure there is logged: that tab is closing or
    /// wedged). Answers how many tabs have it.
    pub async fn apply_setting(&self, setting: Setting) -> Result<usize, CommandError> {
        let current = self.tab()?;
        current.apply_setting(&setting).await?;
        // Recorded, then the list read: a tab listed after this reads the new settings itself
        // (`join_tab`), one listed before is in `tabs`.
        let tabs = self.state(|s| {
            s.settings.record(&setting);
            s.settings_gen += 1;
            s.tabs.clone()
        });
        let mut applied = 1;
        for tab in tabs.iter().filter(|t| !Arc::ptr_eq(t, &current)) {
            match tab.apply_setting(&setting).await {
                Ok(()) => applied += 1,
                Err(e) => tracing::warn!("task {}: a setting missed a tab: {}", self.id, e.msg),
            }
        }
        Ok(applied)
    }

    /// Changes the task's routes or credentials with `change`, then applies them to every tab
    /// (and their out-of-process frames): the current tab must take them, else the change is
    /// undone and the error answered; another tab that misses them only logs, as with settings.
    /// Answers `change`'s value and how many tabs took it. (Tabs joining later get them in
    /// `Tab::attach`.)
    pub async fn change_routes<R>(
        &self,
        change: impl FnOnce(&super::routes::Routes) -> R,
    ) -> Result<(R, usize), CommandError> {
        let current = self.tab()?;
        let routes = &self.events.routes;
        let before = routes.snapshot();
        let out = change(routes);
        if let Err(e) = current.apply_routes().await {
            routes.restore(before);
            if let Err(again) = current.apply_routes().await {
                tracing::warn!(
                    "task {}: undoing a route change failed: {}",
                    self.id,
                    again.msg
                );
            }
            return Err(e);
        }
        let (tabs, _) = self.tabs();
        let mut applied = 1;
        for tab in tabs.iter().filter(|t| !Arc::ptr_eq(t, &current)) {
            match tab.apply_routes().await {
                Ok(()) => applied += 1,
                Err(e) => {
                    tracing::warn!("task {}: a route change missed a tab: {}", self.id, e.msg)
                }
            }
        }
        Ok((out, applied))
    }

    /// Calls `hook` with every tab that joins the task from now on (popups its pages open,
    /// `new_tab`, a replacement), before the tab gets the task's settings.
    pub fn on_tab_joined(&self, hook: TabHook) {
        self.state(|s| s.tab_hooks.push(hook));
    }

    /// Brings `tab`, just listed among the task's tabs (`new_tab`, an adopted popup, a
    /// replacement), up to the task's settings: the one place a joining tab gets them. A change
    /// made meanwhile is applied again (bounded: three rounds).
    pub async fn join_tab(&self, tab: &Arc<Tab>) {
        let hooks = self.state(|s| s.tab_hooks.clone());
        for hook in hooks {
            if tokio::time::timeout(HOOK_BOUND, hook(tab.clone()))
                .await
                .is_err()
            {
                tracing::warn!(
                    "task {}: a joining tab's hook took over {HOOK_BOUND:?}",
                    self.id
                );
            }
        }
        for _ in 0..3 {
            let (gen, settings) = self.state(|s| (s.settings_gen, s.settings.to_apply()));
            for setting in &settings {
                if let Err(e) = tab.apply_setting(setting).await {
                    tracing::warn!("task {}: a new tab missed a setting: {}", self.id, e.msg);
                }
            }
            if self.state(|s| s.settings_gen) == gen {
                return;
            }
        }
    }

    /// Puts the task's headers, routes and credentials on `session`, a new page held before
    /// its first request ([`super::raw::TargetEvent::Paused`]), and lets it run (each step
    /// bounded; a failed one only logs: the page must run either way).
    async fn prepare_held(&self, conn: &Arc<RawConnection>, session: &str) {
        let headers = self
            .state(|s| s.settings.to_apply())
            .into_iter()
            .find_map(|s| match s {
                Setting::Headers(h) => Some(h),
                _ => None,
            });
        if let Some(headers) = headers {
            let set = async {
                conn.call(Some(session), "Network.enable", json!({}))
                    .await?;
                let headers = json!({ "headers": headers });
                conn.call(Some(session), "Network.setExtraHTTPHeaders", headers)
                    .await
            };
            if let Ok(Err(e)) = tokio::time::timeout(REVIVE_PROBE, set).await {
                tracing::warn!(
                    "task {}: a popup's first request lacks its headers: {}",
                    self.id,
                    e.msg
                );
            }
        }
        if self.events.routes.active() {
            let adopt = self
                .events
                .routes
                .adopt(&self.browser, conn, session, false);
            if let Ok(Err(e)) = tokio::time::timeout(REVIVE_PROBE, adopt).await {
                tracing::warn!(
                    "task {}: a popup's first request is not routed: {}",
                    self.id,
                    e.msg
                );
            }
        }
        let _ = tokio::time::timeout(REVIVE_PROBE, conn.resume(session)).await;
    }

    /// Marks the task closed: commands still running on it end with `TASK_NOT_FOUND`.
    pub fn mark_closed(&self) {
        // `send_replace`: `send` stores nothing while no command is subscribed.
        self.closed_tx.send_replace(true);
    }

    /// Whether the task was closed.
    pub fn is_closed(&self) -> bool {
        *self.closed_tx.borrow()
    }

    /// Resolves when the task is closed.
    pub async fn closed(&self) {
        let mut rx = self.closed_tx.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Closes every tab of the task (best effort, 5 s at most per tab) and forgets them, once the
    /// evidence of earlier commands is written (its screenshots need the tabs).
    pub async fn close_tabs(&self) {
        self.evidence_settled().await;
        let tabs = self.state(|s| std::mem::take(&mut s.tabs));
        // Its own context goes with it, its pages, cookies and storage at once; the tabs of
        // the shared context one by one.
        if let Some(c) = &self.context {
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                self.browser.dispose_context(c),
            )
            .await;
            return;
        }
        for tab in tabs {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tab.close()).await;
        }
    }

    /// Opens a fresh tab on `about:blank` in the task's context (not yet listed).
    pub async fn new_tab(&self) -> Result<Tab, CommandError> {
        self.browser
            .new_tab(self.events.clone(), self.context.as_deref())
            .await
    }
}

// ---- downloads (`downloads.rs`) ----

/// Follows the browser's download events for `task` until it is gone: takes those that begin
/// in its frames, and moves each finished file into its directory `dir`.
async fn follow_downloads(
    task: std::sync::Weak<Task>,
    dir: std::path::PathBuf,
    incoming: std::path::PathBuf,
    mut events: tokio::sync::broadcast::Receiver<super::raw::DownloadEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("{n} download events were missed");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(task) = task.upgrade() else {
            return;
        };
        if event.begins {
            begin_download(&task, &dir, &event.params).await;
        } else {
            download_progress(&task, &incoming, &event.params).await;
        }
    }
}

async fn begin_download(task: &Arc<Task>, dir: &std::path::Path, p: &Value) {
    let text = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    let frame = text("frameId");
    if !task.owns_frame(&frame) {
        return;
    }
    let suggested = text("suggestedFilename");
    let wanted = downloads::safe_name(&suggested);
    let name = task.reserve_download_name(&wanted, dir);
    task.add_download(Download {
        guid: text("guid"),
        url: text("url"),
        suggested,
        path: dir.join(name),
        state: "inProgress".into(),
        received: 0,
        total: 0,
        started_at: crate::clock::epoch_ms(),
        finished_at: None,
        error: None,
    });
}

async fn download_progress(task: &Arc<Task>, incoming: &std::path::Path, p: &Value) {
    let guid = p["guid"].as_str().unwrap_or_default();
    let state = p["state"].as_str().unwrap_or("inProgress").to_string();
    let received = p["receivedBytes"].as_u64().unwrap_or(0);
    let total = p["totalBytes"].as_u64().unwrap_or(0);
    let Some(record) = task.download(guid) else {
        return;
    };
    let mut error = None;
    if state == "completed" {
        // The browser's file, named by its guid, to its place in the task's directory.
        let from = incoming.join(guid);
        let moved = async {
            if let Some(parent) = record.path.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::rename(&from, &record.path).await
        }
        .await;
        if let Err(e) = moved {
            error = Some(format!(
                "the file could not be moved from `{}`: {e}",
                from.display()
            ));
        }
    }
    let done = state != "inProgress";
    task.update_download(guid, |d| {
        d.received = received;
        d.total = total;
        d.state = state;
        if done {
            d.finished_at = Some(crate::clock::epoch_ms());
        }
        if error.is_some() {
            d.error = error;
        }
    });
}
