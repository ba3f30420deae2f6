//! An identity per task (issue 40): `start{proxy, proxyBypass, userAgent, locale, timezone,
//! geolocation, viewport}`, checked through a real forward proxy on loopback that records what
//! passed through it (credentials included), through what the page reads of itself, and
//! against a task started without them. Bad values start nothing.

use crate::support::harness::{harness, lua};
use crate::support::proxy::Proxy;

#[test]
fn a_tasks_proxy_carries_its_requests_and_no_other_tasks() {
    let proxy = Proxy::start(None);
    let url = proxy.url(None);
    lua(&format!(
        r#"
        local p = browser.start{{ proxy = "{url}", proxyBypass = "<-loopback>" }}
        local id = p:navigate{{ url = A .. "/basic.html?via=proxy" }}:unwrap()
        eq(id.status, 200)
        eq(p:get_title():unwrap().title, "Basic")
        p:close()
        -- The other task (`page`, started without one) goes straight to the site.
        page:navigate{{ url = A .. "/basic.html?via=direct" }}:unwrap()
        "#
    ));
    let seen = proxy.seen();
    assert!(
        seen.iter()
            .any(|s| s.method == "GET" && s.target.ends_with("via=proxy")),
        "{seen:?}"
    );
    let through: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert!(
        through.iter().any(|t| t.ends_with("/basic.html?via=proxy")),
        "{through:?}"
    );
    assert!(
        !through.iter().any(|t| t.contains("via=direct")),
        "another task's request went through the proxy: {through:?}"
    );
}

#[test]
fn a_proxy_that_asks_for_credentials_gets_them_and_a_wrong_password_fails_the_load() {
    let proxy = Proxy::start(Some("ann:p@ss"));
    let good = proxy.url(Some("ann:p%40ss"));
    let bad = proxy.url(Some("ann:nope"));
    lua(&format!(
        r#"
        local p = browser.start{{ proxy = "{good}", proxyBypass = "<-loopback>" }}
        local s = p:navigate{{ url = A .. "/basic.html?auth=good" }}:unwrap()
        eq(s.status, 200)
        local who = browser.call("start", {{ proxy = "{good}" }})
        assert(who.ok, tostring(who))
        eq(who.data.identity.proxy.user, "ann")
        eq(who.data.identity.proxy.server, "{server}")
        eq(who.data.isolated, true)
        assert(not string.find(tostring(who), "p@ss", 1, true), "no password in the receipt")
        browser.call("close", {{}}, who.data.id)
        p:close()
        local q = browser.start{{ proxy = "{bad}", proxyBypass = "<-loopback>" }}
        local r = q:navigate{{ url = A .. "/basic.html?auth=bad" }}
        assert(not r.ok or r.data.status == 407, "a wrong password does not load: " .. tostring(r))
        q:close()
        "#,
        server = proxy.url(None),
    ));
    let seen = proxy.seen();
    let good_pass = seen
        .iter()
        .find(|s| s.target.ends_with("auth=good") && s.passed)
        .unwrap_or_else(|| panic!("the good load passed: {seen:?}"));
    assert_eq!(good_pass.auth.as_deref(), Some("ann:p@ss"));
    assert!(
        seen.iter()
            .any(|s| s.target.ends_with("auth=good") && !s.passed && s.auth.is_none()),
        "the first try was challenged: {seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.target.ends_with("auth=bad") && s.passed),
        "{seen:?}"
    );
}

#[test]
fn user_agent_locale_timezone_position_and_viewport_are_the_tasks_in_each_of_its_tabs() {
    let proxy = Proxy::start(None);
    let url = proxy.url(None);
    lua(&format!(
        r#"
        local p = browser.start{{
          proxy = "{url}", proxyBypass = "<-loopback>",
          userAgent = "moonpilot-test/1.0 (identity)", locale = "de-DE",
          timezone = "Asia/Tokyo", geolocation = {{ latitude = 35.68, longitude = 139.69 }},
          viewport = {{ width = 800, height = 600 }},
        }}
        p:navigate{{ url = A .. "/basic.html?who=1" }}:unwrap()
        local function read(t)
          return t:execute_js{{ body = [[
            const pos = await new Promise((ok) => navigator.geolocation.getCurrentPosition(
              (p) => ok([p.coords.latitude, p.coords.longitude]), (e) => ok(String(e.message))));
            return [navigator.userAgent, navigator.language,
              Intl.DateTimeFormat().resolvedOptions().timeZone, innerWidth, innerHeight, pos,
              new Date(Date.UTC(2026, 0, 1, 0, 0)).getHours()];
          ]] }}:unwrap().result
        end
        local seen = read(p)
        eq(seen[1], "moonpilot-test/1.0 (identity)"); eq(seen[2], "de-DE"); eq(seen[3], "Asia/Tokyo")
        eq(seen[4], 800); eq(seen[5], 600); eq(seen[6][1], 35.68); eq(seen[6][2], 139.69)
        eq(seen[7], 9, "midnight UTC is 9:00 in Tokyo")
        -- A tab the task opens later is the same.
        p:new_tab{{}}:unwrap()
        p:navigate{{ url = A .. "/basic.html?who=2" }}:unwrap()
        local again = read(p)
        eq(again[1], seen[1]); eq(again[2], "de-DE"); eq(again[3], "Asia/Tokyo"); eq(again[4], 800)
        p:close()
        -- A task without them is itself.
        local own = read(page)
        assert(own[1] ~= seen[1] and own[3] ~= "Asia/Tokyo", tostring(own[1]) .. " " .. tostring(own[3]))
        "#
    ));
    let seen = proxy.seen();
    for who in ["who=1", "who=2"] {
        let s = seen
            .iter()
            .find(|s| s.target.ends_with(who))
            .unwrap_or_else(|| panic!("{who} through the proxy: {seen:?}"));
        assert_eq!(
            s.user_agent.as_deref(),
            Some("moonpilot-test/1.0 (identity)")
        );
        assert!(
            s.accept_language
                .as_deref()
                .is_some_and(|l| l.starts_with("de-DE")),
            "{s:?}"
        );
    }
}

#[test]
fn a_bad_identity_starts_nothing_and_says_which_param() {
    harness();
    lua(r#"
        local function refused(params, param, text)
          local r = browser.call("start", params)
          eq(r.ok, false, tostring(r)); eq(r.code, "INVALID_ARGUMENT")
          eq(r.data.param, param, tostring(r))
          has(r.msg, text)
        end
        refused({ proxy = "ftp://127.0.0.1:21" }, "proxy", "http, https, socks4 and socks5")
        refused({ proxy = "socks5://u:p@127.0.0.1:1080" }, "proxy", "cannot authenticate to a SOCKS proxy")
        refused({ proxyBypass = "<-loopback>" }, "proxyBypass", "without a `proxy`")
        refused({ locale = "german please" }, "locale", "BCP 47")
        refused({ userAgent = "agent\r\nX-Injected: 1" }, "userAgent", "control character")
        refused({ geolocation = { latitude = 91, longitude = 0 } }, "geolocation", "latitude")
        refused({ viewport = { width = 0, height = 10 } }, "viewport", "width")
        "#);
    // Only the browser knows its zones: refused there, and the half-made task is gone.
    let h = harness();
    let id = moonpilot::browser::task::TaskId::generate();
    let r = h.runtime.block_on(h.executor.execute(
        Some(id),
        "start",
        serde_json::json!({"timezone": "Mars/Olympus_Mons", "locale": "fr-FR"}),
    ));
    assert!(!r.ok, "{:?}", r.data);
    assert_eq!(r.code.map(|c| c.as_str()), Some("INVALID_ARGUMENT"));
    assert!(
        r.msg
            .as_deref()
            .unwrap_or_default()
            .contains("no time zone it knows"),
        "{:?}",
        r.msg
    );
    assert!(
        h.executor.engine().task(id).is_none(),
        "no task left behind"
    );
}

#[test]
fn an_mcp_sessions_task_runs_as_the_servers_identity_flags_say() {
    let proxy = Proxy::start(None);
    let url = proxy.url(None);
    let mut c = crate::mcp::StdioClient::start(&[
        "--proxy-server",
        &url,
        "--proxy-bypass",
        "<-loopback>",
        "--user-agent",
        "moonpilot-mcp-test/2",
        "--locale",
        "fr-FR",
        "--timezone",
        "America/Lima",
    ]);
    c.initialize(serde_json::json!({}));
    let page = crate::support::harness::url_a("basic.html?mcp=identity");
    let r = c.call("navigate", serde_json::json!({"url": page}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(c.finish().success());
    let seen = proxy.seen();
    let s = seen
        .iter()
        .find(|s| s.target.ends_with("mcp=identity"))
        .unwrap_or_else(|| panic!("through the proxy: {seen:?}"));
    assert_eq!(s.user_agent.as_deref(), Some("moonpilot-mcp-test/2"));
    assert!(
        s.accept_language
            .as_deref()
            .is_some_and(|l| l.starts_with("fr-FR")),
        "{s:?}"
    );
    // A proxy that cannot be is a usage error at once.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
        .args(["mcp", "--proxy-server", "ftp://x:21"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--proxy-server"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
