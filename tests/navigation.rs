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
