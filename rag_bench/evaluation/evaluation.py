"""The evaluation of a cell: built once from the eval settings, it scores any system's run.

One loop: the run's final rankings are graded (:mod:`.grade`), every scorer of the evaluation runs
in turn on the run (each may read the columns of those before it), and every measure they declare
is aggregated the same way -- a ``mean`` with its n and 95% CI (:mod:`rag_bench.metrics.intervals`: Wilson for
0/1 measures, else a bootstrap) over the questions where it
is defined, a ``sum`` over questions, a ``value`` as the scorer gave it. metrics.json gets a
``measures`` block: each key with its direction, aggregate, parameters, definition and scorer, so
the cell describes itself. The cell's files (records.parquet, metrics.json, the TREC files) are
handed over as one :class:`~rag_bench.cells.CellResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from omegaconf import DictConfig

from rag_bench.cells import CellResult
from rag_bench.data.files import describe_files
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures as catalog
from rag_bench.evaluation import prices, table
from rag_bench.evaluation.grade import grade
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import REQUIREMENTS, Measure, Part, Requirement, Scorer, ScoringInput, Settings
from rag_bench.memo import SharedWork
from rag_bench.metrics.intervals import mean_cis

MEASURES = "measures"  # metrics.json: the block describing every key
SKIPPED = "skipped"  # metrics.json: the scorers eval.scorers=all ran without, each with the reason


@dataclass(frozen=True)
class Evaluation:
    """The eval settings of a cell and the scorers they run, in order."""

    settings: Settings
    scorers: tuple[Scorer, ...]
    named: bool = False  # eval.scorers names them (not ``all``): one whose inputs a run lacks is refused

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Evaluation:
        """The evaluation a cell's config asks for (``eval.*``, ``pipeline.k``; ``eval.scorers``:
        ``all`` or names of :data:`rag_bench.evaluation.measures.SCORERS` joined by commas)."""
        e = cfg.eval
        settings = Settings(ks=tuple(sorted(set(int(x) for x in e.ks))), k=int(cfg.pipeline.k),
                            min_coverage=float(e.min_coverage), relevance=str(e.relevance), gain=str(e.gain),
                            relevance_level=int(e.relevance_level), unit=str(e.unit), answer_match=str(e.answer_match),
                            f1_threshold=float(e.f1_threshold), n_resamples=int(e.bootstrap_resamples),
                            seed=int(e.seed), prices=prices.from_config(cfg),
                            claims_judge=str(e.get("claims_judge", "lexical")))
        names = scorer_names(e.get("scorers") or catalog.ALL_SCORERS)
        return cls(settings, chosen(names), named=names != [catalog.ALL_SCORERS])

    def runnable(self, run: SystemRun) -> tuple[list[Scorer], dict[str, str]]:
        """The scorers that can score ``run`` (each one's ``requires`` met), and those left out with
        what the run lacks; a scorer named in ``eval.scorers`` that the run cannot feed is a
        ConfigError with the fix."""
        scorers: list[Scorer] = []
        skipped: dict[str, str] = {}
        for scorer in self.scorers:
            lacking = _unmet(scorer, run, self.settings)
            if lacking and self.named:
                raise ConfigError(f"eval.scorers names {scorer.name}, which this run cannot feed: it has "
                                  f"{'; '.join(r.lacking for r in lacking)} -- fix: "
                                  f"{'; '.join(r.fix for r in lacking)}, or leave {scorer.name} out of eval.scorers")
            if lacking:
                skipped[scorer.name] = "; ".join(r.lacking for r in lacking)
            else:
                scorers.append(scorer)
        return scorers, skipped

    def evaluate(self, run: SystemRun, cell_id: str = "", work: SharedWork | None = None) -> CellResult:
        """The cell of ``run``: its records, metrics (and ``measures`` block) and TREC files."""
        scorers, skipped = self.runnable(run)
        scoring = ScoringInput(run, self.settings, grade(run, self.settings, work), cell_id, work)
        declared: list[tuple[Measure, str]] = []
        parts: list[Part] = table.run_parts(run, scoring.grades)
        for part in parts:
            scoring.columns.update(part.columns)
        own: list[Part] = []
        for scorer in scorers:
            declared += [(m, scorer.name) for m in scorer.measures(run, self.settings)]
            for part in scorer.score(scoring):
                scoring.columns.update(part.columns)
                own.append(part)
        frame = table.records([*parts, *own], len(run.questions))
        metrics = aggregate(scoring.columns, declared, own, self.settings)
        metrics["dataset_fingerprint"] = run.dataset.fingerprint
        metrics["corpus_fingerprint"] = run.dataset.corpus_key  # the documents alone: `rag-bench agree` checks it
        metrics["dataset_files"] = describe_files(run.dataset.files)  # what the fingerprint covers
        metrics["warnings"] = [w for part in own for w in part.warnings]
        metrics["findings"] = [f for part in own for f in part.findings]
        if skipped:
            metrics[SKIPPED] = skipped  # the scorers `all` left out, each with what the run lacks
        files = {name: text for part in own for name, text in part.files.items()}
        return CellResult(frame, metrics, files.pop("run.trec", ""), files.pop("qrels.trec", ""), files)


def _unmet(scorer: Scorer, run: SystemRun, settings: Settings) -> list[Requirement]:
    """The requirements of ``scorer.requires`` (:data:`~rag_bench.evaluation.scorer.REQUIREMENTS`) ``run`` does not meet."""
    return [REQUIREMENTS[r] for r in getattr(scorer, "requires", ()) if not REQUIREMENTS[r].met(run, settings)]


def scorer_names(value: str) -> list[str]:
    """``eval.scorers`` as names: ``"retrieval,evidence"`` -> ``["retrieval", "evidence"]``."""
    return [n.strip() for n in str(value).split(",") if n.strip()]


def chosen(names: Sequence[str]) -> tuple[Scorer, ...]:
    """The scorers ``eval.scorers`` names, in the catalog's order (``all``: every one); an unknown
    name is a ConfigError with the valid ones."""
    if list(names) == [catalog.ALL_SCORERS]:
        return tuple(catalog.SCORERS.get(n) for n in catalog.SCORERS)
    if not names:
        raise ConfigError(f"eval.scorers is empty -- fix: eval.scorers={catalog.ALL_SCORERS}")
    wanted = {catalog.SCORERS.check(n) for n in names}
    return tuple(catalog.SCORERS.get(n) for n in catalog.SCORERS if n in wanted)


def aggregate(columns: dict[str, Any], declared: Sequence[tuple[Measure, str]], parts: Sequence[Part],
              settings: Settings) -> dict[str, Any]:
    """metrics.json from the scorers' measures: ``{section: {name: value}}`` with ``n`` and ``ci``
    keyed ``section/name`` for the means, the sections' descriptive entries, and the ``measures``
    block (every key reported, what it means)."""
    metrics: dict[str, Any] = {}
    n: dict[str, int] = {}
    ci: dict[str, list[float] | None] = {}
    values = {k: v for part in parts for k, v in part.values.items()}
    means = [m for m, _ in declared if m.aggregate == "mean"]
    matrix = np.empty((len(next(iter(columns.values()), ())), len(means)))
    for j, m in enumerate(means):
        matrix[:, j] = np.asarray(columns[m.column], dtype=np.float64)
    # Every interval from one call: measures defined on the same questions share one resample gather.
    cis = mean_cis(matrix, n_resamples=settings.n_resamples, seed=settings.seed) if means else np.empty((0, 2))
    block: dict[str, Any] = {}
    col_of = {m.key: j for j, m in enumerate(means)}
    for m, scorer in declared:
        if m.aggregate == "mean":
            v = matrix[:, col_of[m.key]]
            defined = v[~np.isnan(v)]
            value: Any = float(defined.mean()) if defined.size else None
            n[m.key] = int(defined.size)
            lo, hi = cis[col_of[m.key]]
            ci[m.key] = [float(lo), float(hi)] if defined.size else None
        elif m.aggregate == "sum":
            value = int(np.asarray(columns[m.column]).sum())
        elif m.key in values:
            value = values[m.key]
        else:
            continue  # a figure its scorer did not give for this run
        metrics.setdefault(m.section, {})[m.name] = value
        block[m.key] = m.described(settings, scorer)
    for part in parts:
        n.update(part.n)
        ci.update(part.cis)
        for name, entries in part.sections.items():
            metrics.setdefault(name, {}).update(entries)
    metrics["n"], metrics["ci"] = n, ci
    metrics[MEASURES] = block
    return metrics


__all__ = ["Evaluation", "MEASURES", "SKIPPED", "aggregate", "chosen", "scorer_names"]
