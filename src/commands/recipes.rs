//! Recipes (PROTOCOL.md §12, §18): named batches in `<dir>/<name>.json` and Lua recipes in
//! `<scripts dir>/<name>.lua`, listed by `list_recipes` and run by `run_recipe`.
//!
//! Directories are searched in order (`EngineConfig::recipe_dirs`: `recipes/` of the project
//! directory, then of the state directory; `script_dirs` likewise for `scripts/`); the first file
//! of a name wins. A JSON recipe is checked when it is **loaded** (listed or looked up): every
//! step must be one object naming a registered command, so `list_recipes` shows a broken recipe
//! as invalid with its reason and `run_recipe` refuses it before anything runs. Its `{{var}}`
//! placeholders are filled on the serialised command array (`"{{k}}"` with its quotes, then
//! bare `{{k}}`, each by the value's JSON literal; vars over the recipe's defaults), and it runs
//! as a `commands` batch on the envelope's task. A Lua recipe runs with `vars` as
//! `browser.args` (plus `args.task`) and `page` bound to the task; its return value is the data.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::command::*;
use crate::commands::jobs::{run_batch, Plan};
use crate::error::CommandError;
use crate::protocol::Params;

/// The recipe commands.
pub const SPECS: &[CommandSpec] = &[
    Group::Recipes
        .engine("list_recipes", list_recipes)
        .summary("List the JSON recipes and Lua recipes that run_recipe can run")
        .doc(
            "JSON recipes from `recipes/` (project directory first, then the state directory) \
              with their description, params, defaults, commands and stepCount, checked as they \
              are loaded (`valid:false` with `reason` when a step names no registered command); \
              Lua recipes (`kind: lua`) from `scripts/`. Sorted by file name.",
        )
        .example("for _, r in ipairs(browser.call(\"list_recipes\").data.recipes) do print(r.name, r.kind) end"),
    Group::Recipes
        .action("run_recipe", run_recipe)
        .no_capture()
        .long()
        .summary("Run a named recipe (a JSON batch or a Lua script) on this task")
        .doc(
            "A JSON recipe runs as a `commands` batch after its `{{var}}` placeholders are \
              filled (vars over its defaults); the answer is the batch's, plus `recipe` and \
              `recipeDescription`. A Lua recipe runs with vars as `browser.args` and `page` \
              bound to this task; its return value is the data (what it printed in \
              `output`). Names with `/`, `\\` or `..` are refused; an unknown name lists the \
              available recipes.",
        )
        .params(&[
            string(
                "name",
                "recipe file name without .json ('/', '\\\\' or '..' rejected)",
            )
            .req(),
            object(
                "vars",
                "values for {{var}} placeholders, merged over the recipe's defaults",
            )
            .secret(Secrecy::Always),
            boolean("stopOnError", "batch stop rule").or("true"),
        ])
        .example("local r = page:run_recipe{ name = \"close-all-modals\" }\nprint(r.data.closed)"),
];

/// What a recipe file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Json,
    Lua,
}

/// One recipe as loaded.
#[derive(Debug, Clone)]
struct Recipe {
    /// The file stem (what `run_recipe{name}` names).
    stem: String,
    file: PathBuf,
    kind: Kind,
    /// The JSON document (JSON recipes).
    doc: Map<String, Value>,
    /// Why it cannot run, when it cannot.
    invalid: Option<String>,
    /// A Lua recipe's description: its first `-- ` comment line.
    lua_description: Option<String>,
}

impl Recipe {
    fn name(&self) -> String {
        self.doc
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| self.stem.clone(), str::to_string)
    }

    fn description(&self) -> Option<String> {
        match self.kind {
            Kind::Json => self
                .doc
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            Kind::Lua => self.lua_description.clone(),
        }
    }

    fn commands(&self) -> Vec<Value> {
        self.doc
            .get("commands")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    fn describe(&self) -> Value {
        let mut d = json!({
            "name": self.name(),
            "file": self.file.display().to_string(),
            "kind": match self.kind { Kind::Json => "json", Kind::Lua => "lua" },
            "valid": self.invalid.is_none(),
        });
        if let Some(desc) = self.description() {
            d["description"] = json!(desc);
        }
        if self.kind == Kind::Json {
            for key in ["params", "defaults"] {
                if let Some(v) = self.doc.get(key) {
                    d[key] = v.clone();
                }
            }
            // A default may be a password (the listing goes to any HTTP caller).
            if let Some(defaults) = d.get_mut("defaults") {
                crate::redact::value(defaults);
            }
            let commands = self.commands();
            d["stepCount"] = json!(commands.len());
            d["commands"] = json!(commands);
        }
        if let Some(why) = &self.invalid {
            d["reason"] = json!(why);
        }
        d
    }
}

/// Why the JSON recipe `doc` cannot run, if it cannot: its steps are checked by the batch's
/// rules and every command name against the registry.
fn check_recipe(doc: &Map<String, Value>) -> Option<String> {
    let Some(commands) = doc.get("commands") else {
        return Some("the recipe has no `commands` array".into());
    };
    let Some(steps) = commands.as_array() else {
        return Some("`commands` must be an array of {command: params} objects".into());
    };
    if steps.is_empty() {
        return Some("`commands` is empty".into());
    }
    if steps.len() > crate::commands::jobs::MAX_STEPS {
        return Some(format!(
            "at most {} commands, got {}",
            crate::commands::jobs::MAX_STEPS,
            steps.len()
        ));
    }
    let registry = crate::commands::registry();
    for (i, step) in steps.iter().enumerate() {
        let Some(map) = step.as_object() else {
            return Some(format!(
                "step {i}: each command object may contain only one key"
            ));
        };
        let keys: Vec<&String> = map.keys().filter(|k| *k != "expect").collect();
        let [name] = keys.as_slice() else {
            return Some(format!(
                "step {i}: each command object may contain only one key besides `expect`"
            ));
        };
        if name.as_str() == "commands" {
            return Some(format!("step {i}: nesting commands is not supported"));
        }
        if registry.lookup(name).is_none() {
            return Some(format!(
                "step {i}: {}",
                registry.unknown_method_message(name)
            ));
        }
    }
    None
}

/// Every recipe in `json_dirs` and `lua_dirs`, the first of a stem per kind winning, sorted by
/// file name. Blocking: run it off the runtime.
fn load_all(json_dirs: &[PathBuf], lua_dirs: &[PathBuf]) -> Vec<Recipe> {
    let mut out: Vec<Recipe> = Vec::new();
    let mut scan = |dir: &Path, ext: &str, kind: Kind| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().and_then(|e| e.to_str()) == Some(ext))
            .collect();
        files.sort();
        for file in files {
            let Some(stem) = file
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            if out.iter().any(|r| r.stem == stem && r.kind == kind) {
                continue;
            }
            out.push(load_one(file, stem, kind));
        }
    };
    for dir in json_dirs {
        scan(dir, "json", Kind::Json);
    }
    for dir in lua_dirs {
        scan(dir, "lua", Kind::Lua);
    }
    out.sort_by(|a, b| a.file.file_name().cmp(&b.file.file_name()));
    out
}

fn load_one(file: PathBuf, stem: String, kind: Kind) -> Recipe {
    let text = std::fs::read_to_string(&file);
    let mut recipe = Recipe {
        stem,
        file,
        kind,
        doc: Map::new(),
        invalid: None,
        lua_description: None,
    };
    match (kind, text) {
        (_, Err(e)) => recipe.invalid = Some(format!("cannot read the file: {e}")),
        (Kind::Json, Ok(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(doc)) => {
                recipe.invalid = check_recipe(&doc);
                recipe.doc = doc;
            }
            Ok(_) => recipe.invalid = Some("the file is not a JSON object".into()),
            Err(e) => recipe.invalid = Some(format!("the file is not valid JSON: {e}")),
        },
        (Kind::Lua, Ok(text)) => {
            recipe.lua_description = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("--"))
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty());
        }
    }
    recipe
}

/// Loads the recipes of the engine's directories off the runtime.
async fn load(cx_engine: &crate::engine::Engine) -> Vec<Recipe> {
    let json_dirs = cx_engine.config.recipe_dirs.clone();
    let lua_dirs = cx_engine.config.script_dirs.clone();
    tokio::task::spawn_blocking(move || load_all(&json_dirs, &lua_dirs))
        .await
        .unwrap_or_default()
}

fn dirs_json(dirs: &[PathBuf]) -> Vec<String> {
    dirs.iter().map(|d| d.display().to_string()).collect()
}

fn list_recipes(_p: &mut Params) -> Prepared<Cx> {
    run(move |cx: Cx| async move {
        let recipes: Vec<Value> = load(&cx.engine)
            .await
            .iter()
            .map(Recipe::describe)
            .collect();
        let config = &cx.engine.config;
        let dirs = config.recipe_dirs.clone();
        // The first directory that exists (a file-system look: off the runtime's threads).
        let dir = tokio::task::spawn_blocking(move || {
            dirs.iter()
                .find(|d| d.is_dir())
                .or(dirs.first())
                .map(|d| d.display().to_string())
        })
        .await
        .unwrap_or_default();
        Ok(json!({
            "count": recipes.len(),
            "recipes": recipes,
            "dir": dir,
            "dirs": dirs_json(&config.recipe_dirs),
            "scriptDirs": dirs_json(&config.script_dirs),
        }))
    })
}

/// The stem `name` asks for: refused with `/`, `\` or `..`; `.json` / `.lua` optional.
fn recipe_stem(name: &str) -> Result<String, CommandError> {
    if name.contains('/') || name.contains('\\') || name.contains("..") {
        return Err(CommandError::invalid(
            "name",
            format!("param `name`: `{name}` must be a bare recipe name (no `/`, `\\` or `..`)"),
        ));
    }
    let stem = name
        .strip_suffix(".json")
        .or_else(|| name.strip_suffix(".lua"))
        .unwrap_or(name);
    Ok(stem.to_string())
}

/// Fills `{{var}}` placeholders in the serialised `commands` (PROTOCOL.md §12): first
/// `"{{key}}"` with its quotes becomes the value's JSON literal (a string, a number, an
/// object…), then a bare `{{key}}` — which in a valid recipe file can only sit inside a JSON
/// string — becomes that literal escaped for the string it sits in, so `"return 'hi ' +
/// {{who}}"` with `who = "Ada"` reads `return 'hi ' + "Ada"` (as `execute_js`'s own `vars` do).
fn substitute(commands: &[Value], vars: &Map<String, Value>) -> Result<Vec<Value>, CommandError> {
    let mut text = Value::Array(commands.to_vec()).to_string();
    for (key, value) in vars {
        let literal = value.to_string();
        let escaped = Value::String(literal.clone()).to_string();
        let inside = &escaped[1..escaped.len() - 1];
        text = text
            .replace(&format!("\"{{{{{key}}}}}\""), &literal)
            .replace(&format!("{{{{{key}}}}}"), inside);
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(steps)) => Ok(steps),
        _ => Err(CommandError::invalid(
            "vars",
            "the recipe's commands are not valid JSON once its {{var}} placeholders are filled",
        )),
    }
}

fn run_recipe(p: &mut Params) -> Prepared<TaskCx> {
    let stem = recipe_stem(&p.str_req("name")?)?;
    let vars = p.object_opt("vars")?.unwrap_or_default();
    let stop_on_error = p.bool_or("stopOnError", true)?;
    run(move |cx: TaskCx| async move {
        let recipes = load(&cx.engine).await;
        let found = recipes
            .iter()
            .find(|r| r.stem == stem && r.kind == Kind::Json)
            .or_else(|| recipes.iter().find(|r| r.stem == stem))
            .or_else(|| recipes.iter().find(|r| r.name() == stem));
        let Some(recipe) = found else {
            let names: Vec<String> = recipes.iter().map(Recipe::name).collect();
            let available = if names.is_empty() {
                format!(
                    "none: put <name>.json in {} or <name>.lua in {}",
                    dirs_json(&cx.engine.config.recipe_dirs).join(" or "),
                    dirs_json(&cx.engine.config.script_dirs).join(" or ")
                )
            } else {
                names.join(", ")
            };
            return Err(CommandError::invalid(
                "name",
                format!("no recipe `{stem}`; available: {available}"),
            ));
        };
        if let Some(why) = &recipe.invalid {
            return Err(CommandError::invalid(
                "name",
                format!(
                    "the recipe `{stem}` ({}) cannot run: {why}",
                    recipe.file.display()
                ),
            ));
        }
        let name = recipe.name();
        let description = recipe.description();
        let label = |data: &mut Value| {
            if let Value::Object(map) = data {
                map.insert("recipe".into(), json!(name));
                map.insert("recipeDescription".into(), json!(description));
            }
        };
        match recipe.kind {
            Kind::Json => {
                let mut merged = recipe
                    .doc
                    .get("defaults")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                merged.extend(vars);
                let steps = substitute(&recipe.commands(), &merged)?;
                let plan = Plan::new(steps, stop_on_error, false, None)?;
                match run_batch(&cx, plan, None).await {
                    Ok(mut data) => {
                        label(&mut data);
                        Ok(data)
                    }
                    Err(mut e) => {
                        if let Some(details) = e.details.as_mut() {
                            label(details);
                        }
                        Err(e)
                    }
                }
            }
            Kind::Lua => {
                let ran = cx
                    .calls
                    .script(recipe.file.clone(), Value::Object(vars))
                    .await;
                let ran = ran.map(|mut r| (r["value"].take(), r["output"].take()));
                let mut data = match ran {
                    Ok((value, output)) => {
                        let mut data = match value {
                            Value::Object(map) => Value::Object(map),
                            Value::Null => json!({}),
                            other => json!({ "result": other }),
                        };
                        if output.as_array().is_some_and(|o| !o.is_empty()) {
                            data["output"] = output;
                        }
                        data
                    }
                    Err(mut e) => {
                        let mut details = e.details.take().map(|d| *d).unwrap_or(json!({}));
                        label(&mut details);
                        return Err(e.with_details(details));
                    }
                };
                label(&mut data);
                data["kind"] = json!("lua");
                data["file"] = json!(recipe.file.display().to_string());
                Ok(data)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    #[test]
    fn names_are_bare() {
        assert_eq!(recipe_stem("login.json").unwrap(), "login");
        assert_eq!(recipe_stem("close-all-modals").unwrap(), "close-all-modals");
        for bad in ["../x", "a/b", "a\\b", "..", "x..y"] {
            let e = recipe_stem(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn placeholders_take_json_literals() {
        let commands = vec![
            json!({"input_text_by_selector": {"selector": "#q", "text": "{{who}}"}}),
            json!({"wait": {"seconds": "{{n}}"}}),
            json!({"execute_js": {"body": "return {{n}} + 1"}}),
        ];
        let vars = json!({"who": "Zoë \"Z\"", "n": 2});
        let out = substitute(&commands, vars.as_object().unwrap()).unwrap();
        assert_eq!(out[0]["input_text_by_selector"]["text"], "Zoë \"Z\"");
        assert_eq!(out[1]["wait"]["seconds"], 2);
        assert_eq!(out[2]["execute_js"]["body"], "return 2 + 1");
        // A bare string placeholder inside a string: its JSON literal, escaped in place.
        let js = vec![json!({"execute_js": {"body": "return 'hi ' + {{who}}"}})];
        let out = substitute(&js, vars.as_object().unwrap()).unwrap();
        assert_eq!(
            out[0]["execute_js"]["body"],
            "return 'hi ' + \"Zoë \\\"Z\\\"\""
        );
    }

    #[test]
    fn unknown_commands_are_caught_at_load() {
        let doc = json!({"commands": [{"get_title": {}}, {"clik_element": {}}]});
        let why = check_recipe(doc.as_object().unwrap()).unwrap();
        assert!(
            why.starts_with("step 1: unsupported method `clik_element`"),
            "{why}"
        );
        let ok = json!({"commands": [{"get_title": {}, "expect": {"js": "1"}}]});
        assert!(check_recipe(ok.as_object().unwrap()).is_none());
        let nested = json!({"commands": [{"commands": {}}]});
        assert!(check_recipe(nested.as_object().unwrap())
            .unwrap()
            .contains("nesting"));
        assert!(check_recipe(&Map::new()).unwrap().contains("no `commands`"));
    }
}
