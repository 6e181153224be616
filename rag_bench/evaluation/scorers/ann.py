"""ANN vs exact (metrics.json ``ann``): the figures of the run's approximate index, measured where
the index is (:mod:`rag_bench.indexing.ann_report`) and reported here under their measures' names.

``ann_recall@k`` = mean over questions of |ANN top-k ∩ exact top-k| / k (the index as configured);
latencies of both searches, build times, sizes; ``underfill_fallbacks`` the questions the index
left short. With ``index.target_recall`` the tuning's figures follow: the target, the knob value
chosen (the smallest reaching it on the tuning half of the questions), its recall on that half and
on the held-out half (``held_out_recall``, the one recall of the choice not measured on the
questions it was chosen on), and the curve. A target the knob could not reach is a warning.
"""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.indexing.ann_report import AnnReport
from rag_bench.indexing.tuning import TuneResult


def _value(family: str, description: str, up: bool | None = False, cut: str = "none") -> Measure:
    return Measure(family, "ann",
            description=description, higher_is_better=up, aggregate="value", cut=cut)  # type: ignore[arg-type]


ANN = (
    _value("ann_recall", "|ANN top-k ∩ exact top-k| / k", up=True, cut="required"),
    _value("ann_p50_ms", "median ANN query latency"),
    _value("ann_p95_ms", "95th percentile ANN query latency"),
    _value("exact_p50_ms", "median exact query latency"),
    _value("exact_p95_ms", "95th percentile exact query latency"),
    _value("build_s", "ANN index build time"),
    _value("exact_build_s", "exact index build time"),
    _value("index_bytes", "ANN index size"),
    _value("exact_index_bytes", "exact index size"),
    _value("underfill_fallbacks", "questions whose top k the index as configured left short (missing hits are "
           "misses in ann_recall; retrieval fills them by a wider or exact search)"),
)
(ANN_RECALL, ANN_P50, ANN_P95, EXACT_P50, EXACT_P95, BUILD_S, EXACT_BUILD_S, INDEX_BYTES, EXACT_INDEX_BYTES,
 UNDERFILL) = ANN
TUNING = (
    _value("target_recall", "index.target_recall the search knob was tuned to", up=None),
    _value("tuned_value", "the knob value chosen (ef_search or nprobe: tuned_knob): the smallest reaching the target",
           up=None),
    _value("tune_recall", "ann_recall@k at the chosen value on the tuning half of the questions (chosen on them)",
           up=True, cut="required"),
    _value("held_out_recall", "ann_recall@k at the chosen value on the held-out half (not used to choose it)",
           up=True, cut="required"),
    _value("tuned_p50_ms", "median ANN query latency at the chosen value on the tuning half"),
    _value("tune_s", "seconds spent tuning the knob"),
    _value("tune_questions", "questions the knob was tuned on", up=None),
    _value("held_out_questions", "questions held out to check the choice", up=None),
)
TARGET, TUNED_VALUE, TUNE_RECALL, HELD_OUT_RECALL, TUNED_P50, TUNE_S, TUNE_N, HELD_OUT_N = TUNING
TUNED_ON = ("the tuning half of the cell's questions (ordered by a hash of the question id); held_out_recall "
            "is on the other half, ann_recall on all of them")


class Ann:
    """The scorer of :data:`ANN` and :data:`TUNING` (runs whose retriever searched an index it can
    lay open)."""

    name = "ann"
    requires: tuple[str, ...] = ("ann",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The index's figures, at the cutoffs it was measured at; the tuning's when it was tuned."""
        assert run.ann is not None  # requires
        out = [ANN_RECALL.at(k) for k in run.ann.recall] + list(ANN[1:])
        tuning = run.ann.tuning
        if tuning is not None:
            out += [TARGET, TUNED_VALUE, TUNE_RECALL.at(tuning.k), HELD_OUT_RECALL.at(tuning.k), *TUNING[4:]]
        return out

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The figures, the index's name and the tuning's curve; a warning when the target was not reached."""
        run = scoring.run
        report = run.ann
        assert report is not None  # requires
        values, fields = _report(report, run.index_name)
        warnings = (unreached(report.tuning, run.index_name),) \
            if report.tuning is not None and not report.tuning.reached else ()
        return [Part("ann", values=values, sections={"ann": fields}, warnings=warnings)]


def _report(report: AnnReport, index: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report's numbers by their measures' keys, and the section's other fields."""
    values: dict[str, Any] = {ANN_RECALL.at(k).key: v for k, v in report.recall.items()}
    values.update({ANN_P50.key: report.ann_p50_ms, ANN_P95.key: report.ann_p95_ms,
                   EXACT_P50.key: report.exact_p50_ms, EXACT_P95.key: report.exact_p95_ms,
                   BUILD_S.key: report.build_s, EXACT_BUILD_S.key: report.exact_build_s,
                   INDEX_BYTES.key: report.index_bytes, EXACT_INDEX_BYTES.key: report.exact_index_bytes,
                   UNDERFILL.key: report.underfill})
    fields: dict[str, Any] = {"index": index}
    if report.tuning is not None:
        values.update(tuning_values(report.tuning))
        fields.update(tuning_fields(report.tuning))
    return values, fields


def section(report: AnnReport, index: str) -> dict[str, Any]:
    """The report as metrics.json's ``ann`` section (what a cell of this index holds)."""
    values, fields = _report(report, index)
    return {**{key.partition("/")[2]: v for key, v in values.items()}, **fields}


def tuning_values(result: TuneResult) -> dict[str, Any]:
    """The tuning's numbers under their measures' keys."""
    point = result.point()
    return {TARGET.key: result.target, TUNED_VALUE.key: result.chosen, TUNE_RECALL.at(result.k).key: point.recall,
            HELD_OUT_RECALL.at(result.k).key: result.held_out_recall, TUNED_P50.key: point.p50_ms,
            TUNE_S.key: round(result.seconds, 6), TUNE_N.key: result.n, HELD_OUT_N.key: result.held_out_n}


def tuning_fields(result: TuneResult) -> dict[str, Any]:
    """What the ``ann`` section says of the tuning beside its numbers: the knob, whether the target
    was reached, which questions it was tuned on, and the curve (value, recall, p50_ms per value tried)."""
    return {"tuned_knob": result.knob, "tuned_reached": result.reached,
            "tuned_on": TUNED_ON if result.held_out_n else "all the cell's questions (too few to hold any out)",
            "tune_curve": [{"value": p.value, "recall": p.recall, "p50_ms": p.p50_ms} for p in result.curve]}


def unreached(result: TuneResult, index: str) -> str:
    """The warning for a recall target the knob could not reach (issue 40: it was silent)."""
    point = result.point()
    return (f"index.target_recall={result.target:g} was not reached on index {index}: tuning stopped at "
            f"{result.knob}={result.chosen} with ann_recall@{result.k} {point.recall:.3f} on the tuning half "
            f"(held out: {'n/a' if result.held_out_recall is None else format(result.held_out_recall, '.3f')}) -- "
            f"fix: lower index.target_recall, build a denser index (e.g. a larger M for HNSW, more lists probed "
            "for IVF), or use index=flat for exact search")


SCORER = Ann()
