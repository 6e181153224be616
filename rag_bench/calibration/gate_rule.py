"""The gate's ``judge_agreement`` rule: refuse a measure nobody has shown to agree with people.

Policy (one entry or a list)::

    judge_agreement:
      - {measure: generation/correct, min_kappa: 0.6, labels: labels.jsonl}   # beside the policy, or an absolute path

``measure`` is written as the gate writes every measure (``section/name``) and must stand in for a
judgment (:mod:`rag_bench.calibration.standins`: ``generation/correct``, ``generation/faithfulness``,
``citation/citation_precision``, ``abstention/correct_refusal_rate``, ``judge/judge_*``, ...).
``labels`` is a labels.jsonl, relative to the policy file's folder unless absolute.

The rule is ``error`` (exit 2, cannot evaluate) when the labels file is unreadable or none of its
labels names an answer of the cell for that measure; ``fail`` (exit 1) when the lower bound of
kappa's 95 % CI is below ``min_kappa`` or there is no CI (:func:`rag_bench.calibration.agreement.kappa_ci`:
too few labels, kappa undefined, ...), with how many more labels would do; else ``pass``. When the
rule passed, a threshold on the same measure is checked against its PPI-corrected mean (the gate's
table says ``PPI``) if the labels are a uniform sample of the cell
(:func:`rag_bench.calibration.calibrate.uniform_ppi`), else against the raw value, saying why;
regression rules keep the raw per-question values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag_bench.calibration.agreement import MIN_ITEMS, chance_disagreement, items_without_disagreement
from rag_bench.calibration.calibrate import Agreement, agreement, uniform_ppi
from rag_bench.calibration.labels import Label, load_labels
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


def _measured(cell: Cell, entry: dict[str, Any]) -> tuple[Agreement, StandIn, list[Label]]:
    s = stand_in_of(entry["measure"])
    assert s is not None  # validated
    labels = load_labels(entry["labels"])
    return agreement([cell], {}, labels, s), s, labels


def _more(a: Agreement, min_kappa: float) -> str:
    """What would let the rule pass: how many more labelled answers, where that can be told."""
    ci = a.kappa_ci
    chance = chance_disagreement(np.array(a.confusion))
    if math.isnan(a.kappa):
        return "label answers of both kinds (people and the measure gave one verdict to every answer)"
    if a.n < MIN_ITEMS or ci.method == "exact":
        need = items_without_disagreement(min_kappa, chance) if a.kappa == 1 else None
        if a.kappa == 1 and need is None:
            return f"min_kappa {min_kappa:g} cannot be shown from a sample; lower it"
        total = max(MIN_ITEMS, need or 0)
        return (f"label at least {total - a.n} more answers of this cell (rag-bench label CELL)"
                + (f": {need} answers without a disagreement show kappa >= {min_kappa:g}" if need else ""))
    if not ci.defined:
        return "label more answers, of both verdicts of the measure and of people"
    if a.kappa <= min_kappa:
        return f"kappa {a.kappa:.3f} itself is below {min_kappa:g}: more labels will not make it pass"
    need = math.ceil(a.n * ((a.kappa - ci.low) / (a.kappa - min_kappa)) ** 2)  # the CI narrows as 1/sqrt(n)
    return f"about {need - a.n} more labelled answers would narrow the CI enough if kappa stays at {a.kappa:.3f}"


def evaluate(cell: Cell, entries: list[dict[str, Any]]) -> tuple[list[tuple[str, str, str, str, str]],
                                                               dict[str, tuple[float | None, str]]]:
    """Per entry (name, status, value, limit, detail); and, per measure of an entry, what a threshold
    on it checks: (the PPI mean, what it rests on), or (None, why the raw value is checked)."""
    results: list[tuple[str, str, str, str, str]] = []
    ppi: dict[str, tuple[float | None, str]] = {}
    for e in entries:
        name = f"{e['measure']} agrees with people: kappa CI low >= {e['min_kappa']:g}"
        limit = f">= {e['min_kappa']:g}"
        try:
            a, s, labels = _measured(cell, e)
        except RagBenchError as exc:
            results.append((name, "error", "n/a", limit, " ".join(str(exc).split())[:400]))
            continue
        if a.n == 0:
            results.append((name, "error", "n/a", limit, f"no label in {e['labels']} names an answer of this cell for "
                            f"{a.human} -- fix: label some (rag-bench label CELL)"))
            continue
        ci = a.kappa_ci
        value = "n/a" if math.isnan(a.kappa) else f"{a.kappa:.3f}"
        if not ci.defined:  # not shown to agree: a verdict (fail), with what would show it
            results.append((name, "fail", value, limit, f"no 95% CI: {ci.reason}; n={a.n} labelled answers -- fix: "
                            f"{_more(a, e['min_kappa'])}"))
            ppi[e["measure"]] = (None, "raw value: PPI not used (the agreement rule failed)")
            continue
        passed = ci.low >= e["min_kappa"]
        how = "exact bound, no disagreement seen" if ci.method == "exact" else "bootstrap"
        results.append((name, "pass" if passed else "fail", value, limit,
                        f"95% CI [{ci.low:.3f}, {ci.high:.3f}] ({how}), n={a.n} labelled answers, {a.rule}"
                        + ("" if passed else f" -- fix: {_more(a, e['min_kappa'])}")))
        if not passed:
            ppi[e["measure"]] = (None, "raw value: PPI not used (the agreement rule failed)")
            continue
        # The PPI mean replaces the raw value only when people vouch for the measure (this rule
        # passed) and its labels are a uniform sample of this cell with ppi.MIN_LABELLED answers.
        est, why = uniform_ppi(cell, s, labels)
        ppi[e["measure"]] = (None, f"raw value: PPI not used ({why})") if est is None else (
            est.mean, f"PPI mean (raw {est.raw_mean:.4f}; 95% CI [{est.low:.3f}, {est.high:.3f}], {est.n_labelled} of "
                      f"{est.n_all} answers labelled: {why})")
    return results, ppi
