"""The gate's judge_agreement rule: exit 0 when kappa's CI clears the bar, 1 when it does not, 2 without
labels for the measure; a threshold on a labelled measure uses its PPI mean; bad entries refused at load."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rag_bench.calibration.labels import answer_digest
from rag_bench.cli import main
from rag_bench.errors import ConfigError
from rag_bench.reporting.gate import load_policy
from tests.calibration.test_calibrate import write_cell, write_labels


def _policy(tmp_path, body: str):
    p = tmp_path / "policy.yaml"
    p.write_text(body, encoding="utf-8")
    return str(p)


def big_cell(root, auto: list[float], cell_id: str = "c0ffee0000aa"):
    """A cell of len(auto) answerable questions with distinct answers; metrics.json holds its mean."""
    d = root / cell_id
    d.mkdir(parents=True)
    n = len(auto)
    pd.DataFrame({"qid": [f"q{i:03d}" for i in range(n)], "answer": [f"Answer {i}." for i in range(n)],
                  "question": [f"Question {i}?" for i in range(n)], "answerable": [True] * n,
                  "refused": [False] * n, "correct": auto}).to_parquet(d / "records.parquet")
    (d / "config.yaml").write_text("pipeline: {k: 3}\n", encoding="utf-8")
    (d / "metrics.json").write_text(json.dumps({"generation": {"correct": sum(auto) / n}}), encoding="utf-8")
    (d / "DONE").write_text("{}", encoding="utf-8")
    return d


def label_rows(path, cell_dir, people: dict[int, int], sample: dict | None = None):
    """Labels of the answers at row positions ``people`` (position -> verdict), by answer digest, with
    the labelling page's ``sample`` field when given."""
    path.write_text("".join(json.dumps({"qid": f"q{i:03d}", "answer_sha256": answer_digest(f"Answer {i}."),
                                        "measure": "correct", "value": v, "labeller": "a",
                                        **({"sample": sample} if sample else {})}) + "\n"
                            for i, v in people.items()), encoding="utf-8")
    return path


ALTERNATING = [float(i % 2) for i in range(40)]  # raw mean 0.5


def test_exit_0_1_2(tmp_path, capsys):
    cell = str(write_cell(tmp_path / "exp"))
    write_labels(tmp_path / "labels.jsonl")  # kappa 0.5 on 8 answers: too few for an interval
    assert main(["gate", cell, "--policy", _policy(tmp_path, "judge_agreement: {measure: generation/correct, "
                                                            "min_kappa: 0.4, labels: labels.jsonl}\n")]) == 1
    out = capsys.readouterr().out
    assert "**FAIL**" in out and "n=8 labelled answers" in out and "label at least 2 more answers" in out
    # nobody labelled faithfulness: cannot evaluate
    assert main(["gate", cell, "--policy", _policy(tmp_path, "judge_agreement: {measure: generation/faithfulness, "
                                                            "min_kappa: 0.4, labels: labels.jsonl}\n")]) == 2
    assert "no label in" in capsys.readouterr().err
    # people agree with the measure on 40 answers: kappa's exact lower bound 1 - (1 - 0.025^(1/40)) / 0.5 = 0.824
    big = big_cell(tmp_path / "exp2", ALTERNATING)
    label_rows(tmp_path / "agree.jsonl", big, {i: int(v) for i, v in enumerate(ALTERNATING)})
    assert main(["gate", str(big), "--policy", _policy(tmp_path, "judge_agreement:\n  - {measure: generation/correct, "
                                                                 "min_kappa: 0.6, labels: agree.jsonl}\n")]) == 0
    assert "95% CI [0.824, 1.000] (exact bound, no disagreement seen), n=40" in capsys.readouterr().out


def _ppi_case(tmp_path, sample: dict | None, skip: int | None = None, n: int = 20):
    """40 answers, raw mean 0.5; people label the first ``n`` of the page's draw (seed 3) and say yes
    where the measure said no on two of them (PPI mean 0.5 + 2/20 = 0.6); ``skip``: a position of
    the draw left unlabelled."""
    from rag_bench.calibration.sampling import draw

    d = big_cell(tmp_path / "exp", ALTERNATING)
    order = draw(pd.read_parquet(d / "records.parquet"), 3)[:n]
    people = {i: int(ALTERNATING[i]) for k, i in enumerate(order) if k != skip}
    for i in [i for i in order if not ALTERNATING[i]][:2]:
        people[i] = 1
    label_rows(tmp_path / "labels.jsonl", d, people, sample if sample != "this" else {"cell": d.name, "seed": 3})
    policy = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.55}}\njudge_agreement: {measure: "
                               "generation/correct, min_kappa: 0, labels: labels.jsonl}\n")
    return d, policy


def test_threshold_on_a_labelled_measure_uses_the_ppi_mean_of_a_uniform_sample(tmp_path, capsys):
    d, policy = _ppi_case(tmp_path, "this")
    assert main(["gate", str(d), "--policy", policy]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("| generation/correct >= 0.55 |")]
    assert "| 0.6 (PPI) |" in row and "PPI mean (raw 0.5000" in row and "20 of 40 answers labelled" in row
    assert "the first 20 answers of the labelling page's draw (seed 3), a uniform sample" in row


@pytest.mark.parametrize("case,why", [
    ("carried", "no label records a draw of this cell's answers"),
    ("other-cell", "no label records a draw of this cell's answers"),
    ("stratified", "drawn stratified by correct: not a uniform sample"),
    ("skipped", "the first 4 answers of the labelling page's draw (seed 3), a uniform sample, hold 4 labelled"),
])
def test_a_threshold_keeps_the_raw_value_unless_the_labels_are_a_uniform_sample_of_the_cell(tmp_path, capsys, case,
                                                                                            why):
    """The review's case: labels carried by answer digest (from another cell, or by hand) turned a
    failing raw mean into a passing PPI mean. Only the start of the labelling page's uniform draw
    of this very cell counts."""
    sample = {"carried": None, "other-cell": {"cell": "c0ffee0000bb", "seed": 3}, "skipped": "this",
              "stratified": {"cell": "c0ffee0000aa", "seed": 3, "stratify": "correct"}}[case]
    d, policy = _ppi_case(tmp_path, sample, skip=4 if case == "skipped" else None)
    assert main(["gate", str(d), "--policy", policy]) == 1
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("| generation/correct >= 0.55 |")]
    assert "| 0.5 |" in row and "(PPI)" not in row and "**FAIL**" in row, row
    assert "raw value: PPI not used (" in row and why in row, row


def test_bad_entries_are_refused_with_their_line(tmp_path):
    p = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.1}}\n"
                          "judge_agreement:\n  - {measure: generation/answer_words, min_kappa: 2, labels: x.jsonl}\n")
    with pytest.raises(ConfigError) as err:
        load_policy(p)
    msg = str(err.value)
    assert "policy.yaml:2" in msg and "stands in for a judgment" in msg and "min_kappa must be" in msg


def test_few_labels_or_a_failing_agreement_rule_leave_the_raw_value(tmp_path, capsys):
    """The review's case: five chosen labels moved a threshold from fail to pass through the PPI
    mean. Below agreement.MIN_ITEMS labelled answers (8 here) the agreement rule fails (no
    interval), and the threshold is checked on the raw value."""
    d = write_cell(tmp_path / "exp")
    (d / "metrics.json").write_text(json.dumps({"generation": {"correct": 0.5}}), encoding="utf-8")
    write_labels(tmp_path / "labels.jsonl", second=False)
    policy = _policy(tmp_path, "thresholds: {generation/correct: {min: 0.5}}\njudge_agreement: {measure: "
                               "generation/correct, min_kappa: -1, labels: labels.jsonl}\n")
    assert main(["gate", str(d), "--policy", policy]) == 1
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("| generation/correct >= 0.5 |")]
    assert "(PPI)" not in row and row.split("|")[2].strip() in ("0.5", "0.5000") and "pass" in row, out
    assert "raw value: PPI not used (the agreement rule failed)" in row
