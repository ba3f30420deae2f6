//! One read of the element and the actionability checks built on it: [`Read`] (what a read
//! reports besides the state), [`ElementState`] (with [`FillKind`], how text gets in),
//! [`Target::inspect`] and [`Target::inspect_settled`] (the read, and the read a frame later that
//! says whether the box held still), [`Target::wait_actionable`] ([`Actionable`]: visible, stable
//! and enabled), [`Target::ready_point`] and [`Target::click_point`] (a point where a real pointer
//! reaches the element), and the `ELEMENT_OBSCURED` and disabled details those checks report.
//!
//! What is not here: finding the element (`find.rs`) and what is done once it is actionable
//! (`click.rs`, `input.rs`).

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use super::{Summary, Target};
use crate::commands::observe::PageMark;
use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// What one read of the element reports besides its state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Read {
    /// Find the click point (the hit test): [`ElementState::point`] and the fields after it.
    pub hit_test: bool,
    /// Take the page mark ([`ElementState::page`]) for the action's "before" observation.
    pub observe: bool,
    /// Leave the page's scroll position alone (reads): the element is not scrolled into view,
    /// so a hit test sees it where it is.
    pub keep_scroll: bool,
    /// Answer once the next animation frame began, with [`ElementState::stable`] (an action's
    /// first read, which then ends its actionability wait when the element held still).
    pub settle: bool,
}

impl Read {
    /// A read for a read-only command: no hit test, no page mark, no scrolling.
    pub const QUIET: Read = Read {
        hit_test: false,
        observe: false,
        keep_scroll: true,
        settle: false,
    };
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
    /// A click on it submits a form the browser validates (it is, or is inside, a submit
    /// control of such a form).
    #[serde(default)]
    pub submits: bool,
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
    /// From [`Target::inspect_settled`]: whether the box was exactly the same in the next
    /// animation frame (Playwright's stability), or, for an index with no animation running in
    /// its document, the same to the pixel as the snapshot's read of it; `None` from other
    /// reads.
    #[serde(default)]
    pub stable: Option<bool>,
    /// For an index action's first read with a trace: what codegen needs to find the element
    /// again (`lib.describe`), taken into `trace::ELEMENT_NOTE`.
    #[serde(default)]
    pub described: Option<Value>,
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

/// The outcome of [`Target::wait_actionable`].
pub enum Actionable {
    /// Visible, stable and enabled; the state holds the hit test of the last read.
    Ready(ElementState),
    /// Not so when the timeout passed: the last read and why (`ELEMENT_HIDDEN`,
    /// `ELEMENT_DISABLED`, or `ACTION_TIMEOUT` for an element that kept moving).
    NotReady(ElementState, CommandError),
}

impl Target {
    /// Reads the element (scrolling it into view when it is not fully in view) with one
    /// retry 300 ms later when it is missing or replaced (re-rendering).
    pub async fn inspect(&self, read: Read) -> Result<ElementState, CommandError> {
        self.inspect_with(read, false).await
    }

    /// [`Target::inspect`], answered once the next animation frame began, with
    /// [`ElementState::stable`] set.
    pub async fn inspect_settled(&self, read: Read) -> Result<ElementState, CommandError> {
        self.inspect_with(read, true).await
    }

    async fn inspect_with(
        &self,
        read: Read,
        frame_check: bool,
    ) -> Result<ElementState, CommandError> {
        let describe = self.describe.as_ref().filter(|n| n.wants());
        let args = json!({
            "hitTest": read.hit_test,
            "observe": read.observe,
            "keepScroll": read.keep_scroll,
            "frameCheck": frame_check || read.settle,
            "knownBox": self.snap.rect,
            "describe": describe.is_some(),
        });
        let mut state: ElementState = match self.probe("inspect", args.clone()).await {
            Err(e) if e.code == ErrorCode::StaleElement => {
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.probe("inspect", args).await
            }
            other => other,
        }?;
        if let (Some(note), Some(mut element)) = (describe, state.described.take()) {
            if !self.frame.is_main() {
                element["frame"] = json!({"url": self.frame.url, "name": self.frame.name});
            }
            note.set(element);
        }
        Ok(state)
    }

    /// Waits until the element is visible, enabled and stable (the same exact box in two
    /// consecutive animation frames, [`Target::inspect_settled`]), reading it again with `read`
    /// (from `first` on) until `timeout_ms` passed. A failed read (the element went away, the
    /// page navigated) ends the wait with its error.
    pub async fn wait_actionable(
        &self,
        first: ElementState,
        timeout_ms: u64,
        read: Read,
    ) -> Result<Actionable, CommandError> {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut state = first;
        loop {
            let visible = state.visible && state.has_box();
            let enabled = !state.disabled && !state.aria_disabled;
            if visible && enabled && state.stable == Some(true) {
                return Ok(Actionable::Ready(state));
            }
            if Instant::now() >= deadline {
                let (code, why) = if !visible {
                    (ErrorCode::ElementHidden, "is not visible")
                } else if !enabled {
                    (ErrorCode::ElementDisabled, "is disabled")
                } else {
                    (
                        ErrorCode::ActionTimeout,
                        "did not pass the stability check: it never held still for two \
                         consecutive animation frames",
                    )
                };
                let err =
                    CommandError::new(code, format!("{} {why} in {timeout_ms} ms", self.label));
                let err = if code == ErrorCode::ElementDisabled {
                    err.with_details(disabled_details(&state))
                } else {
                    err
                };
                return Ok(Actionable::NotReady(state, err));
            }
            state = if visible && enabled {
                // The read itself waits two frames: no pause between stability checks.
                self.inspect_settled(read).await?
            } else {
                // Slower polls while hidden or disabled; the page mark (a fingerprint of the
                // whole page) is taken only by a read that may end the wait.
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.inspect(Read {
                    observe: false,
                    ..read
                })
                .await?
            };
        }
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
            keep_scroll: false,
            settle: false,
        };
        match self.wait_actionable(first, timeout_ms, read).await? {
            Actionable::Ready(state) => {
                let point = self.click_point(&state)?;
                Ok((state, point))
            }
            Actionable::NotReady(_, e) => Err(e),
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
}

pub(super) fn disabled_details(state: &ElementState) -> Value {
    json!({"disabled": state.disabled, "ariaDisabled": state.aria_disabled})
}
