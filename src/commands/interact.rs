//! Interacting by index: `click_element_by_index`, `input_text`, `type_text`.
//!
//! Specs and handlers only: an index becomes a live element through `target.rs` (frame routing,
//! identity check, actionability, the click and input techniques), and a click becomes its
//! receipt through `observe.rs`. A missing or changed element is `STALE_ELEMENT`, never a
//! click on something else; a click that would not reach the element is never made.

use crate::command::*;
use crate::commands::observe;
use crate::commands::target::{self, ClickMode, InputMode, Locator, Read};
use crate::error::CommandError;
use crate::protocol::Params;

const INDEX_PARAM: ParamSpec = int(
    "index",
    "element index from the latest get_browser_state snapshot (frame routing is automatic)",
)
.req()
.range(0.0, f64::INFINITY);

/// The index-interaction group.
pub const SPECS: &[CommandSpec] = &[
    Group::InteractIndex
        .action("click_element_by_index", click_element_by_index)
        .summary("Click the element with this snapshot index and report what changed")
        .doc("Modes: auto and native (a real click once the element is visible, stable and \
              enabled, at a point of its own boxes that hit-tests to it; never through a \
              covering element: ELEMENT_OBSCURED with coveredBy; disabled: ELEMENT_DISABLED), \
              mouse (a real click at once), js (dispatch, the explicit bypass of covers). The \
              receipt compares URL, tab count and a page fingerprint before and after (changed, \
              effective). ok means the click happened, not that the business goal was reached; \
              never resend only because changed is false.")
        .params(&[
            INDEX_PARAM,
            string("mode", "auto | native | mouse | js (aliases: dispatch/force/event -> js; real/coordinate/coords -> mouse; playwright -> native)").or("\"auto\""),
            int("timeoutMs", "actionability timeout in ms, at most 60000 (inside the 90-s command bound); absent or <= 0 uses the configured 5000").or("5000").range(f64::NEG_INFINITY, 60_000.0),
        ])
        .example("local r = page:click_element_by_index{ index = 3 }\nif r.ok and not r.data.changed then print(r.data.hint) end"),
    Group::InteractIndex
        .action("input_text", input_text)
        .summary("Replace the value of the field with this index (real input, any script)")
        .doc("auto fills for real (focus, select all, insert text: frameworks see trusted input \
              events; non-ASCII text works) when the field is visible, else sets the value through \
              the native setter with input/change events (mode js, committed false). Date, time, \
              colour and range inputs are set like Playwright's fill (a malformed value is \
              INVALID_ARGUMENT). Every fill is read back: a field that does not show the text is \
              ACTION_FAILED. Disabled fields fail with ELEMENT_DISABLED, read-only ones with \
              ELEMENT_READ_ONLY.")
        .params(&[
            INDEX_PARAM,
            string("text", "replacement value (the field is cleared first); empty counts as missing").req().secret(Secrecy::Typed),
            string("mode", "auto | native (fill) | type (press; key by key, no clearing) | js (setvalue, set_value)").or("\"auto\""),
        ])
        .example("page:input_text{ index = 2, text = \"alice\" }"),
    Group::InteractIndex
        .action("type_text", type_text)
        .summary("Type text key by key after the field's existing content")
        .doc("Focuses the field with this index, puts the caret at the end and types each \
              character (ASCII as key events, other characters as text input). Does not clear.")
        .params(&[INDEX_PARAM, string("text", "text typed key by key after existing content").req().secret(Secrecy::Typed)])
        .example("page:type_text{ index = 2, text = \" more\" }"),
];

fn read_index(p: &mut Params) -> Result<u32, CommandError> {
    let index = p.int_req("index")?;
    u32::try_from(index).map_err(|_| {
        CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
    })
}

fn click_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    let index = read_index(p)?;
    let mode = ClickMode::parse(p.str_opt("mode")?.as_deref());
    let timeout_ms = p.int_opt("timeoutMs")?;
    run(move |cx: TaskCx| async move {
        let timeout_ms = match timeout_ms {
            Some(ms) if ms > 0 => ms.unsigned_abs(),
            _ => cx.engine.config.action_timeout_ms,
        };
        let task = cx.task;
        let (target, first) =
            target::find_or_recover(&task, &Locator::Index(index), mode.first_read()).await?;
        let clicked = target.click(&task, first, mode, timeout_ms).await?;
        Ok(observe::click_receipt(&task, &target, clicked).await)
    })
}

fn input_text(p: &mut Params) -> Prepared<TaskCx> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    let mode = InputMode::parse(p.str_opt("mode")?.as_deref())?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let (target, state) = target::find(&task, &Locator::Index(index), Read::default()).await?;
        target.input(&state, &text, mode).await
    })
}

fn type_text(p: &mut Params) -> Prepared<TaskCx> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let (target, state) = target::find(&task, &Locator::Index(index), Read::default()).await?;
        target.type_after(&state, &text).await?;
        let mut data = serde_json::json!({"mode": "type", "typed": text.chars().count()});
        if state.is_password() {
            data["password"] = serde_json::json!(true);
        }
        Ok(data)
    })
}
