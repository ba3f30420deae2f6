(args) => {
  // Element probe for click and input (JS-PROBES.md §8, §9). `args.path` is a locator produced
  // by dom_index.js (positional XPath without the leading slash; `/#shadow-root/` enters the
  // open shadow root of the element before it); `args.op` is one of
  //   inspect      {found, tag, id, name, rect, center, visible, disabled, readOnly, editable,
  //                 isContentEditable, type, hit, covered, coveredBy[, reason]} after scrolling
  //                 the element to the centre of the viewport when it is not fully in view (or
  //                 when something covers its centre);
  //   js_click     {found, clicked, tag}: pointer/mouse events at its centre (§9 JS click);
  //   set_value    {found, value, matches}: native value setter + input/change (§9);
  //   focus_select {found, focused}: focus and select all of its content;
  //   focus_end    {found, focused}: focus and put the caret at the end;
  //   value        {found, value, length[, matches]}: the live value (`args.expect` optional).
  // Password values are reported as "[redacted]"; `matches` / `length` allow checks anyway.
  // Never throws: {found:false} when the locator no longer resolves, {found:true, error} when
  // the operation itself failed.
  const SHADOW = '#shadow-root';
  const STEP = /^([^\[\]\/@()]+)(?:\[(\d+)\])?$/;
  const NO_TYPING = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'hidden',
    'image', 'color', 'range']);

  const resolve = (path) => {
    if (typeof path !== 'string' || path === '') return null;
    const rel = path.charAt(0) === '/' ? path.slice(1) : path;
    let node = document;
    for (const step of rel.split('/')) {
      if (!node) return null;
      if (step === SHADOW) {
        node = node.shadowRoot || null;
        continue;
      }
      const m = STEP.exec(step);
      if (!m) {
        // Not a positional path: evaluate it as a document XPath.
        if (rel.indexOf(SHADOW) >= 0) return null;
        const res = document.evaluate('/' + rel, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
        node = res.singleNodeValue;
        break;
      }
      const name = m[1].toLowerCase();
      const k = m[2] ? Number(m[2]) : 1;
      let seen = 0;
      let found = null;
      for (let c = node.firstElementChild; c !== null; c = c.nextElementSibling) {
        if (c.localName.toLowerCase() === name && ++seen === k) { found = c; break; }
      }
      node = found;
    }
    return node && node.nodeType === 1 ? node : null;
  };

  const collapse = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  const classOf = (el) => {
    const c = el.className;
    const v = typeof c === 'string' ? c : (c && typeof c.baseVal === 'string' ? c.baseVal : '');
    return v === '' ? null : v;
  };
  const textOf = (el, max) => collapse(typeof el.innerText === 'string' ? el.innerText : el.textContent).slice(0, max);
  const rectOf = (r) => [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)];
  const centerOf = (r) => [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
  const hasBox = (r) => r.width > 0 && r.height > 0;
  const isPassword = (el) => el.localName === 'input' && String(el.type).toLowerCase() === 'password';
  // Whether `outer` contains `inner`, across shadow boundaries.
  const composedContains = (outer, inner) => {
    for (let n = inner; n; n = n.parentNode || n.host) {
      if (n === outer) return true;
    }
    return false;
  };
  const scrollToCenter = (el) => {
    try {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    } catch (e) {
      // Scrolling is best effort (§9).
    }
  };
  const fullyInView = (r) => r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight
    && r.right <= window.innerWidth;

  // §8 hit test at the centre of the element's box.
  const hitTest = (el, r) => {
    if (!hasBox(r)) return { covered: false, hit: null, coveredBy: null, reason: 'no-box' };
    const [x, y] = centerOf(r);
    const root = el.getRootNode();
    const scope = root && typeof root.elementFromPoint === 'function' ? root : document;
    const hit = scope.elementFromPoint(x, y);
    if (!hit) return { covered: false, hit: null, coveredBy: null, reason: 'no-element-at-point' };
    const covered = !(hit === el || composedContains(el, hit) || composedContains(hit, el));
    const html = String(hit.outerHTML || '');
    return {
      covered,
      hit: { tag: hit.tagName, text: textOf(hit, 60), outerHtml: html.length > 300 ? html.slice(0, 300) : html },
      coveredBy: covered
        ? { tag: hit.tagName, id: hit.getAttribute('id') || null, className: (classOf(hit) || '').slice(0, 120) || null, text: textOf(hit, 60) }
        : null,
    };
  };

  const state = (el) => {
    const tag = el.localName;
    const disabled = el.disabled === true || el.getAttribute('aria-disabled') === 'true'
      || (typeof el.matches === 'function' && el.matches(':disabled'));
    const readOnly = el.readOnly === true || el.getAttribute('aria-readonly') === 'true';
    // Only form controls have a meaningful `type` property (an anchor's is a MIME type hint).
    const type = (tag === 'input' || tag === 'button' || tag === 'select' || tag === 'textarea')
      ? String(el.type).toLowerCase() : null;
    let textCapable = false;
    if (tag === 'input') textCapable = !NO_TYPING.has(type);
    else if (tag === 'textarea' || el.isContentEditable) textCapable = true;
    return { disabled, readOnly, editable: textCapable && !disabled && !readOnly, type };
  };

  const inspect = (el) => {
    let r = el.getBoundingClientRect();
    let scrolled = false;
    if (hasBox(r) && !fullyInView(r)) {
      scrollToCenter(el);
      scrolled = true;
      r = el.getBoundingClientRect();
    }
    let hit = hitTest(el, r);
    if (hit.covered && !scrolled) {
      // Sticky headers and the like cover elements near the edges: try the centre once.
      scrollToCenter(el);
      r = el.getBoundingClientRect();
      hit = hitTest(el, r);
    }
    const style = getComputedStyle(el);
    const visible = hasBox(r) && style.visibility !== 'hidden' && style.display !== 'none';
    const st = state(el);
    const res = {
      found: true,
      tag: el.localName,
      id: el.id || null,
      name: el.getAttribute('name'),
      rect: rectOf(r),
      center: centerOf(r),
      visible,
      disabled: st.disabled,
      readOnly: st.readOnly,
      editable: st.editable,
      isContentEditable: el.isContentEditable === true,
      type: st.type,
      hit: hit.hit,
      covered: hit.covered,
      coveredBy: hit.coveredBy,
    };
    if (hit.reason) res.reason = hit.reason;
    return res;
  };

  // §9 JS click: pointer and mouse events at the centre, then a checkbox/radio safety net.
  const jsClick = (el) => {
    scrollToCenter(el);
    const r = el.getBoundingClientRect();
    const [x, y] = centerOf(r);
    const base = { bubbles: true, cancelable: true, composed: true, view: window, clientX: x, clientY: y, button: 0 };
    const toggles = el.localName === 'input' && (el.type === 'checkbox' || el.type === 'radio');
    const before = toggles ? el.checked : null;
    const Pointer = typeof PointerEvent === 'function' ? PointerEvent : MouseEvent;
    el.dispatchEvent(new Pointer('pointerdown', { ...base, buttons: 1, pointerId: 1, pointerType: 'mouse', isPrimary: true }));
    el.dispatchEvent(new MouseEvent('mousedown', { ...base, buttons: 1 }));
    el.dispatchEvent(new Pointer('pointerup', { ...base, buttons: 0, pointerId: 1, pointerType: 'mouse', isPrimary: true }));
    el.dispatchEvent(new MouseEvent('mouseup', { ...base, buttons: 0 }));
    el.dispatchEvent(new MouseEvent('click', { ...base, buttons: 0, detail: 1 }));
    if (toggles && el.checked === before) {
      el.checked = el.type === 'radio' ? true : !before;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }
    return { found: true, clicked: true, tag: el.localName };
  };

  const liveValue = (el) => {
    if ('value' in el && el.value !== undefined && el.value !== null && el.localName !== 'li') {
      return String(el.value);
    }
    if (el.isContentEditable) return String(el.innerText);
    return null;
  };
  const reportValue = (el, raw, expect) => {
    const res = { found: true, value: raw !== null && isPassword(el) ? '[redacted]' : raw };
    if (raw !== null) res.length = raw.length;
    if (typeof expect === 'string') res.matches = raw === expect;
    return res;
  };

  // §9 JS set value: the prototype's native setter (frameworks patch the instance's one).
  const setValue = (el, value) => {
    const text = value === undefined || value === null ? '' : String(value);
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype
      : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype
        : el instanceof HTMLInputElement ? HTMLInputElement.prototype : null;
    const desc = proto ? Object.getOwnPropertyDescriptor(proto, 'value') : null;
    if (desc && typeof desc.set === 'function') desc.set.call(el, text);
    else if (!('value' in el) && el.isContentEditable) el.textContent = text;
    else el.value = text;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return reportValue(el, liveValue(el), text);
  };

  const isFocused = (el) => {
    const root = el.getRootNode();
    const active = root && root.activeElement !== undefined ? root.activeElement : document.activeElement;
    return active === el || (active !== null && el.contains(active));
  };
  const focusSelect = (el, atEnd) => {
    el.focus();
    const tag = el.localName;
    if (tag === 'input' || tag === 'textarea') {
      try {
        if (atEnd) {
          const n = String(el.value).length;
          el.setSelectionRange(n, n);
        } else {
          el.select();
        }
      } catch (e) {
        // Some input types (email, number) have no selection API; focus is what matters.
      }
    } else if (el.isContentEditable) {
      const sel = window.getSelection();
      if (sel) {
        const range = document.createRange();
        range.selectNodeContents(el);
        if (atEnd) range.collapse(false);
        sel.removeAllRanges();
        sel.addRange(range);
      }
    }
    return { found: true, focused: isFocused(el) };
  };

  let el = null;
  try {
    el = resolve(args && args.path);
  } catch (e) {
    return { found: false, error: String((e && e.message) || e) };
  }
  if (!el) return { found: false };
  try {
    switch (args.op) {
      case 'inspect': return inspect(el);
      case 'js_click': return jsClick(el);
      case 'set_value': return setValue(el, args.value);
      case 'focus_select': return focusSelect(el, false);
      case 'focus_end': return focusSelect(el, true);
      case 'value': return reportValue(el, liveValue(el), args.expect);
      default: return { found: true, error: 'unknown op: ' + String(args.op) };
    }
  } catch (e) {
    return { found: true, error: String((e && e.message) || e) };
  }
}
