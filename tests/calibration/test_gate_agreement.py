"""The gate's judge_agreement rule: exit 0 when kappa's CI clears the bar, 1 when it does not, 2 without
labels for the measure; a threshold on a labelled measure uses its PPI mean; bad entries refused at load."""

from __future__ import annotations

import json

import pytest

from rag_bench.calibration.labels import answer_digest
from rag_bench.cli import main
from rag_bench.errors import ConfigError
from rag_bench.reporting.gate import load_policy
from tests.calibration.test_calibrate import ANSWERS, AUTO, write_cell, write_labels


def _policy(tmp_path, body: str):
    p = tmp_path / "policy.yaml"
    p.write_text(body, encoding="utf-8")
    return str(p)


def test_exit_0_1_2(tmp_path, capsys):
    cell = str(write_cell(tmp_path / "exp"))
    write_labels(tmp_path / "labels.jsonl")  # kappa 0.5 on 8 answers, CI low well below 0.5
    agree = tmp_path / "agree.jsonl"  # people agree with the measure on every answer
    agree.write_text("".join(json.dumps({"qid": f"q{i + 1:02d}", "answer_sha256": answer_digest(ANSWERS[i]),
                                         "measure": "correct", "value": int(v), "labeller": "a"}) + "\n"
                             for i, v in enumerate(AUTO)), encoding="utf-8")
    # labels relative to the policy's folder
    assert main(["gate", cell, "--policy", _policy(tmp_path, "judge_agreement:\n  - {measure: generation/correct, "
                                                            "min_kappa: 0.6, labels: agree.jsonl}\n")]) == 0
    assert main(["gate", cell, "--policy", _policy(tmp_path, "judge_agreement: {measure: generation/correct, "
                                                            "min_kappa: 0.4, labels: labels.jsonl}\n")]) == 1
    out = capsys.readouterr().out
    assert "**FAIL**" in out and "n=8 labelled answers" in out
    # nobody labelled faithfulness: cannot evaluate
    assert main(["gate", cell, "--policy", _policy(tmp_path, "judge_agreement: {measure: generation/faithfulness, "
                                                            "min_kappa: 0.4, labels: labels.jsonl}\n")]) == 2
    assert "no label in" in capsys.readouterr().err


def test_threshold_on_a_labelled_measure_uses_the_ppi_mean(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("rag_bench.calibration.calibrate.MIN_LABELLED", 8)  # the fixture labels 8 answers
    cell = str(write_cell(tmp_path / "exp"))
    write_labels(tmp_path / "labels.jsonl", second=False)
    # raw mean 0.5 and PPI mean 0.5 here (two disagreements cancel): the table says PPI and shows the raw
    policy = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.5}}\njudge_agreement: {measure: "
                               "generation/correct, min_kappa: -1, labels: labels.jsonl}\n")
    assert main(["gate", cell, "--policy", policy]) == 0
    out = capsys.readouterr().out
    assert "0.5 (PPI)" in out and "PPI mean (raw 0.5000" in out and "8 of 8 answers labelled" in out


def test_bad_entries_are_refused_with_their_line(tmp_path):
    p = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.1}}\n"
                          "judge_agreement:\n  - {measure: generation/answer_words, min_kappa: 2, labels: x.jsonl}\n")
    with pytest.raises(ConfigError) as err:
        load_policy(p)
    msg = str(err.value)
    assert "policy.yaml:2" in msg and "stands in for a judgment" in msg and "min_kappa must be" in msg


def test_few_labels_or_a_failing_agreement_rule_leave_the_raw_value(tmp_path, capsys):
    """The review's case: five chosen labels moved a threshold from fail to pass through the PPI
    mean. Below ppi.MIN_LABELLED labelled answers (8 here), or when the agreement rule fails, the
    threshold is checked on the raw value."""
    d = write_cell(tmp_path / "exp")
    (d / "metrics.json").write_text(json.dumps({"generation": {"correct": 0.5}}), encoding="utf-8")
    write_labels(tmp_path / "labels.jsonl", second=False)
    policy = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.5}}\njudge_agreement: {measure: "
                               "generation/correct, min_kappa: -1, labels: labels.jsonl}\n")
    assert main(["gate", str(d), "--policy", policy]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("| generation/correct >= 0.5 |")]
    assert "(PPI)" not in row and row.split("|")[2].strip() in ("0.5", "0.5000") and "pass" in row, out
