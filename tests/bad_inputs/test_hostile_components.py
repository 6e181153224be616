"""Hostile components through the real command line: a plugin chunker, retriever, reranker,
generator or judge that breaks its stage's contract is refused with exit 2, naming the component,
the document or question and the rule, and nothing is left behind; a retriever that ignores the
access filter has what it leaked dropped before the context and counted, and the release gate
fails on it. The plugins are in ``tests/bad_inputs/hostile_plugins`` (issue 25, items 1-4)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from rag_bench.data.loader import load_dataset
from tests.bad_inputs.test_bad_inputs import nothing_left
from tests.conftest import REPO, TINY

PLUGINS = "hydra.searchpath=[pkg://tests.bad_inputs.hostile_plugins.conf]"
STAFF_DOC = "security"


def run(out: Path, *overrides: str) -> int:
    return cli(["run", PLUGINS, f"dataset.path={TINY}", f"output.root={out}", "tracking=none",
                "experiment.name=hostile", *overrides])


def staff_lines() -> list[str]:
    """Distinctive lines of the staff-only document (what must never reach a customer's artifacts)."""
    text = load_dataset(TINY).documents[STAFF_DOC].text
    return [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 20 and not ln.startswith("#")]


# (id, overrides, needles in stderr): every one exits 2 and leaves nothing behind.
REFUSED = [
    ("chunk-foreign-text", ["chunker=hostile", "chunker.mode=foreign_text"],
     ["HostileChunker", "billing#leak", "not the document's text"]),
    ("chunk-smuggled-prefix", ["chunker=hostile", "chunker.mode=smuggled_prefix"],
     ["HostileChunker", "billing#leak", "is not the heading path"]),
    ("chunk-unknown-doc", ["chunker=hostile", "chunker.mode=unknown_doc"],
     ["'ghost'", "not in the corpus"]),
    ("chunk-not-a-chunk", ["chunker=hostile", "chunker.mode=not_a_chunk"],
     ["is a dict, not a rag_bench.domain.Chunk"]),
    ("chunk-span-outside", ["chunker=hostile", "chunker.mode=span_outside"],
     ["billing#far", "is not inside the document"]),
    ("chunk-negative-start", ["chunker=hostile", "chunker.mode=negative_start"],
     ["billing#neg", "is not inside the document"]),
    ("chunk-duplicate-id", ["chunker=hostile", "chunker.mode=duplicate_id"], ["duplicate chunk_id"]),
    ("chunk-orphan-child", ["chunker=hostile", "chunker.mode=orphan_child"],
     ["parent_id 'security#p0' is not a parent chunk of the same document"]),
    ("chunk-not-a-list", ["chunker=hostile", "chunker.mode=not_a_list"], ["not a list of Chunk"]),
    ("rank-duplicates", ["retriever=hostile", "retriever.mode=duplicates"],
     ["HostileRetriever", "question 'q1'", "duplicate chunk indices"]),
    ("rank-negative-index", ["retriever=hostile", "retriever.mode=negative_index"],
     ["indices outside", "never wrapped"]),
    ("rank-out-of-range", ["retriever=hostile", "retriever.mode=out_of_range"], ["indices outside"]),
    ("rank-nan-score", ["retriever=hostile", "retriever.mode=nan_score"], ["finite real numbers"]),
    ("rank-increasing", ["retriever=hostile", "retriever.mode=increasing"], ["scores increase"]),
    ("rank-too-deep", ["retriever=hostile", "retriever.mode=too_deep"], ["more than the depth asked"]),
    ("rank-float-index", ["retriever=hostile", "retriever.mode=float_index"], ["not integers"]),
    ("rank-bool-index", ["retriever=hostile", "retriever.mode=bool_index"], ["not integers"]),
    ("rank-wrong-qid", ["retriever=hostile", "retriever.mode=wrong_qid"], ["is for question 'someone-else'"]),
    ("rank-not-a-ranking", ["retriever=hostile", "retriever.mode=not_a_ranking"],
     ["not a rag_bench.domain.Ranking"]),
    ("rank-nothing", ["retriever=hostile", "retriever.mode=nothing"], ["returned 0 items for 1 question"]),
    ("rerank-nan", ["reranker=hostile", "reranker.mode=nan_score"], ["HostileReranker", "must be finite"]),
    ("rerank-short", ["reranker=hostile", "reranker.mode=short"], ["scores for a shortlist of"]),
    ("rerank-matrix", ["reranker=hostile", "reranker.mode=matrix"], ["scores for a shortlist of"]),
    ("rerank-words", ["reranker=hostile", "reranker.mode=words"], ["scores are not numbers"]),
    ("rerank-nothing", ["reranker=hostile", "reranker.mode=nothing"], ["returned 0 items for 1 shortlist"]),
    ("rerank-depth-zero", ["reranker=hostile", "reranker.depth=0"], ["reranker.depth must be an integer >= 1"]),
    ("generate-strings", ["generator=hostile", "generator.mode=strings"],
     ["HostileGenerator", "is a str, not a Generation"]),
    ("generate-raw-not-text", ["generator=hostile", "generator.mode=raw_not_text"], ["raw must be a string"]),
    ("generate-negative-tokens", ["generator=hostile", "generator.mode=negative_tokens"],
     ["token counts must be integers >= 0"]),
    ("generate-one-short", ["generator=hostile", "generator.mode=one_short"], ["returned 5 items for 6 inputs"]),
    ("judge-out-of-range", ["judge=hostile", "judge.mode=out_of_range"], ["HostileJudge", "outside [-1, 1]"]),
    ("judge-text", ["judge=hostile", "judge.mode=text"], ["not numbers"]),
    ("judge-one-short", ["judge=hostile", "judge.mode=one_short"], ["one JudgeResult each"]),
    # A query transform of a team's own (issue 53): one list of 1..16 non-empty strings per question.
    ("query-nothing", ["query=hostile", "query.mode=nothing"], ["HostileQuery", "returned 0 items for 6 questions"]),
    ("query-too-many", ["query=hostile", "query.mode=too_many"], ["question 'q1'", "40 queries (1 to 16 allowed)"]),
    ("query-not-strings", ["query=hostile", "query.mode=not_strings"], ["queries that are not strings (int)"]),
    ("query-empty-list", ["query=hostile", "query.mode=empty"], ["0 queries (1 to 16 allowed)"]),
    ("query-blank", ["query=hostile", "query.mode=blank"], ["an empty query"]),
    # A plugin that raises: its error, what it was doing and where in its code, not a traceback.
    ("chunker-raises", ["chunker=hostile", "chunker.mode=raises"],
     ["HostileChunker raised ValueError: a bug in the chunker while chunking the corpus", "__init__.py:"]),
    ("fit-raises", ["retriever=hostile", "retriever.mode=fit_raises"], ["raised IndexError: a bug in fit while indexing"]),
    ("search-raises", ["retriever=hostile", "retriever.mode=raises"],
     ["raised KeyError: 'a bug in the plugin' while searching question 'q1'", "in search"]),
    ("rerank-raises", ["reranker=hostile", "reranker.mode=raises"], ["raised ZeroDivisionError", "while scoring"]),
    ("generate-raises", ["generator=hostile", "generator.mode=raises"], ["raised TypeError", "while answering"]),
    ("judge-raises", ["judge=hostile", "judge.mode=raises"], ["raised AttributeError", "while judging"]),
    ("query-raises", ["query=hostile", "query.mode=raises"],
     ["HostileQuery raised RuntimeError: a bug in the transform while transforming 6 questions"]),
]


@pytest.mark.parametrize(("case", "overrides", "needles"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_component_that_breaks_its_contract_is_refused(tmp_path, capsys, case, overrides, needles):
    out = tmp_path / "out"
    code = run(out, *overrides)
    err = capsys.readouterr().err
    assert code == 2, err[-3000:]
    contract = [] if case == "rerank-depth-zero" else ["nothing was written"] if case.endswith("-raises") \
        else ["contract", "nothing was written"]
    for needle in (*needles, *contract, "fix:"):
        assert needle in err, (needle, err[-3000:])
    assert "Traceback" not in err
    nothing_left(out)


def test_a_retriever_that_ignores_the_access_filter_leaks_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(out, "retriever=hostile", "retriever.mode=leak") == 0
    printed = capsys.readouterr()
    err = printed.out + printed.err
    (cell,) = (out / "hostile").glob("*/DONE")
    folder = cell.parent
    metrics = json.loads((folder / "metrics.json").read_text())
    sec = metrics["security"]
    # Counted, per stage, and in the total the release policy reads.
    assert sec["unauthorized_from_retriever"] > 0 and sec["unauthorized_retrievals"] == sec["unauthorized_from_retriever"]
    assert sec["unauthorized_from_reranker"] == 0
    assert "SECURITY" in err and "unauthorized" in err
    # Dropped before anything downstream saw the text: no staff line in any artifact of the cell.
    staff = staff_lines()
    assert staff
    records = pd.read_parquet(folder / "records.parquet")
    customers = records[records["asker"].fillna("").str.contains("customers")]
    assert len(customers) >= 2
    qids = set(customers["qid"])
    for row in customers.itertuples():
        assert not [cid for cid in row.chunk_ids if cid.startswith(STAFF_DOC + "#")]
        assert not [s for s in row.chunk_spans if s["doc_id"] == STAFF_DOC]
    shown = customers.to_json()
    failures = pd.read_csv(folder / "failures.csv", dtype=str).fillna("")
    shown += failures[failures["qid"].isin(qids)].to_json()
    run_lines = [ln for ln in (folder / "run.trec").read_text().splitlines() if ln.split()[0] in qids]
    assert run_lines and not [ln for ln in run_lines if ln.split()[2].startswith(STAFF_DOC + "#")]
    for line in staff:
        assert line not in shown, line
    # The per-question count is kept in the records, and the release policy fails the cell: on the
    # six-question set its means are under the policy's min_n (exit 2, the leak still marked FAIL);
    # with min_n lowered, the leak alone fails the gate.
    assert int(customers["unauthorized_from_retriever"].sum()) == sec["unauthorized_from_retriever"]
    policy = REPO / "conf" / "gate" / "release.yaml"
    assert cli(["gate", str(folder), "--policy", str(policy)]) == 2
    assert "| security/unauthorized_retrievals <= 0 | 4 | 0 | **FAIL** |" in capsys.readouterr().out
    lowered = tmp_path / "release-min-n-1.yaml"
    lowered.write_text(policy.read_text().replace("\nmin_n: 10\n", "\nmin_n: 1\n"))
    assert cli(["gate", str(folder), "--policy", str(lowered)]) == 1
    assert "unauthorized_retrievals" in capsys.readouterr().out


def test_an_honest_plugin_retriever_counts_nothing_and_score_run_reproduces_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(out, "retriever=hostile", "retriever.mode=ok") == 0
    capsys.readouterr()
    (done,) = (out / "hostile").glob("*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    assert metrics["security"] == {"unauthorized_retrievals": 0, "unauthorized_from_retriever": 0,
                                   "unauthorized_from_reranker": 0, "stale_retrievals": metrics["security"][
                                       "stale_retrievals"]}
    # The plugin's tied scores were made strictly decreasing in the order it gave: score-run
    # (trec_eval's reading of run.trec) gives the cell's own numbers.
    assert cli(["score-run", str(done.parent / "qrels.trec"), str(done.parent / "run.trec"), "-m", "map",
                "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["all"]["map"] == pytest.approx(metrics["retrieval"]["map"], abs=1e-4)


def _plugin_source() -> Path:
    return REPO / "tests" / "bad_inputs" / "hostile_plugins" / "__init__.py"


def test_two_plugin_generators_with_one_declared_identity_never_share_answers(tmp_path, capsys, monkeypatch):
    """Both declare ``{"generator": "hostile", "tag": "same"}``; a second class (same module, other
    name) must not be served the first one's cached answers."""
    from rag_bench.generation.base import generator_identity
    from tests.bad_inputs import hostile_plugins

    class Other(hostile_plugins.HostileGenerator):
        pass

    Other.__module__ = "tests.bad_inputs.hostile_plugins"
    Other.__qualname__ = "Other"
    one, two = hostile_plugins.HostileGenerator(), Other()
    assert one.identity == two.identity
    assert generator_identity(one) != generator_identity(two)
    # Built-in generators keep the identity they always had (their cached answers stay valid).
    from rag_bench.generation.base import identity_text
    from rag_bench.generation.extractive import ExtractiveGenerator

    ext = ExtractiveGenerator()
    assert generator_identity(ext) == identity_text(ext.identity)


def test_an_edited_plugin_makes_a_new_cell_instead_of_resuming_the_old_numbers(tmp_path, capsys):
    import shutil
    import sys

    pkg = tmp_path / "editable_plugin"
    (pkg / "conf" / "retriever").mkdir(parents=True)
    shutil.copy(_plugin_source(), pkg / "__init__.py")
    (pkg / "conf" / "__init__.py").write_text("")
    (pkg / "conf" / "retriever" / "mine.yaml").write_text(
        "name: mine\n_target_: editable_plugin.HostileRetriever\nmode: ok\nscript: null\n")
    sys.path.insert(0, str(tmp_path))
    try:
        out = tmp_path / "out"
        args = ["run", "hydra.searchpath=[pkg://editable_plugin.conf]", "retriever=mine", f"dataset.path={TINY}",
                f"output.root={out}", "tracking=none", "experiment.name=edit", "generator=none"]
        assert cli(args) == 0
        first = {p.parent.name for p in (out / "edit").glob("*/DONE")}
        assert cli(args) == 0  # unchanged: resumed, no new cell
        assert {p.parent.name for p in (out / "edit").glob("*/DONE")} == first
        with open(pkg / "__init__.py", "a") as fh:
            fh.write("\n# edited: a bug fix that changes the rankings\n")
        assert cli(args) == 0
        second = {p.parent.name for p in (out / "edit").glob("*/DONE")}
        assert len(second) == 2 and first < second
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("editable_plugin", None)
    capsys.readouterr()


def test_a_local_model_folder_edited_in_place_makes_a_new_cell(tmp_path, capsys):
    """The cell id holds a digest of a local model folder's files: a checkpoint copied over the
    old one is a new model, never a resumed cell with the old model's numbers."""
    from rag_bench.runner.config import component_provenance

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "weights.bin").write_bytes(b"\0" * 64)
    config = {"embedder": {"name": "minilm", "_target_": "rag_bench.embedding.sentence_transformer."
                           "SentenceTransformerEmbedder", "model": str(model)},
              "generator": {"name": "llama_cpp", "model": "gemma3-270m"}}
    first = component_provenance(config)
    assert set(first) == {"embedder"} and "model" in first["embedder"]
    (model / "weights.bin").write_bytes(b"\1" * 64)  # same size: only the bytes differ
    assert component_provenance(config) != first
    # Built-in components with packaged models add nothing: their cell ids stay what they were.
    assert component_provenance({"embedder": {"_target_": "rag_bench.x.Y", "model": "all-MiniLM-L6-v2"}}) == {}


@pytest.mark.slow
def test_a_model_folder_edited_in_place_is_a_new_cell_with_the_new_models_numbers(tmp_path, capsys):
    """Through the CLI: a dense cell on a local copy of MiniLM, then a different model copied over
    that folder: the same command computes a new cell (it resumed the old numbers before)."""
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rag_bench.embedding.sentence_transformer import resolve_model

    minilm = resolve_model("all-MiniLM-L6-v2")
    model = tmp_path / "model"
    shutil.copytree(minilm, model)
    out = tmp_path / "out"
    args = ["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=m",
            "retriever=dense", f"embedder.model={model}", "generator=none"]
    assert cli(args) == 0
    (first,) = (out / "m").glob("*/DONE")
    assert cli(args) == 0 and len(list((out / "m").glob("*/DONE"))) == 1  # unchanged: resumed
    # Another model (random weights, same tokenizer) copied over the folder.
    raw = tmp_path / "raw"
    tok = AutoTokenizer.from_pretrained(minilm)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(raw)
    tok.save_pretrained(raw)
    st = SentenceTransformer(modules=[Transformer(str(raw), max_seq_length=64), Pooling(32, pooling_mode="mean"),
                                      Normalize()], device="cpu")
    shutil.rmtree(model)
    st.save(str(model))
    assert cli(args) == 0
    cells = sorted((out / "m").glob("*/DONE"))
    assert len(cells) == 2
    (second,) = [c for c in cells if c != first]
    a, b = (pd.read_parquet(c.parent / "records.parquet")["scores"].map(list).tolist() for c in (first, second))
    assert a != b  # the new model's scores, not the old ones
    capsys.readouterr()


def test_the_report_shows_a_leaking_retriever_in_red(tmp_path, capsys):
    out = tmp_path / "out"
    assert run(out, "retriever=hostile", "retriever.mode=leak", "generator=none") == 0
    reports = tmp_path / "reports"
    assert cli(["report", str(out / "hostile"), "--out", str(reports)]) == 0
    capsys.readouterr()
    page = next(reports.rglob("index.html")).read_text()
    assert "<p class='bad'><strong>SECURITY: 1 cell(s) retrieved" in page


@pytest.mark.parametrize("overrides", [["retriever=hostile", "retriever.mode=duplicates"],
                                       ["chunker=hostile", "chunker.mode=raises"]], ids=["broken-ranking", "raises"])
def test_a_refused_component_leaves_no_mlflow_run_behind(tmp_path, capsys, monkeypatch, overrides):
    """With MLflow on (its default SQLite store under output.root): no cell run, no RUNNING run and
    no empty parent run left active (the sweep's parent of a refused cell is closed and deleted)."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    code = cli(["run", PLUGINS, f"dataset.path={TINY}", f"output.root={out}", "experiment.name=hostile", *overrides])
    assert code == 2, capsys.readouterr().err[-2000:]
    nothing_left(out)
    from mlflow.tracking import MlflowClient

    assert (out / "mlflow.db").is_file()  # tracking was on: the store exists
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    active = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    assert not active, [(r.info.run_name, r.info.status) for r in active]
