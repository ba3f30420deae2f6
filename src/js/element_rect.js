(args) => {
  // The box of the first element matching a CSS selector (request_human_input's element image),
  // scrolled to the centre of the viewport first. Never throws: {found:false} when nothing
  // matches, {found:false, error} for an invalid selector.
  let el;
  try {
    el = document.querySelector(args.selector);
  } catch (e) {
    return { found: false, error: String(e && e.message || e) };
  }
  if (!el) return { found: false };
  try { el.scrollIntoView({ block: 'center', inline: 'center' }); } catch (e) { /* detached */ }
  const r = el.getBoundingClientRect();
  return { found: true, tag: el.tagName.toLowerCase(), rect: [r.left, r.top, r.width, r.height] };
}
