//! `moonpilot test` against Playwright Test (`cargo bench --bench testrunner`): the same 40
//! tests written for both — navigate a local page, act on it (click, fill, check, follow a
//! link), assert with waiting assertions — run through each runner's own command line with 1
//! and 4 workers on the same Debian Chromium, alternating, wall time from the process's start
//! to its exit. Also timed: 40 empty tests (no page) and 40 tests that only open their page,
//! for each runner's own overhead. Every run must pass: a flake fails the bench (and with
//! `BENCH_TESTRUNNER_RUNS=10` the ten repeats are the "no flake" check).
//!
//! Needs `@playwright/test` in `benches/node` (`npm install` there); without it only moonpilot's
//! figures are printed. moonpilot runs with its defaults (the trace on, no screenshot after each
//! command, a failed test's screenshot taken) and with `--capture` (a screenshot after each
//! command); Playwright Test with its defaults (no trace, no screenshots).

#![allow(clippy::unwrap_used)] // Benchmark code: a panic is a failed run.

#[path = "figures.rs"]
mod figures;

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

use figures::{env_or, line, stats, timed};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The four kinds of test, ten of each: (Lua body, Playwright body), `{A}` the fixture origin.
const KINDS: [(&str, &str); 4] = [
    (
        "page:navigate{ url = A .. '/basic.html' }:unwrap()
  page:click_element_by_selector{ selector = '#btn' }:unwrap()
  expect(page):to_have_text{ selector = '#msg', text = 'clicked 1' }",
        "await page.goto(A + '/basic.html');
  await page.locator('#btn').click();
  await expect(page.locator('#msg')).toHaveText('clicked 1');",
    ),
    (
        "page:navigate{ url = A .. '/form.html' }:unwrap()
  page:input_text_by_selector{ selector = '#user', text = 'alice' }:unwrap()
  expect(page):to_have_text{ selector = '#log', text = 'typed: alice' }
  expect(page):to_have_value{ selector = '#user', value = 'alice' }",
        "await page.goto(A + '/form.html');
  await page.locator('#user').fill('alice');
  await expect(page.locator('#log')).toHaveText('typed: alice');
  await expect(page.locator('#user')).toHaveValue('alice');",
    ),
    (
        "page:navigate{ url = A .. '/basic.html' }:unwrap()
  page:click_element_by_text{ text = 'Go to second' }:unwrap()
  expect(page):to_have_title{ title = 'Second' }
  expect(page):to_have_url{ pattern = 'second%.html$' }",
        "await page.goto(A + '/basic.html');
  await page.getByText('Go to second').click();
  await expect(page).toHaveTitle('Second');
  await expect(page).toHaveURL(/second\\.html$/);",
    ),
    (
        "page:navigate{ url = A .. '/form.html' }:unwrap()
  page:click_element_by_selector{ selector = 'input[name=agree]' }:unwrap()
  expect(page):to_be_checked{ selector = 'input[name=agree]' }
  expect(page):to_be_disabled{ selector = 'input[name=locked]' }
  expect(page):to_have_count{ selector = 'option', count = 2 }",
        "await page.goto(A + '/form.html');
  await page.locator('input[name=agree]').click();
  await expect(page.locator('input[name=agree]')).toBeChecked();
  await expect(page.locator('input[name=locked]')).toBeDisabled();
  await expect(page.locator('option')).toHaveCount(2);",
    ),
];

/// Writes the three suites for both runners under `root`: `work/`, `empty/`, `page/`.
fn write_suites(root: &Path, origin: &str) {
    let mut suites: Vec<(&str, Vec<(String, String)>)> = Vec::new();
    let work = (0..40)
        .map(|i| {
            let (lua, js) = KINDS[i % 4];
            (lua.to_string(), js.to_string())
        })
        .collect();
    suites.push(("work", work));
    suites.push((
        "empty",
        (0..40).map(|_| (String::new(), String::new())).collect(),
    ));
    suites.push((
        "page",
        (0..40)
            .map(|_| {
                (
                    "page:get_title()".to_string(),
                    "await page.title();".to_string(),
                )
            })
            .collect(),
    ));
    for (name, tests) in suites {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        // Four files of ten tests each, for both runners.
        for f in 0..4 {
            let mut lua = format!("local A = {origin:?}\ndescribe('file {f}', function()\n");
            let mut js = format!(
                "import {{ test, expect }} from '@playwright/test';\nconst A = {origin:?};\ntest.describe('file {f}', () => {{\n"
            );
            for (i, (l, j)) in tests.iter().enumerate().skip(f * 10).take(10) {
                let (arg_l, arg_j) = if name == "empty" {
                    ("", "")
                } else {
                    ("page", "{ page }")
                };
                lua.push_str(&format!("it('test {i}', function({arg_l})\n  {l}\nend)\n"));
                js.push_str(&format!(
                    "test('test {i}', async ({arg_j}) => {{\n  {j}\n}});\n"
                ));
            }
            lua.push_str("end)\n");
            js.push_str("});\n");
            std::fs::write(dir.join(format!("f{f}_spec.lua")), lua).unwrap();
            std::fs::write(dir.join(format!("f{f}.spec.mjs")), js).unwrap();
        }
        let chromium =
            std::env::var("MOONPILOT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        std::fs::write(
            dir.join("playwright.config.mjs"),
            format!(
                "export default {{\n  testDir: '.',\n  testMatch: '*.spec.mjs',\n  outputDir: 'test-results',\n  fullyParallel: false,\n  reporter: 'dot',\n  use: {{ headless: true, launchOptions: {{ executablePath: {chromium:?}, args: ['--no-sandbox', '--disable-gpu'] }} }},\n}};\n"
            ),
        )
        .unwrap();
    }
}

fn moonpilot(dir: &Path, state: &Path, workers: usize, capture: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moonpilot"));
    c.current_dir(dir).env("MOONPILOT_STATE_DIR", state).args([
        "test",
        "--reporter",
        "dot",
        "--workers",
        &workers.to_string(),
    ]);
    if capture {
        c.arg("--capture");
    }
    c
}

fn playwright(node: &Path, dir: &Path, workers: usize) -> Command {
    let mut c = Command::new("node");
    c.current_dir(dir)
        .arg(node.join("node_modules/@playwright/test/cli.js"))
        .args([
            "test",
            "-c",
            "playwright.config.mjs",
            "--workers",
            &workers.to_string(),
        ]);
    c
}

fn main() {
    let runs: usize = env_or("BENCH_TESTRUNNER_RUNS", 3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fixtures = rt.block_on(server::Fixtures::start()).unwrap();
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node");
    let has_playwright = node.join("node_modules/@playwright/test/cli.js").is_file();
    if !has_playwright {
        println!(
            "@playwright/test is not installed in benches/node (npm install there): moonpilot only"
        );
    }
    // Inside benches/node, so that the Playwright files find `@playwright/test`.
    let root: PathBuf = node.join(format!(".suite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_suites(&root, &fixtures.a);
    let state =
        std::env::temp_dir().join(format!("moonpilot-bench-testrunner-{}", std::process::id()));
    println!("{runs} runs of each, alternating; wall time of the whole command, in ms\n");
    for (suite, worker_counts) in [
        ("work", &[1usize, 4][..]),
        ("empty", &[1]),
        ("page", &[1, 4]),
    ] {
        let dir = root.join(suite);
        for &workers in worker_counts {
            let (mut mp, mut captured, mut pw) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                mp.push(timed(moonpilot(&dir, &state, workers, false)));
                captured.push(timed(moonpilot(&dir, &state, workers, true)));
                if has_playwright {
                    pw.push(timed(playwright(&node, &dir, workers)));
                }
            }
            let (mp, captured) = (stats(mp), stats(captured));
            line(
                &format!("{suite} ×40, {workers} worker(s): moonpilot test"),
                "ms",
                mp,
            );
            line(
                &format!("{suite} ×40, {workers} worker(s): moonpilot test --capture"),
                "ms",
                captured,
            );
            if has_playwright {
                let pw = stats(pw);
                line(
                    &format!("{suite} ×40, {workers} worker(s): playwright test"),
                    "ms",
                    pw,
                );
                println!(
                    "  ratio Playwright/moonpilot: {:.2}× (defaults), {:.2}× (--capture)  [≥ 1.0 means moonpilot is as fast or faster]\n",
                    pw.0 / mp.0,
                    pw.0 / captured.0
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&state);
}
