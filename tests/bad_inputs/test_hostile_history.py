"""Conversation questions (issue 53): every fault of a question's ``history`` (and ``standalone``)
through the real command line exits 2 naming file:line, the field and a fix, and leaves nothing
behind (``run`` and ``validate`` alike)."""

from __future__ import annotations

import pytest

from rag_bench.data.native import MAX_HISTORY_CHARS, MAX_HISTORY_TURNS
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions, run_refused

USER = {"role": "user", "content": "Do you offer annual plans?"}
BOT = {"role": "assistant", "content": "Yes, billed once a year."}

# (id, history of the first question, needles)
CASES = [
    ("not-a-list", "user: hi", ["[history]", "must be a list of turns, got a string"]),
    ("turn-not-an-object", [["user", "hi"], BOT], ["[history[0]]", "must be an object, got a list"]),
    ("unknown-role", [{**USER, "role": "system"}, BOT], ["[history[0].role]", "got 'system'"]),
    ("missing-role", [{"content": "hi"}, BOT], ["[history[0].role]", "got None"]),
    ("unknown-key", [{**USER, "name": "ann"}, BOT], ["[history[0].name]", "unknown field 'name'"]),
    ("two-user-turns", [USER, USER, BOT], ["[history[1].role]", "two user turns in a row"]),
    ("two-assistant-turns", [USER, BOT, BOT], ["[history[2].role]", "two assistant turns in a row"]),
    ("ends-with-user", [USER, BOT, USER], ["[history[2].role]", "ends with a user turn"]),
    ("content-not-text", [{**USER, "content": ["hi"]}, BOT], ["[history[0].content]", "got a list"]),
    ("content-empty", [USER, {**BOT, "content": " \n"}], ["[history[1].content]", "must be non-empty text, empty"]),
    ("content-escape-sequence", [{**USER, "content": "hi\x1b[2J"}, BOT], ["[history[0].content]", "control character"]),
    ("too-many-turns", [USER, BOT] * (MAX_HISTORY_TURNS // 2 + 1), ["[history]", f"more than {MAX_HISTORY_TURNS}"]),
    ("too-many-characters", [{**USER, "content": "x" * MAX_HISTORY_CHARS}, BOT],
     ["[history]", f"more than {MAX_HISTORY_CHARS}"]),
]


def _conversation_faults(qs: list[dict]) -> None:
    """One question per fault, each a copy of the first question with its own id (line 2 onwards)."""
    first = qs[0]
    qs[1:1] = [{**first, "id": f"conv-{case}", "history": history} for case, history, _ in CASES]


def test_every_history_fault_is_refused_with_its_line(tmp_path, capsys):
    # One run reports every problem at once (the loader's rule), so one command line covers all faults:
    # each on its own line, named with that line and its field.
    root = copy_tiny(tmp_path)
    edit_questions(root, _conversation_faults)
    needles = [f"questions.jsonl:{i}: {needle}" for i, (_, _, (needle, *_)) in enumerate(CASES, 2)]
    needles += [n for _, _, (_, *rest) in CASES for n in rest]
    err = run_refused(root, tmp_path / "out", capsys, needles)
    assert err.count("fix:") >= len(CASES)


@pytest.mark.parametrize("value", ["", 7], ids=["empty", "number"])
def test_bad_standalone(tmp_path, capsys, value):
    root = copy_tiny(tmp_path)
    edit_questions(root, lambda qs: qs[0].update(history=[USER, BOT], standalone=value))
    assert "fix:" in run_refused(root, tmp_path / "out", capsys,
                                 ["questions.jsonl:1:", "[standalone]", "must be non-empty text"])
