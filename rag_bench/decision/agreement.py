"""Do two question sets rank configurations alike? The same grid swept on two question sets over
the same corpus (people's set and a drafted one, or two halves of one set), compared as decisions:

* **Kendall's tau-b** between the two rankings of the cells (:mod:`rag_bench.stats.rank_agreement`;
  each cell's value of the measure that ranks its experiment, ties left as ties), with a 95%
  bootstrap interval over **questions**: each experiment's questions are drawn with replacement
  (:func:`rag_bench.decision.effects.draws`; independently, the two sets hold different
  questions), every cell's mean is recomputed on its experiment's draw, and tau is taken in each
  pair of draws. The interval says how much of the agreement the sets' finite size could move.
* **Top-1**: whether both rankings (:func:`rag_bench.decision.decide.rank`, ties by its rule) put
  the same cell first, and where each best cell stands in the other ranking.
* **The not-significantly-worse sets**: each experiment's verdict's set
  (:func:`rag_bench.decision.verdict.verdict`: the 95% model confidence set), their overlap and
  Jaccard index. Two sets that pick different "bests" may still agree on which cells are contenders.
* **Per axis**: the main effects (:func:`rag_bench.decision.effects.main_effects`) of each swept
  axis that can move the measure, in each experiment: the same best and worst level (the same sign
  for two levels), and whether the spread is significant (its 95% interval over questions excludes
  0) in both, in one, or in neither. The two *agree* on an axis when it is significant in both with
  the same sign, or in neither.

Cells are matched by their config without the dataset (``dataset.*``) and without what never
changes results (:data:`rag_bench.naming.IGNORED`); a grid that does not match, or two corpora
(metrics.json ``corpus_fingerprint``), is a ConfigError/DataError naming what differs and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rag_bench import naming
from rag_bench.cells import Cell
from rag_bench.decision import decide, effects
from rag_bench.decision.verdict import question_values, verdict
from rag_bench.errors import ConfigError, DataError, Problem
from rag_bench.evaluation import measures
from rag_bench.runner.config import without_old_defaults
from rag_bench.stats.rank_agreement import kendall_tau_b, percentile_interval

RESAMPLES = effects.RESAMPLES
SEED = effects.SEED
SAME_AS_CELLS = ("dataset",)  # the keys two experiments of one grid may differ in
PAIRS_AT_ONCE = 2_000_000  # cell pairs x draws tau is computed on at once (a few arrays of this many floats)


def grid_key(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What identifies a cell within a grid across question sets: its flat config without the dataset,
    without the keys that never change results (output folder, tracking, experiment name...) and
    without settings at the value every cell had before they existed (``query=none``, ...: a cell
    written by an older rag_bench matches one written now, as their cell ids do).

    >>> grid_key({"dataset": {"path": "a"}, "chunker": {"name": "fixed"}, "experiment": {"name": "x"}})
    (('chunker.name', "'fixed'"),)
    """
    flat = naming.flat_params(without_old_defaults(dict(config)))  # a cell from before a setting existed matches
    skip = (*naming.IGNORED, *SAME_AS_CELLS)
    return tuple(sorted((k, repr(v)) for k, v in flat.items()
                        if not any(k == p or k.startswith(p + ".") for p in skip) and not k.endswith("._target_")))


def _differs(a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]) -> list[str]:
    da, db = dict(a), dict(b)
    return [f"{k}={da.get(k, '(unset)')} vs {db.get(k, '(unset)')}" for k in sorted(da.keys() | db.keys())
            if da.get(k) != db.get(k)]


def match_cells(cells_a: Sequence[Cell], cells_b: Sequence[Cell], *, where_a: str = "A", where_b: str = "B",
                common: bool = False) -> list[tuple[Cell, Cell]]:
    """The pairs (cell of A, cell of B) with the same :func:`grid_key`, in A's order. ConfigError when
    a cell of either has no counterpart (unless ``common``: the cells both have), naming the cell, the
    nearest counterpart and the keys they differ in; or when fewer than two cells match."""
    keys_b: dict[tuple[tuple[str, str], ...], Cell] = {}
    for c in cells_b:
        keys_b.setdefault(grid_key(c.config), c)
    keys_a = {grid_key(c.config): c for c in cells_a}
    pairs = [(c, keys_b[k]) for k, c in keys_a.items() if k in keys_b]
    only_a = [c for k, c in keys_a.items() if k not in keys_b]
    only_b = [c for k, c in keys_b.items() if k not in keys_a]
    if (only_a or only_b) and not common:
        names_a, names_b = decide.names_of(cells_a), decide.names_of(cells_b)
        lonely, other, here, there, names = ((only_a[0], cells_b, where_a, where_b, names_a) if only_a
                                             else (only_b[0], cells_a, where_b, where_a, names_b))
        key = grid_key(lonely.config)
        near = min(other, key=lambda c: len(_differs(key, grid_key(c.config))), default=None)
        diff = _differs(key, grid_key(near.config))[:4] if near is not None else []
        raise ConfigError(str(Problem(
            here, 0, "grid",
            f"the two experiments did not sweep the same grid: {len(only_a)} of {len(cells_a)} cells of {where_a} and "
            f"{len(only_b)} of {len(cells_b)} of {where_b} have no counterpart (the same config but the dataset); "
            f"e.g. {names[lonely.cell_id]!r} ({lonely.cell_id})"
            + (f", nearest in {there}: {'; '.join(diff)}" if diff else ""),
            f"sweep the same overrides on both question sets, changing dataset.path only (rag-bench run -m <the same "
            f"grid> dataset.path=OTHER experiment.name=OTHER), or pass --common to compare the {len(pairs)} cells "
            "both have")))
    if len(pairs) < 2:
        raise ConfigError(str(Problem(where_a, 0, "grid", f"{len(pairs)} cell(s) match between {where_a} and "
                                      f"{where_b}: a ranking needs two", "sweep at least two configurations on both "
                                      "question sets")))
    return pairs


def check_corpus(cells_a: Sequence[Cell], cells_b: Sequence[Cell], *, where_a: str = "A",
                 where_b: str = "B") -> str:
    """DataError when the two experiments' cells searched different corpora (metrics.json
    ``corpus_fingerprint``); a note (empty when checked) when a cell's is null (not known: a cell
    of format 0 written before it was recorded, :class:`rag_bench.cells.MetricsJson`)."""
    fa = {c.corpus_fingerprint for c in cells_a}
    fb = {c.corpus_fingerprint for c in cells_b}
    if None in fa or None in fb:
        return ("corpus not checked: some cells were written before metrics.json recorded corpus_fingerprint "
                "(re-run them to have it checked)")
    if fa != fb or len(fa) != 1:
        other, path = (naming.flat_params(dict(cs[0].config)).get("dataset.path") for cs in (cells_a, cells_b))
        raise DataError(Problem(
            where_b, 0, "corpus_fingerprint",
            f"the two experiments searched different corpora: {where_a} {', '.join(sorted(map(str, fa)))} "
            f"(dataset {other}), {where_b} {', '.join(sorted(map(str, fb)))} (dataset {path}); two question sets "
            "rank configurations comparably only over the same documents",
            "give both question sets the same docs/ and docs.jsonl (copy them byte for byte; dataset.yaml may "
            "differ) and the same parser, then sweep both again"))
    return ""


@dataclass(frozen=True)
class CellPair:
    """One configuration in both experiments: its name, value and rank (1 = best) in each, and
    whether it is in each one's not-significantly-worse set."""

    name: str
    cell_a: str
    cell_b: str
    value_a: float | None
    value_b: float | None
    rank_a: int
    rank_b: int
    close_a: bool
    close_b: bool


@dataclass(frozen=True)
class AxisAgreement:
    """One swept axis: its best and worst level, spread and the spread's 95% CI in each experiment;
    ``same_sign``: the same best and worst level; ``significant_a``/``_b``: the CI excludes 0
    (None: no interval, no per-question values)."""

    axis: str
    best_a: str
    worst_a: str
    spread_a: float
    ci_a: tuple[float, float]
    best_b: str
    worst_b: str
    spread_b: float
    ci_b: tuple[float, float]
    same_sign: bool
    significant_a: bool | None
    significant_b: bool | None

    @property
    def agree(self) -> bool:
        """Both say the same about the axis: significant in both with the same sign, or in neither
        (then its order is noise in both, and a differing sign says nothing)."""
        if self.significant_a is None or self.significant_b is None:
            return False
        return self.significant_a == self.significant_b and (self.same_sign or not self.significant_a)


@dataclass(frozen=True)
class Agreement:
    """What ``rag-bench agree`` states (:func:`agreement`)."""

    measure_a: str
    measure_b: str
    questions_a: int
    questions_b: int
    tau: float
    tau_ci: tuple[float, float]
    resamples: int
    top1_same: bool
    best_a: str
    best_b: str
    rank_in_b_of_best_a: int
    rank_in_a_of_best_b: int
    close_a: tuple[str, ...]
    close_b: tuple[str, ...]
    cells: tuple[CellPair, ...]
    axes: tuple[AxisAgreement, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def overlap(self) -> tuple[str, ...]:
        """The cells (names) in both not-significantly-worse sets."""
        return tuple(n for n in self.close_a if n in self.close_b)

    @property
    def jaccard(self) -> float:
        """|both sets| / |either set|."""
        either = set(self.close_a) | set(self.close_b)
        return len(self.overlap) / len(either) if either else math.nan

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the overlap, the Jaccard index and each axis's ``agree``."""
        out = asdict(self)
        out["overlap"], out["jaccard"] = list(self.overlap), self.jaccard
        for d, a in zip(out["axes"], self.axes):
            d["agree"] = a.agree
        return out


def per_question(cells: Sequence[Cell], key: str) -> pd.DataFrame | None:
    """Questions x cells: each cell's per-question value of ``key`` (records.parquet, NaN where
    undefined), None when the measure is not a mean over questions or a cell lacks its column."""
    m = measures.measure(key)
    if m is None or m.aggregate != "mean":
        return None
    series = [question_values(c, m.column) for c in cells]
    if any(s is None for s in series):
        return None
    frame = pd.concat(series, axis=1, join="outer")
    frame.columns = [c.cell_id for c in cells]
    return frame


def _goodness(values: np.ndarray, key: str) -> np.ndarray:
    return values if decide.higher_is_better(key) else -values


def _axis_rows(cells: Sequence[Cell], key: str, samples: np.ndarray | None) -> dict[str, effects.Effect]:
    axes = [a for a in naming.axes([c.config for c in cells]) if effects.can_move(a, key)]
    frame = pd.DataFrame([{**{a: naming.value(c.config, a) for a in axes}, key: decide.value_of(c, key)}
                          for c in cells])
    found = effects.main_effects(frame, axes, key, higher_is_better=decide.higher_is_better(key), samples=samples)
    return {e.axis: e for e in found}


def _significant(e: effects.Effect) -> bool | None:
    return None if e.spread_lo != e.spread_lo else bool(e.spread_lo > 0)


def _check_values(cells: Sequence[Cell], key: str, which: str, names: Mapping[str, str]) -> None:
    """ConfigError when one of side ``which``'s ``cells`` has no value of ``key`` (``names``: how a
    cell is called, else its id)."""
    lacking = [c for c in cells if decide.value_of(c, key) is None]
    if lacking:
        raise ConfigError(f"{which}: {len(lacking)} of {len(cells)} cells have no value of {key} (e.g. "
                          f"{names.get(lacking[0].cell_id, lacking[0].cell_id)}"
                          f": {lacking[0].metric_problem(key) or 'no value'}) -- fix: rank by a measure every cell "
                          "reports (--by, e.g. retrieval/ndcg@10)")


def _questions(cells: Sequence[Cell], key: str) -> pd.DataFrame:
    """The per-question values of ``key`` (questions x cells) on the questions where the measure is
    defined; ConfigError when it has no per-question values."""
    frame = per_question(cells, key)
    if frame is None:
        raise ConfigError(f"{key} has no per-question values in records.parquet, so its ranking has no interval "
                          "over questions -- fix: rank by a mean over questions (--by, e.g. retrieval/ndcg@10 or "
                          "answer/context_all)")
    return frame[frame.notna().any(axis=1)]


def _undefined_tau(va: np.ndarray, vb: np.ndarray) -> str:
    """Why tau is undefined: the side whose cells all tie."""
    tied = [side for side, v in (("A", va), ("B", vb)) if np.unique(v[np.isfinite(v)]).size <= 1]
    where = {1: f"{tied[0]}'s ranking", 2: "A's and B's rankings"}.get(len(tied), "a ranking")
    return (f"tau is undefined: every cell ties in {where} by its measure "
            "(no order to compare; top-1 then follows the tie rule) -- fix: rank both by a measure the cells "
            "differ on (--by, e.g. retrieval/ndcg@10), or sweep cells that differ")


def _axes(eff_a: Mapping[str, effects.Effect], eff_b: Mapping[str, effects.Effect]) -> list[AxisAgreement]:
    """Per axis both sides swept, whether their main effects agree (best and worst level, spread, sign)."""
    axes = []
    for axis, ea in eff_a.items():
        eb = eff_b.get(axis)
        if eb is None:
            continue
        axes.append(AxisAgreement(axis, ea.levels[0].value, ea.levels[-1].value, ea.spread, (ea.spread_lo, ea.spread_hi),
                                  eb.levels[0].value, eb.levels[-1].value, eb.spread, (eb.spread_lo, eb.spread_hi),
                                  (ea.levels[0].value, ea.levels[-1].value) == (eb.levels[0].value, eb.levels[-1].value),
                                  _significant(ea), _significant(eb)))
    return axes


def agreement(pairs: Sequence[tuple[Cell, Cell]], *, key_a: str, key_b: str, resamples: int = RESAMPLES,
              seed: int = SEED, notes: Sequence[str] = ()) -> Agreement:
    """The agreement of the two rankings of the matched ``pairs`` (cells of A, cells of B), A ranked by
    ``key_a`` and B by ``key_b``. ConfigError when a measure has no per-question values (nothing to
    resample) or a cell has no value of it."""
    cells_a, cells_b = [a for a, _ in pairs], [b for _, b in pairs]
    names = decide.names_of(cells_a)
    _check_values(cells_a, key_a, "A", names)
    _check_values(cells_b, key_b, "B", {})
    fa, fb = _questions(cells_a, key_a), _questions(cells_b, key_b)
    da, db = effects.draws(len(fa), resamples, seed), effects.draws(len(fb), resamples, seed + 1)
    sa = effects.resampled_means(fa.to_numpy(np.float64), da)  # draws x cells
    sb = effects.resampled_means(fb.to_numpy(np.float64), db)
    va = np.array([decide.value_of(c, key_a) for c in cells_a], dtype=np.float64)
    vb = np.array([decide.value_of(c, key_b) for c in cells_b], dtype=np.float64)
    tau = float(kendall_tau_b(_goodness(va, key_a), _goodness(vb, key_b)))
    if tau != tau:  # undefined: say why rather than print a bare n/a
        notes = [*notes, _undefined_tau(va, vb)]
    ga, gb = _goodness(sa, key_a), _goodness(sb, key_b)
    step = max(1, PAIRS_AT_ONCE // max(1, len(cells_a) * (len(cells_a) - 1) // 2))  # a 180-cell grid: 124 draws
    taus = np.concatenate([kendall_tau_b(ga[i:i + step], gb[i:i + step]) for i in range(0, len(ga), step)])
    ranked_a = decide.rank(cells_a, key_a, names)
    names_b = {b.cell_id: names[a.cell_id] for a, b in pairs}
    ranked_b = decide.rank(cells_b, key_b, names_b)
    pos_a = {c.cell_id: i + 1 for i, c in enumerate(ranked_a)}
    pos_b = {c.cell_id: i + 1 for i, c in enumerate(ranked_b)}
    to_a = {b.cell_id: a for a, b in pairs}
    to_b = {a.cell_id: b for a, b in pairs}
    close_a = set(verdict(cells_a, key=key_a, names=names).close)
    close_b = set(verdict(cells_b, key=key_b, names=names_b).close)
    rows = tuple(CellPair(names[a.cell_id], a.cell_id, b.cell_id, decide.value_of(a, key_a), decide.value_of(b, key_b),
                          pos_a[a.cell_id], pos_b[b.cell_id], a.cell_id in close_a, b.cell_id in close_b)
                 for a in ranked_a for b in [to_b[a.cell_id]])
    best_a, best_b = ranked_a[0], ranked_b[0]
    axes = _axes(_axis_rows(cells_a, key_a, sa.T), _axis_rows(cells_b, key_b, sb.T))
    return Agreement(key_a, key_b, len(fa), len(fb), tau, percentile_interval(taus), resamples,
                     to_a[best_b.cell_id].cell_id == best_a.cell_id, names[best_a.cell_id], names_b[best_b.cell_id],
                     pos_b[to_b[best_a.cell_id].cell_id], pos_a[to_a[best_b.cell_id].cell_id],
                     tuple(r.name for r in rows if r.close_a), tuple(r.name for r in rows if r.close_b), rows,
                     tuple(axes), tuple(notes))


def ranking_measure(cells: Sequence[Cell], by: str | None = None) -> str:
    """The measure that ranks ``cells``: ``by`` (``section/name``, or a bare name found once among the
    cells' measures) else their primary measure (:func:`rag_bench.decision.decide.primary_measure`);
    ConfigError naming ``--by`` when no cell has it."""
    if by and "/" not in by:
        found = sorted({f"{s}/{by}" for c in cells for s, v in c.metrics.items() if isinstance(v, Mapping) and by in v})
        found = decide.rankable(found) or found
        if len(found) == 1:
            by = found[0]
    try:
        return decide.primary_measure(cells, by)
    except ConfigError as exc:  # the catalog names the setting it checks: here it is --by
        text = str(exc)
        if by and text.startswith("experiment.primary:") and "=auto" in text:  # its fix is a config key's: say --by's
            head, _, fix = text.partition(" -- fix: ")
            near = fix.split("? ", 1)[0] + "? " if fix.startswith("did you mean") else ""
            text = f"{head} -- fix: {near}--by a section/name such as retrieval/ndcg@10, or no --by (each experiment's primary)"
        raise ConfigError(text.replace("experiment.primary:", "--by:", 1) if by else text) from exc


def of_experiments(cells_a: Sequence[Cell], cells_b: Sequence[Cell], *, by: str | None = None, common: bool = False,
                   where_a: str = "A", where_b: str = "B", resamples: int = RESAMPLES, seed: int = SEED) -> Agreement:
    """:func:`agreement` of two experiments' finished cells (each of one dataset version): the corpus
    checked (:func:`check_corpus`), the cells matched (:func:`match_cells`), each ranked by ``by`` or
    its primary measure; what the reader should know beside the figures in ``notes``."""
    for where, cells in ((where_a, cells_a), (where_b, cells_b)):
        if not cells:
            raise ConfigError(f"{where}: no finished cells (folders with DONE) -- fix: run the sweep first "
                              "(rag-bench run -m ...)")
    if resamples < 1:
        raise ConfigError(f"resamples must be at least 1, got {resamples} -- fix: e.g. --resamples 1000")
    note = check_corpus(cells_a, cells_b, where_a=where_a, where_b=where_b)
    pairs = match_cells(cells_a, cells_b, where_a=where_a, where_b=where_b, common=common)
    notes = [note] if note else []
    if common and len(pairs) < max(len(cells_a), len(cells_b)):
        notes.append(f"--common: {len(pairs)} cells both experiments have ({len(cells_a)} in A, {len(cells_b)} in B)")
    if {c.dataset_fingerprint for c in cells_a} == {c.dataset_fingerprint for c in cells_b}:
        notes.append("the two experiments used the same dataset version: the same questions agree with themselves")
    key_a = ranking_measure([x for x, _ in pairs], by)
    key_b = ranking_measure([y for _, y in pairs], by)
    return agreement(pairs, key_a=key_a, key_b=key_b, resamples=resamples, seed=seed, notes=notes)
