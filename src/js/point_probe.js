((args, lib) => {
  // What a real mouse click at a viewport point of this frame will reach, and the page mark
  // before it (mouse_click, JS-PROBES.md §7/§8), joined behind probe_lib.js. `args` = {x, y}
  // in CSS px of this frame's viewport. Answers {hit: summary | null (nothing there, e.g.
  // outside the viewport), inViewport, visibility (document.visibilityState), page: mark}.
  const x = Number(args && args.x);
  const y = Number(args && args.y);
  const vp = lib.viewport();
  const inViewport = x >= 0 && y >= 0 && x < vp.w && y < vp.h;
  const el = inViewport ? lib.deepHit(x, y) : null;
  return lib.ok({
    hit: el ? lib.summary(el) : null,
    inViewport,
    visibility: document.visibilityState,
    page: lib.pageMark(),
  });
})
