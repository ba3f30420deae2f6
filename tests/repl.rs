//! `moonpilot repl` driven through its standard input (the pseudo-terminal tests of issue 3
//! come later): evaluation, expression printing, multi-line chunks, errors that keep the session.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::harness::url_a;

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
