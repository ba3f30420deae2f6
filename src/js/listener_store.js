function (listenerCount, max, ...nodes) {
  // Called in the probe's isolated world by Tab::listener_targets with the nodes the browser
  // knows click-like listeners for (the first `listenerCount`) followed by the nodes that carry
  // a framework click trace (React props / Vue invokers, found in the main world). Stores them
  // in two world-global WeakSets that dom_index.js reads: `__mpListen` and `__mpFramework`
  // (JS-PROBES.md §1.7, rules 7b and 7d). The document, its root element and its body are never
  // stored: listeners there are delegation, not a target; nor are nodes of other documents
  // (child frames). Of the listener nodes, the `max` nearest the viewport are kept (a long feed
  // scrolled far down keeps what is in view). Answers the counts stored.
  const listen = new WeakSet();
  const framework = new WeakSet();
  let listeners = 0;
  let traces = 0;
  const vw = window.innerWidth;
  const vh = window.innerHeight;
  // How far a node's box lies from the viewport, in px (0 inside it).
  const distance = (n) => {
    const r = n.getBoundingClientRect();
    const dx = r.right < 0 ? -r.right : r.left > vw ? r.left - vw : 0;
    const dy = r.bottom < 0 ? -r.bottom : r.top > vh ? r.top - vh : 0;
    return dx + dy;
  };
  const listened = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    if (!n || n.nodeType !== 1) continue;
    // Listed with `pierce`, a node may belong to a child frame's document: that frame stores
    // its own.
    if (n.ownerDocument !== document) continue;
    if (n === document.documentElement || n === document.body) continue;
    if (i < listenerCount) {
      listened.push(n);
    } else {
      framework.add(n);
      traces++;
    }
  }
  let kept = listened;
  if (listened.length > max) {
    // Nearest first; a stable sort keeps document order among equals.
    kept = listened.map((n, at) => [distance(n), at, n]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
      .slice(0, max).map((e) => e[2]);
  }
  for (const n of kept) {
    listen.add(n);
    listeners++;
  }
  globalThis.__mpListen = listen;
  globalThis.__mpFramework = framework;
  return { listeners, traces };
}
