//! The Lua recipe host ([`LuaRecipes`], the executor's `RecipeHost`): runs a recipe's Lua script
//! for a running command.
//!
//! A script runs on a thread of its own (an mlua state is not `Send`) with a current-thread
//! runtime and a `LocalSet`, like `moonpilot run`; every command it sends goes back over the
//! script's channel to the running command's future, which executes it on the caller's runtime,
//! inside the caller's lane, and answers it (`executor/nested.rs`). The script is stopped when
//! that future is dropped (its task closed, its bound passed): a Lua error at its next
//! instructions, or at once while it waits.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{Hook, LuaHost};
use crate::browser::task::TaskId;
use crate::executor::{Dialect, Executor, RecipeHost, Script, ScriptCommand, ScriptEnd};
use crate::protocol::{ErrorCode, Receipt};

/// Most lines of a script's `print` kept in its answer.
const MAX_OUTPUT_LINES: usize = 200;
/// Longest line of a Lua recipe's output kept, in characters.
const MAX_LINE_CHARS: usize = 2000;
/// How much memory a Lua recipe's state may take.
const RECIPE_MEMORY: usize = 256 * 1024 * 1024;

/// The recipe host of the Lua bridge: what an [`Executor`] is built with.
pub struct LuaRecipes;

/// The Lua recipe host, as [`Executor::new`] takes it.
pub fn recipe_host() -> Arc<dyn RecipeHost> {
    Arc::new(LuaRecipes)
}

/// Most script threads alive at once. A script stuck in one C call (a pattern match that
/// backtracks for hours) cannot be stopped from outside; its request answers by its bound and
/// the thread ends when the call does. Past this many, new scripts are refused instead of
/// piling up threads.
const MAX_LIVE_SCRIPTS: usize = 32;
/// The native stack of a script thread: Lua allows 200 nested C calls, and a call through a
/// Rust callback (`print` → `__tostring` → `print` …) takes more than the default 2 MiB holds
/// at that depth in a debug build. Only the pages touched are used.
const SCRIPT_STACK: usize = 64 * 1024 * 1024;

/// Script threads alive now.
static LIVE_SCRIPTS: AtomicUsize = AtomicUsize::new(0);

/// One live script thread, counted while it lives.
struct Live;

impl Live {
    fn enter() -> Result<Live, String> {
        let n = LIVE_SCRIPTS.fetch_add(1, Ordering::SeqCst);
        if n >= MAX_LIVE_SCRIPTS {
            LIVE_SCRIPTS.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "{n} scripts are still running (at most {MAX_LIVE_SCRIPTS}): try again when one has ended"
            ));
        }
        Ok(Live)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE_SCRIPTS.fetch_sub(1, Ordering::SeqCst);
    }
}

impl RecipeHost for LuaRecipes {
    fn start(&self, executor: Executor, script: Script) -> Result<(), String> {
        let live = Live::enter()?;
        std::thread::Builder::new()
            .name("moonpilot-recipe".into())
            .stack_size(SCRIPT_STACK)
            .spawn(move || {
                let _live = live;
                let printed = Rc::new(RefCell::new(Vec::new()));
                let Script {
                    task,
                    path,
                    source,
                    args,
                    dialect,
                    commands,
                    stop,
                    done,
                } = script;
                let run = ScriptRun {
                    executor,
                    task,
                    path,
                    source,
                    args,
                    dialect,
                    tx: commands,
                    stop,
                    printed: printed.clone(),
                };
                let result = run_script_thread(run);
                let _ = done.send(ScriptEnd {
                    result,
                    output: printed.take(),
                });
            })
            .map(drop)
            .map_err(|e| format!("cannot start a thread for the script: {e}"))
    }
}

/// The Lua state's hook: every command goes back to the running command.
struct Forward {
    tx: mpsc::UnboundedSender<ScriptCommand>,
}

fn ended(method: &str) -> Receipt {
    Receipt::failure(
        method,
        ErrorCode::TaskNotFound,
        format!("{method}: not executed: the recipe running this script has ended"),
        None,
        false,
        0.0,
    )
}

impl Hook for Forward {
    fn send<'a>(
        &'a self,
        _executor: &'a Executor,
        task: Option<TaskId>,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Receipt> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let request = ScriptCommand {
                task,
                method: method.to_string(),
                params,
                reply,
            };
            if self.tx.send(request).is_err() {
                return ended(method);
            }
            answer.await.unwrap_or_else(|_| ended(method))
        })
    }

    fn replaying(&self) -> bool {
        false
    }

    fn checkpoint<'a>(
        &'a self,
        _executor: &'a Executor,
        _name: String,
        _line: usize,
    ) -> LocalBoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// A Lua error as one line (or a few) with the script's file and line, without the traceback.
fn lua_error_text(e: &mlua::Error) -> String {
    let text = e.to_string();
    let text = match text.find("\nstack traceback:") {
        Some(at) => &text[..at],
        None => text.as_str(),
    };
    text.trim().to_string()
}

/// What a script thread runs.
struct ScriptRun {
    executor: Executor,
    task: TaskId,
    path: PathBuf,
    source: String,
    args: Value,
    dialect: Dialect,
    /// Where its commands go.
    tx: mpsc::UnboundedSender<ScriptCommand>,
    /// Set when the running command is gone.
    stop: Arc<AtomicBool>,
    /// What it prints (the first `MAX_OUTPUT_LINES` lines).
    printed: Rc<RefCell<Vec<String>>>,
}

/// The script thread: a runtime, a `LocalSet`, a Lua state whose commands go back over `tx`,
/// `browser.args` = `args` (plus `task`), `page` = the task; answers the return value.
fn run_script_thread(run: ScriptRun) -> Result<Value, String> {
    let ScriptRun {
        executor,
        task,
        path,
        source,
        args,
        dialect,
        tx,
        stop,
        printed,
    } = run;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the script's runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        // Closed when the running command's future is gone (its receiver dropped).
        let gone = tx.clone();
        let hook: Rc<dyn Hook> = Rc::new(Forward { tx });
        let host =
            LuaHost::with_hook(executor, BTreeMap::new(), hook).map_err(|e| e.to_string())?;
        host.redirect_print(move |line| {
            let mut lines = printed.borrow_mut();
            if lines.len() < MAX_OUTPUT_LINES {
                // A line is cut at 2000 characters (said at its end).
                let mut line = line.to_string();
                if let Some((cut, _)) = line.char_indices().nth(MAX_LINE_CHARS) {
                    line.truncate(cut);
                    line.push_str(" …[cut]");
                }
                lines.push(line);
            } else if lines.len() == MAX_OUTPUT_LINES {
                lines.push(format!(
                    "…[more lines after {MAX_OUTPUT_LINES} were dropped]"
                ));
            }
        })
        .map_err(|e| e.to_string())?;
        host.confine(RECIPE_MEMORY).map_err(|e| e.to_string())?;
        let lua = host.lua();
        lua.set_global_hook(
            mlua::HookTriggers::new().every_nth_instruction(1000),
            move |_lua, _debug| {
                if stop.load(Ordering::SeqCst) {
                    Err(mlua::Error::runtime("the recipe was stopped"))
                } else {
                    Ok(mlua::VmState::Continue)
                }
            },
        )
        .map_err(|e| e.to_string())?;
        let bind = || -> mlua::Result<()> {
            let browser: mlua::Table = lua.globals().get("browser")?;
            let args = match args {
                Value::Object(_) => args,
                _ => Value::Object(Default::default()),
            };
            let table = super::convert::json_to_lua(lua, &args)?;
            if let mlua::Value::Table(t) = &table {
                t.set("task", task.0)?;
            }
            browser.set("args", table)?;
            let find: mlua::Function = browser.get("task")?;
            let page: mlua::Value = find.call(task.0)?;
            lua.globals().set("page", page)
        };
        bind().map_err(|e| lua_error_text(&e))?;
        // A script waiting (a sleep, a spawned coroutine) is stopped too, not only one that
        // runs Lua instructions (the hook above).
        let run = async {
            match dialect {
                Dialect::Moonpilot => host.run_source_value(&path, &source).await,
                Dialect::Splash => super::splash::run(&host, &path, &source).await,
            }
        };
        let res = tokio::select! {
            res = run => res.map_err(|e| lua_error_text(&e)),
            _ = gone.closed() => Err("the recipe was stopped".to_string()),
        };
        host.abort_jobs();
        res
    })
}
