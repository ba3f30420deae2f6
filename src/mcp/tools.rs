//! The tool list: catalogue commands as MCP tools, generated from their [`CommandSpec`]s, plus
//! `run_lua`.
//!
//! A tool's `inputSchema` comes from the command's [`ParamSpec`]s (type, required, default,
//! range, the param's doc as its description); its annotations from the command's facts:
//! `readOnlyHint` when it cannot change the page, `destructiveHint` when it can, `idempotentHint`
//! when a resend is safe, `openWorldHint` when it reaches a page. The description is the
//! one-line summary (with a short note for the few tools that need one) and a param's its first
//! clauses: the model reads the list on every turn.
//!
//! Which commands are tools is a [`Selection`]: by default the set an agent needs for most work
//! (about the size of `@playwright/mcp`'s own list, which the model reads on every turn); `all`
//! or named groups and commands widen it. Commands that act on the engine rather than on the
//! session's task (`start`, `shutdown`, task lists, `cleanup`) are tools only with `engine`.

use serde_json::{json, Map, Value};

use crate::command::{CommandSpec, Group};
use crate::command::{Kind, ParamSpec};

/// The name of the tool that runs a whole Lua plan.
pub const RUN_LUA: &str = "run_lua";

/// The default tools: what an agent needs for most work, in the catalogue's words.
pub const DEFAULT_TOOLS: &[&str] = &[
    "navigate",
    "go_back",
    "get_browser_state",
    "click_element_by_index",
    "input_text",
    "select_dropdown_option",
    "hover_element_by_index",
    "drag_element_by_index",
    "press_key",
    "scroll",
    "upload_file",
    "wait_for_text",
    "screenshot",
    "get_tabs",
    "new_tab",
    "switch_tab",
    "close_tab",
    "get_dialog",
    "set_dialog_behavior",
    "execute_js",
    "get_console_logs",
    "get_requests",
    "request_human_input",
    "get_human_input",
    "commands",
];

/// Commands that act on the engine, not on one session's task.
const ENGINE_COMMANDS: &[&str] = &[
    "start",
    "shutdown",
    "list_tasks",
    "cleanup",
    "list_jobs",
    "get_job",
    "cancel_job",
];

/// Whether `spec` acts on the engine rather than on one session's task.
pub fn is_engine_command(spec: &CommandSpec) -> bool {
    ENGINE_COMMANDS.contains(&spec.name)
        || spec.alias_of.is_some_and(|a| ENGINE_COMMANDS.contains(&a))
}

/// Which catalogue commands are tools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    all: bool,
    names: Vec<String>,
    engine: bool,
}

impl Selection {
    /// Parses `--tools`: a comma-separated list of `default`, `all`, `engine`, group names
    /// (`navigation`, `capture`, …) and command names. An unknown word is an error naming it.
    pub fn parse(text: &str) -> Result<Selection, String> {
        let registry = crate::commands::registry();
        let mut sel = Selection::default();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "default" => {}
                "all" => sel.all = true,
                "engine" => sel.engine = true,
                w if registry.lookup(w).is_some() || GROUPS.iter().any(|g| g.as_str() == w) => {
                    sel.names.push(w.to_string())
                }
                w => {
                    let mut known: Vec<&str> = vec!["default", "all", "engine"];
                    known.extend(GROUPS.iter().map(|g| g.as_str()));
                    return Err(format!(
                        "--tools: `{w}` is neither a group ({}) nor a command name",
                        known.join(", ")
                    ));
                }
            }
        }
        Ok(sel)
    }

    /// Whether engine-wide commands are allowed (`engine`).
    pub fn allows_engine(&self) -> bool {
        self.engine
    }

    /// Whether `spec` is a tool under this selection. A synonym is a tool only where it is
    /// named (the default list names `navigate` and `press_key`, the words agents know); the
    /// command it stands for is then listed under that name only, unless named itself.
    pub fn includes(&self, spec: &CommandSpec) -> bool {
        let named = |n: &str| self.names.iter().any(|x| x == n);
        if ENGINE_COMMANDS.contains(&spec.name) {
            return self.engine || named(spec.name);
        }
        if spec.alias_of.is_some() {
            return DEFAULT_TOOLS.contains(&spec.name) || named(spec.name);
        }
        if named(spec.name) {
            return true;
        }
        let registry = crate::commands::registry();
        let listed_by_synonym = DEFAULT_TOOLS
            .iter()
            .any(|d| registry.lookup(d).and_then(|a| a.alias_of) == Some(spec.name));
        if listed_by_synonym {
            return false;
        }
        self.all || DEFAULT_TOOLS.contains(&spec.name) || named(spec.group.as_str())
    }
}

/// Every group, for `--tools` and its error message.
const GROUPS: &[Group] = &[
    Group::Lifecycle,
    Group::Navigation,
    Group::PageState,
    Group::InteractIndex,
    Group::ReadElement,
    Group::Locate,
    Group::Tabs,
    Group::Wait,
    Group::Mouse,
    Group::Capture,
    Group::Storage,
    Group::Settings,
    Group::Dialogs,
    Group::Modals,
    Group::Console,
    Group::Network,
    Group::Human,
    Group::ExtractJs,
    Group::Meta,
    Group::Jobs,
    Group::Recipes,
];

/// The JSON Schema of one param.
fn param_schema(p: &ParamSpec) -> Value {
    let mut s = Map::new();
    s.insert("type".into(), json!(p.kind.schema_type()));
    if !p.doc.is_empty() {
        s.insert("description".into(), json!(brief(p.doc, PARAM_DOC_CHARS)));
    }
    let default = p.default_value();
    if !default.is_null() {
        s.insert("default".into(), default);
    }
    if let Some((min, max)) = p.range {
        // An open end (±infinity, no JSON number) is no bound at all.
        let num = |v: f64| {
            if !v.is_finite() {
                None
            } else if p.kind == Kind::Int && v.fract() == 0.0 && v.abs() < 9.0e15 {
                Some(json!(v as i64))
            } else {
                Some(json!(v))
            }
        };
        if let Some(min) = num(min) {
            s.insert("minimum".into(), min);
        }
        if let Some(max) = num(max) {
            s.insert("maximum".into(), max);
        }
    }
    if p.kind == Kind::Array {
        // Clients check that an array says what it holds; the items' shapes are in the doc.
        s.insert("items".into(), json!({}));
    }
    Value::Object(s)
}

/// The `inputSchema` of a command: an object of its params, closed to others.
pub fn input_schema(spec: &CommandSpec) -> Map<String, Value> {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in spec.params {
        props.insert(p.name.to_string(), param_schema(p));
        if p.required && !p.absent_ok {
            required.push(json!(p.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema
}

/// The longest description of a param, in characters: the model reads the list on every turn
/// (`methods`, `list_methods` and the Lua stubs keep the whole text).
const PARAM_DOC_CHARS: usize = 80;

/// What an agent needs beyond a tool's one-line summary, for the few tools whose summary does
/// not say how to call them or what to expect; the long text of every command stays in
/// `methods`, `list_methods` and the Lua stubs.
const NOTES: &[(&str, &str)] = &[
    (
        "get_browser_state",
        "A line `[N]<tag …>` is an element: N is the index the *_by_index tools take",
    ),
    (
        "press_key",
        "Key names (Enter, Escape, Tab, ArrowDown, F1…) and chords (Control+A) are pressed; \
         other text is typed",
    ),
    (
        "get_dialog",
        "Dialogs are answered as they open: accepted unless set_dialog_behavior says dismiss",
    ),
    (
        "commands",
        "A step is one command of the catalogue (tools listed here or not) as \
         {\"input_text\": {\"index\": 3, \"text\": \"x\"}}, optionally with \
         \"expect\": {\"js\": \"...\", \"equals\": ...}",
    ),
];

/// `text` cut to at most `max` characters: whole when it fits, else its first clauses (split at
/// `; ` outside brackets, so no cut leaves a bracket open), the first one without its
/// parenthesised asides when it is too long alone, else cut at a word outside brackets with `…`
/// (a first clause with no such word, a shape like `[{id, …}]`, stays whole).
pub fn brief(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let clauses = clauses(&text);
    let mut out = clauses.first().map(|c| c.to_string()).unwrap_or_default();
    if out.chars().count() > max {
        out = without_asides(&out);
    }
    if out.chars().count() > max {
        // At the last word outside brackets; a shape (`[{id, …}]`) stays whole.
        let head: String = out.chars().take(max).collect();
        return match last_space_outside_brackets(&head) {
            Some(i) => format!("{}…", head[..i].trim_end_matches([',', ':', ';'])),
            None => out,
        };
    }
    for c in clauses.iter().skip(1) {
        if out.chars().count() + 2 + c.chars().count() > max {
            break;
        }
        out.push_str("; ");
        out.push_str(c);
    }
    out
}

/// `text` split at `; ` outside brackets.
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 && text[i + 1..].starts_with(' ') => {
                out.push(text[start..i].trim());
                start = i + 2;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|c| !c.is_empty());
    out
}

/// The byte offset of the last space of `text` outside brackets.
fn last_space_outside_brackets(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut last = None;
    for (i, ch) in text.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => last = Some(i),
            _ => {}
        }
    }
    last
}

/// `text` without its parenthesised parts.
fn without_asides(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for ch in text.chars() {
        match ch {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" ,", ",")
        .replace(" ;", ";")
}

/// The description of a command's tool: its one-line summary (a synonym's is the command's it
/// stands for: its own describes it by that other name), and the note an agent needs, if any.
fn description(spec: &CommandSpec) -> String {
    let summary = spec
        .alias_of
        .and_then(|a| crate::commands::registry().lookup(a))
        .map_or(spec.summary, |s| s.summary)
        .trim_end_matches('.');
    match NOTES.iter().find(|(name, _)| *name == spec.name) {
        Some((_, note)) => format!("{summary}. {note}"),
        None => summary.to_string(),
    }
}

/// A command's tool as MCP's `Tool` JSON.
pub fn tool_json(spec: &CommandSpec) -> Value {
    json!({
        "name": spec.name,
        "description": description(spec),
        "inputSchema": Value::Object(input_schema(spec)),
        "annotations": {
            "readOnlyHint": !spec.mutates_page,
            "destructiveHint": spec.mutates_page,
            "idempotentHint": spec.retry_safe,
            "openWorldHint": spec.needs_task(),
        },
    })
}

/// What `run_lua`'s description teaches an agent.
pub const RUN_LUA_DESCRIPTION: &str = "\
Runs a Lua 5.4 script against this session's page in one call: many steps, with branches on \
their results, instead of one tool call per step. `page` is the session's task; `browser.args` \
holds `args`. Every catalogue command is a method: `page:navigate{url=...}`, \
`page:click_element_by_index{index=3}`, `page:input_text{index=5, text=\"x\"}`, \
`page:get_browser_state()`, `page:wait_for_text{text=\"Done\"}`, … (the whole catalogue, not \
only the tools listed here). Each returns a Result: `r.ok`, `r.code` (e.g. ELEMENT_NOT_FOUND), \
`r.msg`, `r.data` (the receipt's fields), `r.retryable`, `r.started`; `r:unwrap()` gives `data` \
or raises the failure. `get_browser_state():unwrap().text` is the observation: one line per \
element, `[N]<tag attr='v'>text />` where N is the index the *_by_index commands take; lines \
without [N] are page text. `print(...)` lines come back in `output`; the script's return value \
(tables become JSON) in `value`; `log` lists each command it ran. A Lua error ends the script \
and the result is an error with file:line and the failing command's receipt.";

/// `run_lua` as MCP's `Tool` JSON.
pub fn run_lua_json() -> Value {
    json!({
        "name": RUN_LUA,
        "description": RUN_LUA_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "script": {"type": "string", "description": "the Lua source; `return` a value to get it back"},
                "args": {"type": "object", "description": "becomes `browser.args`"},
                "timeoutSeconds": {"type": "number", "minimum": 1, "maximum": 900, "default": 300,
                    "description": "the script is stopped after this long"},
            },
            "required": ["script"],
        },
        "annotations": {
            "readOnlyHint": false,
            "destructiveHint": true,
            "idempotentHint": false,
            "openWorldHint": true,
        },
    })
}

/// The tools of `selection`, `run_lua` last.
pub fn tools(selection: &Selection) -> Vec<Value> {
    let registry = crate::commands::registry();
    let mut out: Vec<Value> = registry
        .all()
        .iter()
        .chain(registry.unlisted())
        .filter(|s| selection.includes(s))
        .map(|s| tool_json(s))
        .collect();
    out.push(run_lua_json());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_tool_is_a_catalogue_command() {
        let registry = crate::commands::registry();
        for name in DEFAULT_TOOLS {
            assert!(registry.lookup(name).is_some(), "{name} is not a command");
        }
        let list = tools(&Selection::default());
        assert_eq!(list.len(), DEFAULT_TOOLS.len() + 1);
    }

    #[test]
    fn a_schema_carries_types_required_defaults_and_ranges() {
        let spec = crate::commands::registry()
            .lookup("click_element_by_index")
            .expect("a command");
        let schema = Value::Object(input_schema(spec));
        assert_eq!(schema["properties"]["index"]["type"], "integer");
        assert_eq!(schema["required"], json!(["index"]));
        assert_eq!(schema["properties"]["mode"]["default"], "auto");
        let wait = crate::commands::registry()
            .lookup("wait_for_text")
            .expect("a command");
        let schema = Value::Object(input_schema(wait));
        let ranged = schema["properties"]
            .as_object()
            .expect("properties")
            .values()
            .any(|p| p.get("minimum").is_some_and(Value::is_number));
        assert!(ranged, "a bounded param carries its range: {schema}");
        // Every bound of every tool is a number (an open end is left out, never null), and
        // every array says what it holds.
        for tool in tools(&Selection::parse("all,engine").expect("valid")) {
            for (name, p) in tool["inputSchema"]["properties"]
                .as_object()
                .expect("props")
            {
                for k in ["minimum", "maximum", "default"] {
                    if let Some(v) = p.get(k) {
                        assert!(!v.is_null(), "{}.{name}: {k} is null", tool["name"]);
                    }
                }
                if p["type"] == "array" {
                    assert!(
                        p.get("items").is_some(),
                        "{}.{name}: no items",
                        tool["name"]
                    );
                }
            }
        }
    }

    #[test]
    fn brief_cuts_at_a_sentence_or_a_word() {
        assert_eq!(brief("short", 10), "short");
        assert_eq!(brief("alpha beta gamma delta", 13), "alpha beta…");
        // Whole clauses, never one cut inside its brackets.
        assert_eq!(
            brief("auto | type (press; key by key) | js; absent = auto", 40),
            "auto | type (press; key by key) | js"
        );
        // A first clause too long keeps its words without its asides.
        assert_eq!(
            brief(
                "element index from the latest snapshot (frame routing is automatic)",
                40
            ),
            "element index from the latest snapshot"
        );
    }

    #[test]
    fn descriptions_leave_no_bracket_open() {
        let balanced = |t: &str| {
            let mut depth = 0i32;
            for ch in t.chars() {
                match ch {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                if depth < 0 {
                    return false;
                }
            }
            depth == 0
        };
        for tool in tools(&Selection::parse("all,engine").expect("valid")) {
            let name = &tool["name"];
            let text = tool["description"].as_str().expect("a description");
            assert!(balanced(text), "{name}: {text}");
            for (param, p) in tool["inputSchema"]["properties"]
                .as_object()
                .expect("props")
            {
                let doc = p["description"].as_str().unwrap_or("");
                assert!(balanced(doc), "{name}.{param}: {doc}");
            }
        }
        for (name, _) in NOTES {
            assert!(
                DEFAULT_TOOLS.contains(name),
                "a note for {name}, not a default tool"
            );
        }
        // A synonym reads as the command it stands for.
        let reg = crate::commands::registry();
        let press = description(reg.lookup("press_key").expect("cmd"));
        assert!(
            press.starts_with(reg.lookup("send_keys").expect("cmd").summary),
            "{press}"
        );
    }

    #[test]
    fn selection_words() {
        let sel = Selection::parse("navigation,get_cookies").expect("valid");
        let reg = crate::commands::registry();
        assert!(sel.includes(reg.lookup("get_url").expect("cmd")));
        assert!(sel.includes(reg.lookup("get_cookies").expect("cmd")));
        assert!(!sel.includes(reg.lookup("set_cookie").expect("cmd")));
        assert!(!sel.includes(reg.lookup("shutdown").expect("cmd")));
        let all = Selection::parse("all").expect("valid");
        assert!(all.includes(reg.lookup("set_cookie").expect("cmd")));
        assert!(!all.includes(reg.lookup("shutdown").expect("cmd")));
        assert!(Selection::parse("all,engine")
            .expect("valid")
            .includes(reg.lookup("shutdown").expect("cmd")));
        let err = Selection::parse("navigaton").expect_err("a typo");
        assert!(err.contains("navigaton"), "{err}");
    }
}
