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
        controls.push([isPassword(el) ? '[redacted]' : el.value, el.checked, el.disabled, el.readOnly]);
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

  const lib = Object.freeze({
    ok, fail, resolver, identity, sameIdentity, locate, collapse, classOf, textOf, summary,
    rectOf, hasBox, viewport, fullyInView, scrollToCenter, contains, deepHit, clickPoint,
    typeOf, fillKind, isPassword, liveValue, readBack, nativeSet, pageMark,
  });
  return (args) => {
    try {
      return probe(args === undefined ? null : args, lib);
    } catch (e) {
      return fail('PROBE_FAILED', String((e && e.message) || e));
    }
  };
})
