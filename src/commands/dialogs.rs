//! Native dialogs: `get_dialog`, `clear_dialog` (and their `*_js_*` synonyms),
//! `set_dialog_behavior`.
//!
//! `alert`/`confirm`/`prompt`/`beforeunload` are answered the moment they open by the task's
//! background handler (`browser/events.rs`), by the task's policy; these commands only read or
//! clear the record of the last one and set the policy. A record is history, not "a dialog is on
//! screen now"; DOM modals are another thing entirely (`get_modals`).

use serde_json::{json, Value};

use crate::command::*;
use crate::protocol::Params;

const CONSUME: ParamSpec = boolean("consume", "clear the record after reading").or("false");

const GET_DIALOG: CommandSpec = Group::Dialogs
    .read("get_dialog", get_dialog)
    .summary("The last native dialog (alert, confirm, prompt) the task's tabs showed")
    .doc(
        "Dialogs are answered the moment they open (accepted unless set_dialog_behavior \
              says dismiss) and only the last one is remembered, with a per-task `seq`: compare \
              it, or read with consume, to tell a new dialog from an old one. Not DOM modals.",
    )
    .params(&[CONSUME])
    .example("local d = page:get_dialog{ consume = true }.data.dialog");

const CLEAR_DIALOG: CommandSpec = Group::Dialogs
    .read("clear_dialog", clear_dialog)
    .summary("Forget the last native dialog record (closes nothing on screen)")
    .doc("Clears the record only; answers cleared = whether there was one.")
    .example("page:clear_dialog()");

/// The dialogs group.
pub const SPECS: &[CommandSpec] = &[
    GET_DIALOG,
    CLEAR_DIALOG,
    alias(&GET_DIALOG, "get_js_dialog").example("local d = page:get_js_dialog{}.data.dialog"),
    // The catalogue marks this synonym, unlike clear_dialog, not retry-safe.
    alias(&CLEAR_DIALOG, "clear_js_dialog")
        .retry_safe(false)
        .example("page:clear_js_dialog()"),
    Group::Dialogs
        .read("set_dialog_behavior", set_dialog_behavior)
        .summary("Accept (default) or dismiss the native dialogs that open from now on")
        .doc(
            "Per task; affects only dialogs that appear afterwards and never replays earlier \
              ones. A dismissed prompt returns null to the page, a dismissed confirm false.",
        )
        .params(&[
            boolean(
                "dismiss",
                "true = future dialogs are dismissed; false/absent = accepted",
            )
            .or("false"),
            string(
                "promptText",
                "what accepted prompts answer from now on (absent: each prompt's default value; \
                 an extension, as Playwright's dialog.accept(promptText))",
            ),
        ])
        .example("page:set_dialog_behavior{ dismiss = true }")
        .mutates(true),
];

fn get_dialog(p: &mut Params) -> Prepared<TaskCx> {
    let consume = p.bool_or("consume", false)?;
    run(move |cx: TaskCx| async move {
        let events = &cx.task.events;
        let record = if consume {
            events.take_dialog()
        } else {
            events.last_dialog()
        };
        let dialog = record.map_or(Value::Null, |d| d.to_json());
        Ok(json!({"dialog": dialog, "consumed": consume && !dialog.is_null()}))
    })
}

fn clear_dialog(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let cleared = cx.task.events.take_dialog().is_some();
        Ok(json!({"cleared": cleared}))
    })
}

fn set_dialog_behavior(p: &mut Params) -> Prepared<TaskCx> {
    let dismiss = p.bool_or("dismiss", false)?;
    let prompt_text = p.str_opt("promptText")?;
    run(move |cx: TaskCx| async move {
        let events = &cx.task.events;
        let previous = events.dismiss_dialogs();
        events.set_dismiss_dialogs(dismiss);
        events.set_prompt_text(prompt_text.clone());
        Ok(json!({
            "dismiss": dismiss,
            "promptText": prompt_text,
            "previous": if previous { "dismiss" } else { "accept" },
        }))
    })
}
