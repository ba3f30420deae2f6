(args) => {
  // Hides or shows the highlight overlay around screenshots (JS-PROBES.md §3). Answers the
  // probe envelope: {ok:true, value:{existed, stamp}}.
  //
  // With args.stamp, `stamp` says what the pixels of the viewport depend on, as far as the page
  // can tell: the snapshot watch's document and mutation count, scroll, viewport, focus,
  // selection and the user input seen. Two equal stamps mean the page drew the same thing, so a
  // state read may reuse the capture before it (issue 22). It is null whenever that cannot be
  // told: no snapshot watch yet, a shadow tree seen, an animation running, content that draws
  // by itself (frames, video, canvas, plugins), images or fonts still loading.
  try {
    // Remembered in this (utility) world for the document: an overlay drawn while a screenshot
    // is being taken starts hidden (dom_index.js), and the show after the shot reveals it.
    window.__moonpilotOverlayHidden = !(args && args.show);
    const c = document.getElementById('playwright-highlight-container');
    if (c) c.style.display = args && args.show ? '' : 'none';
    return { ok: true, value: { existed: !!c, stamp: args && args.stamp ? stamp() : null } };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }

  function stamp() {
    const w = window.__dsbSnapshotWatch;
    // Input changes values without a mutation: counted from the first stamp on, so the first
    // stamp of a document answers null.
    let seen = window.__moonpilotStampInput;
    if (!seen || seen.doc !== document) {
      seen = { doc: document, count: 0, ids: new WeakMap(), next: 1 };
      const bump = () => { seen.count += 1; };
      for (const type of ['input', 'change', 'scroll']) {
        document.addEventListener(type, bump, true);
      }
      window.__moonpilotStampInput = seen;
      return null;
    }
    if (!w || w.doc !== document) return null;
    // The watch does not see into shadow trees; a state read's walk marks a document with one.
    if (window.__moonpilotShadowDoc === document) return null;
    if (document.querySelector('iframe, frame, video, canvas, embed, object')) return null;
    if (document.getAnimations().some((a) => a.playState === 'running')) return null;
    if (document.fonts && document.fonts.status !== 'loaded') return null;
    for (const img of document.images) if (!img.complete) return null;
    const id = (node) => {
      if (!node) return 0;
      if (!seen.ids.has(node)) seen.ids.set(node, seen.next++);
      return seen.ids.get(node);
    };
    const focused = document.activeElement;
    const sel = document.getSelection();
    const range = sel && sel.rangeCount ? [id(sel.anchorNode), sel.anchorOffset, id(sel.focusNode), sel.focusOffset] : [];
    const value = focused && typeof focused.value === 'string' ? focused.value.length : -1;
    return [
      w.id, w.count, seen.count, scrollX, scrollY, innerWidth, innerHeight, devicePixelRatio,
      id(focused), value, range.join(','), document.hasFocus(),
    ].join('|');
  }
}
