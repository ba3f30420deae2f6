//! The sandbox of scripts sent by others (Splash's `/execute` and `/run`, MCP's `run_lua`, Lua
//! recipes run over HTTP): a Lua state built from a list of what is safe, the way Splash's own
//! sandbox and Roblox's Luau build theirs, instead of a full state with a few globals removed.
//!
//! The state opens only the table, string, math, utf8, coroutine and os libraries, and its
//! globals are a fresh table holding only the names below: there is no `io`, no `debug`, no
//! `package` (so no searcher touches the disk), no `dofile`/`loadfile`, no `warn`; `os` is its
//! clock (`time`, `clock`, `date`, `difftime`); `load` takes text chunks only; `string.dump` is
//! gone; `collectgarbage` answers only "count"; the string metatable is hidden; `require`
//! answers only the modules the host registered with [`preload`] (moonpilot's own, Splash's
//! `json`, `base64`, `treat`); `print` prints nothing until the host redirects it.

use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value as LuaValue};

/// Base functions a sandboxed script gets.
const BASE: &[&str] = &[
    "assert",
    "error",
    "getmetatable",
    "ipairs",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawlen",
    "rawset",
    "select",
    "setmetatable",
    "tonumber",
    "tostring",
    "type",
    "xpcall",
    "_VERSION",
];
/// Libraries a sandboxed script gets whole (`string` without `dump`).
const LIBRARIES: &[&str] = &["string", "table", "math", "utf8", "coroutine"];
/// What a sandboxed script gets of `os`.
const OS_CLOCK: &[&str] = &["time", "clock", "date", "difftime"];

/// The registry key of the modules `require` may answer (name → loader), in every state.
const PRELOAD_KEY: &str = "moonpilot.sandbox.preload";
/// The registry key of the modules it has answered.
const LOADED_KEY: &str = "moonpilot.sandbox.loaded";

/// `load` for text chunks only, with the caller's environment when one is given.
const LOAD_TEXT: &str = r##"
local load, select = ...
return function(chunk, name, mode, ...)
  if mode ~= nil and mode ~= "t" then
    return nil, "load: only text chunks may be loaded here (mode \"t\")"
  end
  if select("#", ...) > 0 then return load(chunk, name, "t", (...)) end
  return load(chunk, name, "t")
end
"##;

/// A fresh sandboxed state (see the module's doc).
pub fn new_state() -> mlua::Result<Lua> {
    let libs = StdLib::TABLE
        | StdLib::STRING
        | StdLib::MATH
        | StdLib::UTF8
        | StdLib::COROUTINE
        | StdLib::OS;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    let full = lua.globals();
    let env = lua.create_table()?;
    for name in BASE {
        env.raw_set(*name, full.raw_get::<LuaValue>(*name)?)?;
    }
    for name in LIBRARIES {
        env.raw_set(*name, full.raw_get::<LuaValue>(*name)?)?;
    }
    // The string table is also every string's `__index`: `dump` goes from the table itself.
    let string: Table = full.raw_get("string")?;
    string.raw_set("dump", LuaValue::Nil)?;
    // `getmetatable("")` answers this instead of the metatable shared by every string.
    let string_meta: Table = lua
        .load("return getmetatable('')")
        .set_name("=sandbox")
        .eval()?;
    string_meta.raw_set("__metatable", "string")?;
    let os: Table = full.raw_get("os")?;
    let clock = lua.create_table()?;
    for name in OS_CLOCK {
        clock.raw_set(*name, os.raw_get::<LuaValue>(*name)?)?;
    }
    env.raw_set("os", clock)?;
    let load: Function = full.raw_get("load")?;
    let select: Function = full.raw_get("select")?;
    let text_only: Function = lua
        .load(LOAD_TEXT)
        .set_name("=sandbox")
        .call((load, select))?;
    env.raw_set("load", text_only)?;
    let collect: Function = full.raw_get("collectgarbage")?;
    env.raw_set(
        "collectgarbage",
        lua.create_function(move |_, option: Option<String>| match option.as_deref() {
            Some("count") => collect.call::<mlua::MultiValue>("count"),
            other => Err(mlua::Error::runtime(format!(
                "collectgarbage: only \"count\" is available here, not {:?}",
                other.unwrap_or("collect")
            ))),
        })?,
    )?;
    env.raw_set(
        "print",
        lua.create_function(|_, _: mlua::MultiValue| Ok(()))?,
    )?;
    lua.set_named_registry_value(PRELOAD_KEY, lua.create_table()?)?;
    lua.set_named_registry_value(LOADED_KEY, lua.create_table()?)?;
    env.raw_set("require", lua.create_function(require)?)?;
    env.raw_set("_G", env.clone())?;
    lua.set_globals(env)?;
    Ok(lua)
}

/// `require(name)` of a sandboxed state: a module the host registered, loaded once.
fn require(lua: &Lua, name: String) -> mlua::Result<LuaValue> {
    let loaded: Table = lua.named_registry_value(LOADED_KEY)?;
    let have: LuaValue = loaded.raw_get(name.as_str())?;
    if !have.is_nil() {
        return Ok(have);
    }
    let preload: Table = lua.named_registry_value(PRELOAD_KEY)?;
    let Some(loader) = preload.raw_get::<Option<Function>>(name.as_str())? else {
        let mut names: Vec<String> = preload
            .pairs::<String, LuaValue>()
            .filter_map(|p| p.ok().map(|(k, _)| k))
            .collect();
        names.sort();
        return Err(mlua::Error::runtime(format!(
            "module '{name}' not found: scripts sent through this door may require only {}",
            names.join(", ")
        )));
    };
    let value = match loader.call::<LuaValue>(name.as_str())? {
        LuaValue::Nil => LuaValue::Boolean(true),
        v => v,
    };
    loaded.raw_set(name.as_str(), value.clone())?;
    Ok(value)
}

/// Registers `loader` as module `name` for `require`: in `package.preload` of a full state, in
/// the sandbox's own list otherwise.
pub fn preload(lua: &Lua, name: &str, loader: Function) -> mlua::Result<()> {
    if let Ok(preload) = lua.named_registry_value::<Table>(PRELOAD_KEY) {
        return preload.raw_set(name, loader);
    }
    let package: Table = lua.globals().get("package")?;
    let preload: Table = package.get("preload")?;
    preload.set(name, loader)
}

/// Whether `lua` is a sandboxed state.
pub fn is_sandboxed(lua: &Lua) -> bool {
    lua.named_registry_value::<Table>(PRELOAD_KEY).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn eval(lua: &Lua, source: &str) -> Result<String, String> {
        lua.load(source)
            .set_name("=test")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .eval::<LuaValue>()
            .map(|v| format!("{v:?}"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn nothing_outside_the_list_is_reachable() {
        let lua = new_state().unwrap();
        for gone in [
            "io",
            "debug",
            "package",
            "dofile",
            "loadfile",
            "warn",
            "os.execute",
            "os.exit",
            "os.getenv",
            "os.remove",
            "os.rename",
            "os.tmpname",
            "string.dump",
            "(\"\").dump",
            "getmetatable('').__index",
        ] {
            let probe = format!("local ok, v = pcall(function() return {gone} end) return ok and v == nil or not ok");
            assert_eq!(
                eval(&lua, &probe).unwrap(),
                "Boolean(true)",
                "{gone} is reachable"
            );
        }
        assert_eq!(eval(&lua, "return os.time() > 0").unwrap(), "Boolean(true)");
        assert!(eval(&lua, "return require('io')")
            .unwrap_err()
            .contains("not found"));
        assert!(eval(&lua, "return require('os')")
            .unwrap_err()
            .contains("not found"));
        assert!(eval(&lua, "return collectgarbage('stop')").is_err());
        assert_eq!(
            eval(&lua, "return type(collectgarbage('count'))").unwrap(),
            "String(\"number\")"
        );
    }

    #[test]
    fn load_takes_text_only_and_keeps_the_sandbox() {
        let full = Lua::new();
        let dumped: mlua::LuaString = full
            .load("return string.dump(function() return 1 end)")
            .eval()
            .unwrap();
        let lua = new_state().unwrap();
        let bytes = lua.create_string(dumped.as_bytes()).unwrap();
        lua.globals().set("chunk", bytes).unwrap();
        assert_eq!(eval(&lua, "return load(chunk)").unwrap(), "Nil");
        assert_eq!(eval(&lua, "return load(chunk, 'x', 'b')").unwrap(), "Nil");
        assert_eq!(eval(&lua, "return load('return io')()").unwrap(), "Nil");
        assert_eq!(
            eval(&lua, "return load('return 1 + 1')()").unwrap(),
            "Integer(2)"
        );
        assert_eq!(
            eval(&lua, "return load('return x', 'c', 't', {x = 5})()").unwrap(),
            "Integer(5)"
        );
        // A binary chunk handed to the host's loader in text mode is refused too.
        let chunk: mlua::LuaString = lua.globals().get("chunk").unwrap();
        let loaded = lua
            .load(chunk.as_bytes().to_vec())
            .set_mode(mlua::chunk::ChunkMode::Text)
            .exec();
        assert!(loaded.is_err());
    }

    #[test]
    fn require_answers_registered_modules_once() {
        let lua = new_state().unwrap();
        let loader = lua
            .create_function(|lua, _: String| {
                let t = lua.create_table()?;
                t.set("n", 7)?;
                Ok(t)
            })
            .unwrap();
        preload(&lua, "m", loader).unwrap();
        assert_eq!(eval(&lua, "return require('m').n").unwrap(), "Integer(7)");
        assert_eq!(
            eval(&lua, "return require('m') == require('m')").unwrap(),
            "Boolean(true)"
        );
        let e = eval(&lua, "return require('m2')").unwrap_err();
        assert!(e.contains("may require only m"), "{e}");
        assert!(is_sandboxed(&lua));
        assert!(!is_sandboxed(&Lua::new()));
    }
}
