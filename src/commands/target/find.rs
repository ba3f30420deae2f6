//! Finding the element a [`Locator`] means: [`find`] and [`find_or_recover`] (an index's stale
//! recovery from a throw-away snapshot) turn it into a [`Target`] in its live frame and read it
//! once; [`count`] counts a locator's matches and [`locate_frame`] finds the frame a `frame` param
//! names. An index is resolved through the task's snapshot (`by_index`), any other locator is
//! chosen afresh by the element probe's `resolve` op (`by_query`).
//!
//! What is not here: reading locator params (`locator.rs`) and the read itself (`actionable.rs`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::actionable::{ElementState, Read};
use super::locator::Locator;
use super::{stale, Summary, Target};
use crate::browser::tab::FrameRef;
use crate::browser::task::{SnapElement, Task};
use crate::browser::Tab;
use crate::dom;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

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
            let frame = crate::commands::page_state::pick_frame(&frames, spec)?;
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
        // Nothing matches yet: an action acts on what is there now; say how to wait for it.
        let none = e.code == ErrorCode::ElementNotFound
            && e.detail("matched").and_then(Value::as_u64) == Some(0);
        let e = match locator.wait_hint().filter(|_| none) {
            Some(wait) => {
                let hint = format!(
                    "nothing matches now: an action acts on what the page holds when it runs (its `timeoutMs` bounds how long a match may take to become actionable, not its arrival); wait for it first with {wait}"
                );
                CommandError {
                    msg: format!("{}; {hint}", e.msg),
                    ..e
                }
                .with_details(json!({"hint": hint}))
            }
            None => e,
        };
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
            json!({"op": "resolve", "query": query, "hitTest": read.hit_test, "observe": read.observe, "keepScroll": read.keep_scroll, "frameCheck": read.settle}),
        )
        .await
        .map_err(|e| match e.code {
            ErrorCode::InvalidArgument => {
                let details = e.details.as_deref().cloned();
                // A selector that does not parse, or a strict locator that matched more than
                // one element (`text`, `role`, `label`): the probe names the param.
                let param = e
                    .detail("param")
                    .and_then(Value::as_str)
                    .unwrap_or("selector")
                    .to_string();
                let err = CommandError::invalid(&param, e.msg);
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
        rect: None,
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
        describe: None,
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
        let age = snap.created.elapsed().as_secs_f64();
        if n == 0 {
            return Err(stale(format!(
                "index out of range: {index} (the snapshot from {age:.1} s ago has no indexed element: nothing on the page was interactive then; re-read with get_browser_state once the page shows what to act on, or use a *_by_selector or *_by_text command)"
            )));
        }
        return Err(stale(format!(
            "index out of range: {index} (the snapshot from {age:.1} s ago has {n} elements, legal range 0..={}, in {} frame(s); re-read with get_browser_state)",
            n - 1,
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
        // The command's first index target, when the executor asks (a drag's second is not).
        describe: crate::trace::ELEMENT_NOTE
            .try_with(Clone::clone)
            .ok()
            .filter(crate::trace::ElementNote::ask),
    })
}

/// The element probe's `target` for a snapshot element.
fn index_spec(element: &SnapElement) -> Value {
    json!({
        "path": element.locator,
        "expect": {"tag": element.tag, "id": element.id, "name": element.name},
    })
}

impl Target {
    /// Reads a throw-away snapshot of the target's frame and, when exactly one element has the
    /// snapshot element's tag and non-empty text, points the target at it.
    pub(super) async fn recover(&mut self) -> bool {
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
                // Read a moment ago, not a frame before the action's read: no stability proof.
                self.snap.rect = None;
                self.spec = index_spec(&self.snap);
                true
            }
            _ => false,
        }
    }
}
