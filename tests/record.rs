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
use moonpilot::record::{script, Recording};
use moonpilot::Executor;
use serde_json::{json, Value};

use crate::support::harness::{private, test_config, url_a};

async fn call(ex: &Executor, id: TaskId, method: &str, params: Value) -> Value {
    let r = ex.execute(Some(id), method, params.clone()).await;
    assert!(r.ok, "{method} {params}: {:?} {}", r.msg, r.data);
    r.data
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

/// The script against the variant site.
fn variant(script: &str) -> String {
    script
        .replace("app_next.html", "APP_NEXT")
        .replace("app.html", "app_v2.html")
        .replace("APP_NEXT", "app_next_v2.html")
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
    let dir = temp_dir(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upload-me.txt"),
        dir.join("upload-me.txt"),
    )
    .unwrap();
    let start_data = ex.execute(None, "start", json!({})).await;
    assert!(start_data.ok);
    let id = TaskId(start_data.data["id"].as_str().unwrap().parse().unwrap());
    call(&ex, id, "navigate", json!({"url": start})).await;
    let tab = ex.engine().task(id).unwrap().tab().unwrap();
    let recording = Recording::attach(&tab, Some(start), "data-testid")
        .await
        .unwrap();
    flow(ex.clone(), id).await;
    // The page reports through a binding: its last messages are on their way.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let end = state_of(&ex, id).await;
    let steps = recording.stop();
    let text = script::render(&steps, false, &format!("recorded flow {name}"));
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, &text).unwrap();
    luacheck(&path, false);
    assert!(!text.contains("index ="), "no snapshot index:\n{text}");
    for run in 0..2 {
        let got = replay(&ex, &dir, &format!("{name}-replay{run}"), &text).await;
        assert_eq!(got, end, "replay {run} of\n{text}");
    }
    let v2 = replay(&ex, &dir, &format!("{name}-variant"), &variant(&text)).await;
    let want = json!([
        end[0].as_str().unwrap().replace(".html", "_v2.html"),
        end[1]
    ]);
    assert_eq!(v2, want, "on the variant site:\n{}", variant(&text));
    text
}

#[test]
fn a_login_and_an_order_form_replay_on_the_site_and_on_its_variant() {
    private(test_config(), |ex| async move {
        let text = record_and_replay(
            ex,
            "order",
            &url_a("record/app.html"),
            |ex, id| async move {
                call(
                    &ex,
                    id,
                    "input_text_by_selector",
                    json!({"selector": "#u", "text": "ada"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "input_text_by_selector",
                    json!({"selector": "#p", "text": "secret"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "click_element_by_selector",
                    json!({"selector": "#go"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "select_dropdown_option",
                    json!({"selector": "#ship", "text": "Express"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "click_element_by_selector",
                    json!({"selector": "#agree"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "click_element_by_selector",
                    json!({"selector": "input[value=yes]"}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "input_text_by_selector",
                    json!({"selector": "#note", "text": "ring \"twice\""}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "mouse_click_by_selector",
                    json!({"selector": "#dbl", "clickCount": 2}),
                )
                .await;
                call(
                    &ex,
                    id,
                    "click_element_by_selector",
                    json!({"selector": "#place"}),
                )
                .await;
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
