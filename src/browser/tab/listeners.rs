//! The listener step of a read: which elements of a frame the browser holds click-like
//! listeners for, or a React/Vue click handler marks, stored where the DOM index probe reads them
//! (JS-PROBES.md §1.7 rules 7b/7d), and the listener types of one element.
//!
//! A child of `tab.rs`; it runs in the probe worlds of `probes.rs`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::frames::{FrameRef, FrameSession};
use super::runtime::{exception_line, remote_value};
use super::{navigating, Tab};
use crate::error::CommandError;
use crate::js;

/// How long freeing the listener step's remote handles may take.
const LISTENER_RELEASE: Duration = Duration::from_secs(1);
/// The object group of [`Tab::listener_targets`]' remote objects (released while the reader
/// reads, by [`Tab::release_listener_targets`]).
const LISTENER_GROUP: &str = "moonpilot-listen";
/// The listener types that make a node a click target of its own.
pub const CLICK_TYPES: [&str; 7] = [
    "click",
    "dblclick",
    "mousedown",
    "mouseup",
    "pointerdown",
    "pointerup",
    "touchstart",
];
/// A node with more listener types than this is a delegation root, not a target.
pub const MAX_LISTENER_TYPES: usize = 6;
/// At most this many listener-only targets are stored per frame: those nearest the viewport.
pub const MAX_LISTENER_TARGETS: usize = 300;
/// At most this many listened nodes are looked at (resolved) to choose them from.
pub const MAX_LISTENER_CANDIDATES: usize = 1000;

/// What [`Tab::listener_targets`] stored for one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerTargets {
    /// Elements stored because the browser holds a click-like listener for them.
    pub listeners: usize,
    /// Elements stored because of a React/Vue click handler.
    pub traces: usize,
}

/// The backendNodeIds of `DOMDebugger.getEventListeners`' answer that are click targets: at
/// least one of [`CLICK_TYPES`], at most [`MAX_LISTENER_TYPES`] types, in listing order, at
/// most [`MAX_LISTENER_CANDIDATES`] (the store keeps the [`MAX_LISTENER_TARGETS`] nearest the
/// viewport).
fn click_targets(listed: &Value) -> Vec<i64> {
    // Per node, a bit per click-like type it listens to, in listing order. Only click-like
    // types count towards a delegation root: a drawing pad also listens to moves, wheels, keys.
    let mut order: Vec<i64> = Vec::new();
    let mut kinds: HashMap<i64, u8> = HashMap::new();
    for l in listed
        .get("listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(id), Some(kind)) = (
            l.get("backendNodeId").and_then(Value::as_i64),
            l.get("type").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(bit) = CLICK_TYPES.iter().position(|t| *t == kind) else {
            continue;
        };
        *kinds.entry(id).or_insert_with(|| {
            order.push(id);
            0
        }) |= 1 << bit;
    }
    order
        .into_iter()
        .filter(|id| {
            kinds
                .get(id)
                .is_some_and(|m| m.count_ones() as usize <= MAX_LISTENER_TYPES)
        })
        .take(MAX_LISTENER_CANDIDATES)
        .collect()
}

impl Tab {
    /// The event listener types the browser itself knows for the element that `function` (a
    /// probe answering an element, or null) finds in `frame` (`DOMDebugger.getEventListeners`,
    /// depth 1, piercing shadow roots; JS-PROBES.md §13.2). `None` when the probe found no
    /// element. The remote object is always released.
    pub async fn event_listener_types(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<Option<Vec<String>>, CommandError> {
        let params = json!({
            "arguments": [{"value": arg}],
            "returnByValue": false,
            "objectGroup": "moonpilot-listeners",
        });
        let res = self.call_in_probe_world(frame, function, params).await?;
        if res.get("exceptionDetails").is_some() {
            return Err(CommandError::failed(format!(
                "listener probe threw: {}",
                exception_line(&res["exceptionDetails"])
            )));
        }
        let Some(object_id) = res
            .pointer("/result/objectId")
            .and_then(Value::as_str)
            .filter(|_| res.pointer("/result/subtype").and_then(Value::as_str) == Some("node"))
            .map(str::to_string)
        else {
            return Ok(None);
        };
        let listed = self.listener_types_of(frame, &object_id).await;
        let _ = self
            .call_in(
                frame,
                "Runtime.releaseObjectGroup",
                json!({"objectGroup": "moonpilot-listeners"}),
            )
            .await;
        Ok(Some(listed?))
    }

    /// The event types the browser holds listeners for on the remote node `object_id` of
    /// `frame`, whichever world added them (`DOMDebugger.getEventListeners`, depth 1, piercing
    /// shadow roots; sorted, unique).
    pub(crate) async fn listener_types_of(
        &self,
        frame: &FrameRef,
        object_id: &str,
    ) -> Result<Vec<String>, CommandError> {
        let listed = self
            .call_in(
                frame,
                "DOMDebugger.getEventListeners",
                json!({"objectId": object_id, "depth": 1, "pierce": true}),
            )
            .await?;
        let mut types: Vec<String> = listed
            .get("listeners")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|x| x.get("type").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        types.sort();
        types.dedup();
        Ok(types)
    }

    /// Finds the listener-only click targets of `frame` and stores them where the DOM index
    /// probe (`dom_index.js`, JS-PROBES.md §1.7 rules 7b/7d) reads them: the world-global
    /// WeakSets `__mpListen` (elements the browser holds a click-like listener for) and
    /// `__mpFramework` (elements with a React/Vue click handler on a page with a React/Vue
    /// root) of the probe's isolated world. Both sets are replaced on every call, so a set never
    /// outlives the read that made it unless the call fails (the caller then tells the probe
    /// not to read them).
    ///
    /// `DOMDebugger.getEventListeners` on the document (depth -1, piercing shadow roots and
    /// same-process frames; the document is taken in the frame's main world, see
    /// `listener_root.js`) lists every node's listeners with its backendNodeId; a node counts when it has one of
    /// [`CLICK_TYPES`] and at most [`MAX_LISTENER_TYPES`] listener types (more is a delegation
    /// root, e.g. a React 17+ root container); the document, html and body are dropped by the
    /// store. At most [`MAX_LISTENER_CANDIDATES`] nodes are resolved (`DOM.resolveNode` into the
    /// probe world, concurrently) and the [`MAX_LISTENER_TARGETS`] nearest the viewport are
    /// stored with one `Runtime.callFunctionOn`. The framework
    /// scan runs in the main world and only for frames of the page session (an out-of-process
    /// frame has no main-world context here). The whole call is bounded by `within`; its remote
    /// objects are released afterwards. A document of more than 10,000 elements is not listed
    /// (an error: see `listener_root.js`).
    pub async fn listener_targets(
        &self,
        frame: &FrameRef,
        within: Duration,
    ) -> Result<ListenerTargets, CommandError> {
        tokio::time::timeout(within, self.find_listener_targets(frame))
            .await
            .unwrap_or_else(|_| Err(CommandError::unanswered("listener targets", within)))
    }

    /// Frees the remote handles [`Tab::listener_targets`] made in `frame` (the stored set
    /// holds the elements themselves, so this may run while the reader reads). Bounded; a
    /// failure leaves them to the next release or to the document's end.
    pub async fn release_listener_targets(&self, frame: &FrameRef) {
        let release = self.call_in(
            frame,
            "Runtime.releaseObjectGroup",
            json!({"objectGroup": LISTENER_GROUP}),
        );
        let _ = tokio::time::timeout(LISTENER_RELEASE, release).await;
    }

    async fn find_listener_targets(
        &self,
        frame: &FrameRef,
    ) -> Result<ListenerTargets, CommandError> {
        let ctx = self.probe_context(frame, false).await?;
        // The document in the frame's main world (see listener_root.js for why not ours).
        let mut root_params = json!({
            "expression": js::LISTENER_ROOT_JS,
            "returnByValue": false,
            "objectGroup": LISTENER_GROUP,
        });
        match &frame.session {
            FrameSession::Page => {
                root_params["contextId"] = self.main_world(frame).await.ok_or_else(navigating)?;
            }
            // The session's default context is its root frame's main world; a frame below it
            // lists another document, whose nodes the store drops (not in its document).
            FrameSession::Remote { .. } => {}
        }
        let root = self.call_in(frame, "Runtime.evaluate", root_params).await?;
        let document = root
            .pointer("/result/objectId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                CommandError::failed(
                    "listener targets: no document, or more than 10,000 elements (not listed)",
                )
            })?
            .to_string();
        // The listeners and the framework traces are looked up at once (independent calls).
        let listing = self.call_in(
            frame,
            "DOMDebugger.getEventListeners",
            json!({"objectId": document, "depth": -1, "pierce": true}),
        );
        let tracing = async {
            match frame.session {
                FrameSession::Page => self
                    .framework_targets(frame, MAX_LISTENER_TARGETS)
                    .await
                    .unwrap_or_default(),
                FrameSession::Remote { .. } => Vec::new(),
            }
        };
        let (listed, traced) = tokio::join!(listing, tracing);
        let listener_ids = click_targets(&listed?);
        let framework_ids: Vec<i64> = traced
            .into_iter()
            .filter(|id| !listener_ids.contains(id))
            .take(MAX_LISTENER_TARGETS)
            .collect();
        let resolve = |id: i64| {
            let ctx = ctx.clone();
            async move {
                self.call_in(
                    frame,
                    "DOM.resolveNode",
                    json!({"backendNodeId": id, "executionContextId": ctx, "objectGroup": LISTENER_GROUP}),
                )
                .await
                .ok()
                .and_then(|r| r.pointer("/object/objectId").and_then(Value::as_str).map(str::to_string))
            }
        };
        let resolved = futures::future::join_all(
            listener_ids
                .iter()
                .chain(framework_ids.iter())
                .map(|&id| resolve(id)),
        )
        .await;
        let (listened, traced) = resolved.split_at(listener_ids.len().min(resolved.len()));
        let listeners: Vec<String> = listened.iter().flatten().cloned().collect();
        let traces: Vec<String> = traced.iter().flatten().cloned().collect();
        let mut arguments = vec![
            json!({"value": listeners.len()}),
            json!({"value": MAX_LISTENER_TARGETS}),
        ];
        arguments.extend(
            listeners
                .iter()
                .chain(traces.iter())
                .map(|id| json!({"objectId": id})),
        );
        let stored = self
            .call_in(
                frame,
                "Runtime.callFunctionOn",
                json!({
                    "functionDeclaration": js::LISTENER_STORE_JS,
                    "executionContextId": ctx,
                    "arguments": arguments,
                    "returnByValue": true,
                }),
            )
            .await?;
        let value = remote_value("Runtime.callFunctionOn", stored)?;
        let count = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        Ok(ListenerTargets {
            listeners: count("listeners"),
            traces: count("traces"),
        })
    }

    /// The backendNodeIds of the elements of `frame` (a frame of the page session) that carry
    /// a React/Vue click handler, at most `max` (`framework_targets.js` in the main world, then
    /// `DOM.describeNode` on each element it answered).
    async fn framework_targets(
        &self,
        frame: &FrameRef,
        max: usize,
    ) -> Result<Vec<i64>, CommandError> {
        let Some(ctx) = self.main_world(frame).await else {
            return Ok(Vec::new());
        };
        let found = self
            .call_in(
                frame,
                "Runtime.callFunctionOn",
                json!({
                    "functionDeclaration": js::FRAMEWORK_TARGETS_JS,
                    "executionContextId": ctx,
                    "arguments": [{"value": max}],
                    "returnByValue": false,
                    "objectGroup": LISTENER_GROUP,
                }),
            )
            .await?;
        let Some(array) = found.pointer("/result/objectId").and_then(Value::as_str) else {
            return Ok(Vec::new());
        };
        if found.pointer("/result/description").and_then(Value::as_str) == Some("Array(0)") {
            return Ok(Vec::new());
        }
        let props = self
            .call_in(
                frame,
                "Runtime.getProperties",
                json!({"objectId": array, "ownProperties": true}),
            )
            .await?;
        let elements: Vec<String> = props
            .get("result")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|p| {
                        p.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| n.parse::<usize>().is_ok())
                    })
                    .filter_map(|p| p.pointer("/value/objectId").and_then(Value::as_str))
                    .map(str::to_string)
                    .take(max)
                    .collect()
            })
            .unwrap_or_default();
        let described = futures::future::join_all(
            elements
                .iter()
                .map(|id| self.call_in(frame, "DOM.describeNode", json!({"objectId": id}))),
        )
        .await;
        Ok(described
            .into_iter()
            .filter_map(|r| r.ok()?.pointer("/node/backendNodeId")?.as_i64())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn click_targets_keep_click_like_nodes_and_drop_delegation_roots() {
        let l = |id: i64, kind: &str| json!({"type": kind, "backendNodeId": id});
        let mut listeners = vec![
            l(7, "pointerdown"),
            l(9, "keydown"),
            l(8, "click"),
            l(8, "click"),
            l(8, "mouseover"),
        ];
        // Node 3 listens to every click-like type: a delegation root (React's root container).
        for kind in CLICK_TYPES.iter().chain(&["keydown", "input"]) {
            listeners.push(l(3, kind));
        }
        // Node 5 is a drawing pad: seven types, but only three of them click-like.
        for kind in [
            "mousedown",
            "mousemove",
            "mouseup",
            "mouseout",
            "touchstart",
            "touchmove",
            "wheel",
        ] {
            listeners.push(l(5, kind));
        }
        listeners.push(json!({"type": "click"}));
        let ids = click_targets(&json!({ "listeners": listeners }));
        assert_eq!(
            ids,
            [7, 8, 5],
            "listing order; keydown-only 9 and the root 3 dropped, the pad kept"
        );
        let many: Vec<Value> = (0..1200).map(|i| l(i, "click")).collect();
        let capped = click_targets(&json!({ "listeners": many }));
        assert_eq!(capped.len(), MAX_LISTENER_CANDIDATES);
        assert_eq!(capped[999], 999);
        assert!(click_targets(&json!({})).is_empty());
    }
}
