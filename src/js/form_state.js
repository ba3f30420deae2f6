((args, lib) => {
  // The form-state reader of get_form_state (JS-PROBES.md §10), joined behind probe_lib.js.
  // `args`: {selector|null, includeHidden, max}. Password values never leave the page: they
  // are `[redacted]` here. On top of §10 (moonpilot): `invalid` is also true for
  // aria-invalid="true", a custom validity message (setCustomValidity) and :user-invalid; such
  // a field's `error` falls back to its aria-errormessage / aria-describedby text, then to the
  // browser's validation message; `validity` gives the constraint-validation flags (null for a
  // control that is not validated).
  let scope = document;
  if (typeof args.selector === 'string') {
    let all;
    try {
      all = lib.selectAll(args.selector);
    } catch (e) {
      return lib.fail('INVALID_ARGUMENT', 'param `selector`: `' + args.selector + '` is not a valid selector: ' + String((e && e.message) || e), { param: 'selector' });
    }
    if (all.length === 0) return lib.ok({ error: 'scope-not-found', count: 0, errorCount: 0, fields: [], errors: [], truncated: false });
    scope = all[0];
  }
  const collapse = lib.collapse;
  const classText = (el) => (el ? String(lib.classOf(el) || '') : '');
  const visibleOf = (el) => {
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) return false;
    const s = getComputedStyle(el);
    if (s.visibility === 'hidden' || s.display === 'none') return false;
    return el.offsetParent !== null || s.position === 'fixed';
  };
  const labelOf = (el, item) => {
    const labels = lib.labelsFor(el);
    if (labels && labels.length) {
      const t = collapse(labels[0].innerText || labels[0].textContent);
      if (t) return t;
    }
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria.trim();
    if (item) {
      const l = item.querySelector('label');
      if (l) {
        const t = collapse(String(l.innerText || l.textContent).replace(/[:：*\s]+$/u, ''));
        if (t) return t;
      }
    }
    const prev = el.previousElementSibling;
    if (prev) {
      const t = collapse(prev.innerText || prev.textContent);
      if (t && t.length <= 60) return t;
    }
    const ph = el.getAttribute('placeholder');
    return ph ? ph : null;
  };
  const displayValue = (el) => {
    const host = el.parentElement && el.parentElement.closest('[class*="select"], [class*="picker"], [class*="combobox"]');
    if (!host) return null;
    for (const n of host.querySelectorAll('[class*="selection-item"], [class*="select__select"], [class*="select__value"], [class*="selected-item"], [class*="select-value"]')) {
      if (classText(n).includes('placeholder')) continue;
      const t = collapse(n.innerText || n.textContent);
      if (t) return t;
    }
    return null;
  };
  const validityOf = (el) => {
    if (!el.willValidate || !el.validity) return null;
    const v = el.validity;
    return {
      valid: v.valid, valueMissing: v.valueMissing, typeMismatch: v.typeMismatch,
      patternMismatch: v.patternMismatch, tooShort: v.tooShort, tooLong: v.tooLong,
      rangeUnderflow: v.rangeUnderflow, rangeOverflow: v.rangeOverflow, stepMismatch: v.stepMismatch,
      badInput: v.badInput, customError: v.customError,
      message: v.valid ? null : String(el.validationMessage || '').slice(0, 300) || null,
    };
  };
  const max = args.max;
  const fields = [];
  const errors = [];
  for (const el of scope.querySelectorAll('input, textarea, select')) {
    if (fields.length >= max) break;
    const tag = el.localName;
    const typeAttr = el.getAttribute('type');
    const type = typeAttr ? typeAttr.toLowerCase() : tag;
    if (type === 'hidden' && !args.includeHidden) continue;
    const visible = visibleOf(el);
    if (!visible && !args.includeHidden) continue;
    const item = lib.fieldItem(el);
    const validity = validityOf(el);
    const password = tag === 'input' && String(el.type).toLowerCase() === 'password';
    const found = lib.fieldError(el, item);
    const invalid = found.invalid;
    // A password's browser message is said without what it tells of the value (its length).
    const error = password && found.from === null ? lib.passwordMessage(found.error) : found.error;
    let value = 'value' in el ? (el.value === undefined || el.value === null ? null : String(el.value)) : null;
    let valueFrom = 'dom';
    if (password) {
      value = '[redacted]';
      if (validity) validity.message = lib.passwordMessage(validity.message);
    } else if (value === '' || value === null) {
      const shown = displayValue(el);
      if (shown !== null) {
        value = shown;
        valueFrom = 'display';
      }
    }
    if (value !== null && value.length > 2000) value = value.slice(0, 2000);
    const label = labelOf(el, item);
    const field = {
      label,
      id: el.getAttribute('id'),
      name: el.getAttribute('name'),
      type,
      value,
      valueFrom,
      checked: typeof el.checked === 'boolean' ? el.checked : null,
      disabled: !!el.disabled,
      readOnly: !!el.readOnly,
      required: !!el.required || String(el.getAttribute('aria-required')).toLowerCase() === 'true',
      visible,
      invalid,
      error,
      placeholder: el.getAttribute('placeholder'),
      validity,
    };
    fields.push(field);
    if (invalid || error !== null) errors.push({ label, id: field.id, error });
  }
  return lib.ok({ count: fields.length, errorCount: errors.length, errors, fields, truncated: fields.length >= max });
})
