//! The Lua bridge: a Lua 5.4 state with the `browser` module, over the one executor.
//!
//! Rust exposes a handful of core functions (`exec`, `sleep`, `spawn`, ...); the embedded
//! `prelude.lua` builds `browser`, `Task` and `Result` from them, generating one `Task` method per
//! registry command. The executor reaches callbacks through `Lua::set_app_data`, not a global a
//! script could overwrite. The state is `!Send`: it lives on the engine's thread, and async calls
//! run on a `LocalSet`.

pub mod convert;
pub mod journal;
pub mod json;
pub mod recipe;
pub mod sandbox;
pub mod splash;
pub mod stubs;

pub use recipe::recipe_host;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, MultiValue, Table, UserData, UserDataMethods, Value as LuaValue};
use tokio::task::JoinHandle;

use crate::browser::task::TaskId;
use crate::command::Opens;
use crate::executor::Executor;
use crate::protocol::{ErrorCode, Receipt};
use futures::future::LocalBoxFuture;

const PRELUDE: &str = include_str!("prelude.lua");
/// `require("moonpilot.human")`: helpers that compose the human-input commands.
const HUMAN_LUA: &str = include_str!("../../lua/moonpilot/human.lua");

/// The hosts' common frame: a current-thread runtime with a `LocalSet`, an engine, a Lua state
/// with `args` as `browser.args`; runs `body` and then shuts the engine down (closing every task
/// and the browser) whatever `body` answered. Set-up failures are exit code 2.
pub fn run_host<F, Fut>(
    config: crate::EngineConfig,
    args: BTreeMap<String, String>,
    body: F,
) -> std::process::ExitCode
where
    F: FnOnce(LuaHost) -> Fut,
    Fut: std::future::Future<Output = std::process::ExitCode>,
{
    let runtime = match host_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let engine = crate::Engine::new(config);
        let code = match LuaHost::new(Executor::new(engine.clone(), recipe_host()), args) {
            Ok(host) => body(host).await,
            Err(e) => {
                eprintln!("moonpilot: cannot set up Lua: {e}");
                std::process::ExitCode::from(2)
            }
        };
        engine.shutdown().await;
        engine.flush_trace().await;
        code
    })
}

/// The hosts' runtime: one thread, everything enabled; failing to build it is exit code 2, said
/// on stderr.
pub fn host_runtime() -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("moonpilot: cannot start the runtime: {e}");
            std::process::ExitCode::from(2)
        })
}

/// One Ctrl-C listener for a whole host session (a listener made per `select!` would miss a
/// Ctrl-C typed between two of them); start-up failure is exit code 2, said on stderr.
pub fn interrupt_listener() -> Result<tokio::signal::unix::Signal, std::process::ExitCode> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| {
        eprintln!("moonpilot: cannot listen for Ctrl-C: {e}");
        std::process::ExitCode::from(2)
    })
}

/// The innermost frame of a script file (a chunk named `@path`, not the bridge's own
/// `=…` chunks) as `path:line`.
fn script_position(lua: &Lua) -> Option<std::sync::Arc<str>> {
    for level in 1..64 {
        let frame = lua.inspect_stack(level, |d| {
            let source = d.source().source.map(|s| s.into_owned());
            (source, d.current_line())
        })?;
        if let (Some(source), Some(line)) = frame {
            if let Some(path) = source.strip_prefix('@') {
                return Some(format!("{path}:{line}").into());
            }
        }
    }
    None
}

/// What `print(args…)` prints: each argument through `tostring`, tab-separated, as Lua's own
/// `print`.
fn printed(lua: &Lua, args: MultiValue) -> mlua::Result<String> {
    let tostring: Function = lua.globals().get("tostring")?;
    let mut parts = Vec::with_capacity(args.len());
    for arg in args {
        parts.push(tostring.call::<mlua::LuaString>(arg)?.to_string_lossy());
    }
    Ok(parts.join("\t"))
}

/// A Lua state wired to an executor.
pub struct LuaHost {
    lua: Lua,
}

struct HostData {
    executor: Executor,
    epoch: Instant,
    args: BTreeMap<String, String>,
    /// Coroutines started by `browser.spawn`, aborted with [`LuaHost::abort_jobs`].
    jobs: RefCell<Vec<tokio::task::AbortHandle>>,
    /// The host's hook on sent commands (watch mode's journal).
    hook: Option<Rc<dyn Hook>>,
    /// Files `require` found (recorded once [`LuaHost::track_requires`] is on); shared with
    /// the watcher, which sees a module from the moment it is required.
    modules: Rc<RefCell<BTreeSet<PathBuf>>>,
    /// The chunk name of the script `run_file` runs (`@path`), to find its lines on the stack.
    script: RefCell<Option<String>>,
    /// Human-input requests this state opened, withdrawn with its jobs (a watch run that is
    /// over cannot use the answer).
    opened: RefCell<Vec<String>>,
    /// The message of the last `browser.start` that failed (cleared by one that succeeds), so
    /// a host can tell "the browser did not start" from a script error.
    start_failure: RefCell<Option<String>>,
}

/// A host's hook on what a Lua state sends: watch mode's journal replays, hands tasks over
/// and records. Without a hook, commands go straight to the executor.
pub trait Hook {
    /// Sends one command.
    fn send<'a>(
        &'a self,
        executor: &'a Executor,
        task: Option<TaskId>,
        method: &'a str,
        params: serde_json::Value,
    ) -> LocalBoxFuture<'a, Receipt>;

    /// Whether commands are being answered from memory (a sleep does not wait then).
    fn replaying(&self) -> bool;

    /// `browser.checkpoint(name)` reached at `line` of the main script.
    fn checkpoint<'a>(
        &'a self,
        executor: &'a Executor,
        name: String,
        line: usize,
    ) -> LocalBoxFuture<'a, ()>;
}

/// What a successful `method` opens, by its spec (nothing for an unknown method).
pub fn opens(method: &str) -> Opens {
    crate::commands::registry()
        .lookup(method)
        .map_or(Opens::Nothing, |s| s.opens)
}

/// The live task a command that `opens` tasks would take over instead (`browser.start{id = N}`
/// with N alive).
pub fn adoptable(executor: &Executor, task: Option<TaskId>, opens: Opens) -> Option<TaskId> {
    task.filter(|t| opens == Opens::Task && executor.engine().task(*t).is_some())
}

/// Sends one command, through the host's hook when there is one.
async fn send(
    lua: &Lua,
    executor: &Executor,
    task: Option<TaskId>,
    method: &str,
    opened: Opens,
    params: serde_json::Value,
) -> Receipt {
    let hook = lua.app_data_ref::<HostData>().and_then(|h| h.hook.clone());
    match (hook, adoptable(executor, task, opened)) {
        (Some(hook), _) => hook.send(executor, task, method, params).await,
        (None, Some(t)) => adopted(method, t),
        (None, None) => executor.execute(task, method, params).await,
    }
}

/// The receipt of a `start` that took a live task over instead of creating one.
pub fn adopted(method: &str, task: TaskId) -> Receipt {
    Receipt::success(
        method,
        serde_json::json!({"id": task.0.to_string(), "reused": true}),
        0.0,
    )
}

/// A `Task` handle: only the id, resolved by the engine on every call (LUA-API.md "Task").
/// Its methods are the registry's commands, generated in `prelude.lua` and looked up through
/// `__index`; names the registry does not know answer `UNKNOWN_METHOD` when called.
#[derive(Clone, Copy)]
struct TaskHandle(TaskId);

const TASK_METHODS_KEY: &str = "moonpilot.task_methods";

impl UserData for TaskHandle {
    fn add_fields<F: mlua::UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("id", |_, this| Ok(this.0 .0));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(mlua::MetaMethod::Index, |lua, _this, key: LuaValue| {
            let table: Table = lua.named_registry_value(TASK_METHODS_KEY)?;
            let found: LuaValue = table.raw_get(key.clone())?;
            if !found.is_nil() {
                return Ok(found);
            }
            let LuaValue::String(name) = key else {
                return Ok(LuaValue::Nil);
            };
            // Not (yet) a registered command: calling it goes to the executor, which answers
            // UNKNOWN_METHOD with near names.
            let fallback: Function = table.raw_get("__unknown")?;
            Ok(LuaValue::Function(fallback.bind(name)?))
        });
        methods.add_meta_method(mlua::MetaMethod::ToString, |_, this, ()| {
            Ok(format!("Task({})", this.0))
        });
        methods.add_meta_function(
            mlua::MetaMethod::Eq,
            |_, (a, b): (mlua::AnyUserData, mlua::AnyUserData)| {
                Ok(match (a.borrow::<TaskHandle>(), b.borrow::<TaskHandle>()) {
                    (Ok(a), Ok(b)) => a.0 == b.0,
                    _ => false,
                })
            },
        );
    }
}

/// A coroutine started by `browser.spawn`.
struct Job {
    handle: RefCell<Option<JoinHandle<mlua::Result<MultiValue>>>>,
    abort: tokio::task::AbortHandle,
}

impl UserData for Job {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("done", |_, this, ()| Ok(this.abort.is_finished()));
        methods.add_method("cancel", |_, this, ()| {
            this.abort.abort();
            Ok(())
        });
        methods.add_async_method("join", |_lua, this, ()| async move {
            let handle = this.handle.borrow_mut().take();
            let Some(handle) = handle else {
                return Err(mlua::Error::runtime(
                    "job:join(): the job was already joined",
                ));
            };
            match handle.await {
                Ok(res) => res,
                Err(e) => Err(mlua::Error::runtime(format!(
                    "job:join(): the job was cancelled: {e}"
                ))),
            }
        });
    }
}

fn task_id_from(value: &LuaValue) -> Result<Option<TaskId>, String> {
    match value {
        LuaValue::Nil => Ok(None),
        LuaValue::Integer(i) => u64::try_from(*i)
            .map(|v| Some(TaskId(v)))
            .map_err(|_| format!("task id must be >= 0, got {i}")),
        LuaValue::Number(n) if n.fract() == 0.0 && *n >= 0.0 => Ok(Some(TaskId(*n as u64))),
        LuaValue::String(s) => s
            .to_str()
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map(|v| Some(TaskId(v)))
            .ok_or_else(|| "task id must be a number or a numeric string".to_string()),
        other => Err(format!(
            "task id must be a number, got {}",
            other.type_name()
        )),
    }
}

/// The receipt as a plain Lua table (the prelude adds the `Result` metatable) and the JSON text
/// of its `data`.
fn receipt_to_lua(lua: &Lua, receipt: &Receipt) -> mlua::Result<(Table, String)> {
    let t = lua.create_table()?;
    t.raw_set("ok", receipt.ok)?;
    if let Some(code) = receipt.code {
        t.raw_set("code", code.as_str())?;
    }
    if let Some(msg) = &receipt.msg {
        t.raw_set("msg", msg.as_str())?;
    }
    t.raw_set("data", convert::json_to_lua(lua, &receipt.data)?)?;
    t.raw_set("retryable", receipt.retryable)?;
    if let Some(ms) = receipt.retry_after_ms {
        t.raw_set("retryAfterMs", ms)?;
    }
    t.raw_set("started", receipt.started)?;
    t.raw_set("method", receipt.method.as_str())?;
    t.raw_set("elapsed_ms", receipt.elapsed_ms)?;
    Ok((t, receipt.data.to_string()))
}

/// One compact line for `tostring(result)`: method, ok or code, and the first scalar fields.
fn describe(result: &Table) -> mlua::Result<String> {
    let method: String = result.get("method").unwrap_or_default();
    let ok: bool = result.get("ok").unwrap_or(false);
    let ms: f64 = result.get("elapsed_ms").unwrap_or(0.0);
    let mut line = if ok {
        format!("{method} ok ({ms:.1} ms)")
    } else {
        let code: String = result.get("code").unwrap_or_default();
        let msg: String = result.get("msg").unwrap_or_default();
        format!("{method} {code} ({ms:.1} ms): {msg}")
    };
    if ok {
        if let Ok(LuaValue::Table(data)) = result.get::<LuaValue>("data") {
            let mut fields = scalar_fields(&data, "");
            // Then the fields of nested objects (`dialog.message`), until there are six.
            let mut nested: Vec<(String, String)> = Vec::new();
            for pair in data.pairs::<LuaValue, LuaValue>() {
                if let Ok((LuaValue::String(k), LuaValue::Table(inner))) = pair {
                    if inner.raw_len() == 0 {
                        nested.extend(scalar_fields(&inner, &format!("{}.", k.to_string_lossy())));
                    }
                }
            }
            fields.sort();
            nested.sort();
            for (k, v) in fields.into_iter().chain(nested).take(6) {
                line.push_str(&format!(" {k}={v}"));
            }
        }
    }
    Ok(line)
}

/// The string, number and boolean fields of `table`, as `prefix` + key and a short text.
fn scalar_fields(table: &Table, prefix: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let Ok((LuaValue::String(k), v)) = pair else {
            continue;
        };
        let Ok(key) = k.to_str().map(|s| s.to_string()) else {
            continue;
        };
        let text = match v {
            LuaValue::String(s) => {
                let s = s.to_string_lossy();
                let short: String = s.chars().take(60).collect();
                format!("{short:?}")
            }
            LuaValue::Integer(i) => i.to_string(),
            LuaValue::Number(n) => n.to_string(),
            LuaValue::Boolean(b) => b.to_string(),
            _ => continue,
        };
        fields.push((format!("{prefix}{key}"), text));
    }
    fields
}

impl LuaHost {
    /// A Lua state (standard library without `debug`) with `browser` installed as a global and
    /// as `require("moonpilot")`. `args` become `browser.args`.
    pub fn new(executor: Executor, args: BTreeMap<String, String>) -> mlua::Result<LuaHost> {
        LuaHost::build(executor, args, None)
    }

    /// A fresh Lua state over the same executor and args as `self`, sending its commands through
    /// `hook` (watch mode: one state per run, one journal per session).
    pub fn renew(&self, hook: Rc<dyn Hook>) -> mlua::Result<LuaHost> {
        let (executor, args) = {
            let data = self
                .lua
                .app_data_ref::<HostData>()
                .ok_or_else(|| mlua::Error::runtime("moonpilot: the engine is gone"))?;
            (data.executor.clone(), data.args.clone())
        };
        LuaHost::build(executor, args, Some(hook))
    }

    /// A Lua state over `executor` sending its commands through `hook` (a Lua recipe: its
    /// commands go back to the command that runs it).
    pub fn with_hook(
        executor: Executor,
        args: BTreeMap<String, String>,
        hook: Rc<dyn Hook>,
    ) -> mlua::Result<LuaHost> {
        LuaHost::build(executor, args, Some(hook))
    }

    fn build(
        executor: Executor,
        args: BTreeMap<String, String>,
        hook: Option<Rc<dyn Hook>>,
    ) -> mlua::Result<LuaHost> {
        // The door the executor serves decides the language a script gets (`door.rs`).
        let lua = match executor.trust().libraries() {
            crate::door::Libraries::Full => Lua::new(),
            crate::door::Libraries::Sandbox => sandbox::new_state()?,
        };
        lua.set_app_data(HostData {
            executor,
            epoch: Instant::now(),
            args: args.clone(),
            jobs: RefCell::new(Vec::new()),
            hook,
            modules: Rc::default(),
            script: RefCell::new(None),
            opened: RefCell::new(Vec::new()),
            start_failure: RefCell::new(None),
        });
        let core = lua.create_table()?;

        core.set(
            "exec",
            lua.create_async_function(
                |lua, (id, method, params): (LuaValue, mlua::LuaString, LuaValue)| async move {
                    // A name that is not UTF-8 names no command: UNKNOWN_METHOD, not a
                    // conversion error.
                    let method = method.to_string_lossy();
                    // The script line that sent it, for its trace line (read while the
                    // caller's frames are still on the stack).
                    let at = script_position(&lua);
                    let executor = match lua.app_data_ref::<HostData>() {
                        Some(h) => h.executor.clone(),
                        None => return Err(mlua::Error::runtime("moonpilot: the engine is gone")),
                    };
                    let bad = |msg: String| {
                        Receipt::failure(
                            &method,
                            ErrorCode::InvalidArgument,
                            format!("{method}: {msg}"),
                            None,
                            false,
                            0.0,
                        )
                    };
                    let receipt = match task_id_from(&id) {
                        Err(msg) => bad(msg),
                        Ok(task_id) => match &params {
                            LuaValue::Nil | LuaValue::Table(_) => {
                                match convert::lua_to_json(&params, "params") {
                                    Ok(json) => {
                                        let opened = opens(&method);
                                        let sent =
                                            send(&lua, &executor, task_id, &method, opened, json);
                                        let r = match at {
                                            Some(at) => {
                                                crate::trace::SCRIPT_AT.scope(at, sent).await
                                            }
                                            None => sent.await,
                                        };
                                        if let (true, true, Some(id), Some(h)) = (
                                            opened == Opens::HumanRequest,
                                            r.ok,
                                            r.data
                                                .get("requestId")
                                                .and_then(serde_json::Value::as_str),
                                            lua.app_data_ref::<HostData>(),
                                        ) {
                                            h.opened.borrow_mut().push(id.to_string());
                                        }
                                        r
                                    }
                                    Err(msg) => bad(msg),
                                }
                            }
                            other => bad(format!(
                                "bad argument #1 to `{method}`: expected a params table, got {}",
                                other.type_name()
                            )),
                        },
                    };
                    receipt_to_lua(&lua, &receipt)
                },
            )?,
        )?;
        core.set("describe", lua.create_function(|_, t: Table| describe(&t))?)?;
        core.set(
            "start_result",
            lua.create_function(|lua, failure: Option<String>| {
                if let Some(h) = lua.app_data_ref::<HostData>() {
                    *h.start_failure.borrow_mut() = failure;
                }
                Ok(())
            })?,
        )?;
        core.set(
            "set_task_methods",
            lua.create_function(|lua, t: Table| lua.set_named_registry_value(TASK_METHODS_KEY, t))?,
        )?;
        core.set(
            "new_task",
            lua.create_function(|_, id: LuaValue| match task_id_from(&id) {
                Ok(Some(task_id)) => Ok(TaskHandle(task_id)),
                _ => Err(mlua::Error::runtime(
                    "moonpilot: a task id is a non-negative integer",
                )),
            })?,
        )?;
        core.set(
            "wait_files",
            lua.create_async_function(|lua, (id, seq): (LuaValue, Option<u64>)| async move {
                // The files a receipt named (`files_pending`): every evidence job of the task
                // started so far is over (each is bounded). Answers the job's failure, if any.
                let Ok(Some(task_id)) = task_id_from(&id) else {
                    return Ok(Some(
                        "no task is known for this result (it came from browser.call)".to_string(),
                    ));
                };
                let task = lua
                    .app_data_ref::<HostData>()
                    .and_then(|h| h.executor.engine().task(task_id));
                // A task that is gone let its evidence settle before it went.
                let Some(task) = task else {
                    return Ok(None);
                };
                task.evidence_settled().await;
                Ok(seq.and_then(|seq| task.evidence_failure_of(seq)))
            })?,
        )?;
        core.set(
            "wait_downloads",
            lua.create_async_function(|lua, id: LuaValue| async move {
                // The task's downloads once none is in progress (two minutes at most), by path.
                let out = lua.create_table()?;
                let Ok(Some(task_id)) = task_id_from(&id) else {
                    return Ok(out);
                };
                let task = lua
                    .app_data_ref::<HostData>()
                    .and_then(|h| h.executor.engine().task(task_id));
                let Some(task) = task else {
                    return Ok(out);
                };
                let all = task.downloads_settled(0, Duration::from_secs(120)).await;
                for d in all {
                    let v = convert::json_to_lua(&lua, &d.to_json())?;
                    out.set(d.path.display().to_string(), v)?;
                }
                Ok(out)
            })?,
        )?;
        core.set(
            "task_alive",
            lua.create_function(|lua, id: LuaValue| {
                let Ok(Some(task_id)) = task_id_from(&id) else {
                    return Ok(false);
                };
                Ok(lua
                    .app_data_ref::<HostData>()
                    .is_some_and(|h| h.executor.engine().task(task_id).is_some()))
            })?,
        )?;
        core.set(
            "methods",
            lua.create_function(|_, filter: Option<mlua::LuaString>| {
                let filter = filter.map(|f| f.to_string_lossy().to_lowercase());
                Ok(crate::commands::registry()
                    .all()
                    .iter()
                    .map(|s| s.name)
                    .filter(|n| filter.as_deref().is_none_or(|f| n.contains(f)))
                    .collect::<Vec<_>>())
            })?,
        )?;
        core.set(
            "task_methods",
            lua.create_function(|_, ()| {
                Ok(crate::commands::registry()
                    .all()
                    .iter()
                    .filter(|s| s.needs_task())
                    .map(|s| s.name)
                    .collect::<Vec<_>>())
            })?,
        )?;
        core.set(
            "sleep",
            lua.create_async_function(|lua, ms: f64| async move {
                // A re-run replaying the journal does not wait: the page already moved on.
                let replaying = lua
                    .app_data_ref::<HostData>()
                    .and_then(|h| h.hook.clone())
                    .is_some_and(|hook| hook.replaying());
                if replaying {
                    tokio::task::yield_now().await;
                    return Ok(());
                }
                // (still yielding, so a polling loop cannot starve the other coroutines)
                // `try_from` refuses what Duration cannot hold: past it (`math.huge`, 1e308) is
                // a day too, which is plenty for a sleep; below zero, no sleep.
                let day = Duration::from_secs(86_400);
                let d = match Duration::try_from_secs_f64(ms / 1000.0) {
                    Ok(d) => d.min(day),
                    Err(_) if ms > 0.0 => day,
                    Err(_) => Duration::ZERO,
                };
                tokio::time::sleep(d).await;
                Ok(())
            })?,
        )?;
        core.set(
            "clock",
            lua.create_function(|lua, ()| {
                Ok(lua
                    .app_data_ref::<HostData>()
                    .map(|h| h.epoch.elapsed().as_secs_f64())
                    .unwrap_or(0.0))
            })?,
        )?;
        core.set(
            "spawn",
            lua.create_function(|lua, (func, args): (Function, MultiValue)| {
                // Runs on the engine thread's LocalSet, concurrently with the caller.
                let handle =
                    tokio::task::spawn_local(
                        async move { func.call_async::<MultiValue>(args).await },
                    );
                if let Some(h) = lua.app_data_ref::<HostData>() {
                    let mut jobs = h.jobs.borrow_mut();
                    jobs.retain(|j| !j.is_finished());
                    jobs.push(handle.abort_handle());
                }
                let abort = handle.abort_handle();
                Ok(Job {
                    handle: RefCell::new(Some(handle)),
                    abort,
                })
            })?,
        )?;
        core.set(
            "script_line",
            lua.create_function(|lua, ()| {
                // The innermost frame of the main script (`browser.checkpoint` is a prelude
                // function, so level 1 is never the script itself).
                let Some(script) = lua
                    .app_data_ref::<HostData>()
                    .and_then(|h| h.script.borrow().clone())
                else {
                    return Ok(None);
                };
                // The outermost frame of the script: for a helper function defined in the
                // script, the line of its call in the main chunk.
                let mut found = None;
                for level in 1..256 {
                    let frame = lua.inspect_stack(level, |d| {
                        let source = d.source().source.map(|s| s.into_owned());
                        (source, d.current_line())
                    });
                    match frame {
                        None => break,
                        Some((Some(source), Some(line))) if source == script => found = Some(line),
                        Some(_) => {}
                    }
                }
                Ok(found)
            })?,
        )?;
        core.set(
            "checkpoint",
            lua.create_async_function(|lua, (name, line): (String, Option<usize>)| async move {
                let (hook, executor) = match lua.app_data_ref::<HostData>() {
                    Some(h) => (h.hook.clone(), h.executor.clone()),
                    None => return Ok(()),
                };
                // Outside watch mode, or called from outside the main script: nothing to do.
                if let (Some(hook), Some(line)) = (hook, line) {
                    hook.checkpoint(&executor, name, line).await;
                }
                Ok(())
            })?,
        )?;
        let args_table = lua.create_table()?;
        for (k, v) in args {
            args_table.set(k, v)?;
        }
        core.set("args", args_table)?;

        let browser: Table = lua
            .load(PRELUDE)
            .set_name("=moonpilot/prelude.lua")
            .call(core)?;
        lua.globals().set("browser", browser.clone())?;
        sandbox::preload(
            &lua,
            "moonpilot",
            lua.create_function(move |_, _: LuaValue| Ok(browser.clone()))?,
        )?;
        sandbox::preload(
            &lua,
            "json",
            lua.create_function(|lua, _: LuaValue| json::module(lua))?,
        )?;
        sandbox::preload(
            &lua,
            "moonpilot.human",
            lua.create_function(|lua, _: LuaValue| {
                lua.load(HUMAN_LUA)
                    .set_name("=moonpilot/human.lua")
                    .eval::<LuaValue>()
            })?,
        )?;
        Ok(LuaHost { lua })
    }

    /// Bounds the state's Lua memory to `memory` bytes (a recipe's, a script sent over a
    /// door). What a script may reach is decided when the state is built, by its door
    /// (`sandbox.rs`).
    pub fn confine(&self, memory: usize) -> mlua::Result<()> {
        self.lua.set_memory_limit(memory)?;
        Ok(())
    }

    /// Whether the state is the sandbox of scripts sent by others.
    pub fn sandboxed(&self) -> bool {
        sandbox::is_sandboxed(&self.lua)
    }

    /// A chunk of `source` named `name`: text only in the sandbox (a binary chunk is a known
    /// path to memory corruption).
    fn chunk<'a>(&'a self, source: &'a str, name: String) -> mlua::chunk::Chunk<'a> {
        let chunk = self.lua.load(source).set_name(name);
        if self.sandboxed() {
            chunk.set_mode(mlua::chunk::ChunkMode::Text)
        } else {
            chunk
        }
    }

    /// Records every file `require` loads from `package.path` (for watch mode), by a searcher in
    /// front of the standard ones that only looks.
    pub fn track_requires(&self) -> mlua::Result<()> {
        let package: Table = self.lua.globals().get("package")?;
        let searchers: Table = package.get("searchers")?;
        let look = self.lua.create_function(|lua, name: String| {
            let package: Table = lua.globals().get("package")?;
            let path: String = package.get("path")?;
            let searchpath: Function = package.get("searchpath")?;
            if let Ok(Some(found)) = searchpath.call::<Option<String>>((name, path)) {
                let file = std::path::absolute(&found).unwrap_or_else(|_| PathBuf::from(found));
                if let Some(h) = lua.app_data_ref::<HostData>() {
                    h.modules.borrow_mut().insert(file);
                }
            }
            Ok(LuaValue::Nil)
        })?;
        let n = searchers.raw_len();
        for i in (1..=n).rev() {
            searchers.raw_set(i + 1, searchers.raw_get::<LuaValue>(i)?)?;
        }
        searchers.raw_set(1, look)
    }

    /// The module files `require` has loaded so far (with [`LuaHost::track_requires`]), as a
    /// live set.
    pub fn required_files(&self) -> Rc<RefCell<BTreeSet<PathBuf>>> {
        self.lua
            .app_data_ref::<HostData>()
            .map(|h| h.modules.clone())
            .unwrap_or_default()
    }

    /// Aborts every coroutine `browser.spawn` started (their late results are never seen) and
    /// withdraws the human-input requests this state opened that are still waiting.
    pub fn abort_jobs(&self) {
        if let Some(h) = self.lua.app_data_ref::<HostData>() {
            for job in h.jobs.borrow_mut().drain(..) {
                job.abort();
            }
            let opened: Vec<String> = h.opened.borrow_mut().drain(..).collect();
            if !opened.is_empty() {
                h.executor.engine().with_desk(|d| {
                    for id in &opened {
                        d.withdraw(id);
                    }
                });
            }
        }
    }

    /// Whether `error` (a script's uncaught error) is the failure of its last `browser.start`,
    /// and that failure's message: the host reports it as a start-up error, not a script
    /// error with a traceback into the bridge.
    pub fn start_failure(&self, error: &mlua::Error) -> Option<String> {
        let failure = self
            .lua
            .app_data_ref::<HostData>()
            .and_then(|h| h.start_failure.borrow().clone())?;
        error.to_string().contains(&failure).then_some(failure)
    }

    /// The executor the state sends its commands to.
    pub fn executor(&self) -> Option<Executor> {
        self.lua
            .app_data_ref::<HostData>()
            .map(|h| h.executor.clone())
    }

    /// Sends what `print` prints (its arguments through `tostring`, tab-separated, as Lua's own
    /// `print`) to `sink`, one call per `print`. Hosts that own the terminal use it.
    pub fn redirect_print(&self, sink: impl Fn(&str) + 'static) -> mlua::Result<()> {
        let print = self.lua.create_function(move |lua, args: MultiValue| {
            sink(&printed(lua, args)?);
            Ok(())
        })?;
        self.lua.globals().set("print", print)
    }

    /// Hands what `print` prints to `sink` too (as [`LuaHost::redirect_print`] does), then
    /// prints it as before: a recorded run keeps its output and the terminal still sees it, in
    /// the same order as the script's `io.write`s.
    pub fn record_print(&self, sink: impl Fn(&str) + 'static) -> mlua::Result<()> {
        let original: Function = self.lua.globals().get("print")?;
        let print = self.lua.create_function(move |lua, args: MultiValue| {
            let line = printed(lua, args)?;
            sink(&line);
            original.call::<()>(line)
        })?;
        self.lua.globals().set("print", print)
    }

    /// The Lua state.
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Runs a script file to its end, with `arg[0]` set to its absolute path (as the `lua`
    /// interpreter does). Must be awaited inside a `LocalSet`.
    pub async fn run_file(&self, path: &Path) -> mlua::Result<()> {
        let source = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| mlua::Error::runtime(format!("cannot read `{}`: {e}", path.display())))?;
        self.run_source(path, &source).await
    }

    /// Runs `source` as the script at `path` (see [`LuaHost::run_file`]); modules next to the
    /// script are found by `require` wherever it is run from.
    pub async fn run_source(&self, path: &Path, source: &str) -> mlua::Result<()> {
        let name = self.prepare_script(path)?;
        self.chunk(source, name).exec_async().await
    }

    /// Runs `source` as the script at `path` (see [`LuaHost::run_source`]) and answers its
    /// first return value as JSON (`null` when it returns nothing).
    pub async fn run_source_value(
        &self,
        path: &Path,
        source: &str,
    ) -> mlua::Result<serde_json::Value> {
        let name = self.prepare_script(path)?;
        let values: MultiValue = self.chunk(source, name).eval_async().await?;
        let first = values.into_iter().next().unwrap_or(LuaValue::Nil);
        convert::lua_to_json(&first, "the script's return value").map_err(mlua::Error::runtime)
    }

    /// `arg`, `package.path` and the chunk name for running the script at `path`.
    fn prepare_script(&self, path: &Path) -> mlua::Result<String> {
        // A script sent by others is not told where the engine runs.
        let absolute = if self.sandboxed() {
            path.to_path_buf()
        } else {
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
        };
        let arg = self.lua.create_table()?;
        arg.raw_set(0, absolute.display().to_string())?;
        self.lua.globals().set("arg", arg)?;
        // (The sandbox has no `package`: its `require` reads no file.)
        let package: Option<Table> = self.lua.globals().get("package")?;
        if let (Some(dir), Some(package)) = (absolute.parent(), package) {
            let path: String = package.get("path")?;
            let dir = dir.display();
            package.set("path", format!("{dir}/?.lua;{dir}/?/init.lua;{path}"))?;
        }
        let name = format!("@{}", path.display());
        if let Some(h) = self.lua.app_data_ref::<HostData>() {
            *h.script.borrow_mut() = Some(name.clone());
        }
        Ok(name)
    }

    /// Runs a chunk of source and returns its values. Must be awaited inside a `LocalSet`.
    pub async fn eval(&self, source: &str, name: &str) -> mlua::Result<MultiValue> {
        self.chunk(source, format!("={name}")).eval_async().await
    }
}
