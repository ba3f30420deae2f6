//! Native dialogs: `get_dialog`, `clear_dialog` (and their `*_js_*` synonyms),
//! `set_dialog_behavior`.
//!
//! `alert`/`confirm`/`prompt`/`beforeunload` are answered the moment they open by the task's
//! background handler (`browser/events.rs`), by the task's policy; these commands only read or
//! clear the record of the last one and set the policy. A record is history, not "a dialog is on
//! screen now"; DOM modals are another thing entirely (`get_modals`).

use serde_json::{json, Value};

use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::Params;
use crate::registry::{CommandFuture, CommandSpec, Kind, ParamSpec};

const CONSUME: ParamSpec = ParamSpec {
    name: "consume",
    kind: Kind::Bool,
    required: false,
    default: Some("false"),
    doc: "clear the record after reading",
};

/// The dialogs group.
pub const SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "get_dialog",
        group: "dialogs",
        summary: "The last native dialog (alert, confirm, prompt) the task's tabs showed",
        doc: "Dialogs are answered the moment they open (accepted unless set_dialog_behavior \
              says dismiss) and only the last one is remembered, with a per-task `seq`: compare \
              it, or read with consume, to tell a new dialog from an old one. Not DOM modals.",
        params: &[CONSUME],
        needs_task: true,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "local d = page:get_dialog{ consume = true }.data.dialog",
        handler: get_dialog,
    },
    CommandSpec {
        name: "clear_dialog",
        group: "dialogs",
        summary: "Forget the last native dialog record (closes nothing on screen)",
        doc: "Clears the record only; answers cleared = whether there was one.",
        params: &[],
        needs_task: true,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "page:clear_dialog()",
        handler: clear_dialog,
    },
    CommandSpec {
        name: "get_js_dialog",
        group: "dialogs",
        summary: "Synonym of get_dialog",
        doc: "Exact synonym of get_dialog: same implementation and receipt.",
        params: &[CONSUME],
        needs_task: true,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: Some("get_dialog"),
        example: "page:get_js_dialog{}",
        handler: get_dialog,
    },
    CommandSpec {
        name: "clear_js_dialog",
        group: "dialogs",
        summary: "Synonym of clear_dialog",
        doc: "Exact synonym of clear_dialog (the catalogue marks this alias not retry-safe).",
        params: &[],
        needs_task: true,
        mutates_page: false,
        retry_safe: false,
        long_running: false,
        alias_of: Some("clear_dialog"),
        example: "page:clear_js_dialog()",
        handler: clear_dialog,
    },
    CommandSpec {
        name: "set_dialog_behavior",
        group: "dialogs",
        summary: "Accept (default) or dismiss the native dialogs that open from now on",
        doc: "Per task; affects only dialogs that appear afterwards and never replays earlier \
              ones. A dismissed prompt returns null to the page, a dismissed confirm false.",
        params: &[ParamSpec {
            name: "dismiss",
            kind: Kind::Bool,
            required: false,
            default: Some("false"),
            doc: "true = future dialogs are dismissed; false/absent = accepted",
        }],
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "page:set_dialog_behavior{ dismiss = true }",
        handler: set_dialog_behavior,
    },
];

fn get_dialog(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let consume = p.bool_or("consume", false)?;
    Ok(Box::pin(async move {
        let events = &cx.task()?.events;
        let record = if consume {
            events.take_dialog()
        } else {
            events.last_dialog()
        };
        let dialog = record.map_or(Value::Null, |d| d.to_json());
        Ok(json!({"dialog": dialog, "consumed": consume && !dialog.is_null()}))
    }))
}

fn clear_dialog(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        let cleared = cx.task()?.events.take_dialog().is_some();
        Ok(json!({"cleared": cleared}))
    }))
}

fn set_dialog_behavior(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let dismiss = p.bool_or("dismiss", false)?;
    Ok(Box::pin(async move {
        let events = &cx.task()?.events;
        let previous = events.dismiss_dialogs();
        events.set_dismiss_dialogs(dismiss);
        Ok(json!({"dismiss": dismiss, "previous": if previous { "dismiss" } else { "accept" }}))
    }))
}
