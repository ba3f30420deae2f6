//! What a command is: its spec (plain data), its params, and the two contexts a handler runs in.
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

/// The JSON kind of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    String,
    /// An integer.
    Int,
    /// A number.
    Number,
    /// A boolean.
    Bool,
    /// An object.
    Object,
    /// An array.
    Array,
}

impl Kind {
    /// The catalogue's spelling (`string`, `int`, `number`, `bool`, `object`, `array`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Object => "object",
            Kind::Array => "array",
        }
    }
}

/// Whether a param's value may be written to the trace log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrecy {
    /// Written (after the trace's generic redaction of secret-looking keys and strings).
    Plain,
    /// Always masked (a password, a token).
    Always,
    /// Text typed into a field: masked when the receipt says the field was a password field
    /// (`data.password`), or when the command failed before it could tell.
    Typed,
}

/// One parameter of a command.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// The wire name, exactly as the catalogue spells it.
    pub name: &'static str,
    /// The JSON kind.
    pub kind: Kind,
    /// Whether the command fails without it.
    pub required: bool,
    /// The default as JSON text (`"true"`, `"5000"`, `"\"auto\""`), or `None`.
    pub default: Option<&'static str>,
    /// The legal range of a number, inclusive, checked by the executor.
    pub range: Option<(f64, f64)>,
    /// Whether the trace may show it.
    pub secrecy: Secrecy,
    /// Required, but its absence is answered by the handler, not by the executor's check (the
    /// batch's one-step form, where the params themselves are the step).
    pub absent_ok: bool,
    /// What it does.
    pub doc: &'static str,
}

impl ParamSpec {
    /// An optional param of `kind`.
    pub const fn new(name: &'static str, kind: Kind, doc: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            kind,
            required: false,
            default: None,
            range: None,
            secrecy: Secrecy::Plain,
            absent_ok: false,
            doc,
        }
    }

    /// Required.
    pub const fn req(mut self) -> Self {
        self.required = true;
        self
    }

    /// Required, with its absence answered by the handler (see [`ParamSpec::absent_ok`]).
    pub const fn absence_by_handler(mut self) -> Self {
        self.absent_ok = true;
        self
    }

    /// With a default, as JSON text.
    pub const fn or(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }

    /// Within `min..=max`.
    pub const fn range(mut self, min: f64, max: f64) -> Self {
        self.range = Some((min, max));
        self
    }

    /// With this secrecy.
    pub const fn secret(mut self, secrecy: Secrecy) -> Self {
        self.secrecy = secrecy;
        self
    }

    /// The default as a JSON value (`null` when none).
    pub fn default_value(&self) -> Value {
        self.default
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(Value::Null)
    }

    /// Checks the value `params` carries for this param against its kind and range, by the
    /// params reader's own coercions (numeric strings for numbers, `"true"`/`"false"` for
    /// booleans, numbers for strings, a blank string as an absent integer); `null` is absent.
    /// Reads nothing: the handler's reads are what `unknownParams` is computed from.
    pub fn check(&self, params: &Params) -> Result<(), CommandError> {
        use crate::protocol::params::{coerce, wrong_type};
        let name = self.name;
        let value = match params.raw().get(name) {
            None | Some(Value::Null) if self.required && !self.absent_ok => {
                return Err(params.missing(name))
            }
            None | Some(Value::Null) => return Ok(()),
            Some(v) => v,
        };
        let (fits, number) = match self.kind {
            Kind::String => (coerce::string(value).is_some(), None),
            Kind::Int => match coerce::int(value) {
                Some(n) => (true, n.map(|n| n as f64)),
                None => (false, None),
            },
            Kind::Number => match coerce::number(value) {
                Some(n) => (true, Some(n)),
                None => (false, None),
            },
            Kind::Bool => (coerce::boolean(value).is_some(), None),
            Kind::Object => (value.is_object(), None),
            Kind::Array => (coerce::array(value).is_some(), None),
        };
        if !fits {
            let expected = match self.kind {
                Kind::String => "string",
                Kind::Int => "integer",
                Kind::Number => "number",
                Kind::Bool => "boolean",
                Kind::Object => "object",
                Kind::Array => "array",
            };
            return Err(wrong_type(name, expected, value));
        }
        if let (Some((min, max)), Some(n)) = (self.range, number) {
            if n < min || n > max {
                // The side that was crossed, then the whole range when both ends are finite.
                let side = if n < min {
                    format!(">= {min}")
                } else {
                    format!("<= {max}")
                };
                let range = if min.is_finite() && max.is_finite() {
                    format!(" (range {min}..={max})")
                } else {
                    String::new()
                };
                return Err(CommandError::invalid(
                    name,
                    format!("param `{name}`: must be {side}, got {n}{range}"),
                ));
            }
        }
        Ok(())
    }
}

/// A string param.
pub const fn string(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::String, doc)
}

/// An integer param.
pub const fn int(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Int, doc)
}

/// A number param.
pub const fn number(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Number, doc)
}

/// A boolean param.
pub const fn boolean(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Bool, doc)
}

/// An object param.
pub const fn object(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Object, doc)
}

/// An array param.
pub const fn array(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, Kind::Array, doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: &ParamSpec, value: Value) -> Result<(), CommandError> {
        p.check(&Params::new(json!({ p.name: value })).unwrap())
    }

    #[test]
    fn params_are_checked_by_kind_and_range() {
        let index = int("index", "i").req().range(0.0, f64::INFINITY);
        assert!(check(&index, json!(3)).is_ok());
        assert!(check(&index, json!("3")).is_ok());
        let e = index.check(&Params::default()).unwrap_err();
        assert_eq!(e.msg, "missing parameter `index`");
        let e = check(&index, json!(-1)).unwrap_err();
        assert_eq!(e.msg, "param `index`: must be >= 0, got -1");
        // Issue 10 #12: a value that can never succeed is refused, naming the range.
        let seconds = int("seconds", "s").req().range(1.0, 899.0);
        let e = check(&seconds, json!(1e12)).unwrap_err();
        assert_eq!(e.code, crate::protocol::ErrorCode::InvalidArgument);
        assert_eq!(
            e.msg,
            "param `seconds`: must be <= 899, got 1000000000000 (range 1..=899)"
        );
        let poll = int("timeoutSeconds", "t").range(f64::NEG_INFINITY, 899.0);
        assert!(check(&poll, json!(-5)).is_ok());
        assert_eq!(
            check(&poll, json!(900)).unwrap_err().msg,
            "param `timeoutSeconds`: must be <= 899, got 900"
        );
        let e = check(&index, json!(1.5)).unwrap_err();
        assert!(e.msg.contains("expected integer, got number"), "{}", e.msg);
        let e = check(&index, json!({})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("index"));
        // The reader's own rules: what it refuses, the check refuses.
        assert!(check(&index, json!("3.0")).is_err());
        assert!(check(&int("n", "n"), json!(1e20)).is_err());
        assert!(check(&number("x", "x"), json!("")).is_err());
        let flag = boolean("inline", "b");
        assert!(check(&flag, json!("true")).is_ok());
        assert!(check(&flag, json!(1)).is_err());
        assert!(check(&flag, Value::Null).is_ok());
        assert!(check(&array("steps", "a"), json!({})).is_ok());
        assert!(check(&array("steps", "a"), json!({"a": 1})).is_err());
        assert!(check(&string("url", "u"), json!(true)).is_err());
        let page_index = int("pageIndex", "p").req();
        let e = page_index
            .check(&Params::new(json!({"index": 1})).unwrap())
            .unwrap_err();
        assert!(e.msg.contains("this parameter is `pageIndex`"), "{}", e.msg);
    }
}
