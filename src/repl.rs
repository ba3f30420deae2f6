//! `moonpilot repl`: a Lua prompt with `browser` loaded, over the same executor as `run`.
//!
//! rustyline runs on its own thread (it blocks on the terminal) and is driven by prompts sent
//! from the engine thread, which owns the Lua state: it asks for a line with the right prompt
//! (`> ` or `>> ` while a chunk is incomplete), gets the line back over a channel, and evaluates
//! complete chunks. Ctrl-C at the prompt drops the pending input; during a command it cancels the
//! command (the task and the browser stay). Ctrl-D exits and closes the tasks.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use mlua::{MultiValue, Value as LuaValue};
use tokio::sync::mpsc;

use crate::lua::{run_host, LuaHost};
use crate::EngineConfig;

/// What the editor thread sends back for one prompt.
enum Input {
    Line(String),
    Interrupted,
    Eof,
}

/// Where the history is kept: `$XDG_DATA_HOME/moonpilot/history`, else
/// `~/.local/share/moonpilot/history`.
fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("moonpilot").join("history"))
}

/// Starts the editor thread; it reads one line per prompt it receives.
fn spawn_editor() -> (
    std::sync::mpsc::Sender<String>,
    mpsc::UnboundedReceiver<Input>,
) {
    let (prompt_tx, prompt_rx) = std::sync::mpsc::channel::<String>();
    let (input_tx, input_rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut editor = match rustyline::DefaultEditor::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("moonpilot: no line editor: {e}");
                let _ = input_tx.send(Input::Eof);
                return;
            }
        };
        let history = history_path();
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        while let Ok(prompt) = prompt_rx.recv() {
            let input = match editor.readline(&prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    Input::Line(line)
                }
                Err(rustyline::error::ReadlineError::Interrupted) => Input::Interrupted,
                Err(_) => Input::Eof,
            };
            let eof = matches!(input, Input::Eof);
            if input_tx.send(input).is_err() || eof {
                break;
            }
        }
        if let Some(path) = &history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.save_history(path);
        }
    });
    (prompt_tx, input_rx)
}

/// One value as the REPL prints it: `tostring` for anything with a `__tostring` (Results, Tasks,
/// errors), tables pretty-printed with sorted keys and depth/size limits.
pub fn render(value: &LuaValue) -> String {
    let mut out = String::new();
    render_into(value, 0, &mut out);
    out
}

fn render_into(value: &LuaValue, depth: usize, out: &mut String) {
    const MAX_DEPTH: usize = 3;
    const MAX_ITEMS: usize = 40;
    match value {
        LuaValue::String(s) => out.push_str(&format!("{:?}", s.to_string_lossy())),
        LuaValue::Table(t)
            if t.metatable()
                .is_some_and(|m| m.contains_key("__tostring").unwrap_or(false)) =>
        {
            out.push_str(&value.to_string().unwrap_or_else(|_| "<table>".into()));
        }
        LuaValue::Table(t) => {
            if depth >= MAX_DEPTH {
                out.push_str("{…}");
                return;
            }
            let mut entries: Vec<(String, LuaValue)> = t
                .clone()
                .pairs::<LuaValue, LuaValue>()
                .filter_map(Result::ok)
                .map(|(k, v)| {
                    let key = match &k {
                        LuaValue::String(s) => s.to_string_lossy().to_string(),
                        other => format!("[{}]", other.to_string().unwrap_or_default()),
                    };
                    (key, v)
                })
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            if entries.is_empty() {
                out.push_str("{}");
                return;
            }
            let indent = "  ".repeat(depth + 1);
            out.push_str("{\n");
            for (key, v) in entries.iter().take(MAX_ITEMS) {
                out.push_str(&indent);
                out.push_str(key);
                out.push_str(" = ");
                render_into(v, depth + 1, out);
                out.push_str(",\n");
            }
            if entries.len() > MAX_ITEMS {
                out.push_str(&format!("{indent}… {} more\n", entries.len() - MAX_ITEMS));
            }
            out.push_str(&"  ".repeat(depth));
            out.push('}');
        }
        other => out.push_str(
            &other
                .to_string()
                .unwrap_or_else(|_| format!("<{}>", other.type_name())),
        ),
    }
}

/// Whether `err` only says the chunk is not finished yet.
fn incomplete(err: &mlua::Error) -> bool {
    matches!(
        err,
        mlua::Error::SyntaxError {
            incomplete_input: true,
            ..
        }
    )
}

/// Compiles `source` as an expression (`return …`) when it is one, else as statements.
fn compile(host: &LuaHost, source: &str) -> Result<mlua::Function, mlua::Error> {
    let lua = host.lua();
    match lua
        .load(format!("return {source}"))
        .set_name("=repl")
        .into_function()
    {
        Ok(f) => Ok(f),
        // `1 +` is an unfinished expression: keep reading rather than try it as statements.
        Err(e) if incomplete(&e) => Err(e),
        Err(_) => lua.load(source).set_name("=repl").into_function(),
    }
}

/// Runs the REPL until Ctrl-D (or the end of input). `start` binds a fresh task to `page`.
pub fn run(config: EngineConfig, start: bool) -> ExitCode {
    run_host(config, BTreeMap::new(), |host| async move {
        if start {
            if let Err(e) = host.eval("page = browser.start{}", "start").await {
                eprintln!("moonpilot: {e}");
                return ExitCode::from(2);
            }
        }
        let (prompts, mut inputs) = spawn_editor();
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() { "> " } else { ">> " };
            if prompts.send(prompt.to_string()).is_err() {
                break;
            }
            let line = match inputs.recv().await {
                Some(Input::Line(line)) => line,
                Some(Input::Interrupted) => {
                    buffer.clear();
                    continue;
                }
                Some(Input::Eof) | None => break,
            };
            if !buffer.is_empty() {
                buffer.push('\n');
            }
            buffer.push_str(line.strip_prefix('=').unwrap_or(&line));
            let func = match compile(&host, &buffer) {
                Ok(f) => f,
                Err(e) if incomplete(&e) => continue,
                Err(e) => {
                    println!("{e}");
                    buffer.clear();
                    continue;
                }
            };
            buffer.clear();
            // Ctrl-C cancels the running chunk (its command future is dropped); the session stays.
            let res = tokio::select! {
                res = func.call_async::<MultiValue>(()) => Some(res),
                _ = tokio::signal::ctrl_c() => None,
            };
            match res {
                Some(Ok(values)) => {
                    let shown: Vec<String> = values.iter().map(render).collect();
                    if !shown.is_empty() {
                        println!("{}", shown.join("\t"));
                    }
                }
                Some(Err(e)) => println!("{e}"),
                None => println!("interrupted"),
            }
        }
        drop(prompts);
        ExitCode::SUCCESS
    })
}
