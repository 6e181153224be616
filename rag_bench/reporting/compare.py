"""``rag-bench compare``: paired differences between two cells over the same questions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.cells import Cell, check_same_dataset, question_metrics
from rag_bench.errors import DataError, Problem
from rag_bench.metrics import measures
from rag_bench.stats.paired import holm, paired_bootstrap_ci, randomisation_p


def _aligned(a: Cell, b: Cell) -> tuple[pd.DataFrame, pd.DataFrame]:
    check_same_dataset(a, b)
    ra, rb = a.records.set_index("qid"), b.records.set_index("qid")
    common = ra.index.intersection(rb.index)
    if common.empty:
        raise DataError(Problem(str(b.path), 0, "records", "the two cells share no question ids",
                                "compare cells evaluated on the same golden set"))
    return ra.loc[common], rb.loc[common]


def compare_cells(a: Cell, b: Cell, *, metrics: Sequence[str] | None = None, n_resamples: int = 2000,
                  seed: int = 0, alpha: float = 0.05, flip_metric: str | None = None) -> dict[str, Any]:
    """Per metric: means, paired difference (b - a) with a paired bootstrap CI, a paired
    randomisation-test p-value and its Holm-adjusted value across the metrics compared; plus the
    questions that flipped on ``flip_metric`` (default ``hit@<pipeline.k of a>``)."""
    ra, rb = _aligned(a, b)
    names = list(metrics) if metrics else [m for m in question_metrics(a) if m in rb.columns]
    unknown = [m for m in names if m not in ra.columns or m not in rb.columns]
    if unknown:
        raise DataError(Problem(str(a.path), 0, "metrics", f"unknown per-question metric(s) {unknown}",
                                f"choose from {question_metrics(a)}"))
    rows = []
    for m in names:
        x, y = ra[m].to_numpy(np.float64), rb[m].to_numpy(np.float64)
        both = ~(np.isnan(x) | np.isnan(y))
        lo, hi = paired_bootstrap_ci(x, y, n_resamples=n_resamples, seed=seed)
        rows.append({"metric": m, "n": int(both.sum()),
                     "mean_a": float(x[both].mean()) if both.any() else None,
                     "mean_b": float(y[both].mean()) if both.any() else None,
                     "diff": float((y[both] - x[both]).mean()) if both.any() else None,
                     "ci": [lo, hi], "p": randomisation_p(x, y, n_resamples=max(n_resamples, 1000), seed=seed)})
    for row, p_adj in zip(rows, holm([float(r["p"]) for r in rows])):  # type: ignore[arg-type]
        row["p_holm"] = p_adj
        row["significant"] = bool(p_adj <= alpha)
    k = int((a.config.get("pipeline") or {}).get("k", 5))
    hit = measures.family("retrieval", "hit").at(k).name
    flip = flip_metric or (hit if hit in ra.columns else names[0])
    return {"a": a.label, "b": b.label, "a_path": str(a.path), "b_path": str(b.path),
            "questions": int(len(ra)), "alpha": alpha, "metrics": rows, "flips": _flips(ra, rb, flip)}


def _flips(ra: pd.DataFrame, rb: pd.DataFrame, metric: str) -> dict[str, Any]:
    x, y = ra[metric], rb[metric]
    defined = x.notna() & y.notna()

    def rows(mask: pd.Series) -> list[dict[str, Any]]:
        return [{"qid": q, "question": ra.at[q, "question"], "failure_a": ra.at[q, "failure"],
                 "failure_b": rb.at[q, "failure"]} for q in ra.index[mask & defined]]

    return {"metric": metric, "right_to_wrong": rows((x >= 0.5) & (y < 0.5)),
            "wrong_to_right": rows((x < 0.5) & (y >= 0.5))}


def format_compare(result: dict[str, Any]) -> str:
    """Readable table: one line per metric, then the flipped questions."""
    lines = [f"A: {result['a']}", f"B: {result['b']}",
             f"{result['questions']} common questions; diff = B - A; paired bootstrap 95% CI; "
             f"randomisation p, Holm-adjusted over {len(result['metrics'])} metrics (alpha {result['alpha']})", ""]
    table = pd.DataFrame([{
        "metric": r["metric"], "n": r["n"], "A": _f(r["mean_a"]), "B": _f(r["mean_b"]), "diff": _f(r["diff"], sign=True),
        "95% CI": f"[{_f(r['ci'][0], sign=True)}, {_f(r['ci'][1], sign=True)}]", "p": _f(r["p"]),
        "p_holm": _f(r["p_holm"]), "": "*" if r["significant"] else ""} for r in result["metrics"]])
    lines.append(table.to_string(index=False))
    flips = result["flips"]
    for key, title in (("right_to_wrong", "right in A, wrong in B"), ("wrong_to_right", "wrong in A, right in B")):
        items = flips[key]
        lines.append(f"\n{title} on {flips['metric']} ({len(items)}):")
        for it in items:
            lines.append(f"  {it['qid']}: {it['question'][:70]}  [A: {it['failure_a']}, B: {it['failure_b']}]")
    return "\n".join(lines)


def _f(v: float | None, sign: bool = False) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "n/a"
    return f"{v:+.3f}" if sign else f"{v:.3f}"
