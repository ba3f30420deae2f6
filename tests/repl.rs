//! `moonpilot repl`: through a pseudo-terminal (completion, multi-line input, Ctrl-C during a
//! command, output from background coroutines, `:help`/`:methods`/`:state`, history) and through
//! piped standard input (evaluation, printing, errors that keep the session).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::harness::url_a;
use crate::support::terminal::Terminal;

const T: Duration = Duration::from_secs(20);

#[test]
fn in_a_terminal_completes_evaluates_and_survives_ctrl_c() {
    let data = std::env::temp_dir().join(format!("moonpilot-repl-tty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let term = Terminal::start(
        env!("CARGO_BIN_EXE_moonpilot"),
        &["repl"],
        &[("XDG_DATA_HOME", &data.display().to_string())],
    );
    term.wait_for_last_line(">", T);

    // A param name completes inside the call table.
    term.type_text("page:navigate{ ur");
    term.keys(&["Tab"]);
    term.wait_for("page:navigate{ url =", T);
    term.line(&format!("\"{}\" }}", url_a("basic.html")));
    term.wait_for("navigate ok", T);

    // A command name completes after `page:`; the round trip is measured on the screen.
    term.type_text("page:get_ti");
    term.keys(&["Tab"]);
    term.wait_for("page:get_title", T);
    term.type_text("()");
    let started = std::time::Instant::now();
    term.keys(&["Enter"]);
    let (screen, _) = term.wait_for("get_title ok", T);
    let mut trips = vec![started.elapsed()];
    assert!(screen.contains("title=\"Basic\""), "{screen}");
    for n in 2..=4 {
        term.type_text("page:get_title()");
        term.wait_for_nth("page:get_title()", n, T);
        let started = std::time::Instant::now();
        term.keys(&["Enter"]);
        term.wait_for_nth("get_title ok", n, T);
        trips.push(started.elapsed());
    }
    eprintln!("repl round trips (Enter to receipt on screen, incl. tmux polling): {trips:?}");

    // Multi-line: the continuation prompt, then the whole chunk runs once.
    term.line("for i = 1, 2 do");
    term.wait_for_last_line(">>", T);
    term.line("print('row ' .. i * 10)");
    term.line("end");
    let (screen, _) = term.wait_for("row 20", T);
    assert_eq!(screen.matches("row 10").count(), 1, "{screen}");

    // Ctrl-C during a long wait cancels it; the task and the browser stay.
    // The marker is printed by the chunk itself, so the command is surely running (and the
    // terminal back in cooked mode) when Ctrl-C is pressed.
    term.line("print('wai' .. 'ting') page:wait{ seconds = 30 }");
    term.wait_for("\nwaiting", T);
    let started = std::time::Instant::now();
    term.keys(&["C-c"]);
    term.wait_for("interrupted", T);
    assert!(started.elapsed() < Duration::from_secs(5));
    term.line("= page:get_url().data.url");
    term.wait_for(&format!("\"{}\"", url_a("basic.html")), T);

    // Output from a background coroutine appears above the line being typed, which survives.
    term.line("browser.spawn(function() browser.sleep(300) print('from the background') end)");
    term.wait_for("Job", T);
    term.type_text("x = 4");
    let screen = term.wait_for_last_line("> x = 4", T);
    let screen = if screen.contains("from the background") {
        screen
    } else {
        term.wait_for("from the background", T).0
    };
    assert_eq!(
        screen.lines().last(),
        Some("> x = 4"),
        "the typed line is redrawn:\n{screen}"
    );
    term.keys(&["Enter"]);
    term.line("= x * 2");
    term.wait_for_last_line(">", T);
    term.wait_for("\n8\n", T);

    // The REPL's own commands.
    term.line(":help click_element_by_index");
    let (screen, _) = term.wait_for("example:", T);
    assert!(
        screen.contains("index") && screen.contains("required"),
        "{screen}"
    );
    term.line(":methods get_t");
    term.wait_for("get_title ", T);
    term.line(":state");
    term.wait_for("<button", T);

    // Ctrl-D exits and keeps the history.
    term.keys(&["C-d"]);
    term.wait_exit(T);
    let history = std::fs::read_to_string(data.join("moonpilot/history")).unwrap();
    assert!(history.contains("page:wait{ seconds = 30 }"), "{history}");
    assert!(
        history.contains(":help click_element_by_index"),
        "{history}"
    );
}

fn repl(input: &str) -> (String, String) {
    let data = std::env::temp_dir().join(format!("moonpilot-repl-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("repl")
        .env("XDG_DATA_HOME", &data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn evaluates_against_a_live_page_and_keeps_going_after_errors() {
    let page = url_a("basic.html");
    let input = format!(
        "page:navigate{{ url = \"{page}\" }}\n\
         = page:get_title().data.title\n\
         1 +\n\
         2\n\
         error('boom')\n\
         for i = 1, 2 do\n\
         print('line ' .. i)\n\
         end\n\
         {{ b = 2, a = {{ 1, 2 }} }}\n"
    );
    let (out, _) = repl(&input);
    let expected = [
        "navigate ok (",
        "\"Basic\"",
        "3",
        "boom",
        "line 1\nline 2",
        "{\n  a = {\n    [1] = 1,\n    [2] = 2,\n  },\n  b = 2,\n}",
    ];
    let mut rest = out.as_str();
    for part in expected {
        let at = rest
            .find(part)
            .unwrap_or_else(|| panic!("expected {part:?} in order in:\n{out}"));
        rest = &rest[at + part.len()..];
    }
}
