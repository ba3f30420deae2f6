function (max) {
  // Called in the page's main world (framework expandos live there) by Tab::listener_targets.
  // Answers the elements (at most `max`) whose React props or Vue invokers hold a click-like
  // handler, but only when the page has a React or Vue root: a React 17+ / Vue 3 build
  // delegates to its root container, so such elements have no listener of their own. On any
  // other page it answers [] after looking at a handful of elements (the root check).
  const found = [];
  try {
    const limit = typeof max === 'number' && max > 0 ? max : 300;
    const CLICKY = /^on(click|dblclick|mousedown|mouseup|pointerdown|pointerup|touchstart)/i;
    const body = document.body;
    if (!body) return found;
    // The root check: body, its children and grandchildren, and the usual mount points.
    const roots = [body, document.documentElement];
    for (let c = body.firstElementChild; c && roots.length < 64; c = c.nextElementSibling) {
      roots.push(c);
      for (let g = c.firstElementChild; g && roots.length < 64; g = g.nextElementSibling) roots.push(g);
    }
    for (const sel of ['#root', '#app', '#__next', '[data-reactroot]', '[data-v-app]']) {
      const el = document.querySelector(sel);
      if (el) roots.push(el);
    }
    let react = false;
    let vue = false;
    for (const el of roots) {
      if (el.hasAttribute('data-reactroot')) react = true;
      if (el.hasAttribute('data-v-app')) vue = true;
      for (const k of Object.keys(el)) {
        if (k.startsWith('__reactContainer$') || k === '_reactRootContainer') react = true;
        else if (k === '__vue_app__' || k === '__vue__') vue = true;
      }
    }
    if (!react && !vue) return found;
    const all = document.getElementsByTagName('*');
    const n = Math.min(all.length, 20000);
    for (let i = 0; i < n && found.length < limit; i++) {
      const el = all[i];
      if (el === body || el === document.documentElement) continue;
      for (const k of Object.keys(el)) {
        let bag = null;
        if (react && k.startsWith('__reactProps$')) bag = el[k];
        else if (vue && k === '_vei') bag = el[k];
        if (!bag || typeof bag !== 'object') continue;
        let hit = false;
        for (const p of Object.keys(bag)) {
          if (CLICKY.test(p) && bag[p]) { hit = true; break; }
        }
        if (hit) { found.push(el); break; }
      }
    }
  } catch (e) {
    // A hostile page (patched Object.keys, throwing getters): no framework targets.
  }
  return found;
}
