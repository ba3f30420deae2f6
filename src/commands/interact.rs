//! Interacting by index: `click_element_by_index`, `input_text`, `type_text`.
//!
//! Specs and handlers only: an index becomes a live element through `target.rs` (frame routing,
//! identity check, actionability, the click and input techniques), and a click becomes its
//! receipt through `observe.rs`. A missing or changed element is `STALE_ELEMENT`, never a
//! click on something else; a click that would not reach the element is never made.

use crate::commands::observe;
use crate::commands::target::{self, ClickMode, InputMode, Locator, Read};
use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::Params;
use crate::registry::{CommandFuture, CommandSpec, Kind, ParamSpec};

// `request_human_input` (human.rs) captures element images through these.
pub(crate) use crate::commands::target::{element_box, shifted_box};

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

fn read_index(p: &mut Params) -> Result<u32, CommandError> {
    let index = p.int_req("index")?;
    u32::try_from(index).map_err(|_| {
        CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
    })
}

fn click_element_by_index(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let mode = ClickMode::parse(p.str_opt("mode")?.as_deref());
    let timeout_ms = match p.int_opt("timeoutMs")? {
        Some(ms) if ms > 0 => ms.unsigned_abs(),
        _ => cx.engine.config.action_timeout_ms,
    };
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let (target, first) =
            target::find_or_recover(&task, &Locator::Index(index), mode.first_read()).await?;
        let clicked = target.click(&task, first, mode, timeout_ms).await?;
        Ok(observe::click_receipt(&task, &target, clicked).await)
    }))
}

fn input_text(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    let mode = InputMode::parse(p.str_opt("mode")?.as_deref())?;
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let (target, state) = target::find(&task, &Locator::Index(index), Read::default()).await?;
        target.input(&state, &text, mode).await
    }))
}

fn type_text(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let index = read_index(p)?;
    let text = p.str_req("text")?;
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let (target, state) = target::find(&task, &Locator::Index(index), Read::default()).await?;
        target.type_after(&state, &text).await?;
        let mut data = serde_json::json!({"mode": "type", "typed": text.chars().count()});
        if state.is_password() {
            data["password"] = serde_json::json!(true);
        }
        Ok(data)
    }))
}
