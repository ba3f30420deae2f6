//! Hostile input at every door (issue 35 §5): what hostile input found, each pinned by a
//! regression test.

use super::support::harness::lua;

/// `core.exec` took the method as a Rust `String`: a name that is not UTF-8 raised mlua's
/// conversion error (a plain string) instead of answering. It names no command.
#[test]
fn regression_a_method_name_that_is_not_utf8_is_an_unknown_method() {
    lua(r#"
eq(browser.call("\xff\xfe", {}).code, "UNKNOWN_METHOD", "browser.call")
eq(page:call("get_\xfftitle", {}).code, "UNKNOWN_METHOD", "task:call")
eq(page["\xff"](page, {}).code, "UNKNOWN_METHOD", "an unknown task method")
"#);
}

/// `browser.start` read its options with `pairs`, which runs `__pairs`: one that errors raised
/// its string, one that never ends hung the script. Every other params table is read raw.
#[test]
fn regression_browser_start_reads_its_options_raw() {
    lua(r#"
local trap = setmetatable({}, { __pairs = function() error("pairs trap") end })
browser.start(trap):close()
local forever = setmetatable({}, { __pairs = function(t) return function() return "k", 1 end, t, nil end })
browser.start(forever):close()
"#);
}

/// `browser.methods` converted its filter to a Rust `String`: a table or invalid UTF-8 raised
/// mlua's conversion error. A filter that is not a string is a bad argument; bytes that are not
/// UTF-8 match nothing.
#[test]
fn regression_browser_methods_checks_its_filter() {
    lua(r#"
local ok, e = pcall(browser.methods, {})
eq(ok, false, "a table filter")
eq(e.code, "INVALID_ARGUMENT", "raised as an error table")
has(e.msg, "browser.methods", "names the function")
eq(#browser.methods("\xff"), 0, "invalid UTF-8 matches nothing")
"#);
}

/// `browser.sleep(math.huge)` (and Splash's `splash:wait(1e308)`) did not sleep at all: a
/// duration `Duration` cannot hold was skipped instead of capped at a day.
#[test]
fn regression_a_sleep_longer_than_duration_holds_still_sleeps() {
    lua(r#"
local forever = browser.spawn(function() browser.sleep(math.huge) end)
local long = browser.spawn(function() browser.sleep(1e308) end)
browser.sleep(300)
eq(forever:done(), false, "math.huge still sleeping")
eq(long:done(), false, "1e308 still sleeping")
forever:cancel()
long:cancel()
"#);
}
