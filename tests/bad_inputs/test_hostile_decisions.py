"""Fourth round of hostile inputs, on what rag_bench decides and keeps, through the real command
line: an application's passages its asker may not read (counted, their text written nowhere), a
primary measure no cell has, tags whose MLflow names collide once sanitised, a measure named twice
in ``compare -m``, a failed call's trace span, and report URLs whose hash names ``Object``'s own
properties."""

from __future__ import annotations

import gzip
import json
import sqlite3
import zlib
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli

MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "RAG_BENCH_PARENT_RUN_ID", "RAG_BENCH_SWEEP_ID")


@pytest.fixture
def local_mlflow(monkeypatch):
    """MLflow's default store (a SQLite file under output.root), no sweep of an earlier test."""
    for name in MLFLOW_ENV:
        monkeypatch.delenv(name, raising=False)


# --- 3. an application's passages the asker may not read ---------------------------------------

CANARY = "Zq7CanaryStaffOnly"  # in the staff document only
PUBLIC = "Refunds are paid within 14 days of the request."
SECRET = f"Staff may approve refunds up to 500 euros without review, code {CANARY}."
CUSTOMER = {"tenant": "acme", "groups": ["customers"]}


def _staff_dataset(tmp: Path) -> Path:
    """a-staff (staff only) holds SECRET with the canary; z-faq (public) holds PUBLIC."""
    data = tmp / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "a-staff.md").write_text(f"# Staff notes\n\n{SECRET}\n")
    (data / "docs" / "z-faq.md").write_text(f"# FAQ\n\n{PUBLIC}\n")
    (data / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
        {"doc_id": "a-staff", "title": "Staff notes", "tenant": "acme", "acl": ["staff"]},
        {"doc_id": "z-faq", "title": "FAQ", "tenant": "acme", "acl": []}]))
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q1", "question": "When are refunds paid?", "answerable": True, "asker": CUSTOMER,
         "evidence": [{"doc_id": "z-faq", "quote": PUBLIC}], "facts": ["14 days"], "answers": ["within 14 days"]},
        {"id": "q2", "question": "How much may staff refund?", "answerable": False, "asker": CUSTOMER}]))
    (data / "dataset.yaml").write_text("name: staff\nlicense: CC-BY-4.0 (written by the rag_bench authors)\n")
    return data


def _holds(value: object, needle: str) -> bool:
    """``needle`` in a stored value: text, bytes (raw, gzip or zlib), or anything printed."""
    if isinstance(value, (bytes, memoryview)):
        raw = bytes(value)
        for unpack in (gzip.decompress, zlib.decompress):
            try:
                raw += unpack(raw)
            except Exception:  # noqa: BLE001 -- not that format
                pass
        return needle.encode() in raw
    return needle in str(value)


def _files_holding(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` (parquet and SQLite decoded, row by row) that holds ``needle``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            found += [f"{path}[{c}]" for c in frame.columns if frame[c].map(lambda v: _holds(v, needle)).any()]
        elif path.suffix == ".db":
            with sqlite3.connect(path) as db:
                tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for table in tables:
                    rows = db.execute(f'SELECT * FROM "{table}"').fetchall()
                    found += [f"{path}[{table}]"] if any(_holds(v, needle) for r in rows for v in r) else []
        elif _holds(path.read_bytes(), needle):
            found.append(str(path))
    return found


# How the application handed the staff passage to a customer: (outputs line passage, CLI flag)
STAFF_PASSAGES = [
    ("span", {"doc_id": "a-staff", "start": 15, "end": 15 + len(SECRET)}),
    ("text", {"text": SECRET}),
    ("text-claims-public-doc", {"doc_id": "z-faq", "text": SECRET}),
    ("ragas-context", None),
]


@pytest.mark.parametrize(("case", "passage"), STAFF_PASSAGES, ids=[c[0] for c in STAFF_PASSAGES])
def test_evaluate_counts_an_unreadable_passage_and_writes_its_text_nowhere(tmp_path, capsys, local_mlflow,
                                                                           case, passage):
    """The console said `SECURITY: 2 unauthorized retrieval(s)` while context_texts (records,
    MLflow), the traces, the label page and the report drill-down held the staff text."""
    data = _staff_dataset(tmp_path)
    public = {"doc_id": "z-faq", "start": 7, "end": 7 + len(PUBLIC)}
    out, outputs = tmp_path / "out", tmp_path / "outputs.jsonl"
    if passage is None:  # ragas: contexts by text, matched to the questions by their text
        samples = [{"user_input": "When are refunds paid?", "retrieved_contexts": [SECRET, PUBLIC],
                    "response": "Within 14 days [2]."},
                   {"user_input": "How much may staff refund?", "retrieved_contexts": [SECRET],
                    "response": "I cannot answer this from the provided sources."}]
        outputs.write_text("".join(json.dumps(s) + "\n" for s in samples))
        source = ["--ragas", str(outputs)]
    else:
        lines = [{"id": "q1", "retrieved": [passage, public], "answer": "Within 14 days [2].", "citations": [1, 2]},
                 {"id": "q2", "retrieved": [passage], "answer": "It depends.", "citations": [1]}]
        outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
        source = [str(outputs)]
    assert cli(["evaluate", *source, "--dataset", str(data), "--name", "app", f"output.root={out}",
                "experiment.name=x"]) == 0, capsys.readouterr().err
    said = capsys.readouterr()
    assert "SECURITY: 2 unauthorized retrieval(s)" in said.out + said.err
    (cell,) = [p.parent for p in (out / "x").glob("*/DONE")]
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["security"]["unauthorized_retrievals"] == 2
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc["q1", "hit@1"] == 0.0 and records.loc["q1", "hit@3"] == 1.0  # the public one keeps rank 2
    assert list(records["unauthorized_retrievals"]) == [1, 1]
    # The pages that show passages: the label page and the report's drill-down.
    assert cli(["label", str(cell), "--out", str(tmp_path / "label.html")]) == 0
    assert cli(["report", str(out / "x"), "--out", str(tmp_path / "reports")]) == 0
    assert PUBLIC in (tmp_path / "label.html").read_text()  # the page does show the readable passage
    leaks = [f for root in (out, tmp_path / "reports", tmp_path / "label.html")
             for f in ([str(root)] if root.is_file() and CANARY in root.read_text() else
                       _files_holding(root, CANARY) if root.is_dir() else [])]
    assert not leaks, leaks


# --- 8. a primary measure no cell has -----------------------------------------------------------

def _runs(out: Path) -> list:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    return [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id],
                                                                                run_view_type=ViewType.ALL)]


def _nothing_run(out: Path) -> None:
    """No cell folder, no DONE, and no MLflow run left active (a parent opened for nothing is deleted)."""
    assert not list(out.rglob("DONE")), "a cell was marked done"
    assert not [p for p in out.glob("*/*") if not p.name.startswith(".")], "a cell folder was left"
    if (out / "mlflow.db").exists():
        assert not [r.info for r in _runs(out) if r.info.lifecycle_stage == "active"], "an MLflow run was left"


# (case, experiment.primary, the grid's overrides, what the message says) -- known from the configs alone
UNREACHABLE = [
    ("answers-without-generator", "generation/correct", ["generator=none", "pipeline.k=3,5"], "generator=none"),
    ("citation-without-generator", "citation/citation_precision", ["generator=none"], "generator=none"),
    ("refusals-without-generator", "abstention/false_refusal_rate", ["generator=none"], "generator=none"),
    ("judge-without-judge", "judge/judge_faithfulness", ["generator=extractive", "judge=none"], "judge=none"),
    ("document-with-chunk-unit", "document/ndcg@10", ["generator=none", "eval.unit=chunk"], "eval.unit=chunk"),
    ("chunk-with-document-unit", "retrieval/hit@5", ["generator=none", "eval.unit=document"], "eval.unit=document"),
    ("cutoff-not-in-ks", "retrieval/hit@7", ["generator=none", "eval.ks=[1,5],[3,10]"], "cutoff 7"),
    ("evidence-cutoff", "evidence/complete@7", ["generator=none", "pipeline.k=3,5"], "cutoff 7"),
    ("ann-without-index", "ann/ann_recall@10", ["generator=none", "retriever=bm25"], "no ANN index"),
]


@pytest.mark.parametrize(("case", "primary", "grid", "needle"), UNREACHABLE, ids=[c[0] for c in UNREACHABLE])
def test_a_sweep_whose_cells_cannot_report_the_primary_measure_is_refused(tmp_path, capsys, local_mlflow, case,
                                                                          primary, grid, needle):
    """Accepted before: the leaderboard then ranked by nDCG@10, compare named a best cell with no
    value, the MLflow parent logged `best ... nan` and the report exited 2 after the sweep."""
    from tests.conftest import TINY

    out = tmp_path / "out"
    code = cli(["run", "-m", f"experiment.primary={primary}", *grid, f"dataset.path={TINY}", f"output.root={out}",
                "experiment.name=p"])
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert f"experiment.primary={primary}: no cell can report it" in err and needle in err and "-- fix:" in err, err
    _nothing_run(out)


def test_a_single_run_is_a_grid_of_one(tmp_path, capsys, local_mlflow):
    from tests.conftest import TINY

    out = tmp_path / "out"
    assert cli(["run", "experiment.primary=generation/correct", "generator=none", f"dataset.path={TINY}",
                f"output.root={out}", "experiment.name=p"]) == 2
    assert "no cell can report it (generator=none" in capsys.readouterr().err
    _nothing_run(out)


def test_a_grid_where_some_cell_reports_the_primary_measure_runs(tmp_path, capsys, local_mlflow):
    """generator=none,extractive: the extractive cells have correct (the others rank last); and a
    value of an axis in a later batch counts (hydra.sweeper.max_batch_size=1)."""
    from tests.conftest import TINY

    out = tmp_path / "out"
    assert cli(["run", "-m", "experiment.primary=generation/correct", "generator=none,extractive",
                "hydra.sweeper.max_batch_size=1", f"dataset.path={TINY}", f"output.root={out}",
                "experiment.name=p", "tracking=none"]) == 0, capsys.readouterr().err[-2000:]
    assert len(list((out / "p").glob("*/DONE"))) == 2
    assert "ranked by generation/correct" in capsys.readouterr().out


def _answerable_only(tmp: Path) -> Path:
    """The tiny dataset without its unanswerable questions: correct_refusal_rate has no value."""
    import shutil

    from tests.conftest import TINY

    data = tmp / "ds"
    shutil.copytree(TINY, data)
    qs = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line.strip()]
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs if q.get("answerable", True)))
    return data


def test_a_primary_measure_no_cell_has_is_an_error_everywhere(tmp_path, capsys, local_mlflow):
    """What the configs cannot tell (no unanswerable question, so no correct_refusal_rate): the
    sweep's end, leaderboard, compare and report each name the measure and the measures the cells
    have; the MLflow parent logs no best cell (it logged `best ... nan`); --sort-by still ranks."""
    out = tmp_path / "out"
    primary = "abstention/correct_refusal_rate"
    assert cli(["run", "-m", f"experiment.primary={primary}", "generator=extractive", "pipeline.k=3,5",
                f"dataset.path={_answerable_only(tmp_path)}", f"output.root={out}", "experiment.name=p"]) == 0
    said = capsys.readouterr()
    expected = f"experiment.primary: {primary!r} is a measure no cell has (the cells have: "
    assert expected in said.err and "did you mean abstention/false_refusal_rate" in said.err, said.err[-3000:]
    assert "ranked by" not in said.out
    (parent,) = [r for r in _runs(out) if r.data.tags.get("rag_bench.role") == "sweep"]
    assert parent.info.status == "FINISHED"
    assert not [k for k in parent.data.metrics if k.startswith("best") or k == "primary"], parent.data.metrics
    assert "no best cell" in parent.data.tags["mlflow.note.content"]
    for command in (["leaderboard", str(out / "p")], ["compare", str(out / "p"), "--baseline", "k=3"],
                    ["report", str(out / "p"), "--out", str(tmp_path / "reports"), "--no-mlflow"]):
        assert cli(command) == 2, command
        err = capsys.readouterr().err
        assert expected in err and "retrieval/ndcg@10" in err and "-- fix:" in err, (command, err)
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").rglob("index.html"))
    assert cli(["leaderboard", str(out / "p"), "--sort-by", "retrieval/ndcg@10"]) == 0
    assert "ranked by retrieval/ndcg@10" in capsys.readouterr().out.lower()


# --- 9. question tags whose MLflow metric names collide once sanitised --------------------------

# Question i (0-based) of the tiny dataset gets tag TAGS[i]: every one of them sanitises to `x_y`,
# or is `x_y` itself, or looks like a sanitised-and-suffixed name.
COLLIDING_TAGS = ["x y", "x_y", "x<y", "x.y", "x/y", "x_y-3a5c9e01"]


def test_tags_that_sanitise_alike_are_logged_under_distinct_mlflow_names(tmp_path, capsys, local_mlflow):
    """`x y`, `x_y` and `x<y` were all logged as `tag.x_y.*`: two of three values lost, no warning."""
    from mlflow.tracking import MlflowClient

    from rag_bench.evaluation.scorer import mlflow_name
    from rag_bench.tracking.base import tag_metric_name
    from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions

    data = copy_tiny(tmp_path)

    def retag(qs: list[dict]) -> None:
        for q, tag in zip(qs, COLLIDING_TAGS):
            q["tags"] = [tag]

    edit_questions(data, retag)
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={data}", f"output.root={out}", "generator=extractive",
                "experiment.name=t"]) == 0, capsys.readouterr().err[-2000:]
    (cell,) = [p.parent for p in (out / "t").glob("*/DONE")]
    by_tag = json.loads((cell / "metrics.json").read_text())["by_tag"]
    assert set(COLLIDING_TAGS) <= set(by_tag)
    run_id = json.loads((cell / "DONE").read_text())["mlflow_run_id"]
    logged = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}").get_run(run_id).data.metrics
    tag_keys = [k for k in logged if k.startswith("tag.")]
    # the tag's figures are logged (its ci, n_by, outcomes and failures tables stay in metrics.json)
    figures = {tag: {k: v for k, v in vs.items() if k != "n" and isinstance(v, (int, float)) and not isinstance(v, bool)}
               for tag, vs in by_tag.items()}
    assert len(tag_keys) == sum(len(vs) for vs in figures.values())
    names = {tag: tag_metric_name(tag) for tag in by_tag}
    assert len(set(names.values())) == len(names), names  # one name per tag
    assert names["x_y"] == "x_y" and names["x y"].startswith("x_y-")  # a clean tag keeps its name
    for tag, values in figures.items():
        for key, v in values.items():
            assert logged[mlflow_name(f"tag/{names[tag]}/{key}")] == pytest.approx(v), (tag, key)


# --- 10. a measure named twice in `compare -m` ----------------------------------------------------

@pytest.fixture(scope="module")
def two_cells(tmp_path_factory):
    """Two cells of the demo dataset that differ (section chunks vs 100-character windows)."""
    from tests.runner.test_run_cell import run

    root = tmp_path_factory.mktemp("compare")
    return (run(root, "experiment.name=c", dataset=None),
            run(root, "experiment.name=c", "chunker=fixed", "chunker.size=100", "chunker.overlap=0", dataset=None))


def _compare(capsys: pytest.CaptureFixture[str], cells: tuple[Path, Path], *metrics: str) -> list:
    capsys.readouterr()
    assert cli(["compare", str(cells[0]), str(cells[1]), "--resamples", "300", "--json",
                *(a for m in metrics for a in ("-m", m))]) == 0
    return [(r["key"], r["p"], r["p_holm"], r["significant"]) for r in json.loads(capsys.readouterr().out)["metrics"]]


# (case, the -m list, the same family named once)
REPEATED_MEASURES = [
    ("same-twice", ["generation/correct", "generation/correct"], ["generation/correct"]),
    ("bare-alias", ["generation/correct", "correct"], ["generation/correct"]),
    ("ranking-alias", ["retrieval/ndcg@10", "ndcg@10"], ["retrieval/ndcg@10"]),
    ("zero-padded-cutoff", ["retrieval/hit@5", "retrieval/hit@05"], ["retrieval/hit@5"]),
    ("alias-in-a-family", ["ndcg@10", "generation/correct", "retrieval/ndcg@10", "correct"],
     ["retrieval/ndcg@10", "generation/correct"]),
]


@pytest.mark.parametrize(("case", "named", "once"), REPEATED_MEASURES, ids=[c[0] for c in REPEATED_MEASURES])
def test_a_measure_named_twice_counts_once_in_holms_family(two_cells, capsys, case, named, once):
    """`-m X -m X` (or X and an alias of X) made Holm's family one larger: p_holm doubled, and a
    verdict flipped from significant to not."""
    assert _compare(capsys, two_cells, *named) == _compare(capsys, two_cells, *once)


# --- 13. a failed generation's trace span -------------------------------------------------------

class _Flaky:
    """An OpenAI-compatible endpoint: the Pro plan question gets HTTP 400, the access review
    question an output that is not the JSON answer contract, every other question an answer."""

    @staticmethod
    def handler():
        from tests.servers import JsonEndpoint

        class Flaky(JsonEndpoint):
            def answer(self, body):
                prompt = json.dumps(body["messages"])
                if "What does the Pro plan cost" in prompt:
                    return 400, b'{"error": "model overloaded"}'
                content = ("this is not JSON" if "How often is production access reviewed" in prompt
                           else json.dumps({"answer": "Within 14 days [1].", "sources": [1]}))
                return 200, json.dumps({"choices": [{"message": {"content": content}}],
                                        "usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode()

        return Flaky


def test_a_failed_generation_is_an_error_span_in_mlflow(tmp_path, capsys, local_mlflow):
    """Its span was OK (green in MLflow's trace view) although the call failed."""
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking.traces import QID_TAG
    from tests.conftest import TINY
    from tests.servers import serving

    out = tmp_path / "out"
    with serving(_Flaky.handler()) as server:
        code = cli(["run", f"dataset.path={TINY}", f"output.root={out}", "experiment.name=g", "generator=openai",
                    f"generator.base_url=http://127.0.0.1:{server.server_port}/v1", "generator.max_retries=0"])
    assert code == 0, capsys.readouterr().err[-3000:]
    (cell,) = [p.parent for p in (out / "g").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    failed = records.index[records["generation_error"].notna()]
    unparseable = records.index[records["parse_error"].notna()]
    assert len(failed) == 1 and len(unparseable) == 1, records[["generation_error", "parse_error"]]
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    run_id = json.loads((cell / "DONE").read_text())["mlflow_run_id"]
    exp = client.get_run(run_id).info.experiment_id
    traces = {t.info.tags[QID_TAG]: client.get_trace(t.info.trace_id)
              for t in client.search_traces(locations=[exp], run_id=run_id)}
    assert set(traces) == set(records.index)
    for qid, trace in traces.items():
        spans = {s.name: s for s in trace.data.spans}
        generate, root = spans["generate"], spans["question"]
        if qid in failed or qid in unparseable:
            reason = ("generation failed: HTTP 400" if qid in failed else "unparseable output: not JSON")
            assert generate.status.status_code == "ERROR" and generate.status.description.startswith(reason), qid
            assert root.status.status_code == "ERROR" and root.status.description.startswith("generate: " + reason)
            assert trace.info.state == "ERROR"
            assert "OPENAI_API_KEY" not in generate.status.description
        else:
            assert {s.status.status_code for s in spans.values()} == {"OK"}, qid
            assert trace.info.state == "OK"


# --- 29. a report URL whose hash names Object's own properties -----------------------------------

@pytest.fixture(scope="module")
def hash_report(tmp_path_factory):
    """The report of two answering cells of the tiny dataset whose first questions are `constructor`
    and `__proto__`."""
    import shutil

    from rag_bench.reporting.report import render_report
    from tests.conftest import TINY
    from tests.runner.test_run_cell import run

    root = tmp_path_factory.mktemp("hash_report")
    data = root / "ds"
    shutil.copytree(TINY, data)
    qs = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line.strip()]
    qs[0]["id"], qs[1]["id"] = "constructor", "__proto__"
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    for k in ("3", "5"):
        run(root, "experiment.name=h", "generator=extractive", f"pipeline.k={k}", dataset=data)
    return render_report(root / "h", out_root=root / "reports", log_to_mlflow=False)


HOSTILE_HASHES = [
    ("side-pick-constructor", "#side=2&pick=constructor"),
    ("drill-toString", "#drill=toString"),
    ("drill-proto-q-constructor", "#drill=__proto__&q=constructor"),
    ("pick-proto-and-hasOwnProperty", "#side=1&pick=__proto__,hasOwnProperty,valueOf"),
    ("key-proto", "#__proto__=x&side=2"),
    ("sq-and-sort-valueOf", "#side=2&sq=valueOf&sort=valueOf:asc&effect=toString&label=toString&tag=constructor"),
]


@pytest.mark.skipif(__import__("shutil").which("chromium") is None, reason="Debian chromium is not installed")
@pytest.mark.parametrize(("case", "fragment"), HOSTILE_HASHES, ids=[c[0] for c in HOSTILE_HASHES])
def test_a_hash_naming_object_properties_renders_the_views(hash_report, tmp_path, case, fragment):
    """`#side=2&pick=constructor` and `#drill=toString` threw in the page script (RB_SCRIPTS,
    RB.data and the hash state were plain objects: `constructor` is in every one): views stayed empty."""
    from tests.reporting.cdp import Page

    with Page(tmp_path / "p") as page:
        page.goto(hash_report.as_uri() + fragment)
        page.wait("document.body.dataset.sideRows !== undefined && document.body.dataset.drillCell !== undefined")
        assert not page.errors, page.errors
        cells = page.eval("Array.from(document.getElementById('rb-cell').options).map(o => o.value)")
        assert page.eval("document.body.dataset.drillCell") in cells  # a real cell, not `toString`
        assert int(page.eval("document.body.dataset.sideCells")) == (1 if "side=1" in fragment else 2)
        rows = page.eval("document.querySelectorAll('#rb-qs tbody tr').length")
        assert rows == (0 if "label=toString" in fragment else 6)
        # the question named `constructor` is a question like any other
        page.eval("location.hash = 'drill=' + document.getElementById('rb-cell').value + '&q=constructor'")
        page.wait("document.body.dataset.drillQ === 'constructor'")
        assert "constructor: " in page.eval("document.querySelector('#rb-detail h3').textContent")
        assert page.eval("document.querySelectorAll('#rb-side tbody tr[data-qid=\"constructor\"]').length") >= (
            0 if "sq=" in fragment else 1)
        page.eval("location.hash = 'drill=' + document.getElementById('rb-cell').value + '&q=__proto__'")
        page.wait("document.body.dataset.drillQ === '__proto__'")
        assert "__proto__: What does the Pro plan cost" in page.eval("document.querySelector('#rb-detail h3').textContent")
        assert not page.errors, page.errors
