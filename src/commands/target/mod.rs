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
//! "Input modes"; `click_receipt.rs` turns a click into its receipt. A click command is therefore
//!
//! ```text
//! let (target, first) = target::find(&task, &locator, mode.first_read()).await?;
//! let clicked = target.click(&task, first, mode, timeout_ms).await?;
//! Ok(click_receipt::click_receipt(&task, &target, clicked).await)
//! ```
//!
//! and commands by selector, text, role or label differ only in their [`Locator`] (a variant,
//! its arm in [`find`] and its case in `probe_lib.js` `locate`).
//!
//! Each concern is a file of `target/` named for it: `locator.rs` (the [`Locator`] and reading
//! locator params), `find.rs` (finding the element: [`find`], [`find_or_recover`], [`count`]),
//! `actionable.rs` (the read, [`ElementState`], and the actionability checks), `click.rs` (the
//! click, hover and double-click techniques), `input.rs` (the input techniques, every fill read
//! back) and `element_ops.rs` (the ops of `element_actions.js` and element boxes). This file holds
//! [`Target`] itself: how every later probe call reaches its element again (`probe`, `call`, with
//! `STALE_ELEMENT` naming it), its page's observation, and the receipt fields naming it; it
//! re-exports every public item, so `target::X` paths name them all.
//!
//! What is deliberately not here: reading a command's own params (handlers do it before anything
//! runs; `locator.rs` only gives them the shared locator readers) and the observation of what an
//! action changed (`observe.rs`).

pub(crate) mod actionable;
mod click;
mod element_ops;
pub(crate) mod find;
mod input;
pub(crate) mod locator;

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

pub use self::actionable::{Actionable, ElementState, FillKind, Read};
pub use self::click::{ClickMode, Clicked, Press};
pub(crate) use self::element_ops::{element_box, locator_box, shifted_box};
pub use self::find::{count, find, find_or_recover, locate_frame};
pub use self::input::InputMode;
pub use self::locator::{
    check_role, index_or_selector, index_value, selector_param, strict_param, Locator, Pick, Takes,
    ARIA_ROLES, FRAME_PARAM, INDEX_OR, NTH_PARAM, SELECTOR_OR,
};
pub use super::observe::Summary;
use super::observe::{self, Observation, PageMark};
use crate::browser::tab::FrameRef;
use crate::browser::task::{SnapElement, Task};
use crate::browser::Tab;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

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
    /// The snapshot's element (for a query: the chosen element as first seen), for messages
    /// and stale recovery.
    snap: SnapElement,
    /// Whether stale recovery pointed the target at the element's new position.
    pub stale_recovered: bool,
    /// For a locator other than an index: what the choice saw (`matched`, `chosenIndex`,
    /// `scanned`, `explicitNth`, `visibleMatched`, `hiddenMatchNote`, `selectorNote`; for text
    /// `textMatch`, `textLength`, `textCandidates`, `textClickable`, `textMatchNote`), to be
    /// merged into the receipt.
    pub located: Option<serde_json::Map<String, Value>>,
    /// For a locator other than an index: the chosen element as first seen (its `text` at
    /// most 60 characters; [`Target::chosen_text`] has up to 200).
    pub chosen: Option<Summary>,
    /// How receipts name the target (`Locator::describe`).
    pub described: String,
    /// The query of a locator other than an index (stale messages differ).
    query: Option<Value>,
    /// For an index action with a trace: where its first read puts the element's description
    /// (`trace::ELEMENT_NOTE`).
    describe: Option<crate::trace::ElementNote>,
}

fn stale(msg: String) -> CommandError {
    CommandError::new(ErrorCode::StaleElement, msg)
}

impl Target {
    /// The observation of this element's page from a page mark taken in its frame
    /// ([`observe::observation_in`]).
    pub async fn observation(
        &self,
        task: &Task,
        mark: Result<PageMark, CommandError>,
    ) -> Observation {
        observe::observation_in(task, &self.tab, &self.frame, mark).await
    }

    /// Observes this element's page now ([`observe::observe_in`]).
    pub async fn observe(&self, task: &Task) -> Observation {
        observe::observe_in(task, &self.tab, &self.frame).await
    }

    /// The page after an action on this element ([`observe::observe_after_in`]).
    pub async fn observe_after(&self, task: &Task, before: &Observation) -> (Observation, bool) {
        observe::observe_after_in(task, &self.tab, &self.frame, before).await
    }

    /// The `target` argument that finds this element again in its frame (`probe_lib.js`
    /// `locate`: `{path, expect}`), for probes of other files built on the library.
    pub fn element_arg(&self) -> Value {
        self.spec.clone()
    }

    /// Calls op `op` of the element probe (`element_probe.js`) on this target (`args` an
    /// object); a `STALE_ELEMENT` names the target.
    pub async fn probe<T: DeserializeOwned>(
        &self,
        op: &str,
        args: Value,
    ) -> Result<T, CommandError> {
        self.call(js::ELEMENT_PROBE_JS, op, args).await
    }

    /// Calls op `op` of another probe built on `probe_lib.js` (one that finds its element with
    /// `lib.locate(args.target)`) on this target; a `STALE_ELEMENT` names the target.
    pub async fn call<T: DeserializeOwned>(
        &self,
        function: &'static str,
        op: &str,
        mut args: Value,
    ) -> Result<T, CommandError> {
        args["op"] = json!(op);
        args["target"] = self.spec.clone();
        self.tab
            .call_probe(&self.frame, function, args)
            .await
            .map_err(|e| self.explain(e))
    }

    /// Puts the target's name into a probe's `STALE_ELEMENT`.
    fn explain(&self, e: CommandError) -> CommandError {
        if e.code != ErrorCode::StaleElement {
            return e;
        }
        if self.query.is_some() {
            return stale(format!(
                "{} (<{}>) was replaced or removed by the page while the command ran; try again",
                self.label, self.snap.tag
            ))
            .with_details(json!({"staleReason": details_reason(&e)}));
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

    /// The element's text as first read, at most 200 characters (a query's chosen element;
    /// the snapshot's text for an index).
    pub fn chosen_text(&self) -> &str {
        &self.snap.text
    }

    /// The receipt fields naming the element a query chose: `tag` (upper-case), `text` (at
    /// most 200 characters), `outerHtml` (at most 300) and what the choice saw (`located`).
    /// Nothing for an index.
    pub fn chosen_fields(&self) -> serde_json::Map<String, Value> {
        let mut out = serde_json::Map::new();
        if let Some(chosen) = &self.chosen {
            out.insert("tag".into(), json!(chosen.tag));
            out.insert("text".into(), json!(self.snap.text));
            out.insert("outerHtml".into(), json!(chosen.outer_html));
        }
        if let Some(located) = &self.located {
            out.extend(located.clone());
        }
        out
    }
}

fn details_reason(e: &CommandError) -> Value {
    e.details
        .as_deref()
        .map(|d| d["reason"].clone())
        .unwrap_or(Value::Null)
}
