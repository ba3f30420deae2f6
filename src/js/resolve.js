(args) => {
  // Element re-resolution (JS-PROBES.md §6): `args.paths` holds locators produced by
  // dom_index.js (positional XPaths without the leading slash; `/#shadow-root/` enters the open
  // shadow root of the element before it). Returns one entry per path, in order: null when the
  // locator no longer resolves, else {tag, id, className, href, name, type, value, checked,
  // hasListeners, listeners, listenerDetection, visible, rect, text}. Never throws: a broken
  // entry reads as null. Optional `args.detail` (n >= 0): only the first n entries get the
  // full object, the rest only {tag, id, name} (enough for the identity check; a whole-page
  // snapshot of a big page would otherwise ship megabytes nobody reads).
  const SHADOW = '#shadow-root';
  const STEP = /^([^\[\]\/@()]+)(?:\[(\d+)\])?$/;
  const paths = args && Array.isArray(args.paths) ? args.paths : [];
  // Per-call caches, dropped on return: the children by tag of parents with many children
  // (so 4,000 rows of one table are indexed once, not scanned once per row), and the nodes of
  // the previous locator (consecutive locators share long prefixes).
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
  let prevSteps = [];
  let prevNodes = [];
  const resolve = (path) => {
    if (typeof path !== 'string' || path === '') return null;
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
    return node && node.nodeType === 1 ? node : null;
  };
  // Locators that are not plain positional paths are evaluated as document XPaths.
  const xpathFallback = (path) => {
    if (path.indexOf(SHADOW) >= 0) return null;
    const expr = path.charAt(0) === '/' ? path : '/' + path;
    const res = document.evaluate(expr, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
    const node = res.singleNodeValue;
    return node && node.nodeType === 1 ? node : null;
  };

  const collapse = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  const classOf = (el) => {
    const c = el.className;
    const v = typeof c === 'string' ? c : (c && typeof c.baseVal === 'string' ? c.baseVal : '');
    return v === '' ? null : v;
  };
  const HANDLERS = ['click', 'dblclick', 'mousedown', 'mouseup', 'input', 'change', 'keydown',
    'keyup', 'submit', 'focus', 'blur'];
  const norm = (name) => String(name).replace(/^on/i, '').replace(/[!~&]+$/, '').toLowerCase();
  // Framework traces (JS-PROBES.md §13.1): event names only; detection stays "heuristic".
  const traces = (el) => {
    const names = new Set();
    for (const key of Object.keys(el)) {
      if (key.startsWith('_vei')) {
        const v = el[key];
        if (v && typeof v === 'object') for (const k of Object.keys(v)) names.add(norm(k));
      } else if (key.startsWith('__reactProps$')) {
        const props = el[key];
        if (props && typeof props === 'object') {
          for (const k of Object.keys(props)) if (/^on[A-Z]/.test(k)) names.add(norm(k));
        }
      } else if (/^on[a-z]+$/.test(key) && typeof el[key] === 'function') {
        names.add(norm(key));
      }
    }
    for (const ev of HANDLERS) if (typeof el['on' + ev] === 'function') names.add(ev);
    if (el.hasAttributes()) {
      for (const at of el.attributes) if (/^on/i.test(at.name)) names.add(norm(at.name));
    }
    const jq = window.jQuery;
    if (jq && typeof jq._data === 'function') {
      try {
        const events = jq._data(el, 'events');
        if (events) for (const k of Object.keys(events)) names.add(norm(k));
      } catch (e) {
        // A broken jQuery is no evidence either way.
      }
    }
    return [...names].filter(Boolean).sort();
  };
  const describe = (el) => {
    const r = el.getBoundingClientRect();
    let value = null;
    if ('value' in el && el.value !== undefined && el.value !== null) {
      const type = String(el.getAttribute('type') || '').toLowerCase();
      value = type === 'password' ? '[redacted]' : String(el.value).slice(0, 120);
    }
    const listeners = traces(el);
    return {
      tag: el.tagName,
      id: el.getAttribute('id') || null,
      className: classOf(el),
      href: el.getAttribute('href'),
      name: el.getAttribute('name'),
      type: el.getAttribute('type'),
      value,
      checked: typeof el.checked === 'boolean' ? el.checked : null,
      hasListeners: listeners.length > 0 ? true : null,
      listeners,
      listenerDetection: 'heuristic',
      visible: r.width > 0 && r.height > 0,
      rect: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)],
      // Childless elements (inputs, images) have no text; innerText is the costly part here.
      text: el.firstChild === null ? ''
        : collapse(typeof el.innerText === 'string' ? el.innerText : el.textContent).slice(0, 120),
    };
  };
  const detail = args && Number.isInteger(args.detail) && args.detail >= 0 ? args.detail : Infinity;
  const identity = (el) => ({ tag: el.tagName, id: el.getAttribute('id') || null, name: el.getAttribute('name') });
  const out = [];
  for (const path of paths) {
    try {
      const el = resolve(path);
      out.push(el ? (out.length < detail ? describe(el) : identity(el)) : null);
    } catch (e) {
      prevSteps = [];
      prevNodes = [];
      out.push(null);
    }
  }
  return out;
}
