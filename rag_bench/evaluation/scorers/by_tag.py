"""Per question tag (metrics.json ``by_tag``): the means of key ranking and answer measures over
each tag's questions -- *where* a configuration wins: paraphrases, exact identifiers, multi-hop
questions, follow-up turns of a conversation against first turns, and whether off-topic questions
are refused. ``n`` counts the tag's questions with any of them defined, so an unanswerable tag
counts its questions by their refusal measures.

Beside the means, each tag has ``ci`` (``{measure: [lo, hi]}``: the 95 % interval of each mean over
the tag's questions, as metrics.json's own ``ci``: Wilson for 0/1 measures, else the bootstrap of
``eval.bootstrap_resamples``), ``n_by`` (``{measure: questions it is defined on}``: hit@5 counts
the tag's answerable questions only), ``outcomes`` (how many of its questions expect ``answer``,
``refuse`` and ``clarify``) and ``failures`` (``{label: count}``: the failure table of the tag's
questions, labels in attribution order, when the cell labels them)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.abstention import CORRECT_REFUSAL, FALSE_REFUSAL
from rag_bench.evaluation.scorers.answer import CORRECT_ALL
from rag_bench.evaluation.scorers.attribution import COLUMN as FAILURE
from rag_bench.evaluation.scorers.chunk_ranking import HIT, MRR, NDCG, RECALL
from rag_bench.evaluation.scorers.clarify import CORRECT_CLARIFICATION, PREMATURE_ANSWER
from rag_bench.evaluation.scorers.generation import CORRECT
from rag_bench.failure_labels import in_attribution_order
from rag_bench.metrics.intervals import mean_cis

TAG = (HIT.at(1), HIT.at(5), MRR.at(10), NDCG.at(10), RECALL.at(10))
# Answer measures beside them: the tags of unanswerable questions (off_topic, near_miss,
# internal_only) have no ranking measure, and their refusal rates are what a tag table is for.
TAG_ANSWER = (CORRECT, CORRECT_REFUSAL, FALSE_REFUSAL)
# The three outcomes of a conversation turn (answer, refuse, clarify) per tag: the right outcome
# over all its questions, and the clarify measures (present when the cell has them).
OUTCOMES = ("answer", "refuse", "clarify")  # Question.outcome
TAG_OUTCOME = (CORRECT_ALL, CORRECT_CLARIFICATION, PREMATURE_ANSWER)


class ByTag:
    """The per-tag table (no measure of its own: it breaks down others')."""

    name = "by_tag"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """None: the table repeats other scorers' measures per tag."""
        return []

    def score(self, scoring: ScoringInput) -> list[Part]:
        """``{tag: {column: mean, "n": count, "ci": {column: [lo, hi]}, "outcomes": {...},
        "failures": {...}}}`` over the measures' columns the cell has."""
        cols = [m.column for m in (*TAG, *TAG_ANSWER, *TAG_OUTCOME) if m.column in scoring.columns]
        values = (np.column_stack([np.asarray(scoring.columns[c], dtype=np.float64) for c in cols]) if cols
                  else np.empty((len(scoring.run.questions), 0)))
        any_defined = ~np.isnan(values).all(axis=1) if cols else np.zeros(len(scoring.run.questions), bool)
        tag_lists = [q.question.tags for q in scoring.run.questions]
        questions = [q.question for q in scoring.run.questions]
        labels = scoring.columns.get(FAILURE)
        out: dict[str, dict[str, Any]] = {}
        for tag in sorted({t for ts in tag_lists for t in ts}):
            rows = np.fromiter((tag in ts for ts in tag_lists), bool, len(tag_lists)) & any_defined
            if not rows.any():
                continue
            v = values[rows]
            # The mean of the defined values (as every measure); a measure no question of the tag
            # defines is left out (an unanswerable tag has no ranking measure), never a NaN.
            out[tag] = {m: float(x[~np.isnan(x)].mean()) for m, x in zip(cols, v.T) if (~np.isnan(x)).any()}
            out[tag]["n"] = int(rows.sum())
            cis = mean_cis(v, n_resamples=scoring.settings.n_resamples, seed=scoring.settings.seed)
            out[tag]["ci"] = {m: [float(lo), float(hi)] for m, (lo, hi) in zip(cols, cis) if m in out[tag]}
            out[tag]["n_by"] = {m: int((~np.isnan(x)).sum()) for m, x in zip(cols, v.T) if m in out[tag]}
            out[tag]["outcomes"] = {o: sum(q.outcome == o for q, r in zip(questions, rows) if r) for o in OUTCOMES}
            if labels is not None:
                counted = collections.Counter(lab for lab, r in zip(labels, rows) if r)
                out[tag]["failures"] = {lab: counted[lab] for lab in in_attribution_order(list(counted))}
        return [Part("by_tag", sections={"by_tag": out})]


SCORER = ByTag()
