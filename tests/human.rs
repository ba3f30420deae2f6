//! Human in the loop: request_human_input / ask_user / submit_human_input / get_human_input on
//! a live task — single and multi-step requests, every deadline form, unknown ids, element
//! images, and a long-poll released at once by a submit on the same task.

use crate::support::harness::lua;

#[test]
fn single_step_request_pending_then_answered() {
    lua(r##"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local r = page:request_human_input{ prompt = "Please log in" }:unwrap()
        has(r.requestId, "hr-", "request id")
        eq(r.status, "pending"); eq(r.prompt, "Please log in"); eq(r.url, A .. "/basic.html")
        assert(r.expiresInSeconds >= 298 and r.expiresInSeconds <= 300, "default 300 s: " .. r.expiresInSeconds)
        eq(page:get_human_input{ requestId = r.requestId }:unwrap().status, "pending")
        local s = page:submit_human_input{ requestId = r.requestId, answer = "" }:unwrap()
        eq(s.status, "answered"); eq(s.answer, "")
        local g = page:get_human_input{ requestId = r.requestId, timeoutSeconds = 10 }:unwrap()
        eq(g.status, "answered", "a long-poll on an answered request returns at once")
        -- Neither prompt nor steps: refused before anything runs.
        local bad = page:request_human_input{}
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
        eq(page:request_human_input{ prompt = "  " }.ok, false, "a blank prompt without steps")
        eq(page:submit_human_input{ requestId = r.requestId }.code, "ACTION_FAILED")
    "##);
}

#[test]
fn steps_go_partial_then_answered_with_an_element_image() {
    lua(r##"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local r = page:request_human_input{ steps = {
            { prompt = "read the message" },
            { prompt = "press the button", selector = "#btn" },
        } }:unwrap()
        eq(r.stepCount, 2); eq(r.steps[1].stepId, "s1"); eq(r.steps[2].selector, "#btn")
        eq(r.imageTarget.selector, "#btn", "the first step with a target gives the image")
        has(r.imageBase64, "iVBORw0KGgo", "an inline PNG")
        local f = io.open(r.imagePath, "rb"); assert(f, "image file " .. tostring(r.imagePath))
        eq(f:read(4), "\137PNG"); f:close()
        -- A bare answer on a step request fails and lists the pending steps.
        local bare = page:submit_human_input{ requestId = r.requestId, answer = "done" }
        eq(bare.code, "ACTION_FAILED"); eq(#bare.data.pendingSteps, 2)
        local p = page:submit_human_input{ requestId = r.requestId, stepId = "s1", answer = "ok" }:unwrap()
        eq(p.status, "partial"); eq(#p.pendingSteps, 1); eq(p.pendingSteps[1].stepId, "s2")
        eq(page:get_human_input{ requestId = r.requestId }:unwrap().status, "partial")
        -- Unknown step ids are listed; the known one in the same call is kept.
        local u = page:submit_human_input{ requestId = r.requestId, answers = { s2 = "pressed", s9 = "x" } }
        eq(u.code, "ACTION_FAILED"); eq(u.data.unknownSteps[1], "s9"); eq(u.started, true)
        local g = page:get_human_input{ requestId = r.requestId }:unwrap()
        eq(g.status, "answered"); eq(g.steps[2].answer, "pressed")
        -- Issue 10 #14: an unknown request id is a not-found, not a refusal of the page.
        local nf = page:submit_human_input{ requestId = "hr-0-0", answer = "x" }
        eq(nf.code, "NOT_FOUND", "unknown request"); eq(nf.data.requestId, "hr-0-0"); eq(nf.retryable, false)
        eq(page:get_human_input{ requestId = "aq-9-9" }.code, "NOT_FOUND")
        eq(page:get_human_input{}.code, "INVALID_ARGUMENT", "a missing requestId is a bad param")
    "##);
}

#[test]
fn an_image_by_index_and_a_missing_selector() {
    lua(r##"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local button
        for _, el in ipairs(s.elements) do if el.id == "btn" then button = el.index end end
        local r = page:request_human_input{ prompt = "look", index = button, inline = false }:unwrap()
        eq(r.imageTarget.index, button); eq(r.base64Omitted, true); eq(r.imageBase64, nil)
        assert(r.imageSize.width > 10 and r.imageSize.height > 5, "a button-sized image")
        local m = page:request_human_input{ prompt = "look", selector = "#nope" }:unwrap()
        has(m.imageError, "#nope"); eq(m.status, "pending", "the request stands without its image")
        local bad = page:request_human_input{ prompt = "look", selector = "[[" }:unwrap()
        has(bad.imageError, "no element matches selector `[[`: "); eq(bad.status, "pending")
    "##);
}

/// Issue 10 #14: malformed questions are a bad param (nothing opened), said once, not
/// `ACTION_FAILED` with `started:true` and a doubled "ask_user: ask_user:" prefix.
#[test]
fn issue10_malformed_questions_are_invalid_argument_before_anything_opens() {
    lua(r##"
        for what, questions in pairs({
          empty = {},
          no_question = { { id = "a" } },
          twice = { { id = "a", question = "?" }, { id = "a", question = "!" } },
        }) do
          local r = page:ask_user{ questions = questions }
          eq(r.ok, false, what); eq(r.code, "INVALID_ARGUMENT", what); eq(r.started, false, what)
          eq(r.retryable, false, what); has(r.msg, "param `questions`", what)
          hasnt(r.msg, "ask_user: ask_user", what)
        end
        local ok = page:ask_user{ questions = { { id = "code", question = "Code?" } } }:unwrap()
        eq(ok.status, "pending"); eq(ok.questionIds[1], "code")
    "##);
}

#[test]
fn closing_a_task_withdraws_its_waiting_requests() {
    lua(r##"
        local other = browser.start{}
        local r = other:request_human_input{ prompt = "on the other task" }:unwrap()
        eq(page:get_human_input{ requestId = r.requestId }:unwrap().status, "pending")
        other:close()
        local g = page:get_human_input{ requestId = r.requestId }:unwrap()
        eq(g.status, "expired", "its task is gone"); eq(g.expired, true)
    "##);
}

#[test]
fn every_deadline_form_expires() {
    lua(r##"
        local now = os.time() * 1000
        -- Already past: created expired.
        local past = page:ask_user{ questions = { { id = "q", question = "?" } }, expiresAt = now - 1000 }:unwrap()
        eq(past.status, "expired"); has(past.note, "already past")
        -- expiresAt wins over the relative forms.
        local at = page:request_human_input{ prompt = "x", expiresAt = now + 120000, expiresInSeconds = 1, timeoutSeconds = 1 }:unwrap()
        assert(at.expiresInSeconds > 100, "expiresAt wins: " .. at.expiresInSeconds)
        for _, form in ipairs({ "expiresInSeconds", "timeoutSeconds" }) do
          local r = page:request_human_input{ prompt = "x", [form] = 1 }:unwrap()
          eq(r.status, "pending")
          local t0 = browser.clock()
          local g = page:get_human_input{ requestId = r.requestId, timeoutSeconds = 10 }:unwrap()
          eq(g.status, "expired", form); eq(g.expired, true); has(g.hint, "never means")
          local took = browser.clock() - t0
          assert(took < 3, form .. ": the long-poll wakes at the deadline, took " .. took)
        end
        -- A poll that times out is not a failure: it answers the current status.
        local r = page:request_human_input{ prompt = "x" }:unwrap()
        local t0 = browser.clock()
        local g = page:get_human_input{ requestId = r.requestId, timeoutSeconds = 1 }:unwrap()
        eq(g.status, "pending"); assert(browser.clock() - t0 >= 0.9, "waited the poll out")
    "##);
}

#[test]
fn a_submit_releases_the_long_poll_of_the_same_task_at_once() {
    lua(r##"
        local r = page:ask_user{ questions = {
            { id = "color", question = "Color?", options = { "red", { label = "blue" } } },
            { id = "tags", question = "Tags?", options = { "a", "b", "c" }, multiSelect = true },
            { id = "code", question = "Code?" },
        } }:unwrap()
        has(r.requestId, "aq-"); eq(r.questionIds[3], "code"); has(r.prompt, "3 questions")
        -- A long command holds the task's lane meanwhile: the human commands do not queue.
        local busy = browser.spawn(function() return page:wait{ seconds = 3 } end)
        local submitter = browser.spawn(function()
          browser.sleep(300)
          return page:submit_human_input{ requestId = r.requestId,
            answers = { color = "blue", tags = { "a", "c" }, code = "1234" } }
        end)
        local t0 = browser.clock()
        local g = page:get_human_input{ requestId = r.requestId, timeoutSeconds = 20 }:unwrap()
        local took = browser.clock() - t0
        eq(g.status, "answered")
        assert(took < 2, "released by the submit, not by the timeout: " .. took)
        eq(submitter:join().ok, true)
        eq(g.answers[1].selected[1], "blue")
        eq(g.answers[2].selected[2], "c")
        eq(g.answers[3].custom, "1234"); eq(#g.answers[3].selected, 0)
        eq(busy:join().ok, true)
        -- Bad questions.
        eq(page:ask_user{}.code, "INVALID_ARGUMENT")
        eq(page:ask_user{ questions = {} }.ok, false)
        has(page:ask_user{ questions = { { id = "a", question = "?" }, { id = "b" } } }.msg, "question 2")
        has(page:ask_user{ questions = { { id = "a", question = "?" }, { id = "a", question = "!" } } }.msg, "repeats the id")
    "##);
}

const ASKING_SCRIPT: &str = r#"
local human = require("moonpilot.human")
local page = browser.start{}
local r = human.ask(page, { expiresInSeconds = tonumber(browser.args.expires or "60"), questions = {
  { id = "color", question = "Color?", options = { "red", "blue" } },
  { id = "code", question = "Code?" },
} })
if r.status == "answered" then
  print("ANSWERED", r.answers[1].selected[1], r.answers[2].custom)
else
  print("STATUS", r.status)
end
"#;

fn asking_script(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moonpilot-human-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ask.lua");
    std::fs::write(&path, ASKING_SCRIPT).unwrap();
    path
}

#[test]
fn the_terminal_host_answers_a_request_step_by_step() {
    use crate::support::terminal::Terminal;
    use std::time::Duration;
    const T: Duration = Duration::from_secs(30);
    let script = asking_script("tty");
    let term = Terminal::start(
        env!("CARGO_BIN_EXE_moonpilot"),
        &["run", &script.display().to_string()],
        &[(
            "MOONPILOT_STATE_DIR",
            &crate::support::harness::state_dir().display().to_string(),
        )],
    );
    let (screen, _) = term.wait_for("answer color>", T);
    assert!(screen.contains("[human] request aq-"), "{screen}");
    assert!(
        screen.contains("1) red") && screen.contains("2) blue"),
        "{screen}"
    );
    term.line("2");
    term.wait_for("answer code>", T);
    term.line("1234");
    let (screen, _) = term.wait_for("ANSWERED", T);
    let line = screen.lines().find(|l| l.starts_with("ANSWERED")).unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["ANSWERED", "blue", "1234"],
        "{screen}"
    );
    term.wait_exit(T);
}

#[test]
fn without_a_terminal_nothing_is_prompted() {
    let script = asking_script("pipe");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir())
        .arg("run")
        .arg(&script)
        .args(["--arg", "expires=1"])
        .stdin(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim(), "STATUS\texpired", "{stdout}");
}
