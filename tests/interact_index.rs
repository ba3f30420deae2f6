//! The index interactions beyond click and input (issue 11): double click, hover, focus,
//! check/uncheck, uploads, drags, keys, drop-downs and scrolling — what the page shows
//! afterwards, the receipt fields the catalogue names, side-effect counts and bad input.

use crate::support::harness::lua;

const FIND: &str = r#"
local function index_of(s, pred)
  for _, el in ipairs(s.elements) do if pred(el) then return el.index end end
  error("no such element in the snapshot", 2)
end
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function by_id(s, id) return index_of(s, function(el) return el.id == id end) end
local function open_widgets()
  page:navigate{ url = A .. "/widgets.html" }:unwrap()
  return page:get_browser_state{}:unwrap()
end
"#;

fn run(body: &str) {
    lua(&format!("{FIND}{body}"));
}

#[test]
fn double_click_fires_one_trusted_dblclick_with_the_click_receipt() {
    run(r##"
        local s = open_widgets()
        local r = page:double_click_element_by_index{ index = by_id(s, "dbl") }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.mode, "native"); eq(d.clickCount, 2); eq(d.changed, true); eq(d.retrySafe, false)
        eq(d.hit.text, "Double me"); eq(d.urlBefore, A .. "/widgets.html")
        eq(js("window.counts.dblclick"), 1); eq(js("window.counts.click"), 2)
        eq(js("document.getElementById('status').textContent"), "double clicked true")
        local j = page:double_click_element_by_index{ index = by_id(s, "dbl"), mode = "js" }:unwrap()
        eq(j.mode, "js"); eq(js("window.counts.dblclick"), 2)
        eq(js("document.getElementById('status').textContent"), "double clicked false")
        local bad = page:double_click_element_by_index{ index = 999 }
        eq(bad.code, "STALE_ELEMENT"); has(bad.msg, "index out of range: 999")
        eq(page:double_click_element_by_index{}.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn hover_moves_the_real_mouse_and_focus_takes_the_focus() {
    run(r##"
        local s = open_widgets()
        local h = page:hover_element_by_index{ index = by_id(s, "hov") }:unwrap()
        eq(h.hit.text, "Hover me"); eq(#h.point, 2)
        eq(js("window.counts.hover"), 1); eq(js("window.counts.untrustedHover"), 0)
        eq(js("getComputedStyle(document.getElementById('hov')).backgroundColor"), "rgb(255, 255, 0)", ":hover applies")
        local f = page:focus_element_by_index{ index = by_id(s, "focus-me") }:unwrap()
        eq(f.focused, true); eq(f.hit.id, "focus-me")
        eq(js("document.activeElement.id"), "focus-me")
        local k = page:send_keys{ keys = "hi" }:unwrap()
        eq(k.mode, "type"); eq(k.focused.id, "focus-me"); eq(k.focusNote, nil)
        eq(js("document.getElementById('focus-me').value"), "hi")
        js("document.getElementById('hov').remove()")
        eq(page:hover_element_by_index{ index = by_id(s, "hov") }.code, "STALE_ELEMENT")
    "##);
}

#[test]
fn check_and_uncheck_fire_change_once_and_already_checked_is_a_no_op() {
    run(r##"
        local s = open_widgets()
        local agree = index_of(s, function(el) return el.id == "agree" end)
        local c = page:check_element_by_index{ index = agree }:unwrap()
        eq(c.checked, true); eq(c.alreadyChecked, false); eq(c.mode, nil, "mode only when given")
        eq(js("document.getElementById('agree').checked"), true)
        eq(js("window.counts.agree"), 1, "change fired exactly once")
        local again = page:check_element_by_index{ index = agree }:unwrap()
        eq(again.alreadyChecked, true); has(again.note, "already checked")
        eq(js("window.counts.agree"), 1, "nothing was clicked")
        local u = page:uncheck_element_by_index{ index = agree, mode = "native" }:unwrap()
        eq(u.checked, false); eq(u.mode, "native"); eq(js("window.counts.agree"), 2)
        eq(js("document.getElementById('agree').checked"), false)
        local news = by_id(s, "news")
        eq(page:uncheck_element_by_index{ index = news }:unwrap().checked, false)
        eq(js("window.counts.news"), 1)
        -- A hidden box behind a label: the label is what the snapshot indexes.
        local fancy = by_id(s, "fancy")
        local f = page:check_element_by_index{ index = fancy }:unwrap()
        eq(f.checked, true); eq(js("document.getElementById('fancy-box').checked"), true)
        eq(js("window.counts.fancy"), 1)
        -- Radios check, but never uncheck.
        local large = by_id(s, "size-l")
        eq(page:check_element_by_index{ index = large }:unwrap().checked, true)
        eq(js("document.getElementById('size-s').checked"), false); eq(js("window.counts.size"), 1)
        local r = page:uncheck_element_by_index{ index = large }
        eq(r.code, "ACTION_FAILED"); has(r.msg, "cannot be unchecked")
        local notbox = page:check_element_by_index{ index = by_id(s, "dbl") }
        eq(notbox.code, "ACTION_FAILED"); has(notbox.msg, "not a checkbox")
        eq(js("window.counts.click"), 0, "nothing was clicked")
    "##);
}

#[test]
fn dropdowns_list_and_select_by_label_value_or_index_with_one_change() {
    run(r##"
        local s = open_widgets()
        local sel = by_id(s, "country")
        local o = page:get_dropdown_options{ index = sel }:unwrap()
        eq(#o.options, 4); eq(o.options[2], "Germany"); eq(o.items[4].disabled, true)
        eq(o.items[1].selected, true); eq(o.multiple, false)
        local r = page:select_dropdown_option{ index = sel, text = "France" }:unwrap()
        eq(r.selected.value, "fr"); eq(r.matchedBy, "label"); eq(r.alreadySelected, false)
        eq(js("window.counts.countryChange"), 1); eq(js("window.counts.countryInput"), 1)
        eq(js("document.getElementById('status').textContent"), "country fr")
        eq(page:select_dropdown_option{ index = sel, text = "de" }:unwrap().matchedBy, "value")
        eq(page:select_dropdown_option{ index = sel, text = "2" }:unwrap().selected.label, "France")
        local same = page:select_dropdown_option{ index = sel, text = "France" }:unwrap()
        eq(same.alreadySelected, true); eq(same.changed, false)
        eq(js("window.counts.countryChange"), 3, "no event for an unchanged selection")
        local none = page:select_dropdown_option{ index = sel, text = "Atlantis" }
        eq(none.code, "ELEMENT_NOT_FOUND"); eq(none.data.available[2], "Germany")
        eq(page:select_dropdown_option{ index = sel, text = "Japan" }.code, "ELEMENT_DISABLED")
        eq(js("document.getElementById('country').value"), "fr")
        eq(page:get_dropdown_options{ index = by_id(s, "dbl") }.code, "ACTION_FAILED")
        eq(page:select_dropdown_option{ index = sel }.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn keys_press_chords_and_type_any_script_into_the_focused_field() {
    run(r##"
        local s = open_widgets()
        page:focus_element_by_index{ index = by_id(s, "notes") }:unwrap()
        local t = page:send_keys{ keys = "Grüße 你好" }:unwrap()
        eq(t.mode, "type"); eq(t.text, "Grüße 你好"); eq(t.focused.tag, "textarea"); eq(t.focused.isBody, false)
        eq(js("document.getElementById('notes').value"), "Grüße 你好")
        -- (Control+Shift+T itself is a browser shortcut: Chromium takes it before the page.)
        local c = page:send_keys{ keys = "Control+Shift+Y" }:unwrap()
        eq(c.mode, "press"); eq(c.keys, "Control+Shift+Y")
        has(js("window.keys.join(' ')"), "notes:Y:KeyY:true:true:false:false:true", "the chord arrived with its modifiers")
        page:send_keys{ keys = "Shift+k" }:unwrap()
        has(js("window.keys.join(' ')"), "notes:K:KeyK:false:true:false:false:true")
        eq(js("document.getElementById('notes').value"), "Grüße 你好K", "Shift+k types K, the Control chord nothing")
        page:press_key{ key = "Control+a" }:unwrap()
        page:press_key{ keys = "Backspace" }:unwrap()
        eq(js("document.getElementById('notes').value"), "", "select all, then delete")
        page:press_key{ key = "Enter" }:unwrap()
        eq(js("document.getElementById('notes').value"), "\n")
        eq(page:press_key{ key = "" }.code, "INVALID_ARGUMENT")
        eq(page:press_key{}.code, "INVALID_ARGUMENT")
        -- Holding Shift with key_down / key_up.
        page:key_down{ keys = "Shift" }:unwrap()
        local up = page:key_up{ keys = "Shift" }:unwrap()
        eq(up.key, "Shift"); eq(up.down, false)
        has(js("window.keys.join(' ')"), "notes:Shift:ShiftLeft:false:true")
        eq(page:key_down{ keys = "Control+A" }.code, "INVALID_ARGUMENT")
        -- Focus on the body: the receipt says where the keys went.
        js("document.activeElement.blur()")
        local b = page:send_keys{ keys = "Escape" }:unwrap()
        eq(b.focused.isBody, true); has(b.focusNote, "<body>")
        has(js("window.keys.join(' ')"), "body:Escape")
        -- Typed into a password field: not echoed.
        page:focus_element_by_index{ index = by_id(s, "secret") }:unwrap()
        local p = page:send_keys{ keys = "hunter2" }:unwrap()
        eq(p.text, "[redacted]"); eq(p.password, true)
        eq(js("document.getElementById('secret').value"), "hunter2")
    "##);
}

#[test]
fn a_drag_only_widget_follows_the_real_pointer() {
    run(r##"
        local s = open_widgets()
        local knob, zone = by_id(s, "knob"), by_id(s, "zone")
        local d = page:drag_element_by_index{ index = knob, targetIndex = zone }:unwrap()
        eq(d.changed, true); eq(d.steps, 12); eq(#d.from, 2); eq(#d.to, 2)
        eq(js("window.drag.downs"), 1); eq(js("window.drag.ups"), 1)
        assert(js("window.drag.moves") >= 1, "the widget saw the moves (a background tab coalesces them)")
        eq(js("window.drag.untrusted"), 0)
        assert(js("parseFloat(document.getElementById('knob').style.left)") > 0, "the knob moved")
        eq(js("window.drag.dropped"), true); eq(js("document.getElementById('zone').textContent"), "Dropped!")
        local bad = page:drag_element_by_index{ index = knob, targetIndex = 999 }
        eq(bad.code, "STALE_ELEMENT"); has(bad.msg, "targetIndex"); has(bad.msg, "index out of range: 999")
        eq(page:drag_element_by_index{ index = knob }.code, "INVALID_ARGUMENT")
        eq(js("window.drag.downs"), 1, "a bad call pressed nothing")
    "##);
}

#[test]
fn scroll_moves_the_page_or_the_element_and_scroll_to_text_finds_it() {
    run(r##"
        local s = open_widgets()
        local down = page:scroll{ down = true, numPages = 1 }:unwrap()
        eq(down.direction, "down"); eq(down.before, 0); assert(down.after > 0); eq(down.scrolledBy, down.after)
        eq(js("Math.round(window.scrollY)"), down.after)
        local up = page:scroll{ numPages = 5 }:unwrap()
        eq(up.direction, "up"); eq(up.after, 0); eq(up.atTop, true)
        local box = page:scroll{ down = true, numPages = 1, index = by_id(s, "box") }:unwrap()
        eq(box.ownScroll, true); assert(box.after > 0, "the box scrolled")
        eq(js("Math.round(document.getElementById('box').scrollTop)"), box.after)
        eq(page:scroll{ down = true }.code, "INVALID_ARGUMENT")
        local t = page:scroll_to_text{ text = "far away" }:unwrap()
        eq(t.found, true); eq(t.hit.id, "far"); eq(t.visible, true)
        assert(js("window.scrollY") > 1000, "the page scrolled down to it")
        local r = js("JSON.stringify(document.getElementById('far').getBoundingClientRect().top < innerHeight)")
        eq(r, "true")
        local missing = page:scroll_to_text{ text = "no such words anywhere" }
        eq(missing.code, "ELEMENT_NOT_FOUND"); assert(missing.data.waitedMs >= 4000)
    "##);
}

#[test]
fn upload_reaches_a_listening_input_by_index_selector_or_hidden_label() {
    run(r##"
        local s = open_widgets()
        local r = page:upload_file{ index = by_id(s, "file"), contentBase64 = "aGVsbG8=", filename = "hello.txt", contentType = "text/plain" }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.filename, "hello.txt"); eq(d.size, 5); eq(d.source, "contentBase64"); eq(d.mode, "native")
        eq(d.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        eq(d.target, "index=" .. by_id(s, "file"))
        -- Staged in the task's own directory; relativePath names it from the upload root.
        has(d.relativePath, "/hello.txt"); has(d.path, d.relativePath)
        eq(d.filesLength, 1); eq(d.changed, true); eq(d.changeStatus, "observed")
        eq(d.listenerDetection, "cdp"); eq(d.hasListeners, true); eq(d.consumed, "listened"); eq(d.effective, true)
        has(table.concat(d.listeners.events, ","), "change")
        eq(js("document.getElementById('file-shown').textContent"), "file: hello.txt")
        eq(js("window.counts.file"), 1)
        -- The hidden input behind its label, through the label's index; then by path.
        local pick = by_id(s, "pick-label")
        local p = page:upload_file{ index = pick, path = d.path }:unwrap()
        eq(p.filesLength, 1); eq(p.accept, "image/*"); eq(p.consumed, "listened")
        eq(js("window.counts.pick"), 1); eq(js("document.getElementById('file-shown').textContent"), "picture: hello.txt")
        -- By selector: document order, hidden inputs included, nth explicit.
        local sel = page:upload_file{ selector = "input[type=file]", nth = 2, path = d.path }:unwrap()
        eq(sel.target, "selector=input[type=file]"); eq(sel.filesLength, 1)
        eq(sel.hasListeners, false); eq(sel.consumed, "noListener"); eq(sel.effective, false); has(sel.hint, "nothing listens")
        local hidden = page:upload_file{ selector = "#pick-file", contentBase64 = "dHdv", filename = "two.txt" }:unwrap()
        eq(hidden.consumed, "listened"); eq(hidden.existed, false); eq(js("window.counts.pick"), 2)
        eq(js("document.getElementById('file-shown').textContent"), "picture: two.txt")
        -- Bad input touches nothing.
        eq(page:upload_file{ contentBase64 = "aGVsbG8=" }.code, "INVALID_ARGUMENT")
        eq(page:upload_file{ selector = "#file" }.code, "INVALID_ARGUMENT")
        local missing = page:upload_file{ selector = "#file", path = "nope/none.txt" }
        -- A local script's relative path is the working directory's (Playwright's rule).
        eq(missing.code, "INVALID_ARGUMENT"); has(missing.msg, "working directory"); eq(missing.started, false)
        eq(page:upload_file{ selector = "#file", path = "../escape.txt" }.code, "INVALID_ARGUMENT")
        local nomatch = page:upload_file{ selector = "#no-such-input", path = d.path }
        eq(nomatch.code, "ELEMENT_NOT_FOUND")
        eq(page:upload_file{ selector = "input[type=file]", nth = 7, path = d.path }.code, "ELEMENT_NOT_FOUND")
        local notfile = page:upload_file{ index = by_id(s, "dbl"), path = d.path }
        eq(notfile.code, "ELEMENT_NOT_EDITABLE")
        eq(js("window.counts.file"), 1, "no bad call reached the input")
        -- A URL the browser downloads.
        local u = page:upload_file{ selector = "#file", url = A .. "/basic.html", filename = "page.html" }:unwrap()
        eq(u.source, "url"); assert(u.size > 100); eq(js("window.counts.file"), 2)
        eq(page:upload_file{ selector = "#file", url = A .. "/status/404" }.code, "NETWORK_ERROR")
    "##);
}

#[test]
fn index_interactions_reach_cross_site_frames() {
    run(r##"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{ includeFrames = true }:unwrap()
        local function in_cross(tag) return index_of(s, function(el) return el.frameUrl == B .. "/child.html" and el.tag == tag end) end
        local function child(body) return page:execute_js{ body = body, frame = "localhost" }:unwrap().result end
        local f = page:focus_element_by_index{ index = in_cross("INPUT") }:unwrap()
        eq(f.focused, true); eq(f.probedFrameUrl, B .. "/child.html")
        local k = page:send_keys{ keys = "东京 ok" }:unwrap()
        eq(k.mode, "type"); eq(k.focused.tag, "iframe"); has(k.focusNote, "cross-site frame")
        eq(child("document.getElementById('child-input').value"), "东京 ok", "the keys reached the field in the frame")
        local h = page:hover_element_by_index{ index = in_cross("BUTTON") }:unwrap()
        eq(h.probedFrameUrl, B .. "/child.html"); eq(h.hit.id, "child-btn")
        local d = page:double_click_element_by_index{ index = in_cross("BUTTON") }:unwrap()
        eq(d.changed, true); eq(child("window.n"), 2, "two clicks in the frame")
    "##);
}
