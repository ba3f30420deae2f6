//! The real mouse (`mouse_move`, `mouse_down`, `mouse_up`, `mouse_wheel`, `mouse_click`,
//! `mouse_click_by_selector`): trusted events with the coordinates and buttons the page logs,
//! drags, the wheel, the click receipt, and get_modals points fed to mouse_click.

use crate::support::harness::lua;

const HELPERS: &str = r#"
local function js(body, frame) return page:execute_js{ body = body, frame = frame }:unwrap().result end
local function log(type) return js("return window.of('" .. type .. "')") end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn move_down_move_up_is_a_drag_with_buttons_and_coordinates() {
    run(r#"
        page:navigate{ url = A .. "/mouse_log.html" }:unwrap()
        local m = page:mouse_move{ x = 10, y = 20 }
        eq(m.ok, true, tostring(m)); eq(m.data.x, 10); eq(m.data.y, 20); eq(m.data.buttons, 0)
        assert(m.data.seq, "auto-capture")
        local d = page:mouse_down{}:unwrap()
        eq(d.button, "left"); eq(d.buttons, 1); eq(d.x, 10)
        eq(page:mouse_move{ x = 200, y = 120 }:unwrap().buttons, 1, "the held button travels")
        local u = page:mouse_up{}:unwrap()
        eq(u.buttons, 0); eq(u.x, 200); eq(u.y, 120)
        page:mouse_move{ x = 220, y = 130 }:unwrap()

        local moves = log("mousemove")
        eq(#moves, 3)
        eq(moves[1].x, 10); eq(moves[1].y, 20); eq(moves[1].buttons, 0); eq(moves[1].trusted, true)
        eq(moves[2].x, 200); eq(moves[2].y, 120); eq(moves[2].buttons, 1, "a drag: the button is down")
        eq(moves[3].buttons, 0, "released")
        local downs, ups = log("mousedown"), log("mouseup")
        eq(#downs, 1); eq(downs[1].x, 10); eq(downs[1].y, 20); eq(downs[1].button, 0); eq(downs[1].trusted, true)
        eq(#ups, 1); eq(ups[1].x, 200); eq(ups[1].y, 120)
        eq(#log("click"), 1, "down and up on one element is a click there, as in a real browser")
    "#);
}

#[test]
fn right_and_middle_buttons_and_unknown_names_are_left() {
    run(r#"
        page:navigate{ url = A .. "/mouse_log.html" }:unwrap()
        page:mouse_move{ x = 50, y = 50 }:unwrap()
        eq(page:mouse_down{ button = "right" }:unwrap().buttons, 2)
        eq(page:mouse_down{ button = "middle" }:unwrap().buttons, 6, "both held")
        page:mouse_move{ x = 60, y = 60 }:unwrap()
        eq(page:mouse_up{ button = "right" }:unwrap().buttons, 4)
        eq(page:mouse_up{ button = "middle" }:unwrap().buttons, 0)
        local downs = log("mousedown")
        eq(downs[1].button, 2); eq(downs[2].button, 1)
        eq(log("mousemove")[2].buttons, 6)
        eq(#log("contextmenu"), 1, "a real right button")
        eq(page:mouse_down{ button = "sideways" }:unwrap().button, "left")
        page:mouse_up{ button = "whatever" }:unwrap()
        eq(log("mousedown")[3].button, 0)
    "#);
}

#[test]
fn mouse_click_reaches_a_trusted_only_widget_with_the_click_receipt() {
    run(r#"
        page:navigate{ url = A .. "/trusted_counter.html" }:unwrap()
        js("document.getElementById('widget').click()")
        eq(js("window.untrusted"), 1); eq(js("window.trusted"), 0)
        local c = page:mouse_click{ x = 160, y = 120 }
        eq(c.ok, true, tostring(c))
        local d = c.data
        eq(d.mode, "mouse"); eq(d.x, 160); eq(d.y, 120); eq(d.changed, true); eq(d.effective, true)
        eq(d.changeStatus, "observed"); eq(d.actionStatus, "completed"); eq(d.retrySafe, false)
        eq(d.urlBefore, A .. "/trusted_counter.html"); eq(d.urlAfter, d.urlBefore)
        eq(d.tabCountBefore, 1); eq(d.tabCountAfter, 1)
        eq(d.hit.id, "widget"); eq(d.hit.text, "count: 0", "what the point reached before the click")
        assert(d.seq, "auto-capture")
        eq(js("window.trusted"), 1); eq(js("document.getElementById('widget').textContent"), "count: 1")
        -- A double click is two trusted clicks; a point off the widget changes nothing.
        eq(page:mouse_click{ x = 160, y = 120, clickCount = 2 }:unwrap().clickCount, 2)
        eq(js("window.trusted"), 3)
        local miss = page:mouse_click{ x = 400, y = 400 }:unwrap()
        eq(miss.changed, false); eq(miss.hit.tag, "HTML"); has(miss.hint, "nothing observable changed")
        eq(js("window.trusted"), 3)
        local out = page:mouse_click{ x = 5000, y = 10 }:unwrap()
        eq(out.hit, nil); has(out.hint, "outside the viewport")
        eq(page:mouse_click{ x = 160, y = 120, clickCount = 0 }:unwrap().clickCount, 1, "<= 0 -> 1")
        eq(js("window.trusted"), 4); eq(js("window.untrusted"), 1)
    "#);
}

#[test]
fn mouse_click_dblclick_and_buttons_as_the_page_logs_them() {
    run(r#"
        page:navigate{ url = A .. "/mouse_log.html" }:unwrap()
        page:mouse_click{ x = 30, y = 40, clickCount = 2 }:unwrap()
        local clicks = log("click")
        eq(#clicks, 2); eq(clicks[1].detail, 1); eq(clicks[2].detail, 2)
        eq(clicks[1].x, 30); eq(clicks[1].y, 40); eq(clicks[1].trusted, true)
        eq(#log("dblclick"), 1)
        page:mouse_click{ x = 70, y = 80, button = "right" }:unwrap()
        eq(#log("contextmenu"), 1); eq(log("mousedown")[3].button, 2)
        eq(#log("click"), 2, "a right click is no click event")
    "#);
}

#[test]
fn the_wheel_scrolls_what_is_under_the_mouse() {
    run(r#"
        page:navigate{ url = A .. "/wheel_area.html" }:unwrap()
        page:mouse_move{ x = 200, y = 150 }:unwrap()
        local w = page:mouse_wheel{ deltaY = 300 }
        eq(w.ok, true, tostring(w)); eq(w.data.deltaY, 300); eq(w.data.x, 200)
        local top = 0
        for _ = 1, 50 do
          top = js("return document.getElementById('area').scrollTop")
          if top >= 300 then break end
          page:get_url()
        end
        eq(top, 300, "the area scrolled by the delta")
        local wheels = js("return window.wheels")
        eq(#wheels, 1); eq(wheels[1].deltaY, 300); eq(wheels[1].trusted, true)
        page:mouse_wheel{ deltaY = -100 }:unwrap()
        for _ = 1, 50 do
          top = js("return document.getElementById('area').scrollTop")
          if top <= 200 then break end
          page:get_url()
        end
        eq(top, 200, "negative scrolls up")
        eq(js("return window.scrollY"), 0, "the page itself did not move")
        -- Outside the area nothing scrolls.
        page:mouse_move{ x = 600, y = 500 }:unwrap()
        page:mouse_wheel{ deltaY = 300 }:unwrap()
        eq(#js("return window.wheels"), 2, "no wheel event in the area")
    "#);
}

#[test]
fn get_modals_points_work_with_mouse_click() {
    run(r#"
        page:navigate{ url = A .. "/modal_trusted.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 1)
        local accept
        for _, b in ipairs(m.top.buttonPoints) do if b.label == "我接受" then accept = b.point end end
        assert(accept, "a point for the accept button")
        local c = page:mouse_click{ x = accept[1], y = accept[2] }:unwrap()
        eq(c.changed, true); eq(c.hit.id, "accept")
        eq(js("document.getElementById('state').textContent"), "accepted")
        eq(js("window.trusted"), 1); eq(page:get_modals():unwrap().count, 0)
    "#);
}

#[test]
fn a_close_point_in_a_cross_site_frame_works_with_mouse_click() {
    run(r#"
        page:navigate{ url = A .. "/modal_frame.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 1); eq(m.top.frameUrl, B .. "/modal_child.html")
        local p = m.top.closePoint
        local c = page:mouse_click{ x = p[1], y = p[2] }:unwrap()
        eq(c.hit.tag, "IFRAME", "the main document sees the frame at the point")
        eq(js("return window.closes", 1), 1, "the trusted click reached the close mark in the frame")
        eq(js("return document.getElementById('state').textContent", 1), "closed")
        eq(page:get_modals():unwrap().count, 0)
    "#);
}

#[test]
fn mouse_commands_reach_the_current_tab_whatever_tab_was_raised() {
    run(r#"
        page:navigate{ url = A .. "/trusted_counter.html" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        page:bring_to_front{ pageIndex = 1 }:unwrap()
        page:switch_tab{ pageIndex = 0 }:unwrap()
        page:bring_to_front{ pageIndex = 1 }:unwrap()
        -- Each tab has a window of its own: raising another tab does not hide this one.
        eq(js("return document.visibilityState"), "visible", "the current tab is never behind")
        local c = page:mouse_click{ x = 160, y = 120 }:unwrap()
        eq(c.changed, true); eq(js("window.trusted"), 1)
        -- (Whether it is still in front is not asserted: a parallel test's new tab may have
        -- put it behind again since.)
    "#);
}

#[test]
fn bad_mouse_arguments_fail_at_once_and_touch_nothing() {
    run(r#"
        page:navigate{ url = A .. "/mouse_log.html" }:unwrap()
        local r = page:mouse_move{ x = 10 }
        eq(r.ok, false); eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); has(r.msg, "`y`")
        eq(page:mouse_click{ y = 10 }.code, "INVALID_ARGUMENT")
        eq(page:mouse_click{ x = "left", y = 10 }.code, "INVALID_ARGUMENT")
        eq(page:mouse_click{ x = 1, y = 1, clickCount = 1000 }.code, "INVALID_ARGUMENT")
        eq(page:mouse_wheel{}.code, "INVALID_ARGUMENT")
        eq(page:mouse_wheel{ deltaY = {} }.code, "INVALID_ARGUMENT")
        local u = page:mouse_move{ x = 1, y = 2, z = 3 }:unwrap()
        eq(u.unknownParams[1], "z")
        eq(#js("return window.events"), 1, "only the one good move reached the page")
    "#);
}

#[test]
fn mouse_click_by_selector_clicks_the_element_for_real() {
    run(r##"
        page:navigate{ url = A .. "/trusted_counter.html" }:unwrap()
        local c = page:mouse_click_by_selector{ selector = "#widget" }
        eq(c.ok, true, tostring(c))
        local d = c.data
        eq(d.mode, "mouse"); eq(d.changed, true); eq(d.effective, true); eq(d.retrySafe, false)
        eq(d.hit.id, "widget"); eq(d.matched, 1); eq(d.target, "selector #widget")
        assert(d.seq, "auto-capture")
        eq(js("window.trusted"), 1); eq(js("window.untrusted"), 0)
        -- Below the fold: scrolled into view first; a double click is two trusted clicks.
        local f = page:mouse_click_by_selector{ selector = ".w", clickCount = 2, timeoutMs = 500 }:unwrap()
        eq(f.clickCount, 2); eq(f.hit.id, "far"); eq(js("window.far"), 2)
        eq(f.unknownParams, nil, "timeoutMs is accepted")
    "##);
}

#[test]
fn mouse_click_by_selector_buttons_and_refusals() {
    run(r##"
        page:navigate{ url = A .. "/mouse_log.html" }:unwrap()
        local r = page:mouse_click_by_selector{ selector = "#pad", button = "right" }:unwrap()
        eq(r.button, "right"); eq(#log("contextmenu"), 1); eq(#log("click"), 0)
        eq(log("mousedown")[1].button, 2); eq(log("mousedown")[1].trusted, true)
        -- The click lands inside the pad (the hit-tested centre of its box).
        eq(log("mousedown")[1].x, 300); eq(log("mousedown")[1].y, 200)

        local none = page:mouse_click_by_selector{ selector = "#nothing" }
        eq(none.ok, false); eq(none.code, "ELEMENT_NOT_FOUND"); eq(none.started, false)
        eq(none.data.matched, 0)
        eq(page:mouse_click_by_selector{}.code, "INVALID_ARGUMENT")
        eq(page:mouse_click_by_selector{ selector = "#pad", clickCount = "x" }.code, "INVALID_ARGUMENT")
        -- Covered: never clicked through.
        js([[const d = document.createElement('div'); d.id = 'cover';
          d.style.cssText = 'position:fixed; inset:0; z-index:5'; document.body.appendChild(d); return 1]])
        local n = #js("return window.events")
        local c = page:mouse_click_by_selector{ selector = "#pad" }
        eq(c.ok, false); eq(c.code, "ELEMENT_OBSCURED"); eq(c.data.coveredBy.id, "cover")
        local c2 = page:mouse_click_by_selector{ selector = "#pad", clickCount = 2 }
        eq(c2.code, "ELEMENT_OBSCURED")
        eq(#js("return window.events"), n, "nothing reached the pad")
    "##);
}
