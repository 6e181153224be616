"""rag_bench from Python: a finished experiment, what it decides, and what to do next.

The notebook (``notebooks/design_review.ipynb``) and a team's own scripts use this module instead of
the internal ones; it reads the cell folders a sweep wrote and recomputes nothing::

    import rag_bench.api as rb

    exp = rb.load("experiments/demo")
    print(exp.verdict().text())          # the line the console, leaderboard, report and MLflow state
    exp.leaderboard()                    # a DataFrame, best first, with `not_worse`
    exp.losses()                         # where the best cell lost its questions, stage by stage
    exp.next_steps()                     # what to try next, from those losses
    exp.compare("baseline", "best")      # paired tests over the same questions
    exp.gate("conf/gate/release.yaml")   # the release gate's rules on the best cell

A cell is named as every table names it: ``"best"``, ``"baseline"``, its label (``"section bm25
rr=none k=5"``) or its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rag_bench.cells import Cell, check_folder, experiment_cells, one_dataset
from rag_bench.decision import decide
from rag_bench.decision.agreement import Agreement, of_experiments
from rag_bench.decision.verdict import Verdict, verdict
from rag_bench.failure_labels import NOT_LOST, in_attribution_order

__all__ = ["ADVICE", "Experiment", "Verdict", "load"]

# What a question lost at a stage suggests trying next (labels: rag_bench.failure_labels).
ADVICE = {
    "parsing": "the parser lost the evidence (a quote not found in the parse, or a file it could not read): try "
               "another parser (parser=pdfplumber, pymupdf4llm, ...), and check metrics.json parse and "
               "parse_failures",
    "query": "the query transform lost the evidence the question as it is (or its standalone form) finds: "
             "check the transform's output in the drill-down, try query=none or history, or a stronger model",
    "chunking": "the chunker cut the evidence apart: try chunker=section or parent_child, or larger chunks",
    "retrieval_miss": "no relevant passage was retrieved: try retriever=hybrid, another embedder, or a deeper "
                      "first stage",
    "unauthorized": "the retriever or reranker returned passages the asker may not read and the evidence fell out of "
                    "the ranking: make the stage apply the access filter it is given (a security failure first)",
    "stale_version": "an older or archived version of the evidence's document reached the context instead of the "
                     "current one: keep pipeline.include_archived false, or prefer current versions (a filter on "
                     "status, a boost on effective_at)",
    "partial_evidence": "only some of the evidence reached the top k (multi-hop questions): a larger pipeline.k, a "
                        "reranker, or a retriever that diversifies (hybrid)",
    "context": "the evidence was in the top k but cut from the context: a larger pipeline.token_budget, smaller "
               "chunks, or no parent expansion",
    "ranking": "the evidence was retrieved but ranked below k: try a reranker (reranker=dense or cross_encoder) or "
               "a larger pipeline.k",
    "false_refusal": "the generator refused answerable questions: lower its refusal setting (generator.threshold for "
                     "the extractive stand-in) or plug a model",
    "generation": "the evidence was in the context but the answer was wrong: a stronger generator or prompt",
    "citation": "right answers citing the wrong passages: a generator that cites (or check the citation format)",
    "hallucinated_answer": "unanswerable questions were answered: a stricter refusal (prompt, threshold)",
    "error": "generator calls failed: check the endpoint (rag-bench status, the cell's warnings)",
}


@dataclass(frozen=True)
class Experiment:
    """The finished cells of one experiment folder (one dataset version), named as the tables name
    them, and the measure that ranks them."""

    path: Path
    cells: tuple[Cell, ...]
    names: dict[str, str] = field(repr=False)
    primary: str

    def cell(self, ref: str) -> Cell:
        """The cell ``ref`` names: ``best``, ``baseline``, a label, a cell id or a unique prefix of
        one (:func:`rag_bench.decision.decide.pick`, the CLI's picker); ConfigError naming the
        closest labels when none matches."""
        return decide.pick(self.cells, ref, key=self.primary, names=self.names, where=str(self.path))[0]

    def verdict(self, baseline: str | None = None) -> Verdict:
        """The verdict (:mod:`rag_bench.decision.verdict`): the best cell, the cells not
        significantly worse, and the best against the baseline (``baseline``: a label or id;
        default: the config's defaults cell)."""
        chosen = None if baseline is None else self.cell(baseline).cell_id
        return verdict(self.cells, key=self.primary, baseline=chosen, names=self.names)

    def leaderboard(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The leaderboard as numbers, best first, with ``not_worse`` (in the set not significantly
        worse than the best); ``columns``: measures as ``section/name`` (default: each stage's main)."""
        from rag_bench.reporting.leaderboard import DEFAULT_COLUMNS, leaderboard_table, load_cells

        frame = load_cells(self.path, fingerprint=self.cells[0].dataset_fingerprint)
        return leaderboard_table(frame, sort_by=self.primary, columns=tuple(columns or DEFAULT_COLUMNS),
                                 verdict=self.verdict())

    def losses(self, cell: str = "best") -> pd.Series:
        """How many questions ``cell`` lost at each stage (the first failing one), in attribution
        order; outcomes that are no loss (correct, correct refusals) left out."""
        counts = self.cell(cell).metrics.get("failures") or {}
        order = [lab for lab in in_attribution_order(counts) if lab not in NOT_LOST and counts.get(lab)]
        return pd.Series({lab: int(counts[lab]) for lab in order}, name="questions", dtype="int64")

    def next_steps(self, cell: str = "best", top: int = 3) -> list[str]:
        """What to try next: the stages where ``cell`` lost most questions, largest first, each with
        what it suggests (:data:`ADVICE`)."""
        lost = self.losses(cell).sort_values(ascending=False, kind="stable")
        total = int(lost.sum())
        return [f"{label}: {n} of the {total} questions lost -- {ADVICE.get(label, 'see the drill-down')}"
                for label, n in lost.head(top).items()]

    def compare(self, a: str, b: str, metrics: Sequence[str] | None = None) -> dict[str, Any]:
        """Paired comparison of two cells over the same questions (``rag-bench compare``): means,
        differences with CIs, Holm-adjusted p-values and the questions that flipped."""
        from rag_bench.reporting.compare import compare_cells

        ca, cb = self.cell(a), self.cell(b)
        return compare_cells(ca, cb, metrics=metrics, names=(self.names[ca.cell_id], self.names[cb.cell_id]),
                             primary=self.primary)

    def agree(self, other: Experiment, *, by: str | None = None, common: bool = False) -> Agreement:
        """Whether ``other`` -- the same grid swept on another question set over the same corpus --
        ranks the cells as this one does (``rag-bench agree``, :mod:`rag_bench.decision.agreement`):
        Kendall's tau with its CI over questions, top-1, the not-significantly-worse sets, the axes."""
        return of_experiments(self.cells, other.cells, by=by, common=common, where_a=str(self.path),
                              where_b=str(other.path))

    def gate(self, policy: str | Path, cell: str = "best", baseline: str | None = None) -> list[Any]:
        """The release gate's rules (a policy file, ``conf/gate/*.yaml``) on ``cell``; each result
        has ``status`` (pass, fail or error), ``value``, ``limit``, ``ci`` and ``n``. ``baseline``: the
        cell regressions are measured against (a label or id)."""
        from rag_bench.reporting.gate import evaluate_gate, load_policy

        base = None if baseline is None else self.cell(baseline)
        return list(evaluate_gate(self.cell(cell), load_policy(policy), base))


def load(experiment_dir: str | Path, *, fingerprint: str | None = None) -> Experiment:
    """The finished cells of ``experiment_dir`` (one dataset version: ``fingerprint``, else the one
    finished last). A :class:`rag_bench.errors.RagBenchError` saying what the folder is instead (a
    cell, an output root, nothing) and what to pass when it is no experiment with finished cells."""
    path = Path(experiment_dir)
    check_folder(path, "experiment", "rag_bench.api.load")  # a cell, an output root, nothing: said with the fix
    cells, _ = one_dataset(experiment_cells(path, records=False), fingerprint)
    return Experiment(path, tuple(cells), decide.names_of(cells), decide.primary_measure(cells))
