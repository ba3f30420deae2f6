//! `moonpilot repl`: through a pseudo-terminal (completion, multi-line input, Ctrl-C during a
//! command, output from background coroutines, `:help`/`:methods`/`:state`, history) and through
//! piped standard input (evaluation, printing, errors that keep the session).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::harness::url_a;
use crate::support::terminal::Terminal;

const T: Duration = Duration::from_secs(20);

/// The REPL in a terminal, typing only once its prompt is up: rustyline asks the terminal
/// for the cursor position when a prompt starts, and keys arriving in that instant are read as
/// the answer (a person does not type within microseconds of the prompt; a test does).
struct Session {
    term: Terminal,
    /// Prompt lines (`>` or `>>`) on the screen so far.
    prompts: usize,
}

impl Session {
    fn prompt_lines(screen: &str) -> usize {
        screen.lines().filter(|l| l.starts_with('>')).count()
    }

    /// Waits for the next prompt.
    fn next_prompt(&mut self) -> String {
        self.prompts += 1;
        let n = self.prompts;
        self.term
            .wait_until(&format!("prompt #{n}"), T, |s| {
                Session::prompt_lines(s) >= n
            })
            .0
    }

    /// Types a line, presses Enter and waits for the next prompt; answers the screen.
    fn enter(&mut self, line: &str) -> String {
        self.term.line(line);
        self.next_prompt()
    }
}

#[test]
fn in_a_terminal_completes_evaluates_and_survives_ctrl_c() {
    let data = std::env::temp_dir().join(format!("moonpilot-repl-tty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let term = Terminal::start(
        env!("CARGO_BIN_EXE_moonpilot"),
        &["repl"],
        &[
            ("XDG_DATA_HOME", &data.display().to_string()),
            (
                "MOONPILOT_STATE_DIR",
                &crate::support::harness::state_dir().display().to_string(),
            ),
        ],
    );
    let mut repl = Session { term, prompts: 0 };
    repl.next_prompt();

    // A param name completes inside the call table.
    repl.term.type_text("page:navigate{ ur");
    repl.term.keys(&["Tab"]);
    repl.term.wait_for("page:navigate{ url =", T);
    let screen = repl.enter(&format!("\"{}\" }}", url_a("basic.html")));
    assert!(screen.contains("navigate ok"), "{screen}");

    // A command name completes after `page:`; the round trip is measured on the screen.
    let mut trips = Vec::new();
    for n in 1..=4 {
        if n == 1 {
            repl.term.type_text("page:get_ti");
            repl.term.keys(&["Tab"]);
            // Issue 10 #15: the completion brings its call, so Enter runs it.
            repl.term.wait_for("page:get_title()", T);
        } else {
            repl.term.type_text("page:get_title()");
        }
        repl.term.wait_for_nth("page:get_title()", n, T);
        let started = std::time::Instant::now();
        repl.term.keys(&["Enter"]);
        let (screen, _) = repl.term.wait_for_nth("get_title ok", n, T);
        trips.push(started.elapsed());
        assert!(screen.contains("title=\"Basic\""), "{screen}");
        repl.next_prompt();
    }
    eprintln!("repl round trips (Enter to receipt on screen, incl. tmux polling): {trips:?}");

    // Multi-line: the continuation prompt, then the whole chunk runs once.
    let screen = repl.enter("for i = 1, 2 do");
    assert_eq!(screen.lines().last(), Some(">>"), "{screen}");
    repl.enter("print('row ' .. i * 10)");
    let screen = repl.enter("end");
    assert!(screen.contains("row 10\nrow 20\n"), "{screen}");
    assert_eq!(screen.matches("row 10").count(), 1, "{screen}");

    // Ctrl-C during a long wait cancels it; the task and the browser stay. The marker is
    // printed by the chunk itself, so the command is surely running when Ctrl-C is pressed.
    repl.term
        .line("print('wai' .. 'ting') page:wait{ seconds = 30 }");
    repl.term.wait_for("\nwaiting", T);
    let started = std::time::Instant::now();
    repl.term.keys(&["C-c"]);
    let screen = repl.next_prompt();
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let screen = repl.enter("= page:get_url().data.url");
    assert!(
        screen.contains(&format!("\"{}\"", url_a("basic.html"))),
        "{screen}"
    );

    // Output from a background coroutine appears above the line being typed, which survives.
    repl.enter(
        "browser.spawn(function() browser.sleep(300) print('from the ' .. 'background') end)",
    );
    repl.term.type_text("x = 4");
    let screen = repl
        .term
        .wait_until("the background line above `> x = 4`", T, |s| {
            s.contains("from the background") && s.lines().last() == Some("> x = 4")
        })
        .0;
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines[lines.len() - 2], "from the background", "{screen}");
    repl.term.keys(&["Enter"]);
    repl.next_prompt();
    let screen = repl.enter("= x * 2");
    assert!(screen.ends_with("\n8\n>"), "{screen}");

    // A human-input request made by a running chunk is asked on the REPL's terminal; the
    // answer releases the chunk.
    repl.term.line(
        "h = require('moonpilot.human').ask(page, { questions = { { id = 'code', question = 'Code?' } } })",
    );
    let (screen, _) = repl.term.wait_for("answer code>", T);
    assert!(screen.contains("step code: Code?"), "{screen}");
    repl.enter("42");
    let screen = repl.enter("= h.status .. ' ' .. h.answers[1].custom");
    assert!(screen.contains("\"answered 42\""), "{screen}");

    // The REPL's own commands.
    let screen = repl.enter(":help click_element_by_index");
    assert!(
        screen.contains("example:") && screen.contains("index") && screen.contains("required"),
        "{screen}"
    );
    let screen = repl.enter(":methods get_t");
    assert!(screen.contains("get_title "), "{screen}");
    let screen = repl.enter(":state");
    assert!(screen.contains("<button"), "{screen}");

    // Ctrl-D exits and keeps the history.
    repl.term.keys(&["C-d"]);
    repl.term.wait_exit(T);
    let history = std::fs::read_to_string(data.join("moonpilot/history")).unwrap();
    assert!(history.contains("page:wait{ seconds = 30 }"), "{history}");
    assert!(
        history.contains(":help click_element_by_index"),
        "{history}"
    );
    assert!(
        !history.lines().any(|l| l == "42"),
        "answers stay out of the history: {history}"
    );
}

/// Runs `moonpilot repl` on `input` (its standard input); answers its stdout and stderr.
pub(crate) fn repl(input: &str) -> (String, String) {
    let data = std::env::temp_dir().join(format!("moonpilot-repl-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .arg("repl")
        .env("XDG_DATA_HOME", &data)
        .env("MOONPILOT_STATE_DIR", crate::support::harness::state_dir())
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
