//! Our probes (`js/*.js`) in a tab's frames: the isolated ("utility") world each runs in, the
//! main world for the few that must see the page's own globals, and the reply envelope they
//! answer (`js::reply`).
//!
//! A child of `tab.rs`. The caller's own script (`execute_js`) is `script.rs`; the listener
//! step of a read is `listeners.rs`.

use chromiumoxide::cdp::browser_protocol::page::FrameId;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::frames::{FrameRef, FrameSession};
use super::runtime::remote_value;
use super::{navigating, Tab};
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// What the stub of a kept probe throws when its world no longer has it.
const MISSING: &str = "moonpilot: probe not kept in this world";

/// Whether a `Runtime.callFunctionOn` result is the stub's [`MISSING`] marker.
fn missing(res: &Value) -> bool {
    res.pointer("/exceptionDetails/exception/description")
        .and_then(Value::as_str)
        .is_some_and(|d| d.contains(MISSING))
}

impl Tab {
    /// Evaluates one of our expression files (`js/*.js`) in the main frame's utility world.
    /// Falls back to the main world when the utility world is not (or no longer) there, as
    /// right after a navigation.
    pub async fn eval_expression(&self, expression: &'static str) -> Result<Value, CommandError> {
        let params = json!({"expression": expression, "returnByValue": true});
        if let Ok(Some(ctx)) = self.page.secondary_execution_context().await {
            let mut utility = params.clone();
            utility["contextId"] = json!(ctx.inner());
            if let Ok(value) = self
                .call("Runtime.evaluate", utility)
                .await
                .and_then(|res| remote_value("Runtime.evaluate", res))
            {
                return Ok(value);
            }
        }
        let res = self.call("Runtime.evaluate", params).await?;
        remote_value("Runtime.evaluate", res)
    }

    /// The execution context our probes run in for `frame`: an isolated ("utility") world that
    /// shares the DOM with the page but not its JavaScript globals, so a page that patches
    /// `Array.prototype` or `JSON` cannot break (or see) the probes. Falls back to the main world
    /// while the utility world of a fresh document does not exist yet.
    pub(super) async fn probe_context(
        &self,
        frame: &FrameRef,
        fresh: bool,
    ) -> Result<Value, CommandError> {
        self.probe_world(frame, fresh).await.map(|(ctx, _)| ctx)
    }

    /// [`Tab::probe_context`], and whether it is the isolated world (not the main world it
    /// falls back to).
    async fn probe_world(
        &self,
        frame: &FrameRef,
        fresh: bool,
    ) -> Result<(Value, bool), CommandError> {
        match &frame.session {
            FrameSession::Page => {
                let id: FrameId = frame.frame_id.clone().into();
                let utility = if frame.is_main() {
                    self.page.secondary_execution_context().await
                } else {
                    self.page
                        .frame_secondary_execution_context(id.clone())
                        .await
                };
                let (ctx, isolated) = match utility {
                    Ok(Some(ctx)) => (Some(ctx), true),
                    _ if frame.is_main() => {
                        (self.page.execution_context().await.ok().flatten(), false)
                    }
                    _ => (
                        self.page.frame_execution_context(id).await.ok().flatten(),
                        false,
                    ),
                };
                ctx.map(|c| (json!(c.inner()), isolated))
                    .ok_or_else(navigating)
            }
            FrameSession::Remote { session_id, .. } => {
                let key = (session_id.clone(), frame.frame_id.clone());
                if !fresh {
                    if let Some(ctx) = self
                        .remote_worlds
                        .lock()
                        .ok()
                        .and_then(|m| m.get(&key).cloned())
                    {
                        return Ok((ctx, true));
                    }
                }
                let world = self
                    .call_in(
                        frame,
                        "Page.createIsolatedWorld",
                        json!({"frameId": frame.frame_id, "worldName": "moonpilot"}),
                    )
                    .await?;
                let ctx = world
                    .get("executionContextId")
                    .cloned()
                    .ok_or_else(navigating)?;
                if let Ok(mut m) = self.remote_worlds.lock() {
                    m.insert(key, ctx.clone());
                }
                Ok((ctx, true))
            }
        }
    }

    /// `Runtime.callFunctionOn` of probe `function` in `frame`'s probe world, with `params`
    /// (arguments, returnByValue, ...) as given; answers CDP's raw result.
    ///
    /// The big probes are over 100 KB of source (`probe_lib.js` joined in front), and sending
    /// and parsing that costs about 3 ms a call. In an isolated world, where the page cannot
    /// reach it, the function is therefore kept after its first call (in a world-global `Map`
    /// under a key of its text) and later calls send a one-line stub that calls it. A stub that
    /// finds nothing (a context id that came back in a new document) throws a marker, and the
    /// full function is sent again. In the main world the whole text is sent each time.
    /// Out-of-process frames whose world died with its document get a fresh one, once.
    pub(super) async fn call_in_probe_world(
        &self,
        frame: &FrameRef,
        function: &'static str,
        mut params: Value,
    ) -> Result<Value, CommandError> {
        let session = match &frame.session {
            FrameSession::Page => String::new(),
            FrameSession::Remote { session_id, .. } => session_id.clone(),
        };
        let key = function.as_ptr() as usize;
        let mut fresh = false;
        let mut stubbed = false;
        loop {
            let (ctx, isolated) = self.probe_world(frame, fresh).await?;
            let slot = (session.clone(), ctx.as_i64().unwrap_or(-1));
            let kept = isolated
                && self
                    .installed
                    .lock()
                    .is_ok_and(|m| m.get(&slot).is_some_and(|k| k.contains(&key)));
            params["executionContextId"] = ctx;
            params["functionDeclaration"] = json!(if kept {
                format!(
                    "function(a) {{ 'use strict'; const f = globalThis.__mpProbes && globalThis.__mpProbes.get({key}); \
                     if (f === undefined) throw new Error('{MISSING}'); return f.call(this, a); }}"
                )
            } else if isolated {
                // On lines of their own: the probe may end in a line comment. Strict, as the
                // probes are: `this` reaches them as CDP gives it.
                format!(
                    "function(a) {{ 'use strict'; const f = (\n{function}\n);\n\
                     (globalThis.__mpProbes || (globalThis.__mpProbes = new Map())).set({key}, f);\n\
                     return f.call(this, a); }}"
                )
            } else {
                function.to_string()
            });
            let res = self
                .call_in(frame, "Runtime.callFunctionOn", params.clone())
                .await;
            match &res {
                Err(e)
                    if e.code == ErrorCode::PageNavigating
                        && !fresh
                        && matches!(frame.session, FrameSession::Remote { .. }) =>
                {
                    // The cached world died with its document: make a new one, once.
                    fresh = true;
                    continue;
                }
                Ok(r) if kept && !stubbed && missing(r) => {
                    tracing::debug!(target: "moonpilot::probes", "a kept probe was missing from its world (context {}): sent again", slot.1);
                    stubbed = true;
                    if let Ok(mut m) = self.installed.lock() {
                        m.remove(&slot);
                    }
                    continue;
                }
                Ok(r) if isolated && !kept && r.get("exceptionDetails").is_none() => {
                    if let Ok(mut m) = self.installed.lock() {
                        // Contexts come and go with documents: a tab's record stays small.
                        if m.len() > 64 {
                            m.clear();
                        }
                        m.entry(slot).or_default().insert(key);
                    }
                }
                _ => {}
            }
            return res;
        }
    }

    /// The execution context id of `frame`'s main world (where the page's own scripts run), for
    /// frames of the page session; `None` for out-of-process frames or while it is not known.
    pub(super) async fn main_world(&self, frame: &FrameRef) -> Option<Value> {
        let ctx = match &frame.session {
            FrameSession::Page if frame.is_main() => self.page.execution_context().await,
            FrameSession::Page => {
                self.page
                    .frame_execution_context(frame.frame_id.clone().into())
                    .await
            }
            FrameSession::Remote { .. } => return None,
        };
        ctx.ok().flatten().map(|c| json!(c.inner()))
    }

    /// Calls a function file of `js/` in `frame`'s utility world (see `probe_context`) with one
    /// JSON argument and returns its JSON result (promises awaited).
    pub async fn call_function(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<Value, CommandError> {
        let params = json!({
            "arguments": [{"value": arg}],
            "returnByValue": true,
            "awaitPromise": true,
        });
        let res = self.call_in_probe_world(frame, function, params).await;
        remote_value("Runtime.callFunctionOn", res?)
    }

    /// Calls a probe that answers the reply envelope (`{ok:true, value}` or
    /// `{ok:false, code, msg, data}`, see [`js::reply`]) and deserialises its value as `T`; a
    /// failure keeps the probe's code.
    pub async fn call_probe<T: DeserializeOwned>(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<T, CommandError> {
        js::reply(self.call_function(frame, function, arg).await?)
    }

    /// Calls a probe in `frame`'s main world only: `Ok(None)` when the frame has none this
    /// connection can reach (an out-of-process frame), never the utility world instead.
    pub async fn call_probe_in_main_world<T: DeserializeOwned>(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<Option<T>, CommandError> {
        let Some(ctx) = self.main_world(frame).await else {
            return Ok(None);
        };
        let params = json!({
            "functionDeclaration": function,
            "arguments": [{"value": arg}],
            "returnByValue": true,
            "awaitPromise": true,
            "executionContextId": ctx,
        });
        let res = self
            .call_in(frame, "Runtime.callFunctionOn", params)
            .await?;
        js::reply(remote_value("Runtime.callFunctionOn", res)?).map(Some)
    }

    /// Calls a probe like [`Tab::call_probe`] but in `frame`'s main world, where the page's own
    /// expando properties (framework traces such as Vue's `_vei` or React's `__reactProps$`)
    /// and globals (`jQuery`) are visible. Out-of-process frames use their utility world.
    pub async fn call_probe_in_page_world<T: DeserializeOwned>(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<T, CommandError> {
        match self
            .call_probe_in_main_world(frame, function, arg.clone())
            .await?
        {
            Some(answer) => Ok(answer),
            None => self.call_probe(frame, function, arg).await,
        }
    }
}
