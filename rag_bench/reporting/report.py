"""``rag-bench report``: one self-contained HTML page of charts and tables per experiment.

Reads only the stored cells (never recomputes a pipeline), writes
``reports/<experiment>/index.html`` plus PNGs, and logs the folder as artifacts of the sweep's
parent MLflow run when the cells were tracked.
"""

from __future__ import annotations

import html
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from rag_bench.cells import Cell, experiment_cells, load_cell
from rag_bench.errors import DataError, Problem
from rag_bench.metrics import measures
from rag_bench.reporting import charts
from rag_bench.reporting.compare import compare_cells

log = logging.getLogger(__name__)

# Sets body[data-images-ok] once every <img> has loaded with a size: a headless browser check
# (and a person) can tell a broken report at a glance.
_CHECK_JS = """<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var ok = imgs.every(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute('data-images-ok', ok ? 'true' : 'false');
  document.body.setAttribute('data-images', String(imgs.length));
});
</script>"""
_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.note{color:#666;font-style:italic}"""


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, escape=True, border=0, na_rep="")


def _leaderboard_frame(cells: list[Cell], metric: str) -> pd.DataFrame:
    rows = []
    for c in sorted(cells, key=lambda c: -(c.metric(metric) or 0)):
        ci = c.metrics.get("ci", {}).get(metric)
        row: dict[str, Any] = {"cell": c.label}
        for m in measures.HEADLINE:
            v = c.metric(m.key)
            if v is not None:
                row[m.name] = m.format(v)
        row[f"{metric.split('/', 1)[1]} 95% CI"] = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        row["n"] = c.metrics.get("n", {}).get(metric)
        rows.append(row)
    return pd.DataFrame(rows)


def render_report(experiment_dir: str | Path, *, out_root: str | Path = "reports", metric: str = measures.PRIMARY.key,
                  baseline: str | Path | None = None, log_to_mlflow: bool = True) -> Path:
    """Write the report and return the path of its index.html."""
    exp = Path(experiment_dir)
    cells = experiment_cells(exp)
    if not cells:
        raise DataError(Problem(str(exp), 0, "", "no finished cells (folders with DONE)",
                                "run a sweep first: rag-bench run -m ..."))
    if all(c.metric(metric) is None for c in cells):
        raise DataError(Problem(str(exp), 0, "metric", f"no cell has {metric}", "pass --metric section/name"))
    out = Path(out_root) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    best = max(cells, key=lambda c: c.metric(metric) or 0)
    base = load_cell(baseline) if baseline else min(cells, key=lambda c: c.metric(metric) or 0)

    sections: list[str] = []

    def img(name: str, path: Path | None, caption: str, missing: str) -> None:
        if path is None:
            sections.append(f"<h2>{html.escape(caption)}</h2><p class='note'>{html.escape(missing)}</p>")
        else:
            sections.append(f"<h2>{html.escape(caption)}</h2><img src='{path.name}' alt='{html.escape(caption)}'>")

    img("leaderboard", charts.leaderboard(cells, metric, out / "leaderboard.png"), f"Leaderboard: {metric}", "")
    sections.append(_table(_leaderboard_frame(cells, metric)))
    img("heatmap", charts.heatmap(cells, metric, out / "heatmap.png"), f"{metric} by chunker × retriever",
        "Only one chunker/retriever pair in this experiment.")
    img("k", charts.metric_vs_k(cells, out / "metric_vs_k.png"), "hit@k and recall@k vs k per retriever",
        "Fewer than two cutoffs in eval.ks.")
    img("ann", charts.ann_tradeoff(cells, out / "ann.png"), "ANN recall vs query latency",
        "No dense-retrieval cells: nothing to measure against flat.")
    img("failures", charts.failures(cells, out / "failures.png"), "Failure attribution per cell", "")
    scored = charts.top1_scores(best, out / "top1_scores.png")
    img("scores", scored[0] if scored else None, f"Top-1 score: answerable vs unanswerable ({best.label})",
        "The best cell has no unanswerable (or no answerable) questions.")
    if scored:
        s = scored[1]
        sections.append(f"<p>AUROC of 'answerable' from the top-1 score alone: <b>{s['auroc']:.3f}</b>; best-F1 "
                        f"threshold {s['threshold']:.4g} gives F1 {s['f1']:.3f}. Below ~0.8 a score threshold cannot "
                        "reliably decide when to abstain.</p>")
    sections.append("<h2>Retrieval hit vs answer correct</h2>")
    generated = [c for c in cells if c.metrics.get("conditional")]
    if generated:
        rows = []
        for c in sorted(generated, key=lambda c: -(c.metric(metric) or 0)):
            cond = c.metrics["conditional"]
            rows.append({"cell": c.label, "k": cond["k"],
                         **{f"correct when {h} (n)": (f"{cond[h]['rate']:.3f} ({cond[h]['correct']}/{cond[h]['n']})"
                                                     if cond[h]["n"] else "n/a (0)") for h in ("hit", "miss")}})
        sections.append("<p>Answerable questions, split by whether a relevant chunk was in the top k handed to the "
                        "generator. A low rate on hits points at generation; misses cap what any generator can do."
                        "</p>" + _table(pd.DataFrame(rows)))
    else:
        sections.append("<p class='note'>These cells have no generation stage (generator=none), so there is no "
                        "answer to be correct.</p>")
    if base is not best:
        diff = compare_cells(base, best, metrics=[m.name for m in measures.TAG
                                                  if m.name in best.records and m.name in base.records])
        sections.append(f"<h2>Best cell vs baseline</h2><p>baseline <b>{html.escape(base.label)}</b> → best "
                        f"<b>{html.escape(best.label)}</b>, {diff['questions']} questions; paired bootstrap CI, "
                        "randomisation test, Holm-adjusted.</p>")
        sections.append(_table(pd.DataFrame([{**{k: r[k] for k in ("metric", "n")},
                                              "baseline": f"{r['mean_a']:.3f}", "best": f"{r['mean_b']:.3f}",
                                              "diff": f"{r['diff']:+.3f}",
                                              "95% CI": f"[{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]",
                                              "p (Holm)": f"{r['p_holm']:.3f}"} for r in diff["metrics"]])))
        for key, title in (("wrong_to_right", "fixed by the best cell"), ("right_to_wrong", "broken by the best cell")):
            items = diff["flips"][key]
            sections.append(f"<h3>{len(items)} question(s) {title} ({diff['flips']['metric']})</h3>")
            if items:
                sections.append(_table(pd.DataFrame(items).rename(columns={"failure_a": "baseline label",
                                                                             "failure_b": "best label"})))
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>rag_bench report: {html.escape(exp.name)}"
            f"</title><style>{_CSS}</style></head><body><h1>rag_bench report: {html.escape(exp.name)}</h1>"
            f"<p class='sub'>{len(cells)} cells from {html.escape(str(exp))}; ranked by {metric}; every aggregate "
            "with its 95% bootstrap CI over questions.</p>" + "\n".join(sections) + _CHECK_JS + "</body></html>")
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    if log_to_mlflow:
        _log(cells, out)
    return index


def _log(cells: list[Cell], folder: Path) -> None:
    parents = Counter((c.done.get("tracking_uri"), c.done.get("parent_run_id")) for c in cells
                      if c.done.get("parent_run_id"))
    if not parents:
        return
    (uri, parent), _ = parents.most_common(1)[0]
    try:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=uri).log_artifacts(str(parent), str(folder), artifact_path="report")
        log.info("report logged to MLflow run %s (%s)", parent, uri)
    except Exception as exc:  # the report on disk is the product; tracking is best effort here
        log.warning("could not log the report to MLflow run %s at %s: %s", parent, uri, exc)
