// Added to every tab of a task before any page script (COMMANDS.md, JS-PROBES.md: stealth init
// script): `navigator.webdriver` reads false, as in a browser nobody automates.
(() => {
  try {
    Object.defineProperty(Navigator.prototype, 'webdriver', {
      get: () => false,
      configurable: true,
      enumerable: true,
    });
  } catch (e) {
    // A page cannot run before this; nothing else to do.
  }
})();
