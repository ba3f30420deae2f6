((args, lib) => {
  // What the conditional waits look for in one frame (JS-PROBES.md §11 and the wait_* commands
  // of COMMANDS.md), joined behind probe_lib.js. `args`: {selector, text, bodyText}, each a
  // string or null.
  // - selector: every match of querySelectorAll; `count`, `visibleCount` and `element` (the
  //   first visible match, else the first match). An invalid selector fails INVALID_ARGUMENT.
  // - text: the innermost elements whose whitespace-collapsed text contains `text`
  //   (case-insensitive), as Playwright's text locator finds them; `textMatches`,
  //   `textVisible` (how many are visible) and `textElement` (the first visible one).
  // - bodyText: whether body.innerText contains it as given (`bodyHasText`).
  // Visible = a non-empty box and visibility:visible (checkVisibility where there is one), as
  // Playwright's isVisible. The highlight overlay is never a match.
  const OVERLAY_ID = 'playwright-highlight-container';
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'title']);
  const visible = (el) => {
    if (typeof el.checkVisibility === 'function' && !el.checkVisibility({ visibilityProperty: true })) return false;
    const style = getComputedStyle(el);
    if (style.visibility !== 'visible') return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const overlay = document.getElementById(OVERLAY_ID);
  const inOverlay = (el) => overlay !== null && overlay.contains(el);
  const out = { url: String(location.href), readyState: document.readyState };
  if (typeof args.selector === 'string') {
    let all;
    try {
      all = document.querySelectorAll(args.selector);
    } catch (e) {
      return lib.fail('INVALID_ARGUMENT', 'param `selector`: `' + args.selector + '` is not a valid CSS selector: ' + String((e && e.message) || e));
    }
    let count = 0;
    let shown = 0;
    let first = null;
    let firstShown = null;
    for (const el of all) {
      if (inOverlay(el)) continue;
      count += 1;
      if (first === null) first = el;
      if (visible(el)) {
        shown += 1;
        if (firstShown === null) firstShown = el;
      }
    }
    out.count = count;
    out.visibleCount = shown;
    const pick = firstShown || first;
    out.element = pick ? lib.summary(pick) : null;
  }
  if (typeof args.text === 'string') {
    const want = lib.collapse(args.text).toLowerCase();
    const has = (el) => lib.collapse(el.textContent).toLowerCase().includes(want);
    const found = [];
    // Descend only into elements that contain the text; an element is a match when none of its
    // children contains it alone (the text may span several of them).
    const visit = (el) => {
      let inner = false;
      for (let c = el.firstElementChild; c !== null; c = c.nextElementSibling) {
        if (SKIP.has(c.localName) || c.id === OVERLAY_ID || !has(c)) continue;
        inner = true;
        visit(c);
      }
      if (!inner) found.push(el);
    };
    const body = document.body;
    if (body && want !== '' && has(body)) visit(body);
    let shown = 0;
    let firstShown = null;
    for (const el of found) {
      if (visible(el)) {
        shown += 1;
        if (firstShown === null) firstShown = el;
      }
    }
    out.textMatches = found.length;
    out.textVisible = shown;
    out.textElement = firstShown ? lib.summary(firstShown) : null;
  }
  if (typeof args.bodyText === 'string') {
    const body = document.body;
    out.bodyHasText = !!body && String(body.innerText || '').includes(args.bodyText);
  }
  return lib.ok(out);
})
