//! The binary: `moonpilot run` exit codes and output, `moonpilot methods`, the quickstart.

use std::process::Command;

fn moonpilot() -> Command {
    Command::new(env!("CARGO_BIN_EXE_moonpilot"))
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
