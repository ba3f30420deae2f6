//! Native dialogs (`get_dialog` family, `set_dialog_behavior`): the background answer, the
//! record's `seq`, consume/clear, and a policy change that never replays an old dialog.

use crate::support::harness::lua;

const HELPERS: &str = r#"
local function js(expr) return page:execute_js{ body = expr }:unwrap().result end
local function click(id)
  local s = page:get_browser_state{}:unwrap()
  for _, el in ipairs(s.elements) do
    if el.id == id then return page:click_element_by_index{ index = el.index }:unwrap() end
  end
  error("no element #" .. id)
end
local function result() return js("document.getElementById('result').textContent") end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn each_dialog_is_answered_and_recorded_with_a_new_seq() {
    run(r#"
        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        eq(page:get_dialog{}:unwrap().dialog, nil, "no dialog yet")
        click("alert")
        eq(result(), "after alert", "the alert did not block the page")
        local first = page:get_dialog{}:unwrap().dialog
        eq(first.type, "alert"); eq(first.message, "hello"); eq(first.seq, 1)
        -- Its one line says what the dialog said.
        has(tostring(page:get_dialog{}), 'dialog.message="hello"')
        assert(first.timestamp > 1.7e12, "epoch ms")
        -- Reading is not consuming: the same record again.
        eq(page:get_js_dialog{}:unwrap().dialog.seq, 1)
        click("confirm")
        eq(result(), "confirm true", "accepted by default")
        local second = page:get_dialog{ consume = true }:unwrap()
        eq(second.dialog.type, "confirm"); eq(second.dialog.seq, 2); eq(second.consumed, true)
        eq(page:get_dialog{}:unwrap().dialog, nil, "consumed")
        eq(page:clear_dialog():unwrap().cleared, false, "nothing left to clear")
        click("prompt")
        eq(result(), "prompt bob", "an accepted prompt answers its default value")
        local third = page:get_dialog{}:unwrap().dialog
        eq(third.seq, 3); eq(third.defaultValue, "bob")
        eq(page:clear_js_dialog():unwrap().cleared, true)
    "#);
}

#[test]
fn dismiss_applies_to_later_dialogs_only() {
    run(r#"
        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        click("confirm")
        eq(result(), "confirm true")
        local before = page:get_dialog{}:unwrap().dialog
        local set = page:set_dialog_behavior{ dismiss = true }:unwrap()
        eq(set.dismiss, true); eq(set.previous, "accept")
        -- The policy change replays nothing: the old record is unchanged.
        local after = page:get_dialog{}:unwrap().dialog
        eq(after.seq, before.seq); eq(after.accepted, true)
        click("confirm")
        eq(result(), "confirm false", "dismissed")
        click("prompt")
        eq(result(), "prompt null", "a dismissed prompt answers null")
        local d = page:get_dialog{}:unwrap().dialog
        eq(d.seq, before.seq + 2); eq(d.accepted, false)
        page:set_dialog_behavior{}:unwrap()
        click("confirm")
        eq(result(), "confirm true", "accepted again")
        eq(page:set_dialog_behavior{ dismiss = "yes" }.code, "INVALID_ARGUMENT")
    "#);
}
