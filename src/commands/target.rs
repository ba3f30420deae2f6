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
//! What is deliberately not here: reading params (handlers do it before anything runs) and the
//! observation of what an action changed (`observe.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

pub use super::observe::Summary;
use super::observe::{self, Observation, PageMark};
use crate::browser::tab::{ElementObject, FrameRef};
use crate::browser::task::{SnapElement, Task};
use crate::browser::Tab;
use crate::command::{int, string, ParamSpec};
use crate::dom;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

/// What a command points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// An `[index]` of the task's latest snapshot; its frame is found again by id, URL or name
    /// (iframes that reloaded keep their indices).
    Index(u32),
    /// The matches of a CSS or Playwright-style selector (`probe_lib.js` `selectAll`): `nth`
    /// picks one explicitly, else the first visible match whose point receives events among
    /// the first 20, else the first visible, else the first ([`Pick`]).
    Selector {
        /// The selector.
        css: String,
        /// The 0-based explicit pick.
        nth: Option<u32>,
        /// The `frame` param (ordinal, or substring of the frame URL or name); main without.
        frame: Option<String>,
        /// How a match is chosen without `nth`.
        pick: Pick,
    },
    /// The element showing a text (case-insensitive substring; an exact match wins), or rather
    /// its closest clickable ancestor (JS-PROBES.md §9, text target).
    Text {
        /// The text.
        text: String,
        /// The `frame` param; main without.
        frame: Option<String>,
    },
    /// The first element of an ARIA role (explicit or implicit), optionally with an accessible
    /// name containing `name` (case-insensitive); hidden elements are not in the tree.
    Role {
        /// The role, lower-case (checked by [`check_role`]).
        role: String,
        /// The accessible name filter.
        name: Option<String>,
        /// The `frame` param; main without.
        frame: Option<String>,
    },
    /// The first control labelled `label` (`<label>`, aria-label, aria-labelledby; exact
    /// label texts before those that contain it).
    Label {
        /// The label text.
        label: String,
        /// The `frame` param; main without.
        frame: Option<String>,
    },
}

/// How a selector match is chosen when no `nth` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pick {
    /// Prefer a visible match that receives events (actions and reads).
    #[default]
    Visible,
    /// The first in document order, visible or not (file inputs: `upload_file`).
    Document,
}

impl Locator {
    /// A selector locator in the main frame, chosen by visibility.
    pub fn css(selector: impl Into<String>) -> Locator {
        Locator::Selector {
            css: selector.into(),
            nth: None,
            frame: None,
            pick: Pick::Visible,
        }
    }

    /// The `frame` param of the locator (`None` for an index: indices carry their frame).
    pub fn frame(&self) -> Option<&str> {
        match self {
            Locator::Index(_) => None,
            Locator::Selector { frame, .. }
            | Locator::Text { frame, .. }
            | Locator::Role { frame, .. }
            | Locator::Label { frame, .. } => frame.as_deref(),
        }
    }

    /// How receipts name the target: `index=3`, `selector #go`, `selector #go (frame=1)`,
    /// `text Save`, `role button "Save"`, `label Email`.
    pub fn describe(&self) -> String {
        let base = match self {
            Locator::Index(i) => return format!("index={i}"),
            Locator::Selector { css, nth, .. } => match nth {
                Some(n) => format!("selector {css} (nth={n})"),
                None => format!("selector {css}"),
            },
            Locator::Text { text, .. } => format!("text {text}"),
            Locator::Role { role, name, .. } => match name {
                Some(n) => format!("role {role} \"{n}\""),
                None => format!("role {role}"),
            },
            Locator::Label { label, .. } => format!("label {label}"),
        };
        match self.frame() {
            Some(f) => format!("{base} (frame={f})"),
            None => base,
        }
    }

    /// The same locator with another [`Pick`] (no effect on other variants).
    pub fn with_pick(self, pick: Pick) -> Locator {
        match self {
            Locator::Selector {
                css, nth, frame, ..
            } => Locator::Selector {
                css,
                nth,
                frame,
                pick,
            },
            other => other,
        }
    }

    /// How messages name the element: `element 3`, `selector `#go``, ...
    fn label(&self) -> String {
        match self {
            Locator::Index(i) => format!("element {i}"),
            Locator::Selector { css, .. } => format!("the element of selector `{css}`"),
            Locator::Text { text, .. } => format!("the element with text `{text}`"),
            Locator::Role { role, name, .. } => match name {
                Some(n) => format!("the {role} named `{n}`"),
                None => format!("the {role}"),
            },
            Locator::Label { label, .. } => format!("the field with label `{label}`"),
        }
    }

    /// The `query` argument of the element probe's `resolve` and `count` ops (`None` for an
    /// index).
    fn query(&self) -> Option<Value> {
        Some(match self {
            Locator::Index(_) => return None,
            Locator::Selector { css, nth, pick, .. } => json!({
                "css": css,
                "nth": nth,
                "prefer": match pick { Pick::Visible => "visible", Pick::Document => "document" },
            }),
            Locator::Text { text, .. } => json!({"text": text}),
            Locator::Role { role, name, .. } => json!({"role": role, "name": name}),
            Locator::Label { label, .. } => json!({"label": label}),
        })
    }
}

/// Which of the locator params besides `index` and `selector` a command declares (a handler
/// reads exactly its declared params).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takes {
    /// `nth`: the 0-based explicit pick among the selector's matches.
    pub nth: bool,
    /// `frame`: the frame the selector is looked up in.
    pub frame: bool,
}

impl Takes {
    /// `index` / `selector` only (selectors look in the main frame).
    pub const PLAIN: Takes = Takes {
        nth: false,
        frame: false,
    };
    /// With `frame`.
    pub const FRAME: Takes = Takes {
        nth: false,
        frame: true,
    };
    /// With `nth` and `frame`.
    pub const NTH_FRAME: Takes = Takes {
        nth: true,
        frame: true,
    };
}

/// The catalogue's `index` param where `selector` is the alternative.
pub const INDEX_OR: ParamSpec = int("index", "element index from the latest snapshot");
/// The catalogue's `selector` param where `index` is the alternative.
pub const SELECTOR_OR: ParamSpec =
    string("selector", "CSS/Playwright selector (no snapshot needed)");
/// The catalogue's `frame` param.
pub const FRAME_PARAM: ParamSpec = string(
    "frame",
    "frame to search in: integer ordinal (0 = main frame, depth-first order as in list_frames) or a substring of the frame URL or name; numeric strings are treated as ordinals; unknown ordinal or no match -> failure listing available frames",
);
/// The catalogue's `nth` param.
pub const NTH_PARAM: ParamSpec = int(
    "nth",
    "0-based explicit match; disables visibility-based choice; out of range -> ELEMENT_NOT_FOUND with the count",
)
.range(0.0, f64::INFINITY);

/// An `index` param's value as a snapshot index (`INVALID_ARGUMENT` below 0).
pub fn index_value(index: i64) -> Result<u32, CommandError> {
    u32::try_from(index).map_err(|_| {
        CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
    })
}

fn nth_value(nth: Option<i64>) -> Result<Option<u32>, CommandError> {
    nth.map(|n| {
        u32::try_from(n).map_err(|_| {
            CommandError::invalid("nth", format!("param `nth`: must be >= 0, got {n}"))
        })
    })
    .transpose()
}

/// Reads the "index or selector" params of `cmd` the same way for every command: `index`,
/// `selector` and, as `takes` says, `nth` and `frame` (all read before any is judged, so
/// unknown-param tracking sees them). The index wins when both are given (`nth` and `frame`
/// then do not apply: indices carry their frame). Neither is `INVALID_ARGUMENT`
/// `<cmd>: needs index or selector` (the executor puts the name in front; `cmd` names the
/// command in the hint).
pub fn index_or_selector(p: &mut Params, cmd: &str, takes: Takes) -> Result<Locator, CommandError> {
    let index = p.int_opt("index")?;
    let selector = p.str_opt("selector")?;
    let nth = if takes.nth { p.int_opt("nth")? } else { None };
    let frame = if takes.frame {
        p.str_opt("frame")?
    } else {
        None
    };
    let nth = nth_value(nth)?;
    match (index, selector) {
        (Some(i), _) => Ok(Locator::Index(index_value(i)?)),
        (None, Some(css)) => Ok(Locator::Selector {
            css,
            nth,
            frame,
            pick: Pick::Visible,
        }),
        // The receipt's message gets the command's name in front: `<cmd>: needs ...`.
        (None, None) => Err(
            CommandError::invalid("index", "needs index or selector").with_details(json!({
                "hint": format!("{cmd}{{ index = N }} (from get_browser_state) or {cmd}{{ selector = \"css\" }}"),
            })),
        ),
    }
}

/// Reads a required `selector` and, as `takes` says, `nth` and `frame`.
pub fn selector_param(p: &mut Params, takes: Takes) -> Result<Locator, CommandError> {
    let css = p.str_req("selector")?;
    let nth = if takes.nth { p.int_opt("nth")? } else { None };
    let frame = if takes.frame {
        p.str_opt("frame")?
    } else {
        None
    };
    Ok(Locator::Selector {
        css,
        nth: nth_value(nth)?,
        frame,
        pick: Pick::Visible,
    })
}

/// The ARIA roles a role locator accepts (those of Playwright's `AriaRole`).
pub const ARIA_ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "document",
    "emphasis",
    "feed",
    "figure",
    "form",
    "generic",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "marquee",
    "math",
    "meter",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "navigation",
    "none",
    "note",
    "option",
    "paragraph",
    "presentation",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "strong",
    "subscript",
    "superscript",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "time",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

/// A `role` param checked against [`ARIA_ROLES`] (any case): unknown is `INVALID_ARGUMENT`
/// naming the near roles.
pub fn check_role(role: &str) -> Result<String, CommandError> {
    let want = role.trim().to_ascii_lowercase();
    if ARIA_ROLES.contains(&want.as_str()) {
        return Ok(want);
    }
    let near = crate::registry::suggest_among(&want, ARIA_ROLES.iter().copied());
    Err(CommandError::invalid(
        "role",
        format!(
            "param `role`: `{role}` is not an ARIA role{}",
            if near.is_empty() {
                " (button, link, textbox, checkbox, radio, combobox, heading, ...)".to_string()
            } else {
                format!("; did you mean {}?", near.join(", "))
            }
        ),
    ))
}

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
}

impl Read {
    /// A read for a read-only command: no hit test, no page mark, no scrolling.
    pub const QUIET: Read = Read {
        hit_test: false,
        observe: false,
        keep_scroll: true,
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
    /// animation frame (Playwright's stability); `None` from other reads.
    #[serde(default)]
    pub stable: Option<bool>,
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
}

fn stale(msg: String) -> CommandError {
    CommandError::new(ErrorCode::StaleElement, msg)
}

/// Finds `locator`'s element and reads it once with `read`. For an index, a missing frame or
/// element, or another element where the snapshot's was, is `STALE_ELEMENT` (after one retry
/// 300 ms later, for elements being re-rendered). Any other locator is chosen afresh in its
/// frame and read in the same probe call: nothing matching is `ELEMENT_NOT_FOUND` with
/// `matched` (the count), an unknown `frame` or a selector that does not parse is
/// `INVALID_ARGUMENT`. Later probe calls find the chosen element again by its position and
/// identity.
pub async fn find(
    task: &Task,
    locator: &Locator,
    read: Read,
) -> Result<(Target, ElementState), CommandError> {
    if let Locator::Index(index) = *locator {
        let target = by_index(task, index).await?;
        let state = target.inspect(read).await?;
        return Ok((target, state));
    }
    by_query(task, locator, read).await
}

/// [`find`] with stale-index recovery (COMMANDS.md, click): when an index no longer leads to
/// the snapshot's element, a throw-away snapshot of its frame is read and the one element with
/// the same tag and text, if there is exactly one, is taken instead (`stale_recovered`). The
/// task's snapshot is not replaced; an ambiguous or missing match stays `STALE_ELEMENT`. Other
/// locators are chosen afresh anyway: this is [`find`] for them.
pub async fn find_or_recover(
    task: &Task,
    locator: &Locator,
    read: Read,
) -> Result<(Target, ElementState), CommandError> {
    let Locator::Index(index) = *locator else {
        return by_query(task, locator, read).await;
    };
    let mut target = by_index(task, index).await?;
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

/// How many elements a locator other than an index matches in its frame (`get_element_count`,
/// waits): answers the count and the frame it was counted in. An index counts 1 when its
/// element is still there.
pub async fn count(task: &Task, locator: &Locator) -> Result<(usize, FrameRef), CommandError> {
    #[derive(Deserialize)]
    struct Counted {
        count: usize,
    }
    let Some(query) = locator.query() else {
        let (target, _) = find(task, locator, Read::default()).await?;
        return Ok((1, target.frame));
    };
    let tab = task.tab()?;
    let (_, frame) = locate_frame(&tab, locator.frame()).await?;
    let counted: Counted = tab
        .call_probe(
            &frame,
            js::ELEMENT_PROBE_JS,
            json!({"op": "count", "query": query}),
        )
        .await?;
    Ok((counted.count, frame))
}

/// The frames of `tab` and the frame a `frame` param names (the main frame without one, with
/// no call to the browser).
pub async fn locate_frame(
    tab: &Tab,
    spec: Option<&str>,
) -> Result<(Vec<FrameRef>, FrameRef), CommandError> {
    match spec {
        None => {
            let main = tab.main_frame_local();
            Ok((vec![main.clone()], main))
        }
        Some(spec) => {
            let frames = tab.frames(true).await?;
            let frame = super::page_state::pick_frame(&frames, spec)?;
            Ok((frames, frame))
        }
    }
}

/// The `resolve` op's answer: the read, plus what the choice saw.
#[derive(Deserialize)]
struct Resolved {
    #[serde(flatten)]
    state: ElementState,
    located: Located,
}

#[derive(Deserialize)]
struct Located {
    path: String,
    expect: Identity,
    info: serde_json::Map<String, Value>,
    summary: Summary,
    text: String,
}

#[derive(Deserialize)]
struct Identity {
    tag: String,
    id: Option<String>,
    name: Option<String>,
}

/// Chooses a non-index locator's element in its frame and reads it (one probe call).
async fn by_query(
    task: &Task,
    locator: &Locator,
    read: Read,
) -> Result<(Target, ElementState), CommandError> {
    let query = locator.query().unwrap_or(Value::Null);
    let tab = task.tab()?;
    let (frames, frame) = locate_frame(&tab, locator.frame()).await?;
    let label = locator.label();
    let in_frame = |e: CommandError| -> CommandError {
        if e.code != ErrorCode::ElementNotFound || frame.is_main() {
            return e;
        }
        let msg = format!("{} in frame {} ({})", e.msg, frame.ordinal, frame.url);
        let details = e.details.as_deref().cloned();
        let err = CommandError::new(e.code, msg);
        match details {
            Some(d) => err.with_details(d),
            None => err,
        }
    };
    let resolved: Resolved = tab
        .call_probe(
            &frame,
            js::ELEMENT_PROBE_JS,
            json!({"op": "resolve", "query": query, "hitTest": read.hit_test, "observe": read.observe, "keepScroll": read.keep_scroll}),
        )
        .await
        .map_err(|e| match e.code {
            ErrorCode::InvalidArgument => {
                let details = e.details.as_deref().cloned();
                let err = CommandError::invalid("selector", e.msg);
                match details {
                    Some(d) => err.with_details(d),
                    None => err,
                }
            }
            _ => in_frame(e),
        })?;
    let Located {
        path,
        expect,
        info,
        summary,
        text,
    } = resolved.located;
    let snap = SnapElement {
        index: 0,
        frame: frame.ordinal,
        locator: path,
        tag: expect.tag,
        id: expect.id,
        name: expect.name,
        text,
        reason: None,
    };
    let target = Target {
        tab,
        frames,
        frame,
        label,
        spec: index_spec(&snap),
        snap,
        stale_recovered: false,
        located: Some(info),
        chosen: Some(summary),
        described: locator.describe(),
        query: Some(query),
    };
    Ok((target, resolved.state))
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
        located: None,
        chosen: None,
        described: format!("index={index}"),
        query: None,
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
            keep_scroll: false,
        }
    }
}

/// How a click went (the input of `click_receipt::click_receipt`).
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
        let args = json!({
            "hitTest": read.hit_test,
            "observe": read.observe,
            "keepScroll": read.keep_scroll,
            "frameCheck": frame_check,
        });
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
            keep_scroll: false,
        })
        .await
    }

    /// The "before" observation from the page mark of a read (see [`Target::with_mark`]).
    async fn before(&self, task: &Task, state: &ElementState) -> Observation {
        let mark = state
            .page
            .clone()
            .ok_or_else(|| CommandError::failed("the read before the action took no page mark"));
        self.observation(task, mark).await
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

    /// A trusted mouse move onto the element (hover), at the point of `state` (a read with a
    /// hit test): `ELEMENT_HIDDEN` or `ELEMENT_OBSCURED` when no point of it receives events.
    /// Answers the point (in the element's frame viewport).
    pub async fn hover(&self, state: &ElementState) -> Result<[f64; 2], CommandError> {
        let point = self.click_point(state)?;
        let (ox, oy) = self
            .tab
            .offset_in_session(&self.frames, &self.frame)
            .await?;
        self.tab
            .mouse_move_in(&self.frame, point[0] + ox, point[1] + oy)
            .await?;
        Ok(point)
    }

    /// Empties the field (clear_text): disabled and read-only fields are refused as for input;
    /// a visible text field is cleared for real (focus, select all, Delete), anything else
    /// through the value setter with input/change events. The field is read back: a value that
    /// is not empty afterwards is `ACTION_FAILED`. Answers `{value, mode, committed}`.
    pub async fn clear(&self, state: &ElementState) -> Result<Value, CommandError> {
        self.check_editable(state)?;
        let real = state.visible && state.has_box() && state.fill == Some(FillKind::Text);
        let back = if real {
            let focused: Focused = self.probe("focus", json!({"at": "all"})).await?;
            self.require_focus(&focused)?;
            if focused.length.unwrap_or(0) > 0 {
                self.tab.press_delete().await?;
            }
            // Delete has been pressed: a read-back that fails must not say nothing ran.
            self.probe::<ReadBack>("read_back", json!({"text": "", "mode": "exact"}))
                .await
                .map_err(CommandError::sent)?
        } else {
            self.set_value("", false, false).await?
        };
        self.verify(state, &back, "", if real { "fill" } else { "js" })?;
        Ok(json!({
            "value": back.value,
            "mode": if real { "fill" } else { "js" },
            "committed": real,
        }))
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
            keep_scroll: false,
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
                let wait_ms = if mode == ClickMode::Auto {
                    native_share(timeout_ms)
                } else {
                    timeout_ms
                };
                match self.wait_actionable(first, wait_ms, observed).await? {
                    Actionable::Ready(state) => {
                        let state = self.with_mark(state).await?;
                        match self.click_point(&state) {
                            Ok(point) => {
                                self.real_click(task, state, point, "native", None, press)
                                    .await
                            }
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

fn details_reason(e: &CommandError) -> Value {
    e.details
        .as_deref()
        .map(|d| d["reason"].clone())
        .unwrap_or(Value::Null)
}

/// The part of an auto click's `timeout_ms` that native mode may wait for actionability: a
/// third (at most 1 s) is kept for the fallbacks, so an element that never becomes actionable
/// is still clicked with the mouse or JS within the caller's budget.
fn native_share(timeout_ms: u64) -> u64 {
    timeout_ms - (timeout_ms / 3).min(1000)
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
    locator_box(task, &Locator::Index(index), true).await
}

/// The box `[x, y, width, height]` of `locator`'s element in the main viewport (with `scroll`,
/// after scrolling it into view), with its tab; `ELEMENT_HIDDEN` without a box.
pub(crate) async fn locator_box(
    task: &Task,
    locator: &Locator,
    scroll: bool,
) -> Result<(Arc<Tab>, [f64; 4]), CommandError> {
    let read = if scroll { Read::default() } else { Read::QUIET };
    let (target, state) = find(task, locator, read).await?;
    let offset = target
        .tab
        .frame_offset(&target.frames, &target.frame)
        .await?;
    let rect = shifted_box(state.rect, offset).ok_or_else(|| {
        CommandError::new(
            ErrorCode::ElementHidden,
            format!("{} is not visible or has no layout", target.label),
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
    pub async fn act<T: DeserializeOwned>(&self, op: &str, args: Value) -> Result<T, CommandError> {
        self.call(js::ELEMENT_ACTIONS_JS, op, args).await
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
            keep_scroll: false,
        };
        match self.wait_actionable(first, timeout_ms, read).await? {
            Actionable::Ready(state) => {
                let point = self.click_point(&state)?;
                Ok((state, point))
            }
            Actionable::NotReady(_, e) => Err(e),
        }
    }

    /// Moves the real mouse onto the element once it is actionable ([`Target::hover`]);
    /// answers the read (its `hit` is what the pointer is over).
    pub async fn hover_when_ready(
        &self,
        first: ElementState,
        timeout_ms: u64,
    ) -> Result<ElementState, CommandError> {
        let (state, _) = self.ready_point(first, timeout_ms).await?;
        self.hover(&state).await?;
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

    fn params(v: Value) -> Params {
        Params::new(v).unwrap()
    }

    #[test]
    fn index_or_selector_reads_every_param_and_prefers_the_index() {
        let mut p = params(json!({"index": 2, "selector": "#a", "nth": 1, "frame": "1"}));
        assert_eq!(
            index_or_selector(&mut p, "is_visible", Takes::NTH_FRAME).unwrap(),
            Locator::Index(2)
        );
        assert_eq!(p.read_keys(), ["index", "selector", "nth", "frame"]);
        let mut p = params(json!({"selector": "#a", "nth": "1", "frame": 2}));
        let loc = index_or_selector(&mut p, "x", Takes::NTH_FRAME).unwrap();
        assert_eq!(
            loc,
            Locator::Selector {
                css: "#a".into(),
                nth: Some(1),
                frame: Some("2".into()),
                pick: Pick::Visible
            }
        );
        assert_eq!(loc.describe(), "selector #a (nth=1) (frame=2)");
        let mut p = params(json!({"selector": "#a", "nth": 1}));
        index_or_selector(&mut p, "x", Takes::PLAIN).unwrap();
        assert_eq!(p.unread(), ["nth"], "undeclared params stay unread");
        let e = index_or_selector(&mut params(json!({})), "is_checked", Takes::FRAME).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.msg, "needs index or selector");
        assert!(e.details.unwrap()["hint"]
            .as_str()
            .unwrap()
            .starts_with("is_checked{"));
        let e = index_or_selector(
            &mut params(json!({"selector": "a", "nth": -1})),
            "x",
            Takes::NTH_FRAME,
        )
        .unwrap_err();
        assert!(e.msg.contains("`nth`"), "{}", e.msg);
        let e =
            index_or_selector(&mut params(json!({"index": -3})), "x", Takes::PLAIN).unwrap_err();
        assert!(e.msg.contains("`index`"), "{}", e.msg);
        let e = selector_param(&mut params(json!({"selector": ""})), Takes::PLAIN).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn roles_are_checked_against_aria() {
        assert_eq!(check_role("Button").unwrap(), "button");
        let e = check_role("buton").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("button"), "{}", e.msg);
    }

    #[test]
    fn auto_mode_keeps_a_share_of_its_budget_for_the_fallbacks() {
        assert_eq!(native_share(900), 600);
        assert_eq!(native_share(5000), 4000);
        assert_eq!(native_share(0), 0);
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
