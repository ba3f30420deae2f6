//! The harness: one shared headless Chromium and fixture server per test binary, a fresh task
//! per test, and helpers that run Lua snippets or raw executor calls against them.
//!
//! The browser and the server live on a runtime of their own that lasts for the whole binary;
//! each test runs its Lua on a current-thread runtime with a `LocalSet`, as `moonpilot run` does.
//! One "keeper" task stays open so the shared browser is not stopped between tests.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use moonpilot::browser::task::TaskId;
use moonpilot::lua::LuaHost;
use moonpilot::{Engine, EngineConfig, Executor, Receipt};
use serde_json::{json, Value};

use super::server::Fixtures;

/// The shared pieces.
pub struct Harness {
    /// Runs the browser's and the server's background tasks; held only to keep it alive.
    #[allow(dead_code)]
    pub runtime: tokio::runtime::Runtime,
    /// The executor over the shared engine.
    pub executor: Executor,
    /// The fixture origins.
    pub fixtures: Fixtures,
}

/// The state directory of the `moonpilot` processes tests start (`MOONPILOT_STATE_DIR`): a
/// temporary directory, never the repository nor the user's own state directory.
pub fn state_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("moonpilot-test-state-{}", std::process::id()))
}

/// Engine settings for tests: data files go to the target dir, not the source tree.
pub fn test_config() -> EngineConfig {
    let data = std::env::temp_dir().join(format!("moonpilot-test-data-{}", std::process::id()));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    EngineConfig {
        // The shipped Lua recipes (`scripts/`), then the tests' own.
        recipe_dirs: vec![root.join("tests/fixtures/recipes")],
        script_dirs: vec![root.join("scripts"), root.join("tests/fixtures/scripts")],
        trace_dir: Some(data.join("trace")),
        upload_dir: data.join("upload"),
        download_dir: data.join("downloads"),
        data_dir: data,
        // The suite's tasks share one browser's default context (cookies across tasks): no
        // recycling under them; its own tests turn it on.
        recycle: moonpilot::engine::Recycle {
            after_tasks: None,
            max_browser_mb: None,
        },
        ..EngineConfig::default()
    }
}

/// The shared harness, started on first use. Fails loudly when Chromium cannot start.
pub fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_stack_size(moonpilot::signal::WORKER_STACK)
            .enable_all()
            .build()
            .expect("a tokio runtime for the harness");
        let (executor, fixtures) = runtime.block_on(async {
            let fixtures = Fixtures::start().await.expect("fixture server binds on loopback");
            let executor = Executor::new(Engine::new(test_config()), moonpilot::lua::recipe_host());
            let keeper = executor.execute(None, "start", json!({})).await;
            assert!(
                keeper.ok,
                "the test harness could not start Chromium: {}\n(set MOONPILOT_CHROMIUM or install Debian's `chromium`)",
                keeper.msg.unwrap_or_default()
            );
            (executor, fixtures)
        });
        Harness { runtime, executor, fixtures }
    })
}

const LUA_HELPERS: &str = r#"
function eq(got, want, what)
  if got ~= want then
    error(string.format("%s:\n  expected: %s\n  got:      %s", what or "value", tostring(want), tostring(got)), 2)
  end
end
function has(text, part, what)
  if type(text) ~= "string" or not string.find(text, part, 1, true) then
    error(string.format("%s:\n  expected to contain: %s\n  got: %s", what or "text", part, tostring(text)), 2)
  end
end
function hasnt(text, part, what)
  if type(text) == "string" and string.find(text, part, 1, true) then
    error(string.format("%s:\n  expected NOT to contain: %s\n  got: %s", what or "text", part, tostring(text)), 2)
  end
end
"#;

/// Runs `snippet` with `page` bound to a fresh task (closed afterwards) and the globals `A`, `B`
/// (the two fixture origins) and `eq`/`has`/`hasnt`. Panics with the Lua error on failure.
///
/// It runs on a thread with a serving runtime's stack (`WORKER_STACK`; `moonpilot run` has the
/// main thread's 8 MiB), not a test thread's 2 MiB: a script's commands nest (a click in a
/// recipe in a batch) and are polled on the stack of the thread that runs the script.
pub fn lua(snippet: &str) {
    let snippet = snippet.to_string();
    let ran = std::thread::Builder::new()
        .name("lua-test".into())
        .stack_size(moonpilot::signal::WORKER_STACK)
        .spawn(move || lua_here(&snippet))
        .expect("a test thread");
    if let Err(panic) = ran.join() {
        std::panic::resume_unwind(panic);
    }
}

fn lua_here(snippet: &str) {
    let h = harness();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let res: Result<(), String> = local.block_on(&rt, async {
        let host = LuaHost::new(h.executor.clone(), BTreeMap::new()).map_err(|e| e.to_string())?;
        let g = host.lua().globals();
        g.set("A", h.fixtures.a.clone())
            .map_err(|e| e.to_string())?;
        g.set("B", h.fixtures.b.clone())
            .map_err(|e| e.to_string())?;
        host.eval(LUA_HELPERS, "helpers")
            .await
            .map_err(|e| e.to_string())?;
        let page: mlua::Value = host
            .eval("return browser.start{}", "start")
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .unwrap_or(mlua::Value::Nil);
        let chunk = format!("local page = ...\n{snippet}");
        let func = host
            .lua()
            .load(chunk)
            .set_name("=test")
            .into_function()
            .map_err(|e| e.to_string())?;
        let run =
            tokio::time::timeout(Duration::from_secs(90), func.call_async::<()>(page.clone()))
                .await;
        let close: mlua::Function = host
            .lua()
            .load("return function(p) if p then p:close() end end")
            .eval()
            .map_err(|e| e.to_string())?;
        let _ = close.call_async::<()>(page).await;
        match run {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the test snippet did not finish within 90 s".into()),
        }
    });
    if let Err(e) = res {
        panic!("Lua test failed:\n{e}");
    }
}

/// A fresh task id on the shared engine.
pub fn new_task() -> TaskId {
    let r = exec(None, "start", json!({}));
    assert!(r.ok, "start failed: {:?}", r.msg);
    TaskId(
        r.data["id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("start returns an id"),
    )
}

/// Runs one command through the shared executor.
pub fn exec(task: Option<TaskId>, method: &str, params: Value) -> Receipt {
    let h = harness();
    let executor = h.executor.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move { executor.execute(task, method, params).await })
}

/// The URL of fixture `path` on origin A (`127.0.0.1`).
pub fn url_a(path: &str) -> String {
    format!("{}/{}", harness().fixtures.a, path.trim_start_matches('/'))
}

/// Runs `f` with a private engine (its own Chromium) on a current-thread runtime with a
/// `LocalSet`, for tests that kill, shut down or reconfigure the browser. It runs on a thread
/// of its own with the stack a tokio worker has (a test thread's 2 MiB is too small for the
/// engine's futures in a debug build), after the shared fixture server is up (its URLs are
/// read inside `f`).
pub fn private<F, Fut>(config: EngineConfig, f: F)
where
    F: FnOnce(Executor) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    harness();
    let runner = std::thread::Builder::new()
        .name("private-engine".into())
        .stack_size(8 * 1024 * 1024)
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                f(Executor::new(
                    Engine::new(config),
                    moonpilot::lua::recipe_host(),
                ))
                .await
            });
        })
        .expect("a thread for the private engine");
    if let Err(panic) = runner.join() {
        std::panic::resume_unwind(panic);
    }
}

/// Lua helpers over a `get_browser_state` receipt's `elements`, for the observation tests:
/// `by_id(s)` (items by their snapshot id), `count(s, pred)` and `js(body)` (execute_js's result).
pub const ELEMENT_HELPERS: &str = r#"
local function by_id(s)
  local m = {}
  for _, el in ipairs(s.elements) do
    local id = el.snapshotId or el.id
    if id and id ~= "" then m[id] = el end
  end
  return m
end
local function count(s, pred)
  local n = 0
  for _, el in ipairs(s.elements) do if pred(el) then n = n + 1 end end
  return n
end
local function js(body) return page:execute_js{ body = body }:unwrap().result end
"#;
