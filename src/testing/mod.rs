//! `moonpilot test`: browser tests in Lua, Playwright Test's workflow with busted's names.
//!
//! Files named `*_test.lua` or `*_spec.lua` are found under the given paths and loaded once to
//! list their tests (`dsl.lua` defines `describe`, `it`, the hooks and `expect`). The selected
//! tests are cut into units (a file's tests, in order; a file is split when there are more
//! workers than files) and `--workers` units run at once, each in a Lua state of its own, on
//! one engine and one browser: every test gets a fresh task in a browser context of its own
//! (`page`), closed after it. A failed test leaves its worker's state: the next test of the
//! unit starts in a fresh one (its `before_all` hooks run again), as Playwright starts a new
//! worker. Reporters (`report.rs`) see every result as it ends.
//!
//! Exit codes: 0 every test passed (flaky included), 1 a test failed, 2 usage, discovery and
//! load errors, 130 interrupted.

mod html;
pub mod read;
pub mod report;
pub mod snapshot;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Function, Table, Value as LuaValue};
use serde_json::{json, Value};

use crate::browser::task::TaskId;
use crate::executor::Executor;
use crate::lua::{convert, LuaHost};

const DSL: &str = include_str!("dsl.lua");

/// The options of `moonpilot test` (the browser's are the host's own).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Test files or directories (in a directory: `*_test.lua` and `*_spec.lua`, recursively)
    /// [default: .].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Tests at once, each on a task of its own [default: half the cores, at least 1].
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub workers: Option<u64>,
    /// Run a failed test again up to N times; one that passes on a retry is flaky.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retries: u32,
    /// A test's time limit, in seconds (hooks included); past it the test fails and its task is
    /// closed.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Run only the tests whose full title (`describe › it`) contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// Run the I-th of N deterministic parts of the selected tests (`--shard 2/3`).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Run only the tests that failed in the previous run of the same paths.
    #[arg(long)]
    pub last_failed: bool,
    /// Run each selected test N times.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat_each: u32,
    /// Fail (exit 1) when a `.only` is left in the tests (for CI).
    #[arg(long)]
    pub forbid_only: bool,
    /// Write the screenshots `to_have_screenshot` compares against, instead of comparing.
    #[arg(long)]
    pub update_snapshots: bool,
    /// `list` (default), `dot`, `junit=FILE`, `json=FILE`, `html=FILE` (repeatable, or
    /// comma-separated).
    #[arg(long = "reporter", value_name = "NAME[=FILE]", value_delimiter = ',')]
    pub reporters: Vec<String>,
    /// Where failed tests leave their screenshots and screenshot diffs [default:
    /// test-results/ in the state directory].
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Keep the engine's evidence, a screenshot after each command, for the HTML report's
    /// steps. Off by default, as Playwright Test's `screenshot: 'off'` (it costs about 60 ms a
    /// command); a failed test's screenshot is taken either way.
    #[arg(long)]
    pub capture: bool,
    /// After the run, re-run a file's tests each time it or a module it requires is saved, the
    /// browser kept open (Ctrl-C stops).
    #[arg(long)]
    pub watch: bool,
}

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("`{s}` is no shard: give I/N with 1 <= I <= N, as 2/3");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// One test as listed by its file.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its file, as found.
    pub file: PathBuf,
    /// Its number in the file (1-based, declaration order).
    pub id: i64,
    /// `describe › … › it`.
    pub title: String,
    /// The line of its `it`.
    pub line: i64,
    /// Skipped (`it.skip`, `describe.skip`, `pending`).
    pub skip: bool,
    /// Marked `.only` (itself or a block around it).
    pub only: bool,
}

impl Listed {
    /// The key `--last-failed` remembers it by.
    fn key(&self) -> String {
        format!("{} › {}", self.file.display(), self.title)
    }
}

/// How one run of a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Passed on its first attempt.
    Passed,
    /// Failed on every attempt.
    Failed,
    /// Failed first, then passed on a retry.
    Flaky,
    /// Not run (`.skip`, `pending`).
    Skipped,
}

impl Status {
    /// How the reports name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Flaky => "flaky",
            Status::Skipped => "skipped",
        }
    }
}

/// A failure as the test reported it.
#[derive(Debug, Clone, Default)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// `file:line` of the failed assertion or error.
    pub location: Option<String>,
    /// What the assertion expected.
    pub expected: Option<String>,
    /// What it last saw.
    pub actual: Option<String>,
    /// The element it was about (`selector #msg`).
    pub target: Option<String>,
    /// How long it waited.
    pub waited_ms: Option<u64>,
    /// The page when it failed.
    pub screenshot: Option<PathBuf>,
    /// Screenshot comparison images (actual, diff), when one failed.
    pub images: Vec<PathBuf>,
}

/// One test's result (over its attempts).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The test.
    pub test: Listed,
    /// Which of `--repeat-each` (1-based).
    pub repeat: u32,
    /// How it ended.
    pub status: Status,
    /// The last attempt's time.
    pub duration: Duration,
    /// Attempts made (1 + retries used).
    pub attempts: u32,
    /// The failures of the failed attempts, in order.
    pub failures: Vec<Failure>,
    /// The tasks (pages) each attempt opened, in order.
    pub tasks: Vec<Vec<String>>,
}

/// A unit of work: tests of one file, run in order in one Lua state.
struct Unit {
    file: PathBuf,
    tests: Vec<(Listed, u32)>,
}

/// Finds the test files under `paths` (sorted, each once).
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    fn is_test(p: &Path) -> bool {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("_test.lua") || n.ends_with("_spec.lua"))
    }
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                // Hidden directories and dependencies are not searched.
                if name.starts_with('.') || name == "node_modules" {
                    continue;
                }
                walk(&p, out)?;
            } else if is_test(&p) {
                out.push(p);
            }
        }
        Ok(())
    }
    let given = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths.to_vec()
    };
    let mut out = Vec::new();
    for p in &given {
        if p.is_dir() {
            walk(p, &mut out).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!("no such file or directory: {}", p.display()));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(out)
}

/// Where a worker's screenshot assertions and failure screenshots go for the running test.
#[derive(Clone, Default)]
struct Current {
    dir: Rc<RefCell<PathBuf>>,
    images: Rc<RefCell<Vec<PathBuf>>>,
    /// The pages the running test and its hooks opened, in order (closed after the test).
    pages: Rc<RefCell<Vec<TaskId>>>,
}

/// A worker's Lua state with the test API and one file loaded: the API table.
async fn load(
    executor: &Executor,
    file: &Path,
    current: &Current,
    update_snapshots: bool,
) -> Result<(LuaHost, Table), String> {
    let host = LuaHost::new(executor.clone(), BTreeMap::new()).map_err(|e| format!("Lua: {e}"))?;
    host.track_requires().map_err(|e| format!("Lua: {e}"))?;
    let api = install(&host, file, current, update_snapshots).map_err(|e| format!("Lua: {e}"))?;
    host.run_file(file)
        .await
        .map_err(|e| load_error(file, &e))?;
    Ok((host, api))
}

/// The message of a file that does not load: `file:line: message`.
fn load_error(file: &Path, e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::CallbackError { cause, .. } => cause.to_string(),
        other => other.to_string(),
    };
    let text = text.trim().to_string();
    if text.starts_with(&file.display().to_string()) {
        text
    } else {
        format!("{}: {text}", file.display())
    }
}

/// Installs `dsl.lua` with its core functions into `host`.
fn install(
    host: &LuaHost,
    file: &Path,
    current: &Current,
    update_snapshots: bool,
) -> mlua::Result<Table> {
    let lua = host.lua();
    let core = lua.create_table()?;
    let executor = host
        .executor()
        .ok_or_else(|| mlua::Error::runtime("moonpilot: the engine is gone"))?;
    let ex = executor.clone();
    core.set(
        "read",
        lua.create_async_function(
            move |lua, (task, target, what, name): (i64, LuaValue, String, Option<String>)| {
                let ex = ex.clone();
                async move {
                    let target =
                        convert::lua_to_json(&target, "target").map_err(mlua::Error::runtime)?;
                    let task_id = TaskId(u64::try_from(task).unwrap_or_default());
                    let Some(task) = ex.engine().task(task_id) else {
                        return Ok((
                            LuaValue::Nil,
                            Some("TASK_NOT_FOUND".to_string()),
                            Some("the test's page is closed".to_string()),
                        ));
                    };
                    match read::read(&task, &target, &what, name.as_deref()).await {
                        Ok(v) => Ok((convert::json_to_lua(&lua, &v)?, None, None)),
                        Err(e) => Ok((
                            LuaValue::Nil,
                            Some(e.code.as_str().to_string()),
                            Some(e.msg),
                        )),
                    }
                }
            },
        )?,
    )?;
    let ex = executor.clone();
    let cur = current.clone();
    core.set(
        "open_page",
        lua.create_async_function(move |_, ()| {
            let ex = ex.clone();
            let cur = cur.clone();
            async move {
                let id = open_page(&ex).await.map_err(mlua::Error::runtime)?;
                cur.pages.borrow_mut().push(id);
                Ok(id.0)
            }
        })?,
    )?;
    core.set(
        "json",
        lua.create_function(|_, v: LuaValue| {
            let json = convert::lua_to_json(&v, "value").map_err(mlua::Error::runtime)?;
            Ok(json.to_string())
        })?,
    )?;
    let ex = executor.clone();
    let baseline_dir = snapshot::baseline_dir(file);
    let cur = current.clone();
    core.set(
        "screenshot_check",
        lua.create_async_function(
            move |lua, (task, name, target, ratio, timeout): (i64, String, LuaValue, f64, f64)| {
                let ex = ex.clone();
                let baseline_dir = baseline_dir.clone();
                let cur = cur.clone();
                async move {
                    let target = match target {
                        LuaValue::Nil => None,
                        t => {
                            Some(convert::lua_to_json(&t, "target").map_err(mlua::Error::runtime)?)
                        }
                    };
                    let out_dir = cur.dir.borrow().clone();
                    let checked = snapshot::check(
                        &ex,
                        TaskId(u64::try_from(task).unwrap_or_default()),
                        &snapshot::Check {
                            name: &name,
                            target: target.as_ref(),
                            max_diff_ratio: ratio,
                            timeout: Duration::from_secs_f64(timeout.max(0.0) / 1000.0),
                            baseline_dir: &baseline_dir,
                            out_dir: &out_dir,
                            update: update_snapshots,
                        },
                    )
                    .await;
                    cur.images
                        .borrow_mut()
                        .extend(checked.images.iter().cloned());
                    convert::json_to_lua(
                        &lua,
                        &json!({
                            "ok": checked.ok,
                            "message": checked.message,
                            "expected": checked.expected,
                            "actual": checked.actual,
                        }),
                    )
                }
            },
        )?,
    )?;
    lua.load(DSL)
        .set_name("=moonpilot-test")
        .call::<Table>(core)
}

/// A failure table from `dsl.lua` (or any raised value) as a [`Failure`].
fn failure_of(v: &LuaValue) -> Failure {
    let LuaValue::Table(t) = v else {
        return Failure {
            message: match v {
                LuaValue::String(s) => s.to_string_lossy(),
                other => format!("{other:?}"),
            },
            ..Failure::default()
        };
    };
    let s = |k: &str| -> Option<String> {
        match t.get::<LuaValue>(k) {
            Ok(LuaValue::String(s)) => Some(s.to_string_lossy()),
            Ok(LuaValue::Integer(i)) => Some(i.to_string()),
            Ok(LuaValue::Number(n)) => Some(n.to_string()),
            _ => None,
        }
    };
    Failure {
        message: s("message").unwrap_or_else(|| "the test failed".into()),
        location: s("where"),
        expected: s("expected"),
        actual: s("actual"),
        target: s("target"),
        waited_ms: t
            .get::<Option<f64>>("waited_ms")
            .ok()
            .flatten()
            .map(|w| w as u64),
        ..Failure::default()
    }
}

/// What a worker needs of the run.
struct Shared {
    executor: Executor,
    args: Args,
    output: PathBuf,
    units: RefCell<VecDeque<Unit>>,
    reporters: RefCell<report::Reporters>,
    outcomes: RefCell<Vec<Outcome>>,
}

/// Opens a page for a test: a task in a browser context of its own.
async fn open_page(executor: &Executor) -> Result<TaskId, String> {
    let id = TaskId::generate();
    executor.engine().isolate_next_start(id);
    let r = executor.execute(Some(id), "start", json!({})).await;
    if r.ok {
        Ok(id)
    } else {
        executor.engine().take_isolated(id);
        Err(format!(
            "the test's page did not open: {}",
            r.msg.unwrap_or_default()
        ))
    }
}

async fn close_page(executor: &Executor, id: TaskId) {
    let _ = executor.execute(Some(id), "close", json!({})).await;
}

/// A directory name for a test's output.
fn slug(test: &Listed, repeat: u32, attempt: u32) -> String {
    let file = test
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s = snapshot::file_name(&format!("{file}-{}", test.title.replace(" › ", "-")));
    s.truncate(100);
    if repeat > 1 {
        s.push_str(&format!("-repeat{repeat}"));
    }
    if attempt > 1 {
        s.push_str(&format!("-retry{}", attempt - 1));
    }
    s
}

/// One attempt of one test in `state` (loaded when `None`; left `None` when it cannot run
/// another test): the failure, if any, and the pages it opened (closed by now).
async fn attempt(
    shared: &Shared,
    state: &mut Option<(LuaHost, Table)>,
    current: &Current,
    test: &Listed,
    out_dir: PathBuf,
) -> (Option<Failure>, Vec<TaskId>) {
    let mut failure = attempt_run(shared, state, current, test, &out_dir).await;
    let pages: Vec<TaskId> = current.pages.borrow_mut().drain(..).collect();
    if let Some(f) = failure.as_mut() {
        f.images = current.images.borrow().clone();
        // The last page opened is what a failing test looked at most often.
        if let Some(&id) = pages.last() {
            f.screenshot = failure_screenshot(&shared.executor, id, &out_dir).await;
        }
    }
    for &id in &pages {
        close_page(&shared.executor, id).await;
    }
    (failure, pages)
}

/// A screenshot of page `id` into `out_dir/failure.png`.
async fn failure_screenshot(executor: &Executor, id: TaskId, out_dir: &Path) -> Option<PathBuf> {
    let path = out_dir.join("failure.png");
    std::fs::create_dir_all(out_dir).ok()?;
    let shot = executor
        .execute(
            Some(id),
            "screenshot",
            json!({"path": path.display().to_string()}),
        )
        .await;
    (shot.ok && path.is_file()).then_some(path)
}

/// Runs the test's body (and its hooks) in `state`.
async fn attempt_run(
    shared: &Shared,
    state: &mut Option<(LuaHost, Table)>,
    current: &Current,
    test: &Listed,
    out_dir: &Path,
) -> Option<Failure> {
    let executor = &shared.executor;
    if state.is_none() {
        match load(executor, &test.file, current, shared.args.update_snapshots).await {
            Ok(loaded) => *state = Some(loaded),
            Err(e) => {
                return Some(Failure {
                    message: e,
                    ..Failure::default()
                })
            }
        }
    }
    let (_, api) = state.as_ref()?;
    *current.dir.borrow_mut() = out_dir.to_path_buf();
    current.images.borrow_mut().clear();
    current.pages.borrow_mut().clear();
    let run: Function = match api.get("run") {
        Ok(f) => f,
        Err(e) => {
            return Some(Failure {
                message: e.to_string(),
                ..Failure::default()
            })
        }
    };
    let limit = Duration::from_secs_f64(shared.args.timeout.max(0.001));
    let called = run.call_async::<LuaValue>(test.id);
    match tokio::time::timeout(limit, called).await {
        Ok(Ok(LuaValue::Nil)) => None,
        Ok(Ok(v)) => Some(failure_of(&v)),
        Ok(Err(e)) => Some(Failure {
            message: e.to_string(),
            ..Failure::default()
        }),
        Err(_) => {
            // The state stopped mid-test: it is not used again.
            *state = None;
            Some(Failure {
                message: format!(
                    "the test timed out after {} s (--timeout)",
                    shared.args.timeout
                ),
                location: Some(format!("{}:{}", test.file.display(), test.line)),
                ..Failure::default()
            })
        }
    }
}

/// Runs the `after_all` hooks still pending in `state`; the pages they opened are closed.
async fn finish(
    executor: &Executor,
    current: &Current,
    state: Option<(LuaHost, Table)>,
) -> Option<Failure> {
    // The host is held until the hooks ran: the table lives in its Lua state.
    let (_host, api) = state?;
    let finish: Function = api.get("finish").ok()?;
    current.pages.borrow_mut().clear();
    let res = finish.call_async::<LuaValue>(()).await;
    let pages: Vec<TaskId> = current.pages.borrow_mut().drain(..).collect();
    for id in pages {
        close_page(executor, id).await;
    }
    match res {
        Ok(LuaValue::Nil) => None,
        Ok(v) => Some(failure_of(&v)),
        Err(e) => Some(Failure {
            message: e.to_string(),
            ..Failure::default()
        }),
    }
}

/// A worker: takes units until none is left.
async fn worker(shared: Rc<Shared>) {
    let current = Current::default();
    loop {
        let Some(unit) = shared.units.borrow_mut().pop_front() else {
            return;
        };
        let mut state: Option<(LuaHost, Table)> = None;
        for (test, repeat) in &unit.tests {
            if test.skip {
                let outcome = Outcome {
                    test: test.clone(),
                    repeat: *repeat,
                    status: Status::Skipped,
                    duration: Duration::ZERO,
                    attempts: 0,
                    failures: Vec::new(),
                    tasks: Vec::new(),
                };
                shared.reporters.borrow_mut().ended(&outcome);
                shared.outcomes.borrow_mut().push(outcome);
                continue;
            }
            let mut failures = Vec::new();
            let mut tasks = Vec::new();
            let mut tries = 0;
            let mut duration;
            loop {
                tries += 1;
                let out_dir = shared.output.join(slug(test, *repeat, tries));
                let t0 = Instant::now();
                let (failed, pages) = attempt(&shared, &mut state, &current, test, out_dir).await;
                duration = t0.elapsed();
                tasks.push(pages.iter().map(ToString::to_string).collect());
                match failed {
                    None => break,
                    Some(f) => {
                        failures.push(f);
                        // A failed test leaves its state: the next attempt or test starts
                        // afresh (its after_all hooks run first).
                        let old = state.take();
                        if let Some(f) = finish(&shared.executor, &current, old).await {
                            failures.push(f);
                        }
                        if tries > shared.args.retries {
                            break;
                        }
                    }
                }
            }
            let passed_last = failures.len() < tries as usize;
            let status = match (passed_last, failures.is_empty()) {
                (true, true) => Status::Passed,
                (true, false) => Status::Flaky,
                _ => Status::Failed,
            };
            let outcome = Outcome {
                test: test.clone(),
                repeat: *repeat,
                status,
                duration,
                attempts: tries,
                failures,
                tasks,
            };
            shared.reporters.borrow_mut().ended(&outcome);
            shared.outcomes.borrow_mut().push(outcome);
        }
        if let Some(f) = finish(&shared.executor, &current, state).await {
            // An after_all hook that fails fails the unit's last test.
            let mut outcomes = shared.outcomes.borrow_mut();
            if let Some(last) = outcomes
                .iter_mut()
                .rev()
                .find(|o| o.test.file == unit.file && o.status != Status::Skipped)
            {
                last.status = Status::Failed;
                last.failures.push(f);
            }
        }
    }
}

/// The modules each test file requires (for `--watch`).
type Requires = BTreeMap<PathBuf, BTreeSet<PathBuf>>;

/// Lists the tests of every file (a file that does not load is an error), and the modules each
/// requires while it loads.
async fn collect(
    executor: &Executor,
    files: &[PathBuf],
) -> Result<(Vec<Listed>, Requires), String> {
    let mut all = Vec::new();
    let mut requires = Requires::new();
    let current = Current::default();
    for file in files {
        let (host, api) = load(executor, file, &current, false).await?;
        requires.insert(file.clone(), host.required_files().borrow().clone());
        let list: Function = api.get("list").map_err(|e| e.to_string())?;
        let listed: Vec<Table> = list.call(()).map_err(|e| e.to_string())?;
        for t in listed {
            all.push(Listed {
                file: file.clone(),
                id: t.get("id").unwrap_or(0),
                title: t.get("title").unwrap_or_default(),
                line: t.get("line").unwrap_or(0),
                skip: t.get("skip").unwrap_or(false),
                only: t.get("only").unwrap_or(false),
            });
        }
    }
    Ok((all, requires))
}

/// The state file `--last-failed` reads: the failed tests of the previous run of `files`.
fn last_run_file(state_dir: &Path, files: &[PathBuf]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        std::fs::canonicalize(f)
            .unwrap_or_else(|_| f.clone())
            .hash(&mut h);
    }
    state_dir
        .join("test")
        .join(format!("last-run-{:016x}.json", h.finish()))
}

/// Applies `.only`, `--grep`, `--last-failed` and `--shard`, then `--repeat-each`.
fn select(all: Vec<Listed>, args: &Args, last_failed: Option<&[String]>) -> Vec<(Listed, u32)> {
    let focused = all.iter().any(|t| t.only);
    let mut chosen: Vec<Listed> = all
        .into_iter()
        .filter(|t| !focused || t.only)
        .filter(|t| args.grep.as_deref().is_none_or(|g| t.title.contains(g)))
        .filter(|t| last_failed.is_none_or(|keys| keys.contains(&t.key())))
        .collect();
    if let Some((i, n)) = args.shard {
        let len = chosen.len();
        let (from, to) = ((i - 1) * len / n, i * len / n);
        chosen = chosen.into_iter().skip(from).take(to - from).collect();
    }
    chosen
        .into_iter()
        .flat_map(|t| (1..=args.repeat_each).map(move |r| (t.clone(), r)))
        .collect()
}

/// Cuts the selected tests into units: per file, in order; files are split into contiguous
/// parts when there are more workers than files.
fn units(selected: Vec<(Listed, u32)>, workers: usize) -> VecDeque<Unit> {
    let mut by_file: Vec<(PathBuf, Vec<(Listed, u32)>)> = Vec::new();
    for (t, r) in selected {
        match by_file.last_mut() {
            Some((f, list)) if *f == t.file => list.push((t, r)),
            _ => by_file.push((t.file.clone(), vec![(t, r)])),
        }
    }
    let parts = workers.div_ceil(by_file.len().max(1)).max(1);
    let mut out = VecDeque::new();
    for (file, tests) in by_file {
        let size = tests.len().div_ceil(parts).max(1);
        for chunk in tests.chunks(size) {
            out.push_back(Unit {
                file: file.clone(),
                tests: chunk.to_vec(),
            });
        }
    }
    out
}

/// `moonpilot test`: see the module's doc.
pub fn run(mut config: crate::EngineConfig, args: Args, state_dir: PathBuf) -> ExitCode {
    config.capture &= args.capture;
    let reporters = match report::Reporters::parse(&args.reporters) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return ExitCode::from(2);
        }
    };
    let files = match discover(&args.paths) {
        Ok(f) if f.is_empty() => {
            eprintln!(
                "moonpilot: no test files (*_test.lua, *_spec.lua) under {}",
                if args.paths.is_empty() {
                    ".".to_string()
                } else {
                    args.paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
            return ExitCode::from(2);
        }
        Ok(f) => f,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match crate::lua::host_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let local = tokio::task::LocalSet::new();
    let sources = Sources {
        trace_dir: config.trace_dir.clone(),
        data_dir: config.data_dir.clone(),
        state_dir,
    };
    local.block_on(&runtime, async move {
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        // One browser for the whole session: each test closes its task, the next opens one.
        let keep = engine.keep_browser();
        // One listener for the whole session, so a Ctrl-C between two runs is not lost.
        let code = match crate::lua::interrupt_listener() {
            Ok(mut interrupt) => {
                let watch = args.watch;
                let (code, requires) = run_suite(
                    &executor,
                    &args,
                    files.clone(),
                    reporters,
                    &sources,
                    &mut interrupt,
                )
                .await;
                if watch && code != ExitCode::from(130) {
                    watch_loop(&executor, &args, files, requires, &sources, &mut interrupt).await
                } else {
                    code
                }
            }
            Err(code) => code,
        };
        drop(keep);
        engine.shutdown().await;
        engine.flush_trace().await;
        code
    })
}

/// Where a run's files are.
struct Sources {
    /// The trace the HTML report's steps come from (`None`: `--no-trace`).
    trace_dir: Option<PathBuf>,
    /// The evidence directory.
    data_dir: PathBuf,
    /// The state directory (`--last-failed`'s memory, test-results/).
    state_dir: PathBuf,
}

/// `--watch`: after the first run, waits for a save of a test file or of a module one requires
/// and re-runs the files concerned, the engine and its browser kept; Ctrl-C ends it (130).
async fn watch_loop(
    executor: &Executor,
    args: &Args,
    files: Vec<PathBuf>,
    mut requires: Requires,
    sources: &Sources,
    interrupt: &mut tokio::signal::unix::Signal,
) -> ExitCode {
    let mut watcher = match crate::watch::Files::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("moonpilot: cannot watch files: {e}");
            return ExitCode::from(2);
        }
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    loop {
        // Each test file with what it requires, as the watcher reports paths.
        let deps: Vec<(PathBuf, BTreeSet<PathBuf>)> = files
            .iter()
            .map(|f| {
                let mut set: BTreeSet<PathBuf> = requires
                    .get(f)
                    .map(|m| m.iter().map(|p| real(p)).collect())
                    .unwrap_or_default();
                set.insert(real(f));
                (f.clone(), set)
            })
            .collect();
        let watched: BTreeSet<PathBuf> = deps.iter().flat_map(|(_, s)| s.clone()).collect();
        let modules = watched.len().saturating_sub(files.len());
        // Watched before it says so: a save right after the line is seen.
        watcher.set(watched);
        println!(
            "\nwatch: waiting for a save of {} test file{} or {modules} module{} (Ctrl-C stops)",
            files.len(),
            report::plural(files.len()),
            report::plural(modules)
        );
        let changed = tokio::select! {
            changed = watcher.next_save() => changed,
            _ = interrupt.recv() => {
                println!("watch: stopped");
                return ExitCode::from(130);
            }
        };
        let rerun: Vec<PathBuf> = deps
            .into_iter()
            .filter(|(_, set)| !set.is_disjoint(&changed))
            .map(|(f, _)| f)
            .collect();
        if rerun.is_empty() {
            continue;
        }
        let names: Vec<String> = changed
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        println!(
            "watch: {} saved: re-running {} file(s)",
            names.join(", "),
            rerun.len()
        );
        let reporters = match report::Reporters::parse(&args.reporters) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("moonpilot: {e}");
                return ExitCode::from(2);
            }
        };
        let (code, found) = run_suite(executor, args, rerun, reporters, sources, interrupt).await;
        requires.extend(found);
        if code == ExitCode::from(130) {
            return code;
        }
    }
}

/// Runs the tests of `files` and writes the reports: the exit code, and the modules each file
/// requires (empty when they did not load).
async fn run_suite(
    executor: &Executor,
    args: &Args,
    files: Vec<PathBuf>,
    mut reporters: report::Reporters,
    sources: &Sources,
    interrupt: &mut tokio::signal::unix::Signal,
) -> (ExitCode, Requires) {
    let state_dir = sources.state_dir.as_path();
    let (all, requires) = match collect(executor, &files).await {
        Ok(found) => found,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return (ExitCode::from(2), Requires::new());
        }
    };
    if all.is_empty() {
        eprintln!("moonpilot: the test files declare no test");
        return (ExitCode::from(2), requires);
    }
    if args.forbid_only {
        let left: Vec<String> = all
            .iter()
            .filter(|t| t.only)
            .map(|t| format!("{}:{}", t.file.display(), t.line))
            .collect();
        if !left.is_empty() {
            eprintln!(
                "moonpilot: --forbid-only: a `.only` is left at {}",
                left.join(", ")
            );
            return (ExitCode::from(1), requires);
        }
    }
    let last_run = last_run_file(state_dir, &files);
    let last_failed: Option<Vec<String>> = if args.last_failed {
        let keys = std::fs::read_to_string(&last_run)
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .and_then(|v| {
                v["failed"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
            })
            .unwrap_or_default();
        Some(keys)
    } else {
        None
    };
    let selected = select(all, args, last_failed.as_deref());
    let workers = args
        .workers
        .map(|w| w as usize)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() / 2)
                .unwrap_or(1)
        })
        .max(1);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| state_dir.join("test-results"));
    let started = Instant::now();
    reporters.begin(selected.len(), workers.min(selected.len().max(1)));
    let shared = Rc::new(Shared {
        executor: executor.clone(),
        output,
        units: RefCell::new(units(selected, workers)),
        reporters: RefCell::new(reporters),
        outcomes: RefCell::new(Vec::new()),
        args: args.clone(),
    });
    let mut running = tokio::task::JoinSet::new();
    for _ in 0..workers {
        running.spawn_local(worker(shared.clone()));
    }
    let interrupted = tokio::select! {
        () = async { while running.join_next().await.is_some() {} } => false,
        _ = interrupt.recv() => true,
    };
    if interrupted {
        running.abort_all();
        while running.join_next().await.is_some() {}
    }
    let outcomes = shared.outcomes.borrow().clone();
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| o.status == Status::Failed)
        .map(|o| o.test.key())
        .collect();
    if !interrupted {
        let _ = std::fs::create_dir_all(last_run.parent().unwrap_or(state_dir));
        let _ = std::fs::write(&last_run, json!({"failed": failed}).to_string());
    }
    let wall = started.elapsed();
    let html = {
        let mut reporters = shared.reporters.borrow_mut();
        reporters.finish(&outcomes, wall, interrupted);
        reporters.html_file().cloned()
    };
    if let Some(path) = html {
        // Every test's pages are closed (their evidence written); the trace is flushed first.
        executor.engine().flush_trace().await;
        let job = html::Job {
            path,
            outcomes,
            wall,
            interrupted,
            trace_dir: sources.trace_dir.clone(),
            data_dir: sources.data_dir.clone(),
        };
        write_html(job).await;
    }
    let code = if interrupted {
        eprintln!("moonpilot: interrupted");
        ExitCode::from(130)
    } else if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    (code, requires)
}

/// Writes the HTML report off the runtime's thread and says where it is.
async fn write_html(job: html::Job) {
    let t0 = Instant::now();
    match tokio::task::spawn_blocking(move || (html::write(&job), job.path)).await {
        Ok((Ok(bytes), path)) => println!(
            "  report: {} ({} KiB in {} ms)",
            path.display(),
            bytes / 1024,
            t0.elapsed().as_millis()
        ),
        Ok((Err(e), path)) => eprintln!("moonpilot: cannot write {}: {e}", path.display()),
        Err(e) => eprintln!("moonpilot: the HTML report failed: {e}"),
    }
}
