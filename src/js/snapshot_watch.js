(args) => {
  // Snapshot consistency stamp (JS-PROBES.md §5): a document identity plus mutation counters
  // kept by one observer under window.__dsbSnapshotWatch, installed lazily and reinstalled when
  // the document changed. Returns {documentId, mutations, structuralMutations, contentMutations,
  // lastMutation, url, readyState} in the probe envelope ({ok:true, value} or {ok:false, code,
  // msg}).
  const KEY = '__dsbSnapshotWatch';
  const OVERLAY_ID = 'playwright-highlight-container';
  try {
    let w = window[KEY];
    if (!w || w.doc !== document) {
      if (w && w.observer) {
        try { w.observer.disconnect(); } catch (e) { /* The old document is gone anyway. */ }
      }
      const origin = (performance && performance.timeOrigin) || Date.now();
      w = {
        doc: document,
        id: String(origin) + ':' + Math.random().toString(36).slice(2, 12),
        count: 0,
        structural: 0,
        content: 0,
        last: null,
        observer: null,
        scratch: null,
      };
      const inOverlay = (node) => {
        const el = node && node.nodeType === 1 ? node : node && node.parentElement;
        return !!(el && el.closest && el.closest('#' + OVERLAY_ID));
      };
      const isOverlayNode = (n) => n && n.nodeType === 1 && n.id === OVERLAY_ID;
      // Style text with caret-color removed, normalised by the CSS parser (screenshots toggle
      // the caret colour and must not count as a change).
      const styleKey = (text) => {
        if (!w.scratch) w.scratch = document.createElement('div');
        const st = w.scratch.style;
        st.cssText = text || '';
        st.removeProperty('caret-color');
        return st.cssText;
      };
      const record = (m) => {
        if (inOverlay(m.target)) return;
        if (m.type === 'attributes' && m.attributeName === 'style' && m.target.nodeType === 1) {
          if (styleKey(m.oldValue) === styleKey(m.target.getAttribute('style'))) return;
        }
        let structural = false;
        if (m.type === 'childList') {
          const nodes = [...m.addedNodes, ...m.removedNodes];
          if (nodes.length > 0 && nodes.every(isOverlayNode)) return;
          structural = nodes.some((n) => n.nodeType === 1);
        }
        w.count += 1;
        if (structural) w.structural += 1; else w.content += 1;
        const target = m.target.nodeType === 1 ? m.target : m.target.parentElement;
        w.last = {
          type: m.type,
          tag: target && target.tagName ? target.tagName.toLowerCase() : null,
          attribute: m.attributeName || null,
        };
      };
      const observer = new MutationObserver((list) => {
        for (const m of list) {
          try { record(m); } catch (e) { /* One odd record must not stop the counting. */ }
        }
      });
      observer.observe(document, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeOldValue: true,
        characterData: true,
      });
      w.observer = observer;
      w.record = record;
      Object.defineProperty(window, KEY, { value: w, configurable: true, writable: true, enumerable: false });
    }
    // Records not delivered yet (the observer callback runs at the next microtask checkpoint)
    // are counted now, so the stamp reflects every mutation made before this call.
    for (const m of w.observer.takeRecords()) {
      try { w.record(m); } catch (e) { /* Same as in the observer callback. */ }
    }
    return {
      ok: true,
      value: {
        documentId: w.id,
        mutations: w.count,
        structuralMutations: w.structural,
        contentMutations: w.content,
        lastMutation: w.last,
        url: String(location.href),
        readyState: document.readyState,
      },
    };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
}
