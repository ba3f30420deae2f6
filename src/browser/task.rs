//! `Task`: one automation session — the tabs it owns, its lane and its command-owned state.
//!
//! The lane (`tokio::sync::Mutex<()>`) is acquired by the executor and only by it, so commands
//! of one task never interleave. State that commands read and write sits behind a
//! `std::sync::Mutex` locked only to copy or replace, never across an `.await`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use super::events::TabEvents;
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
        let ms = super::events::epoch_ms().saturating_sub(1_577_836_800_000);
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
}

impl Snapshot {
    /// The element with `index`.
    pub fn element(&self, index: u32) -> Option<&SnapElement> {
        self.elements.iter().find(|e| e.index == index)
    }
}

#[derive(Default)]
struct TaskState {
    tabs: Vec<Arc<Tab>>,
    current: usize,
    snapshot: Option<Arc<Snapshot>>,
    capture_seq: u64,
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
    closed_tx: watch::Sender<bool>,
    state: Mutex<TaskState>,
}

impl Task {
    /// Creates a task with one fresh tab.
    pub async fn open(id: TaskId, browser: Arc<Browser>) -> Result<Arc<Task>, CommandError> {
        let events = TabEvents::default();
        let tab = browser.new_tab(events.clone()).await?;
        let (closed_tx, _) = watch::channel(false);
        Ok(Arc::new(Task {
            id,
            browser,
            events,
            lane: tokio::sync::Mutex::new(()),
            created: Instant::now(),
            closed_tx,
            state: Mutex::new(TaskState {
                tabs: vec![Arc::new(tab)],
                ..TaskState::default()
            }),
        }))
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

    /// The index snapshot, if one is usable.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.state(|s| s.snapshot.clone())
    }

    /// Replaces (or drops, with `None`) the index snapshot.
    pub fn set_snapshot(&self, snapshot: Option<Snapshot>) {
        self.state(|s| s.snapshot = snapshot.map(Arc::new));
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

    /// Marks the task closed: commands still running on it end with `TASK_NOT_FOUND`.
    pub fn mark_closed(&self) {
        let _ = self.closed_tx.send(true);
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

    /// Closes every tab of the task (best effort, 5 s at most per tab) and forgets them.
    pub async fn close_tabs(&self) {
        let tabs = self.state(|s| std::mem::take(&mut s.tabs));
        for tab in tabs {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tab.close()).await;
        }
    }
}
