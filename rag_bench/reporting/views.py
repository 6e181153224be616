"""The measures the report's views can be drawn on: the primary measure, end-to-end correctness,
nDCG@10, query latency (retrieval + rerank; end to end where a generator answered) and generator
tokens.

Each :class:`View` says which stage its number comes from (``acts_on``, a ``section/name`` that
:func:`rag_bench.decision.effects.can_move` reads), so an axis is only shown against the
measures it can change: ``pipeline.k`` picks the passages handed to the generator after the
ranking, so it has a main effect on ``correct`` and on tokens, none on nDCG@10 or on the
retrieval latency.

Each view also recomputes a cell's number on bootstrap draws of the questions
(:meth:`View.resampled`, :func:`rag_bench.decision.effects.draws`), from the cell's
records.parquet: the intervals of the views that compare cells are over questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_bench.cells import Cell
from rag_bench.decision import decide
from rag_bench.decision.effects import Draws, resampled_means, resampled_percentiles
from rag_bench.evaluation import measures
from rag_bench.evaluation.scorers import latency as latency_scorer


@dataclass(frozen=True)
class View:
    """A number per cell a view can show: its key (in the page's URL), its title, the stage it
    measures (``acts_on``), its direction, how to read it from a cell, and how to recompute it
    on draws of the questions (``resample``: cells, question ids, draws -> cells x draws, a row of
    NaN where a cell's records cannot give it; None: the view cannot be resampled)."""

    key: str
    title: str
    acts_on: str
    higher_is_better: bool
    of: Callable[[Cell], float | None]
    resample: Callable[[Sequence[Cell], Sequence[str], Draws], np.ndarray] | None = None

    def resampled(self, cells: Sequence[Cell], qids: Sequence[str], d: Draws) -> np.ndarray:
        """cells x draws: each cell's number in each draw of ``qids`` (NaN rows for the cells
        without a number, or whose records cannot give it)."""
        out = np.full((len(cells), len(d.idx)), np.nan)
        if self.resample is not None:
            have = [i for i, c in enumerate(cells) if self.of(c) is not None]
            if have:
                out[have] = self.resample([cells[i] for i in have], qids, d)
        return out


def question_ids(cells: Sequence[Cell]) -> list[str]:
    """The question ids of ``cells`` (one dataset: the first cell's records, in their order)."""
    for c in cells:
        r = c.records
        if "qid" in r:
            return [str(q) for q in r["qid"]]
    return []


def question_column(cell: Cell, column: str, qids: Sequence[str]) -> np.ndarray | None:
    """The records.parquet ``column`` of ``cell`` as floats in the order of ``qids`` (NaN where
    undefined or the cell has no such question); None when the records have no such column."""
    r = cell.records
    if column not in r or "qid" not in r:
        return None
    values = pd.to_numeric(r[column], errors="coerce").to_numpy(dtype=np.float64)
    return pd.Series(values, index=r["qid"].astype(str).to_numpy()).reindex(list(qids)).to_numpy(dtype=np.float64)


PerQuestion = Callable[[Cell, Sequence[str]], "np.ndarray | None"]


def _means(values: PerQuestion) -> Callable[[Sequence[Cell], Sequence[str], Draws], np.ndarray]:
    """Resample the mean of a per-question value: one matrix product for all cells."""
    def resample(cells: Sequence[Cell], qids: Sequence[str], d: Draws) -> np.ndarray:
        matrix = np.full((len(qids), len(cells)), np.nan)
        missing = []
        for i, c in enumerate(cells):
            v = values(c, qids)
            if v is None:
                missing.append(i)
            else:
                matrix[:, i] = v
        out = resampled_means(matrix, d).T
        out[missing] = np.nan
        return out

    return resample


def _p50s(*parts: tuple[PerQuestion, Callable[[Cell], bool]]) -> Callable[[Sequence[Cell], Sequence[str], Draws],
                                                                          np.ndarray]:
    """Resample the sum of the p50s of per-question values (each part counted where its
    predicate says the cell has it), cell by cell."""
    def resample(cells: Sequence[Cell], qids: Sequence[str], d: Draws) -> np.ndarray:
        out = np.full((len(cells), len(d.idx)), np.nan)
        for i, c in enumerate(cells):
            total = np.zeros(len(d.idx))
            for values, has in parts:
                if not has(c):
                    continue
                v = values(c, qids)
                if v is None:
                    total = np.full(len(d.idx), np.nan)
                    break
                total += resampled_percentiles(v, d, 50)
            out[i] = total
        return out

    return resample


def _column(name: str) -> PerQuestion:
    return lambda cell, qids: question_column(cell, name, qids)


def measure_view(key: str) -> View:
    """The view of a registered measure (``retrieval/ndcg@10``); a mean over questions is
    recomputed on each draw from its per-question column."""
    m = measures.measure(key)
    resample = _means(_column(m.column)) if m is not None and m.aggregate == "mean" else None
    return View(key, key, key, measures.higher_is_better(key), lambda c: c.metric(key), resample)


def end_to_end_ms(cell: Cell, qids: Sequence[str]) -> np.ndarray | None:
    """Each question's retrieval + rerank + generation time (ms), NaN where the answer came
    from the generation cache (as :func:`rag_bench.evaluation.scorers.latency.end_to_end_ms`
    computes it from the run, here from the records)."""
    retrieve, seconds, cached = (question_column(cell, c, qids) for c in ("retrieve_ms", "generate_s",
                                                                            "generation_cached"))
    if retrieve is None or seconds is None or cached is None:
        return None
    rerank = question_column(cell, "rerank_ms", qids)
    total = retrieve + (0.0 if rerank is None else np.nan_to_num(rerank)) + 1000.0 * seconds
    return np.where(cached == 0, total, np.nan)


def _tokens(cell: Cell, qids: Sequence[str]) -> np.ndarray | None:
    tin, tout = (question_column(cell, c, qids) for c in ("tokens_in", "tokens_out"))
    return None if tin is None or tout is None else tin + tout


def _e2e(cell: Cell) -> float | None:
    v = (cell.metrics.get("latency") or {}).get(latency_scorer.E2E_P50.name)
    return float(v) if isinstance(v, (int, float)) else None


def _has(*names: str) -> Callable[[Cell], bool]:
    return lambda c: any(isinstance((c.metrics.get("latency") or {}).get(n), (int, float)) for n in names)


# As decide.latency_ms: the retrieval p50 plus the rerank p50 when the cell reranked.
LATENCY = View("latency", "retrieval + rerank p50 (ms per question)", "retrieval/latency", False,
               lambda c: decide.latency_ms(c.metrics),
               _p50s((_column("retrieve_ms"), _has("retrieve_p50_ms", "system_p50_ms")),
                     (_column("rerank_ms"), _has("rerank_p50_ms"))))
END_TO_END = View("e2e", "end-to-end p50: retrieval + rerank + generation (ms per question)", "generation/latency",
                  False, _e2e, _p50s((end_to_end_ms, lambda c: True)))
TOKENS = View("tokens", "generator tokens per question", "generation/tokens", False, decide.tokens, _means(_tokens))


def _usd(cell: Cell) -> float | None:
    v = (cell.metrics.get("cost") or {}).get("usd_per_question")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# With a price table (prices.*): the run's dollars per question, every priced share (the report's
# Pareto charts draw it when a cell has it; an unpriced cell has none: rag_bench.evaluation.prices).
MONEY = View("usd", "US dollars per question", "cost/usd_per_question", False, _usd, _means(_column("usd")))


# The parse time of the dataset's document files (issue 56: 37 s against 1.2 s is a cost): a cached
# parse keeps what it cost. Not resampled: one figure per parse, not per question.
PARSE = View("parse", "parse seconds of the document files", "parse/seconds", False,
             lambda c: c.metric("parse/seconds"))


def views(cells: Sequence[Cell], primary: str) -> list[View]:
    """The views with a value in at least one cell: the primary measure first, then correct,
    nDCG@10, latency, end-to-end latency and tokens (each once)."""
    out: list[View] = []
    for v in (measure_view(primary), measure_view(measures.CORRECT.key),
              measure_view(measures.PRIMARY.key), LATENCY, END_TO_END, TOKENS):
        if v.key not in {x.key for x in out} and any(v.of(c) is not None for c in cells):
            out.append(v)
    return out
