"""The gate asks for evidence, not a point value (issue 55 B): ``min_n`` (per rule and policy-wide)
makes a mean over too few questions "cannot evaluate" (exit 2, naming the rule and n); ``ci_lower``
/ ``ci_upper`` bound the 95% CI, which for a proportion is never a point (Wilson). Through the real
command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from tests.runner.test_run_cell import run


@pytest.fixture(scope="module")
def cell(tmp_path_factory) -> Path:
    """The tiny set's cell: 6 questions, 4 answerable (hit@5 over n=4)."""
    return run(tmp_path_factory.mktemp("gate-evidence"))


def gate(tmp: Path, cell: Path, policy: str) -> list[str]:
    p = tmp / "policy.yaml"
    p.write_text(policy)
    return ["gate", str(cell), "--policy", str(p)]


def test_a_proportion_of_a_real_cell_never_has_a_zero_width_interval(cell):
    metrics = json.loads((cell / "metrics.json").read_text())
    for key, ci in metrics["ci"].items():
        value = metrics[key.split("/")[0]][key.split("/", 1)[1]]
        if ci is not None and value in (0.0, 1.0) and metrics["measures"].get(key, {}).get("aggregate") == "mean":
            assert ci[1] - ci[0] > 0.2, (key, ci)  # n <= 6: a wide interval, never [1.00, 1.00]


def test_a_rule_under_its_min_n_cannot_evaluate_and_names_the_rule_and_n(cell, tmp_path, capsys):
    code = cli(gate(tmp_path, cell, "thresholds:\n  retrieval/hit@5: {min: 0.1, min_n: 10}\n"))
    err = capsys.readouterr().err
    assert code == 2
    assert "retrieval/hit@5 >= 0.1" in err and "n=4 questions, under the rule's min_n 10" in err


def test_the_policy_wide_min_n_applies_to_means_not_to_counts(cell, tmp_path, capsys):
    code = cli(gate(tmp_path, cell, "min_n: 5\nthresholds:\n  retrieval/hit@5: {min: 0.1}\n"
                                    "  security/unauthorized_retrievals: {max: 0}\n"))
    captured = capsys.readouterr()
    assert code == 2
    assert "retrieval/hit@5 >= 0.1" in captured.err and "under the policy's min_n 5" in captured.err
    assert "unauthorized_retrievals" not in captured.err  # a sum has no n: the default does not apply
    # a rule's own min_n wins over the default
    assert cli(gate(tmp_path, cell, "min_n: 5\nthresholds:\n  retrieval/hit@5: {min: 0.1, min_n: 4}\n")) == 0


def test_ci_lower_passes_only_when_the_interval_clears_the_bar(cell, tmp_path, capsys):
    metrics = json.loads((cell / "metrics.json").read_text())
    lo, hi = metrics["ci"]["retrieval/hit@5"]
    value = metrics["retrieval"]["hit@5"]
    assert lo < value  # the point value clears a bar its interval does not
    assert cli(gate(tmp_path, cell, f"thresholds:\n  retrieval/hit@5: {{min: {lo + 0.01:.3f}}}\n")) == 0
    capsys.readouterr()
    assert cli(gate(tmp_path, cell, f"thresholds:\n  retrieval/hit@5: {{ci_lower: {lo + 0.01:.3f}}}\n")) == 1
    assert "95% CI lower bound" in capsys.readouterr().out
    assert cli(gate(tmp_path, cell, f"thresholds:\n  retrieval/hit@5: {{ci_lower: {lo - 0.01:.3f}}}\n")) == 0


def test_ci_upper_bounds_a_lower_is_better_measure_and_the_wrong_side_is_refused(cell, tmp_path, capsys):
    assert cli(gate(tmp_path, cell, "thresholds:\n  abstention/false_refusal_rate: {ci_upper: 1.0}\n")) == 0
    capsys.readouterr()
    code = cli(gate(tmp_path, cell, "thresholds:\n  abstention/false_refusal_rate: {ci_lower: 0.1}\n"
                                    "  retrieval/hit@5: {min: 0.1, min_n: 0}\n"))
    err = capsys.readouterr().err
    assert code == 2
    assert "policy.yaml:2: [abstention/false_refusal_rate]" in err and "use ci_upper: 0.1" in err
    assert "policy.yaml:3: [retrieval/hit@5]" in err and "min_n must be a whole number" in err


def test_the_shipped_policy_sets_a_minimum_n():
    from rag_bench.reporting.gate import load_policy

    policy = load_policy("conf/gate/release.yaml")
    assert policy["min_n"] >= 10
