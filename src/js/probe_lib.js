((probe) => {
  // Helpers shared by the element probes (JS-PROBES.md §0, §6-§9), joined in front of each
  // of them at compile time (src/js/mod.rs). This file is one expression: a function that
  // takes the probe, itself written as `((args, lib) => ...)`, and answers the one-argument
  // function Chromium calls, so the joined source reads `withLib(probe)`.
  //
  // The reply envelope of every probe: {ok:true, value} or {ok:false, code, msg[, data]},
  // where `code` is an ErrorCode wire string (STALE_ELEMENT, INVALID_ARGUMENT, ...) or
  // PROBE_FAILED for a probe that threw (caught here, so a probe never throws).
  //
  // Everything here reads the DOM of the frame the probe runs in, from an isolated world: the
  // page's own patches of builtins (Array, JSON, elementFromPoint) are not seen.
  const SHADOW = '#shadow-root';
  const STEP = /^([^\[\]\/@()]+)(?:\[(\d+)\])?$/;
  const OVERLAY_ID = 'playwright-highlight-container';

  const ok = (value) => ({ ok: true, value: value === undefined ? null : value });
  const fail = (code, msg, data) => (data === undefined
    ? { ok: false, code, msg }
    : { ok: false, code, msg, data });

  // The one locator resolver (§6): a locator produced by dom_index.js is a positional XPath
  // without the leading slash, where `/#shadow-root/` enters the open shadow root of the element
  // before it; steps match tags case-insensitively, `tag[k]` is the k-th same-tag child. A
  // locator that is not positional is evaluated as a document XPath. Each resolver keeps
  // per-call caches (children by tag of big parents, the nodes of the previous locator, since
  // consecutive locators share long prefixes), so one resolver must not outlive a DOM change:
  // make one per probe call.
  const resolver = () => {
    const BIG = 32;
    const byTagCache = new Map();
    const kthChild = (parent, name, k) => {
      let byTag = byTagCache.get(parent);
      if (byTag === undefined) {
        // childElementCount walks the children, so the decision is made once per parent.
        byTag = null;
        if (parent.childElementCount > BIG) {
          byTag = new Map();
          for (let c = parent.firstElementChild; c !== null; c = c.nextElementSibling) {
            const t = c.localName.toLowerCase();
            let list = byTag.get(t);
            if (!list) byTag.set(t, (list = []));
            list.push(c);
          }
        }
        byTagCache.set(parent, byTag);
      }
      if (byTag !== null) {
        const list = byTag.get(name);
        return (list && list[k - 1]) || null;
      }
      let seen = 0;
      for (let c = parent.firstElementChild; c !== null; c = c.nextElementSibling) {
        if (c.localName.toLowerCase() === name && ++seen === k) return c;
      }
      return null;
    };
    const xpathFallback = (path) => {
      if (path.indexOf(SHADOW) >= 0) return null;
      const expr = path.charAt(0) === '/' ? path : '/' + path;
      const res = document.evaluate(expr, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
      return res.singleNodeValue;
    };
    let prevSteps = [];
    let prevNodes = [];
    const walk = (path) => {
      const steps = (path.charAt(0) === '/' ? path.slice(1) : path).split('/');
      let same = 0;
      while (same < steps.length && same < prevSteps.length && steps[same] === prevSteps[same]) same++;
      const nodes = prevNodes.slice(0, same);
      let node = same > 0 ? nodes[same - 1] : document;
      for (let i = same; i < steps.length && node; i++) {
        const step = steps[i];
        if (step === SHADOW) {
          node = node.shadowRoot || null;
        } else {
          const m = STEP.exec(step);
          if (!m) return xpathFallback(path);
          node = kthChild(node, m[1].toLowerCase(), m[2] ? Number(m[2]) : 1);
        }
        nodes.push(node);
      }
      while (nodes.length > 0 && !nodes[nodes.length - 1]) nodes.pop();
      prevSteps = steps.slice(0, nodes.length);
      prevNodes = nodes;
      return node;
    };
    return (path) => {
      if (typeof path !== 'string' || path === '') return null;
      try {
        const node = walk(path);
        return node && node.nodeType === 1 ? node : null;
      } catch (e) {
        // A broken locator (or an invalid XPath) resolves to nothing; the caches start over.
        prevSteps = [];
        prevNodes = [];
        return null;
      }
    };
  };

  // What identifies an element across reads: the tag and the `id` and `name` attributes (the
  // attributes, not the properties: a form's `id` property can be one of its inputs).
  const identity = (el) => ({ tag: el.localName, id: el.getAttribute('id'), name: el.getAttribute('name') });

  // Whether a live element is still the one a snapshot saw: the same tag (case-insensitive),
  // and the `id` and `name` the snapshot saw, where it saw one. An element that gained an id is
  // the same element; one that lost or changed it is not (a newcomer at the same position).
  const sameIdentity = (el, tag, id, name) => {
    if (typeof tag === 'string' && tag !== '' && el.localName.toLowerCase() !== tag.toLowerCase()) return false;
    if (typeof id === 'string' && id !== '' && el.getAttribute('id') !== id) return false;
    if (typeof name === 'string' && name !== '' && el.getAttribute('name') !== name) return false;
    return true;
  };

  // Finds the element a command means. `target` is {path, expect: {tag, id, name}} (a snapshot
  // locator and what the snapshot saw there). Answers {el}, or {failure} with STALE_ELEMENT and
  // `data.reason` "gone" (nothing there) or "changed" (another element there).
  const locate = (target) => {
    const t = target || {};
    const el = resolver()(t.path);
    if (!el) return { failure: fail('STALE_ELEMENT', 'the element is no longer in the page', { reason: 'gone' }) };
    const want = t.expect;
    if (want && !sameIdentity(el, want.tag, want.id, want.name)) {
      return {
        failure: fail('STALE_ELEMENT', 'the locator now leads to another element',
          { reason: 'changed', found: identity(el) }),
      };
    }
    return { el };
  };

  const collapse = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  const classOf = (el) => {
    const c = el.className;
    const v = typeof c === 'string' ? c : (c && typeof c.baseVal === 'string' ? c.baseVal : '');
    return v === '' ? null : v;
  };
  // Elements with many children (a hit on <body>) are summarised from cheap reads only.
  const SMALL = 8;
  const textOf = (el, max) => {
    const small = el.childElementCount <= SMALL;
    const raw = small && typeof el.innerText === 'string' ? el.innerText : String(el.textContent || '').slice(0, 4 * max);
    return collapse(raw).slice(0, max);
  };
  // The start tag of an element, built by hand (cloning would run a custom element's
  // constructor in the page).
  const startTag = (el) => {
    let s = '<' + el.localName;
    for (const a of el.attributes) {
      s += ' ' + a.name + '="' + String(a.value).replace(/"/g, '&quot;') + '"';
      if (s.length > 300) break;
    }
    return s + '>';
  };
  // §8 element description: {tag (upper-case), id, className (<= 120), text (<= 60),
  // outerHtml (<= 300; only the start tag for elements with many children)}.
  const summary = (el) => {
    const html = el.childElementCount <= SMALL ? String(el.outerHTML || '') : startTag(el);
    return {
      tag: el.tagName,
      id: el.getAttribute('id') || null,
      className: (classOf(el) || '').slice(0, 120) || null,
      text: textOf(el, 60),
      outerHtml: html.length > 300 ? html.slice(0, 300) : html,
    };
  };

  const rectOf = (r) => [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)];
  const hasBox = (r) => r.width > 0 && r.height > 0;
  // The frame's layout viewport without scrollbars, in CSS px.
  const viewport = () => {
    const root = document.compatMode === 'BackCompat' ? document.body : document.documentElement;
    const w = root && root.clientWidth > 0 ? Math.min(root.clientWidth, window.innerWidth) : window.innerWidth;
    const h = root && root.clientHeight > 0 ? Math.min(root.clientHeight, window.innerHeight) : window.innerHeight;
    return { w, h };
  };
  const fullyInView = (r) => {
    const vp = viewport();
    return r.top >= 0 && r.left >= 0 && r.bottom <= vp.h && r.right <= vp.w;
  };
  const scrollToCenter = (el) => {
    try {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    } catch (e) {
      // Scrolling is best effort (§9).
    }
  };

  // The parent in the flat tree: a slotted node's slot, a shadow root's host.
  const flatParent = (n) => {
    if (n.assignedSlot) return n.assignedSlot;
    const p = n.parentNode;
    return p && p.nodeType === 11 && p.host ? p.host : p;
  };
  // Whether `inner` is `outer` or inside it, across shadow boundaries and slots.
  const contains = (outer, inner) => {
    for (let n = inner; n; n = flatParent(n)) {
      if (n === outer) return true;
    }
    return false;
  };
  // The innermost element at a point of this frame's viewport, descending into open shadow
  // roots (document.elementFromPoint stops at the outermost host).
  const deepHit = (x, y) => {
    let hit = document.elementFromPoint(x, y);
    for (let depth = 0; hit && hit.shadowRoot && depth < 32; depth++) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  };

  // Where to click (§8, hit test): the first point inside one of the element's own client
  // rects (clipped to the viewport) at which the hit test finds the element or a descendant.
  // A bounding-box centre may lie outside the element (a link that wraps onto two lines, an
  // L-shaped or clipped element) and a hit on an ancestor there means the click would land on
  // the ancestor (as it does under pointer-events:none): such points are never accepted. The
  // centres of the rects come first, then points around them, nearest first. Answers
  // {point: [x, y] | null, hit, coveredBy, reason}: reason is null with a point, else one of
  // no-box, outside-viewport, covered (coveredBy = what the first tried point hit),
  // no-element-at-point.
  const GRID = [[0.5, 0.5], [0.5, 0.25], [0.5, 0.75], [0.25, 0.5], [0.75, 0.5], [0.25, 0.25],
    [0.75, 0.25], [0.25, 0.75], [0.75, 0.75], [0.1, 0.5], [0.9, 0.5], [0.5, 0.1], [0.5, 0.9]];
  const MAX_RECTS = 8;
  const round2 = (v) => Math.round(v * 100) / 100;
  const clickPoint = (el) => {
    const list = el.getClientRects();
    const vp = viewport();
    const boxes = [];
    let boxed = false;
    for (let i = 0; i < list.length && boxes.length < MAX_RECTS; i++) {
      const r = list[i];
      if (!hasBox(r)) continue;
      boxed = true;
      const left = Math.max(r.left, 0);
      const top = Math.max(r.top, 0);
      const right = Math.min(r.right, vp.w);
      const bottom = Math.min(r.bottom, vp.h);
      if (right - left >= 1 && bottom - top >= 1) boxes.push({ left, top, width: right - left, height: bottom - top });
    }
    if (boxes.length === 0) {
      return { point: null, hit: null, coveredBy: null, reason: boxed ? 'outside-viewport' : 'no-box' };
    }
    // An option of a drop-down is hit as its select.
    const want = (el.localName === 'option' || el.localName === 'optgroup') ? (el.closest('select') || el) : el;
    let first = null;
    for (const [fx, fy] of GRID) {
      for (const b of boxes) {
        const x = round2(b.left + b.width * fx);
        const y = round2(b.top + b.height * fy);
        const hit = deepHit(x, y);
        if (hit && contains(want, hit)) return { point: [x, y], hit: summary(hit), coveredBy: null, reason: null };
        if (first === null && hit) first = hit;
      }
    }
    if (first === null) return { point: null, hit: null, coveredBy: null, reason: 'no-element-at-point' };
    const cover = summary(first);
    return { point: null, hit: cover, coveredBy: cover, reason: 'covered' };
  };

  // Input types that have no text to type into: Playwright's fill sets their value (with
  // input and change events) and so do we.
  const SET_TYPES = new Set(['color', 'date', 'time', 'datetime-local', 'month', 'range', 'week']);
  const NOT_FILLABLE = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'hidden', 'image']);
  // Only form controls have a meaningful `type` property (an anchor's is a MIME type hint).
  const typeOf = (el) => {
    const tag = el.localName;
    return (tag === 'input' || tag === 'button' || tag === 'select' || tag === 'textarea')
      ? String(el.type).toLowerCase() : null;
  };
  // How text gets into the element: 'text' (typed), 'set' (value setter), or null (it takes none).
  const fillKind = (el) => {
    if (el.localName === 'input') {
      const t = typeOf(el);
      if (SET_TYPES.has(t)) return 'set';
      return NOT_FILLABLE.has(t) ? null : 'text';
    }
    return el.localName === 'textarea' || el.isContentEditable ? 'text' : null;
  };
  const isPassword = (el) => el.localName === 'input' && String(el.type).toLowerCase() === 'password';

  // The live value: a control's `value`, a content-editable element's text, else null.
  const liveValue = (el) => {
    if ('value' in el && el.value !== undefined && el.value !== null && el.localName !== 'li') {
      return String(el.value);
    }
    if (el.isContentEditable) return String(el.innerText);
    return null;
  };
  // What the browser itself makes of `text` in this element (value sanitisation, HTML §4.10.5):
  // single-line inputs drop line breaks, email and url inputs also trim; textareas normalise
  // line breaks; content-editable text is compared with collapsed whitespace.
  const expected = (el, text) => {
    const t = String(text);
    if (el.localName === 'textarea') return t.replace(/\r\n?/g, '\n');
    if (el.localName === 'input') {
      const single = t.replace(/[\r\n]/g, '');
      const type = typeOf(el);
      return type === 'email' || type === 'url' ? single.trim() : single;
    }
    return 'value' in el ? t : collapse(t);
  };
  // Reads the value back after an input: `matches` says whether it is `text` (mode "exact") or
  // ends with it after `before` characters (mode "append"). Passwords are "[redacted]".
  const readBack = (el, text, mode, before) => {
    const raw = liveValue(el);
    const live = raw !== null && !('value' in el) ? collapse(raw) : raw;
    const want = expected(el, text);
    let matches = false;
    if (live !== null) {
      if (mode !== 'append') matches = live === want;
      else if (!live.endsWith(want)) matches = false;
      // Appended text must also be all that was added (no autocompletion, no doubled keys).
      else matches = typeof before !== 'number' || !('value' in el) || live.length === before + want.length;
    }
    return {
      value: live === null ? null : (isPassword(el) ? '[redacted]' : live.slice(0, 200)),
      length: live === null ? null : live.length,
      matches,
    };
  };

  // The prototype's native value setter (frameworks patch the instance's one; in this isolated
  // world the page's patches are not even visible).
  const nativeSet = (el, text) => {
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype
      : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype
        : el instanceof HTMLInputElement ? HTMLInputElement.prototype : null;
    const desc = proto ? Object.getOwnPropertyDescriptor(proto, 'value') : null;
    if (desc && typeof desc.set === 'function') desc.set.call(el, text);
    else if (!('value' in el) && el.isContentEditable) el.textContent = text;
    else el.value = text;
  };

  // §7 page part of the interaction fingerprint: {url, textLength, fingerprint} (FNV-1a of JSON
  // [text, controls, structure]), or {url, probeError}. The highlight overlay is left out.
  const pageMark = () => {
    const url = String(location.href);
    try {
      const body = document.body;
      const overlay = document.getElementById(OVERLAY_ID);
      let text = '';
      if (body) {
        // Labels of the overlay would show up in innerText: hide it for the read.
        const shown = overlay !== null && overlay.style.display !== 'none';
        const previous = shown ? overlay.style.display : null;
        if (shown) overlay.style.display = 'none';
        try {
          text = String(body.innerText || '');
        } finally {
          if (shown) overlay.style.display = previous;
        }
      }
      const controls = [];
      for (const el of document.querySelectorAll('input, textarea, select')) {
        if (overlay !== null && overlay.contains(el)) continue;
        // A file input's value is the file just given to it (upload_file): not a page reaction.
        const own = el.localName === 'input' && String(el.type).toLowerCase() === 'file';
        controls.push([isPassword(el) ? '[redacted]' : (own ? '' : el.value), el.checked, el.disabled, el.readOnly]);
      }
      const structure = [];
      if (body) {
        const all = body.getElementsByTagName('*');
        for (let i = 0; i < all.length; i++) {
          const el = all[i];
          if (el === overlay) {
            // The overlay's descendants follow it contiguously in document order.
            i += overlay.getElementsByTagName('*').length;
            continue;
          }
          structure.push([el.tagName, classOf(el) || '', el.getAttribute('style'), el.getAttribute('aria-expanded'),
            el.getAttribute('aria-selected'), el.hidden === true]);
        }
      }
      const source = JSON.stringify([text, controls, structure]);
      let h = 2166136261;
      for (let i = 0; i < source.length; i++) {
        h ^= source.charCodeAt(i);
        h = Math.imul(h, 16777619);
      }
      return { url, textLength: text.length, fingerprint: String(h >>> 0) };
    } catch (e) {
      return { url, probeError: String((e && e.message) || e) };
    }
  };

  // The resolver's locator of a live element (the inverse of `resolver`): tag steps from the
  // document, `tag[k]` when the parent has several children of that tag, `#shadow-root` to
  // enter an open shadow root. Answers null for a detached element.
  const pathOf = (el) => {
    const segs = [];
    let cur = el;
    while (cur && cur.nodeType === 1) {
      const parent = cur.parentNode;
      if (!parent) return null;
      const name = cur.localName;
      let pos = 0;
      let total = 0;
      for (let s = parent.firstElementChild; s; s = s.nextElementSibling) {
        if (s.localName === name) {
          total++;
          if (s === cur) pos = total;
        }
      }
      segs.push(total > 1 ? name + '[' + pos + ']' : name);
      if (parent.nodeType === 11 && parent.host) {
        segs.push(SHADOW);
        cur = parent.host;
      } else if (parent.nodeType === 9) {
        break;
      } else {
        cur = parent;
      }
    }
    return segs.reverse().join('/');
  };

  // A box, and neither visibility:hidden nor display:none (the rule of the `inspect` read).
  const isVisible = (el) => {
    const r = el.getBoundingClientRect();
    if (!hasBox(r)) return false;
    const style = getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };

  // ---- Locating without a snapshot: selectors, text, roles, labels (JS-PROBES.md §8, §9).
  const lower = (s) => collapse(s).toLowerCase();
  const SKIP_TEXT = new Set(['script', 'style', 'noscript', 'template', 'head', 'title']);

  // Splits a Playwright selector chain at top-level `>>` (outside quotes and brackets).
  const splitChain = (selector) => {
    const parts = [];
    let depth = 0;
    let quote = null;
    let start = 0;
    for (let i = 0; i < selector.length; i++) {
      const c = selector[i];
      if (quote) {
        if (c === '\\') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "'") {
        quote = c;
      } else if (c === '[' || c === '(') {
        depth++;
      } else if (c === ']' || c === ')') {
        depth--;
      } else if (depth === 0 && c === '>' && selector[i + 1] === '>') {
        parts.push(selector.slice(start, i).trim());
        start = i + 2;
        i++;
      }
    }
    parts.push(selector.slice(start).trim());
    return parts;
  };
  const unquote = (s) => {
    const t = s.trim();
    const q = t.charAt(0);
    if ((q === '"' || q === "'") && t.length >= 2 && t.charAt(t.length - 1) === q) {
      return { text: t.slice(1, -1).replace(/\\(.)/g, '$1'), exact: true };
    }
    return { text: t, exact: false };
  };
  // Elements of the open shadow roots under `root` (light DOM first: only searched when the
  // light DOM has no match, so big pages do not pay for a walk of every element).
  const shadowRoots = (root) => {
    const out = [];
    const stack = [root];
    while (stack.length > 0) {
      const r = stack.pop();
      for (const el of r.querySelectorAll('*')) {
        if (el.shadowRoot) {
          out.push(el.shadowRoot);
          stack.push(el.shadowRoot);
        }
      }
    }
    return out;
  };
  const cssAll = (scope, css) => {
    const found = [...scope.querySelectorAll(css)];
    if (found.length > 0) return found;
    const deep = [];
    for (const r of shadowRoots(scope)) deep.push(...r.querySelectorAll(css));
    return deep;
  };
  // The deepest elements under `scope` whose text contains `q` (lower-case), or whose text is
  // `q` with `exact`; button-like inputs match by their value.
  const textAll = (scope, q, exact) => {
    const want = exact ? collapse(q) : q.toLowerCase();
    const hit = (s) => (exact ? collapse(s) === want : lower(s).includes(want));
    const holds = (s) => (exact ? collapse(s).includes(want) : lower(s).includes(want));
    const out = [];
    const visit = (el) => {
      if (SKIP_TEXT.has(el.localName)) return;
      let deeper = false;
      for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
        if (!SKIP_TEXT.has(c.localName) && holds(c.textContent)) {
          deeper = true;
          visit(c);
        }
      }
      if (!deeper && hit(el.textContent)) out.push(el);
    };
    const start = scope.nodeType === 9 ? scope.body : scope;
    if (start && holds(start.textContent)) visit(start);
    for (const el of scope.querySelectorAll('input[type=button], input[type=submit], input[type=reset]')) {
      if (hit(el.value)) out.push(el);
    }
    return out;
  };
  const xpathAll = (scope, expr) => {
    const res = document.evaluate(expr, scope, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    const out = [];
    for (let i = 0; i < res.snapshotLength; i++) {
      const n = res.snapshotItem(i);
      if (n && n.nodeType === 1) out.push(n);
    }
    return out;
  };
  const HAS_TEXT = /:has-text\((["'])((?:\\.|(?!\1).)*)\1\)$/;
  // One step of a chain within one scope.
  const stepAll = (scope, part) => {
    const eq = part.indexOf('=');
    const engine = eq > 0 && /^[a-z-]+$/.test(part.slice(0, eq)) ? part.slice(0, eq) : null;
    const body = engine ? part.slice(eq + 1) : part;
    switch (engine) {
      case 'css': return cssAll(scope, body);
      case 'xpath': return xpathAll(scope, body);
      case 'text': {
        const u = unquote(body);
        return textAll(scope, u.text, u.exact);
      }
      case 'id': return cssAll(scope, '[id="' + CSS.escape(unquote(body).text) + '"]');
      case 'data-testid': case 'data-test-id': case 'data-test':
        return cssAll(scope, '[' + engine + '="' + CSS.escape(unquote(body).text) + '"]');
      case 'role': return within(scope, roleStep(body));
      case 'label': return within(scope, labelStep(body));
      default: break;
    }
    if (part.startsWith('//') || part.startsWith('(//') || part.startsWith('..')) return xpathAll(scope, part);
    let css = part;
    let visibleOnly = false;
    let hasText = null;
    if (css.endsWith(':visible')) {
      visibleOnly = true;
      css = css.slice(0, -':visible'.length);
    }
    const m = HAS_TEXT.exec(css);
    if (m) {
      hasText = m[2].replace(/\\(.)/g, '$1').toLowerCase();
      css = css.slice(0, m.index);
    }
    let found = cssAll(scope, css === '' ? '*' : css);
    if (hasText !== null) found = found.filter((el) => lower(el.textContent).includes(hasText));
    if (visibleOnly) found = found.filter(isVisible);
    return found;
  };
  // The elements of `list` inside `scope` (all of them for the document).
  const within = (scope, list) => (scope.nodeType === 9 ? list
    : list.filter((el) => el !== scope && scope.contains(el)));
  // `role=ROLE`, `role=ROLE[name="…"]` (an accessible name containing it, any case, as a role
  // locator matches) and `role=ROLE[name="…"s]` (exactly that name), as Playwright writes them.
  const ROLE_STEP = /^([a-z]+)(?:\[name=(["'])((?:\\.|(?!\2).)*)\2([is])?\])?$/;
  const roleStep = (body) => {
    const m = ROLE_STEP.exec(body.trim());
    if (!m) throw new SyntaxError('`role=' + body + '` is no role selector: role=ROLE or role=ROLE[name="…"]');
    const role = m[1];
    const name = m[3] === undefined ? null : m[3].replace(/\\(.)/g, '$1');
    if (m[4] !== 's' || name === null) return roleAll(role, name);
    return roleAll(role, name).filter((el) => accessibleName(el, role) === collapse(name));
  };
  // `label=…`: the controls labelled so (exact label texts first, then those containing it);
  // quoted, exactly that label.
  const labelStep = (body) => {
    const u = unquote(body);
    const all = labelAll(u.text);
    if (!u.exact) return all;
    const want = collapse(u.text);
    return all.filter((el) => labelsOf(el).some((t) => t === want));
  };
  // Every element a CSS or Playwright-style selector matches, in order: CSS (light DOM, then
  // open shadow roots), `css=`, `xpath=` or `//…`, `text=` (quoted: exact), `id=`,
  // `data-testid=`, `role=ROLE[name="…"]`, `label=…`, `:has-text("…")` and `:visible` at the
  // end of a CSS step, and chains joined by `>>` with `nth=N` picks. Throws a SyntaxError for a
  // selector that does not parse.
  const selectAll = (selector) => {
    let current = [document];
    for (const part of splitChain(String(selector))) {
      if (part === '') throw new SyntaxError('empty step in selector `' + selector + '`');
      const nth = /^nth=(-?\d+)$/.exec(part);
      if (nth) {
        const k = Number(nth[1]);
        const el = current[k < 0 ? current.length + k : k];
        current = el && el.nodeType === 1 ? [el] : [];
        continue;
      }
      const next = [];
      const seen = new Set();
      for (const scope of current) {
        for (const el of stepAll(scope, part)) {
          if (!seen.has(el)) {
            seen.add(el);
            next.push(el);
          }
        }
      }
      current = next;
    }
    return current.filter((n) => n.nodeType === 1);
  };

  // Whether the element's own point receives events (a visible element whose hit test finds it
  // or a descendant, without scrolling).
  const receivesEvents = (el) => clickPoint(el).point !== null;

  // Implicit ARIA roles of the common elements (an explicit `role` wins: its first token).
  const TEXTBOX_TYPES = new Set(['', 'text', 'email', 'tel', 'url', 'password']);
  const roleOf = (el) => {
    const explicit = String(el.getAttribute('role') || '').trim().split(/\s+/)[0].toLowerCase();
    if (explicit) return explicit;
    const tag = el.localName;
    switch (tag) {
      case 'a': case 'area': return el.hasAttribute('href') ? 'link' : null;
      case 'button': return 'button';
      case 'input': {
        const t = String(el.getAttribute('type') || '').toLowerCase();
        if (t === 'button' || t === 'submit' || t === 'reset' || t === 'image') return 'button';
        if (t === 'checkbox') return 'checkbox';
        if (t === 'radio') return 'radio';
        if (t === 'range') return 'slider';
        if (t === 'number') return 'spinbutton';
        if (t === 'search') return el.hasAttribute('list') ? 'combobox' : 'searchbox';
        if (TEXTBOX_TYPES.has(t) || !['hidden', 'file', 'color', 'date', 'time', 'datetime-local', 'month', 'week'].includes(t)) {
          return el.hasAttribute('list') ? 'combobox' : 'textbox';
        }
        return null;
      }
      case 'textarea': return 'textbox';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'img': return el.getAttribute('alt') === '' ? 'presentation' : 'img';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'header': return 'banner';
      case 'footer': return 'contentinfo';
      case 'aside': return 'complementary';
      case 'form': return 'form';
      case 'dialog': return 'dialog';
      case 'table': return 'table';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': return 'columnheader';
      case 'summary': return 'button';
      case 'progress': return 'progressbar';
      case 'hr': return 'separator';
      case 'article': return 'article';
      case 'section': return 'region';
      default: return null;
    }
  };
  const byIds = (ids) => String(ids || '').trim().split(/\s+/)
    .map((id) => document.getElementById(id)).filter(Boolean);
  // `el.labels` (null for what has none), from one pass over the document's labels per
  // synchronous run of a probe (the index is dropped at the next microtask, so a probe that
  // waits for frames reads the labels again after). After any change to the document's tree
  // Chromium answers `labels` by walking the whole tree again for each control, so a page with
  // thousands of fields paid seconds per read (the 4,000-row table: 1.4 s for one pass over its
  // inputs). A control in a shadow tree asks its own tree.
  let labelIndex = null;
  const labelsFor = (el) => {
    const own = el.labels;
    if (!own) return null;
    if (el.getRootNode() !== document) return own;
    if (labelIndex === null) {
      labelIndex = new Map();
      queueMicrotask(() => { labelIndex = null; });
      for (const l of document.querySelectorAll('label')) {
        const c = l.control;
        if (!c) continue;
        const list = labelIndex.get(c);
        if (list) list.push(l);
        else labelIndex.set(c, [l]);
      }
    }
    return labelIndex.get(el) || [];
  };
  // The texts of the labels of a form control: `<label for>`, a wrapping `<label>`,
  // aria-labelledby and aria-label.
  const labelsOf = (el) => {
    const out = [];
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) for (const l of byIds(labelledBy)) out.push(collapse(l.textContent));
    const aria = el.getAttribute('aria-label');
    if (aria) out.push(collapse(aria));
    const labels = labelsFor(el);
    if (labels) for (const l of labels) out.push(collapse(l.textContent));
    return out.filter((s) => s !== '');
  };
  // The accessible name, simplified (accname: labelledby, aria-label, labels, alt, the value
  // of button inputs, text content for roles named by their content, title, placeholder).
  const NAME_FROM_CONTENT = new Set(['button', 'link', 'heading', 'checkbox', 'radio', 'tab',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'treeitem', 'cell', 'columnheader',
    'rowheader', 'switch', 'tooltip', 'listitem', 'row']);
  const accessibleName = (el, role) => {
    const labels = labelsOf(el);
    if (labels.length > 0) return labels[0];
    if (el.localName === 'img' || (el.localName === 'input' && el.type === 'image')) {
      const alt = el.getAttribute('alt');
      if (alt) return collapse(alt);
    }
    if (el.localName === 'input' && ['button', 'submit', 'reset'].includes(el.type)) {
      return collapse(el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : ''));
    }
    if (NAME_FROM_CONTENT.has(role)) {
      const t = collapse(typeof el.innerText === 'string' ? el.innerText : el.textContent);
      if (t) return t;
    }
    return collapse(el.getAttribute('title') || el.getAttribute('placeholder') || '');
  };
  // Hidden from the accessibility tree: aria-hidden on it or an ancestor, or not rendered.
  const ariaHidden = (el) => {
    if (el.closest('[aria-hidden="true"]')) return true;
    const style = getComputedStyle(el);
    return style.visibility === 'hidden' || (el.getClientRects().length === 0 && style.display !== 'contents');
  };
  const roleAll = (role, name) => {
    const want = role.toLowerCase();
    const nameQ = typeof name === 'string' && name !== '' ? name.toLowerCase() : null;
    const out = [];
    for (const el of document.querySelectorAll('*')) {
      // The name before the computed style: on a big page most elements of the role have
      // another name, and the style is the dearer read.
      if (roleOf(el) !== want) continue;
      if (nameQ !== null && !accessibleName(el, want).toLowerCase().includes(nameQ)) continue;
      if (ariaHidden(el)) continue;
      out.push(el);
    }
    return out;
  };
  // Form controls (and other elements) labelled `label`: exact label texts first, then those
  // that contain it (case-insensitive), each in document order.
  const LABELLABLE = 'input:not([type=hidden]), textarea, select, button, meter, output, progress, [contenteditable=""], [contenteditable="true"], [aria-label], [aria-labelledby]';
  const labelAll = (label) => {
    const q = collapse(label).toLowerCase();
    const exact = [];
    const partial = [];
    for (const el of document.querySelectorAll(LABELLABLE)) {
      const texts = labelsOf(el).map((s) => s.toLowerCase());
      if (texts.some((t) => t === q)) exact.push(el);
      else if (texts.some((t) => t.includes(q))) partial.push(el);
    }
    return exact.concat(partial);
  };

  // What a clickable ancestor is for click_element_by_text (§9 Text target).
  const CLICKABLE = 'a, button, [role=button], input[type=button], input[type=submit], [onclick]';

  // Chooses the element a query means (locators other than an index). `query` is one of
  //   {css, nth, prefer: "visible" | "document"}: `nth` picks explicitly; else among the first
  //     20 matches the first visible one whose point receives events, else the first visible,
  //     else the first (all hidden); "document" takes the first match (file inputs);
  //   {text}: the text candidate with the smallest (not exact, no clickable ancestor, not
  //     visible, text length); the element chosen is its closest clickable ancestor or itself;
  //   {role, name}: the first element of the role (and name) in the accessibility tree;
  //   {label}: the first control with that label.
  // Answers {el, info} (info: what the receipt reports about the choice) or {failure}:
  // ELEMENT_NOT_FOUND with data {matched}, or INVALID_ARGUMENT for a selector that does not
  // parse.
  const SCAN = 20;
  // One candidate as a receipt lists it: tag, id, text (60 chars), role, href.
  const brief = (el) => {
    const o = { tag: el.localName };
    if (el.id) o.id = el.id;
    const t = collapse(el.localName === 'input' ? el.value : el.textContent).slice(0, 60);
    if (t) o.text = t;
    const role = el.getAttribute('role');
    if (role) o.role = role;
    const href = el.getAttribute('href');
    if (href) o.href = href.slice(0, 80);
    return o;
  };
  const shown = (el) => {
    const b = brief(el);
    return '<' + b.tag + (b.id ? '#' + b.id : '') + '>' + (b.text ? ' "' + b.text + '"' : '');
  };
  const MAX_CANDIDATES = 5;
  const candidates = (els) => els.slice(0, MAX_CANDIDATES).map(brief);
  // A strict locator that matches more than one element: refused, the candidates listed (as
  // Playwright's strict locators refuse).
  const ambiguous = (what, els, param, how) => ({
    failure: fail('INVALID_ARGUMENT', 'strict: ' + what + ' matches ' + els.length + ' elements ('
      + els.slice(0, MAX_CANDIDATES).map(shown).join(', ') + (els.length > MAX_CANDIDATES ? ', …' : '')
      + '); ' + how, { param, strict: true, matched: els.length, candidates: candidates(els) }),
  });
  const choose = (query) => {
    const q = query || {};
    const notFound = (msg, matched, extra) => ({
      failure: fail('ELEMENT_NOT_FOUND', msg, Object.assign({ matched }, extra || {})),
    });
    if (typeof q.css === 'string') {
      let list;
      try {
        list = selectAll(q.css);
      } catch (e) {
        return { failure: fail('INVALID_ARGUMENT', 'param `selector`: `' + q.css + '` is not a valid selector: ' + String((e && e.message) || e), { param: 'selector' }) };
      }
      const matched = list.length;
      if (matched === 0) return notFound('no element matches selector `' + q.css + '` (0 matches)', 0);
      if (Number.isInteger(q.nth)) {
        if (q.nth < 0 || q.nth >= matched) {
          return notFound('nth ' + q.nth + ' is out of range: selector `' + q.css + '` matches ' + matched + ' element(s) (nth 0..' + (matched - 1) + ')', matched, { nth: q.nth });
        }
        return { el: list[q.nth], info: { matched, chosenIndex: q.nth, explicitNth: true } };
      }
      if (q.strict && matched > 1) {
        return ambiguous('selector `' + q.css + '`', list, 'selector', 'pass nth, or a selector that matches one');
      }
      if (q.prefer === 'document' || matched === 1) {
        const info = { matched, chosenIndex: 0 };
        if (matched > 1) {
          info.selectorNote = matched + ' elements match; the first in document order was used (pass nth to pick another)';
          info.candidates = candidates(list);
        }
        if (q.prefer !== 'document' && !isVisible(list[0])) {
          info.visibleMatched = 0;
          info.hiddenMatchNote = 'the only match is not visible (js fallbacks still work on hidden elements)';
        }
        return { el: list[0], info };
      }
      const scanned = Math.min(matched, SCAN);
      let firstVisible = -1;
      let chosen = -1;
      for (let i = 0; i < scanned; i++) {
        if (!isVisible(list[i])) continue;
        if (firstVisible < 0) firstVisible = i;
        if (receivesEvents(list[i])) {
          chosen = i;
          break;
        }
      }
      const info = { matched, scanned };
      let why = 'the first visible one that receives clicks';
      if (chosen < 0 && firstVisible >= 0) {
        chosen = firstVisible;
        why = 'the first visible one; none receives clicks where it is';
      }
      if (chosen < 0) {
        chosen = 0;
        why = 'all hidden';
        info.visibleMatched = 0;
        info.hiddenMatchNote = 'none of the first ' + scanned + ' matches is visible; the first was used (js fallbacks still work on hidden elements)';
      }
      info.chosenIndex = chosen;
      info.selectorNote = matched + ' elements match; match ' + chosen + ' was used (' + why
        + ', first ' + scanned + ' scanned; pass nth to pick explicitly)';
      info.candidates = candidates(list);
      return { el: list[chosen], info };
    }
    if (typeof q.text === 'string') {
      const want = collapse(q.text).toLowerCase();
      const cands = textAll(document, q.text, false);
      if (cands.length === 0) return notFound('no element with text `' + q.text + '`', 0);
      const less = (a, b) => {
        for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
        return false;
      };
      let best = null;
      // Each candidate's target (its clickable ancestor, or itself), once each, in document
      // order, with its score.
      const targets = [];
      for (const el of cands) {
        const text = el.localName === 'input' ? collapse(el.value) : collapse(el.textContent);
        const clickable = el.closest(CLICKABLE);
        const score = [text.toLowerCase() === want ? 0 : 1, clickable ? 0 : 1, isVisible(el) ? 0 : 1, text.length];
        if (best === null || less(score, best.score)) best = { el, score, clickable, text };
        const t = clickable || el;
        const seen = targets.find((x) => x.el === t);
        if (!seen) targets.push({ el: t, score });
        else if (less(score, seen.score)) seen.score = score;
      }
      const target = best.clickable || best.el;
      if (q.strict && targets.length > 1) {
        return ambiguous('text `' + q.text + '`', targets.map((x) => x.el), 'text', 'use a selector or role that matches one');
      }
      const info = {
        textMatch: best.score[0] === 0 ? 'exact' : 'contains',
        textLength: best.text.length,
        textCandidates: cands.length,
        textClickable: best.clickable !== null,
      };
      const notes = [];
      if (targets.length > 1) {
        // Which one, and why: the best by exact text, then clickable, then visible, then the
        // shortest text; equals by document order.
        const same = (a, b) => !less(a, b) && !less(b, a);
        const ties = targets.filter((x) => same(x.score, best.score)).length;
        const why = [best.score[0] === 0 ? 'exact text' : 'contains the text', best.clickable ? 'clickable' : 'not clickable',
          best.score[2] === 0 ? 'visible' : 'hidden'].join(', ');
        notes.push(targets.length + ' elements match text `' + q.text + '`; ' + shown(target) + ' was used (' + why
          + (ties > 1 ? '; the first in document order of ' + ties + ' equally good' : '; the best of them')
          + '); pass strict=true to refuse an ambiguous text, or use a selector or role');
        info.textTargets = targets.length;
        info.candidates = candidates(targets.map((x) => x.el));
      }
      if (!info.textClickable) notes.push('no clickable ancestor (a, button, [role=button], [onclick]): the text element itself was clicked');
      if (info.textMatch === 'contains') notes.push('no element has exactly this text; the best element containing it was used');
      if (notes.length > 0) info.textMatchNote = notes.join('; ');
      return { el: target, info };
    }
    if (typeof q.role === 'string') {
      const list = roleAll(q.role, q.name);
      const what = 'role ' + q.role + (typeof q.name === 'string' && q.name !== '' ? ' with name `' + q.name + '`' : '');
      if (list.length === 0) return notFound('no element with ' + what, 0);
      if (list.length > 1 && q.strict) return ambiguous(what, list, 'role', 'give a name that matches one');
      const info = { matched: list.length, chosenIndex: 0 };
      if (list.length > 1) {
        info.roleNote = list.length + ' elements have ' + what + '; the first in document order was used, '
          + shown(list[0]) + ' (pass strict=true to refuse, or a name that matches one)';
        info.candidates = candidates(list);
      }
      return { el: list[0], info };
    }
    if (typeof q.label === 'string') {
      const list = labelAll(q.label);
      if (list.length === 0) return notFound('no element with label `' + q.label + '`', 0);
      if (list.length > 1 && q.strict) return ambiguous('label `' + q.label + '`', list, 'label', 'use a selector that matches one');
      const info = { matched: list.length, chosenIndex: 0 };
      if (list.length > 1) {
        info.labelNote = list.length + ' fields have label `' + q.label + '`; the first in document order was used, ' + shown(list[0]);
        info.candidates = candidates(list);
      }
      return { el: list[0], info };
    }
    return { failure: fail('PROBE_FAILED', 'unknown query') };
  };
  // How many elements a query matches (get_element_count, waits): {count} or the failure of an
  // unparsable selector.
  const count = (query) => {
    const q = query || {};
    try {
      if (typeof q.css === 'string') return { count: selectAll(q.css).length };
      if (typeof q.text === 'string') return { count: textAll(document, q.text, false).length };
      if (typeof q.role === 'string') return { count: roleAll(q.role, q.name).length };
      if (typeof q.label === 'string') return { count: labelAll(q.label).length };
    } catch (e) {
      return { failure: fail('INVALID_ARGUMENT', 'param `selector`: `' + q.css + '` is not a valid selector: ' + String((e && e.message) || e), { param: 'selector' }) };
    }
    return { failure: fail('PROBE_FAILED', 'unknown query') };
  };

  // The form item around a control (Ant Design, Element and plain `.form-item` layouts), or
  // null (JS-PROBES.md §10).
  const fieldItem = (el) => el.closest('.ant-form-item, .form-item, .el-form-item, [class*="form-item"]');
  const ERROR_WORD = /(^|[\s_-])(has-|is-)?error($|[\s_-])/i;
  const classText = (el) => (el ? String(classOf(el) || '') : '');
  const userInvalid = (el) => {
    try {
      return el.matches(':user-invalid');
    } catch (e) {
      return false;
    }
  };
  // Whether a control reads as invalid, and the text that says why (§10): {invalid, error,
  // from}. Invalid: an error word in the class of its item, itself or its parent,
  // aria-invalid="true", a custom validity message or :user-invalid. The error is the item's
  // error element (whether or not the control is invalid), else for an invalid control its
  // aria-errormessage / aria-describedby text, else the browser's validation message; `from` is
  // the element that holds the text (null for the validation message).
  const fieldError = (el, item) => {
    let error = null;
    let from = null;
    if (item) {
      const e = item.querySelector('.ant-form-item-explain-error, [class*="error-message"], .error');
      if (e) {
        const t = String(e.innerText || e.textContent || '').trim();
        if (t) {
          error = t.slice(0, 300);
          from = e;
        }
      }
    }
    const v = el.willValidate && el.validity ? el.validity : null;
    const ariaInvalid = String(el.getAttribute('aria-invalid') || '').toLowerCase() === 'true';
    const classInvalid = ERROR_WORD.test(classText(item)) || ERROR_WORD.test(classText(el))
      || ERROR_WORD.test(classText(el.parentElement));
    const invalid = classInvalid || ariaInvalid || !!(v && v.customError) || userInvalid(el);
    if (error === null && invalid) {
      const described = byIds(el.getAttribute('aria-errormessage'))
        .concat(ariaInvalid ? byIds(el.getAttribute('aria-describedby')) : []);
      for (const d of described) {
        const t = collapse(d.innerText || d.textContent);
        if (t) {
          error = t.slice(0, 300);
          from = d;
          break;
        }
      }
      if (error === null && v && !v.valid) error = String(el.validationMessage || '').slice(0, 300) || null;
    }
    return { invalid, error, from };
  };

  // A browser's validation message about a password field, without what it says of the value:
  // Chromium's "Please lengthen this text to 8 characters or more (you are currently using 3
  // characters)" keeps its rule and drops the count of what was typed.
  const passwordMessage = (msg) => (msg === null || msg === undefined ? msg
    : String(msg).replace(/\s*\([^()]*\d[^()]*\)/g, '').trim());

  // ---- Robust selectors (record, codegen) ----
  const quoted = (s) => '"' + String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
  const attrSel = (name, value) => '[' + name + '=' + quoted(value) + ']';

  // The elements `role=ROLE[name="NAME"s]` matches, as `selectAll` finds them, but at most two
  // (whether a selector finds one element alone is all a candidate needs to know).
  // Past `deadline` it gives up (answers null: not known).
  const roleUpToTwo = (role, name, deadline) => {
    const out = [];
    const want = collapse(name);
    let n = 0;
    for (const c of document.querySelectorAll('*')) {
      if ((++n & 255) === 0 && performance.now() > deadline) return null;
      if (roleOf(c) !== role || accessibleName(c, role) !== want || ariaHidden(c)) continue;
      out.push(c);
      if (out.length === 2) break;
    }
    return out;
  };
  // Whether `sel` finds `el` alone (for a click: or an element inside the same clickable one).
  // `role`: the candidate is that role with that exact name (counted without a full scan, and
  // not past `role.deadline`).
  const findsAlone = (sel, el, click, role) => {
    let found;
    try {
      found = role ? roleUpToTwo(role.role, role.name, role.deadline) : selectAll(sel);
    } catch (e) {
      return false;
    }
    if (!found || found.length !== 1) return false;
    const f = found[0];
    if (f === el) return true;
    if (!click) return false;
    const a = f.closest(CLICKABLE);
    return a !== null && a === el.closest(CLICKABLE);
  };
  // The CSS of `el` below `root` (an element with a unique id, or the document): tag with its
  // stable attributes, then :nth-of-type only where siblings need it.
  const stable = (el) => {
    let s = el.localName;
    for (const a of ['name', 'type', 'href', 'for', 'aria-label']) {
      const v = el.getAttribute(a);
      if (v && v.length <= 80) s += attrSel(a, v);
    }
    return s;
  };
  const uniqueId = (el) => el.id && !/\d{3,}|^[a-f0-9-]{16,}$/i.test(el.id)
    && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1;
  const cssOf = (el) => {
    if (uniqueId(el)) return '#' + CSS.escape(el.id);
    const parts = [];
    let cur = el;
    while (cur && cur.nodeType === 1 && cur !== document.documentElement) {
      let part = stable(cur);
      const parent = cur.parentElement;
      if (parent) {
        const same = [...parent.children].filter((c) => c.localName === cur.localName);
        if (same.length > 1 && parent.querySelectorAll(':scope > ' + part).length > 1) {
          part += ':nth-of-type(' + (same.indexOf(cur) + 1) + ')';
        }
      }
      parts.unshift(part);
      const sel = parts.join(' > ');
      if (parent && uniqueId(parent)) {
        const scoped = '#' + CSS.escape(parent.id) + ' > ' + sel;
        if (document.querySelectorAll(scoped).length === 1) return scoped;
      }
      if (document.querySelectorAll(sel).length === 1) return sel;
      cur = parent;
    }
    return parts.join(' > ');
  };
  // The most robust selector of `el` now: the first that `selectAll` answers with it alone
  // (`click`: or with an element inside the same clickable one), in order: role and accessible
  // name, label, placeholder, alt, title, visible text (with `withText`), the test-id attribute
  // (`testId`, default data-testid), then CSS scoped to the nearest ancestor with a unique id.
  // Candidates are tried until `budgetMs` has passed (a big page makes each check a scan of
  // it); then the CSS is answered. `moonpilot record` (recorder.js, no budget: a person is
  // slower) and `describe` (an index action's first read, for codegen) use it.
  const robustSelector = (el, { click = false, withText = click, testId = 'data-testid', budgetMs = Infinity } = {}) => {
    const deadline = performance.now() + budgetMs;
    const tries = [];
    let byRole = null;
    const role = roleOf(el);
    if (role) {
      const name = accessibleName(el, role);
      if (name && name.length <= 80) {
        byRole = 'role=' + role + '[name=' + quoted(name) + 's]';
        tries.push(byRole);
      }
    }
    const labels = labelsOf(el);
    if (labels.length > 0 && labels[0].length <= 80) tries.push('label=' + quoted(labels[0]));
    for (const a of ['placeholder', 'alt', 'title']) {
      const v = el.getAttribute(a);
      if (v && v.length <= 80) tries.push(attrSel(a, v));
    }
    if (withText) {
      const t = collapse(el.localName === 'input' ? el.value : el.textContent).slice(0, 80);
      if (t && t.length < 80) tries.push('text=' + quoted(t));
    }
    const tid = el.getAttribute(testId);
    if (tid) tries.push(attrSel(testId, tid));
    for (const sel of tries) {
      if (performance.now() > deadline) break;
      const asRole = sel === byRole ? { role, name: accessibleName(el, role), deadline } : null;
      if (findsAlone(sel, el, click, asRole)) return sel;
    }
    return cssOf(el);
  };

  // What codegen needs to find `el` again later: {selector (the most robust one that finds it
  // alone now), tag, role, name, label, text (≤ 80; an input's only for buttons: a field's
  // value is what was typed), attributes (id, name, type, placeholder, href, title, alt,
  // aria-label and the test id, when set)}.
  // The selector's search is bounded (`DESCRIBE_BUDGET_MS`): it runs on an action's path.
  const DESCRIBE_BUDGET_MS = 5;
  const describe = (el, testId = 'data-testid') => {
    const role = roleOf(el);
    const clickable = el.closest('a, button, [role=button], [role=link], input[type=button], input[type=submit]') !== null;
    const attributes = {};
    for (const a of ['id', 'name', 'type', 'placeholder', 'href', 'title', 'alt', 'aria-label', testId]) {
      const v = el.getAttribute(a);
      if (v !== null && v.length <= 200) attributes[a] = v;
    }
    const labels = labelsOf(el);
    return {
      selector: robustSelector(el, { click: clickable, withText: clickable, testId, budgetMs: DESCRIBE_BUDGET_MS }),
      tag: el.localName,
      role: role || null,
      name: role ? accessibleName(el, role) || null : null,
      label: labels.length > 0 ? labels[0] : null,
      // An input's value is what was typed (a password, say): only a button's is its text.
      text: collapse(el.localName !== 'input' ? el.textContent
        : ['button', 'submit', 'reset'].includes(String(el.type).toLowerCase()) ? el.value : '').slice(0, 80),
      attributes,
    };
  };

  const lib = Object.freeze({
    ok, fail, resolver, identity, sameIdentity, locate, collapse, classOf, textOf, summary,
    rectOf, hasBox, viewport, fullyInView, scrollToCenter, contains, deepHit, clickPoint,
    typeOf, fillKind, isPassword, liveValue, readBack, nativeSet, pageMark, pathOf, isVisible,
    selectAll, choose, count, roleOf, accessibleName, labelsOf, labelsFor, fieldItem, fieldError,
    passwordMessage, robustSelector, describe,
  });
  return (args) => {
    try {
      return probe(args === undefined ? null : args, lib);
    } catch (e) {
      return fail('PROBE_FAILED', String((e && e.message) || e));
    }
  };
})
