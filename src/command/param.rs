//! One parameter of a command: its JSON kind, presence, default, range and secrecy
//! (`ParamSpec`), the presets that build one (`string`, `int`, …), and the executor's check of a
//! value against it.
//!
//! A child of `command.rs` that imports neither the engine nor the contexts: the trace and the
//! engine read a param's secrecy from here without depending on what a command runs in.

use serde_json::Value;

use crate::error::CommandError;
use crate::protocol::Params;

/// The JSON kind of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    String,
    /// An integer.
    Int,
    /// A number.
    Number,
    /// A boolean.
    Bool,
    /// An object.
    Object,
    /// An array.
    Array,
}

impl Kind {
    /// The JSON Schema spelling (`string`, `integer`, `number`, `boolean`, `object`, `array`).
    pub fn schema_type(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Int => "integer",
            Kind::Number => "number",
            Kind::Bool => "boolean",
            Kind::Object => "object",
            Kind::Array => "array",
        }
    }

    /// The catalogue's spelling (`string`, `int`, `number`, `bool`, `object`, `array`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Object => "object",
            Kind::Array => "array",
        }
    }
}

/// Whether a param's value may be written to the trace log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrecy {
    /// Written (after the trace's generic redaction of secret-looking keys and strings).
    Plain,
    /// Always masked (a password, a token).
    Always,
    /// Text typed into a field: masked when the receipt says the field was a password field
    /// (`data.password`), or when the command failed before it could tell.
    Typed,
}

/// One parameter of a command.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// The wire name, exactly as the catalogue spells it.
    pub name: &'static str,
    /// The JSON kind.
    pub kind: Kind,
    /// Whether the command fails without it.
    pub required: bool,
    /// The default as JSON text (`"true"`, `"5000"`, `"\"auto\""`), or `None`.
    pub default: Option<&'static str>,
    /// The legal range of a number, inclusive, checked by the executor.
    pub range: Option<(f64, f64)>,
    /// Whether the trace may show it.
    pub secrecy: Secrecy,
    /// Required, but its absence is answered by the handler, not by the executor's check (the
    /// batch's one-step form, where the params themselves are the step).
    pub absent_ok: bool,
    /// What it does.
    pub doc: &'static str,
}

impl ParamSpec {
    /// An optional param of `kind`.
    pub const fn new(name: &'static str, kind: Kind, doc: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            kind,
            required: false,
            default: None,
            range: None,
            secrecy: Secrecy::Plain,
            absent_ok: false,
            doc,
        }
    }

    /// Required.
    pub const fn req(mut self) -> Self {
        self.required = true;
        self
    }

    /// Required, with its absence answered by the handler (see [`ParamSpec::absent_ok`]).
    pub const fn absence_by_handler(mut self) -> Self {
        self.absent_ok = true;
        self
    }

    /// With a default, as JSON text.
    pub const fn or(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }

    /// Within `min..=max`.
    pub const fn range(mut self, min: f64, max: f64) -> Self {
        self.range = Some((min, max));
        self
    }

    /// With this secrecy.
    pub const fn secret(mut self, secrecy: Secrecy) -> Self {
        self.secrecy = secrecy;
        self
    }

    /// The default as a JSON value (`null` when none).
    pub fn default_value(&self) -> Value {
        self.default
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(Value::Null)
    }

    /// Checks the value `params` carries for this param against its kind and range, by the
    /// params reader's own coercions (numeric strings for numbers, `"true"`/`"false"` for
    /// booleans, numbers for strings, a blank string as an absent integer); `null` is absent.
    /// Reads nothing: the handler's reads are what `unknownParams` is computed from.
    pub fn check(&self, params: &Params) -> Result<(), CommandError> {
        use crate::protocol::params::{coerce, wrong_type};
        let name = self.name;
        let value = match params.raw().get(name) {
            None | Some(Value::Null) if self.required && !self.absent_ok => {
                return Err(params.missing(name))
            }
            None | Some(Value::Null) => return Ok(()),
            Some(v) => v,
        };
        let (fits, number) = match self.kind {
            Kind::String => (coerce::string(value).is_some(), None),
            Kind::Int => match coerce::int(value) {
                Some(n) => (true, n.map(|n| n as f64)),
                None => (false, None),
            },
            Kind::Number => match coerce::number(value) {
                Some(n) => (true, Some(n)),
                None => (false, None),
            },
            Kind::Bool => (coerce::boolean(value).is_some(), None),
            Kind::Object => (value.is_object(), None),
            Kind::Array => (coerce::array(value).is_some(), None),
        };
        if !fits {
            return Err(wrong_type(name, self.kind.schema_type(), value));
        }
        if let (Some((min, max)), Some(n)) = (self.range, number) {
            if n < min || n > max {
                // The side that was crossed, then the whole range when both ends are finite.
                let side = if n < min {
                    format!(">= {min}")
                } else {
                    format!("<= {max}")
                };
                let range = if min.is_finite() && max.is_finite() {
                    format!(" (range {min}..={max})")
                } else {
                    String::new()
                };
                return Err(CommandError::invalid(
                    name,
                    format!("param `{name}`: must be {side}, got {n}{range}"),
                ));
            }
        }
        Ok(())
    }
}

/// A string param.
pub const fn string(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::String, doc)
}

/// An integer param.
pub const fn int(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Int, doc)
}

/// A number param.
pub const fn number(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Number, doc)
}

/// A boolean param.
pub const fn boolean(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Bool, doc)
}

/// An object param.
pub const fn object(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Object, doc)
}

/// An array param.
pub const fn array(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Array, doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(p: &ParamSpec, value: Value) -> Result<(), CommandError> {
        p.check(&Params::new(json!({ p.name: value })).unwrap())
    }

    #[test]
    fn params_are_checked_by_kind_and_range() {
        let index = int("index", "i").req().range(0.0, f64::INFINITY);
        assert!(check(&index, json!(3)).is_ok());
        assert!(check(&index, json!("3")).is_ok());
        let e = index.check(&Params::default()).unwrap_err();
        assert_eq!(e.msg, "missing parameter `index`");
        let e = check(&index, json!(-1)).unwrap_err();
        assert_eq!(e.msg, "param `index`: must be >= 0, got -1");
        // Issue 10 #12: a value that can never succeed is refused, naming the range.
        let seconds = int("seconds", "s").req().range(1.0, 899.0);
        let e = check(&seconds, json!(1e12)).unwrap_err();
        assert_eq!(e.code, crate::protocol::ErrorCode::InvalidArgument);
        assert_eq!(
            e.msg,
            "param `seconds`: must be <= 899, got 1000000000000 (range 1..=899)"
        );
        let poll = int("timeoutSeconds", "t").range(f64::NEG_INFINITY, 899.0);
        assert!(check(&poll, json!(-5)).is_ok());
        assert_eq!(
            check(&poll, json!(900)).unwrap_err().msg,
            "param `timeoutSeconds`: must be <= 899, got 900"
        );
        let e = check(&index, json!(1.5)).unwrap_err();
        assert!(e.msg.contains("expected integer, got number"), "{}", e.msg);
        let e = check(&index, json!({})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("index"));
        // The reader's own rules: what it refuses, the check refuses.
        assert!(check(&index, json!("3.0")).is_err());
        assert!(check(&int("n", "n"), json!(1e20)).is_err());
        assert!(check(&number("x", "x"), json!("")).is_err());
        let flag = boolean("inline", "b");
        assert!(check(&flag, json!("true")).is_ok());
        assert!(check(&flag, json!(1)).is_err());
        assert!(check(&flag, Value::Null).is_ok());
        assert!(check(&array("steps", "a"), json!({})).is_ok());
        assert!(check(&array("steps", "a"), json!({"a": 1})).is_err());
        assert!(check(&string("url", "u"), json!(true)).is_err());
        let page_index = int("pageIndex", "p").req();
        let e = page_index
            .check(&Params::new(json!({"index": 1})).unwrap())
            .unwrap_err();
        assert!(e.msg.contains("this parameter is `pageIndex`"), "{}", e.msg);
    }
}
