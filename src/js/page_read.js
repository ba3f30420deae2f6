((args, lib) => {
  // Reading a frame's page as data (JS-PROBES.md §15), joined behind probe_lib.js. `args.mode`:
  // - "text" {limit, links}: body innerText (overlay hidden) cut at `limit`: {text, total,
  //   links?, jsonLd:{blocks:[{index, value, error}], total}, microdata:{items:[{type, id,
  //   properties:{name:[value]}}], total}} (at most 20 JSON-LD blocks of 100000 characters,
  //   50 top-level microdata items, nesting 5 deep).
  // - "tables": every `table` in document order: {tables:[{index, selector, rows, cols,
  //   textLength, imageCount, preview, className, id}]}.
  // - "markdown" {selector, nth, limit, links}: the body or the chosen element as Markdown
  //   (tables as GFM tables): {markdown, total, count, links?}; a selector matching nothing or an
  //   nth out of range fails with the count.
  // - "find" {text, regex, contextChars, maxMatches, selector}: non-overlapping hits in the
  //   innerText: {matchCount, matches:[{index, line, match, before, after}], textLength,
  //   countCapped}.
  // The highlight overlay is hidden while text is read and never converted.
  const OVERLAY_ID = 'playwright-highlight-container';
  const overlay = document.getElementById(OVERLAY_ID);
  const withOverlayHidden = (f) => {
    if (!overlay) return f();
    const before = overlay.style.display;
    overlay.style.display = 'none';
    try {
      return f();
    } finally {
      overlay.style.display = before;
    }
  };
  const bodyOf = () => document.body || document.documentElement;
  const links = (root) => Array.from(root.querySelectorAll('a[href]'))
    .filter((a) => !(overlay && overlay.contains(a)))
    .slice(0, 1000)
    .map((a) => ({ text: String(a.innerText || a.textContent || '').trim().slice(0, 80), href: String(a.href) }));
  const pick = (selector, nth) => {
    let all;
    try {
      all = lib.selectAll(selector);
    } catch (e) {
      return { failure: lib.fail('INVALID_ARGUMENT', 'param `selector`: `' + selector + '` is not a valid selector: ' + String((e && e.message) || e), { param: 'selector' }) };
    }
    if (all.length === 0) return { failure: lib.fail('ELEMENT_NOT_FOUND', 'no element matches selector `' + selector + '`', { count: 0 }) };
    const k = nth === null || nth === undefined ? 0 : nth;
    if (k >= all.length) return { failure: lib.fail('INVALID_ARGUMENT', 'param `nth`: ' + k + ' is out of range: selector `' + selector + '` matches ' + all.length + ' element(s)', { param: 'nth', count: all.length }) };
    return { el: all[k], count: all.length };
  };

  // --- Markdown ---------------------------------------------------------------------------
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'title', 'svg', 'canvas', 'iframe', 'object', 'embed', 'input', 'select', 'textarea', 'button']);
  const BLOCK = new Set(['p', 'div', 'section', 'article', 'main', 'header', 'footer', 'nav', 'aside', 'form', 'fieldset', 'figure', 'figcaption', 'address', 'details', 'summary', 'dl', 'dt', 'dd', 'body', 'html', 'caption', 'legend', 'center']);
  const hidden = (el) => {
    if (el.id === OVERLAY_ID) return true;
    try {
      const s = getComputedStyle(el);
      return s.display === 'none' || s.visibility === 'hidden';
    } catch (e) {
      return false;
    }
  };
  const wrap = (raw, mark) => {
    const t = raw.trim();
    if (!t) return raw.replace(/\S/g, '');
    const lead = /^\s/.test(raw) ? ' ' : '';
    const trail = /\s$/.test(raw) ? ' ' : '';
    return lead + mark + t + mark + trail;
  };
  const inline = (node) => {
    let out = '';
    for (const c of node.childNodes) out += inl(c);
    return out;
  };
  const inl = (n) => {
    if (n.nodeType === 3) return n.nodeValue.replace(/\s+/g, ' ');
    if (n.nodeType !== 1) return '';
    const tag = n.localName;
    if (SKIP.has(tag) || hidden(n)) return '';
    switch (tag) {
      case 'br': return '\n';
      case 'a': {
        const raw = inline(n);
        const t = raw.replace(/\s+/g, ' ').trim();
        if (!t || !n.getAttribute('href')) return raw;
        return (/^\s/.test(raw) ? ' ' : '') + '[' + t + '](' + String(n.href) + ')' + (/\s$/.test(raw) ? ' ' : '');
      }
      case 'strong': case 'b': return wrap(inline(n), '**');
      case 'em': case 'i': return wrap(inline(n), '*');
      case 'code': case 'kbd': case 'samp': return wrap(n.textContent.replace(/\s+/g, ' '), '`');
      case 'img': {
        const src = n.currentSrc || n.src || '';
        return src ? '![' + String(n.alt || '').trim() + '](' + src + ')' : '';
      }
      default: return inline(n);
    }
  };
  const cellText = (c) => inline(c).replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
  const table = (t) => {
    const rows = [];
    for (const tr of t.rows) {
      const cells = [];
      for (const c of tr.cells) {
        cells.push(cellText(c));
        for (let k = 1; k < Math.min(c.colSpan || 1, 100); k++) cells.push('');
      }
      rows.push(cells);
    }
    if (rows.length === 0) return '';
    const cols = Math.max(1, ...rows.map((r) => r.length));
    const line = (r) => {
      const cells = r.slice();
      while (cells.length < cols) cells.push('');
      return '| ' + cells.join(' | ') + ' |';
    };
    const out = [line(rows[0]), '|' + ' --- |'.repeat(cols)];
    for (const r of rows.slice(1)) out.push(line(r));
    const cap = t.caption ? cellText(t.caption) : '';
    return (cap ? cap + '\n\n' : '') + out.join('\n');
  };
  const list = (el, depth) => {
    const lines = [];
    let i = 1;
    for (const li of el.children) {
      if (li.localName !== 'li' || hidden(li)) continue;
      const marker = el.localName === 'ol' ? (i++) + '. ' : '- ';
      let text = '';
      const subs = [];
      for (const c of li.childNodes) {
        if (c.nodeType === 1 && (c.localName === 'ul' || c.localName === 'ol')) subs.push(list(c, depth + 1));
        else text += inl(c);
      }
      lines.push('  '.repeat(depth) + marker + text.replace(/\s+/g, ' ').trim());
      for (const s of subs) if (s) lines.push(s);
    }
    return lines.join('\n');
  };
  const markdown = (root) => {
    const blocks = [];
    let buf = '';
    const flush = () => {
      const t = buf.replace(/[ \t]+/g, ' ').replace(/ ?\n ?/g, '\n').trim();
      if (t) blocks.push(t);
      buf = '';
    };
    const walk = (n) => {
      if (n.nodeType === 3) {
        buf += n.nodeValue.replace(/\s+/g, ' ');
        return;
      }
      if (n.nodeType !== 1) return;
      const tag = n.localName;
      if (SKIP.has(tag) || hidden(n)) return;
      const h = /^h([1-6])$/.exec(tag);
      if (h) {
        flush();
        const t = inline(n).replace(/\s+/g, ' ').trim();
        if (t) blocks.push('#'.repeat(Number(h[1])) + ' ' + t);
        return;
      }
      if (tag === 'table') {
        flush();
        const t = table(n);
        if (t) blocks.push(t);
        return;
      }
      if (tag === 'ul' || tag === 'ol') {
        flush();
        const t = list(n, 0);
        if (t) blocks.push(t);
        return;
      }
      if (tag === 'pre') {
        flush();
        blocks.push('```\n' + n.textContent.replace(/\n$/, '') + '\n```');
        return;
      }
      if (tag === 'hr') {
        flush();
        blocks.push('---');
        return;
      }
      if (tag === 'blockquote') {
        flush();
        const t = markdown(n);
        if (t) blocks.push(t.split('\n').map((l) => (l ? '> ' + l : '>')).join('\n'));
        return;
      }
      if (BLOCK.has(tag) || tag === 'li') {
        flush();
        for (const c of n.childNodes) walk(c);
        flush();
        return;
      }
      buf += inl(n);
    };
    walk(root);
    flush();
    return blocks.join('\n\n');
  };

  // --- Structured data (moonpilot): JSON-LD blocks and microdata items -----------------------
  const MAX_BLOCKS = 20;
  const MAX_BLOCK_CHARS = 100000;
  const jsonLd = () => {
    const all = Array.from(document.querySelectorAll('script[type="application/ld+json"]'));
    const blocks = all.slice(0, MAX_BLOCKS).map((el, index) => {
      const raw = String(el.textContent || '');
      if (raw.length > MAX_BLOCK_CHARS) return { index, error: 'block of ' + raw.length + ' characters is over the ' + MAX_BLOCK_CHARS + ' cap', value: null };
      try {
        return { index, value: JSON.parse(raw), error: null };
      } catch (e) {
        return { index, value: null, error: 'not valid JSON: ' + String((e && e.message) || e).slice(0, 200) };
      }
    });
    return { blocks, total: all.length };
  };
  const MAX_ITEMS = 50;
  const propValue = (el, depth) => {
    if (el.hasAttribute('itemscope')) return depth < 5 ? item(el, depth + 1) : '[nested item not read: depth cap 5]';
    const tag = el.localName;
    if (tag === 'meta') return el.getAttribute('content');
    if (['a', 'link', 'area'].includes(tag)) return String(el.href || el.getAttribute('href') || '');
    if (['img', 'audio', 'video', 'source', 'embed', 'iframe', 'track'].includes(tag)) return String(el.src || el.getAttribute('src') || '');
    if (tag === 'time' && el.hasAttribute('datetime')) return el.getAttribute('datetime');
    if ((tag === 'data' || tag === 'meter') && el.hasAttribute('value')) return el.getAttribute('value');
    return lib.collapse(el.textContent).slice(0, 500);
  };
  // The properties of an item: elements with itemprop under it whose nearest itemscope
  // ancestor is this item.
  const item = (scope, depth) => {
    const properties = {};
    for (const el of scope.querySelectorAll('[itemprop]')) {
      const owner = el.parentElement && el.parentElement.closest('[itemscope]');
      if (owner !== scope) continue;
      for (const name of String(el.getAttribute('itemprop')).trim().split(/\s+/)) {
        if (!name) continue;
        (properties[name] = properties[name] || []).push(propValue(el, depth));
      }
    }
    return { type: scope.getAttribute('itemtype'), id: scope.getAttribute('itemid'), properties };
  };
  const microdata = () => {
    const top = Array.from(document.querySelectorAll('[itemscope]')).filter((el) => !el.hasAttribute('itemprop'));
    return { items: top.slice(0, MAX_ITEMS).map((el) => item(el, 0)), total: top.length };
  };

  // --- Modes ------------------------------------------------------------------------------
  const mode = args.mode;
  if (mode === 'text') {
    const text = withOverlayHidden(() => String(bodyOf().innerText || ''));
    const out = { text: text.slice(0, args.limit), total: text.length, jsonLd: jsonLd(), microdata: microdata() };
    if (args.links) out.links = links(document);
    return lib.ok(out);
  }
  if (mode === 'tables') {
    const tables = Array.from(document.querySelectorAll('table')).map((t, index) => ({
      index,
      selector: 'table >> nth=' + index,
      rows: t.rows.length,
      cols: t.rows.length ? t.rows[0].cells.length : 0,
      textLength: String(t.innerText || '').length,
      imageCount: t.querySelectorAll('img').length,
      preview: lib.collapse(t.innerText || t.textContent).slice(0, 120),
      className: lib.classOf(t) || null,
      id: t.getAttribute('id'),
    }));
    return lib.ok({ tables });
  }
  if (mode === 'markdown') {
    let root = bodyOf();
    let count = null;
    if (typeof args.selector === 'string') {
      const got = pick(args.selector, args.nth);
      if (got.failure) return got.failure;
      root = got.el;
      count = got.count;
    }
    const text = markdown(root).replace(/\n{3,}/g, '\n\n');
    const out = { markdown: text.slice(0, args.limit), total: text.length, count };
    if (args.links) out.links = links(document);
    return lib.ok(out);
  }
  if (mode === 'find') {
    let root = bodyOf();
    if (typeof args.selector === 'string') {
      const got = pick(args.selector, 0);
      if (got.failure) return got.failure;
      root = got.el;
    }
    let re = null;
    if (args.regex) {
      try {
        re = new RegExp(args.text, 'gm');
      } catch (e) {
        return lib.fail('INVALID_ARGUMENT', 'param `text`: `' + args.text + '` is not a valid regex: ' + String((e && e.message) || e), { param: 'text' });
      }
    }
    const text = withOverlayHidden(() => String(root.innerText || ''));
    const COUNT_CAP = 100000;
    const ctx = args.contextChars;
    const matches = [];
    let matchCount = 0;
    let lineNo = 1;
    let lineAt = 0;
    const lineOf = (at) => {
      for (let k = lineAt; k < at; k++) if (text.charCodeAt(k) === 10) lineNo++;
      lineAt = at;
      return lineNo;
    };
    const hit = (at, m) => {
      matchCount++;
      if (matches.length < args.maxMatches) {
        matches.push({
          index: at,
          line: lineOf(at),
          match: m.slice(0, 2000),
          before: text.slice(Math.max(0, at - ctx), at),
          after: text.slice(at + m.length, at + m.length + ctx),
        });
      }
    };
    if (re) {
      let m;
      while (matchCount < COUNT_CAP && (m = re.exec(text)) !== null) {
        hit(m.index, m[0]);
        if (m[0].length === 0) re.lastIndex = m.index + 1;
      }
    } else if (args.text.length > 0) {
      let at = text.indexOf(args.text);
      while (at !== -1 && matchCount < COUNT_CAP) {
        hit(at, args.text);
        at = text.indexOf(args.text, at + args.text.length);
      }
    }
    return lib.ok({ matchCount, matches, textLength: text.length, countCapped: matchCount >= COUNT_CAP });
  }
  return lib.fail('PROBE_FAILED', 'unknown mode');
})
