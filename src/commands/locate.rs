//! Locating without a snapshot: `click_element_by_selector`, `input_text_by_selector`,
//! `click_element_by_text`, `click_element_by_role`, `input_text_by_label`, `clear_text`,
//! `hover_and_click`.
//!
//! Specs and handlers only. A selector, text, role or label becomes a live element through
//! `target/` ([`Locator`]: chosen in its frame by the probe library, then found again by
//! position and identity on every later call), and a click becomes its receipt through
//! `click_receipt.rs`: the same receipt as `click_element_by_index`, plus what the choice saw
//! (`matched`, `chosenIndex`, ...) and the element that was chosen (`tag`, `text`,
//! `outerHtml`). A click that would not reach the element is never made.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::task::Task;
use crate::command::*;
use crate::commands::target::{
    self, ClickMode, InputMode, Locator, Read, Takes, FRAME_PARAM, INDEX_OR, NTH_PARAM, SELECTOR_OR,
};
use crate::commands::{click_receipt, observe};
use crate::error::CommandError;
use crate::protocol::Params;

const CLICK_MODE: ParamSpec = string(
    "mode",
    "auto | native | mouse | js (aliases: dispatch/force/event -> js; real/coordinate/coords -> mouse; playwright -> native)",
)
.or("\"auto\"");
const INPUT_MODE: ParamSpec = string(
    "mode",
    "auto | native (fill) | type (press; key by key, no clearing) | js (setvalue, set_value)",
)
.or("\"auto\"");
const TEXT: ParamSpec = string("text", "replacement value (the field is cleared first)")
    .req()
    .secret(Secrecy::Typed);

/// How long after a selector click that changed nothing a tab it opens is still followed
/// (COMMANDS.md: 1.5 s after the click; the receipt's window takes the first 500 ms).
const POPUP_WINDOW: Duration = Duration::from_millis(1500);
/// How long a followed tab gets to reach DOMContentLoaded.
const POPUP_LOAD: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);
/// The longest hover pause `hover_and_click` takes.
const MAX_HOVER_MS: f64 = 10_000.0;

/// The locate group.
pub const SPECS: &[CommandSpec] = &[
    Group::Locate
        .action("click_element_by_selector", click_element_by_selector)
        .summary("Click the element a CSS/Playwright selector matches and report what changed")
        .doc("Without nth: among the first 20 matches the first visible one whose point receives \
              clicks, else the first visible, else the first (visibleMatched 0). Zero matches \
              (or nth out of range) fail at once with ELEMENT_NOT_FOUND and the count. Then the \
              click of click_element_by_index (modes, actionability, never through a cover) and \
              its receipt, plus matched / chosenIndex / scanned / selectorNote and the element \
              chosen (tag, text, outerHtml). A tab the click opens becomes the current one \
              (newTab). Selectors: CSS (open shadow roots searched when the light DOM has no \
              match), css=, xpath= or //..., text= (quoted: exact), id=, data-testid=, \
              :has-text(\"...\"), :visible, and chains with >> and nth=N.")
        .params(&[
            string("selector", "CSS/Playwright selector").req(),
            CLICK_MODE,
            int("timeoutMs", "actionability timeout in ms, at most 60000; absent or <= 0 uses the configured 5000").or("5000").range(f64::NEG_INFINITY, 60_000.0),
            FRAME_PARAM,
            NTH_PARAM,
        ])
        .example("local r = page:click_element_by_selector{ selector = \"button.save\" }:unwrap()\nprint(r.matched, r.changed)"),
    Group::Locate
        .action("input_text_by_selector", input_text_by_selector)
        .summary("Replace the value of the field a selector matches (real input, any script)")
        .doc("The match is chosen as click_element_by_selector chooses it (a visible one first; \
              all hidden still works: auto then sets the value through the setter, mode js, \
              committed false). Then the input of input_text: a real fill for visible fields, \
              read back; disabled ELEMENT_DISABLED, read-only ELEMENT_READ_ONLY.")
        .params(&[
            string("selector", "selector of the field").req(),
            TEXT,
            INPUT_MODE,
            FRAME_PARAM,
            int("nth", "0-based explicit match").range(0.0, f64::INFINITY),
        ])
        .example("page:input_text_by_selector{ selector = \"#email\", text = \"a@b.c\" }"),
    Group::Locate
        .action("click_element_by_text", click_element_by_text)
        .summary("Click the element showing a text (its closest clickable ancestor)")
        .doc("Candidates are the innermost elements whose text contains the query \
              (case-insensitive) and button inputs by value; the smallest (not exact, no \
              clickable ancestor, not visible, text length) wins and its closest a / button / \
              [role=button] / input[type=button|submit] / [onclick] ancestor (or itself) is \
              clicked. The receipt adds textMatch (exact | contains), textCandidates, \
              textClickable, textMatchNote. No candidate: ELEMENT_NOT_FOUND. Main frame only.")
        .params(&[
            string("text", "visible text (case-insensitive substring; an exact match wins)").req(),
            CLICK_MODE,
        ])
        .example("page:click_element_by_text{ text = \"Sign in\" }"),
    Group::Locate
        .action("click_element_by_role", click_element_by_role)
        .summary("Click the first element of an ARIA role (and accessible name)")
        .doc("Roles are explicit (role attribute) or implicit (button, link, textbox, checkbox, \
              heading, ...); elements hidden from the accessibility tree do not count. name \
              filters by accessible name (case-insensitive substring). An unknown role is \
              INVALID_ARGUMENT; no match ELEMENT_NOT_FOUND.")
        .params(&[
            string("role", "ARIA role name (button, link, textbox, checkbox, ...)").req(),
            string("name", "accessible name filter (case-insensitive substring)"),
            CLICK_MODE,
        ])
        .example("page:click_element_by_role{ role = \"button\", name = \"Save\" }"),
    Group::Locate
        .action("input_text_by_label", input_text_by_label)
        .summary("Replace the value of the field with this label (label, aria-label)")
        .doc("The first control whose label (<label for>, a wrapping <label>, aria-labelledby, \
              aria-label) is the text, else contains it (case-insensitive); then the input of \
              input_text. No match: ELEMENT_NOT_FOUND naming the label.")
        .params(&[
            string("label", "label text / aria-label").req(),
            TEXT,
            INPUT_MODE,
        ])
        .example("page:input_text_by_label{ label = \"Email\", text = \"a@b.c\" }"),
    Group::Locate
        .action("clear_text", clear_text)
        .summary("Empty a field (by index or selector) and read it back")
        .doc("Index wins when both are given; a selector is looked up in the main frame. \
              Disabled (ELEMENT_DISABLED) and read-only (ELEMENT_READ_ONLY) fields are refused; \
              a visible text field is cleared for real (select all, Delete: frameworks see \
              trusted input), others through the value setter with input/change events.")
        .params(&[INDEX_OR, SELECTOR_OR])
        .example("page:clear_text{ selector = \"#search\" }"),
    Group::Locate
        .action("hover_and_click", hover_and_click)
        .summary("Hover an element, pause, then click it, in one call")
        .doc("A trusted mouse move onto the element, hoverDelayMs (at most 10000) for hover \
              menus to open, then the click of click_element_by_index on the element read again \
              and its receipt. Index wins over selector; a selector is looked up in the main \
              frame.")
        .params(&[
            INDEX_OR,
            SELECTOR_OR,
            int("hoverDelayMs", "pause between hover and click, 0..=10000 ms").or("300").range(0.0, MAX_HOVER_MS),
            CLICK_MODE,
        ])
        .example("page:hover_and_click{ selector = \"#menu\", hoverDelayMs = 200 }"),
];

fn click_mode(p: &mut Params) -> Result<ClickMode, CommandError> {
    Ok(ClickMode::parse(p.str_opt("mode")?.as_deref()))
}

fn input_mode(p: &mut Params) -> Result<InputMode, CommandError> {
    InputMode::parse(p.str_opt("mode")?.as_deref())
}

/// How a click command runs.
struct Click {
    locator: Locator,
    mode: ClickMode,
    /// The `timeoutMs` param (absent or <= 0: the configured action timeout).
    timeout_ms: Option<i64>,
    /// hover_and_click: the pause after the hover.
    hover_ms: Option<u64>,
    /// click_element_by_selector: a tab the click opens becomes the current one.
    follow_popup: bool,
}

fn click_element_by_selector(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::selector_param(p, Takes::NTH_FRAME)?;
    let mode = click_mode(p)?;
    let timeout_ms = p.int_opt("timeoutMs")?;
    let click = Click {
        locator,
        mode,
        timeout_ms,
        hover_ms: None,
        follow_popup: true,
    };
    run(move |cx: TaskCx| click.run(cx))
}

fn click_element_by_text(p: &mut Params) -> Prepared<TaskCx> {
    let text = p.str_req("text")?;
    let mode = click_mode(p)?;
    let strict = target::strict_param(p)?;
    let click = Click {
        locator: Locator::Text {
            text,
            frame: None,
            strict,
        },
        mode,
        timeout_ms: None,
        hover_ms: None,
        follow_popup: false,
    };
    run(move |cx: TaskCx| click.run(cx))
}

fn click_element_by_role(p: &mut Params) -> Prepared<TaskCx> {
    let role = p.str_req("role")?;
    let name = p.str_opt("name")?;
    let mode = click_mode(p)?;
    let role = target::check_role(&role)?;
    let strict = target::strict_param(p)?;
    let click = Click {
        locator: Locator::Role {
            role,
            name,
            frame: None,
            strict,
        },
        mode,
        timeout_ms: None,
        hover_ms: None,
        follow_popup: false,
    };
    run(move |cx: TaskCx| click.run(cx))
}

fn hover_and_click(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "hover_and_click", Takes::PLAIN);
    let hover_ms = p.int_opt("hoverDelayMs")?.unwrap_or(300);
    let mode = click_mode(p)?;
    let click = Click {
        locator: locator?,
        mode,
        timeout_ms: None,
        // In range: the executor checked it.
        hover_ms: Some(hover_ms.clamp(0, MAX_HOVER_MS as i64).unsigned_abs()),
        follow_popup: false,
    };
    run(move |cx: TaskCx| click.run(cx))
}

impl Click {
    async fn run(self, cx: TaskCx) -> Result<Value, CommandError> {
        let timeout_ms = match self.timeout_ms {
            Some(ms) if ms > 0 => ms.unsigned_abs(),
            _ => cx.engine.config.action_timeout_ms,
        };
        let task = cx.task;
        let read = self.mode.first_read();
        let t0 = Instant::now();
        let (target, mut first) = target::find_or_recover(&task, &self.locator, read).await?;
        tracing::debug!(target: "moonpilot::click", "found after {:?}", t0.elapsed());
        let mut hover = Value::Null;
        if let Some(ms) = self.hover_ms {
            match target.hover(&first).await {
                Ok(point) => hover = json!({"point": point, "delayMs": ms}),
                // Mode js is the caller's bypass of covers: the click is still dispatched.
                Err(e) if self.mode == ClickMode::Js => {
                    hover = json!({"skipped": e.msg, "delayMs": ms});
                }
                Err(e) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(ms)).await;
            // Hover menus move things: the click starts from a fresh read.
            first = target.inspect(read).await?;
        }
        let tabs_before = tab_ids(&task);
        let clicked = Box::pin(target.click(&task, first, self.mode, timeout_ms)).await?;
        tracing::debug!(target: "moonpilot::click", "clicked after {:?}", t0.elapsed());
        let mut receipt = Box::pin(click_receipt::click_receipt(&task, &target, clicked)).await;
        tracing::debug!(target: "moonpilot::click", "receipt after {:?}", t0.elapsed());
        if let Value::Object(map) = &mut receipt {
            map.extend(target.chosen_fields());
            map.insert("target".into(), json!(target.described));
        }
        if !hover.is_null() {
            receipt["hover"] = hover;
        }
        if self.follow_popup {
            follow_popup(&task, &tabs_before, &mut receipt).await;
        }
        Ok(receipt)
    }
}

fn tab_ids(task: &Task) -> Vec<String> {
    task.tabs()
        .0
        .iter()
        .map(|t| t.target_id().to_string())
        .collect()
}

/// Makes a tab the click opened the current one (COMMANDS.md click_element_by_selector): when
/// the receipt saw none and nothing else changed, tabs are watched until 1.5 s after the
/// click. The new tab is brought to the front and given up to 5 s to reach DOMContentLoaded;
/// the receipt gets `newTab {pageIndex, url, title, loaded}`.
async fn follow_popup(task: &Task, before: &[String], receipt: &mut Value) {
    let started = Instant::now();
    // A click whose own work was all done (`observationEnd` quiet, no timer set for later) and
    // that neither called `window.open` nor hit a link or form with a target opens no tab.
    let done = receipt["observationEnd"] == json!("quiet")
        && receipt.get("laterTimers").is_none()
        && receipt.get("mayOpenTab").is_none();
    let window = if receipt["changed"] == json!(false) && !done {
        POPUP_WINDOW.saturating_sub(observe::WINDOW)
    } else {
        Duration::ZERO
    };
    let new_tab = loop {
        let (tabs, _) = task.tabs();
        if let Some((at, tab)) = tabs
            .iter()
            .enumerate()
            .find(|(_, t)| !before.iter().any(|b| b == t.target_id()))
        {
            break Some((at, tab.clone()));
        }
        let waited = started.elapsed();
        if waited >= window && (!task.popups_pending() || waited >= POPUP_LOAD) {
            break None;
        }
        tokio::time::sleep(POLL).await;
    };
    let Some((at, tab)) = new_tab else { return };
    if task.select_tab(&tab).is_none() {
        return;
    }
    let _ = tab.bring_to_front().await;
    let deadline = Instant::now() + POPUP_LOAD;
    let mut status = Value::Null;
    let loaded = loop {
        status = tab.call_page_status().await.unwrap_or(status);
        let state = status["readyState"].as_str().unwrap_or("loading");
        if state == "interactive" || state == "complete" {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(POLL).await;
    };
    receipt["tabCountAfter"] = json!(task.tabs().0.len());
    receipt["newTab"] = json!({
        "pageIndex": at,
        "url": status["url"],
        "title": status["title"],
        "loaded": loaded,
    });
    receipt["switchedToNewTab"] = json!(true);
    receipt["newTabNote"] =
        json!("the click opened a tab; it is now the current one (switch_tab goes back)");
}

fn input_text_by_selector(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::selector_param(p, Takes::NTH_FRAME)?;
    let text = p.str_req("text")?;
    let mode = input_mode(p)?;
    run(move |cx: TaskCx| input(cx, locator, text, mode))
}

fn input_text_by_label(p: &mut Params) -> Prepared<TaskCx> {
    let label = p.str_req("label")?;
    let text = p.str_req("text")?;
    let mode = input_mode(p)?;
    let locator = Locator::Label {
        label,
        frame: None,
        strict: target::strict_param(p)?,
    };
    run(move |cx: TaskCx| input(cx, locator, text, mode))
}

async fn input(
    cx: TaskCx,
    locator: Locator,
    text: String,
    mode: InputMode,
) -> Result<Value, CommandError> {
    let task = cx.task;
    let (target, state) = target::find(&task, &locator, Read::default()).await?;
    let mut data = target.input(&state, &text, mode).await?;
    if let (Value::Object(map), Some(located)) = (&mut data, &target.located) {
        map.extend(located.clone());
        map.insert("target".into(), json!(target.described));
    }
    Ok(data)
}

fn clear_text(p: &mut Params) -> Prepared<TaskCx> {
    let locator = target::index_or_selector(p, "clear_text", Takes::PLAIN)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let (target, state) = target::find(&task, &locator, Read::default()).await?;
        let mut data = target.clear(&state).await?;
        if let Value::Object(map) = &mut data {
            if let Some(located) = &target.located {
                map.extend(located.clone());
            }
            map.insert("target".into(), json!(target.described));
            if state.is_password() {
                map.insert("password".into(), json!(true));
            }
        }
        Ok(data)
    })
}
