"""records(): the frames side by side, exactly as the former column-by-column rebuild gave them."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rag_bench.evaluation.summary import records


def _former(*, scored: Any, retrieved: Any, reranked: Any, generated: Any, judged: Any) -> pd.DataFrame:
    # records() before the frames were put side by side (the reference the fast path must equal).
    columns: dict[str, Any] = {}
    for part in (generated.frame if generated else None, judged.frame if judged else None):
        if part is not None:
            columns.update({c: part[c] for c in part.columns})
    columns["retrieve_ms"] = retrieved.latency_ms
    if reranked.latency_ms:
        columns["rerank_ms"] = reranked.latency_ms
    frame = scored.frame
    replaced = [c for c in columns if c in frame.columns]
    if replaced:
        frame = frame.assign(**{c: columns.pop(c) for c in replaced})
    else:
        frame = frame.copy(deep=False)
    return pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)


def _scored(n: int) -> pd.DataFrame:
    return pd.DataFrame({"qid": [f"q{i}" for i in range(n)], "hit@5": np.arange(n) % 2 * 1.0,
                         "failure": ["retrieval_miss" if i % 3 else None for i in range(n)],
                         "scores": [[0.5, 0.25][: i % 3] for i in range(n)],
                         "first_relevant_rank": pd.array([i or None for i in range(n)], dtype="Int64")})


def _generated(n: int) -> pd.DataFrame:
    return pd.DataFrame({"answer": [f"a{i}" for i in range(n)], "correct": [np.nan if i == 1 else 1.0 for i in range(n)],
                         "refused": [i == 2 for i in range(n)], "parse_error": [None] * n,
                         "context_ids": [[f"c{i}", "c9"] for i in range(n)], "tokens_in": [None, *range(n - 1)],
                         "failure": ["hallucinated_answer" if i % 2 else "correct" for i in range(n)]},
                        index=range(n))


CASES = {
    "retrieval only": dict(generated=None, judged=None, rerank=[]),
    "answers replace the failure label": dict(generated=_generated, judged=None, rerank=[]),
    "answers, judge and rerank latency": dict(
        generated=_generated, judged=lambda n: pd.DataFrame({"judge_faithfulness": np.linspace(0, 1, n)}), rerank=True),
    "judge gives an answer column again": dict(
        generated=_generated, judged=lambda n: pd.DataFrame({"correct": np.zeros(n), "j": np.ones(n)}), rerank=True),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n", [1, 5])
def test_records_equal_the_former_column_by_column_frame(case, n):
    c = CASES[case]
    kwargs = dict(scored=NS(frame=_scored(n)), retrieved=NS(latency_ms=[float(i) for i in range(n)]),
                  reranked=NS(latency_ms=[2.0 * i for i in range(n)] if c["rerank"] else []),
                  generated=NS(frame=c["generated"](n)) if c["generated"] else None,
                  judged=NS(frame=c["judged"](n)) if c["judged"] else None)
    before = {k: v.frame.copy() for k, v in kwargs.items() if hasattr(v, "frame")}
    got, want = records(**kwargs), _former(**kwargs)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.columns) == list(want.columns) and list(got.dtypes) == list(want.dtypes)
    for k, frame in before.items():  # inputs untouched
        pd.testing.assert_frame_equal(kwargs[k].frame, frame)
