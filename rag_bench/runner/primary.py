"""Whether a sweep's cells can report the measure that will rank them (``experiment.primary``),
known from their configs before the first cell runs; what the cells report is checked again where
they are read (:func:`rag_bench.decision.decide.choose_primary`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures

AUTO = measures.AUTO_PRIMARY
CORRECT = measures.CORRECT_KEY
check_primary = measures.check_primary


def configured_primary(configs: Sequence[Mapping[str, Any]]) -> str:
    """``experiment.primary`` of the cells (the value most cells hold), ``auto`` when unset."""
    values = Counter(str(((c.get("experiment") or {}) if isinstance(c, Mapping) else {}).get("primary") or AUTO)
                     for c in configs)
    return values.most_common(1)[0][0] if values else AUTO


# What ``experiment.primary=auto`` ranks by: the first of these that a cell has -- unless the
# generator is a stand-in for a model (rag_bench.generation.base.Traits): then STAND_IN, which its
# answers do not decide. generation/correct is no fallback for old cells: it is what a cell of today
# whose eval.scorers leave the answer scorer out (eval.scorers=retrieval,generation) is ranked by.
# A format-0 cell written before answer/correct_all is ranked by it too, as it always was: the
# format upgrade does not compute a measure a cell lacks (filling answer/correct_all in from its
# records would rank old cells by another measure than they were).
AUTO_ORDER = (measures.CORRECT_ALL.key, CORRECT, measures.PRIMARY.key, measures.DOC_NDCG.at(10).key)
STAND_IN = measures.CONTEXT_ALL.key
# The answer measures auto passes over for a stand-in's cells.
ANSWER_KEYS = (measures.CORRECT_ALL.key, CORRECT)
def _option(config: Mapping[str, Any], group: str, key: str) -> Any:
    node = config.get(group) if isinstance(config, Mapping) else None
    return node.get(key) if isinstance(node, Mapping) else None


# The config options under which a cell reports no answers, no judge scores, no ANN figures.
NO_GENERATOR = "rag_bench.generation.none.NoGenerator"
NO_JUDGE = "rag_bench.judging.none.NoJudge"
NO_INDEX = "rag_bench.retrieval.bm25.Bm25Retriever"


def check_primary_reachable(configs: Sequence[Mapping[str, Any]]) -> None:
    """ConfigError when no cell of ``configs`` -- a sweep's grid, or configs covering every value
    of each of its axes (a grid is their product) -- can report its ``experiment.primary``, as far
    as the configs tell: an answer measure with ``generator=none`` everywhere, a judge measure
    with ``judge=none``, a ``document`` measure with ``eval.unit=chunk`` (a ``retrieval`` one with
    ``eval.unit=document``), a cutoff outside ``eval.ks`` (evidence: or ``pipeline.k``), an ``ann``
    measure with no index (``retriever=bm25``). What the configs cannot tell is checked where
    the cells are read (:func:`choose_primary`)."""
    key = check_primary(configured_primary(configs))
    m = measures.measure(key)
    if key == AUTO or m is None:
        return

    def every(group: str, field: str, value: str) -> bool:
        return all(str(_option(c, group, field)) == value for c in configs)

    units = {str(_option(c, "eval", "unit")) for c in configs}
    ks = {int(k) for c in configs for k in (_option(c, "eval", "ks") or [])}
    answers = m.section in ("generation", "citation", measures.JUDGE_SECTION) or m in measures.ABSTENTION
    reason = fix = ""
    if answers and every("generator", "_target_", NO_GENERATOR):
        reason, fix = "generator=none in every cell: no answers", "sweep a generator (generator=extractive, ...)"
    elif m.section == measures.JUDGE_SECTION and every("judge", "_target_", NO_JUDGE):
        reason, fix = "judge=none in every cell: no judge scores", "judge=ragas"
    elif m.section == "document" and not units & {"document", "both"}:
        reason, fix = "eval.unit=chunk in every cell: no document ranking", "eval.unit=both"
    elif m.section == "retrieval" and not units & {"chunk", "both"}:
        reason, fix = "eval.unit=document in every cell: no chunk ranking", "eval.unit=both"
    elif m.section in ("retrieval", "document") and m.cutoff is not None and m.cutoff not in ks:
        reason = f"no cell has the cutoff {m.cutoff} in eval.ks"
        fix = f"eval.ks=[{','.join(map(str, sorted(ks | {m.cutoff})))}]"
    elif m.section == "evidence" and m.cutoff is not None and m.cutoff not in ks | {
            int(_option(c, "pipeline", "k")) for c in configs}:
        reason, fix = f"no cell has the cutoff {m.cutoff} in eval.ks or pipeline.k", f"pipeline.k={m.cutoff}"
    elif m.section == "ann" and every("retriever", "_target_", NO_INDEX):
        reason, fix = "retriever=bm25 in every cell: no ANN index", "retriever=dense (index=hnsw, ivf, ...)"
    if reason:
        raise ConfigError(f"experiment.primary={key}: no cell can report it ({reason}) -- fix: {fix}, or rank by a "
                          f"measure the cells report: experiment.primary=auto ({measures.AUTO_HELP})")


