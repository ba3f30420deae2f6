//! Tabs (`get_tabs`, `new_tab`, `switch_tab`, `switch_tab_by_url`, `close_tab`,
//! `close_other_tabs`, `bring_to_front`): what the task's list and the pages say afterwards,
//! the receipts, isolation between tasks, and bad input that touches nothing.

use crate::support::harness::lua;

const HELPERS: &str = r#"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function urls(t)
  local out = {}
  for _, x in ipairs(t:get_tabs():unwrap().tabs) do out[#out + 1] = x.url end
  return table.concat(out, " ")
end
local function current(t)
  for _, x in ipairs(t:get_tabs():unwrap().tabs) do if x.current then return x.index end end
end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn new_tab_opens_a_current_tab_of_the_task_and_switching_goes_back() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:get_browser_state{}:unwrap()
        local n = page:new_tab{ url = A .. "/second.html" }
        eq(n.ok, true, tostring(n))
        eq(n.data.pageIndex, 1); eq(n.data.url, A .. "/second.html")
        eq(n.data.tabCountBefore, 1); eq(n.data.tabCountAfter, 2); eq(n.data.switchedToNewTab, true)
        assert(n.data.seq, "auto-capture after new_tab")
        local t = page:get_tabs():unwrap().tabs
        eq(#t, 2); eq(t[1].index, 0); eq(t[1].url, A .. "/basic.html"); eq(t[1].title, "Basic")
        eq(t[1].current, false); eq(t[2].current, true); eq(t[2].title, "Second")
        eq(page:get_title().data.title, "Second", "commands go to the new tab")
        -- The snapshot belonged to the first tab.
        eq(page:click_element_by_index{ index = 0 }.code, "STALE_ELEMENT")

        local s = page:switch_tab{ pageIndex = 0 }
        eq(s.ok, true, tostring(s)); eq(s.data.pageIndex, 0); eq(s.data.previousIndex, 1)
        eq(s.data.url, A .. "/basic.html"); eq(s.data.title, "Basic")
        eq(page:get_title().data.title, "Basic"); eq(current(page), 0)

        -- A blank new tab.
        local b = page:new_tab{}:unwrap()
        eq(b.pageIndex, 2); eq(b.url, "about:blank"); eq(current(page), 2)
    "#);
}

#[test]
fn switching_drops_the_snapshot_and_clicks_land_in_the_switched_tab() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:new_tab{ url = A .. "/trusted_counter.html" }:unwrap()
        page:switch_tab{ pageIndex = 0 }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local btn
        for _, el in ipairs(s.elements) do if el.id == "btn" then btn = el.index end end
        page:switch_tab{ pageIndex = 1 }:unwrap()
        eq(page:click_element_by_index{ index = btn }.code, "STALE_ELEMENT", "indices belong to one page")
        -- A real click in the tab that was in the background lands.
        local c = page:mouse_click{ x = 160, y = 120 }:unwrap()
        eq(c.changed, true); eq(js("window.trusted"), 1)
        page:switch_tab{ pageIndex = 0 }:unwrap()
        page:get_browser_state{}:unwrap()
        eq(page:click_element_by_index{ index = btn }:unwrap().changed, true)
        eq(js("window.clicks"), 1)
    "#);
}

#[test]
fn switch_tab_by_url_matches_substring_then_glob() {
    run(r#"
        page:navigate{ url = A .. "/basic.html?from=one" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        page:new_tab{ url = A .. "/trusted_counter.html#x" }:unwrap()
        local r = page:switch_tab_by_url{ url = "basic.html" }
        eq(r.ok, true, tostring(r)); eq(r.data.pageIndex, 0); eq(r.data.title, "Basic")
        eq(r.data.url, A .. "/basic.html?from=one"); eq(current(page), 0)
        -- A glob whose `*` crosses `/`, trailing content allowed.
        r = page:switch_tab_by_url{ url = "http://*/trusted_*.html" }:unwrap()
        eq(r.pageIndex, 2); eq(page:get_title().data.title, "Trusted counter")
        r = page:switch_tab_by_url{ url = "**/second*" }:unwrap()
        eq(r.pageIndex, 1)
        -- No match: the tabs are listed, nothing changes.
        local none = page:switch_tab_by_url{ url = "**/nowhere.html" }
        eq(none.ok, false); eq(none.code, "NOT_FOUND"); eq(none.started, false, "nothing acted"); has(none.msg, A .. "/second.html")
        eq(#none.data.tabs, 3); eq(current(page), 1)
        eq(page:switch_tab_by_url{}.code, "INVALID_ARGUMENT")
    "#);
}

#[test]
fn close_tab_keeps_or_moves_the_current_tab_and_always_leaves_one() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        page:new_tab{ url = A .. "/trusted_counter.html" }:unwrap()
        page:switch_tab{ pageIndex = 1 }:unwrap()
        -- Closing another tab keeps the current one current (its index moves).
        local c = page:close_tab{ pageIndex = 0 }
        eq(c.ok, true, tostring(c)); eq(c.data.closedUrl, A .. "/basic.html")
        eq(c.data.pageIndex, 0); eq(c.data.tabCount, 2); eq(c.data.openedFresh, false)
        eq(page:get_title().data.title, "Second")
        eq(urls(page), A .. "/second.html " .. A .. "/trusted_counter.html")
        -- Closing the current tab makes the first remaining one current.
        page:switch_tab{ pageIndex = 1 }:unwrap()
        c = page:close_tab{ pageIndex = 1 }:unwrap()
        eq(c.pageIndex, 0); eq(c.tabCount, 1); eq(page:get_title().data.title, "Second")
        -- Closing the last one leaves a fresh blank tab.
        c = page:close_tab{ pageIndex = 0 }:unwrap()
        eq(c.openedFresh, true); eq(c.tabCount, 1); eq(c.url, "about:blank")
        eq(urls(page), "about:blank")
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        eq(page:get_title().data.title, "Basic", "the fresh tab works")
    "#);
}

#[test]
fn close_other_tabs_and_bring_to_front() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        page:new_tab{ url = A .. "/trusted_counter.html" }:unwrap()
        -- bring_to_front raises a tab but the current one stays current.
        local f = page:bring_to_front{ pageIndex = 0 }
        eq(f.ok, true, tostring(f)); eq(f.data.pageIndex, 0); eq(f.data.url, A .. "/basic.html")
        eq(f.data.currentIndex, 2); eq(current(page), 2)
        eq(page:get_title().data.title, "Trusted counter")
        eq(page:bring_to_front{}:unwrap().pageIndex, 2)

        local o = page:close_other_tabs{ pageIndex = 1 }
        eq(o.ok, true, tostring(o)); eq(o.data.closed, 2); eq(o.data.remaining, 1)
        eq(o.data.pageIndex, 0); eq(o.data.url, A .. "/second.html")
        eq(urls(page), A .. "/second.html"); eq(page:get_title().data.title, "Second")
        -- Absent pageIndex keeps the current tab.
        page:new_tab{ url = A .. "/basic.html" }:unwrap()
        o = page:close_other_tabs{}:unwrap()
        eq(o.closed, 1); eq(o.url, A .. "/basic.html"); eq(urls(page), A .. "/basic.html")
    "#);
}

#[test]
fn a_task_never_sees_or_closes_another_tasks_tabs() {
    run(r#"
        local other = browser.start{}
        other:navigate{ url = A .. "/second.html?other" }:unwrap()
        other:new_tab{ url = A .. "/trusted_counter.html?other" }:unwrap()
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        eq(#page:get_tabs():unwrap().tabs, 2); eq(#other:get_tabs():unwrap().tabs, 2)
        eq(page:switch_tab_by_url{ url = "?other" }.code, "NOT_FOUND", "the other task's tabs are not ours")
        eq(page:switch_tab{ pageIndex = 2 }.code, "INVALID_ARGUMENT")
        eq(page:close_other_tabs{}:unwrap().closed, 1)
        eq(#page:get_tabs():unwrap().tabs, 1)
        eq(urls(other), A .. "/second.html?other " .. A .. "/trusted_counter.html?other", "untouched")
        eq(other:get_title():unwrap().title, "Trusted counter")
        other:close()
    "#);
}

#[test]
fn popups_are_tabs_of_their_task_and_a_tab_its_page_closed_leaves_the_list() {
    run(r#"
        page:navigate{ url = A .. "/popups.html?tabs" }:unwrap()
        js("window.open('second.html', '_blank'); return 1")
        local deadline = os.time() + 10
        while #page:get_tabs():unwrap().tabs < 2 and os.time() < deadline do end
        local t = page:get_tabs():unwrap().tabs
        eq(#t, 2); eq(t[1].current, true, "a popup does not become current by itself")
        page:switch_tab_by_url{ url = "second.html" }:unwrap()
        eq(page:get_title().data.title, "Second")
        -- The popup closes itself: it leaves the list and the opener is current again.
        page:execute_js{ body = "setTimeout(() => window.close(), 0); return 1" }:unwrap()
        deadline = os.time() + 10
        while #page:get_tabs():unwrap().tabs > 1 and os.time() < deadline do end
        eq(#page:get_tabs():unwrap().tabs, 1); eq(page:get_title().data.title, "Popups")
    "#);
}

#[test]
fn bad_tab_arguments_fail_at_once_and_touch_nothing() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:new_tab{ url = A .. "/second.html" }:unwrap()
        -- `index` where `pageIndex` is meant: the hint names the confusion.
        local r = page:switch_tab{ index = 0 }
        eq(r.ok, false); eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false)
        has(r.msg, "this parameter is `pageIndex`")
        r = page:close_tab{ index = 0 }
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "you sent `index`")
        r = page:close_other_tabs{ index = 0 }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); has(r.msg, "this parameter is `pageIndex`")
        eq(r.data.unknownParams[1], "index"); has(r.data.unknownParamNote, "did you mean `pageIndex`?")
        eq(page:bring_to_front{ index = 0 }.code, "INVALID_ARGUMENT")
        eq(#page:get_tabs():unwrap().tabs, 2, "nothing was closed"); eq(current(page), 1)
        -- Out of range, negative, mistyped.
        r = page:switch_tab{ pageIndex = 5 }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); has(r.msg, "legal range 0..=1")
        eq(page:close_tab{ pageIndex = 2 }.code, "INVALID_ARGUMENT")
        eq(page:close_tab{ pageIndex = -1 }.code, "INVALID_ARGUMENT")
        eq(page:switch_tab{ pageIndex = "one" }.code, "INVALID_ARGUMENT")
        eq(page:new_tab{ url = "not a url" }.code, "INVALID_ARGUMENT")
        eq(#page:get_tabs():unwrap().tabs, 2, "still two tabs"); eq(current(page), 1)
        -- A failed load leaves the new tab open, and the failure says so.
        local f = page:new_tab{ url = "http://127.0.0.1:1/" }
        eq(f.ok, false); eq(f.data.tabOpened, true); eq(f.data.pageIndex, 2); eq(f.retryable, false)
        eq(#page:get_tabs():unwrap().tabs, 3)
    "#);
}

/// Issue 21 §5: a popup's first request carries the task's settings (here its header): the
/// popup is held before it loads until they are on it, so the site sees no unauthenticated hit.
#[test]
fn a_popup_s_first_request_carries_the_task_s_header() {
    let key = format!("popup-{}", std::process::id());
    run(&format!(
        r#"
        page:navigate{{ url = A .. "/basic.html" }}:unwrap()
        page:set_headers{{ headersJson = '{{"X-Task":"yes"}}' }}:unwrap()
        local t0 = browser.clock()
        js("window.open('/guarded?key={key}', '_blank'); return 1")
        local deadline = os.time() + 10
        while #page:get_tabs():unwrap().tabs < 2 and os.time() < deadline do end
        eq(#page:get_tabs():unwrap().tabs, 2, "the popup is a tab of the task")
        page:switch_tab_by_url{{ url = "guarded" }}:unwrap()
        page:wait_for_load{{}}:unwrap()
        eq(page:get_title().data.title, "in", "the popup's document was let in")
        assert(browser.clock() - t0 < 4, "held only while its settings went on, not the fallback")
        -- Routes too: the popup's document itself is answered by the task's mock.
        page:switch_tab{{ pageIndex = 0 }}:unwrap()
        page:route{{ urlPattern = "**/popup-mocked*", action = "mock", contentType = "text/html",
                     body = "<title>mocked</title>from the route" }}:unwrap()
        js("window.open('/popup-mocked', '_blank'); return 1")
        deadline = os.time() + 10
        while #page:get_tabs():unwrap().tabs < 3 and os.time() < deadline do end
        page:switch_tab_by_url{{ url = "popup-mocked" }}:unwrap()
        page:wait_for_load{{}}:unwrap()
        eq(page:get_title().data.title, "mocked", "the popup's first request was routed")
    "#
    ));
    let fixtures = &crate::support::harness::harness().fixtures;
    assert_eq!(
        fixtures.count(&format!("guarded-without-{key}")),
        0,
        "no hit without the header"
    );
    assert_eq!(
        fixtures.count(&format!("guarded-with-{key}")),
        1,
        "one hit, with it"
    );
}
