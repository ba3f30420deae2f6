//! The read_element group: text (with the canvas diagnosis), html, value, attribute, listeners
//! (the browser's own list, tri-state), count, box, visible / enabled / checked — by index or
//! selector, in cross-site frames too; bad input fails with the catalogue's codes.

use crate::support::harness::lua;

const PRELUDE: &str = r##"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
page:navigate{ url = A .. "/locate.html" }:unwrap()
local s = page:get_browser_state{}:unwrap()
local function index_of(id)
  for _, el in ipairs(s.elements) do if el.id == id then return el.index end end
  error("no element " .. id .. " in the snapshot", 2)
end
"##;

fn run(body: &str) {
    lua(&format!("{PRELUDE}{body}"));
}

#[test]
fn text_html_value_attribute_and_box() {
    run(r##"
        local t = page:get_element_text{ selector = "#para" }:unwrap()
        eq(t.text, "Hello world"); eq(t.target, "selector #para"); eq(t.canvasOnly, nil)
        eq(page:get_element_text{ index = index_of("buy") }:unwrap().text, "Buy now")
        local c = page:get_element_text{ selector = "#chartbox", canvasOnly = true }:unwrap()
        eq(c.text, ""); eq(c.canvasOnly, true); has(c.hint, "screenshot")
        local e = page:get_element_text{ selector = "#emptybox", canvasOnly = true }:unwrap()
        eq(e.canvasOnly, false)
        local f = page:get_element_text{ selector = "#child-btn", frame = "crosschild" }:unwrap()
        eq(f.text, "Child button"); eq(f.target, "selector #child-btn (frame=crosschild)"); eq(f.frameUrl, B .. "/child.html")
        eq(page:get_element_text{}.msg, "get_element_text: needs index or selector")
        local none = page:get_element_text{ selector = "#none" }
        eq(none.code, "ELEMENT_NOT_FOUND"); eq(none.data.matched, 0)

        eq(page:get_element_html{ index = index_of("buy") }:unwrap().html, "<span>Buy <b>now</b></span>")
        local v = page:get_element_value{ index = index_of("search") }:unwrap()
        eq(v.value, "old"); eq(v.hasValue, true)
        page:input_text_by_selector{ selector = "#search", text = "live" }:unwrap()
        eq(page:get_element_value{ index = index_of("search") }:unwrap().value, "live", "the live value")
        local pw = page:get_element_value{ index = index_of("pw") }:unwrap()
        eq(pw.value, "[redacted]"); eq(pw.password, true); eq(pw.length, 6)
        local nv = page:get_element_value{ index = index_of("buy") }:unwrap()
        eq(nv.hasValue, false); eq(nv.value, nil)
        local a = page:get_element_attribute{ index = index_of("pop"), name = "target" }:unwrap()
        eq(a.value, "_blank"); eq(a.present, true)
        eq(page:get_element_attribute{ index = index_of("pop"), name = "nope" }:unwrap().present, false)
        eq(page:get_element_attribute{ index = index_of("pop") }.code, "INVALID_ARGUMENT")

        local b = page:get_element_box{ index = index_of("save") }:unwrap()
        local want = js("(() => { const r = document.getElementById('save').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()")
        eq(math.abs(b.x - want[1]) <= 1 and math.abs(b.y - want[2]) <= 1, true, "main-viewport box")
        eq(b.width > 0 and b.height > 0, true)
        eq(page:get_element_box{ index = 9999 }.code, "STALE_ELEMENT")
        eq(page:get_element_html{ index = -1 }.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn state_reads_visible_enabled_checked_and_count() {
    run(r##"
        eq(page:is_visible{ selector = "#save" }:unwrap().visible, true)
        eq(page:is_visible{ selector = "#invisible" }:unwrap().visible, false)
        eq(page:is_visible{ selector = "#dup-hidden" }:unwrap().visible, false)
        local first = page:is_visible{ selector = ".dup" }:unwrap()
        eq(first.visible, false, "reads take the first match, visible or not"); eq(first.matched, 4)
        eq(page:is_visible{ index = index_of("save") }:unwrap().target, "index=" .. index_of("save"))
        eq(page:is_visible{ selector = "#nope" }.code, "ELEMENT_NOT_FOUND")
        eq(page:is_visible{}.msg, "is_visible: needs index or selector")

        eq(page:is_enabled{ selector = "#email" }:unwrap().enabled, true)
        local ro = page:is_enabled{ selector = "#ro" }:unwrap()
        eq(ro.enabled, false); eq(ro.readOnly, true)
        eq(page:is_enabled{ selector = "#off" }:unwrap().disabled, true)
        eq(page:is_enabled{ selector = "#in-fieldset" }:unwrap().enabled, false, "inside a disabled fieldset")

        eq(page:is_checked{ selector = "#cb" }:unwrap().checked, true)
        eq(page:is_checked{ selector = "#rb" }:unwrap().checked, false)
        js("document.getElementById('rb').click()")
        eq(page:is_checked{ selector = "#rb" }:unwrap().checked, true, "live state")
        local aria = page:is_checked{ selector = "#ariacb" }:unwrap()
        eq(aria.checked, true); eq(aria.kind, "checkbox")
        local na = page:is_checked{ selector = "#para" }:unwrap()
        eq(na.checked, nil); has(na.note, "no checked state")
        eq(page:is_checked{ selector = "#child-input", frame = "1" }:unwrap().checked, nil)

        eq(page:get_element_count{ selector = ".dup" }:unwrap().count, 4)
        eq(page:get_element_count{ selector = ".none" }:unwrap().count, 0, "0 is an answer")
        eq(page:get_element_count{ selector = "button", frame = "localhost" }:unwrap().count, 1)
        eq(page:get_element_count{ selector = "a[" }.code, "INVALID_ARGUMENT")
        local bad = page:get_element_count{ selector = "a", frame = "9" }
        eq(bad.code, "INVALID_ARGUMENT"); has(bad.msg, "frames are")
        eq(page:get_element_count{}.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn listeners_come_from_the_browser_and_are_never_guessed_false() {
    run(r##"
        local l = page:get_element_listeners{ selector = "#listen" }:unwrap()
        eq(l.found, true); eq(l.detection, "cdp"); eq(l.hasListeners, true)
        has(table.concat(l.listeners, ","), "click"); eq(l.tag, "BUTTON")
        local n = page:get_element_listeners{ selector = "#nolisten" }:unwrap()
        eq(n.detection, "cdp"); eq(n.hasListeners, false, "the browser says none"); has(n.note, "delegation")
        local i = page:get_element_listeners{ index = index_of("inline") }:unwrap()
        eq(i.inline, true); has(table.concat(i.traces, ","), "click"); eq(i.hasListeners, true)
        local f = page:get_element_listeners{ selector = "#child-btn", frame = "localhost" }:unwrap()
        eq(f.detection, "cdp"); eq(f.hasListeners, true, "inline onclick in a cross-site frame")
        local gone = page:get_element_listeners{ selector = "#nope" }:unwrap()
        eq(gone.found, false); has(gone.note, "could not be located")
        eq(page:get_element_listeners{}.code, "INVALID_ARGUMENT")
    "##);
}
