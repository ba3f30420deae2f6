((args, lib) => {
  // Element probe for actions (JS-PROBES.md §8, §9), joined behind probe_lib.js. Every op first
  // finds `args.target` ({path, expect}, see lib.locate: STALE_ELEMENT when the element is gone
  // or another one is there), so nothing is done to an element the caller did not mean.
  // `args.op` is one of
  //   inspect   {hitTest, observe}: scrolls the element to the centre of the viewport when it is
  //             not fully in view, then answers {tag, type, rect, visible, disabled,
  //             ariaDisabled, readOnly, fill, pointerEventsNone} plus, with `hitTest`, the click
  //             point {point, hit, coveredBy, reason} (lib.clickPoint; scrolled to the centre
  //             once more when no point was found), and with `observe` the page mark
  //             {page: lib.pageMark()} taken after the read, for the action's "before";
  //   js_click  {}: pointer and mouse events at its centre (§9 JS click) → {tag};
  //   set_value {value}: the native setter and input/change events (§9) → {value, length}
  //             (the live value afterwards; "[redacted]" for passwords);
  //   focus     {at: "all" | "end"}: focus, then select everything or put the caret at the end
  //             → {focused, length} (length of the value before typing).
  const found = lib.locate(args && args.target);
  if (found.failure) return found.failure;
  const el = found.el;
  const opts = args || {};

  const inspect = () => {
    let r = el.getBoundingClientRect();
    let scrolled = false;
    if (lib.hasBox(r) && !lib.fullyInView(r)) {
      lib.scrollToCenter(el);
      scrolled = true;
      r = el.getBoundingClientRect();
    }
    let hit = opts.hitTest ? lib.clickPoint(el) : null;
    if (hit && hit.point === null && hit.reason !== 'no-box' && !scrolled) {
      // Sticky headers and the like cover elements near the edges: try from the centre once.
      lib.scrollToCenter(el);
      r = el.getBoundingClientRect();
      hit = lib.clickPoint(el);
    }
    const style = getComputedStyle(el);
    const visible = lib.hasBox(r) && style.visibility !== 'hidden' && style.display !== 'none';
    const value = {
      tag: el.localName,
      type: lib.typeOf(el),
      rect: lib.rectOf(r),
      visible,
      disabled: el.disabled === true || (typeof el.matches === 'function' && el.matches(':disabled')),
      ariaDisabled: el.getAttribute('aria-disabled') === 'true',
      readOnly: el.readOnly === true || el.getAttribute('aria-readonly') === 'true',
      fill: lib.fillKind(el),
      pointerEventsNone: style.pointerEvents === 'none',
    };
    if (hit) Object.assign(value, hit);
    if (opts.observe) value.page = lib.pageMark();
    return lib.ok(value);
  };

  // §9 JS click: pointer and mouse events at the centre, then a checkbox/radio safety net.
  const jsClick = () => {
    lib.scrollToCenter(el);
    const r = el.getBoundingClientRect();
    const x = Math.round(r.left + r.width / 2);
    const y = Math.round(r.top + r.height / 2);
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
    return lib.ok({ tag: el.localName });
  };

  const setValue = () => {
    const text = opts.value === undefined || opts.value === null ? '' : String(opts.value);
    lib.nativeSet(el, text);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    const live = lib.liveValue(el);
    return lib.ok({
      value: live === null ? null : (lib.isPassword(el) ? '[redacted]' : live.slice(0, 200)),
      length: live === null ? null : live.length,
    });
  };

  const isFocused = () => {
    const root = el.getRootNode();
    const active = root && root.activeElement !== undefined ? root.activeElement : document.activeElement;
    return active === el || (active !== null && el.contains(active));
  };
  const focus = () => {
    el.focus();
    const atEnd = opts.at === 'end';
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
    const live = lib.liveValue(el);
    return lib.ok({ focused: isFocused(), length: live === null ? null : live.length });
  };

  switch (opts.op) {
    case 'inspect': return inspect();
    case 'js_click': return jsClick();
    case 'set_value': return setValue();
    case 'focus': return focus();
    default: return lib.fail('PROBE_FAILED', 'unknown op: ' + String(opts.op));
  }
})
