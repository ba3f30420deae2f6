//! The locate group: click_element_by_selector, input_text_by_selector, click_element_by_text,
//! click_element_by_role, input_text_by_label, clear_text, hover_and_click. What the page shows
//! afterwards, the receipt (the click receipt of click_element_by_index plus what the choice
//! saw), side-effect counts, and bad input that touches nothing.

use crate::support::harness::lua;

const PRELUDE: &str = r##"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function count(id) return js("window.counts['" .. id .. "'] || 0") end
page:navigate{ url = A .. "/locate.html" }:unwrap()
"##;

fn run(body: &str) {
    lua(&format!("{PRELUDE}{body}"));
}

#[test]
fn selector_clicks_prefer_the_visible_match_that_receives_the_click() {
    run(r##"
        local c = page:click_element_by_selector{ selector = ".dup" }
        eq(c.ok, true, tostring(c))
        local d = c.data
        eq(d.matched, 4); eq(d.chosenIndex, 2, "hidden and covered matches skipped"); eq(d.scanned, 4)
        has(d.selectorNote, "match 2")
        eq(d.visibleMatched, nil, "some match is visible")
        eq(d.mode, "native"); eq(d.changed, true); eq(d.effective, true); eq(d.retrySafe, false)
        eq(d.hit.id, "dup-ok"); eq(d.tag, "BUTTON"); eq(d.text, "Dup ok"); has(d.outerHtml, 'id="dup-ok"')
        eq(d.target, "selector .dup")
        eq(js("document.getElementById('msg').textContent"), "clicked dup-ok")
        eq(count("dup-ok"), 1, "exactly one click"); eq(count("dup-covered"), 0); eq(count("dup-last"), 0)
        -- nth is explicit: no visibility choice, and a covered pick is refused, never clicked through
        local n = page:click_element_by_selector{ selector = ".dup", nth = 3 }:unwrap()
        eq(n.explicitNth, true); eq(n.chosenIndex, 3); eq(count("dup-last"), 1)
        local covered = page:click_element_by_selector{ selector = ".dup", nth = 1, timeoutMs = 300 }
        eq(covered.ok, false); eq(covered.code, "ELEMENT_OBSCURED"); eq(covered.data.coveredBy.id, "cover")
        eq(count("dup-covered"), 0, "nothing clicked through the cover")
        -- Playwright-style chains and text engines
        local t = page:click_element_by_selector{ selector = "button >> text=Dup last" }:unwrap()
        eq(t.hit.id, "dup-last"); eq(count("dup-last"), 2)
        local h = page:click_element_by_selector{ selector = "button:has-text(\"dup ok\")" }:unwrap()
        eq(h.hit.id, "dup-ok"); eq(count("dup-ok"), 2)
    "##);
}

#[test]
fn selector_bad_input_fails_at_once_and_touches_nothing() {
    run(r##"
        local none = page:click_element_by_selector{ selector = ".nothing-here" }
        eq(none.ok, false); eq(none.code, "ELEMENT_NOT_FOUND"); eq(none.data.matched, 0)
        has(none.msg, "0 matches")
        local far = page:click_element_by_selector{ selector = ".dup", nth = 9 }
        eq(far.code, "ELEMENT_NOT_FOUND"); eq(far.data.matched, 4); has(far.msg, "matches 4")
        local bad = page:click_element_by_selector{ selector = "button[" }
        eq(bad.code, "INVALID_ARGUMENT"); has(bad.msg, "selector")
        local missing = page:click_element_by_selector{}
        eq(missing.code, "INVALID_ARGUMENT"); eq(missing.started, false); has(missing.msg, "selector")
        local frame = page:click_element_by_selector{ selector = "button", frame = "no-such-frame" }
        eq(frame.code, "INVALID_ARGUMENT"); has(frame.msg, "frames are")
        local nth = page:click_element_by_selector{ selector = "button", nth = -1 }
        eq(nth.code, "INVALID_ARGUMENT"); eq(nth.started, false)
        eq(js("Object.keys(window.counts).length"), 0, "no click happened")
        eq(js("document.getElementById('msg').textContent"), "ready")
    "##);
}

#[test]
fn selector_clicks_reach_cross_site_frames_and_follow_popups() {
    run(r##"
        local c = page:click_element_by_selector{ selector = "#child-btn", frame = "localhost" }
        eq(c.ok, true, tostring(c))
        eq(c.data.changed, true); eq(c.data.hit.id, "child-btn"); eq(c.data.mode, "native")
        eq(c.data.probedFrameUrl, B .. "/child.html")
        eq(page:execute_js{ body = "document.getElementById('child-btn').textContent", frame = "localhost" }.data.result, "child clicked 1")
        local i = page:input_text_by_selector{ selector = "#child-input", text = "über 你好", frame = 1 }:unwrap()
        eq(i.mode, "fill"); eq(i.committed, true); eq(i.matched, 1)
        eq(page:execute_js{ body = "document.getElementById('child-input').value", frame = 1 }.data.result, "über 你好")
        -- a link with target=_blank: the new tab becomes the current one
        local p = page:click_element_by_selector{ selector = "#pop" }:unwrap()
        eq(p.tabCountBefore, 1); eq(p.tabCountAfter, 2); eq(p.switchedToNewTab, true)
        eq(p.newTab.pageIndex, 1); eq(p.newTab.loaded, true); has(p.newTab.url, "/second.html")
        eq(page:get_title():unwrap().title, "Second", "commands now go to the new tab")
    "##);
}

#[test]
fn text_role_and_label_locate_what_a_person_would_name() {
    run(r##"
        local t = page:click_element_by_text{ text = "buy NOW" }
        eq(t.ok, true, tostring(t))
        eq(t.data.textMatch, "exact"); eq(t.data.textClickable, true); eq(t.data.tag, "BUTTON")
        eq(t.data.textCandidates, 2, "the button's span and the paragraph")
        eq(t.data.changed, true); eq(count("buy"), 1, "the clickable ancestor got the click")
        local partial = page:click_element_by_text{ text = "Dup la" }:unwrap()
        eq(partial.textMatch, "contains"); has(partial.textMatchNote, "exactly"); eq(count("dup-last"), 1)
        eq(page:click_element_by_text{ text = "no such words" }.code, "ELEMENT_NOT_FOUND")

        local r = page:click_element_by_role{ role = "button", name = "save draft" }:unwrap()
        eq(r.tag, "DIV"); eq(count("role-btn"), 1); eq(count("save"), 0)
        local s = page:click_element_by_role{ role = "BUTTON", name = "Save" }:unwrap()
        eq(s.hit.id, "role-btn", "first button named ...save... in document order")
        local l = page:click_element_by_role{ role = "link", name = "open a tab", mode = "js" }
        eq(l.ok, true, tostring(l)); eq(l.data.mode, "js")
        local bad = page:click_element_by_role{ role = "buton" }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false); has(bad.msg, "button")
        eq(page:click_element_by_role{ role = "button", name = "hidden save" }.code, "ELEMENT_NOT_FOUND", "aria-hidden is not in the tree")

        local e = page:input_text_by_label{ label = "email address", text = "a@b.c" }:unwrap()
        eq(e.mode, "fill"); eq(e.committed, true)
        eq(js("document.getElementById('email').value"), "a@b.c")
        page:input_text_by_label{ label = "Full", text = "Zoë 李" }:unwrap()
        eq(js("document.getElementById('name').value"), "Zoë 李", "wrapping label, partial text")
        page:input_text_by_label{ label = "Search", text = "new" }:unwrap()
        eq(js("document.getElementById('search').value"), "new", "aria-label")
        eq(js("window.changes") >= 3, true, "trusted input events reached the page")
        local nol = page:input_text_by_label{ label = "Nope", text = "x" }
        eq(nol.code, "ELEMENT_NOT_FOUND"); has(nol.msg, "label `Nope`")
    "##);
}

#[test]
fn input_and_clear_by_selector_check_the_field() {
    run(r##"
        local i = page:input_text_by_selector{ selector = "#notes", text = "two\nlines" }:unwrap()
        eq(i.mode, "fill"); eq(js("document.getElementById('notes').value"), "two\nlines")
        local h = page:input_text_by_selector{ selector = "#hidden-field", text = "set" }:unwrap()
        eq(h.mode, "js"); eq(h.committed, false); eq(h.visibleMatched, 0); has(h.hiddenMatchNote, "not visible")
        eq(page:input_text_by_selector{ selector = "#ro", text = "x" }.code, "ELEMENT_READ_ONLY")
        eq(page:input_text_by_selector{ selector = "#off", text = "x" }.code, "ELEMENT_DISABLED")

        local before = js("window.changes")
        local c = page:clear_text{ selector = "#clear-me" }:unwrap()
        eq(c.value, ""); eq(c.mode, "fill"); eq(c.committed, true)
        eq(js("document.getElementById('clear-me').value"), "")
        eq(js("window.changes") - before, 1, "one trusted input event")
        local s = page:get_browser_state{}:unwrap()
        local idx
        for _, el in ipairs(s.elements) do if el.id == "search" then idx = el.index end end
        eq(page:clear_text{ index = idx }:unwrap().value, "", "by index")
        eq(js("document.getElementById('search').value"), "")
        eq(page:clear_text{ selector = "#ro" }.code, "ELEMENT_READ_ONLY")
        eq(js("document.getElementById('ro').value"), "fixed")
        eq(page:clear_text{ selector = "#off" }.code, "ELEMENT_DISABLED")
        local neither = page:clear_text{}
        eq(neither.code, "INVALID_ARGUMENT"); eq(neither.msg, "clear_text: needs index or selector")
        eq(page:clear_text{ index = 999 }.code, "STALE_ELEMENT")
        eq(page:clear_text{ selector = "#nope" }.code, "ELEMENT_NOT_FOUND")
    "##);
}

#[test]
fn hover_and_click_hovers_first_in_one_call() {
    run(r##"
        local c = page:hover_and_click{ selector = "#hover-target", hoverDelayMs = 50 }
        eq(c.ok, true, tostring(c))
        eq(c.data.hover.delayMs, 50); eq(c.data.changed, true)
        eq(js("document.getElementById('msg').textContent"), "clicked hover-target after hover")
        eq(count("hover-target"), 1)
        local neither = page:hover_and_click{}
        eq(neither.code, "INVALID_ARGUMENT"); eq(neither.msg, "hover_and_click: needs index or selector")
        eq(page:hover_and_click{ selector = "#x", hoverDelayMs = 20000 }.code, "INVALID_ARGUMENT")
        eq(page:hover_and_click{ selector = "#sub-item" }.code, "ELEMENT_HIDDEN", "a hidden menu item is not hovered open by itself")
    "##);
}

#[test]
fn an_element_not_there_yet_is_refused_at_once_with_the_wait_to_use() {
    // Issue 36 §4: the spec answers 0 matches at once (`timeoutMs` is the actionability
    // timeout); the failure names the wait that covers the element's arrival.
    run(r##"
        js([[setTimeout(() => { const b = document.createElement('button'); b.className = 'lazy';
             b.textContent = 'Lazy one'; b.onclick = () => { window.counts.lazy = (window.counts.lazy || 0) + 1; };
             document.body.appendChild(b); }, 500); true]])
        local r = page:click_element_by_selector{ selector = ".lazy", timeoutMs = 3000 }
        eq(r.code, "ELEMENT_NOT_FOUND"); eq(count("lazy"), 0, "nothing was clicked")
        has(r.msg, 'wait_for_element{ selector = ".lazy"'); has(r.data.hint, "not its arrival")
        local t = page:click_element_by_text{ text = "Lazy one" }
        eq(t.code, "ELEMENT_NOT_FOUND"); has(t.msg, 'wait_for_text{ text = "Lazy one"')
        page:wait_for_element{ selector = ".lazy", timeoutSeconds = 3 }:unwrap()
        page:click_element_by_selector{ selector = ".lazy" }:unwrap()
        eq(count("lazy"), 1)
    "##);
}

#[test]
fn an_ambiguous_text_selector_or_role_is_reported_and_strict_refuses_it() {
    // Issue 36 §3: three elements say "Upload" (a nav link, a heading, the submit button).
    run(r##"
        js([[document.body.insertAdjacentHTML('afterbegin',
          '<nav><a href="#up" id="nav-up">Upload</a></nav><h2 id="h-up">Upload</h2>' +
          '<form id="f-up" onsubmit="event.preventDefault(); window.counts.submitUp = (window.counts.submitUp || 0) + 1">' +
          '<button id="b-up">Upload</button></form>'); true]])
        local r = page:click_element_by_text{ text = "Upload" }:unwrap()
        eq(r.textTargets, 3); eq(#r.candidates, 3)
        has(r.textMatchNote, "3 elements match text `Upload`"); has(r.textMatchNote, "<a#nav-up>")
        has(r.textMatchNote, "equally good")
        eq(r.candidates[2].id, "h-up"); eq(r.candidates[3].tag, "button")
        -- strict refuses, lists the candidates, and clicks nothing.
        local s = page:click_element_by_text{ text = "Upload", strict = true }
        eq(s.code, "INVALID_ARGUMENT"); eq(s.started, false); eq(s.data.param, "text")
        has(s.msg, "strict: text `Upload` matches 3 elements"); has(s.msg, "<button#b-up>")
        eq(#s.data.candidates, 3); eq(count("submitUp"), 0)
        -- A selector's choice is listed too.
        local two = page:click_element_by_selector{ selector = "#h-up, #nav-up" }:unwrap()
        eq(two.matched, 2); eq(#two.candidates, 2)
        -- For a whole script: every command carries strict, unless the call says otherwise.
        eq(browser.strict_locators(true), false)
        local sel = page:click_element_by_selector{ selector = "#h-up, #nav-up" }
        eq(sel.code, "INVALID_ARGUMENT"); has(sel.msg, "matches 2 elements"); eq(sel.data.param, "selector")
        local role = page:click_element_by_role{ role = "button", name = "Upload" }:unwrap()
        eq(role.matched, 1); eq(count("submitUp"), 1, "one match: clicked")
        page:click_element_by_text{ text = "Upload", strict = false }:unwrap()
        eq(browser.strict_locators(false), true)
        eq(page:get_title{}.data.unknownParams, nil, "strict is no unknown param")
    "##);
}

/// Issue 37: a click that starts nothing closes its observation window as soon as the page held
/// still (no timer, animation frame or request it started is left), says so, and does not wait
/// for tabs it could not have opened; a click whose change lands later is still waited for.
#[test]
fn a_click_that_changes_nothing_answers_at_once_and_says_why() {
    lua(r##"
        local function js(body) return page:execute_js{ body = body }:unwrap().result end
        page:navigate{ url = A .. "/click_pace.html" }:unwrap()
        -- The page polls every 100 ms from its start: those timers are the page's, not the click's.
        local r = page:click_element_by_selector{ selector = "#noop" }
        eq(r.ok, true, tostring(r))
        local d = r.data
        eq(d.changed, false); eq(d.changeStatus, "not_observed"); eq(d.observationComplete, true)
        eq(d.observationEnd, "quiet"); eq(d.laterTimers, nil); eq(d.newTab, nil)
        has(d.hint, "left nothing running")
        assert(r.elapsed_ms < 450, "a click that changes nothing answered in " .. r.elapsed_ms .. " ms")
        eq(js("window.noops"), 1, "exactly one click")
        -- Hidden state toggled, a field focused: nothing observable, and quiet.
        local t = page:click_element_by_selector{ selector = "#toggle" }:unwrap()
        eq(t.changed, false); eq(t.observationEnd, "quiet")
        eq(js("document.getElementById('hidden-state').dataset.open"), "yes")
        local f = page:click_element_by_selector{ selector = "#field" }:unwrap()
        eq(f.changed, false); eq(f.observationEnd, "quiet")
        eq(js("document.activeElement.id"), "field")
        -- Changes that land after the click are waited for: a timer, frames, a request.
        local later = page:click_element_by_selector{ selector = "#later" }:unwrap()
        eq(later.changed, true); eq(later.observationEnd, "change")
        eq(js("document.getElementById('msg').textContent"), "later 1")
        local frames = page:click_element_by_selector{ selector = "#frames" }:unwrap()
        eq(frames.changed, true); eq(js("document.getElementById('msg').textContent"), "frames 1")
        local fetched = page:click_element_by_selector{ selector = "#fetch" }:unwrap()
        eq(fetched.changed, true); eq(js("document.getElementById('msg').textContent"), "slow done 1")
        -- A timer due after the window is counted, not waited for; the receipt says the page may
        -- react then.
        local far = page:click_element_by_selector{ selector = "#far" }:unwrap()
        eq(far.changed, false); eq(far.observationEnd, "quiet"); eq(far.laterTimers, 1)
        has(far.hint, "laterTimers")
        -- A tab opened at once is still followed.
        local p = page:click_element_by_selector{ selector = "#popup" }:unwrap()
        eq(p.switchedToNewTab, true); has(p.newTab.url, "popup_child.html")
        eq(#page:get_tabs():unwrap().tabs, 2)
    "##);
}

/// On a busy page (or machine) the click reaches the page late after the watch is armed, and
/// the timers it sets run late: the window counts from the click's first input event, and a
/// timer due inside it that has not run yet at its end is waited for a little longer.
#[test]
fn a_busy_page_still_shows_its_click_s_timer_within_the_window() {
    lua(r##"
        local function js(body) return page:execute_js{ body = body }:unwrap().result end
        local busy = "const t = performance.now(); while (performance.now() - t < %d) {}"
        page:navigate{ url = A .. "/click_pace.html" }:unwrap()
        -- The pointer's arrival holds the page 350 ms: the press comes that late after the arm,
        -- and the 300 ms timer is due 650 ms after it.
        js("document.getElementById('later').addEventListener('mouseover', () => { "
            .. busy:format(350) .. " }, { once: true }); true")
        local later = page:click_element_by_selector{ selector = "#later" }:unwrap()
        eq(later.changed, true, tostring(later.observationEnd))
        eq(js("document.getElementById('msg').textContent"), "later 1")
        -- A long task from 100 to 550 ms after the click: the 300 ms timer runs after the window.
        js("document.getElementById('noop').addEventListener('click', () => { "
            .. "setTimeout(() => { " .. busy:format(450) .. " }, 100); "
            .. "setTimeout(() => { msg.textContent = 'late timer' }, 300) }); true")
        local late = page:click_element_by_selector{ selector = "#noop" }:unwrap()
        eq(late.changed, true, tostring(late.observationEnd))
        eq(js("document.getElementById('msg').textContent"), "late timer")
        -- A timer set for later than the window is still counted, not waited for.
        local far = page:click_element_by_selector{ selector = "#far" }:unwrap()
        eq(far.changed, false); eq(far.laterTimers, 1)
    "##);
}

/// A page that breaks, freezes, forges or spies on the click watch cannot stall a click nor make
/// it miss a change the page shows at once: the watch lives in the page's world and is only a
/// hint; `changed` comes from the utility world's comparison, and the window is bounded.
#[test]
fn a_page_hostile_to_the_click_watch_gets_bounded_truthful_clicks() {
    lua(r##"
        local function js(body) return page:execute_js{ body = body }:unwrap().result end
        local function msg() return js("document.getElementById('msg').textContent") end
        for _, mode in ipairs{ "throwing", "frozen", "liar", "proxy" } do
            page:navigate{ url = A .. "/click_hostile.html?mode=" .. mode }:unwrap()
            local n = page:click_element_by_selector{ selector = "#now" }
            eq(n.ok, true, mode .. ": " .. tostring(n))
            eq(n.data.changed, true, mode .. ": a change at once is seen")
            eq(msg(), "now 1", mode)
            -- Bounded: a stalled watch would hold the click to the command's timeout (tens of s).
            -- The watch unreadable, the click is polled as before the watch (~1.6 s here).
            assert(n.elapsed_ms < 3500, mode .. ": the changing click took " .. n.elapsed_ms .. " ms")
            local q = page:click_element_by_selector{ selector = "#noop" }
            eq(q.ok, true, mode .. ": " .. tostring(q))
            eq(q.data.changed, false, mode)
            eq(js("window.noops"), 1, mode .. ": exactly one click")
            assert(q.elapsed_ms < 3500, mode .. ": the quiet click took " .. q.elapsed_ms .. " ms")
            if mode == "proxy" then
                -- A page that only spies still gets the watch's early answer.
                eq(q.data.observationEnd, "quiet")
            end
            -- A change 300 ms later through a channel the watch cannot see: the click answers in
            -- bounded time and says how its window ended; it reports a change only when it saw one.
            local l = page:click_element_by_selector{ selector = "#later" }:unwrap()
            assert(l.observationEnd ~= nil, mode .. ": the receipt says how the window ended")
            assert(l.changed == false or l.changeStatus ~= "not_observed", mode)
            local waited = page:wait_for_text{ text = "later 1", timeoutSeconds = 3 }
            eq(waited.ok, true, mode .. ": the page went on (" .. tostring(waited) .. ")")
        end
        -- The spying page learnt the watch's key: it reaches only the watch's state in the
        -- page's own world, which the page could change anyway.
        assert(js("window.keysSeen.length") > 0, "the spy saw the key")
    "##);
}

/// The click watch lives in the page's own world: its wrappers must not show (a page that
/// checks whether its timers are native sees native ones), and a page cannot reach its state.
#[test]
fn the_click_watch_is_invisible_to_the_page() {
    lua(r##"
        local function js(body) return page:execute_js{ body = body }:unwrap().result end
        page:navigate{ url = A .. "/click_pace.html" }:unwrap()
        page:click_element_by_selector{ selector = "#noop" }:unwrap()
        eq(js("String(setTimeout).includes('[native code]')"), true)
        eq(js("Function.prototype.toString.call(requestAnimationFrame).includes('[native code]')"), true)
        eq(js("setTimeout.name + '/' + setTimeout.length"), "setTimeout/1")
        eq(js("Object.getOwnPropertyNames(setTimeout).join(',')"), "length,name")
        eq(js("Object.keys(window).filter(k => /^mp[0-9a-f]{32}$/.test(k)).length"), 0)
        -- The page's own timers still run as before.
        eq(js("new Promise(r => setTimeout(() => r('ran'), 10))"), "ran")
    "##);
}
