function () {
  // `this` is an <iframe>/<frame> element; the answer is the origin of its content box in the
  // viewport of the document that holds it, in CSS pixels.
  try {
    const r = this.getBoundingClientRect();
    const cs = getComputedStyle(this);
    const px = (v) => parseFloat(v) || 0;
    return {
      ok: true,
      x: r.left + this.clientLeft + px(cs.paddingLeft),
      y: r.top + this.clientTop + px(cs.paddingTop),
    };
  } catch (e) {
    return { ok: false, msg: String(e) };
  }
}
