"""ANN figures and gate directions through the real command line (issue 25, items 6 and 7).

- ``ann_recall@k`` of a cell describes its index as configured: an HNSW index whose ``ef_search``
  (1) is below k returns fewer than k hits, which count as misses; the wider search retrieval
  falls back to is not what the report measures. Checked against FAISS itself.
- A gate regression rule judges a count of what went wrong (``counts/unlocated_passages``) as
  lower-is-better; a figure with no declared direction takes no regression rule (exit 2).
- ``gate <run id>`` against a tracking server that is down or failing exits 2 within seconds,
  naming the URI, instead of retrying for minutes and then saying "run not found".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

from rag_bench.cli import main as cli
from rag_bench.evaluation import measures
from tests.conftest import TINY, compose_config
from tests.servers import free_port, serving

RAG_BENCH = str(Path(sys.executable).parent / "rag-bench")
RUN_ID = "0123456789abcdef0123456789abcdef"
NOWHERE = "This sentence is in no document of the corpus."


def _only_cell(folder: Path) -> Path:
    (cell,) = [p.parent for p in folder.glob("*/DONE")]
    return cell


# --- item 6: the ANN report measures the index as configured ----------------------------------

@pytest.fixture
def one_faiss_thread():
    """Our build and the direct FAISS build make the same HNSW graph."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


def _faiss_recall(overrides: list[str], path: Path | None = None) -> tuple[dict[int, float], int, int]:
    """recall@k of the configured HNSW index against flat, from FAISS searched directly over the
    cell's vectors with each asker's filter; the questions HNSW left short; those with a filter."""
    import faiss

    from rag_bench.data.loader import load_dataset
    from rag_bench.retrieval.base import AccessFilter
    from rag_bench.runner.config import DEMO_DATASET, build

    cfg = compose_config(overrides)
    dataset = load_dataset(path or DEMO_DATASET)
    chunks = build(cfg.chunker, "chunker").chunk(list(dataset.documents.values()))
    searchable = [c for c in chunks if not c.is_parent and not dataset.documents[c.doc_id].archived]
    embedder = build(cfg.embedder, "embedder")
    x = np.ascontiguousarray(embedder.embed_documents([c.text for c in searchable]), dtype=np.float32)
    questions = list(dataset.questions)
    qv = np.ascontiguousarray(embedder.embed_queries([q.question for q in questions]), dtype=np.float32)
    hnsw = faiss.IndexHNSWFlat(x.shape[1], int(cfg.index.M), faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = int(cfg.index.ef_construction)
    hnsw.add(x)
    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    access = AccessFilter(searchable, dataset.documents)
    ks = sorted(set(cfg.eval.ks))
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    short = filtered = 0
    for i, q in enumerate(questions):
        params, exact = faiss.SearchParametersHNSW(), faiss.SearchParameters()
        params.efSearch = int(cfg.index.ef_search)
        mask = access.mask(q.asker)
        if mask is not None:
            filtered += 1
            bits = np.packbits(mask.astype(np.uint8), bitorder="little")
            params.sel = exact.sel = faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))
        _, got = hnsw.search(qv[i:i + 1], max(ks), params=params)
        _, want = flat.search(qv[i:i + 1], max(ks), params=exact)
        got, want = got[0], want[0]
        short += int((got >= 0).sum() < (want >= 0).sum())
        for k in ks:
            w = set(want[:k][want[:k] >= 0].tolist())
            recalls[k].append(len(set(got[:k][got[:k] >= 0].tolist()) & w) / len(w))
    return {k: float(np.mean(v)) for k, v in recalls.items()}, short, filtered


@pytest.mark.slow
def test_ann_recall_of_an_hnsw_cell_is_the_configured_index_as_faiss_measures_it(tmp_path, one_faiss_thread):
    """Demo set, index=hnsw_m4_ef1 (ef_search=1 < k): the cell reported 0.526 for ann_recall@10,
    the recall of the widened search; FAISS gives 0.295 for the index as configured."""
    overrides = ["retriever=dense", "index=hnsw_m4_ef1", "generator=none", "tracking=none"]
    assert cli(["run", *overrides, f"output.root={tmp_path}", "experiment.name=ann"]) == 0
    ann = json.loads((_only_cell(tmp_path / "ann") / "metrics.json").read_text())["ann"]
    want, short, filtered = _faiss_recall(overrides)
    assert 0 < filtered < 84 and short > 0  # questions with and without a filter; FAISS left some short
    for k, value in want.items():
        assert ann[f"ann_recall@{k}"] == pytest.approx(value, abs=1e-12), (k, ann, want)
    assert ann["underfill_fallbacks"] == short


@pytest.mark.slow
def test_ann_recall_on_cacm_is_the_configured_index_as_faiss_measures_it(tmp_path, shared_dir, one_faiss_thread):
    """The issue's figure: on CACM an hnsw M=4, ef_search=1 cell reported ann_recall@10 0.2250 where
    FAISS gives 0.0904 for the index as configured (the exact figure depends on the chunker and
    embedder; the test holds the cell to FAISS's own number)."""
    found = sorted(p for p in (shared_dir / "datasets").glob("*") if "cacm" in p.name.lower() and p.is_dir())
    if not found:
        pytest.skip(f"no CACM dataset under {shared_dir / 'datasets'} (a folder whose name contains 'cacm')")
    overrides = ["retriever=dense", "index=hnsw_m4_ef1", "generator=none", "tracking=none", f"dataset.path={found[0]}"]
    assert cli(["run", *overrides, f"output.root={tmp_path}", "experiment.name=cacm"]) == 0
    ann = json.loads((_only_cell(tmp_path / "cacm") / "metrics.json").read_text())["ann"]
    want, short, _ = _faiss_recall(overrides, found[0])
    for k, value in want.items():
        assert ann[f"ann_recall@{k}"] == pytest.approx(value, abs=1e-12), (k, ann, want)
    assert ann["underfill_fallbacks"] == short


# --- item 7: directions ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> dict[str, Path]:
    """Two cells of an external system on the tiny set: ``clean`` returns no passage, ``sloppy``
    one passage per question that no document holds (counts/unlocated_passages = 6)."""
    from rag_bench.data.loader import load_dataset

    root = tmp_path_factory.mktemp("evaluated")
    questions = load_dataset(TINY).questions
    cells = {}
    for name, passages in (("clean", []), ("sloppy", [{"text": NOWHERE}])):
        outputs = root / f"{name}.jsonl"
        outputs.write_text("".join(json.dumps({"id": q.qid, "retrieved": passages}) + "\n" for q in questions))
        assert cli(["evaluate", str(outputs), "--dataset", str(TINY), "--name", name, "tracking=none",
                    f"output.root={root}", f"experiment.name={name}"]) == 0
        cells[name] = _only_cell(root / name)
    return cells


def _policy(tmp_path: Path, text: str) -> str:
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    return str(p)


def test_a_rise_of_unlocated_passages_fails_not_worse_than(tmp_path, evaluated, capsys):
    metrics = json.loads((evaluated["sloppy"] / "metrics.json").read_text())
    assert metrics["counts"]["unlocated_passages"] == 6
    policy = _policy(tmp_path, "regressions:\n  counts/unlocated_passages: {rule: not_worse_than, max_drop: 0}\n")
    junit = tmp_path / "gate.xml"
    assert cli(["gate", str(evaluated["sloppy"]), "--policy", policy, "--baseline", str(evaluated["clean"]),
                "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "## rag-bench gate: FAIL" in out and "counts/unlocated_passages not worse than baseline + 0" in out
    assert "| 6.0000 | <= 0.0000 | **FAIL** |" in out and 'failures="1"' in junit.read_text()
    assert cli(["gate", str(evaluated["clean"]), "--policy", policy, "--baseline", str(evaluated["sloppy"])]) == 0


def test_every_number_of_an_evaluated_cell_declares_its_direction(evaluated):
    skip = {"ci", "n", "by_tag", "conditional", "methods", "warnings"}
    for cell in evaluated.values():
        metrics = json.loads((cell / "metrics.json").read_text())
        for section, block in metrics.items():
            if section in skip or not isinstance(block, dict):
                continue
            for name, value in block.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    measures.direction(f"{section}/{name}")  # raises when nothing declares one


@pytest.mark.parametrize(("metric", "needle"), [
    ("counts/chunks", "[counts/chunks] 'counts/chunks' is descriptive (a size or a cache's state)"),
    ("counts/unlocated_pasages", "[counts/unlocated_pasages] 'counts/unlocated_pasages' declares no direction"),
    ("cost/embedding_cache_hits", "[cost/embedding_cache_hits] 'cost/embedding_cache_hits' is descriptive"),
    ("dataset/size", "[dataset/size] 'dataset/size' declares no direction"),
])
def test_a_regression_rule_without_a_direction_exits_2_and_writes_nothing(tmp_path, evaluated, capsys, metric,
                                                                           needle):
    policy = _policy(tmp_path, f"regressions:\n  {metric}: {{rule: no_significant_regression, alpha: 0.05}}\n")
    junit = tmp_path / "gate.xml"
    assert cli(["gate", str(evaluated["sloppy"]), "--policy", policy, "--baseline", str(evaluated["clean"]),
                "--junit", str(junit)]) == 2
    err = capsys.readouterr().err
    assert f"policy.yaml:2: {needle}" in err and "so no change of it is a regression" in err
    assert "Traceback" not in err and not junit.exists()


def test_a_report_ranked_by_a_descriptive_count_exits_2(tmp_path, evaluated, capsys):
    out = tmp_path / "reports"
    assert cli(["report", str(evaluated["sloppy"].parent), "--out", str(out), "--metric", "counts/chunks"]) == 2
    err = capsys.readouterr().err
    assert "'counts/chunks' is descriptive" in err and "--metric retrieval/ndcg@10" in err and not out.exists()


# --- item 7: an unreachable or failing tracking server -----------------------------------------

def _gate_run_id(tmp_path: Path, uri: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = uri
    policy = _policy(tmp_path, "thresholds: {retrieval/hit@5: {min: 0.5}}\n")
    t0 = time.monotonic()
    done = subprocess.run([RAG_BENCH, "gate", RUN_ID, "--policy", policy], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    return done, time.monotonic() - t0


def test_gate_on_a_run_id_at_a_closed_port_fails_fast(tmp_path):
    """Took 251 s of MLflow's retries, then said "run not found"."""
    uri = f"http://127.0.0.1:{free_port()}"
    done, seconds = _gate_run_id(tmp_path, uri)
    assert done.returncode == 2, done.stderr
    assert f"MLflow tracking server {uri} is unreachable" in done.stderr and "not found" not in done.stderr
    assert "Traceback" not in done.stderr and seconds < 30, seconds


class HealthyButFailing(BaseHTTPRequestHandler):
    """Answers /health, fails every API request with 503 (a server behind a broken proxy)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self.send_response(200 if self.path == "/health" else 503)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args: object) -> None:
        pass


def test_gate_on_a_run_id_at_a_failing_server_gives_up_within_seconds(tmp_path):
    """MLflow retries a 503 seven times with exponential backoff: its HTTP retries and timeouts are
    capped for the lookup."""
    with serving(HealthyButFailing) as server:
        uri = f"http://127.0.0.1:{server.server_address[1]}"
        done, seconds = _gate_run_id(tmp_path, uri)
    assert done.returncode == 2, done.stderr
    assert f"MLflow at {uri} could not return the run" in done.stderr and "Traceback" not in done.stderr
    assert seconds < 30, seconds
