//! What `moonpilot record` (src/record/) needs of a tab: a script of its own in an isolated
//! world of every frame, with a binding it reports through, and the main frame's commits (the
//! history they are read against is `Tab::history`).
//!
//! A child of `tab.rs`.

use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::json;

use chromiumoxide::cdp::browser_protocol::page::EventFrameNavigated;
use chromiumoxide::cdp::js_protocol::runtime::EventBindingCalled;

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
