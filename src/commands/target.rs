//! Finding the element a command means, checking that it can be acted on, and the click and
//! input techniques built on those checks.
//!
//! [`find`] turns a [`Locator`] into a [`Target`] (its tab, its live frame, and the locator the
//! element probe resolves together with the identity the snapshot saw) and reads the element
//! once ([`ElementState`]). Every later probe call finds it again and checks that identity
//! again (`probe_lib.js` `locate`, the rule the snapshot's own check applies too), so an element
//! that was replaced is `STALE_ELEMENT`, never an action on another one.
//!
//! Actionability, as Playwright defines it, read in one probe call: attached (the probe finds
//! it), visible (a box, not `visibility:hidden`), stable (the same box in two reads a frame
//! apart), enabled (neither `disabled` nor `aria-disabled`), and receives events (a point inside
//! its own client rects where the hit test finds it or a descendant: [`ElementState::point`]).
//! [`Target::click`] and [`Target::input`] are the techniques of COMMANDS.md "Click modes" and
//! "Input modes"; `observe.rs` turns a click into its receipt. A click command is therefore
//!
//! ```text
//! let (target, first) = target::find(&task, &locator, mode.first_read()).await?;
//! let clicked = target.click(&task, first, mode, timeout_ms).await?;
//! Ok(observe::click_receipt(&task, &target, clicked).await)
//! ```
//!
//! and commands by selector, text, role or label differ only in their [`Locator`] (a variant,
//! its arm in [`find`] and its case in `probe_lib.js` `locate`).
//!
//! What is deliberately not here: reading params (handlers do it before anything runs) and the
//! observation of what an action changed (`observe.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::observe::{self, Observation, PageMark};
use crate::browser::tab::{ElementObject, FrameRef};
use crate::browser::task::{SnapElement, Task};
use crate::browser::Tab;
use crate::dom;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// What a command points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locator {
    /// An `[index]` of the task's latest snapshot; its frame is found again by id, URL or name
    /// (iframes that reloaded keep their indices).
    Index(u32),
}

/// What one read of the element reports besides its state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Read {
    /// Find the click point (the hit test): [`ElementState::point`] and the fields after it.
    pub hit_test: bool,
    /// Take the page mark ([`ElementState::page`]) for the action's "before" observation.
    pub observe: bool,
}

/// How text gets into a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FillKind {
    /// Typed (text-like inputs, textareas, content-editable elements).
    Text,
    /// Set through the value setter with input/change events: inputs of type color, date,
    /// time, datetime-local, month, range and week have no text to type into.
    Set,
}

/// An element as the probes describe it (JS-PROBES.md §8).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Upper-case tag name.
    pub tag: String,
    /// The `id` attribute.
    pub id: Option<String>,
    /// The class name, at most 120 characters.
    pub class_name: Option<String>,
    /// Collapsed inner text, at most 60 characters.
    pub text: String,
    /// Outer HTML, at most 300 characters (only the start tag for elements with many children).
    pub outer_html: String,
}

/// One read of the element (`element_probe.js` op `inspect`, after scrolling it into view).
/// Coordinates are CSS px in the viewport of the element's own frame.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElementState {
    /// Lower-case tag name.
    pub tag: String,
    /// The lower-cased `type` of a form control (`None` for other elements).
    #[serde(rename = "type")]
    pub control_type: Option<String>,
    /// Bounding box `[left, top, width, height]`, rounded.
    pub rect: [f64; 4],
    /// A non-empty box, and neither `visibility:hidden` nor `display:none`.
    pub visible: bool,
    /// Natively disabled (the `disabled` property or `:disabled`, e.g. inside a disabled
    /// fieldset): the browser delivers no click to it.
    pub disabled: bool,
    /// `aria-disabled="true"`: clicks reach it, but it says it will ignore them.
    pub aria_disabled: bool,
    /// `readonly` or `aria-readonly="true"`.
    pub read_only: bool,
    /// How text gets in; `None` when the element takes none.
    pub fill: Option<FillKind>,
    /// Computed `pointer-events: none`: real clicks go through it to what lies behind.
    pub pointer_events_none: bool,
    /// With [`Read::hit_test`]: a point inside the element's own client rects that the hit test
    /// resolves to the element or a descendant, where a real click reaches it.
    #[serde(default)]
    pub point: Option<[f64; 2]>,
    /// What the hit test found at `point` (or, without one, at the first point tried).
    #[serde(default)]
    pub hit: Option<Summary>,
    /// Without a point: the other element the first tried point hit.
    #[serde(default)]
    pub covered_by: Option<Summary>,
    /// Without a point, why: `no-box`, `outside-viewport`, `covered` or `no-element-at-point`.
    #[serde(default)]
    pub reason: Option<String>,
    /// With [`Read::observe`]: the page mark taken after the read.
    #[serde(default)]
    pub page: Option<PageMark>,
}

impl ElementState {
    /// Whether the box is non-empty.
    pub fn has_box(&self) -> bool {
        self.rect[2] > 0.0 && self.rect[3] > 0.0
    }

    /// Whether the element is a password field (the trace log masks what was typed into it).
    pub fn is_password(&self) -> bool {
        self.control_type.as_deref() == Some("password")
    }
}

/// An element found in its live frame.
pub struct Target {
    /// The tab it is in.
    pub tab: Arc<Tab>,
    /// Every frame of the tab when the element is in a child frame (for frame offsets); only
    /// the main frame otherwise.
    pub frames: Vec<FrameRef>,
    /// The frame it is in.
    pub frame: FrameRef,
    /// How messages name it: `element 3`.
    pub label: String,
    /// The element probe's `target` argument: `{path, expect: {tag, id, name}}`.
    spec: Value,
    /// The snapshot's element, for messages and stale recovery.
    snap: SnapElement,
    /// Whether stale recovery pointed the target at the element's new position.
    pub stale_recovered: bool,
}

fn stale(msg: String) -> CommandError {
    CommandError::new(ErrorCode::StaleElement, msg)
}

/// Finds `locator`'s element and reads it once with `read`. A missing frame or element, or
/// another element where the snapshot's was, is `STALE_ELEMENT` (after one retry 300 ms later,
/// for elements being re-rendered).
pub async fn find(
    task: &Task,
    locator: &Locator,
    read: Read,
) -> Result<(Target, ElementState), CommandError> {
    let target = match *locator {
        Locator::Index(index) => by_index(task, index).await?,
    };
    let state = target.inspect(read).await?;
    Ok((target, state))
}

/// [`find`] with stale-index recovery (COMMANDS.md, click): when the locator no longer leads
/// to the snapshot's element, a throw-away snapshot of its frame is read and the one element
/// with the same tag and text, if there is exactly one, is taken instead (`stale_recovered`).
/// The task's snapshot is not replaced; an ambiguous or missing match stays `STALE_ELEMENT`.
pub async fn find_or_recover(
    task: &Task,
    locator: &Locator,
    read: Read,
) -> Result<(Target, ElementState), CommandError> {
    let mut target = match *locator {
        Locator::Index(index) => by_index(task, index).await?,
    };
    match target.inspect(read).await {
        Ok(state) => Ok((target, state)),
        Err(e) if e.code == ErrorCode::StaleElement && target.recover().await => {
            let state = target.inspect(read).await?;
            target.stale_recovered = true;
            Ok((target, state))
        }
        Err(e) => Err(e),
    }
}

/// Resolves a snapshot index to its live frame (no page probe yet).
async fn by_index(task: &Task, index: u32) -> Result<Target, CommandError> {
    let tab = task.tab()?;
    let Some(snap) = task.snapshot() else {
        return Err(stale(format!(
            "index out of range: {index} (no usable snapshot: call get_browser_state first, or use a *_by_selector command)"
        )));
    };
    let Some(element) = snap.element(index).cloned() else {
        let n = snap.elements.len();
        return Err(stale(format!(
            "index out of range: {index} (the snapshot from {:.1} s ago has {n} elements, legal range 0..{}, in {} frame(s); re-read with get_browser_state)",
            snap.created.elapsed().as_secs_f64(),
            n.saturating_sub(1),
            snap.frames.len()
        )));
    };
    if snap.tab_target != tab.target_id() {
        return Err(stale(
            "the snapshot was taken in another tab; re-read with get_browser_state".to_string(),
        ));
    }
    let (frames, frame) = if element.frame == 0 {
        // The main frame is addressed by its session: no need to ask for the frame tree.
        let main = tab.main_frame_local();
        (vec![main.clone()], main)
    } else {
        let frames = tab.frames(true).await?;
        // Re-find the frame by id, then by a URL only one frame has, then by name: iframes
        // that reloaded keep their indices, and two copies of one widget are never confused.
        let found = snap
            .frames
            .iter()
            .find(|f| f.ordinal == element.frame)
            .and_then(|sf| {
                let by_url: Vec<&FrameRef> = frames
                    .iter()
                    .filter(|f| f.url == sf.url && !f.is_main())
                    .collect();
                frames
                    .iter()
                    .find(|f| f.frame_id == sf.frame_id)
                    .or_else(|| (by_url.len() == 1).then(|| by_url[0]))
                    .or_else(|| {
                        frames
                            .iter()
                            .find(|f| !sf.name.is_empty() && f.name == sf.name)
                    })
                    .cloned()
            });
        let frame = found.ok_or_else(|| {
            stale(format!(
                "the frame of index {index} is gone; re-read with get_browser_state"
            ))
        })?;
        (frames, frame)
    };
    Ok(Target {
        tab,
        frames,
        frame,
        label: format!("element {index}"),
        spec: index_spec(&element),
        snap: element,
        stale_recovered: false,
    })
}

/// The element probe's `target` for a snapshot element.
fn index_spec(element: &SnapElement) -> Value {
    json!({
        "path": element.locator,
        "expect": {"tag": element.tag, "id": element.id, "name": element.name},
    })
}

/// Click technique (COMMANDS.md "Click modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClickMode {
    /// Actionability checks and a real click; then a real mouse click for an element that
    /// kept moving, or JS dispatch for one that stayed hidden. Never on a disabled element
    /// nor through another one.
    Auto,
    /// Actionability checks and a real click, no fallback.
    Native,
    /// A real click at once, without waiting; still only where the element receives it.
    Mouse,
    /// Events dispatched to the element itself, whatever covers it (the caller's explicit
    /// bypass); refused only for a natively disabled element, which gets no click events.
    Js,
}

impl ClickMode {
    /// The mode named by a `mode` param (aliases of COMMANDS.md; anything else is auto).
    pub fn parse(raw: Option<&str>) -> ClickMode {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            Some("native" | "playwright") => ClickMode::Native,
            Some("mouse" | "real" | "coordinate" | "coords") => ClickMode::Mouse,
            Some("js" | "dispatch" | "force" | "event") => ClickMode::Js,
            _ => ClickMode::Auto,
        }
    }

    /// What the first read of a click in this mode needs: a hit test always; the page mark
    /// only where that read is also the last one before the click (modes that do not wait).
    pub fn first_read(self) -> Read {
        Read {
            hit_test: true,
            observe: matches!(self, ClickMode::Mouse | ClickMode::Js),
        }
    }
}

/// How a click went (the input of `observe::click_receipt`).
pub struct Clicked {
    /// The read the click was decided on: its point, hit and cover.
    pub state: ElementState,
    /// The page just before the click.
    pub before: Observation,
    /// The technique used: `native`, `mouse` or `js`.
    pub mode: &'static str,
    /// Why auto mode did not click natively, when it did not.
    pub fallback: Option<String>,
}

/// The outcome of [`Target::wait_actionable`].
pub enum Actionable {
    /// Visible, stable and enabled; the state holds the hit test of the last read.
    Ready(ElementState),
    /// Not so when the timeout passed: the last read and why (`ELEMENT_HIDDEN`,
    /// `ELEMENT_DISABLED`, or `ACTION_TIMEOUT` for an element that kept moving).
    NotReady(ElementState, CommandError),
}

/// Input technique (COMMANDS.md "Input modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// Real input when the field is visible with a box, else JS.
    Auto,
    /// Real input: typed text, or the value setter for fields without text.
    Fill,
    /// Key by key after the existing content.
    Type,
    /// The native value setter with input/change events.
    Js,
}

impl InputMode {
    /// The mode named by a `mode` param; an unknown name is `INVALID_ARGUMENT`.
    pub fn parse(raw: Option<&str>) -> Result<InputMode, CommandError> {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            None | Some("auto") => Ok(InputMode::Auto),
            Some("native" | "fill") => Ok(InputMode::Fill),
            Some("type" | "press") => Ok(InputMode::Type),
            Some("js" | "setvalue" | "set_value") => Ok(InputMode::Js),
            Some(other) => Err(CommandError::invalid(
                "mode",
                format!("param `mode`: unknown input mode `{other}`; allowed: auto, native, fill, type, press, js, setvalue"),
            )),
        }
    }
}

/// A value read back after an input (`probe_lib.js` `readBack`).
#[derive(Debug, Clone, Deserialize)]
struct ReadBack {
    /// The live value (`[redacted]` for passwords, at most 200 characters).
    value: Option<String>,
    /// Its full length.
    length: Option<usize>,
    /// Whether it is what was sent (as the browser itself normalises it).
    matches: bool,
}

/// The answer of the `focus` op.
#[derive(Debug, Clone, Deserialize)]
struct Focused {
    focused: bool,
    /// Length of the value before typing.
    length: Option<usize>,
}

/// The answer of the `js_click` op.
#[derive(Debug, Clone, Deserialize)]
struct JsClicked {
    #[allow(dead_code)] // Read to check the reply's shape; the receipt names the hit instead.
    tag: String,
}

impl Target {
    /// Calls op `op` of the element probe on this target (`args` an object).
    async fn probe<T: DeserializeOwned>(
        &self,
        op: &str,
        mut args: Value,
    ) -> Result<T, CommandError> {
        args["op"] = json!(op);
        args["target"] = self.spec.clone();
        self.tab
            .call_probe(&self.frame, js::ELEMENT_PROBE_JS, args)
            .await
            .map_err(|e| self.explain(e))
    }

    /// Puts the target's name into a probe's `STALE_ELEMENT`.
    fn explain(&self, e: CommandError) -> CommandError {
        if e.code != ErrorCode::StaleElement {
            return e;
        }
        let details = e.details.as_deref().cloned().unwrap_or(Value::Null);
        if details["reason"] == "changed" {
            let found = details["found"]["tag"]
                .as_str()
                .unwrap_or("?")
                .to_lowercase();
            return stale(format!(
                "{} now resolves to another element (<{found}>), not the snapshot's <{}>; re-read with get_browser_state",
                self.label, self.snap.tag
            ))
            .with_details(json!({"staleReason": "changed", "found": details["found"]}));
        }
        stale(format!(
            "{} (<{}>) is no longer in the page; re-read with get_browser_state",
            self.label, self.snap.tag
        ))
        .with_details(json!({"staleReason": "gone"}))
    }

    /// Reads the element (scrolling it into view when it is not fully in view) with one
    /// retry 300 ms later when it is missing or replaced (re-rendering).
    pub async fn inspect(&self, read: Read) -> Result<ElementState, CommandError> {
        let args = json!({"hitTest": read.hit_test, "observe": read.observe});
        match self.probe("inspect", args.clone()).await {
            Err(e) if e.code == ErrorCode::StaleElement => {
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.probe("inspect", args).await
            }
            other => other,
        }
    }

    /// Reads a throw-away snapshot of the target's frame and, when exactly one element has the
    /// snapshot element's tag and non-empty text, points the target at it.
    async fn recover(&mut self) -> bool {
        let args = json!({"doHighlightElements": false, "viewportExpansion": -1, "highlightIndexStart": 0});
        let Ok(raw) = self
            .tab
            .call_probe::<Value>(&self.frame, js::DOM_INDEX_JS, args)
            .await
        else {
            return false;
        };
        let Ok(dom) = dom::parse_frame(raw) else {
            return false;
        };
        let mut matches = dom
            .elements
            .iter()
            .filter(|e| e.tag == self.snap.tag && e.text == self.snap.text && !e.text.is_empty());
        match (matches.next(), matches.next()) {
            (Some(only), None) => {
                self.snap.locator = only.xpath.clone();
                // Tag and text identify it now; the id and name it has are its own.
                self.snap.id = only.id.clone();
                self.snap.name = only.name.clone();
                self.spec = index_spec(&self.snap);
                true
            }
            _ => false,
        }
    }

    /// Waits until the element is visible, enabled and stable (the same box in two reads a
    /// frame apart), reading it again with `read` (from `first` on) until `timeout_ms` passed.
    /// A failed read (the element went away, the page navigated) ends the wait with its error.
    pub async fn wait_actionable(
        &self,
        first: ElementState,
        timeout_ms: u64,
        read: Read,
    ) -> Result<Actionable, CommandError> {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut state = first;
        let mut last_rect: Option<[f64; 4]> = None;
        loop {
            let visible = state.visible && state.has_box();
            let enabled = !state.disabled && !state.aria_disabled;
            if visible && enabled && last_rect == Some(state.rect) {
                return Ok(Actionable::Ready(state));
            }
            if Instant::now() >= deadline {
                let (code, why) = if !visible {
                    (ErrorCode::ElementHidden, "is not visible")
                } else if !enabled {
                    (ErrorCode::ElementDisabled, "is disabled")
                } else {
                    (ErrorCode::ActionTimeout, "kept moving")
                };
                let err =
                    CommandError::new(code, format!("{} {why} after {timeout_ms} ms", self.label));
                let err = if code == ErrorCode::ElementDisabled {
                    err.with_details(disabled_details(&state))
                } else {
                    err
                };
                return Ok(Actionable::NotReady(state, err));
            }
            last_rect = Some(state.rect);
            // One frame (about 16 ms) apart for the stability check; slower polls while the
            // element is hidden or disabled.
            let pause = if visible && enabled { 16 } else { 100 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            // The page mark (a fingerprint of the whole page) is taken only by the read that
            // may end the wait; polls of a hidden or disabled element skip it.
            let poll = if visible && enabled {
                read
            } else {
                Read {
                    observe: false,
                    ..read
                }
            };
            state = self.inspect(poll).await?;
        }
    }

    /// The point to click, from a read with a hit test: `ELEMENT_HIDDEN` without a box (or
    /// outside the viewport after scrolling), else `ELEMENT_OBSCURED` with `coveredBy` when no
    /// point of the element receives events.
    pub fn click_point(&self, state: &ElementState) -> Result<[f64; 2], CommandError> {
        if let Some(point) = state.point {
            return Ok(point);
        }
        match state.reason.as_deref() {
            Some("outside-viewport") => Err(CommandError::new(
                ErrorCode::ElementHidden,
                format!(
                    "{} is outside the viewport, and scrolling did not bring it in",
                    self.label
                ),
            )),
            Some("covered" | "no-element-at-point") => Err(self.obscured(state)),
            _ => Err(CommandError::new(
                ErrorCode::ElementHidden,
                format!("{} has no box to click", self.label),
            )),
        }
    }

    fn obscured(&self, state: &ElementState) -> CommandError {
        let cover = state
            .covered_by
            .as_ref()
            .map(|c| format!("<{}>", c.tag.to_lowercase()));
        let (msg, hint) = if state.pointer_events_none {
            (
                format!(
                    "{} does not receive clicks (pointer-events: none): they land on {}",
                    self.label,
                    cover.as_deref().unwrap_or("nothing")
                ),
                "the page made the element ignore the pointer (often while it is inactive); wait for it to change, or use mode=js if you really mean to bypass it",
            )
        } else {
            (
                format!(
                    "{} is covered by {} at every point tried; a click would not reach it",
                    self.label,
                    cover.as_deref().unwrap_or("nothing that can be hit")
                ),
                "close the overlay first (get_modals / close_modal), or use mode=js if you really mean to bypass it",
            )
        };
        CommandError::new(ErrorCode::ElementObscured, msg).with_details(json!({
            "coveredBy": state.covered_by,
            "coveredHint": hint,
            "mouseSkipped": "target-covered",
            "hit": state.hit,
            "pointerEventsNone": state.pointer_events_none,
            "hitReason": state.reason,
        }))
    }

    fn disabled(&self, state: &ElementState) -> CommandError {
        CommandError::new(
            ErrorCode::ElementDisabled,
            format!("{} is disabled; a click would not reach it", self.label),
        )
        .with_details(disabled_details(state))
    }

    /// `state` with a page mark, reading the element again when it has none.
    async fn with_mark(&self, state: ElementState) -> Result<ElementState, CommandError> {
        if state.page.is_some() {
            return Ok(state);
        }
        self.inspect(Read {
            hit_test: true,
            observe: true,
        })
        .await
    }

    /// The "before" observation from the page mark of a read (see [`Target::with_mark`]).
    async fn before(&self, task: &Task, state: &ElementState) -> Observation {
        let mark = state
            .page
            .clone()
            .ok_or_else(|| CommandError::failed("the read before the action took no page mark"));
        observe::observation(task, self, mark).await
    }

    /// A trusted left click at a point of the element's frame viewport, sent to the session of
    /// that frame (an out-of-process iframe gets it in its own coordinates, so it is not lost
    /// when the tab is in the background).
    pub async fn mouse_click(&self, point: [f64; 2]) -> Result<(), CommandError> {
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        self.tab
            .mouse_click_in(&self.frame, point[0] + ox, point[1] + oy)
            .await
    }

    /// Events dispatched to the element itself (JS-PROBES.md §9 JS click).
    pub async fn js_click(&self) -> Result<(), CommandError> {
        self.probe::<JsClicked>("js_click", json!({}))
            .await
            .map(drop)
    }

    /// Clicks in `mode`, starting from `first` (a read made with `mode.first_read()`), and
    /// takes the "before" observation from the last read before the click. A click that
    /// would not reach the element is never made: `ELEMENT_DISABLED`, `ELEMENT_OBSCURED`
    /// (with `coveredBy`), `ELEMENT_HIDDEN`; only mode js dispatches through a cover.
    pub async fn click(
        &self,
        task: &Task,
        first: ElementState,
        mode: ClickMode,
        timeout_ms: u64,
    ) -> Result<Clicked, CommandError> {
        self.press(task, first, mode, timeout_ms, Press::Single)
            .await
    }

    /// [`Target::click`] with a single or a double click.
    pub async fn press(
        &self,
        task: &Task,
        first: ElementState,
        mode: ClickMode,
        timeout_ms: u64,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        let observed = Read {
            hit_test: true,
            observe: true,
        };
        match mode {
            ClickMode::Js => self.dispatch(task, first, None, press).await,
            ClickMode::Mouse => {
                if first.disabled {
                    return Err(self.disabled(&first));
                }
                let state = self.with_mark(first).await?;
                let point = self.click_point(&state)?;
                self.real_click(task, state, point, "mouse", None, press)
                    .await
            }
            ClickMode::Auto | ClickMode::Native => {
                match self.wait_actionable(first, timeout_ms, observed).await? {
                    Actionable::Ready(state) => {
                        let state = self.with_mark(state).await?;
                        match self.click_point(&state) {
                            Ok(point) => self.real_click(task, state, point, "native", None, press)
                                    .await,
                            Err(e)
                                if mode == ClickMode::Auto
                                    && e.code == ErrorCode::ElementHidden =>
                            {
                                self.dispatch(task, state, Some(e.msg), press).await
                            }
                            Err(e) => Err(e),
                        }
                    }
                    Actionable::NotReady(_, e)
                        if mode == ClickMode::Native || e.code == ErrorCode::ElementDisabled =>
                    {
                        Err(e)
                    }
                    Actionable::NotReady(state, e) if e.code == ErrorCode::ElementHidden => {
                        self.dispatch(task, state, Some(e.msg), press).await
                    }
                    Actionable::NotReady(state, e) => {
                        // It kept moving: a real click where it is now, if it receives one.
                        let state = self.with_mark(state).await?;
                        let point = self.click_point(&state)?;
                        self.real_click(task, state, point, "mouse", Some(e.msg), press)
                            .await
                    }
                }
            }
        }
    }

    async fn real_click(
        &self,
        task: &Task,
        state: ElementState,
        point: [f64; 2],
        mode: &'static str,
        fallback: Option<String>,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        let before = self.before(task, &state).await;
        match press {
            Press::Single => self.mouse_click(point).await?,
            Press::Double => self.mouse_double_click(point).await?,
        }
        Ok(Clicked {
            state,
            before,
            mode,
            fallback,
        })
    }

    /// The JS click of mode js and of auto's fallback for hidden elements.
    async fn dispatch(
        &self,
        task: &Task,
        state: ElementState,
        fallback: Option<String>,
        press: Press,
    ) -> Result<Clicked, CommandError> {
        if state.disabled {
            return Err(self.disabled(&state));
        }
        let state = self.with_mark(state).await?;
        let before = self.before(task, &state).await;
        match press {
            Press::Single => self.js_click().await?,
            Press::Double => self.js_double_click().await?,
        }
        Ok(Clicked {
            state,
            before,
            mode: "js",
            fallback,
        })
    }

    /// Checks that the field accepts text (COMMANDS.md "Input modes").
    fn check_editable(&self, state: &ElementState) -> Result<(), CommandError> {
        if state.disabled || state.aria_disabled {
            return Err(CommandError::new(
                ErrorCode::ElementDisabled,
                format!("{} is disabled", self.label),
            )
            .with_details(disabled_details(state)));
        }
        if state.read_only {
            return Err(CommandError::new(
                ErrorCode::ElementReadOnly,
                format!("{} is read-only", self.label),
            ));
        }
        if state.fill.is_none() {
            return Err(CommandError::new(
                ErrorCode::ElementNotEditable,
                format!(
                    "{} (<{}{}>) does not accept text",
                    self.label,
                    state.tag,
                    state
                        .control_type
                        .as_deref()
                        .filter(|_| state.tag == "input")
                        .map(|t| format!(" type={t}"))
                        .unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }

    /// Replaces the field's value with `text` (input_text) and checks by reading it back: a
    /// value that differs afterwards is `ACTION_FAILED` with the read-back in `data`. Answers
    /// the result data (`mode`, `committed`, notes).
    pub async fn input(
        &self,
        state: &ElementState,
        text: &str,
        mode: InputMode,
    ) -> Result<Value, CommandError> {
        let real = match mode {
            InputMode::Auto => state.visible && state.has_box(),
            InputMode::Fill | InputMode::Type => true,
            InputMode::Js => false,
        };
        let mut data = if !real {
            let back = self
                .set_value(text, state.fill == Some(FillKind::Set), false)
                .await?;
            self.verify(state, &back, text, "js")?;
            json!({
                "mode": "js",
                "committed": false,
                "note": "the value was set through the DOM setter with input/change events",
                "hint": "framework models (Vue/React) may not see it; for visible fields use mode=native",
            })
        } else {
            self.check_editable(state)?;
            match (mode, state.fill) {
                (InputMode::Type, _) => {
                    self.type_after(state, text).await?;
                    json!({"mode": "type", "committed": true})
                }
                (_, Some(FillKind::Set)) => {
                    let back = self.set_value(text, true, true).await?;
                    self.verify(state, &back, text, "fill")?;
                    json!({
                        "mode": "fill",
                        "committed": true,
                        "setter": true,
                        "note": format!("an input of type {} has no text to type: its value was set with input/change events, as Playwright's fill does", state.control_type.as_deref().unwrap_or("?")),
                    })
                }
                _ => {
                    let focused: Focused = self.probe("focus", json!({"at": "all"})).await?;
                    self.require_focus(&focused)?;
                    self.tab.insert_text(text).await?;
                    let back: ReadBack = self
                        .probe("read_back", json!({"text": text, "mode": "exact"}))
                        .await?;
                    self.verify(state, &back, text, "fill")?;
                    json!({"mode": "fill", "committed": true})
                }
            }
        };
        if state.is_password() {
            data["password"] = json!(true);
        }
        Ok(data)
    }

    /// Types `text` key by key after the field's content (type_text, input_text mode type),
    /// checking the editable state first and the read-back after (the field must end with the
    /// text, and have grown by exactly its length).
    pub async fn type_after(&self, state: &ElementState, text: &str) -> Result<(), CommandError> {
        self.check_editable(state)?;
        if state.fill == Some(FillKind::Set) {
            return Err(CommandError::new(
                ErrorCode::ElementNotEditable,
                format!(
                    "{} (<input type={}>) has no text to type into; input_text sets its value",
                    self.label,
                    state.control_type.as_deref().unwrap_or("?")
                ),
            ));
        }
        let focused: Focused = self.probe("focus", json!({"at": "end"})).await?;
        self.require_focus(&focused)?;
        self.tab.type_keys(text).await?;
        let back: ReadBack = self
            .probe(
                "read_back",
                json!({"text": text, "mode": "append", "before": focused.length}),
            )
            .await?;
        self.verify(state, &back, text, "type")
    }

    fn require_focus(&self, focused: &Focused) -> Result<(), CommandError> {
        if focused.focused {
            return Ok(());
        }
        Err(CommandError::failed(format!(
            "{} did not take the focus, so typed text would go elsewhere; nothing was typed",
            self.label
        )))
    }

    /// The value setter with input/change events; `validate` refuses (INVALID_ARGUMENT, the
    /// field untouched) a value the browser would change or drop, `focus` focuses first.
    async fn set_value(
        &self,
        text: &str,
        validate: bool,
        focus: bool,
    ) -> Result<ReadBack, CommandError> {
        self.probe(
            "set_value",
            json!({"value": text, "validate": validate, "focus": focus}),
        )
        .await
        .map_err(|e| {
            if e.code != ErrorCode::InvalidArgument {
                return e;
            }
            let details = e.details.as_deref().cloned();
            let err = CommandError::invalid("text", format!("param `text`: {}", e.msg));
            match details {
                Some(d) => err.with_details(d),
                None => err,
            }
        })
    }

    /// A read-back that is not what was sent is `ACTION_FAILED`, with what the field shows
    /// (`mode` says how it was sent; for `type` the text was to be appended).
    fn verify(
        &self,
        state: &ElementState,
        back: &ReadBack,
        text: &str,
        mode: &str,
    ) -> Result<(), CommandError> {
        if back.matches {
            return Ok(());
        }
        let password = state.is_password();
        let shown = match (&back.value, back.length) {
            (Some(_), Some(n)) if password => format!("a value of {n} characters"),
            (Some(v), _) => format!("`{v}`"),
            (None, _) => "no value".to_string(),
        };
        Err(CommandError::failed(format!(
            "{} shows {shown} after the input, not the text that was sent: the page or the browser changed or refused it",
            self.label
        ))
        .with_details(json!({
            "readBack": back.value,
            "readBackLength": back.length,
            "expected": if password { "[redacted]" } else { text },
            "inputMode": mode,
            "hint": "read the field before retrying; input masks, max lengths and formats change what a field accepts",
        })))
    }
}

fn disabled_details(state: &ElementState) -> Value {
    json!({"disabled": state.disabled, "ariaDisabled": state.aria_disabled})
}

/// The box `[x, y, width, height]` of snapshot element `index` in the main viewport, after
/// scrolling it into view, with its tab (for an element image).
pub(crate) async fn element_box(
    task: &Task,
    index: u32,
) -> Result<(Arc<Tab>, [f64; 4]), CommandError> {
    let (target, state) = find(task, &Locator::Index(index), Read::default()).await?;
    let offset = target
        .tab
        .frame_offset(&target.frames, &target.frame)
        .await?;
    let rect = shifted_box(state.rect, offset).ok_or_else(|| {
        CommandError::new(
            ErrorCode::ElementHidden,
            format!("element {index} has no box to capture"),
        )
    })?;
    Ok((target.tab.clone(), rect))
}

/// A probe's `rect` (`[x, y, width, height]` in its frame) moved by the frame's `offset` into
/// the main viewport; `None` when it is missing or empty.
pub(crate) fn shifted_box(rect: [f64; 4], offset: (f64, f64)) -> Option<[f64; 4]> {
    let [x, y, w, h] = rect;
    (w > 0.0 && h > 0.0).then_some([x + offset.0, y + offset.1, w, h])
}

// ---- Index interactions: double clicks, hover, drags and the element ops of
// `element_actions.js` (check state, focus, drop-downs, scrolling, file inputs). ----

/// One click or two (a double click: two clicks and a `dblclick`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// One click.
    Single,
    /// Two clicks, the second with click count 2, and a `dblclick`.
    Double,
}

impl Target {
    /// `point` (in the element's frame viewport) in the viewport of the session its input
    /// events go to (see [`Target::mouse_click`]).
    pub async fn session_point(&self, point: [f64; 2]) -> Result<[f64; 2], CommandError> {
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        Ok([point[0] + ox, point[1] + oy])
    }

    /// A trusted double click at a point of the element's frame viewport.
    pub async fn mouse_double_click(&self, point: [f64; 2]) -> Result<(), CommandError> {
        let [x, y] = self.session_point(point).await?;
        self.tab.mouse_double_click_in(&self.frame, x, y).await
    }

    /// JS click twice and a `dblclick`, dispatched to the element itself.
    async fn js_double_click(&self) -> Result<(), CommandError> {
        self.act::<JsClicked>("js_dblclick", json!({}))
            .await
            .map(drop)
    }

    /// Calls op `op` of `element_actions.js` on this target (`args` an object).
    pub async fn act<T: DeserializeOwned>(
        &self,
        op: &str,
        mut args: Value,
    ) -> Result<T, CommandError> {
        args["op"] = json!(op);
        args["target"] = self.spec.clone();
        self.tab
            .call_probe(&self.frame, js::ELEMENT_ACTIONS_JS, args)
            .await
            .map_err(|e| self.explain(e))
    }

    /// The element that op `op` of `element_actions.js` answers for this target (such as its
    /// file input), as a remote object.
    pub async fn object(&self, op: &str) -> Result<ElementObject, CommandError> {
        let args = json!({"op": op, "target": self.spec});
        self.tab
            .element_object(&self.frame, js::ELEMENT_ACTIONS_JS, args)
            .await
            .map_err(|e| self.explain(e))
    }

    /// Waits until the element is actionable (visible, stable, enabled) within `timeout_ms`
    /// and answers the read with the point where a real pointer reaches it (no page mark).
    pub async fn ready_point(
        &self,
        first: ElementState,
        timeout_ms: u64,
    ) -> Result<(ElementState, [f64; 2]), CommandError> {
        let read = Read {
            hit_test: true,
            observe: false,
        };
        match self.wait_actionable(first, timeout_ms, read).await? {
            Actionable::Ready(state) => {
                let point = self.click_point(&state)?;
                Ok((state, point))
            }
            Actionable::NotReady(_, e) => Err(e),
        }
    }

    /// Moves the real mouse onto the element once it is actionable; answers the read (its
    /// `hit` is what the pointer is over).
    pub async fn hover(
        &self,
        first: ElementState,
        timeout_ms: u64,
    ) -> Result<ElementState, CommandError> {
        let (state, point) = self.ready_point(first, timeout_ms).await?;
        let [x, y] = self.session_point(point).await?;
        self.tab.mouse_move_in(&self.frame, x, y, 0).await?;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_aliases() {
        assert_eq!(ClickMode::parse(Some("dispatch")), ClickMode::Js);
        assert_eq!(ClickMode::parse(Some("COORDS")), ClickMode::Mouse);
        assert_eq!(ClickMode::parse(Some("playwright")), ClickMode::Native);
        assert_eq!(ClickMode::parse(Some("whatever")), ClickMode::Auto);
        assert_eq!(ClickMode::parse(None), ClickMode::Auto);
        assert_eq!(InputMode::parse(Some("set_value")).unwrap(), InputMode::Js);
        assert_eq!(InputMode::parse(Some("press")).unwrap(), InputMode::Type);
        assert!(InputMode::parse(Some("paste")).is_err());
    }

    #[test]
    fn only_modes_that_click_at_once_observe_on_the_first_read() {
        assert!(ClickMode::Js.first_read().observe);
        assert!(ClickMode::Mouse.first_read().observe);
        assert!(!ClickMode::Auto.first_read().observe);
        assert!(ClickMode::Auto.first_read().hit_test);
    }

    #[test]
    fn shifted_boxes_need_a_size() {
        assert_eq!(
            shifted_box([1.0, 2.0, 3.0, 4.0], (10.0, 20.0)),
            Some([11.0, 22.0, 3.0, 4.0])
        );
        assert_eq!(shifted_box([1.0, 2.0, 0.0, 4.0], (0.0, 0.0)), None);
    }
}
