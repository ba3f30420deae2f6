//! `moonpilot repl`: a Lua prompt with `browser` loaded, over the same executor as `run`.
//!
//! rustyline runs on its own thread (it blocks on the terminal) and is driven by prompts sent
//! from the engine thread, which owns the Lua state: it asks for a line with the right prompt
//! (`> ` or `>> ` while a chunk is incomplete), gets the line back over a channel, and evaluates
//! complete chunks. The editor thread is the one owner of the terminal: whatever a script prints
//! goes through rustyline's external printer, so output from background coroutines appears above
//! the prompt without garbling the line being typed. Ctrl-C at the prompt drops the pending
//! input; during a command it cancels the command (the task and the browser stay). Ctrl-D exits
//! and closes the tasks.

mod complete;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use mlua::{MultiValue, Value as LuaValue};
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor, ExternalPrinter};
use tokio::signal::unix::Signal;
use tokio::sync::mpsc;

pub use complete::{complete, Names};

use crate::clock::epoch_ms;
use crate::console::Console;
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

/// The terminal's writer for everything that is not the prompt: rustyline's external printer
/// when there is a terminal (it redraws the prompt and the typed line below the message), plain
/// stdout otherwise.
#[derive(Clone)]
pub struct Terminal {
    printer: Rc<RefCell<Option<Printer>>>,
}

impl Terminal {
    /// Prints one message (a newline is added).
    pub fn print(&self, text: &str) {
        let mut slot = self.printer.borrow_mut();
        if let Some(printer) = slot.as_mut() {
            if printer.print(format!("{text}\n")).is_ok() {
                return;
            }
            *slot = None;
        }
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

/// The editor thread's end of the conversation.
struct LineReader {
    /// The prompt, and whether the line goes into the history (answers to questions do not:
    /// they may be codes or card numbers).
    prompts: std::sync::mpsc::Sender<(String, bool)>,
    inputs: mpsc::UnboundedReceiver<Input>,
    thread: std::thread::JoinHandle<()>,
}

impl LineReader {
    /// Ends the editor thread and waits for it, so the history is saved before the exit.
    async fn close(self) {
        drop(self.prompts);
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

type Printer = Box<dyn ExternalPrinter + Send>;

/// Starts the editor thread; it reads one line per prompt it receives, and hands back its
/// external printer (when the terminal has one) before the first prompt.
async fn spawn_editor(names: Names) -> (LineReader, Option<Printer>) {
    let (prompt_tx, prompt_rx) = std::sync::mpsc::channel::<(String, bool)>();
    let (input_tx, input_rx) = mpsc::unbounded_channel();
    let (printer_tx, printer_rx) = tokio::sync::oneshot::channel::<Option<Printer>>();
    let thread = std::thread::spawn(move || {
        let config = Config::builder()
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .build();
        let mut editor: Editor<complete::ReplHelper, FileHistory> =
            match Editor::with_config(config) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("moonpilot: no line editor: {e}");
                    let _ = printer_tx.send(None);
                    let _ = input_tx.send(Input::Eof);
                    return;
                }
            };
        editor.set_helper(Some(complete::ReplHelper::new(names)));
        let printer = editor
            .create_external_printer()
            .ok()
            .map(|p| Box::new(p) as Printer);
        let _ = printer_tx.send(printer);
        let history = history_path();
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        while let Ok((prompt, keep)) = prompt_rx.recv() {
            let input = match editor.readline(&prompt) {
                Ok(line) => {
                    if keep && !line.trim().is_empty() {
                        // The history file is written too: no secret on disk (a line that
                        // navigates to `…?token=…` is kept masked).
                        let _ = editor.add_history_entry(crate::redact::text(&line).as_ref());
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
    let printer = printer_rx.await.ok().flatten();
    (
        LineReader {
            prompts: prompt_tx,
            inputs: input_rx,
            thread,
        },
        printer,
    )
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

/// The names completion needs from the Lua state: `browser`'s fields and the globals.
fn collect_names(host: &LuaHost) -> Names {
    let lua = host.lua();
    let keys = |t: mlua::Table| -> Vec<String> {
        t.pairs::<String, LuaValue>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .filter(|k| !k.starts_with('_'))
            .collect()
    };
    let browser = lua
        .globals()
        .get::<mlua::Table>("browser")
        .map(keys)
        .unwrap_or_default();
    let mut globals = keys(lua.globals());
    globals.push("page".into());
    Names { browser, globals }
}

/// `:help [NAME]`: the REPL's own commands, or one command's summary, params and example.
pub fn help(name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        return [
            "Lua with `browser` loaded; `page` is the task started for this session.",
            "  :help NAME        a command's summary, params and example",
            "  :methods [TEXT]   the commands whose name contains TEXT",
            "  :state            the current page's snapshot (get_browser_state text)",
            "  :answer           ask the human-input requests you skipped again",
            "  :record start     record this session's commands; :record stop ends it",
            "  :record save FILE [--test]  write them as a script (moonpilot codegen's rules)",
            "  :record assert visible|text|value SELECTOR  check it holds what it holds now",
            "  Tab completes page:<command>, its params inside `{`, and browser.<function>.",
            "  Ctrl-C cancels the running command; Ctrl-D exits and closes the tasks.",
        ]
        .join("\n");
    }
    let Some(spec) = crate::commands::registry().lookup(name) else {
        return crate::commands::registry().unknown_method_message(name);
    };
    let mut out = format!("{} — {}", spec.name, spec.summary);
    if let Some(target) = spec.alias_of.filter(|t| !spec.summary.contains(t)) {
        out.push_str(&format!(" (alias of {target})"));
    }
    out.push_str(&format!("\n  {}\n", spec.doc));
    if spec.params.is_empty() {
        out.push_str("params: none\n");
    } else {
        out.push_str("params:\n");
        let width = spec.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in spec.params {
            let need = match (p.required, p.default) {
                (true, _) => "required".to_string(),
                (false, Some(d)) => format!("default {d}"),
                (false, None) => "optional".to_string(),
            };
            out.push_str(&format!(
                "  {:<width$}  {:<7} {:<16} {}\n",
                p.name,
                p.kind.as_str(),
                need,
                p.doc
            ));
        }
    }
    out.push_str(&format!("example:\n  {}", spec.example));
    out
}

/// `:methods [filter]`: one line per command whose name contains `filter`.
pub fn methods(filter: &str) -> String {
    let filter = filter.trim().to_lowercase();
    let lines: Vec<String> = crate::commands::registry()
        .all()
        .iter()
        .filter(|s| s.name.contains(&filter))
        .map(|s| format!("{:<28} {}", s.name, s.summary))
        .collect();
    if lines.is_empty() {
        format!("no command contains `{filter}`")
    } else {
        lines.join("\n")
    }
}

const STATE_CHUNK: &str = r#"
if type(page) ~= "userdata" then return "no page: start one with page = browser.start{}" end
local r = page:get_browser_state{}
if not r.ok then return tostring(r) end
return r.data.text
"#;

/// One REPL command line (`:name args`).
async fn meta_command(
    host: &LuaHost,
    line: &str,
    interrupt: &mut Signal,
    recording: &mut crate::record::codegen::SessionRecording,
) -> String {
    let line = line.trim_start_matches(':');
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match name {
        "help" | "h" => help(rest),
        "methods" | "m" => methods(rest),
        "state" | "s" => match tokio::select! {
            res = host.eval(STATE_CHUNK, "state") => res,
            _ = interrupt.recv() => return "interrupted".to_string(),
        } {
            Ok(values) => values
                .iter()
                .map(|v| v.to_string().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\t"),
            Err(e) => e.to_string(),
        },
        "record" => match host.executor() {
            Some(executor) => {
                let page = host
                    .eval(
                        "return type(page) == 'userdata' and page.id or nil",
                        "record",
                    )
                    .await
                    .ok()
                    .and_then(|v| v.into_iter().next())
                    .and_then(|v| v.as_i64())
                    .and_then(|n| u64::try_from(n).ok())
                    .map(crate::browser::task::TaskId);
                recording.command(&executor, page, rest).await
            }
            None => "record: no engine in this session".into(),
        },
        other => format!("unknown REPL command `:{other}`; :help lists them"),
    }
}

/// Prints what a finished chunk answered.
fn show_result(terminal: &Terminal, res: mlua::Result<MultiValue>) {
    match res {
        Ok(values) => {
            let shown: Vec<String> = values.iter().map(render).collect();
            if !shown.is_empty() {
                terminal.print(&shown.join("\t"));
            }
        }
        Err(e) => terminal.print(&e.to_string()),
    }
}

/// Which prompt the editor thread is showing.
#[derive(Clone, PartialEq)]
enum Showing {
    /// `> ` / `>> `: Lua.
    Lua,
    /// `answer …> `: the console's question (request, step) the person sees.
    Answer((String, Option<String>)),
}

type Chunk = std::pin::Pin<Box<dyn std::future::Future<Output = mlua::Result<MultiValue>>>>;

/// The REPL session: the Lua host, the editor, the human console, and the chunk running now.
struct Session<'a> {
    host: &'a LuaHost,
    terminal: Terminal,
    editor: LineReader,
    console: Console,
    /// The prompt the editor shows now (one at a time).
    showing: Option<Showing>,
    /// The chunk being evaluated: the prompt comes back when it ends, unless a human request
    /// needs an answer first.
    running: Option<Chunk>,
    buffer: String,
    /// The console's view needs a refresh (the desk changed, or a deadline passed).
    stale: bool,
    /// `:record`'s state.
    recording: crate::record::codegen::SessionRecording,
}

impl Session<'_> {
    /// Shows new human requests and the question to answer, if any.
    fn refresh_console(&mut self) {
        if !std::mem::take(&mut self.stale) {
            return;
        }
        let Some(executor) = self.host.executor() else {
            return;
        };
        let now = epoch_ms();
        let waiting: Vec<_> = executor
            .engine()
            .with_desk(|d| d.waiting(now).into_iter().cloned().collect());
        for line in self.console.update(&waiting, now) {
            self.terminal.print(&line);
        }
        if self.showing == Some(Showing::Lua) && self.console.prompt().is_some() {
            self.terminal
                .print("[human] (press Enter at an empty prompt to answer, Ctrl-C there to skip)");
        }
    }

    /// Asks the editor for the next line: the console's question first, else Lua (only when no
    /// chunk runs). Answers false when the editor is gone.
    fn prompt(&mut self) -> bool {
        if self.showing.is_some() {
            return true;
        }
        let asked = self.console.asking_key().zip(self.console.prompt());
        let (text, showing) = match asked {
            Some((key, question)) if self.buffer.is_empty() => (question, Showing::Answer(key)),
            _ if self.running.is_none() => {
                let p = if self.buffer.is_empty() { "> " } else { ">> " };
                (p.to_string(), Showing::Lua)
            }
            _ => return true,
        };
        let keep_history = showing == Showing::Lua;
        self.showing = Some(showing);
        self.editor.prompts.send((text, keep_history)).is_ok()
    }

    /// A line typed at the console's question: submitted like any other caller would.
    async fn answer(&mut self, key: &(String, Option<String>), line: &str) {
        let Some(executor) = self.host.executor() else {
            return;
        };
        let told = crate::console::submit_line(&mut self.console, &executor, key, line).await;
        self.terminal.print(&told);
        self.stale = true;
    }

    /// A line typed at the Lua prompt: a REPL command, more of a chunk, or a chunk to run.
    async fn lua_line(&mut self, line: String, interrupt: &mut Signal) {
        if self.buffer.is_empty() && line.trim_start().starts_with(':') {
            if line.trim() == ":answer" {
                self.console.unskip();
                self.stale = true;
                return;
            }
            let out = meta_command(self.host, line.trim(), interrupt, &mut self.recording).await;
            self.terminal.print(&out);
            return;
        }
        if self.buffer.is_empty() {
            // `= expr` (the lua interpreter's habit) prints like `expr`.
            self.buffer
                .push_str(line.strip_prefix('=').unwrap_or(&line));
        } else {
            self.buffer.push('\n');
            self.buffer.push_str(&line);
        }
        match compile(self.host, &self.buffer) {
            Ok(func) => {
                self.buffer.clear();
                self.running = Some(Box::pin(
                    async move { func.call_async::<MultiValue>(()).await },
                ));
            }
            Err(e) if incomplete(&e) => {}
            Err(e) => {
                self.terminal.print(&e.to_string());
                self.buffer.clear();
            }
        }
    }

    /// When the console must look again even if nothing changes (the next deadline).
    fn next_wake(&self) -> Duration {
        let now = epoch_ms();
        self.host
            .executor()
            .and_then(|e| e.engine().with_desk(|d| d.next_expiry(now)))
            .map_or(Duration::from_secs(3600), |at| {
                Duration::from_millis(at.saturating_sub(now).saturating_add(5))
            })
    }

    /// The loop: one `select!` over the running chunk, Ctrl-C, the human desk and the editor.
    async fn run(&mut self, interrupt: &mut Signal) {
        let Some(executor) = self.host.executor() else {
            return;
        };
        let mut changes = executor.engine().desk_changes();
        // A channel that never changes, to swap in if the desk's ever closes.
        let (_keep, never) = tokio::sync::watch::channel(0u64);
        loop {
            self.refresh_console();
            if !self.prompt() {
                break;
            }
            let wake = self.next_wake();
            let running = async {
                match self.running.as_mut() {
                    Some(chunk) => chunk.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                res = running => {
                    self.running = None;
                    show_result(&self.terminal, res);
                }
                _ = interrupt.recv() => {
                    // Ctrl-C while a chunk runs (the terminal is not raw then): cancel it.
                    if self.running.take().is_some() {
                        self.terminal.print("interrupted");
                    }
                }
                changed = changes.changed() => {
                    if changed.is_ok() {
                        self.stale = true;
                    } else {
                        // The engine is gone (never before the session ends): stop listening.
                        changes = never.clone();
                    }
                }
                _ = tokio::time::sleep(wake) => self.stale = true,
                input = self.editor.inputs.recv() => {
                    let showing = self.showing.take();
                    match (showing, input) {
                        (_, Some(Input::Eof) | None) => break,
                        (Some(Showing::Answer(key)), Some(Input::Line(line))) => {
                            self.answer(&key, &line).await
                        }
                        (Some(Showing::Answer(_)), Some(Input::Interrupted)) => {
                            self.console.skip();
                            self.terminal.print("[human] skipped; :answer asks again");
                        }
                        (_, Some(Input::Line(line))) => self.lua_line(line, interrupt).await,
                        (_, Some(Input::Interrupted)) => self.buffer.clear(),
                    }
                }
            }
        }
    }
}

/// Runs the REPL until Ctrl-D (or the end of input). `start` binds a fresh task to `page`;
/// `serve` also runs the HTTP server on the same executor for the session.
pub fn run(
    config: EngineConfig,
    start: bool,
    serve: Option<crate::server::ServeOptions>,
) -> ExitCode {
    run_host(config, BTreeMap::new(), |host| async move {
        let mut server = None;
        if let (Some(opts), Some(executor)) = (serve, host.executor()) {
            let listener = match crate::server::bind(&opts).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("moonpilot: cannot serve on port {}: {e}", opts.port);
                    return ExitCode::from(2);
                }
            };
            if let Ok(addr) = listener.local_addr() {
                eprintln!("{}", crate::server::banner(addr, &opts));
            }
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let stopped = async move {
                let _ = stopped.await;
            };
            let job =
                tokio::task::spawn_local(crate::server::serve(executor, listener, opts, stopped));
            server = Some((stop, job));
        }
        let code = session(&host, start).await;
        if let Some((stop, job)) = server {
            let _ = stop.send(());
            let _ = tokio::time::timeout(std::time::Duration::from_secs(12), job).await;
        }
        code
    })
}

/// The REPL session itself, until Ctrl-D.
async fn session(host: &crate::lua::LuaHost, start: bool) -> ExitCode {
    if start {
        if let Err(e) = host.eval("page = browser.start{}", "start").await {
            eprintln!("moonpilot: {e}");
            return ExitCode::from(2);
        }
    }
    // One listener for the session: a Ctrl-C typed between Enter and the start of the
    // command is not lost. (At the prompt, rustyline reads Ctrl-C as a key.)
    let mut interrupt = match crate::lua::interrupt_listener() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (editor, printer) = spawn_editor(collect_names(host)).await;
    let terminal = Terminal {
        printer: Rc::new(RefCell::new(printer)),
    };
    let sink = terminal.clone();
    if let Err(e) = host.redirect_print(move |line| sink.print(line)) {
        eprintln!("moonpilot: {e}");
    }
    let mut session = Session {
        host,
        terminal,
        editor,
        console: Console::default(),
        showing: None,
        running: None,
        buffer: String::new(),
        stale: true,
        recording: Default::default(),
    };
    session.run(&mut interrupt).await;
    session.running = None;
    session.editor.close().await;
    ExitCode::SUCCESS
}
