//! `moonpilot report` (issue 25): a real run's page opened from `file://` in moonpilot's own
//! browser and read back — the summary against the trace, the failed step's row, its enlarged
//! screenshot and error text, the filters and search, the click point, the observation text —
//! with the secret the run typed nowhere in it; `--json`, `--images beside`, evidence removed by
//! retention, `serve`'s `/report/<task>`, bad input (exit 2), and the bound: a 3,000-command
//! run written and opened in under 2 s each.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::support::harness::{lua, url_a, ELEMENT_HELPERS};
use super::support::synthetic::synthetic_run;

/// What the run types into the password field.
const SECRET: &str = "Tr0ub4dor-s3cret-91";

/// The run: a form filled (the password too), a state read, a click, and a click on nothing
/// whose `:unwrap()` ends the script at line 9.
const FLOW: &str = r##"local page = browser.start{}
page:navigate{ url = browser.args.url }:unwrap()
page:input_text_by_selector{ selector = "input[name=pw]", text = browser.args.secret }:unwrap()
page:input_text_by_selector{ selector = "#user", text = "alice" }:unwrap()
print("typed the user")
page:get_browser_state{}:unwrap()
page:click_element_by_selector{ selector = "button" }:unwrap()
print("clicked <b>send</b>")
page:click_element_by_selector{ selector = "#missing-button" }:unwrap()
print("not reached")
"##;

fn moonpilot(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    command.env("MOONPILOT_STATE_DIR", state);
    command
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The trace lines of run `id` in the state directory `state`.
fn run_lines(state: &Path, id: &str) -> Vec<Value> {
    let mut lines = Vec::new();
    for day in std::fs::read_dir(state.join("logs/trace"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(day.path().join("calls.jsonl")).unwrap_or_default();
        lines.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["run"] == id),
        );
    }
    lines
}

/// A run of [`FLOW`] with `--report`: (state dir, the run's directory, the report).
fn failing_run(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let state = fresh_dir(name);
    let script = state.join("flow.lua");
    std::fs::write(&script, FLOW).unwrap();
    let out = moonpilot(&state)
        .arg("run")
        .arg(&script)
        .args(["--arg", &format!("url={}", url_a("form.html"))])
        .args(["--arg", &format!("secret={SECRET}")])
        .arg("--report")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("flow.lua:9:"), "{stderr}");
    let said = stderr
        .lines()
        .find_map(|l| l.strip_prefix("moonpilot: report: "))
        .unwrap_or_else(|| panic!("no report line: {stderr}"));
    let page = PathBuf::from(said.split(" (").next().unwrap());
    let run_dir = page.parent().unwrap().to_path_buf();
    assert_eq!(run_dir.parent().unwrap(), state.join("runs"));
    (state, run_dir, page)
}

#[test]
fn a_failing_run_reads_back_in_the_browser() {
    let (state, run_dir, page) = failing_run("browser");
    let id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let lines = run_lines(&state, &id);
    let failures = lines.iter().filter(|l| l["ok"] == false).count();
    assert_eq!(lines.len(), 7, "start, navigate, 2 inputs, state, 2 clicks");
    assert_eq!(failures, 1);
    // Each line says the script line that sent it (issue 36 §8).
    for (i, line) in [1, 2, 3, 4, 6, 7, 9].iter().enumerate() {
        let at = lines[i]["at"].as_str().unwrap_or_default();
        assert!(at.ends_with(&format!("flow.lua:{line}")), "{}", lines[i]);
    }
    let click = lines
        .iter()
        .find(|l| l["result"]["clickPoint"].is_array())
        .unwrap();
    let point_x = click["result"]["clickPoint"][0].as_f64().unwrap();

    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(SECRET), "the typed secret is in the page");
    assert!(
        html.contains("clicked &lt;b&gt;send&lt;/b&gt;"),
        "printed text is escaped"
    );
    for network in ["src=\"http", "href=\"http", "src=\"//", "@import", "url("] {
        assert!(!html.contains(network), "{network} in the page");
    }

    let snippet = format!(
        r##"{ELEMENT_HELPERS}
        page:navigate{{ url = "file://" .. {page:?} }}:unwrap()
        -- The summary's counts are the trace's.
        eq(js("document.getElementById('summary').dataset.commands"), "{commands}", "commands")
        eq(js("document.getElementById('summary').dataset.failures"), "{failures}", "failures")
        eq(js("document.querySelector('#stat-commands b').textContent"), "{commands}")
        eq(js("document.querySelector('#stat-failures b').textContent"), "{failures}")
        eq(js("document.querySelectorAll('.step').length"), {commands})
        eq(js("document.querySelectorAll('#timeline .bar').length"), {commands})
        eq(js("document.querySelectorAll('#timeline .lane').length"), 1, "one task, one lane")
        eq(js("document.getElementById('run-status').textContent"), "failed")
        eq(js("document.getElementById('output-text').textContent"), "typed the user\nclicked <b>send</b>\n")
        -- The script's error, its file:line linked to the failing step.
        has(js("document.querySelector('#error .error-text').textContent"), "flow.lua:9: ELEMENT_NOT_FOUND")
        has(js("document.querySelector('#error .error-link').textContent"), "/flow.lua:9")
        eq(js("document.querySelector('#error .error-link').dataset.step"), "7")
        has(js("document.querySelector('#error .source').textContent"), "#missing-button")

        -- Each row, collapsed, says what the step acted on and the script line that sent it.
        eq(js("document.querySelector('#step-7 .row .target').textContent"), "selector #missing-button")
        has(js("document.querySelector('#step-7 .row .at').textContent"), "flow.lua:9")
        eq(js("document.querySelector('#step-2 .row .target').textContent"), "{url}")
        has(js("document.querySelector('#step-5 .row .at').textContent"), "flow.lua:6")
        -- The failed step's row: its details open with the error text and a screenshot.
        eq(js("document.querySelector('.step.failed').id"), "step-7")
        eq(js("document.querySelector('.step.failed .detail').hidden"), true)
        page:click_element_by_selector{{ selector = ".step.failed .row .method" }}:unwrap()
        eq(js("document.querySelector('.step.failed .detail').hidden"), false, "details open")
        has(js("document.querySelector('.step.failed .error-msg').textContent"), "no element matches selector `#missing-button`")
        has(js("document.querySelector('.step.failed .outcome').textContent"), "ELEMENT_NOT_FOUND")
        has(js("document.querySelector('.step.failed .params').textContent"), "#missing-button")
        has(js("document.querySelector('.step.failed h4 .sub').textContent"), "after step #6")
        -- Enlarged: the lightbox shows the step's screenshot, loaded.
        eq(js("document.getElementById('lightbox').hidden"), true)
        page:click_element_by_selector{{ selector = ".step.failed .detail img.shot-img" }}:unwrap()
        eq(js("document.getElementById('lightbox').hidden"), false, "enlarged")
        eq(js("document.getElementById('lightbox-img').src === document.querySelector('.step.failed').dataset.shot"), true, "the step's screenshot")
        eq(js("document.querySelector('.step.failed').dataset.full"), nil, "embedded: the thumbnail is the enlargement")
        page:wait_for_function{{ expression = "document.getElementById('lightbox-img').complete" }}:unwrap()
        eq(js("document.getElementById('lightbox-img').naturalWidth > 300"), true, "a real image")
        eq(js("document.getElementById('lightbox-img').getBoundingClientRect().width > 600"), true, "enlarged")
        has(js("document.getElementById('lightbox-caption').textContent"), "#7 click_element_by_selector")
        page:click_element_by_selector{{ selector = "#lightbox" }}:unwrap()
        eq(js("document.getElementById('lightbox').hidden"), true, "a click closes it")

        -- The click point is drawn where the click landed (CSS px of the 1280 px viewport).
        local left = js("document.querySelector('#step-6 .detail .dot').style.left")
        eq(math.abs(tonumber(left:match("[%d.]+")) - {point_x} / 1280 * 100) < 0.1, true, "dot at " .. left)
        -- The state read's observation text, with the password masked.
        has(js("document.querySelector('#step-5 .observation pre').textContent"), "value='[redacted]'")

        -- Filters: failed only, then a method, then the search box.
        local s = page:get_browser_state{{}}:unwrap()
        page:select_dropdown_option{{ index = by_id(s)["filter-status"].index, text = "failed" }}:unwrap()
        eq(js("document.querySelectorAll('.step:not([hidden])').length"), {failures})
        eq(js("document.getElementById('shown').textContent"), "1 of 7 shown")
        page:select_dropdown_option{{ index = by_id(s)["filter-status"].index, text = "ok" }}:unwrap()
        eq(js("document.querySelectorAll('.step:not([hidden])').length"), 6)
        page:select_dropdown_option{{ index = by_id(s)["filter-method"].index, text = "input_text_by_selector" }}:unwrap()
        eq(js("document.querySelectorAll('.step:not([hidden])').length"), 2)
        page:select_dropdown_option{{ index = by_id(s)["filter-method"].index, text = "every method" }}:unwrap()
        page:select_dropdown_option{{ index = by_id(s)["filter-status"].index, text = "ok and failed" }}:unwrap()
        local shown = "Array.from(document.querySelectorAll('.step:not([hidden])')).map(s => s.id).join()"
        page:input_text_by_selector{{ selector = "#search", text = "missing-button" }}:unwrap()
        eq(js(shown), "step-7", "params are searched")
        page:input_text_by_selector{{ selector = "#search", text = "alice" }}:unwrap()
        eq(js(shown), "step-4,step-5", "the typed text and the state read that shows it")
        page:clear_text{{ selector = "#search" }}:unwrap()
        eq(js("document.querySelectorAll('.step:not([hidden])').length"), 7)
        -- A link from the summary opens its step.
        page:click_element_by_selector{{ selector = "#summary .slowest a" }}:unwrap()
        eq(js("document.querySelectorAll('.step.open').length >= 2"), true)
        "##,
        page = page.display().to_string(),
        commands = lines.len(),
        url = url_a("form.html"),
    );
    lua(&snippet);
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn the_report_as_json_with_images_beside_and_evidence_removed_by_retention() {
    let (state, run_dir, _) = failing_run("json");
    let id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let lines = run_lines(&state, &id);
    // No DIR: the newest run of the state directory.
    let out = moonpilot(&state)
        .args(["report", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"]["id"], id);
    assert_eq!(report["run"]["status"], "failed");
    assert_eq!(report["run"]["exitCode"], 1);
    assert_eq!(report["summary"]["commands"], lines.len());
    assert_eq!(report["summary"]["failures"], 1);
    assert_eq!(
        report["summary"]["screenshots"], 5,
        "navigate, 2 inputs, state, click"
    );
    assert_eq!(
        report["output"],
        json!(["typed the user", "clicked <b>send</b>"])
    );
    assert_eq!(report["error"]["line"], 9);
    assert_eq!(report["error"]["step"], 7);
    let steps = report["steps"].as_array().unwrap();
    for (step, line) in steps.iter().zip(&lines) {
        assert_eq!(step["method"], line["method"]);
        assert_eq!(
            step["params"], line["request"],
            "params as the trace masked them"
        );
        assert_eq!(step["ok"], line["ok"]);
    }
    assert_eq!(steps[2]["params"]["text"], "***");
    assert_eq!(
        steps[0]["task"], steps[1]["task"],
        "start is in its task's lane"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(SECRET));

    // Beside: the thumbnails and the screenshots in a folder next to a small page.
    let beside = state.join("beside.html");
    let out = moonpilot(&state)
        .arg("report")
        .arg(&run_dir)
        .args(["--images", "beside", "--out"])
        .arg(&beside)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&beside).unwrap();
    assert!(
        html.contains("data-shot=\"beside_files/t2.png\""),
        "relative thumbnails"
    );
    assert!(!html.contains("data:image/png"));
    let thumb = std::fs::read(state.join("beside_files/t2.png")).unwrap();
    let full = std::fs::read(state.join("beside_files/f2.png")).unwrap();
    assert!(thumb.starts_with(b"\x89PNG") && thumb.len() < full.len());
    // In the browser: the thumbnail beside the page, the full screenshot when enlarged, the
    // click point on it (the content security policy lets file: images in).
    lua(&format!(
        r##"
        local function js(body) return page:execute_js{{ body = body }}:unwrap().result end
        page:navigate{{ url = "file://" .. {beside:?} }}:unwrap()
        page:click_element_by_selector{{ selector = "#step-6 .row .method" }}:unwrap()
        page:wait_for_function{{ expression = "document.querySelector('#step-6 img.shot-img').naturalWidth > 0" }}:unwrap()
        eq(js("document.querySelector('#step-6 img.shot-img').naturalWidth"), 427, "the thumbnail")
        page:click_element_by_selector{{ selector = "#step-6 .detail img.shot-img" }}:unwrap()
        page:wait_for_function{{ expression = "document.getElementById('lightbox-img').naturalWidth > 0" }}:unwrap()
        eq(js("document.getElementById('lightbox-img').naturalWidth"), 1280, "the full screenshot")
        eq(js("document.getElementById('lightbox-dot').hidden"), false, "the click point")
        "##,
        beside = beside.display().to_string(),
    ));

    // --open hands the page to $BROWSER.
    let opener = state.join("opener.sh");
    let opened = state.join("opened.txt");
    std::fs::write(
        &opener,
        // Written whole (renamed), so that the test never reads it half-written.
        format!(
            "#!/bin/sh\necho \"$1\" > {0}.part && mv {0}.part {0}\n",
            opened.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&opener)
        .status()
        .unwrap();
    let out = moonpilot(&state)
        .env("BROWSER", &opener)
        .args(["report", "--open"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !opened.exists() && Instant::now() < deadline {
        super::support::load::pause(Duration::from_millis(20));
    }
    let page = run_dir.join("report.html");
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap().trim(),
        page.display().to_string()
    );

    // A screenshot retention removed says so, never a broken image.
    let shot = PathBuf::from(lines[1]["result"]["screenshot_path"].as_str().unwrap());
    std::fs::remove_file(&shot).unwrap();
    let again = state.join("again.html");
    let out = moonpilot(&state)
        .arg("report")
        .arg(&state)
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&again).unwrap();
    let step2 = &html[html.find("id=\"step-2\"").unwrap()..html.find("id=\"step-3\"").unwrap()];
    assert!(step2.contains("evidence removed by retention"), "{step2}");
    assert!(!step2.contains("data-shot"), "{step2}");
    assert!(html.contains("<b>1</b><span>removed by retention</span>"));
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn bad_input_is_a_clear_error_and_exit_2() {
    let state = fresh_dir("bad");
    let cases: [(&[&str], &str); 5] = [
        (&["report"], "no recorded run in"),
        (
            &["report", "/nonexistent/run"],
            "no such directory: /nonexistent/run",
        ),
        (&["report", "/tmp"], "neither a run's directory"),
        (&["report", "--task", "abc"], "`abc` is no task id"),
        (&["report", "--task", "123"], "no command of task `123`"),
    ];
    for (args, said) in cases {
        let out = moonpilot(&state).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A run directory whose record is broken.
    let broken = state.join("runs/20260101-000000.000-1-1");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("run.json"), "{").unwrap();
    let out = moonpilot(&state).arg("report").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a run record"));
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn serve_answers_a_report_per_task() {
    use super::support::http::request;
    let addr = super::serve::open();
    let id = super::serve::task_at(addr, "form.html");
    let click = super::serve::call(
        addr,
        Some(&id),
        "click_element_by_selector",
        json!({"selector": "#nope"}),
    );
    assert_eq!(click["ok"], false);
    let r = request(addr, "GET", &format!("/report/{id}"), &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let html = String::from_utf8_lossy(&r.body);
    assert!(
        html.contains("data-commands=\"3\""),
        "start, go_to_url, the click"
    );
    assert!(html.contains("data-failures=\"1\""));
    // Screenshots come from the server's own /data.
    let shot = format!("data-shot=\"/data/{id}/1.png\"");
    assert!(html.contains(&shot), "{shot}");
    assert_eq!(
        request(addr, "GET", &format!("/data/{id}/1.png"), &[], b"").status,
        200
    );
    for bad in ["/report/4242", "/report/abc"] {
        let r = request(addr, "GET", bad, &[], b"");
        assert_eq!(r.status, 404, "{bad}");
        assert_eq!(r.json()["ok"], false);
    }
    let r = request(addr, "GET", "/report/4242", &[], b"");
    assert!(r.json()["msg"]
        .as_str()
        .unwrap()
        .contains("no command of task `4242`"));
    super::serve::call(addr, Some(&id), "close", json!({}));
}

#[test]
fn a_3000_command_run_writes_and_opens_in_under_2_s() {
    let state = fresh_dir("big");
    let run_dir = synthetic_run(&state, 3_000, (1280, 800));
    let out = state.join("big.html");
    // The best of up to six tries, stopping at the first under the bound: the bound is the
    // report's, not that of the browsers other tests run beside it on two cores.
    let mut best = Duration::MAX;
    let mut written = None;
    for _ in 0..6 {
        if best < Duration::from_secs(2) {
            break;
        }
        let started = Instant::now();
        written = Some(
            moonpilot::report::write(
                &moonpilot::report::Subject::Run(run_dir.clone()),
                &moonpilot::report::Images::Embed,
                &out,
                false,
            )
            .unwrap(),
        );
        best = best.min(started.elapsed());
    }
    let written = written.unwrap();
    eprintln!(
        "report of 3,000 commands (200 screenshots of 1280x800): {best:?}, {} KiB",
        written.bytes / 1024
    );
    assert_eq!(written.commands, 3_000);
    assert_eq!(written.failures, 31);
    assert!(best < Duration::from_secs(2), "{best:?}");
    assert!(
        written.bytes < 24 * 1024 * 1024,
        "README states 24 MiB: {}",
        written.bytes
    );
    let html = std::fs::read_to_string(&out).unwrap();
    // 198 screenshots, and the 2 failed steps among the newest 200 show their task's last one.
    assert_eq!(
        html.matches("data-shot=\"data:image/png;base64,").count(),
        200
    );
    let snippet = format!(
        r##"
        local best = math.huge
        for _ = 1, 6 do
          if best < 2000 then break end
          page:navigate{{ url = "about:blank" }}:unwrap()
          local t = browser.clock()
          page:navigate{{ url = "file://" .. {out:?} }}:unwrap()
          eq(page:execute_js{{ body = "document.querySelectorAll('.step').length" }}:unwrap().result, 3000)
          eq(page:execute_js{{ body = "document.getElementById('shown').textContent" }}:unwrap().result, "3000 of 3000 shown")
          best = math.min(best, (browser.clock() - t) * 1000)
        end
        print(string.format("report of 3,000 commands opened in %.0f ms", best))
        eq(page:execute_js{{ body = "document.querySelectorAll('#timeline .lane').length" }}:unwrap().result, 4, "a lane per task")
        eq(page:execute_js{{ body = "document.querySelectorAll('#filter-lane option').length" }}:unwrap().result, 5)
        eq(best < 2000, true, "opened in " .. best .. " ms")
        -- The last step's thumbnail is loaded (lazily, as its row comes into view).
        page:click_element_by_selector{{ selector = "#step-3000 .row .method" }}:unwrap()
        page:wait_for_function{{ expression = "document.querySelector('#step-3000 img.shot-img').naturalWidth > 0" }}:unwrap()
        eq(page:execute_js{{ body = "document.querySelector('#step-3000 img.shot-img').naturalWidth" }}:unwrap().result, 427)
        "##,
        out = out.display().to_string(),
    );
    lua(&snippet);
    let _ = std::fs::remove_dir_all(state);
}

#[test]
fn ctrl_c_still_writes_the_report() {
    use std::io::BufRead;
    let state = fresh_dir("int");
    let script = state.join("hold.lua");
    std::fs::write(
        &script,
        "local page = browser.start{}\npage:navigate{ url = browser.args.url }:unwrap()\n\
         print('READY')\nio.stdout:flush()\nbrowser.sleep(60000)\n",
    )
    .unwrap();
    let mut child = moonpilot(&state)
        .arg("run")
        .arg(&script)
        .args(["--arg", &format!("url={}", url_a("basic.html"))])
        .arg("--report")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "READY");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("moonpilot: report: "), "{stderr}");
    let out = moonpilot(&state)
        .args(["report", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"]["status"], "interrupted");
    assert_eq!(report["run"]["exitCode"], 130);
    assert_eq!(report["output"], json!(["READY"]));
    let id = report["run"]["id"].as_str().unwrap();
    assert_eq!(report["summary"]["commands"], run_lines(&state, id).len());
    assert_eq!(report["steps"][1]["method"], "navigate");
    let page = state.join("runs").join(id).join("report.html");
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("badge interrupted"));
    // The task's own report, from the trace: its start and its navigate.
    let task = report["steps"][1]["task"].as_str().unwrap();
    let out = moonpilot(&state)
        .args(["report", "--task", task])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(state.join(format!("reports/task-{task}.html"))).unwrap();
    assert!(html.contains("data-commands=\"2\""));
    assert!(html.contains(&format!("every traced command of task <code>{task}</code>")));
    let _ = std::fs::remove_dir_all(state);
}
