//! Tab methods of the index interactions (double click, hover, drag, keys, uploads): trusted
//! mouse and key events, and element handles for the CDP calls that need a node (file inputs,
//! event listeners).
//!
//! A child of `tab.rs`, so it shares the tab's sessions and probe worlds.

use serde_json::{json, Value};

use super::{remote_value, FrameRef, Tab};
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// One key of `Input.dispatchKeyEvent` (`key`, `code`, `windowsVirtualKeyCode`, the `text` it
/// inserts, modifier bits, `location` 1 for the left modifier keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStroke {
    /// The `key` value (`Enter`, `a`, `Control`).
    pub key: String,
    /// The physical `code` (`Enter`, `KeyA`, `ControlLeft`).
    pub code: String,
    /// The Windows virtual key code.
    pub key_code: i64,
    /// What the key inserts; empty for keys that insert nothing.
    pub text: String,
    /// For a modifier key: its bit (Alt 1, Control 2, Meta 4, Shift 8); 0 otherwise.
    pub modifiers: i64,
    /// 1 for the left modifier keys, 0 otherwise.
    pub location: i64,
}

/// A remote reference to an element in one frame (from [`Tab::element_object`]); release it
/// with [`Tab::release_element`].
pub struct ElementObject {
    frame: FrameRef,
    object_id: String,
}

/// How a mouse button event goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    /// `mousePressed`.
    Press,
    /// `mouseReleased`.
    Release,
}

impl Tab {
    /// A trusted left double click at (`x`, `y`) of `frame`'s session viewport (see
    /// [`Tab::mouse_click_in`]): move, press and release with click count 1, then 2, so the
    /// page sees two clicks and one `dblclick`.
    pub async fn mouse_double_click_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
    ) -> Result<(), CommandError> {
        self.mouse_move_in(frame, x, y).await?;
        for count in [1, 2] {
            self.mouse_button_in(frame, x, y, Button::Press, count)
                .await?;
            self.mouse_button_in(frame, x, y, Button::Release, count)
                .await?;
        }
        Ok(())
    }

    /// A trusted mouse move to (`x`, `y`) of `frame`'s session viewport, with `buttons` held
    /// (1 = left, as during a drag).
    pub async fn mouse_move_held_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
        buttons: u8,
    ) -> Result<(), CommandError> {
        let mut ev = json!({"type": "mouseMoved", "x": x, "y": y, "buttons": buttons});
        if buttons & 1 != 0 {
            ev["button"] = json!("left");
        }
        self.call_in(frame, "Input.dispatchMouseEvent", ev)
            .await
            .map(drop)
    }

    /// A trusted left button press or release at (`x`, `y`) of `frame`'s session viewport.
    pub async fn mouse_button_in(
        &self,
        frame: &FrameRef,
        x: f64,
        y: f64,
        button: Button,
        click_count: u8,
    ) -> Result<(), CommandError> {
        let (kind, buttons) = match button {
            Button::Press => ("mousePressed", 1),
            Button::Release => ("mouseReleased", 0),
        };
        self.call_in(
            frame,
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": click_count}),
        )
        .await
        .map(drop)
    }

    /// A trusted key press (`down`) or release of `stroke` with `modifiers` held, sent to the
    /// page (Chromium delivers it to the focused frame). A press that inserts text is a
    /// `keyDown` with that text, any other a `rawKeyDown`.
    pub async fn key_event(
        &self,
        stroke: &KeyStroke,
        modifiers: i64,
        down: bool,
    ) -> Result<(), CommandError> {
        let kind = match (down, stroke.text.is_empty()) {
            (false, _) => "keyUp",
            (true, true) => "rawKeyDown",
            (true, false) => "keyDown",
        };
        let mut ev = json!({
            "type": kind,
            "key": stroke.key,
            "code": stroke.code,
            "windowsVirtualKeyCode": stroke.key_code,
            "nativeVirtualKeyCode": stroke.key_code,
            "modifiers": modifiers,
            "location": stroke.location,
        });
        if down && !stroke.text.is_empty() {
            ev["text"] = json!(stroke.text);
            ev["unmodifiedText"] = json!(stroke.text);
        }
        self.call("Input.dispatchKeyEvent", ev).await.map(drop)
    }

    /// Calls `function` (a probe file that answers an element, or a failure envelope) in
    /// `frame`'s probe world and keeps the element as a remote object. A failure envelope
    /// keeps its code (the probe is read a second time, by value, to open it).
    pub async fn element_object(
        &self,
        frame: &FrameRef,
        function: &'static str,
        arg: Value,
    ) -> Result<ElementObject, CommandError> {
        let mut params = json!({
            "arguments": [{"value": arg}],
            "returnByValue": false,
        });
        let res = self
            .call_in_probe_world(frame, function, params.clone())
            .await?;
        let result = remote_value("Runtime.callFunctionOn", res.clone()).map(drop);
        result?;
        let object = &res["result"];
        if object["subtype"] == "node" {
            if let Some(id) = object["objectId"].as_str() {
                return Ok(ElementObject {
                    frame: frame.clone(),
                    object_id: id.to_string(),
                });
            }
        }
        if let Some(id) = object["objectId"].as_str() {
            let _ = self
                .call_in(frame, "Runtime.releaseObject", json!({"objectId": id}))
                .await;
        }
        params["returnByValue"] = json!(true);
        let res = self.call_in_probe_world(frame, function, params).await?;
        let value = remote_value("Runtime.callFunctionOn", res)?;
        js::reply::<Value>(value)?;
        Err(CommandError::failed("the probe answered no element"))
    }

    /// Releases an element object.
    pub async fn release_element(&self, element: ElementObject) {
        let _ = self
            .call_in(
                &element.frame,
                "Runtime.releaseObject",
                json!({"objectId": element.object_id}),
            )
            .await;
    }

    /// Gives a file input these files (`DOM.setFileInputFiles`, absolute paths): the page sees
    /// `input` and `change` as after a user's choice; the input needs no visibility.
    pub async fn set_input_files(
        &self,
        element: &ElementObject,
        files: &[String],
    ) -> Result<(), CommandError> {
        self.call_in(
            &element.frame,
            "DOM.setFileInputFiles",
            json!({"files": files, "objectId": element.object_id}),
        )
        .await
        .map(drop)
    }

    /// Listener evidence for the element (JS-PROBES.md §13): the event types the browser itself
    /// holds for it (`DOMDebugger.getEventListeners`, depth 1, pierce; sorted, unique), whichever
    /// world added them, and the framework traces `traces_js` finds on it in the page's main
    /// world (where framework expandos live). Either is `None` when it could not be read.
    pub async fn listener_evidence(
        &self,
        element: &ElementObject,
        traces_js: &'static str,
    ) -> (Option<Vec<String>>, Option<Value>) {
        let frame = &element.frame;
        let Ok(node) = self
            .call_in(
                frame,
                "DOM.describeNode",
                json!({"objectId": element.object_id}),
            )
            .await
        else {
            return (None, None);
        };
        let Some(backend) = node.pointer("/node/backendNodeId").cloned() else {
            return (None, None);
        };
        let Some(object_id) = self
            .call_in(frame, "DOM.resolveNode", json!({"backendNodeId": backend}))
            .await
            .ok()
            .and_then(|r| {
                r.pointer("/object/objectId")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        else {
            return (None, None);
        };
        let cdp = self.listener_types_of(frame, &object_id).await.ok();
        let traces = self
            .call_in(
                frame,
                "Runtime.callFunctionOn",
                json!({"objectId": object_id, "functionDeclaration": traces_js, "returnByValue": true}),
            )
            .await
            .and_then(|r| remote_value("Runtime.callFunctionOn", r))
            .ok()
            .filter(Value::is_object);
        let _ = self
            .call_in(
                frame,
                "Runtime.releaseObject",
                json!({"objectId": object_id}),
            )
            .await;
        (cdp, traces)
    }

    /// Downloads `url` with the browser's network stack (`Network.loadNetworkResource`, read
    /// through `IO.read`): redirects followed, 2xx only, at most `max_bytes`, 60 s in all.
    /// Answers the body and the served content type.
    pub async fn download(
        &self,
        url: &str,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, Option<String>), CommandError> {
        let work = async {
            let res = self
                .call(
                    "Network.loadNetworkResource",
                    json!({"frameId": self.target_id, "url": url,
                           "options": {"disableCache": true, "includeCredentials": true}}),
                )
                .await?;
            let r = &res["resource"];
            let status = r["httpStatusCode"].as_i64().unwrap_or(0);
            if r["success"] != true || !(200..300).contains(&status) {
                return Err(CommandError::new(
                    ErrorCode::NetworkError,
                    format!(
                        "downloading `{url}` failed: {}",
                        r["netErrorName"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("HTTP status {status}"))
                    ),
                )
                .with_details(json!({"httpStatus": status})));
            }
            let content_type = r["headers"].as_object().and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                    .and_then(|(_, v)| v.as_str().map(str::to_string))
            });
            let Some(stream) = r["stream"].as_str() else {
                return Ok((Vec::new(), content_type));
            };
            let mut body = Vec::new();
            let read = loop {
                let chunk = match self
                    .call("IO.read", json!({"handle": stream, "size": 1 << 20}))
                    .await
                {
                    Ok(c) => c,
                    Err(e) => break Err(e),
                };
                let data = chunk["data"].as_str().unwrap_or_default();
                if chunk["base64Encoded"] == true {
                    match crate::encoding::decode_base64(data) {
                        Some(bytes) => body.extend_from_slice(&bytes),
                        None => break Err(CommandError::failed("the download came back garbled")),
                    }
                } else {
                    body.extend_from_slice(data.as_bytes());
                }
                if body.len() > max_bytes {
                    break Err(CommandError::failed(format!(
                        "`{url}` is larger than the upload limit of {max_bytes} bytes"
                    )));
                }
                if chunk["eof"] == true {
                    break Ok(());
                }
            };
            let _ = self.call("IO.close", json!({"handle": stream})).await;
            read.map(|()| (body, content_type))
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), work)
            .await
            .unwrap_or_else(|_| {
                Err(CommandError::new(
                    ErrorCode::NetworkError,
                    format!("downloading `{url}` took longer than 60 s"),
                ))
            })
    }
}
