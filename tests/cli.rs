//! The binary: `moonpilot run` exit codes and output, `moonpilot methods`, the quickstart.

use std::process::Command;

fn moonpilot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    command.env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir());
    command
}

#[test]
fn methods_lists_the_registry() {
    let out = moonpilot().arg("methods").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("click_element_by_index") && text.contains("get_browser_state"));
    let out = moonpilot().args(["methods", "--json"]).output().unwrap();
    let specs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nav = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "navigate")
        .unwrap();
    assert_eq!(nav["aliasOf"], "go_to_url");
    assert_eq!(nav["params"][0]["name"], "url");
}

#[test]
fn run_exit_codes() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("ok.lua");
    std::fs::write(&ok, "print('hello ' .. browser.args.who)\n").unwrap();
    let out = moonpilot()
        .arg("run")
        .arg(&ok)
        .args(["--arg", "who=world"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello world");

    let bad = dir.join("bad.lua");
    std::fs::write(&bad, "local x = 1\nerror('boom')\n").unwrap();
    let out = moonpilot().arg("run").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.lua:2:") && err.contains("boom"), "{err}");

    let out = moonpilot()
        .args(["run", "/nonexistent/x.lua"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = moonpilot()
        .arg("run")
        .arg(&ok)
        .args(["--arg", "novalue"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = moonpilot().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

/// The trace writer batches its writes; the end of a run still leaves every command's line.
#[test]
fn a_run_leaves_every_command_in_the_trace() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("calls.lua");
    std::fs::write(
        &script,
        "assert(browser.call('list_methods').ok)\nassert(browser.call('get_config').ok)\n",
    )
    .unwrap();
    let trace = dir.join("trace");
    let out = moonpilot()
        .current_dir(&dir)
        .arg("run")
        .arg(&script)
        .arg("--trace-dir")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = trace.join(moonpilot::trace::today()).join("calls.jsonl");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let methods: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["method"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        methods,
        ["list_methods", "get_config"],
        "{}",
        file.display()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn quickstart_example_runs_end_to_end() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = moonpilot()
        .current_dir(std::env::temp_dir())
        .arg("run")
        .arg(format!("{root}/examples/quickstart.lua"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("quickstart: done"), "{stdout}");
}

/// Starts `moonpilot run` on a script that starts a task, prints the browser's profile
/// directory and then sleeps; answers the child once that line is read (the engine is running).
fn run_holding_script(name: &str) -> (std::process::Child, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("hold.lua");
    std::fs::write(
        &script,
        "local p = browser.start{}\nprint(browser.call('list_tasks').data.browser.profileDir)\nio.stdout:flush()\nbrowser.sleep(60000)\n",
    )
    .unwrap();
    let mut child = moonpilot()
        .arg("run")
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, std::path::PathBuf::from(line.trim()))
}

#[test]
fn ctrl_c_stops_the_script_and_closes_the_browser() {
    let (child, profile) = run_holding_script("int");
    assert!(profile.is_dir());
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert!(!profile.exists(), "shutdown removed the temporary profile");
}

#[test]
fn a_killed_engine_leaves_no_browser_behind() {
    let (mut child, profile) = run_holding_script("kill");
    assert!(
        profile.is_dir(),
        "the browser runs with profile {profile:?}"
    );
    child.kill().unwrap(); // SIGKILL: no destructor, no shutdown.
    child.wait().unwrap();
    // The watchdog kills Chromium and removes its temporary profile within a few seconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        while profile.exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    assert!(
        !profile.exists(),
        "the temporary profile {profile:?} is gone"
    );
}

/// The `dataDir` a `moonpilot run` reports through `get_config`, with `env` set and the
/// state-dir variables cleared first.
fn data_dir_with(env: &[(&str, &std::path::Path)], args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-where-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("where.lua");
    std::fs::write(&script, "print(browser.call('get_config').data.dataDir)\n").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    command
        .env_remove("MOONPILOT_STATE_DIR")
        .env_remove("XDG_STATE_HOME")
        .current_dir(&dir)
        .arg("run")
        .arg(&script)
        .args(args)
        .arg("--no-trace");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Issue 10 #9: data/ and logs/ go to the documented state directory, whichever directory the
/// user runs from — flag, then MOONPILOT_STATE_DIR, then $XDG_STATE_HOME/moonpilot, then
/// ~/.local/state/moonpilot.
#[test]
fn issue10_the_state_dir_is_chosen_by_flag_env_xdg_then_home() {
    let root = std::env::temp_dir().join(format!("moonpilot-cli-state-{}", std::process::id()));
    let (flag, env, xdg, home) = (
        root.join("flag"),
        root.join("env"),
        root.join("xdg"),
        root.join("home"),
    );
    let flag_s = flag.display().to_string();
    assert_eq!(
        data_dir_with(
            &[
                ("MOONPILOT_STATE_DIR", &env),
                ("XDG_STATE_HOME", &xdg),
                ("HOME", &home)
            ],
            &["--state-dir", &flag_s]
        ),
        flag.join("data").display().to_string()
    );
    assert_eq!(
        data_dir_with(
            &[
                ("MOONPILOT_STATE_DIR", &env),
                ("XDG_STATE_HOME", &xdg),
                ("HOME", &home)
            ],
            &[]
        ),
        env.join("data").display().to_string()
    );
    assert_eq!(
        data_dir_with(&[("XDG_STATE_HOME", &xdg), ("HOME", &home)], &[]),
        xdg.join("moonpilot/data").display().to_string()
    );
    assert_eq!(
        data_dir_with(&[("HOME", &home)], &[]),
        home.join(".local/state/moonpilot/data")
            .display()
            .to_string()
    );
    let _ = std::fs::remove_dir_all(root);
}

/// Issue 10 #9: a run writes nothing into the directory it was started from; its evidence and
/// trace are under the state dir, receipts name real files there, and evidence is bounded
/// (`--keep-evidence`): older files of the task are deleted as new ones land.
#[test]
fn issue10_evidence_lands_in_the_state_dir_and_stays_bounded() {
    let root = std::env::temp_dir().join(format!("moonpilot-cli-bound-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (cwd, state) = (root.join("cwd"), root.join("state"));
    std::fs::create_dir_all(&cwd).unwrap();
    let script = root.join("shots.lua");
    std::fs::write(
        &script,
        "local page = browser.start{}\n\
         page:navigate{ url = browser.args.url }:unwrap()\n\
         local last\n\
         for i = 1, 5 do last = page:get_browser_state{}:unwrap() end\n\
         print(last.state_file)\n\
         print(last.screenshot_path)\n",
    )
    .unwrap();
    let out = moonpilot()
        .current_dir(&cwd)
        .env("MOONPILOT_STATE_DIR", &state)
        .arg("run")
        .arg(&script)
        .args([
            "--arg",
            &format!("url={}", crate::support::harness::url_a("basic.html")),
        ])
        .args(["--keep-evidence", "4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let (state_file, shot) = (lines.next().unwrap(), lines.next().unwrap());
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing in the current directory"
    );
    for path in [state_file, shot] {
        let p = std::path::Path::new(path);
        assert!(
            p.is_absolute() && p.starts_with(state.join("data")),
            "{path}"
        );
        assert!(p.is_file(), "{path} is a real file");
    }
    let task_dir = std::path::Path::new(state_file).parent().unwrap();
    let mut kept: Vec<String> = std::fs::read_dir(task_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert_eq!(
        kept.len(),
        4,
        "5 reads wrote 10 files, 4 are kept: {kept:?}"
    );
    let trace = state
        .join("logs/trace")
        .join(moonpilot::trace::today())
        .join("calls.jsonl");
    assert!(trace.is_file(), "{}", trace.display());
    let _ = std::fs::remove_dir_all(root);
}

/// Issue 10 #15: first-run rough edges — a browser that does not start is a start-up error
/// (exit 2, a plain message, no traceback into the bridge); a syntax error is a usage error
/// (exit 2); a directory is said to be one; log lines carry no colour codes on a pipe.
#[test]
fn issue10_first_run_errors_are_usage_class_and_plain() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-first-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let start = dir.join("start.lua");
    std::fs::write(
        &start,
        "local page = browser.start{}\nprint('unreachable')\n",
    )
    .unwrap();
    let out = moonpilot()
        .arg("run")
        .arg(&start)
        .args(["--chromium", "/bin/false"])
        .env("MOONPILOT_LOG", "debug")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("moonpilot: the browser did not start: "),
        "{err}"
    );
    assert!(
        err.contains("/bin/false") && err.contains("--chromium"),
        "{err}"
    );
    assert!(
        !err.contains("prelude.lua") && !err.contains("stack traceback"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no ANSI codes when stderr is a pipe: {err:?}"
    );
    assert!(out.stdout.is_empty());

    let syntax = dir.join("syntax.lua");
    std::fs::write(&syntax, "local x = = 1\n").unwrap();
    let out = moonpilot().arg("run").arg(&syntax).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("syntax error") && err.contains("syntax.lua:1:"),
        "{err}"
    );

    for host in ["run", "watch"] {
        let out = moonpilot().arg(host).arg(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{host}: {err}");
        assert!(
            err.contains("is a directory, not a Lua script"),
            "{host}: {err}"
        );
    }
    // A script error that is not the start is still exit 1 with its line.
    let caught = dir.join("caught.lua");
    std::fs::write(&caught, "pcall(browser.start, {})\nerror('boom')\n").unwrap();
    let out = moonpilot()
        .arg("run")
        .arg(&caught)
        .args(["--chromium", "/bin/false"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("caught.lua:2:") && err.contains("boom"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Entries of the temporary directory that a run with process id `pid` left: profiles, run
/// dirs, and Chromium's own `org.chromium.*` files made since `since`.
fn leftovers(pid: u32, since: std::time::SystemTime) -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let ours = name.starts_with(&format!("moonpilot-profile-{pid}-"))
                || name.starts_with(&format!("moonpilot-run-{pid}-"));
            let chromiums = name.starts_with("org.chromium.")
                && e.metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= since);
            ours || chromiums
        })
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect()
}

#[test]
fn issue10_a_browser_killed_mid_navigation_leaves_nothing_behind() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-kill-nav-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("kill.lua");
    let slow = crate::support::harness::url_a("slow?ms=4000");
    std::fs::write(
        &script,
        format!(
            r#"local page = browser.start{{}}
local pid = page:call("get_config", {{}}).data.browser.pid
assert(pid, "the browser's pid")
browser.spawn(function() browser.sleep(500); os.execute("kill -9 " .. pid) end)
local r = page:navigate{{ url = "{slow}" }}
print("navigate", r.ok, r.code)
"#
        ),
    )
    .unwrap();
    for round in 0..3 {
        let since = std::time::SystemTime::now();
        let child = moonpilot()
            .arg("run")
            .arg(&script)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.code().is_some(), "round {round}: exited");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("navigate\tfalse\tBROWSER_GONE"),
            "round {round}: {stdout}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("chromiumoxide") && !stderr.contains("ERROR"),
            "round {round}: no low-level noise on a browser death: {stderr}"
        );
        let left = leftovers(pid, since);
        assert!(left.is_empty(), "round {round}: left behind {left:?}");
    }
}

#[test]
fn issue10_a_program_that_never_becomes_a_browser_is_a_quick_start_error() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("not-a-browser.sh");
    // A distinctive argument, to find the process afterwards.
    let mark = format!("{}", 90000 + std::process::id() % 9999);
    std::fs::write(&fake, format!("#!/bin/sh\nexec sleep {mark}\n")).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = dir.join("start.lua");
    std::fs::write(&script, "browser.start{}\nprint('started')\n").unwrap();
    let since = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    let child = moonpilot()
        .arg("run")
        .arg(&script)
        .arg("--chromium")
        .arg(&fake)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a start error");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t0.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not-a-browser.sh") && err.contains("no DevTools endpoint"),
        "{err}"
    );
    let left = leftovers(pid, since);
    assert!(left.is_empty(), "left behind {left:?}");
    let running = Command::new("pgrep")
        .args(["-f", &format!("sleep {mark}")])
        .output()
        .unwrap();
    assert!(
        running.stdout.is_empty(),
        "the program was not left running: {}",
        String::from_utf8_lossy(&running.stdout)
    );
}

#[test]
fn issue10_a_cdp_url_that_is_no_browser_says_so() {
    let dir = std::env::temp_dir().join(format!("moonpilot-cli-cdp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("start.lua");
    std::fs::write(&script, "browser.start{}\n").unwrap();
    // The fixture server is an HTTP server, but no browser.
    let not_a_browser = crate::support::harness::url_a("");
    let out = moonpilot()
        .arg("run")
        .arg(&script)
        .arg("--cdp-url")
        .arg(not_a_browser.trim_end_matches('/'))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/json/version` answered HTTP 404: not a Chrome DevTools endpoint"),
        "{err}"
    );
    assert!(!err.contains("URL scheme not supported"), "{err}");
}
