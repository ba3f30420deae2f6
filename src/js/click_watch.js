(args) => {
  // What an action set going (src/commands/observe.rs), in the page's main world, where its
  // timers, animation frames and requests are. `install` runs as an init script before the
  // page's own scripts (so the timers a page sets from its start are known as its own): it
  // wraps setTimeout, setInterval, requestAnimationFrame (and their cancels), fetch,
  // XMLHttpRequest's send and window.open in Proxies (their names, lengths and sources stay the
  // native ones) and listens for trusted clicks on links and forms with a target. Then:
  //   {op: 'arm', key}: before the action (installing first in a document the init script
  //     missed). Every arm opens a new epoch and observes mutations until its window is over.
  //     Work registered while the page runs code of this epoch (the action's handlers, and what
  //     they scheduled) is the action's; work an older callback schedules (a page that polls)
  //     is not.
  //   {op: 'settle', key, untilMs, graceMs, frames}: answers once the action's work is done
  //     and no mutation happened for `frames` animation frames ({end: 'quiet'}), when a
  //     mutation happened since the call ({end: 'mutated'}: the caller compares the page), or
  //     at `untilMs` after the action's first input event (the arm, if none was seen), up to
  //     `graceMs` later while a timer due by then has not run ({end: 'window'}). Timers due
  //     after `untilMs` cannot change the page inside the window: they are counted
  //     (`laterTimers`), not waited for; `opens` counts what may have opened a tab
  //     (`window.open`, a click on a link or form that targets another browsing context).
  // The state is reachable only through the Proxy of setTimeout and the caller's random key.
  const key = String(args.key);
  // Counts frames from an arm on: for the first three (the action's own events usually span
  // one), then while a `settle` waits, until it answered or 1 s passed since the action's
  // first input event (the arm, if none was seen). Requesting frames any
  // longer would keep the page drawing, and input sent to a drawing page waits for its frames.
  const count = (st) => {
    if (st.counting) return;
    st.counting = true;
    const tick = () => {
      st.frame += 1;
      if (st.mutations !== st.seen) {
        // They happened before this frame, which is the first to show them.
        st.seen = st.mutations;
        st.calmFrom = st.frame - 1;
      }
      if (!st.done && (st.settling || st.frame < 3)
        && performance.now() - (st.actedAt || st.armedAt) < 1000) {
        Reflect.apply(st.native.raf, window, [tick]);
      } else {
        st.counting = false;
        if (!st.settling) st.observer.disconnect();
      }
    };
    Reflect.apply(st.native.raf, window, [tick]);
  };
  const found = (() => {
    try {
      return window.setTimeout[key];
    } catch (e) {
      return undefined;
    }
  })();
  const now = () => performance.now();
  let s = found;
  if (args.op === 'arm' || args.op === 'install') {
    if (!s) {
      const native = {
        setTimeout: window.setTimeout,
        clearTimeout: window.clearTimeout,
        setInterval: window.setInterval,
        clearInterval: window.clearInterval,
        raf: window.requestAnimationFrame,
        caf: window.cancelAnimationFrame,
        fetch: window.fetch,
      };
      s = {
        native,
        epoch: 0,
        armedAt: 0,
        actedAt: 0,
        // The epoch of the callback running now (null: none of ours).
        running: null,
        timers: new Map(),
        frames: new Map(),
        requests: new Set(),
        mutations: 0,
        lastMutation: 0,
        opens: 0,
      };
      const st = s;
      const origin = () => (st.running === null ? st.epoch : st.running);
      const wrapCallback = (fn, epoch, done) => function (...a) {
        const previous = st.running;
        st.running = epoch;
        try {
          done();
          return typeof fn === 'function' ? Reflect.apply(fn, this, a) : undefined;
        } finally {
          st.running = previous;
        }
      };
      const proxy = (target, apply, extra) => new Proxy(target, {
        apply,
        get(t, p, r) {
          if (extra && p === key) return st;
          return Reflect.get(t, p, r);
        },
      });
      window.setTimeout = proxy(native.setTimeout, (t, self, a) => {
        if (typeof a[0] !== 'function') return Reflect.apply(t, self, a);
        const epoch = origin();
        const delay = Math.max(0, Number(a[1]) || 0);
        const entry = { epoch, due: now() + delay };
        let id = 0;
        const cb = wrapCallback(a[0], epoch, () => st.timers.delete(id));
        id = Reflect.apply(t, self, [cb, ...a.slice(1)]);
        st.timers.set(id, entry);
        return id;
      }, true);
      window.setInterval = proxy(native.setInterval, (t, self, a) => {
        if (typeof a[0] !== 'function') return Reflect.apply(t, self, a);
        const epoch = origin();
        const delay = Math.max(0, Number(a[1]) || 0);
        const entry = { epoch, due: now() + delay };
        const cb = wrapCallback(a[0], epoch, () => { entry.due = now() + delay; });
        const id = Reflect.apply(t, self, [cb, ...a.slice(1)]);
        st.timers.set(id, entry);
        return id;
      });
      const clear = (t, self, a) => {
        st.timers.delete(a[0]);
        return Reflect.apply(t, self, a);
      };
      window.clearTimeout = proxy(native.clearTimeout, clear);
      window.clearInterval = proxy(native.clearInterval, clear);
      window.requestAnimationFrame = proxy(native.raf, (t, self, a) => {
        if (typeof a[0] !== 'function') return Reflect.apply(t, self, a);
        const epoch = origin();
        let id = 0;
        const cb = wrapCallback(a[0], epoch, () => st.frames.delete(id));
        id = Reflect.apply(t, self, [cb]);
        st.frames.set(id, epoch);
        return id;
      });
      window.cancelAnimationFrame = proxy(native.caf, (t, self, a) => {
        st.frames.delete(a[0]);
        return Reflect.apply(t, self, a);
      });
      if (typeof native.fetch === 'function') {
        window.fetch = proxy(native.fetch, (t, self, a) => {
          const request = { epoch: origin() };
          st.requests.add(request);
          const p = Reflect.apply(t, self, a);
          const done = () => st.requests.delete(request);
          p.then(done, done);
          return p;
        });
      }
      if (typeof XMLHttpRequest === 'function') {
        const proto = XMLHttpRequest.prototype;
        const send = proto.send;
        proto.send = proxy(send, (t, self, a) => {
          const request = { epoch: origin() };
          st.requests.add(request);
          const done = () => st.requests.delete(request);
          try {
            self.addEventListener('loadend', done, { once: true });
            return Reflect.apply(t, self, a);
          } catch (e) {
            done();
            throw e;
          }
        });
      }
      // What may open a tab: `window.open` called by the action's code, or a click on a link
      // or a form control that targets another browsing context (the browser opens it after
      // the click, on its own).
      if (typeof window.open === 'function') {
        window.open = proxy(window.open, (t, self, a) => {
          if (origin() === st.epoch) st.opens += 1;
          return Reflect.apply(t, self, a);
        });
      }
      // The window is measured from the action's first input event after the arm, not from
      // the arm: on a loaded machine the input can reach the page a long while after it.
      const acted = () => {
        if (st.armedAt > 0 && st.actedAt === 0) st.actedAt = now();
      };
      for (const type of ['pointerdown', 'mousedown', 'keydown', 'beforeinput', 'touchstart', 'click']) {
        window.addEventListener(type, acted, true);
      }
      window.addEventListener('click', (e) => {
        const el = e.target;
        if (!e.isTrusted || !el || typeof el.closest !== 'function') return;
        const link = el.closest('a[target], area[target]');
        const submitter = el.closest('button, input');
        const form = submitter && submitter.form;
        const named = (t) => t && !['_self', '_parent', '_top'].includes(t.toLowerCase());
        if ((link && named(link.getAttribute('target')))
          || (submitter && named(submitter.getAttribute('formtarget') || (form && form.getAttribute('target'))))) {
          st.opens += 1;
        }
      }, true);
      // Mutations are watched only from an arm until its window is over: a page that builds a
      // large document pays nothing for the watch otherwise.
      st.observer = new MutationObserver(() => {
        st.mutations += 1;
        st.lastMutation = now();
      });
    }
    if (args.op === 'install') return { ok: true, value: { epoch: s.epoch } };
    s.epoch += 1;
    s.armedAt = now();
    s.actedAt = 0;
    s.opens = 0;
    s.observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    // Frames are counted from the arm on (for `settle`'s "no mutation for N frames": the
    // action's own events usually span one), until the window is over.
    s.frame = 0;
    s.calmFrom = 0;
    s.done = false;
    s.settling = false;
    s.seen = s.mutations;
    count(s);
    return { ok: true, value: { epoch: s.epoch } };
  }
  if (args.op !== 'settle') return { ok: false, code: 'INVALID_ARGUMENT', msg: 'unknown op' };
  if (!s) return { ok: false, code: 'PROBE_FAILED', msg: 'not armed in this document' };
  const st = s;
  if (!st.counting && !st.done) {
    // The count stopped before this call (the action's events took more than three frames):
    // mutations since then went unseen, so the page's calm is counted afresh from now.
    st.observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    st.calmFrom = st.frame;
  }
  st.settling = true;
  count(st);
  const until = (st.actedAt || st.armedAt) + Math.max(0, Number(args.untilMs) || 0);
  // A timer due inside the window that has not run by its end is late because the page (or the
  // machine) is busy, not set for later: it is waited for this much longer.
  const grace = Math.max(0, Number(args.graceMs) || 0);
  const quietFrames = Math.max(1, Number(args.frames) || 2);
  const startMutations = st.mutations;
  const pending = () => {
    let timers = 0;
    let later = 0;
    for (const t of st.timers.values()) {
      if (t.epoch !== st.epoch) continue;
      if (t.due <= until) timers += 1;
      else later += 1;
    }
    let frames = 0;
    for (const e of st.frames.values()) if (e === st.epoch) frames += 1;
    let requests = 0;
    for (const r of st.requests) if (r.epoch === st.epoch) requests += 1;
    return { timers, frames, requests, later };
  };
  // A hidden page runs no animation frames: there, 16 ms stand for one.
  const visible = document.visibilityState === 'visible';
  const hiddenSince = now();
  return new Promise((resolve) => {
    let seenHidden = st.mutations;
    let calmHidden = 0;
    const tick = () => {
      const p = pending();
      const answer = (end) => {
        // After 'mutated' the caller compares the page and asks again: frames still count.
        st.done = end !== 'mutated';
        if (st.done) {
          st.settling = false;
          st.observer.disconnect();
        }
        resolve({ ok: true, value: {
          end, timers: p.timers, frames: p.frames, requests: p.requests, laterTimers: p.later,
          opens: st.opens,
          elapsedMs: Math.round(now() - st.armedAt) } });
      };
      if (st.mutations !== startMutations) return answer('mutated');
      if (now() >= until && (p.timers === 0 || now() >= until + grace)) return answer('window');
      let calm;
      if (visible) {
        // Mutations the frame counter has not seen yet happened in this frame.
        calm = st.mutations === st.seen ? st.frame - st.calmFrom : 0;
      } else {
        calmHidden = st.mutations === seenHidden && now() > hiddenSince ? calmHidden + 1 : 0;
        seenHidden = st.mutations;
        calm = calmHidden;
      }
      if (p.timers === 0 && p.frames === 0 && p.requests === 0 && calm >= quietFrames) {
        return answer('quiet');
      }
      if (visible) Reflect.apply(st.native.raf, window, [tick]);
      else Reflect.apply(st.native.setTimeout, window, [tick, 16]);
    };
    tick();
  });
}
