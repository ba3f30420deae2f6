//! `moonpilot record [URL]`: what a person does in the browser, as a Lua script (or a
//! `moonpilot test` file) that does it again.
//!
//! A [`Recording`] watches one task: its tabs, the popups its pages open (each joins through
//! `Task::on_tab_joined`), and every frame of them, out-of-process ones included (looked for
//! every 250 ms). In each frame the page-side recorder (`js/recorder.js`, in an isolated world
//! of its own, installed before the page's scripts) reports each click, fill, choice, check,
//! key, upload and overlay assertion through a CDP binding, with the most robust selector the
//! element has at that moment (role and name, label, placeholder, alt, title, text, test id,
//! then scoped CSS), checked there to find that element alone with the resolver every command
//! uses. Main-frame navigations that no click caused are read from each tab's history: a URL
//! typed into the address bar, back, forward and reload. Native dialogs are recorded as they
//! close (accepted or not, a prompt's text), and an action in another tab than a replay's
//! current one is preceded by a switch. The steps become the script of `script.rs`.
//!
//! What is not recorded: drag and drop, canvas drawing, hovers, tabs a person opens by hand.

pub mod codegen;
pub mod script;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::json;

use crate::browser::raw::TargetEvent;
use crate::browser::tab::{DialogSeen, HistoryEntry, Tab};
use crate::browser::task::{Task, TaskId};
use crate::error::CommandError;
use crate::executor::Executor;
pub use script::{Action, Step, Steps};

/// The binding the page-side recorder reports through.
const BINDING: &str = "__moonpilotRecord";
/// The isolated world it runs in.
const WORLD: &str = "moonpilot-recorder";

/// The options of `moonpilot record` (the browser's are the host's own).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The page to start on (else the recording starts on a blank page).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// Write the script to FILE (`-`: print it) [default: -].
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: String,
    /// Write a `moonpilot test` file instead of a plain script.
    #[arg(long)]
    pub test: bool,
    /// The attribute that holds test ids.
    #[arg(long, value_name = "NAME", default_value = "data-testid")]
    pub test_id_attribute: String,
    /// Record without a window (input then comes from elsewhere: a remote browser, CDP).
    #[arg(long)]
    pub headless: bool,
}

/// What a recording is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// The attribute that holds test ids.
    pub test_id: String,
    /// The assertion overlay (a person at a window adds checks from it).
    pub overlay: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            test_id: "data-testid".into(),
            overlay: false,
        }
    }
}

/// A recording of a task: what happens in each of its tabs (the ones it has, the ones its
/// pages open) and each of their frames.
pub struct Recording {
    inner: Arc<Inner>,
}

/// What the pumps share.
struct Inner {
    /// The page-side recorder, with its arguments.
    source: String,
    state: Mutex<State>,
    pumps: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The steps, and the tabs as a replay sees them.
#[derive(Default)]
struct State {
    steps: Steps,
    /// The task's tabs, in its order.
    tabs: Vec<Arc<Tab>>,
    /// The one a replay acts in now.
    current: usize,
    /// A dialog on screen: its kind and message.
    dialog: Option<(String, String)>,
    /// Out-of-process frames recorded (target ids), and how often one not found was looked for.
    frames: HashSet<String>,
    frames_missed: HashMap<String, u32>,
}

impl State {
    /// Adds `step`, done in `tab`: first a switch to it when a replay is in another tab.
    fn push_in(&mut self, tab: &Arc<Tab>, step: Step) {
        let Some(at) = self.tabs.iter().position(|t| Arc::ptr_eq(t, tab)) else {
            return;
        };
        if at != self.current {
            self.steps.push(Step::SwitchTab(at));
            self.current = at;
        }
        self.steps.push(step);
    }

    /// `tab` joined (a popup: the click that opened it made it current).
    fn opened(&mut self, tab: &Arc<Tab>) {
        if !self.tabs.iter().any(|t| Arc::ptr_eq(t, tab)) {
            self.tabs.push(tab.clone());
        }
        self.current = self.tabs.len() - 1;
    }

    /// Tab `target` is gone: the task then acts in its last tab.
    fn gone(&mut self, target: &str) {
        let Some(at) = self.tabs.iter().position(|t| t.target_id() == target) else {
            return;
        };
        if self.tabs.len() == 1 {
            return;
        }
        self.tabs.remove(at);
        if self.current == at {
            self.current = self.tabs.len() - 1;
        } else if self.current > at {
            self.current -= 1;
        }
    }
}

/// How often out-of-process frames are looked for.
const FRAME_POLL: Duration = Duration::from_millis(250);
/// How often a frame target is looked for in the task's tabs before it counts as another's.
const FRAME_TRIES: u32 = 8;

impl Recording {
    /// Starts recording `task`, whose current page is `first_url` (the script's first step)
    /// when given.
    pub async fn attach(
        task: &Arc<Task>,
        first_url: Option<&str>,
        options: Options,
    ) -> Result<Recording, CommandError> {
        // The arguments are JSON, a literal of the call: nothing is spliced into the code.
        let source = format!(
            "({})({})",
            crate::js::RECORDER_JS,
            json!({"binding": BINDING, "testId": options.test_id, "overlay": options.overlay})
        );
        let (tabs, current) = task.tabs();
        let inner = Arc::new(Inner {
            source,
            state: Mutex::new(State {
                tabs: tabs.clone(),
                current,
                ..State::default()
            }),
            pumps: Mutex::default(),
        });
        if let Some(url) = first_url {
            inner.lock().steps.push(Step::Navigate(url.to_string()));
        }
        for tab in &tabs {
            inner.instrument(tab).await?;
        }
        let weak = Arc::downgrade(&inner);
        task.on_tab_joined(Arc::new(move |tab| {
            let weak = weak.clone();
            Box::pin(async move {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                inner.lock().opened(&tab);
                if let Err(e) = inner.instrument(&tab).await {
                    tracing::warn!(target: "moonpilot::record", "a new tab is not recorded: {}", e.msg);
                }
            })
        }));
        if let Some(tab) = tabs.first() {
            let mut targets = tab.browser().raw().await?.targets();
            let me = Arc::downgrade(&inner);
            inner.spawn(async move {
                while let Ok(ev) = targets.recv().await {
                    if let (TargetEvent::Gone { target }, Some(inner)) = (ev, me.upgrade()) {
                        inner.lock().gone(&target);
                    }
                }
            });
            // The frames there now, before the first action; later ones within a poll.
            inner.find_frames(tab).await;
            let me = Arc::downgrade(&inner);
            let tab = tab.clone();
            inner.spawn(async move {
                loop {
                    tokio::time::sleep(FRAME_POLL).await;
                    let Some(inner) = me.upgrade() else { return };
                    inner.find_frames(&tab).await;
                }
            });
        }
        Ok(Recording { inner })
    }

    /// The steps recorded so far.
    pub fn steps(&self) -> Vec<Step> {
        self.inner.lock().steps.0.clone()
    }

    /// Stops recording: the steps.
    pub fn stop(self) -> Vec<Step> {
        if let Ok(pumps) = self.inner.pumps.lock() {
            for p in pumps.iter() {
                p.abort();
            }
        }
        self.steps()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn spawn(&self, job: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(job);
        if let Ok(mut pumps) = self.pumps.lock() {
            pumps.push(handle);
        }
    }

    /// Records `tab`: the recorder in its frames, its history, its dialogs.
    async fn instrument(self: &Arc<Self>, tab: &Arc<Tab>) -> Result<(), CommandError> {
        let mut navigated = tab.main_frame_commits().await?;
        let mut dialogs = tab.dialogs_seen().await?;
        let called = tab
            .world_script_with_binding(WORLD, BINDING, &self.source)
            .await?;
        self.pump_actions(tab, called);
        let (me, history_tab) = (Arc::downgrade(self), tab.clone());
        let mut seen = History::read(tab).await.unwrap_or_default();
        self.spawn(async move {
            while navigated.next().await.is_some() {
                let Some(now) = History::read_settled(&history_tab).await else {
                    continue;
                };
                let Some(inner) = me.upgrade() else { return };
                let mut state = inner.lock();
                for step in seen.steps_to(&now) {
                    state.push_in(&history_tab, step);
                }
                seen = now;
            }
        });
        let me = Arc::downgrade(self);
        self.spawn(async move {
            while let Some(seen) = dialogs.next().await {
                let Some(inner) = me.upgrade() else { return };
                let mut state = inner.lock();
                match seen {
                    DialogSeen::Opened { kind, message } => state.dialog = Some((kind, message)),
                    DialogSeen::Closed { accepted, input } => {
                        let (kind, message) = state.dialog.take().unwrap_or_default();
                        let text = (accepted && kind == "prompt").then_some(input);
                        state.steps.push(Step::Dialog {
                            kind,
                            message,
                            accept: accepted,
                            text,
                        });
                    }
                }
            }
        });
        Ok(())
    }

    /// Pushes each action `called` reports, as done in `tab`.
    fn pump_actions(self: &Arc<Self>, tab: &Arc<Tab>, mut called: BoxStream<'static, String>) {
        let (me, tab) = (Arc::downgrade(self), tab.clone());
        self.spawn(async move {
            while let Some(payload) = called.next().await {
                let Some(inner) = me.upgrade() else { return };
                match serde_json::from_str::<Action>(&payload) {
                    Ok(action) => inner.lock().push_in(&tab, Step::Act(action)),
                    Err(e) => {
                        tracing::debug!(target: "moonpilot::record", "not an action ({e}): {payload}")
                    }
                }
            }
        });
    }

    /// Puts the recorder in the out-of-process frames that appeared in the task's tabs
    /// (`any` is one of them: the browser's frame targets are read through it).
    async fn find_frames(self: &Arc<Self>, any: &Arc<Tab>) {
        let Ok(targets) = any.frame_targets().await else {
            return;
        };
        let new: Vec<String> = {
            let state = self.lock();
            targets
                .into_iter()
                .filter(|t| {
                    !state.frames.contains(t)
                        && state.frames_missed.get(t).copied().unwrap_or(0) < FRAME_TRIES
                })
                .collect()
        };
        if new.is_empty() {
            return;
        }
        let tabs = self.lock().tabs.clone();
        for tab in &tabs {
            let Ok(sessions) = tab.remote_frame_sessions().await else {
                continue;
            };
            for (target, session) in sessions {
                if !new.contains(&target) || self.lock().frames.contains(&target) {
                    continue;
                }
                match tab
                    .remote_world_script_with_binding(&session, WORLD, BINDING, &self.source)
                    .await
                {
                    Ok(called) => {
                        self.lock().frames.insert(target);
                        self.pump_actions(tab, called);
                    }
                    Err(e) => {
                        tracing::debug!(target: "moonpilot::record", "frame {target}: {}", e.msg)
                    }
                }
            }
        }
        let mut state = self.lock();
        for t in new {
            if !state.frames.contains(&t) {
                *state.frames_missed.entry(t).or_default() += 1;
            }
        }
    }
}

/// The tab's history: the current entry and every entry.
#[derive(Debug, Default, Clone)]
struct History {
    current: usize,
    entries: Vec<HistoryEntry>,
}

impl History {
    async fn read(tab: &Tab) -> Result<History, CommandError> {
        let (current, entries) = tab.history().await?;
        Ok(History {
            current: usize::try_from(current).unwrap_or(0),
            entries,
        })
    }

    /// [`History::read`], again while the page is between documents ("not attached to an
    /// active page"): at most five tries 100 ms apart.
    async fn read_settled(tab: &Tab) -> Option<History> {
        for _ in 0..5 {
            match History::read(tab).await {
                Ok(h) => return Some(h),
                Err(e) => tracing::debug!(target: "moonpilot::record", "history: {}", e.msg),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// What moved the tab from `self` to `now` (one read may come after several moves): each
    /// new entry typed into the address bar, then back or forward from the newest new entry
    /// (or from where it was) to where it is, or a reload of the entry it is on. A new entry a
    /// link, a form or a script made is the click's doing, already recorded.
    fn steps_to(&self, now: &History) -> Vec<Step> {
        let mut out = Vec::new();
        let known = |id: i64| self.entries.iter().any(|e| e.id == id);
        let mut from = None;
        for (at, e) in now.entries.iter().enumerate() {
            if known(e.id) {
                continue;
            }
            from = Some(at);
            if matches!(
                e.transition.as_str(),
                "typed"
                    | "address_bar"
                    | "auto_bookmark"
                    | "generated"
                    | "keyword"
                    | "keyword_generated"
            ) {
                out.push(Step::Navigate(e.url.clone()));
            }
        }
        let was = self
            .entries
            .get(self.current)
            .and_then(|e| now.entries.iter().position(|n| n.id == e.id));
        let Some(from) = from.or(was) else {
            return out;
        };
        if now.current < from {
            out.extend(std::iter::repeat_n(Step::Back, from - now.current));
        } else if now.current > from {
            out.extend(std::iter::repeat_n(Step::Forward, now.current - from));
        } else if out.is_empty()
            && now
                .entries
                .get(now.current)
                .is_some_and(|e| e.transition == "reload")
        {
            out.push(Step::Reload);
        }
        out
    }
}

/// `moonpilot record`: see the module's doc.
pub fn run(config: crate::EngineConfig, args: Args) -> ExitCode {
    let runtime = match crate::lua::host_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        let code = record(&executor, &args).await;
        engine.shutdown().await;
        engine.flush_trace().await;
        code
    })
}

async fn record(executor: &Executor, args: &Args) -> ExitCode {
    let mut interrupt = match crate::lua::interrupt_listener() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let id = TaskId::generate();
    let started = executor
        .execute(Some(id), "start", json!({"headless": args.headless}))
        .await;
    if !started.ok {
        eprintln!(
            "moonpilot: the browser did not start: {}",
            started.msg.unwrap_or_default()
        );
        return ExitCode::from(2);
    }
    if let Some(url) = &args.url {
        let nav = executor
            .execute(Some(id), "navigate", json!({"url": url}))
            .await;
        if !nav.ok {
            eprintln!(
                "moonpilot: {url} did not open: {}",
                nav.msg.unwrap_or_default()
            );
            return ExitCode::from(2);
        }
    }
    let Some(task) = executor.engine().task(id) else {
        eprintln!("moonpilot: the recording's task is gone");
        return ExitCode::from(2);
    };
    let Ok(tab) = task.tab() else {
        eprintln!("moonpilot: the recording's tab is gone");
        return ExitCode::from(2);
    };
    if !args.headless {
        // A person at the window answers the page's dialogs; the recording says how.
        task.events.leave_dialogs_to_hand();
    }
    let options = Options {
        test_id: args.test_id_attribute.clone(),
        overlay: !args.headless,
    };
    let recording = match Recording::attach(&task, args.url.as_deref(), options).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("moonpilot: cannot record: {}", e.msg);
            return ExitCode::from(2);
        }
    };
    eprintln!("record: recording; act in the browser, then press Ctrl-C (or close it) to write the script");
    // Until Ctrl-C, or until the browser or the tab is gone (a person closed the window).
    loop {
        tokio::select! {
            _ = interrupt.recv() => break,
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if !tab.browser().is_alive() || tab.wait_gone(Duration::ZERO).await {
                    break;
                }
            }
        }
    }
    let steps = recording.stop();
    let header = format!(
        "Recorded by `moonpilot record` on {} ({} step{}).",
        crate::trace::iso_utc(crate::clock::epoch_ms())
            .get(..10)
            .unwrap_or_default(),
        steps.len(),
        if steps.len() == 1 { "" } else { "s" }
    );
    let text = script::render(&steps, args.test, &header);
    if args.out == "-" {
        print!("{text}");
    } else {
        let path = PathBuf::from(&args.out);
        if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("moonpilot: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!(
            "record: {} step(s) written to {}",
            steps.len(),
            path.display()
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(current: usize, entries: &[(i64, &str)]) -> History {
        History {
            current,
            entries: entries
                .iter()
                .map(|(id, t)| HistoryEntry {
                    id: *id,
                    url: format!("http://x/{id}"),
                    transition: (*t).to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn history_moves_become_steps_even_when_read_late() {
        let start = h(0, &[(1, "typed")]);
        // A link: the click's doing.
        let link = h(1, &[(1, "typed"), (2, "link")]);
        assert_eq!(start.steps_to(&link), vec![]);
        // Typed, then back, seen in one read.
        let late = h(1, &[(1, "typed"), (2, "link"), (3, "typed")]);
        assert_eq!(
            link.steps_to(&late),
            vec![Step::Navigate("http://x/3".into()), Step::Back]
        );
        // Forward again, and a reload.
        let fwd = h(2, &[(1, "typed"), (2, "link"), (3, "typed")]);
        assert_eq!(late.steps_to(&fwd), vec![Step::Forward]);
        let reload = h(2, &[(1, "typed"), (2, "link"), (3, "reload")]);
        assert_eq!(fwd.steps_to(&reload), vec![Step::Reload]);
    }
}
