((args, lib) => {
  // Element probe for actions (JS-PROBES.md §8, §9), joined behind probe_lib.js. Every op first
  // finds `args.target` ({path, expect}, see lib.locate: STALE_ELEMENT when the element is gone
  // or another one is there), so nothing is done to an element the caller did not mean.
  // `args.op` is one of
  //   inspect   {hitTest, observe, keepScroll}: scrolls the element to the centre of the
  //             viewport when it is not fully in view (not with `keepScroll`), then answers {tag, type, rect, visible, disabled,
  //             ariaDisabled, readOnly, fill, pointerEventsNone, submits} plus, with `hitTest`, the click
  //             point {point, hit, coveredBy, reason} (lib.clickPoint; scrolled to the centre
  //             once more when no point was found), and with `observe` the page mark
  //             {page: lib.pageMark()} taken after the read, for the action's "before";
  //             with `describe` also `described` (lib.describe: what codegen needs to find
  //             the element again);
  //             with `frameCheck` the answer waits two animation frames
  //             and adds {stable}: the same exact bounding box in both (Playwright's
  //             stability; frames that never come are stood in for after 150 ms on a
  //             hidden page, after 1 s on a visible one);
  //   js_click  {}: pointer and mouse events at its centre (§9 JS click) → {tag};
  //   set_value {value, validate, focus}: the native setter and input/change events (§9) →
  //             the read-back (lib.readBack). With `validate` (inputs whose value is set, such as
  //             dates and colours) the value is first tried on a detached input of the same type
  //             and bounds: a value the browser would change or drop is INVALID_ARGUMENT and the
  //             field is left alone. Date-like values are trimmed and colours lower-cased first,
  //             as the browser itself reports them;
  //   focus     {at: "all" | "end"}: focus, then select everything or put the caret at the end
  //             → {focused, length} (length of the value before typing);
  //   read_back {text, mode: "exact" | "append", before} → lib.readBack.
  //   resolve   {query, hitTest, observe, frameCheck}: chooses the element of a locator that is not an
  //             index (lib.choose) and reads it as `inspect` does; the value also has
  //             `located`: {path, expect, info, summary, text (<= 200)}, the locator of the chosen element for
  //             the calls that follow, what the choice saw (matches, chosen position, notes)
  //             and the chosen element's description;
  //   count     {query}: how many elements it matches → {count}.
  const opts = args || {};
  if (opts.op === 'count') {
    const c = lib.count(opts.query);
    return c.failure || lib.ok({ count: c.count });
  }
  let el;
  let located = null;
  if (opts.op === 'resolve') {
    const chosen = lib.choose(opts.query);
    if (chosen.failure) return chosen.failure;
    el = chosen.el;
    const path = lib.pathOf(el);
    if (path === null) return lib.fail('STALE_ELEMENT', 'the element left the page while it was chosen', { reason: 'gone' });
    located = { path, expect: lib.identity(el), info: chosen.info, summary: lib.summary(el), text: lib.textOf(el, 200) };
  } else {
    const found = lib.locate(opts.target);
    if (found.failure) return found.failure;
    el = found.el;
  }

  const inspect = () => {
    let r = el.getBoundingClientRect();
    let scrolled = false;
    if (lib.hasBox(r) && !lib.fullyInView(r) && !opts.keepScroll) {
      lib.scrollToCenter(el);
      scrolled = true;
      r = el.getBoundingClientRect();
    }
    let hit = opts.hitTest ? lib.clickPoint(el) : null;
    if (hit && hit.point === null && hit.reason !== 'no-box' && !scrolled && !opts.keepScroll) {
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
      submits: submits(el),
    };
    if (hit) Object.assign(value, hit);
    if (opts.observe) value.page = lib.pageMark();
    return lib.ok(value);
  };

  // Whether a click on `el` submits a form that the browser validates (so the click's receipt
  // asks whether validation held it back).
  const submits = (node) => {
    const s = node.closest('button, input[type=submit], input[type=image]');
    if (!s) return false;
    const type = String(s.type || '').toLowerCase();
    return (type === 'submit' || type === 'image') && !!s.form && !s.form.noValidate && !s.formNoValidate;
  };

  // Answers `read` after two more animation frames, with whether the element's box was
  // exactly the same in both (Playwright's stability check). Both boxes are read inside rAF
  // callbacks: a box read in a task between frames may be at a later animation time than the
  // next frame's (Chromium keeps its animation clock monotonic), so it proves nothing.
  // Unless no animation runs in the document: then the box of the snapshot the index came from
  // (`knownBox`, read by an earlier command, rounded) is the first read, and a box the same to
  // the pixel now is stable at once (an agent's step clicks what its last read showed). Only a
  // script that moves the element and brings it back between the two reads gets past this.
  const knownStill = (read) => {
    const known = opts.knownBox;
    if (!Array.isArray(known) || known.length !== 4) return false;
    let running = true;
    try {
      running = document.getAnimations().some((a) => a.playState === 'running');
    } catch (e) { /* no animation API: not provable */ }
    if (running) return false;
    const r = read.value.rect;
    return Array.isArray(r) && r.every((v, i) => v === known[i]);
  };
  const nextFrames = (read) => {
    if (!knownStill(read)) return framesLater(read);
    read.value.stable = true;
    return read;
  };
  const framesLater = (read) => new Promise((resolve) => {
    let done = false;
    let first = null;
    const finish = (stable) => {
      if (done) return;
      done = true;
      read.value.stable = stable;
      resolve(read);
    };
    const box = () => {
      if (!el.isConnected) return null;
      const b = el.getBoundingClientRect();
      return [b.left, b.top, b.width, b.height];
    };
    requestAnimationFrame(() => {
      first = box();
      requestAnimationFrame(() => {
        const second = box();
        finish(first !== null && second !== null && first.every((v, i) => v === second[i]));
      });
    });
    // A hidden or throttled page may not draw: then nothing moves on screen either. A visible
    // page on a loaded machine may just draw late: it gets a second before that is assumed
    // (after 150 ms alone, a slow frame read as "stable" and a moving element was clicked).
    const fallback = () => finish(first === null || String(first) === String(box()));
    setTimeout(() => {
      if (document.visibilityState === 'hidden') fallback();
      else setTimeout(fallback, 850);
    }, 150);
  });

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

  const FORMATS = {
    color: '#rrggbb (hex digits)',
    date: 'yyyy-mm-dd',
    time: 'hh:mm, hh:mm:ss or hh:mm:ss.sss (24 h)',
    'datetime-local': 'yyyy-mm-ddThh:mm[:ss]',
    month: 'yyyy-mm',
    week: 'yyyy-Www (e.g. 2024-W05)',
    range: 'a number within the field\'s min, max and step',
  };
  const setValue = () => {
    let text = opts.value === undefined || opts.value === null ? '' : String(opts.value);
    const type = lib.typeOf(el);
    if (lib.fillKind(el) === 'set') {
      text = text.trim();
      if (type === 'color') text = text.toLowerCase();
    }
    if (opts.validate && el.localName === 'input') {
      // A detached input with the same type and bounds shows what the browser makes of the
      // value without touching the page's field (no events, no listeners, no constructor).
      const probe = document.createElement('input');
      for (const a of ['type', 'min', 'max', 'step']) {
        const v = el.getAttribute(a);
        if (v !== null) probe.setAttribute(a, v);
      }
      probe.value = text;
      if (probe.value !== text) {
        return lib.fail('INVALID_ARGUMENT',
          '`' + text + '` is not a valid value for an input of type ' + type
          + (FORMATS[type] ? ' (expected ' + FORMATS[type] + ')' : '')
          + (probe.value !== '' ? '; the field would show `' + probe.value + '`' : ''),
          { expectedFormat: FORMATS[type] || null, wouldBecome: probe.value });
      }
    }
    if (opts.focus) el.focus();
    lib.nativeSet(el, text);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return lib.ok(lib.readBack(el, text, 'exact'));
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
    case 'inspect': {
      const read = inspect();
      if (read.ok && opts.describe) read.value.described = lib.describe(el);
      return read.ok && opts.frameCheck ? nextFrames(read) : read;
    }
    case 'resolve': {
      const read = inspect();
      if (read.ok) read.value.located = located;
      return read.ok && opts.frameCheck ? nextFrames(read) : read;
    }
    case 'js_click': return jsClick();
    case 'set_value': return setValue();
    case 'focus': return focus();
    case 'read_back': return lib.ok(lib.readBack(el, opts.text, opts.mode, opts.before));
    default: return lib.fail('PROBE_FAILED', 'unknown op: ' + String(opts.op));
  }
})
