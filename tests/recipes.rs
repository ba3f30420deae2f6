//! Recipes: `list_recipes` and `run_recipe` over the fixture recipes (`tests/fixtures/recipes`,
//! `tests/fixtures/scripts`) and the shipped Lua recipes (`scripts/`), through Lua.

use crate::support::harness::lua;

const HELPERS: &str = r##"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function find(list, name)
  for _, r in ipairs(list) do if r.name == name then return r end end
  error("no recipe " .. name .. " listed")
end
"##;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn recipes_are_listed_and_checked_when_loaded() {
    run(r##"
        local l = browser.call("list_recipes", {}):unwrap()
        eq(l.count, #l.recipes)
        has(l.dir, "tests/fixtures/recipes")
        local fill = find(l.recipes, "fill-name")
        eq(fill.kind, "json"); eq(fill.valid, true); eq(fill.stepCount, 3); eq(#fill.commands, 3)
        eq(fill.defaults.who, "Ada"); eq(fill.params.who, "the name to type")
        has(fill.description, "Type a name"); has(fill.file, "fill-name.json")
        local broken = find(l.recipes, "broken")
        eq(broken.valid, false); has(broken.reason, "step 1: unsupported method `clik_element_by_selector`")
        has(broken.reason, "click_element_by_selector")
        local modals = find(l.recipes, "close-all-modals")
        eq(modals.kind, "lua"); eq(modals.valid, true); has(modals.description, "Close the page's DOM modals")
        eq(find(l.recipes, "query-and-read-table").kind, "lua")
        eq(find(l.recipes, "echo-args").kind, "lua")
        -- Sorted by file name.
        for i = 2, #l.recipes do
          local a, b = l.recipes[i - 1].file:match("[^/]+$"), l.recipes[i].file:match("[^/]+$")
          assert(a <= b, a .. " before " .. b)
        end
    "##);
}

#[test]
fn a_json_recipe_fills_its_vars_over_its_defaults() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local r = page:run_recipe{ name = "fill-name", vars = { who = "Zoë \"Z\"" } }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.recipe, "fill-name"); has(d.recipeDescription, "Type a name")
        eq(d.count, 3); eq(d.succeeded, 3); eq(d.failed, 0); eq(d.expectFailed, 0)
        eq(d.results[3].data.result, 2, "clicks(1) * the default clicks(2)")
        eq(d.results[3].expectResult.passed, true); eq(d.results[3].expectResult.expected, "Zoë \"Z\"")
        eq(js("document.getElementById('echo').textContent"), "Zoë \"Z\"", "the substituted value was typed")
        eq(js("window.clicks"), 1)

        r = page:run_recipe{ name = "fill-name.json", vars = { clicks = 10 } }
        eq(r.ok, true, tostring(r)); eq(r.data.results[3].data.result, 20, "vars override defaults")
    "##);
}

#[test]
fn bad_recipes_and_names_are_refused_before_anything_runs() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local r = page:run_recipe{ name = "broken" }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false)
        has(r.msg, "cannot run"); has(r.msg, "clik_element_by_selector")
        eq(js("window.clicks"), 0, "its valid first step did not run either")
        for _, bad in ipairs({ "../recipes/fill-name", "a/b", "a\\b", "..", "x..y" }) do
          r = page:run_recipe{ name = bad }
          eq(r.code, "INVALID_ARGUMENT", bad); has(r.msg, "bare recipe name")
        end
        r = page:run_recipe{ name = "no-such-recipe" }
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "no recipe `no-such-recipe`"); has(r.msg, "fill-name")
        r = page:run_recipe{}
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "missing parameter `name`")
        r = browser.call("run_recipe", { name = "fill-name" })
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "missing parameter `id`")
    "##);
}

#[test]
fn a_lua_recipe_runs_by_name_with_its_vars() {
    run(r##"
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        local r = page:run_recipe{ name = "echo-args", vars = { who = "Bob", n = 3 } }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.greeting, "hello Bob"); eq(d.n, 3); eq(d.task, page.id); eq(d.title, "Batch")
        eq(d.clicks, 1); eq(d.jobs, true, "task-less commands work from the script")
        eq(d.kind, "lua"); eq(d.recipe, "echo-args"); has(d.file, "echo-args.lua")
        eq(d.output[1], "echo\tBob", "what the script printed")
        eq(js("window.clicks"), 1)

        -- From inside a batch too (the recipe's calls share the batch's lane).
        r = page:call("commands", { commands = { { run_recipe = { name = "echo-args", vars = { who = "Eve" } } } } })
        eq(r.ok, true, tostring(r)); eq(r.data.results[1].data.greeting, "hello Eve")
        eq(js("window.clicks"), 2)

        r = page:run_recipe{ name = "fails" }
        eq(r.ok, false); eq(r.code, "ACTION_FAILED")
        has(r.msg, "fails.lua:3:"); has(r.msg, "boom at line three 1")
        eq(r.data.recipe, "fails")
    "##);
}

#[test]
fn close_all_modals_closes_them_one_by_one() {
    run(r##"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        local before = page:get_modals():unwrap()
        assert(before.countBlocking > 0, "blocking modals to close")
        local r = page:run_recipe{ name = "close-all-modals" }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.countBefore, before.count)
        assert(d.closed >= before.countBlocking, "closed " .. d.closed .. ": " .. d.stopReason)
        eq(d.remainingBlocking, 0, "no blocking modal is left")
        local after = page:get_modals():unwrap()
        eq(after.count, d.remaining); eq(after.countBlocking, 0)
        assert(#d.attempts >= d.rounds, "one attempt or more per round")
        eq(js("document.querySelectorAll('.promo-popup, #notice, .ant-modal-root').length"), 0, "the blocking ones are gone")
    "##);
}

#[test]
fn query_and_read_table_searches_and_reads_rows() {
    run(r##"
        page:navigate{ url = A .. "/search_table.html" }:unwrap()
        local r = page:run_recipe{ name = "query-and-read-table", vars = { query = "north" } }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.rowCount, 2); eq(#d.headers, 3); eq(d.headers[1], "Region"); eq(d.headers[3], "Q2")
        eq(d.rows[1][1], "North"); eq(d.rows[1][2], "10"); eq(d.rows[2][1], "North-West")
        eq(d.query, "north"); eq(d.url, A .. "/search_table.html")

        r = page:run_recipe{ name = "query-and-read-table", vars = { url = A .. "/tables.html", table = "#sales" } }
        eq(r.ok, true, tostring(r))
        eq(r.data.rowCount, 2); eq(r.data.rows[2][1], "South | East"); eq(r.data.rows[2][3], "9")
    "##);
}

#[test]
fn closing_the_task_stops_a_lua_recipe_that_never_ends() {
    run(r##"
        for _, vars in ipairs({ {}, { sleep = true } }) do
          local t = browser.start{}
          local job = browser.spawn(function() return t:run_recipe{ name = "spin", vars = vars } end)
          browser.sleep(300)
          local t0 = browser.clock()
          t:close():unwrap()
          local r = job:join()
          eq(r.ok, false); eq(r.code, "TASK_NOT_FOUND"); has(r.msg, "closed")
          assert(browser.clock() - t0 < 3, "close answers promptly")
        end
        -- The engine keeps serving Lua recipes afterwards.
        page:navigate{ url = A .. "/batch.html" }:unwrap()
        eq(page:run_recipe{ name = "echo-args", vars = { who = "X" } }:unwrap().greeting, "hello X")
    "##);
}

#[test]
fn a_shutdown_step_inside_a_batch_runs_to_its_end() {
    // The shutdown closes the batch's own task, which ends the batch: the shutdown itself must
    // not be cut off with it (the browser was left running, a task half closed).
    use crate::support::harness::{private, test_config};
    use moonpilot::browser::task::TaskId;
    use serde_json::json;
    private(test_config(), |ex| async move {
        let a = ex.execute(None, "start", json!({})).await;
        let b = ex.execute(None, "start", json!({})).await;
        assert!(a.ok && b.ok, "{:?} {:?}", a.msg, b.msg);
        let b = TaskId(b.data["id"].as_str().unwrap().parse().unwrap());
        let steps = json!({"commands": [{"shutdown": {}}, {"get_title": {}}]});
        let r = ex.execute(Some(b), "commands", steps).await;
        assert!(!r.ok, "the batch's task went with the shutdown");
        // The batch answers as its task goes; the shutdown goes on to its end meanwhile.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let tasks = loop {
            let tasks = ex.execute(None, "list_tasks", json!({})).await;
            if tasks.data["browser"].is_null() || std::time::Instant::now() > deadline {
                break tasks;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        assert_eq!(tasks.data["count"], 0, "{}", tasks.data);
        assert!(
            tasks.data["browser"].is_null(),
            "the browser stopped: {}",
            tasks.data
        );
        // And the engine starts afresh.
        let again = ex.execute(None, "start", json!({})).await;
        assert!(again.ok, "{:?}", again.msg);
        ex.execute(None, "shutdown", json!({})).await;
    });
}
