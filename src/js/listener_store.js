function (listenerCount, ...nodes) {
  // Called in the probe's isolated world by Tab::listener_targets with the nodes the browser
  // knows click-like listeners for (the first `listenerCount`) followed by the nodes that carry
  // a framework click trace (React props / Vue invokers, found in the main world). Stores them
  // in two world-global WeakSets that dom_index.js reads: `__mpListen` and `__mpFramework`
  // (JS-PROBES.md §1.7, rules 7b and 7d). The document, its root element and its body are never
  // stored: listeners there are delegation, not a target; nor are nodes of other documents
  // (child frames). Answers the counts stored.
  const listen = new WeakSet();
  const framework = new WeakSet();
  let listeners = 0;
  let traces = 0;
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    if (!n || n.nodeType !== 1) continue;
    // Listed with `pierce`, a node may belong to a child frame's document: that frame stores
    // its own.
    if (n.ownerDocument !== document) continue;
    if (n === document.documentElement || n === document.body) continue;
    if (i < listenerCount) {
      listen.add(n);
      listeners++;
    } else {
      framework.add(n);
      traces++;
    }
  }
  globalThis.__mpListen = listen;
  globalThis.__mpFramework = framework;
  return { listeners, traces };
}
