((args, lib) => {
  // Interaction fingerprint, page part (JS-PROBES.md §7), joined behind probe_lib.js: answers
  // the page mark {url, textLength, fingerprint}, or {url, probeError} when the document could
  // not be read (the caller then treats the observation as untrustworthy). `args` is unused.
  void args;
  return lib.ok(lib.pageMark());
})
