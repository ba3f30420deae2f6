((args, lib) => {
  // Element reads (COMMANDS.md "Reading element data", JS-PROBES.md §9, §13.1), joined behind
  // probe_lib.js. `args.target` finds the element as every element probe does (lib.locate:
  // STALE_ELEMENT when it is gone or another one is there); nothing here changes the page.
  // `args.op` is one of
  //   text      {canvasOnly}: {text (innerText), textLength}; with `canvasOnly` and an empty
  //             text also {canvasOnly, canvasCount}: whether the element is a <canvas>, or holds
  //             one and no text node with visible characters;
  //   html      {}: {html (innerHTML)};
  //   value     {}: {value (the live value of an input, textarea or select, a content-editable
  //             element's text, else null; "[redacted]" for passwords), hasValue, password, length};
  //   attribute {name}: {value (the attribute, or null), present};
  //   checked   {}: {checked (checked property, or aria-checked of checkbox-like roles; null for
  //             other elements), kind};
  //   traces    {}: the framework traces of §13.1 {tag, id, className, type, vue2, vue3, react,
  //             inline, jquery, traces};
  //   element   {}: the element itself (not an envelope), for a remote object handle.
  const opts = args || {};
  const found = lib.locate(opts.target);
  if (opts.op === 'element') return found.failure ? null : found.el;
  if (found.failure) return found.failure;
  const el = found.el;

  const text = () => {
    const raw = typeof el.innerText === 'string' ? el.innerText : String(el.textContent || '');
    const value = { text: raw, textLength: raw.length };
    if (opts.canvasOnly && raw.trim() === '') {
      const canvases = el.localName === 'canvas' ? 1 : el.getElementsByTagName('canvas').length;
      let leafText = false;
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
        const parent = n.parentElement;
        if (parent && (parent.localName === 'script' || parent.localName === 'style')) continue;
        if (n.nodeValue.trim() !== '') {
          leafText = true;
          break;
        }
      }
      value.canvasCount = canvases;
      value.canvasOnly = canvases > 0 && !leafText;
    }
    return lib.ok(value);
  };

  // Only fields have a value to read (a button's `value` is a form submission detail).
  const FIELDS = new Set(['input', 'textarea', 'select']);
  const value = () => {
    const live = FIELDS.has(el.localName) ? String(el.value)
      : (el.isContentEditable ? String(el.innerText) : null);
    const password = lib.isPassword(el);
    return lib.ok({
      value: live === null ? null : (password ? '[redacted]' : live),
      hasValue: live !== null,
      password,
      length: live === null ? null : live.length,
    });
  };

  const attribute = () => {
    const name = String(opts.name || '');
    let v = null;
    try {
      v = el.getAttribute(name);
    } catch (e) {
      v = null;
    }
    return lib.ok({ value: v, present: v !== null });
  };

  const CHECKABLE_ROLES = new Set(['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio']);
  const checked = () => {
    if (el.localName === 'input' && (el.type === 'checkbox' || el.type === 'radio')) {
      return lib.ok({ checked: el.checked === true, kind: el.type, indeterminate: el.indeterminate === true });
    }
    const role = lib.roleOf(el);
    if (role && CHECKABLE_ROLES.has(role)) {
      const aria = el.getAttribute('aria-checked');
      return lib.ok({ checked: aria === 'true', kind: role, indeterminate: aria === 'mixed' });
    }
    return lib.ok({ checked: null, kind: null, indeterminate: false });
  };

  // §13.1: event names without a leading `on` and trailing modifiers, lower-case.
  const norm = (name) => String(name).replace(/^on/i, '').replace(/[!~&]+$/, '').toLowerCase();
  const traces = () => {
    const names = new Set();
    let vue = null;
    let react = null;
    const keys = Object.keys(el);
    for (const key of keys) {
      if (key === '_vei' || key.startsWith('_vei')) {
        const v = el[key];
        if (v && typeof v === 'object') {
          vue = true;
          for (const k of Object.keys(v)) names.add(norm(k));
        } else if (vue === null) {
          vue = false;
        }
      } else if (key === '__vue__' || key === '__vueParentComponent' || key === '_vnode' || key === '__vnode') {
        vue = true;
      } else if (key.startsWith('__reactProps$')) {
        react = true;
        const props = el[key];
        if (props && typeof props === 'object') {
          for (const k of Object.keys(props)) if (/^on[A-Z]/.test(k)) names.add(norm(k));
        }
      } else if (key.startsWith('__reactFiber$') || key.startsWith('__reactEvents$')) {
        react = true;
      }
    }
    let inline = false;
    for (const key of keys) {
      if (/^on[a-z]+$/.test(key) && typeof el[key] === 'function') {
        inline = true;
        names.add(norm(key));
      }
    }
    for (const key of ['onclick', 'onchange', 'oninput', 'onsubmit', 'onmousedown', 'onmouseup',
      'onkeydown', 'onkeyup', 'onfocus', 'onblur', 'ondblclick']) {
      if (typeof el[key] === 'function') {
        inline = true;
        names.add(norm(key));
      }
    }
    if (el.hasAttributes()) {
      for (const at of el.attributes) {
        if (/^on/i.test(at.name)) {
          inline = true;
          names.add(norm(at.name));
        }
      }
    }
    let jquery = null;
    const jq = window.jQuery;
    if (jq && typeof jq._data === 'function') {
      try {
        const events = jq._data(el, 'events');
        jquery = !!(events && Object.keys(events).length > 0);
        if (events) for (const k of Object.keys(events)) names.add(norm(k));
      } catch (e) {
        jquery = null;
      }
    }
    return lib.ok({
      tag: el.tagName,
      id: el.getAttribute('id') || null,
      className: lib.classOf(el),
      type: el.getAttribute('type'),
      vue2: vue,
      vue3: vue,
      react,
      inline,
      jquery,
      traces: [...names].filter(Boolean).sort(),
    });
  };

  switch (opts.op) {
    case 'text': return text();
    case 'html': return lib.ok({ html: String(el.innerHTML) });
    case 'value': return value();
    case 'attribute': return attribute();
    case 'checked': return checked();
    case 'traces': return traces();
    default: return lib.fail('PROBE_FAILED', 'unknown op: ' + String(opts.op));
  }
})
