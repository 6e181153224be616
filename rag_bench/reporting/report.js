// The report's tables and drill-down viewer (rag_bench/reporting/page.py says what it does).
// Every map keyed by a string from the URL or the data (cell ids, question ids, hash keys) has no
// prototype: `#drill=toString` or `pick=constructor` must find nothing, not Object's own members.
function dict(o) { var m = Object.create(null); if (o) Object.keys(o).forEach(function (k) { m[k] = o[k]; }); return m; }
var RB = {data: dict(), qs: dict(), ps: [], pending: null, state: dict(), scripts: dict(RB_SCRIPTS)};
RB.questions = function (q) { RB.qs = dict(q); };
RB.passages = function (p) { RB.ps = p; };
RB.cell = function (c) { RB.data[c.id] = c; if (RB.pending === c.id) { RB.pending = null; RB.render(); } RB.side(); };
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
RB.requested = dict();
RB.fetch = function (id) {  // a cell's drill-down script, once
  if (RB.data[id] || RB.requested[id] || !RB.scripts[id]) return;
  RB.requested[id] = true; var s = document.createElement('script'); s.src = RB.scripts[id]; document.head.appendChild(s);
};
RB.load = function (id) {
  if (!id || RB.data[id]) { RB.render(); return; }
  if (!RB.scripts[id]) return;
  RB.pending = id; RB.fetch(id);
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
  meta.appendChild(el('span', ' \u00b7 ' + (q.answerable ? 'answerable' : 'unanswerable') + ' \u00b7 '));
  (q.tags || []).forEach(function (t) { meta.appendChild(el('span', t, 'tag')); }); d.appendChild(meta);
  // A conversation question: the turns before it, oldest first (the question is the next user turn).
  if ((q.history || []).length) {
    d.appendChild(el('h4', 'Conversation before the question (' + q.history.length + ' turns)'));
    var hist = el('div', null, 'rb-history');
    q.history.forEach(function (t) { var p = el('p'); p.appendChild(el('b', t[0] + ': ')); p.appendChild(el('span', t[1])); hist.appendChild(p); });
    d.appendChild(hist);
  }
  // The answer first (what the question was for), then what it was judged against, then the evidence trail.
  d.appendChild(el('h4', 'Answer'));
  d.appendChild(el('p', r.answer === null ? '(no answer)' : r.answer));
  if (r.error) d.appendChild(el('p', 'error: ' + r.error, 'bad'));
  if (r.citations.length) {
    var cp = el('p', 'citations: ');
    r.citations.forEach(function (x) { cp.appendChild(el('span', '[' + x.n + '] ' + (x.chunk || 'no such passage') + (x.relevant ? ' \u2713 ' : ' \u2717 '), x.relevant ? 'ok' : 'bad')); });
    d.appendChild(cp);
  }
  if ((r.claims || []).length) { d.appendChild(el('h4', 'Claims (offline judge: supported by the passages each cites?)')); d.appendChild(RB.claims(r.claims)); }
  var judge = Object.keys(r.judge || {});
  if (judge.length) d.appendChild(el('p', 'judge: ' + judge.map(function (k) { var v = r.judge[k]; return k + '=' + (v === null ? 'failed' : (+v).toFixed(3)); }).join('  ')));
  if ((q.answers || []).length || (q.facts || []).length) { d.appendChild(el('h4', 'Reference')); d.appendChild(el('p', (q.answers || []).concat(q.facts || []).join(' | '))); }
  d.appendChild(el('h4', 'Gold evidence (' + (q.evidence || []).length + ')'));
  (q.evidence || []).forEach(function (e) { d.appendChild(el('div', '[' + e.doc + ', grade ' + e.grade + '] ' + e.text, 'pass rel')); });
  if ((r.parsed || []).length) {  // the evidence in this cell's parse: the span marked, its page, how it was located
    d.appendChild(el('h4', 'Evidence in the parse (parser=' + r.parser + ')'));
    r.parsed.forEach(function (e) {
      var box = el('div', null, 'pass rb-parsed ' + (e.text ? 'rel' : 'bad'));
      box.dataset.method = e.method;
      var where = e.doc + (e.page ? ', page ' + e.page + ' of ' + e.pages : '');
      if (!e.text) { box.appendChild(el('b', '[' + where + '] ' + e.why)); d.appendChild(box); return; }
      box.appendChild(el('b', '[' + where + '] located: ' + e.method + '\n'));
      box.appendChild(el('span', e.text[0])); box.appendChild(el('mark', e.text[1], 'loc-' + e.method)); box.appendChild(el('span', e.text[2]));
      d.appendChild(box);
    });
  }
  if (r.query) {  // what the query transform made of the question, searched instead of it (fused by RRF when several)
    d.appendChild(el('h4', 'Searched with (query=' + r.query.name + (r.query.fallback ? ', fell back to the question' : '') + ')'));
    if (r.query.fallback) d.appendChild(el('p', 'fallback: ' + r.query.fallback, 'bad'));
    if (r.query.output) d.appendChild(el('div', r.query.output, 'pass rb-query-output'));
    var ql = el('ol'); r.query.texts.forEach(function (t, i) {
      var li = el('li', t, 'rb-query-text'), f = (r.query.first_relevant || [])[i], top = (r.query.top || [])[i];
      if (f !== undefined) li.appendChild(el('div', 'alone: first relevant at rank ' + (f === null ? 'none' : f) + (top ? '; top ' + top.length + ': ' + top.join(', ') : ''), f === null ? 'bad' : 'ok'));
      ql.appendChild(li); });
    d.appendChild(ql);
  }
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
// The answer's claims: each with its verdict, its citations and the window its verdict rests on, marked.
RB.claims = function (claims) {
  var box = el('div', null, 'rb-claims');
  claims.forEach(function (c, i) {
    var line = el('div', null, 'rb-claim ' + (c.supported ? 'ok' : (c.undecided ? 'undecided' : 'bad')));
    line.appendChild(el('b', (c.supported ? '\u2713 ' : (c.undecided ? '? ' : '\u2717 ')) + (i + 1) + '. '));
    line.appendChild(el('span', c.text, 'rb-claim-text'));
    var why = c.citations.length ? ' cites [' + c.citations.join(', ') + ']' : ' cites nothing';
    why += c.supported ? ': supported' : (c.undecided ? ': undecided (the evidence is ambiguous)' : (c.context_supported ? ': not by its citations; an uncited passage supports it' : ': unsupported'));
    if (!c.supported && c.missing.length) why += ' (missing: ' + c.missing.join(', ') + ')';
    line.appendChild(el('span', why, 'note'));
    if (c.evidence) {
      var ex = el('div', null, 'rb-excerpt');
      ex.appendChild(el('span', '[' + c.evidence.passage + '] ', 'note'));
      ex.appendChild(el('span', c.evidence.parts[0]));
      ex.appendChild(el('mark', c.evidence.parts[1], c.evidence.kind));
      ex.appendChild(el('span', c.evidence.parts[2]));
      line.appendChild(ex);
    }
    box.appendChild(line);
  });
  return box;
};
// Answers side by side: the top N cells and the picked ones, one row per question.
RB.sideIds = function (st) {
  var n = parseInt(st.side || '', 10), sel = document.getElementById('rb-side-n');
  if (isNaN(n) || n < 1) n = parseInt(sel.dataset.default, 10);
  n = Math.min(n, RB_RANKED.length); sel.value = String(Math.min(n, sel.options.length));
  var ids = RB_RANKED.slice(0, n);
  (st.pick || '').split(',').forEach(function (id) { if (id && ids.indexOf(id) < 0 && RB.scripts[id]) ids.push(id); });
  return ids;
};
RB.right = function (r, q) {  // null: nothing to judge the answer by
  var c = r.measures ? r.measures.correct : undefined;
  if (c !== undefined && c !== null) return c > 0;
  if (q && q.answerable === false && r.refused !== null && r.refused !== undefined) return !!r.refused;
  return null;
};
RB.side = function () {
  var table = document.getElementById('rb-side'); if (!table) return;
  var st = RB.state, ids = RB.sideIds(st), missing = ids.filter(function (id) { return !RB.data[id]; });
  document.getElementById('rb-side-differ').checked = st.differ === '1';
  if (missing.length) { missing.forEach(RB.fetch); return; }  // RB.cell calls back when each arrives
  var cells = ids.map(function (id) { return RB.data[id]; });
  var head = table.tHead; head.textContent = ''; var hr = el('tr'); hr.appendChild(el('th', 'question', 'l'));
  cells.forEach(function (c, i) { hr.appendChild(el('th', (RB_RANKED.indexOf(c.id) + 1) + '. ' + c.name, 'l')); });
  head.appendChild(hr);
  var rowsOf = cells.map(function (c) { var m = dict(); c.rows.forEach(function (r) { m[r.qid] = r; }); return m; });
  var body = table.tBodies[0]; body.textContent = ''; var shown = 0, total = 0;
  cells[0] && cells[0].rows.forEach(function (r0) {
    var qid = r0.qid, q = RB.qs[qid] || {}; total++;
    if (st.sq && st.sq !== qid) return;
    var verdicts = rowsOf.map(function (m) { return m[qid] ? RB.right(m[qid], q) : null; });
    var judged = verdicts.filter(function (v) { return v !== null; });
    var differ = judged.indexOf(true) >= 0 && judged.indexOf(false) >= 0;
    if (st.differ === '1' && !differ) return;
    shown++;
    var tr = el('tr'); tr.dataset.qid = qid; if (differ) tr.className = 'differ';
    var qc = el('td', null, 'l q'); var qa = el('a', qid); qa.href = '#'; qa.onclick = function (e) { e.preventDefault(); RB.go({sq: st.sq === qid ? '' : qid}); };
    qc.appendChild(qa); qc.appendChild(el('div', q.question || ''));
    qc.appendChild(el('div', (q.answerable === false ? 'unanswerable' : 'reference: ' + (q.answers || []).concat(q.facts || []).join(' | ')), 'note'));
    tr.appendChild(qc);
    rowsOf.forEach(function (m, i) {
      var r = m[qid], td = el('td', null, 'l ans'); tr.appendChild(td);
      if (!r) { td.appendChild(el('span', '(not asked)', 'note')); return; }
      var v = verdicts[i];
      td.appendChild(el('b', v === null ? '? ' : (v ? '\u2713 right ' : '\u2717 wrong '), v === null ? '' : (v ? 'ok' : 'bad')));
      var lab = el('a', r.label || ''); lab.href = '#drill=' + encodeURIComponent(cells[i].id) + '&q=' + encodeURIComponent(qid); lab.className = 'tag';
      td.appendChild(lab);
      td.appendChild(el('div', r.answer === null ? '(no answer)' : (r.refused ? '(refused) ' : '') + r.answer, 'rb-answer'));
      if (r.citations.length) {
        var cp = el('div', null, 'note');
        r.citations.forEach(function (x) { cp.appendChild(el('span', '[' + x.n + ']' + (x.relevant ? '\u2713 ' : '\u2717 '), x.relevant ? 'ok' : 'bad')); });
        td.appendChild(cp);
      }
      if ((r.claims || []).length) td.appendChild(RB.claims(r.claims));
    });
    body.appendChild(tr);
  });
  document.getElementById('rb-side-count').textContent = shown + ' of ' + total + ' questions';
  document.body.dataset.sideCells = String(cells.length);
  document.body.dataset.sideRows = String(shown);
};
RB.effect = function (key) {  // the main-effects block of one measure
  var blocks = Array.from(document.querySelectorAll('.rb-effect')); if (!blocks.length) return;
  if (!blocks.some(function (b) { return b.dataset.measure === key; })) key = blocks[0].dataset.measure;
  blocks.forEach(function (b) { b.hidden = b.dataset.measure !== key; });
  var s = document.getElementById('rb-effect'); if (s) s.value = key;
  document.body.dataset.effect = key;
};
RB.parse = function () {
  var st = dict(); location.hash.replace(/^#/, '').split('&').forEach(function (kv) { var i = kv.indexOf('='); if (i > 0) st[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); });
  return st;
};
RB.go = function (change) {
  RB.stay = true;  // a click inside the viewer: keep the scroll position
  var st = Object.assign(dict(), RB.state, change), parts = [];
  Object.keys(st).forEach(function (k) { if (st[k]) parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(st[k])); });
  location.hash = parts.join('&');
};
RB.apply = function () {
  var st = RB.parse(); RB.state = st;
  if (st.drill && !RB.scripts[st.drill]) delete st.drill;  // names no cell: the first cell's, as with none
  var lb = document.getElementById('rb-leaderboard');
  if (st.sort && lb) { var i = st.sort.lastIndexOf(':'); sortTable(lb, i > 0 ? st.sort.slice(0, i) : st.sort, i > 0 ? st.sort.slice(i + 1) : null); }
  var stay = RB.stay; RB.stay = false;
  document.body.classList.toggle('only-drill', st.only === 'drill');  // #...&only=drill: the viewer alone
  // #only=<section>: that section alone (a link to one view, a screenshot)
  Array.from(document.querySelectorAll('#rb-main > section, #rb-main > .rb-head')).forEach(function (x) {
    x.hidden = !!st.only && st.only !== 'drill' && x.dataset.sec !== st.only;
  });
  document.body.classList.toggle('only-section', !!st.only && st.only !== 'drill');
  RB.effect(st.effect || '');
  RB.side();
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
  var eff = document.getElementById('rb-effect');
  if (eff) eff.onchange = function () { RB.go({effect: eff.value}); };
  var sn = document.getElementById('rb-side-n'), sa = document.getElementById('rb-side-add'), sd = document.getElementById('rb-side-differ');
  if (sn) sn.onchange = function () { RB.go({side: sn.value}); };
  if (sa) sa.onchange = function () { var p = (RB.state.pick || '').split(',').filter(Boolean); if (sa.value && p.indexOf(sa.value) < 0) p.push(sa.value); sa.value = ''; RB.go({pick: p.join(',')}); };
  if (sd) sd.onchange = function () { RB.go({differ: sd.checked ? '1' : ''}); };
  var sr = document.getElementById('rb-side-reset');
  if (sr) sr.onclick = function (e) { e.preventDefault(); RB.go({side: '', pick: '', differ: '', sq: ''}); };
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
