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
        eq(far.code, "STALE_ELEMENT"); has(far.msg, "index out of range: 99"); has(far.msg, "legal range 0..=1")
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

/// Issue 9, defect 1: a click aimed at the centre of an element's bounding box landed on the
/// element's parent when the centre lies outside the element (a link wrapping onto two lines,
/// an L-shaped element), and the receipt said ok. A click now goes to a point inside the
/// element's own boxes where the hit test finds the element.
#[test]
fn clicks_land_inside_the_element_not_on_what_its_box_centre_shows() {
    run(r#"
        page:navigate{ url = A .. "/hit_targets.html" }:unwrap()
        -- The whole page: the L-shaped button's centre is not its own, so it is not "top-most".
        local s = page:get_browser_state{ viewportExpansion = -1 }:unwrap()
        local link = index_of(s, function(el) return el.id == "wrap" end)
        local boxes = js("Array.from(document.getElementById('wrap').getClientRects(), r => [r.left, r.top, r.right, r.bottom])")
        assert(#boxes >= 2, "the link wraps onto two lines")
        local c = page:click_element_by_index{ index = link }
        eq(c.ok, true, tostring(c))
        eq(js("window.hits.link"), 1, "the link got the click"); eq(js("window.hits.para"), 0, "the paragraph did not")
        eq(c.data.mode, "native"); eq(c.data.hit.tag, "A"); eq(c.data.coveredBy, nil)
        local x, y = c.data.clickPoint[1], c.data.clickPoint[2]
        local inside = false
        for _, b in ipairs(boxes) do
          if x >= b[1] and x <= b[3] and y >= b[2] and y <= b[4] then inside = true end
        end
        assert(inside, string.format("click point %s,%s lies in one of the link's line boxes", x, y))

        local ell = index_of(s, function(el) return el.id == "ell" end)
        local l = page:click_element_by_index{ index = ell }
        eq(l.ok, true, tostring(l)); eq(l.data.hit.tag, "BUTTON")
        eq(js("window.hits.ell"), 1, "the L-shaped button got the click"); eq(js("window.hits.frame"), 0)
    "#);
}

/// Issue 9, defect 1 (the other half): a cover over the centre only leaves the element's
/// edges clickable; a cover over all of it is ELEMENT_OBSCURED naming the cover.
#[test]
fn a_partly_covered_element_is_clicked_where_it_shows_and_a_covered_one_never() {
    run(r#"
        page:navigate{ url = A .. "/hit_targets.html" }:unwrap()
        local s = page:get_browser_state{ viewportExpansion = -1 }:unwrap()
        local badged = index_of(s, function(el) return el.id == "badged" end)
        local c = page:click_element_by_index{ index = badged }
        eq(c.ok, true, tostring(c)); eq(c.data.hit.tag, "BUTTON")
        eq(js("window.hits.badged"), 1, "the button got the click"); eq(js("window.hits.badge"), 0, "the badge did not")
        js("Object.assign(document.getElementById('badge').style, { left: '-4px', top: '-4px', width: '260px', height: '60px' })")
        for _, mode in ipairs({ "auto", "native", "mouse" }) do
          local o = page:click_element_by_index{ index = badged, mode = mode }
          eq(o.ok, false, mode .. ": " .. tostring(o)); eq(o.code, "ELEMENT_OBSCURED", mode); eq(o.started, false)
          eq(o.data.coveredBy.id, "badge", mode); eq(o.data.coveredBy.tag, "SPAN"); eq(o.data.mouseSkipped, "target-covered")
        end
        eq(js("window.hits.badged"), 1, "no click reached the button"); eq(js("window.hits.badge"), 0, "nor the badge")
    "#);
}

/// Issue 9, defect 4: auto mode on a disabled button fell back to a mouse click and said ok;
/// a button under pointer-events:none said ok with no `coveredBy`. A click that cannot reach
/// its target now fails, and mode js (the explicit bypass) only dispatches to an element that
/// can get events.
#[test]
fn clicks_that_cannot_reach_the_element_fail() {
    run(r#"
        page:navigate{ url = A .. "/unclickable.html" }:unwrap()
        -- A disabled control has no index: #off gets one while enabled, then is disabled.
        local shown = page:get_browser_state{}:unwrap()
        for _, el in ipairs(shown.elements) do assert(el.id ~= "off", "a disabled button has no index") end
        has(shown.text, "<button disabled>")
        js("document.getElementById('off').disabled = false")
        local s = page:get_browser_state{}:unwrap()
        local off = index_of(s, function(el) return el.id == "off" end)
        js("document.getElementById('off').disabled = true")
        local d = page:click_element_by_index{ index = off, timeoutMs = 300 }
        eq(d.ok, false, tostring(d)); eq(d.code, "ELEMENT_DISABLED"); eq(d.started, false)
        eq(d.data.fallbackReason, nil); eq(d.data.disabled, true)
        for _, mode in ipairs({ "native", "mouse", "js" }) do
          eq(page:click_element_by_index{ index = off, mode = mode, timeoutMs = 300 }.code, "ELEMENT_DISABLED", mode)
        end
        eq(js("window.clicks.off"), 0); eq(js("window.clicks.missed"), 0, "no click landed next to it either")

        -- Auto waits for a button that becomes enabled, then clicks it for real.
        local later = index_of(s, function(el) return el.id == "later" end)
        js("window.busyFor(200)")
        local l = page:click_element_by_index{ index = later }
        eq(l.ok, true, tostring(l)); eq(l.data.mode, "native"); eq(l.data.fallbackReason, nil)
        eq(js("window.clicks.later"), 1); eq(js("document.getElementById('state').textContent"), "later clicked")

        local ghost = index_of(s, function(el) return el.id == "ghost" end)
        js("window.ghostOff()")
        for _, mode in ipairs({ "auto", "mouse" }) do
          local g = page:click_element_by_index{ index = ghost, mode = mode }
          eq(g.ok, false, mode .. ": " .. tostring(g)); eq(g.code, "ELEMENT_OBSCURED", mode)
          eq(g.data.pointerEventsNone, true); eq(g.data.coveredBy.tag, "BODY", "the click would land on the body")
          has(g.msg, "pointer-events: none")
        end
        eq(js("window.clicks.ghost"), 0); eq(js("window.clicks.missed"), 0)
        local forced = page:click_element_by_index{ index = ghost, mode = "js" }
        eq(forced.ok, true, tostring(forced)); eq(forced.data.mode, "js")
        eq(forced.data.coveredBy.tag, "BODY", "the receipt says what a real click would have hit")
        eq(js("window.clicks.ghost"), 1, "js mode dispatched to the button itself")
    "#);
}

/// Issue 9, defects 2 and 3: `input_text` on date-like inputs answered ok with
/// `committed:true` while the field stayed empty, and refused colour and range inputs. They
/// are now filled through the value setter with input/change events and read back.
#[test]
fn date_time_colour_and_range_inputs_are_filled_and_read_back() {
    run(r##"
        page:navigate{ url = A .. "/fields.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local function field(id) return index_of(s, function(el) return el.id == id end) end
        local function value(id) return js("document.getElementById('" .. id .. "').value") end
        local cases = { { "date", "2024-02-29" }, { "time", "13:45" }, { "dtl", "2024-02-29T13:45" },
          { "month", "2024-02" }, { "week", "2024-W09" }, { "color", "#ff8800" }, { "range", "6" } }
        for _, case in ipairs(cases) do
          local id, text = case[1], case[2]
          local r = page:input_text{ index = field(id), text = text }
          eq(r.ok, true, id .. ": " .. tostring(r))
          eq(r.data.mode, "fill", id); eq(r.data.committed, true, id)
          eq(value(id), text, id .. " holds the value")
          eq(js("window.eventsOf('" .. id .. "')"), id .. ":input:" .. text .. " | " .. id .. ":change:" .. text,
            id .. ": the page saw one input and one change event")
        end
        -- Colours are reported in lower case by the browser: upper case is accepted as such.
        eq(page:input_text{ index = field("color"), text = "#00FF00" }.ok, true)
        eq(value("color"), "#00ff00")
        -- mode js sets these fields the same way (committed:false as for every JS set).
        local viajs = page:input_text{ index = field("date"), text = "2024-03-01", mode = "js" }
        eq(viajs.ok, true, tostring(viajs)); eq(viajs.data.mode, "js"); eq(viajs.data.committed, false)
        eq(value("date"), "2024-03-01")
        -- type_text has no text to type into them.
        eq(page:type_text{ index = field("date"), text = "1" }.code, "ELEMENT_NOT_EDITABLE")
    "##);
}

/// Issue 9, defect 2 (the other half): a malformed value is refused before the field is touched
/// (INVALID_ARGUMENT, as Playwright's fill refuses it), in every mode.
#[test]
fn malformed_values_are_refused_and_leave_the_field_alone() {
    run(r##"
        page:navigate{ url = A .. "/fields.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local function field(id) return index_of(s, function(el) return el.id == id end) end
        local function value(id) return js("document.getElementById('" .. id .. "').value") end
        local bad = page:input_text{ index = field("date"), text = "29/02/2024" }
        eq(bad.ok, false); eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
        has(bad.msg, "yyyy-mm-dd"); eq(bad.data.expectedFormat, "yyyy-mm-dd")
        eq(page:input_text{ index = field("date"), text = "2024-02-30", mode = "js" }.code, "INVALID_ARGUMENT", "no such day")
        eq(page:input_text{ index = field("color"), text = "red" }.code, "INVALID_ARGUMENT")
        local step = page:input_text{ index = field("range"), text = "5" }
        eq(step.code, "INVALID_ARGUMENT", "off the field's step"); eq(step.data.wouldBecome, "6")
        eq(page:input_text{ index = field("range"), text = "11" }.code, "INVALID_ARGUMENT", "above max")
        eq(value("date"), ""); eq(value("color"), "#000000"); eq(value("range"), "4")
        eq(js("window.events.length"), 0, "no event reached the page")
    "##);
}

/// Issue 9: ordinary fills are read back too; a field that ends up with something other than
/// the text sent (a max length, a rewriting listener) is never ok.
#[test]
fn a_fill_whose_read_back_differs_is_a_failure() {
    run(r#"
        page:navigate{ url = A .. "/fields.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local function field(id) return index_of(s, function(el) return el.id == id end) end
        local function value(id) return js("document.getElementById('" .. id .. "').value") end
        local short = page:input_text{ index = field("short"), text = "abcdefgh" }
        eq(short.ok, false, tostring(short)); eq(short.code, "ACTION_FAILED")
        eq(short.data.readBack, "abcde"); eq(short.data.expected, "abcdefgh"); eq(value("short"), "abcde")
        local more = page:type_text{ index = field("short"), text = "x" }
        eq(more.code, "ACTION_FAILED", "a full field takes no more keys"); eq(more.data.readBack, "abcde")
        local upper = page:input_text{ index = field("upper"), text = "abc" }
        eq(upper.code, "ACTION_FAILED"); eq(upper.data.readBack, "ABC"); eq(upper.data.inputMode, "fill")
        eq(page:input_text{ index = field("upper"), text = "xyz", mode = "js" }.code, "ACTION_FAILED", "js mode is read back too")
        -- The browser's own normalisation is not a mismatch: a textarea keeps \n for \r\n.
        local notes = page:input_text{ index = field("notes"), text = "one\r\ntwo" }
        eq(notes.ok, true, tostring(notes)); eq(value("notes"), "one\ntwo")
        eq(page:type_text{ index = field("notes"), text = " three" }.ok, true)
        eq(value("notes"), "one\ntwo three")
    "#);
}

/// Issue 37: an index action counts the snapshot's box as the first read of its stability
/// check only when no animation runs in the document; an element a script moves (no animation
/// the page lists) is not where the snapshot saw it, so it still waits for two frames, and
/// native mode never clicks it. A still element after the snapshot is clicked natively, once.
#[test]
fn an_index_whose_element_a_script_keeps_moving_is_not_taken_as_still() {
    run(r##"
        page:navigate{ url = A .. "/drifting.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local drift = index_of(s, function(el) return el.id == "drifting" end)
        local n = page:click_element_by_index{ index = drift, mode = "native", timeoutMs = 600 }
        eq(n.ok, false, tostring(n)); eq(n.code, "ACTION_TIMEOUT"); has(n.msg, "stability check")
        eq(js("window.driftClicks"), 0, "native never clicked the drifting element")
        -- Under a CSS animation (listed by the page), the box is checked over two frames too.
        s = page:get_browser_state{}:unwrap()
        local moving = index_of(s, function(el) return el.id == "moving" end)
        local m = page:click_element_by_index{ index = moving, mode = "native", timeoutMs = 600 }
        eq(m.code, "ACTION_TIMEOUT"); eq(js("window.movingClicks"), 0)
        -- A still element: clicked natively at once, exactly once.
        js("document.getElementById('drifting').remove(); document.getElementById('moving').style.animation = 'none'")
        s = page:get_browser_state{}:unwrap()
        moving = index_of(s, function(el) return el.id == "moving" end)
        local still = page:click_element_by_index{ index = moving, mode = "native", timeoutMs = 600 }
        eq(still.ok, true, tostring(still)); eq(still.data.mode, "native")
        eq(js("window.movingClicks"), 1); eq(js("document.getElementById('state').textContent"), "caught 1")
    "##);
}

/// Issue 21 §1 (the seed selftest): an element under an endless animation never holds still,
/// so auto mode clicks it with the real mouse where it is; native mode times out on stability.
#[test]
fn auto_mode_clicks_an_element_that_never_holds_still_with_the_mouse() {
    run(r##"
        page:navigate{ url = A .. "/moving.html" }:unwrap()
        local b = browser.clock()
        local c = page:click_element_by_selector{ selector = "#moving", mode = "auto", timeoutMs = 900 }
        local took = (browser.clock() - b) * 1000
        eq(c.ok, true, tostring(c))
        eq(c.data.mode, "mouse"); eq(c.data.fallbackFrom, "native")
        has(c.data.fallbackReason, "never held still")
        eq(js("window.trustedMovingClicks"), 1, "one real click")
        eq(js("document.getElementById('state').textContent"), "caught 1")
        assert(took < 3000, "the mouse got its turn within the budget: " .. took .. " ms")
        local n = page:click_element_by_selector{ selector = "#moving", mode = "native", timeoutMs = 600 }
        eq(n.ok, false); eq(n.code, "ACTION_TIMEOUT"); eq(n.started, false)
        has(n.msg, "stability check"); has(n.msg, "600 ms")
        eq(js("window.movingClicks"), 1, "native never clicked")
    "##);
}
