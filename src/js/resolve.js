((args, lib) => {
  // Element re-resolution (JS-PROBES.md §6), joined behind probe_lib.js: `args.paths` holds
  // snapshot locators (lib.resolver), `args.expect` what the snapshot saw at each of them as
  // [tag, id|null, name|null] (lib.sameIdentity, the rule every action applies too). Answers
  // {items, changed}: `items` has one entry per path, in order, null when the locator no longer
  // resolves, else {tag, id, className, href, name, type, value, checked, hasListeners,
  // listeners, listenerDetection, visible, rect, text}; `changed` lists the positions whose
  // element is not the one the snapshot saw. A broken entry reads as null. Optional
  // `args.detail` (n >= 0): only the first n entries get the full object, the rest only
  // {tag, id, name} (a whole-page snapshot of a big page would otherwise ship megabytes nobody
  // reads).
  const paths = args && Array.isArray(args.paths) ? args.paths : [];
  const expect = args && Array.isArray(args.expect) ? args.expect : [];
  const resolve = lib.resolver();

  const { collapse, classOf } = lib;
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
  // The short entry keeps the item shape of §6 (upper-case tag).
  const brief = (el) => ({ tag: el.tagName, id: el.getAttribute('id') || null, name: el.getAttribute('name') });
  const items = [];
  const changed = [];
  for (let i = 0; i < paths.length; i++) {
    let item = null;
    try {
      const el = resolve(paths[i]);
      if (el) {
        const want = Array.isArray(expect[i]) ? expect[i] : [];
        if (!lib.sameIdentity(el, want[0], want[1], want[2])) changed.push(i);
        item = items.length < detail ? describe(el) : brief(el);
      }
    } catch (e) {
      // A broken entry reads as null; the resolver itself never throws.
      item = null;
    }
    items.push(item);
  }
  return lib.ok({ items, changed });
})
