//! Reading element data: `get_element_text`, `get_element_html`, `get_element_value`,
//! `get_element_attribute`, `get_element_listeners`, `get_element_count`, `get_element_box`,
//! `is_visible`, `is_enabled`, `is_checked`.
//!
//! Specs and handlers only. An index or a selector (in its `frame`) becomes a live element
//! through `target/` ([`Locator`]; a selector here takes its first match in document order,
//! as reads do not prefer visible matches); the reads are `element_read.js` ops and the state
//! of the element probe's read. Nothing scrolls or changes the page. An index the snapshot does
//! not hold is `STALE_ELEMENT` (no stale recovery for reads); a selector matching nothing is
//! `ELEMENT_NOT_FOUND` with `matched`.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::browser::task::Task;
use crate::command::*;
use crate::commands::target::{
    self, Locator, Pick, Read, Takes, Target, FRAME_PARAM, INDEX_OR, SELECTOR_OR,
};
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

const INDEX_REQ: ParamSpec = int(
    "index",
    "element index from the latest get_browser_state snapshot (frame routing is automatic)",
)
.req()
.range(0.0, f64::INFINITY);

/// The read-element group.
pub const SPECS: &[CommandSpec] = &[
    Group::ReadElement
        .read("get_element_text", get_element_text)
        .summary("Read an element's innerText (by index, or selector in a frame)")
        .doc("`target` says which element was read. With canvasOnly and an empty text, also \
              `canvasOnly`: whether the element is a <canvas> or holds one and no text, with a \
              hint to read it from a screenshot instead.")
        .params(&[
            INDEX_OR,
            SELECTOR_OR,
            boolean("canvasOnly", "when the text is empty, also report whether the element is essentially only <canvas>").or("false"),
            FRAME_PARAM,
        ])
        .example("print(page:get_element_text{ selector = \"h1\" }:unwrap().text)"),
    Group::ReadElement
        .read("get_element_html", get_element_html)
        .summary("Read the innerHTML of the element with this snapshot index")
        .doc("The element's innerHTML as the page has it now (no stale-index recovery).")
        .params(&[INDEX_REQ])
        .example("print(page:get_element_html{ index = 3 }:unwrap().html)"),
    Group::ReadElement
        .read("get_element_value", get_element_value)
        .summary("Read the live value of the form field with this snapshot index")
        .doc("The control's current value (a content-editable element's text); null for \
              elements without one (hasValue false). Password fields answer [redacted] and \
              their length. Extension: a selector (in a frame) instead of the index.")
        .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM])
        .example("print(page:get_element_value{ index = 2 }:unwrap().value)"),
    Group::ReadElement
        .read("get_element_attribute", get_element_attribute)
        .summary("Read one attribute of the element with this snapshot index (null if absent)")
        .doc("value is the attribute's text, or null when the element does not have it \
              (present false).")
        .params(&[INDEX_REQ, string("name", "attribute name").req()])
        .example("print(page:get_element_attribute{ index = 0, name = \"href\" }:unwrap().value)"),
    Group::ReadElement
        .read("get_element_listeners", get_element_listeners)
        .summary("Which event listeners an element has (the browser's own list, plus traces)")
        .doc("Chromium's DOMDebugger.getEventListeners on the live element (depth 1, piercing) \
              gives detection cdp and a definite hasListeners (false only then); framework \
              traces (Vue, React, inline handlers, jQuery) are added to `listeners`. Without the \
              browser's answer, detection is heuristic and hasListeners is true or null, never \
              false. An element that cannot be found answers found false with a note.")
        .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM])
        .example("local l = page:get_element_listeners{ selector = \"#go\" }:unwrap()\nprint(l.hasListeners, table.concat(l.listeners, \",\"))"),
    Group::ReadElement
        .read("get_element_count", get_element_count)
        .summary("Count the elements a selector matches (0 is an answer, not a failure)")
        .doc("Counts in the main frame or in `frame`; an unknown frame is INVALID_ARGUMENT \
              listing the frames, a selector that does not parse INVALID_ARGUMENT.")
        .params(&[string("selector", "selector to count").req(), FRAME_PARAM])
        .example("print(page:get_element_count{ selector = \"li\" }:unwrap().count)"),
    Group::ReadElement
        .read("get_element_box", get_element_box)
        .summary("The box of the element with this snapshot index, in main-viewport CSS px")
        .doc("x / y / width / height relative to the main viewport (frames' offsets added); \
              the page is not scrolled. No box: ELEMENT_HIDDEN.")
        .params(&[INDEX_REQ])
        .example("local b = page:get_element_box{ index = 3 }:unwrap()\nprint(b.x, b.y, b.width, b.height)"),
    Group::ReadElement
        .read("is_visible", is_visible)
        .summary("Whether an element is visible (a box, not visibility:hidden)")
        .doc("visible: a non-empty box, and neither visibility:hidden nor display:none. A \
              selector takes its first match; no match is ELEMENT_NOT_FOUND.")
        .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM])
        .example("print(page:is_visible{ selector = \"#dialog\" }:unwrap().visible)"),
    Group::ReadElement
        .read("is_enabled", is_enabled)
        .summary("Whether an element is enabled (disabled, aria-disabled and read-only are not)")
        .doc("enabled is false for disabled (also inside a disabled fieldset), aria-disabled \
              and read-only elements; the three are reported too.")
        .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM])
        .example("print(page:is_enabled{ selector = \"#submit\" }:unwrap().enabled)"),
    Group::ReadElement
        .read("is_checked", is_checked)
        .summary("Whether a checkbox or radio (or a checkable ARIA role) is checked")
        .doc("checked is null for elements that cannot be checked (with a note).")
        .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM])
        .example("print(page:is_checked{ selector = \"#agree\" }:unwrap().checked)"),
];

/// Reads `index` or `selector` (+ `frame`); selectors take their first match (reads).
fn locator(p: &mut Params, cmd: &str) -> Result<Locator, CommandError> {
    Ok(target::index_or_selector(p, cmd, Takes::FRAME)?.with_pick(Pick::Document))
}

fn index(p: &mut Params) -> Result<Locator, CommandError> {
    Ok(Locator::Index(target::index_value(p.int_req("index")?)?))
}

/// Finds the element without scrolling or hit-testing it.
async fn element(
    task: &Task,
    locator: &Locator,
) -> Result<(Target, target::ElementState), CommandError> {
    target::find(task, locator, Read::QUIET).await
}

/// `data` with `target` (how the element was named) and what a selector's choice saw.
fn with_target(mut data: Value, target: &Target) -> Value {
    if let Value::Object(map) = &mut data {
        map.insert("target".into(), json!(target.described));
        if let Some(located) = &target.located {
            for key in ["matched", "chosenIndex", "selectorNote"] {
                if let Some(v) = located.get(key) {
                    map.insert(key.into(), v.clone());
                }
            }
        }
        if !target.frame.is_main() {
            map.insert("frameIndex".into(), json!(target.frame.ordinal));
            map.insert("frameUrl".into(), json!(target.frame.url));
        }
    }
    data
}

fn get_element_text(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "get_element_text");
    let canvas_only = p.bool_or("canvasOnly", false)?;
    let locator = locator?;
    run(move |cx: TaskCx| async move {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Text {
            text: String,
            canvas_only: Option<bool>,
            canvas_count: Option<u64>,
        }
        let (target, _) = element(&cx.task, &locator).await?;
        let read: Text = target
            .call(
                js::ELEMENT_READ_JS,
                "text",
                json!({"canvasOnly": canvas_only}),
            )
            .await?;
        let mut data = json!({"text": read.text});
        if let Some(canvas) = read.canvas_only {
            data["canvasOnly"] = json!(canvas);
            data["canvasCount"] = json!(read.canvas_count);
            data["hint"] = json!(if canvas {
                "the element draws its content on a <canvas>: there is no DOM text to read; take a screenshot (screenshot_element) and read it (ocr_image), or look for a legend or data table in the DOM"
            } else {
                "the element has no text; it may be empty, or its text may still be loading"
            });
        }
        Ok(with_target(data, &target))
    })
}

fn get_element_html(p: &mut Params) -> Prepared<TaskCx> {
    let locator = index(p)?;
    run(move |cx: TaskCx| async move {
        #[derive(Deserialize)]
        struct Html {
            html: String,
        }
        let (target, _) = element(&cx.task, &locator).await?;
        let read: Html = target.call(js::ELEMENT_READ_JS, "html", json!({})).await?;
        Ok(with_target(json!({"html": read.html}), &target))
    })
}

fn get_element_value(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "get_element_value")?;
    run(move |cx: TaskCx| async move {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Val {
            value: Option<String>,
            has_value: bool,
            password: bool,
            length: Option<usize>,
        }
        let (target, _) = element(&cx.task, &locator).await?;
        let read: Val = target.call(js::ELEMENT_READ_JS, "value", json!({})).await?;
        let mut data = json!({"value": read.value, "hasValue": read.has_value});
        if read.password {
            data["password"] = json!(true);
            data["length"] = json!(read.length);
        }
        if !read.has_value {
            data["note"] = json!("the element is not a form field and not content-editable: it has no value (get_element_text reads its text)");
        }
        Ok(with_target(data, &target))
    })
}

fn get_element_attribute(p: &mut Params) -> Prepared<TaskCx> {
    let locator = index(p);
    let name = p.str_req("name")?;
    let locator = locator?;
    run(move |cx: TaskCx| async move {
        #[derive(Deserialize)]
        struct Attr {
            value: Option<String>,
            present: bool,
        }
        let (target, _) = element(&cx.task, &locator).await?;
        let read: Attr = target
            .call(js::ELEMENT_READ_JS, "attribute", json!({"name": name}))
            .await?;
        Ok(with_target(
            json!({"name": name, "value": read.value, "present": read.present}),
            &target,
        ))
    })
}

/// The framework traces of JS-PROBES.md §13.1.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Traces {
    tag: String,
    id: Option<String>,
    class_name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    vue2: Option<bool>,
    vue3: Option<bool>,
    react: Option<bool>,
    inline: Option<bool>,
    jquery: Option<bool>,
    traces: Vec<String>,
}

fn get_element_listeners(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "get_element_listeners")?;
    run(move |cx: TaskCx| async move {
        let target = match element(&cx.task, &locator).await {
            Ok((target, _)) => target,
            Err(e) if matches!(e.code, ErrorCode::ElementNotFound | ErrorCode::StaleElement) => {
                return Ok(json!({
                    "found": false,
                    "target": locator.describe(),
                    "note": format!("the element could not be located: {}", e.msg),
                    "matched": e.details.as_deref().and_then(|d| d.get("matched").cloned()),
                }));
            }
            Err(e) => return Err(e),
        };
        let arg = json!({"op": "traces", "target": target.element_arg()});
        // Framework expandos live in the page's own world; the utility world is the fallback.
        let traces: Traces = match target
            .tab
            .call_probe_in_page_world(&target.frame, js::ELEMENT_READ_JS, arg.clone())
            .await
        {
            Ok(t) => t,
            Err(_) => {
                target
                    .call(js::ELEMENT_READ_JS, "traces", json!({}))
                    .await?
            }
        };
        let cdp = target
            .tab
            .event_listener_types(
                &target.frame,
                js::ELEMENT_READ_JS,
                json!({"op": "element", "target": target.element_arg()}),
            )
            .await;
        let (types, cdp_error) = match cdp {
            Ok(Some(types)) => (Some(types), None),
            Ok(None) => {
                return Ok(with_target(
                    json!({"found": false, "note": "the element left the page while it was read"}),
                    &target,
                ))
            }
            Err(e) => (None, Some(e.msg)),
        };
        Ok(with_target(
            listeners_verdict(traces, types, cdp_error),
            &target,
        ))
    })
}

/// The tri-state verdict of JS-PROBES.md §13.3 from the traces and, when the browser
/// answered, its own listener types.
fn listeners_verdict(traces: Traces, cdp: Option<Vec<String>>, cdp_error: Option<String>) -> Value {
    let mut listeners = traces.traces.clone();
    let (has, detection) = match &cdp {
        Some(types) => {
            listeners.extend(types.iter().cloned());
            (json!(!types.is_empty()), "cdp")
        }
        None if !traces.traces.is_empty() => (json!(true), "heuristic"),
        None => (Value::Null, "heuristic"),
    };
    listeners.sort();
    listeners.dedup();
    let mut data = json!({
        "found": true,
        "tag": traces.tag,
        "id": traces.id,
        "className": traces.class_name,
        "type": traces.kind,
        "vue2": traces.vue2,
        "vue3": traces.vue3,
        "react": traces.react,
        "inline": traces.inline,
        "jquery": traces.jquery,
        "traces": traces.traces,
        "listeners": listeners,
        "hasListeners": has,
        "detection": detection,
    });
    if let Some(types) = &cdp {
        data["cdpListeners"] = json!(types);
        if types.is_empty() && !traces.traces.is_empty() {
            data["note"] = json!("framework traces name events, but the browser lists no listener on the element itself: the framework probably delegates them to an ancestor (React does), so the element can still react");
        } else if types.is_empty() {
            data["note"] = json!("the browser lists no listener on this element or its children; a click may still be handled by a listener on an ancestor (event delegation)");
        }
    } else {
        data["note"] = json!(if has.is_null() {
            "the browser's listener list was not available and no framework trace was found; native addEventListener leaves no trace, so this is unknown, not none"
        } else {
            "the browser's listener list was not available; framework traces show listeners"
        });
        data["cdpError"] = json!(cdp_error);
    }
    data
}

fn get_element_count(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::selector_param(p, Takes::FRAME)?.with_pick(Pick::Document);
    run(move |cx: TaskCx| async move {
        let (count, frame) = target::count(&cx.task, &locator).await?;
        let mut data = json!({"count": count, "target": locator.describe()});
        if !frame.is_main() {
            data["frameIndex"] = json!(frame.ordinal);
            data["frameUrl"] = json!(frame.url);
        }
        Ok(data)
    })
}

fn get_element_box(p: &mut Params) -> Prepared<TaskCx> {
    let locator = index(p)?;
    run(move |cx: TaskCx| async move {
        let (_, [x, y, width, height]) = target::locator_box(&cx.task, &locator, false).await?;
        Ok(json!({"x": x, "y": y, "width": width, "height": height, "target": locator.describe()}))
    })
}

fn is_visible(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "is_visible")?;
    run(move |cx: TaskCx| async move {
        let (target, state) = element(&cx.task, &locator).await?;
        Ok(with_target(json!({"visible": state.visible}), &target))
    })
}

fn is_enabled(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "is_enabled")?;
    run(move |cx: TaskCx| async move {
        let (target, state) = element(&cx.task, &locator).await?;
        let enabled = !state.disabled && !state.aria_disabled && !state.read_only;
        Ok(with_target(
            json!({
                "enabled": enabled,
                "disabled": state.disabled,
                "ariaDisabled": state.aria_disabled,
                "readOnly": state.read_only,
            }),
            &target,
        ))
    })
}

fn is_checked(p: &mut Params) -> Prepared<TaskCx> {
    let locator = locator(p, "is_checked")?;
    run(move |cx: TaskCx| async move {
        #[derive(Deserialize)]
        struct Checked {
            checked: Option<bool>,
            kind: Option<String>,
            indeterminate: bool,
        }
        let (target, _) = element(&cx.task, &locator).await?;
        let read: Checked = target
            .call(js::ELEMENT_READ_JS, "checked", json!({}))
            .await?;
        let mut data = json!({"checked": read.checked, "kind": read.kind});
        if read.indeterminate {
            data["indeterminate"] = json!(true);
        }
        if read.checked.is_none() {
            data["note"] = json!("the element is not a checkbox, radio or checkable ARIA role: it has no checked state");
        }
        Ok(with_target(data, &target))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces(names: &[&str]) -> Traces {
        Traces {
            tag: "BUTTON".into(),
            id: None,
            class_name: None,
            kind: None,
            vue2: None,
            vue3: None,
            react: None,
            inline: Some(!names.is_empty()),
            jquery: None,
            traces: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn only_the_browser_can_say_there_are_none() {
        let v = listeners_verdict(traces(&[]), Some(vec![]), None);
        assert_eq!(
            (v["hasListeners"].clone(), v["detection"].clone()),
            (json!(false), json!("cdp"))
        );
        let v = listeners_verdict(traces(&[]), None, Some("no session".into()));
        assert_eq!(
            v["hasListeners"],
            Value::Null,
            "absence of traces is no evidence"
        );
        assert_eq!(v["detection"], "heuristic");
        let v = listeners_verdict(traces(&["click"]), None, None);
        assert_eq!(v["hasListeners"], true);
        let v = listeners_verdict(traces(&["click"]), Some(vec![]), None);
        assert_eq!(v["hasListeners"], false);
        assert!(v["note"].as_str().unwrap().contains("delegates"));
        let v = listeners_verdict(
            traces(&["input"]),
            Some(vec!["click".into(), "input".into()]),
            None,
        );
        assert_eq!(v["listeners"], json!(["click", "input"]));
        assert_eq!(v["hasListeners"], true);
    }
}
