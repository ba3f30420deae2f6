function () {
  // Framework traces of event listeners on `this` (JS-PROBES.md §13.1), called on the element
  // in the page's main world (framework expandos live there, not in our isolated world).
  // Answers {vue, react, inline, jquery, traces}: each verdict true / false / null (unknown).
  const el = this;
  const events = new Set();
  const norm = (name) => String(name).replace(/^on/i, '').replace(/[!~&]+$/, '').toLowerCase();
  let own = [];
  try {
    own = Object.getOwnPropertyNames(el);
  } catch (e) {
    own = [];
  }
  let vue = null;
  for (const k of own) {
    if (k === '_vei' || k.startsWith('_vei')) {
      const v = el[k];
      if (v && typeof v === 'object') {
        vue = true;
        for (const ev of Object.keys(v)) events.add(norm(ev));
      } else if (vue === null) {
        vue = false;
      }
    }
  }
  for (const k of ['__vue__', '__vueParentComponent', '_vnode', '__vnode']) {
    if (own.includes(k)) vue = true;
  }
  let react = null;
  for (const k of own) {
    if (k.startsWith('__reactProps$') || k.startsWith('__reactFiber$') || k.startsWith('__reactEvents$')) {
      react = true;
      if (k.startsWith('__reactProps$')) {
        const props = el[k] || {};
        for (const p of Object.keys(props)) {
          if (/^on[A-Z]/.test(p) && typeof props[p] === 'function') events.add(norm(p));
        }
      }
    }
  }
  let inline = false;
  for (const k of own) {
    if (/^on[a-z]+$/.test(k) && typeof el[k] === 'function') {
      inline = true;
      events.add(norm(k));
    }
  }
  for (const a of Array.from(el.attributes || [])) {
    if (/^on/i.test(a.name)) {
      inline = true;
      events.add(norm(a.name));
    }
  }
  // Handlers assigned as properties (el.onchange = f) are not own properties of the element.
  for (const k of ['onchange', 'oninput', 'onclick']) {
    try {
      if (typeof el[k] === 'function') {
        inline = true;
        events.add(norm(k));
      }
    } catch (e) {
      // A hostile getter: no trace.
    }
  }
  let jquery = null;
  try {
    const jq = window.jQuery;
    if (typeof jq === 'function' && typeof jq._data === 'function') {
      const data = jq._data(el, 'events');
      jquery = !!data && Object.keys(data).length > 0;
      if (data) for (const ev of Object.keys(data)) events.add(norm(ev));
    }
  } catch (e) {
    jquery = null;
  }
  return { vue, react, inline, jquery, traces: Array.from(events).sort() };
}
