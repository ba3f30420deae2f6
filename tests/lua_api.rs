//! The Lua contract of LUA-API.md: Result, errors, strict mode, spawn/parallel, args.

use crate::support::harness::lua;

#[test]
fn results_unwrap_expect_tostring_json() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local r = page:get_title()
        eq(r:unwrap().title, "Basic")
        has(tostring(r), "get_title ok", "compact line")
        has(tostring(r), 'title="Basic"', "key fields")
        has(r:json(), '"title":"Basic"', "original JSON")
        assert(type(r.elapsed_ms) == "number" and r.elapsed_ms >= 0)
        local bad = page:navigate{ url = "nope" }
        local ok, err = pcall(function() return bad:unwrap() end)
        eq(ok, false)
        eq(err.code, "INVALID_ARGUMENT")
        eq(err.method, "navigate")
        eq(err.retryable, false)
        has(tostring(err), "INVALID_ARGUMENT", "error tostring")
        local ok2, err2 = pcall(function() return bad:expect("opening the site") end)
        has(err2.msg, "opening the site: ", "expect prefix")
    "#);
}

#[test]
fn strict_mode_raises() {
    lua(r#"
        local prev = browser.strict(true)
        eq(prev, false)
        local ok, err = pcall(function() return page:navigate{ url = "nope" } end)
        browser.strict(false)
        eq(ok, false)
        eq(err.code, "INVALID_ARGUMENT")
        eq(page:navigate{ url = "nope" }.ok, false, "returns again when off")
    "#);
}

#[test]
fn lua_argument_mistakes_are_invalid_argument() {
    lua(r#"
        local ok, r = pcall(function() local x = page:navigate("http://x/"); return x end)
        eq(ok, false, "a non-table params value is raised")
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "bad argument #1 to `navigate`: expected a params table, got string")
        has(tostring(r), "test:", "the error points at the script line")
        local ok2, r2 = pcall(browser.call, "list_methods", 5)
        eq(ok2, false); has(r2.msg, "bad argument #2 to `list_methods`")
        local m = page:navigate{ url = "http://x/", 1 }
        eq(m.code, "INVALID_ARGUMENT"); has(m.msg, "mixes array entries")
        local u = page:no_such_command{}
        eq(u.code, "UNKNOWN_METHOD")
        local c = page:call("get_title")
        eq(c.ok, true, "task:call by name")
        eq(type(page), "userdata", "a Task is a handle")
        eq(tostring(page), "Task(" .. page.id .. ")")
        eq(math.type(page.id), "integer")
        eq(pcall(function() page.id = 5 end), false, "the id is read-only")
        eq(page:get_url().ok, true, "still the same task")
        local ok, err = pcall(browser.start, "x")
        eq(ok, false); eq(err.code, "INVALID_ARGUMENT")
    "#);
}

/// Issue 10 #14: every wrong argument to a `browser` function is a raised error table with
/// `code`, pointing at the script's line, never a plain string out of the bridge.
#[test]
fn issue10_wrong_arguments_to_browser_functions_raise_typed_errors() {
    lua(r#"
        local cases = {
          { "page:call(nil)", function() local r = page:call(nil); return r end, "bad argument #1 to `task:call`" },
          { "browser.call(nil)", function() local r = browser.call(nil); return r end, "bad argument #1 to `browser.call`" },
          { "browser.call({})", function() local r = browser.call({}); return r end, "expected a method name (string), got table" },
          { "browser.sleep('x')", function() browser.sleep("x") end, "bad argument #1 to `browser.sleep`" },
          { "browser.sleep()", function() browser.sleep() end, "got nil" },
          { "browser.spawn(nil)", function() local r = browser.spawn(nil); return r end, "bad argument #1 to `browser.spawn`" },
          { "browser.parallel(1)", function() local r = browser.parallel(1); return r end, "bad argument #1 to `browser.parallel`" },
        }
        for _, case in ipairs(cases) do
          local what, f, text = case[1], case[2], case[3]
          local ok, err = pcall(f)
          eq(ok, false, what)
          eq(type(err), "table", what .. ": a structured error, got " .. tostring(err))
          eq(err.code, "INVALID_ARGUMENT", what); eq(err.started, false, what)
          eq(err.retryable, false, what)
          has(err.msg, text, what)
          has(tostring(err), "test:", what .. ": points at the script line")
          hasnt(tostring(err), "__mlua", what); hasnt(tostring(err), "prelude.lua", what)
        end
        -- The right calls still work.
        browser.sleep("1")
        eq(browser.spawn(function(a) return a + 1 end, 1):join(), 2)
        eq(page:call("get_url").ok, true)
    "#);
}

#[test]
fn spawn_and_parallel_share_the_engine() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local other = browser.start{}
        other:navigate{ url = A .. "/second.html" }:unwrap()
        local t1, t2 = browser.parallel(
          function() return page:get_title().data.title end,
          function() return other:get_title().data.title end)
        eq(t1, "Basic"); eq(t2, "Second")
        -- Two coroutines on one task are serialized by its lane; both complete.
        local j = browser.spawn(function() return page:execute_js{ body = "new Promise(r => setTimeout(() => r(1), 100))" }.data.result end)
        local direct = page:get_url().data.url
        eq(j:join(), 1); eq(direct, A .. "/basic.html")
        other:close()
        local names = browser.methods("click")
        eq(names[1], "click_element_by_index")
        eq(browser.call("list_methods", { filter = "get_" }).data.count >= 2, true)
        assert(browser.clock() > 0)
        browser.sleep(1)
    "#);
}

#[test]
fn json_writes_out_a_scrape_without_the_page() {
    // Issue 36 §6: `require("json")` in a local script, the shapes of the bridge, arrays kept.
    lua(r#"
        local json = require("json")
        page:navigate{ url = A .. "/many_links.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local links = {}
        for _, el in ipairs(s.elements) do
          if el.tag == "A" then links[#links + 1] = { index = el.index, text = el.text } end
        end
        assert(#links > 2, "links on the page")
        local text = json.encode({ url = s.url, links = links, none = json.as_array({}), empty = {} })
        has(text, '"none":[]'); has(text, '"empty":{}'); has(text, '"links":[{')
        local back = json.decode(text)
        eq(#back.links, #links); eq(back.links[1].text, links[1].text); eq(back.url, s.url)
        eq(json.encode(back.none), "[]", "a decoded empty array stays one")
        eq(json.encode({ b = 1, a = 2 }), '{"a":2,"b":1}', "keys in order")
        local ok, err = pcall(json.decode, "{broken")
        eq(ok, false); has(tostring(err), "json.decode")
        local ok2, err2 = pcall(json.encode, { 1, a = 2 })
        eq(ok2, false); has(tostring(err2), "mixes")
        eq(require("json"), json, "one module")
    "#);
}
