//! What `moonpilot record` (src/record/) needs of a tab: a script of its own in an isolated
//! world of every frame (out-of-process frames included), with a binding it reports through,
//! the main frame's commits (the history they are read against is `Tab::history`), and the
//! native dialogs and how each was answered.
//!
//! A child of `tab.rs`.

use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::json;

use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventJavascriptDialogClosed, EventJavascriptDialogOpening,
};
use chromiumoxide::cdp::js_protocol::runtime::EventBindingCalled;

use super::frames::FrameSession;
use super::Tab;
use crate::browser::cdp_error::from_cdp;
use crate::error::CommandError;

impl Tab {
    /// Runs `source` in the isolated world `world` of every frame of this tab that shares its
    /// process, now and in every later document, before the page's own scripts; `binding`
    /// is a function of that world whose calls the answered stream yields (their payloads).
    /// The stream is registered before the script runs: no call is missed.
    pub async fn world_script_with_binding(
        &self,
        world: &str,
        binding: &str,
        source: &str,
    ) -> Result<BoxStream<'static, String>, CommandError> {
        let called = self
            .page
            .event_listener::<EventBindingCalled>()
            .await
            .map_err(|e| from_cdp("Runtime.bindingCalled", e))?;
        self.call(
            "Runtime.addBinding",
            json!({"name": binding, "executionContextName": world}),
        )
        .await?;
        self.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": source, "worldName": world, "runImmediately": true}),
        )
        .await?;
        let name = binding.to_string();
        Ok(called
            .filter_map(move |ev| {
                let payload = (ev.name == name).then(|| ev.payload.clone());
                std::future::ready(payload)
            })
            .boxed())
    }

    /// The sessions of this tab's out-of-process frames now, each with its target id (the
    /// session's root frame id is its target's).
    pub async fn remote_frame_sessions(&self) -> Result<Vec<(String, String)>, CommandError> {
        Ok(self
            .frames(true)
            .await?
            .into_iter()
            .filter_map(|f| match f.session {
                FrameSession::Remote {
                    session_id,
                    root_frame_id,
                    ..
                } if root_frame_id == f.frame_id => Some((root_frame_id, session_id)),
                _ => None,
            })
            .collect())
    }

    /// The ids of every out-of-process frame target of the browser now (any tab's).
    pub async fn frame_targets(&self) -> Result<Vec<String>, CommandError> {
        let targets = self.browser.call("Target.getTargets", json!({})).await?;
        Ok(targets["targetInfos"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter(|t| t["type"] == "iframe")
                    .filter_map(|t| t["targetId"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// [`Tab::world_script_with_binding`] in the out-of-process frame whose session is
    /// `session` (one of [`Tab::remote_frame_sessions`]).
    pub async fn remote_world_script_with_binding(
        &self,
        session: &str,
        world: &str,
        binding: &str,
        source: &str,
    ) -> Result<BoxStream<'static, String>, CommandError> {
        let conn = self.browser.raw().await?;
        let mut events = conn.session_events();
        // Bindings report only while the session's runtime agent is on.
        conn.call(Some(session), "Runtime.enable", json!({}))
            .await?;
        conn.call(
            Some(session),
            "Runtime.addBinding",
            json!({"name": binding, "executionContextName": world}),
        )
        .await?;
        conn.call(
            Some(session),
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": source, "worldName": world, "runImmediately": true}),
        )
        .await?;
        let (session, name) = (session.to_string(), binding.to_string());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.browser.spawn(async move {
            loop {
                match events.recv().await {
                    Ok(ev) => {
                        if ev.session == session
                            && ev.method == "Runtime.bindingCalled"
                            && ev.params["name"] == name.as_str()
                        {
                            let payload = ev.params["payload"].as_str().unwrap_or_default();
                            if tx.send(payload.to_string()).is_err() {
                                return;
                            }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("a frame's recorder lost {n} events");
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(tokio_stream_of(rx))
    }

    /// The native dialogs of this tab from now on: each opening (its type and message) and
    /// each close (how it was answered, the prompt's text).
    pub async fn dialogs_seen(&self) -> Result<BoxStream<'static, DialogSeen>, CommandError> {
        let opened = self
            .page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(|e| from_cdp("Page.javascriptDialogOpening", e))?
            .map(|ev| DialogSeen::Opened {
                kind: ev.r#type.as_ref().to_string(),
                message: ev.message.clone(),
            });
        let closed = self
            .page
            .event_listener::<EventJavascriptDialogClosed>()
            .await
            .map_err(|e| from_cdp("Page.javascriptDialogClosed", e))?
            .map(|ev| DialogSeen::Closed {
                accepted: ev.result,
                input: ev.user_input.clone(),
            });
        Ok(futures::stream::select(opened, closed).boxed())
    }

    /// A stream that yields each time the main frame commits a new document.
    pub async fn main_frame_commits(&self) -> Result<BoxStream<'static, ()>, CommandError> {
        let navigated = self
            .page
            .event_listener::<EventFrameNavigated>()
            .await
            .map_err(|e| from_cdp("Page.frameNavigated", e))?;
        Ok(navigated
            .filter_map(|ev| std::future::ready(ev.frame.parent_id.is_none().then_some(())))
            .boxed())
    }
}

/// A native dialog as a recording sees it.
#[derive(Debug, Clone)]
pub enum DialogSeen {
    /// It opened.
    Opened {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
        /// Its message.
        message: String,
    },
    /// It closed.
    Closed {
        /// Whether it was accepted.
        accepted: bool,
        /// A prompt's text.
        input: String,
    },
}

/// A stream of what `rx` receives.
fn tokio_stream_of<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> BoxStream<'static, T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}
