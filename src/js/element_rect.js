(args) => {
  // The box of the first element matching a CSS selector (request_human_input's element image),
  // scrolled to the centre of the viewport first. Never throws; answers the probe envelope:
  // {ok:true, value:{tag, rect}} or {ok:false, code:'ELEMENT_NOT_FOUND', msg} when nothing
  // matches or the selector is invalid.
  let el;
  try {
    el = document.querySelector(args.selector);
  } catch (e) {
    return {
      ok: false,
      code: 'ELEMENT_NOT_FOUND',
      msg: 'no element matches selector `' + args.selector + '`: ' + String(e && e.message || e),
    };
  }
  if (!el) {
    return { ok: false, code: 'ELEMENT_NOT_FOUND', msg: 'no element matches selector `' + args.selector + '`' };
  }
  try { el.scrollIntoView({ block: 'center', inline: 'center' }); } catch (e) { /* detached */ }
  const r = el.getBoundingClientRect();
  return { ok: true, value: { tag: el.tagName.toLowerCase(), rect: [r.left, r.top, r.width, r.height] } };
}
