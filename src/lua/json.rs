//! `require("json")` in every Lua state (a local script, the REPL, watch mode, `run_lua`, a Lua
//! recipe): `json.encode(value)`, `json.decode(text)` and `json.as_array(t)`, so a scrape can be
//! written out without a round trip through the page. The shapes are the bridge's own
//! (`convert.rs`): a table with keys `1..n` is an array, one with string keys an object, and an
//! empty table an object unless `json.as_array` marked it (Splash's `treat.as_array`); a decoded
//! array stays an array when encoded again, empty or not; object keys are encoded in order.
//! JSON `null` is `nil`.

use mlua::{Lua, Table, Value as LuaValue};

use super::convert::{json_to_lua, lua_to_json_marked};

/// The registry key of the weak set of tables marked as arrays.
const ARRAYS_KEY: &str = "moonpilot.json.arrays";

/// The weak set of tables marked as arrays (made on first use).
fn arrays(lua: &Lua) -> mlua::Result<Table> {
    if let Ok(t) = lua.named_registry_value::<Table>(ARRAYS_KEY) {
        return Ok(t);
    }
    let set = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__mode", "k")?;
    set.set_metatable(Some(meta))?;
    lua.set_named_registry_value(ARRAYS_KEY, &set)?;
    Ok(set)
}

/// Marks every array of `value` (a decoded JSON value, made by `json_to_lua`) as an array.
fn mark_arrays(value: &LuaValue, json: &serde_json::Value, set: &Table) -> mlua::Result<()> {
    let LuaValue::Table(t) = value else {
        return Ok(());
    };
    match json {
        serde_json::Value::Array(items) => {
            set.raw_set(t.clone(), true)?;
            for (i, item) in items.iter().enumerate() {
                mark_arrays(&t.raw_get(i + 1)?, item, set)?;
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                mark_arrays(&t.raw_get(k.as_str())?, item, set)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Object keys in order (a Lua table has none of its own), so the same table encodes the same.
fn sort_keys(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(String, serde_json::Value)> =
                std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut item) in entries {
                sort_keys(&mut item);
                map.insert(k, item);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// The module table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let json = lua.create_table()?;
    json.set(
        "encode",
        lua.create_function(|lua, value: LuaValue| {
            let set = arrays(lua)?;
            let mut v = lua_to_json_marked(&value, "json.encode's argument", &set)
                .map_err(mlua::Error::runtime)?;
            sort_keys(&mut v);
            serde_json::to_string(&v).map_err(|e| mlua::Error::runtime(format!("json.encode: {e}")))
        })?,
    )?;
    json.set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            let v: serde_json::Value = serde_json::from_slice(&text.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
            let value = json_to_lua(lua, &v)?;
            mark_arrays(&value, &v, &arrays(lua)?)?;
            Ok(value)
        })?,
    )?;
    json.set(
        "as_array",
        lua.create_function(|lua, t: LuaValue| {
            if let LuaValue::Table(table) = &t {
                arrays(lua)?.raw_set(table.clone(), true)?;
            }
            Ok(t)
        })?,
    )?;
    Ok(json)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn encode_decode_and_arrays_round_trip() {
        let lua = Lua::new();
        lua.globals().set("json", module(&lua).unwrap()).unwrap();
        let eval = |src: &str| -> String { lua.load(src).eval::<String>().unwrap() };
        assert_eq!(
            eval("return json.encode({ name = 'a', tags = json.as_array({}), n = {1, 2} })"),
            r#"{"n":[1,2],"name":"a","tags":[]}"#
        );
        assert_eq!(eval("return json.encode({})"), "{}");
        assert_eq!(
            eval(r#"return json.encode(json.decode('{"a":[],"b":{},"c":[{"d":[]}]}'))"#),
            r#"{"a":[],"b":{},"c":[{"d":[]}]}"#
        );
        assert_eq!(eval(r#"return json.decode('[1,"x"]')[2]"#), "x");
        let bad: mlua::Result<String> = lua.load("return json.decode('{nope')").eval();
        assert!(bad.unwrap_err().to_string().contains("json.decode"));
        let mixed: mlua::Result<String> = lua.load("return json.encode({1, a = 2})").eval();
        assert!(mixed.unwrap_err().to_string().contains("mixes"));
    }
}
