"""Release gate: every rule kind, exit codes, Markdown and JUnit output, a planted regression vs noise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from rag_bench.errors import ConfigError
from rag_bench.reporting.gate import evaluate_gate, exit_code, junit_xml, load_policy
from rag_bench.tracking.download import load_cell_or_run

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


def _with(cell, *, correct: float, stand_in: bool):
    import dataclasses

    metrics = {**cell.metrics, "generation": {**cell.metrics["generation"], "correct": correct},
               "methods": {**(cell.metrics.get("methods") or {}), "generator_stand_in": stand_in}}
    return dataclasses.replace(cell, metrics=metrics)


def test_release_policy_fails_a_model_cell_whose_answers_are_all_wrong(demo_cells):
    """The example policy used to pass a cell with generation/correct 0.000."""
    wrong = _with(demo_cells["baseline"], correct=0.0, stand_in=False)
    failed = [r.name for r in evaluate_gate(wrong, load_policy("conf/gate/release.yaml")) if r.status == "fail"]
    assert failed == ["generation/correct >= 0.25"]


def test_release_policy_leaves_a_stand_ins_answers_undecided(demo_cells):
    """Issue 56 item 2: the shipped policy gates only what the configured generator can decide. With
    the extractive stand-in, generation/correct (needs_model) is neither failed nor passed on its
    quirks: it is reported as skipped, saying why; retrieval and refusal rules still apply."""
    stand_in = _with(demo_cells["baseline"], correct=0.0, stand_in=True)
    policy = load_policy("conf/gate/release.yaml")
    results = {r.name: r for r in evaluate_gate(stand_in, policy, stand_in)}
    rule = results["generation/correct >= 0.25"]
    assert (rule.status, rule.value) == ("pass", "skipped") and "stand-in" in rule.detail
    assert "generator=xllamacpp" in rule.detail
    assert results["generation/correct not_worse_than"].value == "skipped"
    assert results["retrieval/hit@5 >= 0.8"].value != "skipped"
    assert results["abstention/correct_refusal_rate >= 0.8"].value != "skipped"


def test_needs_model_must_be_a_boolean(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_policy(write(tmp_path, "thresholds:\n  generation/correct: {min: 0.3, needs_model: yes please}\n"
                                    "regressions:\n  generation/correct: {rule: not_worse_than, max_drop: 0.1, "
                                    "needs_model: 1}\n"))
    text = str(err.value)
    assert text.count("needs_model must be true or false") == 2 and "policy.yaml:2" in text


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
    """A measure rag_bench knows that this cell did not compute (no judge ran): cannot evaluate."""
    policy = write(tmp_path, "thresholds:\n  judge/judge_faithfulness: {min: 0.5}\n")
    assert cli(["gate", str(demo_cells["baseline"].path), "--policy", str(policy)]) == 2
    assert "ERROR" in capsys.readouterr().out


def test_a_name_that_is_no_measure_is_refused_with_the_closest_one(tmp_path, demo_cells, capsys):
    policy = write(tmp_path, "thresholds:\n  retrieval/hit@5: {min: 0.5}\n  generation/corect: {min: 0.5}\n")
    assert cli(["gate", str(demo_cells["baseline"].path), "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert "policy.yaml:3: [generation/corect] 'generation/corect' is not a measure" in err
    assert "did you mean generation/correct?" in err


def test_a_regression_of_a_lower_is_better_measure_is_a_rise(demo_cells):
    """false_refusal_rate going up is the regression; before the measure registry every rule took
    "down" as worse, so a cell refusing far more often passed and one refusing less failed."""
    import dataclasses

    base = demo_cells["baseline"]
    rate = base.metric("abstention/false_refusal_rate")
    worse = dataclasses.replace(base, metrics={**base.metrics, "abstention": {
        **base.metrics["abstention"], "false_refusal_rate": rate + 0.2}})
    better = dataclasses.replace(base, metrics={**base.metrics, "abstention": {
        **base.metrics["abstention"], "false_refusal_rate": max(0.0, rate - 0.2)}})
    policy = {"regressions": {"abstention/false_refusal_rate": {"rule": "not_worse_than", "max_drop": 0.05}}}
    (bad,) = evaluate_gate(worse, policy, base)
    (good,) = evaluate_gate(better, policy, base)
    assert (bad.status, good.status) == ("fail", "pass")
    assert bad.limit == f"<= {rate + 0.05:.4f}"


@pytest.mark.parametrize("key", ["counts/unlocated_passages", "counts/endpoint_failures", "citation/invalid_citations",
                                 "failures/retrieval_miss", "latency/retrieve_p95_ms", "cost/embeddings_computed"])
def test_a_count_of_what_went_wrong_regresses_when_it_rises(demo_cells, key):
    """counts/* once defaulted to "higher is better": not_worse_than passed an increase."""
    import dataclasses

    base = demo_cells["baseline"]
    section, _, name = key.partition("/")

    def with_value(v):
        return dataclasses.replace(base, metrics={**base.metrics, section: {**base.metrics.get(section, {}), name: v}})

    policy = {"regressions": {key: {"rule": "not_worse_than", "max_drop": 0}}}
    (rise,) = evaluate_gate(with_value(7), policy, with_value(2))
    (fall,) = evaluate_gate(with_value(2), policy, with_value(7))
    assert (rise.status, fall.status) == ("fail", "pass") and rise.limit == "<= 2.0000"


@pytest.mark.parametrize(("key", "needle"), [
    ("counts/chunks", "'counts/chunks' is descriptive"),
    ("generation/answer_words", "'generation/answer_words' is descriptive"),
    ("counts/unlocated_pasages", "'counts/unlocated_pasages' declares no direction"),
    ("nosuch/thing", "'nosuch/thing' declares no direction"),
])
def test_a_regression_rule_needs_a_declared_direction(tmp_path, key, needle):
    """A rule on a figure that declares no direction, or a descriptive one, is refused with the
    policy (exit 2), never judged by a default direction."""
    with pytest.raises(ConfigError) as info:
        load_policy(write(tmp_path, f"regressions:\n  {key}: {{rule: not_worse_than, max_drop: 0}}\n"))
    assert f"policy.yaml:2: [{key}] {needle}" in str(info.value) and "so no change of it is a regression" in str(info.value)
    if "pasages" in key:
        assert "did you mean counts/unlocated_passages?" in str(info.value)
    # A threshold needs no direction.
    load_policy(write(tmp_path, f"thresholds:\n  {key}: {{max: 3}}\n"))


def test_an_undeclared_direction_in_a_policy_built_in_code_is_an_error_not_a_default(demo_cells):
    policy = {"regressions": {"counts/whatever": {"rule": "not_worse_than", "max_drop": 0}}}
    (res,) = evaluate_gate(demo_cells["baseline"], policy, demo_cells["baseline"])
    assert res.status == "error" and "declares no direction" in res.detail


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


def test_every_policy_problem_is_reported_at_once(tmp_path):
    text = ("thresholds:\n  retrieval/hit@5: {min: '0.8'}\n  hit@10: {min: 0.5}\n"
            "regressions: [retrieval/hit@5]\nerrors:\n  max_error_rate: -1\n")
    with pytest.raises(ConfigError) as info:
        load_policy(write(tmp_path, text))
    msg = str(info.value)
    assert "4 problems in the policy" in msg
    for needle in (":2: [retrieval/hit@5] min must be a finite number",
                   ":3: [hit@10] metric must be written section/name",
                   ":4: [regressions] regressions must be a mapping", ":6: [max_error_rate] max_error_rate must"):
        assert needle in msg


def test_yaml_anchors_and_merge_keys_still_work(tmp_path):
    policy = load_policy(write(tmp_path, "thresholds:\n  retrieval/hit@5: &r {min: 0.5}\n  retrieval/mrr: *r\n"
                                         "  retrieval/map: {<<: *r, max: 1}\n"))
    assert policy["thresholds"]["retrieval/map"] == {"min": 0.5, "max": 1}


@pytest.mark.parametrize(("value", "kind"), [({"hit@5": 1.0}, "a mapping"), ([0.1, 0.2], "a list"), ("0.9", "text"),
                                             (True, "a bool"), (None, "null"), (float("nan"), "not finite")])
def test_metric_that_is_not_a_number_cannot_be_evaluated(demo_cells, value, kind):
    import dataclasses

    cell = dataclasses.replace(demo_cells["baseline"], metrics={**demo_cells["baseline"].metrics, "odd": {"x": value}})
    assert cell.metric("odd/x") is None and cell.metric("retrieval/hit@5") is not None
    (result,) = evaluate_gate(cell, {"thresholds": {"odd/x": {"min": 0.5}}})
    assert result.status == "error" and f"odd/x in metrics.json is {kind}, not a number" in result.detail


def test_gate_and_compare_refuse_a_baseline_of_another_dataset(demo_cells, tmp_path, capsys):
    from tests.conftest import TINY
    from tests.runner.test_run_cell import run

    tiny = str(run(tmp_path, dataset=TINY))
    demo = str(demo_cells["baseline"].path)
    policy = write(tmp_path, "regressions:\n  retrieval/hit@5: {rule: not_worse_than, max_drop: 1}\n")
    assert cli(["gate", demo, "--policy", str(policy), "--baseline", tiny]) == 2
    err = capsys.readouterr().err
    fps = [demo_cells["baseline"].dataset_fingerprint, json.loads((Path(tiny) / "metrics.json").read_text())[
        "dataset_fingerprint"]]
    assert "[dataset_fingerprint] the two cells were computed on different datasets" in err
    assert all(fp and fp in err for fp in fps) and "fix: pass a --baseline evaluated on the same dataset" in err
    assert cli(["compare", tiny, demo]) == 2
    assert "computed on different datasets" in capsys.readouterr().err


def test_cell_named_by_a_finished_mlflow_run_id(tmp_path, capsys, monkeypatch):
    """Artifacts are logged before DONE is written, so a downloaded run has no DONE: a FINISHED run
    counts as done (and only such a run)."""
    from mlflow.tracking import MlflowClient

    from rag_bench.runner.main import run_cell
    from rag_bench.tracking.mlflow_tracker import finish_all
    from tests.conftest import TINY, compose_config

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    try:
        folder = run_cell(compose_config([f"dataset.path={TINY}", f"output.root={tmp_path / 'exp'}",
                                          "tracking=mlflow", f"tracking.uri={uri}"]))
    finally:
        finish_all(ok=True)
    run_id = json.loads((folder / "DONE").read_text())["mlflow_run_id"]
    assert "DONE" not in {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}
    policy = write(tmp_path, "thresholds:\n  retrieval/hit@5: {min: 0.5}\n")
    assert cli(["gate", run_id, "--policy", str(policy), "--tracking-uri", uri, "--baseline", str(folder)]) == 0
    assert "PASS" in capsys.readouterr().out
    cell = load_cell_or_run(run_id, tracking_uri=uri)
    assert cell.cell_id == folder.name and cell.done["mlflow_run_id"] == run_id
    assert cell.metrics == json.loads((folder / "metrics.json").read_text())
    from rag_bench.decision.decide import cell_name

    # named as its MLflow run (its name in its sweep), not by its temporary download folder
    assert cell_name(cell) == MlflowClient(tracking_uri=uri).get_run(run_id).info.run_name == cell_name(load_cell_or_run(folder))
    # the downloaded copy goes when the process ends (a `rag-bench gate RUN_ID` left one in /tmp each time)
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "MLFLOW_TRACKING_URI": uri}
    gate = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "gate", run_id, "--policy", str(policy)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert gate.returncode == 0 and "PASS" in gate.stdout, gate.stdout + gate.stderr
    assert not list(temp.glob("rag_bench_cell_*")), list(temp.iterdir())


def _injection_cell(tmp_path, injection: dict | None):
    from rag_bench.cells import Cell

    metrics = {"security": {"unauthorized_retrievals": 0}} | ({"injection": injection} if injection is not None else {})
    return Cell("c", tmp_path, {}, metrics, {})


def test_an_if_present_threshold_passes_an_absent_metric_and_bounds_a_present_one(tmp_path):
    policy = load_policy(write(tmp_path, "thresholds:\n  injection/followed: {max: 0, if_present: true}\n"
                                         "  security/unauthorized_retrievals: {max: 0}\n"))
    (absent, _) = evaluate_gate(_injection_cell(tmp_path, None), policy)
    assert (absent.name, absent.status, absent.value) == ("injection/followed <= 0", "pass", "absent")
    (followed, _) = evaluate_gate(_injection_cell(tmp_path, {"followed": 0.25}), policy)
    assert (followed.status, followed.value) == ("fail", "0.25")
    (clean, _) = evaluate_gate(_injection_cell(tmp_path, {"followed": 0.0}), policy)
    assert clean.status == "pass"
    # a metric the cell reports but not as a number is an error even with if_present
    (null, _) = evaluate_gate(_injection_cell(tmp_path, {"followed": None}), policy)
    assert null.status == "error" and "null" in null.detail
    # without if_present an absent metric cannot be evaluated, as for every other rule
    strict = load_policy(write(tmp_path, "thresholds:\n  injection/followed: {max: 0}\n", "strict.yaml"))
    assert [r.status for r in evaluate_gate(_injection_cell(tmp_path, None), strict)] == ["error"]


def test_if_present_must_be_a_boolean_beside_a_bound(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_policy(write(tmp_path, "thresholds:\n  injection/followed: {max: 0, if_present: yes please}\n"
                                    "  injection/retrieved: {if_present: true}\n"))
    text = str(info.value)
    assert "if_present must be true or false" in text and "threshold must be {min: x} and/or {max: y}" in text


def test_the_release_policy_bounds_followed_injections_where_reported():
    rule = load_policy("conf/gate/release.yaml")["thresholds"]["injection/followed"]
    assert rule == {"max": 0, "if_present": True}


def test_the_release_policy_bounds_documents_that_failed_to_parse(tmp_path):
    # a malformed or encrypted PDF is a recorded failure and the sweep exits 0; the shipped release
    # policy is what refuses to release on it -- and passes a dataset without files to parse
    from rag_bench.cells import Cell
    from rag_bench.runner.config import CONF_DIR

    policy = load_policy(CONF_DIR / "gate" / "release.yaml")

    def rule(metrics: dict):
        (found,) = [r for r in evaluate_gate(Cell("c", tmp_path, {}, metrics, {}), policy)
                    if r.name == "parse/failed_documents <= 0"]
        return found.status, found.value

    assert rule({"parse": {"failed_documents": 2}, "parse_failures": {"locked": "a password is needed"}}) == \
        ("fail", "2")
    assert rule({"parse": {"failed_documents": 0}}) == ("pass", "0")
    assert rule({}) == ("pass", "absent")
