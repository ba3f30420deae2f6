//! The registry: the one table of commands, and lookups over it.
//!
//! A command exists when it is in this table. `list_methods`, the Lua `Task` methods, the CLI's
//! `methods` listing and (later) REPL completion and the HTTP dispatcher are generated from it.
//! Each `commands/<group>.rs` file exports a static `SPECS` slice; `commands::GROUPS` chains them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::Params;

/// The future a handler returns once its params are read.
pub type CommandFuture = Pin<Box<dyn Future<Output = Result<Value, CommandError>> + Send>>;

/// A handler: reads and checks its params synchronously (nothing touches the browser before the
/// future is polled), then returns the future that does the work.
pub type Handler = fn(Cx, &mut Params) -> Result<CommandFuture, CommandError>;

/// The JSON kind of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    String,
    /// An integer.
    Int,
    /// A number.
    Number,
    /// A boolean.
    Bool,
    /// An object.
    Object,
    /// An array.
    Array,
}

impl Kind {
    /// The catalogue's spelling (`string`, `int`, `number`, `bool`, `object`, `array`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Object => "object",
            Kind::Array => "array",
        }
    }
}

/// One parameter of a command.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// The wire name, exactly as the catalogue spells it.
    pub name: &'static str,
    /// The JSON kind.
    pub kind: Kind,
    /// Whether the command fails without it.
    pub required: bool,
    /// The default as JSON text (`"true"`, `"5000"`, `"\"auto\""`), or `None`.
    pub default: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
}

/// One command: plain data plus its handler.
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// The wire name.
    pub name: &'static str,
    /// The catalogue group (`lifecycle`, `navigation`, ...).
    pub group: &'static str,
    /// One line of at most 79 columns.
    pub summary: &'static str,
    /// The long text.
    pub doc: &'static str,
    /// The parameters.
    pub params: &'static [ParamSpec],
    /// The command addresses one task (`Task` method in Lua).
    pub needs_task: bool,
    /// The command may change the page.
    pub mutates_page: bool,
    /// Resending after a transient failure is safe.
    pub retry_safe: bool,
    /// The command gets the long (15 min) bound instead of 90 s.
    pub long_running: bool,
    /// The name this command is a synonym of.
    pub alias_of: Option<&'static str>,
    /// A Lua snippet showing a call.
    pub example: &'static str,
    /// The handler.
    pub handler: Handler,
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSpec")
            .field("name", &self.name)
            .finish()
    }
}

impl CommandSpec {
    /// The spec as JSON for `methods --json` and help.
    pub fn to_json(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "type": p.kind.as_str(),
                    "required": p.required,
                    "default": p.default.and_then(|d| serde_json::from_str::<Value>(d).ok()),
                    "doc": p.doc,
                })
            })
            .collect();
        json!({
            "name": self.name,
            "group": self.group,
            "summary": self.summary,
            "needsTask": self.needs_task,
            "mutatesPage": self.mutates_page,
            "retrySafe": self.retry_safe,
            "longRunning": self.long_running,
            "aliasOf": self.alias_of,
            "params": params,
            "example": self.example,
        })
    }

    /// The param named `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

struct Table {
    ordered: Vec<&'static CommandSpec>,
    by_name: HashMap<&'static str, &'static CommandSpec>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let ordered: Vec<&'static CommandSpec> = crate::commands::GROUPS
            .iter()
            .flat_map(|g| g.iter())
            .collect();
        let by_name = ordered.iter().map(|s| (s.name, *s)).collect();
        Table { ordered, by_name }
    })
}

/// Every command in registry order.
pub fn all() -> &'static [&'static CommandSpec] {
    &table().ordered
}

/// The command named `name`.
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    table().by_name.get(name).copied()
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn root(name: &str) -> &str {
    match name.split_once('_') {
        Some((_, rest)) => rest,
        None => name,
    }
}

/// Names longer than this get no near-name suggestions.
const MAX_SUGGESTED_LEN: usize = 64;

/// Up to three near names for an unknown method, by the rules of PROTOCOL.md §6.
pub fn suggest_among<'a>(target: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    // No command or param name is this long: a huge or hostile name gets no suggestions rather
    // than an edit-distance computation proportional to its length.
    if target.len() > MAX_SUGGESTED_LEN {
        return Vec::new();
    }
    let target = target.trim().to_lowercase();
    let tokens: Vec<&str> = target.split('_').filter(|t| !t.is_empty()).collect();
    let limit = 2.max(target.chars().count() / 2);
    let mut scored: Vec<(usize, &str)> = Vec::new();
    for name in names {
        let mut score = edit_distance(&target, name);
        let target_root = if target.contains('_') {
            root(&target).to_string()
        } else {
            target.replace('_', "")
        };
        let name_root = if name.contains('_') {
            root(name).to_string()
        } else {
            name.to_string()
        };
        if !target_root.is_empty() && target_root == name_root {
            score = score.min(1.max(score.saturating_sub(3)));
        }
        let name_tokens: Vec<&str> = name.split('_').collect();
        let subset = |a: &[&str], b: &[&str]| !a.is_empty() && a.iter().all(|t| b.contains(t));
        if subset(&tokens, &name_tokens) || subset(&name_tokens, &tokens) {
            score = score.min(1);
        }
        if score <= limit {
            scored.push((score, name));
        }
    }
    scored.sort_by_key(|(s, _)| *s);
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Up to three registered names near `target`.
pub fn suggest(target: &str) -> Vec<&'static str> {
    suggest_among(target, all().iter().map(|s| s.name))
}

/// The `UNKNOWN_METHOD` message for `name`.
pub fn unknown_method_message(name: &str) -> String {
    let near = suggest(name);
    let shown = if name.chars().count() > 80 {
        let head: String = name.chars().take(60).collect();
        format!("{head}…({} chars)", name.chars().count())
    } else {
        name.to_string()
    };
    let mut msg = format!("unsupported method `{shown}`");
    if !near.is_empty() {
        let list: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
        msg.push_str(&format!(", did you mean {}?", list.join(" / ")));
    }
    msg.push_str(&format!(
        " ({} methods are registered; `moonpilot methods` lists them)",
        all().len()
    ));
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_snake_case() {
        let mut seen = HashSet::new();
        for spec in all() {
            assert!(seen.insert(spec.name), "duplicate {}", spec.name);
            assert!(
                spec.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{} is not snake_case",
                spec.name
            );
        }
    }

    #[test]
    fn every_spec_is_documented() {
        for spec in all() {
            assert!(
                !spec.summary.is_empty() && spec.summary.len() <= 79,
                "{} summary",
                spec.name
            );
            assert!(!spec.doc.is_empty(), "{} doc", spec.name);
            assert!(!spec.example.is_empty(), "{} example", spec.name);
            for p in spec.params {
                assert!(!p.doc.is_empty(), "{}.{} doc", spec.name, p.name);
                if let Some(d) = p.default {
                    assert!(
                        serde_json::from_str::<Value>(d).is_ok(),
                        "{}.{} default",
                        spec.name,
                        p.name
                    );
                }
            }
        }
    }

    #[test]
    fn examples_parse_as_lua() {
        let lua = mlua::Lua::new();
        for spec in all() {
            let chunk = format!("local page, browser = ...\n{}", spec.example);
            lua.load(&chunk)
                .into_function()
                .unwrap_or_else(|e| panic!("{} example: {e}", spec.name));
        }
    }

    #[test]
    fn table_matches_the_catalogue() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/spec/commands.json");
        let text = std::fs::read_to_string(path).expect("../shared/spec/commands.json is readable");
        let catalogue: Vec<Value> = serde_json::from_str(&text).unwrap();
        let by_name: HashMap<&str, &Value> = catalogue
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c))
            .collect();
        for spec in all() {
            let c = by_name
                .get(spec.name)
                .unwrap_or_else(|| panic!("{} is not in commands.json", spec.name));
            assert_eq!(c["group"], spec.group, "{} group", spec.name);
            assert_eq!(c["needs_task"], spec.needs_task, "{} needs_task", spec.name);
            assert_eq!(
                c["mutates_page"], spec.mutates_page,
                "{} mutates_page",
                spec.name
            );
            assert_eq!(c["retry_safe"], spec.retry_safe, "{} retry_safe", spec.name);
            assert_eq!(
                c["long_running"], spec.long_running,
                "{} long_running",
                spec.name
            );
            assert_eq!(
                c["alias_of"].as_str(),
                spec.alias_of,
                "{} alias_of",
                spec.name
            );
            let want: Vec<(&str, &str, bool)> = c["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap(),
                        p["type"].as_str().unwrap(),
                        p["required"].as_bool().unwrap(),
                    )
                })
                .collect();
            let got: Vec<(&str, &str, bool)> = spec
                .params
                .iter()
                .map(|p| (p.name, p.kind.as_str(), p.required))
                .collect();
            assert_eq!(got, want, "{} params", spec.name);
            for (p, cp) in spec.params.iter().zip(c["params"].as_array().unwrap()) {
                let want_default = &cp["default"];
                let got_default: Value = p
                    .default
                    .map(|d| serde_json::from_str(d).unwrap())
                    .unwrap_or(Value::Null);
                assert_eq!(
                    &got_default, want_default,
                    "{}.{} default",
                    spec.name, p.name
                );
            }
        }
    }

    #[test]
    fn suggestions_follow_protocol_rules() {
        let names = [
            "get_tabs",
            "click_element_by_index",
            "get_title",
            "get_url",
            "navigate",
        ];
        assert_eq!(suggest_among("list_tabs", names)[0], "get_tabs");
        assert_eq!(
            suggest_among("click_by_index", names),
            vec!["click_element_by_index"]
        );
        assert_eq!(suggest_among("get_titel", names)[0], "get_title");
        assert!(suggest_among("zzzzzzzzzzzz", names).is_empty());
        assert!(suggest_among("NAVIGATE ", names).contains(&"navigate"));
    }

    #[test]
    fn unknown_method_message_lists_near_names() {
        let msg = unknown_method_message("get_titel");
        assert!(msg.contains("did you mean `get_title`"), "{msg}");
    }
}
