// Writes ../../tests/data/url_globs.json: URL glob cases with the answers of playwright-core's
// own matcher (`urlMatches` without a baseURL, as page.waitForURL and page.route use it). The
// engine glob's unit test (src/url_glob.rs) holds moonpilot's matcher to this table.
// Run: npm install && node globs.mjs
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const { iso } = require('playwright-core/lib/coreBundle');
const version = require('playwright-core/package.json').version;

const urls = [
  'http://127.0.0.1:8080/u-waits.html?step=2',
  'http://127.0.0.1:8080/shop/cart/items?id=3',
  'https://example.com/',
  'https://example.com',
  'https://Example.COM/Path/To?Q=1#Frag',
  'http://localhost:3000/api/v1/users/42.json',
  'http://localhost:3000/api//double',
  'http://localhost:3000/',
  'about:blank',
  'data:text/html,hi',
  'file:///tmp/a/b.html',
  'https://sub.example.com/x/y/z.png?size=2&b=c',
  'http://h/a,b/c',
  'http://h/{x}/y',
  'http://h/a*b',
  'http://h/$p/q',
];
const patterns = [
  '**step=2*', '**step=2', '**?step=2*', '**/u-waits.html?step=2', '**/u-waits.html*',
  '**/u-waits.html', 'http://127.0.0.1:8080/u-waits.html?step=2', 'http://127.0.0.1:*/**',
  'http://127.0.0.1:8080/*', 'http://127.0.0.1:8080/**', '**/items?id=3', '**/shop/**',
  'http://127.0.0.1:8080/shop/*/items?id=3', 'http://127.0.0.1:8080/*/items?id=3', '**/items',
  '**/items*', '**/{cart,basket}/items*', '**/{basket,bag}/items*', 'http://127.0.0.1:8080/shop',
  '**/example.com*', '**/example.com/**', 'https://example.com', 'https://example.com/',
  'https://EXAMPLE.com/', 'https://example.com/Path/To?Q=1#Frag', 'https://example.com/path/**',
  '**/Path/**', '**/*.json', '**/api/**/*.json', '**/api/**', 'http://localhost:3000/api/**/double',
  'http://localhost:3000/api/*/double', 'http://localhost:*/', 'http://localhost:3000',
  '**', '*', '**/*', 'about:blank', 'about:*', 'data:*', 'file:///tmp/**', 'file:///tmp/*.html',
  '**/*.{png,jpg}', 'https://*.example.com/**', 'http*://sub.example.com/**', '**/z.png?size=2*',
  '**/a,b/c', 'http://h/a\\,b/c', '**/a\\*b', '**/a*b', 'http://h/\\{x\\}/y', '**/$p/q', 'http://h/$p/q',
  '**/u-waits.html?step=?', '**/u-waits.html\\?step=2', '**?*', 'u-waits.html', '/u-waits.html?step=2',
  '**/**/items?id=3', '**/cart**', '**cart/**', 'http://127.0.0.1:8080/**/items?id=3',
  'http://127.0.0.1:8080/shop/**/items?id=3', 'http://127.0.0.1:8080/shop/cart/**/items?id=3',
  'HTTP://127.0.0.1:8080/shop/cart/items?id=3', 'http://127.0.0.1:8080/shop/cart/items?id=3#',
];
// Per pattern: the indices of the URLs it matches, or the error it is refused with.
const table = [];
for (const pattern of patterns) {
  const matches = [];
  urls.forEach((url, i) => { if (iso.urlMatches(undefined, url, pattern)) matches.push(i); });
  table.push({ pattern, matches });
}
for (const pattern of ['**/{a,b', '**/a}', '**/{a,{b}}']) {
  let error = null;
  try { iso.urlMatches(undefined, 'http://h/', pattern); } catch (e) { error = e.message; }
  table.push({ pattern, error });
}
const out = { playwrightCore: version, urls, patterns: table };
writeFileSync(new URL('../../tests/data/url_globs.json', import.meta.url), JSON.stringify(out, null, 1) + '\n');
console.log(`${table.length} patterns x ${urls.length} URLs from playwright-core ${version}`);
