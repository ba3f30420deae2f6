async function (arg) {
  'use strict';
  // Runs a caller's `execute_js` script and serialises its result in the page, in one call: the
  // value is read once, by value, before the call returns, so a navigation the script starts cannot
  // take the value with the old document.
  //
  // Called on the prepared script (`this`). With `arg.call` it is a function: it is called and
  // awaited first; otherwise `this` is the value itself. Answers {value, notes, more, navigation}:
  // - `value` is what JSON.stringify would make of the result (toJSON is honoured, so a Date is its
  //   ISO string and a URL its href), except that nothing is lost silently: values JSON cannot
  //   hold (Map, Set, BigInt, typed arrays, functions, symbols, cycles, undefined, NaN, -0) are
  //   converted or dropped and each such place gets a note {path, type, as};
  // - `notes` holds the first `arg.maxNotes` notes and `more` counts the rest;
  // - `navigation` is the last navigation the script started while it ran ({url, navigationType,
  //   sameDocument}, from the Navigation API's `navigate` event), or null.
  // DOM nodes become "ref:<description>" strings, as CDP describes them (`div#id.class`).
  //
  // It runs in the page's own world, where the value lives; it avoids the helpers that pages
  // replace most (Array.prototype.push/map, JSON).
  const api = globalThis.navigation;
  const watching = !!api && typeof api.addEventListener === 'function';
  let navigation = null;
  const onNavigate = (event) => {
    navigation = {
      url: String(event.destination.url),
      navigationType: String(event.navigationType),
      sameDocument: event.destination.sameDocument === true,
    };
  };
  if (watching) api.addEventListener('navigate', onNavigate);
  let result;
  try {
    result = arg.call ? await this() : this;
  } finally {
    if (watching) api.removeEventListener('navigate', onNavigate);
  }

  const notes = [];
  let more = 0;
  const note = (path, type, as) => {
    if (notes.length < arg.maxNotes) notes[notes.length] = { path, type, as };
    else more += 1;
  };
  const objectToString = Object.prototype.toString;
  const tagOf = (v) => objectToString.call(v).slice(8, -1);
  const pathOf = (path, key) =>
    /^[A-Za-z_$][\w$]*$/.test(key)
      ? path + '.' + key
      : path + '["' + String(key).replace(/["\\]/g, '\\$&') + '"]';
  const put = (obj, key, value) =>
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  const describe = (node) => {
    if (node.nodeType !== 1) return String(node.nodeName);
    let text = String(node.localName || node.nodeName).toLowerCase();
    if (node.id) text += '#' + node.id;
    const classes = String(node.getAttribute('class') || '').trim();
    if (classes) text += '.' + classes.replace(/\s+/g, '.');
    return text;
  };
  const numbers = (list, path, type) => {
    const out = [];
    let lossy = false;
    for (let i = 0; i < list.length; i++) {
      const x = list[i];
      if (typeof x === 'bigint') out[i] = x.toString();
      else if (Number.isFinite(x)) out[i] = x;
      else { out[i] = null; lossy = true; }
    }
    const what = list.length && typeof list[0] === 'bigint' ? 'decimal strings' : 'numbers';
    note(path, type, 'an array of its ' + what + (lossy ? ' (NaN and Infinity as null)' : ''));
    return out;
  };

  // JSON.stringify's SerializeJSONProperty. MISSING stands for "no JSON value" (undefined, a
  // function, a symbol): an object drops the property, an array and the top level write null.
  const MISSING = {};
  let missingType = '';
  const ancestors = [];
  const serialize = (key, v, path) => {
    if ((typeof v === 'object' && v !== null) || typeof v === 'bigint') {
      let toJSON;
      try { toJSON = v.toJSON; } catch (e) { toJSON = undefined; }
      if (typeof toJSON === 'function') {
        try {
          v = toJSON.call(v, key);
        } catch (e) {
          note(path, tagOf(v), 'null (its toJSON threw)');
          return null;
        }
      }
    }
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        if (v === 0 && 1 / v < 0) {
          note(path, '-0', '0');
          return 0;
        }
        if (Number.isFinite(v)) return v;
        note(path, String(v), 'null');
        return null;
      case 'bigint':
        note(path, 'BigInt', 'its decimal string');
        return v.toString();
      case 'undefined':
      case 'function':
      case 'symbol':
        missingType = typeof v;
        return MISSING;
    }
    if (v === null) return null;
    if (ancestors.indexOf(v) !== -1) {
      note(path, 'cycle', 'null (a reference to a value that contains it)');
      return null;
    }
    const tag = tagOf(v);
    if (tag === 'Number' || tag === 'String' || tag === 'Boolean' || tag === 'BigInt') {
      return serialize(key, v.valueOf(), path);
    }
    if (typeof Node === 'function' && v instanceof Node) return 'ref:' + describe(v);
    if (v === globalThis || tag === 'Window') {
      note(path, 'Window', 'the string "ref:Window"');
      return 'ref:Window';
    }
    ancestors[ancestors.length] = v;
    try {
      if (Array.isArray(v)) {
        const out = [];
        for (let i = 0; i < v.length; i++) {
          const item = serialize(String(i), v[i], path + '[' + i + ']');
          if (item === MISSING) note(path + '[' + i + ']', missingType, 'null');
          out[i] = item === MISSING ? null : item;
        }
        return out;
      }
      if (ArrayBuffer.isView(v)) {
        if (tag === 'DataView') {
          return numbers(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), path, 'DataView');
        }
        return numbers(v, path, tag);
      }
      if (tag === 'ArrayBuffer' || tag === 'SharedArrayBuffer') {
        return numbers(new Uint8Array(v), path, tag);
      }
      if (tag === 'Map') {
        const entries = [];
        let stringKeys = true;
        v.forEach((value, k) => {
          entries[entries.length] = [k, value];
          if (typeof k !== 'string') stringKeys = false;
        });
        if (stringKeys) {
          note(path, 'Map', 'an object of its entries');
          const out = {};
          for (let i = 0; i < entries.length; i++) {
            const k = entries[i][0];
            const value = entries[i][1];
            const item = serialize(k, value, pathOf(path, k));
            if (item === MISSING) note(pathOf(path, k), missingType, 'dropped');
            else put(out, k, item);
          }
          return out;
        }
        note(path, 'Map', 'an array of [key, value] pairs');
        const out = [];
        for (let i = 0; i < entries.length; i++) {
          const pair = [];
          for (let j = 0; j < 2; j++) {
            const at = path + '[' + i + '][' + j + ']';
            const item = serialize(String(j), entries[i][j], at);
            if (item === MISSING) note(at, missingType, 'null');
            pair[j] = item === MISSING ? null : item;
          }
          out[i] = pair;
        }
        return out;
      }
      if (tag === 'Set') {
        note(path, 'Set', 'an array of its values');
        const out = [];
        v.forEach((value) => {
          const at = path + '[' + out.length + ']';
          const item = serialize(String(out.length), value, at);
          if (item === MISSING) note(at, missingType, 'null');
          out[out.length] = item === MISSING ? null : item;
        });
        return out;
      }
      if (tag === 'Error') {
        note(path, 'Error', '{name, message}');
        return { name: String(v.name), message: String(v.message) };
      }
      if (tag === 'RegExp') {
        note(path, 'RegExp', 'its source text');
        return String(v);
      }
      const out = {};
      const keys = Object.keys(v);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        let value;
        try {
          value = v[k];
        } catch (e) {
          note(pathOf(path, k), 'getter', 'dropped (reading it threw)');
          continue;
        }
        const item = serialize(k, value, pathOf(path, k));
        if (item === MISSING) note(pathOf(path, k), missingType, 'dropped');
        else put(out, k, item);
      }
      const proto = Object.getPrototypeOf(v);
      if (keys.length === 0 && proto !== null && proto !== Object.prototype) {
        // A Promise, a WeakMap or a class instance with private state: JSON sees nothing.
        note(path, tag === 'Object' && proto.constructor ? String(proto.constructor.name) : tag,
          '{} (it has no enumerable properties)');
      }
      return out;
    } finally {
      ancestors.length -= 1;
    }
  };

  let value = serialize('', result, '$');
  if (value === MISSING) {
    note('$', missingType, 'null');
    value = null;
  }
  return { value, notes, more, navigation };
}
