//! The registry: the table of commands, and lookups over it.
//!
//! A command exists when it is in the table. `list_methods`, the Lua `Task` methods, the CLI's
//! `methods` listing, REPL completion, the LuaLS stubs and (later) the HTTP dispatcher are
//! generated from it. The table is built from the spec slices `commands/` exports
//! (`commands::registry()`); this module knows only the spec types of `command.rs`.

use std::collections::HashMap;

use crate::command::CommandSpec;

/// The table: every command in catalogue order, and by name.
pub struct Registry {
    ordered: Vec<&'static CommandSpec>,
    unlisted: Vec<&'static CommandSpec>,
    by_name: HashMap<&'static str, &'static CommandSpec>,
}

impl Registry {
    /// The table over `groups`, in their order.
    pub fn new(groups: &[&'static [CommandSpec]]) -> Registry {
        let ordered: Vec<&'static CommandSpec> = groups.iter().flat_map(|g| g.iter()).collect();
        let by_name = ordered.iter().map(|s| (s.name, *s)).collect();
        Registry {
            ordered,
            unlisted: Vec::new(),
            by_name,
        }
    }

    /// With `groups` of commands that [`Registry::lookup`] finds but [`Registry::all`] does not
    /// list (the batch `commands`, which the reference routes outside its table).
    pub fn with_unlisted(mut self, groups: &[&'static [CommandSpec]]) -> Registry {
        for spec in groups.iter().flat_map(|g| g.iter()) {
            self.by_name.insert(spec.name, spec);
            self.unlisted.push(spec);
        }
        self
    }

    /// The unlisted commands.
    pub fn unlisted(&self) -> &[&'static CommandSpec] {
        &self.unlisted
    }

    /// Every command in registry order.
    pub fn all(&self) -> &[&'static CommandSpec] {
        &self.ordered
    }

    /// The command named `name`.
    pub fn lookup(&self, name: &str) -> Option<&'static CommandSpec> {
        self.by_name.get(name).copied()
    }

    /// Up to three registered names near `target`.
    pub fn suggest(&self, target: &str) -> Vec<&'static str> {
        suggest_among(target, self.ordered.iter().map(|s| s.name))
    }

    /// The `UNKNOWN_METHOD` message for `name`.
    pub fn unknown_method_message(&self, name: &str) -> String {
        let near = self.suggest(name);
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
            self.ordered.len()
        ));
        msg
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Every command, the unlisted ones too.
    fn all() -> Vec<&'static CommandSpec> {
        let r = crate::commands::registry();
        r.all().iter().chain(r.unlisted()).copied().collect()
    }
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

    /// moonpilot's extensions of the catalogue (README, "Recording"): optional params some commands
    /// take besides the catalogue's, each command's catalogue params unchanged and in order;
    /// an `index` the catalogue requires may be replaced by a `selector`.
    const EXTENDED: &[(&str, &[&str])] = &[
        ("check_element_by_index", &["selector", "frame", "nth"]),
        ("uncheck_element_by_index", &["selector", "frame", "nth"]),
        ("select_dropdown_option", &["selector", "frame", "nth"]),
        ("set_dialog_behavior", &["promptText"]),
        ("get_element_value", &["selector", "frame"]),
        (
            "double_click_element_by_index",
            &["selector", "frame", "nth"],
        ),
        ("hover_element_by_index", &["selector", "frame", "nth"]),
        ("focus_element_by_index", &["selector", "frame", "nth"]),
        (
            "start",
            &[
                "proxy",
                "proxyBypass",
                "userAgent",
                "locale",
                "timezone",
                "geolocation",
                "viewport",
            ],
        ),
    ];

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
            assert_eq!(c["group"], spec.group.as_str(), "{} group", spec.name);
            assert_eq!(
                c["needs_task"],
                spec.needs_task(),
                "{} needs_task",
                spec.name
            );
            assert_eq!(
                c["auto_capture"], spec.auto_capture,
                "{} auto_capture",
                spec.name
            );
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
            let extended = EXTENDED.iter().find(|(name, _)| *name == spec.name);
            let got: Vec<(&str, &str, bool)> = spec
                .params
                .iter()
                .filter(|p| !extended.is_some_and(|(_, extra)| extra.contains(&p.name)))
                .map(|p| (p.name, p.kind.as_str(), p.required))
                .collect();
            let want: Vec<(&str, &str, bool)> = want
                .into_iter()
                .map(|(name, kind, required)| match extended {
                    // An extension lets a required catalogue param be left out for another.
                    Some(_) if name == "index" => (name, kind, false),
                    _ => (name, kind, required),
                })
                .collect();
            assert_eq!(got, want, "{} params", spec.name);
            for p in spec
                .params
                .iter()
                .filter(|p| extended.is_some_and(|(_, extra)| extra.contains(&p.name)))
            {
                assert!(
                    !p.required,
                    "{}.{}: an extension is optional",
                    spec.name, p.name
                );
            }
            for (p, cp) in spec
                .params
                .iter()
                .filter(|p| !extended.is_some_and(|(_, extra)| extra.contains(&p.name)))
                .zip(c["params"].as_array().unwrap())
            {
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

    /// A plausible value of `p` for the sync-half test: its default, else one of its kind.
    fn sample(p: &crate::command::ParamSpec) -> Value {
        use crate::command::Kind;
        let default = p.default_value();
        if !default.is_null() {
            return default;
        }
        match (p.kind, p.name) {
            (Kind::String, "url") => Value::from("http://127.0.0.1/"),
            (Kind::String, _) => Value::from("x"),
            (Kind::Int, _) => Value::from(1),
            (Kind::Number, _) => Value::from(1.5),
            (Kind::Bool, _) => Value::from(true),
            (Kind::Object, _) => serde_json::json!({}),
            (Kind::Array, _) => serde_json::json!([]),
        }
    }

    /// Every handler's synchronous half, run without a browser, reads exactly the params its
    /// spec declares (plus framework params): over trials with every param, only the required
    /// ones, and each optional one alone, nothing undeclared is read and nothing declared is
    /// left unread.
    #[test]
    fn handlers_read_exactly_their_declared_params() {
        use crate::command::Handler;
        use crate::protocol::params::FRAMEWORK_PARAMS;
        use crate::protocol::Params;
        for spec in all() {
            let required: serde_json::Map<String, Value> = spec
                .params
                .iter()
                .filter(|p| p.required)
                .map(|p| (p.name.to_string(), sample(p)))
                .collect();
            let mut trials = vec![
                spec.params
                    .iter()
                    .map(|p| (p.name.to_string(), sample(p)))
                    .collect(),
                required.clone(),
            ];
            for p in spec.params.iter().filter(|p| !p.required) {
                let mut t = required.clone();
                t.insert(p.name.to_string(), sample(p));
                trials.push(t);
            }
            let mut read = HashSet::new();
            for trial in trials {
                let mut params = Params::new(Value::Object(trial)).unwrap();
                // The work is dropped unrun: only the reading matters here — and that no value
                // of a param's declared kind is refused as the wrong kind by its handler.
                let res = match spec.handler {
                    Handler::Task(h) => h(&mut params).map(drop),
                    Handler::Engine(h) => h(&mut params).map(drop),
                };
                if let Err(e) = res {
                    assert!(
                        !e.msg.contains(": expected "),
                        "{} refuses a value of its declared kind: {}",
                        spec.name,
                        e.msg
                    );
                }
                read.extend(params.read_keys().iter().cloned());
            }
            for key in &read {
                assert!(
                    spec.param(key).is_some() || FRAMEWORK_PARAMS.contains(&key.as_str()),
                    "{} reads `{key}`, which its spec does not declare",
                    spec.name
                );
            }
            for p in spec.params {
                assert!(
                    read.contains(p.name) || FRAMEWORK_PARAMS.contains(&p.name),
                    "{} declares `{}` but its handler never reads it",
                    spec.name,
                    p.name
                );
            }
        }
    }

    /// The batch is dispatched by name but listed nowhere (PROTOCOL.md §1: 122 methods).
    #[test]
    fn the_batch_is_found_but_not_listed() {
        let r = crate::commands::registry();
        assert_eq!(r.lookup("commands").map(|s| s.name), Some("commands"));
        assert!(r.all().iter().all(|s| s.name != "commands"));
        assert_eq!(r.all().len(), 122);
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
        let msg = crate::commands::registry().unknown_method_message("get_titel");
        assert!(msg.contains("did you mean `get_title`"), "{msg}");
    }
}
