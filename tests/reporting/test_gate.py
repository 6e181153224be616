"""Release gate: every rule kind, exit codes, Markdown and JUnit output, a planted regression vs noise."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rag_bench.cli import main as cli
from rag_bench.errors import ConfigError
from rag_bench.reporting.gate import evaluate_gate, exit_code, junit_xml, load_policy

REGRESSION_ONLY = """
regressions:
  retrieval/ndcg@10: {rule: no_significant_regression, alpha: 0.05}
  retrieval/hit@5: {rule: no_significant_regression, alpha: 0.05}
"""


def write(tmp_path, text, name="policy.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_planted_regression_fails_and_noise_passes(tmp_path, demo_cells, capsys):
    policy = write(tmp_path, REGRESSION_ONLY)
    base = str(demo_cells["baseline"].path)
    assert cli(["gate", str(demo_cells["regression"].path), "--policy", str(policy), "--baseline", base]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "no regression significant" in out
    assert cli(["gate", str(demo_cells["noise"].path), "--policy", str(policy), "--baseline", base]) == 0
    assert "PASS" in capsys.readouterr().out


def test_release_policy_on_the_demo_baseline(demo_cells, capsys, tmp_path):
    junit = tmp_path / "gate.xml"
    code = cli(["gate", str(demo_cells["baseline"].path), "--policy", "conf/gate/release.yaml", "--baseline",
                str(demo_cells["baseline"].path), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 0, out
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and int(suite.get("tests")) == len(suite.findall("testcase")) >= 8
    assert suite.get("failures") == "0" and suite.get("errors") == "0"


@pytest.mark.parametrize(("rule", "expected"), [
    ("{min: 0.5}", "pass"), ("{min: 0.95}", "fail"), ("{max: 0.95}", "pass"), ("{max: 0.5}", "fail"),
    ("{min: 0.5, max: 0.6}", "fail")])
def test_threshold_rules(tmp_path, demo_cells, rule, expected):
    results = evaluate_gate(demo_cells["baseline"], load_policy(write(tmp_path, f"thresholds:\n  retrieval/hit@5: {rule}\n")))
    assert ("fail" if any(r.status == "fail" for r in results) else "pass") == expected


def test_not_worse_than(tmp_path, demo_cells):
    policy = load_policy(write(tmp_path, "regressions:\n  retrieval/hit@5: {rule: not_worse_than, max_drop: 0.05}\n"))
    (bad,) = evaluate_gate(demo_cells["regression"], policy, demo_cells["baseline"])
    (ok,) = evaluate_gate(demo_cells["noise"], policy, demo_cells["baseline"])
    assert bad.status == "fail" and ok.status == "pass"


def test_missing_metric_cannot_evaluate(tmp_path, demo_cells, capsys):
    policy = write(tmp_path, "thresholds:\n  generation/no_such_metric: {min: 0.5}\n")
    assert cli(["gate", str(demo_cells["baseline"].path), "--policy", str(policy)]) == 2
    assert "ERROR" in capsys.readouterr().out


def test_endpoint_error_rate(tmp_path, demo_cells):
    import dataclasses

    policy = load_policy(write(tmp_path, "errors:\n  max_error_rate: 0.1\n"))
    (none,) = evaluate_gate(demo_cells["baseline"], policy)
    assert none.status == "pass" and none.value == "0 calls"
    metrics = {**demo_cells["baseline"].metrics, "counts": {"endpoint_calls": 50, "endpoint_failures": 8}}
    (bad,) = evaluate_gate(dataclasses.replace(demo_cells["baseline"], metrics=metrics), policy)
    assert bad.status == "fail" and "8 of 50" in bad.detail


@pytest.mark.parametrize(("text", "needle"), [
    ("threshold:\n  a/b: {min: 1}\n", ":1: [threshold] unknown section"),
    ("thresholds:\n  hit5: {min: 1}\n", ":2: [hit5] metric must be written section/name"),
    ("thresholds:\n  a/b: {minimum: 1}\n", "[a/b] threshold must be"),
    ("regressions:\n  a/b: {rule: better, alpha: 0.1}\n", "regression rule must be one of"),
    ("regressions:\n  a/b: {rule: not_worse_than}\n", "add ['max_drop']"),
    ("thresholds: [\n", "invalid YAML"),
])
def test_bad_policies_name_line_and_key(tmp_path, text, needle):
    with pytest.raises(ConfigError) as info:
        load_policy(write(tmp_path, text))
    assert needle in str(info.value)


def test_bad_policy_exits_2(tmp_path, demo_cells):
    assert cli(["gate", str(demo_cells["baseline"].path), "--policy", str(tmp_path / "none.yaml")]) == 2


def test_junit_marks_failures_and_errors():
    from rag_bench.reporting.gate import RuleResult

    xml = junit_xml([RuleResult("a", "pass", "1", "1"), RuleResult("b <= 0", "fail", "3", "0", "x & y"),
                     RuleResult("c", "error", "n/a", "", "missing")])
    suite = ET.fromstring(xml)
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["a", "b <= 0", "c"]
    assert cases[1].find("failure") is not None and "x & y" in cases[1].find("failure").get("message")
    assert cases[2].find("error") is not None and suite.get("failures") == "1" and suite.get("errors") == "1"
    assert exit_code([RuleResult("a", "fail", "", "")]) == 1
