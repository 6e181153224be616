"""``rag-bench calibrate``: how well each automatic answer measure agrees with people, and the
prediction-powered (PPI) estimate of each cell's mean.

The labelled *items* are answers (question id + answer text, or a cell's answer): a label applies to
every cell whose answer it names (:meth:`Label.applies_to`). Agreement is computed over the distinct
labelled answers (one row per question and answer text; the automatic value is the first cell's
that gave that answer, in cell-id order), with the first labeller of the file as the person. Where
two labellers labelled the same answers, their own kappa is shown beside: the ceiling a measure can
reach. PPI is per cell: the automatic mean over all the cell's questions where the measure is
defined, corrected by the mean person-minus-measure difference on the cell's labelled answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.calibration.agreement import Interval, bootstrap_ci, cohen_kappa, confusion, kappa_ci, spearman
from rag_bench.calibration.labels import Label, check_conflicts, label_digest
from rag_bench.calibration.ppi import MIN_LABELLED, PpiEstimate, ppi_mean
from rag_bench.calibration.sampling import draw
from rag_bench.calibration.standins import StandIn, parameters, stand_ins
from rag_bench.cells import Cell


@dataclass(frozen=True)
class Agreement:
    """One stand-in against the people's labels."""

    measure: str
    human: str
    column: str
    rule: str
    n: int
    n_undefined: int
    base_rate: float  # the people's mean (grades on [0, 1])
    auto_rate: float  # the stand-in's yes rate on the same items
    categories: tuple[int, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: people; columns: the measure
    kappa: float
    kappa_ci: Interval
    weighted: bool
    spearman: float = float("nan")
    spearman_ci: Interval = Interval()
    labellers: tuple[str, ...] = ()
    labellers_n: int = 0
    labellers_kappa: float = float("nan")
    labellers_kappa_ci: Interval = Interval()
    cells: tuple[tuple[str, str, PpiEstimate], ...] = field(default=())  # (cell id, name, PPI)
    parameters: tuple[tuple[str, str], ...] = ()  # the settings of a group of cells (calibrate)


def _digests(records: pd.DataFrame) -> list[str | None]:
    """Each row's answer digest, None where there is no answer (labels by digest never apply there)."""
    errors = records["generation_error"] if "generation_error" in records else [None] * len(records)
    return [label_digest(a, e) for a, e in zip(records["answer"], errors)]


def _rows(cell: Cell, s: StandIn) -> pd.DataFrame:
    """The cell's questions where the stand-in is defined: qid, value, answer digest (indexed by
    row position in records.parquet)."""
    r = cell.records
    if s.column not in r or "answer" not in r:
        return pd.DataFrame(columns=["qid", "value", "digest"])
    keep = r[s.column].notna()
    if s.answerable is not None and "answerable" in r:
        keep &= r["answerable"].astype(bool) == s.answerable
    sub = r.loc[keep]
    return pd.DataFrame({"qid": sub["qid"].astype(str).to_numpy(), "value": sub[s.column].astype(float).to_numpy(),
                         "digest": _digests(sub)}, index=np.flatnonzero(keep.to_numpy()))


_Index = dict[tuple[str, str], list[Label]]


def _index(labels: Sequence[Label]) -> _Index:
    out: _Index = {}
    for lb in labels:
        out.setdefault((lb.measure, lb.qid), []).append(lb)
    return out


def _labels_for(labels: _Index, cell_id: str, qid: str, digest: str | None, human: str) -> list[Label]:
    found = [lb for lb in labels.get((human, qid), ()) if lb.applies_to(cell_id, qid, digest)]
    check_conflicts(found, cell_id)
    return found


def _verdict(value: float, s: StandIn, scale: int) -> int:
    if scale == 1:
        return int(value >= s.threshold)
    return int(round(min(max(value, 0.0), 1.0) * scale))


def _kappa_stats(people: list[int], auto: list[int], cats: list[int], weights: str | None,
                 seed: int) -> tuple[float, Interval]:
    kappa = cohen_kappa(people, auto, categories=cats, weights=weights)
    return kappa, kappa_ci(people, auto, categories=cats, weights=weights, seed=seed)


def _labeller_agreement(items: dict[tuple[str, str], list[Label]], cats: list[int], weights: str | None,
                        seed: int) -> tuple[tuple[str, ...], int, float, Interval]:
    """Kappa between the two labellers who labelled the most answers in common."""
    by: dict[str, dict[tuple[str, str], int]] = {}
    for key, labs in items.items():
        for lb in labs:
            by.setdefault(lb.labeller, {})[key] = lb.value
    names = sorted(by)
    best: tuple[int, str, str] | None = None
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = len(by[a].keys() & by[b].keys())
            if common and (best is None or common > best[0]):
                best = (common, a, b)
    if best is None:
        return (), 0, float("nan"), Interval()
    _, a, b = best
    keys = sorted(by[a].keys() & by[b].keys())
    k, ci = _kappa_stats([by[a][x] for x in keys], [by[b][x] for x in keys], cats, weights, seed)
    return (a, b), len(keys), k, ci


def _ppi(cell: Cell, s: StandIn, rows: pd.DataFrame, labels: _Index, only: set[int] | None = None) -> PpiEstimate:
    """PPI of the cell's mean from the labels of its answers (of the rows ``only``, when given)."""
    human, auto = [], []
    for pos, (qid, value, digest) in zip(rows.index, rows.itertuples(index=False)):
        labs = _labels_for(labels, cell.cell_id, qid, digest, s.human) if only is None or pos in only else []
        if labs:
            human.append(labs[0].score)
            auto.append(value)
    return ppi_mean(rows["value"].to_numpy(float), human, auto, min_labelled=MIN_LABELLED, bounds=(0.0, 1.0))


def uniform_ppi(cell: Cell, s: StandIn, labels: Sequence[Label]) -> tuple[PpiEstimate | None, str]:
    """The PPI mean of the cell from labels shown to be a uniform sample of its answers, and what
    they are; or None and why there is none.

    PPI's interval holds only for a uniform sample of the cell's answers. The labels that qualify
    record the labelling page's uniform draw of this cell (``sample``: this cell, a seed, no
    stratum), and only the start of that draw counts: its first m answers, every one labelled
    (any start of a random order is a uniform sample; answers skipped or labelled later are not).
    Labels carried from other cells by answer digest, written by hand, or drawn stratified are
    left out, so the gate checks the raw value instead."""
    own = [lb for lb in labels if lb.measure == s.human and lb.sample is not None and lb.sample.cell == cell.cell_id]
    uniform = [lb for lb in own if lb.sample is not None and lb.sample.stratify is None]
    if not uniform:
        if own:
            strata = sorted({lb.sample.stratify for lb in own if lb.sample is not None and lb.sample.stratify})
            return None, f"the labels of this cell were drawn stratified by {', '.join(strata)}: not a uniform sample"
        return None, ("no label records a draw of this cell's answers (labels carried by answer digest from other "
                      "cells, or written by hand, are not a uniform sample of it; rag-bench label CELL draws one)")
    digests = _digests(cell.records) if "answer" in cell.records else []
    qids = cell.records["qid"].astype(str).tolist()
    best: tuple[int, int, set[int]] = (0, 0, set())
    for seed in sorted({lb.sample.seed for lb in uniform if lb.sample is not None}):
        index = _index([lb for lb in uniform if lb.sample is not None and lb.sample.seed == seed])
        start: set[int] = set()
        for pos in draw(cell.records, seed):
            if not _labels_for(index, cell.cell_id, qids[pos], digests[pos], s.human):
                break
            start.add(pos)
        if len(start) > len(best[2]):
            best = (seed, len(start), start)
    seed, m, start = best
    rows = _rows(cell, s)
    est = _ppi(cell, s, rows, _index(uniform), only=start)
    what = f"the first {m} answers of the labelling page's draw (seed {seed}), a uniform sample"
    if math.isnan(est.mean):
        return None, (f"{what}, hold {est.n_labelled} labelled answers where the measure is defined; PPI needs "
                      f"{MIN_LABELLED}: label on from where the page stopped")
    return est, what


def agreement(cells: Sequence[Cell], names: dict[str, str], labels: Sequence[Label], s: StandIn, *,
              seed: int = 0) -> Agreement:
    """One stand-in's agreement with the people over the labelled answers of ``cells``, with PPI per cell."""
    index = _index(labels)
    items: dict[tuple[str, str], list[Label]] = {}
    auto_of: dict[tuple[str, str], float] = {}
    undefined: set[tuple[str, str]] = set()
    per_cell = []
    for cell in sorted(cells, key=lambda c: c.cell_id):
        rows = _rows(cell, s)
        defined = set(zip(rows["qid"], rows["digest"]))
        digests = _digests(cell.records) if "answer" in cell.records else []
        for key_qid, digest in zip(cell.records["qid"].astype(str), digests):
            if digest is None:
                continue
            key = (key_qid, digest)
            labs = _labels_for(index, cell.cell_id, key[0], key[1], s.human)
            if labs and key not in defined:
                undefined.add(key)
            elif labs and key not in items:
                items[key] = labs
        for qid, value, digest in rows.itertuples(index=False):
            auto_of.setdefault((qid, digest), value)
        per_cell.append((cell.cell_id, names.get(cell.cell_id, cell.cell_id), _ppi(cell, s, rows, index)))
    scale = max((lb.scale for labs in items.values() for lb in labs), default=1)
    cats = list(range(scale + 1))
    weights = None if scale == 1 else "quadratic"
    keys = sorted(items)
    people = [items[k][0].value if items[k][0].scale == scale else round(items[k][0].score * scale) for k in keys]
    auto = [_verdict(auto_of[k], s, scale) for k in keys]
    kappa, kci = _kappa_stats(people, auto, cats, weights, seed)
    rho, rci = float("nan"), Interval()
    if scale > 1 and keys:
        raw = [auto_of[k] for k in keys]
        rho, rci = spearman(people, raw), bootstrap_ci(lambda x, y: spearman(x.tolist(), y.tolist()), people, raw,
                                                              seed=seed)
    pair, pn, pk, pci = _labeller_agreement(items, cats, weights, seed)
    m = confusion(people, auto, cats) if keys else np.zeros((len(cats), len(cats)), dtype=np.int64)
    nan = float("nan")
    return Agreement(
        measure=s.name, human=s.human, column=s.column,
        rule=f"{s.column} >= {s.threshold:g}" if scale == 1 else f"round({s.column} x {scale})",
        n=len(keys), n_undefined=len(undefined - set(items)),
        base_rate=float(np.mean([items[k][0].score for k in keys])) if keys else nan,
        auto_rate=float(np.mean(auto)) / scale if keys else nan,
        categories=tuple(cats), confusion=tuple(tuple(int(v) for v in row) for row in m),
        kappa=kappa, kappa_ci=kci, weighted=scale > 1, spearman=rho, spearman_ci=rci,
        labellers=pair, labellers_n=pn, labellers_kappa=pk, labellers_kappa_ci=pci, cells=tuple(per_cell))


def calibrate(cells: Sequence[Cell], names: dict[str, str], labels: Sequence[Label], *,
              seed: int = 0) -> list[Agreement]:
    """Every stand-in the cells have, against the people's labels of its human measure; per group
    of cells, named by its settings, where the cells' settings give the column different meanings
    (``correct`` under eval.answer_match contains in one cell and em in another)."""
    columns: list[str] = []
    for c in cells:
        columns += [col for col in c.records.columns if col not in columns]
    out = []
    for s in stand_ins(columns):
        groups: dict[tuple[tuple[str, str], ...], list[Cell]] = {}
        for c in cells:
            if s.column in c.records:
                groups.setdefault(parameters(s, c.config if isinstance(c.config, dict) else {}), []).append(c)
        if len(groups) <= 1:
            out.append(agreement(cells, names, labels, s, seed=seed))
            continue
        for params, group in sorted(groups.items()):
            a = agreement(group, names, labels, s, seed=seed)
            out.append(replace(a, measure=f"{s.name} ({', '.join(f'{k}={v}' for k, v in params)})",
                               parameters=params))
    return out


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def as_json(results: Sequence[Agreement]) -> list[dict[str, Any]]:
    """JSON-ready dicts (NaN as null)."""
    out = []
    for a in results:
        out.append({
            "measure": a.measure, "human": a.human, "column": a.column, "rule": a.rule, "n": a.n,
            "n_undefined": a.n_undefined, "base_rate": _num(a.base_rate), "auto_rate": _num(a.auto_rate),
            "bias": _num(a.auto_rate - a.base_rate),
            "categories": list(a.categories), "confusion": [list(r) for r in a.confusion],
            "kappa": _num(a.kappa), **_interval("kappa_ci", a.kappa_ci), "weighted": a.weighted,
            "spearman": _num(a.spearman), **_interval("spearman_ci", a.spearman_ci),
            "parameters": dict(a.parameters), "labellers": list(a.labellers), "labellers_n": a.labellers_n,
            "labellers_kappa": _num(a.labellers_kappa),
            **_interval("labellers_kappa_ci", a.labellers_kappa_ci),
            "cells": [{"cell": cid, "name": name, "raw_mean": _num(p.raw_mean), "ppi_mean": _num(p.mean),
                       "ppi_ci": [_num(p.low), _num(p.high)], "n_labelled": p.n_labelled, "n_all": p.n_all}
                      for cid, name, p in a.cells],
        })
    return out


def _f(x: float, d: int = 2) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{d}f}"


def _interval(key: str, ci: Interval) -> dict[str, Any]:
    """``key: [low, high]`` (nulls when there is none), ``key_note``: why there is none, and
    ``key_undefined``: the bootstrap resamples on which the statistic was undefined."""
    return {key: [_num(v) for v in ci.bounds], **({f"{key}_note": ci.reason} if ci.reason else {}),
            **({f"{key}_undefined": ci.undefined} if ci.undefined else {})}


def _ci(ci: tuple[float, float] | Interval) -> str:
    lo, hi = ci.bounds if isinstance(ci, Interval) else ci
    if not (math.isnan(lo) or math.isnan(hi)):
        return f" [{lo:.2f}, {hi:.2f}]"
    return " [no CI]" if isinstance(ci, Interval) and ci.reason else ""


def _bias(a: Agreement) -> str:
    """The measure's "yes" rate minus people's, in points (signed); n/a without both."""
    if math.isnan(a.auto_rate) or math.isnan(a.base_rate):
        return "n/a"
    return f"{100 * (a.auto_rate - a.base_rate):+.1f}"


def _ppi_shown(a: Agreement) -> str:
    """The PPI mean of the cell with the most labelled answers, with its CI (n/a below MIN_LABELLED)."""
    if not a.cells:
        return "n/a"
    _, _, p = max(a.cells, key=lambda c: c[2].n_labelled)
    return "n/a" if math.isnan(p.mean) else f"{p.mean:.3f}{_ci((p.low, p.high))}"


def format_text(results: Sequence[Agreement], *, max_cells: int = 6) -> str:
    """The console table: agreement per measure, then raw vs PPI means per cell."""
    lines = ["Agreement with people (kappa: 1 = as people, 0 = chance; 95% CI over labelled answers: bootstrap, or "
             "the exact bound when no answer shows a disagreement)", ""]
    w = max([30] + [len(a.measure) for a in results])  # a group's settings lengthen its name
    head = f"{'measure':<{w}} {'vs':<12} {'n':>4} {'undef':>5} {'people':>6} {'auto':>6} {'bias':>6}  " \
           f"{'confusion':<17} {'kappa [95% CI]':<24} {'PPI mean [95% CI]':<24} labellers' kappa"
    lines += [head, "-" * len(head)]
    for a in results:
        conf = "/".join(str(v) for row in a.confusion for v in row) if not a.weighted else "graded"
        kap = ("wκ " if a.weighted else "") + _f(a.kappa) + ("" if math.isnan(a.kappa) else _ci(a.kappa_ci))
        if a.weighted:
            kap += f" ρ {_f(a.spearman)}"
        ceiling = (f"{_f(a.labellers_kappa)}{'' if math.isnan(a.labellers_kappa) else _ci(a.labellers_kappa_ci)} "
                   f"(n={a.labellers_n}, "
                   f"{' vs '.join(a.labellers)})") if a.labellers_n else "-"
        lines.append(f"{a.measure:<{w}} {a.human:<12} {a.n:>4} {a.n_undefined:>5} {_f(a.base_rate):>6} "
                     f"{_f(a.auto_rate):>6} {_bias(a):>6}  {conf:<17} {kap:<24} {_ppi_shown(a):<24} {ceiling}")
    lines += ["", "people / auto: the share of \"yes\" among the labelled answers, by people and by the measure; "
              "bias: auto - people in points (what a figure read from the measure is off by); PPI mean: the "
              "cell with the most labelled answers, its mean corrected by people's labels (below)",
              "confusion: people-no/measure-no / people-no/measure-yes / people-yes/measure-no / "
              "people-yes/measure-yes; undef: labelled answers the measure is not defined on (for a judge "
              "that may be undecided: its undecided answers)"]
    lines += [f"no CI for {a.measure}{' (labellers)' if who else ''}: {ci.reason}" for a in results
              for who, k, ci in ((False, a.kappa, a.kappa_ci), (True, a.labellers_kappa, a.labellers_kappa_ci))
              if ci.reason and not math.isnan(k)]
    lines.append("")
    lines.append("Cell means, raw vs PPI-corrected (95% CI), the cells with the most labelled answers "
                 "(the answer_match variants and every cell: --json):")
    shown = [a for a in results if a.n and "[" not in a.measure]
    for a in shown:
        lines.append(f"  {a.measure} (vs people's {a.human}):")
        cells = sorted(a.cells, key=lambda c: -(c[2].n_labelled))[:max_cells]
        for cid, name, p in cells:
            lines.append(f"    {name:<34} raw {_f(p.raw_mean, 3)}  PPI {_f(p.mean, 3)}{_ci((p.low, p.high))}  "
                         f"labelled {p.n_labelled}/{p.n_all}")
        if len(a.cells) > max_cells:
            lines.append(f"    ... {len(a.cells) - max_cells} more cells (--json lists all)")
    return "\n".join(lines)
