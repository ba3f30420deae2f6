//! A tab's frames: the frame tree walked depth-first (`FrameRef`, with the session its commands
//! go to: the page's own, or an out-of-process iframe's on the raw connection) and where a
//! frame's content box sits in the viewport.
//!
//! A child of `tab.rs`, so it shares the tab's sessions. Running probes in a frame is
//! `probes.rs`; input at a frame's points is `input.rs`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::runtime::remote_value;
use super::{navigating, Tab};
use crate::browser::raw::RawConnection;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// Where commands for a frame go.
#[derive(Clone)]
pub enum FrameSession {
    /// The tab's own page session (main frame and in-process child frames).
    Page,
    /// An out-of-process iframe's session on the raw connection.
    Remote {
        /// The connection.
        conn: Arc<RawConnection>,
        /// The flat session id.
        session_id: String,
        /// The frame id of the session's root frame.
        root_frame_id: String,
    },
}

/// One frame of a tab, in depth-first order (main frame = ordinal 0).
#[derive(Clone)]
pub struct FrameRef {
    /// Position in the depth-first walk.
    pub ordinal: usize,
    /// CDP frame id.
    pub frame_id: String,
    /// Frame URL.
    pub url: String,
    /// Frame name (the iframe's `name`), possibly empty.
    pub name: String,
    /// Ordinal of the parent frame.
    pub parent: Option<usize>,
    /// Nesting depth (main = 0).
    pub depth: usize,
    /// The frame's security origin as CDP reports it.
    pub origin: String,
    /// Whether the frame runs in another renderer process (cross-site).
    pub out_of_process: bool,
    /// Where its commands go.
    pub session: FrameSession,
}

impl FrameRef {
    /// Whether this is the main frame.
    pub fn is_main(&self) -> bool {
        self.parent.is_none()
    }

    /// The frame as JSON (`list_frames` shape).
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.ordinal,
            "url": self.url,
            "name": self.name,
            "isMain": self.is_main(),
            "depth": self.depth,
            "parentIndex": self.parent,
            "outOfProcess": self.out_of_process,
        })
    }
}

/// Whether `origin` counts as the same origin as `main` (unknown counts as same, JS-PROBES §4).
pub fn same_origin(main: &str, origin: &str) -> bool {
    matches!(origin, "" | "://" | "null") || origin == main
}

/// How long an out-of-process frame may take to be attached and listed before it is skipped.
pub const REMOTE_FRAME_TIMEOUT: Duration = Duration::from_secs(3);

fn frame_ref(
    frame: &Value,
    ordinal: usize,
    parent: Option<usize>,
    depth: usize,
    session: FrameSession,
    out_of_process: bool,
) -> FrameRef {
    let s = |k: &str| {
        frame
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut url = s("url");
    if let Some(fragment) = frame.get("urlFragment").and_then(Value::as_str) {
        url.push_str(fragment);
    }
    FrameRef {
        ordinal,
        frame_id: s("id"),
        url,
        name: s("name"),
        parent,
        depth,
        origin: s("securityOrigin"),
        out_of_process,
        session,
    }
}

impl Tab {
    /// The main frame without asking the browser: enough for probes, input and the main
    /// session, which address it by session and not by frame id (its `frame_id`, `url`, `name`
    /// and `origin` are empty).
    pub fn main_frame_local(&self) -> FrameRef {
        FrameRef {
            ordinal: 0,
            frame_id: String::new(),
            url: String::new(),
            name: String::new(),
            parent: None,
            depth: 0,
            origin: String::new(),
            out_of_process: false,
            session: FrameSession::Page,
        }
    }

    /// The main frame (ordinal 0) without walking the tree.
    pub async fn main_frame(&self) -> Result<FrameRef, CommandError> {
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let frame = tree.pointer("/frameTree/frame").ok_or_else(navigating)?;
        Ok(frame_ref(frame, 0, None, 0, FrameSession::Page, false))
    }

    /// Every frame, depth-first from the main frame. With `include_remote`, out-of-process
    /// iframes are attached and walked too (their children follow the in-process children).
    pub async fn frames(&self, include_remote: bool) -> Result<Vec<FrameRef>, CommandError> {
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let root = tree.get("frameTree").cloned().ok_or_else(navigating)?;
        let iframe_targets = if include_remote {
            let targets = self.browser.call("Target.getTargets", json!({})).await?;
            targets
                .get("targetInfos")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter(|t| t["type"] == "iframe")
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        // An explicit stack keeps the walk iterative (async recursion would need boxing).
        let mut stack: Vec<(Value, Option<usize>, usize, FrameSession, bool)> =
            vec![(root, None, 0, FrameSession::Page, false)];
        while let Some((node, parent, depth, session, oop)) = stack.pop() {
            let Some(frame) = node.get("frame") else {
                continue;
            };
            let ordinal = out.len();
            let fref = frame_ref(frame, ordinal, parent, depth, session.clone(), oop);
            let frame_id = fref.frame_id.clone();
            out.push(fref);
            let mut children: Vec<(Value, Option<usize>, usize, FrameSession, bool)> = node
                .get("childFrames")
                .and_then(Value::as_array)
                .map(|kids| {
                    kids.iter()
                        .map(|k| (k.clone(), Some(ordinal), depth + 1, session.clone(), oop))
                        .collect()
                })
                .unwrap_or_default();
            for target in iframe_targets
                .iter()
                .filter(|t| t["parentFrameId"] == frame_id.as_str())
            {
                let Some(target_id) = target["targetId"].as_str() else {
                    continue;
                };
                // A frame whose renderer hangs must not hold up the whole walk.
                let remote =
                    tokio::time::timeout(REMOTE_FRAME_TIMEOUT, self.remote_tree(target_id))
                        .await
                        .unwrap_or_else(|_| {
                            Err(CommandError::new(
                                ErrorCode::ActionTimeout,
                                "the frame did not answer",
                            ))
                        });
                match remote {
                    Ok((remote_session, remote_root)) => {
                        children.push((remote_root, Some(ordinal), depth + 1, remote_session, true))
                    }
                    Err(e) => tracing::debug!("skipping out-of-process frame {target_id}: {e}"),
                }
            }
            // Reverse so that the first child is popped first (depth-first, in order).
            stack.extend(children.into_iter().rev());
        }
        Ok(out)
    }

    async fn remote_tree(&self, target_id: &str) -> Result<(FrameSession, Value), CommandError> {
        let conn = self.browser.raw().await?;
        let cached = self
            .remote_sessions
            .lock()
            .ok()
            .and_then(|m| m.get(target_id).cloned());
        let mut session_id = match cached {
            Some(s) => s,
            None => conn.attach(target_id).await?,
        };
        let tree = match conn
            .call(Some(&session_id), "Page.getFrameTree", json!({}))
            .await
        {
            Ok(t) => t,
            Err(_) => {
                // The cached session died with a navigation of the frame: attach again once.
                session_id = conn.attach(target_id).await?;
                conn.call(Some(&session_id), "Page.getFrameTree", json!({}))
                    .await?
            }
        };
        if let Ok(mut m) = self.remote_sessions.lock() {
            m.insert(target_id.to_string(), session_id.clone());
        }
        let root = tree.get("frameTree").cloned().ok_or_else(navigating)?;
        let root_frame_id = root
            .pointer("/frame/id")
            .and_then(Value::as_str)
            .unwrap_or(target_id)
            .to_string();
        Ok((
            FrameSession::Remote {
                conn,
                session_id,
                root_frame_id,
            },
            root,
        ))
    }

    /// The origin of `frame`'s content box in the main frame's viewport (CSS pixels), summing
    /// the offsets of every ancestor iframe element.
    pub async fn frame_offset(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
    ) -> Result<(f64, f64), CommandError> {
        self.offset_up_to(frames, frame, false).await
    }

    /// The origin of `frame`'s content box in the viewport of the session its input events go
    /// to (see [`Tab::mouse_click_in`]): the main viewport for frames of the page session, the
    /// out-of-process iframe's own viewport for frames of its session. `(0, 0)` for the main
    /// frame and for the root of an out-of-process session, without a CDP call.
    pub async fn offset_in_session(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
    ) -> Result<(f64, f64), CommandError> {
        self.offset_up_to(frames, frame, true).await
    }

    /// Sums the content-box origins of `frame`'s iframe elements up to the main frame, or with
    /// `session_root` up to the root frame of `frame`'s session.
    async fn offset_up_to(
        &self,
        frames: &[FrameRef],
        frame: &FrameRef,
        session_root: bool,
    ) -> Result<(f64, f64), CommandError> {
        #[derive(serde::Deserialize)]
        struct Origin {
            x: f64,
            y: f64,
        }
        let mut x = 0.0;
        let mut y = 0.0;
        let mut current = frame.clone();
        while let Some(parent_ordinal) = current.parent {
            if session_root
                && matches!(&current.session, FrameSession::Remote { root_frame_id, .. } if *root_frame_id == current.frame_id)
            {
                break;
            }
            let parent = frames
                .iter()
                .find(|f| f.ordinal == parent_ordinal)
                .ok_or_else(navigating)?;
            let owner = self
                .call_in(
                    parent,
                    "DOM.getFrameOwner",
                    json!({"frameId": current.frame_id}),
                )
                .await?;
            let backend = owner.get("backendNodeId").cloned().ok_or_else(navigating)?;
            // The iframe element is read from the isolated world, where the page's patches of
            // `getBoundingClientRect` and `getComputedStyle` are not seen.
            let mut resolve = json!({"backendNodeId": backend});
            if let Ok(ctx) = self.probe_context(parent, false).await {
                resolve["executionContextId"] = ctx;
            }
            let node = self.call_in(parent, "DOM.resolveNode", resolve).await?;
            let object_id = node
                .pointer("/object/objectId")
                .and_then(Value::as_str)
                .ok_or_else(navigating)?
                .to_string();
            let res = self
                .call_in(
                    parent,
                    "Runtime.callFunctionOn",
                    json!({"objectId": object_id, "functionDeclaration": js::FRAME_OFFSET_JS, "returnByValue": true}),
                )
                .await?;
            let origin: Origin = js::reply(remote_value("Runtime.callFunctionOn", res)?)?;
            x += origin.x;
            y += origin.y;
            current = parent.clone();
        }
        Ok((x, y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_origins_count_as_same() {
        assert!(same_origin("http://a", "://"));
        assert!(same_origin("http://a", "http://a"));
        assert!(!same_origin("http://a", "http://b"));
    }
}
