//! The input techniques of COMMANDS.md "Input modes": [`InputMode`], [`Target::input`]
//! (input_text), [`Target::type_after`] (type_text) and [`Target::clear`] (clear_text), each
//! checking first that the field accepts text and reading the value back after, so an input the
//! page or the browser changed or refused is `ACTION_FAILED`, never a silent success.
//!
//! What is not here: how text gets into a field ([`FillKind`](super::FillKind), part of the read
//! in `actionable.rs`) and the keyboard itself (`Tab`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::actionable::{disabled_details, ElementState, FillKind};
use super::Target;
use crate::error::CommandError;
use crate::protocol::ErrorCode;

/// Input technique (COMMANDS.md "Input modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// Real input when the field is visible with a box, else JS.
    Auto,
    /// Real input: typed text, or the value setter for fields without text.
    Fill,
    /// Key by key after the existing content.
    Type,
    /// The native value setter with input/change events.
    Js,
}

impl InputMode {
    /// The mode named by a `mode` param; an unknown name is `INVALID_ARGUMENT`.
    pub fn parse(raw: Option<&str>) -> Result<InputMode, CommandError> {
        match raw.map(str::to_ascii_lowercase).as_deref() {
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
}

/// A value read back after an input (`probe_lib.js` `readBack`).
#[derive(Debug, Clone, Deserialize)]
struct ReadBack {
    /// The live value (`[redacted]` for passwords, at most 200 characters).
    value: Option<String>,
    /// Its full length.
    length: Option<usize>,
    /// Whether it is what was sent (as the browser itself normalises it).
    matches: bool,
}

/// The answer of the `focus` op.
#[derive(Debug, Clone, Deserialize)]
struct Focused {
    focused: bool,
    /// Length of the value before typing.
    length: Option<usize>,
}

impl Target {
    /// Empties the field (clear_text): disabled and read-only fields are refused as for input;
    /// a visible text field is cleared for real (focus, select all, Delete), anything else
    /// through the value setter with input/change events. The field is read back: a value that
    /// is not empty afterwards is `ACTION_FAILED`. Answers `{value, mode, committed}`.
    pub async fn clear(&self, state: &ElementState) -> Result<Value, CommandError> {
        self.check_editable(state)?;
        let real = state.visible && state.has_box() && state.fill == Some(FillKind::Text);
        let back = if real {
            let focused: Focused = self.probe("focus", json!({"at": "all"})).await?;
            self.require_focus(&focused)?;
            if focused.length.unwrap_or(0) > 0 {
                self.tab.press_delete().await?;
            }
            // Delete has been pressed: a read-back that fails must not say nothing ran.
            self.probe::<ReadBack>("read_back", json!({"text": "", "mode": "exact"}))
                .await
                .map_err(CommandError::sent)?
        } else {
            self.set_value("", false, false).await?
        };
        self.verify(state, &back, "", if real { "fill" } else { "js" })?;
        Ok(json!({
            "value": back.value,
            "mode": if real { "fill" } else { "js" },
            "committed": real,
        }))
    }

    /// Checks that the field accepts text (COMMANDS.md "Input modes").
    fn check_editable(&self, state: &ElementState) -> Result<(), CommandError> {
        if state.disabled || state.aria_disabled {
            return Err(CommandError::new(
                ErrorCode::ElementDisabled,
                format!("{} is disabled", self.label),
            )
            .with_details(disabled_details(state)));
        }
        if state.read_only {
            return Err(CommandError::new(
                ErrorCode::ElementReadOnly,
                format!("{} is read-only", self.label),
            ));
        }
        if state.fill.is_none() {
            return Err(CommandError::new(
                ErrorCode::ElementNotEditable,
                format!(
                    "{} (<{}{}>) does not accept text",
                    self.label,
                    state.tag,
                    state
                        .control_type
                        .as_deref()
                        .filter(|_| state.tag == "input")
                        .map(|t| format!(" type={t}"))
                        .unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }

    /// Replaces the field's value with `text` (input_text) and checks by reading it back: a
    /// value that differs afterwards is `ACTION_FAILED` with the read-back in `data`. Answers
    /// the result data (`mode`, `committed`, notes).
    pub async fn input(
        &self,
        state: &ElementState,
        text: &str,
        mode: InputMode,
    ) -> Result<Value, CommandError> {
        let real = match mode {
            InputMode::Auto => state.visible && state.has_box(),
            InputMode::Fill | InputMode::Type => true,
            InputMode::Js => false,
        };
        let mut data = if !real {
            let back = self
                .set_value(text, state.fill == Some(FillKind::Set), false)
                .await?;
            self.verify(state, &back, text, "js")?;
            json!({
                "mode": "js",
                "committed": false,
                "note": "the value was set through the DOM setter with input/change events",
                "hint": "framework models (Vue/React) may not see it; for visible fields use mode=native",
            })
        } else {
            self.check_editable(state)?;
            match (mode, state.fill) {
                (InputMode::Type, _) => {
                    self.type_after(state, text).await?;
                    json!({"mode": "type", "committed": true})
                }
                (_, Some(FillKind::Set)) => {
                    let back = self.set_value(text, true, true).await?;
                    self.verify(state, &back, text, "fill")?;
                    json!({
                        "mode": "fill",
                        "committed": true,
                        "setter": true,
                        "note": format!("an input of type {} has no text to type: its value was set with input/change events, as Playwright's fill does", state.control_type.as_deref().unwrap_or("?")),
                    })
                }
                _ => {
                    let focused: Focused = self.probe("focus", json!({"at": "all"})).await?;
                    self.require_focus(&focused)?;
                    self.tab.insert_text(text).await?;
                    let back: ReadBack = self
                        .probe("read_back", json!({"text": text, "mode": "exact"}))
                        .await?;
                    self.verify(state, &back, text, "fill")?;
                    json!({"mode": "fill", "committed": true})
                }
            }
        };
        if state.is_password() {
            data["password"] = json!(true);
        }
        Ok(data)
    }

    /// Types `text` key by key after the field's content (type_text, input_text mode type),
    /// checking the editable state first and the read-back after (the field must end with the
    /// text, and have grown by exactly its length).
    pub async fn type_after(&self, state: &ElementState, text: &str) -> Result<(), CommandError> {
        self.check_editable(state)?;
        if state.fill == Some(FillKind::Set) {
            return Err(CommandError::new(
                ErrorCode::ElementNotEditable,
                format!(
                    "{} (<input type={}>) has no text to type into; input_text sets its value",
                    self.label,
                    state.control_type.as_deref().unwrap_or("?")
                ),
            ));
        }
        let focused: Focused = self.probe("focus", json!({"at": "end"})).await?;
        self.require_focus(&focused)?;
        self.tab.type_keys(text).await?;
        let back: ReadBack = self
            .probe(
                "read_back",
                json!({"text": text, "mode": "append", "before": focused.length}),
            )
            .await?;
        self.verify(state, &back, text, "type")
    }

    fn require_focus(&self, focused: &Focused) -> Result<(), CommandError> {
        if focused.focused {
            return Ok(());
        }
        Err(CommandError::failed(format!(
            "{} did not take the focus, so typed text would go elsewhere; nothing was typed",
            self.label
        )))
    }

    /// The value setter with input/change events; `validate` refuses (INVALID_ARGUMENT, the
    /// field untouched) a value the browser would change or drop, `focus` focuses first.
    async fn set_value(
        &self,
        text: &str,
        validate: bool,
        focus: bool,
    ) -> Result<ReadBack, CommandError> {
        self.probe(
            "set_value",
            json!({"value": text, "validate": validate, "focus": focus}),
        )
        .await
        .map_err(|e| {
            if e.code != ErrorCode::InvalidArgument {
                return e;
            }
            let details = e.details.as_deref().cloned();
            let err = CommandError::invalid("text", format!("param `text`: {}", e.msg));
            match details {
                Some(d) => err.with_details(d),
                None => err,
            }
        })
    }

    /// A read-back that is not what was sent is `ACTION_FAILED`, with what the field shows
    /// (`mode` says how it was sent; for `type` the text was to be appended).
    fn verify(
        &self,
        state: &ElementState,
        back: &ReadBack,
        text: &str,
        mode: &str,
    ) -> Result<(), CommandError> {
        if back.matches {
            return Ok(());
        }
        let password = state.is_password();
        let shown = match (&back.value, back.length) {
            (Some(_), Some(n)) if password => format!("a value of {n} characters"),
            (Some(v), _) => format!("`{v}`"),
            (None, _) => "no value".to_string(),
        };
        Err(CommandError::failed(format!(
            "{} shows {shown} after the input, not the text that was sent: the page or the browser changed or refused it",
            self.label
        ))
        .with_details(json!({
            "readBack": back.value,
            "readBackLength": back.length,
            "expected": if password { "[redacted]" } else { text },
            "inputMode": mode,
            "hint": "read the field before retrying; input masks, max lengths and formats change what a field accepts",
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_aliases() {
        assert_eq!(InputMode::parse(Some("set_value")).unwrap(), InputMode::Js);
        assert_eq!(InputMode::parse(Some("press")).unwrap(), InputMode::Type);
        assert!(InputMode::parse(Some("paste")).is_err());
    }
}
