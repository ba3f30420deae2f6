(args) => {
  // Content fingerprint of `wait_for_stable` (JS-PROBES.md §11). Root = the first match of
  // `args.selector`, or body. Source = the root's innerText, then for every input, textarea and
  // select inside it its value and checked state, then for every `table tr` inside it its
  // collapsed innerText, joined with '|'. Answers {ok:true, value:{found:true, length,
  // fingerprint (FNV-1a, decimal), text (collapsed innerText, <= 2000 chars)}}, {ok:true,
  // value:{found:false}} when there is no root, or {ok:false, code, msg} (an invalid selector is
  // INVALID_ARGUMENT). The highlight overlay is hidden while the text is read.
  const OVERLAY_ID = 'playwright-highlight-container';
  const collapse = (s) => String(s || '').replace(/\s+/g, ' ').trim();
  try {
    let root;
    if (typeof args.selector === 'string') {
      try {
        root = document.querySelector(args.selector);
      } catch (e) {
        return {
          ok: false,
          code: 'INVALID_ARGUMENT',
          msg: 'param `selector`: `' + args.selector + '` is not a valid CSS selector: ' + String((e && e.message) || e),
        };
      }
    } else {
      root = document.body;
    }
    if (!root) return { ok: true, value: { found: false, url: String(location.href) } };
    const overlay = document.getElementById(OVERLAY_ID);
    const hide = overlay !== null && root.contains(overlay) && overlay.style.display !== 'none';
    const previous = hide ? overlay.style.display : null;
    let text;
    if (hide) overlay.style.display = 'none';
    try {
      text = String(root.innerText || '');
    } finally {
      if (hide) overlay.style.display = previous;
    }
    const parts = [text];
    for (const el of root.querySelectorAll('input, textarea, select')) {
      parts.push(String(el.value), String(el.checked));
    }
    for (const tr of root.querySelectorAll('table tr')) {
      parts.push(collapse(tr.innerText));
    }
    const source = parts.join('|');
    let h = 2166136261;
    for (let i = 0; i < source.length; i++) {
      h ^= source.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return {
      ok: true,
      value: {
        found: true,
        length: source.length,
        fingerprint: String(h >>> 0),
        text: collapse(text).slice(0, 2000),
        url: String(location.href),
      },
    };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
}
