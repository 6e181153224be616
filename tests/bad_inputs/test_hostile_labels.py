"""Fourth round of hostile inputs, around people's labels and the untrusted text the commands show:
control characters that drive a terminal or break the gate's JUnit file, bidirectional overrides on
the labelling page, labels that conflict or were drawn from the wrong answers, agreement and PPI
figures that claimed more than the labels show. Every case goes through the real command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions
from tests.conftest import REPO
from tests.runner.test_run_cell import run

# What a hostile text tries on a terminal: set the window title (OSC ... BEL), clear the screen
# (CSI 2J), the same through the 8-bit CSI (C1), and a NUL.
TERMINAL_ATTACK = "\x1b]0;pwned\x07\x1b[2J\x9b2J\x00"
RAW = ("\x1b", "\x07", "\x9b", "\x00")


def no_raw_controls(text: str) -> None:
    assert not any(c in text for c in RAW), repr(text)
    assert "\\u001b" in text  # shown, escaped, where it was


# --- 4. control characters: refused in a dataset, shown escaped on the terminal ----------------

CONTROL_CASES = [
    ("esc-in-question", lambda q: q[0].update(question="How long\x1b[2J do I have?"), "question", "U+001B"),
    ("bel-in-question", lambda q: q[1].update(question="Pro plan\x07 cost?"), "question", "U+0007"),
    ("nul-in-answer", lambda q: q[0].update(answers=["within 14 days", "14\x00 days"]), "answers[1]", "U+0000"),
    ("del-in-fact", lambda q: q[0].update(facts=["14\x7f days"]), "facts[0]", "U+007F"),
    ("c1-csi-in-question", lambda q: q[2].update(question="How often\x9b2J?"), "question", "U+009B"),
]


@pytest.mark.parametrize("case,edit,field,code", CONTROL_CASES, ids=[c[0] for c in CONTROL_CASES])
def test_validate_refuses_control_characters_in_question_texts(tmp_path, capsys, case, edit, field, code):
    root = copy_tiny(tmp_path)
    edit_questions(root, edit)
    assert cli(["validate", str(root)]) == 2
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if f"[{field}]" in x)
    assert "questions.jsonl:" in line and f"control character {code}" in line and "-- fix:" in line, err
    assert not any(c in err for c in RAW)


def test_validate_keeps_tab_newline_and_carriage_return(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    edit_questions(root, lambda q: q[0].update(question="How long\tdo I have\r\nto get a refund?"))
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err


def test_validate_refuses_a_control_character_in_a_beir_query(tmp_path, capsys):
    root = tmp_path / "beir"
    shutil.copytree(REPO / "tests" / "fixtures" / "beir_graded", root)
    lines = (root / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "text": "delivery\x1b[2J cost"})
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli(["validate", str(root)]) == 2
    assert "queries.jsonl:2: [text] control character U+001B" in capsys.readouterr().err


def test_validate_shows_a_hostile_dataset_name_escaped(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    (root / "dataset.yaml").write_text('name: "tiny\\e]0;pwned\\a\\e[2J"\n', encoding="utf-8")
    assert cli(["validate", str(root)]) == 0
    no_raw_controls(capsys.readouterr().out)


@pytest.fixture(scope="module")
def demo_pair(tmp_path_factory):
    """Two demo cells whose answers flip, their records' questions rewritten with terminal attacks
    (written before validation refused them, or by another tool)."""
    root = tmp_path_factory.mktemp("pair")
    cells = [run(root, "experiment.name=demo", dataset=None),
             run(root, "experiment.name=demo", "chunker=fixed", "chunker.size=100", "chunker.overlap=0", dataset=None)]
    for c in cells:
        r = pd.read_parquet(c / "records.parquet")
        r["question"] = [q + TERMINAL_ATTACK for q in r["question"]]
        r.to_parquet(c / "records.parquet")
    return cells


def test_compare_shows_question_texts_escaped(demo_pair, capsys):
    assert cli(["compare", str(demo_pair[0]), str(demo_pair[1])]) == 0
    out = capsys.readouterr().out
    assert "right in A, wrong in B" in out
    no_raw_controls(out)


def test_calibrate_shows_labeller_names_escaped(demo_pair, tmp_path, capsys):
    from rag_bench.calibration.labels import answer_digest

    r = pd.read_parquet(demo_pair[0] / "records.parquet")
    rows = [{"qid": q, "answer_sha256": answer_digest(a), "measure": "correct", "value": 1, "labeller": who}
            for q, a in zip(r["qid"][:3], r["answer"][:3]) for who in ("ann", "bob" + TERMINAL_ATTACK)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    assert cli(["calibrate", str(demo_pair[0]), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "ann vs bob" in out
    no_raw_controls(out)


def test_a_logged_question_cannot_drive_the_terminal(capsys):
    import logging

    from rag_bench.logs import setup_console

    setup_console()
    logging.getLogger("rag_bench.test").warning("question q1 %s", "How long?" + TERMINAL_ATTACK)
    no_raw_controls(capsys.readouterr().err)


# --- 21. the gate's JUnit file stays well-formed XML whatever the messages hold ---------------

@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x08", "\ufffe"], ids=["nul", "soh", "esc", "backspace", "fffe"])
def test_gate_junit_parses_whatever_control_character_a_message_holds(demo_pair, tmp_path, capsys, char):
    from xml.etree import ElementTree

    policy = tmp_path / "policy.yaml"
    # the labels path is echoed in the rule's message (no such labels file)
    policy.write_text("thresholds: {generation/correct: {min: 0.1}}\njudge_agreement: {measure: generation/correct, "
                      f"min_kappa: 0.5, labels: {json.dumps('lab' + char + 'els.jsonl')}}}\n", encoding="utf-8")
    junit = tmp_path / "gate.xml"
    assert cli(["gate", str(demo_pair[0]), "--policy", str(policy), "--junit", str(junit)]) == 2
    capsys.readouterr()
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == "2" and suite.get("errors") == "1"
    (error,) = suite.iter("error")
    assert f"lab\\u{ord(char):04x}els.jsonl: no such labels file" in error.get("message", "")
    assert error.text == error.get("message")
