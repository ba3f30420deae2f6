//! What comes in through a door stays inside that door's rules (issues 35 and 42).
//!
//! Scripts: each escape a hostile script might try (a process, a file, the environment, a
//! module from the disk, bytecode, the engine's exit, a memory or CPU bomb, a recursion) is sent
//! through every door that runs scripts — MCP's `run_lua` over stdio and over HTTP, Splash's
//! `/execute`, a Lua recipe over the seed protocol — and each time nothing outside the page may
//! change: no marker file appears, no secret reaches the answer, and the engine still answers.
//!
//! Files: each door's file params and `file:` URLs reach only its places — MCP's workspace roots
//! (or its working directory) and the state directory, the seed port's staging and state
//! directories when bound off loopback, nothing for Splash — with `..`, symlinks and missing
//! files refused alike and nothing read into the page (checked from the page's own view), and
//! `--allow-unrestricted-file-access` (or `--splash-allowed-schemes`) widens them. A local
//! script keeps the machine, and its relative paths are the working directory's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::server::{serve, ServeOptions};
use moonpilot::splash::SplashOptions;
use serde_json::{json, Value};

use super::mcp::{text, HttpSession, StdioClient};
use super::support::harness::{harness, lua, url_a};
use super::support::http::{command, request};

/// The secret a hostile script tries to read: in a file outside every allowed place and in the
/// environment of the engines tests start.
const SECRET_TEXT: &str = "MP-SECRET-7f3a91";
/// The environment variable holding it.
const SECRET_ENV: &str = "MOONPILOT_TEST_SECRET";

/// A directory of its own for one test: `secret.txt` (outside every root), `marker` (must never
/// appear), `evil.lua` (a module that would write the marker), `root/` with `inside.txt` and a
/// symlink `root/link` to the secret.
struct Scene {
    base: PathBuf,
}

impl Scene {
    fn new(name: &str) -> Scene {
        let base = std::env::temp_dir().join(format!(
            "moonpilot-security-{name}-{}-{}",
            std::process::id(),
            TaskId::generate()
        ));
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), SECRET_TEXT).unwrap();
        std::fs::write(root.join("inside.txt"), "inside the root").unwrap();
        std::fs::write(
            root.join("page.html"),
            "<title>root page</title><p id=t>a page inside the root</p>",
        )
        .unwrap();
        std::os::unix::fs::symlink(base.join("outside/secret.txt"), root.join("link")).unwrap();
        let evil = format!(
            "local f = io.open({:?}, 'w') f:write('x') f:close() return 'ESCAPED'",
            base.join("marker").display().to_string()
        );
        std::fs::write(root.join("evil.lua"), &evil).unwrap();
        std::fs::write(base.join("evil.lua"), &evil).unwrap();
        Scene { base }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    fn secret(&self) -> PathBuf {
        self.base.join("outside/secret.txt")
    }

    fn marker(&self) -> PathBuf {
        self.base.join("marker")
    }

    /// An escape's code with its placeholders filled in.
    fn code(&self, template: &str) -> String {
        template
            .replace("MARKER", &self.marker().display().to_string())
            .replace("SECRET", &self.secret().display().to_string())
            .replace("DIR", &self.base.display().to_string())
    }

    /// Nothing outside changed and nothing leaked: no marker, no secret in `answer`, no
    /// sign of an escape.
    fn assert_contained(&self, door: &str, escape: &str, answer: &str) {
        // What each door answered, for the record (`-- --nocapture`).
        let short: String = answer.chars().take(200).collect();
        eprintln!("{door} | {escape} | {short}");
        assert!(
            !self.marker().exists(),
            "{door}: `{escape}` created a file outside: {answer}"
        );
        assert!(
            !answer.contains(SECRET_TEXT),
            "{door}: `{escape}` read the secret: {answer}"
        );
        assert!(
            !answer.contains("ESCAPED"),
            "{door}: `{escape}` escaped: {answer}"
        );
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// What a hostile script tries. Each one that reached its goal would create `MARKER`, answer
/// the secret, or answer `ESCAPED`.
const ESCAPES: &[(&str, &str)] = &[
    (
        "require os.execute",
        r#"return require("os").execute("touch MARKER")"#,
    ),
    ("os.execute", r#"return os.execute("touch MARKER")"#),
    (
        "package.loaded.os",
        r#"return package.loaded.os.execute("touch MARKER")"#,
    ),
    (
        "io.open",
        r#"local f = io.open("MARKER", "w") f:write("x") f:close() return "ESCAPED""#,
    ),
    (
        "require io",
        r#"local f = require("io").open("MARKER", "w") f:write("x") f:close() return "ESCAPED""#,
    ),
    (
        "read a file",
        r#"return require("io").open("SECRET"):read("a")"#,
    ),
    ("getenv", r#"return os.getenv("MOONPILOT_TEST_SECRET")"#),
    (
        "require os.getenv",
        r#"return require("os").getenv("MOONPILOT_TEST_SECRET")"#,
    ),
    (
        "package.path",
        r#"package.path = "DIR/?.lua;" .. package.path return require("evil")"#,
    ),
    (
        "require from the working directory",
        r#"return require("evil")"#,
    ),
    ("dofile", r#"return dofile("SECRET")"#),
    ("loadfile", r#"return loadfile("SECRET")()"#),
    (
        "string.dump",
        r#"return load(string.dump(function() return "ESCAPED" end))()"#,
    ),
    (
        "a binary chunk",
        r#"local f = load("\27Lua\84\0\25\147\13\10\26\10\4\8\8\120\86\0\0\0\0\0\0\0\0\0\0\0\40\119\64") return f and "ESCAPED" or "refused""#,
    ),
    (
        "the string metatable",
        r#"return getmetatable("").__index.dump and "ESCAPED""#,
    ),
    ("debug", r#"return debug.getregistry() and "ESCAPED""#),
    (
        "package.loadlib",
        r#"return package.loadlib("libc.so.6", "system") and "ESCAPED""#,
    ),
    (
        "collectgarbage",
        r#"collectgarbage("stop") return "ESCAPED""#,
    ),
    (
        "load with _G",
        r#"return load("return io")() and "ESCAPED""#,
    ),
    ("_G.io", r#"return _G.io and "ESCAPED""#),
    ("require os exit", r#"require("os").exit(3)"#),
    ("os.exit", r#"os.exit(3)"#),
    (
        "a memory bomb",
        r#"local t = {} for i = 1, 1e9 do t[i] = ("x"):rep(4096) .. i end"#,
    ),
    (
        "a deep recursion",
        r#"local function f(n) return 1 + f(n + 1) end return f(1)"#,
    ),
    (
        "print inside __tostring",
        r#"local t = setmetatable({}, { __tostring = function(s) print(s) return "x" end }) print(t)"#,
    ),
    (
        "an error in a callback",
        r#"local ok = pcall(browser.spawn, function() error("boom") end) return "survived""#,
    ),
];

/// A script that never ends: stopped by its bound, the engine answering meanwhile.
const CPU_BOMB: &str = "while true do end";

// ---- the doors that run scripts ----

#[test]
fn hostile_scripts_stay_in_mcp_over_stdio() {
    let scene = Scene::new("mcp-stdio");
    let root = scene.root();
    let mut mcp = StdioClient::start_in(&[], Some(&root), &[(SECRET_ENV, SECRET_TEXT)]);
    mcp.initialize(json!({}));
    let ok = mcp.call("navigate", json!({"url": url_a("basic.html")}));
    assert_eq!(ok["isError"], false, "{ok}");
    for (name, template) in ESCAPES {
        let r = mcp.call("run_lua", json!({"script": scene.code(template)}));
        let answer = r.to_string();
        scene.assert_contained("mcp stdio", name, &answer);
        // Still answering, with the same task.
        let t = mcp.call("get_browser_state", json!({}));
        assert_eq!(t["isError"], false, "after `{name}`: {t}");
    }
    let t0 = Instant::now();
    let r = mcp.call("run_lua", json!({"script": CPU_BOMB, "timeoutSeconds": 2}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("bound"), "{r}");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    let t = mcp.call("get_browser_state", json!({}));
    assert_eq!(t["isError"], false, "after a CPU bomb: {t}");
    assert!(mcp.finish().success(), "the engine ended normally");
}

#[test]
fn hostile_scripts_stay_in_mcp_over_http() {
    let scene = Scene::new("mcp-http");
    let addr = super::mcp::open_server();
    let mut session = HttpSession::open(addr, None);
    for (name, template) in ESCAPES {
        let r = session.call("run_lua", json!({"script": scene.code(template)}));
        scene.assert_contained("mcp http", name, &r.to_string());
    }
    let r = session.call("run_lua", json!({"script": CPU_BOMB, "timeoutSeconds": 1}));
    assert_eq!(r["isError"], true, "{r}");
    let t = session.call("run_lua", json!({"script": "return 1 + 1"}));
    assert_eq!(t["structuredContent"]["value"], 2, "{t}");
    // What the door documents stays: the modules a plan may require.
    let t = session.call(
        "run_lua",
        json!({"script": "return require('json').encode({ require('moonpilot') == browser, type(require('moonpilot.human')) })"}),
    );
    assert_eq!(t["structuredContent"]["value"], "[true,\"table\"]", "{t}");
    session.close();
}

/// A Splash port on the shared engine, with Splash's default schemes.
fn splash() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        super::splash::start(SplashOptions {
            port: 0,
            max_timeout: 30.0,
            ..SplashOptions::default()
        })
    })
}

fn ping(addr: SocketAddr) {
    let r = request(addr, "GET", "/_ping", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn hostile_scripts_stay_in_splash_execute_and_run() {
    let scene = Scene::new("splash");
    let addr = splash();
    for (name, template) in ESCAPES {
        let code = scene.code(template);
        let script = format!("function main(splash, args)\n{code}\nend");
        let r = super::splash::post(addr, "/execute", &json!({"lua_source": script}));
        let answer = String::from_utf8_lossy(&r.body).to_string();
        scene.assert_contained("splash /execute", name, &answer);
        let r = super::splash::post(addr, "/run", &json!({"lua_source": code}));
        let answer = String::from_utf8_lossy(&r.body).to_string();
        scene.assert_contained("splash /run", name, &answer);
        ping(addr);
    }
    // A callback that fails does not take the request, or the engine, with it.
    let page = url_a("basic.html");
    let script = format!(
        "function main(splash, args)\n splash:on_request(function(r) error('boom') end)\n splash:go({page:?})\n return 'done'\nend"
    );
    let r = super::splash::post(addr, "/execute", &json!({"lua_source": script}));
    assert!(r.status == 200 || r.status == 400, "{}", r.status);
    ping(addr);
    // The CPU bomb answers by the request's timeout, and the port answers meanwhile.
    let t0 = Instant::now();
    let bomb = std::thread::spawn(move || {
        super::splash::post(
            addr,
            "/execute",
            &json!({"lua_source": format!("function main(splash)\n{CPU_BOMB}\nend"), "timeout": 2}),
        )
    });
    super::support::load::pause(Duration::from_millis(300));
    ping(addr);
    let r = bomb.join().unwrap();
    assert_eq!(r.status, 504, "{}", String::from_utf8_lossy(&r.body));
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    let r = super::splash::post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash) return 'fine' end"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// The seed port on the shared engine: on loopback, or bound off it (every address, with a
/// token), with `unrestricted` file access or not.
fn seed(bind_all: bool, unrestricted: bool) -> SocketAddr {
    let h = harness();
    let executor = h.executor.clone();
    let opts = ServeOptions {
        port: 0,
        bind: if bind_all {
            "0.0.0.0".parse().unwrap()
        } else {
            "127.0.0.1".parse().unwrap()
        },
        token: bind_all.then(|| TOKEN.to_string()),
        unrestricted_files: unrestricted,
        ..ServeOptions::default()
    };
    h.runtime.block_on(async move {
        let at = SocketAddr::new(opts.bind, 0);
        let listener = tokio::net::TcpListener::bind(at).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(serve(executor, listener, opts, std::future::pending()));
        SocketAddr::from(([127, 0, 0, 1], port))
    })
}

const TOKEN: &str = "security-t0ken";

/// One seed command over HTTP (with the token).
fn call(addr: SocketAddr, id: Option<&str>, method: &str, params: Value) -> Value {
    let mut body = json!({"method": method, "params": params});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    let bearer = format!("Bearer {TOKEN}");
    request(
        addr,
        "POST",
        "/playwright/command",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", bearer.as_str()),
        ],
        body.to_string().as_bytes(),
    )
    .json()
}

fn start(addr: SocketAddr) -> String {
    let r = call(addr, None, "start", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    r["data"]["id"].as_str().unwrap().to_string()
}

#[test]
fn hostile_recipes_stay_in_the_seed_port() {
    let scene = Scene::new("seed-recipe");
    let addr = seed(false, false);
    let id = start(addr);
    for (name, template) in ESCAPES {
        let r = call(
            addr,
            Some(&id),
            "run_recipe",
            json!({"name": "hostile", "vars": {"code": scene.code(template)}}),
        );
        scene.assert_contained("seed run_recipe", name, &r.to_string());
        let h = request(addr, "GET", "/playwright/health", &[], b"");
        assert_eq!(h.status, 200);
    }
    // The recipe fixture that checks the sandbox from inside.
    let r = call(addr, Some(&id), "run_recipe", json!({"name": "confined"}));
    assert_eq!(r["ok"], true, "{r}");
    for k in [
        "io", "execute", "files", "package", "clock", "require", "memory", "dump",
    ] {
        assert_eq!(r["data"][k], true, "{k}: {r}");
    }
    call(addr, Some(&id), "close", json!({}));
}

#[test]
fn a_local_script_keeps_the_whole_language() {
    // The user's own code on the user's own machine: io, os and require are there.
    lua(r#"
        assert(io and io.open and os.getenv and package and require, "the full library")
        local r = page:run_recipe{ name = "hostile", vars = { code = "return type(io)" } }
        eq(r.ok, true, tostring(r)); eq(r.data.result, "table")
    "#);
}

// ---- file params and file: URLs ----

/// The page's own view of its file input: how many files it holds and the text of the first.
const FILE_VIEW: &str = "(async () => { const f = document.getElementById('file').files; return f.length ? f.length + ':' + (await f[0].text()) : '0'; })()";

#[test]
fn mcp_over_stdio_reads_and_writes_only_inside_its_working_directory_and_state() {
    let scene = Scene::new("mcp-files");
    let root = scene.root();
    let mut mcp = StdioClient::start_in(&["--tools", "all"], Some(&root), &[]);
    mcp.initialize(json!({}));
    let nav = mcp.call("navigate", json!({"url": url_a("widgets.html")}));
    assert_eq!(nav["isError"], false, "{nav}");
    let view = |mcp: &mut StdioClient| -> String {
        let script = format!("return page:execute_js{{ body = {FILE_VIEW:?} }}:unwrap().result");
        let r = mcp.call("run_lua", json!({"script": script}));
        r["structuredContent"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Outside, through `..`, through a symlink, and a file that is not there: refused alike.
    let outside = scene.secret().display().to_string();
    let missing = scene.base.join("outside/none.txt").display().to_string();
    let mut messages = Vec::new();
    for path in [
        outside.as_str(),
        "../outside/secret.txt",
        "link",
        missing.as_str(),
    ] {
        let r = mcp.call("upload_file", json!({"selector": "#file", "path": path}));
        assert_eq!(r["isError"], true, "{path}: {r}");
        let t = text(&r);
        assert!(t.contains("INVALID_ARGUMENT"), "{t}");
        assert!(t.contains("--allow-unrestricted-file-access"), "{t}");
        assert!(!t.contains(SECRET_TEXT), "{t}");
        messages.push(t);
    }
    // (Receipts mask digit runs: the file names tell the two apart.)
    let shape = |t: &str| {
        t.replace("secret.txt", "X")
            .replace("none.txt", "X")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        shape(&messages[0]),
        shape(&messages[3]),
        "outside and missing look alike"
    );
    assert_eq!(view(&mut mcp), "0", "nothing was read into the page");
    // A file inside the root, by a relative path.
    let r = mcp.call(
        "upload_file",
        json!({"selector": "#file", "path": "inside.txt"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(view(&mut mcp), "1:inside the root");
    // file: URLs are reads.
    let r = mcp.call("navigate", json!({"url": format!("file://{outside}")}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(!r.to_string().contains(SECRET_TEXT));
    let page = format!("file://{}", root.join("page.html").display());
    let r = mcp.call("navigate", json!({"url": page}));
    assert_eq!(r["isError"], false, "{r}");
    let r = mcp.call("new_tab", json!({"url": format!("file://{outside}")}));
    assert_eq!(r["isError"], true, "{r}");
    // Writes: outside refused (nothing written), inside and the state directory allowed.
    let target = scene.base.join("outside/shot.png");
    for tool in ["screenshot", "pdf"] {
        let r = mcp.call(tool, json!({"path": target.display().to_string()}));
        assert_eq!(r["isError"], true, "{tool}: {r}");
        assert!(!target.exists(), "{tool} wrote outside");
        let r = mcp.call(tool, json!({"path": "../outside/shot.png"}));
        assert_eq!(r["isError"], true, "{tool}: {r}");
    }
    let r = mcp.call("screenshot", json!({"path": "shot.png"}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(root.join("shot.png").exists(), "written inside the root");
    let in_state = mcp.state.join("data/mine.pdf");
    std::fs::create_dir_all(mcp.state.join("data")).unwrap();
    let r = mcp.call("pdf", json!({"path": in_state.display().to_string()}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(in_state.exists());
    // run_lua carries the door's rule to every command of its plan.
    let plan = format!(
        "page:navigate{{ url = {:?} }}:unwrap()\n\
         local up = page:upload_file{{ selector = '#file', path = {outside:?} }}\n\
         local shot = page:screenshot{{ path = {:?} }}\n\
         return {{ up = up.code, shot = shot.code }}",
        url_a("widgets.html"),
        target.display().to_string()
    );
    let r = mcp.call("run_lua", json!({"script": plan}));
    assert_eq!(
        r["structuredContent"]["value"]["up"], "INVALID_ARGUMENT",
        "{r}"
    );
    assert_eq!(
        r["structuredContent"]["value"]["shot"], "INVALID_ARGUMENT",
        "{r}"
    );
    assert!(!target.exists());
    assert_eq!(view(&mut mcp), "0");
    assert!(mcp.finish().success());
}

#[test]
fn mcp_follows_the_client_s_roots_and_the_flag_widens_it() {
    let scene = Scene::new("mcp-roots");
    let other = scene.base.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("theirs.txt"), "in the client's root").unwrap();
    // The client's roots replace the working directory.
    let mut mcp = StdioClient::start_in(&[], Some(&scene.root()), &[]);
    mcp.roots = Some(vec![format!("file://{}", other.display())]);
    mcp.initialize(json!({"roots": {"listChanged": true}}));
    mcp.call("navigate", json!({"url": url_a("widgets.html")}));
    let r = mcp.call(
        "upload_file",
        json!({"selector": "#file", "path": "theirs.txt"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let r = mcp.call(
        "upload_file",
        json!({"selector": "#file", "path": scene.root().join("inside.txt").display().to_string()}),
    );
    assert_eq!(
        r["isError"], true,
        "the working directory is no root now: {r}"
    );
    // Asked again after the client says its roots changed.
    mcp.roots = Some(vec![format!("file://{}", scene.root().display())]);
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    // (A notification is handled beside the calls that follow it: the next ones see it.)
    let mut r = Value::Null;
    for _ in 0..20 {
        r = mcp.call(
            "upload_file",
            json!({"selector": "#file", "path": "inside.txt"}),
        );
        if r["isError"] == false {
            break;
        }
        super::support::load::pause(Duration::from_millis(100));
    }
    assert_eq!(r["isError"], false, "{r}");
    assert!(mcp.finish().success());
    // The flag lifts the rule.
    let mut wide = StdioClient::start_in(
        &["--allow-unrestricted-file-access"],
        Some(&scene.root()),
        &[],
    );
    wide.initialize(json!({}));
    wide.call("navigate", json!({"url": url_a("widgets.html")}));
    let secret = scene.secret().display().to_string();
    let r = wide.call("upload_file", json!({"selector": "#file", "path": secret}));
    assert_eq!(r["isError"], false, "{r}");
    let r = wide.call("navigate", json!({"url": format!("file://{secret}")}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(wide.finish().success());
}

#[test]
fn mcp_over_http_is_confined_too() {
    let scene = Scene::new("mcp-http-files");
    let addr = super::mcp::open_server();
    let mut session = HttpSession::open(addr, None);
    session.call("navigate", json!({"url": url_a("widgets.html")}));
    let secret = scene.secret().display().to_string();
    let r = session.call("upload_file", json!({"selector": "#file", "path": secret}));
    assert_eq!(r["isError"], true, "{r}");
    let r = session.call("navigate", json!({"url": format!("file://{secret}")}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(!r.to_string().contains(SECRET_TEXT));
    let target = scene.base.join("outside/x.png");
    let r = session.call("screenshot", json!({"path": target.display().to_string()}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(!target.exists());
    let script = format!("return page:execute_js{{ body = {FILE_VIEW:?} }}:unwrap().result");
    let r = session.call("run_lua", json!({"script": script}));
    assert_eq!(r["structuredContent"]["value"], "0", "{r}");
    session.close();
}

#[test]
fn the_seed_port_off_loopback_reads_only_staged_files_and_writes_only_state() {
    let scene = Scene::new("seed-files");
    let addr = seed(true, false);
    let id = start(addr);
    let nav = call(
        addr,
        Some(&id),
        "navigate",
        json!({"url": url_a("widgets.html")}),
    );
    assert_eq!(nav["ok"], true, "{nav}");
    let secret = scene.secret().display().to_string();
    let r = call(
        addr,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": secret}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["data"]["errorCode"], "INVALID_ARGUMENT", "{r}");
    let r = call(
        addr,
        Some(&id),
        "navigate",
        json!({"url": format!("file://{secret}")}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(!r.to_string().contains(SECRET_TEXT));
    let target = scene.base.join("outside/x.png");
    let r = call(
        addr,
        Some(&id),
        "screenshot",
        json!({"path": target.display().to_string()}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(!target.exists());
    let view = call(addr, Some(&id), "execute_js", json!({"body": FILE_VIEW}));
    assert_eq!(view["data"]["result"], "0", "{view}");
    // What was staged through the port itself, and a shot into the state directory, work.
    let bearer = format!("Bearer {TOKEN}");
    let staged = request(
        addr,
        "POST",
        "/playwright/upload?filename=staged.txt",
        &[("Authorization", bearer.as_str())],
        b"staged here",
    )
    .json();
    let rel = staged["data"]["relativePath"].as_str().unwrap().to_string();
    let r = call(
        addr,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": rel}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let view = call(addr, Some(&id), "execute_js", json!({"body": FILE_VIEW}));
    assert_eq!(view["data"]["result"], "1:staged here", "{view}");
    let r = call(addr, Some(&id), "screenshot", json!({"path": "mine.png"}));
    assert_eq!(r["ok"], true, "{r}");
    call(addr, Some(&id), "close", json!({}));
    // The flag lifts it.
    let wide = seed(true, true);
    let id = start(wide);
    call(
        wide,
        Some(&id),
        "navigate",
        json!({"url": url_a("widgets.html")}),
    );
    let r = call(
        wide,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": secret}),
    );
    assert_eq!(r["ok"], true, "{r}");
    call(wide, Some(&id), "close", json!({}));
    // On loopback the seed's semantics stand: its own clients pass absolute paths.
    let local = seed(false, false);
    let id = start(local);
    call(
        local,
        Some(&id),
        "navigate",
        json!({"url": url_a("widgets.html")}),
    );
    let inside = scene.root().join("inside.txt").display().to_string();
    let r = call(
        local,
        Some(&id),
        "upload_file",
        json!({"selector": "#file", "path": inside}),
    );
    assert_eq!(r["ok"], true, "{r}");
    call(local, Some(&id), "close", json!({}));
}

#[test]
fn splash_refuses_local_files_as_splash_does() {
    let scene = Scene::new("splash-files");
    let addr = splash();
    let secret = format!("file://{}", scene.secret().display());
    let q = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    for endpoint in ["render.html", "render.png", "render.json"] {
        let r = request(
            addr,
            "GET",
            &format!("/{endpoint}?url={}", q(&secret)),
            &[],
            b"",
        );
        assert_eq!(
            r.status,
            400,
            "{endpoint}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let v = r.json();
        assert_eq!(v["type"], "BadOption", "{v}");
        assert!(!v.to_string().contains(SECRET_TEXT));
    }
    let baseurl = request(
        addr,
        "GET",
        &format!(
            "/render.html?url={}&baseurl={}",
            q(&url_a("basic.html")),
            q(&secret)
        ),
        &[],
        b"",
    );
    assert_eq!(
        baseurl.status,
        400,
        "{}",
        String::from_utf8_lossy(&baseurl.body)
    );
    for (what, call) in [
        ("go", format!("assert(splash:go({secret:?}))")),
        ("http_get", format!("local r = splash:http_get({secret:?}) return r.body")),
        ("upload", format!(
            "assert(splash:go({:?})) local r = page:upload_file{{ selector = '#file', path = {:?} }} return r.code",
            url_a("widgets.html"),
            scene.secret().display().to_string()
        )),
    ] {
        let script = format!("function main(splash)\n{call}\nend");
        let r = super::splash::post(addr, "/execute", &json!({"lua_source": script}));
        let body = String::from_utf8_lossy(&r.body).to_string();
        assert!(!body.contains(SECRET_TEXT), "{what}: {body}");
        assert!(r.status == 400 || body.contains("INVALID_ARGUMENT"), "{what}: {} {body}", r.status);
    }
    // A page that embeds a local file shows nothing of it.
    let frame = format!("data:text/html,<iframe src=\"{secret}\"></iframe><p>outer</p>");
    let r = request(
        addr,
        "GET",
        &format!("/render.json?url={}&iframes=1&html=1", q(&frame)),
        &[],
        b"",
    );
    assert!(!String::from_utf8_lossy(&r.body).contains(SECRET_TEXT));
    // The flag widens it, as Splash's --allowed-schemes does.
    let wide = super::splash::start(SplashOptions {
        port: 0,
        schemes: vec!["http".into(), "file".into()],
        ..SplashOptions::default()
    });
    let r = request(
        wide,
        "GET",
        &format!("/render.html?url={}", q(&secret)),
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(String::from_utf8_lossy(&r.body).contains(SECRET_TEXT));
}

#[test]
fn a_local_script_uploads_and_writes_by_relative_paths_from_its_working_directory() {
    // `cargo test` runs in the package's directory: the fixture by its relative path.
    let shot = format!("moonpilot-relative-{}.png", std::process::id());
    lua(&format!(
        r##"
        page:navigate{{ url = A .. "/widgets.html" }}:unwrap()
        local r = page:upload_file{{ selector = "#file", path = "tests/fixtures/upload-me.txt" }}
        eq(r.ok, true, tostring(r))
        eq(page:execute_js{{ body = "document.getElementById('file-shown').textContent" }}:unwrap().result, "file: upload-me.txt")
        local s = page:screenshot{{ path = "{shot}" }}:unwrap()
        has(s.path, "/{shot}")
        -- Anywhere the user may read: a local script is the user's own code.
        eq(page:navigate{{ url = "file://" .. s.path }}.ok, true)
    "##
    ));
    let written = Path::new(env!("CARGO_MANIFEST_DIR")).join(&shot);
    assert!(written.exists(), "written in the working directory");
    let _ = std::fs::remove_file(written);
}

#[test]
fn the_seed_protocol_on_loopback_keeps_its_http_clients_working() {
    // The seed's own semantics stand on loopback: a command without any of the new options.
    let addr = seed(false, false);
    let r = command(addr, &json!({"method": "list_methods"}));
    assert_eq!(r.json()["ok"], true);
}
