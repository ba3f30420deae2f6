//! What the Runtime domain answers: the value of an evaluation, or the exception it threw as a
//! line and as JSON.
//!
//! Pure functions over CDP's JSON, shared by every file of the tab that evaluates something; no
//! CDP call is made here.

use serde_json::{json, Value};

use crate::error::CommandError;

/// The JSON value of a `Runtime.evaluate`/`callFunctionOn` answer; a thrown exception becomes
/// an `ACTION_FAILED` error naming the exception.
pub fn remote_value(what: &str, res: Value) -> Result<Value, CommandError> {
    if let Some(ex) = res.get("exceptionDetails") {
        return Err(CommandError::failed(format!(
            "`{what}`: page script threw: {}",
            exception_line(ex)
        ))
        .with_details(json!({"error": exception_json(ex)})));
    }
    Ok(res.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

/// The first line of an exception's description.
pub fn exception_line(ex: &Value) -> String {
    ex.pointer("/exception/description")
        .and_then(Value::as_str)
        .or_else(|| ex.get("text").and_then(Value::as_str))
        .unwrap_or("unknown error")
        .lines()
        .next()
        .unwrap_or("unknown error")
        .to_string()
}

/// `{name, message, stack}` of an exception (stack: page frames only, at most 12).
pub fn exception_json(ex: &Value) -> Value {
    let description = ex
        .pointer("/exception/description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let class = ex
        .pointer("/exception/className")
        .and_then(Value::as_str)
        .unwrap_or("Error");
    let first = description.lines().next().unwrap_or_default();
    let message = first
        .strip_prefix(&format!("{class}: "))
        .unwrap_or(first)
        .to_string();
    let stack: Vec<&str> = description
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| l.starts_with("at "))
        .take(12)
        .collect();
    json!({"name": class, "message": message, "stack": stack})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceptions_are_summarised() {
        let ex = json!({"text": "Uncaught", "exception": {"className": "TypeError",
            "description": "TypeError: x is not a function\n    at <anonymous>:1:1\n    at foo (a.js:2:3)"}});
        assert_eq!(exception_line(&ex), "TypeError: x is not a function");
        let j = exception_json(&ex);
        assert_eq!(j["name"], "TypeError");
        assert_eq!(j["message"], "x is not a function");
        assert_eq!(j["stack"].as_array().unwrap().len(), 2);
    }
}
