//! Extraction and scripts: `execute_js`.
//!
//! Caller scripts are prepared per JS-PROBES.md §15.1 (vars, function or statement or
//! expression) and evaluated in the chosen frame's main world. This is the one place where
//! source text is assembled, and it is the caller's own script, never one of our probes.
//!
//! The script is made into a function that `js/script_result.js` calls, so its result is
//! serialised in the page in the call that runs it (a navigation the script starts cannot take
//! the value away), as JSON.stringify would, with every value JSON cannot hold named in the
//! receipt (`unserializable`, `resultNote`).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::page_state::find_frame;
use crate::browser::tab::{exception_json, exception_line, FrameRef, ScriptGroup, Tab};
use crate::command::*;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

/// The extract/script group.
pub const SPECS: &[CommandSpec] = &[
    Group::ExtractJs
        .action("execute_js", execute_js)
        .summary("Run JavaScript in the page or a frame and return its JSON result")
        .doc("`body` is a function (called and awaited), an expression (whatever compiles as one, \
          so an IIFE answers its value) or statements with `return` (wrapped into an async \
          function). Promises are awaited; values JSON cannot hold (NaN, -0, BigInt, Symbol, \
          functions, cycles, Map…) are converted and named in `resultNote`/`unserializable`. A thrown exception fails the \
          command with data.error {name, message, stack}; an exceeded budget (also a synchronous \
          endless loop) is EVAL_TIMEOUT and the page keeps working.")
        .params(&[
            string("body", "script: expression, function (called and awaited), or statements containing return"),
            string("bodyFile", "file inside scripts/js of the working directory; escaping the dir fails"),
            object("vars", "values injected for {{name}} placeholders as JSON literals (\"{{name}}\" with quotes too)"),
            string("frame", "frame ordinal (0 = main, as list_frames) or a substring of the frame URL or name"),
            int("timeoutMs", "in-page time budget in ms, 0..=90000 (at most 29000 is used for now; 0 means that maximum)").or("60000").range(0.0, 90_000.0),
            boolean("retryOnSpurious", "framework param: allow an automatic resend (only for side-effect-free scripts)").or("false"),
        ])
        .example("local r = page:execute_js{ body = \"return document.querySelectorAll('a').length\" }\nprint(r.data.result)"),
    Group::ExtractJs
        .read("extract_structured_data", extract_structured_data)
        .summary("The page's body text (innerText), bounded, and optionally its links")
        .doc("Reads `body.innerText` of the main frame with the highlight overlay hidden, cut at \
              20000 characters (`limit`; `truncated`, `length` = the full length and \
              `truncatedHint` say what was cut). Tables are flattened by innerText: use \
              extract_markdown for tables. `query` is echoed, never used to filter. Links are \
              capped at 1000 (`linksTruncated`). Beyond the reference: `jsonLd` holds the \
              page's JSON-LD blocks parsed ({index, value, error}; at most 20 of 100000 \
              characters, `jsonLdCount`, `jsonLdTruncated`) and `microdata` its top-level \
              microdata items ({type, id, properties {name: [values]}}, nested items as \
              objects 5 deep; at most 50, `microdataCount`, `microdataTruncated`).")
        .params(&[
            string("query", "free text echoed back (no server-side filtering)"),
            boolean("extractLinks", "also return links [{text (<=80), href (absolute)}]").or("false"),
        ])
        .example("local r = page:extract_structured_data{ extractLinks = true }:unwrap()\nprint(r.text)"),
    Group::ExtractJs
        .read("extract_markdown", extract_markdown)
        .summary("The body or one element as Markdown (tables as GFM tables)")
        .doc("Converts the live DOM of the chosen frame (headings, paragraphs, lists, links, \
              emphasis, code, images, block quotes; tables as GFM tables with the first row as \
              header) to Markdown, cut at `maxChars` (`truncated`, `length` = the full length). \
              A selector matching nothing fails; `nth` out of range fails with the count. \
              list_tables gives ready selectors `table >> nth=N`.")
        .params(&[
            string("selector", "element to convert (first or nth match); absent = whole body"),
            string("frame", "frame ordinal (0 = main, as list_frames) or a substring of the frame URL or name"),
            boolean("includeLinks", "also return links of that frame").or("false"),
            int("maxChars", "truncation, at most 1000000 (<= 0 means 20000)").or("20000").range(f64::NEG_INFINITY, 1_000_000.0),
            int("nth", "0-based match of the selector").range(0.0, 100_000.0),
        ])
        .example("local md = page:extract_markdown{ selector = \"table >> nth=0\" }:unwrap().markdown"),
    Group::ExtractJs
        .read("find_text", find_text)
        .summary("Find literal text or a regex in the page's innerText, with context")
        .doc("Non-overlapping hits in `innerText` of the body (or of `selector`'s first match) of \
              the chosen frame, overlay hidden; an empty regex match advances one character. \
              `matchCount` counts every hit (up to 100000, `matchCountCapped`), `matches` holds \
              the first `maxMatches` with their char offset, 1-based line and context. An \
              invalid regex fails (INVALID_ARGUMENT, param `text`), never a literal fallback.")
        .params(&[
            string("text", "literal text or regex").req(),
            boolean("regex", "treat text as a JavaScript regex (flags g and m)").or("false"),
            int("contextChars", "chars before/after each hit, 0..=2000").or("80").range(0.0, 2000.0),
            int("maxMatches", "hits returned, 0..=1000").or("20").range(0.0, 1000.0),
            string("selector", "search only inside this element (first match)"),
            string("frame", "frame ordinal (0 = main, as list_frames) or a substring of the frame URL or name"),
        ])
        .example("local r = page:find_text{ text = \"total\" }:unwrap()\nprint(r.matchCount)"),
    Group::ExtractJs
        .read("list_tables", list_tables)
        .summary("List the tables of a frame with ready selectors for extract_markdown")
        .doc("Every `table` of the frame in document order: `{index, selector 'table >> nth=N', \
              rows, cols (cells of the first row), textLength, imageCount, preview (<=120, \
              whitespace collapsed), className, id}`.")
        .params(&[
            string("frame", "frame ordinal (0 = main, as list_frames) or a substring of the frame URL or name"),
        ])
        .example("for _, t in ipairs(page:list_tables():unwrap().tables) do print(t.selector, t.rows) end"),
];

/// The default and fallback limit of the text extractors (`browser.extract.maxChars`).
const EXTRACT_MAX_CHARS: usize = 20_000;

/// How long a `find_text` search may run in the page before it is stopped.
const FIND_BUDGET: Duration = Duration::from_secs(10);

/// The frame a `frame` param names, else the main frame.
async fn frame_or_main(tab: &Tab, frame: Option<&str>) -> Result<FrameRef, CommandError> {
    match frame {
        Some(spec) => find_frame(tab, spec).await,
        None => Ok(tab.main_frame_local()),
    }
}

/// Runs `page_read.js` in `frame`; a probe's INVALID_ARGUMENT names its param.
async fn page_read(tab: &Tab, frame: &FrameRef, args: Value) -> Result<Value, CommandError> {
    tab.call_probe::<Value>(frame, js::PAGE_READ_JS, args)
        .await
        .map_err(|mut e| {
            if e.code == ErrorCode::InvalidArgument && e.param.is_none() {
                e.param = e
                    .details
                    .as_ref()
                    .and_then(|d| d["param"].as_str())
                    .map(str::to_string);
            }
            e
        })
}

/// The URL and title of the current tab (empty when unreadable).
async fn url_title(tab: &Tab) -> (String, String) {
    let status = tab.call_page_status().await.unwrap_or_default();
    let text = |key: &str| status[key].as_str().unwrap_or_default().to_string();
    (text("url"), text("title"))
}

fn extract_structured_data(p: &mut Params) -> Prepared<TaskCx> {
    let query = p.str_opt("query")?;
    let extract_links = p.bool_or("extractLinks", false)?;
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        let frame = tab.main_frame_local();
        let limit = EXTRACT_MAX_CHARS;
        let got = page_read(
            &tab,
            &frame,
            json!({"mode": "text", "limit": limit, "links": extract_links}),
        )
        .await?;
        let total = got["total"].as_u64().unwrap_or(0);
        let truncated = total > limit as u64;
        let mut data = json!({
            "query": query,
            "text": got["text"],
            "length": total,
            "truncated": truncated,
            "limit": limit,
        });
        if truncated {
            data["truncatedHint"] = json!(format!(
                "the text is {total} characters; the first {limit} are returned: use find_text or \
                 extract_markdown with a selector for the part you need"
            ));
        }
        // Structured data proper (moonpilot): JSON-LD blocks and microdata items, capped.
        for (key, list) in [("jsonLd", "blocks"), ("microdata", "items")] {
            let kept = got[key][list].as_array().cloned().unwrap_or_default();
            let total = got[key]["total"].as_u64().unwrap_or(0);
            data[format!("{key}Count")] = json!(total);
            data[format!("{key}Truncated")] = json!(total > kept.len() as u64);
            data[key] = json!(kept);
        }
        if extract_links {
            let links = got["links"].as_array().cloned().unwrap_or_default();
            data["linksTruncated"] = json!(links.len() >= 1000);
            data["links"] = json!(links);
        }
        Ok(data)
    })
}

fn extract_markdown(p: &mut Params) -> Prepared<TaskCx> {
    let selector = p.str_opt("selector")?;
    let frame = p.str_opt("frame")?;
    let include_links = p.bool_or("includeLinks", false)?;
    let max_chars = match p.int_opt("maxChars")? {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(EXTRACT_MAX_CHARS),
        _ => EXTRACT_MAX_CHARS,
    };
    let nth = p.int_opt("nth")?;
    if nth.is_some() && selector.is_none() {
        return Err(CommandError::invalid(
            "nth",
            "param `nth`: only meaningful with `selector`",
        ));
    }
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        let target = frame_or_main(&tab, frame.as_deref()).await?;
        let got = page_read(
            &tab,
            &target,
            json!({"mode": "markdown", "selector": selector, "nth": nth,
                   "limit": max_chars, "links": include_links}),
        )
        .await?;
        let total = got["total"].as_u64().unwrap_or(0);
        let source = match (&selector, nth) {
            (Some(s), Some(n)) => format!("{s} >> nth={n}"),
            (Some(s), None) => s.clone(),
            _ => "body".to_string(),
        };
        let (url, title) = url_title(&tab).await;
        let mut data = json!({
            "markdown": got["markdown"],
            "length": total,
            "truncated": total > max_chars as u64,
            "source": source,
            "url": url,
            "title": title,
        });
        if include_links {
            data["links"] = got["links"].clone();
        }
        Ok(data)
    })
}

fn find_text(p: &mut Params) -> Prepared<TaskCx> {
    let text = p.str_keep_empty("text")?.ok_or_else(|| p.missing("text"))?;
    let regex = p.bool_or("regex", false)?;
    if text.is_empty() && !regex {
        return Err(CommandError::invalid(
            "text",
            "param `text`: must not be empty",
        ));
    }
    let context = p.int_opt("contextChars")?.unwrap_or(80).clamp(0, 2000);
    let max_matches = p.int_opt("maxMatches")?.unwrap_or(20).clamp(0, 1000);
    let selector = p.str_opt("selector")?;
    let frame = p.str_opt("frame")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        let target = frame_or_main(&tab, frame.as_deref()).await?;
        let read = page_read(
            &tab,
            &target,
            json!({"mode": "find", "text": text, "regex": regex, "contextChars": context,
                   "maxMatches": max_matches, "selector": selector}),
        );
        // A regex that backtracks catastrophically would spin the page's thread for good.
        let got = match tokio::time::timeout(FIND_BUDGET, read).await {
            Ok(got) => got?,
            Err(_) => {
                if let Err(e) = tab.terminate_execution(&target).await {
                    tracing::debug!("stopping a runaway find_text failed: {}", e.msg);
                }
                return Err(CommandError::new(
                    ErrorCode::EvalTimeout,
                    format!(
                        "find_text: the search ran over {} s and was stopped{}",
                        FIND_BUDGET.as_secs(),
                        if regex {
                            " (a regex that backtracks catastrophically?)"
                        } else {
                            ""
                        }
                    ),
                )
                .with_details(json!({"waitedMs": FIND_BUDGET.as_millis() as u64})));
            }
        };
        let count = got["matchCount"].as_u64().unwrap_or(0);
        let matches = got["matches"].as_array().cloned().unwrap_or_default();
        let returned = matches.len() as u64;
        let truncated = returned < count;
        let mut data = json!({
            "matchCount": count,
            "returned": returned,
            "truncated": truncated,
            "matches": matches,
            "pattern": text,
            "regex": regex,
            "contextChars": context,
            "source": selector.clone().unwrap_or_else(|| "body".into()),
            "textLength": got["textLength"],
        });
        if got["countCapped"].as_bool() == Some(true) {
            data["matchCountCapped"] = json!(true);
        }
        if count == 0 {
            data["hint"] = json!(
                "no hit in the visible text (innerText): text inside images, \
                                  inputs or hidden elements is never found; check spelling or use \
                                  regex:true"
            );
        } else if truncated {
            data["hint"] = json!(format!(
                "{count} hits, {returned} returned: raise maxMatches or narrow with selector"
            ));
        }
        Ok(data)
    })
}

fn list_tables(p: &mut Params) -> Prepared<TaskCx> {
    let frame = p.str_opt("frame")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        let target = frame_or_main(&tab, frame.as_deref()).await?;
        let got = page_read(&tab, &target, json!({"mode": "tables"})).await?;
        let tables = got["tables"].as_array().cloned().unwrap_or_default();
        let (url, title) = url_title(&tab).await;
        let hint = if tables.is_empty() {
            "no <table> in this frame: the data may be a grid of divs (use extract_markdown or \
             find_text), or inside another frame (frame param)"
        } else {
            "pass a selector to extract_markdown{ selector = 'table >> nth=N' } to read a table"
        };
        Ok(json!({
            "count": tables.len(),
            "tables": tables,
            "url": url,
            "title": title,
            "hint": hint,
        }))
    })
}

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

/// The function expression that runs `body` in its form, for `js/script_result.js` to call: the
/// function itself, statements as the body of an async arrow function, an expression as its
/// value. Making it runs nothing.
pub fn wrap_script(body: &str, form: ScriptForm) -> String {
    match form {
        ScriptForm::Function => format!("({body})"),
        ScriptForm::Statements => format!("(async () => {{\n{body}\n}})"),
        ScriptForm::Expression => format!("(async () => (\n{body}\n))"),
    }
}

/// Where `bodyFile` is read from: `scripts/js` of the working directory.
const SCRIPT_DIR: &str = "scripts/js";

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
    // Not negative: the executor checked the range.
    let budget_ms = p.int_opt("timeoutMs")?.map(i64::unsigned_abs);
    p.bool_opt("retryOnSpurious")?;
    let source = match (body, body_file) {
        (Some(b), _) => Ok(b),
        (None, Some(f)) => Err(script_path(Path::new(SCRIPT_DIR), &f)?),
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
            Err(path) => {
                let path = cx
                    .trust
                    .script_file("bodyFile", &path, Path::new(SCRIPT_DIR))
                    .await?;
                tokio::fs::read_to_string(&path).await.map_err(|e| {
                    CommandError::invalid(
                        "bodyFile",
                        format!("param `bodyFile`: reading `{}` failed: {e}", path.display()),
                    )
                })?
            }
        };
        let (body, applied) = apply_vars(&raw_body, &vars);
        let form = script_form(&body);
        // The budget counts from here: a page whose main thread is busy holds the frame
        // lookup too.
        let started = std::time::Instant::now();
        // chromiumoxide answers every page command within 30 s at most, so that is also the
        // longest budget (and what "unlimited" means) until long evaluations move to the raw
        // connection.
        let budget_ms = if budget_ms == 0 {
            MAX_EVAL_MS
        } else {
            budget_ms.min(MAX_EVAL_MS)
        };
        // The main frame needs no lookup (its session and context are known without asking
        // the renderer).
        let frame = match &frame_spec {
            Some(spec) => {
                let lookup = find_frame(&tab, spec);
                match tokio::time::timeout(Duration::from_millis(budget_ms + 250), lookup).await {
                    Ok(frame) => frame?,
                    Err(_) => {
                        let _ = tab.terminate_execution(&tab.main_frame_local()).await;
                        return Err(eval_timeout(budget_ms));
                    }
                }
            }
            None => tab.main_frame_local(),
        };
        let ran = run_budgeted(&tab, &frame, &body, form, budget_ms, started).await?;
        let out = match ran {
            Ran::Threw(ex) => {
                let line = exception_line(&ex);
                let preview: String = raw_body.chars().take(400).collect();
                let mut details = json!({
                    "error": exception_json(&ex),
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
            Ran::Value(out) => out,
        };
        let mut data = json!({"result": out["value"], "varsApplied": applied, "awaited": true});
        let notes = out["notes"].as_array().cloned().unwrap_or_default();
        if !notes.is_empty() {
            let more = out["more"].as_u64().unwrap_or(0);
            data["resultNote"] = json!(result_note(&notes, more));
            data["unserializable"] = json!(notes);
            if more > 0 {
                data["unserializableMore"] = json!(more);
            }
        }
        if let Some(nav) = out.get("navigation").filter(|n| n.is_object()) {
            let same_document = nav["sameDocument"] == true;
            data["navigationStarted"] = json!(true);
            data["navigationUrl"] = nav["url"].clone();
            data["navigationSameDocument"] = json!(same_document);
            if !same_document && frame.is_main() {
                // The document the indices were read from is being replaced.
                task.set_snapshot(None);
            }
        }
        if frame_spec.is_some() {
            data["frame"] = json!(frame.ordinal);
            data["frameUrl"] = json!(frame.url);
        }
        Ok(data)
    })
}

/// Runs `body` in `frame` within `budget_ms` counted from `started` (execute_js's budget):
/// a run past it is terminated and answers `EVAL_TIMEOUT`; the script's objects are released
/// whatever happened.
pub(crate) async fn run_budgeted(
    tab: &Tab,
    frame: &FrameRef,
    body: &str,
    form: ScriptForm,
    budget_ms: u64,
    started: std::time::Instant,
) -> Result<Ran, CommandError> {
    let left = Duration::from_millis(budget_ms + 250).saturating_sub(started.elapsed());
    // Chromium terminates synchronous runs of `Runtime.evaluate` itself; the race catches
    // promises that never settle and scripts run by `Runtime.callFunctionOn`, which has no
    // timeout of its own. The margin lets Chromium's own answer arrive first.
    let group = ScriptGroup::fresh();
    let run = run_script(tab, frame, body, form, budget_ms, &group);
    let res = match tokio::time::timeout(left, run).await {
        Ok(r) => r,
        Err(_) => {
            let _ = tab.terminate_execution(frame).await;
            tab.release_script_objects(frame, group);
            return Err(eval_timeout(budget_ms));
        }
    };
    // Objects the script answered stayed in the page until they were serialised: free
    // them whatever happened (in the background: the page may be busy again already).
    tab.release_script_objects(frame, group);
    // A run that Chromium terminated at the budget answers with an internal error or an
    // exception; either way the time spent is what tells.
    let over_budget = started.elapsed() >= Duration::from_millis(budget_ms);
    match res {
        Err(_) if over_budget => Err(eval_timeout(budget_ms)),
        Ok(Ran::Threw(ex))
            if over_budget || exception_line(&ex).contains("Execution was terminated") =>
        {
            Err(eval_timeout(budget_ms))
        }
        other => other,
    }
}

/// Evaluates `body` in the main frame of `tab` exactly as `execute_js` does (its forms, the
/// engine's eval budget), for a batch step's `expect`: the value, or the line of what the
/// script threw.
pub(crate) async fn evaluate_main(
    tab: &Tab,
    body: &str,
    budget_ms: u64,
) -> Result<Result<Value, String>, CommandError> {
    let budget_ms = if budget_ms == 0 {
        MAX_EVAL_MS
    } else {
        budget_ms.min(MAX_EVAL_MS)
    };
    let frame = tab.main_frame_local();
    let started = std::time::Instant::now();
    match run_budgeted(tab, &frame, body, script_form(body), budget_ms, started).await? {
        Ran::Threw(ex) => Ok(Err(exception_line(&ex))),
        Ran::Value(out) => Ok(Ok(out["value"].clone())),
    }
}

/// What running a caller's script produced.
pub(crate) enum Ran {
    /// The script threw (or failed to compile): CDP's `exceptionDetails`.
    Threw(Value),
    /// `{value, notes, more, navigation}` (see `js/script_result.js`).
    Value(Value),
}

/// Runs `body` in `frame`'s main world and reads its result once, serialised in the page in the
/// call that runs it (`js/script_result.js`): `Runtime.evaluate` only makes the script a
/// function (creating it runs nothing), and the serialiser calls it.
///
/// The first wrapper that compiles decides what the script is: a function-like script (`form`
/// says so) as the function itself, then any script as an expression (an expression's value is
/// its value, so `(function(){ return 5 })()` answers 5: the `return` belongs to the inner
/// function), then, when it has a `return`, as the body of an async function. A script that is
/// none of these (statements without `return`, say `a(); b()`) runs as a script whose
/// completion value is the result; an object result is then serialised in a second call.
pub(crate) async fn run_script(
    tab: &Tab,
    frame: &FrameRef,
    body: &str,
    form: ScriptForm,
    budget_ms: u64,
    group: &ScriptGroup,
) -> Result<Ran, CommandError> {
    let mut forms = Vec::with_capacity(3);
    if form == ScriptForm::Function {
        forms.push(ScriptForm::Function);
    }
    forms.push(ScriptForm::Expression);
    let returns = has_return(body);
    if returns {
        forms.push(ScriptForm::Statements);
    }
    let mut syntax_error = None;
    for form in forms {
        let made = tab
            .evaluate_script(frame, &wrap_script(body, form), Some(budget_ms), group)
            .await?;
        match made.get("exceptionDetails") {
            Some(ex) if is_syntax_error(ex) => syntax_error = Some(ex.clone()),
            _ => return serialised(tab, frame, made, true).await,
        }
    }
    match syntax_error {
        // Nothing ran: the statement form (the closest to what the caller wrote) explains why.
        Some(ex) if returns => Ok(Ran::Threw(ex)),
        // Nothing ran: the wrappers did not compile. Run the text as it is.
        _ => {
            let direct = tab
                .evaluate_script(frame, body, Some(budget_ms), group)
                .await?;
            serialised(tab, frame, direct, false).await
        }
    }
}

/// Whether CDP `exceptionDetails` report a script that did not compile.
fn is_syntax_error(ex: &Value) -> bool {
    ex.pointer("/exception/className").and_then(Value::as_str) == Some("SyntaxError")
}

/// Serialises the `Runtime.evaluate` answer `made` in the page (`call`: it is the script as a
/// function, still to be run).
async fn serialised(
    tab: &Tab,
    frame: &FrameRef,
    made: Value,
    call: bool,
) -> Result<Ran, CommandError> {
    if let Some(ex) = made.get("exceptionDetails") {
        return Ok(Ran::Threw(ex.clone()));
    }
    let result = &made["result"];
    let Some(object_id) = result["objectId"].as_str() else {
        return Ok(Ran::Value(inline_value(result)));
    };
    let res = tab
        .script_result(frame, object_id, call)
        .await
        .map_err(|e| match (e.code, call) {
            // The function went with its document before it could run.
            (ErrorCode::StaleElement, true) => CommandError::new(
                ErrorCode::PageNavigating,
                "the page navigated away before the script ran (it did not run)",
            ),
            (ErrorCode::StaleElement | ErrorCode::PageNavigating, _) => CommandError::new(
                ErrorCode::PageNavigating,
                "the page navigated away before the script returned: its value is lost and it \
                 may have half-run",
            )
            .with_details(json!({"outcomeUnknown": true})),
            _ => e,
        })?;
    if let Some(ex) = res.get("exceptionDetails") {
        return Ok(Ran::Threw(ex.clone()));
    }
    Ok(Ran::Value(
        res.pointer("/result/value").cloned().unwrap_or(Value::Null),
    ))
}

/// A primitive CDP `RemoteObject` as `js/script_result.js` would answer it.
fn inline_value(result: &Value) -> Value {
    let note = |kind: &str, as_what: &str| json!([{"path": "$", "type": kind, "as": as_what}]);
    let (value, notes) = match (
        result["type"].as_str(),
        result["unserializableValue"].as_str(),
    ) {
        (Some("undefined"), _) => (Value::Null, note("undefined", "null")),
        (Some("bigint"), Some(text)) => (
            json!(text.trim_end_matches('n')),
            note("BigInt", "its decimal string"),
        ),
        // JSON.stringify writes -0 as 0: said, as the serialiser says it.
        (_, Some("-0")) => (json!(0), note("-0", "0")),
        (_, Some(text)) => (Value::Null, note(text, "null")),
        _ => (
            result.get("value").cloned().unwrap_or(Value::Null),
            json!([]),
        ),
    };
    json!({"value": value, "notes": notes, "more": 0, "navigation": null})
}

/// One line that says which parts of a result had no JSON form and what became of them.
fn result_note(notes: &[Value], more: u64) -> String {
    let shown: Vec<String> = notes
        .iter()
        .take(3)
        .map(|n| {
            format!(
                "{} at `{}` became {}",
                n["type"].as_str().unwrap_or("value"),
                n["path"].as_str().unwrap_or("$"),
                n["as"].as_str().unwrap_or("something else")
            )
        })
        .collect();
    let rest = notes.len().saturating_sub(3) as u64 + more;
    let tail = if rest > 0 {
        format!(" (and {rest} more, see `unserializable`)")
    } else {
        String::new()
    };
    format!(
        "the result has values JSON cannot hold: {}{tail}",
        shown.join("; ")
    )
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
    fn wrapped_scripts_are_functions_still_to_run() {
        assert_eq!(wrap_script("() => 1", ScriptForm::Function), "(() => 1)");
        assert_eq!(
            wrap_script("return 1", ScriptForm::Statements),
            "(async () => {\nreturn 1\n})"
        );
        // The newline keeps a trailing line comment from swallowing the closing parenthesis.
        assert_eq!(
            wrap_script("1 // one", ScriptForm::Expression),
            "(async () => (\n1 // one\n))"
        );
    }

    #[test]
    fn inline_primitives_are_read_as_the_serialiser_would() {
        let plain = inline_value(&json!({"type": "number", "value": 3}));
        assert_eq!(
            plain,
            json!({"value": 3, "notes": [], "more": 0, "navigation": null})
        );
        let big = inline_value(&json!({"type": "bigint", "unserializableValue": "42n"}));
        assert_eq!(big["value"], "42");
        assert_eq!(big["notes"][0]["type"], "BigInt");
        let nan = inline_value(&json!({"type": "number", "unserializableValue": "NaN"}));
        assert_eq!(nan["value"], Value::Null);
        assert_eq!(nan["notes"][0]["type"], "NaN");
        let zero = inline_value(&json!({"type": "number", "unserializableValue": "-0"}));
        assert_eq!(zero["value"], 0);
        assert_eq!(zero["notes"][0]["type"], "-0");
        let undefined = inline_value(&json!({"type": "undefined"}));
        assert_eq!(undefined["notes"][0]["type"], "undefined");
    }

    #[test]
    fn result_notes_name_the_first_conversions_and_count_the_rest() {
        let notes: Vec<Value> = (0..4)
            .map(|i| json!({"path": format!("$[{i}]"), "type": "Map", "as": "an object of its entries"}))
            .collect();
        let text = result_note(&notes, 2);
        assert!(
            text.contains("Map at `$[0]` became an object of its entries; Map at `$[1]`"),
            "{text}"
        );
        assert!(!text.contains("$[3]"), "{text}");
        assert!(
            text.ends_with("(and 3 more, see `unserializable`)"),
            "{text}"
        );
        assert!(!result_note(&notes[..1], 0).contains("more"));
    }

    #[test]
    fn script_paths_stay_inside() {
        let root = Path::new("scripts/js");
        assert!(script_path(root, "a/b.js").is_ok());
        assert!(script_path(root, "../x.js").is_err());
        assert!(script_path(root, "/etc/passwd").is_err());
    }
}
