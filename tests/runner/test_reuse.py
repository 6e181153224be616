"""A cell computed before is written from the cache (issue 57 item 4): a warm grid under a new
experiment name reuses chunking, retrieval, generation and scoring -- the same files, DONE saying so."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from rag_bench import cell_cache, switches
from rag_bench.cells import CellResult
from rag_bench.pipeline import pipeline
from rag_bench.runner import reuse
from tests.runner.test_run_cell import run


@pytest.fixture
def reusing(tmp_path, monkeypatch):
    """Reuse on (the session turns it off) over a cache folder of this test's own."""
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(reuse=True))
    return tmp_path


def _broken(*args, **kwargs):
    raise AssertionError("the pipeline ran: the cell was computed, not reused")


def test_a_cell_computed_before_is_written_from_the_cache(reusing, monkeypatch):
    first = run(reusing / "a", "retriever=bm25", "generator=extractive")
    assert "reused" not in json.loads((first / "DONE").read_text())
    monkeypatch.setattr(pipeline, "run", _broken)  # nothing of the cell is computed again
    again = run(reusing / "b", "retriever=bm25", "generator=extractive")
    assert again.name == first.name and again.parent != first.parent
    done = json.loads((again / "DONE").read_text())
    assert done["reused"]["key"].startswith(reuse.code_version() + ":") and done["reused"]["computed_at"]
    for name in ("metrics.json", "run.trec", "qrels.trec", "failures.csv"):  # config.yaml: its output.root differs
        assert (again / name).read_bytes() == (first / name).read_bytes(), name
    pd.testing.assert_frame_equal(pd.read_parquet(again / "records.parquet"), pd.read_parquet(first / "records.parquet"))


def test_a_cell_finished_in_the_sweeps_background_process_is_stored_there_and_served(reusing, monkeypatch):
    """The background process that writes a sweep's cells stores them in the cell cache too (issue 57:
    encoding and storing a cell cost the sweep's own thread ~40 ms of a ~300 ms squad2-normans cell)."""
    from rag_bench.tracking import background

    with background.session():
        first = run(reusing / "a", "retriever=bm25", "generator=extractive")
    stored = cell_cache.CellStore(reusing / "cache" / cell_cache.FILE)
    keys = [k for (k,) in stored._conn().execute("SELECT key FROM cells")]
    assert len(keys) == 1 and keys[0].startswith(reuse.code_version() + ":")
    monkeypatch.setattr(pipeline, "run", _broken)
    again = run(reusing / "b", "retriever=bm25", "generator=extractive")
    assert json.loads((again / "DONE").read_text())["reused"]["key"] == keys[0]
    for name in ("metrics.json", "run.trec", "qrels.trec", "failures.csv", "question-runs.jsonl", "records.parquet"):
        assert (again / name).read_bytes() == (first / name).read_bytes(), name


@pytest.mark.parametrize("codec", ["zstd", None])
def test_a_stored_cells_files_are_kept_byte_for_byte(codec, monkeypatch):
    """Files go into a row as bytes, not JSON strings (question-runs.jsonl is ~2.4 MB a squad2-normans
    cell, full of quotes), zstd-compressed (0.1 MB) or, without pyarrow's zstd, as they are: any text,
    empty or not, reads back the same; other bytes are refused."""
    monkeypatch.setattr(cell_cache, "_CODEC", codec)
    records = pd.DataFrame({"qid": ["q1"]})
    files = {"question-runs.jsonl": '{"a":"\\"q\\" \u00e9 \U0001f600"}\n', "empty.trec": "", "d.trec": "x\0y"}
    result = CellResult(records, {"n": 1}, 'q1 Q0 "d" 1 2.0 r\n', "", files)
    back, _ = cell_cache.decode(cell_cache.encode(result))
    assert (back.run_trec, back.qrels_trec, back.extra_files) == (result.run_trec, "", files)
    with pytest.raises(ValueError, match="not a stored cell"):
        cell_cache.decode(b"RBCELL1\n" + cell_cache.encode(result)[8:])


def test_no_reuse_when_turned_off_or_the_code_changed(reusing, monkeypatch):
    run(reusing / "a", "retriever=bm25")
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(reuse=False))
    monkeypatch.setattr(pipeline, "run", _broken)
    with pytest.raises(AssertionError, match="the pipeline ran"):
        run(reusing / "b", "retriever=bm25")
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(share=False))
    with pytest.raises(AssertionError, match="the pipeline ran"):
        run(reusing / "c", "retriever=bm25")
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(reuse=True))
    monkeypatch.setattr(reuse, "code_version", lambda: "edited")  # another version of the code: a miss
    with pytest.raises(AssertionError, match="the pipeline ran"):
        run(reusing / "d", "retriever=bm25")


def test_a_cell_computed_unpriced_is_not_served_as_a_priced_one(reusing, monkeypatch):
    """Prices are no part of the cell id but are of its cost metrics: a cell computed without a price
    table was served to a priced sweep, with no cost/usd_per_question (an NSGA-II cost search stopped
    at its first trial)."""
    unpriced = run(reusing / "a", "retriever=bm25", "generator=extractive")
    assert "usd_per_question" not in json.loads((unpriced / "metrics.json").read_text()).get("cost", {})
    priced = run(reusing / "b", "retriever=bm25", "generator=extractive", "+prices=example")
    assert "reused" not in json.loads((priced / "DONE").read_text())
    assert json.loads((priced / "metrics.json").read_text())["cost"]["usd_per_question"] > 0
    monkeypatch.setattr(pipeline, "run", _broken)  # the same prices again: served
    again = run(reusing / "c", "retriever=bm25", "generator=extractive", "+prices=example")
    assert json.loads((again / "DONE").read_text())["reused"]
    assert (again / "metrics.json").read_bytes() == (priced / "metrics.json").read_bytes()


def test_a_stored_result_reads_back_whole():
    records = pd.DataFrame({"qid": ["q1", "q2"], "hit@5": [1.0, float("nan")], "claims": [[{"text": "a"}], []]})
    metrics = {"retrieval": {"hit@5": 1.0, "mrr": float("nan")}, "n": {"retrieval/hit@5": 1}, "ci": {"x": [0.1, 0.2]}}
    back, when = cell_cache.decode(cell_cache.encode(CellResult(records, metrics, "run", "qrels", {"doc.trec": "d"})))
    pd.testing.assert_frame_equal(back.records, records)
    assert math.isnan(back.metrics["retrieval"]["mrr"]) and back.metrics["retrieval"]["hit@5"] == 1.0
    assert (back.run_trec, back.qrels_trec, back.extra_files) == ("run", "qrels", {"doc.trec": "d"}) and when


def test_a_cells_records_are_encoded_once_and_written_byte_for_byte(tmp_path):
    """The cell cache stores records.parquet's bytes and the cell folder gets the same bytes, not a second
    encoding of the frame (22 ms a squad2-normans cell): the bytes equal pandas' own file."""
    import pandas as pd

    from rag_bench.cells import CellResult, parquet_bytes, write_cell

    records = pd.DataFrame({"qid": ["q1", "q2"], "answer": ["a", None], "hit@5": [1.0, float("nan")],
                            "tags": [["x"], []]})
    records.to_parquet(tmp_path / "pandas.parquet", index=False)
    assert parquet_bytes(records) == (tmp_path / "pandas.parquet").read_bytes()
    result = CellResult(records, {"retrieval": {"hit@5": 1.0}}, "run\n", "qrels\n",
                        records_parquet=parquet_bytes(records))
    served, _ = cell_cache.decode(cell_cache.encode(result))
    assert served.records_parquet == result.records_parquet and served.metrics == result.metrics
    pd.testing.assert_frame_equal(served.records, records)
    write_cell(tmp_path / "cell", {"pipeline": {"k": 5}}, served)
    assert (tmp_path / "cell" / "records.parquet").read_bytes() == (tmp_path / "pandas.parquet").read_bytes()
