//! Per-tab event pumps and the event-fed state they write.
//!
//! Native dialogs are answered here, on a background task, never on the path of the command
//! that opened them (CDP-NOTES.md: while a dialog is open the tab's `Runtime.evaluate` blocks).
//! The state sits behind a `std::sync::Mutex` that is locked only to push or copy, never across
//! an `.await`.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use chromiumoxide::cdp::browser_protocol::page::{
    EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::{json, Value};

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
    /// Whether it was accepted (else dismissed).
    pub accepted: bool,
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
        })
    }
}

#[derive(Debug, Default)]
struct EventState {
    dialog: Option<DialogRecord>,
    dialog_seq: u64,
    dismiss_dialogs: bool,
    /// Dialogs opened and not answered yet.
    dialogs_open: u32,
}

/// Event-fed state shared by all tabs of one task.
#[derive(Debug, Clone, Default)]
pub struct TabEvents {
    state: Arc<Mutex<EventState>>,
}

/// Epoch milliseconds now.
pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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

    fn dialog_answered(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.dialogs_open = s.dialogs_open.saturating_sub(1);
        }
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

    /// Whether dialogs are dismissed.
    pub fn dismiss_dialogs(&self) -> bool {
        self.state
            .lock()
            .map(|s| s.dismiss_dialogs)
            .unwrap_or(false)
    }

    fn record_dialog(&self, ev: &EventJavascriptDialogOpening) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return true;
        };
        s.dialog_seq += 1;
        s.dialogs_open += 1;
        let accept = !s.dismiss_dialogs;
        s.dialog = Some(DialogRecord {
            kind: ev.r#type.as_ref().to_string(),
            message: ev.message.clone(),
            default_value: ev.default_prompt.clone(),
            url: ev.url.clone(),
            seq: s.dialog_seq,
            timestamp: epoch_ms(),
            accepted: accept,
        });
        accept
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
                let accept = events.record_dialog(&ev);
                let mut params = HandleJavaScriptDialogParams::new(accept);
                if accept && ev.r#type.as_ref() == "prompt" {
                    params.prompt_text = ev.default_prompt.clone();
                }
                // Not awaited by any command: the command that opened the dialog is blocked in the
                // renderer until this answer lands.
                if let Err(e) = page.execute(params).await {
                    tracing::warn!("answering a `{}` dialog failed: {e}", ev.r#type.as_ref());
                }
                events.dialog_answered();
            }
        });
        Ok(())
    }
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
        assert!(events.record_dialog(&ev), "accepted by default");
        assert!(events.dialog_open(), "on screen until answered");
        assert_eq!(events.last_dialog().map(|d| d.seq), Some(1));
        events.dialog_answered();
        assert!(!events.dialog_open());
        events.set_dismiss_dialogs(true);
        assert!(!events.record_dialog(&ev), "dismissed from now on");
        assert_eq!(
            events.take_dialog().map(|d| (d.seq, d.accepted)),
            Some((2, false))
        );
        assert!(events.last_dialog().is_none(), "consumed");
    }
}
