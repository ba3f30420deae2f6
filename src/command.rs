//! What a command is: its spec (plain data), its params (`command/param.rs`, below the engine
//! so the trace can read their secrecy), and the two contexts a handler runs in.
//!
//! This module sits below both the registry and `commands/`: it imports neither, so a command
//! file needs nothing but this module, the browser types and the params reader. Every fact the
//! executor, the trace or a host acts on (lane, capture, retry safety, secret params, whether the
//! command opens a task) is a field here; nothing outside a command's own file switches on its
//! name.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::browser::task::{Task, TaskId};
use crate::browser::Tab;
use crate::engine::Engine;
use crate::error::CommandError;
use crate::protocol::{Params, Receipt};

pub mod param;
pub use param::{array, boolean, int, number, object, string, Kind, ParamSpec, Secrecy};

/// The future a handler returns once its params are read.
pub type CommandFuture = Pin<Box<dyn Future<Output = Result<Value, CommandError>> + Send>>;

/// The work of a command once its params are read: given its context, the future that runs it.
pub type Run<C> = Box<dyn FnOnce(C) -> CommandFuture + Send>;

/// What a handler's synchronous half answers: the work to run, or why the params are refused.
pub type Prepared<C> = Result<Run<C>, CommandError>;

/// Wraps the async half of a handler: `run(move |cx| async move { ... })`.
pub fn run<C, F, Fut>(work: F) -> Prepared<C>
where
    F: FnOnce(C) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Value, CommandError>> + Send + 'static,
{
    Ok(Box::new(move |cx| Box::pin(work(cx))))
}

/// The future of one more command sent through the executor.
pub type ReceiptFuture = Pin<Box<dyn Future<Output = Receipt> + Send>>;

/// How a running command sends further commands through the executor's whole pipeline (params
/// check, retries, capture, `unknownParams`, page context, trace): a batch's steps, a recipe's
/// script, a background job. The executor hands each task command one, scoped to its task.
pub trait Calls: Send + Sync {
    /// `method` on the running command's own task, inside the lane the running command holds
    /// (a batch step): it never waits for that lane, so a batch cannot block on itself.
    fn step(&self, method: &str, params: Value) -> ReceiptFuture;
    /// `method` as an independent call on `task`, queued behind the task's lane like any
    /// caller's: background work that outlives the running command (an async batch).
    fn detached(&self, task: Option<TaskId>, method: &str, params: Value) -> ReceiptFuture;
    /// Runs the Lua script at `path` with `args` as `browser.args` and the global `page` bound
    /// to the running command's task (its commands on that task are steps); answers
    /// `{value, output}`: the script's return value as JSON and the lines it printed. A Lua
    /// error is an `ACTION_FAILED` naming its line (`output` in its details).
    fn script(&self, path: std::path::PathBuf, args: Value) -> CommandFuture;
    /// Whether the running command itself runs inside a lane held by the command that sent it
    /// (a recipe's or a batch's call on their own task): work it leaves behind to take that
    /// lane later (an async batch) would wait for its own sender.
    fn in_inherited_lane(&self) -> bool {
        false
    }
}

/// The context of a command on one task: the task is always there.
#[derive(Clone)]
pub struct TaskCx {
    /// The engine.
    pub engine: Arc<Engine>,
    /// The task the command addresses.
    pub task: Arc<Task>,
    /// The spec of the running command.
    pub spec: &'static CommandSpec,
    /// When the executor stops waiting for this command (its bound). Work that runs inside
    /// the page and cannot be cancelled from here (the snapshot reader) is given the time
    /// left, so it never outlives the command.
    pub deadline: std::time::Instant,
    /// Further commands of this one (see [`Calls`]).
    pub calls: Arc<dyn Calls>,
    /// The door the command came through: what its file and URL params may touch.
    pub trust: Arc<crate::door::Trust>,
}

impl TaskCx {
    /// The task's current tab.
    pub fn tab(&self) -> Result<Arc<Tab>, CommandError> {
        self.task.tab()
    }
}

/// The context of an engine command (no task needed; `start` gets the envelope's id).
#[derive(Clone)]
pub struct Cx {
    /// The engine.
    pub engine: Arc<Engine>,
    /// The envelope's task id, if any.
    pub task_id: Option<TaskId>,
    /// The live task that id names, if any.
    pub task: Option<Arc<Task>>,
    /// The spec of the running command.
    pub spec: &'static CommandSpec,
    /// The door the command came through: what its file and URL params may touch.
    pub trust: Arc<crate::door::Trust>,
}

/// A handler: reads and checks its params synchronously (no context, so nothing can touch the
/// browser before the work is run), then returns the work.
#[derive(Clone, Copy)]
pub enum Handler {
    /// A command on one task (a `Task` method in Lua).
    Task(fn(&mut Params) -> Prepared<TaskCx>),
    /// A command of the engine.
    Engine(fn(&mut Params) -> Prepared<Cx>),
}

/// The catalogue's groups (`spec/COMMANDS.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Group {
    Lifecycle,
    Navigation,
    PageState,
    InteractIndex,
    ReadElement,
    Locate,
    Tabs,
    Wait,
    Mouse,
    Capture,
    Storage,
    Settings,
    Dialogs,
    Modals,
    Console,
    Network,
    Human,
    ExtractJs,
    Meta,
    Jobs,
    Recipes,
}

impl Group {
    /// The catalogue's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Lifecycle => "lifecycle",
            Group::Navigation => "navigation",
            Group::PageState => "page_state",
            Group::InteractIndex => "interact_index",
            Group::ReadElement => "read_element",
            Group::Locate => "locate",
            Group::Tabs => "tabs",
            Group::Wait => "wait",
            Group::Mouse => "mouse",
            Group::Capture => "capture",
            Group::Storage => "storage",
            Group::Settings => "settings",
            Group::Dialogs => "dialogs",
            Group::Modals => "modals",
            Group::Console => "console",
            Group::Network => "network",
            Group::Human => "human",
            Group::ExtractJs => "extract_js",
            Group::Meta => "meta",
            Group::Jobs => "jobs",
            Group::Recipes => "recipes",
        }
    }

    /// A task command that reads: changes nothing, safe to resend, no screenshot after it.
    pub const fn read(
        self,
        name: &'static str,
        handler: fn(&mut Params) -> Prepared<TaskCx>,
    ) -> CommandSpec {
        CommandSpec::new(name, self, Handler::Task(handler))
    }

    /// A task command that acts on the page: may change it, never resent, screenshot after it.
    pub const fn action(
        self,
        name: &'static str,
        handler: fn(&mut Params) -> Prepared<TaskCx>,
    ) -> CommandSpec {
        CommandSpec::new(name, self, Handler::Task(handler))
            .mutates(true)
            .retry_safe(false)
            .capture()
    }

    /// A task command that moves the page and is safe to resend (a navigation): may change
    /// the page, screenshot after it. The engine never resends it by itself (it may follow an
    /// action); callers may.
    pub const fn navigating(
        self,
        name: &'static str,
        handler: fn(&mut Params) -> Prepared<TaskCx>,
    ) -> CommandSpec {
        CommandSpec::new(name, self, Handler::Task(handler))
            .mutates(true)
            .capture()
    }

    /// An engine command: no task, changes no page, safe to resend.
    pub const fn engine(
        self,
        name: &'static str,
        handler: fn(&mut Params) -> Prepared<Cx>,
    ) -> CommandSpec {
        CommandSpec::new(name, self, Handler::Engine(handler))
    }
}

/// Whether a command waits for its task's lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// One at a time per task, behind a bounded wait (PROTOCOL.md §4.1).
    Queued,
    /// Beside whatever holds the lane: it never touches the page, or it is how a running command
    /// is stopped (`close`).
    Free,
}

/// What a successful run of a command creates, named by an id in its receipt's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opens {
    /// Nothing.
    Nothing,
    /// A task, `data.id` (`start`): `browser.start{id=N}` with N alive takes N over instead.
    Task,
    /// A human-input request, `data.requestId`: a Lua state withdraws the ones it opened when
    /// its run is over.
    HumanRequest,
}

/// One command: plain data plus its handler.
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// The wire name.
    pub name: &'static str,
    /// The catalogue group.
    pub group: Group,
    /// One line of at most 79 columns.
    pub summary: &'static str,
    /// The long text.
    pub doc: &'static str,
    /// The parameters.
    pub params: &'static [ParamSpec],
    /// The command may change the page.
    pub mutates_page: bool,
    /// Resending after a transient failure is safe.
    pub retry_safe: bool,
    /// A screenshot follows a successful run (PROTOCOL.md §8).
    pub auto_capture: bool,
    /// The command gets the long (15 min) bound instead of 90 s.
    pub long_running: bool,
    /// Queued behind the task's lane, or beside it.
    pub lane: Lane,
    /// A way out (`close`, `shutdown`): never refused for overload, never cancelled by its
    /// task's closing, and it stops the browser itself (browser death is no failure for it).
    pub way_out: bool,
    /// What a successful run creates, named by an id in its data (hosts track those).
    pub opens: Opens,
    /// The name this command is a synonym of.
    pub alias_of: Option<&'static str>,
    /// A Lua snippet showing a call.
    pub example: &'static str,
    /// The handler.
    pub handler: Handler,
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSpec")
            .field("name", &self.name)
            .finish()
    }
}

/// A synonym of `spec` under another name (the same params, flags, docs and handler).
pub const fn alias(spec: &CommandSpec, name: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        alias_of: Some(spec.name),
        ..*spec
    }
}

impl CommandSpec {
    /// The read-only defaults; the presets on [`Group`] start from here.
    const fn new(name: &'static str, group: Group, handler: Handler) -> CommandSpec {
        CommandSpec {
            name,
            group,
            summary: "",
            doc: "",
            params: &[],
            mutates_page: false,
            retry_safe: true,
            auto_capture: false,
            long_running: false,
            lane: Lane::Queued,
            way_out: false,
            opens: Opens::Nothing,
            alias_of: None,
            example: "",
            handler,
        }
    }

    /// With its one-line summary (at most 79 columns).
    pub const fn summary(mut self, summary: &'static str) -> Self {
        self.summary = summary;
        self
    }

    /// With its long text.
    pub const fn doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }

    /// With its params.
    pub const fn params(mut self, params: &'static [ParamSpec]) -> Self {
        self.params = params;
        self
    }

    /// With its Lua example.
    pub const fn example(mut self, example: &'static str) -> Self {
        self.example = example;
        self
    }

    /// Whether it may change the page.
    pub const fn mutates(mut self, yes: bool) -> Self {
        self.mutates_page = yes;
        self
    }

    /// Whether resending is safe.
    pub const fn retry_safe(mut self, yes: bool) -> Self {
        self.retry_safe = yes;
        self
    }

    /// Followed by a screenshot.
    pub const fn capture(mut self) -> Self {
        self.auto_capture = true;
        self
    }

    /// Not followed by a screenshot.
    pub const fn no_capture(mut self) -> Self {
        self.auto_capture = false;
        self
    }

    /// Bounded by the long (15 min) timeout.
    pub const fn long(mut self) -> Self {
        self.long_running = true;
        self
    }

    /// Runs beside the task's lane.
    pub const fn lane_free(mut self) -> Self {
        self.lane = Lane::Free;
        self
    }

    /// A way out (see [`CommandSpec::way_out`]).
    pub const fn way_out(mut self) -> Self {
        self.way_out = true;
        self
    }

    /// What a successful run creates.
    pub const fn opens(mut self, opens: Opens) -> Self {
        self.opens = opens;
        self
    }

    /// The command addresses one task (a `Task` method in Lua).
    pub fn needs_task(&self) -> bool {
        matches!(self.handler, Handler::Task(_))
    }

    /// The spec as JSON for `methods --json` and help.
    pub fn to_json(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "type": p.kind.as_str(),
                    "required": p.required,
                    "default": p.default_value(),
                    "doc": p.doc,
                })
            })
            .collect();
        json!({
            "name": self.name,
            "group": self.group.as_str(),
            "summary": self.summary,
            "needsTask": self.needs_task(),
            "mutatesPage": self.mutates_page,
            "retrySafe": self.retry_safe,
            "autoCapture": self.auto_capture,
            "longRunning": self.long_running,
            "aliasOf": self.alias_of,
            "params": params,
            "example": self.example,
        })
    }

    /// The param named `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}
