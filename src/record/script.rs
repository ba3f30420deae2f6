//! What was recorded, as steps, and the Lua script that replays them: the catalogue's own
//! commands with selectors (`role=…[name=…]`, `label=…`, attributes, `text=…`, CSS last), never
//! a snapshot index. Consecutive fills of one field are one fill with the last value; a
//! navigation a click caused is the click's, not a step of its own.

use std::fmt::Write as _;

use serde::Deserialize;

/// Where an action happened: the main frame, or a frame named by name or URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Frame {
    /// Whether it is the tab's main frame.
    #[serde(default)]
    pub top: bool,
    /// Its URL.
    #[serde(default)]
    pub url: String,
    /// Its `name`.
    #[serde(default)]
    pub name: String,
}

impl Frame {
    /// The `frame` param that finds it again: its name, else its URL's path (a part of the
    /// URL: the host may change between recording and replay).
    pub fn param(&self) -> Option<String> {
        if self.top {
            return None;
        }
        if !self.name.is_empty() {
            return Some(self.name.clone());
        }
        let path = url::Url::parse(&self.url)
            .ok()
            .map(|u| u.path().to_string())
            .filter(|p| p.len() > 1);
        Some(path.unwrap_or_else(|| self.url.clone()))
    }
}

/// One action of a person, as the page-side recorder (`js/recorder.js`) reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Action {
    /// A click (any button, any count, with modifier keys).
    Click {
        /// The element.
        selector: String,
        /// 0 left, 1 middle, 2 right.
        #[serde(default)]
        button: u8,
        /// 2 for a double click.
        #[serde(default = "one", rename = "clickCount")]
        click_count: u32,
        /// `Alt`, `Control`, `Meta`, `Shift` held.
        #[serde(default)]
        modifiers: Vec<String>,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// A text field's value after typing.
    Fill {
        /// The field.
        selector: String,
        /// Its value.
        value: String,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// An option chosen in a `<select>`.
    Select {
        /// The select.
        selector: String,
        /// The option's label.
        text: String,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// A checkbox or radio button set.
    Check {
        /// The box.
        selector: String,
        /// Its state after.
        checked: bool,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// A key or shortcut (`Enter`, `Control+a`).
    Press {
        /// The chord.
        keys: String,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// Files chosen in a file input (their names: a page sees no path).
    Upload {
        /// The input.
        selector: String,
        /// The names.
        files: Vec<String>,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
    /// An assertion the person added from the recorder's overlay: the element is visible,
    /// has a text, or has a value.
    Assert {
        /// `visible`, `text` or `value`.
        check: String,
        /// The element.
        selector: String,
        /// The text or value it has (empty for `visible`).
        #[serde(default)]
        expected: String,
        /// Where.
        #[serde(default)]
        frame: Frame,
    },
}

fn one() -> u32 {
    1
}

/// A step of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// What the person did in a page.
    Act(Action),
    /// A URL typed into the address bar (or the recording's first page).
    Navigate(String),
    /// Back in the history.
    Back,
    /// Forward in the history.
    Forward,
    /// A reload.
    Reload,
    /// The actions that follow happen in tab `0`-based N (as `get_tabs` lists them).
    SwitchTab(usize),
    /// A command with its arguments as Lua (`name = value`), as `moonpilot codegen` read it
    /// from a trace.
    Call {
        /// The command.
        method: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Lua written as it is (codegen's secrets, read from the environment).
    Lua(String),
    /// A comment (what codegen left out, and why).
    Note(String),
    /// How the native dialog that the next action opens is answered (its place is before the
    /// action: the policy must be set first).
    Dialog {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
        /// Its message.
        message: String,
        /// Accepted (else dismissed).
        accept: bool,
        /// An accepted prompt's text.
        text: Option<String>,
    },
}

/// The steps of a recording, as they come.
#[derive(Debug, Default, Clone)]
pub struct Steps(pub Vec<Step>);

impl Steps {
    /// Adds a step: a fill of the field the previous step filled replaces it; the second
    /// click of a double click replaces the first; a dialog goes before the action that
    /// opened it (the last one).
    pub fn push(&mut self, step: Step) {
        if let Step::Dialog { .. } = step {
            let at = self
                .0
                .iter()
                .rposition(|s| matches!(s, Step::Act(_)))
                .unwrap_or(self.0.len());
            self.0.insert(at, step);
            return;
        }
        if let Some(Step::Act(last)) = self.0.last() {
            match (last, &step) {
                (
                    Action::Fill {
                        selector: a,
                        frame: fa,
                        ..
                    },
                    Step::Act(Action::Fill {
                        selector: b,
                        frame: fb,
                        ..
                    }),
                ) if a == b && fa == fb => {
                    self.0.pop();
                }
                (
                    Action::Click {
                        selector: a,
                        button: ba,
                        click_count: 1,
                        frame: fa,
                        ..
                    },
                    Step::Act(Action::Click {
                        selector: b,
                        button: bb,
                        click_count: 2,
                        frame: fb,
                        ..
                    }),
                ) if a == b && ba == bb && fa == fb => {
                    self.0.pop();
                }
                _ => {}
            }
        }
        self.0.push(step);
    }
}

/// `s` with each run of whitespace one space, trimmed (as text assertions compare).
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A Lua string literal of `s` (any bytes survive: escapes for quotes, backslashes, control
/// characters).
pub fn lua_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\{}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Lua literal of a JSON value (`nil` for null; objects with keys that are no Lua name
/// written `["key"] = …`).
pub fn lua_value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "nil".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => lua_string(s),
        Value::Array(items) => {
            if items.is_empty() {
                return "{}".into();
            }
            let inner: Vec<String> = items.iter().map(lua_value).collect();
            format!("{{ {} }}", inner.join(", "))
        }
        Value::Object(map) => {
            if map.is_empty() {
                return "{}".into();
            }
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} = {}", lua_key(k), lua_value(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
    }
}

/// A table key: the name itself when it is a Lua name, else `["…"]`.
pub fn lua_key(k: &str) -> String {
    const RESERVED: &[&str] = &[
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ];
    let name = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&k);
    if name {
        k.to_string()
    } else {
        format!("[{}]", lua_string(k))
    }
}

/// The longest call on one line (luacheck's limit is 120).
const LINE: usize = 100;

/// `selector = "…"[, frame = "…"]`, as call arguments.
fn target(selector: &str, frame: &Frame) -> Vec<String> {
    let mut args = vec![format!("selector = {}", lua_string(selector))];
    if let Some(f) = frame.param() {
        args.push(format!("frame = {}", lua_string(&f)));
    }
    args
}

fn with(mut args: Vec<String>, more: String) -> Vec<String> {
    args.push(more);
    args
}

/// The Lua lines of one step (`page` is the task; `test`: in a `moonpilot test` file, where
/// assertions are `expect`'s).
fn lines(step: &Step, test: bool) -> Vec<String> {
    let call = |method: &str, args: Vec<String>| {
        if args.is_empty() {
            return format!("page:{method}():unwrap()");
        }
        let one = format!("page:{method}{{ {} }}:unwrap()", args.join(", "));
        if one.len() <= LINE {
            return one;
        }
        // One argument a line, as people write long calls.
        let mut long = format!("page:{method}{{\n");
        for a in &args {
            let _ = writeln!(long, "  {a},");
        }
        long.push_str("}:unwrap()");
        long
    };
    match step {
        Step::Navigate(url) => vec![call("navigate", vec![format!("url = {}", lua_string(url))])],
        Step::Back => vec![call("go_back", vec![])],
        Step::Forward => vec![call("go_forward", vec![])],
        Step::Reload => vec![call("reload", vec![])],
        Step::SwitchTab(i) => vec![call("switch_tab", vec![format!("pageIndex = {i}")])],
        Step::Call { method, args } => vec![call(method, args.clone())],
        Step::Lua(code) => vec![code.clone()],
        Step::Note(text) => vec![text
            .lines()
            .map(|l| format!("-- {l}"))
            .collect::<Vec<_>>()
            .join("\n")],
        Step::Dialog {
            kind,
            message,
            accept,
            text,
        } => {
            let mut message: String = message
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(80)
                .collect();
            if message.chars().count() == 80 {
                message.push('…');
            }
            let mut args = vec![format!("dismiss = {}", !accept)];
            if let (true, Some(t)) = (accept, text) {
                args.push(format!("promptText = {}", lua_string(t)));
            }
            vec![format!(
                "-- the page's {kind} \"{message}\" is {}\n{}",
                if *accept { "accepted" } else { "dismissed" },
                call("set_dialog_behavior", args)
            )]
        }
        Step::Act(a) => match a {
            Action::Click {
                selector,
                button,
                click_count,
                modifiers,
                frame,
            } => {
                let mut out = Vec::new();
                let held = modifiers.join("+");
                if !held.is_empty() {
                    out.push(call(
                        "key_down",
                        vec![format!("keys = {}", lua_string(&held))],
                    ));
                }
                if *button == 0 && *click_count == 1 {
                    out.push(call("click_element_by_selector", target(selector, frame)));
                } else {
                    let button = match button {
                        1 => "middle",
                        2 => "right",
                        _ => "left",
                    };
                    // mouse_click_by_selector looks in the main frame only.
                    out.push(call(
                        "mouse_click_by_selector",
                        vec![
                            format!("selector = {}", lua_string(selector)),
                            format!("button = \"{button}\""),
                            format!("clickCount = {click_count}"),
                        ],
                    ));
                }
                if !held.is_empty() {
                    out.push(call(
                        "key_up",
                        vec![format!("keys = {}", lua_string(&held))],
                    ));
                }
                out
            }
            Action::Fill {
                selector,
                value,
                frame,
            } => vec![call(
                "input_text_by_selector",
                with(
                    target(selector, frame),
                    format!("text = {}", lua_string(value)),
                ),
            )],
            Action::Select {
                selector,
                text,
                frame,
            } => vec![call(
                "select_dropdown_option",
                with(
                    target(selector, frame),
                    format!("text = {}", lua_string(text)),
                ),
            )],
            Action::Check {
                selector,
                checked,
                frame,
            } => {
                let method = if *checked {
                    "check_element_by_index"
                } else {
                    "uncheck_element_by_index"
                };
                vec![call(method, target(selector, frame))]
            }
            Action::Press { keys, .. } => {
                vec![call(
                    "press_key",
                    vec![format!("key = {}", lua_string(keys))],
                )]
            }
            Action::Upload {
                selector,
                files,
                frame,
            } => files
                .iter()
                .map(|f| {
                    format!(
                        "-- the file the person chose: {f} (put it beside this script)\n{}",
                        call(
                            "upload_file",
                            with(
                                target(selector, frame),
                                format!("path = here .. {}", lua_string(&format!("/{f}"))),
                            )
                        )
                    )
                })
                .collect(),
            Action::Assert {
                check,
                selector,
                expected,
                frame,
            } => {
                let args = target(selector, frame);
                let (matcher, field, read) = match check.as_str() {
                    "text" => ("to_contain_text", "text", "get_element_text"),
                    "value" => ("to_have_value", "value", "get_element_value"),
                    _ => ("to_be_visible", "", "is_visible"),
                };
                let with_expected = |mut args: Vec<String>| {
                    if !field.is_empty() {
                        args.push(format!("{field} = {}", lua_string(expected)));
                    }
                    args
                };
                if test {
                    let c = call(matcher, with_expected(args));
                    let c = c.replacen("page:", "expect(page):", 1);
                    return vec![c.strip_suffix(":unwrap()").unwrap_or(&c).to_string()];
                }
                let read = call(read, args);
                let check = match field {
                    "text" => format!("seen.text:find({}, 1, true)", lua_string(expected)),
                    "value" => format!("seen.value == {}", lua_string(expected)),
                    _ => "seen.visible".to_string(),
                };
                // The message names what was expected; the line names the element.
                let what = if field.is_empty() {
                    "the element to be visible".to_string()
                } else {
                    format!("the {field} {expected}")
                };
                let mut out = String::from("do\n");
                for l in format!("local seen = {read}").lines() {
                    let _ = writeln!(out, "  {l}");
                }
                let _ = writeln!(
                    out,
                    "  assert({check},\n    {})",
                    lua_string(&format!("expected {what}"))
                );
                out.push_str("end");
                vec![out]
            }
        },
    }
}

/// The script of `steps`: a plain script, or with `test` a `moonpilot test` file (one test
/// whose `page` replays them).
pub fn render(steps: &[Step], test: bool, header: &str) -> String {
    let uploads = steps
        .iter()
        .any(|s| matches!(s, Step::Act(Action::Upload { .. })));
    let mut out = String::new();
    for line in header.lines() {
        let _ = writeln!(out, "-- {line}");
    }
    if uploads {
        out.push_str("local here = arg[0]:match(\"^(.*)/[^/]*$\") or \".\"\n");
    }
    let body: Vec<String> = steps.iter().flat_map(|s| lines(s, test)).collect();
    if test {
        out.push_str(
            "describe(\"recorded\", function()\n  it(\"replays the recording\", function(page)\n",
        );
        for l in &body {
            for part in l.lines() {
                let _ = writeln!(out, "    {part}");
            }
        }
        out.push_str("  end)\nend)\n");
    } else {
        out.push_str("local page = browser.start{}\n");
        for l in &body {
            let _ = writeln!(out, "{l}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(sel: &str, v: &str) -> Step {
        Step::Act(Action::Fill {
            selector: sel.into(),
            value: v.into(),
            frame: Frame {
                top: true,
                ..Frame::default()
            },
        })
    }

    #[test]
    fn fills_of_one_field_are_one_and_double_clicks_are_one() {
        let mut s = Steps::default();
        s.push(fill("#a", "h"));
        s.push(fill("#a", "he"));
        s.push(fill("#b", "x"));
        s.push(fill("#a", "hey"));
        assert_eq!(
            s.0,
            vec![fill("#a", "he"), fill("#b", "x"), fill("#a", "hey")]
        );
        let click = |n| {
            Step::Act(Action::Click {
                selector: "text=\"Go\"".into(),
                button: 0,
                click_count: n,
                modifiers: vec![],
                frame: Frame::default(),
            })
        };
        s.push(click(1));
        s.push(click(2));
        assert_eq!(s.0.last(), Some(&click(2)));
        assert_eq!(s.0.len(), 4);
    }

    #[test]
    fn a_dialog_goes_before_the_action_that_opened_it_and_assertions_render_both_ways() {
        let click = Step::Act(Action::Click {
            selector: "role=button[name=\"Delete\"s]".into(),
            button: 0,
            click_count: 1,
            modifiers: vec![],
            frame: Frame {
                top: true,
                ..Frame::default()
            },
        });
        let mut s = Steps::default();
        s.push(Step::Navigate("http://x/".into()));
        s.push(click.clone());
        s.push(Step::Dialog {
            kind: "prompt".into(),
            message: "Name?\nreally".into(),
            accept: true,
            text: Some("Ada \"L\"".into()),
        });
        assert!(matches!(s.0[1], Step::Dialog { .. }), "{:?}", s.0);
        assert_eq!(s.0[2], click);
        let assert = Step::Act(Action::Assert {
            check: "text".into(),
            selector: "#status".into(),
            expected: "Done".into(),
            frame: Frame {
                top: true,
                ..Frame::default()
            },
        });
        s.push(assert);
        s.push(Step::SwitchTab(1));
        let plain = render(&s.0, false, "t");
        for want in [
            "-- the page's prompt \"Name? really\" is accepted\n",
            "page:set_dialog_behavior{ dismiss = false, promptText = \"Ada \\\"L\\\"\" }:unwrap()",
            "local seen = page:get_element_text{ selector = \"#status\" }:unwrap()",
            "assert(seen.text:find(\"Done\", 1, true),\n    \"expected the text Done\")",
            "page:switch_tab{ pageIndex = 1 }:unwrap()",
        ] {
            assert!(plain.contains(want), "{want} in\n{plain}");
        }
        let test = render(&s.0, true, "t");
        assert!(
            test.contains(
                "expect(page):to_contain_text{ selector = \"#status\", text = \"Done\" }\n"
            ),
            "{test}"
        );
        let lua = mlua::Lua::new();
        lua.load(&plain).into_function().expect("the script parses");
        lua.load(&test).into_function().expect("the test parses");
    }

    #[test]
    fn the_script_quotes_every_value_and_names_frames() {
        let steps = vec![
            Step::Navigate("http://x/a \"b\"".into()),
            Step::Act(Action::Fill {
                selector: "label=\"Name\"".into(),
                value: "a\\b\n\"c\"".into(),
                frame: Frame {
                    top: false,
                    url: "http://127.0.0.1:1/child.html?x=1".into(),
                    name: String::new(),
                },
            }),
        ];
        let s = render(&steps, false, "recorded");
        assert!(
            s.starts_with("-- recorded\nlocal page = browser.start{}\n"),
            "{s}"
        );
        assert!(
            s.contains(r#"page:navigate{ url = "http://x/a \"b\"" }:unwrap()"#),
            "{s}"
        );
        // A long call: an argument a line.
        for want in [
            "page:input_text_by_selector{\n",
            r#"  selector = "label=\"Name\"","#,
            r#"  frame = "/child.html","#,
            r#"  text = "a\\b\n\"c\"","#,
        ] {
            assert!(s.contains(want), "{want} in {s}");
        }
        let lua = mlua::Lua::new();
        lua.load(&s).into_function().expect("the script parses");
        let t = render(&steps, true, "recorded");
        assert!(
            t.contains("it(\"replays the recording\", function(page)"),
            "{t}"
        );
        lua.load(&t).into_function().expect("the test parses");
    }
}
