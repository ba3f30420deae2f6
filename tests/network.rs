//! Console and network recording (`get_console_logs`, `clear_console_logs`, `get_requests`,
//! `get_response_body`, `wait_for_response`) on `network.html`: what the page logged and
//! fetched, the rings' caps and dropped counts, bodies read after the page navigated away, the
//! look-back window and bad input.

use crate::support::harness::lua;

const HELPERS: &str = r#"
local function js(expr) return page:execute_js{ body = expr }:unwrap().result end
-- Re-reads until f() is truthy (each look is a round trip to the page): events arrive on their
-- own schedule.
local function until_(f, what)
  for _ = 1, 100 do
    local v = f()
    if v then return v end
    js("1")
  end
  error("never: " .. what)
end
local function out() return js("document.getElementById('out').textContent") end
local function invalid(r, param, what)
  eq(r.ok, false, what); eq(r.code, "INVALID_ARGUMENT", what); eq(r.started, false, what)
  has(r.msg, param, what)
end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn console_messages_and_page_errors_are_captured_cleared_and_capped() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        js("logs(2); console.warn('careful', 1, {a: 1}); boom()")
        local c = until_(function()
          local c = page:get_console_logs():unwrap()
          return #c.errors > 0 and c or nil
        end, "the page error")
        local all = table.concat(c.logs, "\n")
        has(all, "info: network page ready"); has(all, "log: line 0"); has(all, "log: line 1")
        has(all, "warning: careful 1")
        has(c.errors[1], "boom 7", "the uncaught error's message")
        eq(c.logsDropped, 0); eq(c.errorsDropped, 0); eq(c.cap.logs, 200)
        local cleared = page:clear_console_logs():unwrap()
        assert(cleared.clearedLogs >= 4, "cleared " .. cleared.clearedLogs)
        eq(cleared.clearedErrors, 1)
        local empty = page:get_console_logs():unwrap()
        eq(#empty.logs, 0, "cleared logs"); eq(#empty.errors, 0, "cleared errors")
        -- Over the cap: the oldest go and are counted.
        js("logs(205)")
        local full = until_(function()
          local c = page:get_console_logs():unwrap()
          return c.logs[#c.logs] == "log: line 204" and c or nil
        end, "the last line")
        eq(#full.logs, 200, "the ring holds 200")
        eq(full.logsDropped, 5, "the five oldest were dropped and counted")
        eq(full.logs[1], "log: line 5", "the oldest kept")
    "#);
}

#[test]
fn requests_are_recorded_filtered_and_their_post_data_capped() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        js("get('net_data.js')")
        until_(function() return out():find("payload", 1, true) end, "the fetch")
        eq(js("post('/post', 5000)"), 200)
        local all = until_(function()
          local r = page:get_requests{}:unwrap()
          for _, q in ipairs(r.requests) do
            if q.url:find("/post", 1, true) and q.status then return r end
          end
        end, "the POST's response")
        assert(all.recordedSince > 1.7e12 and all.recordedSince <= all.requests[1].requestedAt,
          "recordedSince")
        eq(type(all.inflight), "number"); eq(all.total, all.count)
        local docs = page:get_requests{ resourceType = "Document" }:unwrap()
        eq(docs.resourceType, "document", "echo, lower case")
        eq(docs.count, 1); has(docs.requests[1].url, "/network.html"); eq(docs.requests[1].status, 200)
        local f = page:get_requests{ filter = "net_data", resourceType = "FETCH" }:unwrap()
        eq(f.count, 1, "one fetch of net_data"); eq(f.filter, "net_data")
        local q = f.requests[1]
        eq(q.method, "GET"); eq(q.status, 200); eq(q.resourceType, "fetch")
        assert(q.respondedAt >= q.requestedAt and q.finishedAt >= q.respondedAt, "times")
        eq(q.correlationMissed, false); eq(type(q.requestId), "string")
        local p = page:get_requests{ filter = "/post" }:unwrap().requests[1]
        eq(p.method, "POST"); eq(p.postDataLength, 5000); eq(#p.postData, 4000)
        eq(p.postDataTruncated, true)
        local newest = page:get_requests{ limit = 1 }:unwrap()
        eq(newest.count, 1); has(newest.requests[1].url, "/post", "limit keeps the newest")
        local none = page:get_requests{ since = all.requests[#all.requests].requestedAt + 60000 }:unwrap()
        eq(none.count, 0); has(none.note, "recording starts")
        invalid(page:get_requests{ limit = "x" }, "limit", "a mistyped limit")
    "#);
}

#[test]
fn a_response_body_is_read_after_the_page_navigated_away() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        js("get('net_data.js')")
        until_(function() return out():find("payload", 1, true) end, "the fetch")
        local id = page:get_requests{ filter = "net_data" }:unwrap().requests[1].requestId
        -- The copy is made when the response arrives, a moment after the page has it: a read
        -- right away waits for it (issue 36 §2) instead of answering "still being copied".
        local first = page:get_response_body{ filter = "net_data" }:unwrap()
        eq(first.bodyAvailable, true, "the copy in flight was waited for"); has(first.body, "payload-42")
        -- The default is the latest match.
        js("get('net_data.js?again=1')")
        -- Its response, not only its request: the latest *response* is what is read.
        until_(function()
          local r = page:get_requests{ filter = "again=1" }:unwrap()
          return r.count == 1 and r.requests[1].status == 200
        end, "the second fetch's response")
        local latest = page:get_response_body{ filter = "net_data" }:unwrap()
        has(latest.url, "again=1"); has(latest.body, "payload-42")
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local b = page:get_response_body{ filter = "net_data", index = 0 }:unwrap()
        eq(b.bodyFromCache, true, "read from the copy")
        has(b.body, "payload-42"); eq(b.status, 200); eq(b.requestId, id)
        eq(b.bodyAvailable, true); eq(b.truncated, false); eq(b.bodyLength, #b.body)
        has(b.url, "/net_data.js"); eq(b.request.method, "GET")
        local cut = page:get_response_body{ requestId = id, maxChars = 5 }:unwrap()
        eq(cut.truncated, true); has(cut.body, "…[truncated]"); eq(cut.bodyLength, b.bodyLength)
        local missing = page:get_response_body{ requestId = "nope" }
        eq(missing.ok, false); has(missing.msg, "not in the request log")
        local range = page:get_response_body{ filter = "net_data", index = 3 }
        eq(range.ok, false); has(range.msg, "2 responses match")
        local nomatch = page:get_response_body{ filter = "no-such-url" }
        eq(nomatch.ok, false); has(nomatch.msg, "no recorded response matches")
        invalid(page:get_response_body{ index = "first" }, "index", "a mistyped index")
    "#);
}

#[test]
fn wait_for_response_looks_back_then_waits() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        js("get('net_data.js')")
        until_(function() return out():find("payload", 1, true) end, "the fetch")
        local back = page:wait_for_response{ urlPattern = "**/net_data.js" }:unwrap()
        eq(back.fromLookBack, true); assert(back.ageMs >= 0, "ageMs")
        has(back.body, "payload-42"); eq(back.status, 200); eq(back.bodyFromCache, true)
        -- lookBackSeconds = 0: only a new response counts. The request is sent 2 s later, so
        -- the wait is in place first even on a loaded machine (300 ms was not always enough).
        js("setTimeout(() => xhr('net_data.js?second'), 2000)")
        local fresh = page:wait_for_response{ urlPattern = "net_data.js?second",
          lookBackSeconds = 0, timeoutSeconds = 10 }:unwrap()
        eq(fresh.fromLookBack, false); eq(fresh.ageMs, 0)
        has(fresh.body, "payload-42"); eq(fresh.request.resourceType, "xhr")
        local late = page:wait_for_response{ urlPattern = "**/never*", timeoutSeconds = 0.3 }
        eq(late.ok, false); eq(late.code, "ACTION_TIMEOUT"); has(late.msg, "timed out")
        invalid(page:wait_for_response{}, "urlPattern", "no pattern")
        invalid(page:wait_for_response{ urlPattern = "x", timeoutSeconds = -1 }, "timeoutSeconds",
          "a negative timeout")
    "#);
}

#[test]
fn a_mocked_route_is_rendered_and_an_aborted_one_fails() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        local m = page:route{ urlPattern = "**/api/items*", action = "mock",
          body = '{"items":["mocked-body"]}', status = 201, contentType = "application/json" }:unwrap()
        eq(m.urlPattern, "**/api/items*"); eq(m.action, "mock"); eq(m.updated, false); eq(m.tabs, 1)
        js("get('/api/items?page=1')")
        until_(function() return out():find("mocked-body", 1, true) end, "the mocked body")
        eq(out(), '{"items":["mocked-body"]}', "the page renders the mocked body")
        eq(js("fetch('/api/items').then(r => r.status + ' ' + r.headers.get('content-type'))"),
          "201 application/json", "status and content type")
        -- The glob is the engine's: '*' does not cross '/'.
        js("get('/api/items/deeper/x')")
        until_(function() return out():find("not found", 1, true) end, "the unmocked request")
        -- Abort (the default action): the page sees a network failure.
        local a = page:route{ urlPattern = "**/net_data.js" }:unwrap()
        eq(a.action, "abort")
        js("get('net_data.js')")
        until_(function() return out():find("failed:", 1, true) end, "the aborted fetch")
        has(out(), "Failed to fetch")
        -- Issue 21 §6: once the page has seen the failure, so has the request log.
        local r = page:get_requests{ filter = "net_data" }:unwrap().requests
        local failed = r[#r]
        assert(failed and failed.failure, "the failure is recorded when the page saw it")
        has(failed.failure, "ERR_FAILED")
        -- Resume: re-routing the pattern updates its rule; the request goes through.
        local r = page:route{ urlPattern = "**/net_data.js", action = "resume" }:unwrap()
        eq(r.updated, true); eq(#r.routes, 2, "still two rules")
        js("get('net_data.js')")
        until_(function() return out():find("payload-42", 1, true) end, "the resumed fetch")
        -- Unroute restores: the mocked URL reaches the server again (404 from the fixtures).
        local u = page:unroute{ urlPattern = "**/api/items*" }:unwrap()
        eq(u.removed, 1); eq(u.hits, 2, "the mock answered two requests")
        js("get('/api/items?page=1')")
        until_(function() return out():find("not found", 1, true) end, "the unrouted request")
        eq(page:unroute{}:unwrap().removed, 1, "absent pattern: all")
        eq(#page:unroute{}:unwrap().routes, 0)
    "#);
}

#[test]
fn routes_apply_to_tabs_opened_later_and_bad_globs_are_refused() {
    run(r#"
        page:navigate{ url = A .. "/network.html" }:unwrap()
        page:route{ urlPattern = "**/api/later", action = "mock", body = "later-mock",
          contentType = "text/plain" }:unwrap()
        page:new_tab{ url = A .. "/network.html" }:unwrap()
        js("get('/api/later')")
        until_(function() return out():find("later-mock", 1, true) end, "the new tab's mock")
        invalid(page:route{ urlPattern = "**/{a,b" }, "urlPattern", "an unclosed group")
        invalid(page:route{}, "urlPattern", "no pattern")
        invalid(page:route{ urlPattern = "**", action = "block" }, "action", "an unknown action")
        invalid(page:route{ urlPattern = "**", action = "mock", status = 42 }, "status",
          "a status out of range")
        eq(page:unroute{}:unwrap().removed, 1, "the refused routes added nothing")
    "#);
}

#[test]
fn requests_of_an_out_of_process_frame_are_recorded_with_their_bodies() {
    run(r#"
        page:navigate{ url = A .. "/net_frame.html" }:unwrap()
        local q = until_(function()
          local r = page:get_requests{ filter = "from=frame" }:unwrap().requests[1]
          return r and r.finishedAt and r or nil
        end, "the frame's fetch")
        has(q.url, B, "the frame's own site"); eq(q.status, 200); eq(q.resourceType, "fetch")
        local b = until_(function()
          local r = page:get_response_body{ requestId = q.requestId }
          return r.ok and r.data.bodyFromCache and r.data or nil
        end, "the frame's body").body
        has(b, "payload-42")
        local w = page:wait_for_response{ urlPattern = "**/net_data.js?from=frame" }:unwrap()
        eq(w.fromLookBack, true); has(w.body, "payload-42")
    "#);
}

#[test]
fn routes_and_credentials_share_one_task() {
    // One owner of the Fetch domain: the challenge is answered and the mock served, both on
    // the same tab, whichever was set first.
    run(r#"
        page:set_credentials{ username = "net", password = "pw" }:unwrap()
        page:route{ urlPattern = "**/api/items*", action = "mock", body = "mock-with-auth",
          contentType = "text/plain" }:unwrap()
        local r = page:navigate{ url = A .. "/auth-net" }:unwrap()
        eq(r.status, 200); eq(page:get_title().data.title, "private")
        eq(js("return await (await fetch('/api/items')).text()"), "mock-with-auth")
        -- Dropping every route keeps the credentials answering (Fetch stays on for them).
        eq(page:unroute{}:unwrap().removed, 1)
        r = page:navigate{ url = B .. "/auth-net" }:unwrap()
        eq(r.status, 200, "credentials still answered"); eq(page:get_title().data.title, "private")
        eq(js("return (await fetch('/api/items')).status"), 404, "the mock is gone")
    "#);
}

#[test]
fn routes_reach_out_of_process_frames() {
    run(r#"
        page:route{ urlPattern = "**/net_data.js?from=frame", action = "mock",
          body = "frame-mock", contentType = "text/plain" }:unwrap()
        page:navigate{ url = A .. "/net_frame.html" }:unwrap()
        local text = until_(function()
          local t = page:execute_js{ body = "document.getElementById('out').textContent",
            frame = "localhost" }.data.result
          return t ~= "child" and t or nil
        end, "the frame's fetch")
        eq(text, "frame-mock", "the cross-site frame renders the mocked body")
        eq(page:unroute{ urlPattern = "**/net_data.js?from=frame" }:unwrap().hits, 1)
    "#);
}

/// Issue 21 §3: a fetch whose body the page never reads is never reported finished by
/// Chromium; the wait answers when the whole body is in (its Content-Length says so), with it.
#[test]
fn wait_for_response_answers_an_unread_fetch_at_once_with_its_body() {
    lua(r#"
        page:navigate{ url = A .. "/empty.html" }:unwrap()
        page:execute_js{ body = "() => { fetch('/slow-text?ms=300'); }" }:unwrap()
        local t = browser.clock()
        local r = page:wait_for_response{ urlPattern = "**/slow-text*", timeoutSeconds = 10 }
        local took = browser.clock() - t
        eq(r.ok, true, tostring(r)); eq(r.data.status, 200)
        eq(r.data.bodyAvailable, true, tostring(r)); eq(r.data.body, "slow done")
        eq(r.data.bodyError, nil)
        -- Before: the whole timeout, and no body (a loaded machine leaves room below it).
        assert(took < 5, "answered when the body was in, not at the timeout: " .. took .. " s")
        -- Kept: get_response_body answers it too.
        local again = page:get_response_body{ requestId = r.data.requestId }:unwrap()
        eq(again.body, "slow done")
        -- The fetch starts after the wait began (1 s later: room for a loaded machine to start
        -- the wait; without a look back, a response before it would not count).
        page:execute_js{ body = "() => { setTimeout(() => fetch('/slow-text?ms=300&late=1'), 1000); }" }:unwrap()
        t = browser.clock()
        local late = page:wait_for_response{ urlPattern = "**/slow-text?ms=300&late=1", timeoutSeconds = 10,
                                              lookBackSeconds = 0 }
        took = browser.clock() - t
        eq(late.ok, true, tostring(late)); eq(late.data.body, "slow done")
        assert(took >= 0.3 and took < 6, "after the response, well before the timeout: " .. took .. " s")
    "#);
}
