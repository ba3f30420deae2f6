((probe) => {
  // Helpers shared by the element probes (JS-PROBES.md §0, §6), joined in front of each of
  // them at compile time (src/js/mod.rs). This file is one expression: a function that
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

  const collapse = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  const classOf = (el) => {
    const c = el.className;
    const v = typeof c === 'string' ? c : (c && typeof c.baseVal === 'string' ? c.baseVal : '');
    return v === '' ? null : v;
  };
  const lib = Object.freeze({ ok, fail, resolver, identity, sameIdentity, collapse, classOf });
  return (args) => {
    try {
      return probe(args === undefined ? null : args, lib);
    } catch (e) {
      return fail('PROBE_FAILED', String((e && e.message) || e));
    }
  };
})
