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
//! **Recipe scripts.** A script runs in the recipe host the executor was built with
//! (`recipe_host.rs`; the Lua bridge's runs it on a thread of its own); every command it sends
//! comes back over a channel to the running command's future, which executes it here — on the
//! caller's runtime, inside the caller's lane — and answers it. The script is told to stop when
//! that future is dropped (its task closed, its bound passed).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::recipe_host::{ScriptEnd, ScriptSource};
use super::Executor;
use crate::browser::task::TaskId;
use crate::command::{Calls, CommandFuture, ReceiptFuture};
use crate::error::CommandError;
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
        Box::pin(async move { this.run_script(path, args).await })
    }
}

impl Nested {
    async fn run_script(&self, path: PathBuf, args: Value) -> Result<Value, CommandError> {
        let source = tokio::fs::read_to_string(&path).await.map_err(|e| {
            CommandError::failed(format!("cannot read the script `{}`: {e}", path.display()))
        })?;
        let started = self.executor.start_script(ScriptSource {
            task: self.within.task,
            path: path.clone(),
            source,
            args,
            dialect: super::Dialect::Moonpilot,
        });
        let mut running = match started {
            Ok(r) => r,
            Err(msg) => return Err(CommandError::new(ErrorCode::Internal, msg)),
        };
        // One command at a time, in the order the script sends them: its task's commands share
        // this command's lane, so they must not run side by side.
        loop {
            tokio::select! {
                biased;
                Some(req) = running.commands.recv() => {
                    let receipt = self.answer(req.task, &req.method, req.params).await;
                    let _ = req.reply.send(receipt);
                }
                done = &mut running.done => {
                    return match done {
                        Ok(ScriptEnd { result: Ok(value), output }) => Ok(serde_json::json!({"value": value, "output": output})),
                        Ok(ScriptEnd { result: Err(msg), output }) => Err(CommandError::failed(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig};

    #[test]
    fn a_background_call_keeps_the_nesting_depth_and_no_lane() {
        let ex = Executor::bare(Engine::new(EngineConfig::default()));
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
