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
  // keys}, {kind: "upload", selector, files}, {kind: "assert", check, selector, expected}; each
  // with `frame` {top, url, name}.
  //
  // With `args.overlay` (a person at a window), the top frame shows a small toolbar: after a
  // click on "visible", "text" or "value" the next click on the page is not the page's but an
  // assertion on the element clicked (Escape cancels).
  const send = globalThis[args.binding];
  if (typeof send !== 'function' || globalThis.__mpRecording) return lib.ok(false);
  globalThis.__mpRecording = true;
  const testId = typeof args.testId === 'string' && args.testId ? args.testId : 'data-testid';
  const { collapse, robustSelector } = lib;

  const frame = () => ({ top: window === window.top, url: location.href, name: window.name || '' });
  const report = (o) => {
    o.frame = frame();
    try {
      send(JSON.stringify(o));
    } catch (e) {
      // A binding that is gone (the recorder stopped) records nothing.
    }
  };
  const selectorFor = (el, click, withText = click) => robustSelector(el, { click, withText, testId });
  const short = (s) => collapse(s).slice(0, 80);

  // What a click means: the nearest interactive element around the node clicked.
  const INTERACTIVE = 'a[href], button, input, select, textarea, label, summary, option, '
    + '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], '
    + '[role=option], [role=switch], [role=treeitem], [contenteditable=""], [contenteditable=true], [onclick]';
  const actionable = (node) => {
    const el = node && node.nodeType === 1 ? node : node && node.parentElement;
    if (!el) return null;
    return el.closest(INTERACTIVE) || el;
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
  // The assertion overlay: a toolbar in an open shadow root (its clicks are not the page's).
  let armed = null;
  let host = null;
  if (args.overlay && window === window.top) {
    const mark = document.createElement('div');
    const build = () => {
      if (host && host.isConnected) return;
      host = document.createElement('moonpilot-recorder');
      host.style.cssText = 'all:initial;position:fixed;top:8px;right:8px;z-index:2147483647';
      const root = host.attachShadow({ mode: 'open' });
      root.innerHTML = '<style>div{font:12px sans-serif;background:#222;color:#fff;padding:4px;'
        + 'border-radius:4px;box-shadow:0 1px 4px #0008}button{font:inherit;margin:0 2px;cursor:pointer}'
        + 'button[aria-pressed=true]{background:#fc0}</style><div>assert '
        + '<button data-check="visible">visible</button><button data-check="text">text</button>'
        + '<button data-check="value">value</button></div>';
      for (const b of root.querySelectorAll('button')) {
        b.addEventListener('click', (e) => {
          if (!e.isTrusted) return;
          armed = armed === b.dataset.check ? null : b.dataset.check;
          for (const o of root.querySelectorAll('button')) o.setAttribute('aria-pressed', String(o.dataset.check === armed));
        });
      }
      (document.body || document.documentElement).appendChild(host);
    };
    mark.style.cssText = 'position:fixed;pointer-events:none;outline:2px solid #fc0;z-index:2147483646;display:none';
    const ready = () => {
      build();
      if (!mark.isConnected) document.documentElement.appendChild(mark);
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', ready);
    else ready();
    const inOverlay = (e) => host !== null && e.composedPath().includes(host);
    const disarm = () => {
      armed = null;
      mark.style.display = 'none';
      if (host) for (const o of host.shadowRoot.querySelectorAll('button')) o.setAttribute('aria-pressed', 'false');
    };
    const pick = (e) => {
      const el = e.target && e.target.nodeType === 1 ? e.target : null;
      if (!el || armed !== 'value') return el;
      const field = el.closest('input, textarea, select') || (el.localName === 'label' ? el.control : null);
      return field || el;
    };
    const block = (e) => {
      if (!armed || !e.isTrusted || inOverlay(e)) return;
      e.preventDefault();
      e.stopImmediatePropagation();
      if (e.type !== 'click') return;
      const el = pick(e);
      if (el) {
        const check = armed;
        const expected = check === 'text' ? short(el.innerText || el.textContent)
          : check === 'value' ? String(el.value === undefined ? '' : el.value) : '';
        report({ kind: 'assert', check, selector: selectorFor(el, false, check !== 'value'), expected });
      }
      disarm();
    };
    for (const type of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick', 'auxclick']) {
      window.addEventListener(type, block, true);
    }
    window.addEventListener('mousemove', (e) => {
      if (!armed || inOverlay(e)) return;
      const el = pick(e);
      if (!el) return;
      const r = el.getBoundingClientRect();
      Object.assign(mark.style, { display: 'block', left: r.left + 'px', top: r.top + 'px', width: r.width + 'px', height: r.height + 'px' });
    }, true);
    window.addEventListener('keydown', (e) => {
      if (armed && e.key === 'Escape') {
        disarm();
        e.stopImmediatePropagation();
      }
    }, true);
  }
  const notOverlay = (f) => (e) => {
    if (host !== null && e.composedPath().includes(host)) return;
    f(e);
  };

  window.addEventListener('click', notOverlay(onClick), true);
  window.addEventListener('auxclick', notOverlay(onAux), true);
  window.addEventListener('input', notOverlay(onInput), true);
  window.addEventListener('change', notOverlay(onChange), true);
  window.addEventListener('keydown', notOverlay(onKey), true);
  return lib.ok(true);
})
