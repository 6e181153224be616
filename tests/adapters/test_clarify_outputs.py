"""Answer, refuse -- or ask (issue 42), through the real CLI: a question expecting a clarifying
question is right for an answer that asks for the missing facts, wrong for a direct answer
(premature) and for a refusal; an application's answer text is kept as given."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from rag_bench.calibration.labels import answer_digest
from tests.conftest import REPO, TINY
from tests.runner.test_run_cell import run

REFUND = "A full refund is available if you cancel within 14 days of a renewal."
MONTHLY = "You can cancel at any time; the current month is not refunded."


def clarify_dataset(tmp_path: Path) -> Path:
    """The tiny dataset and four questions whose answer depends on the asker's plan and renewal."""
    root = tmp_path / "ds"
    shutil.copytree(TINY, root)
    base = {"answerable": True, "expects": "clarify", "clarify_facts": ["annual", "renewal"],
            "evidence": [{"doc_id": "billing", "quote": REFUND}, {"doc_id": "billing", "quote": MONTHLY}],
            "facts": ["14 days"], "answers": ["Within 14 days of a renewal on an annual plan; monthly: no."]}
    extra = [{"id": f"c{i}", "question": f"Can I get my money back if I cancel my plan now? ({i})", **base}
             for i in range(1, 5)]
    with (root / "questions.jsonl").open("a") as f:
        for q in extra:
            f.write(json.dumps(q) + "\n")
    return root


def passages() -> list[dict]:
    return [{"doc_id": "billing", "text": REFUND}, {"doc_id": "billing", "text": MONTHLY}]


def test_evaluate_scores_a_clarifying_question_a_direct_answer_and_a_refusal(tmp_path):
    ds = clarify_dataset(tmp_path)
    lines = [
        # the tiny set's own questions; q1's answer starts with a space, as an application gave it
        {"id": "q1", "retrieved": passages(), "answer": " Within 14 days of a renewal [1].", "citations": [1]},
        *({"id": q, "retrieved": [], "refused": True} for q in ("q2", "q3", "q4", "q5", "q6")),
        # (a) asks for both missing facts (in other words than the facts are written)
        {"id": "c1", "retrieved": passages(), "answer": "",
         "clarify": "Is it an annual plan, and how many days ago was its last renewal?"},
        # (b) answers directly: premature
        {"id": "c2", "retrieved": passages(), "answer": "Yes, within 14 days [1].", "citations": [1]},
        # (c) refuses: wrong, and not premature
        {"id": "c3", "retrieved": passages(), "refused": True},
        # asks, but for one fact of the two: wrong
        {"id": "c4", "retrieved": passages(), "answer": "", "clarify": "Is your plan an annual one?"},
    ]
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "evaluate", str(outputs), "--dataset", str(ds),
                           "--name", "app", "tracking=none", f"output.root={tmp_path / 'out'}", "experiment.name=apps"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (cell,) = [p.parent for p in (tmp_path / "out" / "apps").glob("*/DONE")]
    metrics = json.loads((cell / "metrics.json").read_text())
    rec = pd.read_parquet(cell / "records.parquet").set_index("qid")
    c = rec.loc[["c1", "c2", "c3", "c4"]]
    assert list(c["expects"]) == ["clarify"] * 4
    assert list(c["correct_clarification"]) == [1.0, 0.0, 0.0, 0.0]
    assert list(c["premature_answer"]) == [0.0, 1.0, 0.0, 0.0]
    assert list(c["correct_all"]) == [1.0, 0.0, 0.0, 0.0]
    assert list(c["clarify_rate"]) == [1.0, 0.0, 0.0, 1.0]
    # The failure label: asked for the facts is right (nothing to cite); a direct answer or a
    # question back missing a fact is lost at generation; a refusal is a false refusal.
    assert list(c["failure"]) == ["correct", "generation", "false_refusal", "generation"]
    # A question back cites nothing, rightly: no citation recall for questions expecting clarify.
    assert c["citation_recall"].isna().all() and rec.loc["q1", "citation_recall"] == 1.0
    assert c.loc["c1", "clarification"] == "Is it an annual plan, and how many days ago was its last renewal?"
    assert not c.loc["c1", "refused"] and c.loc["c3", "refused"]
    # Clarify questions stay out of the answerable-only measures, and in the retrieval ones.
    assert c["correct"].isna().all() and c["false_refusal_rate"].isna().all() and c["squad_exact"].isna().all()
    assert metrics["n"]["generation/correct"] == 4 and metrics["n"]["abstention/false_refusal_rate"] == 4
    assert metrics["counts"]["answerable"] == 8 and metrics["counts"]["expects_clarify"] == 4
    assert metrics["clarify"] == {"clarify_rate": 0.2, "correct_clarification": 0.25, "premature_answer": 0.25}
    assert metrics["n"]["clarify/correct_clarification"] == 4 and metrics["n"]["clarify/clarify_rate"] == 10
    # An application's answer is kept as given: the leading space is there, and so is its digest.
    assert rec.loc["q1", "answer"] == " Within 14 days of a renewal [1]."
    assert answer_digest(rec.loc["q1", "answer"]) == answer_digest(lines[0]["answer"])
    # A replayed application declares no traits that say it cannot ask: no warning about it.
    assert not any("clarifying question" in w for w in [*metrics.get("warnings", []), *metrics.get("findings", [])])


def test_a_generator_that_cannot_ask_says_so_naming_the_fix(tmp_path):
    cell = run(tmp_path, "chunker=section", "generator=extractive", dataset=clarify_dataset(tmp_path))
    metrics = json.loads((cell / "metrics.json").read_text())
    (warning,) = [w for w in metrics["findings"] if "clarifying question" in w]  # the verdict's finding
    assert warning.startswith("4 question(s) expect a clarifying question") and "fix: plug a model" in warning
    assert metrics["clarify"]["clarify_rate"] == 0.0 and metrics["clarify"]["correct_clarification"] == 0.0


def test_evaluate_refuses_a_clarify_that_is_no_string_or_sits_beside_a_refusal(tmp_path):
    ds = clarify_dataset(tmp_path)
    ids = ["q1", "q2", "q3", "q4", "q5", "q6", "c1", "c2", "c3", "c4"]
    lines = [{"id": q, "retrieved": [], "answer": "x"} for q in ids]
    lines[6]["clarify"] = ["Is it annual?"]
    lines[7].update(refused=True, clarify="Is it annual?")
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "evaluate", str(outputs), "--dataset", str(ds),
                           "--name", "app", "tracking=none", f"output.root={tmp_path / 'out'}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "outputs.jsonl:7: [clarify] must be a string" in done.stderr and "fix:" in done.stderr
    assert "outputs.jsonl:8: [clarify] \"refused\": true and a \"clarify\" question" in done.stderr
