((args, lib) => {
  // DOM index builder (JS-PROBES.md §1), highlight overlay (§3) and media hint (§15), joined
  // behind probe_lib.js (the accessible names and field errors of the control lines).
  //
  // Output `value`: {root_xpath, tree, pixels_above, pixels_below, viewport_height, page_height,
  // media?, above?, below?, behind?, time_up, text_cut, text_dropped}. `above`/`below`
  // ({px, count, capped}, viewport mode only) count the interactive elements beyond the
  // viewport; `behind` ({count, what: 'dialog'|'overlay'}) the covered candidates whose cover
  // is a dialog or a page-wide overlay. `tree` is the JSON text of a flat, pruned pre-order
  // list (flat so that no JSON nesting limit is hit on deep pages):
  //   element: [depth, tag, seg, flags, index, attrs|null, extra]
  //     depth  0 for the root (body), +1 per level; shadow-root children sit under their host;
  //     seg    1-based position among same-tag siblings, 0 when the tag is unique there;
  //     flags  1 visible, 2 top-most (decided only where it changes the output), 4 child
  //            of the parent's shadow root, 16 covered (a candidate in the viewport whose hit
  //            test reached another element; its attrs carry `covered-by`);
  //     index  highlight index or -1; attrs/extra are omitted when not needed;
  //     attrs  whitelisted and live attributes (only for elements that render a line);
  //     extra  [id|null, name|null, [l, t, w, h], reason] (only for indexed elements); reason
  //            is why it was indexed (isInteractive: native, role, cursor, ...).
  //   text:    [depth, trimmedText]
  // Locators are rebuilt from `root_xpath` + seg chain; shadow content uses `/#shadow-root/`.
  //
  // Budgets (arguments; absent or <= 0 means none), so that the reader never outlives its
  // command and never ships more than it may:
  //   budgetMs      wall time for the walk: once it is spent the walk stops where it is (the
  //                 elements indexed so far stay correct, nothing after them is visited) and
  //                 `time_up` is true. Checked before every hit test (they cost up to hundreds
  //                 of ms on pathological pages: one line of 10,000 links) and every 64 nodes.
  //   maxTextChars  total characters of text entries: text past it is not read (a text node is
  //                 cut with substringData, never copied whole); `text_cut` says so and
  //                 `text_dropped` counts the characters left out (whitespace included).
  //   maxAttrChars  cap per attribute value (an input holding megabytes), `...` marks a cut.
  const OVERLAY_ID = 'playwright-highlight-container';
  const LABEL_CLASS = 'playwright-highlight-label';
  try {
    const opts = args || {};
    const doHighlight = opts.doHighlightElements !== false;
    const focusIndex = Number.isInteger(opts.focusHighlightIndex) ? opts.focusHighlightIndex : -1;
    const rawExp = Number(opts.viewportExpansion);
    const exp = Number.isFinite(rawExp) ? Math.trunc(rawExp) : 0;
    const allViewport = exp < 0;
    let nextIndex = Number.isInteger(opts.highlightIndexStart) && opts.highlightIndexStart > 0
      ? opts.highlightIndexStart : 0;
    const positive = (v) => (typeof v === 'number' && v > 0 ? v : Infinity);
    const deadline = performance.now() + positive(opts.budgetMs);
    let timeUp = false;
    let ticks = 0;
    // True once the budget is spent; the clock is read every 64th question (cheap, but not free).
    const outOfTime = (always) => {
      if (timeUp) return true;
      if (!always && (++ticks & 63) !== 0) return false;
      if (performance.now() > deadline) timeUp = true;
      return timeUp;
    };
    let textLeft = positive(opts.maxTextChars);
    let textCut = false;
    let textDropped = 0;
    const maxAttr = positive(opts.maxAttrChars);
    const capAttr = (v) => (v.length > maxAttr ? v.slice(0, maxAttr) + '...' : v);
    // The trimmed text of text node `n` within the text budget, or '' (nothing to output).
    const takeText = (n) => {
      const len = n.length;
      if (len === 0) return '';
      if (textLeft <= 0) {
        textCut = true;
        textDropped += len;
        return '';
      }
      // A little more than what is left, so that trimming still leaves enough.
      const raw = len > textLeft + 256 ? n.substringData(0, textLeft + 256) : n.nodeValue;
      let text = raw.trim();
      if (text.length > textLeft) {
        textCut = true;
        textDropped += len - textLeft;
        text = text.slice(0, textLeft);
      } else if (raw.length < len) {
        textCut = true;
        textDropped += len - raw.length;
      }
      textLeft -= text.length;
      return text;
    };

    // Remove the previous overlay of this document first, so boxes never accumulate and stale
    // numbers never survive a new snapshot.
    const cleanups = window._highlightCleanupFunctions;
    if (Array.isArray(cleanups)) {
      for (const fn of cleanups.splice(0, cleanups.length)) {
        try { fn(); } catch (e) { /* A broken cleanup must not stop the snapshot. */ }
      }
    }
    // The container is emptied before it is removed: removing a filled overlay makes the next
    // hit test much slower on big pages.
    const stale = document.getElementById(OVERLAY_ID);
    if (stale) {
      stale.textContent = '';
      stale.remove();
    }

    const REJECT = new Set(['svg', 'script', 'style', 'link', 'meta', 'noscript', 'template']);
    const LINE_TAGS = new Set(['input', 'textarea', 'select', 'option', 'button']);
    const INTERACTIVE_CURSORS = new Set(['pointer', 'move', 'text', 'grab', 'grabbing', 'cell',
      'copy', 'alias', 'all-scroll', 'col-resize', 'context-menu', 'crosshair', 'e-resize',
      'ew-resize', 'help', 'n-resize', 'ne-resize', 'nesw-resize', 'ns-resize', 'nw-resize',
      'nwse-resize', 'row-resize', 's-resize', 'se-resize', 'sw-resize', 'vertical-text',
      'w-resize', 'zoom-in', 'zoom-out']);
    const NON_INTERACTIVE_CURSORS = new Set(['not-allowed', 'no-drop', 'wait', 'progress',
      'initial', 'inherit']);
    // Not `details` (its summary is what a person clicks; the rest of a closed one is hidden)
    // and not `label` (a label speaks on its control's line; see `quiet` and `forHidden`).
    const NATIVE = new Set(['a', 'button', 'input', 'select', 'textarea', 'summary',
      'option', 'optgroup', 'fieldset', 'legend']);
    const ROLES = new Set(['button', 'menuitemradio', 'menuitemcheckbox', 'radio', 'checkbox',
      'tab', 'switch', 'slider', 'spinbutton', 'combobox', 'searchbox', 'textbox', 'option',
      'scrollbar']);
    const DISTINCT_TAGS = new Set(['iframe', 'a', 'button', 'input', 'select', 'textarea',
      'summary', 'details', 'label', 'option']);
    const DISTINCT_ROLES = new Set(['button', 'link', 'menuitem', 'menuitemradio',
      'menuitemcheckbox', 'radio', 'checkbox', 'tab', 'switch', 'slider', 'spinbutton',
      'combobox', 'searchbox', 'textbox', 'listbox', 'option', 'scrollbar']);
    const MOUSE_HANDLERS = ['onclick', 'onmousedown', 'onmouseup', 'ondblclick'];
    const OTHER_HANDLERS = ['onmousedown', 'onmouseup', 'onkeydown', 'onkeyup', 'onsubmit',
      'onchange', 'oninput', 'onfocus', 'onblur'];
    const CANDIDATE_TAGS = new Set(['a', 'button', 'input', 'select', 'textarea', 'details',
      'summary', 'label']);
    // §2.2 (moonpilot): the attributes copied as the page wrote them. The live ones (label,
    // value, href, checked, selected, expanded, required, invalid, readonly, disabled, for) are
    // computed in captureAttrs; the renderer orders them all.
    const PLAIN = new Set(['type', 'role', 'placeholder', 'alt', 'title', 'data-state',
      'data-date-format', 'name']);
    const HEADING = /^h[1-6]$/;
    // Roles whose name is not their content: their line carries `label`.
    const NAMED_ROLES = new Set(['textbox', 'searchbox', 'combobox', 'slider', 'spinbutton',
      'listbox', 'scrollbar', 'switch', 'checkbox', 'radio']);
    const HAS_WORD = /[\p{L}\p{N}]/u;
    const FORM_CONTROLS = new Set(['input', 'textarea', 'select', 'button', 'fieldset',
      'optgroup', 'option']);
    const NO_TYPING = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'file',
      'hidden', 'image', 'color', 'range']);
    const KNOWN_CONTAINER = 'button,a,[role="button"],.menu,.dropdown,.list,.toolbar';
    const HEURISTIC_CLASS = /\b(btn|clickable|menu|item|entry|link)\b/i;

    const vw = window.innerWidth;
    const vh = window.innerHeight;
    const outside = (r) => r.bottom < -exp || r.top > vh + exp || r.right < -exp || r.left > vw + exp;
    const out = [];
    const toDraw = [];

    const isVisibleElement = (el) => {
      if (!(el.offsetWidth > 0 && el.offsetHeight > 0)) return false;
      const s = getComputedStyle(el);
      return s.visibility !== 'hidden' && s.display !== 'none';
    };

    // §1.6: the element owns the point at the centre of its middle client rect. `hitOf` answers
    // null when it does (top-most), the element found there when another element covers it, and
    // NO_HIT when that cannot be told (no box in the viewport, nothing at the point, out of time:
    // no more hit tests, so no more indices; those given stay correct).
    const NO_HIT = false;
    // Whether the element hit at (x, y) is `el` or inside it (null when nothing is there).
    const hitAt = (scope, stop, el, x, y) => {
      const hit = scope.elementFromPoint(x, y);
      if (!hit) return null;
      for (let cur = hit; cur && cur !== stop; cur = cur.parentElement) {
        if (cur === el) return true;
      }
      return hit;
    };
    // Where else a person could click `el` when its centre is covered (a badge, a partial
    // cover): points of its middle rect, inset from the edges. Only tried for covered
    // candidates, so a page without covers pays nothing.
    const SPOTS = [[0.5, 0.2], [0.5, 0.8], [0.2, 0.5], [0.8, 0.5], [0.2, 0.2], [0.8, 0.2],
      [0.2, 0.8], [0.8, 0.8]];
    const hitAround = (scope, stop, el, mid, centre) => {
      for (const [fx, fy] of SPOTS) {
        const x = mid.left + mid.width * fx;
        const y = mid.top + mid.height * fy;
        if (x < 0 || y < 0 || x >= vw || y >= vh) continue;
        if (hitAt(scope, stop, el, x, y) === true) return null;
      }
      return centre;
    };
    const hitOf = (el, root) => {
      if (allViewport) return wholePageHit(el, root);
      if (outOfTime(true)) return NO_HIT;
      const rects = el.getClientRects();
      let any = false;
      for (let i = 0; i < rects.length; i++) {
        const r = rects[i];
        if (r.width > 0 && r.height > 0 && !outside(r)) { any = true; break; }
      }
      if (!any) return NO_HIT;
      const mid = rects[Math.floor(rects.length / 2)];
      try {
        const scope = root || document;
        const stop = root || document.documentElement;
        const hit = hitAt(scope, stop, el, mid.left + mid.width / 2, mid.top + mid.height / 2);
        if (hit === true) return null;
        if (hit === null) return NO_HIT;
        return hitAround(scope, stop, el, mid, hit);
      } catch (e) {
        return null;
      }
    };
    const isTop = (el, root) => hitOf(el, root) === null;
    // A whole-page read (viewportExpansion -1) counts every candidate as top-most, except one
    // whose centre lies in the viewport, where a hit test can tell: there a button under a
    // cover is said to be covered, as in a viewport read. Out of time, no more hit tests.
    const wholePageHit = (el, root) => {
      if (timeUp) return null;
      const rects = el.getClientRects();
      if (rects.length === 0) return null;
      const mid = rects[Math.floor(rects.length / 2)];
      const x = mid.left + mid.width / 2;
      const y = mid.top + mid.height / 2;
      if (!(mid.width > 0 && mid.height > 0 && x >= 0 && y >= 0 && x < vw && y < vh)) return null;
      try {
        const scope = root || document;
        const stop = root || document.documentElement;
        const hit = hitAt(scope, stop, el, x, y);
        if (hit === true || hit === null) return null;
        return hitAround(scope, stop, el, mid, hit);
      } catch (e) {
        return null;
      }
    };

    // What covers `el` when the hit test at its centre found `hit` (JS-PROBES.md §1.6): the
    // highest ancestor of the hit that does not contain `el`, or null when the hit is `el`'s own
    // ancestor (a transparent or pointer-events:none element: nothing lies over it).
    // Node.contains that also looks through shadow roots (a control inside a component).
    const holds = (a, b) => {
      for (let n = b; n; n = n.parentNode || n.host) if (n === a) return true;
      return false;
    };
    const covererOf = (el, hit) => {
      if (holds(hit, el)) return null;
      let cur = hit;
      while (cur.parentElement && !holds(cur.parentElement, el)) cur = cur.parentElement;
      return cur;
    };
    // `tag#id`, else `tag.firstClass`, else `tag` (capped: the page names them).
    const describe = (node) => {
      const tag = node.localName;
      const id = node.getAttribute('id');
      let out = tag;
      if (id) out = tag + '#' + id;
      else if (node.classList && node.classList.length > 0) out = tag + '.' + node.classList[0];
      return out.length > 100 ? out.slice(0, 100) + '...' : out;
    };
    // Whether the cover is a dialog or a page-wide overlay: then the covered element is counted
    // in `behind` instead of getting a line. Only the chain from the hit up to the coverer is
    // looked at (a dialog that also contains `el` is not in front of it): 'dialog' when it holds
    // an open dialog, or a fixed box over at least half the viewport that holds one; 'overlay' for
    // such a box without one; null otherwise.
    const DIALOG_SEL = 'dialog[open],[role=dialog],[role=alertdialog],[aria-modal=true]';
    const behindOf = (hit, coverer) => {
      let overlay = null;
      for (let cur = hit; cur; cur = cur.parentElement) {
        if (cur.matches(DIALOG_SEL)) return 'dialog';
        if (overlay === null && getComputedStyle(cur).position === 'fixed') {
          const r = cur.getBoundingClientRect();
          const w = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0));
          const h = Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0));
          if (w * h >= 0.5 * vw * vh) overlay = cur;
        }
        if (cur === coverer) break;
      }
      if (overlay === null) return null;
      return overlay.querySelector(DIALOG_SEL) ? 'dialog' : 'overlay';
    };
    const behind = { count: 0, dialog: false };
    // Viewport mode: the interactive elements the walk passes beyond the viewport, above and
    // below (not indexed, not disabled, not zero-sized; in a far subtree, not display:none, as
    // those are not measured). The edge is the viewport itself, not the expanded one: the hit
    // test finds nothing outside the viewport, so what lies in the expansion is not indexed
    // either.
    const beyondCount = { above: 0, below: 0 };
    const BEYOND_TAGS = new Set(['button', 'select', 'textarea', 'summary']);
    const BEYOND_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'tab', 'switch', 'slider',
      'spinbutton', 'combobox', 'searchbox', 'textbox', 'option', 'menuitem', 'menuitemradio',
      'menuitemcheckbox', 'treeitem']);
    const beyondCandidate = (el, tag) => {
      let yes = BEYOND_TAGS.has(tag) || (tag === 'a' && el.hasAttribute('href'))
        || (tag === 'input' && el.type !== 'hidden');
      if (!yes && el.hasAttributes()) {
        const tabindex = el.getAttribute('tabindex');
        yes = BEYOND_ROLES.has(el.getAttribute('role'))
          || (tabindex !== null && !tabindex.startsWith('-'))
          || el.hasAttribute('onclick') || el.getAttribute('contenteditable') === 'true';
      }
      return yes && el.disabled !== true && el.getAttribute('aria-disabled') !== 'true';
    };
    // Which side of the viewport a box lies on: 'A' wholly above, 'B' wholly below, 'S'
    // otherwise (beside it, or on screen: counted on neither side).
    const sideOf = (r) => (r.bottom <= 0 ? 'A' : r.top >= vh ? 'B' : 'S');
    const countBeyond = (side) => {
      if (side === 'A') beyondCount.above++;
      else if (side === 'B') beyondCount.below++;
    };

    const hasHandlerAttr = (el, names) => {
      for (const n of names) {
        if (el.hasAttribute(n) || typeof el[n] === 'function') return true;
      }
      return false;
    };

    // Listener-only targets (rules 7b and 7d), stored in this world by Tab::listener_targets
    // just before this call; `listeners` says they are fresh (otherwise they are not read).
    const listenSet = opts.listeners === true && globalThis.__mpListen instanceof WeakSet
      ? globalThis.__mpListen : null;
    const frameworkSet = opts.listeners === true && globalThis.__mpFramework instanceof WeakSet
      ? globalThis.__mpFramework : null;
    const LINKISH_ROLES = new Set(['link', 'menuitem', 'treeitem', 'row']);
    // What a listener rule must not index: a container of other targets. Looks at most
    // CONTAINER_SCAN descendants (more is a container in itself) and stops at the second
    // interactive one. A target with one interactive descendant is kept only when that
    // descendant leaves most of it to click (under half its area), and not when it is huge
    // (over half the viewport) around it: a person clicks the canvas, the tile, the span, not
    // the list that delegates its buttons' clicks nor the wrapper that covers the page.
    const CONTAINER_SCAN = 500;
    const targetInside = (d) => {
      const t = d.localName;
      if (t === 'button' || t === 'select' || t === 'textarea' || t === 'summary') return true;
      if (t === 'a') return d.hasAttribute('href');
      if (t === 'input') return d.type !== 'hidden';
      if (d.hasAttribute('onclick')) return true;
      const role = d.getAttribute('role');
      if (role && (ROLES.has(role) || LINKISH_ROLES.has(role))) return true;
      return (listenSet !== null && listenSet.has(d)) || (frameworkSet !== null && frameworkSet.has(d));
    };
    // Lists, tables and page regions hold their targets: a listener on one of them delegates
    // (a click on a row or an item), so the items are what gets an index, not the region.
    const REGIONS = new Set(['ul', 'ol', 'dl', 'menu', 'table', 'thead', 'tbody', 'tfoot', 'nav',
      'main', 'form', 'section', 'article', 'aside', 'header', 'footer', 'fieldset']);
    const isContainer = (el) => {
      if (REGIONS.has(el.localName)) return true;
      let found = null;
      let seen = 0;
      for (let d = el.firstElementChild; d !== null;) {
        if (++seen > CONTAINER_SCAN) return true;
        if (targetInside(d)) {
          if (found !== null) return true;
          found = d;
        }
        // Pre-order within `el`, not below a found target (its own content does not count).
        let next = d === found ? null : d.firstElementChild;
        if (next === null) {
          let up = d;
          while (up !== el && up.nextElementSibling === null) up = up.parentElement;
          next = up === el ? null : up.nextElementSibling;
        }
        d = next;
      }
      const r = el.getBoundingClientRect();
      const area = r.width * r.height;
      // Over half the viewport with content of its own: a wrapper, not a target (a canvas or
      // an empty backdrop has none).
      if (found === null) return area > 0.5 * vw * vh && el.firstElementChild !== null;
      if (area > 0.5 * vw * vh) return true;
      const f = found.getBoundingClientRect();
      return f.width * f.height >= 0.5 * area;
    };
    const listenedTo = (el) => listenSet !== null && listenSet.has(el);

    // §1.7, with the cursor rule first (the documented quirk is kept for index parity).
    // Answers why the element is interactive (a reason string: `native`, `role`, `cursor`,
    // `contenteditable`, `handler-attr`, `listener`, `framework`, `class`), or '' when it is not.
    const isInteractive = (el, tag, style) => {
      // A disabled control is shown (unindexed) whatever its cursor says.
      if (FORM_CONTROLS.has(tag) && (el.disabled === true || el.getAttribute('aria-disabled') === 'true')) return '';
      const cursor = style.cursor;
      if (tag !== 'html' && INTERACTIVE_CURSORS.has(cursor)) return 'cursor';
      if (NATIVE.has(tag)) {
        if (NON_INTERACTIVE_CURSORS.has(cursor)) return '';
        if (el.hasAttribute('disabled') || el.hasAttribute('readonly')) return '';
        if (el.disabled === true || el.readOnly === true || el.inert === true) return '';
        return 'native';
      }
      if (el.isContentEditable) return 'contenteditable';
      let role = null;
      if (el.hasAttributes()) {
        if (el.getAttribute('contenteditable') === 'true') return 'contenteditable';
        const cls = el.getAttribute('class');
        if (cls && (el.classList.contains('button') || el.classList.contains('dropdown-toggle'))) return 'class';
        if (el.getAttribute('data-index') || el.getAttribute('data-toggle') === 'dropdown'
          || el.getAttribute('aria-haspopup') === 'true') return 'handler-attr';
        role = el.getAttribute('role');
        if (ROLES.has(role) || ROLES.has(el.getAttribute('aria-role'))) return 'role';
        // Rule 7c: link-like roles that are focusable or listened to.
        if (LINKISH_ROLES.has(role) && el.hasAttribute('tabindex')) return 'role';
      }
      try {
        if (hasHandlerAttr(el, MOUSE_HANDLERS)) return 'handler-attr';
      } catch (e) {
        return '';
      }
      if (tag === 'body' || tag === 'html') return '';
      // Rules 7b/7c: a listener of its own; 7d: a framework click handler (React/Vue root only).
      if (listenedTo(el)) {
        if (isContainer(el)) return '';
        return LINKISH_ROLES.has(role) ? 'role' : 'listener';
      }
      if (frameworkSet !== null && frameworkSet.has(el) && !isContainer(el)) return 'framework';
      return '';
    };

    // §1.10: whether a descendant of an indexed element deserves its own index.
    const isDistinct = (el, tag, style) => {
      if (DISTINCT_TAGS.has(tag)) return true;
      if (DISTINCT_ROLES.has(el.getAttribute('role'))) return true;
      if (el.isContentEditable || el.getAttribute('contenteditable') === 'true') return true;
      if (el.hasAttribute('data-testid') || el.hasAttribute('data-cy') || el.hasAttribute('data-test')) return true;
      if (el.hasAttribute('onclick') || typeof el.onclick === 'function') return true;
      if (hasHandlerAttr(el, OTHER_HANDLERS)) return true;
      // Heuristic rule; the element is known to be visible here.
      const attrHint = el.hasAttribute('role') || el.hasAttribute('tabindex');
      const cls = typeof el.className === 'string' ? el.className : '';
      if (!(isInteractive(el, tag, style) || attrHint || HEURISTIC_CLASS.test(cls))) return false;
      let visibleChild = false;
      for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
        if (isVisibleElement(c)) { visibleChild = true; break; }
      }
      if (!visibleChild || !el.closest(KNOWN_CONTAINER)) return false;
      return el.parentElement !== document.body;
    };

    const isCandidate = (el, tag) => CANDIDATE_TAGS.has(tag) || tag === 'iframe'
      || el.hasAttribute('onclick') || el.hasAttribute('role') || el.hasAttribute('tabindex')
      || el.hasAttribute('data-action') || el.getAttribute('contenteditable') === 'true';

    // The accessible name of a control line, trailing `:` and `*` cut ('E-mail:' → 'E-mail'):
    // aria-labelledby, aria-label, its <label>s (lib.labelsOf, what `find_element{label}`
    // matches), else the label of its form item.
    const stripLabel = (t) => t.replace(/[:：*\s]+$/u, '');
    // A label's own words: its text outside nested controls (a wrapping label's select or
    // textarea is not part of the name).
    const CONTROL_TAGS = new Set(['input', 'select', 'textarea', 'option', 'button']);
    const labelText = (label) => {
      const parts = [];
      const walker = document.createTreeWalker(label, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.nodeType === 1 && CONTROL_TAGS.has(n.localName)
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
      });
      for (let n = walker.nextNode(); n !== null && parts.length < 64; n = walker.nextNode()) {
        if (n.nodeType === 3) parts.push(n.nodeValue);
      }
      return stripLabel(lib.collapse(parts.join(' ')));
    };
    // The name and the label element it came from (null when not a label).
    const namedBy = (el) => {
      const by = String(el.getAttribute('aria-labelledby') || '').trim();
      if (by) {
        const t = lib.labelsOf(el)[0];
        if (t) return { name: stripLabel(t), from: null };
      }
      const aria = el.getAttribute('aria-label');
      if (aria && aria.trim()) return { name: stripLabel(lib.collapse(aria)), from: null };
      const labels = lib.labelsFor(el);
      if (labels) {
        for (const l of labels) {
          const t = labelText(l);
          if (t) return { name: t, from: l };
        }
      }
      const f = fields.get(el);
      return { name: f && f.itemLabel ? f.itemLabel : '', from: null };
    };
    const nameOf = (el) => namedBy(el).name;
    // A link's target as an agent needs it: `#frag` within this document, the path on this
    // origin, else the URL (capped at 100 characters); nothing for `javascript:`.
    const hrefOf = (el) => {
      const raw = el.getAttribute('href');
      if (raw === null || /^\s*javascript:/i.test(raw)) return undefined;
      let u;
      try {
        u = new URL(el.href);
      } catch (e) {
        return capAttr(raw);
      }
      if (u.origin !== 'null' && u.origin === location.origin) {
        if (u.hash && u.pathname === location.pathname && u.search === location.search) return u.hash;
        return capAttr(u.pathname + u.search + u.hash);
      }
      const full = u.href;
      return full.length > 100 ? full.slice(0, 99) + '…' : full;
    };
    const ariaTrue = (el, name) => String(el.getAttribute(name) || '').toLowerCase() === 'true';

    // What a select shows: the text of its chosen option(s), the form select_dropdown_option
    // takes ('' when none is chosen).
    const chosenText = (select) => {
      const texts = [];
      for (const o of select.selectedOptions || []) texts.push(o.text.replace(/\s+/g, ' ').trim());
      return texts.length ? capAttr(texts.join(', ')) : '';
    };

    // §1.8 + §2.2 (moonpilot): what an agent acts on, live. Booleans are '' (rendered bare).
    const captureAttrs = (el, tag) => {
      const a = {};
      if (isCandidate(el, tag)) {
        const list = el.attributes;
        for (let i = 0; i < list.length; i++) {
          const at = list[i];
          if (PLAIN.has(at.name)) a[at.name] = capAttr(at.value);
        }
      }
      const role = el.getAttribute('role');
      const control = tag === 'input' || tag === 'textarea' || tag === 'select';
      if (control || NAMED_ROLES.has(role)) {
        const name = nameOf(el);
        if (name) a.label = capAttr(name);
      } else if (tag === 'a' || tag === 'button' || tag === 'summary' || role !== null) {
        // Named by content: the renderer shows `label` only when the text says nothing (×).
        const labels = lib.labelsOf(el);
        if (labels.length > 0) a.label = capAttr(labels[0]);
        else {
          const img = el.querySelector('img[alt]');
          if (img && img.getAttribute('alt').trim()) a.label = capAttr(img.getAttribute('alt').trim());
        }
      }
      if (FORM_CONTROLS.has(tag)) {
        if (el.disabled === true || ariaTrue(el, 'aria-disabled')) a.disabled = '';
        if ((tag === 'input' || tag === 'textarea') && (el.readOnly === true || ariaTrue(el, 'aria-readonly'))) {
          a.readonly = '';
        }
      } else if (ariaTrue(el, 'aria-disabled')) {
        a.disabled = '';
      }
      const type = tag === 'input' ? String(el.type || '').toLowerCase() : '';
      if (tag === 'input' || tag === 'textarea') {
        // A password says whether it is filled, never what it holds.
        const v = String(el.value);
        a.value = type === 'password' && v !== '' ? '[redacted]' : capAttr(v);
      } else if (tag === 'select') {
        const chosen = chosenText(el);
        if (chosen) a.value = chosen;
      }
      if (control) {
        if (el.required === true || ariaTrue(el, 'aria-required')) a.required = '';
        const f = fields.get(el);
        const err = f ? f.err : lib.fieldError(el, lib.fieldItem(el));
        if (err.invalid) {
          // A password's browser message is said without what it tells of the value (its length).
          const said = type === 'password' && err.from === null ? lib.passwordMessage(err.error) : err.error;
          a.invalid = said !== null && said !== '' ? capAttr(said) : '';
        }
      } else if (ariaTrue(el, 'aria-required')) {
        a.required = '';
      }
      if (tag === 'input' && (type === 'checkbox' || type === 'radio')) {
        if (el.indeterminate === true) a.checked = 'mixed';
        else if (el.checked) a.checked = '';
      } else {
        const ac = String(el.getAttribute('aria-checked') || '').toLowerCase();
        if (ac === 'true') a.checked = '';
        else if (ac === 'mixed') a.checked = 'mixed';
      }
      if (tag === 'option' ? el.selected : ariaTrue(el, 'aria-selected')) a.selected = '';
      const ex = String(el.getAttribute('aria-expanded') || '').toLowerCase();
      if (ex === 'true') a.expanded = '';
      else if (ex === 'false') a.expanded = 'false';
      else if (tag === 'summary' && el.parentElement && el.parentElement.localName === 'details') {
        a.expanded = el.parentElement.open ? '' : 'false';
      }
      if (tag === 'a') {
        const href = hrefOf(el);
        if (href !== undefined) a.href = href;
      }
      if (tag === 'label' && forHidden.has(el)) {
        a.for = forHidden.get(el);
        // What the hidden control holds, said on the label that stands in for it.
        const c = el.control;
        if (c) {
          if (c.checked === true) a.checked = '';
          if (c.required === true) a.required = '';
          if (c.localName === 'select') {
            const chosen = chosenText(c);
            if (chosen) a.value = chosen;
          } else if (c.type === 'file' && c.files && c.files.length > 0) {
            a.value = capAttr(Array.from(c.files, (f) => f.name).join(', '));
          }
        }
      }
      if (HEADING.test(tag)) a.level = tag.slice(1);
      else if (role === 'heading') a.level = String(parseInt(el.getAttribute('aria-level'), 10) || 2);
      return a;
    };

    // Names and errors said on a control's own line, found before the walk (a label comes
    // before its control): the labels of visible controls and the error texts of invalid ones
    // are `quiet` (no index, no text lines: their words are on the control's line); a label whose
    // control is hidden (a styled file input or checkbox) is indexed in its place, with `for`.
    // Shown: a box larger than 1×1 px, not hidden and not fully transparent. A styled checkbox
    // or file input is often kept in the page transparent or clipped to 1 px, under its label.
    const shownControl = (c) => {
      if (!(c.offsetWidth > 1 && c.offsetHeight > 1)) return false;
      const st = getComputedStyle(c);
      return st.visibility !== 'hidden' && st.display !== 'none' && st.opacity !== '0';
    };
    const quiet = new Set();
    const forHidden = new Map();
    const fields = new Map();
    {
      // At most MAX_FIELDS fields are examined (in a viewport read, only those in view count):
      // those past the cap keep no label, item or error of their own.
      const MAX_FIELDS = 2000;
      let seen = 0;
      for (const c of document.querySelectorAll('input, textarea, select')) {
        if (outOfTime(false)) break;
        const type = c.localName === 'input' ? String(c.type || '').toLowerCase() : c.localName;
        if (type === 'hidden') continue;
        // A viewport read leaves out what lies outside it (its labels and errors too), and
        // does not count it: a page scrolled past thousands of fields has its own in view.
        if (!allViewport && outside(c.getBoundingClientRect())) continue;
        if (++seen > MAX_FIELDS) break;
        if (!shownControl(c)) {
          const labels = lib.labelsFor(c);
          if (labels && labels.length > 0 && !c.disabled) {
            for (const l of labels) forHidden.set(l, type);
            // Its label is what a person clicks: the 1 px box gets no index of its own.
            quiet.add(c);
          }
          continue;
        }
        const item = lib.fieldItem(c);
        const f = { err: lib.fieldError(c, item), itemLabel: '' };
        const labels = lib.labelsFor(c);
        if (labels && labels.length > 0) {
          // Only the label whose words became the name; another (a hint) stays text.
          const { from } = namedBy(c);
          if (from !== null) quiet.add(from);
        } else if (item && lib.labelsOf(c).length === 0) {
          const l = item.querySelector('label');
          if (l && l.control === null) {
            f.itemLabel = stripLabel(lib.collapse(l.textContent));
            if (f.itemLabel) quiet.add(l);
          }
        }
        if (f.err.invalid && f.err.from !== null) quiet.add(f.err.from);
        fields.set(c, f);
      }
    }

    // Text of a display:none subtree, needed only for the text of an enclosing line element:
    // nothing inside such a subtree can be visible, indexed or render a line of its own.
    const hiddenText = (el, depth) => {
      let n = el.firstChild;
      while (n !== null) {
        if (n.nodeType === 3) {
          const s = takeText(n);
          if (s) out.push([depth, s]);
        } else if (n.nodeType === 1 && n.firstChild !== null && !REJECT.has(n.localName)
          && n.localName !== 'iframe') {
          n = n.firstChild;
          continue;
        }
        while (n !== el && n.nextSibling === null) n = n.parentNode;
        n = n === el ? null : n.nextSibling;
      }
    };

    const hasOwnText = (node) => {
      for (let c = node.firstChild; c !== null; c = c.nextSibling) {
        if (c.nodeType === 3 && c.nodeValue.trim() !== '') return true;
      }
      return false;
    };

    // Fills the xpath position (§1.9) of the kept children: 1-based among element siblings with
    // the same tag, 0 when the tag is unique. Counted only for parents with kept children, in
    // two passes over the siblings (no per-node map survives the call).
    const setSegments = (parent, kept) => {
      if (parent.childElementCount === 1) {
        kept[0][2] = 0;
        return;
      }
      const totals = new Map();
      for (let s = parent.firstElementChild; s !== null; s = s.nextElementSibling) {
        const tag = s.localName;
        totals.set(tag, (totals.get(tag) || 0) + 1);
      }
      const running = new Map();
      let at = 0;
      for (let s = parent.firstElementChild; s !== null && at < kept.length; s = s.nextElementSibling) {
        const tag = s.localName;
        const n = (running.get(tag) || 0) + 1;
        running.set(tag, n);
        if (s === kept[at + 1]) {
          kept[at][2] = totals.get(tag) > 1 ? n : 0;
          at += 2;
        }
      }
    };

    // Whether an element inside a "far" subtree (see enterElement) may be laid out away from
    // its ancestors: out-of-flow or shifted. Such elements are measured. Transforms are not
    // checked: reading them costs a layout query, and transformed escapees are in practice
    // fixed or absolutely positioned as well.
    const mayEscape = (style) => {
      const pos = style.position;
      if (pos === 'static') return false;
      if (pos === 'absolute' || pos === 'fixed') return true;
      if (pos === 'relative' || pos === 'sticky') {
        return !!(parseFloat(style.top) || parseFloat(style.left)
          || parseFloat(style.bottom) || parseFloat(style.right));
      }
      return false;
    };

    // Whether content of an element that lies outside the expanded viewport overflows its box
    // in the direction of the viewport (only content above or left of it can reach it that way).
    const overflowsTowardViewport = (el, r) => (r.bottom < -exp && el.scrollHeight > el.clientHeight + 1)
      || (r.right < -exp && el.scrollWidth > el.clientWidth + 1);

    const closedDetails = (p) => p.localName === 'details' && !p.open;

    const isRichText = (el, tag) => el.isContentEditable || el.id === 'tinymce'
      || (typeof el.className === 'string' && el.className.indexOf('mce-content-body') >= 0
        && el.classList.contains('mce-content-body'))
      || (tag === 'body' && String(el.getAttribute('data-id') || '').startsWith('mce_'));

    // The walk uses an explicit stack (no recursion, so DOM depth is never limited by the call
    // stack). Frames are child iterators and "post" frames that finish an element after its
    // children; an element's entry slot in `out` is reserved before its children (pre-order)
    // and filled, or dropped with everything after it, when the element is finished.
    //
    // Iterator fields:
    //   p         the element or shadow root whose child nodes are visited; c the next one;
    //   hl        "parent highlighted" (an ancestor received an index, §1.10 port fix);
    //   root      the shadow root the children live in, or null for the document;
    //   idxAbove  an ancestor has an index (text lines are suppressed, §2.1);
    //   lineAbove an ancestor renders a line (its text needs the text nodes below);
    //   parentVT  the parent element is visible and top-most (text lines, §2.1);
    //   shadowBit 4 when `p` is a shadow root, else 0;
    //   far       the children lie in a subtree outside the viewport (see enterElement): the
    //             side of the viewport it lies on ('A', 'B' or 'S', see sideOf), '' when not;
    //   fast      far without a line above: no text node can be output, so only elements are
    //             visited, and none of them is measured (enterFar);
    //   kept      [entry, element, ...] of the kept children, for setSegments.
    const PUSHED = {};
    const stack = [];
    const pushIter = (p, depth, hl, root, idxAbove, lineAbove, parentVT, shadowBit, far) => {
      const fast = far && !lineAbove;
      stack.push({
        iter: true, p, c: fast ? p.firstElementChild : p.firstChild, depth, hl, root, idxAbove,
        lineAbove, parentVT, shadowBit, far, fast, kept: null,
      });
    };
    const keep = (it, entry, el) => {
      if (it.kept === null) it.kept = [];
      it.kept.push(entry, el);
    };

    // An element of a far subtree with no line element above it: it cannot be top-most, so it
    // can only matter as the ancestor of an escaping descendant.
    const enterFar = (el, tag, it) => {
      if (REJECT.has(tag)) return null;
      const style = getComputedStyle(el);
      if (mayEscape(style)) {
        return enterElement(el, tag, it.depth, it.hl, it.root, it.idxAbove, false, it.shadowBit, '', it);
      }
      const sr = el.shadowRoot;
      if (sr) window.__moonpilotShadowDoc = document;
      // Nothing in it has a box: it can neither escape nor count.
      if (style.display === 'none') return null;
      if (beyondCandidate(el, tag)) countBeyond(it.far);
      if ((el.firstElementChild === null && sr === null) || tag === 'iframe' || tag === 'frame') return null;
      const mark = out.length;
      out.push(null);
      stack.push({ iter: false, far: true, el, tag, depth: it.depth, shadowBit: it.shadowBit, mark, it });
      const d = it.depth + 1;
      // The element itself is never highlighted: rich-text and shadow children start
      // unhighlighted, light children inherit `hl` (isRichText is only asked when it matters).
      if ((it.hl || sr !== null) && isRichText(el, tag)) {
        pushIter(el, d, false, it.root, it.idxAbove, false, false, 0, it.far);
      } else {
        pushIter(el, d, it.hl, it.root, it.idxAbove, false, false, 0, it.far);
        if (sr !== null) pushIter(sr, d, false, sr, it.idxAbove, false, false, 4, it.far);
      }
      return PUSHED;
    };

    const finishFar = (f) => {
      if (out.length === f.mark + 1) {
        out.length = f.mark;
        return null;
      }
      let flags = f.shadowBit;
      if (f.el.offsetWidth > 0 && f.el.offsetHeight > 0) {
        const style = getComputedStyle(f.el);
        if (style.visibility !== 'hidden' && style.display !== 'none') flags |= 1;
      }
      return (out[f.mark] = [f.depth, f.tag, 0, flags, -1]);
    };

    // Starts one element: decides its flags and index, then either finishes it at once (no
    // children to visit) or pushes its post frame and child iterators. Returns the entry, null
    // (nothing kept) or PUSHED.
    //
    // `far` (viewport mode only): an ancestor lies entirely outside the expanded viewport and its
    // content does not overflow towards it. Elements in such a subtree are not measured one by
    // one (a layout query costs microseconds; big pages have tens of thousands of elements):
    // unless their computed style lets them escape their ancestors' boxes (mayEscape), they are
    // outside the viewport too, so they can be neither top-most nor indexed (§1.6). The result is
    // the same as measuring them, except for boxes moved there by negative margins or by a
    // transform on an in-flow element.
    const enterElement = (el, tag, depth, hl, root, idxAbove, lineAbove, shadowBit, far, it) => {
      if (REJECT.has(tag) || el.id === OVERLAY_ID) return null;
      // A closed details shows its summary only.
      if (tag !== 'summary' && it && closedDetails(it.p)) return null;
      const sr = el.shadowRoot;
      // The document's mutation watch does not see into shadow trees: a screenshot of this
      // document is never reused (overlay_toggle.js).
      if (sr) window.__moonpilotShadowDoc = document;
      let style = null;
      let rect = null;
      let inViewport = allViewport;
      let childFar = '';
      if (far) {
        style = getComputedStyle(el);
        if (mayEscape(style)) far = '';
      }
      if (far) {
        // Below a display:none element nothing has a box: 'S' counts nothing.
        childFar = style.display === 'none' ? 'S' : far;
        if (childFar !== 'S' && beyondCandidate(el, tag)) countBeyond(far);
      } else if (!allViewport) {
        rect = el.getBoundingClientRect();
        if (outside(rect)) {
          const sized = rect.width > 0 || rect.height > 0 || el.offsetWidth > 0 || el.offsetHeight > 0;
          if (!sized) {
            // §1.3 step 4: unsized, off-viewport and not fixed/sticky drops the subtree.
            if (!sr) {
              if (style === null) style = getComputedStyle(el);
              if (style.position !== 'fixed' && style.position !== 'sticky') return null;
            }
          } else if (!overflowsTowardViewport(el, rect)) {
            childFar = sideOf(rect);
          }
        } else {
          inViewport = true;
        }
      }
      // §1.5. Visibility only matters where top-most can be true; others get it lazily below.
      let visible = false;
      if (inViewport) {
        const ow = el.offsetWidth || 0;
        const oh = el.offsetHeight || 0;
        if (ow > 0 && oh > 0) {
          // A box with a size implies display is not none.
          if (style === null) style = getComputedStyle(el);
          visible = style.visibility !== 'hidden';
        } else if (ow === 0 && oh === 0) {
          if (style === null) style = getComputedStyle(el);
          if (style.display === 'none') {
            // Nothing inside can be visible; only an enclosing line needs its text.
            if (!lineAbove) return null;
            const mark = out.length;
            out.push(null);
            hiddenText(el, depth + 1);
            if (out.length === mark + 1) { out.length = mark; return null; }
            return (out[mark] = [depth, tag, 0, shadowBit, -1]);
          }
        }
      }
      // §1.6 hit tests cost up to ~0.2 ms each inside big tables, so top-most is only decided
      // where it changes the output: index candidates, form-control lines and parents of text
      // lines. All checks are side-effect free, so their order does not change any result.
      let top = false;
      let index = -1;
      let line = false;
      // Covered (flag 16): a candidate whose hit test reached another element. It renders an
      // unindexed line naming the coverer, or, behind a dialog or overlay, only counts.
      let coveredBy = null;
      let shadowed = false;
      const silent = quiet.has(el);
      let reason = '';
      if (visible) {
        if (!silent) reason = forHidden.has(el) ? 'label-for-hidden' : isInteractive(el, tag, style);
        if (reason && (!hl || isDistinct(el, tag, style))) {
          const hit = hitOf(el, root);
          top = hit === null;
          if (top) {
            index = nextIndex++;
          } else if (hit) {
            const coverer = covererOf(el, hit);
            if (coverer !== null) {
              shadowed = true;
              const what = behindOf(hit, coverer);
              if (what === null) {
                coveredBy = describe(coverer);
              } else {
                behind.count++;
                if (what === 'dialog') behind.dialog = true;
              }
            }
          }
        }
        const heading = !idxAbove && !silent && (HEADING.test(tag) || el.getAttribute('role') === 'heading');
        if (index >= 0 || coveredBy !== null) {
          line = true;
        } else if (shadowed) {
          line = false;
        } else if (allViewport) {
          top = true;
          line = (LINE_TAGS.has(tag) && !silent) || heading;
        } else if ((LINE_TAGS.has(tag) && !silent) || heading) {
          top = isTop(el, root);
          line = top;
        } else if (!idxAbove && (hasOwnText(el) || (sr !== null && hasOwnText(sr)))) {
          top = isTop(el, root);
        }
      }
      if (rect !== null && index < 0 && rect.width > 0 && rect.height > 0) {
        const side = sideOf(rect);
        if (side !== 'S' && beyondCandidate(el, tag)) countBeyond(side);
      }
      let attrs = null;
      let extra = null;
      if (line) attrs = captureAttrs(el, tag);
      if (coveredBy !== null) attrs['covered-by'] = coveredBy;
      if (index >= 0) {
        const r = rect || el.getBoundingClientRect();
        extra = [el.getAttribute('id'), el.getAttribute('name'),
          [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)],
          reason];
        if (doHighlight && (focusIndex < 0 || focusIndex === index)) toDraw.push([el, index, r]);
      }
      const f = {
        iter: false, far: false, el, tag, depth, shadowBit, mark: out.length, it,
        line, visible, top, index, attrs, extra, inViewport, style, covered: coveredBy !== null,
      };
      out.push(null);
      if ((el.firstChild === null && sr === null) || tag === 'iframe' || tag === 'frame') {
        // Nothing to visit (frames are read by their own probe call, descendIframes=false).
        return finishElement(f);
      }
      stack.push(f);
      // A covered candidate's descendants are as an indexed one's: no index for what only
      // inherits its cursor, no text lines of their own. A quiet element's words are said on
      // its control's line: no text lines of its own either.
      const highlighted = index >= 0 || shadowed;
      const childIdx = idxAbove || highlighted || silent;
      const childLine = lineAbove || line;
      const vt = visible && top;
      const d = depth + 1;
      if (isRichText(el, tag)) {
        pushIter(el, d, highlighted, root, childIdx, childLine, vt, 0, childFar);
      } else {
        // Pushed in reverse: the shadow root's children are visited before the light ones.
        pushIter(el, d, highlighted || hl, root, childIdx, childLine, vt, 0, childFar);
        if (sr !== null) pushIter(sr, d, highlighted, sr, childIdx, childLine, vt, 4, childFar);
      }
      return PUSHED;
    };

    const finishElement = (f) => {
      if (!f.line && out.length === f.mark + 1) {
        out.length = f.mark;
        return null;
      }
      let visible = f.visible;
      if (!f.inViewport && f.el.offsetWidth > 0 && f.el.offsetHeight > 0) {
        // Kept for its descendants only: record the real visibility for the renderer.
        const style = f.style || getComputedStyle(f.el);
        visible = style.visibility !== 'hidden' && style.display !== 'none';
      }
      const entry = [f.depth, f.tag, 0,
        (visible ? 1 : 0) | (f.top ? 2 : 0) | f.shadowBit | (f.covered ? 16 : 0), f.index];
      if (f.attrs !== null || f.extra !== null) entry.push(f.attrs);
      if (f.extra !== null) entry.push(f.extra);
      out[f.mark] = entry;
      return entry;
    };

    const walk = (body) => {
      pushIter(body, 1, false, null, false, false, false, 0, '');
      while (stack.length > 0) {
        const t = stack[stack.length - 1];
        if (!t.iter) {
          stack.pop();
          const entry = t.far ? finishFar(t) : finishElement(t);
          if (entry !== null) keep(t.it, entry, t.el);
          continue;
        }
        let pushed = false;
        while (t.c !== null) {
          if (outOfTime(false)) {
            // Stop here: the open elements are finished as they are, nothing more is visited.
            t.c = null;
            break;
          }
          const c = t.c;
          t.c = t.fast ? c.nextElementSibling : c.nextSibling;
          const type = c.nodeType;
          if (type === 1) {
            const res = t.fast
              ? enterFar(c, c.localName, t)
              : enterElement(c, c.localName, t.depth, t.hl, t.root, t.idxAbove, t.lineAbove,
                t.shadowBit, t.far, t);
            if (res === PUSHED) {
              pushed = true;
              break;
            }
            if (res !== null) keep(t, res, c);
          } else if (type === 3 && (t.lineAbove || (t.parentVT && !t.idxAbove)) && !closedDetails(t.p)) {
            const text = takeText(c);
            if (text) out.push([t.depth, text]);
          }
        }
        if (pushed) continue;
        stack.pop();
        if (t.kept !== null) setSegments(t.p, t.kept);
      }
    };

    // §3 overlay, drawn after the walk so no measurement above is forced to re-layout.
    //
    // Boxes and labels are absolutely positioned children of a fixed, full-viewport container
    // (the same viewport coordinates as fixed boxes, without one fixed layer per box). Only
    // elements on screen get their boxes and label right away, in one insertAdjacentHTML call;
    // the others get them when a scroll brings them into view, so a whole-page snapshot does not
    // lay out thousands of invisible boxes.
    const drawOverlay = (items, containerId, labelClass) => {
      const PALETTE = ['#FF0000', '#00FF00', '#0000FF', '#FFA500', '#800080', '#008080',
        '#FF69B4', '#4B0082', '#FF4500', '#2E8B57', '#DC143C', '#4682B4'];
      // Inline styles only: adding or removing a style sheet would make the browser recompute
      // the style of the whole page.
      const BOX = 'position:absolute;margin:0;padding:0;pointer-events:none;box-sizing:border-box;';
      const LABEL = 'position:absolute;margin:0;pointer-events:none;color:white;padding:1px 4px;'
        + 'border-radius:4px;border:0;line-height:1.2;font-family:sans-serif;font-weight:normal;'
        + 'white-space:nowrap;box-sizing:content-box;';
      const px = (v) => Math.round(v * 100) / 100 + 'px';
      const onScreen = (r) => r.bottom > 0 && r.right > 0 && r.top < window.innerHeight
        && r.left < window.innerWidth;
      const nonEmpty = (rects) => {
        const list = [];
        for (let i = 0; i < rects.length; i++) {
          const r = rects[i];
          if (r.width > 0 && r.height > 0) list.push(r);
        }
        return list;
      };
      const fontSizeOf = (rects) => Math.min(12, Math.max(8, (rects.length ? rects[0].height : 16) / 2));
      const keyOf = (fontSize, idx) => fontSize + ':' + String(idx).length;

      const container = document.createElement('div');
      container.id = containerId;
      // A manual popover lives in the top layer: it paints above the page, and hit tests of the
      // page do not pay for it (a positioned overlay in the normal stacking order makes every
      // elementFromPoint several times slower on big pages).
      container.setAttribute('popover', 'manual');
      container.style.cssText = 'position:fixed;inset:0;top:0;left:0;width:100%;height:100%;'
        + 'max-width:none;max-height:none;pointer-events:none;background:transparent;'
        + 'z-index:2147483647;margin:0;padding:0;border:0;contain:strict;overflow:visible;'
        + (window.__moonpilotOverlayHidden ? 'display:none;' : 'display:block;')
        + 'color:inherit;';
      (document.body || document.documentElement).appendChild(container);
      try {
        container.showPopover();
      } catch (e) {
        // Without the top layer it is still a fixed box with the highest z-index.
      }

      // Label sizes, measured once per font size and digit count on a hidden sample (a tiny
      // forced layout of the contained overlay) instead of once per label; 20×16 when unknown.
      const sizes = new Map();
      const measure = (keys) => {
        const samples = [];
        for (const key of keys) {
          if (sizes.has(key)) continue;
          const [fs, digits] = key.split(':');
          const d = document.createElement('div');
          d.style.cssText = LABEL + 'visibility:hidden;left:0;top:0;font-size:' + fs + 'px';
          d.textContent = '8'.repeat(Number(digits));
          container.appendChild(d);
          samples.push([key, d]);
        }
        for (const [key, d] of samples) {
          const r = d.getBoundingClientRect();
          sizes.set(key, r.width > 0 && r.height > 0 ? [r.width, r.height] : [20, 16]);
        }
        for (const [, d] of samples) d.remove();
      };
      const placeLabel = (r, size) => {
        const [lw, lh] = size;
        let top = r.top + 2;
        let left = r.left + r.width - lw - 2;
        if (r.width < lw + 4 || r.height < lh + 4) {
          top = r.top - lh - 2;
          left = r.left + r.width - lw;
          if (left < 0) left = r.left;
        }
        top = Math.max(0, Math.min(top, window.innerHeight - lh));
        left = Math.max(0, Math.min(left, window.innerWidth - lw));
        return [top, left];
      };
      const boxHtml = (color, r) => '<div style="' + BOX + 'border:2px solid ' + color
        + ';background-color:' + color + '1A;left:' + px(r.left) + ';top:' + px(r.top)
        + ';width:' + px(r.width) + ';height:' + px(r.height)
        + (onScreen(r) ? '' : ';display:none') + '"></div>';
      const labelHtml = (e, color, r) => {
        const shown = r !== null && onScreen(r);
        const [top, left] = shown ? placeLabel(r, sizes.get(e.key)) : [0, 0];
        return '<div class="' + labelClass + '" style="' + LABEL + 'background-color:' + color
          + ';font-size:' + e.fontSize + 'px;left:' + px(left) + ';top:' + px(top)
          + (shown ? '' : ';display:none') + '">' + e.idx + '</div>';
      };
      // Creates the boxes and labels of `todo` ([entry, nonEmptyRects] pairs) in one parse.
      const materialize = (todo) => {
        if (todo.length === 0) return;
        measure(todo.map(([e]) => e.key));
        const parts = [];
        for (const [e, rects] of todo) {
          const color = PALETTE[e.idx % PALETTE.length];
          for (const r of rects) parts.push(boxHtml(color, r));
          parts.push(labelHtml(e, color, rects.length ? rects[0] : null));
        }
        const before = container.lastElementChild;
        container.insertAdjacentHTML('beforeend', parts.join(''));
        let child = before ? before.nextElementSibling : container.firstElementChild;
        for (const [e, rects] of todo) {
          e.boxes = [];
          for (let i = 0; i < rects.length; i++) {
            e.boxes.push(child);
            child = child.nextElementSibling;
          }
          e.label = child;
          child = child.nextElementSibling;
        }
      };

      // Entries: every indexed element; `label` stays null until the element was on screen.
      const entries = [];
      const todo = [];
      for (const [el, idx, bounds] of items) {
        const e = { el, idx, fontSize: 8, key: '', boxes: [], label: null };
        entries.push(e);
        if (!onScreen(bounds)) continue;
        const rects = nonEmpty(el.getClientRects());
        e.fontSize = fontSizeOf(rects);
        e.key = keyOf(e.fontSize, idx);
        todo.push([e, rects]);
      }
      materialize(todo);

      const show = (node, r) => {
        const st = node.style;
        if (r === null || !onScreen(r)) {
          if (st.display !== 'none') st.display = 'none';
          return false;
        }
        st.display = '';
        return true;
      };
      const update = () => {
        // Read every rect first, then create what came into view, then write.
        const all = entries.map((e) => nonEmpty(e.el.getClientRects()));
        const fresh = [];
        entries.forEach((e, n) => {
          if (e.label === null && all[n].some(onScreen)) {
            e.fontSize = fontSizeOf(all[n]);
            e.key = keyOf(e.fontSize, e.idx);
            fresh.push([e, all[n]]);
          }
        });
        materialize(fresh);
        entries.forEach((e, n) => {
          if (e.label === null) return;
          const rects = all[n];
          let used = 0;
          for (; used < rects.length && used < e.boxes.length; used++) {
            const r = rects[used];
            const box = e.boxes[used];
            if (show(box, r)) {
              const st = box.style;
              st.left = px(r.left);
              st.top = px(r.top);
              st.width = px(r.width);
              st.height = px(r.height);
            }
          }
          for (; used < e.boxes.length; used++) show(e.boxes[used], null);
          const first = rects.length ? rects[0] : null;
          if (show(e.label, first)) {
            const [top, left] = placeLabel(first, sizes.get(e.key));
            e.label.style.top = px(top);
            e.label.style.left = px(left);
          }
        });
      };
      // Throttled to one run per 16 ms, with a trailing run so boxes settle after the last event.
      let last = 0;
      let timer = 0;
      const onMove = () => {
        const now = performance.now();
        if (now - last >= 16) {
          last = now;
          update();
        } else if (!timer) {
          timer = setTimeout(() => { timer = 0; last = performance.now(); update(); }, 16);
        }
      };
      window.addEventListener('scroll', onMove, true);
      window.addEventListener('resize', onMove);
      // One cleanup for the whole drawing (it owns every box and label of this snapshot).
      const cleanup = () => {
        window.removeEventListener('scroll', onMove, true);
        window.removeEventListener('resize', onMove);
        if (timer) clearTimeout(timer);
        // Emptying first is much cheaper for the next hit test than removing a filled overlay.
        container.textContent = '';
        container.remove();
      };
      if (!Array.isArray(window._highlightCleanupFunctions)) window._highlightCleanupFunctions = [];
      window._highlightCleanupFunctions.push(cleanup);
    };

    const xpathOf = (el) => {
      const segs = [];
      for (let cur = el; cur && cur.nodeType === 1; cur = cur.parentNode) {
        const parent = cur.parentNode;
        const name = cur.localName;
        let pos = 0;
        let total = 0;
        if (parent) {
          for (let s = parent.firstElementChild; s; s = s.nextElementSibling) {
            if (s.localName === name) {
              total++;
              if (s === cur) pos = total;
            }
          }
        }
        segs.push(total > 1 ? name + '[' + pos + ']' : name);
      }
      return segs.reverse().join('/');
    };

    const body = document.body;
    let rootXpath = 'html/body';
    if (body) {
      rootXpath = xpathOf(body);
      // The root is special (§1.3): no flags, no attributes, children start unhighlighted.
      out.push([0, 'body', 0, 0, -1]);
      walk(body);
    }

    // Viewport mode: how many interactive elements the walk passed beyond the viewport (see
    // beyondCount); unknown when the walk ran out of time.
    const beyond = !allViewport && body && !timeUp
      ? { above: beyondCount.above, below: beyondCount.below, capped: false } : null;

    const value = {
      root_xpath: rootXpath,
      // A JSON string crosses the protocol much faster than nested arrays (one string instead
      // of one protocol value per node); the engine parses it.
      tree: JSON.stringify(out),
    };
    const scrollY = window.scrollY || 0;
    const pageHeight = document.documentElement ? document.documentElement.scrollHeight : 0;
    value.pixels_above = Math.round(scrollY);
    value.viewport_height = Math.round(vh);
    value.page_height = Math.round(pageHeight);
    value.pixels_below = Math.round(pageHeight - scrollY - vh);
    if (beyond !== null) {
      const px = (v) => Math.max(0, v);
      value.above = { px: px(value.pixels_above), count: beyond.above, capped: beyond.capped };
      value.below = { px: px(value.pixels_below), count: beyond.below, capped: beyond.capped };
    }
    if (behind.count > 0) value.behind = { count: behind.count, what: behind.dialog ? 'dialog' : 'overlay' };
    value.time_up = timeUp;
    value.text_cut = textCut;
    value.text_dropped = textDropped;

    // §15 media hint.
    try {
      const imgs = document.images;
      let big = 0;
      const samples = [];
      for (let i = 0; i < imgs.length; i++) {
        const img = imgs[i];
        const w = img.naturalWidth || 0;
        const h = img.naturalHeight || 0;
        if (w >= 120 && h >= 120 && w * h >= 40000) {
          big++;
          if (samples.length < 3) {
            const src = String(img.currentSrc || img.getAttribute('src') || '');
            samples.push({ src: src.slice(0, 160), w, h });
          }
        }
      }
      if (big > 0) value.media = { media_count: big, image_count: imgs.length, samples };
    } catch (e) {
      // The media hint is optional.
    }

    if (toDraw.length > 0) {
      try {
        drawOverlay(toDraw, OVERLAY_ID, LABEL_CLASS);
      } catch (e) {
        // Drawing is cosmetic; the snapshot stands without it.
      }
    }
    return { ok: true, value };

  } catch (e) {
    return { ok: false, code: 'PROBE_FAILED', msg: String((e && e.message) || e) };
  }
})
