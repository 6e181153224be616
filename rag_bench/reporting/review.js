// rag-bench review: every text is set with textContent (never innerHTML); the data comes from the
// JSON block #rv-data. State: the decisions (old and new) and the current question.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rv-data").textContent);
  var items = data.items, types = data.types, decisions = data.decisions.slice();
  var cur = 0;
  var who = document.getElementById("rv-reviewer");
  function name() { return who.value.trim(); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function last(it) {  // the decision that counts for a question: the last one about it, whoever made it
    for (var i = decisions.length - 1; i >= 0; i--) {
      if (decisions[i].id === it.id && decisions[i].row_sha256 === it.row_sha256) { return decisions[i]; }
    }
    return null;
  }
  function progress() {
    var n = items.filter(last).length;
    document.getElementById("rv-progress").textContent = name() ? n + " / " + items.length + " questions decided" +
      " (reviewer " + name() + ")" : "type your name in Reviewer first";
    document.body.dataset.decided = String(n);
    document.body.dataset.current = String(cur);
  }
  function show() {
    var box = document.getElementById("rv-item"), it = items[cur];
    box.textContent = "";
    if (!it) { box.appendChild(el("p", "muted", "No questions to review.")); progress(); return; }
    var d = last(it);
    box.appendChild(el("div", "muted", "question " + (cur + 1) + " of " + items.length + " · " + it.qid +
      (it.tags.length ? " · tags: " + it.tags.join(", ") : "")));
    var said = el("p", "decided", d ? "decided: " + d.decision + (d.type ? " (" + d.type + ")" : "") +
      (d.reviewer ? " by " + d.reviewer : "") : "not decided yet");
    said.id = "rv-decided";
    box.appendChild(said);
    var typeLine = el("p", null, "Type: ");
    var select = el("select");
    select.id = "rv-type";
    types.forEach(function (t, i) {
      var o = el("option", null, (i + 1) + " " + t);
      o.value = t;
      select.appendChild(o);
    });
    select.value = d && d.type ? d.type : it.type;
    typeLine.appendChild(select);
    typeLine.appendChild(el("span", "muted", it.type_given ? "  (as the question says)" : "  (read from its fields)"));
    box.appendChild(typeLine);
    if (it.history.length) {
      box.appendChild(el("h3", null, "Conversation before it"));
      it.history.forEach(function (t) { box.appendChild(el("div", "turn", t.role + ": " + t.content)); });
    }
    box.appendChild(el("h3", null, "Question"));
    var q = el("textarea");
    q.id = "rv-question";
    q.rows = 2;
    q.value = d && d.question ? d.question : it.raw_question;
    box.appendChild(q);
    box.appendChild(el("h3", null, it.answerable ? "Reference answer" : "Reference answer (none: unanswerable)"));
    var ans = el("input", "rv");
    ans.id = "rv-answer";
    ans.value = d && d.answer ? d.answer : it.answer;
    box.appendChild(ans);
    if (it.answers.length > 1) { box.appendChild(el("p", "muted", "other references: " + it.answers.slice(1).join(" | "))); }
    if (it.expects) { box.appendChild(el("p", "muted", "expects: " + it.expects)); }
    box.appendChild(el("h3", null, "Evidence, highlighted in the parse of its document"));
    if (!it.evidence.length && !it.lost.length) {
      box.appendChild(el("p", "muted", it.answerable ? "no evidence located" : "none: the corpus should not answer it"));
    }
    it.evidence.forEach(function (ev) {
      box.appendChild(el("div", "where", ev.doc_id + (ev.title && ev.title !== ev.doc_id ? " · " + ev.title : "") + (ev.section ? " · " + ev.section : "")));
      var p = el("div", "parse");
      p.appendChild(document.createTextNode((ev.cut_before ? "…" : "") + ev.before));
      p.appendChild(el("mark", "quote", ev.quote));
      p.appendChild(document.createTextNode(ev.after + (ev.cut_after ? "…" : "")));
      box.appendChild(p);
    });
    it.lost.forEach(function (doc) { box.appendChild(el("p", "bad", "a quote in " + doc + " was not found in its parse (lost)")); });
    var buttons = el("p");
    [["accept (a)", "a"], ["reject (r)", "r"]].forEach(function (b) {
      var btn = el("button", null, b[0]);
      btn.addEventListener("click", function () { act(b[1]); });
      buttons.appendChild(btn);
    });
    box.appendChild(buttons);
    progress();
  }
  function record(row) {
    var it = items[cur];
    row.id = it.id; row.row_sha256 = it.row_sha256; row.reviewer = name();
    // this reviewer's earlier decision in this session is replaced; others' stay in the file
    for (var i = decisions.length - 1; i >= data.decisions.length; i--) {
      if (decisions[i].id === it.id && decisions[i].reviewer === row.reviewer) { decisions.splice(i, 1); }
    }
    decisions.push(row);
    if (cur < items.length - 1) { cur += 1; }
    show();
  }
  function act(k) {
    var it = items[cur];
    if (!it) { return; }
    if (!name()) { progress(); who.focus(); return; }
    if (k === "r") { record({decision: "reject"}); return; }
    var q = document.getElementById("rv-question").value, a = document.getElementById("rv-answer").value;
    var type = document.getElementById("rv-type").value;
    var edited = q.trim() !== it.raw_question.trim() || a.trim() !== it.answer.trim();
    var row = {decision: edited ? "edit" : (type !== it.type ? "retype" : "accept")};
    if (edited) { row.question = q; if (a.trim() !== it.answer.trim()) { row.answer = a; } }
    if (type !== it.type) { row.type = type; }
    record(row);
  }
  document.addEventListener("keydown", function (e) {
    var typing = e.target === who || e.target.id === "rv-question" || e.target.id === "rv-answer";
    if (typing) { if (e.key === "Enter" && e.target === who) { who.blur(); progress(); } else if (e.key === "Escape") { e.target.blur(); } return; }
    var k = e.key, digit = k.length === 1 && k >= "1" && k <= String(types.length) ? Number(k) : 0;
    if (k === "a" || k === "r") { act(k); }
    else if (digit) { document.getElementById("rv-type").value = types[digit - 1]; }
    else if (k === "ArrowRight") { cur = Math.min(cur + 1, items.length - 1); show(); }
    else if (k === "ArrowLeft") { cur = Math.max(cur - 1, 0); show(); }
    else { return; }
    e.preventDefault();
  });
  who.addEventListener("change", progress);
  document.getElementById("rv-download").addEventListener("click", function () {
    var text = decisions.map(function (d) { return JSON.stringify(d); }).join("\n") + (decisions.length ? "\n" : "");
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: "application/x-ndjson"}));
    a.download = "decisions.jsonl";
    document.body.appendChild(a); a.click(); a.remove();
    document.body.dataset.downloaded = String(decisions.length);
  });
  show();
  document.body.dataset.ready = "1";
}());
