"""SQuAD 2.0 answer matching: `rag-bench score-answers` against the official script's output
(../shared/conformance/squad_v2), the normalisation's edge cases, and bad input refused."""

from __future__ import annotations

import json
import math

import pytest

from rag_bench.cli import main as cli
from rag_bench.domain import Answer
from rag_bench.metrics import squad
from rag_bench.metrics.generation import exact_match, match_answer, squad_v2, token_f1
from tests.conftest import SHARED

SYSTEMS = ("empty", "perturbed", "sentence", "random_span")


def _vectors():
    folder = SHARED / "conformance" / "squad_v2"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: it holds the official SQuAD 2.0 script's output (conformance vectors)")
    return folder


@pytest.mark.parametrize("system", SYSTEMS)
def test_score_answers_equals_the_official_script(system, capsys):
    folder = _vectors()
    expected = json.loads((folder / "expected.json").read_text())[system]
    assert cli(["score-answers", str(folder / "gold.json"), str(folder / f"pred_{system}.json"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert list(got["aggregate"]) == list(expected["aggregate"])  # the script's keys, in its order
    for key, value in expected["aggregate"].items():
        assert got["aggregate"][key] == pytest.approx(value, abs=1e-9), key
    assert got["per_question"].keys() == expected["per_question"].keys()
    for qid, want in expected["per_question"].items():
        assert got["per_question"][qid]["exact"] == want["exact"], qid
        assert got["per_question"][qid]["f1"] == pytest.approx(want["f1"], abs=1e-9), qid
    # Without --json: the script's own printout (its aggregate dict, indented).
    assert cli(["score-answers", str(folder / "gold.json"), str(folder / f"pred_{system}.json")]) == 0
    assert json.loads(capsys.readouterr().out) == got["aggregate"]


def test_punctuation_is_deleted_not_replaced_by_a_space():
    assert squad.normalize_answer("co-op") == "coop" and squad.normalize_answer("U.S.") == "us"
    assert squad.normalize_answer("30,000") == "30000" and squad.normalize_answer("$5 (or 5%)") == "5 or 5"
    assert squad.score(["co-op"], "co op") == (0, 0)  # one token against two: no overlap
    assert squad.score(["New York"], "new-york") == (0, 0)


def test_articles_go_as_whole_words_only():
    assert squad.normalize_answer("The Theatre of a Thousand Anthems") == "theatre of thousand anthems"
    assert squad.normalize_answer("An  apple,   the end") == "apple end"
    assert squad.score(["the Normans"], "Normans") == (1, 1.0)


def test_non_ascii_is_kept_as_the_script_keeps_it():
    # Only string.punctuation is removed: curly quotes, dashes, accents stay; lower() still applies.
    assert squad.normalize_answer("“Émile” — Zola’s") == "“émile” — zola’s"
    assert squad.score(["Emile"], "Émile") == (0, 0)
    assert squad.score(["days after"], "days—after") == (0, 0)


def test_empty_answers_and_empty_gold():
    assert squad.f1("", "") == 1 and squad.exact("", "") == 1
    assert squad.score([], "") == (1, 1) and squad.score([], "Rollo") == (0, 0)
    assert squad.score(["France"], "") == (0, 0) and squad.score(["France"], "the") == (0, 0)
    # A gold answer that normalises to nothing is dropped; none left: scored against the empty answer.
    assert squad.score([".", "Rollo"], "Rollo") == (1, 1.0) and squad.score(["..."], "") == (1, 1)
    assert squad.score(["10th and 11th centuries", "in the 10th and 11th centuries"], "11th centuries") == (
        0, pytest.approx(2 / 3))  # the maximum over gold answers: p=1, r=1/2


def test_citation_markers_count_in_score_answers_and_are_stripped_inside_a_cell():
    # The official script scores text as given: "[1]" is punctuation plus the token "1".
    assert squad.score(["France"], "France [1]") == (0, pytest.approx(2 / 3))
    # In a cell the markers are our answer contract's, not the answer's text.
    m = match_answer(Answer("France [1].", (1,)), (), ["France"])
    assert (m.exact_match, m.token_f1) == (1.0, 1.0)
    assert squad_v2(Answer("France [1][2]"), ["France"], answerable=True) == (1.0, 1.0)


def test_exact_match_and_token_f1_are_squad_exact_now():
    # Changed from the lenient normalisation, which spaced punctuation and dropped digit grouping.
    assert exact_match("co-op", ["co op"]) == 0.0 and exact_match("1,250", ["1250"]) == 1.0
    assert token_f1("days—after renewal", ["days after renewal"]) == pytest.approx(0.4)  # p=1/2, r=1/3
    m = match_answer(Answer("days—after renewal"), (), ["days after renewal"])
    assert m.answer_recall == 1.0 and m.exact_match == 0.0  # containment stays lenient


def test_squad_v2_of_refusals_errors_and_questions_without_references():
    refusal = Answer("I cannot answer this from the provided sources.", refused=True)
    assert squad_v2(refusal, [], answerable=False) == (1.0, 1.0)
    assert squad_v2(refusal, ["Rollo"], answerable=True) == (0.0, 0.0)
    assert squad_v2(Answer("Rollo"), [], answerable=False) == (0.0, 0.0)
    assert squad_v2(Answer("the"), [], answerable=False) == (1.0, 1.0)  # normalises to the empty answer
    assert squad_v2(Answer("", parse_error="not JSON"), [], answerable=False) == (0.0, 0.0)
    assert all(math.isnan(x) for x in squad_v2(Answer("Rollo"), [], answerable=True))


def _gold(tmp_path):
    gold = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Rollo led them.", "qas": [
        {"id": "a", "question": "Who?", "answers": [{"text": "Rollo", "answer_start": 0}]},
        {"id": "b", "question": "Why?", "answers": [], "is_impossible": True}]}]}]}
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold))
    return path


@pytest.mark.parametrize(("content", "says"), [
    (None, "predictions file not found"),
    ("{not json", "not JSON"),
    ('["Rollo"]', "not a JSON object"),
    ('{"a": "Rollo", "b": "", "zz": ""}', "question ids the gold file does not hold"),
    ('{"a": 3, "b": ""}', "answer is int, not a string"),
    ('{"a": "Rollo"}', "Missing prediction for 1 question(s)"),
])
def test_bad_predictions_exit_2_naming_the_file_and_a_fix(tmp_path, capsys, content, says):
    pred = tmp_path / "pred.json"
    if content is not None:
        pred.write_text(content)
    assert cli(["score-answers", str(_gold(tmp_path)), str(pred)]) == 2
    err = capsys.readouterr().err
    assert says in err and str(pred) in err and "fix:" in err


def test_a_bad_gold_file_exits_2(tmp_path, capsys):
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"data": [{"paragraphs": [{"qas": [{"id": "a", "answers": "Rollo"}]}]}]}))
    pred = tmp_path / "pred.json"
    pred.write_text('{"a": ""}')
    assert cli(["score-answers", str(gold), str(pred)]) == 2
    err = capsys.readouterr().err
    assert "data[0].paragraphs[0].qas[0].answers" in err and "fix:" in err
    assert cli(["score-answers", str(tmp_path / "none.json"), str(pred)]) == 2
    assert "gold file not found" in capsys.readouterr().err


def test_a_small_gold_file_by_hand(tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text('{"a": "Rollo.", "b": "Rollo"}')
    assert cli(["score-answers", str(_gold(tmp_path)), str(pred), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["aggregate"] == {"exact": 50.0, "f1": 50.0, "total": 2, "HasAns_exact": 100.0, "HasAns_f1": 100.0,
                                "HasAns_total": 1, "NoAns_exact": 0.0, "NoAns_f1": 0.0, "NoAns_total": 1}
    assert out["per_question"] == {"a": {"exact": 1, "f1": 1.0}, "b": {"exact": 0, "f1": 0}}
