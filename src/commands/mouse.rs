//! The real mouse: `mouse_move`, `mouse_down`, `mouse_up`, `mouse_wheel`, `mouse_click`,
//! `mouse_click_by_selector`.
//!
//! Trusted events through `Input.dispatchMouseEvent` (the `Tab` mouse methods) at viewport
//! coordinates of the current tab's main frame, in CSS px: the coordinates `get_modals` reports
//! (`closePoint`, `buttonPoints`, shifted out of iframes) and `get_element_box` answers. The
//! tab remembers where the mouse is and which buttons it holds, so `mouse_move` between
//! `mouse_down` and `mouse_up` carries them (a drag) and down/up/wheel act where the mouse is.
//! A background tab gets no input until it is in front (Chromium holds its mouse moves), so
//! every command here first brings a hidden current tab to the front.
//!
//! `mouse_click` answers the click receipt (`click_receipt.rs`), with `hit` the element the point
//! reached before the click. `mouse_click_by_selector` finds its element with the toolkit's
//! selector locator (`target/`) and clicks it in the toolkit's mouse mode.

use serde::Deserialize;
use serde_json::{json, Value};

use super::click_receipt;
use super::observe::{self, PageMark};
use super::target::{self, ClickMode, Clicked, Summary, Takes};
use crate::browser::tab::{MouseButton, Pointer};
use crate::browser::task::Task;
use crate::browser::Tab;
use crate::command::*;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};
use std::sync::Arc;

const BUTTON: ParamSpec =
    string("button", "left | right | middle (anything else = left)").or("\"left\"");

/// Most clicks one `mouse_click` makes (a triple click selects a paragraph; more is a mistake).
const MAX_CLICKS: f64 = 20.0;

const CLICK_COUNT: ParamSpec = int("clickCount", "clicks, at most 20 (<= 0 -> 1)")
    .or("1")
    .range(f64::NEG_INFINITY, MAX_CLICKS);

/// The mouse group.
pub const SPECS: &[CommandSpec] = &[
    Group::Mouse
        .action("mouse_move", mouse_move)
        .summary("Move the real mouse to a viewport point (a drag while a button is down)")
        .doc("A trusted mouse move to (x, y), CSS px of the current tab's \
              viewport. Buttons pressed by mouse_down and not yet released are carried \
              (`buttons`), so the page sees a drag. Answers where the mouse is and the \
              buttons it holds.")
        .params(&[
            number("x", "viewport x in CSS px").req(),
            number("y", "viewport y in CSS px").req(),
        ])
        .example("page:mouse_move{ x = 200, y = 120 }"),
    Group::Mouse
        .action("mouse_down", mouse_down)
        .summary("Press a mouse button where the mouse is")
        .doc("mousePressed at the mouse's position (the last mouse_move or click). Always pair \
              with mouse_up: a forgotten mouse_up turns later moves into drags.")
        .params(&[BUTTON])
        .example("page:mouse_move{ x = 10, y = 10 }\npage:mouse_down{}\npage:mouse_move{ x = 200, y = 10 }\npage:mouse_up{}"),
    Group::Mouse
        .action("mouse_up", mouse_up)
        .summary("Release a mouse button where the mouse is")
        .doc("mouseReleased at the mouse's position; the button no longer travels with moves.")
        .params(&[BUTTON])
        .example("page:mouse_up{ button = \"left\" }"),
    Group::Mouse
        .action("mouse_wheel", mouse_wheel)
        .summary("Turn the mouse wheel where the mouse is (positive deltaY scrolls down)")
        .doc("mouseWheel at the mouse's position: what is under it scrolls (mouse_move there \
              first to scroll an inner area). The scroll itself happens a frame later.")
        .params(&[number("deltaY", "wheel delta in CSS px; positive scrolls down").req()])
        .example("page:mouse_move{ x = 300, y = 300 }\npage:mouse_wheel{ deltaY = 400 }"),
    Group::Mouse
        .action("mouse_click", mouse_click)
        .summary("Click the real mouse at a viewport point and report what changed")
        .doc("Moves there, then presses and releases (clickCount times: 2 is a double click). \
              The point is in CSS px of the current tab's viewport, as get_modals closePoint / \
              buttonPoints and get_element_box give it. Answers the click receipt with mode \
              mouse and `hit`, the element at the point before the click (null: nothing there, \
              e.g. outside the viewport).")
        .params(&[
            number("x", "viewport x in CSS px").req(),
            number("y", "viewport y in CSS px").req(),
            BUTTON,
            CLICK_COUNT,
        ])
        .example("local m = page:get_modals():unwrap()\nlocal p = m.top.closePoint\npage:mouse_click{ x = p[1], y = p[2] }"),
    Group::Mouse
        .action("mouse_click_by_selector", mouse_click_by_selector)
        .summary("Click the real mouse on the element a selector matches")
        .doc("The selector is looked up in the main frame (a visible match whose point receives \
              events is preferred among the first 20); the element is scrolled into view and \
              clicked with real mouse events at a point of its own boxes that hit-tests to it \
              (its centre when free). No match is ELEMENT_NOT_FOUND; no box is ELEMENT_HIDDEN; \
              a covered element is never clicked through (ELEMENT_OBSCURED with coveredBy: \
              close the overlay first). Answers the click receipt with mode mouse and the \
              selector's match details. Equivalent to click_element_by_selector with mode \
              mouse, plus button and clickCount.")
        .params(&[
            string("selector", "selector; looked up in the main frame").req(),
            BUTTON,
            CLICK_COUNT,
            int("timeoutMs", "accepted for compatibility; the click does not wait (use wait_for_element first)"),
        ])
        .example("page:mouse_click_by_selector{ selector = \".ant-modal-close\" }"),
];

/// The answer of `point_probe.js`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AtPoint {
    hit: Option<Summary>,
    in_viewport: bool,
    visibility: String,
    page: PageMark,
}

/// The current tab, brought to the front when its page is hidden (a background tab gets no
/// mouse input until then).
async fn front_tab(task: &Task) -> Result<Arc<Tab>, CommandError> {
    let tab = task.tab()?;
    let main = tab.main_frame_local();
    let at = tab
        .call_probe::<AtPoint>(&main, js::POINT_PROBE_JS, json!({"x": -1, "y": -1}))
        .await?;
    if at.visibility == "hidden" {
        tab.bring_to_front().await?;
    }
    Ok(tab)
}

fn pointer_json(p: Pointer) -> Value {
    json!({"x": p.x, "y": p.y, "buttons": p.buttons})
}

fn mouse_move(p: &mut Params) -> Prepared<TaskCx> {
    let x = p.num_opt("x")?.ok_or_else(|| p.missing("x"))?;
    let y = p.num_opt("y")?.ok_or_else(|| p.missing("y"))?;
    run(move |cx: TaskCx| async move {
        let tab = front_tab(&cx.task).await?;
        tab.mouse_move(x, y).await?;
        Ok(pointer_json(tab.pointer()))
    })
}

fn button_command(p: &mut Params, down: bool) -> Prepared<TaskCx> {
    let button = MouseButton::parse(p.str_opt("button")?.as_deref());
    run(move |cx: TaskCx| async move {
        let tab = front_tab(&cx.task).await?;
        let after = tab.mouse_button(button, down, 1).await?;
        let mut data = pointer_json(after);
        data["button"] = json!(button.as_str());
        Ok(data)
    })
}

fn mouse_down(p: &mut Params) -> Prepared<TaskCx> {
    button_command(p, true)
}

fn mouse_up(p: &mut Params) -> Prepared<TaskCx> {
    button_command(p, false)
}

fn mouse_wheel(p: &mut Params) -> Prepared<TaskCx> {
    let dy = p.num_opt("deltaY")?.ok_or_else(|| p.missing("deltaY"))?;
    run(move |cx: TaskCx| async move {
        let tab = front_tab(&cx.task).await?;
        let at = tab.mouse_wheel(0.0, dy).await?;
        let mut data = pointer_json(at);
        data["deltaY"] = json!(dy);
        Ok(data)
    })
}

fn mouse_click(p: &mut Params) -> Prepared<TaskCx> {
    let x = p.num_opt("x")?.ok_or_else(|| p.missing("x"))?;
    let y = p.num_opt("y")?.ok_or_else(|| p.missing("y"))?;
    let button = MouseButton::parse(p.str_opt("button")?.as_deref());
    let count = p
        .int_opt("clickCount")?
        .unwrap_or(1)
        .clamp(1, MAX_CLICKS as i64) as u32;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let tab = task.tab()?;
        let main = tab.main_frame_local();
        let at = tab
            .call_probe::<AtPoint>(&main, js::POINT_PROBE_JS, json!({"x": x, "y": y}))
            .await;
        let (hit, in_viewport, mark) = match at {
            Ok(at) => {
                if at.visibility == "hidden" {
                    tab.bring_to_front().await?;
                }
                (at.hit, at.in_viewport, Ok(at.page))
            }
            Err(e) => (None, true, Err(e)),
        };
        let before = observe::observation_in(&task, &tab, &main, mark)
            .await
            .armed(&tab, &main)
            .await;
        tab.mouse_click_with(x, y, button, count).await?;
        let (after, recovered) = observe::observe_after_in(&task, &tab, &main, &before).await;
        let mut receipt = observe::compare(&before, &after, recovered, hit.as_ref());
        receipt["mode"] = json!("mouse");
        receipt["x"] = json!(x);
        receipt["y"] = json!(y);
        receipt["clickPoint"] = json!([x, y]);
        receipt["button"] = json!(button.as_str());
        receipt["clickCount"] = json!(count);
        if !in_viewport {
            receipt["hint"] = json!("the point is outside the viewport: the click reached nothing (coordinates are viewport CSS px, as get_modals and get_element_box give them)");
        }
        Ok(receipt)
    })
}

fn mouse_click_by_selector(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::selector_param(p, Takes::PLAIN)?;
    let button = MouseButton::parse(p.str_opt("button")?.as_deref());
    let count = p
        .int_opt("clickCount")?
        .unwrap_or(1)
        .clamp(1, MAX_CLICKS as i64) as u32;
    // Read so it is not reported as unknown; the upstream service does not use it either.
    let _ = p.int_opt("timeoutMs")?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        front_tab(&task).await?;
        let (target, state) = target::find(&task, &locator, ClickMode::Mouse.first_read()).await?;
        let clicked = if button == MouseButton::Left && count == 1 {
            target.click(&task, state, ClickMode::Mouse, 0).await?
        } else {
            // The toolkit's mouse mode, with another button or more clicks: the same refusals
            // (disabled, no box, covered), then the clicks at the hit-tested point.
            if state.disabled {
                return Err(CommandError::new(
                    ErrorCode::ElementDisabled,
                    format!("{} is disabled; a click would not reach it", target.label),
                ));
            }
            let point = target.click_point(&state)?;
            let mark = state
                .page
                .clone()
                .ok_or_else(|| CommandError::failed("the read before the click took no page mark"));
            let before = target.observation(&task, mark).await;
            target
                .tab
                .mouse_click_with(point[0], point[1], button, count)
                .await?;
            Clicked {
                state,
                before,
                mode: "mouse",
                fallback: None,
            }
        };
        let mut receipt = Box::pin(click_receipt::click_receipt(&task, &target, clicked)).await;
        if let (Some(located), Value::Object(r)) = (&target.located, &mut receipt) {
            for (k, v) in located {
                r.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        receipt["target"] = json!(target.described);
        receipt["button"] = json!(button.as_str());
        receipt["clickCount"] = json!(count);
        Ok(receipt)
    })
}
