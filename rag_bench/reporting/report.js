// The report's tables and drill-down viewer (rag_bench/reporting/page.py says what it does).
var RB = {data: {}, qs: {}, ps: [], pending: null, state: {}};
RB.questions = function (q) { RB.qs = q; };
RB.passages = function (p) { RB.ps = p; };
RB.cell = function (c) { RB.data[c.id] = c; if (RB.pending === c.id) { RB.pending = null; RB.render(); } };
function el(tag, text, cls) { var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
function num(v) { var x = parseFloat(v); return isNaN(x) ? null : x; }
function sortTable(t, col, dir) {
  var ths = t.tHead.rows[0].cells, body = t.tBodies[0], rows = Array.from(body.rows);
  for (var i = 0; i < ths.length; i++) ths[i].classList.remove('asc', 'desc');
  var idx = Array.from(ths).findIndex(function (h) { return h.textContent === col; });
  if (idx < 0) return;
  if (!dir) dir = ths[idx].dataset.dir === 'desc' ? 'asc' : 'desc';
  ths[idx].dataset.dir = dir; ths[idx].classList.add(dir);
  rows.sort(function (a, b) {
    var x = a.cells[idx].dataset.v, y = b.cells[idx].dataset.v, nx = num(x), ny = num(y), r;
    if (x === undefined || x === '') return 1; if (y === undefined || y === '') return -1;
    r = (nx !== null && ny !== null) ? nx - ny : String(x).localeCompare(String(y));
    return dir === 'asc' ? r : -r;
  });
  rows.forEach(function (r) { body.appendChild(r); });
  document.body.dataset.sorted = col + ':' + dir;
}
function filterTable(t, q) {
  var terms = q.toLowerCase().split(/\s+/).filter(Boolean);
  Array.from(t.tBodies[0].rows).forEach(function (r) {
    var s = r.textContent.toLowerCase(); r.style.display = terms.every(function (w) { return s.indexOf(w) >= 0; }) ? '' : 'none';
  });
}
RB.load = function (id) {
  if (!id || RB.data[id]) { RB.render(); return; }
  if (!RB_SCRIPTS[id]) return;
  RB.pending = id; var s = document.createElement('script'); s.src = RB_SCRIPTS[id]; document.head.appendChild(s);
};
RB.render = function () {
  var st = RB.state, c = RB.data[st.drill]; if (!c) return;
  document.getElementById('rb-cell').value = st.drill;
  document.getElementById('rb-label').value = st.label || '';
  document.getElementById('rb-tag').value = st.tag || '';
  var body = document.querySelector('#rb-qs tbody'); body.textContent = '';
  var shown = 0;
  c.rows.forEach(function (r) {
    var q = RB.qs[r.qid] || {}, tags = q.tags || [];
    if (st.label && r.label !== st.label) return; if (st.tag && tags.indexOf(st.tag) < 0) return;
    var tr = el('tr'); tr.dataset.qid = r.qid; shown++;
    tr.appendChild(el('td', r.qid, 'l')); tr.appendChild(el('td', q.question || '', 'l')); tr.appendChild(el('td', r.label || '', 'l'));
    tr.appendChild(el('td', Object.keys(r.measures).map(function (k) { var v = r.measures[k]; return k + '=' + (v === null ? 'n/a' : (+v).toFixed(2)); }).join(' '), 'l'));
    if (r.qid === st.q) tr.className = 'open';
    tr.onclick = function () { RB.go({q: r.qid}); };
    body.appendChild(tr);
  });
  document.getElementById('rb-count').textContent = shown + ' of ' + c.rows.length + ' questions';
  document.body.dataset.drillCell = st.drill;
  RB.detail(c, st.q);
};
RB.detail = function (c, qid) {
  var d = document.getElementById('rb-detail'); d.textContent = '';
  var r = c.rows.find(function (x) { return x.qid === qid; }); if (!r) return;
  var q = RB.qs[qid] || {};
  d.appendChild(el('h3', qid + ': ' + (q.question || '')));
  var meta = el('p'); meta.appendChild(el('b', 'label: ')); meta.appendChild(el('span', r.label || '', 'rb-label-value'));
  meta.appendChild(el('span', '   ' + (q.answerable ? 'answerable' : 'unanswerable') + '  '));
  (q.tags || []).forEach(function (t) { meta.appendChild(el('span', t, 'tag')); }); d.appendChild(meta);
  // The answer first (what the question was for), then what it was judged against, then the evidence trail.
  d.appendChild(el('h4', 'Answer'));
  d.appendChild(el('p', r.answer === null ? '(no answer)' : r.answer));
  if (r.error) d.appendChild(el('p', 'error: ' + r.error, 'bad'));
  if (r.citations.length) {
    var cp = el('p', 'citations: ');
    r.citations.forEach(function (x) { cp.appendChild(el('span', '[' + x.n + '] ' + (x.chunk || 'no such passage') + (x.relevant ? ' \u2713 ' : ' \u2717 '), x.relevant ? 'ok' : 'bad')); });
    d.appendChild(cp);
  }
  var judge = Object.keys(r.judge || {});
  if (judge.length) d.appendChild(el('p', 'judge: ' + judge.map(function (k) { var v = r.judge[k]; return k + '=' + (v === null ? 'failed' : (+v).toFixed(3)); }).join('  ')));
  if ((q.answers || []).length || (q.facts || []).length) { d.appendChild(el('h4', 'Reference')); d.appendChild(el('p', (q.answers || []).concat(q.facts || []).join(' | '))); }
  d.appendChild(el('h4', 'Gold evidence (' + (q.evidence || []).length + ')'));
  (q.evidence || []).forEach(function (e) { d.appendChild(el('div', '[' + e.doc + ', grade ' + e.grade + '] ' + e.text, 'pass rel')); });
  d.appendChild(el('h4', 'Ranked passages (top ' + r.ranked.length + ' of ' + r.retrieved + '; first relevant at rank ' + (r.first_relevant === null ? 'none' : r.first_relevant) + ')'));
  r.ranked.forEach(function (p, i) {
    var ctx = r.context.indexOf(p[1]) >= 0;
    var box = el('div', null, 'pass' + (p[3] > 0 ? ' rel' : '') + (ctx ? ' ctx' : ''));
    box.appendChild(el('b', '#' + (i + 1) + ' ' + p[1] + '  score ' + (p[2] === null ? 'n/a' : (+p[2]).toFixed(4)) + '  grade ' + (p[3] === null ? '?' : p[3]) + (ctx ? '  [in context]' : '') + '\n'));
    box.appendChild(el('span', p[0] === null ? '(text unavailable)' : RB.ps[p[0]], 'rb-passage'));
    d.appendChild(box);
  });
  (r.context_extra || []).forEach(function (n) { d.appendChild(el('div', '[context, expanded] ' + RB.ps[n], 'pass ctx')); });
  document.body.dataset.drillQ = qid;
};
RB.parse = function () {
  var st = {}; location.hash.replace(/^#/, '').split('&').forEach(function (kv) { var i = kv.indexOf('='); if (i > 0) st[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); });
  return st;
};
RB.go = function (change) {
  RB.stay = true;  // a click inside the viewer: keep the scroll position
  var st = Object.assign({}, RB.state, change), parts = [];
  Object.keys(st).forEach(function (k) { if (st[k]) parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(st[k])); });
  location.hash = parts.join('&');
};
RB.apply = function () {
  var st = RB.parse(); RB.state = st;
  var lb = document.getElementById('rb-leaderboard');
  if (st.sort && lb) { var i = st.sort.lastIndexOf(':'); sortTable(lb, i > 0 ? st.sort.slice(0, i) : st.sort, i > 0 ? st.sort.slice(i + 1) : null); }
  var stay = RB.stay; RB.stay = false;
  document.body.classList.toggle('only-drill', st.only === 'drill');  // #...&only=drill: the viewer alone
  if (st.drill) {
    RB.load(st.drill);
    var x = document.getElementById('drill');
    if (x && !stay && !st.sort && st.scroll !== 'no') x.scrollIntoView();  // a link from a chart or table
  }
};
window.addEventListener('hashchange', function () { RB.apply(); });
window.addEventListener('load', function () {
  Array.from(document.querySelectorAll('table.rb-sort')).forEach(function (t) {
    Array.from(t.tHead.rows[0].cells).forEach(function (th) { th.onclick = function () { sortTable(t, th.textContent); }; });
  });
  Array.from(document.querySelectorAll('input.rb-filter')).forEach(function (inp) {
    inp.oninput = function () { filterTable(document.getElementById(inp.dataset.table), inp.value); };
  });
  ['rb-cell', 'rb-label', 'rb-tag'].forEach(function (id) {
    var s = document.getElementById(id); if (!s) return;
    s.onchange = function () { var ch = {}; ch[id === 'rb-cell' ? 'drill' : id.slice(3)] = s.value; if (id === 'rb-cell') ch.q = ''; RB.go(ch); };
  });
  var imgs = Array.from(document.images);
  document.body.dataset.imagesOk = imgs.every(function (i) { return i.complete && i.naturalWidth > 0; }) ? 'true' : 'false';
  document.body.dataset.images = String(imgs.length);
  RB.apply();
  var first = document.getElementById('rb-cell');
  if (!RB.state.drill && first && first.value) { RB.state.drill = first.value; RB.load(first.value); }
});
