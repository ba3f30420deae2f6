//! Extraction and scripts: `execute_js`.
//!
//! Caller scripts are prepared per JS-PROBES.md §15.1 (vars, function or statement or
//! expression) and evaluated in the chosen frame's main world. This is the one place where
//! source text is assembled, and it is the caller's own script, never one of our probes.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::page_state::find_frame;
use crate::browser::tab::{exception_json, exception_line};
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};

/// The extract/script group.
pub const SPECS: &[CommandSpec] = &[
    Group::ExtractJs
        .action("execute_js", execute_js)
        .summary("Run JavaScript in the page or a frame and return its JSON result")
        .doc("`body` is an expression, a function (called and awaited) or statements with `return` \
          (wrapped into an async function). Promises are awaited. A thrown exception fails the \
          command with data.error {name, message, stack}; an exceeded budget (also a synchronous \
          endless loop) is EVAL_TIMEOUT and the page keeps working.")
        .params(&[
            string("body", "script: expression, function (called and awaited), or statements containing return"),
            string("bodyFile", "file inside scripts/js of the working directory; escaping the dir fails"),
            object("vars", "values injected for {{name}} placeholders as JSON literals (\"{{name}}\" with quotes too)"),
            string("frame", "frame ordinal (0 = main, as list_frames) or a substring of the frame URL or name"),
            int("timeoutMs", "in-page time budget in ms (at most 29000 for now; 0 means that maximum)").or("60000"),
            boolean("retryOnSpurious", "framework param: allow an automatic resend (only for side-effect-free scripts)").or("false"),
        ])
        .example("local r = page:execute_js{ body = \"return document.querySelectorAll('a').length\" }\nprint(r.data.result)"),
];

/// How a prepared script is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptForm {
    /// A function expression: called and awaited.
    Function,
    /// Statements with `return`: wrapped as the body of an async arrow function.
    Statements,
    /// Anything else: evaluated as an expression.
    Expression,
}

/// Substitutes `vars` into `body`: first `"{{k}}"` with its quotes, then bare `{{k}}`, each with
/// the value's JSON literal. Returns the names that were found.
pub fn apply_vars(body: &str, vars: &Map<String, Value>) -> (String, Vec<String>) {
    let mut out = body.to_string();
    let mut applied = Vec::new();
    for (key, value) in vars {
        let literal = value.to_string();
        let quoted = format!("\"{{{{{key}}}}}\"");
        let bare = format!("{{{{{key}}}}}");
        if out.contains(&quoted) || out.contains(&bare) {
            applied.push(key.clone());
        }
        out = out.replace(&quoted, &literal).replace(&bare, &literal);
    }
    (out, applied)
}

/// Classifies a script by JS-PROBES.md §15.1.
pub fn script_form(body: &str) -> ScriptForm {
    let t = body.trim_start();
    let rest = t
        .strip_prefix("async")
        .filter(|r| r.starts_with(|c: char| c.is_whitespace() || c == '('))
        .map(str::trim_start)
        .unwrap_or(t);
    let is_ident_arrow = {
        // A byte offset (not a char count): scripts may start with any character.
        let ident_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        ident_len > 0 && rest[ident_len..].trim_start().starts_with("=>")
    };
    if rest.starts_with("function") || rest.starts_with('(') || is_ident_arrow {
        // `(1 + 2) * 3` also starts with a parenthesis: only treat it as a function when an
        // arrow follows the closing parenthesis of the first group or the keyword matched.
        if rest.starts_with('(') && !rest.starts_with("function") && !paren_group_then_arrow(rest) {
            return if has_return(body) {
                ScriptForm::Statements
            } else {
                ScriptForm::Expression
            };
        }
        return ScriptForm::Function;
    }
    if has_return(body) {
        ScriptForm::Statements
    } else {
        ScriptForm::Expression
    }
}

fn paren_group_then_arrow(s: &str) -> bool {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return s[i + 1..].trim_start().starts_with("=>");
                }
            }
            _ => {}
        }
    }
    false
}

fn has_return(body: &str) -> bool {
    let bytes: Vec<char> = body.chars().collect();
    let word: Vec<char> = "return".chars().collect();
    let mut i = 0;
    while i + word.len() <= bytes.len() {
        if bytes[i..i + word.len()] == word[..] {
            let before_ok = i == 0 || {
                // Skip back over spaces and tabs to the previous significant char.
                let mut j = i;
                while j > 0 && (bytes[j - 1] == ' ' || bytes[j - 1] == '\t') {
                    j -= 1;
                }
                j == 0 || matches!(bytes[j - 1], ';' | '{' | '}' | '\n' | '\r')
            };
            let after = bytes.get(i + word.len()).copied();
            let after_ok = match after {
                None => true,
                Some(c) => c.is_whitespace() || c == ';' || c == '(',
            };
            if before_ok && after_ok {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// The expression that runs `body` in its form.
pub fn wrap_script(body: &str, form: ScriptForm) -> String {
    match form {
        ScriptForm::Function => format!("({body})()"),
        ScriptForm::Statements => format!("(async () => {{\n{body}\n}})()"),
        ScriptForm::Expression => body.to_string(),
    }
}

/// Resolves `bodyFile` inside `root`, refusing absolute paths and `..`.
fn script_path(root: &Path, file: &str) -> Result<PathBuf, CommandError> {
    let rel = Path::new(file);
    let escapes = rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if escapes {
        return Err(CommandError::invalid(
            "bodyFile",
            format!(
                "param `bodyFile`: `{file}` leaves the script directory `{}`",
                root.display()
            ),
        ));
    }
    Ok(root.join(rel))
}

fn execute_js(p: &mut Params) -> Prepared<TaskCx> {
    let body = p.str_opt("body")?;
    let body_file = if body.is_none() {
        p.str_opt("bodyFile")?
    } else {
        None
    };
    let vars = p.object_opt("vars")?.unwrap_or_default();
    let frame_spec = p.str_opt("frame")?;
    let budget_ms = match p.int_opt("timeoutMs")? {
        Some(ms) if ms < 0 => {
            return Err(CommandError::invalid(
                "timeoutMs",
                "param `timeoutMs`: must be >= 0",
            ))
        }
        Some(ms) => Some(ms.unsigned_abs()),
        None => None,
    };
    p.bool_opt("retryOnSpurious")?;
    let source = match (body, body_file) {
        (Some(b), _) => Ok(b),
        (None, Some(f)) => Err(script_path(Path::new("scripts/js"), &f)?),
        (None, None) => {
            return Err(CommandError::invalid(
                "body",
                "missing parameter `body` (or `bodyFile`)",
            ))
        }
    };
    run(move |cx: TaskCx| async move {
        let budget_ms = budget_ms.unwrap_or(cx.engine.config.eval_timeout_ms);
        let task = cx.task.clone();
        let tab = task.tab()?;
        let raw_body = match source {
            Ok(b) => b,
            Err(path) => tokio::fs::read_to_string(&path).await.map_err(|e| {
                CommandError::invalid(
                    "bodyFile",
                    format!("param `bodyFile`: reading `{}` failed: {e}", path.display()),
                )
            })?,
        };
        let (body, applied) = apply_vars(&raw_body, &vars);
        let expression = wrap_script(&body, script_form(&body));
        let frame = match &frame_spec {
            Some(spec) => find_frame(&tab, spec).await?,
            None => tab.main_frame().await?,
        };
        let started = std::time::Instant::now();
        // chromiumoxide answers every page command within 30 s at most, so that is also the
        // longest budget (and what "unlimited" means) until long evaluations move to the raw
        // connection.
        let budget_ms = if budget_ms == 0 {
            MAX_EVAL_MS
        } else {
            budget_ms.min(MAX_EVAL_MS)
        };
        let eval = tab.evaluate_script(&frame, &expression, Some(budget_ms));
        let res = if budget_ms > 0 {
            // Chromium terminates synchronous runs itself; the race catches promises that never
            // settle. The margin lets Chromium's own answer arrive first.
            match tokio::time::timeout(Duration::from_millis(budget_ms + 250), eval).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = tab.terminate_execution(&frame).await;
                    return Err(eval_timeout(budget_ms));
                }
            }
        } else {
            eval.await
        };
        // A run that Chromium terminated at the budget answers with an internal error or an
        // exception; either way the time spent is what tells.
        let over_budget = budget_ms > 0 && started.elapsed() >= Duration::from_millis(budget_ms);
        let res = match res {
            Err(_) if over_budget => return Err(eval_timeout(budget_ms)),
            other => other?,
        };
        if let Some(ex) = res.get("exceptionDetails") {
            let line = exception_line(ex);
            if over_budget || line.contains("Execution was terminated") {
                return Err(eval_timeout(budget_ms));
            }
            let preview: String = raw_body.chars().take(400).collect();
            let mut details = json!({
                "error": exception_json(ex),
                "scriptPreview": preview,
                "scriptLength": raw_body.chars().count(),
            });
            let lower = line.to_lowercase();
            if lower.contains("unexpected end of input") || lower.contains("unterminated") {
                details["hint"] = json!(
                    "the script looks truncated (a shell may have cut it at a quote or newline)"
                );
            }
            return Err(
                CommandError::failed(format!("executing JavaScript failed: {line}"))
                    .with_details(details),
            );
        }
        let result = &res["result"];
        let value = match (
            result["type"].as_str(),
            result["subtype"].as_str(),
            result["objectId"].as_str(),
        ) {
            (_, Some("node"), _) => Ok(json!(format!(
                "ref:{}",
                result["description"].as_str().unwrap_or("node")
            ))),
            (Some("object"), Some("null"), _)
            | (Some("undefined"), _, _)
            | (Some("function"), _, _) => Ok(Value::Null),
            (Some("object"), _, Some(object_id)) => tab.object_value(&frame, object_id).await,
            _ => Ok(result.get("value").cloned().unwrap_or(Value::Null)),
        };
        if result.get("objectId").is_some() {
            // Objects, nodes and functions stayed in the page: free them whatever happened.
            tab.release_script_objects(&frame).await;
        }
        let value = value?;
        let mut data = json!({"result": value, "varsApplied": applied, "awaited": true});
        if frame_spec.is_some() {
            data["frame"] = json!(frame.ordinal);
            data["frameUrl"] = json!(frame.url);
        }
        Ok(data)
    })
}

/// The longest `execute_js` budget: chromiumoxide's fixed per-command limit, less a margin for
/// Chromium's own termination answer to arrive first.
const MAX_EVAL_MS: u64 = 29_000;

fn eval_timeout(budget_ms: u64) -> CommandError {
    CommandError::new(
        ErrorCode::EvalTimeout,
        format!("the script exceeded its budget of {budget_ms} ms and was stopped; it may have half-run"),
    )
    .with_details(json!({"outcomeUnknown": true, "evalTimeoutMs": budget_ms}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(script_form("document.title"), ScriptForm::Expression);
        assert_eq!(script_form("() => 1"), ScriptForm::Function);
        assert_eq!(
            script_form("async () => { await 1; return 2 }"),
            ScriptForm::Function
        );
        assert_eq!(
            script_form("function () { return 3 }"),
            ScriptForm::Function
        );
        assert_eq!(script_form("x => x"), ScriptForm::Function);
        assert_eq!(
            script_form("const a = 1;\nreturn a + 1"),
            ScriptForm::Statements
        );
        assert_eq!(script_form("return(5)"), ScriptForm::Statements);
        assert_eq!(script_form("(1 + 2) * 3"), ScriptForm::Expression);
        assert_eq!(script_form("returnValue"), ScriptForm::Expression);
        assert_eq!(script_form("if (x) { return 1 }"), ScriptForm::Statements);
        assert_eq!(script_form("π"), ScriptForm::Expression);
        assert_eq!(script_form("größe => größe"), ScriptForm::Function);
    }

    #[test]
    fn vars_replace_quoted_then_bare() {
        let vars: Map<String, Value> = serde_json::from_str(r#"{"name": "a\"b", "n": 3}"#).unwrap();
        let (out, applied) = apply_vars(r#"return ["{{name}}", {{n}}, {{missing}}]"#, &vars);
        assert_eq!(out, r#"return ["a\"b", 3, {{missing}}]"#);
        assert_eq!(applied, vec!["name".to_string(), "n".to_string()]);
    }

    #[test]
    fn script_paths_stay_inside() {
        let root = Path::new("scripts/js");
        assert!(script_path(root, "a/b.js").is_ok());
        assert!(script_path(root, "../x.js").is_err());
        assert!(script_path(root, "/etc/passwd").is_err());
    }
}
