(args) => {
  // Interaction fingerprint, page part (JS-PROBES.md §7): {textLength, fingerprint} where the
  // fingerprint is the FNV-1a hash (§0) of JSON [text, controls, structure], or {probeError}.
  // The highlight overlay is left out of all three parts.
  const OVERLAY_ID = 'playwright-highlight-container';
  try {
    const body = document.body;
    const overlay = document.getElementById(OVERLAY_ID);
    let text = '';
    if (body) {
      // Labels of the overlay would show up in innerText: hide it for the read.
      const shown = overlay !== null && overlay.style.display !== 'none';
      const previous = shown ? overlay.style.display : null;
      if (shown) overlay.style.display = 'none';
      try {
        text = String(body.innerText || '');
      } finally {
        if (shown) overlay.style.display = previous;
      }
    }
    const controls = [];
    for (const el of document.querySelectorAll('input, textarea, select')) {
      if (overlay !== null && overlay.contains(el)) continue;
      const password = el.localName === 'input' && String(el.type).toLowerCase() === 'password';
      controls.push([password ? '[redacted]' : el.value, el.checked, el.disabled, el.readOnly]);
    }
    const structure = [];
    if (body) {
      const all = body.getElementsByTagName('*');
      for (let i = 0; i < all.length; i++) {
        const el = all[i];
        if (el === overlay) {
          // The overlay's descendants follow it contiguously in document order.
          i += overlay.getElementsByTagName('*').length;
          continue;
        }
        const c = el.className;
        const cls = typeof c === 'string' ? c : (c && typeof c.baseVal === 'string' ? c.baseVal : '');
        structure.push([el.tagName, cls, el.getAttribute('style'), el.getAttribute('aria-expanded'),
          el.getAttribute('aria-selected'), el.hidden === true]);
      }
    }
    const source = JSON.stringify([text, controls, structure]);
    let h = 2166136261;
    for (let i = 0; i < source.length; i++) {
      h ^= source.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return { textLength: text.length, fingerprint: String(h >>> 0) };
  } catch (e) {
    return { probeError: String((e && e.message) || e) };
  }
}
