"""Which answers of a cell people label (``rag-bench label``), in which order.

Only answers can be labelled: a row without answer text, or whose generation failed, has nothing
to judge (:func:`rag_bench.calibration.labels.label_digest` is None for it). The page shows the
rows in the order of :func:`draw`:

- uniform: the labellable rows shuffled with ``random.Random(seed)``. Every start of that order
  (the first m rows, whatever m) is a uniform random sample of the cell's answers, so labels of
  the first m answers shown support a PPI mean however early the labeller stopped; the gate
  checks that the labels it uses are such a start (:mod:`rag_bench.calibration.gate_rule`).
- stratified by a numeric records column: one row with the column >= 0.5, one below, one
  undefined, in turn, until a group runs out, so every kind is seen early. Not uniform: a PPI mean
  from such labels is indicative only.
"""

from __future__ import annotations

import random

import pandas as pd

from rag_bench.calibration.labels import label_digest
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures


def labellable(records: pd.DataFrame) -> list[int]:
    """Row positions of the answers people can label (answer text present, generation not failed)."""
    if "answer" not in records:
        return []
    errors = records["generation_error"] if "generation_error" in records else pd.Series([None] * len(records))
    return [i for i, (a, e) in enumerate(zip(records["answer"], errors)) if label_digest(a, e) is not None]


def stratify_columns(records: pd.DataFrame) -> list[str]:
    """The records columns a sample can be stratified by: numbers (and yes/no) per question."""
    return [str(c) for c in records.columns if records[c].dtype.kind in "fiub"]


def check_stratify(records: pd.DataFrame, column: str) -> None:
    """ConfigError (exit 2) unless ``column`` is one of :func:`stratify_columns`."""
    choices = stratify_columns(records)
    if column not in choices:
        what = "is not a numeric records column" if column in records.columns else "no such records column"
        first = [c for c in (measures.CORRECT.column, measures.FAITHFULNESS.column) if c in choices]
        rest = [c for c in choices if c not in first][:40 - len(first)]
        raise ConfigError(f"--stratify {column!r}: {what} (strata are value >= 0.5, below, undefined) -- fix: one "
                          f"of {', '.join(first + rest)}{', ...' if len(choices) > 40 else ''}")


def draw(records: pd.DataFrame, seed: int, stratify: str | None = None) -> list[int]:
    """Every labellable row (:func:`labellable`) in the order the page shows them: shuffled by
    ``seed``, or stratified by the column ``stratify`` (one of each group in turn)."""
    rng = random.Random(seed)
    rows = labellable(records)
    if stratify is None:
        rng.shuffle(rows)
        return rows
    check_stratify(records, stratify)
    values = records[stratify].astype(float)
    groups = [[i for i in rows if values.iloc[i] >= 0.5], [i for i in rows if values.iloc[i] < 0.5],
              [i for i in rows if pd.isna(values.iloc[i])]]
    for g in groups:
        rng.shuffle(g)
    order: list[int] = []
    while len(order) < len(rows):
        order += [g.pop() for g in groups if g]
    return order
