function () {
  // `this` is an <iframe>/<frame> element; the answer is the origin of its content box in the
  // viewport of the document that holds it, in CSS pixels: {ok:true, value:{x, y}}.
  try {
    const r = this.getBoundingClientRect();
    const cs = getComputedStyle(this);
    const px = (v) => parseFloat(v) || 0;
    return {
      ok: true,
      value: {
        x: r.left + this.clientLeft + px(cs.paddingLeft),
        y: r.top + this.clientTop + px(cs.paddingTop),
      },
    };
  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
}
