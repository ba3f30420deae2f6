(args) => {
  // Whether `args.zone` is a time zone this browser knows (start{timezone}): Chromium's own
  // override takes an unknown id without a word, Intl throws a RangeError for it.
  try {
    new Intl.DateTimeFormat('en', { timeZone: String(args && args.zone) });
    return { ok: true, value: true };
  } catch (e) {
    return { ok: true, value: false };
  }
}
