"""Per question tag (metrics.json ``by_tag``): the means of key ranking and answer measures over
each tag's questions -- *where* a configuration wins: paraphrases, exact identifiers, multi-hop
questions, and whether off-topic questions are refused. ``n`` counts the tag's questions with any of
them defined, so an unanswerable tag counts its questions by their refusal measures."""

from __future__ import annotations

from typing import Any

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Context, Measure, Part, Settings
from rag_bench.evaluation.scorers.abstention import CORRECT_REFUSAL, FALSE_REFUSAL
from rag_bench.evaluation.scorers.chunk_ranking import HIT, MRR, NDCG, RECALL
from rag_bench.evaluation.scorers.generation import CORRECT

TAG = (HIT.at(1), HIT.at(5), MRR.at(10), NDCG.at(10), RECALL.at(10))
# Answer measures beside them: the tags of unanswerable questions (off_topic, near_miss,
# internal_only) have no ranking measure, and their refusal rates are what a tag table is for.
TAG_ANSWER = (CORRECT, CORRECT_REFUSAL, FALSE_REFUSAL)


class ByTag:
    """The per-tag table (no measure of its own: it breaks down others')."""

    name = "by_tag"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """None: the table repeats other scorers' measures per tag."""
        return []

    def score(self, context: Context) -> list[Part]:
        """``{tag: {column: mean, "n": count}}`` over the measures' columns the cell has."""
        cols = [m.column for m in (*TAG, *TAG_ANSWER) if m.column in context.columns]
        values = (np.column_stack([np.asarray(context.columns[c], dtype=np.float64) for c in cols]) if cols
                  else np.empty((len(context.run.questions), 0)))
        any_defined = ~np.isnan(values).all(axis=1) if cols else np.zeros(len(context.run.questions), bool)
        tag_lists = [q.question.tags for q in context.run.questions]
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
        return [Part("by_tag", sections={"by_tag": out})]


SCORER = ByTag()
