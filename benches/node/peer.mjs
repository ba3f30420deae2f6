// Playwright peer for benches/step.rs and benches/observation.rs: one Chromium launched by
// playwright-core from the same binary and with the same flags as moonpilot's, driven one request
// at a time over stdin/stdout so the Rust bench can interleave its own calls with these in one run.
//
// Requests (one JSON object per line):
//   {"op":"open","url":U}                 open U in a fresh page (1280x800, as moonpilot's tabs)
//   {"op":"step","selector":S}            locator(S).click() then locator('body').ariaSnapshot()
//   {"op":"click","selector":S}           locator(S).click() alone, timed
//   {"op":"eval","expression":E}          page.evaluate(E), for checks between timed calls
//   {"op":"shot","params":P}              Page.captureScreenshot(P) over a CDP session, timed
//   {"op":"measure","url":U,"show":false} goto U, wait for load, then
//        page.ariaSnapshot()               the refs-free text (what the issue 14 target is held to)
//        page.ariaSnapshot({mode:'ai'})    the text for agents, with refs; reads frame content
//      answer {"ok":true,"ariaChars":N,"aiChars":N} (+ "aria","ai" texts with "show":true)
//   {"op":"close"}                        close the browser and exit
// Every answer is one JSON line: {"ok":true, ...timings in ms} or {"ok":false,"error":...}. The
// first line says {"ok":true,"ready":true,"version":V,"playwright":P}.

import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const executablePath = process.env.MOONPILOT_CHROMIUM || '/usr/bin/chromium';
// Extra Chromium flags for the peer, space-separated, to measure what a flag does to the same
// calls (for example chromiumoxide's default `--enable-features=NetworkService,NetworkServiceInProcess`,
// which replaces Playwright's own `--enable-features=CDPScreenshotNewSurface`).
const extraArgs = (process.env.MOONPILOT_BENCH_PEER_ARGS || '').split(' ').filter(Boolean);
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(pathToFileURL(join(here, 'package.json')));
const playwright = JSON.parse(readFileSync(require.resolve('playwright-core/package.json'), 'utf8')).version;
const profile = mkdtempSync(join(tmpdir(), 'moonpilot-bench-pw-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio', ...extraArgs],
});
let page = context.pages()[0] || await context.newPage();
let cdp = null;

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const now = () => performance.now();

const lines = createInterface({ input: process.stdin });
say({ ok: true, ready: true, version: context.browser()?.version() ?? null, playwright });
for await (const line of lines) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    say({ ok: false, error: 'bad request: ' + e.message });
    continue;
  }
  try {
    if (req.op === 'open') {
      await page.goto(req.url);
      say({ ok: true });
    } else if (req.op === 'step') {
      const t0 = now();
      await page.locator(req.selector).click();
      const t1 = now();
      const snap = await page.locator('body').ariaSnapshot();
      const t2 = now();
      say({ ok: true, clickMs: t1 - t0, snapshotMs: t2 - t1, stepMs: t2 - t0, snapshotChars: snap.length });
    } else if (req.op === 'click') {
      const t0 = now();
      await page.locator(req.selector).click();
      say({ ok: true, ms: now() - t0 });
    } else if (req.op === 'rafs_click') {
      // Two animation frames in the page, then a mouse click at a point: each part timed.
      const t0 = now();
      await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1)))));
      const t1 = now();
      await page.mouse.click(req.x, req.y);
      say({ ok: true, rafsMs: t1 - t0, mouseMs: now() - t1 });
    } else if (req.op === 'raw_rafs_click') {
      // The same as rafs_click over a raw CDP session of this page, events one after another.
      cdp = cdp || await context.newCDPSession(page);
      const t0 = now();
      await cdp.send('Runtime.evaluate', { expression: 'new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))', awaitPromise: true });
      const t1 = now();
      if (req.variant === 'exact') {
        await cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', button: 'none', buttons: 0, x: req.x, y: req.y, modifiers: 0, force: 0 });
        await cdp.send('Input.dispatchMouseEvent', { type: 'mousePressed', button: 'left', buttons: 1, x: req.x, y: req.y, modifiers: 0, clickCount: 1, force: 0.5 });
        await cdp.send('Input.dispatchMouseEvent', { type: 'mouseReleased', button: 'left', buttons: 0, x: req.x, y: req.y, modifiers: 0, clickCount: 1 });
      } else if (req.variant === 'concurrent') {
        await Promise.all([
          cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: req.x, y: req.y }),
          ...['mousePressed', 'mouseReleased'].map(type => cdp.send('Input.dispatchMouseEvent', { type, x: req.x, y: req.y, button: 'left', buttons: type === 'mousePressed' ? 1 : 0, clickCount: 1 })),
        ]);
      } else {
        await cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: req.x, y: req.y });
        for (const type of ['mousePressed', 'mouseReleased'])
          await cdp.send('Input.dispatchMouseEvent', { type, x: req.x, y: req.y, button: 'left', buttons: type === 'mousePressed' ? 1 : 0, clickCount: 1 });
      }
      say({ ok: true, rafsMs: t1 - t0, mouseMs: now() - t1 });
    } else if (req.op === 'eval') {
      say({ ok: true, value: await page.evaluate(req.expression) });
    } else if (req.op === 'shot') {
      cdp = cdp || await context.newCDPSession(page);
      const t0 = now();
      const r = await cdp.send('Page.captureScreenshot', req.params);
      say({ ok: true, ms: now() - t0, bytes: Math.floor(r.data.length * 3 / 4) });
    } else if (req.op === 'measure') {
      await page.goto(req.url, { waitUntil: 'load' });
      const aria = await page.ariaSnapshot();
      const ai = await page.ariaSnapshot({ mode: 'ai' });
      const answer = { ok: true, ariaChars: aria.length, aiChars: ai.length };
      if (req.show) Object.assign(answer, { aria, ai });
      say(answer);
    } else if (req.op === 'close') {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      say({ ok: true });
      break;
    } else {
      say({ ok: false, error: 'unknown op ' + req.op });
    }
  } catch (e) {
    say({ ok: false, error: String(e && e.message || e) });
  }
}
process.exit(0);
