//! `moonpilot record`: flows performed with real input events (the engine's own commands send
//! CDP `Input.dispatch*`) on a recorded tab; the script written from them must replay to the
//! same end state on the same site, and on a variant of it with other ids, classes and order
//! and extra elements but the same labels and texts; it holds no snapshot index and passes
//! luacheck.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use moonpilot::browser::task::TaskId;
use moonpilot::lua::LuaHost;
use moonpilot::record::{codegen, script, Options, Recording};
use moonpilot::Executor;
use serde_json::{json, Value};

use crate::support::harness::{private, test_config, url_a};

async fn call(ex: &Executor, id: TaskId, method: &str, params: Value) -> Value {
    let r = ex.execute(Some(id), method, params.clone()).await;
    assert!(r.ok, "{method} {params}: {:?} {}", r.msg, r.data);
    r.data
}

/// `input_text_by_selector`.
async fn fill(ex: &Executor, id: TaskId, selector: &str, text: &str) {
    call(
        ex,
        id,
        "input_text_by_selector",
        json!({"selector": selector, "text": text}),
    )
    .await;
}

/// `click_element_by_selector`.
async fn click(ex: &Executor, id: TaskId, selector: &str) {
    call(
        ex,
        id,
        "click_element_by_selector",
        json!({"selector": selector}),
    )
    .await;
}

/// The `Status: …` line of the page and its URL's file name.
const STATE: &str = "return page:execute_js{ body = \"[location.pathname.split('/').pop(), \
    (document.body.innerText.match(/Status: .*/) || [''])[0]]\" }:unwrap().result";

async fn state_of(ex: &Executor, id: TaskId) -> Value {
    let body = "[location.pathname.split('/').pop(), (document.body.innerText.match(/Status: .*/) || [''])[0]]";
    call(ex, id, "execute_js", json!({"body": body})).await["result"].clone()
}

/// Runs `script` (written to `dir/name.lua`) with `STATE` after it: the end state it reached.
async fn replay(ex: &Executor, dir: &Path, name: &str, script: &str) -> Value {
    let path = dir.join(format!("{name}.lua"));
    let source = format!("{script}{STATE}\n");
    std::fs::write(&path, &source).unwrap();
    let host = LuaHost::new(ex.clone(), BTreeMap::new()).unwrap();
    host.run_source_value(&path, &source)
        .await
        .unwrap_or_else(|e| panic!("{name} failed: {e}\n{source}"))
}

/// The script against the variant site (every fixture page `X.html` is `X_v2.html` there).
fn variant(script: &str) -> String {
    ["app_next", "app", "more", "frame"]
        .iter()
        .fold(script.to_string(), |s, page| {
            s.replace(&format!("/{page}.html"), &format!("/{page}_v2.html"))
        })
}

/// luacheck with the repository's settings; a test file (`busted`) with busted's globals and
/// `expect`, as `.luacheckrc` gives `examples/tests/`.
fn luacheck(path: &Path, busted: bool) {
    let mut cmd = std::process::Command::new("luacheck");
    cmd.args(["--no-color", "--codes"]);
    if busted {
        cmd.args([
            "--std",
            "lua54+busted",
            "--read-globals",
            "browser",
            "expect",
            "test",
            "--",
        ]);
    }
    let Ok(out) = cmd
        .arg(path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
    else {
        eprintln!("skipped: luacheck is not installed (tools/test installs it)");
        return;
    };
    assert!(
        out.status.success(),
        "luacheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-record-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records `flow` from `start` on a fresh task and checks its script: replays on the site and
/// on the variant to the end state the flow left; answers the script.
async fn record_and_replay<F, Fut>(ex: Executor, name: &str, start: &str, flow: F) -> String
where
    F: FnOnce(Executor, TaskId) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    record_with(ex, name, start, Options::default(), flow).await
}

/// A fresh task on `start`.
async fn task_on(ex: &Executor, start: &str) -> TaskId {
    let started = ex.execute(None, "start", json!({})).await;
    assert!(started.ok);
    let id = TaskId(started.data["id"].as_str().unwrap().parse().unwrap());
    call(ex, id, "navigate", json!({"url": start})).await;
    id
}

/// [`record_and_replay`] with recording options.
async fn record_with<F, Fut>(
    ex: Executor,
    name: &str,
    start: &str,
    options: Options,
    flow: F,
) -> String
where
    F: FnOnce(Executor, TaskId) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let id = task_on(&ex, start).await;
    let task = ex.engine().task(id).unwrap();
    let recording = Recording::attach(&task, Some(start), options)
        .await
        .unwrap();
    flow(ex.clone(), id).await;
    // The page reports through a binding: its last messages are on their way.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let end = state_of(&ex, id).await;
    let steps = recording.stop();
    let text = script::render(&steps, false, &format!("recorded flow {name}"));
    check_replays(&ex, name, &text, &end).await;
    let _ = ex.execute(Some(id), "close", json!({})).await;
    text
}

/// Checks that `text` passes luacheck, holds no index, and replays twice on the site and once
/// on its variant to the end state `end`.
async fn check_replays(ex: &Executor, name: &str, text: &str, end: &Value) {
    let dir = temp_dir(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upload-me.txt"),
        dir.join("upload-me.txt"),
    )
    .unwrap();
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, text).unwrap();
    luacheck(&path, false);
    assert!(!text.contains("index ="), "no snapshot index:\n{text}");
    for run in 0..2 {
        let got = replay(ex, &dir, &format!("{name}-replay{run}"), text).await;
        assert_eq!(&got, end, "replay {run} of\n{text}");
    }
    let v2 = replay(ex, &dir, &format!("{name}-variant"), &variant(text)).await;
    let want = json!([
        end[0].as_str().unwrap().replace(".html", "_v2.html"),
        end[1]
    ]);
    assert_eq!(v2, want, "on the variant site:\n{}", variant(text));
}

#[test]
fn a_login_and_an_order_form_replay_on_the_site_and_on_its_variant() {
    private(test_config(), |ex| async move {
        let text = record_and_replay(
            ex,
            "order",
            &url_a("record/app.html"),
            |ex, id| async move {
                fill(&ex, id, "#u", "ada").await;
                fill(&ex, id, "#p", "secret").await;
                click(&ex, id, "#go").await;
                call(
                    &ex,
                    id,
                    "select_dropdown_option",
                    json!({"selector": "#ship", "text": "Express"}),
                )
                .await;
                click(&ex, id, "#agree").await;
                click(&ex, id, "input[value=yes]").await;
                fill(&ex, id, "#note", "ring \"twice\"").await;
                call(
                    &ex,
                    id,
                    "mouse_click_by_selector",
                    json!({"selector": "#dbl", "clickCount": 2}),
                )
                .await;
                click(&ex, id, "#place").await;
            },
        )
        .await;
        // The targets a person would write.
        for want in [
            r#"role=textbox[name=\"Username\"s]"#,
            r#"role=textbox[name=\"Password\"s]"#,
            r#"role=button[name=\"Log in\"s]"#,
            r#"role=combobox[name=\"Shipping\"s]"#,
            r#"role=textbox[name=\"A note for the courier\"s]"#,
            "select_dropdown_option",
            "check_element_by_index",
            "clickCount = 2",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
    });
}

#[test]
fn links_shortcuts_uploads_typed_urls_and_back_replay_too() {
    private(test_config(), |ex| async move {
        let next = url_a("record/app_next.html");
        let home = url_a("record/app.html");
        let upload = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/upload-me.txt")
            .display()
            .to_string();
        let text = record_and_replay(ex, "nav", &home.clone(), |ex, id| async move {
            call(
                &ex,
                id,
                "click_element_by_text",
                json!({"text": "Next page"}),
            )
            .await;
            call(&ex, id, "press_key", json!({"key": "Control+k"})).await;
            call(
                &ex,
                id,
                "upload_file",
                json!({"selector": "#f", "path": upload}),
            )
            .await;
            call(&ex, id, "navigate", json!({"url": home})).await;
            call(&ex, id, "go_back", json!({})).await;
            let _ = next;
        })
        .await;
        for want in [
            "press_key{ key = \"Control+k\" }",
            "upload_file",
            "page:go_back():unwrap()",
            r#"role=link[name=\"Next page\"s]"#,
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        // The typed URL is a step; the link's navigation is the click's.
        assert_eq!(text.matches("page:navigate").count(), 2, "{text}");
    });
}

#[test]
fn the_command_writes_its_script_on_ctrl_c() {
    let dir = temp_dir("cli");
    let out = dir.join("recorded_spec.lua");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir())
        .args([
            "record",
            &url_a("record/app.html"),
            "--headless",
            "--test",
            "--out",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("record: recording") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0,
            "the recorder ended before it recorded"
        );
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        child.wait().unwrap().code(),
        Some(0),
        "Ctrl-C writes and exits 0"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("it(\"replays the recording\", function(page)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "page:navigate{{ url = \"{}\" }}",
            url_a("record/app.html")
        )),
        "{text}"
    );
    luacheck(&out, true);
}

/// The `[N]` of the first line of a state text that contains `needle`.
fn index_of(state: &str, needle: &str) -> u64 {
    state
        .lines()
        .find(|l| l.contains(needle))
        .and_then(|l| l.trim_start().trim_start_matches('*').strip_prefix('['))
        .and_then(|l| l.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no indexed line with {needle} in:\n{state}"))
}

/// The shop's end state after the agent-style order flows below.
fn ordered(note: &str, ship: &str) -> Value {
    json!([
        "app.html",
        format!("Status: ordered by ada: {ship}, agree=true, wrap=no, note={note}, doubles=0")
    ])
}

/// Codegen's placeholder for the password a trace leaves out, filled for the replay.
fn with_password(text: &str) -> String {
    assert!(
        text.contains("os.getenv(\"MOONPILOT_SECRET_1\")"),
        "the password is read from the environment:\n{text}"
    );
    text.replace("os.getenv(\"MOONPILOT_SECRET_1\")", "\"secret\"")
}

#[test]
fn confirm_and_prompt_answers_replay_as_the_dialog_policy() {
    private(test_config(), |ex| async move {
        let text = record_and_replay(
            ex,
            "dialogs",
            &url_a("record/more.html"),
            |ex, id| async move {
                call(&ex, id, "set_dialog_behavior", json!({"dismiss": true})).await;
                click(&ex, id, "#del").await;
                call(
                    &ex,
                    id,
                    "set_dialog_behavior",
                    json!({"promptText": "Final"}),
                )
                .await;
                click(&ex, id, "#ren").await;
                assert_eq!(state_of(&ex, id).await[1], "Status: kept; renamed to Final");
            },
        )
        .await;
        // Each answer is set before the click that opens its dialog.
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in\n{text}"));
        assert!(at("dismiss = true") < at("Delete draft"), "{text}");
        assert!(at("Delete draft") < at("promptText = \"Final\""), "{text}");
        assert!(at("promptText = \"Final\"") < at("Rename"), "{text}");
        assert!(
            text.contains("-- the page's confirm \"Delete the draft?\" is dismissed"),
            "{text}"
        );
    });
}

#[test]
fn a_popup_and_the_way_back_to_the_first_tab_replay() {
    private(test_config(), |ex| async move {
        let text = record_and_replay(
            ex,
            "popup",
            &url_a("record/more.html"),
            |ex, id| async move {
                click(&ex, id, "#help").await;
                let (tabs, current) = ex.engine().task(id).unwrap().tabs();
                assert_eq!((tabs.len(), current), (2, 1), "the popup is current");
                fill(&ex, id, "#q", "How?").await;
                click(&ex, id, "#ask").await;
                call(&ex, id, "switch_tab", json!({"pageIndex": 0})).await;
                click(&ex, id, "#del").await;
                assert_eq!(state_of(&ex, id).await[1], "Status: asked How?; deleted");
            },
        )
        .await;
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in\n{text}"));
        assert!(at("Open help") < at("Your question"), "{text}");
        assert!(at("Ask") < at("switch_tab{ pageIndex = 0 }"), "{text}");
        assert!(
            at("switch_tab{ pageIndex = 0 }") < at("Delete draft"),
            "{text}"
        );
        assert_eq!(text.matches("switch_tab").count(), 1, "{text}");
    });
}

#[test]
fn input_in_a_cross_site_frame_is_recorded_with_its_frame() {
    private(test_config(), |ex| async move {
        let text = record_and_replay(
            ex,
            "frame",
            &url_a("record/more.html"),
            |ex, id| async move {
                let pay = |selector: &str| json!({"selector": selector, "frame": "pay"});
                let mut fill = pay("#card");
                fill["text"] = json!("4242 4242");
                call(&ex, id, "input_text_by_selector", fill).await;
                call(&ex, id, "check_element_by_index", pay("#keep")).await;
                call(&ex, id, "click_element_by_selector", pay("#pay")).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                assert_eq!(state_of(&ex, id).await[1], "Status: paid 4242 4242 (saved)");
            },
        )
        .await;
        assert_eq!(text.matches("frame = \"pay\"").count(), 3, "{text}");
        for want in [
            r#"role=textbox[name=\"Card number\"s]"#,
            r#"role=checkbox[name=\"Save the card\"s]"#,
            r#"role=button[name=\"Pay now\"s]"#,
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
    });
}

/// The point (viewport CSS px) of the overlay's button for `check`.
async fn overlay_button(ex: &Executor, id: TaskId, check: &str) -> (f64, f64) {
    let body = format!(
        "(() => {{ const b = document.querySelector('moonpilot-recorder').shadowRoot\
         .querySelector('[data-check={check}]').getBoundingClientRect(); \
         return [b.x + b.width / 2, b.y + b.height / 2]; }})()"
    );
    let at = call(ex, id, "execute_js", json!({"body": body})).await["result"].clone();
    (at[0].as_f64().unwrap(), at[1].as_f64().unwrap())
}

#[test]
fn assertions_added_from_the_overlay_hold_on_replay_and_fail_when_they_should() {
    private(test_config(), |ex| async move {
        let options = Options {
            overlay: true,
            ..Options::default()
        };
        let text = record_with(
            ex.clone(),
            "assert",
            &url_a("record/app.html"),
            options,
            |ex, id| async move {
                for (sel, text) in [("#u", "ada"), ("#p", "secret")] {
                    fill(&ex, id, sel, text).await;
                }
                click(&ex, id, "#go").await;
                fill(&ex, id, "#note", "hi").await;
                for (check, target) in [
                    ("text", "#status"),
                    ("value", "#note"),
                    ("visible", "#place"),
                ] {
                    let (x, y) = overlay_button(&ex, id, check).await;
                    call(&ex, id, "mouse_click", json!({"x": x, "y": y})).await;
                    call(
                        &ex,
                        id,
                        "mouse_click_by_selector",
                        json!({"selector": target}),
                    )
                    .await;
                }
                // The armed clicks were the overlay's: "Place order" did not order.
                assert_eq!(state_of(&ex, id).await[1], "Status: logged in as ada");
            },
        )
        .await;
        for want in [
            r#"assert(seen.text:find("Status: logged in as ada", 1, true)"#,
            r#"assert(seen.value == "hi""#,
            "page:is_visible{ selector = \"role=button[name=\\\"Place order\\\"s]\" }",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        assert!(!text.contains("moonpilot-recorder"), "{text}");
        assert_eq!(
            text.matches("click_element_by_selector").count(),
            1,
            "only the login's click is an action:\n{text}"
        );
        // With another note typed, the value assertion fails and says what it expected.
        let dir = temp_dir("assert-fails");
        assert_eq!(text.matches("text = \"hi\"").count(), 1, "{text}");
        let broken = text.replace("text = \"hi\"", "text = \"ho\"");
        let path = dir.join("broken.lua");
        std::fs::write(&path, &broken).unwrap();
        let host = LuaHost::new(ex.clone(), BTreeMap::new()).unwrap();
        let err = host
            .run_source_value(&path, &broken)
            .await
            .expect_err("the assertion fails");
        assert!(err.to_string().contains("expected the value hi"), "{err}");
        assert!(
            !text.contains("expect(page)"),
            "a plain script has no expect:\n{text}"
        );
    });
}

#[test]
fn an_agents_index_clicks_become_selectors_that_replay_through_codegen() {
    private(test_config(), |ex| async move {
        let app = url_a("record/app.html");
        let id = task_on(&ex, &app).await;
        let state = call(&ex, id, "get_browser_state", json!({})).await["text"]
            .as_str()
            .unwrap()
            .to_string();
        for (needle, text) in [("Username", "ada"), ("Password", "secret")] {
            let index = index_of(&state, needle);
            call(&ex, id, "input_text", json!({"index": index, "text": text})).await;
        }
        let index = index_of(&state, "Log in");
        call(&ex, id, "click_element_by_index", json!({"index": index})).await;
        // A failed command is left out.
        let miss = ex
            .execute(Some(id), "click_element_by_index", json!({"index": 999}))
            .await;
        assert!(!miss.ok);
        let state = call(&ex, id, "get_browser_state", json!({})).await["text"]
            .as_str()
            .unwrap()
            .to_string();
        let shipping = index_of(&state, "Shipping");
        call(
            &ex,
            id,
            "select_dropdown_option",
            json!({"index": shipping, "text": "Overnight"}),
        )
        .await;
        let agree = index_of(&state, "I agree");
        call(&ex, id, "check_element_by_index", json!({"index": agree})).await;
        let note = index_of(&state, "A note for the courier");
        call(
            &ex,
            id,
            "input_text",
            json!({"index": note, "text": "agent"}),
        )
        .await;
        let place = index_of(&state, "Place order");
        call(&ex, id, "click_element_by_index", json!({"index": place})).await;
        let end = state_of(&ex, id).await;
        assert_eq!(end, ordered("agent", "Overnight"));
        ex.engine().flush_trace().await;
        let trace_dir = ex.engine().config.trace_dir.clone().unwrap();
        let lines = moonpilot::report::task_lines(&id.to_string(), &trace_dir);
        let described = lines
            .iter()
            .filter(|l| l["element"]["selector"].is_string())
            .count();
        assert_eq!(
            described, 7,
            "every index command's element is in the trace"
        );
        let text = script::render(&codegen::steps_of(&lines), false, "codegen");
        for gone in ["get_browser_state", "999"] {
            assert!(!text.contains(gone), "{gone} in\n{text}");
        }
        for want in [
            r#"role=textbox[name=\"Username\"s]"#,
            r#"role=button[name=\"Log in\"s]"#,
            "page:select_dropdown_option{\n  selector = \"role=combobox[name=\\\"Shipping\\\"s]\",\n  text = \"Overnight\",",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        check_replays(&ex, "agent", &with_password(&text), &end).await;
    });
}

#[test]
fn an_mcp_sessions_task_replays_through_the_codegen_command() {
    crate::support::harness::harness();
    let mut c = crate::mcp::StdioClient::start(&["--tools", "all"]);
    c.initialize(json!({}));
    let app = url_a("record/app.html");
    let text_of = |r: &Value| {
        r["content"]
            .as_array()
            .and_then(|c| c.iter().find_map(|p| p["text"].as_str()))
            .unwrap_or_default()
            .to_string()
    };
    let opened = c.call("navigate", json!({"url": app}));
    let obs = text_of(&opened);
    for (needle, text) in [("Username", "ada"), ("Password", "secret")] {
        let r = c.call(
            "input_text",
            json!({"index": index_of(&obs, needle), "text": text}),
        );
        assert_eq!(r["isError"], false, "{r}");
    }
    let r = c.call(
        "click_element_by_index",
        json!({"index": index_of(&obs, "Log in")}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let state = text_of(&c.call("get_browser_state", json!({})));
    for (tool, args) in [
        (
            "select_dropdown_option",
            json!({"index": index_of(&state, "Shipping"), "text": "Express"}),
        ),
        (
            "check_element_by_index",
            json!({"index": index_of(&state, "I agree")}),
        ),
        (
            "input_text",
            json!({"index": index_of(&state, "A note for the courier"), "text": "mcp"}),
        ),
        (
            "click_element_by_index",
            json!({"index": index_of(&state, "Place order")}),
        ),
    ] {
        let r = c.call(tool, args);
        assert_eq!(r["isError"], false, "{tool}: {r}");
        let task = r["structuredContent"]["task"].as_str().unwrap_or_default();
        assert!(!task.is_empty(), "{r}");
    }
    let done = c.call("get_browser_state", json!({}));
    let task = done["structuredContent"]["task"]
        .as_str()
        .expect("the session's task")
        .to_string();
    let state_dir = c.state.clone();
    assert!(c.finish().success());
    let out = temp_dir("mcp").join("mcp.lua");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["codegen", &task, "--state-dir"])
        .arg(&state_dir)
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with(&format!("-- Written by `moonpilot codegen {task}`")),
        "{text}"
    );
    let end = ordered("mcp", "Express");
    private(test_config(), move |ex| async move {
        check_replays(&ex, "mcp", &with_password(&text), &end).await;
    });
}

#[test]
fn a_flow_recorded_in_the_repl_is_saved_as_a_script_that_replays() {
    crate::support::harness::harness();
    let file = temp_dir("repl").join("from_repl.lua");
    let app = url_a("record/app.html");
    let input = format!(
        "page:navigate{{ url = \"{app}\" }}\n\
         :record start\n\
         page:navigate{{ url = \"{app}\" }}\n\
         s = page:get_browser_state{{}}:unwrap().text\n\
         function idx(t) for l in s:gmatch('[^\\n]+') do if l:find(t, 1, true) then return tonumber(l:match('%[(%d+)%]')) end end end\n\
         page:input_text{{ index = idx('Username'), text = 'ada' }}\n\
         page:input_text{{ index = idx('Password'), text = 'secret' }}\n\
         page:click_element_by_index{{ index = idx('Log in') }}\n\
         page:click_element_by_index{{ index = 999 }}\n\
         s = page:get_browser_state{{}}:unwrap().text\n\
         page:select_dropdown_option{{ index = idx('Shipping'), text = 'Express' }}\n\
         page:check_element_by_index{{ index = idx('I agree') }}\n\
         page:input_text{{ index = idx('A note for the courier'), text = 'repl' }}\n\
         :record assert value role=textbox[name=\"A note for the courier\"]\n\
         :record assert visible role=button[name=\"Place order\"]\n\
         :record assert visible #nowhere\n\
         page:click_element_by_index{{ index = idx('Place order') }}\n\
         :record assert text text=Status: ordered\n\
         :record stop\n\
         page:click_element_by_index{{ index = idx('Place order') }}\n\
         :record save {}\n",
        file.display()
    );
    let (out, _) = crate::repl::repl(&input);
    assert!(out.contains("record: recording"), "{out}");
    assert!(out.contains("record: stopped"), "{out}");
    assert!(
        out.contains(&format!("written to {}", file.display())),
        "{out}"
    );
    assert!(
        out.contains(
            r#"record: asserted role=textbox[name="A note for the courier"] has the value "repl""#
        ),
        "{out}"
    );
    assert!(
        out.contains("record: #nowhere: "),
        "a failed read asserts nothing: {out}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    // The navigate after :record start, not the one before; the click after :record stop is
    // not in it either.
    assert_eq!(text.matches("page:navigate").count(), 1, "{text}");
    assert_eq!(
        text.matches(r#"click_element_by_selector{ selector = "role=button[name=\"Place order"#)
            .count(),
        1,
        "{text}"
    );
    assert!(!text.contains("999"), "{text}");
    // The assertions, in their places.
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in\n{text}"));
    assert!(
        at(r#"text = "repl""#) < at(r#"assert(seen.value == "repl""#),
        "{text}"
    );
    assert!(
        at("seen.visible") < at("Place order\\\"s]\" }:unwrap()"),
        "{text}"
    );
    assert!(
        at("Place order\\\"s]\" }:unwrap()") < at(r#"seen.text:find("Status: ordered by ada"#),
        "{text}"
    );
    assert!(!text.contains("#nowhere"), "{text}");
    let end = ordered("repl", "Express");
    private(test_config(), move |ex| async move {
        check_replays(&ex, "repl", &with_password(&text), &end).await;
    });
}

#[test]
fn a_recorded_runs_script_is_written_again_by_codegen_with_selectors() {
    crate::support::harness::harness();
    let dir = temp_dir("run");
    let state = dir.join("state");
    let script = dir.join("agent.lua");
    std::fs::write(
        &script,
        format!(
            "local page = browser.start{{}}\n\
             page:navigate{{ url = \"{}\" }}:unwrap()\n\
             local s = page:get_browser_state{{}}:unwrap().text\n\
             local function idx(t)\n\
             \x20 for l in s:gmatch('[^\\n]+') do\n\
             \x20   if l:find(t, 1, true) then return tonumber(l:match('%[(%d+)%]')) end\n\
             \x20 end\n\
             end\n\
             page:input_text{{ index = idx('Username'), text = 'ada' }}:unwrap()\n\
             page:double_click_element_by_index{{ index = idx('Log in') }}:unwrap()\n",
            url_a("record/app.html")
        ),
    )
    .unwrap();
    let ran = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["run"])
        .arg(&script)
        .env("MOONPILOT_STATE_DIR", &state)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let run = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("run.json").is_file())
        .expect("a recorded run")
        .file_name();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("codegen")
        .arg(&run)
        .args(["--test", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for want in [
        "it(\"replays the recording\", function(page)",
        r#"page:input_text_by_selector{ selector = "role=textbox[name=\"Username\"s]", text = "ada" }"#,
        r#"page:double_click_element_by_index{ selector = "role=button[name=\"Log in\"s]" }"#,
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    assert!(!text.contains("index ="), "{text}");
    let path = dir.join("agent_spec.lua");
    std::fs::write(&path, &text).unwrap();
    luacheck(&path, true);
    // Not a task, not a run: exit 2 and why.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["codegen", "no-such-run", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("neither a task id"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
