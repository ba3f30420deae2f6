((probe) => {
  'use strict'; // `this` reaches the probe as given (undefined or a primitive stays one).
  // Joined around every function probe at compile time (src/js/mod.rs): answers the probe's
  // result (or what its promise resolves to) with every string made well-formed. A lone
  // surrogate — half of an emoji left by a cut, or put there by a hostile page — would travel
  // as an unpaired `\uD83D` escape that a strict JSON reader refuses, losing the whole answer
  // (the call then looks unanswered). It becomes U+FFFD instead. Objects are fixed in place,
  // keys included; nesting deeper than 64 levels is left as it is.
  const fix = (v, depth) => {
    if (typeof v === 'string') return v.isWellFormed() ? v : v.toWellFormed();
    if (v === null || typeof v !== 'object' || depth > 64) return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const f = fix(v[i], depth + 1);
        if (f !== v[i]) v[i] = f;
      }
      return v;
    }
    for (const k of Object.keys(v)) {
      const f = fix(v[k], depth + 1);
      if (!k.isWellFormed()) {
        delete v[k];
        v[k.toWellFormed()] = f;
      } else if (f !== v[k]) {
        v[k] = f;
      }
    }
    return v;
  };
  return function (...args) {
    const r = probe.apply(this, args);
    return r !== null && typeof r === 'object' && typeof r.then === 'function'
      ? r.then((x) => fix(x, 0))
      : fix(r, 0);
  };
})
