//! click_element_by_index, input_text, type_text: what the page shows afterwards, the receipt,
//! and side-effect counts.

use crate::support::harness::lua;

const FIND: &str = r#"
local function index_of(s, pred)
  for _, el in ipairs(s.elements) do if pred(el) then return el.index end end
  error("no such element in the snapshot", 2)
end
local function js(body) return page:execute_js{ body = body }:unwrap().result end
"#;

fn run(body: &str) {
    lua(&format!("{FIND}{body}"));
}

#[test]
fn click_reports_the_change_it_caused() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local c = page:click_element_by_index{ index = 1 }
        eq(c.ok, true, tostring(c))
        local d = c.data
        eq(d.mode, "native"); eq(d.changed, true); eq(d.effective, true)
        eq(d.changeStatus, "observed"); eq(d.observationComplete, true)
        eq(d.urlBefore, A .. "/basic.html"); eq(d.urlAfter, d.urlBefore)
        eq(d.tabCountBefore, 1); eq(d.tabCountAfter, 1)
        eq(d.textLengthAfter - d.textLengthBefore, 4, "'ready' became 'clicked 1'")
        eq(d.retrySafe, false); eq(d.hit.text, "Press me")
        eq(js("document.getElementById('msg').textContent"), "clicked 1")
        eq(js("window.clicks"), 1, "exactly one click")
    "#);
}

#[test]
fn clicking_a_link_navigates() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:get_browser_state{}:unwrap()
        local c = page:click_element_by_index{ index = 0 }:unwrap()
        eq(c.changed, true)
        eq(c.urlAfter, A .. "/second.html")
        eq(page:get_title().data.title, "Second")
    "#);
}

#[test]
fn real_clicks_reach_widgets_that_ignore_synthetic_ones() {
    run(r#"
        page:navigate{ url = A .. "/trusted.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local i = index_of(s, function(el) return el.id == "only-trusted" end)
        eq(page:click_element_by_index{ index = i }:unwrap().mode, "native")
        eq(js("window.trustedClicks"), 1); eq(js("document.getElementById('state').textContent"), "trusted click")
        local j = page:click_element_by_index{ index = i, mode = "js" }:unwrap()
        eq(j.mode, "js"); eq(j.changed, false, "the widget ignored the synthetic click")
        eq(js("window.untrustedClicks"), 1); eq(js("window.trustedClicks"), 1)
        local m = page:click_element_by_index{ index = i, mode = "coords" }:unwrap()
        eq(m.mode, "mouse"); eq(js("window.trustedClicks"), 2)
    "#);
}

#[test]
fn auto_mode_never_clicks_through_a_cover() {
    run(r#"
        page:navigate{ url = A .. "/trusted.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local i = index_of(s, function(el) return el.id == "covered" end)
        js([[(() => { const d = document.createElement('div'); d.id = 'cover';
          d.style.cssText = 'position:fixed; inset:0; background:rgba(0,0,0,.3)'; d.textContent = 'overlay';
          document.body.appendChild(d); })()]])
        local c = page:click_element_by_index{ index = i }
        eq(c.ok, false); eq(c.code, "ELEMENT_OBSCURED"); eq(c.retryable, false)
        eq(c.data.coveredBy.tag, "DIV"); eq(c.data.coveredBy.id, "cover")
        eq(c.data.mouseSkipped, "target-covered")
        eq(js("window.coveredClicks"), 0, "nothing was clicked")
        local forced = page:click_element_by_index{ index = i, mode = "js" }
        eq(forced.ok, true); eq(js("window.coveredClicks"), 1, "js mode bypasses on request")
    "#);
}

#[test]
fn stale_and_out_of_range_indices_never_click_something_else() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local none = page:click_element_by_index{ index = 0 }
        eq(none.code, "STALE_ELEMENT", "no snapshot yet"); eq(none.retryable, true)
        has(none.msg, "get_browser_state")
        page:get_browser_state{}:unwrap()
        local far = page:click_element_by_index{ index = 99 }
        eq(far.code, "STALE_ELEMENT"); has(far.msg, "index out of range: 99"); has(far.msg, "legal range 0..1")
        js("document.getElementById('btn').remove()")
        local gone = page:click_element_by_index{ index = 1 }
        eq(gone.code, "STALE_ELEMENT"); has(gone.msg, "no longer in the page")
        eq(js("window.clicks"), 0)
        page:get_browser_state{}:unwrap()
        page:navigate{ url = A .. "/second.html" }:unwrap()
        eq(page:click_element_by_index{ index = 0 }.code, "STALE_ELEMENT", "navigation drops the snapshot")
        eq(page:get_title().data.title, "Second")
    "#);
}

#[test]
fn input_text_is_real_input_in_any_script() {
    run(r#"
        page:navigate{ url = A .. "/form.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local user = index_of(s, function(el) return el.name == "user" end)
        local r = page:input_text{ index = user, text = "Grüße 你好 ✓" }:unwrap()
        eq(r.mode, "fill"); eq(r.committed, true)
        eq(js("document.getElementById('user').value"), "Grüße 你好 ✓")
        eq(js("document.getElementById('log').textContent"), "typed: Grüße 你好 ✓", "the page's listener saw it")
        eq(js("window.inputs.untrusted"), 0); assert(js("window.inputs.trusted") >= 1)
        page:input_text{ index = user, text = "replaced" }:unwrap()
        eq(js("document.getElementById('user').value"), "replaced", "cleared first")
        page:type_text{ index = user, text = " + typed" }:unwrap()
        eq(js("document.getElementById('user').value"), "replaced + typed", "type_text appends")
        local notes = index_of(s, function(el) return el.name == "notes" end)
        page:input_text{ index = notes, text = "line one" }:unwrap()
        eq(js("document.querySelector('[name=notes]').value"), "line one")
        local viajs = page:input_text{ index = user, text = "set", mode = "js" }:unwrap()
        eq(viajs.mode, "js"); eq(viajs.committed, false)
        eq(js("document.getElementById('user').value"), "set"); eq(js("window.inputs.untrusted"), 1)
    "#);
}

#[test]
fn input_refuses_disabled_read_only_and_non_text_elements() {
    run(r#"
        page:navigate{ url = A .. "/form.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local user = index_of(s, function(el) return el.name == "user" end)
        local color = index_of(s, function(el) return el.name == "color" end)
        js("document.getElementById('user').disabled = true")
        local d = page:input_text{ index = user, text = "x" }
        eq(d.code, "ELEMENT_DISABLED")
        js("document.getElementById('user').disabled = false; document.getElementById('user').readOnly = true")
        eq(page:input_text{ index = user, text = "x" }.code, "ELEMENT_READ_ONLY")
        eq(page:type_text{ index = user, text = "x" }.code, "ELEMENT_READ_ONLY")
        eq(js("document.getElementById('user').value"), "", "nothing was typed")
        eq(page:input_text{ index = color, text = "x" }.code, "ELEMENT_NOT_EDITABLE")
        eq(page:input_text{ index = user, text = "x", mode = "paste" }.code, "INVALID_ARGUMENT")
    "#);
}

#[test]
fn a_click_that_opens_an_alert_does_not_hang() {
    run(r#"
        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local t0 = browser.clock()
        local c = page:click_element_by_index{ index = index_of(s, function(el) return el.id == "alert" end) }
        eq(c.ok, true, tostring(c))
        assert(browser.clock() - t0 < 5, "answered in the background")
        eq(js("document.getElementById('result').textContent"), "after alert")
        page:click_element_by_index{ index = index_of(s, function(el) return el.id == "confirm" end) }:unwrap()
        eq(js("document.getElementById('result').textContent"), "confirm true", "confirm accepted")
    "#);
}

#[test]
fn a_shifted_element_is_recovered_by_tag_and_text_never_swapped() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        -- A new button before the old one: the old positional path now leads to the newcomer.
        js([[(() => { const b = document.createElement('button'); b.textContent = 'Other';
          b.onclick = () => { window.otherClicks = (window.otherClicks || 0) + 1 };
          document.body.insertBefore(b, document.getElementById('btn')); })()]])
        local c = page:click_element_by_index{ index = 1 }
        eq(c.ok, true, tostring(c))
        eq(c.data.staleRecovered, true)
        eq(js("window.clicks"), 1, "the snapshot's button was clicked")
        eq(js("window.otherClicks || 0"), 0, "the newcomer was not")
        -- Two candidates with the same tag and text: refuse rather than guess.
        js([[(() => { const b = document.createElement('button'); b.textContent = 'Press me';
          document.body.insertBefore(b, document.body.firstChild); })()]])
        local amb = page:click_element_by_index{ index = 1 }
        eq(amb.code, "STALE_ELEMENT")
        eq(js("window.clicks"), 1)
    "#);
}
