"""``rag-bench compare``: paired differences between two cells over the same questions.

By default the comparison is about the answer: the main measure of every stage the two cells
share (:data:`FAMILY_KEYS`: retrieval nDCG@10, evidence completeness at k, context or refusal and answer
correctness over all questions and over the answerable ones, exact match and token F1, citation
precision, correct and false refusals, query latency and generator tokens). Holm's correction runs
over that declared family only, not over every correlated retrieval cutoff, and a one-line verdict
says what changed. ``metrics`` takes the canonical
names the gate takes (``generation/correct``) or bare per-question columns (``hit@5``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.cells import Cell, check_same_dataset
from rag_bench.decision import decide
from rag_bench.decision.params import check_comparable
from rag_bench.errors import DataError, Problem
from rag_bench.evaluation import measures
from rag_bench.judging import samples as judge_samples
from rag_bench.stats.paired import (
    disagreement,
    holm,
    paired_bootstrap_ci,
    paired_two_level_bootstrap_ci,
    paired_two_level_p,
    randomisation_p,
)


@dataclass(frozen=True)
class Column:
    """A per-question quantity compared: its canonical ``key``, its short ``name``, its direction
    and how to read it from records.parquet."""

    key: str
    name: str
    higher_is_better: bool
    read: Callable[[pd.DataFrame], pd.Series | None]


def _measure_column(key: str) -> Column | None:
    m = measures.measure(key)
    if m is None or m.higher_is_better is None or m.aggregate != "mean":
        return None
    column = m.column

    def read(r: pd.DataFrame) -> pd.Series | None:
        return r[column] if column in r else None

    return Column(m.key, m.name, m.higher_is_better, read)


def _tokens(r: pd.DataFrame) -> pd.Series | None:
    if "tokens_in" not in r:
        return None
    total = r["tokens_in"].astype("float64") + (r["tokens_out"].astype("float64") if "tokens_out" in r else 0.0)
    return None if total.isna().all() else total


# Not registered measures (no cell aggregate of these names), but per-question costs a change buys.
LATENCY = Column("latency/retrieve_ms", "retrieve_ms", False, lambda r: r["retrieve_ms"] if "retrieve_ms" in r else None)
TOKENS = Column("cost/tokens", "tokens", False, _tokens)
# The declared family: the main measure of each stage, in data-flow order.
FAMILY_KEYS = (measures.PRIMARY.key, measures.COMPLETE.key + "@{k}", *(m.key for m in (
    measures.CONTEXT_ALL, measures.CORRECT_ALL, measures.CORRECT, measures.EXACT_MATCH, measures.TOKEN_F1,
    measures.CITATION_PRECISION, measures.CORRECT_REFUSAL_RATE, measures.FALSE_REFUSAL_RATE)))
_COSTS = {c.key: c for c in (LATENCY, TOKENS)}


def family(k: int) -> list[Column]:
    """The default family for cells handing ``k`` passages to the generator."""
    out = [_measure_column(key.format(k=k)) for key in FAMILY_KEYS]
    return [c for c in out if c is not None] + [LATENCY, TOKENS]


def resolve(name: str, records: pd.DataFrame) -> Column:
    """A ``-m`` name as a column: a canonical ``section/name`` (as the gate names it), a
    ``latency/retrieve_ms`` or ``cost/tokens``, or a bare per-question column (``hit@5``,
    ``correct``). ValueError naming close choices when nothing matches."""
    if name in _COSTS:
        return _COSTS[name]
    if "/" in name:
        col = _measure_column(name)
        if col is not None:
            return col
    else:  # a records.parquet column: a ranking or evidence column, else an answer-stage measure
        m = measures.column_measure(name)
        keys = [m.key] if m is not None else [f"{s}/{name}" for s in ("generation", "citation", "abstention")]
        for key in keys:
            col = _measure_column(key)
            if col is not None and col.read(records) is not None:
                return col
    known = sorted({*(k for s in measures.QUESTION_SECTIONS for k in measures.known_names(s)), *_COSTS})
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    raise ValueError(f"unknown per-question metric {name!r}" + (f"; did you mean {' or '.join(close)}?" if close else ""))


def _aligned(a: Cell, b: Cell) -> tuple[pd.DataFrame, pd.DataFrame]:
    check_same_dataset(a, b)
    ra, rb = a.records.set_index("qid"), b.records.set_index("qid")
    common = ra.index.intersection(rb.index)
    if common.empty:
        raise DataError(Problem(str(b.path), 0, "records", "the two cells share no question ids",
                                "compare cells evaluated on the same golden set"))
    return ra.loc[common], rb.loc[common]


def _columns(a: Cell, ra: pd.DataFrame, rb: pd.DataFrame, metrics: Sequence[str] | None) -> list[Column]:
    if not metrics:
        k = int((a.config.get("pipeline") or {}).get("k", 5))
        return [c for c in family(k) if c.read(ra) is not None and c.read(rb) is not None]
    out = []
    for name in metrics:
        try:
            col = resolve(name, ra)
        except ValueError as exc:
            raise DataError(Problem(str(a.path), 0, "metrics", str(exc),
                                    f"use the gate's names, e.g. generation/correct, retrieval/ndcg@10, "
                                    f"{LATENCY.key}, {TOKENS.key}")) from exc
        if col.read(ra) is None or col.read(rb) is None:
            raise DataError(Problem(str(a.path), 0, "metrics", f"unknown per-question metric {name!r}: not in "
                                    "both cells' records", "compare a measure both cells computed (a retrieval-only "
                                    "cell has no answer measures)"))
        out.append(col)
    # One test per measure in Holm's family: a measure named twice (``correct`` and
    # ``generation/correct``, ``hit@05`` and ``hit@5``) would count twice and double its p.
    return list({c.key: c for c in out}.values())  # each at its first place


def compare_cells(a: Cell, b: Cell, *, metrics: Sequence[str] | None = None, n_resamples: int = 2000,
                  seed: int = 0, alpha: float = 0.05, flip_metric: str | None = None,
                  names: tuple[str, str] | None = None, primary: str | None = None) -> dict[str, Any]:
    """Per measure: means, paired difference (b - a) with a paired bootstrap CI, a paired
    randomisation-test p-value and its Holm-adjusted value over the measures compared (default:
    the main measure of each stage, :func:`family`); a one-line ``verdict``; and the questions
    that flipped: on the answer (failure labels: fixed means answered right or correctly refused
    in B, so a false refusal is never fixed) when both cells generated, else on
    ``hit@<pipeline.k of a>``, or on ``flip_metric`` when given. Each row says whether its change
    is practically large (``practical``: at least the family's minimum effect,
    :func:`rag_bench.evaluation.measures.min_effect`); the verdict leads with ``primary`` (the
    experiment's primary measure) when its change is a finding."""
    ra, rb = _aligned(a, b)
    cols = _columns(a, ra, rb, metrics)
    check_comparable([a, b], [c.key for c in cols], names=dict(zip((a.cell_id, b.cell_id), names)) if names else None)
    rows: list[dict[str, Any]] = []
    for col in cols:
        x = col.read(ra).to_numpy(np.float64)  # type: ignore[union-attr]
        y = col.read(rb).to_numpy(np.float64)  # type: ignore[union-attr]
        both = ~(np.isnan(x) | np.isnan(y))
        try:  # judge samples: resampled on two levels
            judged = judge_samples.paired_samples(col.key, ra, rb)
        except ValueError as exc:
            raise DataError(Problem(str(b.path), 0, col.key, str(exc), "re-run the cell; records.parquet is written "
                                    "by rag_bench")) from exc
        # Judged measures: CI and p from the same two-level bootstrap. Else a bootstrap CI beside the
        # randomisation p, and the row says in words when the two disagree (issue 55).
        if judged is not None:
            lo, hi = paired_two_level_bootstrap_ci(*judged, n_resamples=n_resamples, seed=seed)
            p = paired_two_level_p(*judged, n_resamples=max(n_resamples, 1000), seed=seed)
            why = ""
        else:
            lo, hi = paired_bootstrap_ci(x, y, n_resamples=n_resamples, seed=seed)
            p = randomisation_p(x, y, n_resamples=max(n_resamples, 1000), seed=seed)
            why = disagreement((lo, hi), p, alpha, int(np.sum(both & (x != y))))
        rows.append({"metric": col.name, "key": col.key, "higher_is_better": col.higher_is_better,
                     "n": int(both.sum()),
                     "mean_a": float(x[both].mean()) if both.any() else None,
                     "mean_b": float(y[both].mean()) if both.any() else None,
                     "diff": float((y[both] - x[both]).mean()) if both.any() else None,
                     "ci": [lo, hi], "p": p, "disagree": why, "min_effect": measures.min_effect(col.key)[0],
                     "practical": bool(both.any() and abs(float((y[both] - x[both]).mean()))
                                       >= measures.min_effect(col.key)[0]),
                     "test": "paired randomisation" if judged is None else "paired two-level bootstrap"})
    for row, p_adj in zip(rows, holm([float(r["p"]) for r in rows])):
        row["p_holm"] = p_adj
        row["significant"] = bool(p_adj <= alpha)
    name_a, name_b = names or decide.pair_names(a, b)
    return {"a": name_a, "b": name_b, "a_cell": a.cell_id, "b_cell": b.cell_id, "a_path": str(a.path),
            "b_path": str(b.path), "questions": int(len(ra)), "alpha": alpha, "metrics": rows,
            "verdict": verdict(rows, primary), "primary": primary, "flips": _flips(a, ra, rb, flip_metric)}


def _size(r: dict[str, Any]) -> float:
    """A row's change in units of its family's minimum effect (how practically large it is)."""
    return abs(float(r["diff"])) / float(r.get("min_effect") or measures.min_effect(str(r.get("key") or r["metric"]))[0])


def verdict(rows: Sequence[dict[str, Any]], primary: str | None = None) -> str:
    """One line: each finding -- a change significant after Holm *and* at least its family's
    minimum effect (:func:`rag_bench.evaluation.measures.min_effect`) -- with its direction,
    difference, CI and p, the ``primary`` measure's first, then in the rows' (stages') order;
    the significant changes too small to be findings, said as such; then whether anything else
    changed.

    >>> verdict([{"metric": "correct", "higher_is_better": True, "diff": 0.08, "ci": [0.03, 0.13],
    ...           "p_holm": 0.004, "significant": True},
    ...          {"metric": "ndcg@10", "higher_is_better": True, "diff": 0.01, "ci": [-0.02, 0.04],
    ...           "p_holm": 0.6, "significant": False}])
    'B better on correct +0.080 [+0.030, +0.130], p = 0.004 after Holm; no significant change elsewhere'
    >>> verdict([{"metric": "retrieve_ms", "key": "latency/retrieve_ms", "higher_is_better": False, "diff": -0.6,
    ...           "ci": [-0.8, -0.4], "p_holm": 0.001, "significant": True}])
    'no change large enough to matter: retrieve_ms -0.600 is significant but under its minimum effect (1 ms)'
    """
    sig = [r for r in rows if r.get("significant") and r.get("diff")]
    if not sig:
        return f"no significant change on any of the {len(rows)} measures compared (Holm-adjusted)"
    small = [r for r in sig if _size(r) < 1]
    sig = sorted((r for r in sig if _size(r) >= 1), key=lambda r: r.get("key") != primary)  # stable: stage order
    tiny = "; ".join(f"{r['metric']} {r['diff']:+.3f} is significant but under its minimum effect "
                     f"({measures.min_effect(str(r.get('key') or r['metric']))[1]})" for r in small)
    if not sig:
        return f"no change large enough to matter: {tiny}"
    parts = []
    for r in sig:
        better = (r["diff"] > 0) == bool(r["higher_is_better"])
        parts.append(f"B {'better' if better else 'worse'} on {r['metric']} {r['diff']:+.3f} "
                     f"[{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}], {_p(r['p_holm'])}")
    rest = "no significant change elsewhere" if len(sig) + len(small) < len(rows) else "every measure changed"
    return "; ".join(parts[:-1] + [parts[-1] + " after Holm"]) + (f"; {tiny}" if tiny else "") + f"; {rest}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


# Outcomes a question counts as right in: the answer right and supported, or a correct refusal
# (a retrieval-only cell: its evidence reached the passages handed on).
_RIGHT_ANSWER = ("correct", "correct_refusal")
_RIGHT_RETRIEVAL = ("in_context",)


def _flips(a: Cell, ra: pd.DataFrame, rb: pd.DataFrame, metric: str | None) -> dict[str, Any]:
    def rows(mask: pd.Series) -> list[dict[str, Any]]:
        return [{"qid": q, "question": ra.at[q, "question"], "failure_a": ra.at[q, "failure"],
                 "failure_b": rb.at[q, "failure"]} for q in ra.index[mask]]

    answered = measures.CORRECT.column in ra and measures.CORRECT.column in rb
    if metric is None and answered:
        ok_a, ok_b = ra["failure"].isin(_RIGHT_ANSWER), rb["failure"].isin(_RIGHT_ANSWER)
        return {"metric": "answer (correct or correct_refusal)", "right_to_wrong": rows(ok_a & ~ok_b),
                "wrong_to_right": rows(~ok_a & ok_b)}
    if metric is None:
        k = int((a.config.get("pipeline") or {}).get("k", 5))
        hit = measures.HIT.at(k).name
        metric = hit if hit in ra.columns else next(c for c in ra.columns if measures.column_measure(c))
    col = resolve(metric, ra)
    x, y = col.read(ra), col.read(rb)
    if x is None or y is None:
        raise DataError(Problem(str(a.path), 0, "flip_metric", f"{metric!r} is not in both cells' records",
                                "pass a per-question measure both cells computed"))
    defined = x.notna() & y.notna()
    good_a, good_b = (x >= 0.5, y >= 0.5) if col.higher_is_better else (x < 0.5, y < 0.5)
    return {"metric": col.name, "right_to_wrong": rows(defined & good_a & ~good_b),
            "wrong_to_right": rows(defined & ~good_a & good_b)}


def format_compare(result: dict[str, Any]) -> str:
    """Readable table: the verdict, one line per measure, then the flipped questions."""
    lines = [f"A: {result['a']}", f"B: {result['b']}",
             f"verdict: {result['verdict']}",
             f"{result['questions']} common questions; diff = B - A; paired bootstrap 95% CI; randomisation p "
             f"(judged measures: CI and p from one two-level bootstrap); p_holm Holm-adjusted over these "
             f"{len(result['metrics'])} measures (alpha {result['alpha']}): the CI is not, so a CI that excludes 0 "
             "beside a p_holm above alpha is a change the family's correction does not keep",
             ""]
    table = pd.DataFrame([{
        "measure": r["key"], "better": "higher" if r["higher_is_better"] else "lower", "n": r["n"],
        "A": _f(r["mean_a"]), "B": _f(r["mean_b"]), "diff": _f(r["diff"], sign=True),
        "95% CI": f"[{_f(r['ci'][0], sign=True)}, {_f(r['ci'][1], sign=True)}]", "p": _f(r["p"]),
        "p_holm": _f(r["p_holm"]), "": "*" if r["significant"] else ""} for r in result["metrics"]])
    lines.append(table.to_string(index=False))
    lines += [f"  {r['key']}: {r['disagree']}" for r in result["metrics"] if r.get("disagree")]
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
