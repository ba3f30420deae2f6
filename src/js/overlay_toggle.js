(args) => {
  // Hides or shows the highlight overlay around screenshots (JS-PROBES.md §3). Answers the
  // probe envelope: {ok:true, value:{existed}}.
  try {
    // Remembered in this (utility) world for the document: an overlay drawn while a screenshot
    // is being taken starts hidden (dom_index.js), and the show after the shot reveals it.
    window.__moonpilotOverlayHidden = !(args && args.show);
    const c = document.getElementById('playwright-highlight-container');
    if (!c) return { ok: true, value: { existed: false } };
    c.style.display = args && args.show ? '' : 'none';
    return { ok: true, value: { existed: true } };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
}
