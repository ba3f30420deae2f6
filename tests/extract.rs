//! execute_js results: serialisation as JSON.stringify would do it, with every value JSON cannot
//! hold named in the receipt, and values of scripts that start a navigation.

use crate::support::harness::lua;

/// Lua helpers: `js` runs a script and answers its receipt's data, `notes` maps each converted
/// path to "type -> what it became".
const HELPERS: &str = r#"
local function js(body) return page:execute_js{ body = body }:unwrap() end
local function notes(data)
  local seen = {}
  for _, n in ipairs(data.unserializable or {}) do seen[n.path] = n.type .. " -> " .. n.as end
  return seen
end
local function wait_title(want)
  local t0 = browser.clock()
  local title
  repeat
    local t = page:get_title()
    title = t.ok and t.data.title or title
  until title == want or browser.clock() - t0 > 5
  return title
end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}{body}"));
}

/// Issue 9: a `Date`, `URL`, `Map`, `Set`, typed array or `BigInt` came back as `{}`.
#[test]
fn issue_9_results_are_serialised_as_json_and_conversions_are_named() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local d = js("return new Date(Date.UTC(2024, 0, 2, 3, 4, 5))")
        eq(d.result, "2024-01-02T03:04:05.000Z", "a Date is its ISO string")
        eq(d.unserializable, nil, "a Date has a JSON form: no note")
        eq(js("new URL('/x?y=1#z', location.href)").result, A .. "/x?y=1#z", "a URL is its href")
        local m = js([=[return {
            when: new Date(0),
            m: new Map([['a', 1], ['b', new Set([2, 3])]]),
            k: new Map([[1, 'one']]),
            n: 12345678901234567890n,
            bytes: new Uint8Array([1, 2, 255]),
            f() {},
            u: undefined,
            kept: 'plain',
        }]=])
        local r = m.result
        eq(r.when, "1970-01-01T00:00:00.000Z")
        eq(r.m.a, 1); eq(r.m.b[1], 2); eq(r.m.b[2], 3)
        eq(r.k[1][1], 1, "a Map with other keys: [key, value] pairs"); eq(r.k[1][2], "one")
        eq(r.n, "12345678901234567890", "a BigInt is its decimal string")
        eq(#r.bytes, 3); eq(r.bytes[3], 255)
        eq(r.f, nil); eq(r.u, nil); eq(r.kept, "plain")
        local seen = notes(m)
        eq(seen["$.m"], "Map -> an object of its entries")
        eq(seen["$.m.b"], "Set -> an array of its values")
        eq(seen["$.k"], "Map -> an array of [key, value] pairs")
        eq(seen["$.n"], "BigInt -> its decimal string")
        eq(seen["$.bytes"], "Uint8Array -> an array of its numbers")
        eq(seen["$.f"], "function -> dropped")
        eq(seen["$.u"], "undefined -> dropped")
        eq(seen["$.when"], nil, "the Date needed no note")
        eq(#m.unserializable, 7, "one note per conversion")
        has(m.resultNote, "Map at `$.m` became an object of its entries")
        -- Top-level values, cycles and numbers JSON has no word for.
        local b = js("10n ** 20n")
        eq(b.result, "100000000000000000000"); eq(notes(b)["$"], "BigInt -> its decimal string")
        local c = js("const o = {name: 'loop'}; o.self = o; return o")
        eq(c.result.name, "loop"); eq(c.result.self, nil)
        eq(notes(c)["$.self"], "cycle -> null (a reference to a value that contains it)")
        local a = js("[NaN, 1, () => 1, Symbol('s')]")
        eq(a.result[2], 1)
        local seen_a = notes(a)
        eq(seen_a["$[0]"], "NaN -> null"); eq(seen_a["$[2]"], "function -> null")
        eq(seen_a["$[3]"], "symbol -> null")
        eq(notes(js("undefined"))["$"], "undefined -> null")
        -- A script that is not an expression (no `return`) is serialised the same way.
        local q = js("var q = new Map([['z', 26]]); q")
        eq(q.result.z, 26); eq(notes(q)["$"], "Map -> an object of its entries")
        -- Plain values are unchanged and carry no note; nodes are refs.
        local p = js("return {a: [1, 'x', true, null], n: 1.5}")
        eq(p.result.a[2], "x"); eq(p.result.a[3], true); eq(p.result.n, 1.5)
        eq(p.unserializable, nil); eq(p.resultNote, nil)
        eq(js("document.getElementById('btn')").result, "ref:button#btn")
        eq(js("() => [document.body]").result[1], "ref:body", "nested nodes too")
    "#);
}

/// The serialiser runs in the page's own world: a page that breaks Array and JSON methods
/// cannot break it.
#[test]
fn results_survive_a_page_that_patches_array_and_json() {
    run(r#"
        page:navigate{ url = A .. "/hostile.html" }:unwrap()
        local r = js("return [new Map([['a', [1, 2]]]), new Set(['s']), {d: new Date(0)}]")
        eq(r.result[1].a[2], 2); eq(r.result[2][1], "s")
        eq(r.result[3].d, "1970-01-01T00:00:00.000Z")
        eq(notes(r)["$[0]"], "Map -> an object of its entries")
    "#);
}

/// Issue 9: a script that starts a navigation (`location.href = …; return 42`) lost its value
/// and answered PAGE_NAVIGATING in most tries: the value was read in a second call, after the
/// document had gone. Every form, twenty times.
#[test]
fn issue_9_a_script_that_starts_a_navigation_keeps_its_value() {
    run(r#"
        local forms = {
          "location.href = '/second.html'; return {n: %d, when: new Date(0)}",
          "() => { location.href = '/second.html'; return {n: %d, when: new Date(0)} }",
          "(location.href = '/second.html', {n: %d, when: new Date(0)})",
        }
        for i = 1, 20 do
          page:navigate{ url = A .. "/basic.html" }:unwrap()
          local body = string.format(forms[i % 3 + 1], i)
          local r = page:execute_js{ body = body }
          eq(r.ok, true, "try " .. i .. " (" .. body .. "): " .. tostring(r))
          eq(r.data.result.n, i, "try " .. i .. ": the value")
          eq(r.data.result.when, "1970-01-01T00:00:00.000Z", "try " .. i)
          eq(r.data.navigationStarted, true, "try " .. i .. ": the navigation is reported")
          eq(r.data.navigationUrl, A .. "/second.html", "try " .. i)
          eq(r.data.navigationSameDocument, false, "try " .. i)
          eq(wait_title("Second"), "Second", "try " .. i .. ": the page went where the script sent it")
        end
        -- A script that navigates nowhere reports nothing; a pushState is a same-document one.
        eq(js("return 1").navigationStarted, nil)
        local p = js("history.pushState({}, '', '/pushed'); return 2")
        eq(p.result, 2); eq(p.navigationStarted, true); eq(p.navigationSameDocument, true)
        eq(p.navigationUrl, A .. "/pushed")
    "#);
}

/// Scripts now run through `Runtime.callFunctionOn`, which has no timeout of its own: a
/// synchronous endless loop in a function is still stopped at the budget.
#[test]
fn an_endless_function_is_stopped_at_the_budget() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        for _, body in ipairs({ "() => { for (;;) {} }", "for (;;) {} return 1" }) do
          local t0 = browser.clock()
          local r = page:execute_js{ body = body, timeoutMs = 300 }
          eq(r.code, "EVAL_TIMEOUT", body)
          eq(r.data.outcomeUnknown, true)
          assert(browser.clock() - t0 < 5, body .. ": bounded")
          eq(js("1 + 1").result, 2, body .. ": the page works afterwards")
        end
    "#);
}

/// Issue 10 (defect 8): `(function(){ return 5 })()` answered `result: null` (the `return`
/// inside the IIFE made the whole script a statement list), and a statement list that starts
/// with a function declaration failed to compile. Every shape answers its value; values JSON
/// cannot hold are said, not dropped.
#[test]
fn issue_10_every_script_shape_answers_its_value_and_names_what_json_cannot_hold() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        -- Shapes that have a JSON value: the value, and no note.
        local plain = {
            {"1 + 2", 3},
            {"document.title", "Basic"},
            {"return 2 * 3", 6},
            {"const a = 4;\nreturn a + 1", 5},
            {"(function(){ return 5 })()", 5},
            {"(function () { return 'iife' }())", "iife"},
            {"(() => { return 7 })()", 7},
            {"(async () => { await null; return 8 })()", 8},
            {"async function f() { return 9 }; return await f()", 9},
            {"function g() { return 10 }\nreturn g()", 10},
            {"() => 11", 11},
            {"async () => { return 12 }", 12},
            {"function () { return 13 }", 13},
            {"Promise.resolve(14)", 14},
            {"new Promise(r => setTimeout(() => r(15), 10))", 15},
            {"let x = 2; x * 8", 16},
            {"[1, 'a', true]", nil},
        }
        for _, case in ipairs(plain) do
            local d = js(case[1])
            if case[2] ~= nil then eq(d.result, case[2], case[1]) end
            eq(d.unserializable, nil, case[1] .. ": no note")
            eq(d.resultNote, nil, case[1] .. ": no note")
        end
        eq(js("[1, 'a', true]").result[2], "a", "an array")
        -- Values JSON cannot hold: converted, and the receipt says how, at which path.
        local said = {
            {"10n", "10", "BigInt"},
            {"NaN", nil, "NaN"},
            {"Infinity", nil, "Infinity"},
            {"-Infinity", nil, "-Infinity"},
            {"-0", 0, "-0"},
            {"Symbol('s')", nil, "symbol"},
            {"undefined", nil, "undefined"},
            {"(function(){ return 1n })()", "1", "BigInt"},
            {"(function(){ return NaN })()", nil, "NaN"},
            {"(function(){ return -0 })()", 0, "-0"},
            {"(() => { return Symbol('t') })()", nil, "symbol"},
            {"(function(){ return Math.max })()", nil, "function"},
            {"document.querySelector", nil, "function"},
            {"(function(){})()", nil, "undefined"},
            {"void 0", nil, "undefined"},
        }
        for _, case in ipairs(said) do
            local d = js(case[1])
            eq(d.result, case[2], case[1])
            local n = notes(d)
            assert(n["$"] and n["$"]:find(case[3], 1, true) == 1,
                case[1] .. ": note for $ names " .. case[3] .. ", got " .. tostring(n["$"]))
            has(d.resultNote, case[3], case[1] .. ": resultNote")
        end
        -- A cyclic object returned from an IIFE keeps its data and names the cycle.
        local c = js("(() => { const o = {a: 1}; o.me = o; return o })()")
        eq(c.result.a, 1, "cyclic object keeps its data")
        eq(notes(c)["$.me"], "cycle -> null (a reference to a value that contains it)", "cycle named")
        -- Nested values: each place is said.
        local nested = js("(function(){ return {n: NaN, z: -0, b: 2n, s: Symbol('q'), f() {}} })()")
        local n = notes(nested)
        eq(n["$.n"], "NaN -> null"); eq(n["$.z"], "-0 -> 0"); eq(n["$.b"], "BigInt -> its decimal string")
        eq(n["$.s"], "symbol -> dropped"); eq(n["$.f"], "function -> dropped")
        eq(nested.result.b, "2"); eq(nested.result.z, 0)
        -- A script that throws still fails, from an IIFE too, and a syntax error stays one.
        local t = page:execute_js{ body = "(function(){ throw new TypeError('boom') })()" }
        eq(t.ok, false, "a throwing IIFE fails"); has(t.msg, "boom")
        local s = page:execute_js{ body = "return (1" }
        eq(s.ok, false, "syntax error fails"); has(s.msg, "SyntaxError")
    "#);
}
