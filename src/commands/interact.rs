//! Interacting by index: clicks, double clicks, hover, focus, check boxes, text input, uploads,
//! drags, keys, drop-downs and scrolling (COMMANDS.md "Interacting by index").
//!
//! Specs and handlers only: an index becomes a live element through `target/` (frame routing,
//! identity check, actionability, the click and input techniques), and a click becomes its
//! receipt through `click_receipt.rs`. A missing or changed element is `STALE_ELEMENT`, never a
//! click on something else; a click that would not reach the element is never made.

use crate::command::*;
use crate::commands::target::locator::{FRAME_PARAM, INDEX_OR, NTH_PARAM, SELECTOR_OR};
use crate::commands::target::{self, ClickMode, InputMode, Locator, Read, Takes};
use crate::commands::{click_receipt, observe};
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
    DOUBLE_CLICK,
    HOVER,
    FOCUS,
    CHECK,
    UNCHECK,
    UPLOAD_FILE,
    DRAG,
    SEND_KEYS,
    PRESS_KEY,
    KEY_DOWN,
    KEY_UP,
    GET_DROPDOWN_OPTIONS,
    SELECT_DROPDOWN_OPTION,
    SCROLL,
    SCROLL_TO_TEXT,
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
        let t0 = std::time::Instant::now();
        let (target, first) =
            target::find_or_recover(&task, &Locator::Index(index), mode.first_read()).await?;
        tracing::debug!(target: "moonpilot::click", "found after {:?}", t0.elapsed());
        let clicked = Box::pin(target.click(&task, first, mode, timeout_ms)).await?;
        tracing::debug!(target: "moonpilot::click", "clicked after {:?}", t0.elapsed());
        let receipt = Box::pin(click_receipt::click_receipt(&task, &target, clicked)).await;
        tracing::debug!(target: "moonpilot::click", "observed after {:?}", t0.elapsed());
        Ok(receipt)
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

// ---- Double click, hover, focus, check boxes, uploads, drags, keys, drop-downs, scrolling ----

const CLICK_MODE_PARAM: ParamSpec = string(
    "mode",
    "click technique: auto | native | mouse | js (aliases: dispatch/force/event -> js; real/coordinate/coords -> mouse; playwright -> native; anything else -> auto)",
)
.or("\"auto\"");

const DOUBLE_CLICK: CommandSpec = Group::InteractIndex
    .action(
        "double_click_element_by_index",
        double_click_element_by_index,
    )
    .summary("Double-click the element with this snapshot index and report what changed")
    .doc(
        "As click_element_by_index (actionability within the action timeout, hit test, never \
          through a covering element, the click receipt), with two clicks and a dblclick: real \
          mouse events with click counts 1 and 2, or dispatched events in mode js. moonpilot \
          also takes a selector (with frame and nth) instead of the index.",
    )
    .params(&[
        INDEX_OR,
        CLICK_MODE_PARAM,
        SELECTOR_OR,
        FRAME_PARAM,
        NTH_PARAM,
    ])
    .example("local r = page:double_click_element_by_index{ index = 4 }\nprint(r.data.changed)");

const HOVER: CommandSpec = Group::InteractIndex
    .action("hover_element_by_index", hover_element_by_index)
    .summary("Move the real mouse onto the element with this snapshot index")
    .doc(
        "Waits until the element is visible, stable and enabled (the action timeout), then moves \
          the mouse (trusted events) to a point of its own boxes that hit-tests to it: hover \
          styles and mouseover/pointerover listeners see it. A covered element is \
          ELEMENT_OBSCURED. Answers hit (what the pointer is over) and point. Takes a selector \
          (with frame and nth) instead of the index too.",
    )
    .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM, NTH_PARAM])
    .example("page:hover_element_by_index{ index = 2 }");

const FOCUS: CommandSpec = Group::InteractIndex
    .action("focus_element_by_index", focus_element_by_index)
    .summary("Focus the element with this snapshot index")
    .doc(
        "Focuses the element (no click, no selection change). Answers hit and focused (false, \
          with a note, for an element that does not take the focus). Takes a selector (with \
          frame and nth) instead of the index too.",
    )
    .params(&[INDEX_OR, SELECTOR_OR, FRAME_PARAM, NTH_PARAM])
    .example("page:focus_element_by_index{ index = 2 }\npage:send_keys{ keys = \"hello\" }");

/// check/uncheck: the catalogue's index and mode, and moonpilot's selector, frame and nth.
const CHECK_PARAMS: &[ParamSpec] = &[
    INDEX_OR,
    CLICK_MODE_PARAM,
    SELECTOR_OR,
    FRAME_PARAM,
    NTH_PARAM,
];

const CHECK: CommandSpec = Group::InteractIndex
    .action("check_element_by_index", check_element_by_index)
    .summary("Check the checkbox or radio button with this snapshot index")
    .doc(
        "Clicks the box (or its label, or an ARIA checkbox) with the click modes of \
          click_element_by_index when it is not checked yet, then reads it back: a box that is \
          still unchecked is ACTION_FAILED. One real click fires one change event. A box that is \
          already checked is left alone (alreadyChecked, nothing clicked). Answers hit, checked, \
          and with mode: mode / fallbackReason / fallbackFrom / note / coveredBy / coveredHint. \
          moonpilot also takes a selector (with frame and nth) instead of the index, as \
          is_checked does: `role=checkbox[name=\"…\"]` and `label=…` included.",
    )
    .params(CHECK_PARAMS)
    .example("page:check_element_by_index{ index = 5 }");

const UNCHECK: CommandSpec = Group::InteractIndex
    .action("uncheck_element_by_index", uncheck_element_by_index)
    .summary("Uncheck the checkbox with this snapshot index")
    .doc(
        "As check_element_by_index, the other way: clicked only when checked (alreadyUnchecked \
          otherwise), read back afterwards. A radio button cannot be unchecked (ACTION_FAILED). \
          Takes a selector instead of the index too.",
    )
    .params(CHECK_PARAMS)
    .example("page:uncheck_element_by_index{ index = 5 }");

const UPLOAD_FILE: CommandSpec = Group::InteractIndex
    .action("upload_file", upload_file)
    .summary("Give a file input a file (server path, inline base64 or a URL) and read it back")
    .doc("The input is the element of index or selector (file inputs in document order, hidden ones \
          too; nth picks explicitly), or the file input of a label or inside the element. The \
          file: path (absolute, or relative to the upload directory), contentBase64 (staged \
          there first) or url (downloaded by the browser, staged there). The page sees input and \
          change as after a user's choice. Then the page is observed (changed, up to 500 ms), \
          the input is read back live (filesLength, value, elementGone) and its listeners are \
          checked (listeners, hasListeners true/false/null, consumed listened/noListener/unknown); \
          effective is false only when nobody listens and nothing changed. ok does not mean the \
          page processed the file: judge by the page.")
    .params(&[
        target::INDEX_OR,
        target::SELECTOR_OR,
        string("path", "server-side file: absolute, or relative to the upload directory (escaping it is 'illegal path'); required unless contentBase64 or url is given"),
        string("contentBase64", "inline file content (data: URI prefix accepted; whitespace ignored); staged in the upload directory first"),
        string("url", "downloaded by the browser (2xx only, redirects followed) and staged"),
        string("filename", "name for staged inline/url content (sanitised); absent: upload-<id><ext from contentType>"),
        string("contentType", "content type of inline/url content (for the extension; echoed)"),
        int("timeoutMs", "bound of setting the files in ms; absent or <= 0: 5000").or("5000").range(f64::NEG_INFINITY, 60_000.0),
        target::FRAME_PARAM,
        int("nth", "0-based pick when the selector matches several file inputs; out of range: ELEMENT_NOT_FOUND with the count").range(0.0, f64::INFINITY),
    ])
    .example("local r = page:upload_file{ selector = \"input[type=file]\", contentBase64 = \"aGVsbG8=\", filename = \"hello.txt\" }:unwrap()\nprint(r.filesLength, r.consumed)");

const DRAG: CommandSpec = Group::InteractIndex
    .action("drag_element_by_index", drag_element_by_index)
    .summary("Drag the element with this index onto the one with targetIndex (real mouse)")
    .doc(
        "Waits until the source is actionable (5000 ms), presses the real mouse on it, moves in \
          steps (pointermove/mousemove with the button held) to the target's point and releases \
          there: widgets that follow pointer or mouse events see a real drag. Both elements in \
          one frame, or in frames of the page's own process. Answers from, to, steps and the \
          observation (changed, changeStatus).",
    )
    .params(&[
        INDEX_PARAM,
        int("targetIndex", "index of the drop target")
            .req()
            .range(0.0, f64::INFINITY),
    ])
    .example("page:drag_element_by_index{ index = 3, targetIndex = 7 }");

const KEYS_DOC: &str =
    "A single key name (Enter, Escape/Esc, Tab, Backspace, Delete, Insert, Home, \
    End, PageUp, PageDown, Arrow*, Space, CapsLock, NumLock, ScrollLock, PrintScreen, ContextMenu, \
    F1-F12; any case) or a modifier chord (Control/Ctrl, Alt, Shift, Meta/Command/Cmd joined by + \
    and ending with at most one letter, digit or key name, e.g. Control+Shift+T) is pressed as \
    trusted key events; anything else (words, CJK, spaces, Control+A+B) is typed into the focused \
    element (ASCII as key events, other characters as text input). Answers mode (press | type), \
    keys or text, and focused (the element that has the focus afterwards; focusNote when it is \
    <body>).";

const SEND_KEYS: CommandSpec = Group::InteractIndex
    .action("send_keys", send_keys)
    .summary("Press a key or chord, or type text, into whatever has the focus")
    .doc(KEYS_DOC)
    .params(&[string("keys", "key name, modifier combination, or free text").req().secret(Secrecy::Typed)])
    .example("page:send_keys{ keys = \"Control+A\" }\npage:send_keys{ keys = \"你好\" }\npage:send_keys{ keys = \"Enter\" }");

const PRESS_KEY: CommandSpec = CommandSpec {
    alias_of: Some("send_keys"),
    ..Group::InteractIndex
        .action("press_key", press_key)
        .summary("send_keys under its newer name: key (or keys) pressed or typed")
        .doc(KEYS_DOC)
        .params(&[
            string("key", "key/combination/text; preferred name").secret(Secrecy::Typed),
            string("keys", "accepted when key is absent").secret(Secrecy::Typed),
        ])
        .example("page:press_key{ key = \"Escape\" }")
};

const KEY_DOWN: CommandSpec = Group::InteractIndex
    .action("key_down", key_down)
    .summary("Hold a key down (pair with key_up)")
    .doc("Presses one key (a key name, a modifier or one character) without releasing it.")
    .params(&[string("keys", "key to hold down").req()])
    .example("page:key_down{ keys = \"Shift\" }\npage:key_up{ keys = \"Shift\" }");

const KEY_UP: CommandSpec = Group::InteractIndex
    .action("key_up", key_up)
    .summary("Release a key held with key_down")
    .doc("Releases one key (a key name, a modifier or one character).")
    .params(&[string("keys", "key to release").req()])
    .example("page:key_up{ keys = \"Shift\" }");

const GET_DROPDOWN_OPTIONS: CommandSpec = Group::InteractIndex
    .read("get_dropdown_options", get_dropdown_options)
    .summary("List the options of the <select> with this snapshot index")
    .doc("options: the textContent of every option; items: {index, value, label, selected, \
          disabled} of each; multiple, disabled. Only native <select> (or a label of one).")
    .params(&[INDEX_PARAM])
    .example("for _, o in ipairs(page:get_dropdown_options{ index = 3 }:unwrap().options) do print(o) end");

const SELECT_DROPDOWN_OPTION: CommandSpec = Group::InteractIndex
    .action("select_dropdown_option", select_dropdown_option)
    .summary("Select an option of the <select> with this snapshot index by label")
    .doc(
        "Picks the option whose label is text (whitespace collapsed), else whose value is text, \
          else with that label in any case, else (a number) at that position; input and change \
          are dispatched once, only when the selection changes (alreadySelected otherwise). \
          Answers selected {index, value, label} and matchedBy. No such option is \
          ELEMENT_NOT_FOUND with the available labels. moonpilot also takes a selector (with \
          frame and nth) instead of the index, `label=…` included.",
    )
    .params(&[
        INDEX_OR,
        string(
            "text",
            "option LABEL to select (or its value, or its position)",
        )
        .req(),
        SELECTOR_OR,
        FRAME_PARAM,
        NTH_PARAM,
    ])
    .example("page:select_dropdown_option{ index = 3, text = \"Germany\" }\npage:select_dropdown_option{ selector = 'label=\"Country\"', text = \"Germany\" }");

const SCROLL: CommandSpec = Group::InteractIndex
    .action("scroll", scroll)
    .summary("Scroll the page, or the element with this index, by whole pages")
    .doc(
        "Scrolls by numPages window heights, up unless down is true: the page, or with index the \
          element (or its nearest scrollable ancestor). Answers before, after, scrolledBy, atTop \
          and atBottom (CSS px of the scroller), so a scroll that hit the end is visible.",
    )
    .params(&[
        boolean(
            "down",
            "direction; absent = false = UP (must pass true to scroll down)",
        )
        .or("false"),
        int("numPages", "how many pages").req().range(0.0, 1000.0),
        int("index", "element index from the latest snapshot").range(0.0, f64::INFINITY),
    ])
    .example("page:scroll{ down = true, numPages = 1 }");

const SCROLL_TO_TEXT: CommandSpec = Group::InteractIndex
    .action("scroll_to_text", scroll_to_text)
    .summary("Scroll the first element showing this text into view")
    .doc(
        "Finds the element with the text (case-insensitive substring, an exact match first) in \
          the main frame, waiting up to the action timeout for it to appear, and scrolls it to the \
          middle of the viewport. Answers found, tag, text and rect. Not there in time: \
          ELEMENT_NOT_FOUND.",
    )
    .params(&[string("text", "text locator content").req()])
    .example("page:scroll_to_text{ text = \"Terms and conditions\" }");

/// The receipt fields of a target in a frame or found again after a stale index.
fn target_fields(target: &target::Target, data: &mut serde_json::Value) {
    if !target.frame.is_main() {
        data["probedFrameUrl"] = serde_json::json!(target.frame.url);
    }
    if target.stale_recovered {
        data["staleRecovered"] = serde_json::json!(true);
    }
}

fn double_click_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "double_click_element_by_index", Takes::NTH_FRAME)?;
    let mode = ClickMode::parse(p.str_opt("mode")?.as_deref());
    run(move |cx: TaskCx| async move {
        let timeout_ms = cx.engine.config.action_timeout_ms;
        let task = cx.task;
        let (target, first) = target::find_or_recover(&task, &locator, mode.first_read()).await?;
        let clicked = target
            .press(&task, first, mode, timeout_ms, target::Press::Double)
            .await?;
        let mut receipt = Box::pin(click_receipt::click_receipt(&task, &target, clicked)).await;
        receipt["clickCount"] = serde_json::json!(2);
        Ok(receipt)
    })
}

fn hover_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "hover_element_by_index", Takes::NTH_FRAME)?;
    run(move |cx: TaskCx| async move {
        let timeout_ms = cx.engine.config.action_timeout_ms;
        let task = cx.task;
        let read = Read {
            hit_test: true,
            observe: false,
            keep_scroll: false,
            settle: false,
        };
        let (target, first) = target::find_or_recover(&task, &locator, read).await?;
        let state = target.hover_when_ready(first, timeout_ms).await?;
        let mut data = serde_json::json!({"hit": state.hit, "point": state.point});
        target_fields(&target, &mut data);
        Ok(data)
    })
}

/// The `focus` op's answer.
#[derive(serde::Deserialize)]
struct Focus {
    focused: bool,
    hit: target::Summary,
}

fn focus_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "focus_element_by_index", Takes::NTH_FRAME)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let (target, _) = target::find_or_recover(&task, &locator, Read::default()).await?;
        let focus: Focus = target.act("focus", serde_json::json!({})).await?;
        let mut data = serde_json::json!({"hit": focus.hit, "focused": focus.focused});
        if !focus.focused {
            data["note"] = serde_json::json!(
                "the element does not take the focus (not focusable, or the page moved it away); keys sent now go elsewhere"
            );
        }
        target_fields(&target, &mut data);
        Ok(data)
    })
}

/// The `check_state` op's answer.
#[derive(serde::Deserialize)]
struct CheckState {
    /// `checkbox`, `radio`, `aria`, or none for an element that is no box.
    kind: Option<String>,
    checked: Option<bool>,
    hit: target::Summary,
}

fn check_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    set_checked(p, true)
}

fn uncheck_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    set_checked(p, false)
}

/// How long a click's effect on a box may take to show (frameworks re-render).
const CHECK_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

fn set_checked(p: &mut Params, want: bool) -> Prepared<TaskCx> {
    use serde_json::json;
    let cmd = if want {
        "check_element_by_index"
    } else {
        "uncheck_element_by_index"
    };
    let locator = target::index_or_selector(p, cmd, Takes::NTH_FRAME)?;
    let raw_mode = p.str_opt("mode")?;
    let mode = ClickMode::parse(raw_mode.as_deref());
    run(move |cx: TaskCx| async move {
        let timeout_ms = cx.engine.config.action_timeout_ms;
        let task = cx.task;
        let verb = if want { "check" } else { "uncheck" };
        let (target, first) = target::find_or_recover(&task, &locator, mode.first_read()).await?;
        let before: CheckState = target.act("check_state", json!({})).await?;
        let Some(kind) = before.kind.as_deref() else {
            return Err(CommandError::failed(format!(
                "{} (<{}>) is not a checkbox, a radio button nor an ARIA checkbox; nothing was clicked",
                target.label,
                before.hit.tag.to_lowercase()
            )));
        };
        if !want && kind == "radio" {
            return Err(CommandError::failed(format!(
                "{} is a radio button: it cannot be unchecked; check another button of its group",
                target.label
            )));
        }
        let already = if want {
            "alreadyChecked"
        } else {
            "alreadyUnchecked"
        };
        if before.checked == Some(want) {
            let mut data = json!({
                "hit": before.hit, "checked": want, already: true, "changed": false,
                "note": format!("already {verb}ed: nothing was clicked"),
            });
            target_fields(&target, &mut data);
            return Ok(data);
        }
        let clicked = Box::pin(target.click(&task, first, mode, timeout_ms)).await?;
        let deadline = std::time::Instant::now() + CHECK_SETTLE;
        // The click has landed: a read-back that fails (the box re-rendered) must not say
        // that nothing ran.
        let read_back = || async {
            target
                .act::<CheckState>("check_state", json!({}))
                .await
                .map_err(CommandError::sent)
        };
        let mut after: CheckState = read_back().await?;
        while after.checked != Some(want) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            after = read_back().await?;
        }
        if after.checked != Some(want) {
            return Err(CommandError::failed(format!(
                "the click on {} did not {verb} it: the page kept it {}",
                target.label,
                if want { "unchecked" } else { "checked" }
            ))
            .with_details(json!({"checked": after.checked, "clickMode": clicked.mode, "hit": clicked.state.hit})));
        }
        let mut data = json!({
            "hit": clicked.state.hit.clone().unwrap_or(before.hit),
            "checked": want, already: false, "changed": true,
        });
        if raw_mode.is_some() {
            click_receipt::technique(&mut data, &clicked);
        }
        target_fields(&target, &mut data);
        Ok(data)
    })
}

/// Where an upload's file comes from.
enum Source {
    /// A server path (absolute, or relative to the upload directory).
    Path(String),
    /// Decoded inline content.
    Inline(Vec<u8>),
    /// A URL the browser downloads.
    Url(String),
}

fn upload_file(p: &mut Params) -> Prepared<TaskCx> {
    // Every param is read before any is judged (unknown-param tracking sees them all).
    let locator = target::index_or_selector(p, "upload_file", target::Takes::NTH_FRAME);
    let path = p.str_opt("path")?;
    let inline = p.str_opt("contentBase64")?;
    let url = p.str_opt("url")?;
    let filename = p.str_opt("filename")?;
    let content_type = p.str_opt("contentType")?;
    let timeout_ms = p.int_opt("timeoutMs")?;
    let mut locator = locator?;
    if let Locator::Selector { pick, .. } = &mut locator {
        // File inputs are usually hidden behind a styled label: document order, no visibility.
        *pick = target::Pick::Document;
    }
    let source = if let Some(b64) = inline {
        Source::Inline(super::staging::decode_inline(&b64)?)
    } else if let Some(u) = url {
        match url::Url::parse(&u) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Source::Url(u),
            _ => {
                return Err(CommandError::invalid(
                    "url",
                    format!("param `url`: `{u}` is not an absolute http(s) URL"),
                ))
            }
        }
    } else {
        Source::Path(path.ok_or_else(|| {
            CommandError::invalid(
                "path",
                "missing parameter path (or give contentBase64 or url)",
            )
        })?)
    };
    let timeout = std::time::Duration::from_millis(match timeout_ms {
        Some(ms) if ms > 0 => ms.unsigned_abs(),
        _ => 5000,
    });
    run(move |cx: TaskCx| async move {
        let dir = cx.engine.config.upload_dir.clone();
        let task = cx.task;
        // The target first: a selector that matches nothing stages (or downloads) nothing.
        let (target, _) = target::find(&task, &locator, Read::default()).await?;
        let (file, staged) =
            stage_upload(&task, &cx.trust, &dir, source, filename, content_type).await?;
        let described = match &locator {
            Locator::Index(i) => format!("index={i}"),
            Locator::Selector { css, frame, .. } => match frame {
                Some(f) => format!("selector={css} (frame={f})"),
                None => format!("selector={css}"),
            },
            other => other.describe(),
        };
        let before = target.observe(&task).await;
        let input = target.object("file_input").await?;
        let files = vec![file.display().to_string()];
        let set = tokio::time::timeout(timeout, target.tab.set_input_files(&input, &files)).await;
        target.tab.release_element(input).await;
        match set {
            Ok(res) => res?,
            Err(_) => {
                return Err(CommandError::new(
                    crate::protocol::ErrorCode::ActionTimeout,
                    format!(
                        "setting the file on {} did not finish within {} ms",
                        target.label,
                        timeout.as_millis()
                    ),
                )
                .sent())
            }
        }
        let (after, recovered) = target.observe_after(&task, &before).await;
        let seen = observe::compare(&before, &after, recovered, None);
        let changed = seen["changed"] == true;
        let mut data = serde_json::json!({
            "filename": file.file_name().map(|n| n.to_string_lossy().to_string()),
            "path": file.display().to_string(),
            "target": described,
            "mode": "native",
            "changed": changed,
            "changeStatus": seen["changeStatus"],
            "observationWindowMs": seen["observationWindowMs"],
        });
        if let serde_json::Value::Object(extra) = staged {
            for (k, v) in extra {
                data[k.as_str()] = v;
            }
        }
        if let Some(located) = &target.located {
            for (k, v) in located {
                data[k.as_str()] = v.clone();
            }
        }
        upload_readback(&target, changed, &mut data).await;
        target_fields(&target, &mut data);
        Ok(data)
    })
}

/// The file an upload gives the page: a server path checked to exist, or content staged in the
/// upload directory. Answers the absolute path and the receipt's file fields.
async fn stage_upload(
    task: &crate::browser::task::Task,
    trust: &crate::door::Trust,
    dir: &std::path::Path,
    source: Source,
    filename: Option<String>,
    content_type: Option<String>,
) -> Result<(std::path::PathBuf, serde_json::Value), CommandError> {
    use super::staging;
    // Content a task stages goes to a directory of its own: two tasks uploading `report.pdf`
    // never swap files.
    let own = dir.join(task.id.to_string());
    match source {
        Source::Path(path) => {
            // A relative path resolves by the door's rule (the working directory of a local
            // script, an MCP root), or as the seed does (in the staging directory); then the
            // door says whether it may be read.
            let resolved = match trust.absolute(std::path::Path::new(&path)) {
                Some(absolute) => absolute,
                None => staging::resolve(dir, &path)?,
            };
            let resolved = trust.read("path", &resolved).await?;
            let meta = tokio::fs::metadata(&resolved)
                .await
                .ok()
                .filter(|m| m.is_file());
            let Some(meta) = meta else {
                let hint = match trust.relative() {
                    crate::door::Relative::Seed => "; stage it first (POST it to /playwright/upload, or pass contentBase64) and pass back path or relativePath".to_string(),
                    crate::door::Relative::WorkingDir => " (a relative path is taken from the working directory)".to_string(),
                    crate::door::Relative::Dir(dir) => format!(" (a relative path is taken from `{}`)", dir.display()),
                };
                return Err(CommandError::invalid(
                    "path",
                    format!("param `path`: no such file `{}`{hint}", resolved.display()),
                ));
            };
            let abs = std::path::absolute(&resolved).unwrap_or(resolved);
            Ok((abs, serde_json::json!({"size": meta.len()})))
        }
        Source::Inline(bytes) => {
            if bytes.len() > UPLOAD_MAX_BYTES {
                return Err(CommandError::invalid(
                    "contentBase64",
                    format!(
                        "param `contentBase64`: {} bytes, more than the {UPLOAD_MAX_BYTES} an upload may stage",
                        bytes.len()
                    ),
                ));
            }
            let (path, mut info) =
                staging::stage(&own, &bytes, filename.as_deref(), content_type.as_deref()).await?;
            info["source"] = serde_json::json!("contentBase64");
            relative_to_root(&mut info, task);
            Ok((path, info))
        }
        Source::Url(url) => {
            let tab = task.tab()?;
            let (bytes, served_type) = tab.download(&url, UPLOAD_MAX_BYTES).await?;
            let content_type = content_type.or(served_type);
            let (path, mut info) =
                staging::stage(&own, &bytes, filename.as_deref(), content_type.as_deref()).await?;
            info["source"] = serde_json::json!("url");
            relative_to_root(&mut info, task);
            info["url"] = serde_json::json!(url);
            Ok((path, info))
        }
    }
}

/// `relativePath` of a file staged in the task's own directory, from the upload root (what a
/// later `path` param resolves against).
fn relative_to_root(info: &mut serde_json::Value, task: &crate::browser::task::Task) {
    if let Some(name) = info["relativePath"].as_str() {
        info["relativePath"] = serde_json::json!(format!("{}/{name}", task.id));
    }
}

/// The most an upload stages (`browser.upload.maxBytes`, 50 MiB).
const UPLOAD_MAX_BYTES: usize = 52_428_800;

/// The read-back of an upload (JS-PROBES.md §14): the input re-resolved live, then listener
/// detection (§13) and the verdict fields.
async fn upload_readback(target: &target::Target, changed: bool, data: &mut serde_json::Value) {
    use serde_json::json;
    let mut gone = false;
    match target
        .act::<serde_json::Value>("file_readback", json!({}))
        .await
    {
        Ok(back) if back["elementGone"] == true => gone = true,
        Ok(back) => {
            for k in ["filesLength", "value", "disabled", "accept"] {
                data[k] = back[k].clone();
            }
            if back["filesLength"] == 0 {
                data["readbackNote"] = json!("filesLength is 0: the framework took the file and reset the input, usually success");
            }
        }
        Err(e) if e.code == crate::protocol::ErrorCode::StaleElement => gone = true,
        Err(e) => data["readbackError"] = json!(e.msg),
    }
    if gone {
        data["elementGone"] = json!(true);
        data["readbackNote"] = json!(
            "the input is gone: the component replaced it after taking the file (not a failure)"
        );
    }
    let evidence = if gone {
        (None, None)
    } else {
        match target.object("file_input").await {
            Ok(input) => {
                let evidence = target
                    .tab
                    .listener_evidence(&input, crate::js::LISTENER_TRACES_JS)
                    .await;
                target.tab.release_element(input).await;
                evidence
            }
            Err(_) => (None, None),
        }
    };
    let verdict = listener_verdict(evidence.0, evidence.1);
    data["listeners"] = verdict.listeners;
    data["listenerDetection"] = json!(verdict.detection);
    data["hasListeners"] = json!(verdict.has);
    let consumed = match verdict.has {
        Some(true) => "listened",
        Some(false) => "noListener",
        None => "unknown",
    };
    data["consumed"] = json!(consumed);
    if let Some(note) = verdict.note {
        data["listenerNote"] = json!(note);
    }
    data["effective"] = match (consumed, changed) {
        ("noListener", false) => json!(false),
        (_, true) | ("listened", _) => json!(true),
        _ => serde_json::Value::Null,
    };
    match consumed {
        "noListener" if !changed => {
            data["hint"] = json!("nothing listens to this input and the page did not change: the page probably reads another input (or a drop zone); look for another input[type=file], or use nth");
        }
        "unknown" => {
            data["hint"] = json!("listeners could not be checked: judge by the page (the file name shown, a preview)");
        }
        _ => {}
    }
    if gone {
        data["readbackHint"] = json!("re-read the page to see what the component shows now");
    }
}

/// Listener detection's verdict (JS-PROBES.md §13.3).
struct Verdict {
    listeners: serde_json::Value,
    detection: &'static str,
    has: Option<bool>,
    note: Option<&'static str>,
}

/// The tri-state verdict from the browser's own list (`cdp`, authoritative) and the framework
/// traces: without the browser's list, traces say true and their absence says nothing (null),
/// never false.
fn listener_verdict(cdp: Option<Vec<String>>, traces: Option<serde_json::Value>) -> Verdict {
    let t = traces.unwrap_or_else(|| serde_json::json!({}));
    let mut events: Vec<String> = t["traces"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let traced = !events.is_empty()
        || ["vue", "react", "inline", "jquery"]
            .iter()
            .any(|k| t[*k] == true);
    let (detection, has, note) = match &cdp {
        Some(types) => {
            events.extend(types.iter().cloned());
            let note = (types.is_empty() && traced).then_some(
                "framework traces exist but the browser reports no listener on the element itself (a delegated listener on an ancestor may still handle it)",
            );
            ("cdp", Some(!types.is_empty()), note)
        }
        None => ("heuristic", traced.then_some(true), None),
    };
    events.sort();
    events.dedup();
    Verdict {
        listeners: serde_json::json!({
            "vue2": t["vue"], "vue3": t["vue"], "react": t["react"],
            "inline": t["inline"], "jquery": t["jquery"], "events": events,
        }),
        detection,
        has,
        note,
    }
}

fn drag_element_by_index(p: &mut Params) -> Prepared<TaskCx> {
    let index = read_index(p)?;
    let target_index = p.int_req("targetIndex")?;
    let target_index = u32::try_from(target_index).map_err(|_| {
        CommandError::invalid(
            "targetIndex",
            format!("param `targetIndex`: must be >= 0, got {target_index}"),
        )
    })?;
    run(move |cx: TaskCx| async move {
        use crate::browser::tab::{Button, FrameSession};
        let task = cx.task;
        let read = Read {
            hit_test: true,
            observe: false,
            keep_scroll: false,
            settle: false,
        };
        let named = |which: &str, e: CommandError| CommandError {
            msg: format!("{which}: {}", e.msg),
            ..e
        };
        let (source, first) = target::find_or_recover(&task, &Locator::Index(index), read)
            .await
            .map_err(|e| named("source (index)", e))?;
        let (dest, dest_state) =
            target::find_or_recover(&task, &Locator::Index(target_index), read)
                .await
                .map_err(|e| named("drop target (targetIndex)", e))?;
        let (src_state, from) = source.ready_point(first, DRAG_TIMEOUT_MS).await?;
        // The drop point: where the target receives events, else its centre (what is dragged
        // over it may cover it).
        let to = dest.click_point(&dest_state).or_else(|e| {
            let [x, y, w, h] = dest_state.rect;
            if w > 0.0 && h > 0.0 {
                Ok([x + w / 2.0, y + h / 2.0])
            } else {
                Err(named("drop target (targetIndex)", e))
            }
        })?;
        let same_frame = source.frame.frame_id == dest.frame.frame_id;
        let (frame, from, to) = if same_frame {
            (
                source.frame.clone(),
                source.session_point(from).await?,
                dest.session_point(to).await?,
            )
        } else if matches!(source.frame.session, FrameSession::Page)
            && matches!(dest.frame.session, FrameSession::Page)
        {
            let (sx, sy) = source
                .tab
                .frame_offset(&source.frames, &source.frame)
                .await?;
            let (dx, dy) = dest.tab.frame_offset(&dest.frames, &dest.frame).await?;
            (
                source.tab.main_frame_local(),
                [from[0] + sx, from[1] + sy],
                [to[0] + dx, to[1] + dy],
            )
        } else {
            return Err(CommandError::failed(
                "the source and the drop target are in different frames, one of them out of process: a real drag cannot cross them",
            ));
        };
        let before = source.observe(&task).await;
        let tab = &source.tab;
        tab.mouse_move_in(&frame, from[0], from[1]).await?;
        tab.mouse_button_in(&frame, from[0], from[1], Button::Press, 1)
            .await?;
        // The moves are sent in order without waiting for each answer: a tab in the background
        // answers a move only after about 5 s (moves wait for a frame there), and the renderer
        // may then coalesce them; in front each one is its own pointermove.
        let moves = (1..=DRAG_STEPS).map(|i| {
            let f = f64::from(i) / f64::from(DRAG_STEPS);
            let x = from[0] + (to[0] - from[0]) * f;
            let y = from[1] + (to[1] - from[1]) * f;
            tab.mouse_move_held_in(&frame, x, y, 1)
        });
        for res in futures::future::join_all(moves).await {
            res?;
        }
        tab.mouse_button_in(&frame, to[0], to[1], Button::Release, 1)
            .await?;
        let (after, recovered) = source.observe_after(&task, &before).await;
        let mut data = observe::compare(&before, &after, recovered, src_state.hit.as_ref());
        data["from"] = serde_json::json!(from);
        data["to"] = serde_json::json!(to);
        data["steps"] = serde_json::json!(DRAG_STEPS);
        data["targetHit"] = serde_json::json!(dest_state.hit);
        target_fields(&source, &mut data);
        Ok(data)
    })
}

/// How long the drag source may take to become actionable (COMMANDS.md: 5000 ms).
const DRAG_TIMEOUT_MS: u64 = 5000;
/// Pointer moves between press and release.
const DRAG_STEPS: u32 = 12;

fn send_keys(p: &mut Params) -> Prepared<TaskCx> {
    let keys = p.str_req("keys")?;
    run(move |cx: TaskCx| async move { send(&cx.task, &keys).await })
}

fn press_key(p: &mut Params) -> Prepared<TaskCx> {
    let keys = if p.has("key") {
        p.str_keep_empty("key")?
            .filter(|k| !k.is_empty())
            .ok_or_else(|| CommandError::invalid("key", "param `key`: must not be empty"))?
    } else {
        p.str_opt("keys")?
            .ok_or_else(|| CommandError::invalid("key", "press_key needs key (or keys)"))?
    };
    run(move |cx: TaskCx| async move { send(&cx.task, &keys).await })
}

/// Longer text is inserted as one text input instead of key by key.
const TYPE_KEY_BY_KEY_MAX: usize = 256;

/// Presses or types `raw` (see [`keys::parse`]) and reports what has the focus afterwards.
async fn send(
    task: &crate::browser::task::Task,
    raw: &str,
) -> Result<serde_json::Value, CommandError> {
    use super::keys::{self, Keys};
    let tab = task.tab()?;
    let failed = |e: CommandError| CommandError {
        msg: format!("send_keys failed: {}", e.msg),
        ..e
    };
    let mut data = match keys::parse(raw) {
        Keys::Press(strokes) => {
            let held = keys::modifiers_down(&strokes);
            for (k, m) in strokes.iter().zip(&held) {
                tab.key_event(k, *m, true).await.map_err(failed)?;
            }
            for (k, m) in strokes.iter().zip(&held).rev() {
                let bits = if k.location == 1 {
                    m & !k.modifiers
                } else {
                    *m
                };
                tab.key_event(k, bits, false).await.map_err(failed)?;
            }
            serde_json::json!({"mode": "press", "keys": raw})
        }
        Keys::Type(text) if text.chars().count() > TYPE_KEY_BY_KEY_MAX => {
            // Thousands of key events would take longer than the command may; one text input
            // puts the same text in.
            tab.insert_text(&text).await.map_err(failed)?;
            serde_json::json!({"mode": "type", "text": text, "typedAs": "insertText"})
        }
        Keys::Type(text) => {
            tab.type_keys(&text).await.map_err(failed)?;
            serde_json::json!({"mode": "type", "text": text})
        }
    };
    focus_report(&tab, &mut data).await;
    Ok(data)
}

/// Adds `focused` (and `focusNote`) from the page's active element; typed text into a password
/// field is not echoed (`password: true`).
async fn focus_report(tab: &crate::browser::Tab, data: &mut serde_json::Value) {
    let focused = tab
        .call_probe::<serde_json::Value>(
            &tab.main_frame_local(),
            crate::js::ELEMENT_ACTIONS_JS,
            serde_json::json!({"op": "focused"}),
        )
        .await;
    match focused {
        Ok(f) => {
            if f["password"] == true {
                data["password"] = serde_json::json!(true);
                if data.get("text").is_some() {
                    data["text"] = serde_json::json!("[redacted]");
                }
            }
            if f["isBody"] == true {
                data["focusNote"] = serde_json::json!("the focus is on <body>: the keys went to the page, not into a field (focus one first: focus_element_by_index or a click)");
            } else if f["intoFrame"] == true {
                data["focusNote"] = serde_json::json!(
                    "the focus is inside a cross-site frame: the keys went to that frame"
                );
            }
            data["focused"] = f;
        }
        Err(e) => data["focusError"] = serde_json::json!(e.msg),
    }
}

fn key_down(p: &mut Params) -> Prepared<TaskCx> {
    hold(p, true)
}

fn key_up(p: &mut Params) -> Prepared<TaskCx> {
    hold(p, false)
}

fn hold(p: &mut Params, down: bool) -> Prepared<TaskCx> {
    let raw = p.str_req("keys")?;
    let stroke = super::keys::single(&raw).ok_or_else(|| {
        CommandError::invalid(
            "keys",
            format!("param `keys`: `{raw}` is not one key (a key name, a modifier or one character); use send_keys for chords and text"),
        )
    })?;
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        // A modifier counts as held while it is down.
        let bits = if down { stroke.modifiers } else { 0 };
        tab.key_event(&stroke, bits, down).await?;
        let mut data = serde_json::json!({"keys": raw, "key": stroke.key, "down": down});
        focus_report(&tab, &mut data).await;
        Ok(data)
    })
}

fn get_dropdown_options(p: &mut Params) -> Prepared<TaskCx> {
    let index = read_index(p)?;
    run(move |cx: TaskCx| async move {
        let (target, _) = target::find(&cx.task, &Locator::Index(index), Read::QUIET).await?;
        let mut data: serde_json::Value = target.act("options", serde_json::json!({})).await?;
        target_fields(&target, &mut data);
        Ok(data)
    })
}

fn select_dropdown_option(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "select_dropdown_option", Takes::NTH_FRAME)?;
    let text = p.str_req("text")?;
    run(move |cx: TaskCx| async move {
        let (target, _) = target::find(&cx.task, &locator, Read::default()).await?;
        let mut data: serde_json::Value = target
            .act("select", serde_json::json!({"text": text}))
            .await?;
        if data["reached"] != true {
            return Err(CommandError::failed(format!(
                "the page changed the selection of {} back right away",
                target.label
            ))
            .with_details(serde_json::json!({"selected": data["selected"]})));
        }
        if let Some(map) = data.as_object_mut() {
            map.remove("reached");
        }
        data["changed"] = serde_json::json!(data["alreadySelected"] != true);
        if data["alreadySelected"] == true {
            data["note"] = serde_json::json!(
                "the option was already the selection: no events were dispatched"
            );
        }
        target_fields(&target, &mut data);
        Ok(data)
    })
}

fn scroll(p: &mut Params) -> Prepared<TaskCx> {
    let down = p.bool_or("down", false)?;
    let pages = p.int_req("numPages")?;
    let index = p.int_opt("index")?.map(target::index_value).transpose()?;
    if !(0..=1000).contains(&pages) {
        return Err(CommandError::invalid(
            "numPages",
            format!("param `numPages`: must be within 0..1000, got {pages}"),
        ));
    }
    run(move |cx: TaskCx| async move {
        let args = serde_json::json!({"pages": pages, "down": down});
        let mut data: serde_json::Value = match index {
            Some(i) => {
                let (target, _) =
                    target::find(&cx.task, &Locator::Index(i), Read::default()).await?;
                let mut d: serde_json::Value = target.act("scroll", args).await?;
                target_fields(&target, &mut d);
                d
            }
            None => {
                let tab = cx.task.tab()?;
                let mut args = args;
                args["op"] = serde_json::json!("scroll");
                tab.call_probe(&tab.main_frame_local(), crate::js::ELEMENT_ACTIONS_JS, args)
                    .await?
            }
        };
        data["direction"] = serde_json::json!(if down { "down" } else { "up" });
        data["numPages"] = serde_json::json!(pages);
        Ok(data)
    })
}

fn scroll_to_text(p: &mut Params) -> Prepared<TaskCx> {
    let text = p.str_req("text")?;
    run(move |cx: TaskCx| async move {
        let wait = std::time::Duration::from_millis(cx.engine.config.action_timeout_ms);
        let start = std::time::Instant::now();
        let locator = Locator::Text {
            text: text.clone(),
            frame: None,
            strict: false,
        };
        loop {
            match target::find(&cx.task, &locator, Read::default()).await {
                Ok((target, state)) => {
                    let mut data = serde_json::json!({
                        "found": true,
                        "hit": target.chosen,
                        "rect": state.rect,
                        "visible": state.visible,
                        "waitedMs": start.elapsed().as_millis() as u64,
                    });
                    if let Some(located) = &target.located {
                        for (k, v) in located {
                            data[k.as_str()] = v.clone();
                        }
                    }
                    return Ok(data);
                }
                Err(e)
                    if e.code == crate::protocol::ErrorCode::ElementNotFound
                        && start.elapsed() < wait =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) if e.code == crate::protocol::ErrorCode::ElementNotFound => {
                    return Err(CommandError::new(
                        e.code,
                        format!(
                            "no element shows the text `{text}` (waited {} ms)",
                            wait.as_millis()
                        ),
                    )
                    .with_details(
                        serde_json::json!({"waitedMs": start.elapsed().as_millis() as u64}),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    })
}
