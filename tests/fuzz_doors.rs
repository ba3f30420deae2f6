//! Hostile input at every door (issue 35 §5): generated bodies — malformed JSON, wrong types,
//! huge numbers, deep nesting, huge strings, invalid UTF-8, unknown fields, every command's
//! params from the registry — sent to the seed protocol (`/playwright/command` and
//! `/playwright/upload`), to MCP at `/mcp` (before and inside a session), to each Splash
//! endpoint and `/_ping`; every command's param reader fed hostile params directly; hostile Lua
//! values passed into commands through the bridge.
//!
//! Every answer must be a typed failure of its door: the seed's `{ok:false, code, msg}` with a
//! known error code, a JSON-RPC error or a tool result with `isError`, Splash's
//! `{error, type, description}`. `INTERNAL`, a panic's text, an untyped body or an undocumented
//! 5xx fails the test, which prints the body that caused it. The servers still answer at the end.
//!
//! Each HTTP door runs on a private engine (its own Chromium, its own state directory, command
//! bounds of 2 s), so that the destructive commands (`shutdown`, `close`, `cleanup`) are sent
//! too and a command that does pass validation stays cheap. The generator is a seeded xorshift:
//! `MOONPILOT_FUZZ_SEED` replays a run, `MOONPILOT_FUZZ_BODIES` sets the bodies per door. URLs
//! it generates stay on loopback, and paths it may write stay in the door's own directory.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use moonpilot::browser::task::TaskId;
use moonpilot::command::{CommandSpec, Handler, Kind, ParamSpec};
use moonpilot::mcp::McpOptions;
use moonpilot::protocol::{ErrorCode, Params};
use moonpilot::server::{serve, ServeOptions};
use moonpilot::splash::SplashOptions;
use moonpilot::{Engine, Executor, Receipt};
use serde_json::{json, Map, Value};

use super::support::harness::{harness, lua, test_config};
use super::support::http::{mcp_post, request, Reply};

// ---------------------------------------------------------------------------------------------
// The generator.

/// xorshift64* seeded through splitmix64 (so nearby seeds give unrelated streams).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        // Never 0: xorshift's fixed point.
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The run's seed (`MOONPILOT_FUZZ_SEED`), printed with the figures so a failure can be replayed.
fn seed() -> u64 {
    std::env::var("MOONPILOT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(35_05)
}

/// Bodies per door (`MOONPILOT_FUZZ_BODIES`, 10,000 by default).
fn bodies() -> usize {
    std::env::var("MOONPILOT_FUZZ_BODIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// Number texts a JSON parser must survive: out of range, negative zero, past 2^53 and 2^64,
/// and a few that are not JSON at all.
const NUMBER_TEXTS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1e400",
    "-1e400",
    "1e-400",
    "18446744073709551616",
    "18446744073709551615",
    "-9223372036854775809",
    "9223372036854775807",
    "9007199254740993",
    "1.7976931348623157e308",
    "5e-324",
    "123456789012345678901234567890e10",
    "4294967296",
    "1E+2147483648",
    "1.5",
    "-1",
    "01",
    "+1",
    ".5",
    "1.",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "1e",
    "--1",
];

fn hostile_number(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => json!(0),
        1 => json!(-0.0),
        2 => json!(i64::MIN),
        3 => json!(i64::MAX),
        4 => json!(u64::MAX),
        5 => json!(9_007_199_254_740_993u64),
        6 => json!(f64::MAX),
        7 => json!(-f64::MAX),
        8 => json!(5e-324),
        9 => json!(-1),
        10 => json!(1.5),
        11 => json!(4_294_967_296u64),
        12 => json!(-2_147_483_649i64),
        13 => json!(1e15 + 0.5),
        14 => json!(9e15),
        _ => json!(rng.next() as i64),
    }
}

/// A string of `n` random characters from every plane (controls, combining marks, CJK, astral).
fn random_text(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| {
            let c = match rng.below(6) {
                0 => rng.below(0x20) as u32,
                1 => 0x20 + rng.below(0x5f) as u32,
                2 => 0x300 + rng.below(0x70) as u32,
                3 => 0x4e00 + rng.below(0x5000) as u32,
                4 => 0x1_0000 + rng.below(0x10_0000) as u32,
                _ => rng.below(0x11_0000) as u32,
            };
            char::from_u32(c).unwrap_or('\u{fffd}')
        })
        .collect()
}

/// A large string: 1 to 32 KiB, now and then 1 MiB.
fn huge(rng: &mut Rng) -> String {
    let len = if rng.one_in(40) {
        1 << 20
    } else {
        1024 << rng.below(6)
    };
    let unit = *rng.pick(&["a", "é", "😀", "\u{0}", "\\", "\"", "<"]);
    unit.repeat(len / unit.len())
}

fn hostile_string(rng: &mut Rng) -> String {
    match rng.below(18) {
        0 => String::new(),
        1 => " \t\r\n ".into(),
        2 => "\0".into(),
        3 => "a\0b\0c".into(),
        4 => "\u{feff}\u{202e}\u{200b}\u{2028}\u{2029}".into(),
        5 => "😀𝕏\u{10ffff}\u{fffd}".into(),
        6 => "\u{1}\u{7}\u{1b}[31m\u{7f}".into(),
        7 => "<script>alert(1)</script>\"'`\\".into(),
        8 => "../../../../../etc/passwd".into(),
        9 => "%00%ff%fe%C0%AF".into(),
        10 => rng.pick(NUMBER_TEXTS).to_string(),
        11 => huge(rng),
        12 => {
            let n = 1 + rng.below(40);
            random_text(rng, n)
        }
        13 => "\r\n\r\nHTTP/1.1 200 OK\r\nX: y\r\n\r\n".into(),
        14 => "e\u{301}\u{303}".repeat(1 + rng.below(2000)),
        15 => rng
            .pick(&[
                "true",
                "false",
                "null",
                "[]",
                "{}",
                "undefined",
                "NaN",
                "-0",
            ])
            .to_string(),
        16 => "${7*7}{{7*7}}%s%n%x".into(),
        _ => "x".repeat(rng.below(300)),
    }
}

/// A key nobody declared: near names, prototype names, empty, NUL, huge.
fn hostile_key(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => rng
            .pick(&[
                "__proto__",
                "constructor",
                "prototype",
                "toString",
                "hasOwnProperty",
            ])
            .to_string(),
        1 => rng
            .pick(&[
                "indx",
                "URL",
                "Url",
                "selectr",
                "timeout",
                "timeoutMS",
                "Index",
                "id",
                "method",
                "params",
                "jsonrpc",
            ])
            .to_string(),
        2 => String::new(),
        3 => "\0".into(),
        4 => {
            let n = 1 + rng.below(20);
            random_text(rng, n)
        }
        5 => "k".repeat(1 << (4 + rng.below(12))),
        6 => "a.b[0]".into(),
        _ => hostile_string(rng),
    }
}

fn hostile_value(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth >= 3 { 7 } else { 10 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => hostile_number(rng),
        3 | 4 => Value::String(hostile_string(rng)),
        5 => json!(rng.below(12) as i64 - 2),
        6 => json!(rng.pick(&["3", " 7 ", "1.5", "-1", "1e3", "", "0x10", "1_000"])),
        7 => {
            let n = rng.below(5);
            Value::Array((0..n).map(|_| hostile_value(rng, depth + 1)).collect())
        }
        8 => {
            let n = rng.below(5);
            Value::Object(
                (0..n)
                    .map(|_| (hostile_key(rng), hostile_value(rng, depth + 1)))
                    .collect(),
            )
        }
        _ => {
            let levels = 10 + rng.below(110);
            nested(rng, levels)
        }
    }
}

/// `levels` of arrays and objects around a scalar (within serde_json's limit of 128 once wrapped
/// in an envelope, or just past it).
fn nested(rng: &mut Rng, levels: usize) -> Value {
    let mut v = hostile_number(rng);
    for _ in 0..levels {
        v = if rng.one_in(2) {
            json!([v])
        } else {
            json!({ "a": v })
        };
    }
    v
}

/// Not an object: what `params` (or `arguments`) must not be.
fn not_an_object(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => json!([]),
        1 => json!([1, 2]),
        2 => Value::String(hostile_string(rng)),
        3 => hostile_number(rng),
        4 => json!(true),
        _ => json!([{}]),
    }
}

/// `valid` broken: truncated, trailing garbage, wrong brackets, deep nesting, invalid UTF-8,
/// lone surrogates, raw control characters, BOM, NaN and comments, random bytes.
fn malformed(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    let mut b = valid.to_vec();
    match rng.below(15) {
        0 => {
            let at = rng.below(b.len().max(1));
            b.truncate(at);
        }
        1 => {
            let tails: &[&[u8]] = &[
                b",",
                b"}",
                b"]]",
                b" x",
                b"\0",
                b"{}",
                b"\n{\"method\":\"get_title\"}",
            ];
            let tail = *rng.pick(tails);
            b.extend_from_slice(tail);
        }
        2 => {
            let brackets: Vec<usize> = b
                .iter()
                .enumerate()
                .filter(|(_, c)| b"{}[]".contains(c))
                .map(|(i, _)| i)
                .collect();
            if !brackets.is_empty() {
                let at = *rng.pick(&brackets);
                b[at] = *rng.pick(b"{}[]()<>");
            }
        }
        3 => {
            let n = if rng.one_in(10) { 100_000 } else { 10_000 };
            b = "[".repeat(n).into_bytes();
            if rng.one_in(2) {
                b.extend("]".repeat(n).bytes());
            }
        }
        4 => {
            let n = 10_000;
            b = "{\"a\":".repeat(n).into_bytes();
            b.push(b'1');
            if rng.one_in(2) {
                b.extend("}".repeat(n).bytes());
            }
        }
        5 => {
            let invalid: &[&[u8]] = &[
                &[0xff],
                &[0xc0, 0xaf],
                &[0xed, 0xa0, 0x80],
                &[0xf8, 0x88, 0x80, 0x80, 0x80],
                &[0x80],
                &[0xe2, 0x82],
            ];
            let bad = *rng.pick(invalid);
            let quotes: Vec<usize> = b
                .iter()
                .enumerate()
                .filter(|(_, c)| **c == b'"')
                .map(|(i, _)| i + 1)
                .collect();
            let at = if quotes.is_empty() {
                rng.below(b.len() + 1)
            } else {
                *rng.pick(&quotes)
            };
            let at = at.min(b.len());
            b.splice(at..at, bad.iter().copied());
        }
        6 => {
            let n = *rng.pick(NUMBER_TEXTS);
            b = format!(
                "{{\"id\":{n},\"method\":{n},\"params\":{{\"index\":{n},\"url\":{n}}},\"jsonrpc\":\"2.0\",\"timeout\":{n}}}"
            )
            .into_bytes();
        }
        7 => {
            b = rng
                .pick(&[
                    r#"{"method":"\ud800","id":"\udc00\ud800"}"#,
                    r#"{"method":"get_title","params":{"x":"\uD83D"}}"#,
                    r#"{"method":"\x41"}"#,
                    r#"{"method":"\u12"}"#,
                    r#"{"method":"a\"}"#,
                ])
                .as_bytes()
                .to_vec();
        }
        8 => {
            b = b"{\"method\":\"get\x01title\",\"params\":{\"a\":\"line\nbreak\ttab\x00nul\"}}"
                .to_vec()
        }
        9 => {
            b = rng
                .pick(&[
                    "",
                    "   ",
                    "null",
                    "true",
                    "0",
                    "\"s\"",
                    "[]",
                    "{}",
                    "[{}]",
                    "-",
                    "{\"",
                    "\"",
                    "\0",
                    "{,}",
                    "{\"a\" 1}",
                    "{1:2}",
                ])
                .as_bytes()
                .to_vec();
        }
        10 => {
            let mut with_bom = vec![0xef, 0xbb, 0xbf];
            with_bom.extend_from_slice(&b);
            b = with_bom;
        }
        11 => {
            if !b.is_empty() {
                let at = rng.below(b.len());
                b[at] = rng.next() as u8;
            }
        }
        12 => {
            let n = rng.below(256);
            b = (0..n).map(|_| rng.next() as u8).collect();
        }
        13 => {
            b = String::from_utf8_lossy(valid)
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect();
        }
        _ => {
            b = rng
                .pick(&[
                    "{'method':'get_title'}",
                    "{\"method\":\"get_title\"/* comment */}",
                    "{\"method\":\"get_title\",\"id\":NaN}",
                    "{\"method\":\"get_title\",}",
                    "{\"method\":get_title}",
                    "{\"method\":\"get_title\"}{\"method\":\"get_title\"}",
                ])
                .as_bytes()
                .to_vec();
        }
    }
    b
}

/// What generated values may point at: the fixture origins (loopback) and the door's own
/// directory (the only place an absolute path it generates names).
struct Places {
    origin_a: String,
    origin_b: String,
    dir: PathBuf,
}

impl Places {
    fn new(dir: &Path) -> Places {
        let h = harness();
        Places {
            origin_a: h.fixtures.a.clone(),
            origin_b: h.fixtures.b.clone(),
            dir: dir.to_path_buf(),
        }
    }

    /// A URL a navigation may take: loopback only (fixture pages, refused ports, non-HTTP
    /// schemes and broken forms that never resolve a name).
    fn url(&self, rng: &mut Rng) -> String {
        let a = &self.origin_a;
        match rng.below(15) {
            0 => format!("{a}/basic.html"),
            1 => format!("{a}/empty.html"),
            2 => format!("{}/basic.html", self.origin_b),
            3 => "about:blank".into(),
            4 => "data:text/html,<p id=x>fuzz</p>".into(),
            5 => "javascript:void(0)".into(),
            6 => "file:///nonexistent/moonpilot-fuzz".into(),
            7 => "http://127.0.0.1:1/".into(),
            8 => "http://".into(),
            9 => "https://[::1".into(),
            10 => "http://127.0.0.1:99999/".into(),
            11 => format!("{a}/{}", "a".repeat(1 << (8 + rng.below(10)))),
            12 => format!("{a}/%00%ff/../../etc/passwd?x=\u{0}"),
            13 => format!("{a}/status/204"),
            _ => rng
                .pick(&["", "not a url", "::::", "ht tp://x", "%", "\0", "/relative"])
                .to_string(),
        }
    }

    /// A path a command may read or write: relative forms, NUL, missing directories, a
    /// directory itself, a name too long — absolute ones only under the door's directory.
    fn path(&self, rng: &mut Rng) -> String {
        let d = self.dir.display();
        match rng.below(12) {
            0 => String::new(),
            1 => "shot.png".into(),
            2 => "../shot.png".into(),
            3 => "a/b.png".into(),
            4 => format!("{d}/out.png"),
            5 => format!("{d}/missing/deeper/x.png"),
            6 => d.to_string(),
            7 => "x\0.png".into(),
            8 => format!("{d}/{}", "n".repeat(300)),
            9 => ".".into(),
            10 => format!("{d}/../{}", "x.png"),
            _ => "../../../../../etc/passwd".into(),
        }
    }
}

const JS_BODIES: &[&str] = &[
    "return 1",
    "return document.title",
    "throw new Error('fuzz')",
    "return {a: [1, {b: null}]}",
    "1 +",
    "return window",
    "return new Array(100000).fill('x').join('')",
    "return Symbol('x')",
    "return 10n",
    "return () => 1",
    "return document.body",
    "return NaN",
    "return [-0, Infinity, -Infinity]",
    "await new Promise(r => setTimeout(r, 50)); return 2",
    "let a = []; for (let i = 0; i < 5000; i++) a = [a]; return a",
    "let o = {}; o.o = o; return o",
    "return '\\u0000\\ud800'",
    "",
];

const SELECTORS: &[&str] = &[
    "",
    "#btn",
    "p",
    "div > > p",
    "::",
    "a[href",
    ":has(",
    "*",
    "h1:nth-child(999999999999)",
    "\0",
    "#\\31 23",
    "xpath=//p",
    "text=Press me",
    "p:contains(x)",
];

const KEYS: &[&str] = &[
    "Enter",
    "Control+A",
    "Shift+Shift",
    "+",
    "",
    "NoSuchKey",
    "a+b+c+d+e",
    "F13",
    "Meta+Alt+Control+Shift+Delete",
    "🙂",
    "\0",
];

/// A string for the param `name`, shaped by what the name means.
fn string_for(rng: &mut Rng, name: &str, places: &Places) -> String {
    let lower = name.to_ascii_lowercase();
    if rng.one_in(6) && !matches!(lower.as_str(), "url" | "path" | "bodyfile") {
        return hostile_string(rng);
    }
    match lower.as_str() {
        "url" => places.url(rng),
        "path" | "bodyfile" | "filename" => places.path(rng),
        "body" | "expression" => rng.pick(JS_BODIES).to_string(),
        "selector" => rng.pick(SELECTORS).to_string(),
        "keys" | "key" => rng.pick(KEYS).to_string(),
        "headersjson" => rng
            .pick(&[
                "{}",
                "[]",
                "{\"X-A\":\"1\"}",
                "{\"X\":\"\\u0000\"}",
                "not json",
                "{\"\":1}",
            ])
            .to_string(),
        n if n.contains("pattern") || n == "filter" => rng
            .pick(&[
                "*",
                "**/*.png",
                "http://127.0.0.1:*/**",
                "[",
                "{a,b",
                "**",
                "\\",
            ])
            .to_string(),
        _ => hostile_string(rng),
    }
}

/// Whether the param is a duration (its plausible values stay short).
fn timing(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("second")
        || n.contains("timeout")
        || n.ends_with("ms")
        || n.contains("delay")
        || n.contains("expires")
}

/// A value of the right kind for `p`, with hostile content.
fn fitting(rng: &mut Rng, p: &ParamSpec, places: &Places) -> Value {
    if timing(p.name) {
        return rng
            .pick(&[json!(0), json!(1), json!("1"), json!(0.2), json!(-1)])
            .clone();
    }
    match p.kind {
        Kind::Int => rng
            .pick(&[
                json!(0),
                json!(1),
                json!(2),
                json!(-1),
                json!(99_999),
                json!(i64::MAX),
                json!(i64::MIN),
                json!(9_007_199_254_740_993u64),
                json!("3"),
                json!(" 4 "),
                json!(""),
                json!(1e15),
            ])
            .clone(),
        Kind::Number => rng
            .pick(&[
                json!(0),
                json!(-0.0),
                json!(0.5),
                json!(f64::MAX),
                json!(-f64::MAX),
                json!(5e-324),
                json!("2.5"),
                json!(100),
                json!(1e15),
            ])
            .clone(),
        Kind::String => Value::String(string_for(rng, p.name, places)),
        Kind::Bool => rng
            .pick(&[json!(true), json!(false), json!("true"), json!("false")])
            .clone(),
        Kind::Object => {
            if rng.one_in(3) {
                json!({})
            } else {
                let n = rng.below(4);
                Value::Object(
                    (0..n)
                        .map(|_| (hostile_key(rng), hostile_value(rng, 1)))
                        .collect(),
                )
            }
        }
        Kind::Array if p.name == "commands" => steps(rng, places),
        Kind::Array => {
            let n = rng.below(4);
            Value::Array(
                (0..n)
                    .map(|_| {
                        if rng.one_in(2) {
                            json!({"id": hostile_string(rng), "prompt": hostile_value(rng, 2)})
                        } else {
                            hostile_value(rng, 1)
                        }
                    })
                    .collect(),
            )
        }
    }
}

/// A value of another kind than `kind` (numbers are strings to a string param, and `{}` an
/// empty array, so those are not used there).
fn wrong_kind(rng: &mut Rng, kind: Kind) -> Value {
    let choices: &[Value] = match kind {
        Kind::Int => &[
            json!(1.5),
            json!("abc"),
            json!(true),
            json!([]),
            json!({}),
            json!(1e20),
            json!("1e400"),
            json!("3.0"),
            json!(-0.5),
        ],
        Kind::Number => &[
            json!("abc"),
            json!("NaN"),
            json!("inf"),
            json!(true),
            json!([]),
            json!({}),
            json!("1e400"),
        ],
        Kind::String => &[
            json!(true),
            json!([]),
            json!({}),
            json!([1]),
            json!({"a": 1}),
        ],
        Kind::Bool => &[
            json!(1),
            json!(0),
            json!("yes"),
            json!("TRUE"),
            json!([]),
            json!({}),
        ],
        Kind::Object => &[json!([]), json!("x"), json!(1), json!(true), json!([1])],
        Kind::Array => &[json!({"a": 1}), json!("x"), json!(1), json!(true)],
    };
    rng.pick(choices).clone()
}

/// A value outside `p`'s range, when it has one.
fn out_of_range(rng: &mut Rng, p: &ParamSpec) -> Option<Value> {
    let (min, max) = p.range?;
    let low = min.is_finite() && (!max.is_finite() || rng.one_in(2));
    Some(match (p.kind, low) {
        (Kind::Int, true) => json!((min as i64).saturating_sub(1 + rng.below(3) as i64)),
        (Kind::Int, false) if max.is_finite() => json!((max as i64).saturating_add(1)),
        (_, true) => json!(min - 1.0),
        (_, false) if max.is_finite() => json!(max * 2.0 + 1.0),
        _ => return None,
    })
}

/// A batch's steps: known commands with params of every kind, and shapes that are no step.
fn steps(rng: &mut Rng, places: &Places) -> Value {
    let all = moonpilot::commands::registry().all();
    let n = rng.below(4);
    Value::Array(
        (0..n)
            .map(|_| match rng.below(6) {
                0 => json!({}),
                1 => Value::String(hostile_string(rng)),
                2 => json!({"get_title": {}, "get_url": {}}),
                _ => {
                    let spec = *rng.pick(all);
                    let plausible = rng.one_in(2);
                    let params = params_for(rng, spec, plausible, places);
                    let mut step = json!({ spec.name: params });
                    if rng.one_in(4) {
                        step["expect"] = hostile_value(rng, 2);
                    }
                    step
                }
            })
            .collect(),
    )
}

/// Params for `spec`: every required param and some optional ones with fitting values; unless
/// `plausible`, one defect the executor refuses before anything runs (a wrong kind, a value out
/// of range, a required param missing, params that are not an object); now and then unknown
/// fields.
fn params_for(rng: &mut Rng, spec: &CommandSpec, plausible: bool, places: &Places) -> Value {
    if !plausible && (spec.params.is_empty() || rng.one_in(8)) {
        return not_an_object(rng);
    }
    let mut map = Map::new();
    for p in spec.params {
        if p.required || rng.one_in(3) {
            map.insert(p.name.into(), fitting(rng, p, places));
        }
    }
    if !plausible {
        let p = rng.pick(spec.params);
        let defect = match rng.below(4) {
            0 if p.required && !p.absent_ok => None,
            1 => match out_of_range(rng, p) {
                Some(v) => Some(v),
                None => Some(wrong_kind(rng, p.kind)),
            },
            _ => Some(wrong_kind(rng, p.kind)),
        };
        match defect {
            Some(v) => map.insert(p.name.into(), v),
            None => map.remove(p.name),
        };
    }
    if rng.one_in(4) {
        for _ in 0..1 + rng.below(3) {
            map.insert(hostile_key(rng), hostile_value(rng, 1));
        }
    }
    Value::Object(map)
}

// ---------------------------------------------------------------------------------------------
// A keep-alive HTTP/1.1 client: raw bytes out, the whole answer in (chunked or sized), a fresh
// connection when the server closed the last one.

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        excerpt(&self.body)
    }
}

fn excerpt(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(400)];
    let more = if bytes.len() > 400 {
        format!("…({} bytes)", bytes.len())
    } else {
        String::new()
    };
    format!("{:?}{more}", String::from_utf8_lossy(shown))
}

struct Client {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    /// A connection per request.
    close: bool,
}

/// The body of a chunked answer, when `raw` holds all of it.
fn dechunk(raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let end = raw[at..].windows(2).position(|w| w == b"\r\n")? + at;
        let line = std::str::from_utf8(&raw[at..end]).ok()?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        at = end + 2;
        if size == 0 {
            return Some(out);
        }
        if raw.len() < at + size + 2 {
            return None;
        }
        out.extend_from_slice(&raw[at..at + size]);
        at += size + 2;
    }
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        Client {
            addr,
            stream: None,
            close: false,
        }
    }

    /// A client that opens a connection per request. The server does not set `TCP_NODELAY`, so
    /// an answer written in several pieces (an event stream: its events, then its end) waits
    /// for the client's delayed ACK on a kept-alive connection (40 ms, measured here: MCP in a
    /// session at p90 44 ms kept alive, 11 ms per connection); a new connection ACKs at once.
    fn per_request(addr: SocketAddr) -> Client {
        Client {
            addr,
            stream: None,
            close: true,
        }
    }

    /// One request; a reused connection the server had closed is retried once on a fresh one.
    fn send(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Answer, String> {
        for attempt in 0..2 {
            let fresh = self.stream.is_none();
            if fresh {
                let s = TcpStream::connect(self.addr).map_err(|e| format!("connect: {e}"))?;
                s.set_read_timeout(Some(Duration::from_secs(60)))
                    .map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                self.stream = Some(s);
            }
            let stream = self.stream.as_mut().expect("connected");
            let mut head = format!(
                "{method} {target} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n{}",
                self.addr,
                body.len(),
                if self.close {
                    "Connection: close\r\n"
                } else {
                    ""
                }
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let mut wire = head.into_bytes();
            wire.extend_from_slice(body);
            // A server that answers early (a body too large) may stop reading: read the answer
            // anyway.
            let wrote = stream.write_all(&wire);
            match read_answer(stream) {
                Ok((answer, keep)) => {
                    if !keep {
                        self.stream = None;
                    }
                    return Ok(answer);
                }
                Err(e) => {
                    self.stream = None;
                    if fresh || attempt == 1 || !e.nothing_read {
                        return Err(format!("{} (write: {wrote:?})", e.what));
                    }
                }
            }
        }
        Err("no answer".into())
    }
}

struct ReadError {
    what: String,
    nothing_read: bool,
}

/// Reads one answer; `true` when the connection stays open.
fn read_answer(stream: &mut TcpStream) -> Result<(Answer, bool), ReadError> {
    let mut raw: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut read_more = |raw: &mut Vec<u8>| -> Result<usize, ReadError> {
        loop {
            match stream.read(&mut chunk) {
                Ok(n) => {
                    raw.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                // A signal (Chromium's end after `shutdown`: SIGCHLD) is no answer.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ReadError {
                        what: format!("read: {e}"),
                        nothing_read: false,
                    })
                }
            }
        }
    };
    let split = loop {
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let empty = raw.is_empty();
        if read_more(&mut raw).map_err(|mut e| {
            e.nothing_read = empty;
            e
        })? == 0
        {
            return Err(ReadError {
                what: format!("the connection closed: {}", excerpt(&raw)),
                nothing_read: empty,
            });
        }
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ReadError {
            what: format!("no status line: {head:?}"),
            nothing_read: false,
        })?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut keep = find("connection").is_none_or(|c| !c.contains("close"));
    let start = split + 4;
    let body = if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            if raw.ends_with(b"0\r\n\r\n") {
                if let Some(body) = dechunk(&raw[start..]) {
                    break body;
                }
            }
            if read_more(&mut raw)? == 0 {
                keep = false;
                break dechunk(&raw[start..]).unwrap_or_else(|| raw[start..].to_vec());
            }
        }
    } else if let Some(len) = find("content-length").and_then(|l| l.parse::<usize>().ok()) {
        while raw.len() < start + len {
            if read_more(&mut raw)? == 0 {
                keep = false;
                break;
            }
        }
        raw[start..(start + len).min(raw.len())].to_vec()
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        Vec::new()
    } else {
        while read_more(&mut raw)? > 0 {}
        keep = false;
        raw[start..].to_vec()
    };
    Ok((
        Answer {
            status,
            headers,
            body,
        },
        keep,
    ))
}

// ---------------------------------------------------------------------------------------------
// The figures and the failures of one door.

struct Tally {
    door: String,
    sent: usize,
    bytes: usize,
    answers: BTreeMap<String, usize>,
    failures: Vec<String>,
    failed: usize,
    t0: Instant,
    /// When the last body was answered (a body's time runs from there: generation included).
    mark: Instant,
    /// The slowest bodies: time, what was sent.
    slowest: Vec<(Duration, String)>,
    /// The time at the last body, frozen by `print`.
    took: Option<Duration>,
    /// Every body's time, in microseconds (for the percentiles).
    times: Vec<u64>,
}

impl Tally {
    fn new(door: &str) -> Tally {
        Tally {
            door: door.to_string(),
            sent: 0,
            bytes: 0,
            answers: BTreeMap::new(),
            failures: Vec::new(),
            failed: 0,
            t0: Instant::now(),
            mark: Instant::now(),
            slowest: Vec::new(),
            took: None,
            times: Vec::new(),
        }
    }

    /// Adds `other`'s bodies (run on another thread) to these.
    fn absorb(&mut self, other: Tally) {
        self.sent += other.sent;
        self.bytes += other.bytes;
        for (kind, n) in other.answers {
            *self.answers.entry(kind).or_default() += n;
        }
        self.failures.extend(other.failures);
        self.failures.truncate(12);
        self.failed += other.failed;
        self.times.extend(other.times);
        self.slowest.extend(other.slowest);
        self.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        self.slowest.truncate(3);
    }

    /// Starts the clock of the next body (after work that is not one, such as reopening).
    fn restart(&mut self) {
        self.mark = Instant::now();
    }

    /// Records the answer to `body` as `verdict` (the answer's kind, or why it is wrong).
    fn record(&mut self, what: &str, body: &[u8], verdict: Result<String, String>) {
        self.sent += 1;
        self.bytes += body.len();
        let took = self.mark.elapsed();
        self.mark = Instant::now();
        self.times.push(took.as_micros() as u64);
        if self.slowest.len() < 3 || took > self.slowest[2].0 {
            let shown: String = format!("{what} {}", excerpt(body))
                .chars()
                .take(160)
                .collect();
            self.slowest.push((took, shown));
            self.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
            self.slowest.truncate(3);
        }
        match verdict {
            Ok(kind) => *self.answers.entry(kind).or_default() += 1,
            Err(why) => {
                self.failed += 1;
                *self.answers.entry("FAILED".into()).or_default() += 1;
                if self.failures.len() < 12 {
                    self.failures
                        .push(format!("{what} {}\n    -> {why}", excerpt(body)));
                }
            }
        }
    }

    fn print(&mut self) {
        let secs = self.took.get_or_insert(self.t0.elapsed()).as_secs_f64();
        eprintln!(
            "fuzz_doors: {}: {} bodies ({:.1} MiB) in {secs:.1} s ({:.0}/s), seed {}",
            self.door,
            self.sent,
            self.bytes as f64 / 1048576.0,
            self.sent as f64 / secs.max(1e-9),
            seed()
        );
        let mut times = self.times.clone();
        times.sort_unstable();
        let at = |q: f64| {
            times
                .get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)))
                .map_or(0.0, |us| *us as f64 / 1000.0)
        };
        eprintln!(
            "    per body: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms",
            at(0.5),
            at(0.9),
            at(0.99)
        );
        for (kind, n) in &self.answers {
            eprintln!("    {n:>6}  {kind}");
        }
        for (took, what) in &self.slowest {
            eprintln!(
                "    slowest: {:>6.0} ms  {what}",
                took.as_secs_f64() * 1000.0
            );
        }
    }

    /// Prints the figures; fails with the first bodies that got a wrong answer.
    fn finish(&mut self) {
        if self.took.is_none() {
            self.print();
        }
        assert!(
            self.failures.is_empty(),
            "{}: {} of {} answers were not typed failures of the door; the first:\n  {}",
            self.door,
            self.failed,
            self.sent,
            self.failures.join("\n  ")
        );
    }
}

/// A message a typed failure must never carry: a panic caught on the way out.
fn panicky(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("internal error") || t.contains("panicked") || t.contains("stack overflow")
}

// ---------------------------------------------------------------------------------------------
// A private engine per door: its own Chromium and state directory, short command bounds.

struct Door {
    runtime: tokio::runtime::Runtime,
    executor: Executor,
    dir: PathBuf,
}

impl Door {
    fn new(name: &str) -> Door {
        // The fixture server is the shared one.
        harness();
        let dir =
            std::env::temp_dir().join(format!("moonpilot-fuzz-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = test_config();
        config.data_dir = dir.join("data");
        config.upload_dir = dir.join("upload");
        config.trace_dir = None;
        config.capture = false;
        // A command that does pass validation is over in 2 s at most.
        config.command_timeout = Duration::from_secs(2);
        config.long_command_timeout = Duration::from_secs(2);
        config.action_timeout_ms = 300;
        config.eval_timeout_ms = 1000;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_stack_size(moonpilot::signal::WORKER_STACK)
            .enable_all()
            .build()
            .unwrap();
        let executor = Executor::new(Engine::new(config), moonpilot::lua::recipe_host());
        Door {
            runtime,
            executor,
            dir,
        }
    }

    fn exec(&self, task: Option<TaskId>, method: &str, params: Value) -> Receipt {
        let executor = self.executor.clone();
        let method = method.to_string();
        self.runtime
            .block_on(async move { executor.execute(task, &method, params).await })
    }

    /// A live task (the browser launched if need be).
    fn task(&self) -> TaskId {
        let r = self.exec(None, "start", json!({}));
        assert!(r.ok, "start: {:?}", r.msg);
        TaskId(r.data["id"].as_str().unwrap().parse().unwrap())
    }

    fn alive(&self, task: TaskId) -> bool {
        self.executor.engine().task(task).is_some()
    }

    /// The seed protocol's server (with `/mcp` when `mcp`).
    fn serve(&self, mcp: bool) -> SocketAddr {
        let executor = self.executor.clone();
        let opts = ServeOptions {
            port: 0,
            // Small bounds, so that "too large" is cheap to reach.
            max_body_bytes: 2 * 1024 * 1024,
            upload_max_bytes: 64 * 1024,
            mcp: mcp.then(McpOptions::default),
            ..ServeOptions::default()
        };
        self.runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(serve(executor, listener, opts, std::future::pending()));
            addr
        })
    }

    fn serve_splash(&self) -> SocketAddr {
        let executor = self.executor.clone();
        let opts = SplashOptions {
            port: 0,
            max_timeout: 3.0,
            ..SplashOptions::default()
        };
        self.runtime.block_on(async move {
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
}

impl Drop for Door {
    fn drop(&mut self) {
        let engine = self.executor.engine().clone();
        self.runtime.block_on(async move {
            engine.shutdown().await;
        });
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every listed and unlisted command.
fn all_specs() -> Vec<&'static CommandSpec> {
    let registry = moonpilot::commands::registry();
    registry
        .all()
        .iter()
        .chain(registry.unlisted())
        .copied()
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The seed protocol: `/playwright/command` and `/playwright/upload`.

/// 1 in this many known-command bodies has params that may pass validation and run.
const SEED_PLAUSIBLE: usize = 40;

/// One body for `/playwright/command`.
fn seed_body(
    rng: &mut Rng,
    task: TaskId,
    specs: &[&'static CommandSpec],
    places: &Places,
) -> Vec<u8> {
    let pick = rng.below(100);
    if pick < 15 {
        let spec = *rng.pick(specs);
        let valid = json!({"id": task.0, "method": spec.name, "params": {}}).to_string();
        return malformed(rng, valid.as_bytes());
    }
    if pick < 25 {
        // Wrong types for every envelope field.
        let mut body = Map::new();
        let spec = *rng.pick(specs);
        body.insert(
            "method".into(),
            if rng.one_in(3) {
                json!(spec.name)
            } else {
                rng.pick(&[
                    json!(5),
                    json!(null),
                    json!([]),
                    json!({}),
                    json!(true),
                    json!(["get_title"]),
                    json!("  "),
                ])
                .clone()
            },
        );
        if rng.one_in(2) {
            body.insert(
                "id".into(),
                rng.pick(&[
                    json!({}),
                    json!([]),
                    json!(-1),
                    json!(1.5),
                    json!("abc"),
                    json!(u64::MAX),
                    json!(1.8e19),
                    json!(true),
                    json!(" 7 "),
                    json!(-0.0),
                    json!(""),
                ])
                .clone(),
            );
        }
        if rng.one_in(2) {
            body.insert("params".into(), not_an_object(rng));
        }
        if rng.one_in(3) {
            body.insert("responseMode".into(), hostile_value(rng, 2));
        }
        if rng.one_in(3) {
            body.insert("diagnostics".into(), hostile_value(rng, 2));
        }
        return Value::Object(body).to_string().into_bytes();
    }
    if pick < 32 {
        // Unknown and hostile method names.
        let method = match rng.below(4) {
            0 => hostile_string(rng),
            1 => format!("{}x", rng.pick(specs).name),
            2 => rng.pick(specs).name.to_uppercase(),
            _ => {
                let n = 1 + rng.below(30);
                random_text(rng, n)
            }
        };
        return json!({"id": task.0, "method": method, "params": hostile_value(rng, 1)})
            .to_string()
            .into_bytes();
    }
    if pick < 36 {
        // Number texts where numbers go, as the client wrote them.
        let spec = *rng.pick(specs);
        let n = *rng.pick(NUMBER_TEXTS);
        let param = spec.params.first().map_or("index", |p| p.name);
        return format!(
            "{{\"id\":{},\"method\":\"{}\",\"params\":{{\"{param}\":{n}}}}}",
            if rng.one_in(2) {
                n.to_string()
            } else {
                task.0.to_string()
            },
            spec.name
        )
        .into_bytes();
    }
    // A known command, addressed to the live task (mostly), with generated params.
    let spec = *rng.pick(specs);
    let plausible = rng.one_in(SEED_PLAUSIBLE);
    let mut body = json!({"method": spec.name, "params": params_for(rng, spec, plausible, places)});
    match rng.below(20) {
        0..=13 => body["id"] = json!(task.0),
        14 | 15 => body["id"] = json!(task.0.to_string()),
        16 => {}
        17 => body["id"] = json!(12_345),
        _ => body["id"] = hostile_number(rng),
    }
    if rng.one_in(10) {
        body["responseMode"] = rng
            .pick(&[json!("compact"), json!("COMPACT"), json!(5)])
            .clone();
    }
    if rng.one_in(10) {
        body["diagnostics"] = rng.pick(&[json!(true), json!("true"), json!(1)]).clone();
    }
    if rng.one_in(8) {
        body[hostile_key(rng)] = hostile_value(rng, 1);
    }
    body.to_string().into_bytes()
}

/// The seed's envelope: `{ok, code:1|0, data?, msg?}`; a failure carries a known code (never
/// `INTERNAL`) in `data.errorCode`, or is an entry failure (`{ok:false, code:0, msg}`).
fn check_seed(a: &Answer) -> Result<String, String> {
    if a.status >= 500 {
        return Err(format!("HTTP {}: {}", a.status, a.text()));
    }
    let v: Value = serde_json::from_slice(&a.body)
        .map_err(|e| format!("HTTP {}, not JSON ({e}): {}", a.status, a.text()))?;
    let ok = v["ok"]
        .as_bool()
        .ok_or_else(|| format!("no `ok`: {}", a.text()))?;
    if v["code"] != json!(if ok { 1 } else { 0 }) {
        return Err(format!("`code` does not match `ok`: {}", a.text()));
    }
    if ok {
        return if a.status == 200 {
            Ok("200 ok".into())
        } else {
            Err(format!("ok with HTTP {}", a.status))
        };
    }
    let msg = v["msg"]
        .as_str()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| format!("a failure without `msg`: {}", a.text()))?;
    if panicky(msg) {
        return Err(format!("a panic's message: {}", a.text()));
    }
    match v.get("data").and_then(|d| d.get("errorCode")) {
        Some(code) => {
            let code = code
                .as_str()
                .and_then(ErrorCode::parse)
                .ok_or_else(|| format!("an unknown error code: {}", a.text()))?;
            if code == ErrorCode::Internal {
                return Err(format!("INTERNAL: {}", a.text()));
            }
            if (a.status == 400) != (code == ErrorCode::InvalidArgument) {
                return Err(format!("{code} with HTTP {}", a.status));
            }
            Ok(format!("{} {code}", a.status))
        }
        None => {
            if v.as_object().map_or(0, Map::len) != 3 || !matches!(a.status, 200 | 413) {
                return Err(format!(
                    "an entry failure is {{ok, code, msg}} with 200 or 413: HTTP {} {}",
                    a.status,
                    a.text()
                ));
            }
            let reason = msg.split(':').next().unwrap_or(msg);
            let reason: String = reason.chars().take(48).collect();
            Ok(format!("{} entry: {reason}", a.status))
        }
    }
}

#[test]
fn the_seed_protocol_answers_hostile_bodies_with_typed_failures() {
    let door = Door::new("seed");
    let places = Places::new(&door.dir);
    let addr = door.serve(false);
    let canary = door.dir.join("canary.txt");
    std::fs::write(&canary, "keep me").unwrap();
    let upload_dir = door.dir.join("upload");
    let (mut tally, mut uploads, task) = std::thread::scope(|scope| {
        // `/playwright/upload` beside the commands: JSON, multipart, raw bytes; hostile names in
        // the query and headers; list and delete. A staged file stays in the upload directory;
        // a file beside it survives.
        let uploading = scope.spawn(|| {
            let mut rng = Rng::new(seed() ^ 0x7570_6c6f_6164);
            let mut client = Client::new(addr);
            let mut uploads = Tally::new("/playwright/upload");
            for _ in 0..bodies() {
                let (method, target, headers, body) = upload_request(&mut rng);
                let header_refs: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let verdict = client
                    .send(method, &target, &header_refs, &body)
                    .and_then(|a| {
                        let kind = check_seed(&a)?;
                        let v: Value = serde_json::from_slice(&a.body).unwrap_or_default();
                        if let Some(path) = v["data"]["path"].as_str() {
                            let staged = Path::new(path);
                            if !staged.starts_with(&upload_dir)
                                || staged
                                    .components()
                                    .any(|c| c == std::path::Component::ParentDir)
                            {
                                return Err(format!("staged outside the upload directory: {path}"));
                            }
                        }
                        Ok(format!("{method} {kind}"))
                    });
                uploads.record(&format!("{method} {target}"), &body, verdict);
            }
            uploads.print();
            uploads
        });
        let specs = all_specs();
        let mut rng = Rng::new(seed());
        let mut task = door.task();
        let mut client = Client::new(addr);
        let mut tally = Tally::new("POST /playwright/command");
        let mut relaunched = 0;
        for _ in 0..bodies() {
            let body = seed_body(&mut rng, task, &specs, &places);
            let answer = client.send(
                "POST",
                "/playwright/command",
                &[("Content-Type", "application/json")],
                &body,
            );
            let verdict = answer.and_then(|a| {
                let kind = check_seed(&a)?;
                // A `start` that ran made a task: closed again (not counted).
                if let Ok(v) = serde_json::from_slice::<Value>(&a.body) {
                    if let Some(id) = v["data"]["id"].as_str().and_then(|s| s.parse().ok()) {
                        if v["ok"] == true && TaskId(id) != task {
                            door.exec(Some(TaskId(id)), "close", json!({}));
                        }
                    }
                }
                Ok(kind)
            });
            tally.record("POST /playwright/command", &body, verdict);
            // `close`, `shutdown` and a batch of them end the task: a new one (not counted).
            if !door.alive(task) {
                task = door.task();
                relaunched += 1;
                tally.restart();
            }
        }
        eprintln!(
            "fuzz_doors: the fuzz task was closed (close, shutdown) and opened again {relaunched} times"
        );
        tally.print();
        (tally, uploading.join().expect("the upload fuzzer"), task)
    });
    assert!(
        canary.exists(),
        "a hostile upload name deleted a file outside the upload directory"
    );

    // Still serving.
    let mut client = Client::new(addr);
    let health = client
        .send("GET", "/playwright/health", &[], b"")
        .expect("health answers");
    assert_eq!(health.status, 200, "{}", health.text());
    let r = client
        .send(
            "POST",
            "/playwright/command",
            &[("Content-Type", "application/json")],
            json!({"id": task.0, "method": "get_url", "params": {}})
                .to_string()
                .as_bytes(),
        )
        .expect("a command answers");
    assert_eq!(r.status, 200, "{}", r.text());
    tally.finish();
    uploads.finish();
}

/// A name for the query or a header: traversal, NUL, separators, huge, non-UTF-8 escapes.
fn hostile_name(rng: &mut Rng) -> String {
    rng.pick(&[
        "../canary.txt",
        "..%2Fcanary.txt",
        "%2e%2e%2fcanary.txt",
        "/etc/passwd",
        "a%00b.txt",
        "%ff%fe.bin",
        "..",
        ".",
        "",
        "con",
        "a/b/c.txt",
        "..\\canary.txt",
        "%E6%8A%A5%E5%91%8A.pdf",
        "x.txt",
        "+%20+.txt",
    ])
    .to_string()
}

/// One request for `/playwright/upload`.
fn upload_request(rng: &mut Rng) -> (&'static str, String, Vec<(String, String)>, Vec<u8>) {
    // A listing reads every staged file: a few of them.
    let method = if rng.one_in(50) {
        "GET"
    } else {
        *rng.pick(&[
            "POST", "POST", "POST", "POST", "POST", "POST", "DELETE", "PUT",
        ])
    };
    let mut query = Vec::new();
    for key in ["filename", "name", "field"] {
        // Named mostly (a handful of files, overwritten), now and then not (a generated name).
        let present = if key == "filename" {
            !rng.one_in(10)
        } else {
            rng.one_in(3)
        };
        if present {
            let value = if rng.one_in(8) {
                "n".repeat(1 << (6 + rng.below(8)))
            } else {
                hostile_name(rng)
            };
            query.push(format!("{key}={value}"));
        }
    }
    let target = if query.is_empty() {
        "/playwright/upload".to_string()
    } else {
        format!("/playwright/upload?{}", query.join("&"))
    };
    let mut headers = Vec::new();
    if rng.one_in(4) {
        headers.push(("X-Filename".to_string(), hostile_name(rng)));
    }
    let kind = rng.below(6);
    let boundary = "fuzzB0undary";
    let content_type = match kind {
        0 => Some("application/json".to_string()),
        1 => Some(format!("multipart/form-data; boundary={boundary}")),
        2 => Some(
            rng.pick(&[
                "multipart/form-data",
                "multipart/form-data; boundary=",
                "multipart/form-data; boundary=\"\"",
                "application/json; charset=utf-16",
                "text/plain",
            ])
            .to_string(),
        ),
        3 => Some("application/octet-stream".into()),
        _ => None,
    };
    if let Some(ct) = content_type {
        headers.push(("Content-Type".to_string(), ct));
    }
    let body = match kind {
        0 => {
            let v = match rng.below(5) {
                0 => {
                    json!({"filename": hostile_name(rng), "contentBase64": rng.pick(&["aGVsbG8=", "", "!!!", "aGVsbG8", "====", "a"]).to_string()})
                }
                1 => json!({"filename": hostile_value(rng, 2), "content": hostile_value(rng, 2)}),
                2 => json!({"contentBase64": "A".repeat(1 << (4 + rng.below(17)))}),
                3 => not_an_object(rng),
                _ => hostile_value(rng, 0),
            };
            if rng.one_in(5) {
                malformed(rng, v.to_string().as_bytes())
            } else {
                v.to_string().into_bytes()
            }
        }
        1 => {
            let mut b = Vec::new();
            for _ in 0..rng.below(3) {
                let field = *rng.pick(&["file", "other", "", "\"file\""]);
                let filename = hostile_name(rng);
                b.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\nContent-Type: {}\r\n\r\n",
                        rng.pick(&["image/png", "text/plain", "", "\0"])
                    )
                    .as_bytes(),
                );
                let n = rng.below(512);
                b.extend((0..n).map(|_| rng.next() as u8));
                b.extend_from_slice(b"\r\n");
            }
            if rng.one_in(4) {
                let at = rng.below(b.len() + 1);
                b.truncate(at);
            } else {
                b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            }
            b
        }
        _ => {
            let n = if rng.one_in(200) {
                1_200_000
            } else if rng.one_in(4) {
                0
            } else {
                rng.below(4096)
            };
            (0..n).map(|_| rng.next() as u8).collect()
        }
    };
    (method, target, headers, body)
}

// ---------------------------------------------------------------------------------------------
// MCP at `/mcp`: before initialize and inside a session.

const MCP_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2025-11-25"),
];

/// The JSON-RPC messages of an answer: one JSON body, or the `data:` lines of an event stream.
fn rpc_messages(a: &Answer) -> Result<Vec<Value>, String> {
    let ct = a.header("content-type").unwrap_or_default();
    let text = String::from_utf8_lossy(&a.body);
    if ct.contains("text/event-stream") {
        let mut out = Vec::new();
        for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
            let data = data.trim();
            if data.is_empty() {
                continue;
            }
            out.push(
                serde_json::from_str(data)
                    .map_err(|e| format!("an event that is not JSON ({e}): {data}"))?,
            );
        }
        Ok(out)
    } else if ct.contains("application/json") {
        match serde_json::from_slice(&a.body) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(v) => Ok(vec![v]),
            Err(e) => Err(format!("JSON content that is not JSON ({e}): {}", a.text())),
        }
    } else {
        Err(format!(
            "HTTP {} with an untyped body ({ct:?}): {}",
            a.status,
            a.text()
        ))
    }
}

/// A JSON-RPC message the server sent: an error with an integer code (never -32603, internal),
/// a tool result whose failure carries a known code (never `INTERNAL`), or anything else well
/// formed. Answers its kind.
fn check_rpc(m: &Value) -> Result<String, String> {
    if m["jsonrpc"] != "2.0" {
        return Err(format!("not JSON-RPC 2.0: {m}"));
    }
    if let Some(e) = m.get("error") {
        let code = e["code"]
            .as_i64()
            .ok_or_else(|| format!("an error without an integer code: {m}"))?;
        let msg = e["message"]
            .as_str()
            .ok_or_else(|| format!("an error without a message: {m}"))?;
        if code == -32603 || panicky(msg) {
            return Err(format!("an internal error: {m}"));
        }
        return Ok(format!("error {code}"));
    }
    let Some(result) = m.get("result") else {
        // A notification or a request of the server's (a log line, progress).
        return Ok(m["method"].as_str().unwrap_or("message").to_string());
    };
    match result.get("isError").and_then(Value::as_bool) {
        Some(true) => {
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            if panicky(text) {
                return Err(format!("a tool error with a panic's text: {m}"));
            }
            let code = result["structuredContent"]["code"].as_str();
            match code {
                Some(c) => match ErrorCode::parse(c) {
                    Some(ErrorCode::Internal) | None => Err(format!("tool error code {c}: {m}")),
                    Some(code) => Ok(format!("tool error {code}")),
                },
                // run_lua's failures: the script's error, in its text.
                None => Ok("tool error (script)".into()),
            }
        }
        Some(false) => Ok("tool ok".into()),
        None => Ok("result".into()),
    }
}

/// An answer of `/mcp`: never 5xx, and typed: JSON-RPC messages (or an accepted notification).
fn check_mcp(a: &Answer) -> Result<String, String> {
    if a.status >= 500 {
        return Err(format!("HTTP {}: {}", a.status, a.text()));
    }
    if a.status == 202 && a.body.is_empty() {
        return Ok("202 accepted".into());
    }
    let msgs = rpc_messages(a)?;
    if msgs.is_empty() {
        return Err(format!("HTTP {} with no JSON-RPC message", a.status));
    }
    let mut last = String::new();
    for m in &msgs {
        last = check_rpc(m)?;
    }
    Ok(format!("{} {last}", a.status))
}

/// A JSON-RPC id: mostly fine, sometimes not one.
fn rpc_id(rng: &mut Rng, n: u64) -> Value {
    match rng.below(12) {
        0 => json!(n.to_string()),
        1 => rng
            .pick(&[
                json!({}),
                json!([]),
                json!(1.5),
                json!(true),
                json!(null),
                json!(u64::MAX),
                json!(-1),
                json!(""),
                json!(i64::MIN),
            ])
            .clone(),
        2 => Value::String(hostile_string(rng)),
        _ => json!(n),
    }
}

const MCP_METHODS: &[&str] = &[
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "ping",
    "initialize",
    "roots/list",
    "sampling/createMessage",
    "elicitation/create",
    "tasks/list",
];

/// Lua that a tool call's `run_lua` gets: hostile values into commands, errors that are no
/// string, values with no JSON form, the sandbox's walls. Each runs in under a second or is
/// bounded by its `timeoutSeconds`.
const RUN_LUA_SCRIPTS: &[&str] = &[
    "return 1",
    "return page:get_title().data",
    "return page:mouse_move{x = 0/0, y = 1}.code",
    "return page:get_element_count{selector = setmetatable({}, {__index = function() error('trap') end})}.code",
    "local t = {} t.t = t return page:execute_js{body = 'return 1', vars = t}.code",
    "local t = {} t.t = t return t",
    "error({code = 'X'})",
    "error(setmetatable({}, {__tostring = function() error('tostring trap') end}))",
    "error()",
    "error(nil)",
    "return print",
    "return coroutine.create(print)",
    "return '\\xff\\xfe'",
    "return 0/0",
    "return {[1.5] = 1}",
    "return {1, 2, a = 3}",
    "return browser.call('\\xff\\xfe')",
    "return browser.call('shutdown')",
    "return browser.task(0/0)",
    "return string.rep('x', 1e9)",
    "local d = {} local c = d for i = 1, 100000 do c[1] = {} c = c[1] end return d",
    "return (nil)()",
    "return io.open('/etc/passwd')",
    "return page:get_title(5)",
    "return page:get_title('\\0')",
    "return page:call('\\xff', {})",
    "syntax error (",
    "",
];

/// A body for `/mcp` (its id is `n` when it has one).
fn mcp_body(rng: &mut Rng, n: u64, tools: &[String], places: &Places) -> Vec<u8> {
    let specs = moonpilot::commands::registry();
    let pick = rng.below(20);
    let msg = match pick {
        0..=9 => {
            let name = if rng.one_in(12) {
                if rng.one_in(2) {
                    hostile_string(rng)
                } else {
                    format!("{}_", rng.pick(tools))
                }
            } else {
                rng.pick(tools).clone()
            };
            let plausible = rng.one_in(40);
            let arguments = if name == "run_lua" {
                let script = *rng.pick(RUN_LUA_SCRIPTS);
                let mut args = json!({"script": script, "timeoutSeconds": 2});
                if rng.one_in(3) {
                    args["args"] = hostile_value(rng, 1);
                }
                if rng.one_in(4) {
                    args["timeoutSeconds"] = rng.pick(&[json!(0), json!(1e308), json!("x"), json!(-1), json!(1)]).clone();
                }
                if rng.one_in(5) {
                    args[hostile_key(rng)] = json!(1);
                }
                args
            } else if let Some(spec) = specs.lookup(&name).filter(|_| !rng.one_in(15)) {
                // Human input would wait for an answer: its tools get defective arguments only.
                let plausible = plausible && !matches!(spec.name, "request_human_input" | "ask_user" | "submit_human_input" | "get_human_input");
                params_for(rng, spec, plausible, places)
            } else {
                hostile_value(rng, 0)
            };
            let mut params = json!({"name": name, "arguments": arguments});
            if rng.one_in(10) {
                params["_meta"] = hostile_value(rng, 1);
            }
            if rng.one_in(20) {
                params = not_an_object(rng);
            }
            json!({"jsonrpc": "2.0", "id": rpc_id(rng, n), "method": "tools/call", "params": params})
        }
        10 => json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": rng.pick(&[json!({}), json!({"name": 5}), json!({"name": "navigate", "arguments": "x"}), json!({"name": "navigate", "arguments": null}), json!({"arguments": {}})]).clone()}),
        11 => {
            let method = *rng.pick(MCP_METHODS);
            let params = match method {
                "resources/read" => json!({"uri": rng.pick(&["moonpilot://evidence/1/x.png", "moonpilot://evidence/../../etc/passwd", "file:///etc/passwd", "", "\0"]).to_string()}),
                "logging/setLevel" => json!({"level": hostile_value(rng, 1)}),
                "initialize" => json!({"protocolVersion": hostile_value(rng, 1), "capabilities": hostile_value(rng, 1), "clientInfo": hostile_value(rng, 1)}),
                _ => hostile_value(rng, 1),
            };
            json!({"jsonrpc": "2.0", "id": rpc_id(rng, n), "method": method, "params": params})
        }
        12 => {
            let method = hostile_string(rng);
            let mut m = json!({"jsonrpc": "2.0", "method": method, "params": hostile_value(rng, 1)});
            if rng.one_in(2) {
                m["id"] = json!(n);
            }
            m
        }
        13 => {
            let method = *rng.pick(&[
                "notifications/cancelled",
                "notifications/progress",
                "notifications/initialized",
                "notifications/roots/list_changed",
                "notifications/message",
                "notifications/nope",
            ]);
            json!({"jsonrpc": "2.0", "method": method, "params": {"requestId": hostile_value(rng, 2), "progressToken": hostile_value(rng, 2), "progress": hostile_number(rng), "reason": hostile_value(rng, 2)}})
        }
        14 => rng
            .pick(&[
                json!({"jsonrpc": "2.0", "id": 987_654, "result": {}}),
                json!({"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "m"}}),
                json!({"jsonrpc": "2.0", "id": n, "result": null}),
                json!({"jsonrpc": "2.0", "id": n, "error": {"code": "x"}}),
            ])
            .clone(),
        15 => {
            let mut m = json!({"id": n, "method": "tools/list"});
            match rng.below(5) {
                0 => m["jsonrpc"] = json!("1.0"),
                1 => m["jsonrpc"] = json!(2.0),
                2 => {}
                3 => m["method"] = rng.pick(&[json!(5), json!(null), json!([]), json!({})]).clone(),
                _ => {
                    m["jsonrpc"] = json!("2.0");
                    m["params"] = not_an_object(rng);
                }
            }
            m
        }
        16 => rng
            .pick(&[
                json!([]),
                json!([1, 2]),
                json!([{"jsonrpc": "2.0", "id": n, "method": "ping"}, {"jsonrpc": "2.0", "id": n + 1, "method": "tools/list"}]),
            ])
            .clone(),
        _ => {
            let valid = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": rng.pick(tools), "arguments": {}}});
            return malformed(rng, valid.to_string().as_bytes());
        }
    };
    msg.to_string().into_bytes()
}

/// Headers for a message outside a session: the right ones mostly, sometimes not.
fn mcp_headers(rng: &mut Rng) -> Vec<(&'static str, String)> {
    let mut h: Vec<(&'static str, String)> = MCP_HEADERS
        .iter()
        .map(|(k, v)| (*k, v.to_string()))
        .collect();
    match rng.below(12) {
        0 => h[1].1 = "application/json".into(),
        1 => h[1].1 = "*/*".into(),
        2 => h[0].1 = "text/plain".into(),
        3 => {
            h[2].1 = rng
                .pick(&["1999-01-01", "", "2025-11-25, 2025-06-18", "x"])
                .to_string()
        }
        4 => h.push((
            "Mcp-Session-Id",
            rng.pick(&["nope", "", "0", "../../x"]).to_string(),
        )),
        5 => {
            h.remove(2);
        }
        _ => {}
    }
    h
}

/// Opens a session over HTTP: its id.
fn mcp_open(client: &mut Client) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "moonpilot-fuzz", "version": "1"}}});
    let a = client
        .send("POST", "/mcp", MCP_HEADERS, init.to_string().as_bytes())
        .expect("initialize answers");
    assert_eq!(a.status, 200, "{}", a.text());
    let id = a
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", id.as_str()));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let a = client
        .send("POST", "/mcp", &headers, note.to_string().as_bytes())
        .expect("initialized answers");
    assert!(a.status == 202 || a.status == 200, "{}", a.text());
    id
}

#[test]
fn mcp_answers_hostile_messages_with_json_rpc_errors_or_tool_errors() {
    let door = Door::new("mcp");
    let places = Places::new(&door.dir);
    let addr = door.serve(true);
    let mut rng = Rng::new(seed() ^ 0x006d_6370);
    let mut client = Client::per_request(addr);
    let mut session = mcp_open(&mut client);
    // The tools the session offers (not counted).
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", session.as_str()));
    let list = client
        .send(
            "POST",
            "/mcp",
            &headers,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                .to_string()
                .as_bytes(),
        )
        .expect("tools/list answers");
    let tools: Vec<String> = rpc_messages(&list)
        .unwrap()
        .iter()
        .flat_map(|m| m["result"]["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        tools.iter().any(|t| t == "navigate") && tools.iter().any(|t| t == "run_lua"),
        "{}",
        list.text()
    );

    let mut outside = Tally::new("POST /mcp outside a session");
    let mut inside = Tally::new("POST /mcp in a session");
    // Every hostile script once through `run_lua`, bounded by its timeout.
    for (i, script) in RUN_LUA_SCRIPTS.iter().enumerate() {
        let body = json!({"jsonrpc": "2.0", "id": 100_000 + i, "method": "tools/call",
            "params": {"name": "run_lua", "arguments": {"script": script, "timeoutSeconds": 2}}})
        .to_string()
        .into_bytes();
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("Mcp-Session-Id", session.as_str()));
        let verdict = client
            .send("POST", "/mcp", &headers, &body)
            .and_then(|a| check_mcp(&a));
        inside.record("run_lua", &body, verdict);
    }
    let mut reopened = 0;
    for n in 0..bodies() as u64 {
        let id = 10 + n;
        if rng.one_in(3) {
            // Outside a session: any message, the right headers or not; an initialize now and
            // then (a session opened and left).
            outside.restart();
            let body = if rng.one_in(60) {
                json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                    "protocolVersion": *rng.pick(&["2025-11-25", "2025-06-18", "2024-11-05", "1.0", ""]),
                    "capabilities": hostile_value(&mut rng, 2),
                    "clientInfo": {"name": hostile_string(&mut rng), "version": "1"}}})
                .to_string()
                .into_bytes()
            } else {
                mcp_body(&mut rng, id, &tools, &places)
            };
            let headers = mcp_headers(&mut rng);
            let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let verdict = client
                .send("POST", "/mcp", &refs, &body)
                .and_then(|a| check_mcp(&a));
            outside.record("outside", &body, verdict);
        } else {
            inside.restart();
            let body = mcp_body(&mut rng, id, &tools, &places);
            let mut headers = MCP_HEADERS.to_vec();
            headers.push(("Mcp-Session-Id", session.as_str()));
            let answer = client.send("POST", "/mcp", &headers, &body);
            // A session the server ended (it should not): a new one, counted.
            let lost = answer
                .as_ref()
                .is_ok_and(|a| a.status == 404 && a.text().contains("Session not found"));
            inside.record("inside", &body, answer.and_then(|a| check_mcp(&a)));
            if lost {
                session = mcp_open(&mut client);
                reopened += 1;
            }
        }
    }
    eprintln!("fuzz_doors: MCP sessions reopened: {reopened}");
    // Still serving: a new session lists its tools.
    let fresh = mcp_open(&mut client);
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", fresh.as_str()));
    let list = client
        .send(
            "POST",
            "/mcp",
            &headers,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                .to_string()
                .as_bytes(),
        )
        .expect("tools/list answers");
    assert_eq!(list.status, 200, "{}", list.text());
    let health = client
        .send("GET", "/playwright/health", &[], b"")
        .expect("health answers");
    assert_eq!(health.status, 200, "{}", health.text());
    outside.print();
    inside.finish();
    outside.finish();
}

// ---------------------------------------------------------------------------------------------
// Splash's HTTP API: each endpoint and `/_ping`.

const SPLASH_ENDPOINTS: &[&str] = &[
    "/render.html",
    "/render.png",
    "/render.jpeg",
    "/render.json",
    "/render.har",
    "/execute",
    "/run",
];

const SPLASH_ARGS: &[&str] = &[
    "url",
    "baseurl",
    "timeout",
    "resource_timeout",
    "wait",
    "proxy",
    "js",
    "js_source",
    "filters",
    "allowed_domains",
    "allowed_content_types",
    "forbidden_content_types",
    "viewport",
    "images",
    "headers",
    "body",
    "http_method",
    "save_args",
    "load_args",
    "html5_media",
    "http2",
    "engine",
    "render_all",
    "scale_method",
    "width",
    "height",
    "quality",
    "html",
    "png",
    "jpeg",
    "har",
    "history",
    "script",
    "console",
    "iframes",
    "response_body",
    "request_body",
    "lua_source",
    "uid",
    "endpoint__",
];

/// Splash scripts (`main` of `/execute`) that pass hostile values across the bridge.
const SPLASH_SCRIPTS: &[&str] = &[
    "function main(splash) return {x = 1} end",
    "function main(splash) error({code = 1}) end",
    "function main(splash) error() end",
    "function main(splash) return splash:go(nil) end",
    "function main(splash) return splash:go{url = {}} end",
    "function main(splash) local t = {} t.t = t return t end",
    "function main(splash) return 0/0 end",
    "function main(splash) return math.huge end",
    "function main(splash) return '\\xff\\xfe' end",
    "function main(splash) return coroutine.create(print) end",
    "function main(splash) return print end",
    "function main(splash) return setmetatable({}, {__pairs = function() error('boom') end}) end",
    "function main(splash) local d = {} local c = d for i = 1, 100000 do c[1] = {} c = c[1] end return d end",
    "function main(splash) splash:wait(1e308) return 1 end",
    "function main(splash) splash:wait(0/0) return 1 end",
    "function main(splash) splash:wait(-1) return 1 end",
    "function main(splash) return splash:go('http://127.0.0.1:1/') end",
    "function main(splash) return splash:evaljs(string.rep('[', 100000)) end",
    "function main(splash) splash:set_viewport_size(1e308, -1) return 1 end",
    "function main(splash) return splash:select(nil) end",
    "function main(splash) return splash:runjs({}) end",
    "function main(splash) while true do end end",
    "function main(splash) return string.rep('x', 1e9) end",
    "function main(splash) return {[1.5] = 1, [true] = 2} end",
    "function main(splash) error(setmetatable({}, {__tostring = function() error('x') end})) end",
    "function main(",
    "main = 5",
    "",
];

/// 1 in this many requests has arguments that may pass the checks and run.
const SPLASH_PLAUSIBLE: usize = 5000;

/// Arguments every endpoint refuses, as text (the query's form).
const SPLASH_DEFECTS: &[(&str, &str)] = &[
    ("timeout", "0"),
    ("timeout", "-1"),
    ("timeout", "1e400"),
    ("timeout", "4"),
    ("timeout", "NaN"),
    ("timeout", "x"),
    ("wait", "-1"),
    ("wait", "99"),
    ("wait", "inf"),
    ("resource_timeout", "-5"),
    ("resource_timeout", "1e308"),
    ("engine", "gecko"),
    ("engine", "5"),
    ("proxy", "http://127.0.0.1:1"),
    ("filters", "easylist"),
    ("js", "profile"),
    ("allowed_domains", "example.com"),
    ("load_args", "url=00000000"),
    ("load_args", "nonsense"),
    ("load_args", "5"),
];

/// Arguments the render endpoints refuse.
const RENDER_DEFECTS: &[(&str, &str)] = &[
    ("viewport", "0x0"),
    ("viewport", "abc"),
    ("viewport", "99999x99999"),
    ("viewport", "16384x16384"),
    ("viewport", "18446744073709551616x1"),
    ("viewport", "1024x"),
    ("viewport", "full"),
    ("render_all", "1"),
    ("images", "2"),
    ("html", "-1"),
    ("png", "x"),
    ("har", "1e400"),
    ("width", "0"),
    ("width", "5000"),
    ("width", "1.5"),
    ("height", "-1"),
    ("height", "1e400"),
    ("quality", "101"),
    ("quality", "-0.5"),
    ("scale_method", "bicubic"),
    ("http_method", "DELETE"),
    ("http_method", "5"),
    ("headers", "5"),
    ("headers", "[[1, 2]]"),
    ("headers", "[[\"a\"]]"),
];

/// Argument values: the query string's text forms and the JSON body's values.
fn splash_value(rng: &mut Rng, name: &str, places: &Places) -> Value {
    match rng.below(6) {
        0 => hostile_value(rng, 1),
        1 => hostile_number(rng),
        2 => json!(rng.pick(&[
            "0",
            "1",
            "2",
            "-1",
            "1e400",
            "NaN",
            "inf",
            "full",
            "1024x768",
            "0x0",
            "99999x99999",
            "x",
            "GET",
            "POST",
            "webkit",
            "raster",
            "",
            "1.5"
        ])),
        3 if name == "url" || name == "baseurl" => json!(places.url(rng)),
        3 | 4 => not_an_object(rng),
        _ => Value::String(hostile_string(rng)),
    }
}

/// One request for `endpoint`: GET with a query, POST with JSON (or Lua, or another type);
/// now and then arguments that pass Splash's checks and run.
fn splash_request(
    rng: &mut Rng,
    endpoint: &str,
    places: &Places,
) -> (&'static str, String, Vec<(&'static str, String)>, Vec<u8>) {
    let script_endpoint = endpoint == "/execute" || endpoint == "/run";
    let post = rng.one_in(2);
    let mut args = Map::new();
    if rng.one_in(SPLASH_PLAUSIBLE) {
        // Plausible: a page on loopback or a hostile script, bounded by `timeout`.
        args.insert("timeout".into(), json!(2));
        if script_endpoint {
            let script = *rng.pick(SPLASH_SCRIPTS);
            let source = if endpoint == "/run" {
                script
                    .strip_prefix("function main(splash) ")
                    .and_then(|s| s.strip_suffix(" end"))
                    .unwrap_or(script)
                    .to_string()
            } else {
                script.to_string()
            };
            args.insert("lua_source".into(), json!(source));
        } else {
            args.insert("url".into(), json!(places.url(rng)));
        }
    } else {
        for _ in 0..1 + rng.below(6) {
            let name = if rng.one_in(6) {
                hostile_key(rng)
            } else {
                rng.pick(SPLASH_ARGS).to_string()
            };
            let value = splash_value(rng, &name, places);
            args.insert(name, value);
        }
        // The defect that keeps it from running: the URL or script missing (in a query every
        // value is a string) or of another type, or with them present, one argument Splash
        // refuses (so the checks after theirs are reached too).
        let needed = if script_endpoint { "lua_source" } else { "url" };
        match rng.below(3) {
            0 => {
                args.remove(needed);
            }
            1 if post => {
                let v = rng
                    .pick(&[json!(5), json!([]), json!({}), json!(null), json!(true)])
                    .clone();
                args.insert(needed.into(), v);
            }
            _ => {
                let present = if script_endpoint {
                    json!(rng.pick(SPLASH_SCRIPTS))
                } else {
                    json!(places.url(rng))
                };
                args.insert(needed.into(), present);
                let defects = if script_endpoint || rng.one_in(3) {
                    SPLASH_DEFECTS
                } else {
                    RENDER_DEFECTS
                };
                let (name, text) = *rng.pick(defects);
                // A number where the text is one, in a JSON body.
                let value = serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(|_| post && rng.one_in(2))
                    .unwrap_or_else(|| json!(text));
                args.insert(name.into(), value);
                // What would make the defect legal.
                if matches!(name, "viewport" | "render_all") {
                    args.remove("wait");
                }
            }
        }
    }
    let mut headers = Vec::new();
    if !post {
        let mut query: Vec<String> = args
            .iter()
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                format!("{}={}", encode(k), encode(&text))
            })
            .collect();
        if rng.one_in(4) {
            query.push(
                rng.pick(&[
                    "%",
                    "%zz",
                    "%ff%fe=%c0%af",
                    "&&",
                    "==",
                    "+=+",
                    "a=1&a=2",
                    ";",
                    "=%00",
                ])
                .to_string(),
            );
        }
        let target = format!("{endpoint}?{}", query.join("&"));
        let method = *rng.pick(&["GET", "GET", "GET", "GET", "DELETE", "PUT"]);
        return (method, target, headers, Vec::new());
    }
    let kind = rng.below(10);
    let ct = match kind {
        0 => "application/javascript",
        1 => "text/plain",
        2 => "",
        3 => "application/json; charset=latin1",
        4 => "APPLICATION/JSON",
        _ => "application/json",
    };
    if !ct.is_empty() {
        headers.push(("Content-Type", ct.to_string()));
    }
    let body = match kind {
        0 => rng.pick(SPLASH_SCRIPTS).as_bytes().to_vec(),
        1 | 2 if rng.one_in(2) => Vec::new(),
        _ => {
            let v = if rng.one_in(10) {
                not_an_object(rng)
            } else {
                Value::Object(args)
            };
            let text = v.to_string().into_bytes();
            if rng.one_in(5) {
                malformed(rng, &text)
            } else if rng.one_in(3000) {
                // Past the 8 MiB bound.
                let mut big = b"{\"url\":\"".to_vec();
                big.extend(std::iter::repeat_n(b'a', 9 * 1024 * 1024));
                big.extend_from_slice(b"\"}");
                big
            } else {
                text
            }
        }
    };
    (
        *rng.pick(&["POST", "POST", "POST", "PUT"]),
        endpoint.to_string(),
        headers,
        body,
    )
}

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Splash's answer: 200, or `{error, type, description}` with its documented status (never
/// `InternalError`).
fn check_splash(a: &Answer) -> Result<String, String> {
    if a.status == 200 {
        return Ok("200".into());
    }
    // hyper's own limits on the request line and head (64 KiB, 400 KiB), before any handler:
    // a bodiless status of HTTP's, as every server's.
    if matches!(a.status, 414 | 431) && a.body.is_empty() {
        return Ok(format!(
            "{} (hyper: request line or head too long)",
            a.status
        ));
    }
    if !matches!(a.status, 400 | 404 | 413 | 415 | 498 | 502 | 503 | 504) {
        return Err(format!("HTTP {}: {}", a.status, a.text()));
    }
    let v: Value = serde_json::from_slice(&a.body)
        .map_err(|e| format!("HTTP {}, not JSON ({e}): {}", a.status, a.text()))?;
    if v["error"] != json!(a.status) {
        return Err(format!("`error` is not the status: {}", a.text()));
    }
    let kind = v["type"]
        .as_str()
        .ok_or_else(|| format!("no `type`: {}", a.text()))?;
    if v["description"].as_str().is_none() {
        return Err(format!("no `description`: {}", a.text()));
    }
    if kind == "InternalError" || panicky(&v.to_string()) {
        return Err(format!("an internal error: {}", a.text()));
    }
    let detail = v["info"]["type"]
        .as_str()
        .or_else(|| v["info"]["argument"].as_str())
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    Ok(format!("{} {kind}{detail}", a.status))
}

#[test]
fn splash_endpoints_answer_hostile_requests_with_splash_errors() {
    let door = Door::new("splash");
    let places = Places::new(&door.dir);
    let addr = door.serve_splash();
    // Each endpoint on a thread of its own (a request that runs waits for the browser while the
    // others go on), with a generator of its own.
    let (scripts, mut tallies, mut ping) = std::thread::scope(|scope| {
        let places = &places;
        // Every hostile script once through `/execute`, bounded by its timeout, four at a time.
        let script_runs: Vec<_> = SPLASH_SCRIPTS
            .chunks(SPLASH_SCRIPTS.len().div_ceil(4))
            .map(|chunk| {
                scope.spawn(move || {
                    let mut client = Client::new(addr);
                    let mut tally = Tally::new("/execute, each hostile script");
                    for script in chunk {
                        let body = json!({"lua_source": script, "timeout": 2})
                            .to_string()
                            .into_bytes();
                        let verdict = client
                            .send(
                                "POST",
                                "/execute",
                                &[("Content-Type", "application/json")],
                                &body,
                            )
                            .and_then(|a| check_splash(&a));
                        tally.record("POST /execute", &body, verdict);
                    }
                    tally
                })
            })
            .collect();
        let endpoints: Vec<_> = SPLASH_ENDPOINTS
            .iter()
            .enumerate()
            .map(|(i, endpoint)| {
                scope.spawn(move || {
                    let mut rng = Rng::new(seed() ^ 0x5350_4c41_5348 ^ i as u64);
                    let mut client = Client::new(addr);
                    let mut tally = Tally::new(endpoint);
                    for _ in 0..bodies() {
                        let (method, target, headers, body) =
                            splash_request(&mut rng, endpoint, places);
                        let refs: Vec<(&str, &str)> =
                            headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
                        let verdict = client
                            .send(method, &target, &refs, &body)
                            .and_then(|a| check_splash(&a));
                        tally.record(
                            &format!("{method} {}", excerpt(target.as_bytes())),
                            &body,
                            verdict,
                        );
                    }
                    tally.print();
                    tally
                })
            })
            .collect();
        // `/_ping` and paths that are no endpoint: any method, any query, any body.
        let ping = scope.spawn(move || {
            let mut rng = Rng::new(seed() ^ 0x7069_6e67);
            let mut client = Client::new(addr);
            let mut ping = Tally::new("/_ping and unknown paths");
            for _ in 0..bodies() {
                let path = if rng.one_in(4) {
                    rng.pick(&[
                        "/render",
                        "/render.pdf",
                        "/execute/",
                        "/run/x",
                        "/",
                        "/_ping/",
                        "/%00",
                        "/..%2f",
                    ])
                    .to_string()
                } else {
                    "/_ping".to_string()
                };
                let target = if rng.one_in(2) {
                    format!(
                        "{path}?{}={}",
                        encode(&hostile_key(&mut rng)),
                        encode(&hostile_string(&mut rng))
                    )
                } else {
                    path.clone()
                };
                let method = *rng.pick(&["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"]);
                let body = if method == "GET" {
                    Vec::new()
                } else {
                    malformed(&mut rng, b"{\"url\": \"x\"}")
                };
                let verdict = client
                    .send(
                        method,
                        &target,
                        &[("Content-Type", "application/json")],
                        &body,
                    )
                    .and_then(|a| {
                        if path != "/_ping" || matches!(a.status, 414 | 431) {
                            return check_splash(&a);
                        }
                        let v: Value = serde_json::from_slice(&a.body)
                            .map_err(|e| format!("not JSON ({e}): {}", a.text()))?;
                        if a.status == 200 && v["status"] == "ok" {
                            Ok("200 ping".into())
                        } else {
                            Err(format!("HTTP {}: {}", a.status, a.text()))
                        }
                    });
                ping.record(&format!("{method} {target}"), &body, verdict);
            }
            ping.print();
            ping
        });
        let mut scripts = Tally::new("/execute, each hostile script");
        for run in script_runs {
            let part = run.join().expect("a script runner");
            scripts.absorb(part);
        }
        scripts.print();
        let tallies: Vec<Tally> = endpoints
            .into_iter()
            .map(|t| t.join().expect("an endpoint's fuzzer"))
            .collect();
        (scripts, tallies, ping.join().expect("the ping fuzzer"))
    });
    let mut client = Client::new(addr);
    let pong = client
        .send("GET", "/_ping", &[], b"")
        .expect("ping answers");
    assert_eq!(pong.status, 200, "{}", pong.text());
    let mut scripts = scripts;
    scripts.finish();
    for tally in &mut tallies {
        tally.finish();
    }
    ping.finish();
}

// ---------------------------------------------------------------------------------------------
// Every command's param reader, directly: the executor's check, then the handler's synchronous
// half, with hostile params (no browser; a panic is caught here).

#[test]
fn every_param_reader_refuses_hostile_params_without_panicking() {
    let dir = std::env::temp_dir().join(format!("moonpilot-fuzz-readers-{}", std::process::id()));
    let places = Places {
        origin_a: "http://127.0.0.1:1".into(),
        origin_b: "http://localhost:1".into(),
        dir,
    };
    let mut rng = Rng::new(seed() ^ 0x7265_6164);
    let t0 = Instant::now();
    let specs = all_specs();
    let per = (bodies() / 50).max(20);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for spec in &specs {
        for _ in 0..per {
            let value = if rng.one_in(10) {
                hostile_value(&mut rng, 0)
            } else {
                let plausible = rng.one_in(3);
                params_for(&mut rng, spec, plausible, &places)
            };
            let shown = || excerpt(value.to_string().as_bytes());
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut params = Params::new(value.clone()).map_err(|e| e.code)?;
                for p in spec.params {
                    p.check(&params).map_err(|e| e.code)?;
                }
                match spec.handler {
                    Handler::Task(read) => read(&mut params).map(drop).map_err(|e| e.code),
                    Handler::Engine(read) => read(&mut params).map(drop).map_err(|e| e.code),
                }
            }));
            let key = match outcome {
                Ok(Ok(())) => "read".to_string(),
                Ok(Err(ErrorCode::Internal)) => {
                    failures.push(format!("{}: INTERNAL for {}", spec.name, shown()));
                    "INTERNAL".into()
                }
                Ok(Err(code)) => code.to_string(),
                Err(_) => {
                    failures.push(format!("{}: panicked for {}", spec.name, shown()));
                    "PANIC".into()
                }
            };
            *outcomes.entry(key).or_default() += 1;
        }
    }
    eprintln!(
        "fuzz_doors: param readers: {} commands × {per} params in {:.1} s",
        specs.len(),
        t0.elapsed().as_secs_f64()
    );
    for (k, n) in &outcomes {
        eprintln!("    {n:>6}  {k}");
    }
    failures.truncate(12);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Hostile Lua values across the bridge, into real commands.

/// `refused(what, f)`: `f` answers a failed Result with INVALID_ARGUMENT, or raises an error
/// table with that code; `typed(what, f)`: any Result or a raised error table with a code — never
/// a plain string, never a crash. `all_typed()` fails with every check that did not hold.
const LUA_CHECKS: &str = r#"
local failures = {}
local function outcome(what, f)
  local ok, r = pcall(f)
  if ok then
    if type(r) ~= "table" or r.ok == nil then return nil, what .. ": not a Result: " .. tostring(r) end
    return r
  end
  if type(r) ~= "table" or type(r.code) ~= "string" then
    return nil, what .. ": raised an untyped error: " .. tostring(r)
  end
  return { ok = false, code = r.code, msg = r.msg }
end
function refused(what, f)
  local r, why = outcome(what, f)
  if r and (r.ok or r.code ~= "INVALID_ARGUMENT") then
    why = string.format("%s: expected INVALID_ARGUMENT, got ok=%s code=%s msg=%s", what, tostring(r.ok), tostring(r.code), tostring(r.msg))
  end
  if why then failures[#failures + 1] = why end
end
function typed(what, f)
  local r, why = outcome(what, f)
  if r and not r.ok and (r.code == "INTERNAL" or r.code == nil) then why = what .. ": code " .. tostring(r.code) end
  if why then failures[#failures + 1] = why end
end
function all_typed()
  if #failures > 0 then error(#failures .. " hostile values were not typed failures:\n" .. table.concat(failures, "\n"), 2) end
end
"#;

#[test]
fn hostile_lua_values_across_the_bridge_are_typed_failures() {
    lua(&format!(
        "{LUA_CHECKS}{}",
        r#"
page:navigate{ url = A .. "/basic.html" }:unwrap()

-- Tables that refer to themselves, at the top and deep down.
local selfref = {} selfref.me = selfref
refused("a table that contains itself", function() return page:execute_js{ body = "return 1", vars = selfref } end)
local cycle = {} cycle[1] = cycle
refused("an array that contains itself", function() return page:execute_js{ body = "return 1", vars = { a = cycle } } end)
refused("params that contain themselves", function() local p = { selector = "p" } p.p = p return page:get_element_count(p) end)

-- 100,000 levels of nesting, as maps and as arrays.
local deep = {} local cur = deep
for _ = 1, 100000 do local n = {} cur.x = n cur = n end
refused("100,000 nested maps", function() return page:execute_js{ body = "return 1", vars = deep } end)
local deeparr = {} cur = deeparr
for _ = 1, 100000 do local n = {} cur[1] = n cur = n end
refused("100,000 nested arrays", function() return page:get_element_count{ selector = "p", frame = deeparr } end)

-- Keys that mix, have holes, or are no string nor 1..n.
refused("mixed keys", function() return page:execute_js{ body = "return 1", vars = { list = { 1, 2, a = 3 } } } end)
refused("a sparse array", function() return page:execute_js{ body = "return 1", vars = { list = { [1] = 1, [3] = 3 } } } end)
refused("a float key", function() return page:execute_js{ body = "return 1", vars = { [1.5] = 1 } } end)
refused("a boolean key", function() return page:execute_js{ body = "return 1", vars = { [true] = 1 } } end)
refused("a table key", function() return page:execute_js{ body = "return 1", vars = { [{}] = 1 } } end)
refused("a huge integer key", function() return page:execute_js{ body = "return 1", vars = { [math.maxinteger] = 1 } } end)

-- NaN, infinities, integers past every range.
refused("NaN", function() return page:mouse_move{ x = 0/0, y = 1 } end)
refused("+inf", function() return page:mouse_move{ x = math.huge, y = 1 } end)
refused("-inf", function() return page:mouse_wheel{ deltaY = -math.huge } end)
refused("math.maxinteger", function() return page:set_viewport{ width = math.maxinteger, height = 600 } end)
refused("math.mininteger", function() return page:click_element_by_index{ index = math.mininteger } end)
refused("a float for an integer", function() return page:click_element_by_index{ index = 1.5 } end)
refused("2^63 as a float", function() return page:set_viewport{ width = 2^63, height = 600 } end)
typed("2^53 + 1", function() return page:get_element_html{ index = 9007199254740993 } end)

-- Values with no JSON form.
refused("a function", function() return page:get_element_count{ selector = print } end)
refused("a Lua function", function() return page:get_element_count{ selector = function() end } end)
refused("a task (userdata)", function() return page:get_element_count{ selector = page } end)
refused("a coroutine", function() return page:get_element_count{ selector = coroutine.create(function() end) } end)
refused("the running thread", function() return page:get_element_count{ selector = coroutine.running() } end)
typed("a Result (a plain table underneath)", function() return page:execute_js{ body = "return 1", vars = { r = page:get_title() } } end)

-- Strings: invalid UTF-8 in values and keys; NUL bytes are valid UTF-8 and reach the command.
refused("invalid UTF-8", function() return page:get_element_count{ selector = "\xff\xfe" } end)
refused("a truncated sequence", function() return page:find_text{ text = "caf\xc3" } end)
refused("an invalid UTF-8 key", function() return page:execute_js{ body = "return 1", vars = { ["\xff"] = 1 } } end)
typed("NUL bytes", function() return page:get_element_count{ selector = "p\0p" } end)
typed("NUL bytes in typed text", function() return page:find_text{ text = "a\0b" } end)
typed("a 1 MiB string", function() return page:find_text{ text = string.rep("x", 1 << 20) } end)

-- Metatables: the bridge reads tables raw, so traps on __index, __pairs, __len, __eq never run.
local trap = {
  __index = function() error("index trap") end,
  __newindex = function() error("newindex trap") end,
  __pairs = function() error("pairs trap") end,
  __len = function() error("len trap") end,
}
typed("params with trap metamethods", function() return page:get_element_count(setmetatable({ selector = "p" }, trap)) end)
typed("a value with trap metamethods", function() return page:execute_js{ body = "return 1", vars = setmetatable({ a = 1 }, trap) } end)
local forever = { __pairs = function(t) return function() return "k", 1 end, t, nil end }
typed("params whose __pairs never ends", function() return page:get_element_count(setmetatable({ selector = "p" }, forever)) end)
typed("an array behind __index", function() return page:execute_js{ body = "return 1", vars = { list = setmetatable({}, { __index = function(_, i) return i end }) } } end)

-- Params that are not a table.
refused("params a string", function() return page:get_title("x") end)
refused("params a number", function() return page:get_title(5) end)
refused("params true", function() return page:get_title(true) end)
refused("params false", function() return page:get_title(false) end)
refused("params a function", function() return page:get_title(print) end)
refused("params a task", function() return page:get_title(page) end)
refused("params a coroutine", function() return page:get_title(coroutine.create(print)) end)
refused("browser.call with string params", function() return browser.call("list_methods", "x") end)

-- Method names and task ids that are no such thing.
refused("a method that is a number", function() return browser.call(5) end)
refused("a method that is a table", function() return page:call({}) end)
typed("a method of invalid UTF-8", function() return browser.call("\xff\xfe", {}) end)
typed("a task method of invalid UTF-8", function() return page:call("get_\xfftitle", {}) end)
typed("an unknown task method of invalid UTF-8", function() return page["\xff"](page, {}) end)
typed("a method of 1 MiB", function() return browser.call(string.rep("m", 1 << 20)) end)
typed("a method with NUL", function() return browser.call("get_title\0", {}) end)
for _, id in ipairs({ 0/0, math.huge, -1, math.mininteger, math.maxinteger, 1e300, "\xff", "-1", "" }) do
  local t = browser.task(id)
  if t ~= nil then error("browser.task(" .. tostring(id) .. ") is a task") end
end
typed("browser.task of a table", function() return { ok = browser.task({}) == nil } end)
-- browser.start answers a Task (closed again here) or raises an error table.
local function started(what, opts)
  typed(what, function()
    local t = browser.start(opts)
    t:close()
    return { ok = true }
  end)
end
refused("browser.start with a NaN id", function() return browser.start{ id = 0/0 } end)
refused("browser.start with a table id", function() return browser.start{ id = {} } end)
refused("browser.start with an invalid UTF-8 id", function() return browser.start{ id = "\xff" } end)
refused("browser.start with a string", function() return browser.start("x") end)
started("browser.start whose options trap __pairs", setmetatable({}, trap))
started("browser.start whose options' __pairs never ends", setmetatable({}, forever))
refused("browser.sleep(NaN)", function() return browser.sleep(0/0) end)
typed("browser.sleep(-huge)", function() browser.sleep(-math.huge) return { ok = true } end)
typed("browser.sleep(huge)", function() return browser.spawn(function() browser.sleep(math.huge) end):cancel() or { ok = true } end)
refused("browser.methods of a table", function() return browser.methods({}) end)
typed("browser.methods of invalid UTF-8", function() return { ok = type(browser.methods("\xff")) == "table" } end)

-- The engine still answers.
eq(page:get_title():unwrap().title, "Basic", "the task still works")
all_typed()
"#
    ));
}

// ---------------------------------------------------------------------------------------------
// Regressions: what the doors above found (issue 35 §5).

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

/// An MCP server on the shared engine.
fn shared_mcp() -> SocketAddr {
    static ADDR: std::sync::OnceLock<SocketAddr> = std::sync::OnceLock::new();
    *ADDR.get_or_init(|| {
        let h = harness();
        let executor = h.executor.clone();
        let opts = ServeOptions {
            port: 0,
            mcp: Some(McpOptions::default()),
            ..ServeOptions::default()
        };
        h.runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(serve(executor, listener, opts, std::future::pending()));
            addr
        })
    })
}

/// rmcp refused bodies that are no JSON or no JSON-RPC message, a wrong `Accept` and an unknown
/// session in plain text; they are JSON-RPC errors without an id now, with rmcp's status.
#[test]
fn regression_mcp_refusals_are_json_rpc_errors() {
    let addr = shared_mcp();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let refusal = |r: Reply| -> (u16, i64, String) {
        let v = r.json();
        assert_eq!(r.header("content-type"), Some("application/json"), "{v}");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        let msg = v["error"]["message"].as_str().unwrap().to_string();
        (r.status, v["error"]["code"].as_i64().unwrap(), msg)
    };
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, b"{\"jsonrpc\":"));
    assert_eq!((status, code), (415, -32700), "{msg}");
    assert!(msg.contains("EOF while parsing"), "{msg}");
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, b"[1, 2]"));
    assert_eq!((status, code), (415, -32600), "{msg}");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let no_sse = [headers[0], ("Accept", "application/json")];
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &no_sse, ping.as_bytes()));
    assert_eq!((status, code), (406, -32000), "{msg}");
    assert!(msg.starts_with("Not Acceptable"), "{msg}");
    let gone = [
        headers[0],
        headers[1],
        ("Mcp-Session-Id", "no-such-session"),
    ];
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &gone, ping.as_bytes()));
    assert_eq!((status, code), (404, -32001), "{msg}");
    let (status, code, msg) = refusal(request(addr, "POST", "/mcp", &headers, ping.as_bytes()));
    assert_eq!((status, code), (400, -32000), "no session: {msg}");
    // What the SDK answers as JSON-RPC already is left alone: an initialize opens a session.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = mcp_post(addr, None, None, &init);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let session = r.header("mcp-session-id").expect("a session").to_string();
    let closed = request(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &session)], b"");
    assert!(matches!(closed.status, 200 | 204), "{}", closed.status);
}

/// A Splash script that returned a table containing itself was copied by `plain` (splash.lua)
/// until the Lua stack overflowed: seconds of work and "stack overflow" for a message.
#[test]
fn regression_a_splash_result_that_contains_itself_is_refused_at_once() {
    static ADDR: std::sync::OnceLock<SocketAddr> = std::sync::OnceLock::new();
    let addr = *ADDR.get_or_init(|| {
        let h = harness();
        let executor = h.executor.clone();
        h.runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let opts = SplashOptions {
                port: 0,
                max_timeout: 20.0,
                ..SplashOptions::default()
            };
            tokio::spawn(moonpilot::splash::http::serve(
                executor,
                listener,
                opts,
                std::future::pending(),
            ));
            addr
        })
    });
    for script in [
        "function main(splash) local t = {} t.t = t return t end",
        "function main(splash) local t = {} t[1] = t return {list = t} end",
        "function main(splash) local d = {} local c = d for i = 1, 100000 do c[1] = {} c = c[1] end return d end",
    ] {
        let body = json!({"lua_source": script, "timeout": 10}).to_string();
        let t0 = Instant::now();
        let r = request(
            addr,
            "POST",
            "/execute",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        let took = t0.elapsed();
        let v = r.json();
        assert_eq!(r.status, 400, "{script}: {v}");
        assert_eq!(v["type"], "ScriptError", "{v}");
        let error = v["info"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("nested too deeply"), "{script}: {v}");
        assert!(!error.contains("stack overflow"), "{script}: {v}");
        // A task's start and close included.
        assert!(took < Duration::from_secs(5), "{script}: {took:?}");
    }
}
