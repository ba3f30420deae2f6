//! `serde_json::Value` ⇄ Lua values, in one place.
//!
//! JSON null becomes `nil`; arrays become 1-based sequences. A Lua table with keys `1..n` only is
//! an array, one with string keys only is an object, an empty table is an object; a table that
//! mixes both is refused, naming the key.

use mlua::{Lua, Table, Value as LuaValue};
use serde_json::{Map, Number, Value};

/// Converts a JSON value to Lua.
pub fn json_to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    Ok(match value {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => LuaValue::Integer(i),
            None => LuaValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, json_to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, v) in map {
                t.raw_set(k.as_str(), json_to_lua(lua, v)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// Converts a Lua value to JSON; `path` names the place for error messages (`params.url`).
pub fn lua_to_json(value: &LuaValue, path: &str) -> Result<Value, String> {
    lua_to_json_depth(value, path, 0, None)
}

/// [`lua_to_json`], where an empty table that is a key of `arrays` (a weak set: `json.as_array`)
/// is an empty array rather than an empty object.
pub fn lua_to_json_marked(value: &LuaValue, path: &str, arrays: &Table) -> Result<Value, String> {
    lua_to_json_depth(value, path, 0, Some(arrays))
}

fn lua_to_json_depth(
    value: &LuaValue,
    path: &str,
    depth: usize,
    arrays: Option<&Table>,
) -> Result<Value, String> {
    if depth > 64 {
        return Err(format!(
            "`{path}` is nested too deeply (or refers to itself)"
        ));
    }
    match value {
        LuaValue::Nil => Ok(Value::Null),
        LuaValue::Boolean(b) => Ok(Value::Bool(*b)),
        LuaValue::Integer(i) => Ok(Value::from(*i)),
        LuaValue::Number(n) => Number::from_f64(*n)
            .map(Value::Number)
            .ok_or_else(|| format!("`{path}` is not a finite number")),
        LuaValue::String(s) => match s.to_str() {
            Ok(text) => Ok(Value::String(text.to_string())),
            Err(_) => Err(format!("`{path}` is not valid UTF-8")),
        },
        LuaValue::Table(t) => table_to_json(t, path, depth, arrays),
        other => Err(format!(
            "`{path}` is a {}, which has no JSON form",
            other.type_name()
        )),
    }
}

fn table_to_json(
    t: &Table,
    path: &str,
    depth: usize,
    arrays: Option<&Table>,
) -> Result<Value, String> {
    let mut ints: Vec<(i64, Value)> = Vec::new();
    let mut map = Map::new();
    let mut first_string_key: Option<String> = None;
    let mut first_int_key: Option<i64> = None;
    for pair in t.clone().pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair.map_err(|e| format!("reading `{path}` failed: {e}"))?;
        match k {
            LuaValue::String(s) => {
                let key = s
                    .to_str()
                    .map_err(|_| format!("a key of `{path}` is not UTF-8"))?
                    .to_string();
                let child = format!("{path}.{key}");
                first_string_key.get_or_insert_with(|| key.clone());
                map.insert(key, lua_to_json_depth(&v, &child, depth + 1, arrays)?);
            }
            LuaValue::Integer(i) => {
                let child = format!("{path}[{i}]");
                first_int_key.get_or_insert(i);
                ints.push((i, lua_to_json_depth(&v, &child, depth + 1, arrays)?));
            }
            LuaValue::Number(n) if n.fract() == 0.0 && n.abs() < 9e15 => {
                let i = n as i64;
                first_int_key.get_or_insert(i);
                ints.push((
                    i,
                    lua_to_json_depth(&v, &format!("{path}[{i}]"), depth + 1, arrays)?,
                ));
            }
            other => {
                return Err(format!(
                    "`{path}` has a {} key; only string keys or 1..n work",
                    other.type_name()
                ))
            }
        }
    }
    let marked = || {
        arrays.is_some_and(|a| {
            a.raw_get::<bool>(LuaValue::Table(t.clone()))
                .unwrap_or(false)
        })
    };
    match (ints.is_empty(), map.is_empty()) {
        (true, true) if marked() => Ok(Value::Array(Vec::new())),
        (true, _) => Ok(Value::Object(map)),
        (false, true) => {
            ints.sort_by_key(|(i, _)| *i);
            let n = ints.len() as i64;
            if ints.first().map(|(i, _)| *i) != Some(1) || ints.last().map(|(i, _)| *i) != Some(n) {
                return Err(format!(
                    "`{path}` is not a sequence 1..n (it has holes or starts elsewhere)"
                ));
            }
            Ok(Value::Array(ints.into_iter().map(|(_, v)| v).collect()))
        }
        (false, false) => Err(format!(
            "`{path}` mixes array entries (key {}) and named keys (`{}`); use one or the other",
            first_int_key.unwrap_or(1),
            first_string_key.unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(lua: &Lua, src: &str) -> Result<Value, String> {
        let v: LuaValue = lua.load(src).eval().unwrap();
        lua_to_json(&v, "params")
    }

    #[test]
    fn lua_to_json_shapes() {
        let lua = Lua::new();
        assert_eq!(round(&lua, "{}").unwrap(), json!({}));
        assert_eq!(round(&lua, "{1, 2, 'x'}").unwrap(), json!([1, 2, "x"]));
        assert_eq!(
            round(&lua, "{a = 1.5, b = {c = true}}").unwrap(),
            json!({"a": 1.5, "b": {"c": true}})
        );
        let e = round(&lua, "{1, a = 2}").unwrap_err();
        assert!(e.contains("mixes") && e.contains("`a`"), "{e}");
        assert!(round(&lua, "{[2] = 1}").unwrap_err().contains("sequence"));
        assert!(round(&lua, "{f = print}").unwrap_err().contains("params.f"));
        assert!(round(&lua, "{x = 0/0}").unwrap_err().contains("finite"));
    }

    #[test]
    fn json_to_lua_shapes() {
        let lua = Lua::new();
        let v = json_to_lua(&lua, &json!({"a": [10, null, 30], "b": null, "c": "s"})).unwrap();
        lua.globals().set("v", v).unwrap();
        let ok: bool = lua
            .load("return v.a[1] == 10 and v.a[3] == 30 and v.b == nil and v.c == 's'")
            .eval()
            .unwrap();
        assert!(ok);
    }
}
