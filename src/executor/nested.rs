//! Commands sent by a running command (`command::Calls`): a batch's steps, a Lua recipe's
//! calls, a background job's batch.
//!
//! **The lane.** A task command holds its task's lane while it runs. Its steps on the same task
//! run *inside* that lane (`Within`): the executor takes the whole pipeline for them (params
//! check, retries, capture, `unknownParams`, page context, trace) but neither waits for the lane
//! nor lets anything else of the task in between, so a batch is one uninterrupted sequence and
//! never blocks on itself (PROTOCOL.md §4.1: steps run inside the batch's task scope). Calls on
//! other tasks queue behind those tasks' lanes as usual. A background job's batch is a fresh call
//! (`detached`) that takes the lane itself once the command that submitted it has let it go.
//!
//! **Lua recipes.** A script runs on a thread of its own (an mlua state is not `Send`) with a
//! current-thread runtime and a `LocalSet`, like `moonpilot run`; every command it sends comes
//! back over a channel to the running command's future, which executes it here — on the
//! caller's runtime, inside the caller's lane — and answers it. The script is stopped when that
//! future is dropped (its task closed, its bound passed): a Lua error at its next instructions,
//! or at once while it waits.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::Executor;
use crate::browser::task::TaskId;
use crate::command::{Calls, CommandFuture, ReceiptFuture};
use crate::error::CommandError;
use crate::lua::{Hook, LuaHost};
use crate::protocol::{ErrorCode, Receipt};

/// Nesting deeper than this (a recipe running a recipe running ...) is refused.
const MAX_DEPTH: u32 = 4;

/// The scope of a call made by a running command: the task it runs on, whether it holds that
/// task's lane (a background job's batch does not: it takes the lane itself), and how deep the
/// nesting is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Within {
    pub task: TaskId,
    pub depth: u32,
    pub holds_lane: bool,
}

impl Within {
    /// Whether a call on `task` runs inside the lane this scope holds.
    pub fn shares_lane(&self, task: Option<TaskId>) -> bool {
        self.holds_lane && Some(self.task) == task
    }
}

/// The [`Calls`] of one running task command.
#[derive(Clone)]
pub(super) struct Nested {
    executor: Executor,
    within: Within,
    /// The command runs inside a lane its sender holds.
    inherited: bool,
}

impl Nested {
    /// The calls of a command on `task` (holding its lane or not), itself sent from `parent`
    /// (if any).
    pub fn handle(
        executor: &Executor,
        task: TaskId,
        parent: Option<Within>,
        holds_lane: bool,
    ) -> Arc<dyn Calls> {
        Arc::new(Nested::new(executor, task, parent, holds_lane))
    }

    fn new(executor: &Executor, task: TaskId, parent: Option<Within>, holds_lane: bool) -> Nested {
        Nested {
            executor: executor.clone(),
            within: Within {
                task,
                depth: parent.map_or(0, |p| p.depth) + 1,
                holds_lane,
            },
            inherited: parent.is_some_and(|p| p.shares_lane(Some(task))),
        }
    }

    /// The scope of a background call: as deep as this command (a job does not reset the
    /// nesting bound), holding no lane.
    fn detached_within(&self) -> Within {
        Within {
            holds_lane: false,
            ..self.within
        }
    }

    fn too_deep(&self, method: &str) -> Option<Receipt> {
        (self.within.depth > MAX_DEPTH).then(|| {
            Receipt::failure(
                method,
                ErrorCode::InvalidArgument,
                format!(
                    "{method}: not executed: commands nested more than {MAX_DEPTH} deep (a recipe that runs itself?)"
                ),
                None,
                false,
                0.0,
            )
        })
    }

    /// One command a script sent: its task's own commands are steps, the rest plain calls.
    async fn answer(&self, task: Option<TaskId>, method: &str, params: Value) -> Receipt {
        if let Some(r) = self.too_deep(method) {
            return r;
        }
        self.executor
            .execute_in(task, method, params, Some(self.within))
            .await
    }
}

impl Calls for Nested {
    fn step(&self, method: &str, params: Value) -> ReceiptFuture {
        let this = self.clone();
        let method = method.to_string();
        Box::pin(async move {
            let task = Some(this.within.task);
            this.answer(task, &method, params).await
        })
    }

    fn detached(&self, task: Option<TaskId>, method: &str, params: Value) -> ReceiptFuture {
        let this = self.clone();
        let method = method.to_string();
        Box::pin(async move {
            if let Some(r) = this.too_deep(&method) {
                return r;
            }
            let within = Some(this.detached_within());
            this.executor
                .execute_in(task, &method, params, within)
                .await
        })
    }

    fn in_inherited_lane(&self) -> bool {
        self.inherited
    }

    fn script(&self, path: PathBuf, args: Value) -> CommandFuture {
        let this = self.clone();
        Box::pin(async move { this.run_lua(path, args).await })
    }
}

/// One command a Lua recipe sent, with where its receipt goes.
struct Request {
    task: Option<TaskId>,
    method: String,
    params: Value,
    reply: oneshot::Sender<Receipt>,
}

/// The Lua state's hook: every command goes back to the running command.
struct Forward {
    tx: mpsc::UnboundedSender<Request>,
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
            let request = Request {
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

/// Sets the flag when dropped: the script's future is gone, the script must stop.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
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

impl Nested {
    async fn run_lua(&self, path: PathBuf, args: Value) -> Result<Value, CommandError> {
        let source = tokio::fs::read_to_string(&path).await.map_err(|e| {
            CommandError::failed(format!("cannot read the script `{}`: {e}", path.display()))
        })?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
        let (done_tx, mut done_rx) = oneshot::channel::<(Result<Value, String>, Vec<String>)>();
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(stop.clone());
        let executor = self.executor.clone();
        let task = self.within.task;
        let script = path.clone();
        let spawned = std::thread::Builder::new()
            .name("moonpilot-recipe".into())
            .spawn(move || {
                let printed = Rc::new(RefCell::new(Vec::new()));
                let run = ScriptRun {
                    executor,
                    task,
                    path: script,
                    source,
                    args,
                    tx,
                    stop,
                    printed: printed.clone(),
                };
                let res = run_script_thread(run);
                let _ = done_tx.send((res, printed.take()));
            });
        if let Err(e) = spawned {
            return Err(CommandError::new(
                ErrorCode::Internal,
                format!("cannot start a thread for the script: {e}"),
            ));
        }
        // One command at a time, in the order the script sends them: its task's commands share
        // this command's lane, so they must not run side by side.
        loop {
            tokio::select! {
                biased;
                Some(req) = rx.recv() => {
                    let receipt = self.answer(req.task, &req.method, req.params).await;
                    let _ = req.reply.send(receipt);
                }
                done = &mut done_rx => {
                    return match done {
                        Ok((Ok(value), output)) => Ok(serde_json::json!({"value": value, "output": output})),
                        Ok((Err(msg), output)) => Err(CommandError::failed(format!(
                            "the Lua recipe `{}` failed: {msg}",
                            path.display()
                        ))
                        .with_details(serde_json::json!({"script": path.display().to_string(), "luaError": msg, "output": output}))),
                        Err(_) => Err(CommandError::new(
                            ErrorCode::Internal,
                            "the script's thread ended without an answer",
                        )),
                    };
                }
            }
        }
    }
}

/// Most lines of a script's `print` kept in its answer.
const MAX_OUTPUT_LINES: usize = 200;
/// Longest line of a Lua recipe's output kept, in characters.
const MAX_LINE_CHARS: usize = 2000;

/// What a script thread runs.
struct ScriptRun {
    executor: Executor,
    task: TaskId,
    path: PathBuf,
    source: String,
    args: Value,
    /// Where its commands go.
    tx: mpsc::UnboundedSender<Request>,
    /// Set when the running command is gone.
    stop: Arc<AtomicBool>,
    /// What it prints (the first `MAX_OUTPUT_LINES` lines).
    printed: Rc<RefCell<Vec<String>>>,
}

/// How much memory a Lua recipe's state may take.
const RECIPE_MEMORY: usize = 256 * 1024 * 1024;

/// The script thread: a runtime, a `LocalSet`, a Lua state whose commands go back over `tx`,
/// `browser.args` = `args` (plus `task`), `page` = the task; answers the return value.
fn run_script_thread(run: ScriptRun) -> Result<Value, String> {
    let ScriptRun {
        executor,
        task,
        path,
        source,
        args,
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
            let table = crate::lua::convert::json_to_lua(lua, &args)?;
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
        let res = tokio::select! {
            res = host.run_source_value(&path, &source) => res.map_err(|e| lua_error_text(&e)),
            _ = gone.closed() => Err("the recipe was stopped".to_string()),
        };
        host.abort_jobs();
        res
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig};

    #[test]
    fn a_background_call_keeps_the_nesting_depth_and_no_lane() {
        let ex = Executor::new(Engine::new(EngineConfig::default()));
        let mut parent = None;
        let mut n = Nested::new(&ex, TaskId(1), parent, true);
        for _ in 0..3 {
            parent = Some(n.within);
            n = Nested::new(&ex, TaskId(1), parent, true);
        }
        assert_eq!(n.within.depth, 4);
        assert!(n.inherited, "a step on its sender's task shares its lane");
        let job = n.detached_within();
        assert_eq!(job.depth, 4, "a job does not start the count again");
        assert!(
            !job.shares_lane(Some(TaskId(1))),
            "a job takes the lane itself"
        );
        let batch = Nested::new(&ex, TaskId(1), Some(job), true);
        assert!(!batch.inherited);
        assert_eq!(batch.within.depth, 5);
        assert!(
            batch.too_deep("get_title").is_some(),
            "the bound holds across a job"
        );
        let top = Nested::new(&ex, TaskId(1), None, true);
        assert!(!top.inherited && top.too_deep("get_title").is_none());
    }
}
