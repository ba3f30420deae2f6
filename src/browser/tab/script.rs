//! The caller's own script (`execute_js`): evaluated in a frame's main world, its result
//! serialised in the page, its remote objects released, a runaway script terminated.
//!
//! A child of `tab.rs`. Our own probes are `probes.rs`: this is the one place page JavaScript
//! that is not ours runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use super::frames::{FrameRef, FrameSession};
use super::{navigating, Tab};
use crate::browser::cdp_error::from_cdp;
use crate::browser::raw::Raw;
use crate::error::CommandError;
use crate::js;

/// How many conversions `execute_js` lists in its receipt (the rest are counted).
const SCRIPT_NOTES: u32 = 20;

/// How long a background release of a run's objects may wait for the page.
const RELEASE_BOUND: Duration = Duration::from_secs(30);

/// The CDP object group of one run of a caller's script: its own, so that releasing it later
/// (in the background, see [`Tab::release_script_objects`]) can never free the objects of a
/// run that started meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptGroup(String);

impl ScriptGroup {
    /// A group no other run uses.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ScriptGroup(format!(
            "moonpilot-js-{}",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }
}

impl Tab {
    /// Evaluates caller-supplied script text in `frame`'s main world (`execute_js`): promises
    /// awaited, the user gesture flag set. `timeout_ms` asks Chromium to terminate synchronous
    /// execution after that long. Primitives come back inline; objects stay remote (in the
    /// object group `group`) for [`Tab::script_result`]. Answers the raw CDP result.
    pub async fn evaluate_script(
        &self,
        frame: &FrameRef,
        expression: &str,
        timeout_ms: Option<u64>,
        group: &ScriptGroup,
    ) -> Result<Value, CommandError> {
        let mut params = json!({
            "expression": expression,
            "returnByValue": false,
            "objectGroup": group.0,
            "awaitPromise": true,
            "userGesture": true,
        });
        if let Some(ms) = timeout_ms {
            params["timeout"] = json!(ms);
        }
        match &frame.session {
            FrameSession::Page => {
                let ctx = if frame.is_main() {
                    self.page.execution_context().await
                } else {
                    self.page
                        .frame_execution_context(frame.frame_id.clone().into())
                        .await
                }
                .map_err(|e| from_cdp("Runtime.executionContext", e))?
                .ok_or_else(navigating)?;
                params["contextId"] = json!(ctx.inner());
            }
            // Frames nested inside an out-of-process iframe get an isolated world; the root
            // frame of the session evaluates in its default (main) world.
            FrameSession::Remote { root_frame_id, .. } if *root_frame_id != frame.frame_id => {
                params["contextId"] = self.probe_context(frame, false).await?;
            }
            FrameSession::Remote { .. } => {}
        }
        self.call_in(frame, "Runtime.evaluate", params).await
    }

    /// Runs `js/script_result.js` on the remote object `object_id` of `frame` (see
    /// [`Tab::evaluate_script`]): with `call`, the object is the caller's script as a function,
    /// called and awaited first. The result is serialised in the page and answered by value in
    /// the same call (`{value, notes, more, navigation}`), so a navigation the script starts
    /// cannot lose it. Answers the raw CDP result (`exceptionDetails` when the script threw).
    ///
    /// `Runtime.callFunctionOn` has no `timeout`: the caller bounds it and stops the script with
    /// [`Tab::terminate_execution`].
    pub async fn script_result(
        &self,
        frame: &FrameRef,
        object_id: &str,
        call: bool,
    ) -> Result<Value, CommandError> {
        self.call_in(
            frame,
            "Runtime.callFunctionOn",
            json!({
                "objectId": object_id,
                "functionDeclaration": js::SCRIPT_RESULT_JS,
                "arguments": [{"value": {"call": call, "maxNotes": SCRIPT_NOTES}}],
                "returnByValue": true,
                "awaitPromise": true,
                "userGesture": true,
            }),
        )
        .await
    }

    /// Releases the objects one run of `execute_js` left in `frame`'s page (its `group`); best
    /// effort, in the background. The answer is not waited for: the page may be busy again
    /// already (a timer the script set), and no receipt depends on it.
    pub fn release_script_objects(&self, frame: &FrameRef, group: ScriptGroup) {
        let params = json!({"objectGroup": group.0});
        let method = "Runtime.releaseObjectGroup";
        match &frame.session {
            FrameSession::Page => {
                let page = self.page.clone();
                self.browser.spawn(async move {
                    let release = page.execute(Raw::new(method, params));
                    let _ = tokio::time::timeout(RELEASE_BOUND, release).await;
                });
            }
            FrameSession::Remote {
                conn, session_id, ..
            } => {
                let (conn, session) = (conn.clone(), session_id.clone());
                self.browser.spawn(async move {
                    let release = conn.call(Some(&session), method, params);
                    let _ = tokio::time::timeout(RELEASE_BOUND, release).await;
                });
            }
        }
    }

    /// Stops whatever script runs in `frame`'s renderer (after an `execute_js` budget expired,
    /// or when a page stopped answering). Chromium handles `Runtime.terminateExecution` on the
    /// renderer's I/O thread, so it gets through while the main thread spins.
    pub async fn terminate_execution(&self, frame: &FrameRef) -> Result<(), CommandError> {
        self.call_in(frame, "Runtime.terminateExecution", json!({}))
            .await
            .map(drop)
    }
}
