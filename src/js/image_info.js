((args, lib) => {
  // The image behind an element (download_image), joined behind probe_lib.js. `args.target`
  // finds the element as every element probe does (lib.locate). Nothing here changes the page.
  // Answers {ok:true, value:{tag, src, alt, naturalWidth, naturalHeight}}: `src` is the
  // element's currentSrc or src (an <img>, <input type=image>, <video poster>, an SVG <image>,
  // else the first url(...) of its computed background-image), '' when it has none.
  // With op 'fetch' it fetches `args.url` from the page (credentials included, for images the
  // browser context cannot load: blob: URLs, service-worker answers) and answers
  // {ok:true, value:{base64, contentType, status}}, or {ok:false, code:'NETWORK_ERROR', msg};
  // at most `args.maxBytes`.
  const opts = args || {};
  if (opts.op === 'fetch') {
    return (async () => {
      try {
        const res = await fetch(opts.url, { credentials: 'include' });
        if (!res.ok) return { ok: false, code: 'NETWORK_ERROR', msg: 'HTTP status ' + res.status };
        const buf = new Uint8Array(await res.arrayBuffer());
        if (buf.length > opts.maxBytes) {
          return { ok: false, code: 'ACTION_FAILED', msg: 'larger than ' + opts.maxBytes + ' bytes' };
        }
        let bin = '';
        for (let i = 0; i < buf.length; i += 0x8000) {
          bin += String.fromCharCode.apply(null, buf.subarray(i, i + 0x8000));
        }
        return { ok: true, value: { base64: btoa(bin), contentType: res.headers.get('content-type') || '', status: res.status } };
      } catch (e) {
        return { ok: false, code: 'NETWORK_ERROR', msg: String(e && e.message || e) };
      }
    })();
  }
  const found = lib.locate(opts.target);
  if (found.failure) return found.failure;
  const el = found.el;
  const tag = el.localName || '';
  let src = '';
  if (typeof el.currentSrc === 'string' && el.currentSrc) src = el.currentSrc;
  else if (typeof el.src === 'string' && el.src) src = el.src;
  else if (tag === 'video' && el.poster) src = el.poster;
  else if (tag === 'image' && el.href && el.href.baseVal) src = new URL(el.href.baseVal, document.baseURI).href;
  else {
    try {
      const bg = getComputedStyle(el).backgroundImage || '';
      const m = /url\(["']?([^"')]+)["']?\)/.exec(bg);
      if (m) src = new URL(m[1], document.baseURI).href;
    } catch (e) { /* no style */ }
  }
  return {
    ok: true,
    value: {
      tag,
      src,
      alt: typeof el.alt === 'string' ? el.alt : (el.getAttribute && el.getAttribute('alt')) || '',
      naturalWidth: typeof el.naturalWidth === 'number' ? el.naturalWidth : null,
      naturalHeight: typeof el.naturalHeight === 'number' ? el.naturalHeight : null,
    },
  };
})
