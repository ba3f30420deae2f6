//! Interacting by index: `click_element_by_index`, `input_text`, `type_text`.
//!
//! An index is resolved through the task's snapshot to its frame and locator, re-found live and
//! checked against the snapshot's identity; a missing or changed element is `STALE_ELEMENT`, never
//! a click on something else. Clicks are trusted mouse events at the element's centre (mapped
//! from its frame to the main viewport) and report what changed (the click receipt).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::tab::FrameRef;
use crate::browser::task::{SnapElement, Task};
use crate::browser::Tab;
use crate::commands::page_state::probe_value;
use crate::dom;
use crate::error::CommandError;
use crate::executor::Cx;
use crate::js;
use crate::protocol::{ErrorCode, Params};
use crate::registry::{CommandFuture, CommandSpec, Kind, ParamSpec};

const INDEX_PARAM: ParamSpec = ParamSpec {
    name: "index",
    kind: Kind::Int,
    required: true,
    default: None,
    doc: "element index from the latest get_browser_state snapshot (frame routing is automatic)",
};

/// The index-interaction group.
pub const SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "click_element_by_index",
        group: "interact_index",
        summary: "Click the element with this snapshot index and report what changed",
        doc: "Modes: auto (real click with actionability checks, then a real mouse click at the \
              box centre, then JS dispatch; never through a covering element: ELEMENT_OBSCURED), \
              native, mouse, js. The receipt compares URL, tab count and a page fingerprint \
              before and after (changed, effective). ok means the click happened, not that the \
              business goal was reached; never resend only because changed is false.",
        params: &[
            INDEX_PARAM,
            ParamSpec { name: "mode", kind: Kind::String, required: false, default: Some("\"auto\""), doc: "auto | native | mouse | js (aliases: dispatch/force/event -> js; real/coordinate/coords -> mouse; playwright -> native)" },
            ParamSpec { name: "timeoutMs", kind: Kind::Int, required: false, default: Some("5000"), doc: "actionability timeout in ms; absent or <= 0 uses the configured 5000" },
        ],
        needs_task: true,
        mutates_page: true,
        retry_safe: false,
        long_running: false,
        alias_of: None,
        example: "local r = page:click_element_by_index{ index = 3 }\nif r.ok and not r.data.changed then print(r.data.hint) end",
        handler: click_element_by_index,
    },
    CommandSpec {
        name: "input_text",
        group: "interact_index",
        summary: "Replace the value of the field with this index (real input, any script)",
        doc: "auto fills for real (focus, select all, insert text: frameworks see trusted input \
              events; non-ASCII text works) when the field is visible, else sets the value through \
              the native setter with input/change events (mode js, committed false). Disabled \
              fields fail with ELEMENT_DISABLED, read-only ones with ELEMENT_READ_ONLY.",
        params: &[
            INDEX_PARAM,
            ParamSpec { name: "text", kind: Kind::String, required: true, default: None, doc: "replacement value (the field is cleared first); empty counts as missing" },
            ParamSpec { name: "mode", kind: Kind::String, required: false, default: Some("\"auto\""), doc: "auto | native (fill) | type (press; key by key, no clearing) | js (setvalue, set_value)" },
        ],
        needs_task: true,
        mutates_page: true,
        retry_safe: false,
        long_running: false,
        alias_of: None,
        example: "page:input_text{ index = 2, text = \"alice\" }",
        handler: input_text,
    },
    CommandSpec {
        name: "type_text",
        group: "interact_index",
        summary: "Type text key by key after the field's existing content",
        doc: "Focuses the field with this index, puts the caret at the end and types each \
              character (ASCII as key events, other characters as text input). Does not clear.",
        params: &[
            INDEX_PARAM,
            ParamSpec { name: "text", kind: Kind::String, required: true, default: None, doc: "text typed key by key after existing content" },
        ],
        needs_task: true,
        mutates_page: true,
        retry_safe: false,
        long_running: false,
        alias_of: None,
        example: "page:type_text{ index = 2, text = \" more\" }",
        handler: type_text,
    },
];

/// Click technique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClickMode {
    Auto,
    Native,
    Mouse,
    Js,
}

fn click_mode(raw: Option<String>) -> ClickMode {
    match raw.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("native" | "playwright") => ClickMode::Native,
        Some("mouse" | "real" | "coordinate" | "coords") => ClickMode::Mouse,
        Some("js" | "dispatch" | "force" | "event") => ClickMode::Js,
        _ => ClickMode::Auto,
    }
}

/// Input technique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputMode {
    Auto,
    Fill,
    Type,
    Js,
}

fn input_mode(raw: Option<String>) -> Result<InputMode, CommandError> {
    match raw.as_deref().map(str::to_ascii_lowercase).as_deref() {
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

fn read_index(p: &mut Params) -> Result<u32, CommandError> {
    let index = p.int_req("index")?;
    u32::try_from(index).map_err(|_| {
        CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
    })
}

/// An index resolved to its live frame.
struct Target {
    tab: Arc<Tab>,
    frames: Vec<FrameRef>,
    frame: FrameRef,
    element: SnapElement,
}

fn stale(msg: String) -> CommandError {
    CommandError::new(ErrorCode::StaleElement, msg)
}

async fn resolve_index(task: &Task, index: u32) -> Result<Target, CommandError> {
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
    let frames = if element.frame == 0 {
        vec![tab.main_frame().await?]
    } else {
        tab.frames(true).await?
    };
    let snap_frame = snap.frames.iter().find(|f| f.ordinal == element.frame);
    // Re-find the frame by id, then by a URL only one frame has, then by name: iframes that
    // reloaded keep their indices, and two copies of one widget are never confused.
    let frame = match snap_frame {
        _ if element.frame == 0 => frames.first().cloned(),
        Some(sf) => {
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
        }
        None => None,
    }
    .ok_or_else(|| {
        stale(format!(
            "the frame of index {index} is gone; re-read with get_browser_state"
        ))
    })?;
    Ok(Target {
        tab,
        frames,
        frame,
        element,
    })
}

/// Whether a live element (an `inspect` answer) is still the snapshot's element: same tag, and
/// the same `id` and `name` where the snapshot had them.
fn same_identity(info: &Value, element: &SnapElement) -> bool {
    let matches = |live: &Value, snap: &Option<String>| match snap.as_deref() {
        Some(want) if !want.is_empty() => live.as_str() == Some(want),
        _ => true,
    };
    info["found"] == true
        && info["tag"]
            .as_str()
            .is_some_and(|t| t.eq_ignore_ascii_case(&element.tag))
        && matches(&info["id"], &element.id)
        && matches(&info["name"], &element.name)
}

/// Inspects the target (scrolling it into view); `STALE_ELEMENT` when it no longer resolves or
/// is no longer the same element. One retry after 300 ms covers an element being re-rendered.
async fn inspect(target: &Target) -> Result<Value, CommandError> {
    let args = json!({"op": "inspect", "path": target.element.locator});
    let mut info = target
        .tab
        .call_function(&target.frame, js::ELEMENT_PROBE_JS, args.clone())
        .await?;
    if !same_identity(&info, &target.element) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        info = target
            .tab
            .call_function(&target.frame, js::ELEMENT_PROBE_JS, args)
            .await?;
    }
    if info["found"] != true {
        return Err(stale(format!(
            "element {} (<{}>) is no longer in the page; re-read with get_browser_state",
            target.element.index, target.element.tag
        )));
    }
    if !same_identity(&info, &target.element) {
        return Err(stale(format!(
            "index {} now resolves to another element (<{}>), not the snapshot's <{}>; re-read with get_browser_state",
            target.element.index,
            info["tag"].as_str().unwrap_or("?").to_lowercase(),
            target.element.tag
        )));
    }
    Ok(info)
}

/// Stale-index recovery (COMMANDS.md, click): reads a throw-away snapshot of the target's frame
/// and, when exactly one element has the snapshot element's tag and text, points the target at
/// it. The task's snapshot is not replaced; an ambiguous or missing match changes nothing.
async fn recover(target: &mut Target) -> bool {
    let args =
        json!({"doHighlightElements": false, "viewportExpansion": -1, "highlightIndexStart": 0});
    let Ok(raw) = target
        .tab
        .call_function(&target.frame, js::DOM_INDEX_JS, args)
        .await
    else {
        return false;
    };
    let Some(dom) = probe_value(raw).ok().and_then(|v| dom::parse_frame(v).ok()) else {
        return false;
    };
    let mut matches = dom.elements.iter().filter(|e| {
        e.tag == target.element.tag && e.text == target.element.text && !e.text.is_empty()
    });
    match (matches.next(), matches.next()) {
        (Some(only), None) => {
            target.element.locator = only.xpath.clone();
            true
        }
        _ => false,
    }
}

/// What the click receipt compares.
#[derive(Debug, Clone, PartialEq)]
struct Observation {
    url: String,
    tab_count: usize,
    frame_url: Option<String>,
    text_length: Option<i64>,
    fingerprint: Option<String>,
    probe_error: Option<String>,
}

async fn observe(task: &Task, target: &Target) -> Observation {
    let url = target.tab.url().await.unwrap_or_default();
    let tab_count = task.tabs().0.len();
    let frame_url = if target.frame.is_main() {
        None
    } else {
        target
            .tab
            .call_probe::<Value>(&target.frame, js::PAGE_STATUS_JS, Value::Null)
            .await
            .ok()
            .and_then(|v| v["url"].as_str().map(str::to_string))
    };
    let (text_length, fingerprint, probe_error) = match target
        .tab
        .call_function(&target.frame, js::FINGERPRINT_JS, json!({}))
        .await
    {
        Ok(v) if v.get("probeError").is_none() && v.get("fingerprint").is_some() => (
            v["textLength"].as_i64(),
            v["fingerprint"]
                .as_str()
                .map(str::to_string)
                .or_else(|| Some(v["fingerprint"].to_string())),
            None,
        ),
        Ok(v) => (
            None,
            None,
            Some(
                v["probeError"]
                    .as_str()
                    .unwrap_or("no fingerprint")
                    .to_string(),
            ),
        ),
        Err(e) => (None, None, Some(e.msg)),
    };
    Observation {
        url,
        tab_count,
        frame_url,
        text_length,
        fingerprint,
        probe_error,
    }
}

fn differs(before: &Observation, after: &Observation) -> bool {
    before.url != after.url
        || before.tab_count != after.tab_count
        || before.frame_url != after.frame_url
        || matches!((&before.fingerprint, &after.fingerprint), (Some(a), Some(b)) if a != b)
}

fn usable(before: &Observation, after: &Observation) -> bool {
    after.probe_error.is_none()
        && !(before.text_length.unwrap_or(0) > 0 && after.text_length == Some(0))
}

/// Observation window after an action (JS-PROBES.md §7): poll every 50 ms for up to 500 ms
/// until something changes; if the page is unreadable, wait up to 2.5 s for it to come back.
async fn observe_after(task: &Task, target: &Target, before: &Observation) -> (Observation, bool) {
    let start = Instant::now();
    let mut after = observe(task, target).await;
    while !differs(before, &after)
        && after.probe_error.is_none()
        && start.elapsed() < Duration::from_millis(500)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
        after = observe(task, target).await;
    }
    let mut recovered = false;
    if !usable(before, &after) {
        let wait_start = Instant::now();
        while !usable(before, &after) && wait_start.elapsed() < Duration::from_millis(2500) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let url_before = after.url.clone();
            after = observe(task, target).await;
            if after.url.is_empty() {
                after.url = url_before;
            }
        }
        recovered = usable(before, &after);
    }
    (after, recovered)
}

fn click_receipt(
    before: &Observation,
    after: &Observation,
    recovered: bool,
    info: &Value,
) -> Value {
    let trustworthy = usable(before, after);
    let changed = differs(before, after);
    let mut r = json!({
        "urlBefore": before.url,
        "urlAfter": after.url,
        "tabCountBefore": before.tab_count,
        "tabCountAfter": after.tab_count,
        "textLengthBefore": before.text_length,
        "textLengthAfter": after.text_length,
        "changed": changed,
        "changeStatus": if !trustworthy && !changed { "unknown" } else if changed { "observed" } else { "not_observed" },
        "observationComplete": trustworthy,
        "probeTrustworthy": trustworthy,
        "observationWindowMs": 500,
        "actionStatus": "completed",
        "retrySafe": false,
        "effective": if trustworthy || changed { json!(changed) } else { Value::Null },
        "hit": info.get("hit").cloned().unwrap_or(Value::Null),
    });
    if recovered {
        r["probeRecovered"] = json!(true);
    }
    if !trustworthy {
        r["probeNote"] = json!("the page was unreadable after the action (navigating or blank); `changed` may be incomplete");
        if let Some(e) = &after.probe_error {
            r["probeError"] = json!(e);
        }
        if after.text_length == Some(0) {
            r["page_appears_blank"] = json!(true);
        }
    }
    if !changed && trustworthy {
        r["hint"] = json!("nothing observable changed within 500 ms; the page may react later, or the click may have been ignored: read the page before acting again");
    }
    r
}

fn click_element_by_index(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let mode = click_mode(p.str_opt("mode")?);
    let timeout_ms = match p.int_opt("timeoutMs")? {
        Some(ms) if ms > 0 => ms.unsigned_abs(),
        _ => cx.engine.config.action_timeout_ms,
    };
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let mut target = resolve_index(&task, index).await?;
        let mut stale_recovered = false;
        let mut info = match inspect(&target).await {
            Ok(info) => info,
            Err(e) if e.code == ErrorCode::StaleElement && recover(&mut target).await => {
                stale_recovered = true;
                inspect(&target).await?
            }
            Err(e) => return Err(e),
        };
        let offset = if target.frame.is_main() {
            (0.0, 0.0)
        } else {
            target
                .tab
                .frame_offset(&target.frames, &target.frame)
                .await?
        };
        let before = observe(&task, &target).await;
        let covered_by = if info["covered"] == true {
            info.get("coveredBy").cloned()
        } else {
            None
        };
        if let (ClickMode::Auto | ClickMode::Native, Some(cover)) = (mode, &covered_by) {
            return Err(CommandError::new(
                ErrorCode::ElementObscured,
                format!("element {index} is covered by <{}> at its centre; auto mode does not click through", cover["tag"].as_str().unwrap_or("?").to_lowercase()),
            )
            .with_details(json!({
                "coveredBy": cover,
                "coveredHint": "close the overlay first (get_modals / close_modal), or use mode=js if you really mean to bypass it",
                "mouseSkipped": "target-covered",
                "hit": info.get("hit"),
            })));
        }
        let mut used = "native";
        let mut fallback: Option<String> = None;
        match mode {
            ClickMode::Js => {
                js_click(&target).await?;
                used = "js";
            }
            ClickMode::Mouse => {
                mouse_click_at(&target, &info, offset).await?;
                used = "mouse";
            }
            ClickMode::Native | ClickMode::Auto => {
                match wait_actionable(&target, &mut info, timeout_ms).await {
                    Ok(()) => mouse_click_at(&target, &info, offset).await?,
                    Err(e) if mode == ClickMode::Native => return Err(e),
                    Err(e) => {
                        fallback = Some(e.msg.clone());
                        if has_box(&info) {
                            mouse_click_at(&target, &info, offset).await?;
                            used = "mouse";
                        } else {
                            js_click(&target).await?;
                            used = "js";
                        }
                    }
                }
            }
        }
        let (after, recovered) = observe_after(&task, &target, &before).await;
        let mut receipt = click_receipt(&before, &after, recovered, &info);
        receipt["mode"] = json!(used);
        if let Some(reason) = fallback {
            receipt["fallbackReason"] = json!(reason);
            receipt["fallbackFrom"] = json!("native");
            receipt["note"] = json!(if used == "js" {
                "fell back to JS dispatch: some frameworks ignore untrusted events; check the page"
            } else {
                "fell back to a real mouse click at the box centre (normal on some sites)"
            });
        }
        if let Some(cover) = covered_by {
            receipt["coveredBy"] = cover;
        }
        if !target.frame.is_main() {
            receipt["probedFrameUrl"] = json!(target.frame.url);
        }
        if stale_recovered {
            receipt["staleRecovered"] = json!(true);
            receipt["staleNote"] = json!("the index's path no longer led to its element; the one element with the same tag and text was clicked");
        }
        Ok(receipt)
    }))
}

fn has_box(info: &Value) -> bool {
    info["rect"].as_array().is_some_and(|r| {
        r.len() == 4 && r[2].as_f64().unwrap_or(0.0) > 0.0 && r[3].as_f64().unwrap_or(0.0) > 0.0
    })
}

/// Waits until the element is visible with a stable box and enabled (Playwright's actionability).
async fn wait_actionable(
    target: &Target,
    info: &mut Value,
    timeout_ms: u64,
) -> Result<(), CommandError> {
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut last_rect = Value::Null;
    loop {
        let visible = info["visible"] == true && has_box(info);
        let enabled = info["disabled"] != true;
        if visible && enabled && info["rect"] == last_rect {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let (code, why) = if !visible {
                (ErrorCode::ElementHidden, "is not visible")
            } else if !enabled {
                (ErrorCode::ElementDisabled, "is disabled")
            } else {
                (ErrorCode::ActionTimeout, "kept moving")
            };
            return Err(CommandError::new(
                code,
                format!(
                    "element {} {why} after {timeout_ms} ms",
                    target.element.index
                ),
            ));
        }
        last_rect = info["rect"].clone();
        tokio::time::sleep(Duration::from_millis(if visible && enabled {
            16
        } else {
            100
        }))
        .await;
        *info = inspect(target).await?;
    }
}

/// The box `[x, y, width, height]` of snapshot element `index` in the main viewport, after
/// scrolling it into view, with its tab (for an element image).
pub(crate) async fn element_box(
    task: &Task,
    index: u32,
) -> Result<(Arc<Tab>, [f64; 4]), CommandError> {
    let target = resolve_index(task, index).await?;
    let info = inspect(&target).await?;
    let (dx, dy) = target
        .tab
        .frame_offset(&target.frames, &target.frame)
        .await?;
    let rect = shifted_box(&info["rect"], (dx, dy)).ok_or_else(|| {
        CommandError::new(
            ErrorCode::ElementHidden,
            format!("element {index} has no box to capture"),
        )
    })?;
    Ok((target.tab.clone(), rect))
}

/// A probe's `rect` (`[x, y, width, height]` in its frame) moved by the frame's `offset` into
/// the main viewport; `None` when it is missing or empty.
pub(crate) fn shifted_box(rect: &Value, offset: (f64, f64)) -> Option<[f64; 4]> {
    let r: Vec<f64> = rect
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    match r.as_slice() {
        [x, y, w, h] if *w > 0.0 && *h > 0.0 => Some([x + offset.0, y + offset.1, *w, *h]),
        _ => None,
    }
}

async fn mouse_click_at(
    target: &Target,
    info: &Value,
    offset: (f64, f64),
) -> Result<(), CommandError> {
    let center = info["center"].as_array().ok_or_else(|| {
        CommandError::new(ErrorCode::ElementHidden, "the element has no box to click")
    })?;
    let x = center.first().and_then(Value::as_f64).unwrap_or(0.0) + offset.0;
    let y = center.get(1).and_then(Value::as_f64).unwrap_or(0.0) + offset.1;
    target.tab.mouse_click(x, y).await
}

async fn js_click(target: &Target) -> Result<(), CommandError> {
    let res = target
        .tab
        .call_function(
            &target.frame,
            js::ELEMENT_PROBE_JS,
            json!({"op": "js_click", "path": target.element.locator}),
        )
        .await?;
    if res["clicked"] == true {
        Ok(())
    } else {
        Err(stale(format!(
            "element {} is no longer in the page",
            target.element.index
        )))
    }
}

/// Checks that a field accepts text; the error codes of COMMANDS.md "Input modes".
fn check_editable(info: &Value, index: u32) -> Result<(), CommandError> {
    if info["disabled"] == true {
        return Err(CommandError::new(
            ErrorCode::ElementDisabled,
            format!("element {index} is disabled"),
        ));
    }
    if info["readOnly"] == true {
        return Err(CommandError::new(
            ErrorCode::ElementReadOnly,
            format!("element {index} is read-only"),
        ));
    }
    if info["editable"] != true {
        return Err(CommandError::new(
            ErrorCode::ElementNotEditable,
            format!(
                "element {index} (<{}>) does not accept text",
                info["tag"].as_str().unwrap_or("?").to_lowercase()
            ),
        ));
    }
    Ok(())
}

async fn probe_op(target: &Target, op: &str, extra: Value) -> Result<Value, CommandError> {
    let mut args = json!({"op": op, "path": target.element.locator});
    if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
        a.extend(e);
    }
    let res = target
        .tab
        .call_function(&target.frame, js::ELEMENT_PROBE_JS, args)
        .await?;
    if res["found"] == false {
        return Err(stale(format!(
            "element {} is no longer in the page",
            target.element.index
        )));
    }
    Ok(res)
}

fn input_text(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    let mode = input_mode(p.str_opt("mode")?)?;
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let target = resolve_index(&task, index).await?;
        let info = inspect(&target).await?;
        let real = match mode {
            InputMode::Auto => info["visible"] == true && has_box(&info),
            InputMode::Fill | InputMode::Type => true,
            InputMode::Js => false,
        };
        if real {
            check_editable(&info, index)?;
        }
        if !real {
            probe_op(&target, "set_value", json!({"value": text})).await?;
            return Ok(json!({
                "mode": "js",
                "committed": false,
                "note": "the value was set through the DOM setter with input/change events",
                "hint": "framework models (Vue/React) may not see it; for visible fields use mode=native",
            }));
        }
        if mode == InputMode::Type {
            probe_op(&target, "focus_end", json!({})).await?;
            target.tab.type_keys(&text).await?;
            let mut data = json!({"mode": "type", "committed": true});
            mark_password(&mut data, &info);
            return Ok(data);
        }
        probe_op(&target, "focus_select", json!({})).await?;
        target.tab.insert_text(&text).await?;
        let mut data = json!({"mode": "fill", "committed": true});
        mark_password(&mut data, &info);
        Ok(data)
    }))
}

/// Says so in the receipt when the field is a password field (the trace log masks what was
/// typed into it).
fn mark_password(data: &mut Value, info: &Value) {
    if info["type"]
        .as_str()
        .is_some_and(|t| t.eq_ignore_ascii_case("password"))
    {
        data["password"] = json!(true);
    }
}

fn type_text(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let target = resolve_index(&task, index).await?;
        let info = inspect(&target).await?;
        check_editable(&info, index)?;
        probe_op(&target, "focus_end", json!({})).await?;
        target.tab.type_keys(&text).await?;
        let mut data = json!({"mode": "type", "typed": text.chars().count()});
        mark_password(&mut data, &info);
        Ok(data)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_aliases() {
        assert_eq!(click_mode(Some("dispatch".into())), ClickMode::Js);
        assert_eq!(click_mode(Some("COORDS".into())), ClickMode::Mouse);
        assert_eq!(click_mode(Some("playwright".into())), ClickMode::Native);
        assert_eq!(click_mode(Some("whatever".into())), ClickMode::Auto);
        assert_eq!(input_mode(Some("set_value".into())).unwrap(), InputMode::Js);
        assert_eq!(input_mode(Some("press".into())).unwrap(), InputMode::Type);
        assert!(input_mode(Some("paste".into())).is_err());
    }
}
