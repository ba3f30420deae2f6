//! The conditional waits: each returns once its condition holds on a fixture page (and not
//! before), times out with ACTION_TIMEOUT and what it last observed, stays within its bound on a
//! busy page, and ends when its task is closed.

use crate::support::harness::lua;

const JS: &str = r#"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function bad(r, param, what)
  eq(r.ok, false, what); eq(r.code, "INVALID_ARGUMENT", what); eq(r.started, false, what)
  if param then eq(r.data.param, param, what) end
end
"#;

fn run(body: &str) {
    lua(&format!("{JS}{body}"));
}

#[test]
fn wait_for_stable_returns_the_settled_text_after_it_settled() {
    run(r##"
        page:navigate{ url = A .. "/settling.html" }:unwrap()
        -- 200 ms between lines: a loaded machine still sees the content grow between looks.
        js("start(6, 200)")
        local t0 = browser.clock()
        local r = page:wait_for_stable{ selector = "#feed", quietMs = 500 }
        eq(r.ok, true, tostring(r))
        local took = browser.clock() - t0
        local d = r.data
        eq(d.stable, true); eq(d.quietMs, 500); eq(d.selector, "#feed")
        eq(d.text, "line 1 line 2 line 3 line 4 line 5 line 6", "the settled text, collapsed")
        assert(d.changes >= 3, "it saw the content grow: " .. d.changes)
        assert(d.length > 0 and #d.fingerprint > 0, "length and fingerprint")
        local calm = js("Date.now() - window.doneAt")
        assert(calm >= 480, "returned only after quietMs without change: " .. calm)
        assert(took >= 1.5 and took < 5, "1200 ms of growth + 500 ms quiet: " .. took)
        assert(d.waitedMs >= 1500, "waitedMs " .. d.waitedMs)
        assert(d.seq ~= nil, "auto-captured")
        -- Nothing changes any more: one read, then quietMs.
        local again = page:wait_for_stable{ selector = "#feed", quietMs = 300 }:unwrap()
        eq(again.changes, 1); eq(again.fingerprint, d.fingerprint)
        assert(again.waitedMs >= 300 and again.waitedMs < 1500, "waited " .. again.waitedMs)
        has(page:wait_for_stable{ quietMs = 200 }:unwrap().text, "Results line 1", "body by default")
        -- A container that is not there fails at once.
        local missing = page:wait_for_stable{ selector = "#nope" }
        eq(missing.code, "ELEMENT_NOT_FOUND"); eq(missing.data.stable, false)
        has(missing.msg, "cannot read content fingerprint")
        bad(page:wait_for_stable{ selector = "[[[" }, "selector", "invalid selector")
        bad(page:wait_for_stable{ quietMs = "long" }, "quietMs", "mistyped quietMs")
    "##);
}

#[test]
fn a_page_that_never_settles_times_out_with_what_kept_it_busy() {
    run(r##"
        page:navigate{ url = A .. "/forever.html" }:unwrap()
        local t0 = browser.clock()
        local s = page:wait_for_stable{ quietMs = 400, timeoutSeconds = 1.2 }
        local took = browser.clock() - t0
        eq(s.ok, false); eq(s.code, "ACTION_TIMEOUT"); eq(s.retryable, true)
        has(s.msg, "timed out: condition never satisfied within the wait")
        assert(took >= 1.15 and took < 2.5, "within its bound: " .. took)
        local d = s.data
        eq(d.stable, false); eq(d.timeoutSeconds, 1.2)
        assert(d.changes >= 3, "changes " .. d.changes)
        -- As of the last look; a slow last look on a loaded machine is its own field.
        assert(d.msSinceLastChange < 400, "it kept changing: " .. d.msSinceLastChange)
        assert(d.msSinceLastLook >= 0 and d.msSinceLastLook < 1200, "last look " .. d.msSinceLastLook)
        has(d.text, "tick "); assert(d.length > 0 and d.fingerprint ~= nil)
        assert(d.waitedMs >= 1150 and d.waitedMs < 2000, "waitedMs " .. d.waitedMs)
        local i = page:wait_for_idle{ quietMs = 300, timeoutSeconds = 1 }
        eq(i.code, "ACTION_TIMEOUT"); eq(i.data.idle, false)
        assert(i.data.mutationsDuringWait >= 5, "mutations " .. i.data.mutationsDuringWait)
        assert(i.data.mutations >= i.data.mutationsDuringWait)
        eq(i.data.inflight, 0); eq(#i.data.inflightRequests, 0)
        eq(i.data.lastMutation.type, "childList"); eq(i.data.lastMutation.tag, "p")
        assert(i.data.msSinceLastMutation < 300)
        has(i.msg, "0 requests in flight"); has(i.msg, "mutations during the wait")
        eq(i.data.selectorMatched, nil, "only with a selector")
    "##);
}

#[test]
fn wait_for_idle_waits_for_requests_in_flight() {
    run(r##"
        page:navigate{ url = A .. "/slow_fetch.html" }:unwrap()
        -- 3 s: the fetch is still out after the 0.6 s wait and the commands around it on a
        -- loaded machine.
        js("void load(3000)")
        local busy = page:wait_for_idle{ quietMs = 200, timeoutSeconds = 0.6 }
        eq(busy.code, "ACTION_TIMEOUT", tostring(busy)); eq(busy.data.idle, false)
        eq(busy.data.inflight, 1)
        local req = busy.data.inflightRequests[1]
        has(req.url, "/slow?ms=3000"); eq(req.type, "Fetch"); assert(req.ageMs >= 500)
        has(busy.msg, "1 request in flight")
        assert(busy.data.waitedMs >= 600 and busy.data.waitedMs < 1200)
        eq(js("document.getElementById('out').textContent"), "fetching")
        local ok = page:wait_for_idle{ quietMs = 300 }
        eq(ok.ok, true, tostring(ok))
        eq(ok.data.idle, true); eq(ok.data.inflight, 0); eq(ok.data.quietMs, 300)
        eq(ok.data.url, A .. "/slow_fetch.html"); assert(ok.data.mutations >= 1)
        eq(js("document.getElementById('out').textContent"), "slowwaited 3000 ms", "the fetch had landed")
        assert(js("Date.now() - window.fetchedAt") >= 280, "and the page stayed quiet since")
        -- Extra conditions.
        local t = page:wait_for_idle{ quietMs = 100, text = "waited 3000", selector = "#out" }:unwrap()
        eq(t.idle, true)
        local no = page:wait_for_idle{ quietMs = 100, selector = "#nope", text = "absent words", timeoutSeconds = 0.4 }
        eq(no.code, "ACTION_TIMEOUT"); eq(no.data.selectorMatched, false); eq(no.data.textMatched, false)
        has(no.msg, "the selector matched nothing")
        bad(page:wait_for_idle{ selector = "[[[" }, "selector", "invalid selector")
        bad(page:wait_for_idle{ timeoutSeconds = 900 }, "timeoutSeconds", "over the long bound")
    "##);
}

#[test]
fn wait_for_load_follows_the_load_states() {
    run(r##"
        page:navigate{ url = A .. "/slow_fetch.html" }:unwrap()
        local done = page:wait_for_load{}:unwrap()
        eq(done.readyState, "complete", "a state already reached counts"); eq(done.state, "load")
        assert(done.waitedMs < 500)
        js("go()")
        page:wait_for_url{ url = "**/slow_load.html" }:unwrap()
        local dom = page:wait_for_load{ state = "DOMContentLoaded" }:unwrap()
        eq(dom.state, "domcontentloaded"); eq(dom.readyState, "interactive", "the image still loads")
        local early = page:wait_for_load{ timeoutSeconds = 0.3 }
        eq(early.code, "ACTION_TIMEOUT"); eq(early.data.readyState, "interactive")
        assert(early.data.inflight >= 1, "the image is in flight")
        has(early.data.inflightRequests[1].url, "/slow?ms=3000")
        eq(js("document.getElementById('state').textContent"), "parsed")
        local load = page:wait_for_load{}:unwrap()
        eq(load.readyState, "complete"); eq(load.url, A .. "/slow_load.html")
        local state = js("document.getElementById('state').textContent")
        assert(state == "loaded" or state == "fetched", "after the load event: " .. state)
        local idle = page:wait_for_load{ state = "networkidle" }:unwrap()
        eq(idle.inflight, 0)
        eq(js("document.getElementById('state').textContent"), "fetched", "the fetch after load finished")
        assert(js("Date.now() - window.afterLoadFetchedAt") >= 450, "and 500 ms without requests")
        has(page:wait_for_load{ state = "commit" }:unwrap().stateNote, "unknown state `commit`")
    "##);
}

#[test]
fn wait_for_url_sees_a_push_state_and_is_strict() {
    run(r##"
        page:navigate{ url = A .. "/push.html" }:unwrap()
        js("later(400)")
        local t0 = browser.clock()
        local r = page:wait_for_url{ url = "**/push.html?step=2" }
        eq(r.ok, true, tostring(r))
        eq(r.data.url, A .. "/push.html?step=2"); eq(r.data.pattern, "**/push.html?step=2")
        assert(browser.clock() - t0 >= 0.3, "not before the pushState")
        -- Soon after it, not at the 30 s bound (the margin is for the commands on a loaded machine).
        assert(js("Date.now() - window.pushedAt") < 3000, "soon after it")
        eq(js("document.getElementById('where').textContent"), "step 2")
        eq(page:wait_for_url{ url = A .. "/push.html?step=2" }:unwrap().url, A .. "/push.html?step=2")
        local strict = page:wait_for_url{ url = "**/push.html", timeoutSeconds = 0.3 }
        eq(strict.code, "ACTION_TIMEOUT"); eq(strict.data.url, A .. "/push.html?step=2")
        has(strict.data.hint, "whole URL")
        local seg = page:wait_for_url{ url = "*/push.html?step=2", timeoutSeconds = 0.2 }
        eq(seg.code, "ACTION_TIMEOUT", "* does not cross /")
        eq(page:wait_for_url{ url = "**/push.html?step={1,2}" }.ok, true, "alternatives")
        bad(page:wait_for_url{ url = "**/{a,b" }, "url", "unclosed group")
        bad(page:wait_for_url{}, "url", "missing url")
    "##);
}

/// Issue 21 §2: playwright-core's glob (`**` not before `/` crosses `/`), and a timeout that
/// falls on a poll tick is not "the main thread is busy" on a page whose only work is a timer.
#[test]
fn wait_for_url_globs_are_playwright_s_and_a_timeout_blames_no_busy_page() {
    run(r##"
        page:navigate{ url = A .. "/push.html" }:unwrap()
        js("setInterval(() => { window.ticks = (window.ticks || 0) + 1; }, 100); later(0)")
        page:wait_for_url{ url = "**/push.html?step=2" }:unwrap()
        for _, p in ipairs{ "**step=2*", "**step=2", "**?step=2*", "**/push.html?step=2" } do
          local r = page:wait_for_url{ url = p, timeoutSeconds = 1 }
          eq(r.ok, true, p .. ": " .. tostring(r)); eq(r.data.url, A .. "/push.html?step=2")
          assert(r.data.waitedMs < 500, p .. " matches at once")
        end
        -- A timeout of a whole number of polls: its deadline and a poll tick fall together.
        for i = 1, 4 do
          local r = page:wait_for_url{ url = "**step=3*", timeoutSeconds = 0.5 }
          eq(r.code, "ACTION_TIMEOUT", tostring(r))
          hasnt(r.msg, "busy", "try " .. i); eq(r.data.pageUnresponsive, nil, "try " .. i)
          eq(r.data.url, A .. "/push.html?step=2")
        end
        assert(js("window.ticks") > 10, "the timer kept running")
    "##);
}

#[test]
fn wait_for_element_text_and_count_wait_for_what_the_page_shows() {
    run(r##"
        page:navigate{ url = A .. "/settling.html" }:unwrap()
        js("reveal()")
        local t0 = browser.clock()
        local e = page:wait_for_element{ selector = "#late" }
        eq(e.ok, true, tostring(e))
        e = e.data
        eq(e.count, 1); eq(e.visibleCount, 1); eq(e.element.id, "late"); eq(e.element.tag, "DIV")
        assert(js("window.shownAt") ~= nil, "it returned once the element was visible, not when attached")
        assert(browser.clock() - t0 >= 0.5)
        assert(e.seq ~= nil, "auto-captured")
        local hidden = page:wait_for_element{ selector = "p[hidden]", timeoutSeconds = 0.3 }
        eq(hidden.code, "ACTION_TIMEOUT"); eq(hidden.data.count, 1); eq(hidden.data.visibleCount, 0)
        has(hidden.msg, "matched 1 element, none visible")
        local none = page:wait_for_element{ selector = "#nothing", timeoutSeconds = 0.3 }
        eq(none.code, "ACTION_TIMEOUT"); eq(none.data.count, 0); has(none.msg, "matched nothing")
        assert(none.data.waitedMs >= 300 and none.data.waitedMs < 1000)
        bad(page:wait_for_element{}, "selector", "missing selector")
        bad(page:wait_for_element{ selector = "[[[" }, "selector", "invalid selector")
        bad(page:wait_for_element{ selector = "p", timeoutSeconds = "soon" }, "timeoutSeconds", "mistyped")

        page:navigate{ url = A .. "/settling.html" }:unwrap()
        js("reveal()")
        local gone = page:wait_for_count{ selector = ".spinner", max = 0 }:unwrap()
        eq(gone.matched, true); eq(gone.count, 0); eq(gone.max, 0); eq(gone.selector, ".spinner")
        eq(gone.seq, nil, "wait_for_count is not auto-captured")
        eq(js("document.querySelectorAll('.spinner').length"), 0)
        local t = page:wait_for_text{ text = "later arrival" }:unwrap()
        eq(t.element.id, "late", "case and whitespace do not matter"); eq(t.visibleMatches, 1)
        assert(js("window.shownAt") ~= nil)
        local ht = page:wait_for_text{ text = "Hidden words", timeoutSeconds = 0.3 }
        eq(ht.code, "ACTION_TIMEOUT"); eq(ht.data.matches, 1); eq(ht.data.visibleMatches, 0)
        has(ht.msg, "none visible")
        bad(page:wait_for_text{}, "text", "missing text")
        -- timeoutSeconds = 0 looks once.
        eq(page:wait_for_element{ selector = "#late", timeoutSeconds = 0 }.ok, true)
        local once = page:wait_for_count{ selector = "li", min = 99, timeoutSeconds = 0 }
        eq(once.code, "ACTION_TIMEOUT"); assert(once.data.waitedMs < 500, "one look: " .. once.data.waitedMs)

        js("start(3, 150)")
        local rows = page:wait_for_count{ selector = "li.row", min = 3 }:unwrap()
        eq(rows.count, 3); eq(rows.min, 3)
        eq(js("document.querySelectorAll('li.row').length"), 3)
        local ten = page:wait_for_count{ selector = "li.row", equals = 10, timeoutSeconds = 0.4 }
        eq(ten.code, "ACTION_TIMEOUT"); eq(ten.data.matched, false); eq(ten.data.count, 3)
        eq(ten.data.equals, 10); has(ten.msg, "matched 3 elements")
        bad(page:wait_for_count{ selector = "li" }, "min", "no bound")
        bad(page:wait_for_count{ selector = "li", min = 5, max = 2 }, "min", "bounds that never hold")
        bad(page:wait_for_count{ selector = "li", min = 1.5 }, "min", "a fraction")
        bad(page:wait_for_count{ min = 1 }, "selector", "missing selector")
    "##);
}

#[test]
fn wait_for_element_looks_into_a_cross_site_frame() {
    run(r##"
        page:navigate{ url = A .. "/late_frames.html" }:unwrap()
        local f = page:wait_for_element{ selector = "#late-child", frame = "late_child" }
        eq(f.ok, true, tostring(f))
        eq(f.data.element.id, "late-child"); eq(f.data.frame, 1); has(f.data.frameUrl, "late_child.html")
        local byName = page:wait_for_element{ selector = "#late-child", frame = "latechild" }:unwrap()
        eq(byName.frame, 1)
        local main = page:wait_for_element{ selector = "#late-child", timeoutSeconds = 0.3 }
        eq(main.code, "ACTION_TIMEOUT", "the main frame has no such element"); eq(main.data.count, 0)
        local nof = page:wait_for_element{ selector = "p", frame = "nope" }
        eq(nof.code, "INVALID_ARGUMENT"); has(nof.msg, "frames are")
    "##);
}

#[test]
fn wait_for_function_polls_until_truthy() {
    run(r##"
        page:navigate{ url = A .. "/settling.html" }:unwrap()
        -- The clock starts at the first look, not at an earlier command whose capture may
        -- take longer than a page timer on a loaded machine.
        local r = page:wait_for_function{
            expression = "(window.t0 ??= Date.now(), Date.now() - window.t0 >= 300 ? 42 : 0)" }
        eq(r.ok, true, tostring(r)); eq(r.data.result, 42); assert(r.data.polls >= 2, "polled")
        assert(r.data.waitedMs >= 290, "waited " .. r.data.waitedMs)
        js("reveal()")
        -- It throws until #late exists, then is false until it is shown.
        local f = page:wait_for_function{ expression = "() => document.querySelector('#late').offsetHeight > 0" }
        eq(f.ok, true, tostring(f)); eq(f.data.result, true)
        assert(js("window.shownAt") ~= nil)
        -- 1 s: room for two looks on a loaded machine (0.4 s flaked under the full suite).
        local never = page:wait_for_function{ expression = "window.never", timeoutSeconds = 1 }
        eq(never.code, "ACTION_TIMEOUT"); eq(never.data.lastResult, nil); assert(never.data.polls >= 2)
        local thr = page:wait_for_function{ expression = "missing.value", timeoutSeconds = 0.3 }
        eq(thr.code, "ACTION_TIMEOUT"); has(thr.data.lastError, "missing is not defined")
        has(thr.msg, "it last threw")
        bad(page:wait_for_function{ expression = "((" }, "expression", "does not compile")
        bad(page:wait_for_function{}, "expression", "missing expression")
    "##);
}

#[test]
fn a_wait_on_a_busy_page_stays_within_its_bound() {
    run(r##"
        page:navigate{ url = A .. "/settling.html" }:unwrap()
        -- The spin starts after the screenshot that follows execute_js (the next command
        -- waits for it), so what is timed is the wait alone.
        js("busySoon(4000, 600)")
        browser.sleep(900)
        local t0 = browser.clock()
        local r = page:wait_for_text{ text = "never there", timeoutSeconds = 0.8 }
        local took = browser.clock() - t0
        eq(r.code, "ACTION_TIMEOUT", tostring(r)); eq(r.data.pageUnresponsive, true)
        has(r.msg, "did not answer")
        assert(took < 2.3, "within its bound (plus the page context's 0.8 s), not the 4 s spin: " .. took)
        local t2 = browser.clock()
        local f = page:wait_for_function{ expression = "window.never", timeoutSeconds = 0.5 }
        eq(f.code, "ACTION_TIMEOUT", tostring(f)); eq(f.data.pageUnresponsive, true)
        assert(browser.clock() - t2 < 2, "the function wait keeps its bound too")
        -- The URL comes from the browser, which answers while the page spins.
        local t1 = browser.clock()
        local u = page:wait_for_url{ url = "**/settling.html", timeoutSeconds = 1 }
        eq(u.ok, true, tostring(u)); assert(browser.clock() - t1 < 1.5)
        -- Once the page is back, waits work again.
        page:wait_for_text{ text = "Results", timeoutSeconds = 10 }:unwrap()
    "##);
}

#[test]
fn closing_the_task_cancels_a_running_wait() {
    run(r##"
        page:navigate{ url = A .. "/settling.html" }:unwrap()
        local w = browser.spawn(function()
          return page:wait_for_text{ text = "never there", timeoutSeconds = 30 }
        end)
        browser.sleep(300)
        local t0 = browser.clock()
        page:close()
        local r = w:join()
        eq(r.ok, false); eq(r.code, "TASK_NOT_FOUND", tostring(r))
        assert(browser.clock() - t0 < 3, "cancelled at once")
    "##);
}
