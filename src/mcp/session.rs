//! One MCP session: its task, its tool calls, `run_lua`, evidence as resources.
//!
//! **The task.** A session opens its task on the first tool call that needs a page (`start`
//! with a fresh id) and closes it when the session ends ([`Session::close`] from the stdio host,
//! or the drop of the last handle when the HTTP session manager lets the session go). A task
//! closed meanwhile (`close`, the browser gone) is opened afresh by the next call.
//!
//! **A call.** Arguments are checked against the tool's schema by name first (an unknown name is
//! a tool error naming it, so the model can correct itself); types and ranges are the
//! executor's check, whose INVALID_ARGUMENT names the param. A failed command is a tool result
//! with `isError`, never a JSON-RPC error; an unknown tool is the JSON-RPC error the
//! specification names (-32602). Long commands send progress while they run (when the client
//! asked for it with a progress token); a cancelled request drops the command's future, which
//! the executor's commands are built to survive (a client that hangs up over HTTP does the
//! same).
//!
//! **Human input.** `request_human_input` and `ask_user` create their request as over HTTP;
//! where the client offers form elicitation, the session then asks the person through it and
//! submits the answer (`submit_human_input`), so the tool result already holds it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use super::result::{self, Image};
use super::tools::{self, Selection, RUN_LUA};
use crate::browser::task::TaskId;
use crate::executor::{ScriptEnd, ScriptSource};
use crate::{ErrorCode, Executor, Receipt};

/// How often a long command reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// `run_lua`'s bound when the call names none, and its largest.
const RUN_LUA_DEFAULT: f64 = 300.0;
const RUN_LUA_MAX: f64 = 900.0;
/// The scheme of evidence resources: `moonpilot://evidence/<task>/<file>`.
const RESOURCE_PREFIX: &str = "moonpilot://evidence/";
/// Most resources listed (the newest first).
const MAX_RESOURCES: usize = 200;

/// What a session offers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// Which catalogue commands are tools.
    pub tools: Selection,
    /// After a successful command that may change the page, read the page again and give the
    /// observation with the result (as `@playwright/mcp` gives its snapshot), so the next step
    /// needs no separate read.
    pub observe_after_actions: bool,
    /// `--allow-unrestricted-file-access`: file params and `file:` URLs reach any file, not
    /// only the client's workspace roots and the state directory.
    pub unrestricted_files: bool,
    /// What each session's task is started with (`--proxy-server`, `--user-agent`,
    /// `--locale`, `--timezone`: `start`'s identity params).
    pub start: serde_json::Map<String, Value>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            tools: Selection::default(),
            observe_after_actions: true,
            unrestricted_files: false,
            start: serde_json::Map::new(),
        }
    }
}

/// How long a session waits for the client's `roots/list` answer.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// One MCP session: a cheap clone handle (the HTTP transport clones its handler).
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    /// The executor, held to MCP's rules with the working directory as the only root (the
    /// session's engine work; a call runs through [`Session::trusted`]).
    executor: Executor,
    /// `--allow-unrestricted-file-access`.
    unrestricted: bool,
    /// The client's workspace roots, once asked (`None`: ask at the next call; a
    /// `notifications/roots/list_changed` clears them).
    roots: Mutex<Option<Vec<PathBuf>>>,
    selection: Selection,
    observe: bool,
    /// `start`'s params for the session's task (`McpOptions::start`).
    start: serde_json::Map<String, Value>,
    /// The tool list, built once.
    tools: Vec<Value>,
    /// The session's task, once opened.
    task: tokio::sync::Mutex<Option<TaskId>>,
    /// The same id, readable without waiting (for the drop).
    opened: Mutex<Option<TaskId>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let Some(id) = self.opened.lock().ok().and_then(|mut t| t.take()) else {
            return;
        };
        // The last handle went (the HTTP session ended): close the task on the runtime.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let executor = self.executor.clone();
            rt.spawn(async move {
                close_task(&executor, id).await;
            });
        }
    }
}

/// MCP's rules over `executor`'s engine: `roots`, and the engine's data and upload
/// directories.
fn mcp_trust(executor: &Executor, roots: &[PathBuf], unrestricted: bool) -> crate::door::Trust {
    let config = &executor.engine().config;
    let engine = [config.data_dir.clone(), config.upload_dir.clone()];
    crate::door::Trust::mcp(roots, unrestricted, &engine)
}

/// The client's workspace roots as directories (none when it offers no roots, or does not
/// answer within [`ROOTS_WAIT`]). Roots are deprecated by SEP-2577, but the clients of
/// 2025-11-25 (and @playwright/mcp's rule this follows) use them.
#[allow(deprecated)]
async fn client_roots(peer: &Peer<RoleServer>) -> Vec<PathBuf> {
    let offers = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !offers {
        return Vec::new();
    }
    match tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await {
        Ok(Ok(list)) => list
            .roots
            .iter()
            .filter_map(|root| url::Url::parse(&root.uri).ok()?.to_file_path().ok())
            .collect(),
        Ok(Err(e)) => {
            tracing::debug!("mcp: roots/list failed: {e}");
            Vec::new()
        }
        Err(_) => {
            tracing::debug!("mcp: roots/list got no answer in time");
            Vec::new()
        }
    }
}

async fn close_task(executor: &Executor, id: TaskId) {
    executor.close_if_alive(id, "mcp").await;
}

/// Whether a client-side progress token was given, and where progress goes.
struct Progress {
    peer: Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
}

impl Progress {
    fn of(context: &RequestContext<RoleServer>) -> Option<Progress> {
        context.meta.get_progress_token().map(|token| Progress {
            peer: context.peer.clone(),
            token,
        })
    }

    async fn send(&self, progress: f64, message: String) {
        let param =
            ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!("mcp: progress not sent: {e}");
        }
    }
}

/// A log line to the client (`notifications/message`); a client that set no level gets it too.
async fn log(peer: &Peer<RoleServer>, level: &str, data: Value) {
    let param =
        serde_json::from_value(json!({"level": level, "logger": "moonpilot", "data": data}));
    if let Ok(param) = param {
        #[allow(deprecated)] // Logging is what the issue asks for; the SDK still sends it.
        let sent = peer.notify_logging_message(param).await;
        if let Err(e) = sent {
            tracing::debug!("mcp: log message not sent: {e}");
        }
    }
}

fn tool_result(value: Value) -> Result<CallToolResponse, McpError> {
    serde_json::from_value::<CallToolResult>(value)
        .map(Into::into)
        .map_err(|e| {
            McpError::internal_error(format!("a tool result that does not serialise: {e}"), None)
        })
}

/// A tool error that is not a receipt (bad arguments caught before the command).
fn argument_error(tool: &str, msg: String) -> Result<CallToolResponse, McpError> {
    let structured = json!({"ok": false, "code": ErrorCode::InvalidArgument.as_str(), "msg": msg,
        "retryable": false, "started": false, "method": tool});
    tool_result(result::call_tool_result(
        format!("{tool} failed: INVALID_ARGUMENT: {msg} (not retryable; it did not start)"),
        &[],
        &[],
        structured,
        true,
    ))
}

impl Session {
    /// Why the session does not run `method` on `task` for a script or a batch step, if it
    /// does not: an engine-wide command (unless the server was started with `--tools engine`),
    /// or a task other than the session's own (a session never drives another's tabs).
    fn refusal(&self, task: Option<TaskId>, method: &str) -> Option<String> {
        let engine_wide = crate::commands::registry()
            .lookup(method)
            .is_some_and(tools::is_engine_command);
        if engine_wide && !self.inner.selection.allows_engine() {
            return Some(format!(
                "{method} acts on the whole engine (every session's tasks): not available over \
                 MCP unless the server was started with --tools engine"
            ));
        }
        match task {
            Some(t) if Some(t) != self.task() => Some(format!(
                "task {t} is not this MCP session's: a session drives only its own task"
            )),
            _ => None,
        }
    }

    /// A session over `executor` offering `options`.
    pub fn new(executor: Executor, options: &McpOptions) -> Session {
        let executor = executor.through(mcp_trust(&executor, &[], options.unrestricted_files));
        Session {
            inner: Arc::new(Inner {
                executor,
                unrestricted: options.unrestricted_files,
                roots: Mutex::new(None),
                selection: options.tools.clone(),
                observe: options.observe_after_actions,
                start: options.start.clone(),
                tools: tools::tools(&options.tools),
                task: tokio::sync::Mutex::new(None),
                opened: Mutex::new(None),
            }),
        }
    }

    /// The executor a call of this session runs on: held to MCP's file rule with the client's
    /// workspace roots (asked once, again after the client says they changed), or the working
    /// directory when the client offers none.
    async fn trusted(&self, peer: &Peer<RoleServer>) -> Executor {
        let known = self.inner.roots.lock().ok().and_then(|r| r.clone());
        let roots = match known {
            Some(roots) => roots,
            None => {
                let roots = client_roots(peer).await;
                if let Ok(mut slot) = self.inner.roots.lock() {
                    *slot = Some(roots.clone());
                }
                roots
            }
        };
        let executor = &self.inner.executor;
        executor.through(mcp_trust(executor, &roots, self.inner.unrestricted))
    }

    /// The message for a tool this session does not list: a command left out of `--tools`
    /// says how to reach it; another name gets the listed tools nearest to it.
    fn unknown_tool(&self, name: &str) -> String {
        let registry = crate::commands::registry();
        if let Some(spec) = registry.lookup(name) {
            let how = if spec.needs_task() {
                format!("or call it from run_lua (`page:{name}{{…}}`)")
            } else {
                format!("or call it from run_lua (`browser.call(\"{name}\", {{…}})`)")
            };
            return format!(
                "Unknown tool: {name}. `{name}` is a moonpilot command this server does not list: start it with `--tools all` (or add `{name}` to --tools), {how}"
            );
        }
        let listed = registry
            .all()
            .iter()
            .filter(|s| self.inner.selection.includes(s))
            .map(|s| s.name)
            .chain(std::iter::once(RUN_LUA));
        let near = crate::registry::suggest_among(name, listed);
        if near.is_empty() {
            format!("Unknown tool: {name} (tools/list names the tools)")
        } else {
            let near: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
            format!("Unknown tool: {name}. Did you mean {}?", near.join(", "))
        }
    }

    /// The session's task, if it opened one.
    pub fn task(&self) -> Option<TaskId> {
        self.inner.opened.lock().ok().and_then(|t| *t)
    }

    /// Closes the session's task (the session ended).
    pub async fn close(&self) {
        // The task slot first: a `start` in flight finishes before the id is taken.
        let mut slot = self.inner.task.lock().await;
        *slot = None;
        let id = self.inner.opened.lock().ok().and_then(|mut t| t.take());
        drop(slot);
        if let Some(id) = id {
            close_task(&self.inner.executor, id).await;
        }
    }

    /// The session's live task, opened now if there is none (the `start` receipt when that
    /// fails).
    async fn live_task(&self) -> Result<TaskId, Receipt> {
        let mut slot = self.inner.task.lock().await;
        if let Some(id) = *slot {
            if self.inner.executor.engine().task(id).is_some() {
                return Ok(id);
            }
        }
        let id = TaskId::generate();
        let params = Value::Object(self.inner.start.clone());
        let receipt = self.inner.executor.execute(Some(id), "start", params).await;
        if !receipt.ok {
            return Err(receipt);
        }
        *slot = Some(id);
        if let Ok(mut opened) = self.inner.opened.lock() {
            *opened = Some(id);
        }
        Ok(id)
    }

    /// Runs `method` for this session, with progress for a long command and cancellation.
    async fn run(
        &self,
        method: &str,
        params: Value,
        needs_task: bool,
        long: bool,
        context: &RequestContext<RoleServer>,
    ) -> Receipt {
        let task = if needs_task {
            match self.live_task().await {
                Ok(id) => Some(id),
                Err(receipt) => return receipt,
            }
        } else {
            None
        };
        let executor = self.trusted(&context.peer).await;
        let work = executor.execute(task, method, params);
        let progress = if long { Progress::of(context) } else { None };
        let ticker = async {
            let Some(p) = progress.as_ref() else {
                return std::future::pending::<()>().await;
            };
            let t0 = Instant::now();
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                let s = t0.elapsed().as_secs_f64().round();
                p.send(s, format!("{method}: running for {s} s")).await;
            }
        };
        tokio::select! {
            receipt = work => receipt,
            _ = ticker => unreachable_receipt(method),
            _ = context.ct.cancelled() => cancelled(method),
        }
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.clone().unwrap_or_default();
        if name == RUN_LUA {
            return self.run_lua(args, &context).await;
        }
        let registry = crate::commands::registry();
        let Some(spec) = registry
            .lookup(&name)
            .filter(|s| self.inner.selection.includes(s))
        else {
            return Err(McpError::invalid_params(
                self.unknown_tool(&name),
                Some(json!({"tool": name})),
            ));
        };
        if let Some(unknown) = args.keys().find(|k| spec.param(k).is_none()) {
            let known: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
            let msg = if known.is_empty() {
                format!("`{unknown}` is not a parameter of {name}: it takes none")
            } else {
                format!(
                    "`{unknown}` is not a parameter of {name}; its parameters are {}",
                    known.join(", ")
                )
            };
            return argument_error(&name, msg);
        }
        if spec.name == "commands" {
            if let Some(msg) = self.batch_refusal(&args) {
                return argument_error(spec.name, msg);
            }
        }
        let receipt = self
            .run(
                spec.name,
                Value::Object(args.clone()),
                spec.needs_task(),
                spec.long_running || spec.group == crate::command::Group::Navigation,
                &context,
            )
            .await;
        if receipt.ok && matches!(spec.name, "request_human_input" | "ask_user") {
            if let Some(answered) = self.elicit(&receipt, &args, &context).await {
                return self.answer(spec.name, answered, spec.mutates_page).await;
            }
        }
        if !receipt.ok {
            log(
                &context.peer,
                "warning",
                json!({"method": spec.name, "code": receipt.code.map(|c| c.as_str()), "msg": receipt.msg}),
            )
            .await;
        }
        let after = if receipt.ok && spec.mutates_page && spec.needs_task() && self.inner.observe {
            self.observe_now().await
        } else {
            None
        };
        self.answer_with(spec.name, receipt, spec.mutates_page, after)
            .await
    }

    /// The observation of the session's page now (a state read, which also renews the index
    /// the *_by_index tools take), or None when the read fails.
    async fn observe_now(&self) -> Option<String> {
        let task = self.task()?;
        let receipt = self
            .inner
            .executor
            .execute(
                Some(task),
                "get_browser_state",
                json!({"includeElements": false}),
            )
            .await;
        receipt.ok.then(|| result::text(&receipt, false))
    }

    /// Why a `commands` batch is refused before it runs: `async` (its job would be polled with
    /// engine-wide commands), or a step the session does not run.
    fn batch_refusal(&self, args: &Map<String, Value>) -> Option<String> {
        if args.get("async").and_then(Value::as_bool) == Some(true) {
            return Some(
                "`async` is not available over MCP: run the batch as it is (progress is sent \
                 while it runs), or as a run_lua script"
                    .into(),
            );
        }
        let steps = args.get("commands")?.as_array()?;
        for (i, step) in steps.iter().enumerate() {
            let Some(obj) = step.as_object() else {
                continue;
            };
            for method in obj.keys().filter(|k| k.as_str() != "expect") {
                if let Some(why) = self.refusal(None, method) {
                    return Some(format!("`commands` step {i}: {why}"));
                }
            }
        }
        None
    }

    /// The tool result of `receipt`: text, images (a screenshot's file, an inline image), the
    /// evidence as a resource link, the receipt as structured content.
    async fn answer(
        &self,
        method: &str,
        receipt: Receipt,
        mutates: bool,
    ) -> Result<CallToolResponse, McpError> {
        self.answer_with(method, receipt, mutates, None).await
    }

    /// [`Session::answer`] with the observation of the page after the command.
    async fn answer_with(
        &self,
        method: &str,
        receipt: Receipt,
        mutates: bool,
        after: Option<String>,
    ) -> Result<CallToolResponse, McpError> {
        let mut images: Vec<Image> = Vec::new();
        if receipt.ok {
            if let Some(img) = result::inline_image(&receipt.data) {
                images.push(img);
            } else if matches!(method, "screenshot" | "get_element_screenshot") {
                if let Some(img) = self.image_file(&receipt.data).await {
                    images.push(img);
                }
            }
        }
        let links = self.links(&receipt.data);
        let mut structured = result::structured(&receipt);
        if let Some(id) = self.task() {
            structured["task"] = json!(id.to_string());
        }
        let text = result::text_with_page(&receipt, mutates, after.as_deref());
        tool_result(result::call_tool_result(
            text,
            &images,
            &links,
            structured,
            !receipt.ok,
        ))
    }

    /// The image file a capture receipt names, read and encoded.
    async fn image_file(&self, data: &Value) -> Option<Image> {
        let path = data.get("path").and_then(Value::as_str)?;
        let mime = result::image_mime(path)?;
        let bytes = tokio::fs::read(path).await.ok()?;
        Some(Image {
            data: crate::encoding::encode_base64(&bytes),
            mime: mime.to_string(),
        })
    }

    /// Resource links for the evidence files a receipt names (inside the task's data dir).
    fn links(&self, data: &Value) -> Vec<Value> {
        let root = &self.inner.executor.engine().config.data_dir;
        let mut out = Vec::new();
        for key in ["screenshot", "state_file", "screenshot_path"] {
            let Some(path) = data.get(key).and_then(Value::as_str) else {
                continue;
            };
            // A file of the data dir, by its path or by its `/data/<task>/<file>` URL.
            let rel = match path.strip_prefix("/data/") {
                Some(rel) => PathBuf::from(rel),
                None => match Path::new(path).strip_prefix(root) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => continue,
                },
            };
            let uri = format!("{RESOURCE_PREFIX}{}", rel.display());
            if out.iter().any(|l: &Value| l["uri"] == json!(uri)) {
                continue;
            }
            let name = rel
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let mut link = json!({"type": "resource_link", "uri": uri, "name": name});
            if let Some(mime) = resource_mime(path) {
                link["mimeType"] = json!(mime);
            }
            out.push(link);
        }
        out
    }

    /// Asks the person through the client's form elicitation for the request `receipt`
    /// opened; answers the `get_human_input` receipt after submitting, or None where the
    /// client offers no form elicitation (or refuses the request).
    async fn elicit(
        &self,
        receipt: &Receipt,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Receipt> {
        let peer = &context.peer;
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return None;
        }
        let request_id = receipt.data.get("requestId")?.as_str()?.to_string();
        let (message, schema, single) = elicitation_form(&receipt.method, &receipt.data, args)?;
        let requested_schema: ElicitationSchema = serde_json::from_value(schema).ok()?;
        let seconds = receipt
            .data
            .get("expiresInSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(300)
            .max(1);
        let asked = peer.create_elicitation_with_timeout(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            },
            Some(Duration::from_secs(seconds)),
        );
        // The request stays open for as long as it lives; a cancelled call stops asking.
        let answer = tokio::select! {
            asked = asked => match asked {
                Ok(a) => a,
                Err(e) => {
                    let mut r = receipt.clone();
                    r.add_data_field(
                        "elicitation",
                        json!({"action": "unanswered", "note": format!("the client's form got no answer ({e}); the request stays pending: poll it with get_human_input")}),
                    );
                    return Some(r);
                }
            },
            _ = context.ct.cancelled() => return None,
        };
        let task = self.task();
        match answer.action {
            ElicitationAction::Accept => {
                let content = answer.content.unwrap_or(Value::Null);
                let params = match (&single, content) {
                    (Some(field), Value::Object(mut o)) => {
                        let v = o.remove(field).unwrap_or(json!(""));
                        json!({"requestId": request_id, "answer": as_answer(v)})
                    }
                    (None, Value::Object(o)) => {
                        let answers: Map<String, Value> = o.into_iter().collect();
                        json!({"requestId": request_id, "answers": answers})
                    }
                    _ => json!({"requestId": request_id, "answer": ""}),
                };
                let submitted = self
                    .inner
                    .executor
                    .execute(task, "submit_human_input", params)
                    .await;
                if !submitted.ok {
                    return Some(submitted);
                }
            }
            _ => {
                let mut r = receipt.clone();
                let what = if answer.action == ElicitationAction::Decline {
                    "declined"
                } else {
                    "dismissed"
                };
                r.add_data_field(
                    "elicitation",
                    json!({"action": what, "note": format!("the person {what} the request in the client; it stays pending")}),
                );
                return Some(r);
            }
        }
        let mut read = self
            .inner
            .executor
            .execute(task, "get_human_input", json!({"requestId": request_id}))
            .await;
        read.add_data_field("elicitation", json!({"action": "accepted"}));
        Some(read)
    }

    async fn run_lua(
        &self,
        args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let script = match args.get("script") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => {
                return argument_error(
                    RUN_LUA,
                    "`script` is required: the Lua source to run".into(),
                )
            }
            Some(_) => return argument_error(RUN_LUA, "`script` must be a string".into()),
        };
        if let Some(unknown) = args
            .keys()
            .find(|k| !matches!(k.as_str(), "script" | "args" | "timeoutSeconds"))
        {
            return argument_error(
                RUN_LUA,
                format!("`{unknown}` is not a parameter of run_lua; its parameters are script, args, timeoutSeconds"),
            );
        }
        let script_args = match args.get("args") {
            None | Some(Value::Null) => json!({}),
            Some(Value::Object(o)) => Value::Object(o.clone()),
            Some(_) => return argument_error(RUN_LUA, "`args` must be an object".into()),
        };
        let seconds = match args.get("timeoutSeconds") {
            None | Some(Value::Null) => RUN_LUA_DEFAULT,
            Some(v) => match v.as_f64() {
                Some(s) if (1.0..=RUN_LUA_MAX).contains(&s) => s,
                _ => {
                    return argument_error(
                        RUN_LUA,
                        format!("`timeoutSeconds` must be a number in 1..={RUN_LUA_MAX}"),
                    )
                }
            },
        };
        let task = match self.live_task().await {
            Ok(id) => id,
            Err(receipt) => return self.answer("start", receipt, false).await,
        };
        let ran = self
            .lua(
                task,
                script,
                script_args,
                Duration::from_secs_f64(seconds),
                context,
            )
            .await;
        let text = result::bounded(ran.text());
        let mut structured = ran.structured();
        structured["task"] = json!(task.to_string());
        if ran.error.is_some() {
            log(
                &context.peer,
                "error",
                json!({"tool": RUN_LUA, "error": ran.error}),
            )
            .await;
        }
        tool_result(result::call_tool_result(
            text,
            &[],
            &[],
            structured,
            ran.error.is_some(),
        ))
    }

    /// Runs `source` in the recipe host with `page` bound to `task`; each command it sends
    /// runs here, through the executor, and goes into the log.
    async fn lua(
        &self,
        task: TaskId,
        source: String,
        args: Value,
        bound: Duration,
        context: &RequestContext<RoleServer>,
    ) -> LuaRun {
        // The plan's commands, and the script's own state, are held to this door's rules.
        let executor = &self.trusted(&context.peer).await;
        let mut run = LuaRun::default();
        let started = executor.start_script(ScriptSource {
            task,
            path: PathBuf::from("run_lua"),
            source,
            args,
            dialect: crate::executor::Dialect::Moonpilot,
        });
        let mut running = match started {
            Ok(r) => r,
            Err(msg) => {
                run.error = Some(msg);
                return run;
            }
        };
        let progress = Progress::of(context);
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            tokio::select! {
                biased;
                _ = context.ct.cancelled() => {
                    run.error = Some("cancelled by the client".into());
                    run.cancelled = true;
                    return run;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    run.error = Some(format!("the script ran past its {} s bound and was stopped", bound.as_secs_f64()));
                    return run;
                }
                Some(req) = running.commands.recv() => {
                    let receipt = match self.refusal(req.task, &req.method) {
                        Some(why) => Receipt::failure(
                            &req.method,
                            ErrorCode::InvalidArgument,
                            format!("{}: {why}", req.method),
                            None,
                            false,
                            0.0,
                        ),
                        // The command itself stops with the call's cancellation or bound.
                        None => tokio::select! {
                            r = executor.execute(req.task, &req.method, req.params) => r,
                            _ = context.ct.cancelled() => {
                                run.error = Some(format!("cancelled by the client during {}", req.method));
                                run.cancelled = true;
                                return run;
                            }
                            _ = tokio::time::sleep_until(deadline) => {
                                run.error = Some(format!(
                                    "the script ran past its {} s bound during {} and was stopped",
                                    bound.as_secs_f64(),
                                    req.method
                                ));
                                return run;
                            }
                        },
                    };
                    let line = log_line(&receipt);
                    if let Some(p) = progress.as_ref() {
                        p.send((run.log.len() + 1) as f64, line.clone()).await;
                    }
                    // The receipt of the command the script failed on: the last one, if it failed.
                    run.last_failure = (!receipt.ok).then(|| result::structured(&receipt));
                    run.log.push(line);
                    let _ = req.reply.send(receipt);
                }
                done = &mut running.done => {
                    match done {
                        Ok(ScriptEnd { result, output }) => {
                            run.output = output;
                            match result {
                                Ok(v) => run.value = v,
                                Err(msg) => run.error = Some(msg),
                            }
                        }
                        Err(_) => run.error = Some("the script's thread ended without an answer".into()),
                    }
                    return run;
                }
            }
        }
    }
}

/// What a `run_lua` call did.
#[derive(Debug, Default)]
struct LuaRun {
    value: Value,
    output: Vec<String>,
    log: Vec<String>,
    error: Option<String>,
    last_failure: Option<Value>,
    cancelled: bool,
}

impl LuaRun {
    fn text(&self) -> String {
        let mut out = String::new();
        match &self.error {
            Some(e) => out.push_str(&format!("run_lua failed: {e}\n")),
            None => out.push_str(&format!(
                "run_lua ok: {}\n",
                serde_json::to_string(&self.value).unwrap_or_default()
            )),
        }
        if !self.output.is_empty() {
            out.push_str("output:\n");
            for l in &self.output {
                out.push_str(l);
                out.push('\n');
            }
        }
        if !self.log.is_empty() {
            out.push_str(&format!("commands ({}):\n", self.log.len()));
            for l in &self.log {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    fn structured(&self) -> Value {
        let mut v = json!({
            "ok": self.error.is_none(),
            "value": self.value,
            "output": self.output,
            "log": self.log,
        });
        if let Some(e) = &self.error {
            v["error"] = json!(e);
            v["cancelled"] = json!(self.cancelled);
        }
        if let Some(f) = &self.last_failure {
            v["failedReceipt"] = f.clone();
        }
        v
    }
}

/// One line of `run_lua`'s log: method, ok or code, time.
fn log_line(receipt: &Receipt) -> String {
    if receipt.ok {
        format!("{} ok ({:.0} ms)", receipt.method, receipt.elapsed_ms)
    } else {
        format!(
            "{} {} ({:.0} ms): {}",
            receipt.method,
            receipt.code.map(|c| c.as_str()).unwrap_or("FAILED"),
            receipt.elapsed_ms,
            receipt.msg.as_deref().unwrap_or("")
        )
    }
}

fn cancelled(method: &str) -> Receipt {
    // It was running: what it did before the cancel is not known.
    Receipt::failure(
        method,
        ErrorCode::ActionFailed,
        format!("{method}: cancelled by the client while it ran (it may have acted)"),
        None,
        true,
        0.0,
    )
}

fn unreachable_receipt(method: &str) -> Receipt {
    Receipt::failure(
        method,
        ErrorCode::Internal,
        format!("{method}: the progress ticker ended"),
        None,
        false,
        0.0,
    )
}

/// A submitted value as `submit_human_input` takes it (strings as given, others as text).
fn as_answer(v: Value) -> Value {
    match v {
        Value::String(_) | Value::Array(_) => v,
        Value::Null => json!(""),
        other => json!(other.to_string()),
    }
}

/// The elicitation form of a human-input request: message, schema, and the one field's name
/// when the request takes a single answer.
fn elicitation_form(
    method: &str,
    data: &Value,
    args: &Map<String, Value>,
) -> Option<(String, Value, Option<String>)> {
    let mut props = Map::new();
    let mut required = Vec::new();
    let prompt = data
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if method == "ask_user" {
        for q in args.get("questions")?.as_array()? {
            let id = q.get("id")?.as_str()?;
            let title = q.get("question").and_then(Value::as_str).unwrap_or(id);
            let options: Vec<String> = q
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(|x| {
                            x.as_str().map(str::to_string).or_else(|| {
                                x.get("label").and_then(Value::as_str).map(str::to_string)
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            let multi = q
                .get("multiSelect")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let field = if !options.is_empty() && !multi {
                json!({"type": "string", "title": title, "enum": options})
            } else {
                json!({"type": "string", "title": title})
            };
            props.insert(id.to_string(), field);
            required.push(json!(id));
        }
        let schema = json!({"type": "object", "properties": props, "required": required});
        return Some((prompt, schema, None));
    }
    match data.get("steps").and_then(Value::as_array) {
        Some(steps) if !steps.is_empty() => {
            for s in steps {
                let id = s.get("stepId")?.as_str()?;
                let title = s.get("prompt").and_then(Value::as_str).unwrap_or(id);
                props.insert(id.to_string(), json!({"type": "string", "title": title}));
            }
            let schema = json!({"type": "object", "properties": props});
            Some((prompt, schema, None))
        }
        _ => {
            props.insert(
                "answer".into(),
                json!({"type": "string", "title": "Answer", "description": "what you did or the value asked for (may be empty)"}),
            );
            let schema = json!({"type": "object", "properties": props});
            Some((prompt, schema, Some("answer".into())))
        }
    }
}

/// The MIME type of an evidence file.
fn resource_mime(path: &str) -> Option<&'static str> {
    result::image_mime(path).or_else(|| {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".json") {
            Some("application/json")
        } else if lower.ends_with(".txt") || lower.ends_with(".log") {
            Some("text/plain")
        } else if lower.ends_with(".pdf") {
            Some("application/pdf")
        } else if lower.ends_with(".html") {
            Some("text/html")
        } else {
            None
        }
    })
}

impl ServerHandler for Session {
    // Logging (`notifications/message`) is deprecated by SEP-2577; the issue asks for it and the
    // clients of 2025-11-25 read it.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_logging()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("moonpilot", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A real Chromium browser. Read the page with get_browser_state (an indexed \
                 observation: [N] marks what the *_by_index tools act on), act, read again. \
                 run_lua runs a whole plan (many steps, branches) in one call.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        // A session holds a task: the stateful lifecycle (2026-07-28 has no session and forbids
        // the elicitation human input uses).
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn on_roots_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        // Asked again at the next call.
        if let Ok(mut roots) = self.inner.roots.lock() {
            *roots = None;
        }
    }

    #[allow(deprecated)] // See get_info.
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        serde_json::from_value(json!({"tools": self.inner.tools}))
            .map_err(|e| McpError::internal_error(format!("the tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut resources = Vec::new();
        if let Some(id) = self.task() {
            let dir = self
                .inner
                .executor
                .engine()
                .config
                .data_dir
                .join(id.to_string());
            let mut files = list_files(&dir).await;
            files.sort_by_key(|f| std::cmp::Reverse(f.1));
            for (name, _, size) in files.into_iter().take(MAX_RESOURCES) {
                let path = dir.join(&name);
                let mut r = json!({
                    "uri": format!("{RESOURCE_PREFIX}{id}/{name}"),
                    "name": name,
                    "size": size,
                });
                if let Some(m) = resource_mime(&path.to_string_lossy()) {
                    r["mimeType"] = json!(m);
                }
                resources.push(r);
            }
        }
        serde_json::from_value(json!({"resources": resources}))
            .map_err(|e| McpError::internal_error(format!("the resource list: {e}"), None))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.to_string();
        let not_found = || McpError::resource_not_found(format!("no such resource: {uri}"), None);
        let rel = uri.strip_prefix(RESOURCE_PREFIX).ok_or_else(not_found)?;
        let (task, name) = rel.split_once('/').ok_or_else(not_found)?;
        // Only the session's own task, and a plain file name in its directory.
        let own = self.task().map(|t| t.to_string());
        if own.as_deref() != Some(task)
            || name.is_empty()
            || name.contains('/')
            || name.contains('\\')
            || name.starts_with('.')
        {
            return Err(not_found());
        }
        let path = self
            .inner
            .executor
            .engine()
            .config
            .data_dir
            .join(task)
            .join(name);
        let bytes = tokio::fs::read(&path).await.map_err(|_| not_found())?;
        let mime = resource_mime(name);
        let contents = match mime {
            Some(m) if m.starts_with("text/") || m == "application/json" => {
                json!({"uri": uri, "mimeType": m, "text": String::from_utf8_lossy(&bytes)})
            }
            m => json!({"uri": uri, "mimeType": m.unwrap_or("application/octet-stream"),
                        "blob": crate::encoding::encode_base64(&bytes)}),
        };
        serde_json::from_value::<ReadResourceResult>(json!({"contents": [contents]}))
            .map(Into::into)
            .map_err(|e| McpError::internal_error(format!("the resource: {e}"), None))
    }
}

/// The files of `dir`: name, modification time, size (none when it does not exist).
async fn list_files(dir: &Path) -> Vec<(String, std::time::SystemTime, u64)> {
    let mut out = Vec::new();
    let Ok(mut rd) = tokio::fs::read_dir(dir).await else {
        return out;
    };
    while let Ok(Some(e)) = rd.next_entry().await {
        let Ok(meta) = e.metadata().await else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        out.push((name, modified, meta.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_prompt_asks_one_answer_and_steps_one_field_each() {
        let (msg, schema, single) = elicitation_form(
            "request_human_input",
            &json!({"prompt": "solve the captcha"}),
            &Map::new(),
        )
        .expect("a form");
        assert_eq!(msg, "solve the captcha");
        assert_eq!(single.as_deref(), Some("answer"));
        assert_eq!(schema["properties"]["answer"]["type"], "string");
        let (_, schema, single) = elicitation_form(
            "request_human_input",
            &json!({"prompt": "", "steps": [{"stepId": "s1", "prompt": "log in"}, {"stepId": "s2", "prompt": "accept"}]}),
            &Map::new(),
        )
        .expect("a form");
        assert!(single.is_none());
        assert_eq!(schema["properties"]["s2"]["title"], "accept");
        let args = json!({"questions": [{"id": "size", "question": "Which size?", "options": ["S", {"label": "M"}]}]});
        let (_, schema, _) = elicitation_form(
            "ask_user",
            &json!({"prompt": "please answer"}),
            args.as_object().expect("object"),
        )
        .expect("a form");
        assert_eq!(schema["properties"]["size"]["enum"], json!(["S", "M"]));
        assert_eq!(schema["required"], json!(["size"]));
    }
}
