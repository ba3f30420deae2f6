//! The recipe host: what runs a recipe's script for a running command, behind a trait the
//! executor owns ([`RecipeHost`]).
//!
//! The executor knows a script only as a source of commands and one answer: it hands the host a
//! [`Script`], executes every [`ScriptCommand`] the script sends (inside the running command's
//! lane, see `nested.rs`) and waits for the [`ScriptEnd`]. How the script runs is the host's: the
//! Lua bridge implements it (`lua/recipe.rs`), and whoever builds an [`Executor`] hands it one,
//! so the executor never imports the bridge that imports it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::Executor;
use crate::browser::task::TaskId;
use crate::protocol::Receipt;

/// Runs recipe scripts (the Lua bridge's `LuaRecipes`).
pub trait RecipeHost: Send + Sync {
    /// Starts `script`, whose commands go to `executor` through [`Script::commands`]; the
    /// host answers on [`Script::done`] once the script ends. An error (the message as the
    /// receipt shows it) when it cannot start at all.
    fn start(&self, executor: Executor, script: Script) -> Result<(), String>;
}

/// The language a script speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// moonpilot's own Lua API (`page`, `browser`): the script's return value is the answer.
    #[default]
    Moonpilot,
    /// Splash's (`function main(splash, args)`): the host loads its `splash` object, calls
    /// `main`, and answers `{value | binary, status, content_type, headers}`.
    Splash,
}

/// One script to run for a running command on `task`.
pub struct Script {
    /// The task the script's global `page` is bound to.
    pub task: TaskId,
    /// The script's file (its chunk name in errors).
    pub path: PathBuf,
    /// The script's text.
    pub source: String,
    /// `browser.args` (an object; anything else is an empty one).
    pub args: Value,
    /// The API it is written against.
    pub dialect: Dialect,
    /// Where the script's commands go, one at a time.
    pub commands: mpsc::UnboundedSender<ScriptCommand>,
    /// Set when the running command is gone (its task closed, its bound passed): the script
    /// must stop.
    pub stop: Arc<AtomicBool>,
    /// Where the script's end goes.
    pub done: oneshot::Sender<ScriptEnd>,
}

/// One command a script sent, with where its receipt goes.
pub struct ScriptCommand {
    /// The task it addresses, if any.
    pub task: Option<TaskId>,
    /// The command's name.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// Where its receipt goes.
    pub reply: oneshot::Sender<Receipt>,
}

/// What a caller asks to run: [`Executor::start_script`] makes the [`Script`] of it.
pub struct ScriptSource {
    /// The task the script's global `page` is bound to.
    pub task: TaskId,
    /// The script's file (its chunk name in errors).
    pub path: PathBuf,
    /// The script's text.
    pub source: String,
    /// `browser.args`.
    pub args: Value,
    /// The API it is written against.
    pub dialect: Dialect,
}

/// A started script: the commands it sends (for the caller to run and answer, one at a time)
/// and its end. Dropping it tells the script to stop.
pub struct RunningScript {
    /// The script's commands.
    pub commands: mpsc::UnboundedReceiver<ScriptCommand>,
    /// How it ended.
    pub done: oneshot::Receiver<ScriptEnd>,
    stop: Arc<AtomicBool>,
}

impl RunningScript {
    /// The script of `source` and the handle that runs it.
    pub(super) fn new(source: ScriptSource) -> (Script, RunningScript) {
        let (tx, commands) = mpsc::unbounded_channel::<ScriptCommand>();
        let (done_tx, done) = oneshot::channel::<ScriptEnd>();
        let stop = Arc::new(AtomicBool::new(false));
        let ScriptSource {
            task,
            path,
            source,
            args,
            dialect,
        } = source;
        let script = Script {
            task,
            path,
            source,
            args,
            dialect,
            commands: tx,
            stop: stop.clone(),
            done: done_tx,
        };
        (
            script,
            RunningScript {
                commands,
                done,
                stop,
            },
        )
    }
}

impl Drop for RunningScript {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How a script ended.
pub struct ScriptEnd {
    /// Its return value as JSON, or its error as text (file and line, no traceback).
    pub result: Result<Value, String>,
    /// The lines it printed.
    pub output: Vec<String>,
}

#[cfg(test)]
/// A host for unit tests of the executor: it runs no script.
pub(crate) struct NoRecipes;

#[cfg(test)]
impl RecipeHost for NoRecipes {
    fn start(&self, _executor: Executor, _script: Script) -> Result<(), String> {
        Err("no recipe host in this test".to_string())
    }
}
