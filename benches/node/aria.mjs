// Playwright peer for benches/observation.rs: Playwright's ARIA snapshot of a page, in both modes,
// from one Chromium launched by playwright-core from the same binary and with the same flags as
// moonpilot's (as peer.mjs), driven one request at a time over stdin/stdout.
//
// Requests (one JSON object per line):
//   {"op":"measure","url":U,"show":false}  goto U (1280x800), wait for load, then
//        page.ariaSnapshot()               the refs-free text (what the issue 14 target is held to)
//        page.ariaSnapshot({mode:'ai'})    the text for agents, with refs; reads frame content
//      answer {"ok":true,"ariaChars":N,"aiChars":N} (+ "aria","ai" texts with "show":true)
//   {"op":"close"}                         close the browser and exit
// Every answer is one JSON line: {"ok":true, ...} or {"ok":false,"error":...}. The first line
// says {"ok":true,"ready":true,"version":V,"playwright":P}.

import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const executablePath = process.env.MOONPILOT_CHROMIUM || '/usr/bin/chromium';
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(pathToFileURL(join(here, 'package.json')));
const playwright = JSON.parse(readFileSync(require.resolve('playwright-core/package.json'), 'utf8')).version;
const profile = mkdtempSync(join(tmpdir(), 'moonpilot-bench-aria-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio'],
});
const page = context.pages()[0] || await context.newPage();

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

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
    if (req.op === 'measure') {
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
