((args, lib) => {
  // `moonpilot record` (src/record/): installed in an isolated world of every frame of a
  // recorded tab before the page's scripts run, it watches what a person does (capture-phase
  // listeners on the window: the page cannot stop them by stopping propagation) and reports
  // each action through the binding `args.binding` as JSON, with the most robust selector the
  // element has at that moment: one that `lib.selectAll` — what every *_by_selector command and
  // every assertion resolves — answers with exactly that element (or, for a click, an element
  // inside the same clickable one). In order: role and accessible name, label, placeholder,
  // alt, title, visible text, the test-id attribute (`args.testId`), then CSS scoped to the
  // nearest ancestor with a unique id.
  //
  // Reported: {kind: "click", selector, button, clickCount, modifiers}, {kind: "fill", selector,
  // value}, {kind: "select", selector, text}, {kind: "check", selector, checked}, {kind: "press",
  // keys}, {kind: "upload", selector, files}; each with `frame` {top, url, name}.
  const send = globalThis[args.binding];
  if (typeof send !== 'function' || globalThis.__mpRecording) return lib.ok(false);
  globalThis.__mpRecording = true;
  const testId = typeof args.testId === 'string' && args.testId ? args.testId : 'data-testid';
  const { collapse, selectAll, roleOf, accessibleName, labelsOf } = lib;

  const frame = () => ({ top: window === window.top, url: location.href, name: window.name || '' });
  const report = (o) => {
    o.frame = frame();
    try {
      send(JSON.stringify(o));
    } catch (e) {
      // A binding that is gone (the recorder stopped) records nothing.
    }
  };
  const quote = (s) => '"' + String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
  const attr = (name, value) => '[' + name + '=' + quote(value) + ']';

  // What a click means: the nearest interactive element around the node clicked.
  const INTERACTIVE = 'a[href], button, input, select, textarea, label, summary, option, '
    + '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], '
    + '[role=option], [role=switch], [role=treeitem], [contenteditable=""], [contenteditable=true], [onclick]';
  const actionable = (node) => {
    const el = node && node.nodeType === 1 ? node : node && node.parentElement;
    if (!el) return null;
    return el.closest(INTERACTIVE) || el;
  };
  const CLICKABLE = 'a, button, [role=button], input[type=button], input[type=submit], [onclick]';
  // Whether `sel` finds `el` alone (for a click: or an element inside the same clickable one).
  const finds = (sel, el, click) => {
    let found;
    try {
      found = selectAll(sel);
    } catch (e) {
      return false;
    }
    if (found.length !== 1) return false;
    const f = found[0];
    if (f === el) return true;
    if (!click) return false;
    const a = f.closest(CLICKABLE);
    return a !== null && a === el.closest(CLICKABLE);
  };
  const short = (s) => collapse(s).slice(0, 80);
  // The CSS of `el` below `root` (an element with a unique id, or the document): tag with its
  // stable attributes, then :nth-of-type only where siblings need it.
  const stable = (el) => {
    let s = el.localName;
    for (const a of ['name', 'type', 'href', 'for', 'aria-label']) {
      const v = el.getAttribute(a);
      if (v && v.length <= 80) s += attr(a, v);
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
  const selectorFor = (el, click) => {
    const tries = [];
    const role = roleOf(el);
    if (role) {
      const name = accessibleName(el, role);
      if (name && name.length <= 80) tries.push('role=' + role + '[name=' + quote(name) + 's]');
    }
    const labels = labelsOf(el);
    if (labels.length > 0 && labels[0].length <= 80) tries.push('label=' + quote(labels[0]));
    for (const a of ['placeholder', 'alt', 'title']) {
      const v = el.getAttribute(a);
      if (v && v.length <= 80) tries.push(attr(a, v));
    }
    if (click) {
      const t = short(el.localName === 'input' ? el.value : el.textContent);
      if (t && t.length < 80) tries.push('text=' + quote(t));
    }
    const tid = el.getAttribute(testId);
    if (tid) tries.push(attr(testId, tid));
    for (const sel of tries) if (finds(sel, el, click)) return sel;
    return cssOf(el);
  };

  const isText = (el) => (el.localName === 'input'
    && !['checkbox', 'radio', 'file', 'submit', 'button', 'reset', 'image', 'range', 'color'].includes(el.type))
    || el.localName === 'textarea' || el.isContentEditable;
  const isToggle = (el) => el.localName === 'input' && (el.type === 'checkbox' || el.type === 'radio');

  const modifiers = (e) => ['Alt', 'Control', 'Meta', 'Shift'].filter((m) => e.getModifierState(m));
  // A click's own record; a click on a checkbox, a radio button, a select, a text field or a
  // label of such is recorded by what it changes instead.
  const onClick = (e) => {
    if (!e.isTrusted) return;
    const el = actionable(e.target);
    if (!el) return;
    const control = el.localName === 'label' ? el.control : null;
    if (isToggle(el) || el.localName === 'select' || el.localName === 'option'
      || (isText(el) && e.button === 0 && e.detail <= 1 && modifiers(e).length === 0)
      || (control && (isToggle(control) || control.localName === 'select' || isText(control)))
      || (el.localName === 'input' && el.type === 'file')) return;
    report({ kind: 'click', selector: selectorFor(el, true), button: e.button, clickCount: e.detail || 1, modifiers: modifiers(e) });
  };
  const onAux = (e) => {
    // Middle and right clicks (no `click` event for them).
    if (!e.isTrusted || e.button === 0) return;
    const el = actionable(e.target);
    if (el) report({ kind: 'click', selector: selectorFor(el, true), button: e.button, clickCount: 1, modifiers: modifiers(e) });
  };
  const onInput = (e) => {
    if (!e.isTrusted) return;
    const el = e.target;
    if (!el || el.nodeType !== 1 || !isText(el)) return;
    const value = el.isContentEditable && el.localName !== 'input' && el.localName !== 'textarea' ? el.innerText : el.value;
    report({ kind: 'fill', selector: selectorFor(el, false), value });
  };
  const onChange = (e) => {
    const el = e.target;
    if (!el || el.nodeType !== 1) return;
    if (el.localName === 'select') {
      const opt = el.selectedOptions[0];
      report({ kind: 'select', selector: selectorFor(el, false), text: opt ? collapse(opt.label || opt.textContent) : '' });
    } else if (isToggle(el)) {
      report({ kind: 'check', selector: selectorFor(el, false), checked: el.checked });
    } else if (el.localName === 'input' && el.type === 'file') {
      report({ kind: 'upload', selector: selectorFor(el, false), files: [...(el.files || [])].map((f) => f.name) });
    }
  };
  // Keys that are actions of their own: Enter, Escape, Tab, arrows and the like, and shortcuts
  // with Control, Alt or Meta. Plain typing is the field's `fill`.
  const SPECIAL = new Set(['Enter', 'Escape', 'Tab', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight',
    'PageUp', 'PageDown', 'Home', 'End', 'Delete', 'F1', 'F2', 'F3', 'F4', 'F5', 'F6', 'F7', 'F8',
    'F9', 'F10', 'F11', 'F12']);
  const onKey = (e) => {
    if (!e.isTrusted || ['Shift', 'Control', 'Alt', 'Meta'].includes(e.key)) return;
    const mods = modifiers(e).filter((m) => m !== 'Shift' || SPECIAL.has(e.key));
    const chord = mods.some((m) => m !== 'Shift');
    if (!SPECIAL.has(e.key) && !chord) return;
    // Inside a text field, arrows, Home/End and Delete edit the text: the fill says the result.
    const t = e.target;
    if (!chord && t && t.nodeType === 1 && isText(t) && !['Enter', 'Escape', 'Tab'].includes(e.key)) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    report({ kind: 'press', keys: mods.concat([key]).join('+') });
  };
  window.addEventListener('click', onClick, true);
  window.addEventListener('auxclick', onAux, true);
  window.addEventListener('input', onInput, true);
  window.addEventListener('change', onChange, true);
  window.addEventListener('keydown', onKey, true);
  return lib.ok(true);
})
