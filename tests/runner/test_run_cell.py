"""One cell end to end in-process (tracking=none): folder layout, resume, determinism, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_bench.cells import is_done
from rag_bench.errors import ConfigError, DataError
from rag_bench.failure_labels import RETRIEVAL_LABELS
from rag_bench.runner.config import cell_id
from rag_bench.runner.main import run_cell
from tests.conftest import TINY, compose_config


def run(tmp_path: Path, *overrides: str, dataset: Path | None = TINY) -> Path:
    ov = ["tracking=none", f"output.root={tmp_path}", *overrides]
    if dataset is not None:
        ov.append(f"dataset.path={dataset}")
    return run_cell(compose_config(ov))


def without_timings(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k != "latency"}


def test_cell_folder_layout(tmp_path):
    cell = run(tmp_path, "chunker=section", "generator=none")
    assert cell.parent.name == "default" and is_done(cell)
    assert {p.name for p in cell.iterdir()} == {"config.yaml", "metrics.json", "records.parquet", "run.trec",
                                                "qrels.trec", "failures.csv", "question-runs.jsonl", "DONE"}
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == 6 and metrics["counts"]["answerable"] == 4
    assert metrics["n"]["retrieval/hit@5"] == 4
    lo, hi = metrics["ci"]["retrieval/ndcg@10"]
    assert lo <= metrics["retrieval"]["ndcg@10"] <= hi
    assert metrics["security"] == {"unauthorized_retrievals": 0, "unauthorized_from_retriever": 0,
                                   "unauthorized_from_reranker": 0, "stale_retrievals": 0}
    assert sum(metrics["failures"].values()) == 4 and set(metrics["failures"]) == set(RETRIEVAL_LABELS) - {"query"}
    records = pd.read_parquet(cell / "records.parquet")
    assert len(records) == 6 and {"qid", "chunk_ids", "scores", "relevant", "failure", "hit@5",
                                  "evidence_recall@5", "retrieve_ms"} <= set(records.columns)
    # Unanswerable questions take no part in ranking metrics.
    assert records.loc[~records["answerable"], "hit@5"].isna().all()
    # q1 (14-day refund) is answered by the first section chunk of the current billing doc.
    q1 = records.set_index("qid").loc["q1"]
    assert q1["chunk_ids"][0] == "billing#0000" and q1["hit@1"] == 1.0 and q1["failure"] == "in_context"


def test_run_trec_is_strict_and_qrels_match_records(tmp_path):
    cell = run(tmp_path, "chunker=fixed", "chunker.size=60", "chunker.overlap=10")
    rows = [line.split() for line in (cell / "run.trec").read_text().splitlines()]
    by_q: dict[str, list[float]] = {}
    for qid, q0, _docno, _rank, score, tag in rows:
        assert q0 == "Q0" and tag == cell.name
        by_q.setdefault(qid, []).append(float(score))
    assert all(np.all(np.diff(s) < 0) for s in by_q.values())
    assert max(len(s) for s in by_q.values()) == 10  # depth D = max(eval.ks); fewer only if fewer readable
    qrels = {(q, d) for q, _, d, _ in (line.split() for line in (cell / "qrels.trec").read_text().splitlines())}
    records = pd.read_parquet(cell / "records.parquet")
    for _, r in records.iterrows():
        for cid, rel in zip(r["chunk_ids"], r["relevant"]):
            assert ((r["qid"], cid) in qrels) == rel


def test_done_cell_is_skipped(tmp_path):
    cell = run(tmp_path)
    stamp = (cell / "metrics.json").stat().st_mtime_ns
    assert run(tmp_path) == cell
    assert (cell / "metrics.json").stat().st_mtime_ns == stamp


def test_unfinished_cell_is_redone(tmp_path):
    cell = run(tmp_path)
    (cell / "DONE").unlink()
    (cell / "metrics.json").write_text("{half")
    run(tmp_path)
    assert is_done(cell) and json.loads((cell / "metrics.json").read_text())["counts"]["questions"] == 6


def test_same_cell_twice_is_identical(tmp_path):
    a = run(tmp_path / "a", "chunker=parent_child")
    b = run(tmp_path / "b", "chunker=parent_child")
    assert a.name == b.name
    assert without_timings(json.loads((a / "metrics.json").read_text())) == \
        without_timings(json.loads((b / "metrics.json").read_text()))
    assert (a / "run.trec").read_bytes() == (b / "run.trec").read_bytes()
    assert (a / "qrels.trec").read_bytes() == (b / "qrels.trec").read_bytes()


def test_cell_id_ignores_where_results_go_but_not_what_is_computed(tiny_dataset):
    fp = tiny_dataset.fingerprint
    base = cell_id(compose_config([]), fp)
    assert cell_id(compose_config(["experiment.name=x", "output.root=/elsewhere", "tracking=none"]), fp) == base
    assert cell_id(compose_config([f"dataset.path={TINY}"]), fp) == base  # path replaced by fingerprint
    assert cell_id(compose_config(["pipeline.k=3"]), fp) != base
    assert cell_id(compose_config(["chunker=fixed"]), fp) != base
    assert cell_id(compose_config([]), "other-fingerprint") != base


def test_bad_dataset_leaves_nothing(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    with pytest.raises(DataError):
        run(tmp_path / "out", dataset=bad)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("override", "needle"), [("pipeline.k=0", "pipeline.k"), ("eval.ks=[]", "eval.ks"),
                                                  ("eval.min_coverage=1.5", "eval.min_coverage"),
                                                  ("eval.relevance=vibes", "eval.relevance")])
def test_bad_config_leaves_nothing(tmp_path, override, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        run(tmp_path / "out", override)
    assert not (tmp_path / "out").exists()


def test_unwritable_output_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="output.root"):
        run(blocker / "sub")


@pytest.mark.parametrize("chunker", ["fixed", "fixed_words", "sentence", "section", "recursive", "parent_child"])
def test_demo_cells_never_leak_or_go_stale(tmp_path, chunker):
    cell = run(tmp_path, f"chunker={chunker}", dataset=None)
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["security"] == {"unauthorized_retrievals": 0, "unauthorized_from_retriever": 0,
                                   "unauthorized_from_reranker": 0, "stale_retrievals": 0}
    assert metrics["counts"]["evaluated"] >= 45
    assert metrics["retrieval"]["hit@10"] > 0.6


def test_including_archived_versions_counts_stale_retrievals(tmp_path):
    cell = run(tmp_path, "pipeline.include_archived=true", dataset=None)
    assert json.loads((cell / "metrics.json").read_text())["security"]["stale_retrievals"] > 0


@pytest.mark.parametrize("relevance", ["section", "facts"])
def test_other_relevance_modes(tmp_path, relevance):
    cell = run(tmp_path, f"eval.relevance={relevance}", dataset=None)
    assert json.loads((cell / "metrics.json").read_text())["counts"]["evaluated"] > 30


@pytest.mark.parametrize("chunker", ["fixed", "section", "parent_child"])
def test_cell_metrics_equal_trec_eval_on_the_cell_files(tmp_path, chunker):
    """The cell's own run.trec + qrels.trec, scored by the trec_eval-exact engine and by
    pytrec_eval, give the numbers metrics.json reports."""
    import pytrec_eval

    from rag_bench.metrics.trec import evaluate, read_qrels, read_run

    cell = run(tmp_path, f"chunker={chunker}", dataset=None)
    m = json.loads((cell / "metrics.json").read_text())
    qrels, trec_run = read_qrels(cell / "qrels.trec"), read_run(cell / "run.trec")
    ks = [1, 3, 5, 10]
    measures = ["map", "recip_rank"] + [f"{p}.{','.join(map(str, ks))}" for p in ("P", "recall", "success",
                                                                                    "ndcg_cut")]
    _, overall = evaluate(qrels, trec_run, measures=measures)
    names = {"P": "precision", "recall": "recall", "success": "hit", "ndcg_cut": "ndcg"}
    for trec_name, ours in names.items():
        for k in ks:
            assert overall[f"{trec_name}_{k}"] == pytest.approx(m["retrieval"][f"{ours}@{k}"], abs=1e-9)
    assert overall["map"] == pytest.approx(m["retrieval"]["map"], abs=1e-9)
    assert overall["recip_rank"] == pytest.approx(m["retrieval"]["mrr"], abs=1e-9)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "ndcg_cut_10", "P_5"})
    per_q = evaluator.evaluate(trec_run)
    ref = {k: np.mean([v[k] for v in per_q.values()]) for k in ("map", "recip_rank", "ndcg_cut_10", "P_5")}
    assert ref["map"] == pytest.approx(m["retrieval"]["map"], abs=1e-9)
    assert ref["recip_rank"] == pytest.approx(m["retrieval"]["mrr"], abs=1e-9)
    assert ref["ndcg_cut_10"] == pytest.approx(m["retrieval"]["ndcg@10"], abs=1e-9)
    assert ref["P_5"] == pytest.approx(m["retrieval"]["precision@5"], abs=1e-9)


def test_generation_cell(tmp_path):
    """Default generator (extractive) on the demo set: answer columns, metrics with n and CIs,
    full failure attribution, failures.csv and the hit-vs-correct table."""
    cell = run(tmp_path, dataset=None)
    m = json.loads((cell / "metrics.json").read_text())
    for section, key in (("generation", "correct"), ("generation", "faithfulness"), ("citation", "citation_precision"),
                         ("citation", "citation_recall"), ("abstention", "correct_refusal_rate"),
                         ("abstention", "false_refusal_rate"), ("abstention", "unsupported_answer_rate")):
        assert 0 <= m[section][key] <= 1 and f"{section}/{key}" in m["ci"]
    # answerable questions expecting a clarifying question are not scored by generation/correct (issue 42)
    direct = m["counts"]["answerable"] - m["counts"]["expects_clarify"]
    assert m["counts"]["expects_clarify"] == 4 and m["n"]["clarify/correct_clarification"] == 4
    assert m["n"]["generation/correct"] == direct
    assert m["n"]["abstention/correct_refusal_rate"] == m["counts"]["unanswerable"]
    assert sum(m["failures"].values()) == m["counts"]["questions"]
    assert m["counts"]["endpoint_calls"] == 0  # extractive calls no model
    cond = m["conditional"]
    assert cond["hit"]["n"] + cond["miss"]["n"] == direct
    assert cond["hit"]["rate"] >= (cond["miss"]["rate"] or 0)
    assert 0.5 <= m["abstention"]["top1_auroc"] <= 1
    records = pd.read_parquet(cell / "records.parquet")
    assert {"answer", "citations", "context_ids", "refused", "correct", "citation_precision"} <= set(records.columns)
    assert set(records["failure"]) <= {"chunking", "retrieval_miss", "ranking", "partial_evidence", "context",
                                       "false_refusal", "generation", "citation", "correct", "correct_refusal",
                                       "hallucinated_answer"}
    failures = pd.read_csv(cell / "failures.csv")
    assert len(failures) == len(records) and {"qid", "failure", "answer"} <= set(failures.columns)
    # the prompt-injection review never changes the output format: every answer parsed
    assert records["parse_error"].isna().all()


def test_retrieval_only_cell_has_no_generation_sections(tmp_path):
    m = json.loads((run(tmp_path, "generator=none") / "metrics.json").read_text())
    assert "generation" not in m and "conditional" not in m and "top1_auroc" in m["abstention"]


def test_stored_config_writes_the_absolute_path_and_leaves_the_config_as_it_was():
    from omegaconf import OmegaConf

    from rag_bench.runner.main import stored_config

    cfg = OmegaConf.create({"dataset": {"path": "${oc.env:NO_SUCH_VAR_HERE,rel/set}", "split": "test"},
                            "output": {"note": "from ${dataset.path}"}})
    OmegaConf.set_struct(cfg, True)
    OmegaConf.set_readonly(cfg, True)
    plain = stored_config(cfg, "/abs/set")
    assert plain["dataset"]["path"] == "/abs/set" and plain["output"]["note"] == "from /abs/set"
    # Put back as it was: still an interpolation, still read-only.
    assert OmegaConf.to_yaml(cfg, resolve=False).splitlines()[1].strip() == "path: ${oc.env:NO_SUCH_VAR_HERE,rel/set}"
    assert cfg.dataset.path == "rel/set" and OmegaConf.is_readonly(cfg)
    assert stored_config(OmegaConf.create({"dataset": {"path": "/abs/set"}}), "/abs/set") == {
        "dataset": {"path": "/abs/set"}}


def test_a_single_cell_runs_with_the_collector_tuned_and_puts_it_back(tmp_path, monkeypatch):
    """A single dense squad2-normans cell (``rag-bench run retriever=dense``, outside a sweep's batch)
    ran 6 full collections (~0.96 s of its ~11 s of CPU) over torch's objects; tuned (rag_bench.heap),
    none. The cell runs with the collector tuned and puts it back as it was."""
    import gc

    from rag_bench import heap
    from rag_bench.evaluation import evaluation as evaluation_module

    seen = []
    evaluate = evaluation_module.Evaluation.evaluate

    def watched(self, *args, **kwargs):
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(evaluation_module.Evaluation, "evaluate", watched)
    before = gc.get_threshold(), gc.get_freeze_count()
    assert is_done(run(tmp_path, "chunker=section", "generator=none"))
    assert len(seen) == 1 and seen[0][0] > before[1] and seen[0][1] >= heap.YOUNG_THRESHOLD
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
