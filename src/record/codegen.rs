//! `moonpilot codegen TASK|RUN [--out FILE] [--test]`: the script that replays a task or a run
//! from the trace (`run`, the REPL, `serve`, an MCP session), with no agent and no model.
//!
//! Kept: the commands that act on the page (the catalogue's `mutates_page`) and the waits, that
//! answered ok, in order. Left out: reads (what the agent only looked at), failed commands,
//! the task's own lifecycle, human requests, and batches, jobs and recipes as such (their
//! steps are traced one by one, and kept). A command given a snapshot index is
//! written with the selector the trace recorded for that element at that moment
//! (`element.selector`: the most robust one that found it alone, as `moonpilot record` writes
//! them): the command itself when it takes a selector, else its `_by_selector` twin. An index
//! the trace says nothing about is left out with a comment saying so. Text typed into a
//! password field is not in the trace: the script reads it from the environment.
//! Consecutive fills of one field are one; a check undone by the next command is left out.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::script::{self, lua_key, lua_value, Frame, Step};
use crate::command::Group;

/// The options of `moonpilot codegen`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// A task id (as `start` answered it), a run's directory, or a run's id (`runs/<id>/` of
    /// the state directory).
    #[arg(value_name = "TASK|RUN")]
    pub subject: String,
    /// Write the script to FILE (`-`: print it) [default: -].
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: String,
    /// Write a `moonpilot test` file instead of a plain script.
    #[arg(long)]
    pub test: bool,
    /// The state directory [default: $MOONPILOT_STATE_DIR, else $XDG_STATE_HOME/moonpilot,
    /// else ~/.local/state/moonpilot].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Groups whose commands a replay never sends: the task's lifecycle (the script starts its
/// own), human requests, the engine's own, and batches, jobs and recipes (each of their steps
/// has a trace line of its own, kept on its own).
const LEFT_OUT: &[Group] = &[
    Group::Lifecycle,
    Group::Human,
    Group::Jobs,
    Group::Meta,
    Group::Recipes,
];

/// The steps that replay the trace `lines` of one task (in order).
pub fn steps_of(lines: &[Value]) -> Vec<Step> {
    steps_with(lines, Vec::new())
}

/// [`steps_of`] with `asserts` (each with the epoch ms it was made at) put among the steps
/// after the commands traced before it.
fn steps_with(lines: &[Value], asserts: Vec<(u64, Step)>) -> Vec<Step> {
    let registry = crate::commands::registry();
    let mut out: Vec<Step> = Vec::new();
    let mut secrets = 0usize;
    let mut prelude = Vec::new();
    let mut asserts = asserts.into_iter().peekable();
    for line in lines {
        let ts = line["ts"].as_u64().unwrap_or(0);
        while let Some((_, step)) = asserts.next_if(|(at, _)| *at < ts) {
            out.push(step);
        }
        if line["ok"] != Value::Bool(true) {
            continue;
        }
        let Some(method) = line["method"].as_str() else {
            continue;
        };
        let Some(spec) = registry.lookup(method) else {
            continue;
        };
        if LEFT_OUT.contains(&spec.group) || !(spec.mutates_page || spec.group == Group::Wait) {
            continue;
        }
        let mut params: Map<String, Value> = line["request"]
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, v)| !v.is_null() && spec.params.iter().any(|p| p.name == k))
            .collect();
        let mut method = method.to_string();
        if let Some(index) = params.get("index").cloned() {
            match retarget(&method, &line["element"]) {
                Some((to, selector, frame)) => {
                    params.remove("index");
                    params.insert("selector".into(), Value::String(selector));
                    if let Some(f) = frame.filter(|_| !params.contains_key("frame")) {
                        params.insert("frame".into(), Value::String(f));
                    }
                    if method == "double_click_element_by_index" && to != method {
                        params.insert("clickCount".into(), Value::from(2));
                    }
                    method = to;
                }
                None => {
                    out.push(Step::Note(format!(
                        "left out: {method} of index {index}:\nthe trace does not say which \
                         element it was, or no command finds it by selector"
                    )));
                    continue;
                }
            }
        }
        let mut args = Vec::new();
        // The target first, as people write it.
        let mut ordered: Vec<(&String, &Value)> = params.iter().collect();
        ordered.sort_by_key(|(k, _)| match k.as_str() {
            "selector" => 0,
            "frame" => 1,
            _ => 2,
        });
        for (k, v) in ordered {
            let value = if v.as_str() == Some(crate::trace::MASK) {
                secrets += 1;
                let var = format!("MOONPILOT_SECRET_{secrets}");
                prelude.push(Step::Lua(format!(
                    "local secret{secrets} = os.getenv(\"{var}\")\n  or error(\"set {var}: the \
                     text typed into a password field, which the trace leaves out\")"
                )));
                format!("secret{secrets}")
            } else {
                lua_value(v)
            };
            args.push(format!("{} = {value}", lua_key(k)));
        }
        push(&mut out, method, args);
    }
    out.extend(asserts.map(|(_, step)| step));
    prelude.extend(out);
    prelude
}

/// The command and selector (and frame) that replace `method`'s index, from the trace's
/// description of the element: the command itself when it takes a selector, else its
/// `_by_selector` twin; `None` without a description or a command that takes a selector.
fn retarget(method: &str, element: &Value) -> Option<(String, String, Option<String>)> {
    let selector = element["selector"].as_str().filter(|s| !s.is_empty())?;
    let frame = element["frame"].is_object().then(|| {
        Frame {
            top: false,
            url: element["frame"]["url"].as_str().unwrap_or_default().into(),
            name: element["frame"]["name"].as_str().unwrap_or_default().into(),
        }
        .param()
    });
    let registry = crate::commands::registry();
    let takes_selector = |m: &str| {
        registry
            .lookup(m)
            .is_some_and(|s| s.params.iter().any(|p| p.name == "selector"))
    };
    let to = if takes_selector(method) {
        method.to_string()
    } else {
        let base = method.strip_suffix("_by_index").unwrap_or(method);
        let twin = format!("{base}_by_selector");
        if !takes_selector(&twin) {
            return None;
        }
        twin
    };
    Some((to, selector.to_string(), frame.flatten()))
}

/// Adds a call: a fill of the field the previous call filled replaces it; a check undone by
/// this uncheck (or the other way) takes both away.
fn push(out: &mut Vec<Step>, method: String, args: Vec<String>) {
    let target = |args: &[String]| {
        args.iter()
            .filter(|a| a.starts_with("selector = ") || a.starts_with("frame = "))
            .cloned()
            .collect::<Vec<_>>()
    };
    if let Some(Step::Call {
        method: last,
        args: last_args,
    }) = out.last()
    {
        let same = !target(&args).is_empty() && target(&args) == target(last_args);
        let fill = |m: &str| m == "input_text_by_selector";
        let toggles = |a: &str, b: &str| {
            (a == "check_element_by_index" && b == "uncheck_element_by_index")
                || (a == "uncheck_element_by_index" && b == "check_element_by_index")
        };
        if same && fill(last) && fill(&method) {
            out.pop();
        } else if same && toggles(last, &method) {
            out.pop();
            return;
        }
    }
    out.push(Step::Call { method, args });
}

/// The trace lines of `subject`: a task id, a run's directory or a run's id.
fn lines_of(subject: &str, state: Option<PathBuf>) -> Result<Vec<Value>, String> {
    let state = crate::evidence::state_dir(state);
    if !subject.is_empty() && subject.bytes().all(|b| b.is_ascii_digit()) {
        let state =
            state.ok_or("no state directory: pass --state-dir or set MOONPILOT_STATE_DIR")?;
        let lines = crate::report::task_lines(subject, &crate::evidence::trace_dir(&state));
        if lines.is_empty() {
            return Err(format!(
                "no command of task `{subject}` in the trace of {}",
                state.display()
            ));
        }
        return Ok(lines);
    }
    let dir = PathBuf::from(subject);
    let dir = if dir.join("run.json").is_file() {
        dir
    } else {
        match &state {
            Some(state)
                if crate::runs::runs_dir(state)
                    .join(subject)
                    .join("run.json")
                    .is_file() =>
            {
                crate::runs::runs_dir(state).join(subject)
            }
            _ => {
                return Err(format!(
                    "`{subject}` is neither a task id, a run's directory nor a run of the state \
                     directory"
                ))
            }
        }
    };
    let run = crate::runs::RunRecord::load(&dir)?;
    Ok(one_task(crate::report::run_lines(&run)))
}

/// `moonpilot codegen`: see the module's doc.
pub fn run(args: Args) -> ExitCode {
    let lines = match lines_of(&args.subject, args.state_dir.clone()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return ExitCode::from(2);
        }
    };
    let steps = steps_of(&lines);
    let header = format!(
        "Written by `moonpilot codegen {}` from {} traced command{} ({} kept).",
        args.subject,
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        steps
            .iter()
            .filter(|s| matches!(s, Step::Call { .. }))
            .count()
    );
    let text = script::render(&steps, args.test, &header);
    if args.out == "-" {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    if let Err(e) = std::fs::write(&args.out, &text) {
        eprintln!("moonpilot: cannot write {}: {e}", args.out);
        return ExitCode::from(1);
    }
    eprintln!("codegen: written to {}", args.out);
    ExitCode::SUCCESS
}

/// `:record start|stop|save FILE [--test]` of the REPL: the session's commands from `start`
/// on, written as a script by the rules of this module (the engine tags their trace lines).
#[derive(Debug, Default)]
pub struct SessionRecording {
    /// The tag of the recording's lines, and when it began.
    tag: Option<(String, u64)>,
    /// Whether the engine tags lines now.
    on: bool,
    /// The assertions added (`:record assert`), with when.
    asserts: Vec<(u64, Step)>,
}

impl SessionRecording {
    /// One `:record` line (`rest`: what follows `:record`) in a session whose page is task
    /// `page`; answers what to print.
    pub async fn command(
        &mut self,
        executor: &crate::Executor,
        page: Option<crate::browser::task::TaskId>,
        rest: &str,
    ) -> String {
        let engine = executor.engine();
        let mut words = rest.split_whitespace();
        match words.next() {
            Some("assert") => {
                if !self.on {
                    return "record: not recording (:record start first)".into();
                }
                let Some(page) = page else {
                    return "record: no page to assert on (page = browser.start{})".into();
                };
                let check = words.next().unwrap_or_default().to_string();
                let selector = words.collect::<Vec<_>>().join(" ");
                match assertion(executor, page, &check, &selector).await {
                    Ok((step, said)) => {
                        self.asserts.push((crate::clock::epoch_ms(), step));
                        format!("record: asserted {said}")
                    }
                    Err(e) => format!("record: {e}"),
                }
            }
            Some("start") => {
                if self.on {
                    return "record: already recording (:record stop, then :record save FILE)"
                        .into();
                }
                let now = crate::clock::epoch_ms();
                let tag = format!("repl-{now}-{}", std::process::id());
                engine.set_trace_run(Some(&tag));
                self.tag = Some((tag, now));
                self.on = true;
                "record: recording this session's commands (:record stop, :record save FILE)".into()
            }
            Some("stop") => {
                if !self.on {
                    return "record: not recording".into();
                }
                engine.set_trace_run(None);
                self.on = false;
                "record: stopped (:record save FILE writes the script)".into()
            }
            Some("save") => {
                let (Some(file), test) = (words.next(), words.any(|w| w == "--test")) else {
                    return "record: :record save FILE [--test]".into();
                };
                match self.save(engine, std::path::Path::new(file), test).await {
                    Ok(n) => format!("record: {n} step(s) written to {file}"),
                    Err(e) => format!("record: {e}"),
                }
            }
            _ => "record: :record start | stop | save FILE [--test] | assert visible|text|value SELECTOR"
                .into(),
        }
    }

    /// Writes the script of what was recorded to `file`: the number of steps.
    async fn save(
        &self,
        engine: &crate::Engine,
        file: &std::path::Path,
        test: bool,
    ) -> Result<usize, String> {
        let Some((tag, since)) = &self.tag else {
            return Err("nothing recorded (:record start first)".into());
        };
        let Some(trace_dir) = engine.config.trace_dir.clone() else {
            return Err("the engine runs without a trace (--no-trace): nothing to write".into());
        };
        engine.flush_trace().await;
        let (tag, since) = (tag.clone(), *since);
        let lines = tokio::task::spawn_blocking(move || {
            crate::report::tagged_lines(&trace_dir, &tag, since, None)
        })
        .await
        .map_err(|e| e.to_string())?;
        let steps = steps_with(&one_task(lines), self.asserts.clone());
        let header = format!(
            "Recorded in `moonpilot repl` with :record on {}.",
            crate::trace::iso_utc(since).get(..10).unwrap_or_default()
        );
        let text = script::render(&steps, test, &header);
        std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(steps.len())
    }
}

/// The assertion `check` (`visible`, `text` or `value`) of the element `selector` finds in
/// task `page` now, with what it holds (read now): the step, and what to tell.
async fn assertion(
    executor: &crate::Executor,
    page: crate::browser::task::TaskId,
    check: &str,
    selector: &str,
) -> Result<(Step, String), String> {
    let (read, field) = match check {
        "visible" => ("is_visible", "visible"),
        "text" => ("get_element_text", "text"),
        "value" => ("get_element_value", "value"),
        _ => return Err(":record assert visible|text|value SELECTOR".into()),
    };
    if selector.is_empty() {
        return Err(format!(":record assert {check} SELECTOR: which element?"));
    }
    let r = executor
        .execute(Some(page), read, serde_json::json!({"selector": selector}))
        .await;
    if !r.ok {
        return Err(format!(
            "{selector}: {}",
            r.msg.unwrap_or_else(|| "not readable".into())
        ));
    }
    let seen = &r.data[field];
    let expected = match check {
        "visible" if seen != &Value::Bool(true) => {
            return Err(format!("{selector} is not visible now: nothing asserted"))
        }
        "visible" => String::new(),
        "text" => crate::record::script::collapse(seen.as_str().unwrap_or_default()),
        _ => seen.as_str().unwrap_or_default().to_string(),
    };
    let said = if expected.is_empty() {
        format!("{selector} is {check}")
    } else {
        format!("{selector} has the {check} {expected:?}")
    };
    let step = Step::Act(super::script::Action::Assert {
        check: check.into(),
        selector: selector.into(),
        expected,
        frame: Frame {
            top: true,
            ..Frame::default()
        },
    });
    Ok((step, said))
}

/// The lines of the first task that acted among `lines` (a run or a session may drive several).
fn one_task(lines: Vec<Value>) -> Vec<Value> {
    let task = lines
        .iter()
        .find(|l| l["method"] != "start" && l["taskId"].is_string())
        .and_then(|l| l["taskId"].as_str().map(str::to_string));
    match task {
        Some(task) => lines
            .into_iter()
            .filter(|l| l["taskId"].as_str() == Some(task.as_str()))
            .collect(),
        None => lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(method: &str, request: Value, element: Value) -> Value {
        json!({"ok": true, "method": method, "request": request, "element": element,
               "taskId": "1"})
    }

    #[test]
    fn indexes_become_selectors_and_reads_failures_and_undone_checks_go() {
        let el = |sel: &str| json!({"selector": sel, "role": "button"});
        let lines = vec![
            line("start", json!({}), Value::Null),
            line("navigate", json!({"url": "http://x/a"}), Value::Null),
            line("get_browser_state", json!({}), Value::Null),
            line(
                "input_text",
                json!({"index": 2, "text": "a"}),
                el("label=\"Name\""),
            ),
            line(
                "input_text",
                json!({"index": 2, "text": "ada"}),
                el("label=\"Name\""),
            ),
            line("input_text", json!({"index": 3, "text": "***"}), el("#p")),
            json!({"ok": false, "method": "click_element_by_index", "request": {"index": 9}}),
            line("check_element_by_index", json!({"index": 4}), el("#c")),
            line("uncheck_element_by_index", json!({"index": 4}), el("#c")),
            line(
                "double_click_element_by_index",
                json!({"index": 5}),
                json!({"selector": "text=\"Go\"", "frame": {"url": "http://x/f.html", "name": ""}}),
            ),
            line("click_element_by_index", json!({"index": 7}), Value::Null),
            line("wait_for_text", json!({"text": "Done"}), Value::Null),
        ];
        let steps = steps_of(&lines);
        let text = script::render(&steps, false, "t");
        assert!(!text.contains("index ="), "{text}");
        for want in [
            "local secret1 = os.getenv(\"MOONPILOT_SECRET_1\")",
            "page:navigate{ url = \"http://x/a\" }:unwrap()",
            "page:input_text_by_selector{ selector = \"label=\\\"Name\\\"\", text = \"ada\" }",
            "page:input_text_by_selector{ selector = \"#p\", text = secret1 }",
            "frame = \"/f.html\"",
            "-- left out: click_element_by_index of index 7:",
            "page:wait_for_text{ text = \"Done\" }:unwrap()",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        for gone in ["get_browser_state", "check_element", "\"a\"", "start{ "] {
            assert!(!text.contains(gone), "{gone} in\n{text}");
        }
        mlua::Lua::new()
            .load(&text)
            .into_function()
            .expect("the script parses");
    }
}
