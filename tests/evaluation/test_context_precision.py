"""context_precision@k: one scorer file, found and aggregated by every evaluation."""

import math

import numpy as np
import pandas as pd

from rag_bench.data.loader import load_dataset
from rag_bench.evaluation.scorers import discovered
from rag_bench.evaluation.scorers.context_precision import SCORER
from rag_bench.memo import SharedWork
from rag_bench.metrics import measures
from rag_bench.runner.pipeline import run_pipeline
from tests.conftest import TINY, compose_config


def test_share_of_the_top_k_that_is_relevant():
    frame = pd.DataFrame({"relevant": [[True, False, True, False], [False, False], [True], [False, True]],
                          "answerable": [True, True, False, True], "n_relevant": [2, 1, 1, 0]})
    got = SCORER.columns(frame, ks=[1, 5], k=3)["context_precision@3"]
    assert got[:2] == [2 / 3, 0.0]  # 2 of the 3 handed over; a short ranking: of its passages
    assert math.isnan(got[2]) and math.isnan(got[3])  # unanswerable; no relevant chunk anywhere
    assert SCORER in discovered()
    m = measures.measure("context/context_precision@3")
    assert m is not None and m.higher_is_better and m.column == "context_precision@3"


def test_a_cell_reports_it_with_n_and_ci():
    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25", "pipeline.k=3",
                          "generator=none", "eval.bootstrap_resamples=50"])
    result = run_pipeline(cfg, load_dataset(TINY), "c", SharedWork())
    col = result.records["context_precision@3"].to_numpy(np.float64)
    expected = np.mean([sum(r[:3]) / len(r[:3]) for r, a, n in zip(result.records["relevant"],
                        result.records["answerable"], result.records["n_relevant"]) if a and n > 0])
    assert result.metrics["context"]["context_precision@3"] == np.nanmean(col) == expected
    assert result.metrics["n"]["context/context_precision@3"] == int((~np.isnan(col)).sum()) > 0
    lo, hi = result.metrics["ci"]["context/context_precision@3"]
    assert lo <= expected <= hi
