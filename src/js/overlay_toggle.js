(args) => {
  // Hides or shows the highlight overlay around screenshots (JS-PROBES.md §3).
  try {
    const c = document.getElementById('playwright-highlight-container');
    if (!c) return { existed: false };
    c.style.display = args && args.show ? '' : 'none';
    return { existed: true };
  } catch (e) {
    return { existed: false };
  }
}
