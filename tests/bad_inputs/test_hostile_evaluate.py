"""Hostile outputs for `rag-bench evaluate` and the MLflow runs a command leaves, through the real
command line (in process): a passage is placed where its text really is and counted as
unauthorized when the asker may not read it, whatever document it claims; citations are
positions from 1, never Python indexes; ``--trec`` reads a run as ``score-run`` and trec_eval
do; and no command leaves an MLflow run RUNNING, or an empty one behind."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.adapters.external import WITHHELD
from rag_bench.cli import main as cli
from tests.conftest import TINY

SHARED = "Refunds are paid within 14 days of the request."
SECRET = "Staff may approve refunds up to 500 euros without review."
CUSTOMER = {"tenant": "acme", "groups": ["customers"]}
MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "RAG_BENCH_PARENT_RUN_ID", "RAG_BENCH_SWEEP_ID")


def _access_dataset(tmp: Path) -> Path:
    """a-staff (staff only, first in the corpus) holds SHARED and SECRET exactly; m-news (public)
    holds neither; z-faq (public) holds SHARED with a line break inside (a loose match only)."""
    data = tmp / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "a-staff.md").write_text(f"# Staff notes\n\n{SHARED}\n\n{SECRET}\n")
    (data / "docs" / "m-news.md").write_text("# News\n\nOur office moves to Leeds in May.\n")
    (data / "docs" / "z-faq.md").write_text(f"# FAQ\n\n{SHARED.replace(' within', chr(10) + 'within')}\n")
    (data / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
        {"doc_id": "a-staff", "title": "Staff notes", "tenant": "acme", "acl": ["staff"]},
        {"doc_id": "m-news", "title": "News", "tenant": "acme", "acl": []},
        {"doc_id": "z-faq", "title": "FAQ", "tenant": "acme", "acl": []}]))
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q1", "question": "When are refunds paid?", "answerable": True, "asker": CUSTOMER,
         "evidence": [{"doc_id": "z-faq", "quote": "within 14 days of the request."}], "facts": ["14 days"]},
        {"id": "q2", "question": "How much may staff refund?", "answerable": False, "asker": CUSTOMER}]))
    (data / "dataset.yaml").write_text("name: access\nlicense: CC-BY-4.0 (written by the rag_bench authors)\n")
    return data


def _evaluate(tmp: Path, lines: list[dict], dataset: Path, *extra: str) -> int:
    outputs = tmp / "outputs.jsonl"
    outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return cli(["evaluate", str(outputs), "--dataset", str(dataset), "tracking=none", f"output.root={tmp / 'out'}",
                "experiment.name=x", *extra])


def _cell(tmp: Path) -> Path:
    (cell,) = [p.parent for p in (tmp / "out" / "x").glob("*/DONE")]
    return cell


def _records(tmp: Path) -> pd.DataFrame:
    return pd.read_parquet(_cell(tmp) / "records.parquet").set_index("qid")


def _nothing_left(out: Path) -> None:
    assert not list(out.rglob("DONE")), "a cell was marked done"
    assert not [p for p in out.glob("*/*") if not p.name.startswith(".") and p.is_dir()], "a cell folder was left"


# (passage the system returned for a customer, document it must be placed in, unauthorized, not in claimed doc);
# a passage placed in a document the asker may not read is counted and withheld: records show WITHHELD.
ACCESS_CASES = [
    # The leak: staff text under a public doc id was "unlocated", never unauthorized.
    ("staff-text-claims-public-doc", {"doc_id": "z-faq", "text": SECRET}, WITHHELD, 1, 1),
    ("staff-text-no-doc", {"text": SECRET}, WITHHELD, 1, 0),
    # An exact match in a forbidden document beat a loose one in a readable document.
    ("loose-readable-beats-exact-forbidden", {"text": SHARED}, "z-faq", 0, 0),
    ("claimed-doc-loose-beats-exact-elsewhere", {"doc_id": "z-faq", "text": SHARED}, "z-faq", 0, 0),
    ("wrong-public-doc-then-readable", {"doc_id": "m-news", "text": SHARED}, "z-faq", 0, 1),
    # The system says it read the staff document, and the text is there: it did.
    ("claimed-forbidden-doc-holds-it", {"doc_id": "a-staff", "text": SHARED}, WITHHELD, 1, 0),
]


@pytest.mark.parametrize(("case", "passage", "doc", "unauthorized", "elsewhere"), ACCESS_CASES,
                         ids=[c[0] for c in ACCESS_CASES])
def test_a_passage_is_placed_where_its_text_is_and_access_is_counted(tmp_path, capsys, case, passage, doc,
                                                                      unauthorized, elsewhere):
    data = _access_dataset(tmp_path)
    assert _evaluate(tmp_path, [{"id": "q1", "retrieved": [passage]}, {"id": "q2", "retrieved": [passage]}],
                     data) == 0, capsys.readouterr().err
    records = _records(tmp_path)
    for qid in ("q1", "q2"):
        assert [s["doc_id"] for s in records.loc[qid, "chunk_spans"]] == [doc]
        assert records.loc[qid, "unauthorized_retrievals"] == unauthorized
    metrics = json.loads((_cell(tmp_path) / "metrics.json").read_text())
    assert metrics["counts"]["unlocated_passages"] == 0
    assert metrics["counts"]["passages_not_in_claimed_doc"] == 2 * elsewhere
    assert (metrics["security"]["unauthorized_retrievals"] > 0) == bool(unauthorized)
    if doc == "z-faq":  # the readable copy holds the evidence: no false miss
        assert records.loc["q1", "hit@1"] == 1.0


def test_a_text_given_beside_a_span_must_be_that_span(tmp_path, capsys):
    """Staff text shown beside a public span: which one did the system use? Refused, not guessed."""
    data = _access_dataset(tmp_path)
    passage = {"doc_id": "z-faq", "start": 0, "end": 5, "text": SECRET}
    assert _evaluate(tmp_path, [{"id": "q1", "retrieved": [passage]}, {"id": "q2", "retrieved": []}], data) == 2
    err = capsys.readouterr().err
    assert "outputs.jsonl:1" in err and "[retrieved[0].text]" in err and "is not the text of document 'z-faq'" in err
    assert "fix:" in err
    _nothing_left(tmp_path / "out")
    # The span's own text, whitespace aside, is accepted.
    same = {"doc_id": "z-faq", "start": 0, "end": 5, "text": " # FAQ "}
    assert _evaluate(tmp_path, [{"id": "q1", "retrieved": [same]}, {"id": "q2", "retrieved": []}], data) == 0


def _answer_lines(citations: list, passages: int) -> list[dict]:
    """q1 answered from its evidence (passage 1) and, when ``passages`` is 2, the document's
    heading; its citations as given. Every other question refused."""
    from rag_bench.data.loader import load_dataset

    ds = load_dataset(TINY)
    q1 = ds.questions[0]
    ev = q1.evidence[0]
    retrieved = [{"doc_id": ev.doc_id, "start": ev.start, "end": ev.end}, {"doc_id": ev.doc_id, "start": 0, "end": 9}]
    return [{"id": q.qid, "retrieved": retrieved[:passages], "answer": "Within 14 days of a renewal.",
             "citations": citations} if q is q1 else {"id": q.qid, "retrieved": [], "refused": True}
            for q in ds.questions]


# (citations as the system gave them, passages retrieved, valid context citations, invalid citations)
CITATION_CASES = [
    ("zero", [0], 1, (), 1),  # was passage 1 (Python index 0 - 1 + n): citation precision 1.0
    ("minus-one-of-two", [-1], 2, (), 1),  # was the last passage
    ("minus-two-of-two", [-2], 2, (), 1),
    ("true", [True], 1, (), 1),
    ("float-one", [1.0], 1, (), 1),
    ("float-half", [1.5], 1, (), 1),
    ("past-the-list", [3], 2, (), 1),
    ("unknown-doc-id", ["ghost"], 1, (), 1),
    ("each-distinct-invalid-counts", [0, -1, True, 1.0, 7, 0], 2, (), 5),
    ("valid-beside-invalid", [1, 0], 1, (1,), 1),
    ("doc-id", ["billing"], 2, (1, 2), 0),
]


@pytest.mark.parametrize(("case", "citations", "passages", "valid", "invalid"), CITATION_CASES,
                         ids=[c[0] for c in CITATION_CASES])
def test_citations_are_positions_from_one(tmp_path, capsys, case, citations, passages, valid, invalid):
    assert _evaluate(tmp_path, _answer_lines(citations, passages), TINY) == 0, capsys.readouterr().err
    row = _records(tmp_path).loc["q1"]
    assert tuple(row["citations"]) == valid and row["invalid_citations"] == invalid
    if not valid:
        assert math.isnan(row["citation_precision"])


@pytest.mark.parametrize("citations", [[None], [[1]], [{"n": 1}], "1"])
def test_citations_that_are_no_numbers_or_ids_are_refused(tmp_path, capsys, citations):
    assert _evaluate(tmp_path, _answer_lines(citations, 1), TINY) == 2
    err = capsys.readouterr().err
    assert "outputs.jsonl:1" in err and "[citations]" in err and "fix:" in err
    _nothing_left(tmp_path / "out")


def _trec(tmp: Path, text: str, *extra: str) -> int:
    run = tmp / "run.trec"
    run.write_text(text)
    return cli(["evaluate", "--trec", str(run), "--dataset", str(TINY), "tracking=none",
                f"output.root={tmp / 'out'}", "experiment.name=x", *extra])


def _score_run(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    qrels = tmp / "qrels"
    qrels.write_text("q1 0 billing 1\n")
    capsys.readouterr()
    assert cli(["score-run", str(qrels), str(tmp / "run.trec"), "-m", "success.1", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["all"]


TREC_CASES = [
    # C's atof reads "1_0" as 1 (score-run too); Python's float() said 10 and ranked billing-old first.
    ("underscore-score", "q1 Q0 billing-old 1 1_0 t\nq1 Q0 billing 2 2 t\n"),
    # Ties: docno descending (trec_eval), not file order.
    ("tied-scores", "q1 Q0 billing 1 1.0 t\nq1 Q0 billing-old 2 1.0 t\n"),
    ("tied-in-c-float", "q1 Q0 billing 1 1.00000001 t\nq1 Q0 billing-old 2 1.0 t\n"),
    # Text after the tag and comment lines, as trec_eval reads them.
    ("extra-columns-and-comments", "# a comment\nq1 Q0 billing 1 3 t trailing words\nq1 Q0 billing-old 2 2 t\n"),
]


@pytest.mark.parametrize(("case", "run"), TREC_CASES, ids=[c[0] for c in TREC_CASES])
def test_a_trec_run_is_read_and_ranked_as_score_run_reads_it(tmp_path, capsys, case, run):
    assert _trec(tmp_path, run) == 0, capsys.readouterr().err
    ours = _records(tmp_path).loc["q1", "hit@1"]
    theirs = _score_run(tmp_path, capsys)["success_1"]
    assert ours == theirs
    assert ours == (1.0 if case in ("underscore-score", "extra-columns-and-comments") else 0.0)


def test_a_trec_score_beyond_a_c_float_is_refused(tmp_path, capsys):
    assert _trec(tmp_path, "q1 Q0 billing 1 1e39 t\nq1 Q0 billing-old 2 1e38 t\nq1 Q0 security 3 x t\n") == 2
    err = capsys.readouterr().err
    assert "run.trec:1" in err and "[score]" in err and "C float" in err and "run.trec:3" in err
    assert "run.trec:2" not in err
    _nothing_left(tmp_path / "out")


# ---------------------------------------------------------------- MLflow runs left behind


def _runs(out: Path) -> list:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    return [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id],
                                                                                run_view_type=ViewType.ALL)]


@pytest.fixture
def local_mlflow(monkeypatch):
    """MLflow's default store (a SQLite file under output.root), no sweep of an earlier test."""
    for name in MLFLOW_ENV:
        monkeypatch.delenv(name, raising=False)


def test_evaluate_closes_its_parent_run(tmp_path, capsys, local_mlflow):
    """The parent run of `evaluate` stayed RUNNING forever; now FINISHED, also when a second
    evaluation reopens it."""
    for answer in ("Within 14 days of a renewal.", "Within 14 days."):
        lines = _answer_lines([1], 1)
        lines[0]["answer"] = answer
        outputs = tmp_path / "outputs.jsonl"
        outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
        assert cli(["evaluate", str(outputs), "--dataset", str(TINY), f"output.root={tmp_path / 'out'}",
                    "experiment.name=x"]) == 0, capsys.readouterr().err
        runs = _runs(tmp_path / "out")
        assert {r.info.status for r in runs} == {"FINISHED"}
        (parent,) = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
        cells = [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]
        assert cells and all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in cells)


def test_evaluate_refused_leaves_no_run(tmp_path, capsys, local_mlflow):
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(json.dumps({"id": "q1", "retrieved": [{"doc_id": "billing", "start": 0, "end": 10 ** 9}]}))
    assert cli(["evaluate", str(outputs), "--dataset", str(TINY), f"output.root={tmp_path / 'out'}"]) == 2
    assert "start/end" in capsys.readouterr().err
    _nothing_left(tmp_path / "out")
    assert not (tmp_path / "out" / "mlflow.db").exists() or not _runs(tmp_path / "out")


BOOM = '''
class Boom:
    """A retriever plugin with a bug: search raises."""

    def __init__(self, depth: int = 3) -> None:
        self.depth = depth

    def fit(self, chunks):
        self.n = len(chunks)

    def search(self, questions, depth, access):
        raise RuntimeError("plugin bug")
'''


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "run-m"])
def test_a_plugin_that_raises_leaves_no_empty_parent_run(tmp_path, capsys, monkeypatch, local_mlflow, multirun):
    """The sweep's parent run is opened before the first cell; a plugin raising in that cell left
    it FINISHED and empty (single run: Hydra calls on_run_end before raising the job's error).
    The experiment the run created goes with it (issue 41: it was listed first, empty, in MLflow)."""
    (tmp_path / "boomplug.py").write_text(BOOM)
    conf = tmp_path / "conf" / "retriever"
    conf.mkdir(parents=True)
    (conf / "boom.yaml").write_text("name: boom\n_target_: boomplug.Boom\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    args = ["run", *(["-m"] if multirun else []), "retriever=boom", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
            f"dataset.path={TINY}", f"output.root={out}", "generator=none", "experiment.name=p"]
    code = cli(args)  # a plugin's own error: exit 2 naming it and where it failed, no traceback
    err = capsys.readouterr().err
    assert code == 2 and "boomplug.Boom raised RuntimeError: plugin bug while searching question" in err, err[-2000:]
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    assert (out / "mlflow.db").is_file(), "no MLflow store was opened: the test no longer covers the case"
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    assert client.get_experiment_by_name("p") is None  # erased with its empty parent run, not only deleted
    assert not _runs(out) and not client.search_runs(
        [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)], run_view_type=ViewType.ALL)
    _nothing_left(out)
