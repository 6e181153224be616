"""The gate's ``judge_agreement`` rule: refuse a measure nobody has shown to agree with people.

Policy (one entry or a list)::

    judge_agreement:
      - {measure: generation/correct, min_kappa: 0.6, labels: labels.jsonl}   # beside the policy, or an absolute path

``measure`` is written as the gate writes every measure (``section/name``) and must stand in for a
judgment (:mod:`rag_bench.calibration.standins`: ``generation/correct``, ``generation/faithfulness``,
``citation/citation_precision``, ``abstention/correct_refusal_rate``, ``judge/judge_*``, ...).
``labels`` is a labels.jsonl, relative to the policy file's folder unless absolute.

The rule is ``error`` (exit 2, cannot evaluate) when the labels file is unreadable or none of its
labels names an answer of the cell for that measure (or kappa is undefined), ``fail`` (exit 1) when
the lower bound of kappa's 95 % CI is below ``min_kappa``, else ``pass``. While the rule holds
labels for the cell, a threshold on the same measure is checked against its PPI-corrected mean
(the gate's table says ``PPI``); regression rules keep the raw per-question values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_bench.calibration.calibrate import Agreement, agreement
from rag_bench.calibration.labels import load_labels
from rag_bench.calibration.standins import StandIn, stand_ins
from rag_bench.cells import Cell
from rag_bench.errors import RagBenchError
from rag_bench.evaluation import measures

KEY = "judge_agreement"
_FIELDS = {"measure", "min_kappa", "labels"}
EXAMPLE = "e.g. judge_agreement: {measure: generation/correct, min_kappa: 0.6, labels: labels.jsonl}"


def stand_in_of(metric: str) -> StandIn | None:
    """The stand-in the gate's measure name ``section/name`` reads, or None."""
    m = measures.measure(metric)
    if m is None:
        return None
    found = stand_ins([m.column])
    return found[0] if found else None


def validate(policy_path: Path, body: Any, add: Callable[[tuple[Any, ...], str, str], None]) -> list[dict[str, Any]]:
    """Check the section; the entries with ``labels`` resolved against the policy's folder."""
    entries = body if isinstance(body, list) else [body]
    out: list[dict[str, Any]] = []
    if not entries:
        add((KEY,), "judge_agreement is an empty list", EXAMPLE)
    for i, e in enumerate(entries):
        where = (KEY,) if not isinstance(body, list) else (KEY, i)
        if not isinstance(e, dict):
            add(where, f"each judge_agreement entry is a mapping, got {type(e).__name__}", EXAMPLE)
            continue
        bad = sorted(str(k) for k in set(e) - _FIELDS)
        missing = sorted(_FIELDS - set(e))
        if bad or missing:
            add(where, f"judge_agreement takes {sorted(_FIELDS)}", " and ".join(
                ([f"remove {bad}"] if bad else []) + ([f"add {missing}"] if missing else [])))
        metric, k, labels = e.get("measure"), e.get("min_kappa", 0.0), e.get("labels", "?")
        ok = not (bad or missing)
        if not isinstance(metric, str) or stand_in_of(metric) is None:
            add(where + ("measure",), f"{metric!r} is not an automatic answer measure that stands in for a judgment",
                "one of generation/correct, generation/faithfulness, citation/citation_precision, "
                "abstention/correct_refusal_rate, judge/judge_<metric>")
            ok = False
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or not -1 <= k <= 1:
            add(where + ("min_kappa",), f"min_kappa must be a number in [-1, 1], got {k!r}",
                "e.g. min_kappa: 0.6 (substantial agreement)")
            ok = False
        if not isinstance(labels, str) or not labels.strip():
            add(where + ("labels",), f"labels must be a path to a labels.jsonl, got {labels!r}",
                "relative to the policy's folder or absolute, e.g. labels: labels.jsonl")
            ok = False
        if ok:
            out.append({"measure": metric, "min_kappa": float(k), "labels": str(policy_path.parent / labels)})
    return out


def _measured(cell: Cell, entry: dict[str, Any]) -> Agreement:
    s = stand_in_of(entry["measure"])
    assert s is not None  # validated
    return agreement([cell], {}, load_labels(entry["labels"]), s)


def evaluate(cell: Cell, entries: list[dict[str, Any]]) -> tuple[list[tuple[str, str, str, str, str]],
                                                               dict[str, tuple[float, str]]]:
    """Per entry (name, status, value, limit, detail); and the PPI means (metric -> (mean, detail))
    that thresholds on those measures use."""
    results: list[tuple[str, str, str, str, str]] = []
    ppi: dict[str, tuple[float, str]] = {}
    for e in entries:
        name = f"{e['measure']} agrees with people: kappa CI low >= {e['min_kappa']:g}"
        limit = f">= {e['min_kappa']:g}"
        try:
            a = _measured(cell, e)
        except RagBenchError as exc:
            results.append((name, "error", "n/a", limit, " ".join(str(exc).split())[:400]))
            continue
        if a.n == 0:
            results.append((name, "error", "n/a", limit, f"no label in {e['labels']} names an answer of this cell for "
                            f"{a.human} -- fix: label some (rag-bench label CELL)"))
            continue
        lo, hi = a.kappa_ci
        if math.isnan(a.kappa) or math.isnan(lo):
            results.append((name, "error", "n/a", limit, f"kappa is undefined on {a.n} labelled answers (one "
                            "category only, or too few) -- fix: label answers of both kinds"))
            continue
        status = "pass" if lo >= e["min_kappa"] else "fail"
        results.append((name, status, f"{a.kappa:.3f}", limit, f"95% CI [{lo:.3f}, {hi:.3f}], n={a.n} labelled "
                        f"answers, {a.rule}"))
        p = a.cells[0][2]
        # The PPI mean replaces the raw value of a threshold only when people vouch for the measure
        # (this rule passed) and enough answers are labelled (ppi.MIN_LABELLED; else it is NaN).
        if status == "pass" and p.n_labelled and not math.isnan(p.mean):
            ppi[e["measure"]] = (p.mean, f"PPI mean (raw {p.raw_mean:.4f}; 95% CI [{p.low:.3f}, {p.high:.3f}], "
                                 f"{p.n_labelled} of {p.n_all} answers labelled)")
    return results, ppi
