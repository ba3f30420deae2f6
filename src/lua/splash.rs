//! Splash's Lua dialect (`function main(splash, args)`) in the recipe host: the `splash` object
//! (`splash.lua`, written over moonpilot's commands), the codecs it needs from Rust (JSON and
//! base64 on Lua strings, which may hold any bytes), and the run: the object, the script, then
//! its `main`, whose value is the answer `{value | binary, status, content_type, headers}`.

use std::path::Path;

use mlua::{Lua, MultiValue, Value as LuaValue};

use super::convert::{json_to_lua, lua_to_json};
use super::LuaHost;

/// The `splash` object and Splash's libraries, in Lua.
pub const SPLASH_LUA: &str = include_str!("splash.lua");

/// The marker an error of the `splash` object starts with, followed by its JSON
/// `{type, message, ...}` (a plain Lua error is the script's own).
pub const ERROR_MARKER: &str = "\u{1}splash\u{1}";

/// Installs `__splash_codec` (`json_encode`, `json_decode`, `base64_encode`, `base64_decode`).
fn install_codec(lua: &Lua) -> mlua::Result<()> {
    let codec = lua.create_table()?;
    codec.set(
        "json_encode",
        lua.create_function(|_, v: LuaValue| {
            let json = lua_to_json(&v, "json.encode's argument").map_err(mlua::Error::runtime)?;
            serde_json::to_string(&json).map_err(mlua::Error::external)
        })?,
    )?;
    codec.set(
        "json_decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
            json_to_lua(lua, &v)
        })?,
    )?;
    codec.set(
        "base64_encode",
        lua.create_function(|_, s: mlua::LuaString| {
            Ok(crate::encoding::encode_base64(&s.as_bytes()))
        })?,
    )?;
    codec.set(
        "base64_decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let text = s.to_str()?.to_string();
            let bytes = crate::encoding::decode_base64(text.trim())
                .ok_or_else(|| mlua::Error::runtime("base64.decode: not base64"))?;
            lua.create_string(bytes)
        })?,
    )?;
    lua.globals().set("__splash_codec", codec)
}

/// Runs a Splash script at `path` (its chunk name in errors): the object, the script's chunk
/// (which defines `main`), then `main`; answers `__splash_main`'s table as JSON.
pub async fn run(host: &LuaHost, path: &Path, source: &str) -> mlua::Result<serde_json::Value> {
    install_codec(host.lua())?;
    host.eval(SPLASH_LUA, "=splash").await?;
    host.run_source(path, source).await?;
    let values: MultiValue = host.eval("return __splash_main()", "=splash").await?;
    let first = values.into_iter().next().unwrap_or(LuaValue::Nil);
    lua_to_json(&first, "the script's result").map_err(mlua::Error::runtime)
}
