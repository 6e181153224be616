"""The question runs a halving round leaves in a cell folder are data (``question-runs.jsonl``,
rag_bench.evaluation.run_io), never a pickle: an experiment folder travels (CI artifacts, a
colleague's copy), and unpickling runs whatever code the file names -- a signing key in the cache
did not help, since whoever could write the cache could plant a key of their own (issue 52, item 1)."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from rag_bench.evaluation import run_io
from rag_bench.runner import main, rounds
from rag_bench.search import round_cells


class Planted:
    """Unpickling this creates a file: the proof that a pickle from the folder was executed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def untimed(metrics: object) -> object:
    """metrics without the evaluation's own timings (``*_s``, ``*_ms``: measured on each call)."""
    if isinstance(metrics, dict):
        return {k: untimed(v) for k, v in metrics.items() if not str(k).endswith(("_s", "_ms"))}
    return metrics


def partial_folder(tmp_path: Path, qids: list[str]) -> Path:
    cell = tmp_path / "exp" / "abc123"
    cell.mkdir(parents=True)
    (cell / rounds.PARTIAL).write_text(json.dumps({"seed": 0, "dataset_fingerprint": "fp", "fraction": 0.25,
                                                   "questions_digest": rounds.questions_digest(qids)}))
    return cell


@pytest.fixture(scope="module")
def real_run():
    """A cell's run on the tiny dataset, computed by the pipeline: every kind of field a run holds."""
    from rag_bench.memo import SharedWork
    from rag_bench.pipeline import pipeline
    from rag_bench.runner.config import build_cell
    from tests.conftest import TINY, compose_config

    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "eval.bootstrap_resamples=50"])
    work = SharedWork()
    parts = build_cell(cfg, work)
    dataset = main.load_dataset_of(cfg)
    return parts, pipeline.run(parts, dataset, work), work


def test_a_real_run_round_trips_exactly_and_scores_the_same(real_run, tmp_path):
    parts, run, work = real_run
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / run_io.FILE).write_text(run_io.dumps_run(run))
    back = round_cells.read_runs(cell)
    assert run_io.dumps(back) == run_io.dumps(run.questions)  # field by field (NaN included)
    assert [type(r.question) for r in back] == [type(r.question) for r in run.questions]
    assert all(a.question == b.question and a.ranked == b.ranked or math.isnan(sum(a.ranked.scores))
               for a, b in zip(back, run.questions))
    again = dataclasses.replace(run, questions=back)
    first, second = (untimed(parts.evaluation.evaluate(r, "cid", work).metrics) for r in (run, again))
    assert json.dumps(first, sort_keys=True, default=str) == json.dumps(second, sort_keys=True, default=str)
    assert not (tmp_path / "cache" / "round-runs.key").exists()  # no key file any more


def test_a_planted_pickle_is_never_loaded(real_run, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    proof = tmp_path / "executed"
    cell = partial_folder(tmp_path, ["q1"])
    (cell / run_io.FILE).write_bytes(pickle.dumps((Planted(str(proof)),)))
    (cell / "round-runs.pickle").write_bytes(pickle.dumps((Planted(str(proof)),)))  # the old file name too
    cfg = OmegaConf.create({"search": {"seed": 0}})
    assert round_cells.prior_round(cfg, SimpleNamespace(fingerprint="fp"), cell) is None  # type: ignore[arg-type]
    assert not proof.exists()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda lines: [lines[0].replace('"version": 1', '"version": 7'), *lines[1:]], "version 7: this rag_bench reads "
                                                                                   "versions 1 and 2 -- fix:"),
    (lambda lines: lines[1:], "not a rag_bench.question_runs file"),
    (lambda lines: lines[:-1], "the header says"),
    (lambda lines: [lines[0], lines[1].replace('"qid": ', '"__class__": "os.system", "qid": ', 1), *lines[2:]],
     "unknown fields ['__class__']"),
    (lambda lines: [lines[0], lines[1].replace('"answerable": ', '"answerable": "yes", "x": ', 1), *lines[2:]],
     "unknown fields"),
])
def test_a_file_of_another_version_or_shape_is_refused(real_run, tmp_path, edit, message):
    _, run, _ = real_run
    lines = run_io.dumps(run.questions).splitlines()
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        run_io.loads("\n".join(edit(lines)) + "\n")


def test_a_field_of_the_wrong_type_is_refused(real_run):
    _, run, _ = real_run
    data = json.loads(run_io.dumps(run.questions[:1]).splitlines()[1])
    data["retrieved"]["indices"] = ["0"]  # a string where an int goes
    with pytest.raises(ValueError, match="expected int"):
        run_io.from_data(data, run_io.QuestionRun)


def test_a_symlinked_runs_file_is_not_followed(real_run, tmp_path):
    _, run, _ = real_run
    source = tmp_path / "elsewhere"
    source.mkdir()
    (source / run_io.FILE).write_text(run_io.dumps_run(run))
    cell = partial_folder(tmp_path, [r.qid for r in run.questions])
    (cell / run_io.FILE).symlink_to(source / run_io.FILE)
    with pytest.raises(ValueError, match="not a regular file"):
        round_cells.read_runs(cell)


def test_a_whole_run_round_trips_and_scores_the_same(real_run):
    parts, run, work = real_run
    text = run_io.dumps_run(run)
    back = run_io.load_run(text)
    assert run_io.dumps_run(back) == text
    # Documents with access rights are stored without their text (and their passages without their
    # bodies): no cell file holds text some asker may not read; restore() puts it back from the dataset.
    ids = run_io.withheld(text)
    assert ids and all(run.dataset.documents[i].text and not back.dataset.documents[i].text for i in ids)
    assert not any(run.dataset.documents[i].text in text for i in ids)
    back = run_io.restore(back, ids, run.dataset)
    assert back.dataset.fingerprint == run.dataset.fingerprint and back.dataset.documents == run.dataset.documents
    assert back.passages == run.passages
    first, second = (untimed(parts.evaluation.evaluate(r, "cid", work).metrics) for r in (run, back))
    assert json.dumps(first, sort_keys=True, default=str) == json.dumps(second, sort_keys=True, default=str)


def test_version_1_is_upgraded_for_its_question_runs_and_refused_as_a_whole_run(real_run):
    _, run, _ = real_run
    old = run_io.dumps(run.questions)  # what halving's rounds wrote before (question runs only)
    assert run_io.dumps(run_io.loads(old)) == old
    with pytest.raises(run_io.VersionError, match="version 1: .* -- fix: run the cell again"):
        run_io.load_run(old)


def test_nan_infinity_and_a_lone_surrogate_round_trip_through_the_fast_writer(real_run, monkeypatch):
    # orjson (the fast writer, when installed) writes NaN as null; the run keeps NaN and infinities as
    # Python's json writes them, and a text orjson refuses goes through json: the same data either way.
    _, run, _ = real_run
    first, second = run.questions[:2]
    odd = dataclasses.replace(first, ranked=dataclasses.replace(
        first.ranked, scores=(float("nan"), float("inf"), float("-inf"), *first.ranked.scores[3:])))
    lone = dataclasses.replace(second, question=dataclasses.replace(second.question, question="Who? \ud800"))
    run = dataclasses.replace(run, questions=(odd, lone, *run.questions[2:]))
    text = run_io.dumps_run(run)
    assert '"scores":[NaN,Infinity,-Infinity' in text.splitlines()[3]
    back = run_io.load_run(text)
    scores = back.questions[0].ranked.scores
    assert math.isnan(scores[0]) and scores[1:3] == (math.inf, -math.inf)
    assert back.questions[1].question.question == "Who? \ud800"
    assert run_io.dumps_run(back) == text
    with monkeypatch.context() as m:
        m.setattr(run_io, "orjson", None)  # json alone: the same data (read back and written again, the same text)
        by_json = run_io.dumps_run(run)
    assert run_io.dumps_run(run_io.load_run(by_json)) == text


def test_a_list_of_plain_numbers_is_written_as_it_is_and_a_non_finite_one_by_one():
    """to_data's fast path for a ranking's numbers (issue 57): the same data as one by one."""
    big = (1e308, 1e308)  # finite, though their sum is not
    assert run_io.to_data(big) == list(big) and all(type(v) is float for v in run_io.to_data(big))
    assert run_io.to_data((1, 2.5, True, None, "a")) == [1, 2.5, True, None, "a"]
    got = run_io.to_data((1.0, float("nan"), -math.inf))
    assert got[0] == 1.0 and type(got[1]) is run_io._NonFinite and math.isnan(got[1]) and got[2] == -math.inf
    assert type(got[2]) is run_io._NonFinite and run_io.to_data([]) == []


@dataclasses.dataclass(frozen=True)
class _Fields:
    nan: float
    inf: float
    number: float
    empty: tuple[str, ...]
    words: tuple[str, ...]
    text: str
    count: int
    flag: bool
    nothing: None
    inner: tuple[_Inner, ...]
    table: dict[str, float]


@dataclasses.dataclass(frozen=True)
class _Inner:
    score: float
    ids: list[int]


def test_a_dataclass_field_is_written_as_the_general_rule_writes_it():
    """to_data's fields taken without a call each (issue 57): texts, numbers, an empty tuple and a
    non-finite float as to_data writes the same value on its own (NaN and infinities as _NonFinite)."""
    value = _Fields(float("nan"), -math.inf, 0.25, (), ("a", "b"), "t", 3, True, None,
                    (_Inner(float("inf"), [1, 2]),), {"x": float("nan"), "y": 1.5})
    got = run_io.to_data(value)
    assert list(got) == [f.name for f in dataclasses.fields(_Fields)]
    for name, data in got.items():
        alone = run_io.to_data(getattr(value, name))
        assert json.dumps(data) == json.dumps(alone) and type(data) is type(alone), name
    assert type(got["nan"]) is run_io._NonFinite and type(got["inf"]) is run_io._NonFinite
    assert type(got["number"]) is float and got["empty"] == [] and got["inner"] == [{"score": math.inf, "ids": [1, 2]}]
    assert type(got["inner"][0]["score"]) is run_io._NonFinite and type(got["table"]["x"]) is run_io._NonFinite
