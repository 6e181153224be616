"""`rag-bench evaluate`: an external system's outputs scored as a normal cell.

The strongest check that the two paths agree: a cell of our own, exported as OUTPUTS and read
back, gives the same metrics.json (timings, cache counts and the corpus's chunk counts aside).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.adapters.external import WITHHELD
from rag_bench.cli import main as cli
from rag_bench.runner.config import DEMO_DATASET
from tests.conftest import REPO, TINY
from tests.runner.test_run_cell import run

UNKNOWABLE_COUNTS = {"chunks", "searchable_chunks", "unlocated_passages", "passages_located_by_text", "duplicate_passages",
                     "passages_not_in_claimed_doc"}


def _metrics(cell: Path) -> dict:
    return json.loads((cell / "metrics.json").read_text())


def _comparable(m: dict) -> dict:
    out = {k: v for k, v in m.items() if k not in ("latency", "cost", "measures")}
    out["counts"] = {k: v for k, v in m["counts"].items() if k not in UNKNOWABLE_COUNTS}
    # The block describes the same measures alike (the latency and count keys differ, as above).
    out["measures"] = {k: v for k, v in m["measures"].items() if k.partition("/")[0] not in ("latency", "cost", "counts")}
    # What the generator declared of itself: ours is the extractive stand-in (its refusals said once
    # per sweep); a replayed app declares nothing, so its refusal rate is warned about per cell.
    out["methods"] = {k: v for k, v in m.get("methods", {}).items() if k not in ("generator_stand_in", "refusal_setting")}
    out.pop("warnings", None)
    out.pop("findings", None)  # likewise: the stand-in cannot ask for clarification, a replayed app declares nothing
    return out


def _only_cell(folder: Path) -> Path:
    (cell,) = [p.parent for p in folder.glob("*/DONE")]
    return cell


def test_our_own_cell_read_back_gives_the_same_metrics(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    ours = run(tmp_path, "chunker=section", "generator=extractive", "experiment.name=ours", dataset=None)
    outputs = tmp_path / "outputs.jsonl"
    assert cli(["export", str(ours), "--out", str(outputs)]) == 0
    # Through MLflow (the default tracker, a SQLite store under output.root) like any cell.
    assert cli(["evaluate", str(outputs), "--dataset", str(DEMO_DATASET), "--name", "replayed",
                f"output.root={tmp_path}", "experiment.name=theirs"]) == 0
    theirs = _only_cell(tmp_path / "theirs")
    assert _comparable(_metrics(theirs)) == _comparable(_metrics(ours))
    assert _metrics(ours)["methods"]["generator_stand_in"] is True and "generator_stand_in" not in _metrics(theirs)["methods"]
    assert any("refused" in w and "answerable" in w for w in _metrics(theirs)["warnings"])
    done = json.loads((theirs / "DONE").read_text())
    assert done["mlflow_run_id"] and done["tracking"] == "mlflow"
    assert {p.name for p in theirs.iterdir()} >= {"metrics.json", "run.trec", "qrels.trec", "failures.csv", "DONE",
                                                  "config.yaml", "records.parquet"}
    capsys.readouterr()
    assert cli(["leaderboard", str(tmp_path / "theirs")]) == 0 and "replayed" in capsys.readouterr().out
    policy = tmp_path / "policy.yaml"
    policy.write_text("thresholds:\n  retrieval/hit@5: {min: 0.8}\n  generation/correct: {min: 0.25}\n")
    assert cli(["gate", str(theirs), "--policy", str(policy), "--baseline", str(ours)]) == 0
    assert cli(["compare", str(ours), str(theirs)]) == 0


def test_text_only_passages_are_located_in_the_corpus(tmp_path, capsys):
    ours = run(tmp_path, "chunker=section", "generator=none", "experiment.name=ours", dataset=TINY)
    records = pd.read_parquet(ours / "records.parquet")
    from rag_bench.data.loader import load_dataset

    docs = load_dataset(TINY).documents
    lines = []
    for row in records.to_dict("records"):
        spans = list(row["chunk_spans"])
        passages = [{"text": docs[s["doc_id"]].text[s["start"]:s["end"]]} for s in spans[:3]]
        passages += [{"doc_id": s["doc_id"], "text": " ".join(docs[s["doc_id"]].text[s["start"]:s["end"]].split())}
                     for s in spans[3:5]]  # whitespace changed: located loosely
        passages.append({"text": "This sentence is in no document of the corpus."})
        lines.append(json.dumps({"id": row["qid"], "retrieved": passages}))
    outputs = tmp_path / "text.jsonl"
    outputs.write_text("\n".join(lines) + "\n")
    assert cli(["evaluate", str(outputs), "--dataset", str(TINY), "tracking=none", f"output.root={tmp_path}",
                "experiment.name=text"]) == 0
    metrics = _metrics(_only_cell(tmp_path / "text"))
    assert metrics["counts"]["unlocated_passages"] == len(lines)
    assert metrics["counts"]["passages_located_by_text"] == sum(min(5, len(r)) for r in records["chunk_spans"])
    assert "generation" not in metrics  # no answers: a retrieval-only cell
    reference = _metrics(ours)
    for key in ("hit@1", "hit@3", "mrr@3", "ndcg@3"):
        assert metrics["retrieval"][key] == pytest.approx(reference["retrieval"][key])


def test_bad_outputs_are_refused_naming_line_and_field(tmp_path, capsys):
    outputs = tmp_path / "bad.jsonl"
    outputs.write_text('{"id": "q-nope", "retrieved": []}\n'
                       '{"id": "q1", "retrieved": [{"doc_id": "returns", "start": 5, "end": 99999999}]}\n'
                       '{"id": "q2", "retrieved": [{"score": 1}], "colour": "red"}\n')
    assert cli(["evaluate", str(outputs), "--dataset", str(TINY), "tracking=none",
                f"output.root={tmp_path / 'out'}"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "unknown question 'q-nope'" in err
    assert "bad.jsonl:3" in err and "[colour]" in err and "needs doc_id with start/end, or text" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("DONE"))


def test_a_trec_run_of_documents_is_scored_at_document_level(tmp_path):
    graded = REPO / "tests" / "fixtures" / "beir_graded"
    ours = run(tmp_path, "chunker=fixed", "chunker.size=80", "chunker.overlap=0", "generator=none", "eval.unit=document",
               "experiment.name=ours", dataset=graded)
    assert cli(["evaluate", "--trec", str(ours / "run.document.trec"), "--dataset", str(graded), "eval.unit=document",
                "tracking=none", f"output.root={tmp_path}", "experiment.name=trec"]) == 0
    theirs = _metrics(_only_cell(tmp_path / "trec"))
    assert theirs["document"] == pytest.approx(_metrics(ours)["document"])


def test_a_ragas_evaluation_dataset_round_trip_keeps_every_field(tmp_path, capsys):
    """export (ragas) → import (evaluate --ragas) → export again: the same samples; ragas itself
    reads both files."""
    ours = run(tmp_path, "chunker=section", "generator=extractive", "experiment.name=ours", dataset=None)
    first = tmp_path / "ragas.jsonl"
    assert cli(["export", str(ours), "--format", "ragas", "--out", str(first)]) == 0
    samples = [json.loads(line) for line in first.read_text().splitlines()]
    assert set(samples[0]) == {"user_input", "retrieved_contexts", "response", "reference"}
    assert all(s["retrieved_contexts"] for s in samples)
    assert cli(["evaluate", "--ragas", str(first), "--dataset", str(DEMO_DATASET), "--name", "from_ragas",
                "tracking=none", f"output.root={tmp_path}", "experiment.name=ragas"]) == 0
    theirs = _only_cell(tmp_path / "ragas")
    again = tmp_path / "again.jsonl"
    assert cli(["export", str(theirs), "--format", "ragas", "--out", str(again)]) == 0
    assert [json.loads(line) for line in again.read_text().splitlines()] == samples
    metrics, reference = _metrics(theirs), _metrics(ours)
    assert metrics["counts"]["unlocated_passages"] == 0
    assert metrics["generation"]["correct"] == reference["generation"]["correct"]  # same answers, same references
    ragas = pytest.importorskip("ragas", reason="the judge extra installs ragas")
    for path in (first, again):
        assert len(ragas.EvaluationDataset.from_jsonl(str(path)).samples) == len(samples)


def _write(tmp_path: Path, lines: list[dict]) -> Path:
    out = tmp_path / "o.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def test_a_question_the_system_missed_scores_zero_and_repeats_count_once(tmp_path):
    """Review findings: a question whose evidence no returned passage covers was left out of the
    ranking measures (n_relevant 0), and a passage returned twice counted twice (recall 2.0)."""
    from rag_bench.data.loader import load_dataset

    ds = load_dataset(TINY)
    q_hit, q_miss = [q for q in ds.questions if q.answerable][:2]
    ev = q_hit.evidence[0]
    other = next(d for d in ds.documents if d != q_miss.evidence[0].doc_id and not ds.documents[d].archived)
    lines = []
    for q in ds.questions:
        if q is q_hit:
            passages = [{"doc_id": ev.doc_id, "start": ev.start, "end": ev.end}] * 2
        elif q is q_miss:
            passages = [{"doc_id": other, "start": 0, "end": 10}]
        else:
            passages = []
        lines.append({"id": q.qid, "retrieved": passages})
    assert cli(["evaluate", str(_write(tmp_path, lines)), "--dataset", str(TINY), "tracking=none",
                f"output.root={tmp_path}", "experiment.name=x"]) == 0
    cell = _only_cell(tmp_path / "x")
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc[q_hit.qid, "recall@3"] == 1.0 and records.loc[q_hit.qid, "ndcg@3"] <= 1.0
    assert records.loc[q_miss.qid, "hit@3"] == 0.0 and records.loc[q_miss.qid, "failure"] == "retrieval_miss"
    assert _metrics(cell)["counts"]["duplicate_passages"] == 1


def test_citations_count_the_retrieved_list_and_a_trec_run_may_not_repeat_a_docno(tmp_path, capsys):
    from rag_bench.data.loader import load_dataset

    ds = load_dataset(TINY)
    q = next(q for q in ds.questions if q.answerable)
    ev = q.evidence[0]
    doc = ds.documents[ev.doc_id]
    inner = (ev.start, min(ev.end, ev.start + 10))  # inside passage 1: dropped from the rebuilt context
    lines = [{"id": x.qid, "retrieved": [{"doc_id": ev.doc_id, "start": ev.start, "end": ev.end},
                                         {"doc_id": ev.doc_id, "start": inner[0], "end": inner[1]},
                                         {"doc_id": ev.doc_id, "start": 0, "end": min(len(doc.text), 5)}]
              if x is q else [], "answer": "x", "citations": [1] if x is q else []} for x in ds.questions]
    assert cli(["evaluate", str(_write(tmp_path, lines)), "--dataset", str(TINY), "tracking=none",
                f"output.root={tmp_path}", "experiment.name=c"]) == 0
    row = pd.read_parquet(_only_cell(tmp_path / "c") / "records.parquet").set_index("qid").loc[q.qid]
    assert list(row["citations"]) == [1] and row["invalid_citations"] == 0
    run_file = tmp_path / "run.trec"
    run_file.write_text(f"{q.qid} Q0 {ev.doc_id} 1 2.0 t\n{q.qid} Q0 {ev.doc_id} 2 1.0 t\n{q.qid} Q0 x 3 nan t\n")
    assert cli(["evaluate", "--trec", str(run_file), "--dataset", str(TINY), "tracking=none",
                f"output.root={tmp_path / 'bad'}"]) == 2
    err = capsys.readouterr().err
    assert "run.trec:2" in err and "appears twice" in err and "run.trec:3" in err and "is not a number (NaN" in err


@pytest.mark.parametrize("source", ["/dev/zero", "missing.jsonl"])
def test_an_outputs_path_that_is_no_file_is_refused_before_reading(tmp_path, capsys, source):
    path = source if source.startswith("/") else str(tmp_path / source)
    assert cli(["evaluate", path, "--dataset", str(TINY), "tracking=none", f"output.root={tmp_path}"]) == 2
    assert path in capsys.readouterr().err


def test_a_text_found_in_several_documents_is_placed_where_the_asker_may_read(tmp_path, capsys):
    """The same sentence in a staff-only document (first in the corpus, by id and by file) and a public FAQ: a
    customer's passage given by text alone is the FAQ's (not an unauthorized retrieval); a text
    only the staff document holds is still found there, and counted as one."""
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    shared = "Refunds are paid within 14 days of the request."
    secret = "Staff may approve refunds up to 500 euros without review."
    (data / "docs" / "a-staff.md").write_text(f"# Staff notes\n\n{shared}\n\n{secret}\n")
    (data / "docs" / "z-faq.md").write_text(f"# FAQ\n\n{shared}\n")
    (data / "docs.jsonl").write_text(
        json.dumps({"doc_id": "a-staff", "title": "Staff notes", "tenant": "acme", "acl": ["staff"]}) + "\n"
        + json.dumps({"doc_id": "z-faq", "title": "FAQ", "tenant": "acme", "acl": []}) + "\n")
    asker = {"tenant": "acme", "groups": ["customers"]}
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q1", "question": "When are refunds paid?", "answerable": True, "asker": asker,
         "evidence": [{"doc_id": "z-faq", "quote": shared}], "facts": ["14 days"], "answers": ["within 14 days"]},
        {"id": "q2", "question": "How much may staff refund?", "answerable": False, "asker": asker}]))
    (data / "dataset.yaml").write_text("name: dup\nlicense: CC-BY-4.0 (written by the rag_bench authors)\n")
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(json.dumps({"id": "q1", "retrieved": [{"text": shared}]}) + "\n"
                       + json.dumps({"id": "q2", "retrieved": [{"text": secret}]}) + "\n")
    assert cli(["evaluate", str(outputs), "--dataset", str(data), "tracking=none", f"output.root={tmp_path}",
                "experiment.name=dup"]) == 0, capsys.readouterr().err
    cell = _only_cell(tmp_path / "dup")
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert [s["doc_id"] for s in records.loc["q1", "chunk_spans"]] == ["z-faq"]
    assert records.loc["q1", "unauthorized_retrievals"] == 0 and records.loc["q1", "hit@1"] == 1.0
    assert [s["doc_id"] for s in records.loc["q2", "chunk_spans"]] == [WITHHELD]  # counted, its text kept out
    assert records.loc["q2", "unauthorized_retrievals"] == 1


def test_evaluate_says_where_it_wrote(tmp_path, monkeypatch, capsys):
    """The cell folder and the MLflow experiment (and how to open it), not a silent `default`."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outputs = REPO / "examples" / "app_outputs" / "kettleby_app.jsonl"
    assert cli(["evaluate", str(outputs), "--dataset", str(DEMO_DATASET), "--name", "app",
                f"output.root={tmp_path}"]) == 0
    out = capsys.readouterr().out
    cell = _only_cell(tmp_path / "default")
    run_id = json.loads((cell / "DONE").read_text())["mlflow_run_id"]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert f"wrote {cell}\n" in out, out
    assert f"MLflow: experiment 'default', run {run_id} at {uri} -- open: mlflow ui --backend-store-uri {uri}" in out
    assert "experiment 'default' is the default: experiment.name=NAME" in out, out
    assert cli(["evaluate", str(outputs), "--dataset", str(DEMO_DATASET), "--name", "app", "tracking=none",
                f"output.root={tmp_path}", "experiment.name=apps"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {_only_cell(tmp_path / 'apps')}\n" in out and "MLflow: not logged (tracking=none)" in out, out
    assert "is the default" not in out
