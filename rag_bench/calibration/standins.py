"""Which automatic measure stands in for which human judgment, and how it is read as a verdict.

Each :class:`StandIn` names a records.parquet column, the human measure of labels.jsonl it claims
to predict (``correct`` or ``faithfulness``), the rows it is defined on and the threshold that
turns its value into a yes/no (``value >= threshold``) for kappa. The PPI estimate uses the
column's own value (so its raw mean is the cell's mean in metrics.json).

- ``correct`` under each ``eval.answer_match`` (answerable questions): ``correct`` as the cell was
  configured, ``answer_recall`` (contains), ``facts_present`` (facts), ``exact_match`` (em, lenient),
  ``squad_exact`` (SQuAD-exact EM), ``token_f1 >= 0.5`` (f1).
- ``correct_refusal`` (unanswerable questions): the refusal measure, against the people's
  ``correct`` (a refusal of an unanswerable question is correct).
- the lexical ``faithfulness`` proxy and ``citation_precision`` (citation support), against the
  people's ``faithfulness``; both count only when every sentence/citation is supported (``>= 1``).
  Both are undefined for refusals, which are then left out (counted as undefined).
- the offline claim judge (issue 42, :mod:`rag_bench.evaluation.scorers.claims`): ``answer_supported``
  (every claim supported by the passages it cites, the verdict ``benchmarks/support_kappa.py``
  measures) and ``citation_precision_claims`` (every (claim, citation) pair supported: ``>= 1``),
  against the people's ``faithfulness``; undefined for refusals and answers with no claim to judge.
- every judged column (``judge_*``): against ``faithfulness`` when its name says faithful, else
  ``correct`` when it says correct; ``>= 0.5``.

A column whose meaning depends on the cell's settings (``correct`` on ``eval.answer_match``,
citation support on ``eval.min_coverage``) is compared per group of cells that agree on them
(:func:`parameters`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rag_bench.calibration.labels import CORRECT, FAITHFULNESS
from rag_bench.evaluation import measures
from rag_bench.evaluation.measures import JUDGE_PREFIX
from rag_bench.judging.samples import CONSISTENCY_SUFFIX, SAMPLES_SUFFIX, SPREAD_SUFFIX


@dataclass(frozen=True)
class StandIn:
    """An automatic per-question column read as a prediction of a human measure."""

    name: str
    human: str
    column: str
    threshold: float
    answerable: bool | None  # True: answerable questions only; False: unanswerable only; None: all
    config_keys: tuple[str, ...] = ()  # the cell's settings that decide what the column means


# A setting that decides the column only under another one's value: eval.f1_threshold is read by
# correct only when eval.answer_match is f1.
_ONLY_WHEN = {"eval.f1_threshold": ("eval.answer_match", "f1")}


def _setting(config: dict[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def parameters(s: StandIn, config: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The cell's values of the settings ``s``'s column depends on (``correct``: eval.answer_match,
    and eval.f1_threshold under f1; citation support: eval.min_coverage). Cells that differ in them
    give the column different meanings, so their answers are not pooled into one kappa."""
    out = []
    for key in s.config_keys:
        cond = _ONLY_WHEN.get(key)
        if cond is None or str(_setting(config, cond[0])) == cond[1]:
            out.append((key, str(_setting(config, key))))
    return tuple(out)


STAND_INS = (
    StandIn(measures.CORRECT.name, CORRECT, measures.CORRECT.column, 0.5, True,
            ("eval.answer_match", "eval.f1_threshold")),
    StandIn(f"{CORRECT}[contains]", CORRECT, measures.ANSWER_RECALL.column, 0.5, True),
    StandIn(f"{CORRECT}[facts]", CORRECT, measures.FACTS_PRESENT.column, 0.5, True),
    StandIn(f"{CORRECT}[em]", CORRECT, measures.EXACT_MATCH.column, 0.5, True),
    StandIn(f"{CORRECT}[squad_exact]", CORRECT, measures.SQUAD_EXACT.column, 0.5, True),
    StandIn(f"{CORRECT}[f1>=0.5]", CORRECT, measures.TOKEN_F1.column, 0.5, True),
    StandIn(measures.CORRECT_REFUSAL_RATE.display, CORRECT, measures.CORRECT_REFUSAL_RATE.column, 0.5, False),
    StandIn(f"{FAITHFULNESS} (lexical proxy)", FAITHFULNESS, measures.FAITHFULNESS.column, 1.0, None),
    StandIn("citation support", FAITHFULNESS, measures.CITATION_PRECISION.column, 1.0, None, ("eval.min_coverage",)),
    StandIn(f"{FAITHFULNESS} (offline claim judge)", FAITHFULNESS, measures.ANSWER_SUPPORTED.column, 1.0, None),
    StandIn("citation support per claim", FAITHFULNESS, measures.CITATION_PRECISION_CLAIMS.column, 1.0, None),
)


def stand_ins(columns: Iterable[str]) -> list[StandIn]:
    """The stand-ins whose column a cell has, judged columns included (in column order)."""
    cols = list(columns)
    out = [s for s in STAND_INS if s.column in cols]
    for c in cols:
        # judge_<m>_samples (lists) and judge_<m>_sd (the spread of the samples) describe a judged
        # measure; only judge_<m> itself stands in for a judgment.
        if not c.startswith(JUDGE_PREFIX) or c.endswith((SAMPLES_SUFFIX, SPREAD_SUFFIX, CONSISTENCY_SUFFIX)):
            continue
        low = c.lower()
        human = FAITHFULNESS if "faithful" in low else CORRECT if CORRECT in low else None
        if human is not None:
            out.append(StandIn(f"{c} (judge)", human, c, 0.5, None))
    return out
