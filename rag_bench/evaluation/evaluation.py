"""The evaluation of a cell: built once from the eval settings, it scores any system's run.

It runs the ranking scorers of ``eval.unit`` (:mod:`.scorers.chunk_ranking`,
:mod:`.scorers.document_ranking`), the answer scoring when the run answered, the judge when
one is given, then every scorer :func:`.scorers.discovered` finds; aggregates every measure the
same way (value, n, 95% bootstrap CI: :func:`rag_bench.evaluation.summary.aggregate`) and hands the
cell's files (records.parquet, metrics.json, the TREC files) over as one
:class:`~rag_bench.cells.CellResult`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from rag_bench import memo
from rag_bench.cells import CellResult
from rag_bench.evaluation import summary
from rag_bench.evaluation.results import Chunked, Generated, Judged
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorers import Scorer, discovered, failure_labels
from rag_bench.evaluation.scorers.answer import score_answers
from rag_bench.evaluation.scorers.chunk_ranking import CHUNK
from rag_bench.evaluation.scorers.document_ranking import DOCUMENT
from rag_bench.evaluation.scoring import RankingUnit, score
from rag_bench.memo import SharedWork
from rag_bench.records import Dataset

# eval.unit -> the ranking units reported (runner.config validates the names; a test keeps them equal).
RANKING_UNITS: dict[str, tuple[RankingUnit, ...]] = {"chunk": (CHUNK,), "document": (DOCUMENT,),
                                                     "both": (CHUNK, DOCUMENT)}


@dataclass(frozen=True)
class Evaluation:
    """The eval settings of a cell and the scorers they activate."""

    ks: tuple[int, ...]
    k: int
    min_coverage: float
    relevance: str
    gain: str
    relevance_level: int
    units: tuple[RankingUnit, ...]  # reported (eval.unit)
    answer_match: str
    f1_threshold: float
    n_resamples: int
    seed: int
    judge_name: str
    scorers: tuple[Scorer, ...] = ()

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Evaluation:
        """The evaluation a cell's config asks for (``eval.*``, ``pipeline.k``, ``judge.name``)."""
        return cls(ks=tuple(sorted(set(int(x) for x in cfg.eval.ks))), k=int(cfg.pipeline.k),
                   min_coverage=float(cfg.eval.min_coverage), relevance=str(cfg.eval.relevance),
                   gain=str(cfg.eval.gain), relevance_level=int(cfg.eval.relevance_level),
                   units=RANKING_UNITS[str(cfg.eval.unit)],
                   answer_match=str(cfg.eval.answer_match), f1_threshold=float(cfg.eval.f1_threshold),
                   n_resamples=int(cfg.eval.bootstrap_resamples), seed=int(cfg.eval.seed),
                   judge_name=str(cfg.judge.name), scorers=discovered())

    @property
    def scored_units(self) -> tuple[RankingUnit, ...]:
        """The units whose measure columns records.parquet holds: the chunk ranking's always
        (the failure labels and the console read it), then the reported ones."""
        return tuple(dict.fromkeys((CHUNK, *self.units)))

    def evaluate(self, run: SystemRun, dataset: Dataset, cell_id: str, *,
                 judge: Callable[[Generated], Judged | None] | None = None, work: SharedWork | None = None) -> CellResult:
        """The cell of ``run`` on ``dataset``: its records, metrics and TREC files. ``judge``
        judges the scored answers (the runner hands it over: the judge is a component it builds)."""
        questions = list(dataset.questions)
        ks, k = list(self.ks), self.k
        t0 = time.perf_counter()
        scored = score(questions=questions, dataset=run.corpus, indexed=run.indexed, retrieved=run.retrieved,
                              reranked=run.reranked, ks=ks, k=k, min_coverage=self.min_coverage,
                              relevance=self.relevance, gain=self.gain, relevance_level=self.relevance_level,
                              units=self.units, scored_units=self.scored_units,
                              attribute_chunking=run.attribute_chunking, min_relevant=run.min_relevant, work=work)
        score_s = time.perf_counter() - t0
        generated = judged = None
        if run.answered is not None:
            generated = score_answers(answered=run.answered, questions=questions,
                                             retrieval_labels=list(scored.frame[failure_labels.COLUMN]),
                                             min_coverage=self.min_coverage, answer_match=self.answer_match,
                                             f1_threshold=self.f1_threshold)
            if judge is not None:
                judged = judge(generated)
        frame = summary.records(scored=scored, retrieved=run.retrieved, reranked=run.reranked, generated=generated,
                                judged=judged)
        extra = {}
        for scorer in self.scorers:
            extra.update(scorer.columns(frame, ks=ks, k=k))
        if extra:
            frame = frame.assign(**extra)
        metrics = summary.summarize(
            frame=frame, dataset=dataset, chunked=Chunked(run.chunks, 0.0), indexed=run.indexed,
            retrieved=run.retrieved, reranked=run.reranked, scored=scored, generated=generated, judged=judged,
            ann=run.ann, embedding=run.usage(), timings=_with_score(run.timings, score_s), ks=ks, k=k,
            index_name=run.index_name, judge_name=self.judge_name, n_resamples=self.n_resamples, seed=self.seed)
        self._scorer_sections(frame, metrics)
        metrics["counts"].update(run.counts)
        _latency(metrics, run.latency)
        files = {name: text for unit in scored.units
                 for name, text in unit.trec_files(frame, questions, scored.qrels, cell_id).items()}
        lines = work.get_or("run_lines", memo.key(run.reranked.key), lambda: summary.run_lines(frame)) \
            if work is not None and run.reranked.key is not None else None
        return CellResult(frame, metrics, summary.run_trec(frame, cell_id, lines),
                          summary.qrels_trec(questions, run.indexed.searchable, scored.qrels), files)

    def _scorer_sections(self, frame: Any, metrics: dict[str, Any]) -> None:
        """The discovered scorers' measures, aggregated as every other measure (value, n, CI)."""
        sections: dict[str, list[Any]] = {}
        for scorer in self.scorers:
            for m in scorer.measures(ks=self.ks, k=self.k):
                if m.column in frame:
                    sections.setdefault(m.section, []).append(m)
        if not sections:
            return
        got = summary.aggregate(frame, sections, n_resamples=self.n_resamples, seed=self.seed)
        for section in sections:
            metrics.setdefault(section, {}).update(got[section])
        metrics["n"].update(got["n"])
        metrics["ci"].update(got["ci"])


def _with_score(timings: dict[str, float], score_s: float) -> dict[str, float]:
    """The run's stage timings with the scoring time after retrieval's (none when the run gave none)."""
    if not timings:
        return {}
    out: dict[str, float] = {}
    for name, v in timings.items():
        out[name] = v
        if name == "retrieve_s":
            out["score_s"] = score_s
    out.setdefault("score_s", score_s)
    return out


def _latency(metrics: dict[str, Any], latency: str) -> None:
    """Whose latencies the cell reports: the pipeline's retrieval, the external system's, or none."""
    if latency == "system":
        lat = metrics["latency"]
        lat["system_p50_ms"] = lat.pop("retrieve_p50_ms")
        lat["system_p95_ms"] = lat.pop("retrieve_p95_ms")
    elif latency == "none":
        metrics["latency"] = {}


__all__ = ["RANKING_UNITS", "Evaluation"]
