(args) => {
  // DOM modal probe (JS-PROBES.md §12) for one frame's document. Three scan rounds, always all
  // of them and in this order: framework selectors (strict), class-name hints, fixed-overlay
  // geometry. Answers {ok:true, value:{count, countStrict, countHeuristic, countBlocking, modals,
  // top, topIsBlocking, scannedBy, note}} or {ok:false, code, msg}; never throws. Points and
  // rects are in this frame's viewport (CSS px); the engine shifts them for iframes and merges
  // frames.
  // `args` is unused (kept for the one-argument probe shape).
  void args;
  const OVERLAY_ID = 'playwright-highlight-container';
  const BUTTON_SELECTOR = 'button, input[type=button], input[type=submit], input[type=reset], ' +
    '[role=button], [class*=btn], .ant-btn, .el-button, .layui-layer-btn a, .vxe-button, ' +
    'a[id$=_id], a[onclick]';
  const FALLBACK_SELECTOR = 'a, span, div, em';
  const COVER_BUTTONS = 'button, input[type=button], input[type=submit], [class*=btn]';
  const TITLE_SELECTOR = '.ant-modal-title, .ant-modal-confirm-title, .ant-drawer-title, [class*=title]';
  const CLOSE_SELECTOR = '.ant-modal-close, .ant-modal-close-x, [aria-label=Close], [class*=close]';
  const FRAMEWORK_GROUPS = [
    ['.ant-modal-wrap, .ant-drawer-open', 'ant-modal'],
    ['.agreement-container, [class*=agreement]', 'agreement'],
    ['[role=dialog], [role=alertdialog], .el-dialog, .vxe-modal--wrapper, .layui-layer', 'dialog'],
  ];
  const CLASS_HINT = /dialog|modal|popup|pop-box|popover|overlay|mask|drawer|lightbox|confirm|tip|tips|alert/i;
  // Attempt budget of the heuristic rounds: round 2 may try 12 candidates, rounds 2 and 3
  // together 24 (every attempt counts, admitted or not).
  const CLASS_HINT_ATTEMPTS = 12;
  const HEURISTIC_ATTEMPTS = 24;
  const SCANNED_BY = ['selector', 'heuristic:class-name', 'heuristic:fixed-overlay'];
  const NOTE = 'modals are listed in admission order: framework selectors (confidence strict) ' +
    'first, then class-name hints, then fixed-overlay geometry (heuristic); top is the last ' +
    'blocking modal (else the last one). Points are viewport coordinates for mouse_click. ' +
    'count 0 does not prove that nothing covers the page.';

  try {
    const overlay = document.getElementById(OVERLAY_ID);
    const inOverlay = (el) => overlay !== null && (el === overlay || overlay.contains(el));
    const vw = window.innerWidth || document.documentElement.clientWidth || 0;
    const vh = window.innerHeight || document.documentElement.clientHeight || 0;

    // Layout does not change during the probe: read each style and box once.
    const styles = new Map();
    const style = (el) => {
      let cs = styles.get(el);
      if (cs === undefined) {
        cs = getComputedStyle(el);
        styles.set(el, cs);
      }
      return cs;
    };
    const boxes = new Map();
    const box = (el) => {
      let r = boxes.get(el);
      if (r === undefined) {
        r = el.getBoundingClientRect();
        boxes.set(el, r);
      }
      return r;
    };

    // §12.1 helpers.
    const collapse = (s) => String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
    const squeeze = (s) => String(s == null ? '' : s).replace(/\s+/g, '');
    const innerText = (el) => (typeof el.innerText === 'string' ? el.innerText : el.textContent) || '';
    const className = (el) => {
      const c = el.className;
      if (typeof c === 'string') return c;
      return c && typeof c.baseVal === 'string' ? c.baseVal : '';
    };
    const styleVisible = (el) => {
      const cs = style(el);
      return cs.display !== 'none' && cs.visibility !== 'hidden' && cs.opacity !== '0';
    };
    const visible = (el) => {
      if (!styleVisible(el)) return false;
      const r = box(el);
      return r.width > 0 && r.height > 0;
    };
    const text = (el) => (el ? collapse(innerText(el)).slice(0, 80) : null);
    const centre = (el) => {
      const r = box(el);
      return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
    };
    const rectOf = (el) => {
      const r = box(el);
      return [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)];
    };
    const zIndexAbove50 = (cs) => {
      const z = parseInt(cs.zIndex, 10);
      return !Number.isNaN(z) && z > 50;
    };

    // Full-page scrims: never modals themselves; their presence sets hasMask on real ones.
    let coverList = null;
    const covers = () => {
      if (coverList !== null) return coverList;
      coverList = [];
      if (vw <= 0 || vh <= 0) return coverList;
      for (const el of document.querySelectorAll('div, section, aside, span')) {
        if (inOverlay(el)) continue;
        const r = box(el);
        if (r.width < 0.8 * vw || r.height < 0.8 * vh) continue;
        if (!styleVisible(el)) continue;
        if (innerText(el).trim().length >= 40) continue;
        if (el.querySelector(COVER_BUTTONS) !== null) continue;
        coverList.push(el);
      }
      return coverList;
    };
    const isCover = (el) => covers().includes(el);
    const hasMask = (el) => covers().some((c) => c !== el && !c.contains(el) && !el.contains(c));

    // A label looks like a button when it holds a non-ASCII letter or digit (CJK, accented
    // words), or is one ASCII word of 3-14 letters/digits starting with a letter. The spec says
    // "a non-ASCII character" but wants `×` rejected, so symbols do not count.
    const NON_ASCII_WORD = /(?![\u0000-\u007F])[\p{L}\p{N}]/u;
    const ASCII_WORD = /^[A-Za-z][A-Za-z0-9]{2,13}$/;
    const looksLikeButton = (label) => NON_ASCII_WORD.test(label) || ASCII_WORD.test(label);

    // Fixed headers, footers and banners: as wide as the viewport, at most a quarter as tall.
    const isPageChrome = (el) => {
      const r = box(el);
      return r.width >= 0.98 * vw && r.height <= 0.25 * vh;
    };

    // §12.2 buttons of a candidate.
    const clickable = (el) =>
      el.id !== '' ||
      el.hasAttribute('onclick') ||
      /^javascript:/i.test(el.getAttribute('href') || '') ||
      style(el).cursor === 'pointer';
    const buttonsOf = (root) => {
      const out = [];
      const push = (el, label, matchedBy) => {
        const point = centre(el);
        const twin = out.some((b) => b.label === label &&
          Math.abs(b.point[0] - point[0]) <= 3 && Math.abs(b.point[1] - point[1]) <= 3);
        if (twin) return;
        out.push({
          label,
          point,
          tag: el.tagName.toLowerCase(),
          id: el.id || null,
          className: className(el).slice(0, 80),
          matchedBy,
        });
      };
      for (const el of root.querySelectorAll(BUTTON_SELECTOR)) {
        if (inOverlay(el) || !visible(el)) continue;
        const value = typeof el.value === 'string' ? el.value : '';
        const label = squeeze(innerText(el) || value).slice(0, 12);
        if (label === '' || !looksLikeButton(label)) continue;
        push(el, label, 'selector');
      }
      if (out.length === 0) {
        for (const el of root.querySelectorAll(FALLBACK_SELECTOR)) {
          if (el.querySelector(FALLBACK_SELECTOR) !== null) continue;
          const label = squeeze(innerText(el));
          if (label.length < 1 || label.length > 8 || !looksLikeButton(label)) continue;
          if (inOverlay(el) || !visible(el) || !clickable(el)) continue;
          push(el, label, 'fallback-anchor');
        }
      }
      return out;
    };

    // §12.3 candidate description.
    const describe = (el, kind, matchedBy) => {
      const cs = style(el);
      const titleEl = el.querySelector(TITLE_SELECTOR);
      const closeEl = el.querySelector(CLOSE_SELECTOR);
      const buttons = buttonsOf(el);
      const overlayish = cs.position === 'fixed' || cs.position === 'absolute' || zIndexAbove50(cs);
      const hasContent = buttons.length > 0 || titleEl !== null || closeEl !== null;
      return {
        kind,
        matchedBy,
        confidence: matchedBy.startsWith('selector:') ? 'strict' : 'heuristic',
        className: className(el).slice(0, 200),
        id: el.id || null,
        title: titleEl ? text(titleEl) : null,
        text: text(el),
        buttons: buttons.map((b) => b.label),
        buttonPoints: buttons,
        hasClose: closeEl !== null,
        closePoint: closeEl !== null && visible(closeEl) ? centre(closeEl) : null,
        blocking: overlayish && hasContent,
        overlayish,
        hasContent,
        hasMask: hasMask(el),
        isCover: isCover(el),
        rect: rectOf(el),
        zIndex: String(cs.zIndex),
      };
    };

    // §12.4 admission.
    const admitted = [];
    const modals = [];
    const add = (el, kind, matchedBy) => {
      if (inOverlay(el)) return;
      if (el === document.documentElement || el === document.body) return;
      if (el.tagName === 'HTML' || el.tagName === 'BODY') return;
      if (!visible(el)) return;
      if (admitted.some((a) => a === el || a.contains(el) || el.contains(a))) return;
      const item = describe(el, kind, matchedBy);
      if (item.isCover) return;
      if (item.confidence === 'heuristic') {
        // Deliberately stricter than the letter of §12.4, which drops page chrome only when it
        // has no content: a sticky header with links or a cookie bar with an "Accept" button is
        // page furniture, not a modal, and must never become close_modal's `top` target.
        if (isPageChrome(el)) return;
        if (!item.hasContent && !item.overlayish) return;
      }
      admitted.push(el);
      modals.push(item);
    };

    // Candidates in document order, keeping only those that contain no other candidate. In
    // document order a candidate contains another one exactly when it contains the next one.
    const innermost = (list) => list.filter((el, i) => i + 1 >= list.length || !el.contains(list[i + 1]));

    // §12.5 round 1: framework selectors, group by group, document order inside a group.
    for (const [selector, kind] of FRAMEWORK_GROUPS) {
      for (const el of document.querySelectorAll(selector)) add(el, kind, 'selector:' + selector);
    }

    // Round 2: class-name hints.
    const hinted = [];
    for (const el of document.querySelectorAll('div, section, aside, dialog, form, ul')) {
      if (inOverlay(el) || !CLASS_HINT.test(className(el))) continue;
      const r = box(el);
      if (r.width < 120 || r.height < 50 || !styleVisible(el)) continue;
      hinted.push(el);
    }
    let attempts = 0;
    for (const el of innermost(hinted)) {
      if (attempts >= CLASS_HINT_ATTEMPTS) break;
      attempts++;
      add(el, 'class-hint', 'heuristic:class-name');
    }

    // Round 3: geometry (fixed, or stacked above z-index 50).
    const floating = [];
    for (const el of document.querySelectorAll('div, section, aside, dialog')) {
      if (inOverlay(el)) continue;
      const cs = style(el);
      if (cs.position !== 'fixed' && !zIndexAbove50(cs)) continue;
      const r = box(el);
      if (r.width < 150 || r.height < 60 || !styleVisible(el)) continue;
      floating.push(el);
    }
    for (const el of innermost(floating)) {
      if (attempts >= HEURISTIC_ATTEMPTS) break;
      attempts++;
      add(el, 'heuristic', 'heuristic:fixed-overlay');
    }

    const countStrict = modals.filter((m) => m.confidence === 'strict').length;
    const blocking = modals.filter((m) => m.blocking);
    const top = blocking.length > 0 ? blocking[blocking.length - 1]
      : (modals.length > 0 ? modals[modals.length - 1] : null);
    return {
      ok: true,
      value: {
        count: modals.length,
        countStrict,
        countHeuristic: modals.length - countStrict,
        countBlocking: blocking.length,
        modals,
        top,
        topIsBlocking: top !== null && top.blocking,
        scannedBy: SCANNED_BY,
        note: NOTE,
      },
    };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
}
