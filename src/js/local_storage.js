(args) => {
  let store;
  try {
    store = window.localStorage;
  } catch (e) {
    return { ok: false, code: 'ACTION_FAILED', msg: 'localStorage is not available on ' + location.origin + ': ' + e.message };
  }
  if (!store) {
    return { ok: false, code: 'ACTION_FAILED', msg: 'localStorage is not available on ' + location.origin };
  }
  const all = () => {
    const items = {};
    for (let i = 0; i < store.length; i++) {
      const k = store.key(i);
      items[k] = store.getItem(k);
    }
    return items;
  };
  try {
    if (args.op === 'get') {
      if (args.key === null || args.key === undefined) {
        return { ok: true, value: { value: JSON.stringify(all()), count: store.length, origin: location.origin } };
      }
      return { ok: true, value: { value: store.getItem(args.key), count: store.length, origin: location.origin } };
    }
    if (args.op === 'set') {
      const previous = store.getItem(args.key);
      store.setItem(args.key, args.value);
      return { ok: true, value: { value: store.getItem(args.key), previous: previous, count: store.length, origin: location.origin } };
    }
    if (args.op === 'clear') {
      const cleared = store.length;
      store.clear();
      return { ok: true, value: { cleared: cleared, count: store.length, origin: location.origin } };
    }
    return { ok: false, code: 'INVALID_ARGUMENT', msg: 'unknown local storage op' };
  } catch (e) {
    return { ok: false, code: 'ACTION_FAILED', msg: 'localStorage on ' + location.origin + ': ' + e.message };
  }
}
