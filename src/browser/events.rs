//! Per-tab event pumps and the event-fed state they write.
//!
//! Native dialogs are answered here, on a background task, never on the path of the command
//! that opened them (CDP-NOTES.md: while a dialog is open the tab's `Runtime.evaluate` blocks).
//! The state sits behind a `std::sync::Mutex` that is locked only to push or copy, never across
//! an `.await`.

use std::sync::{Arc, Mutex};

use chromiumoxide::cdp::browser_protocol::page::{
    EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::clock::epoch_ms;

/// The last native dialog a task's tabs showed.
#[derive(Debug, Clone)]
pub struct DialogRecord {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// The dialog's message.
    pub message: String,
    /// The prompt's default value.
    pub default_value: Option<String>,
    /// The URL of the frame that opened it.
    pub url: String,
    /// Per-task sequence number, from 1.
    pub seq: u64,
    /// Epoch milliseconds when it opened.
    pub timestamp: u64,
    /// Whether it was accepted: true only once an accepting answer reached the browser.
    pub accepted: bool,
    /// Whether an answer (accept or dismiss) reached the browser.
    pub answered: bool,
    /// Why answering it failed, while it has not been answered.
    pub answer_error: Option<String>,
}

impl DialogRecord {
    /// The record as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "type": self.kind,
            "message": self.message,
            "defaultValue": self.default_value,
            "url": self.url,
            "seq": self.seq,
            "timestamp": self.timestamp,
            "accepted": self.accepted,
            "answered": self.answered,
            "answerError": self.answer_error,
        })
    }
}

#[derive(Debug, Default)]
struct EventState {
    dialog: Option<DialogRecord>,
    dialog_seq: u64,
    dismiss_dialogs: bool,
    /// What an accepted prompt answers (`None`: its default value).
    prompt_text: Option<String>,
    /// Dialogs are left to a person at the browser's window (`moonpilot record`): none is
    /// answered here.
    by_hand: bool,
    /// Dialogs opened and not answered yet.
    dialogs_open: u32,
}

/// Event-fed state shared by all tabs of one task.
#[derive(Debug, Clone)]
pub struct TabEvents {
    state: Arc<Mutex<EventState>>,
    /// The target id of the last tab whose dialog the browser refused to let us answer (its
    /// navigation is wedged), with a count so that each refusal is a change.
    stuck: Arc<tokio::sync::watch::Sender<(u64, String)>>,
    /// The task's console and network recorder (`netlog`).
    pub log: Arc<super::netlog::TaskLog>,
    /// The task's request routes (`routes`), applied to each of its tabs.
    pub routes: Arc<super::routes::Routes>,
}

impl Default for TabEvents {
    fn default() -> TabEvents {
        TabEvents {
            state: Arc::default(),
            stuck: Arc::new(tokio::sync::watch::channel((0, String::new())).0),
            log: Arc::default(),
            routes: Arc::default(),
        }
    }
}

impl TabEvents {
    /// The last dialog, if any.
    pub fn last_dialog(&self) -> Option<DialogRecord> {
        self.state.lock().ok().and_then(|s| s.dialog.clone())
    }

    /// Whether a native dialog is on screen right now (opened, its answer not yet through).
    pub fn dialog_open(&self) -> bool {
        self.state
            .lock()
            .map(|s| s.dialogs_open > 0)
            .unwrap_or(false)
    }

    /// Records the outcome of answering dialog `seq` (`accept`ed or dismissed) and that it is
    /// off the screen, or, with `Err`, why the answer did not land (the dialog may still be up).
    fn dialog_answered(&self, seq: u64, accept: bool, outcome: Result<(), String>) {
        if let Ok(mut s) = self.state.lock() {
            // Off the screen once answered, or when the browser says no such dialog is up or
            // that its document is not the page's active one any more; after any other
            // refusal it may still be up.
            let gone = match &outcome {
                Ok(()) => true,
                Err(e) => e.contains(NOT_ATTACHED) || e.contains(NO_DIALOG),
            };
            if gone {
                s.dialogs_open = s.dialogs_open.saturating_sub(1);
            }
            if let Some(d) = s.dialog.as_mut().filter(|d| d.seq == seq) {
                match outcome {
                    Ok(()) => {
                        d.answered = true;
                        d.accepted = accept;
                        d.answer_error = None;
                    }
                    Err(e) => d.answer_error = Some(e),
                }
            }
        }
    }

    /// Changes each time a dialog could not be answered because its document is no longer the
    /// tab's active one (a navigation swapped it): that document's unload waits for the dialog
    /// for good, and so does the navigation.
    pub fn stuck_dialogs(&self) -> tokio::sync::watch::Receiver<(u64, String)> {
        self.stuck.subscribe()
    }

    /// Reads the last dialog and clears the record (`consume`).
    pub fn take_dialog(&self) -> Option<DialogRecord> {
        self.state.lock().ok().and_then(|mut s| s.dialog.take())
    }

    /// Sets whether dialogs that open from now on are dismissed (else accepted); the record of
    /// earlier ones is untouched.
    pub fn set_dismiss_dialogs(&self, dismiss: bool) {
        if let Ok(mut s) = self.state.lock() {
            s.dismiss_dialogs = dismiss;
        }
    }

    /// Sets the text accepted prompts answer from now on (`None`: each prompt's default).
    pub fn set_prompt_text(&self, text: Option<String>) {
        if let Ok(mut s) = self.state.lock() {
            s.prompt_text = text;
        }
    }

    /// The text accepted prompts answer (`None`: each prompt's default).
    pub fn prompt_text(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.prompt_text.clone())
    }

    /// Leaves dialogs from now on to a person at the browser's window (`moonpilot record`,
    /// headful): they are recorded, not answered.
    pub fn leave_dialogs_to_hand(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.by_hand = true;
        }
    }

    /// Whether dialogs are dismissed.
    pub fn dismiss_dialogs(&self) -> bool {
        self.state
            .lock()
            .map(|s| s.dismiss_dialogs)
            .unwrap_or(false)
    }

    /// Records a dialog that opened: its seq and the policy's answer (whether it accepts, a
    /// prompt's text), or `None` when a person answers it.
    fn record_dialog(&self, ev: &EventJavascriptDialogOpening) -> (u64, Option<Answer>) {
        let Ok(mut s) = self.state.lock() else {
            return (0, Some(Answer::default()));
        };
        s.dialog_seq += 1;
        let accept = !s.dismiss_dialogs;
        let answer = (!s.by_hand).then(|| Answer {
            accept,
            prompt_text: s.prompt_text.clone(),
        });
        if answer.is_some() {
            s.dialogs_open += 1;
        }
        s.dialog = Some(DialogRecord {
            kind: ev.r#type.as_ref().to_string(),
            message: ev.message.clone(),
            default_value: ev.default_prompt.clone(),
            url: ev.url.clone(),
            seq: s.dialog_seq,
            timestamp: epoch_ms(),
            accepted: false,
            answered: false,
            answer_error: None,
        });
        (s.dialog_seq, answer)
    }

    /// Subscribes to `page`'s dialogs and answers each one by the task's policy.
    ///
    /// Returns once the subscription is in place, so a page script that runs later cannot open
    /// a dialog nobody answers.
    pub async fn watch_dialogs(
        &self,
        browser: &super::Browser,
        page: &Page,
    ) -> Result<(), chromiumoxide::error::CdpError> {
        let mut stream = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await?;
        let events = self.clone();
        let page = page.clone();
        browser.spawn(async move {
            while let Some(ev) = stream.next().await {
                let (seq, policy) = events.record_dialog(&ev);
                let Some(Answer {
                    accept,
                    prompt_text,
                }) = policy
                else {
                    continue;
                };
                let mut params = HandleJavaScriptDialogParams::new(accept);
                if accept && ev.r#type.as_ref() == "prompt" {
                    params.prompt_text = prompt_text.or_else(|| ev.default_prompt.clone());
                }
                // Not awaited by any command: the command that opened the dialog is blocked in the
                // renderer until this answer lands.
                let outcome = answer(&page, params).await;
                if let Err(e) = &outcome {
                    tracing::debug!("answering a `{}` dialog failed: {e}", ev.r#type.as_ref());
                    if e.contains(NOT_ATTACHED) {
                        let target = page.target_id().as_ref().to_string();
                        events.stuck.send_modify(|(n, t)| {
                            *n += 1;
                            *t = target;
                        });
                    }
                }
                events.dialog_answered(seq, accept, outcome);
            }
        });
        Ok(())
    }
}

/// How the policy answers a dialog.
#[derive(Debug, PartialEq)]
struct Answer {
    accept: bool,
    /// A prompt's text (`None`: its default).
    prompt_text: Option<String>,
}

impl Default for Answer {
    fn default() -> Answer {
        Answer {
            accept: true,
            prompt_text: None,
        }
    }
}

/// Chromium's refusal to answer a dialog of a document that is no longer the page's active one.
const NOT_ATTACHED: &str = "Not attached to an active page";
/// Chromium's answer when the dialog went away by itself.
const NO_DIALOG: &str = "No dialog is showing";

/// How often, and how far apart, an answer that the browser refused is sent again.
const ANSWER_TRIES: u32 = 20;
const ANSWER_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Answers a dialog, sending the answer again for a second when the browser refuses it. While a
/// navigation swaps the page's document, Chromium can refuse it for good ("Not attached to an
/// active page"): the old document's dialog then blocks its unload, and the navigation, until
/// the tab is replaced (the navigation does that, see `stuck_dialogs`). "No dialog is showing"
/// means the dialog went away by itself: nothing left to answer.
async fn answer(page: &Page, params: HandleJavaScriptDialogParams) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..ANSWER_TRIES {
        match page.execute(params.clone()).await {
            Ok(_) => return Ok(()),
            Err(e) => {
                last = e.to_string();
                if last.contains(NO_DIALOG) {
                    return Err(last);
                }
            }
        }
        tokio::time::sleep(ANSWER_PAUSE).await;
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dialog_is_open_from_its_event_until_its_answer() {
        let events = TabEvents::default();
        let ev: EventJavascriptDialogOpening = serde_json::from_value(json!({
            "url": "http://x/", "frameId": "F", "message": "sure?", "type": "confirm",
            "hasBrowserHandler": false,
        }))
        .expect("a dialog event");
        assert!(!events.dialog_open());
        let accept = |yes| {
            Some(Answer {
                accept: yes,
                prompt_text: None,
            })
        };
        assert_eq!(
            events.record_dialog(&ev),
            (1, accept(true)),
            "accepted by default"
        );
        assert!(events.dialog_open(), "on screen until answered");
        let open = events.last_dialog().expect("a record");
        assert_eq!((open.seq, open.accepted, open.answered), (1, false, false));
        events.dialog_answered(1, true, Ok(()));
        assert!(!events.dialog_open());
        assert_eq!(events.last_dialog().map(|d| d.accepted), Some(true));
        events.set_dismiss_dialogs(true);
        assert_eq!(
            events.record_dialog(&ev),
            (2, accept(false)),
            "dismissed from now on"
        );
        assert_eq!(
            events.take_dialog().map(|d| (d.seq, d.accepted)),
            Some((2, false))
        );
        assert!(events.last_dialog().is_none(), "consumed");
        // An answer that never landed is not reported as accepted.
        assert_eq!(events.record_dialog(&ev), (3, accept(false)));
        events.set_dismiss_dialogs(false);
        assert_eq!(events.record_dialog(&ev), (4, accept(true)));
        events.dialog_answered(4, true, Err("Not attached to an active page".into()));
        let d = events.last_dialog().expect("a record");
        assert!(!d.accepted && !d.answered);
        assert_eq!(
            d.answer_error.as_deref(),
            Some("Not attached to an active page")
        );
        // A prompt's text, then a person's hand: recorded, not answered, not on our count.
        events.set_prompt_text(Some("Ada".into()));
        assert_eq!(
            events.record_dialog(&ev).1,
            Some(Answer {
                accept: true,
                prompt_text: Some("Ada".into())
            })
        );
        events.leave_dialogs_to_hand();
        let open = events.state.lock().map(|s| s.dialogs_open).unwrap_or(0);
        assert_eq!(events.record_dialog(&ev), (6, None));
        assert_eq!(
            events.state.lock().map(|s| s.dialogs_open).unwrap_or(0),
            open
        );
    }
}
