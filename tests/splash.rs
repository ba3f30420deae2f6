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

fn start(opts: SplashOptions) -> SocketAddr {
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

fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
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
