// rag-bench label: every text is set with textContent (never innerHTML); the data comes from the
// JSON block #lb-data. State: the labels (old and new), the current answer and the current measure.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("lb-data").textContent);
  var items = data.items, measures = data.measures, labels = data.labels.slice(), scale = data.scale || 1;
  var cur = 0, m = 0;
  // The labeller types a name before any key counts: the page never guesses one (a name carried
  // over from the labels file let the next person overwrite that labeller's verdicts and notes).
  var who = document.getElementById("lb-labeller");
  function name() { return who.value.trim(); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function find(it, measure) {
    for (var i = 0; i < labels.length; i++) {
      var l = labels[i];
      if (l.qid === it.qid && l.measure === measure && l.labeller === name() &&
          (l.answer_sha256 === it.answer_sha256 || (!l.answer_sha256 && l.cell === data.cell))) { return i; }
    }
    return -1;
  }
  function done(it) { return measures.every(function (ms) { return find(it, ms) >= 0; }); }
  function progress() {
    var n = items.filter(done).length;
    document.getElementById("lb-progress").textContent = name() ? n + " / " + items.length + " answers labelled by " +
      name() : "type your name in Labeller first";
    document.body.dataset.labelled = String(n);
    document.body.dataset.current = String(cur);
  }
  function show() {
    var box = document.getElementById("lb-item"), it = items[cur];
    box.textContent = "";
    if (!it) { box.appendChild(el("p", "muted", "No answers to label.")); progress(); return; }
    box.appendChild(el("div", "muted", "answer " + (cur + 1) + " of " + items.length + " · " + it.qid +
      (it.answerable ? "" : " · unanswerable (the right answer is a refusal)")));
    (it.history || []).forEach(function (t) {  // a conversation: the turns before the question, oldest first
      box.appendChild(el("div", "muted hist", t[0] + ": " + t[1]));
    });
    box.appendChild(el("div", "q", it.question));
    measures.forEach(function (ms, i) {
      var k = find(it, ms), v = "?";
      if (k >= 0) { v = (labels[k].scale || 1) > 1 ? labels[k].value + "/" + labels[k].scale : (labels[k].value ? "yes" : "no"); }
      box.appendChild(el("span", "meas" + (i === m ? " active" : ""), ms + ": " + v));
    });
    box.appendChild(el("h3", null, "Answer"));
    box.appendChild(el("div", "ans", it.answer));
    var cites = el("p");
    if (!it.citations.length) { cites.appendChild(el("span", "muted", it.refused ? "refused; no citations" : "no citations")); }
    it.citations.forEach(function (c) {
      cites.appendChild(el("span", c.ok ? "ok" : "bad", "[" + c.marker + "] " + (c.ok ? "→ " + c.passage + " ✓" : "names no passage it was given ✗") + "  "));
    });
    box.appendChild(cites);
    if ((it.claims || []).length) {
      box.appendChild(el("h3", null, "Claims, as the offline judge saw them"));
      it.claims.forEach(function (c, i) {
        var d = el("div", "claim " + (c.supported ? "ok" : (c.undecided ? "undecided" : "bad")));
        d.dataset.claim = String(i + 1);
        d.appendChild(el("b", null, (c.supported ? "✓ " : (c.undecided ? "? " : "✗ ")) + (i + 1) + ". "));
        d.appendChild(el("span", null, c.text));
        var why = c.citations.length ? "  cites [" + c.citations.join(", ") + "]" : "  cites nothing";
        why += c.supported ? ": supported" : (c.undecided ? ": undecided (the evidence is ambiguous)" : (c.context_supported ? ": not by its citations; an uncited passage supports it" : ": unsupported"));
        if (!c.supported && c.missing.length) { why += " (missing: " + c.missing.join(", ") + ")"; }
        if (c.evidence) { why += " · marked in passage [" + c.evidence.passage + "]"; }
        d.appendChild(el("span", "muted", why));
        box.appendChild(d);
      });
    }
    box.appendChild(el("h3", null, "References"));
    if (!it.references.length) { box.appendChild(el("p", "muted", it.answerable ? "none in the dataset" : "none: unanswerable")); }
    it.references.forEach(function (r) { box.appendChild(el("p", "ref", r)); });
    box.appendChild(el("h3", null, "Passages given to the generator"));
    var cited = {};
    it.citations.forEach(function (c) { if (c.ok) { cited[c.passage] = true; } });
    it.context.forEach(function (p, i) {
      var d = el("div", "pass" + (cited[p.id] ? " cited" : ""));
      d.appendChild(el("b", null, "[" + (i + 1) + "] " + p.id + "\n"));
      (p.segments || [{text: p.text, claims: [], kinds: []}]).forEach(function (g) {
        if (!g.claims.length) { d.appendChild(document.createTextNode(g.text)); return; }
        var mk = el("mark", g.kinds.join(" "), g.text);  // the window a claim's verdict rests on
        mk.dataset.claims = g.claims.join(",");
        mk.title = "claim " + g.claims.join(", ");
        var sup = el("sup", null, g.claims.join(","));
        d.appendChild(sup);
        d.appendChild(mk);
      });
      box.appendChild(d);
    });
    progress();
  }
  function set(value) {
    var it = items[cur];
    if (!it) { return; }
    var row = {qid: it.qid, answer_sha256: it.answer_sha256, measure: measures[m], value: value, labeller: name()};
    if (scale > 1) { row.scale = scale; }
    if (data.sample) { row.sample = data.sample; }
    var k = find(it, measures[m]);  // this labeller's own label only: others' are never replaced
    if (k >= 0 && labels[k].note) { row.note = labels[k].note; }
    if (k >= 0) { labels[k] = row; } else { labels.push(row); }
    if (m < measures.length - 1) { m += 1; } else { m = 0; if (cur < items.length - 1) { cur += 1; } }
    show();
  }
  function clear() {
    var it = items[cur];
    measures.forEach(function (ms) { var k = find(it, ms); if (k >= 0) { labels.splice(k, 1); } });
    m = 0; show();
  }
  document.addEventListener("keydown", function (e) {
    if (e.target === who) { if (e.key === "Enter") { who.blur(); } return; }
    var k = e.key;
    var digit = k.length === 1 && k >= "0" && k <= "9" ? Number(k) : -1;
    var ours = k === "y" || k === "n" || k === "u" || k === "ArrowRight" || k === "ArrowLeft" || (digit >= 0 && digit <= scale);
    if (!ours) { return; }
    if (!name() && k.indexOf("Arrow") !== 0) { progress(); who.focus(); e.preventDefault(); return; }
    if (k === "y") { set(scale); } else if (k === "n") { set(0); }
    else if (digit >= 0 && digit <= scale) { set(digit); }
    else if (k === "ArrowRight") { cur = Math.min(cur + 1, items.length - 1); m = 0; show(); }
    else if (k === "ArrowLeft") { cur = Math.max(cur - 1, 0); m = 0; show(); }
    else if (k === "u") { clear(); } else { return; }
    e.preventDefault();
  });
  function resume() {  // continue where this labeller stopped: the first answer they have not fully labelled
    for (cur = 0; cur < items.length - 1 && done(items[cur]); cur++) { /* skip */ }
    m = 0;
    show();
  }
  who.addEventListener("change", resume);
  document.getElementById("lb-download").addEventListener("click", function () {
    var text = labels.map(function (l) { return JSON.stringify(l); }).join("\n") + (labels.length ? "\n" : "");
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: "application/x-ndjson"}));
    a.download = "labels.jsonl";
    document.body.appendChild(a); a.click(); a.remove();
    document.body.dataset.downloaded = String(labels.length);
  });
  resume();
  document.body.dataset.ready = "1";
}());
