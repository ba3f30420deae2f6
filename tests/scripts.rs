//! execute_js: forms, vars, frames, exceptions, budgets.

use crate::support::harness::lua;

#[test]
fn script_forms_and_vars() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        eq(page:execute_js{ body = "document.title" }.data.result, "Basic", "expression")
        eq(page:execute_js{ body = "() => 6 * 7" }.data.result, 42, "function")
        eq(page:execute_js{ body = "const a = 2;\nreturn a + 3" }.data.result, 5, "statements")
        eq(page:execute_js{ body = "async () => { await new Promise(r => setTimeout(r, 50)); return 'late' }" }.data.result, "late", "awaited")
        eq(page:execute_js{ body = "new Promise(r => setTimeout(() => r('p'), 20))" }.data.result, "p", "promise expression")
        local v = page:execute_js{ body = 'return ["{{name}}", {{n}} + 1]', vars = { name = "x\"y", n = 4 } }
        eq(v.data.result[1], 'x"y', "quoted var")
        eq(v.data.result[2], 5, "bare var")
        eq(#v.data.varsApplied, 2, "varsApplied")
        local obj = page:execute_js{ body = "return {a: [1, 2], b: null, c: 'z'}" }.data.result
        eq(obj.a[2], 2); eq(obj.b, nil); eq(obj.c, "z")
        has(page:execute_js{ body = "document.body" }.data.result, "ref:", "nodes come back as refs")
        eq(page:execute_js{ body = "undefined" }.data.result, nil, "undefined is nil")
    "#);
}

#[test]
fn exceptions_fail_with_details() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local r = page:execute_js{ body = "null.x" }
        eq(r.ok, false); eq(r.code, "ACTION_FAILED")
        has(r.msg, "executing JavaScript failed: TypeError")
        eq(r.data.error.name, "TypeError")
        eq(r.started, true)
        local t = page:execute_js{ body = "[1, 2" }
        eq(t.ok, false)
        has(t.data.hint, "truncated")
        eq(t.data.scriptLength, 5)
        eq(page:get_title().data.title, "Basic", "page still fine")
    "#);
}

#[test]
fn endless_loops_hit_the_budget_and_the_page_recovers() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local t0 = browser.clock()
        local r = page:execute_js{ body = "for (;;) {}", timeoutMs = 300 }
        eq(r.code, "EVAL_TIMEOUT", "sync loop")
        eq(r.retryable, false); eq(r.started, true)
        eq(r.data.outcomeUnknown, true)
        assert(browser.clock() - t0 < 5, "bounded")
        local p = page:execute_js{ body = "new Promise(() => {})", timeoutMs = 200 }
        eq(p.code, "EVAL_TIMEOUT", "never-settling promise")
        eq(page:execute_js{ body = "1 + 1" }.data.result, 2, "page works afterwards")
        eq(page:get_title().data.title, "Basic")
    "#);
}

#[test]
fn alerts_do_not_block_scripts() {
    lua(r#"
        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        local r = page:execute_js{ body = "alert('x'); return confirm('y')" }
        eq(r.ok, true, "answered in the background")
        eq(r.data.result, true, "confirm accepted by default")
        eq(page:get_title().data.title, "Dialog")
    "#);
}

#[test]
fn a_script_that_navigates_away_is_not_resent() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local r = page:execute_js{ body = "location.href = '/second.html'; await new Promise(r => setTimeout(r, 3000)); return 1" }
        eq(r.ok, false, tostring(r))
        eq(r.started, true)
        eq(r.retryable, false, "execute_js is not retry-safe: it may have acted")
        eq(r.data.retryAfterMs, nil)
        local u = page:execute_js{ body = "π" }
        eq(u.code, "ACTION_FAILED", "a non-ASCII script start is an ordinary script error")
        has(u.msg, "ReferenceError")
    "#);
}
