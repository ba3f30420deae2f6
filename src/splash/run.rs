//! One Splash request: a task of its own, the script in Splash's dialect under the request's
//! `timeout`, its answer shaped as Splash shapes it, and Splash's error objects.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::args::Checked;
pub use super::error::SplashError;
use super::ops;
use crate::browser::task::TaskId;
use crate::executor::{Dialect, ScriptEnd, ScriptSource};
use crate::lua::splash::ERROR_MARKER;
use crate::{ErrorCode, Executor, Receipt};

/// The chunk name of a request's script (`[string "main"]:3:` in Splash's errors).
const CHUNK: &str = "main";

/// A successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status (200 unless the script set one).
    pub status: u16,
    /// The content type.
    pub content_type: String,
    /// Headers the script set.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Closes a request's task when dropped: at the end of its run, and also when the run is
/// dropped midway (the client went away, the server stops), on a task of the runtime.
struct CloseOnDrop {
    executor: Executor,
    task: TaskId,
    armed: bool,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (executor, task) = (self.executor.clone(), self.task);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { executor.close_if_alive(task, "splash").await });
        }
    }
}

/// Runs `req` on a fresh task and answers; the task is closed before the answer leaves, and
/// also when the caller stops waiting for it.
pub async fn run(executor: &Executor, req: Checked) -> Result<Answer, SplashError> {
    let task = TaskId::generate();
    // Splash's private mode: each request has its own cookies and storage.
    executor.engine().isolate_next_start(task);
    let mut guard = CloseOnDrop {
        executor: executor.clone(),
        task,
        armed: true,
    };
    // Splash sends every request through its proxy, loopback included.
    let params = match &req.proxy {
        Some(p) => json!({"proxy": p, "proxyBypass": "<-loopback>"}),
        None => json!({}),
    };
    let started = executor.execute(Some(task), "start", params).await;
    if !started.ok {
        // Refused before it ran (an overloaded engine): the isolation asked is not left behind.
        executor.engine().take_isolated(task);
        return Err(SplashError::Internal(started.msg.unwrap_or_default()));
    }
    // Splash's global timer: the timeout plus the requested wait.
    let bound = Duration::from_secs_f64(req.timeout + req.wait);
    let ran = tokio::time::timeout(bound, script(executor, task, &req)).await;
    // Closed here, before the answer leaves (the guard is for a run dropped midway, this
    // close included).
    executor.close_if_alive(task, "splash").await;
    guard.armed = false;
    match ran {
        Err(_) => Err(SplashError::Timeout(req.timeout_shown.clone())),
        Ok(Err(e)) => Err(e),
        Ok(Ok(value)) => answer(value),
    }
}

/// The script's run: its commands go to the executor on its own task only (a Splash script
/// never reaches another task nor the engine's commands).
async fn script(executor: &Executor, task: TaskId, req: &Checked) -> Result<Value, SplashError> {
    let mut running = executor
        .start_script(ScriptSource {
            task,
            path: PathBuf::from(CHUNK),
            source: req.source.clone(),
            args: Value::Object(req.args.clone()),
            dialect: Dialect::Splash,
        })
        .map_err(SplashError::Internal)?;
    // The script's commands in flight; dropped with the script (its end, its timeout, a
    // client gone), they are cut off as a command in place would be.
    let mut in_flight = AbortOnDrop(Vec::new());
    loop {
        tokio::select! {
            biased;
            Some(cmd) = running.commands.recv() => {
                // Each on a task of its own: a script's coroutines may have several in flight
                // (an `on_request` callback's decision while its navigation waits for it); the
                // task's lane still runs its commands one at a time.
                let executor = executor.clone();
                in_flight.retain(|h| !h.is_finished());
                in_flight.push(tokio::spawn(async move {
                    let mut reply = cmd.reply;
                    let work = async {
                        if cmd.task != Some(task) {
                            Receipt::failure(&cmd.method, ErrorCode::InvalidArgument,
                                format!("{}: a Splash script drives only its own page", cmd.method), None, false, 0.0)
                        } else if cmd.method.starts_with(ops::PREFIX) {
                            ops::answer(&executor, task, &cmd.method, cmd.params).await
                        } else {
                            executor.execute(cmd.task, &cmd.method, cmd.params).await
                        }
                    };
                    // A coroutine cancelled meanwhile (with_timeout, a reset loop) no longer
                    // waits for the answer: its command stops there, as it would in place.
                    tokio::select! {
                        receipt = work => { let _ = reply.send(receipt); }
                        () = reply.closed() => {}
                    }
                }).abort_handle());
            }
            done = &mut running.done => {
                return match done {
                    Ok(ScriptEnd { result: Ok(v), .. }) => Ok(v),
                    Ok(ScriptEnd { result: Err(msg), .. }) => Err(script_error(&msg)),
                    Err(_) => Err(SplashError::Internal("the script's thread ended without an answer".into())),
                };
            }
        }
    }
}

/// Aborts its tasks when dropped.
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl std::ops::Deref for AbortOnDrop {
    type Target = Vec<tokio::task::AbortHandle>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for AbortOnDrop {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for h in &self.0 {
            h.abort();
        }
    }
}

/// A script's error text as Splash's error: the `splash` object's own (after the marker), or a
/// Lua error with its line.
pub fn script_error(msg: &str) -> SplashError {
    if let Some(at) = msg.find(ERROR_MARKER) {
        let raw = &msg[at + ERROR_MARKER.len()..];
        let mut info: Value =
            serde_json::from_str(raw.trim()).unwrap_or_else(|_| json!({"message": raw}));
        let kind = info["type"]
            .as_str()
            .unwrap_or("SPLASH_LUA_ERROR")
            .to_string();
        if kind == "RENDER_ERROR" {
            let reason = info["message"].as_str().unwrap_or("").to_string();
            return SplashError::Render(json!({
                "type": info.get("kind").cloned().unwrap_or(json!("Unknown")),
                "code": info.get("code").cloned().unwrap_or(json!(0)),
                "text": reason,
                "url": info["url"],
            }));
        }
        let text = info["message"].as_str().unwrap_or("").to_string();
        info["error"] = json!(text);
        return SplashError::Script(info);
    }
    // `[runtime error: ]main:LINE: message` (syntax errors say `syntax error`).
    let init = msg.contains("syntax error");
    let prefix = format!("{CHUNK}:");
    let located = msg.find(&prefix).and_then(|at| {
        let rest = &msg[at + prefix.len()..];
        let (line, text) = rest.split_once(':')?;
        Some((line.trim().parse::<u64>().ok()?, text.trim().to_string()))
    });
    let source = format!("[string \"{CHUNK}\"]");
    let info = match located {
        Some((line, text)) => json!({
            "type": if init { "LUA_INIT_ERROR" } else { "LUA_ERROR" },
            "source": source,
            "line_number": line,
            "error": text,
            "message": format!("Lua error: {source}:{line}: {text}"),
        }),
        None => json!({
            "type": if init { "LUA_INIT_ERROR" } else { "LUA_ERROR" },
            "source": source,
            "error": msg,
            "message": format!("Lua error: {msg}"),
        }),
    };
    SplashError::Script(info)
}

/// What `splash.lua` writes for an empty table marked as an array (`treat.as_array`).
const EMPTY_ARRAY: &str = "\u{1}splash-empty-array\u{1}";

/// `v` with every empty-array marker an empty array.
fn arrays(v: Value) -> Value {
    match v {
        Value::String(s) if s == EMPTY_ARRAY => Value::Array(Vec::new()),
        Value::Array(a) => Value::Array(a.into_iter().map(arrays).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, x)| (k, arrays(x))).collect()),
        other => other,
    }
}

/// The answer of `__splash_main`'s table: binary as it is, a string as the body, anything else
/// as JSON; the script's status, content type and headers on top.
fn answer(result: Value) -> Result<Answer, SplashError> {
    let result = arrays(result);
    let status = result["status"].as_u64().map(|s| s as u16).unwrap_or(200);
    let mut headers = Vec::new();
    if let Some(h) = result["headers"].as_object() {
        for (k, v) in h {
            headers.push((
                k.clone(),
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            ));
        }
    }
    let set_type = result["content_type"].as_str().map(str::to_string);
    let (default_type, body) = if let Some(b) = result.get("binary").filter(|b| b.is_object()) {
        let bytes = crate::encoding::decode_base64(b["base64"].as_str().unwrap_or(""))
            .ok_or_else(|| SplashError::Internal("a binary result that is not base64".into()))?;
        (
            b["content_type"]
                .as_str()
                .unwrap_or("application/octet-stream")
                .to_string(),
            bytes,
        )
    } else {
        match result.get("value") {
            None | Some(Value::Null) => ("text/plain; charset=utf-8".to_string(), Vec::new()),
            Some(Value::String(s)) => (
                "text/plain; charset=utf-8".to_string(),
                s.clone().into_bytes(),
            ),
            Some(v) => (
                "application/json".to_string(),
                serde_json::to_vec(v).map_err(|e| SplashError::Internal(e.to_string()))?,
            ),
        }
    };
    Ok(Answer {
        status,
        content_type: set_type.unwrap_or(default_type),
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lua_error_names_its_line_and_a_splash_error_its_kind() {
        let e = script_error("runtime error: main:3: attempt to call a nil value (global 'nope')");
        let SplashError::Script(info) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(info["type"], "LUA_ERROR");
        assert_eq!(info["line_number"], 3);
        assert_eq!(info["error"], "attempt to call a nil value (global 'nope')");
        assert_eq!(e.status(), 400);
        assert_eq!(e.body()["type"], "ScriptError");
        let e = script_error("syntax error: main:1: unexpected symbol near 'x'");
        let SplashError::Script(info) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(info["type"], "LUA_INIT_ERROR");
        let e = script_error(&format!(
            "runtime error: {ERROR_MARKER}{{\"type\":\"JS_ERROR\",\"message\":\"boom\"}}"
        ));
        let SplashError::Script(info) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(info["type"], "JS_ERROR");
        assert_eq!(info["error"], "boom");
        let e = script_error(&format!("{ERROR_MARKER}{{\"type\":\"RENDER_ERROR\",\"message\":\"network3\",\"url\":\"http://x\"}}"));
        assert_eq!(e.status(), 502);
        assert_eq!(e.body()["info"]["text"], "network3");
    }

    #[test]
    fn a_result_is_binary_text_or_json_with_what_the_script_set() {
        let a = answer(json!({"value": {"a": 1}, "headers": {}})).unwrap();
        assert_eq!(a.content_type, "application/json");
        assert_eq!(a.body, br#"{"a":1}"#);
        let a = answer(json!({"value": "hello", "status": 201, "headers": {"X-A": "b"}})).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (201, b"hello".as_slice()));
        assert_eq!(a.headers, vec![("X-A".to_string(), "b".to_string())]);
        let a = answer(json!({"binary": {"base64": "aGk=", "content_type": "image/png"}})).unwrap();
        assert_eq!(
            (a.content_type.as_str(), a.body.as_slice()),
            ("image/png", b"hi".as_slice())
        );
    }
}
