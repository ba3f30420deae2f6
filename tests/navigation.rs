//! Navigation and page identity: navigate/go_to_url, history, reload, get_url, get_title.

use crate::support::harness::lua;

#[test]
fn navigate_reports_status_and_title() {
    lua(r#"
        local r = page:navigate{ url = A .. "/basic.html" }
        eq(r.ok, true, "navigate ok")
        eq(r.data.status, 200, "status")
        eq(r.data.url, A .. "/basic.html", "url")
        eq(r.method, "navigate", "method keeps the alias")
        eq(page:get_title().data.title, "Basic", "title")
        eq(page:get_url().data.url, A .. "/basic.html", "get_url")
        local g = page:go_to_url{ url = A .. "/status/404" }
        eq(g.ok, true, "a 404 page still loads")
        eq(g.data.status, 404, "status of the 404 page")
        eq(page:get_title().data.title, "status 404", "title of the 404 page")
    "#);
}

#[test]
fn redirects_end_on_the_target() {
    lua(r#"
        local r = page:go_to_url{ url = A .. "/redirect?to=/second.html" }
        eq(r.ok, true)
        eq(r.data.status, 200, "status of the final document")
        eq(page:get_url().data.url, A .. "/second.html", "final url")
    "#);
}

#[test]
fn history_and_reload() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:navigate{ url = A .. "/second.html" }:unwrap()
        local b = page:go_back()
        eq(b.ok, true, "go_back ok")
        eq(b.data.url, A .. "/basic.html", "back url")
        eq(page:get_title().data.title, "Basic", "title after back")
        local f = page:go_forward()
        eq(f.ok, true, "go_forward ok")
        eq(page:get_title().data.title, "Second", "title after forward")
        local none = page:go_forward()
        eq(none.ok, false, "no forward history")
        has(none.msg, "cannot go forward", "message")
        page:execute_js{ body = "document.title = 'changed'" }
        local r = page:reload()
        eq(r.ok, true, "reload ok")
        eq(r.data.status, 200, "reload status")
        eq(page:get_title().data.title, "Second", "reload restored the title")
    "#);
}

#[test]
fn fresh_task_has_no_back_history() {
    lua(r#"
        local r = page:go_back()
        eq(r.ok, false)
        eq(r.code, "ACTION_FAILED")
        has(r.msg, "cannot go back")
    "#);
}

#[test]
fn bad_urls_are_refused_before_any_navigation() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        for _, bad in ipairs({ "example.com", "ftp://x/", "javascript:alert(1)", "" }) do
          local r = page:navigate{ url = bad }
          eq(r.ok, false, "refused " .. bad)
          eq(r.code, "INVALID_ARGUMENT", "code for " .. bad)
          eq(r.started, false, "not started for " .. bad)
          eq(r.data.param, "url", "names the param")
        end
        eq(page:get_url().data.url, A .. "/basic.html", "page unchanged")
    "#);
}

#[test]
fn unreachable_site_is_network_error() {
    // A port nobody listens on: bind, learn it, release it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    lua(&format!(
        r#"
        local r = page:navigate{{ url = "http://127.0.0.1:{port}/" }}
        eq(r.ok, false)
        eq(r.code, "NETWORK_ERROR")
        eq(r.retryable, true)
        eq(r.data.netError, "ERR_CONNECTION_REFUSED")
        eq(r.data.retryAfterMs, 5000)
    "#
    ));
}

/// Lua helpers for the issue 9 tests: `js` runs a script, `wait_js` polls an expression in the
/// page until it is truthy (3 s deadline) and answers its last value.
const PAGE_HELPERS: &str = r#"
local function js(body) return page:execute_js{ body = body }:unwrap().result end
local function wait_js(expr)
  return js("async () => { const t0 = Date.now(); let v; while (!(v = (" .. expr .. ")) && Date.now() - t0 < 3000) await new Promise(r => setTimeout(r, 10)); return v }")
end
local function index_of(s, id)
  for _, el in ipairs(s.elements) do if el.id == id then return el.index end end
  error("no element #" .. id .. " in the snapshot", 2)
end
"#;

fn run(body: &str) {
    lua(&format!("{PAGE_HELPERS}{body}"));
}

/// Issue 9: navigating to a fragment of the current page changed the URL but answered
/// ACTION_TIMEOUT after 30 s (chromiumoxide waited for a new document's load).
#[test]
fn issue_9_a_fragment_navigation_answers_at_once_and_keeps_the_document() {
    run(r#"
        page:navigate{ url = A .. "/same_document.html" }:unwrap()
        local stamp = js("window.loadStamp")
        local button = index_of(page:get_browser_state{}:unwrap(), "btn")
        local t0 = browser.clock()
        local r = page:navigate{ url = A .. "/same_document.html#foo" }
        local took = browser.clock() - t0
        eq(r.ok, true, tostring(r))
        assert(took < 3, "answered within 3 s, took " .. took .. " s")
        eq(r.data.sameDocument, true, "same document")
        eq(r.data.status, 0, "no response for a fragment")
        eq(r.data.url, A .. "/same_document.html#foo", "url in the receipt")
        eq(page:get_url().data.url, A .. "/same_document.html#foo", "get_url")
        eq(wait_js("document.getElementById('hash').textContent.startsWith('fragment') && document.getElementById('hash').textContent"), "fragment #foo", "the page saw the fragment")
        eq(js("window.loadStamp"), stamp, "the document was not reloaded")
        -- The document stayed, so the indices read before still address its elements.
        local c = page:click_element_by_index{ index = button }
        eq(c.ok, true, tostring(c))
        eq(js("document.getElementById('btn').textContent"), "clicked 1", "the click landed")
        -- The same fragment again is a same-document navigation too.
        t0 = browser.clock()
        local again = page:navigate{ url = A .. "/same_document.html#foo" }
        eq(again.ok, true, tostring(again)); eq(again.data.sameDocument, true)
        assert(browser.clock() - t0 < 3, "the repeated fragment answered within 3 s")
        -- A navigation to another document still reports a real load and drops the indices.
        local other = page:navigate{ url = A .. "/basic.html" }:unwrap()
        eq(other.sameDocument, false); eq(other.status, 200)
        eq(page:click_element_by_index{ index = button }.code, "STALE_ELEMENT", "indices dropped")
    "#);
}

/// Issue 9: the same for a URL the page reached with `history.pushState`. Chromium treats a
/// fragment of it as a same-document navigation; the pushed URL itself is loaded from the server
/// like any other address (measured on Chromium 156), and must not hang either.
#[test]
fn issue_9_a_fragment_of_a_pushed_url_answers_at_once() {
    run(r#"
        page:navigate{ url = A .. "/same_document.html" }:unwrap()
        local stamp = js("window.loadStamp")
        js("history.pushState({}, '', '/pushed/route')")
        local t0 = browser.clock()
        local r = page:navigate{ url = A .. "/pushed/route#step2" }
        eq(r.ok, true, tostring(r))
        assert(browser.clock() - t0 < 3, "answered within 3 s")
        eq(r.data.sameDocument, true)
        eq(r.data.url, A .. "/pushed/route#step2")
        eq(wait_js("document.getElementById('hash').textContent.startsWith('fragment') && document.getElementById('hash').textContent"), "fragment #step2")
        eq(js("window.loadStamp"), stamp, "still the document that pushed the URL")
        js("history.pushState({}, '', '/same_document.html?v=2')")
        t0 = browser.clock()
        local exact = page:navigate{ url = A .. "/same_document.html?v=2" }
        eq(exact.ok, true, tostring(exact))
        assert(browser.clock() - t0 < 3, "the pushed URL itself answered within 3 s")
        eq(exact.data.sameDocument, false, "loaded anew")
        eq(exact.data.status, 200)
        local fresh = js("window.loadStamp")
        assert(fresh ~= stamp, "a new document")
        eq(page:get_title().data.title, "Same document")
    "#);
}

/// Issue 9: a navigation answered `204 No Content` (the browser keeps the old page) failed only
/// after 30 s. Chromium answers `Page.navigate` with `net::ERR_ABORTED` at once.
#[test]
fn issue_9_no_content_fails_at_once_and_the_page_stays() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        js("window.kept = 'yes'")
        for _, target in ipairs({ "/status/204", "/redirect?to=/status/204" }) do
          local t0 = browser.clock()
          local r = page:navigate{ url = A .. target }
          local took = browser.clock() - t0
          eq(r.ok, false, target)
          assert(took < 3, target .. " answered within 3 s, took " .. took .. " s")
          eq(r.code, "NETWORK_ERROR", target)
          eq(r.data.netError, "ERR_ABORTED", target)
          eq(r.data.status, 204, target .. ": the response status")
          eq(r.data.networkErrorPage, false, target .. ": no error page, the old page stays")
          eq(r.data.urlRequested, A .. target)
          eq(r.started, true)
          has(r.msg, "204 No Content")
          eq(page:get_url().data.url, A .. "/basic.html", target .. ": url unchanged")
          eq(page:get_title().data.title, "Basic")
          eq(js("window.kept"), "yes", target .. ": the same document")
        end
        -- The tab still navigates normally afterwards.
        eq(page:navigate{ url = A .. "/second.html" }:unwrap().status, 200)
    "#);
}
