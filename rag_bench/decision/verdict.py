"""The verdict on an experiment: not a winner but a decision a team can act on -- the best cell by
the primary measure, the cells that cannot be told from it, and whether it beats the baseline.

* **Best**: :func:`rag_bench.decision.decide.rank`'s first cell (ties said).
* **Not significantly worse**: the 95% model confidence set over the cells' per-question values of
  the primary measure (:mod:`rag_bench.stats.confidence_set`; questions resampled, pairs kept): the
  cells a reader should treat as equally good. A cell outside it is significantly worse than the
  best, with the selection of "a best among many" accounted for.
* **Versus the baseline** (the config's defaults cell, or the one named): the paired difference on
  the primary measure (best - baseline), its paired bootstrap 95% CI and the paired randomisation
  test's p -- one pre-declared test, so no multiplicity correction (``compare`` corrects its family
  of secondary measures with Holm). When the CI and p disagree the line says why, and which decides.

Every view states the same :class:`Verdict` (:meth:`Verdict.text`): the console at the end of a
sweep, ``leaderboard``, the report's header, the sweep's MLflow parent run, ``compare EXPERIMENT``
and the notebook (:mod:`rag_bench.api`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.cells import Cell, experiment_cells, one_dataset
from rag_bench.decision import decide
from rag_bench.errors import ConfigError, DataError, Problem
from rag_bench.evaluation import measures
from rag_bench.evaluation.scorers.answer import HANDED, REFUSED, refusal_warning
from rag_bench.stats.confidence_set import model_confidence_set
from rag_bench.stats.paired import disagreement, paired_bootstrap_ci, randomisation_p

ALPHA = 0.05
RESAMPLES = 2000


@dataclass(frozen=True)
class Versus:
    """The best cell against the baseline on the primary measure: ``diff`` = best - baseline over
    ``n`` common questions, its paired bootstrap CI, the randomisation test's ``p`` -- and, when the
    CI and p disagree, why in words (``disagree``, :func:`rag_bench.stats.paired.disagreement`)."""

    cell: str
    name: str
    diff: float
    ci: tuple[float, float]
    p: float
    n: int
    significant: bool
    better: bool  # the difference is in the measure's better direction
    role: str = ""  # how the baseline was chosen, when not the config's defaults or named (said in the line)
    disagree: str = ""  # why the CI and p disagree, in words (stats.paired.disagreement); "" when they agree

    def text(self) -> str:
        """``not significantly better than the baseline X (+0.012 [-0.030, +0.050], p = 0.41)``."""
        if self.significant:
            how = "significantly better than" if self.better else "significantly worse than"
        else:
            how = "not significantly better than" if self.diff != 0 else "no different from"
        base = f"the baseline {self.name}" + (f" ({self.role})" if self.role else "")
        why = f": {self.disagree}" if self.disagree else ""
        return f"{how} {base} ({self.diff:+.3f} [{self.ci[0]:+.3f}, {self.ci[1]:+.3f}], {p_text(self.p)}{why})"


@dataclass(frozen=True)
class Verdict:
    """What an experiment decides (:func:`verdict`).

    ``measure`` ranks the cells (``reason`` says why: the configured measure, or what ``auto``
    chose); ``best``/``best_name`` its first cell with ``value`` and ``ci``; ``tie`` the tie note;
    ``close`` the cells not significantly worse (best first, in rank order: the best always in it);
    ``n`` the questions the test used; ``untested`` why no test ran (empty when one did);
    ``versus`` the comparison with the baseline, ``baseline_note`` why there is none."""

    measure: str
    reason: str
    cells: int
    best: str
    best_name: str
    value: float | None
    ci: tuple[float, float] | None
    tie: str
    close: tuple[str, ...]
    n: int
    untested: str
    versus: Versus | None
    baseline_note: str
    alpha: float = ALPHA
    findings: tuple[str, ...] = ()  # about the data set or the stand-in, said once for the cells
    tied: int = 1  # the cells equal to the best on the measure (the best included)

    @property
    def method(self) -> str:
        """How "not significantly worse" was decided."""
        if self.untested or self.cells < 2:  # one cell: nothing was compared
            return ""
        return f"{1 - self.alpha:.0%} model confidence set (Hansen et al. 2011) over {self.n} questions, paired bootstrap"

    def text(self) -> str:
        """The one line every view prints, e.g. ``Best: section hybrid rr=none k=5 (answer/correct_all
        0.311 [0.20, 0.44]) — 24 of 36 cells not significantly worse; not significantly better than the
        baseline section bm25 rr=none k=5 (+0.012 [-0.030, +0.050], p = 0.410)``."""
        value = "" if self.value is None else f" {self.value:.3f}"
        ci = f" [{self.ci[0]:.2f}, {self.ci[1]:.2f}]" if self.ci else ""
        head = f"Best: {self.best_name} ({self.measure}{value}{ci})"
        if self.tied > 1:  # a tie is said in the line itself: the first of them is a rule, not a finding
            head += f", tied with {self.tied - 1} other cell{'s' if self.tied > 2 else ''} (first by the tie rule)"
        if self.cells == 1:
            return f"{head} — the only cell"
        if self.untested:
            close = f"not tested against the other {self.cells - 1} cells: {self.untested}"
        elif len(self.close) == 1:
            close = f"every other of the {self.cells} cells significantly worse"
        else:
            close = f"{len(self.close)} of {self.cells} cells not significantly worse"
        versus = self.versus.text() if self.versus is not None else self.baseline_note
        return f"{head} — {close}; {versus}"

    def lines(self) -> list[str]:
        """The ranking's reason, the verdict, how it was decided (and the tie, when there is one)."""
        out = [self.reason[:1].upper() + self.reason[1:] + ".", self.text() + "."]
        if self.method:
            out.append(f"(Not significantly worse: in the {self.method}; versus the baseline: paired randomisation "
                       f"test on {self.measure}, its CI a paired bootstrap.)")
        if self.tie:
            out.append(f"({self.tie}.)")
        return out + [f"finding: {f}" for f in self.findings]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the line itself (``text``) and the method."""
        return {**asdict(self), "text": self.text(), "method": self.method}


def p_text(p: float) -> str:
    """``p < 0.001``, else ``p = `` and three decimals.

    >>> p_text(0.0004), p_text(0.41)
    ('p < 0.001', 'p = 0.410')
    """
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def question_values(cell: Cell, column: str) -> pd.Series | None:
    """``column`` of the cell's records.parquet by question id (read alone: the records of every
    cell of a large sweep are not loaded for one column); None when the cell has no such column."""
    if cell._records:
        frame = cell.records
        return frame.set_index("qid")[column].astype("float64") if column in frame else None
    import pyarrow.parquet as pq

    path = cell.path / "records.parquet"
    try:
        if column not in pq.read_schema(path).names:
            return None
        frame = pq.read_table(path, columns=["qid", column]).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
        raise DataError(Problem(str(path), 0, "records", f"unreadable parquet ({exc})",
                                "re-run the cell (delete the folder first)")) from exc
    return frame.set_index("qid")[column].astype("float64")


def verdict(cells: Sequence[Cell], *, key: str | None = None, baseline: str | Path | None = None,
            names: Mapping[str, str] | None = None, alpha: float = ALPHA, n_resamples: int = RESAMPLES,
            seed: int = 0) -> Verdict:
    """The verdict on ``cells`` (one experiment, one dataset version) by ``key`` (default: the
    primary measure, :func:`rag_bench.decision.decide.primary_measure`); ``baseline`` as
    :func:`rag_bench.decision.decide.baseline` takes it."""
    if not cells:
        raise DataError(Problem("", 0, "", "no finished cells to decide between", "run a sweep first"))
    primary = _primary_or_none(cells)
    key = key or primary or decide.primary_measure(cells)  # the last raises, saying why none ranks
    names = dict(names) if names is not None else decide.names_of(cells)
    ranked = decide.rank(cells, key, names)
    best = ranked[0]
    n_tied = len(decide.tied(ranked, key))
    tie = decide.tie_note(n_tied, key, best.metric(key),
                          parsed=any(c.metric("parse/seconds") is not None for c in ranked[:n_tied]))
    reason = decide.reason_of(cells, key) if key == primary else f"ranked by {key}"
    m = measures.measure(key)
    higher = decide.higher_is_better(key)
    close: tuple[str, ...] = (best.cell_id,)
    untested, n = "", 0
    if len(cells) > 1:
        column = m.column if m is not None and m.aggregate == "mean" else None
        series = [question_values(c, column) for c in ranked] if column else []
        if column is None or any(s is None for s in series):
            untested = f"{key} has no per-question values to resample"
        else:
            frame = pd.concat(series, axis=1, join="inner")  # the questions every cell has
            found = model_confidence_set(frame.to_numpy(np.float64), higher_is_better=higher, alpha=alpha,
                                         n_resamples=n_resamples, seed=seed)
            n = found.n
            if n < 2:
                untested = f"{n} question(s) where every cell has {key}"
            else:
                close = (best.cell_id, *(c.cell_id for c, keep in zip(ranked[1:], found.included[1:]) if keep))
    versus, note = _versus(cells, best, key, baseline, names, higher, alpha, n_resamples, seed)
    ci = best.metrics.get("ci", {}).get(key) if isinstance(best.metrics.get("ci"), dict) else None
    ci_pair = (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 and all(
        isinstance(x, (int, float)) for x in ci) else None
    return Verdict(key, reason, len(cells), best.cell_id, names[best.cell_id], decide.value_of(best, key), ci_pair,
                   tie, close, n, untested, versus, note, alpha, (*stand_in_warnings(cells), *data_findings(cells)),
                   n_tied)


def _primary_or_none(cells: Sequence[Cell]) -> str | None:
    """The primary measure of ``cells``; None when their ``experiment.primary`` names a measure none
    has (a ranking asked for by name, ``--sort-by``, still has a verdict)."""
    try:
        return decide.primary_measure(cells)
    except ConfigError:
        return None


def data_findings(cells: Sequence[Cell]) -> tuple[str, ...]:
    """The cells' metrics.json ``findings`` (about the data set, not a cell's configuration), each said
    once, with how many of the cells found it when not all did."""
    seen: dict[str, int] = {}
    for c in cells:
        for f in dict.fromkeys(c.metrics.get("findings") or ()):
            seen[str(f)] = seen.get(str(f), 0) + 1
    return tuple(f if n == len(cells) else f"{f} (in {n} of {len(cells)} cells)" for f, n in seen.items())


def stand_in_warnings(cells: Sequence[Cell]) -> tuple[str, ...]:
    """The stand-in generator's refusals of questions whose evidence it was handed, said once for
    the cells (each cell's counts are in its metrics.json ``refusals``): over the stand-in's cells
    together, with the range of its cells' rates."""
    counts = [(int(c.metric(REFUSED.key) or 0), int(c.metric(HANDED.key) or 0),
               (c.metrics.get("methods") or {}).get("refusal_setting")) for c in cells if decide.stand_in(c.metrics)]
    counts = [c for c in counts if c[1] > 0]
    if not counts:
        return ()
    refused, handed = sum(c[0] for c in counts), sum(c[1] for c in counts)
    rates = [r / h for r, h, _ in counts]
    setting = next((str(c[2]) for c in counts if c[2]), None)
    spread = (f", {min(rates):.0%}-{max(rates):.0%} by cell" if len(counts) > 1 and max(rates) > min(rates) else "")
    found = refusal_warning(refused, handed, setting, f" over the {len(counts)} stand-in cells{spread}"
                            if len(counts) > 1 else "")
    return (found,) if found else ()


def _versus(cells: Sequence[Cell], best: Cell, key: str, chosen: str | Path | None, names: Mapping[str, str],
            higher: bool, alpha: float, n_resamples: int, seed: int) -> tuple[Versus | None, str]:
    base, how = decide.baseline_of(cells, chosen)
    if base is None:
        return None, "no baseline: no cells"
    role = "" if how in (decide.DEFAULTS_ROLE, "as named") else how
    base_name = names.get(base.cell_id, base.cell_id)
    if base.cell_id == best.cell_id:
        return None, f"it is the baseline ({'the config defaults' if how == decide.DEFAULTS_ROLE else how})"
    m = measures.measure(key)
    column = m.column if m is not None and m.aggregate == "mean" else None
    a = question_values(base, column) if column else None
    b = question_values(best, column) if column else None
    if a is None or b is None:
        return None, f"not tested against the baseline {base_name}: {key} has no per-question values"
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    x, y = both.iloc[:, 0].to_numpy(np.float64), both.iloc[:, 1].to_numpy(np.float64)
    if len(both) == 0:
        return None, f"not tested against the baseline {base_name}: no question where both have {key}"
    diff = float((y - x).mean())
    lo, hi = paired_bootstrap_ci(x, y, n_resamples=n_resamples, seed=seed)
    p = randomisation_p(x, y, n_resamples=max(n_resamples, 1000), seed=seed)
    better = diff > 0 if higher else diff < 0
    why = disagreement((lo, hi), p, alpha, int(np.sum(y != x)))
    return Versus(base.cell_id, base_name, diff, (lo, hi), p, len(both), p <= alpha, better, role, why), ""


def of_experiment(experiment_dir: str | Path, *, fingerprint: str | None = None, key: str | None = None,
                  baseline: str | Path | None = None) -> Verdict:
    """:func:`verdict` on the finished cells of an experiment folder (one dataset version:
    ``fingerprint``, else the newest, :func:`rag_bench.cells.one_dataset`)."""
    cells, _ = one_dataset(experiment_cells(experiment_dir, records=False), fingerprint)
    return verdict(cells, key=key, baseline=baseline)
