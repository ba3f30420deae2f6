//! `moonpilot record [URL]`: what a person does in the browser, as a Lua script (or a
//! `moonpilot test` file) that does it again.
//!
//! A [`Recording`] watches one tab. In every frame of it that shares the tab's process, the
//! page-side recorder (`js/recorder.js`, in an isolated world of its own, installed before the
//! page's scripts) reports each click, fill, choice, check, key and upload through a CDP
//! binding, with the most robust selector the element has at that moment (role and name,
//! label, placeholder, alt, title, text, test id, then scoped CSS), checked there to find that
//! element alone with the resolver every command uses. Main-frame navigations that no click
//! caused are read from the tab's history: a URL typed into the address bar, back, forward and
//! reload. The steps become the script of `script.rs`.
//!
//! What is not recorded yet: frames of other sites (out of process), tabs and popups the page
//! opens, native dialogs, drag and drop, canvas drawing, hovers.

pub mod script;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;

use crate::browser::tab::{HistoryEntry, Tab};
use crate::browser::task::TaskId;
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

/// A recording of one tab: its steps so far.
pub struct Recording {
    steps: Arc<Mutex<Steps>>,
    pumps: Vec<tokio::task::JoinHandle<()>>,
}

impl Recording {
    /// Starts recording `tab`, whose current page is `first_url` (the script's first step)
    /// when given; `test_id` is the test-id attribute.
    pub async fn attach(
        tab: &Arc<Tab>,
        first_url: Option<&str>,
        test_id: &str,
    ) -> Result<Recording, CommandError> {
        let steps = Arc::new(Mutex::new(Steps::default()));
        if let Some(url) = first_url {
            lock(&steps).push(Step::Navigate(url.to_string()));
        }
        let mut navigated = tab.main_frame_commits().await?;
        // The arguments are JSON, a literal of the call: nothing is spliced into the code.
        let source = format!(
            "({})({})",
            crate::js::RECORDER_JS,
            json!({"binding": BINDING, "testId": test_id})
        );
        let mut called = tab
            .world_script_with_binding(WORLD, BINDING, &source)
            .await?;
        let mut pumps = Vec::new();
        let sink = steps.clone();
        pumps.push(tokio::spawn(async move {
            while let Some(payload) = called.next().await {
                match serde_json::from_str::<Action>(&payload) {
                    Ok(action) => lock(&sink).push(Step::Act(action)),
                    Err(e) => {
                        tracing::debug!(target: "moonpilot::record", "not an action ({e}): {payload}")
                    }
                }
            }
        }));
        let sink = steps.clone();
        let history_tab = tab.clone();
        let mut seen = History::read(tab).await.unwrap_or_default();
        pumps.push(tokio::spawn(async move {
            while navigated.next().await.is_some() {
                let Some(now) = History::read_settled(&history_tab).await else {
                    continue;
                };
                for step in seen.steps_to(&now) {
                    lock(&sink).push(step);
                }
                seen = now;
            }
        }));
        Ok(Recording { steps, pumps })
    }

    /// The steps recorded so far.
    pub fn steps(&self) -> Vec<Step> {
        lock(&self.steps).0.clone()
    }

    /// Stops recording: the steps.
    pub fn stop(self) -> Vec<Step> {
        for p in &self.pumps {
            p.abort();
        }
        self.steps()
    }
}

fn lock(steps: &Mutex<Steps>) -> std::sync::MutexGuard<'_, Steps> {
    steps.lock().unwrap_or_else(|e| e.into_inner())
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
    let Some(tab) = executor.engine().task(id).and_then(|t| t.tab().ok()) else {
        eprintln!("moonpilot: the recording's tab is gone");
        return ExitCode::from(2);
    };
    let recording =
        match Recording::attach(&tab, args.url.as_deref(), &args.test_id_attribute).await {
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
