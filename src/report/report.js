// The report page's behaviour (inlined into the page by html.rs): filters and search over the
// steps, a step's details on a click of its row, screenshots loaded as their rows come into
// view and enlarged on a click, links from the summary, the timeline and the error to steps.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var steps = Array.prototype.slice.call(document.querySelectorAll('.step'));
  var search = $('search'), status = $('filter-status'), method = $('filter-method'),
      lane = $('filter-lane'), shown = $('shown');
  var texts = null;

  function apply() {
    var q = search.value.trim().toLowerCase();
    if (q && !texts) {
      texts = steps.map(function (s) { return s.textContent.toLowerCase(); });
    }
    var n = 0;
    steps.forEach(function (s, i) {
      var ok = s.dataset.ok === 'true';
      var visible = (!status.value || (status.value === 'ok') === ok) &&
        (!method.value || s.dataset.method === method.value) &&
        (!lane.value || s.dataset.lane === lane.value) &&
        (!q || texts[i].indexOf(q) >= 0);
      s.hidden = !visible;
      if (visible) { n++; }
    });
    shown.textContent = n + ' of ' + steps.length + ' shown';
  }
  [search, status, method, lane].forEach(function (el) {
    el.addEventListener('input', apply);
    el.addEventListener('change', apply);
  });

  // Images load only when their row is near the viewport (or opened).
  function load(step) {
    var src = step.dataset.shot;
    if (!src) { return; }
    step.querySelectorAll('img[data-lazy]').forEach(function (img) {
      img.src = src;
      img.removeAttribute('data-lazy');
    });
  }
  var observer = 'IntersectionObserver' in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { load(e.target); observer.unobserve(e.target); }
    });
  }, { rootMargin: '800px' }) : null;
  steps.forEach(function (s) {
    if (s.dataset.shot) { if (observer) { observer.observe(s); } else { load(s); } }
  });

  function open(step, on) {
    var detail = step.querySelector('.detail');
    var opening = on === undefined ? detail.hidden : on;
    detail.hidden = !opening;
    step.classList.toggle('open', opening);
    if (opening) { load(step); }
  }

  function go(index) {
    var step = $('step-' + index);
    if (!step) { return; }
    if (step.hidden) {
      search.value = ''; status.value = ''; method.value = ''; lane.value = '';
      apply();
    }
    open(step, true);
    step.scrollIntoView({ block: 'center' });
    step.classList.add('flash');
    setTimeout(function () { step.classList.remove('flash'); }, 1500);
  }

  function enlarge(step) {
    var src = step.dataset.full || step.dataset.shot;
    if (!src) { return; }
    var box = $('lightbox'), dot = $('lightbox-dot');
    $('lightbox-img').src = src;
    var click = step.dataset.click, size = step.dataset.size;
    if (click && size && step.querySelector('.detail .dot')) {
      var p = click.split(',').map(Number), z = size.split(',').map(Number);
      dot.style.left = (p[0] / z[0] * 100) + '%';
      dot.style.top = (p[1] / z[1] * 100) + '%';
      dot.hidden = false;
    } else {
      dot.hidden = true;
    }
    var msg = step.querySelector('.msg').textContent;
    $('lightbox-caption').textContent = '#' + step.dataset.index + ' ' + step.dataset.method +
      (msg ? ' — ' + msg : '');
    box.dataset.step = step.dataset.index;
    box.hidden = false;
  }

  function closeLightbox() { $('lightbox').hidden = true; }

  document.addEventListener('click', function (ev) {
    var t = ev.target;
    if (t.closest('#lightbox')) { closeLightbox(); return; }
    var link = t.closest('a[data-step]');
    if (link) { ev.preventDefault(); go(link.dataset.step); return; }
    var img = t.closest('img.thumb, img.shot-img');
    if (img) { enlarge(img.closest('.step')); return; }
    var row = t.closest('.row');
    if (row) { open(row.parentElement); }
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') { closeLightbox(); return; }
    if (ev.key === 'Enter' && ev.target.classList && ev.target.classList.contains('row')) {
      open(ev.target.parentElement);
    }
  });

  // Every row is shown as the page comes (the count is written with it): no pass over the rows.
  var m = /^#step-(\d+)$/.exec(location.hash);
  if (m) { go(m[1]); }
}());
