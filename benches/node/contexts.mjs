// The bare client of `cargo bench --bench splash`: the same work as its requests (a page of its
// own, go to URL, wait 0.2 s, read the HTML, take a PNG, close) over raw CDP on a plain
// WebSocket (flattened sessions), eight clients at once, in the default browser context, in a
// browser context made for each request, and in contexts made ahead of the round (a pool made
// while idle). It shows what a browser context costs Chromium itself, without any engine.
// Usage: node contexts.mjs URL [REQUESTS_PER_CLIENT] [ROUNDS]; prints one line per way.
import { createRequire } from 'module';
import { spawn } from 'child_process';
import fs from 'fs';

const require = createRequire(import.meta.url);
const { ws: WebSocket } = require('playwright-core/lib/utilsBundle');
const url = process.argv[2];
const each = Number(process.argv[3] || 10);
const rounds = Number(process.argv[4] || 2);
const clients = 8;
const executable = process.env.MOONPILOT_CHROMIUM || '/usr/bin/chromium';

// The machine's busy CPU time (all cores), ms.
const busy = () => {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1, 9).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) * 10;
};

const dir = fs.mkdtempSync('/tmp/moonpilot-bench-contexts-');
const chrome = spawn(executable, [
  '--headless=new', '--no-sandbox', '--remote-debugging-port=0', `--user-data-dir=${dir}`,
  '--no-first-run', '--no-startup-window',
  '--disable-features=SpareRendererForSitePerProcess,AimEnabled',
], { stdio: ['ignore', 'ignore', 'pipe'] });
const endpoint = await new Promise((resolve) => {
  let err = '';
  chrome.stderr.on('data', (d) => {
    err += d;
    const m = err.match(/ws:\/\/\S+/);
    if (m) resolve(m[0]);
  });
});
const sock = new WebSocket(endpoint, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
await new Promise((r) => sock.on('open', r));
let seq = 0;
const pending = new Map();
const waiters = new Set();
sock.on('message', (m) => {
  const v = JSON.parse(m);
  if (v.id) {
    pending.get(v.id)(v);
    pending.delete(v.id);
  } else {
    for (const w of waiters) w(v);
  }
});
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = ++seq;
  pending.set(id, (v) => (v.error ? reject(new Error(`${method}: ${v.error.message}`)) : resolve(v.result)));
  sock.send(JSON.stringify({ id, method, params, sessionId }));
});
const event = (pred) => new Promise((resolve) => {
  const w = (v) => {
    if (pred(v)) {
      waiters.delete(w);
      resolve(v);
    }
  };
  waiters.add(w);
});

// One request: in `context` (undefined: the default one; true: a new one made now).
async function request(context) {
  const made = context === true;
  const id = made
    ? (await send('Target.createBrowserContext', { disposeOnDetach: true })).browserContextId
    : context;
  const { targetId } = await send('Target.createTarget', { url: 'about:blank', newWindow: true, browserContextId: id });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  await send('Page.enable', {}, sessionId);
  const loaded = event((v) => v.sessionId === sessionId && v.method === 'Page.loadEventFired');
  await send('Page.navigate', { url }, sessionId);
  await loaded;
  await send('Runtime.evaluate', { expression: 'new Promise(r => setTimeout(r, 200))', awaitPromise: true }, sessionId);
  const html = await send('Runtime.evaluate', { expression: 'document.documentElement.outerHTML', returnByValue: true }, sessionId);
  const png = await send('Page.captureScreenshot', { format: 'png' }, sessionId);
  if (!html.result.value.includes('<html') || png.data.length < 1000) throw new Error('no page');
  await send('Target.closeTarget', { targetId });
  if (id) await send('Target.disposeBrowserContext', { browserContextId: id });
}

const ways = { default: { wall: 0, cpu: 0 }, 'a context each': { wall: 0, cpu: 0 }, 'contexts made ahead': { wall: 0, cpu: 0 } };
await request(undefined);
await request(true);
for (let r = 0; r < rounds; r++) {
  for (const name of Object.keys(ways)) {
    const pool = [];
    if (name === 'contexts made ahead') {
      for (let i = 0; i < clients * each; i++) {
        pool.push((await send('Target.createBrowserContext', { disposeOnDetach: true })).browserContextId);
      }
    }
    const c0 = busy();
    const t0 = performance.now();
    await Promise.all([...Array(clients)].map(async () => {
      for (let i = 0; i < each; i++) await request(name === 'default' ? undefined : (pool.pop() || true));
    }));
    ways[name].wall += (performance.now() - t0) / 1000;
    ways[name].cpu += busy() - c0;
  }
}
const n = clients * each * rounds;
for (const [name, w] of Object.entries(ways)) {
  console.log(`  bare CDP client, ${name.padEnd(31)} ${(n / w.wall).toFixed(2).padStart(6)} req/s   CPU ${(w.cpu / n).toFixed(0).padStart(5)} ms/req`);
}
console.log(`  bare client, a context each / default: ${(ways.default.wall / ways['a context each'].wall).toFixed(2)}×; made ahead / default: ${(ways.default.wall / ways['contexts made ahead'].wall).toFixed(2)}×`);
sock.close();
chrome.kill();
await new Promise((r) => chrome.on('exit', r));
fs.rmSync(dir, { recursive: true, force: true });
process.exit(0);
