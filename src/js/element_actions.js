((args, lib) => {
  // Probe of the index interactions (check, focus, drop-downs, scrolling, uploads, the focused
  // element), joined behind probe_lib.js. Ops with `args.target` ({path, expect}, see
  // lib.locate) act on that element only (STALE_ELEMENT when it is gone or replaced):
  //   check_state   → {kind: checkbox | radio | aria | null, checked, hit}: the box the element
  //                   stands for (itself, a label's control, or the one box inside it);
  //   focus         → {focused, hit}: plain focus, no selection change;
  //   options       → {options: [textContent], items: [{index, value, label, selected,
  //                   disabled}], multiple, disabled} of a <select> (or a label's select);
  //   select        {text} → picks the option whose label, else value, else (a number) index
  //                   is `text`; input and change are dispatched once, and only when the
  //                   selection changes → {selected, matchedBy, alreadySelected, multiple};
  //   scroll        {pages, down} → scrolls the element (or its nearest scrollable ancestor)
  //                   by one window height per page → lib scroll report;
  //   file_input    → the file input itself (an element, not an envelope: Tab::element_object):
  //                   the element, a label's control, or the first file input inside it;
  //   file_readback → {filesLength, value (≤ 200), disabled, accept, names} of that input;
  //   js_dblclick   → §9 JS click twice (detail 1 and 2), then `dblclick` → {tag};
  //   form_block    → null, or when the element submits a form that the browser's validation
  //                   holds back: {form, fields: [{tag, name, label, message}]} (≤ 5; reading
  //                   validity fires no event).
  // Ops without a target:
  //   scroll        {pages, down} → scrolls the page;
  //   focused       → {tag, id, className (≤ 80), placeholder, isBody, type, password, frames,
  //                   intoFrame}: document.activeElement, followed into same-origin frames
  //                   and open shadow roots (`intoFrame` when it stops at a frame it cannot
  //                   enter).
  const opts = args || {};
  let el = null;
  if (opts.target) {
    const found = lib.locate(opts.target);
    if (found.failure) return found.failure;
    el = found.el;
  }

  const BOXES = new Set(['checkbox', 'radio']);
  const isBox = (n) => n && n.localName === 'input' && BOXES.has(String(n.type).toLowerCase());
  const boxOf = (n) => {
    if (isBox(n)) return n;
    if (n.localName === 'label' && isBox(n.control)) return n.control;
    const inner = n.querySelectorAll('input[type=checkbox], input[type=radio]');
    return inner.length === 1 ? inner[0] : null;
  };
  const checkState = () => {
    const box = boxOf(el);
    if (box) return lib.ok({ kind: String(box.type).toLowerCase(), checked: box.checked === true, hit: lib.summary(box) });
    const role = String(el.getAttribute('role') || '').toLowerCase();
    const aria = el.getAttribute('aria-checked');
    if (['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'].includes(role) || aria !== null) {
      return lib.ok({ kind: 'aria', checked: aria === 'true', hit: lib.summary(el) });
    }
    return lib.ok({ kind: null, checked: null, hit: lib.summary(el) });
  };

  const focus = () => {
    try {
      el.focus({ preventScroll: false });
    } catch (e) {
      // Focus is best effort; `focused` says whether it took.
    }
    const root = el.getRootNode();
    const active = root && root.activeElement !== undefined ? root.activeElement : document.activeElement;
    return lib.ok({ focused: active === el || (active !== null && el.contains(active)), hit: lib.summary(el) });
  };

  const selectOf = (n) => {
    if (n.localName === 'select') return n;
    if (n.localName === 'label' && n.control && n.control.localName === 'select') return n.control;
    return null;
  };
  const labelOf = (o) => lib.collapse(o.label || o.textContent);
  const items = (sel) => Array.from(sel.options).map((o, index) => ({
    index, value: o.value, label: labelOf(o), selected: o.selected, disabled: o.disabled,
  }));
  const notSelect = () => lib.fail('ACTION_FAILED', 'the element is a <' + el.localName + '>, not a <select>: custom drop-downs need clicks',
    { tag: el.localName });
  const options = () => {
    const sel = selectOf(el);
    if (!sel) return notSelect();
    return lib.ok({
      options: Array.from(sel.options).map((o) => String(o.textContent)),
      items: items(sel),
      multiple: sel.multiple === true,
      disabled: sel.disabled === true,
    });
  };
  const select = () => {
    const sel = selectOf(el);
    if (!sel) return notSelect();
    const text = String(opts.text);
    const want = lib.collapse(text);
    const all = Array.from(sel.options);
    let matchedBy = 'label';
    let pick = all.findIndex((o) => labelOf(o) === want);
    if (pick < 0) {
      matchedBy = 'value';
      pick = all.findIndex((o) => o.value === text);
    }
    if (pick < 0) {
      matchedBy = 'labelIgnoreCase';
      pick = all.findIndex((o) => labelOf(o).toLowerCase() === want.toLowerCase());
    }
    if (pick < 0 && /^\d+$/.test(text.trim()) && Number(text.trim()) < all.length) {
      matchedBy = 'index';
      pick = Number(text.trim());
    }
    if (pick < 0) {
      return lib.fail('ELEMENT_NOT_FOUND', 'no option of the <select> has the label, value or index `' + text + '`',
        { available: all.slice(0, 30).map(labelOf), optionCount: all.length });
    }
    const option = all[pick];
    if (sel.disabled) return lib.fail('ELEMENT_DISABLED', 'the <select> is disabled', { disabled: true });
    if (option.disabled) return lib.fail('ELEMENT_DISABLED', 'the option `' + labelOf(option) + '` is disabled', { disabled: true });
    const already = option.selected && all.every((o, i) => i === pick || !o.selected);
    if (!already) {
      for (const o of all) o.selected = false;
      option.selected = true;
      sel.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      sel.dispatchEvent(new Event('change', { bubbles: true }));
    }
    const now = sel.selectedIndex >= 0 ? all[sel.selectedIndex] : null;
    return lib.ok({
      selected: now ? { index: sel.selectedIndex, value: now.value, label: labelOf(now) } : null,
      matchedBy,
      alreadySelected: already,
      multiple: sel.multiple === true,
      reached: now === option,
    });
  };

  const scrollable = (n) => {
    const style = getComputedStyle(n);
    return n.scrollHeight > n.clientHeight + 1 && /(auto|scroll|overlay)/.test(style.overflowY);
  };
  const scroll = () => {
    const page = document.scrollingElement || document.documentElement;
    let scroller = page;
    if (el) {
      scroller = null;
      for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
        if (n === page || n === document.body) break;
        if (scrollable(n)) {
          scroller = n;
          break;
        }
      }
      if (scroller === null) scroller = page;
    }
    const step = window.innerHeight;
    const pages = Math.max(0, Number(opts.pages) || 0);
    const dy = (opts.down ? 1 : -1) * step * pages;
    const before = scroller.scrollTop;
    scroller.scrollBy({ top: dy, left: 0, behavior: 'instant' });
    const after = scroller.scrollTop;
    const max = scroller.scrollHeight - scroller.clientHeight;
    return lib.ok({
      scroller: scroller === page ? 'page' : lib.summary(scroller),
      ownScroll: el !== null && scroller === el,
      before: Math.round(before),
      after: Math.round(after),
      scrolledBy: Math.round(after - before),
      requested: Math.round(dy),
      atTop: after <= 0,
      atBottom: after >= max - 1,
    });
  };

  const fileInputOf = (n) => {
    if (n.localName === 'input' && String(n.type).toLowerCase() === 'file') return n;
    if (n.localName === 'label' && n.control && String(n.control.type).toLowerCase() === 'file') return n.control;
    return n.querySelector('input[type=file]');
  };
  const fileInput = () => {
    const input = fileInputOf(el);
    if (!input) {
      return lib.fail('ELEMENT_NOT_EDITABLE', 'the element is a <' + el.localName + '>, not a file input (nor a label of one, nor holding one)',
        { tag: el.localName });
    }
    return input;
  };
  const fileReadback = () => {
    const input = fileInputOf(el);
    if (!input) return lib.ok({ elementGone: true });
    const files = input.files;
    return lib.ok({
      filesLength: files ? files.length : null,
      value: String(input.value || '').slice(0, 200),
      disabled: input.disabled === true,
      accept: input.getAttribute('accept'),
      names: files ? Array.from(files).map((f) => f.name) : [],
    });
  };

  const focused = () => {
    let active = document.activeElement;
    let frames = 0;
    let intoFrame = false;
    for (let depth = 0; active && depth < 16; depth++) {
      if (active.shadowRoot && active.shadowRoot.activeElement) {
        active = active.shadowRoot.activeElement;
      } else if (active.localName === 'iframe' || active.localName === 'frame') {
        let inner = null;
        try {
          inner = active.contentDocument;
        } catch (e) {
          inner = null;
        }
        if (!inner || !inner.activeElement) {
          intoFrame = true;
          break;
        }
        active = inner.activeElement;
        frames += 1;
      } else {
        break;
      }
    }
    if (!active) return lib.ok({ tag: null, isBody: true, frames, intoFrame });
    const cls = lib.classOf(active);
    return lib.ok({
      tag: active.localName,
      id: active.getAttribute('id') || null,
      className: cls ? cls.slice(0, 80) : null,
      placeholder: active.getAttribute('placeholder'),
      isBody: active.localName === 'body' || active.localName === 'html',
      type: lib.typeOf(active),
      password: lib.isPassword(active),
      frames,
      intoFrame,
    });
  };

  const jsDoubleClick = () => {
    lib.scrollToCenter(el);
    const r = el.getBoundingClientRect();
    const base = { bubbles: true, cancelable: true, composed: true, view: window,
      clientX: Math.round(r.left + r.width / 2), clientY: Math.round(r.top + r.height / 2), button: 0 };
    const Pointer = typeof PointerEvent === 'function' ? PointerEvent : MouseEvent;
    const pointer = { pointerId: 1, pointerType: 'mouse', isPrimary: true };
    for (const detail of [1, 2]) {
      el.dispatchEvent(new Pointer('pointerdown', { ...base, ...pointer, buttons: 1 }));
      el.dispatchEvent(new MouseEvent('mousedown', { ...base, buttons: 1, detail }));
      el.dispatchEvent(new Pointer('pointerup', { ...base, ...pointer, buttons: 0 }));
      el.dispatchEvent(new MouseEvent('mouseup', { ...base, buttons: 0, detail }));
      el.dispatchEvent(new MouseEvent('click', { ...base, buttons: 0, detail }));
    }
    el.dispatchEvent(new MouseEvent('dblclick', { ...base, buttons: 0, detail: 2 }));
    return lib.ok({ tag: el.localName });
  };

  // The form a click on `el` would submit, and its controls that hold it back.
  const formBlock = () => {
    const submitter = el.closest('button, input[type=submit], input[type=image]');
    if (!submitter) return lib.ok(null);
    const type = String(submitter.type || '').toLowerCase();
    if (!(type === 'submit' || type === 'image')) return lib.ok(null);
    const form = submitter.form;
    if (!form || form.noValidate || submitter.formNoValidate) return lib.ok(null);
    const fields = [];
    for (const c of Array.from(form.elements)) {
      if (!c.willValidate || !c.validity || c.validity.valid) continue;
      const label = (c.labels && c.labels.length ? lib.collapse(c.labels[0].textContent) : '')
        || c.getAttribute('aria-label') || c.getAttribute('placeholder') || '';
      const message = lib.isPassword(c) ? lib.passwordMessage(c.validationMessage) : String(c.validationMessage || '');
      fields.push({ tag: c.localName, name: c.getAttribute('name') || c.getAttribute('id') || null,
        label: label.slice(0, 80), message: message.slice(0, 200) });
      if (fields.length >= 5) break;
    }
    if (fields.length === 0) return lib.ok(null);
    return lib.ok({ form: form.getAttribute('id') || form.getAttribute('name') || form.getAttribute('action') || null, fields });
  };

  switch (opts.op) {
    case 'form_block': return formBlock();
    case 'js_dblclick': return jsDoubleClick();
    case 'check_state': return checkState();
    case 'focus': return focus();
    case 'options': return options();
    case 'select': return select();
    case 'scroll': return scroll();
    case 'file_input': return fileInput();
    case 'file_readback': return fileReadback();
    case 'focused': return focused();
    default: return lib.fail('PROBE_FAILED', 'unknown op: ' + String(opts.op));
  }
})
