//! Splash's HTTP API on the shared engine (in-process, port 0): the render endpoints on a page
//! whose text only JavaScript writes, `/execute` and `/run` with the `splash` object (a click,
//! a wait for an element, a table and a PNG back), results shaped as Splash shapes them, and
//! Splash's errors (BadOption, ScriptError with its line, RenderError, GlobalTimeoutError), the
//! engine argument and the token.

use std::net::SocketAddr;
use std::sync::OnceLock;

use moonpilot::splash::SplashOptions;
use serde_json::{json, Value};

use super::support::harness::{harness, url_a};
use super::support::http::{request, Reply};

pub(crate) fn start(opts: SplashOptions) -> SocketAddr {
    let h = harness();
    let executor = h.executor.clone();
    h.runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(moonpilot::splash::http::serve(
            executor,
            listener,
            opts,
            std::future::pending(),
        ));
        addr
    })
}

fn open() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        start(SplashOptions {
            port: 0,
            max_timeout: 20.0,
            ..SplashOptions::default()
        })
    })
}

fn get(addr: SocketAddr, path_and_query: &str) -> Reply {
    request(addr, "GET", path_and_query, &[], b"")
}

pub(crate) fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    request(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

fn q(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A PNG's pixel size from its header.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    (w, h)
}

#[test]
fn render_endpoints_give_the_page_as_the_browser_rendered_it() {
    let addr = open();
    let page = url_a("splash_js.html");
    let html = get(addr, &format!("/render.html?url={}", q(&page)));
    assert_eq!(html.status, 200, "{}", String::from_utf8_lossy(&html.body));
    assert!(html
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    let text = String::from_utf8_lossy(&html.body);
    assert!(text.starts_with("<!DOCTYPE html>"), "{text}");
    assert!(
        text.contains(">rendered 42</div>"),
        "the script's text is in the HTML: {text}"
    );

    let png = get(addr, &format!("/render.png?url={}", q(&page)));
    assert_eq!(png.status, 200);
    assert_eq!(png.header("content-type"), Some("image/png"));
    assert_eq!(
        png_size(&png.body),
        (1024, 768),
        "Splash's default viewport"
    );
    let sized = get(
        addr,
        &format!("/render.png?url={}&viewport=640x480", q(&page)),
    );
    assert_eq!(png_size(&sized.body), (640, 480));

    let json_reply = post(
        addr,
        "/render.json",
        &json!({"url": page, "html": 1, "png": 1}),
    );
    assert_eq!(
        json_reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&json_reply.body)
    );
    let v = json_reply.json();
    assert_eq!(v["title"], "Written by script");
    assert_eq!(v["url"], page);
    assert_eq!(v["requestedUrl"], page);
    assert_eq!(v["geometry"], json!([0, 0, 1024, 768]));
    assert!(v["html"].as_str().unwrap().contains("rendered 42"));
    let png = moonpilot::encoding::decode_base64(v["png"].as_str().unwrap()).unwrap();
    assert_eq!(png_size(&png), (1024, 768));
}

#[test]
fn execute_runs_a_splash_script_that_clicks_waits_and_returns_a_table_and_a_png() {
    let addr = open();
    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local button = splash:select("#more")
  assert(button:mouse_click())
  local table_el
  for _ = 1, 50 do
    table_el = splash:select("#late")
    if table_el then break end
    splash:wait(0.05)
  end
  assert(table_el, "the table never came")
  local rows = splash:evaljs([[
    [...document.querySelectorAll('#late tr')].map(tr => [...tr.cells].map(td => td.textContent))
  ]])
  return {rows = rows, shot = splash:png(), title = splash:evaljs("document.title"),
          out = splash:select("#out"):text()}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_js.html")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["rows"], json!([["a", "1"], ["b", "2"]]), "{v}");
    assert_eq!(v["title"], "Written by script");
    assert_eq!(v["out"], "rendered 42");
    let png = moonpilot::encoding::decode_base64(v["shot"].as_str().unwrap()).unwrap();
    assert_eq!(
        png_size(&png),
        (1024, 768),
        "binary inside a table is base64"
    );

    // A binary result is the body itself, with its content type; a string is the body as is.
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash, args)\n  splash:go(args.url)\n  return splash:png()\nend",
                "url": url_a("splash_js.html")}),
    );
    assert_eq!(r.header("content-type"), Some("image/png"));
    assert_eq!(png_size(&r.body), (1024, 768));
    let r = get(
        addr,
        &format!(
            "/run?lua_source={}&who=you",
            q("splash:set_result_status_code(201)\nsplash:set_result_header('X-From', 'lua')\nreturn 'hello ' .. args.who")
        ),
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.header("x-from"), Some("lua"));
    assert_eq!(r.body, b"hello you");
}

#[test]
fn splash_errors_have_splash_shapes() {
    let addr = open();
    let r = get(addr, "/render.html");
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["type"], "BadOption");
    assert_eq!(v["info"]["type"], "argument_required");
    assert_eq!(v["info"]["argument"], "url");

    let r = get(
        addr,
        &format!("/render.html?url={}&engine=gecko", q(&url_a("basic.html"))),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["info"]["description"],
        "Unknown render engine gecko"
    );
    let r = get(
        addr,
        &format!("/render.html?url={}&engine=webkit", q(&url_a("basic.html"))),
    );
    assert_eq!(r.status, 200, "webkit renders with Chromium");

    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  local x = 1\n  return x.y.z\nend"}),
    );
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["type"], "ScriptError");
    assert_eq!(v["info"]["type"], "LUA_ERROR");
    assert_eq!(v["info"]["line_number"], 3, "{v}");

    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function helper() end"}),
    );
    assert_eq!(
        r.json()["info"]["type"],
        "MAIN_NOT_FOUND_ERROR",
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  return splash:evaljs('nope.nope')\nend",
                "url": url_a("basic.html")}),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["info"]["type"],
        "JS_ERROR",
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    // A page that cannot load: 502 RenderError from a render endpoint; `nil, reason` in a script.
    let dead = "http://127.0.0.1:9/nothing";
    let r = get(addr, &format!("/render.html?url={}", q(dead)));
    assert_eq!(r.status, 502, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["type"], "RenderError");
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash, args)\n  local ok, reason = splash:go(args.url)\n  return {ok = ok == true, reason = reason}\nend",
                "url": dead}),
    );
    let v = r.json();
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["reason"].as_str().unwrap().starts_with("network"), "{v}");

    // Past the timeout: 504.
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  splash:wait(5)\n  return 1\nend", "timeout": 1}),
    );
    assert_eq!(r.status, 504, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["type"], "GlobalTimeoutError");

    // No script reaches past its own page.
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  return browser.call('list_tasks').ok\nend"}),
    );
    assert_eq!(r.body, b"false", "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn with_a_token_every_splash_request_needs_it() {
    let addr = start(SplashOptions {
        port: 0,
        token: Some("sp1ash".into()),
        ..SplashOptions::default()
    });
    assert_eq!(get(addr, "/_ping").status, 401);
    let basic = format!(
        "Basic {}",
        moonpilot::encoding::encode_base64(b"user:sp1ash")
    );
    let r = request(addr, "GET", "/_ping", &[("Authorization", &basic)], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");
    let r = request(
        addr,
        "GET",
        "/_ping",
        &[("Authorization", "Bearer sp1ash")],
        b"",
    );
    assert_eq!(r.status, 200);
}

#[test]
fn moonpilot_splash_runs_a_script_file_and_prints_or_writes_its_result() {
    harness();
    let dir = std::env::temp_dir().join(format!("moonpilot-splash-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("title.lua");
    std::fs::write(
        &script,
        "function main(splash, args)\n  assert(splash:go(args.url))\n  return {title = splash:evaljs('document.title'), who = args.who}\nend\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_moonpilot"))
            .arg("splash")
            .arg(&script)
            .args([
                "--url",
                &url_a("splash_js.html"),
                "--arg",
                "who=me",
                "--state-dir",
            ])
            .arg(dir.join("state"))
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, json!({"title": "Written by script", "who": "me"}));

    std::fs::write(
        &script,
        "function main(splash, args)\n  splash:go(args.url)\n  return splash:png()\nend\n",
    )
    .unwrap();
    let refused = run(&[]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a binary result needs --out"
    );
    let png = dir.join("shot.png");
    let wrote = run(&["--out", png.to_str().unwrap()]);
    assert!(
        wrote.status.success(),
        "{}",
        String::from_utf8_lossy(&wrote.stderr)
    );
    assert_eq!(png_size(&std::fs::read(&png).unwrap()), (1024, 768));

    std::fs::write(&script, "function main(splash)\n  error('boom')\nend\n").unwrap();
    let failed = run(&[]);
    assert_eq!(failed.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&failed.stderr).unwrap();
    assert_eq!(err["type"], "ScriptError");
    assert_eq!(err["info"]["line_number"], 2);
}

/// The URLs of the engine's live tasks.
fn task_urls() -> Vec<String> {
    let r = super::support::harness::exec(None, "list_tasks", json!({}));
    r.data["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["url"].as_str().map(str::to_string))
        .collect()
}

/// Waits up to 10 s for no live task to be on a URL containing `mark`.
fn no_task_on(mark: &str) -> bool {
    for _ in 0..100 {
        if !task_urls().iter().any(|u| u.contains(mark)) {
            return true;
        }
        super::support::load::pause(std::time::Duration::from_millis(100));
    }
    false
}

#[test]
fn a_request_has_cookies_of_its_own_in_har_form_and_they_go_with_it() {
    let addr = open();
    let script = r##"
function main(splash, args)
  assert(splash:go(args.base .. "/set-cookie?name=from_page&value=1"))
  splash:add_cookie{"kept", "2", "/", "127.0.0.1", args.expires, true, false}
  splash:add_cookie{name = "plain", value = "3"}
  assert(splash:go(args.base .. "/echo"))
  local echo = splash:evaljs("document.body.innerText")
  local cookies = splash:get_cookies()
  local deleted = splash:delete_cookies{name = "plain"}
  return {echo = echo, cookies = cookies, deleted = deleted, left = #splash:get_cookies(),
          cleared = splash:clear_cookies(), after = #splash:get_cookies()}
end
"##;
    let base = url_a("").trim_end_matches('/').to_string();
    // In 30 days, whole seconds (Chromium caps a cookie's life at 400 days).
    let in_30_days =
        moonpilot::trace::iso_utc((moonpilot::clock::epoch_ms() / 1000 + 30 * 86_400) * 1000)
            .replace(".000Z", "Z");
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base, "expires": in_30_days}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let echo: Value = serde_json::from_str(v["echo"].as_str().unwrap()).unwrap();
    let sent = echo["cookie"].as_str().unwrap_or_default();
    for c in ["from_page=1", "kept=2", "plain=3"] {
        assert!(sent.contains(c), "{c} in {sent}");
    }
    let cookies = v["cookies"].as_array().unwrap();
    assert_eq!(cookies.len(), 3, "{v}");
    let kept = cookies.iter().find(|c| c["name"] == "kept").unwrap();
    assert_eq!(kept["expires"], in_30_days.as_str(), "{kept}");
    assert_eq!(kept["httpOnly"], true);
    assert_eq!(kept["domain"], "127.0.0.1");
    let session = cookies.iter().find(|c| c["name"] == "from_page").unwrap();
    assert!(
        session.get("expires").is_none(),
        "a session cookie has no expires: {session}"
    );
    assert_eq!(
        (v["deleted"].clone(), v["left"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(
        (v["cleared"].clone(), v["after"].clone()),
        (json!(2), json!(0))
    );

    // The next request starts with an empty jar, and the engine's shared jar never saw them.
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash, args)\n  assert(splash:go(args.base .. '/set-cookie?name=second&value=1'))\n  return splash:get_cookies()\nend", "base": base}),
    );
    let names: Vec<Value> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("second")]);
    let task = super::support::harness::new_task();
    let shared = super::support::harness::exec(Some(task), "get_cookies", json!({}));
    let shared = shared.data.to_string();
    for name in ["from_page", "kept", "second"] {
        assert!(
            !shared.contains(name),
            "{name} leaked into the shared jar: {shared}"
        );
    }
    super::support::harness::exec(Some(task), "close", json!({}));

    // scrapy-splash's session round trip: the cookies it sends in, as `get_cookies` gave them.
    let script = "function main(splash, args)\n  splash:init_cookies(args.cookies)\n  assert(splash:go(args.base .. '/echo'))\n  return {echo = splash:evaljs('document.body.innerText'), cookies = splash:get_cookies()}\nend";
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base, "cookies": cookies}),
    );
    let v = r.json();
    let echo: Value = serde_json::from_str(v["echo"].as_str().unwrap()).unwrap();
    let sent = echo["cookie"].as_str().unwrap_or_default();
    for c in ["from_page=1", "kept=2", "plain=3"] {
        assert!(sent.contains(c), "{c} came back in: {sent}");
    }
    assert_eq!(v["cookies"].as_array().unwrap().len(), 3);
}

#[test]
fn go_headers_are_the_navigation_s_own_custom_headers_stay_and_posts_carry_their_form() {
    let addr = open();
    let base = url_a("").trim_end_matches('/').to_string();
    let script = r##"
function main(splash, args)
  splash:set_custom_headers({["X-Always"] = "a"})
  assert(splash:go{args.base .. "/echo", headers = {["X-Once"] = "1"}})
  local first = splash:evaljs("document.body.innerText")
  assert(splash:go(args.base .. "/echo"))
  local second = splash:evaljs("document.body.innerText")
  assert(splash:go{args.base .. "/echo-post", http_method = "POST", formdata = {q = "x y&z"}})
  local posted = {method = splash:select("#method"):text(), body = splash:select("#body"):text()}
  assert(splash:go{args.base .. "/echo-post", http_method = "POST", body = "a=1&b=2"})
  posted.raw = splash:select("#body"):text()
  return {first = first, second = second, posted = posted, args = args}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base, "flag": "1", "headers": [["k", "v"]]}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let first: Value = serde_json::from_str(v["first"].as_str().unwrap()).unwrap();
    let second: Value = serde_json::from_str(v["second"].as_str().unwrap()).unwrap();
    assert_eq!(first["x-once"], "1", "{first}");
    assert!(
        first.get("x-always").is_none(),
        "go's headers replace the custom ones: {first}"
    );
    assert!(
        second.get("x-once").is_none(),
        "only that navigation: {second}"
    );
    assert_eq!(second["x-always"], "a", "{second}");
    assert_eq!(v["posted"]["method"], "POST");
    assert_eq!(v["posted"]["body"], "q=x+y%26z");
    assert_eq!(v["posted"]["raw"], "a=1&b=2");
    // splash.args as the request gave them: no timeout or wait added, nothing retyped.
    let args = &v["args"];
    assert_eq!(args["flag"], "1");
    assert_eq!(args["headers"], json!([["k", "v"]]));
    assert!(
        args.get("timeout").is_none() && args.get("wait").is_none(),
        "{args}"
    );
    assert!(args["uid"].is_number(), "{args}");
}

#[test]
fn send_keys_reads_splash_key_syntax() {
    let addr = open();
    let script = r##"
function main(splash)
  splash:set_content([[<input id=i onkeydown="document.title += event.key + '|'">]])
  splash:select("#i"):focus()
  splash:send_keys("a b <Space> Enter <Backspace> <Return>")
  splash:send_text("Tab")
  return {value = splash:evaljs("document.querySelector('#i').value"), keys = splash:evaljs("document.title")}
end
"##;
    let r = post(addr, "/execute", &json!({"lua_source": script}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["value"], "ab EnteTab", "{v}");
    let keys = v["keys"].as_str().unwrap();
    assert!(keys.contains("|Backspace|Enter|"), "{keys}");
    assert!(
        !keys.contains("|Tab|"),
        "send_text types, it does not press: {keys}"
    );
}

#[test]
fn a_request_s_task_is_closed_after_an_error_a_timeout_and_a_client_that_left() {
    let addr = open();
    let mark = |m: &str| format!("{}?mark={m}", url_a("basic.html"));
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash, args)\n  splash:go(args.url)\n  error('stop here')\nend", "url": mark("err1")}),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["info"]["error"], "stop here");
    assert!(no_task_on("mark=err1"), "{:?}", task_urls());
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash, args)\n  splash:go(args.url)\n  splash:wait(10)\nend", "url": mark("late1"), "timeout": 1}),
    );
    assert_eq!(r.status, 504);
    assert_eq!(r.json()["info"]["timeout"], 1.0);
    assert!(no_task_on("mark=late1"), "{:?}", task_urls());

    // A client that goes away mid-request: its task goes too.
    use std::io::Write;
    let body = json!({"lua_source": "function main(splash, args)\n  splash:go(args.url)\n  splash:wait(15)\nend", "url": mark("gone1")}).to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /execute HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut seen = false;
    for _ in 0..100 {
        if task_urls().iter().any(|u| u.contains("mark=gone1")) {
            seen = true;
            break;
        }
        super::support::load::pause(std::time::Duration::from_millis(100));
    }
    assert!(seen, "the request's page opened: {:?}", task_urls());
    drop(s);
    assert!(no_task_on("mark=gone1"), "{:?}", task_urls());
}

#[test]
fn saved_arguments_come_back_by_hash_and_a_wrong_token_runs_nothing() {
    let addr = open();
    let script = "function main(splash, args)\n  return 'saved ' .. args.n\nend";
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "n": 1, "save_args": ["lua_source"]}),
    );
    assert_eq!(r.body, b"saved 1");
    let saved = r.header("x-splash-saved-arguments").unwrap().to_string();
    let hash = saved.strip_prefix("lua_source=").unwrap();
    let r = post(
        addr,
        "/execute",
        &json!({"n": 2, "load_args": {"lua_source": hash}}),
    );
    assert_eq!(r.body, b"saved 2", "{}", String::from_utf8_lossy(&r.body));
    let r = get(addr, "/execute?n=3&load_args=lua_source%3Dfeed");
    assert_eq!(r.status, 498);
    assert_eq!(r.json()["info"]["expired"], json!(["lua_source"]));

    let guarded = start(SplashOptions {
        port: 0,
        token: Some("sp1ash".into()),
        ..SplashOptions::default()
    });
    let page = format!("{}?mark=tokenless", url_a("basic.html"));
    let r = request(
        guarded,
        "POST",
        "/execute",
        &[("Content-Type", "application/json"), ("Authorization", "Bearer sp1ash-not")],
        json!({"lua_source": "function main(splash, args)\n  splash:go(args.url)\n  splash:wait(3)\nend", "url": page})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 401);
    assert!(!task_urls().iter().any(|u| u.contains("mark=tokenless")));
}

/// A JPEG's pixel size from its first start-of-frame marker.
fn jpeg_size(jpg: &[u8]) -> (u32, u32) {
    assert_eq!(&jpg[..2], b"\xff\xd8", "a JPEG");
    let mut i = 2;
    while i + 9 < jpg.len() {
        assert_eq!(jpg[i], 0xff, "a marker at {i}");
        let marker = jpg[i + 1];
        let len = u16::from_be_bytes([jpg[i + 2], jpg[i + 3]]) as usize;
        if matches!(marker, 0xc0..=0xc3) {
            let h = u16::from_be_bytes([jpg[i + 5], jpg[i + 6]]) as u32;
            let w = u16::from_be_bytes([jpg[i + 7], jpg[i + 8]]) as u32;
            return (w, h);
        }
        i += 2 + len;
    }
    panic!("no frame in the JPEG")
}

#[test]
fn captures_scale_cut_and_come_as_png_or_jpeg() {
    let addr = open();
    let page = url_a("splash_js.html");
    let r = get(addr, &format!("/render.png?url={}&width=320", q(&page)));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        png_size(&r.body),
        (320, 240),
        "scaled to the width, the aspect kept"
    );
    let r = get(
        addr,
        &format!("/render.png?url={}&width=320&height=100", q(&page)),
    );
    assert_eq!(png_size(&r.body), (320, 100), "cut to the height");
    let r = get(addr, &format!("/render.jpeg?url={}&quality=50", q(&page)));
    assert_eq!(r.header("content-type"), Some("image/jpeg"));
    assert_eq!(jpeg_size(&r.body), (1024, 768));
    let r = get(addr, &format!("/render.png?url={}&width=4000", q(&page)));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["info"]["argument"], "width");
    let r = get(
        addr,
        &format!("/render.png?url={}&scale_method=fancy", q(&page)),
    );
    assert_eq!(
        r.json()["info"]["description"],
        "Invalid 'scale_method': fancy"
    );
    let r = post(
        addr,
        "/render.json",
        &json!({"url": page, "jpeg": 1, "width": 200}),
    );
    let v = r.json();
    let jpg = moonpilot::encoding::decode_base64(v["jpeg"].as_str().unwrap()).unwrap();
    assert_eq!(jpeg_size(&jpg), (200, 150));

    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local region = splash:png{region = {10, 20, 110, 70}}
  local el = splash:select("#out"):png()
  local b = splash:select("#out"):bounds()
  local jpeg = splash:jpeg{width = 100, quality = 10}
  return {region = region, el = el, w = b.width, h = b.height, jpeg = jpeg,
          nothing = splash:png{region = {0, 0, 0, 0}} == nil}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": page}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let b64 = |k: &str| moonpilot::encoding::decode_base64(v[k].as_str().unwrap()).unwrap();
    assert_eq!(png_size(&b64("region")), (100, 50));
    let (w, h) = png_size(&b64("el"));
    assert_eq!(
        (w, h),
        (
            v["w"].as_f64().unwrap().round() as u32,
            v["h"].as_f64().unwrap().round() as u32
        )
    );
    assert_eq!(jpeg_size(&b64("jpeg")), (100, 75));
    assert_eq!(v["nothing"], true);
}

#[test]
fn timers_timeouts_resumes_and_autoloads_run_as_splash_runs_them() {
    let addr = open();
    let base = url_a("").trim_end_matches('/').to_string();
    let script = r##"
function main(splash, args)
  local log = {}
  local timer = splash:call_later(function() log[#log + 1] = "later" end, 0.1)
  local pending = timer:is_pending()
  local cancelled = splash:call_later(function() log[#log + 1] = "never" end, 0.2)
  cancelled:cancel()
  local failing = splash:call_later(function() error("in the timer") end, 0)
  splash:wait(0.4)
  local reraised = {pcall(function() failing:reraise() end)}
  local ok1, a, b = splash:with_timeout(function() splash:wait(0.05); return 1, 2 end, 2)
  local ok2, reason = splash:with_timeout(function() splash:wait(3) end, 0.2)
  local resumed = splash:wait_for_resume([[
    function main(splash) { splash.set("k", "v"); setTimeout(() => splash.resume(42), 100); }
  ]])
  local _, failed = splash:wait_for_resume("function main(splash) { splash.error('cruel') }")
  local _, none = splash:wait_for_resume("var x = 1;")
  local _, slow = splash:wait_for_resume("function main(splash) {}", 0.2)
  assert(splash:autoload("window.loaded_before = document.readyState;"))
  assert(splash:autoload(args.base .. "/net_data.js"))
  assert(splash:go(args.base .. "/basic.html"))
  local got = splash:http_get(args.base .. "/echo")
  return {log = log, pending = pending, reraised = reraised[2], ok1 = ok1, a = a, b = b,
          ok2 = ok2 == nil, reason = reason, resumed = resumed, failed = failed, none = none,
          slow = slow, before = splash:evaljs("window.loaded_before"),
          status = got.status, got_ok = got.ok, echo = got.body and tostring(got.body) or ""}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["log"], json!(["later"]), "{v}");
    assert_eq!(v["pending"], true);
    assert!(
        v["reraised"].as_str().unwrap().contains("in the timer"),
        "{v}"
    );
    assert_eq!(
        (v["ok1"].clone(), v["a"].clone(), v["b"].clone()),
        (json!(true), json!(1), json!(2))
    );
    assert_eq!(
        (v["ok2"].clone(), v["reason"].clone()),
        (json!(true), json!("timeout_over"))
    );
    assert_eq!(v["resumed"], json!({"value": 42, "k": "v"}));
    assert_eq!(v["failed"], "JavaScript error: cruel");
    assert_eq!(
        v["none"],
        "error: wait_for_resume(): no main() function defined"
    );
    assert!(v["slow"].as_str().unwrap().contains("timed out"), "{v}");
    assert_eq!(
        v["before"], "loading",
        "an autoload runs before the page's scripts"
    );
    assert_eq!(
        (v["status"].clone(), v["got_ok"].clone()),
        (json!(200), json!(true))
    );
    assert!(v["echo"].as_str().unwrap().contains("user-agent"), "{v}");
}

#[test]
fn attributes_read_back_and_what_chromium_cannot_do_is_said() {
    let addr = open();
    let script = r##"
function main(splash, args)
  splash.private_mode_enabled = true
  splash.html5_media_enabled = true
  splash.resource_timeout = 10
  splash.my_field = "mine"
  splash:set_content("<div style='height: 5000px'>tall</div>")
  splash.scroll_position = {y = 300}
  return {resource_timeout = splash.resource_timeout, js = splash.js_enabled,
          mine = splash.my_field, scroll = splash.scroll_position,
          plugins = {pcall(function() splash.plugins_enabled = true end)},
          posted = {pcall(function() splash.webgl_enabled = false end)},
          none = splash:select_all("video"), marked = require("treat").as_array({}),
          nested = {list = require("treat").as_array({})}}
end
"##;
    let r = post(addr, "/execute", &json!({"lua_source": script}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["resource_timeout"], 10);
    assert_eq!(v["js"], true);
    assert_eq!(v["mine"], "mine");
    assert_eq!(v["scroll"], json!({"x": 0, "y": 300}));
    assert_eq!(v["plugins"][0], false, "{v}");
    assert!(
        v["plugins"][1]
            .as_str()
            .unwrap()
            .contains("plugins_enabled"),
        "{v}"
    );
    assert_eq!(
        v["posted"][0], false,
        "what Chromium cannot do is said: {v}"
    );
    assert_eq!(v["none"], json!([]), "an empty list is an array");
    assert_eq!(v["marked"], json!([]));
    assert_eq!(v["nested"], json!({"list": []}));
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  return 1, 'two'\nend"}),
    );
    assert_eq!(r.json(), json!([1, "two"]), "several values are a list");
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": "function main(splash)\n  splash:set_content('<p>x</p>')\n  splash:select('p'):set_event_handler('click', 'not a function')\nend"}),
    );
    assert_eq!(r.status, 400);
    let info = &r.json()["info"];
    assert_eq!(info["type"], "SPLASH_LUA_ERROR", "{info}");
    assert_eq!(info["splash_method"], "set_event_handler");
    assert_eq!(info["argument"], "handler");
}

#[test]
fn har_history_and_images_come_from_the_request_s_own_traffic() {
    let addr = open();
    let page = url_a("splash_img.html");
    let script = r##"
function main(splash, args)
  splash.response_body_enabled = true
  assert(splash:go(args.url))
  assert(splash:wait(0.3))
  local loaded = splash:evaljs("document.getElementById('pic').naturalWidth")
  splash:har_reset()
  splash.images_enabled = false
  assert(splash:go(args.url .. "?again=1"))
  assert(splash:wait(0.3))
  return {loaded = loaded, blocked = splash:evaljs("document.getElementById('pic').naturalWidth"),
          har = splash:har(), history = splash:history(), images = splash.images_enabled}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": page}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert!(
        v["loaded"].as_u64().unwrap() > 0,
        "the image loads with images on: {}",
        v["loaded"]
    );
    assert_eq!(v["blocked"], 0, "and not with them off");
    assert_eq!(v["images"], false);
    let log = &v["har"]["log"];
    assert_eq!(log["version"], "1.2");
    let entries = log["entries"].as_array().unwrap();
    let urls: Vec<&str> = entries
        .iter()
        .map(|e| e["request"]["url"].as_str().unwrap())
        .collect();
    assert!(
        urls.iter()
            .all(|u| u.contains("again=1") || u.contains("pixel.png") || u.contains("/echo")),
        "only what came after har_reset: {urls:?}"
    );
    let doc = entries
        .iter()
        .find(|e| e["request"]["url"].as_str().unwrap().contains("again=1"))
        .unwrap();
    assert_eq!(doc["response"]["status"], 200);
    let ct = doc["response"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| {
            h["name"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case("content-type")
        })
        .unwrap();
    assert!(ct["value"].as_str().unwrap().starts_with("text/html"));
    assert!(doc["request"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["name"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case("user-agent")));
    let pixel = entries
        .iter()
        .find(|e| e["request"]["url"].as_str().unwrap().contains("pixel.png"))
        .expect("the blocked image is in the HAR");
    assert_eq!(pixel["_splash_processing_state"], "error", "{pixel}");
    let xhr = entries
        .iter()
        .find(|e| e["request"]["url"].as_str().unwrap().contains("/echo"))
        .expect("the page's fetch is in the HAR");
    assert!(
        xhr["response"]["content"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("user-agent"),
        "with response bodies on, its body: {xhr}"
    );
    let history = v["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "the two documents: {history:?}");
    assert!(history[1]["request"]["url"]
        .as_str()
        .unwrap()
        .contains("again=1"));

    let r = get(addr, &format!("/render.har?url={}", q(&page)));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(!r.json()["log"]["entries"].as_array().unwrap().is_empty());
    let r = post(
        addr,
        "/render.json",
        &json!({"url": page, "history": 1, "har": 1, "images": 0, "wait": 0.2}),
    );
    let v = r.json();
    assert_eq!(v["history"].as_array().unwrap().len(), 1, "{v}");
    assert!(v["har"]["log"]["entries"].as_array().unwrap().len() >= 2);
}

#[test]
fn on_request_sees_every_request_and_may_abort_redirect_or_reheader_it() {
    let addr = open();
    let base = url_a("").trim_end_matches('/').to_string();
    let script = r##"
function main(splash, args)
  local seen = {}
  splash:on_request(function(request)
    seen[#seen + 1] = request.url
    if request.url:find("pixel.png", 1, true) then request:abort() end
    if request.url:find("/echo", 1, true) then request:set_header("X-From-Callback", "yes") end
  end)
  assert(splash:go(args.base .. "/splash_img.html"))
  assert(splash:wait(0.3))
  local blocked = splash:evaljs("document.getElementById('pic').naturalWidth")
  assert(splash:go(args.base .. "/echo"))
  local echo = splash:evaljs("document.body.innerText")
  splash:on_request_reset()
  assert(splash:go(args.base .. "/splash_img.html"))
  assert(splash:wait(0.3))
  return {seen = seen, blocked = blocked, echo = echo,
          after_reset = splash:evaljs("document.getElementById('pic').naturalWidth")}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let seen: Vec<&str> = v["seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(
        seen.iter().any(|u| u.ends_with("/splash_img.html")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|u| u.ends_with("/pixel.png")), "{seen:?}");
    assert_eq!(v["blocked"], 0, "the aborted image never loaded");
    let echo: Value = serde_json::from_str(v["echo"].as_str().unwrap()).unwrap();
    assert_eq!(echo["x-from-callback"], "yes", "{echo}");
    assert!(
        v["after_reset"].as_u64().unwrap() > 0,
        "after the reset nothing is held: {v}"
    );
}

/// Splash's examples this engine does not run, and why.
const EXAMPLES_NOT_RUN: &[(&str, &str)] = &[
    (
        "phantomjs-follow",
        "written for Splash's first scripting API (a top-level chunk, no main), which Splash 3 refuses too",
    ),
    (
        "proxyEg",
        "request:set_proxy: Chromium takes a proxy per browser context, not per request (the request's `proxy` argument works)",
    ),
    (
        "element-offset",
        "element:offset is not Splash API (an unmerged branch's)",
    ),
    (
        "unsupportedcontent-download",
        "splash:download is not Splash API (an unmerged branch's)",
    ),
    (
        "unsupportedcontent-drop",
        "splash.unsupported_content is not Splash API (an unmerged branch's)",
    ),
];

/// Whether `got` holds `want`: objects by their listed keys, arrays item by item.
fn json_subset(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|x| json_subset(x, v))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(x, y)| json_subset(x, y))
        }
        _ => got == want,
    }
}

#[test]
fn splash_examples_do_what_their_docs_say() {
    let dir = std::env::var_os("SPLASH_EXAMPLES_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/moonpilot-splash-examples")
        });
    if !dir.is_dir() {
        eprintln!(
            "splash examples: skipped, {} is absent (Splash's scripts are not kept here; see tests/splash_examples/README.md)",
            dir.display()
        );
        return;
    }
    let addr = open();
    let base = url_a("").trim_end_matches('/').to_string();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/splash_examples/manifest.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut failures = Vec::new();
    let mut absent = Vec::new();
    let mut ran = 0;
    for ex in manifest.as_array().unwrap() {
        let name = ex["name"].as_str().unwrap();
        if EXAMPLES_NOT_RUN.iter().any(|(n, _)| *n == name) {
            continue;
        }
        // Splash's release on PyPI (tools/splash-examples) lacks the examples added after it.
        let Ok(mut source) = std::fs::read_to_string(dir.join(ex["file"].as_str().unwrap())) else {
            absent.push(name);
            continue;
        };
        // Adapted only in its URLs: each literal must be there, so a changed script is a failure.
        for pair in ex["adapt"].as_array().into_iter().flatten() {
            let (from, to) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
            if !source.contains(from) {
                failures.push(format!("{name}: the script no longer holds {from}"));
            }
            source = source.replace(from, to);
        }
        let mut args = ex["args"].as_object().cloned().unwrap_or_default();
        if let Some(Value::String(path)) = args.get("url").cloned() {
            args.insert("url".into(), json!(format!("{base}{path}")));
        }
        let url = args
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        args.insert("base".into(), json!(base));
        args.insert("lua_source".into(), json!(source));
        let fill = |s: &str| {
            s.replace("{{base}}", &base)
                .replace("{{url}}", &url)
                .replace("{{host}}", base.trim_start_matches("http://"))
        };
        let started = std::time::Instant::now();
        let r = post(addr, "/execute", &Value::Object(args));
        let secs = started.elapsed().as_secs_f64();
        ran += 1;
        let body = String::from_utf8_lossy(&r.body).to_string();
        let mut fail = |why: String| {
            failures.push(format!(
                "{name}: {why}; answer {} {}",
                r.status,
                &body[..body.len().min(400)]
            ))
        };
        if r.status != 200 {
            fail("not 200".into());
            continue;
        }
        let e = &ex["expect"];
        if let Some(ct) = e["content_type"].as_str() {
            if !r.header("content-type").unwrap_or("").starts_with(ct) {
                fail(format!("content type is not {ct}"));
            }
        }
        if let Some(size) = e["png_size"].as_array() {
            let want = (
                size[0].as_u64().unwrap() as u32,
                size[1].as_u64().unwrap() as u32,
            );
            if r.body.len() < 24 || png_size(&r.body) != want {
                fail(format!("not a PNG of {want:?}"));
            }
        }
        if let Some(b) = e["body"].as_str() {
            if body != fill(b) {
                fail(format!("body is not {:?}", fill(b)));
            }
        }
        for c in e["body_contains"].as_array().into_iter().flatten() {
            let c = fill(c.as_str().unwrap());
            if !body.contains(&c) {
                fail(format!("body lacks {c:?}"));
            }
        }
        if let Some(max) = e["max_seconds"].as_f64() {
            if secs > max {
                fail(format!("took {secs:.1} s, over {max}"));
            }
        }
        let needs_json = [
            "json",
            "json_type",
            "json_keys",
            "json_len",
            "json_item_keys",
            "json_subset",
            "json_field_contains",
        ]
        .iter()
        .any(|k| !e[*k].is_null());
        if !needs_json {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&body) else {
            fail("not JSON".into());
            continue;
        };
        let filled = |w: &Value| -> Value { serde_json::from_str(&fill(&w.to_string())).unwrap() };
        if !e["json"].is_null() && v != filled(&e["json"]) {
            fail(format!("JSON is not {}", filled(&e["json"])));
        }
        match e["json_type"].as_str() {
            Some("array") if !v.is_array() => fail("not an array".into()),
            Some("object") if !v.is_object() => fail("not an object".into()),
            _ => {}
        }
        for k in e["json_keys"].as_array().into_iter().flatten() {
            let k = fill(k.as_str().unwrap());
            if v.get(&k).is_none() {
                fail(format!("no key {k:?}"));
            }
        }
        if let Some(n) = e["json_len"].as_u64() {
            let len = v
                .as_array()
                .map(Vec::len)
                .or(v.as_object().map(|o| o.len()))
                .unwrap_or(0);
            if len as u64 != n {
                fail(format!("{len} items, not {n}"));
            }
        }
        for k in e["json_item_keys"].as_array().into_iter().flatten() {
            let k = k.as_str().unwrap();
            if !v
                .as_array()
                .is_some_and(|a| a.iter().all(|i| i.get(k).is_some()))
            {
                fail(format!("an item lacks {k:?}"));
            }
        }
        if !e["json_subset"].is_null() && !json_subset(&v, &filled(&e["json_subset"])) {
            fail(format!("JSON does not hold {}", filled(&e["json_subset"])));
        }
        for (k, want) in e["json_field_contains"].as_object().into_iter().flatten() {
            let want = fill(want.as_str().unwrap());
            if !v[k].as_str().is_some_and(|s| s.contains(&want)) {
                fail(format!("{k} lacks {want:?}"));
            }
        }
    }
    eprintln!(
        "splash examples: {ran} run, {} absent from {} ({}), {} not run ({})",
        absent.len(),
        dir.display(),
        absent.join(", "),
        EXAMPLES_NOT_RUN.len(),
        EXAMPLES_NOT_RUN
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert!(ran > 0, "no example of {} ran", dir.display());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn on_response_headers_reads_a_response_and_may_abort_it() {
    let addr = open();
    let script = r##"
function main(splash, args)
  local seen = {}
  splash:on_response_headers(function(response)
    seen[#seen + 1] = {url = response.url, status = response.status,
                       ct = response.headers["content-type"] or ""}
    if response.headers["Content-Type"] == "text/css" then response.abort() end
  end)
  assert(splash:go(args.url))
  local color = splash:evaljs("getComputedStyle(document.getElementById('css-probe')).color")
  splash:on_response_headers_reset()
  assert(splash:go(args.url .. "?again=1"))
  return {seen = seen, color = color,
          after = splash:evaljs("getComputedStyle(document.getElementById('css-probe')).color")}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_ex/page.html")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let seen = v["seen"].as_array().unwrap();
    let css = seen
        .iter()
        .find(|s| s["url"].as_str().unwrap().ends_with("style.css"))
        .expect("the stylesheet's response was seen");
    assert_eq!(
        (css["status"].clone(), css["ct"].clone()),
        (json!(200), json!("text/css"))
    );
    assert!(seen
        .iter()
        .any(|s| s["url"].as_str().unwrap().ends_with("page.html")));
    assert_eq!(
        v["color"], "rgb(0, 0, 0)",
        "the aborted stylesheet never applied: {v}"
    );
    assert_eq!(v["after"], "rgb(192, 0, 0)", "after the reset it does: {v}");
}

#[test]
fn a_locked_navigation_is_dropped_and_shown_to_its_callbacks() {
    let addr = open();
    let script = r##"
function main(splash, args)
  local locked = {}
  splash:on_navigation_locked(function(request) locked[#locked + 1] = request.url end)
  assert(splash:go(args.url))
  splash:lock_navigation()
  local ok, reason = splash:go(args.url .. "?elsewhere")
  splash:select("a"):mouse_click()
  splash:wait(0.3)
  local stayed = splash:url()
  splash:unlock_navigation()
  splash:select("a"):mouse_click()
  splash:wait(0.5)
  return {locked = locked, ok = ok == nil, reason = reason, stayed = stayed, moved = splash:url()}
end
"##;
    let page = url_a("splash_ex/locked.html");
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": page}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["reason"], "navigation_locked");
    assert_eq!(v["stayed"], page.as_str(), "{v}");
    assert_eq!(
        v["locked"],
        json!([url_a("splash_ex/locked-target.html")]),
        "{v}"
    );
    assert_eq!(
        v["moved"],
        url_a("splash_ex/locked-target.html").as_str(),
        "{v}"
    );
}

#[test]
fn elements_reach_the_dom_through_node_and_fill_read_and_submit_forms() {
    let addr = open();
    let script = r##"
function main(splash, args)
  splash:set_content([[<form id=f action="]] .. args.target .. [[" method=get>
    <input name=q class="a b"><input type=checkbox name=c value=yes>
    <select name=s multiple><option value=1>1<option value=2>2</select>
    <ul><li>one</li><li>two</li></ul></form>]])
  local form = splash:select("#f")
  local items = form.node:querySelectorAll("li")
  local first = form.node:querySelector("li")
  form.node.title = "set from Lua"
  local filled = {form:fill({q = "splash", c = true, s = {"2"}})}
  local ok, values = form:form_values()
  local input = form.node:querySelector("input")
  local classes = input.node.classList
  local styles = input:styles()
  local out = {n = #items, second = items[2]:text(), first = first.node.textContent,
          title = splash:evaljs("document.getElementById('f').title"), filled = filled[1],
          ok = ok, values = values, classes = classes, has_display = styles["display"] ~= nil}
  assert(form:submit())
  splash:wait(0.5)
  out.url = splash:url()
  out.gone = {items[1]:exists()}
  return out
end
"##;
    let target = url_a("basic.html");
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "target": target}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["n"], 2, "{v}");
    assert_eq!(v["second"], "two");
    assert_eq!(v["first"], "one");
    assert_eq!(v["title"], "set from Lua");
    assert_eq!(v["filled"], true);
    assert_eq!(v["ok"], true);
    assert_eq!(
        v["values"],
        json!({"q": "splash", "c": "yes", "s": ["2"]}),
        "{v}"
    );
    assert_eq!(v["classes"], json!(["a", "b"]));
    assert_eq!(v["has_display"], true);
    assert!(
        v["url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{target}?q=splash")),
        "the form was submitted: {v}"
    );
    assert_eq!(
        v["gone"],
        json!([false]),
        "an element of the page left behind: {v}"
    );
}

#[test]
fn render_json_gives_the_js_source_s_value_and_its_console() {
    let addr = open();
    let r = post(
        addr,
        "/render.json",
        &json!({"url": url_a("splash_js.html"), "script": 1, "console": 1,
                "js_source": "console.log('from js_source', 6 * 7); document.title + '!'"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["script"], "Written by script!", "{v}");
    let console = v["console"].as_array().unwrap();
    assert!(
        console
            .iter()
            .any(|m| m.as_str().unwrap().contains("from js_source 42")),
        "{v}"
    );
    let r = post(
        addr,
        "/render.json",
        &json!({"url": url_a("splash_js.html"), "script": 1, "js_source": "nope.nope"}),
    );
    assert_eq!(r.status, 200, "a js_source that throws is not an error");
    assert!(r.json().get("script").is_none());
}

#[test]
fn render_json_lists_child_frames_same_site_and_cross_site() {
    let addr = open();
    let r = post(
        addr,
        "/render.json",
        &json!({"url": url_a("frames.html"), "iframes": 1, "html": 1, "wait": 0.3}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["frameName"], "");
    let frames = v["childFrames"].as_array().unwrap();
    let names: Vec<&str> = frames
        .iter()
        .map(|f| f["frameName"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"samechild") && names.contains(&"crosschild"),
        "{names:?}"
    );
    for f in frames
        .iter()
        .filter(|f| f["frameName"] == "samechild" || f["frameName"] == "crosschild")
    {
        assert_eq!(f["title"], "Child", "{f}");
        assert!(f["html"].as_str().unwrap().contains("child-btn"), "{f}");
        assert!(f["geometry"][2].as_f64().unwrap() > 0.0, "{f}");
    }
}

#[test]
fn a_baseurl_shows_a_page_as_if_it_came_from_there() {
    let addr = open();
    let script = r##"
function main(splash, args)
  assert(splash:go{args.url, baseurl = args.base .. "/splash_ex/elsewhere.html"})
  local first = {url = splash:url(), title = splash:evaljs("document.title"),
                 img = splash:evaljs("document.querySelector('img').src")}
  assert(splash:set_content{"<title>set</title><img src='image.png'>", baseurl = args.base .. "/splash_ex/x.html"})
  splash:wait(0.3)
  return {first = first, url = splash:url(),
          loaded = splash:evaljs("document.querySelector('img').naturalWidth")}
end
"##;
    let base = url_a("").trim_end_matches('/').to_string();
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_ex/page.html"), "base": base}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(
        v["first"]["url"],
        format!("{base}/splash_ex/elsewhere.html"),
        "{v}"
    );
    assert_eq!(v["first"]["title"], "Splash example page");
    assert_eq!(v["first"]["img"], format!("{base}/splash_ex/image.png"));
    assert_eq!(v["url"], format!("{base}/splash_ex/x.html"));
    assert!(
        v["loaded"].as_u64().unwrap() > 0,
        "relative to the baseurl: {v}"
    );
    let r = get(
        addr,
        &format!(
            "/render.html?url={}&baseurl={}",
            q(&url_a("splash_ex/page.html")),
            q(&format!("{base}/other/where.html"))
        ),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(String::from_utf8_lossy(&r.body).contains("Splash example page"));
}

#[test]
fn held_requests_keep_images_off_refuse_a_raw_body_and_elements_are_the_nodes_themselves() {
    let addr = open();
    let script = r##"
function main(splash, args)
  splash.images_enabled = false
  local seen = 0
  splash:on_request(function(request) seen = seen + 1 end)
  assert(splash:go(args.url))
  splash:wait(0.3)
  local blocked = splash:evaljs("document.getElementById('pic').naturalWidth")
  local raw = {pcall(function() return splash:go{args.url, http_method = "POST", body = '{"a": 1}'} end)}
  splash:set_content("<ul><li>one</li><li>two</li><li>three</li></ul>")
  local items = splash:select_all("li")
  items[1].node:remove()
  return {seen = seen, blocked = blocked, raw_ok = raw[1], raw = tostring(raw[2]),
          second = items[2]:text(), first_gone = items[1]:exists()}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_img.html")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert!(v["seen"].as_u64().unwrap() >= 2, "{v}");
    assert_eq!(v["blocked"], 0, "images stay off with a callback set: {v}");
    assert_eq!(v["raw_ok"], false, "{v}");
    assert!(
        v["raw"].as_str().unwrap().contains("not form-encoded"),
        "{v}"
    );
    assert_eq!(
        v["second"], "two",
        "the element is its node, not an index: {v}"
    );
    assert_eq!(v["first_gone"], false);
}

#[test]
fn on_response_shows_each_response_once_it_is_in_with_its_body() {
    let addr = open();
    let script = r##"
function main(splash, args)
  splash.response_body_enabled = true
  local seen = {}
  splash:on_response(function(response)
    seen[#seen + 1] = {url = response.url, status = response.status, ok = response.ok,
      ct = response.headers["content-type"] or "",
      body = response.body and tostring(response.body) or nil}
  end)
  assert(splash:go(args.url))
  -- The page's fetch, however loaded the machine (5 s at most).
  local function fetched()
    for _, s in ipairs(seen) do if s.url:find("/echo", 1, true) then return true end end
    return false
  end
  for _ = 1, 50 do
    if fetched() then break end
    splash:wait(0.1)
  end
  splash:wait(0.2)
  return seen
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_img.html")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let seen = v.as_array().unwrap();
    let page = seen
        .iter()
        .find(|s| s["url"].as_str().unwrap().ends_with("splash_img.html"))
        .expect("the document's response");
    assert_eq!(
        (page["status"].clone(), page["ok"].clone()),
        (json!(200), json!(true))
    );
    assert!(page["ct"].as_str().unwrap().starts_with("text/html"));
    let xhr = seen
        .iter()
        .find(|s| s["url"].as_str().unwrap().contains("/echo"))
        .expect("the page's fetch");
    assert!(
        xhr["body"].as_str().unwrap().contains("user-agent"),
        "{xhr}"
    );
    assert_eq!(
        seen.iter()
            .filter(|s| s["url"].as_str().unwrap().ends_with("splash_img.html"))
            .count(),
        1,
        "each response once"
    );
}

#[test]
fn http_get_and_post_reach_the_server_outside_the_page_with_its_cookies() {
    let addr = open();
    let base = url_a("").trim_end_matches('/').to_string();
    let script = r##"
function main(splash, args)
  assert(splash:go(args.base .. "/set-cookie?name=jar&value=shared"))
  local got = splash:http_get{args.base .. "/echo", headers = {["X-Asked"] = "yes"}}
  local posted = splash:http_post{url = args.base .. "/echo-post", body = "a=1&b=2"}
  local moved = splash:http_get{args.base .. "/redirect?to=" .. args.base .. "/basic.html", follow_redirects = false}
  local dead = splash:http_get("http://127.0.0.1:9/")
  return {status = got.status, ok = got.ok, echo = tostring(got.body),
          posted = tostring(posted.body), moved = moved.status, dead_ok = dead.ok,
          still = splash:url()}
end
"##;
    let r = post(
        addr,
        "/execute",
        &json!({"lua_source": script, "base": base}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(
        (v["status"].clone(), v["ok"].clone()),
        (json!(200), json!(true))
    );
    let echo: Value = serde_json::from_str(v["echo"].as_str().unwrap()).unwrap();
    assert_eq!(echo["x-asked"], "yes", "{echo}");
    assert!(
        echo["cookie"].as_str().unwrap_or("").contains("jar=shared"),
        "the context's cookies: {echo}"
    );
    assert!(
        echo["user-agent"].as_str().unwrap_or("").contains("Chrome"),
        "the page's user agent: {echo}"
    );
    let posted = v["posted"].as_str().unwrap();
    assert!(
        posted.contains(">POST<") && posted.contains("a=1&amp;b=2"),
        "{posted}"
    );
    assert!((300..400).contains(&v["moved"].as_u64().unwrap()), "{v}");
    assert_eq!(v["dead_ok"], false);
    assert!(
        v["still"].as_str().unwrap().contains("/set-cookie"),
        "the page did not move: {v}"
    );
}

/// `/execute` of `script` with `url` the events fixture.
fn on_events_page(addr: SocketAddr, script: &str) -> Reply {
    post(
        addr,
        "/execute",
        &json!({"lua_source": script, "url": url_a("splash_events.html")}),
    )
}

/// A 200 reply's JSON.
fn ok_json(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

#[test]
fn event_handlers_set_on_an_element_see_its_events_until_taken_off() {
    let addr = open();
    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local button = splash:select("#go")
  local clicks, seen = 0, nil
  button.node.onclick = function(ev)
    clicks = clicks + 1
    seen = {type = ev.type, target = ev.target.id, current = ev.currentTarget.id,
            trusted = ev.isTrusted, phase = ev.eventPhase, bubbles = ev.bubbles,
            cancelable = ev.cancelable, prevented = ev.defaultPrevented,
            x = ev.clientX, stamp = type(ev.timeStamp)}
  end
  assert(button:mouse_click())
  splash:wait(0.3)
  local once = clicks
  button.node.onclick = nil
  assert(button:mouse_click())
  splash:wait(0.3)
  -- Listeners: several on one element, each taken off by its id; a child's event bubbles.
  local box = splash:select("#box")
  local a, b, listened = 0, 0, 0
  local phases = {}
  local id_a = box:set_event_handler("click", function(ev)
    a = a + 1
    phases[#phases + 1] = {target = ev.target.id, current = ev.currentTarget.id, phase = ev.eventPhase}
  end)
  local id_b = box:set_event_handler("click", function() b = b + 1 end)
  local count = function() listened = listened + 1 end
  box.node:addEventListener("click", count)
  assert(splash:select("#inner"):mouse_click())
  splash:wait(0.3)
  local removed = box:unset_event_handler(id_a)
  box.node:removeEventListener("click", count)
  assert(splash:select("#inner"):mouse_click())
  splash:wait(0.3)
  return {once = once, after_unset = clicks, seen = seen, page = splash:select("#log"):text(),
          inline = splash:evaljs("window.inline || 0"), ids = {id_a, id_b}, removed = removed,
          again = box:unset_event_handler(id_a), a = a, b = b, listened = listened, phases = phases}
end
"##;
    let r = on_events_page(addr, script);
    let v = ok_json(&r);
    assert_eq!(v["once"], 1, "the handler saw the click: {v}");
    assert_eq!(v["after_unset"], 1, "taken off, it sees no more: {v}");
    assert_eq!(v["seen"]["type"], "click", "{v}");
    assert_eq!(
        v["seen"]["target"], "inner",
        "the target is an Element: {v}"
    );
    assert_eq!(v["seen"]["current"], "go", "{v}");
    assert_eq!(v["seen"]["trusted"], true, "a real mouse click: {v}");
    assert_eq!(v["seen"]["phase"], 3, "bubbled up from the span: {v}");
    assert_eq!(v["seen"]["bubbles"], true);
    assert_eq!(v["seen"]["cancelable"], true);
    assert_eq!(v["seen"]["prevented"], false);
    assert!(v["seen"]["x"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["seen"]["stamp"], "number");
    assert_eq!(
        v["page"], "page clicks: 4",
        "every click reached the page: {v}"
    );
    assert_eq!(
        v["inline"], 0,
        "onclick replaced the page's own, as in JavaScript: {v}"
    );
    assert_eq!(v["ids"][0].as_u64().unwrap() + 1, v["ids"][1], "{v}");
    assert_eq!(v["removed"], true);
    assert_eq!(v["again"], false, "an id is taken off once: {v}");
    assert_eq!((&v["a"], &v["b"]), (&json!(1), &json!(2)), "{v}");
    assert_eq!(v["listened"], 1, "removeEventListener by function: {v}");
    assert_eq!(
        v["phases"],
        json!([{"target": "inner", "current": "box", "phase": 3}])
    );
}

#[test]
fn a_handler_s_error_is_logged_and_prevent_default_says_it_comes_too_late() {
    let addr = open();
    // A failing handler stays set and the script goes on (Splash logs the error).
    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local calls = 0
  splash:select("#go").node.onclick = function(ev)
    calls = calls + 1
    error("boom " .. calls)
  end
  assert(splash:select("#go"):mouse_click())
  splash:wait(0.3)
  assert(splash:select("#go"):mouse_click())
  splash:wait(0.3)
  return {calls = calls}
end
"##;
    let r = on_events_page(addr, script);
    assert_eq!(ok_json(&r), json!({"calls": 2}));
    // preventDefault in a handler that runs after its event: the answer is that error.
    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local x = 0
  splash:select("#away").node.onclick = function(event)
    event:preventDefault()
    x = event.clientX
  end
  assert(splash:select("#away"):mouse_click())
  splash:wait(0.5)
  return {x = x}
end
"##;
    let r = on_events_page(addr, script);
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    let info = &r.json()["info"];
    assert_eq!(info["type"], "SPLASH_LUA_ERROR", "{info}");
    assert_eq!(info["splash_method"], "event:preventDefault", "{info}");
    assert!(
        info["error"]
            .as_str()
            .unwrap()
            .contains("prevent_default = true"),
        "{info}"
    );
    // Set to do it in the page, at the event: the link does not navigate.
    let script = r##"
function main(splash, args)
  assert(splash:go(args.url))
  local seen = {}
  splash:select("#away"):set_event_handler("click", function(event)
    event:preventDefault()
    seen = {prevented = event.defaultPrevented, x = event.clientX}
  end, {prevent_default = true})
  assert(splash:select("#away"):mouse_click())
  splash:wait(0.5)
  return {seen = seen, url = splash:url()}
end
"##;
    let r = on_events_page(addr, script);
    let v = ok_json(&r);
    assert_eq!(v["seen"]["prevented"], true, "{v}");
    assert!(v["seen"]["x"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["url"], url_a("splash_events.html").as_str(), "{v}");
}

#[test]
fn the_proxy_argument_sends_each_request_through_its_own_proxy() {
    let addr = open();
    let proxy = crate::support::proxy::Proxy::start(Some("scrapy:s3cret"));
    let port = proxy.addr.port();
    // Splash's form: no scheme (http), credentials, host and port.
    let page = url_a("basic.html?splash=proxied");
    let r = get(
        addr,
        &format!(
            "/render.html?url={}&proxy={}",
            q(&page),
            q(&format!("scrapy:s3cret@127.0.0.1:{port}"))
        ),
    );
    let body = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 200, "{body}");
    assert!(body.contains("<title>Basic</title>"), "{body}");
    let seen = proxy.seen();
    assert!(
        seen.iter().any(|s| s.target.ends_with("splash=proxied")
            && s.passed
            && s.auth.as_deref() == Some("scrapy:s3cret")),
        "{seen:?}"
    );
    // The next request without it goes straight to the site.
    let r = get(
        addr,
        &format!("/render.html?url={}", q(&url_a("basic.html?splash=direct"))),
    );
    assert_eq!(r.status, 200);
    assert!(!proxy
        .seen()
        .iter()
        .any(|s| s.target.contains("splash=direct")));
    // What it cannot be: a profile's name, another protocol; Splash's BadOption names it.
    for (arg, says) in [
        ("myprofile", "proxy profile"),
        ("ftp://127.0.0.1:21", "http or socks5"),
    ] {
        let r = get(
            addr,
            &format!("/render.html?url={}&proxy={}", q(&page), q(arg)),
        );
        assert_eq!(r.status, 400, "{arg}");
        let v = r.json();
        assert_eq!(v["info"]["argument"], "proxy");
        assert!(
            v["info"]["description"]
                .as_str()
                .unwrap_or_default()
                .contains(says),
            "{v}"
        );
    }
}
