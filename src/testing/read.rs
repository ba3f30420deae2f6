//! What a waiting assertion reads of an element (`expect(page):to_have_text{...}` and the
//! others in `dsl.lua`): the catalogue's target keys (`selector`, `text`, `role` + `name`,
//! `label`, `index`, with `frame` and `nth`) become a [`Locator`], found as every command finds
//! it (`find.rs`), and read with the element probes the commands use. Read-only: nothing is
//! scrolled or clicked.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::browser::task::Task;
use crate::commands::target::actionable::Read;
use crate::commands::target::find;
use crate::commands::target::locator::{check_role, Locator, Pick};
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// The locator a target table names (the first of index, selector, role, label, text).
pub fn locator(target: &Value) -> Result<Locator, CommandError> {
    let s = |k: &str| target[k].as_str().map(str::to_string);
    let frame = match &target["frame"] {
        Value::Null => None,
        Value::Number(n) => Some(n.to_string()),
        v => v.as_str().map(str::to_string),
    };
    if let Some(i) = target["index"].as_i64() {
        return crate::commands::target::locator::index_value(i).map(Locator::Index);
    }
    if let Some(css) = s("selector") {
        let nth = match target["nth"].as_i64() {
            Some(n) => Some(u32::try_from(n).map_err(|_| {
                CommandError::invalid("nth", format!("param `nth`: must be >= 0, got {n}"))
            })?),
            None => None,
        };
        return Ok(Locator::Selector {
            css,
            nth,
            frame,
            pick: Pick::Visible,
            strict: false,
        });
    }
    if let Some(role) = s("role") {
        return Ok(Locator::Role {
            role: check_role(&role)?,
            name: s("name"),
            frame,
            strict: false,
        });
    }
    if let Some(label) = s("label") {
        return Ok(Locator::Label {
            label,
            frame,
            strict: false,
        });
    }
    if let Some(text) = s("text") {
        return Ok(Locator::Text {
            text,
            frame,
            strict: false,
        });
    }
    Err(CommandError::invalid(
        "selector",
        "an element assertion needs a target: selector, text, role (+ name), label or index",
    ))
}

/// Whether `e` means "no such element now" (an assertion keeps waiting) rather than a target
/// that can never match (a bad selector, an unknown frame: it fails at once).
fn absent(e: &CommandError) -> bool {
    matches!(
        e.code,
        ErrorCode::ElementNotFound | ErrorCode::StaleElement | ErrorCode::NotFound
    )
}

/// Reads `what` of the element `target` names in `task`'s current tab: always `count` (how
/// many elements match; 0 or 1 for an index), and for a match `text`, `visible` + `enabled`
/// (`state`), `checked`, `value`, or `attribute` + `present` (of attribute `name`).
pub async fn read(
    task: &Task,
    target: &Value,
    what: &str,
    name: Option<&str>,
) -> Result<Value, CommandError> {
    let locator = locator(target)?;
    let count = match find::count(task, &locator).await {
        Ok((n, _)) => n,
        Err(e) if absent(&e) => 0,
        Err(e) => return Err(e),
    };
    if what == "count" || count == 0 {
        return Ok(json!({"count": count}));
    }
    let (target, state) = match find::find(task, &locator, Read::QUIET).await {
        Ok(found) => found,
        Err(e) if absent(&e) => return Ok(json!({"count": 0})),
        Err(e) => return Err(e),
    };
    let mut out = json!({"count": count});
    match what {
        "state" => {
            out["visible"] = json!(state.visible);
            out["enabled"] = json!(!state.disabled);
        }
        "text" => {
            #[derive(Deserialize)]
            struct Text {
                text: String,
            }
            let t: Text = target.call(js::ELEMENT_READ_JS, "text", json!({})).await?;
            out["text"] = json!(t.text);
        }
        "value" => {
            let v: Value = target.call(js::ELEMENT_READ_JS, "value", json!({})).await?;
            out["value"] = v["value"].clone();
        }
        "checked" => {
            let v: Value = target
                .call(js::ELEMENT_READ_JS, "checked", json!({}))
                .await?;
            out["checked"] = v["checked"].clone();
        }
        "attribute" => {
            let v: Value = target
                .call(
                    js::ELEMENT_READ_JS,
                    "attribute",
                    json!({"name": name.unwrap_or_default()}),
                )
                .await?;
            out["attribute"] = v["value"].clone();
            out["present"] = v["present"].clone();
        }
        other => {
            return Err(CommandError::invalid(
                "what",
                format!("no element read `{other}`"),
            ))
        }
    }
    Ok(out)
}
