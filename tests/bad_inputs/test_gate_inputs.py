"""Hostile and careless inputs to `rag-bench gate`, through the real command line (in process).

Exit 1 is a verdict ("the gate failed"), so nothing that goes wrong may give 1: every case here
must exit 2 ("cannot evaluate"), name the file:line and key (or the field) on stderr, print no
traceback, and — when the inputs could not be read or the policy is invalid — write no JUnit file.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from rag_bench.reporting.gate import MAX_POLICY_BYTES
from tests.conftest import TINY
from tests.runner.test_run_cell import run

Build = Callable[[Path, dict[str, Path]], list[str]]


@pytest.fixture(scope="module")
def cells(tmp_path_factory) -> dict[str, Path]:
    """A finished cell of the tiny set, and one of an edited copy of it (another dataset fingerprint)."""
    root = tmp_path_factory.mktemp("gate-cells")
    other = root / "tiny-edited"
    shutil.copytree(TINY, other)
    with open(other / "docs" / "security.md", "a", encoding="utf-8") as fh:
        fh.write("\n## Badges\n\nVisitors wear a red badge at all times.\n")
    return {"cell": run(root / "a"), "other": run(root / "b", dataset=other)}


def policy(text: str | bytes, *extra: str) -> Build:
    """A case: write ``text`` as the policy; ``BASE`` in ``extra`` stands for the cell itself."""
    def build(tmp: Path, cells: dict[str, Path]) -> list[str]:
        p = tmp / "policy.yaml"
        p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return [str(cells["cell"]), "--policy", str(p), *(str(cells["cell"]) if x == "BASE" else x for x in extra)]
    return build


def cell_copy(edit: Callable[[Path], None], text: str = "thresholds: {retrieval/hit@5: {min: 0.5}}\n") -> Build:
    """A case: a copy of the valid cell, broken by ``edit``, gated by a valid policy."""
    def build(tmp: Path, cells: dict[str, Path]) -> list[str]:
        copy = tmp / "cells" / cells["cell"].name
        shutil.copytree(cells["cell"], copy)
        edit(copy)
        p = tmp / "policy.yaml"
        p.write_text(text)
        return [str(copy), "--policy", str(p)]
    return build


def other_dataset_baseline(tmp: Path, cells: dict[str, Path]) -> list[str]:
    p = tmp / "policy.yaml"
    p.write_text("regressions:\n  retrieval/hit@5: {rule: not_worse_than, max_drop: 0.05}\n")
    return [str(cells["cell"]), "--policy", str(p), "--baseline", str(cells["other"])]


def junit_at(where: Callable[[Path, Path], Path]) -> Build:
    """A case: a valid policy, ``--junit`` at ``where(tmp, cell)``."""
    def build(tmp: Path, cells: dict[str, Path]) -> list[str]:
        p = tmp / "policy.yaml"
        p.write_text("thresholds: {retrieval/hit@5: {min: 0.5}}\n")
        return [str(cells["cell"]), "--policy", str(p), "--junit", str(where(tmp, cells["cell"]))]
    return build


def folder(tmp: Path, _cell: Path) -> Path:
    (tmp / "reports").mkdir()
    return tmp / "reports"


def under_a_file(tmp: Path, _cell: Path) -> Path:
    (tmp / "plain.txt").write_text("x")
    return tmp / "plain.txt" / "gate.xml"


def policy_dir(tmp: Path, cells: dict[str, Path]) -> list[str]:
    (tmp / "policy.yaml").mkdir()
    return [str(cells["cell"]), "--policy", str(tmp / "policy.yaml")]


# Nine nested levels of nine aliases: 9**9 (387 million) nodes once expanded, 800 bytes on disk.
BOMB = "\n".join(["thresholds:", "  a/a: {min: 1}", "  lol: &l0 [x, x, x, x, x, x, x, x, x]"]
                 + [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]) + "\n"
MANY = """\
threshold:
  retrieval/hit@5: {min: 0.5}
thresholds:
  retrieval/hit@5: {min: high}
  mrr@10: {min: 0.5}
  retrieval/ndcg@10: {minimum: 0.5}
regressions:
  hit@5: {rule: not_worse_than, max_drop: -0.1}
errors:
  max_error_rate: 5
"""

# (id, case, needles on stderr, whether a JUnit file is written: only when the policy and the cells
# were read and a rule itself cannot be evaluated — the JUnit file then lists it as an <error>)
CASES: list[tuple[str, Build, list[str], bool]] = [
    ("metric-is-a-dict", policy("thresholds:\n  by_tag/internal: {min: 0.5}\n"),
     ["by_tag/internal >= 0.5", "is a mapping, not a number", "fix:"], True),
    ("metric-is-a-list", policy("thresholds:\n  ci/retrieval/hit@5: {min: 0.5}\n"),
     ["ci/retrieval/hit@5 in metrics.json is a list, not a number"], True),
    ("metric-is-text", policy("thresholds:\n  dataset_fingerprint/x: {min: 0.5}\n"),
     ["dataset_fingerprint/x is not in metrics.json"], True),
    ("metric-does-not-exist", policy("thresholds:\n  generation/no_such_metric: {min: 0.5}\n"),
     ["policy.yaml:2: [generation/no_such_metric] 'generation/no_such_metric' is not a measure of rag_bench",
      "did you mean"], False),
    ("measure-the-cell-did-not-compute", policy("thresholds:\n  judge/judge_faithfulness: {min: 0.5}\n"),
     ["judge/judge_faithfulness is not in metrics.json"], True),
    ("threshold-as-text", policy("thresholds:\n  retrieval/hit@5: {min: '0.8'}\n"),
     ["policy.yaml:2: [retrieval/hit@5] min must be a finite number, got '0.8' (text)"], False),
    ("threshold-negative-error-rate", policy("errors:\n  max_error_rate: -0.1\n"),
     ["policy.yaml:2: [max_error_rate] max_error_rate must be a number in [0, 1], got -0.1"], False),
    ("error-rate-as-text", policy("errors:\n  max_error_rate: '5%'\n"),
     ["policy.yaml:2: [max_error_rate] max_error_rate must be a number in [0, 1], got '5%' (text)"], False),
    ("error-rate-empty", policy("errors:\n  max_error_rate:\n"),
     ["policy.yaml:2: [max_error_rate] max_error_rate must be a number in [0, 1], got None (empty)"], False),
    ("regression-without-stage", policy("regressions:\n  hit@5: {rule: no_significant_regression, alpha: 0.05}\n",
                                        "--baseline", "BASE"),
     ["policy.yaml:2: [hit@5] metric must be written section/name", "fix: e.g. retrieval/hit@5"], False),
    ("thresholds-as-list", policy("thresholds:\n  - retrieval/hit@5: {min: 0.5}\n"),
     ["policy.yaml:1: [thresholds] thresholds must be a mapping", "(a list)"], False),
    ("regressions-as-list", policy("regressions: [retrieval/hit@5]\n", "--baseline", "BASE"),
     ["policy.yaml:1: [regressions] regressions must be a mapping"], False),
    ("errors-as-scalar", policy("errors: 0.05\n"),
     ["policy.yaml:1: [errors] errors must be a mapping, got 0.05", "fix: e.g. errors: {max_error_rate: 0.05}"],
     False),
    ("min-nan", policy("thresholds:\n  retrieval/hit@5: {min: .nan}\n"),
     ["policy.yaml:2: [retrieval/hit@5] min must be a finite number, got nan"], False),
    ("max-inf", policy("thresholds:\n  retrieval/hit@5: {max: .inf}\n"),
     ["policy.yaml:2: [retrieval/hit@5] max must be a finite number, got inf"], False),
    ("bool-threshold", policy("thresholds:\n  retrieval/hit@5: {min: yes}\n"),
     ["policy.yaml:2: [retrieval/hit@5] min must be a finite number, got True (a bool)"], False),
    ("unknown-threshold-key", policy("thresholds:\n  retrieval/hit@5: {minimum: 0.5}\n"),
     ["policy.yaml:2: [retrieval/hit@5] threshold must be {min: x} and/or {max: y}: unknown key 'minimum'"], False),
    ("min-above-max", policy("thresholds:\n  retrieval/hit@5: {min: 0.9, max: 0.1}\n"),
     ["policy.yaml:2: [retrieval/hit@5] min 0.9 is above max 0.1"], False),
    ("unknown-rule-name", policy("regressions:\n  retrieval/hit@5: {rule: better_than, alpha: 0.1}\n"),
     ["policy.yaml:2: [retrieval/hit@5] regression rule must be one of", "got 'better_than'"], False),
    ("alpha-out-of-range", policy("regressions:\n  retrieval/hit@5: {rule: no_significant_regression, alpha: 5}\n"),
     ["policy.yaml:2: [retrieval/hit@5] alpha must be a number in [0, 1], got 5"], False),
    ("unknown-section", policy("treshold:\n  retrieval/hit@5: {min: 0.5}\n"),
     ["policy.yaml:1: [treshold] unknown section 'treshold'", "did you mean 'thresholds'?"], False),
    ("duplicate-key", policy("thresholds:\n  retrieval/hit@5: {min: 0.9}\n  retrieval/hit@5: {min: 0.1}\n"),
     ["policy.yaml:3: [retrieval/hit@5] 'retrieval/hit@5' is written twice (first on line 2)"], False),
    ("empty-file", policy(""), ["policy.yaml:1: [policy] policy is empty"], False),
    ("only-empty-sections", policy("thresholds:\nregressions: {}\n"), ["policy.yaml:1: [policy] policy has no rules"],
     False),
    ("not-a-mapping", policy("- retrieval/hit@5\n"), ["policy.yaml:1: [policy] a policy is a mapping"], False),
    ("yaml-syntax", policy("thresholds:\n  retrieval/hit@5: {min: 0.5\n"), ["policy.yaml:3: [yaml] invalid YAML"],
     False),
    ("alias-bomb", policy(BOMB), ["policy.yaml:", "[yaml] policy has more than 100000 YAML nodes"], False),
    ("python-tag", policy("thresholds: !!python/object/apply:os.system ['touch PWNED']\n"),
     ["policy.yaml:1: [yaml] invalid YAML", "python/object/apply:os.system"], False),
    ("non-utf8-bytes", policy(b"thresholds:\n  # caf\xe9\n  retrieval/hit@5: {min: 0.5}\n"),
     ["policy.yaml:2: [encoding] not valid UTF-8 (byte 0xe9"], False),
    ("control-character", policy("thresholds:\n  retrieval/hit@5: {min: 0.5}\x07\n"),
     ["policy.yaml:2: [yaml] invalid YAML"], False),
    ("huge-file", policy("# " + "x" * MAX_POLICY_BYTES + "\n"), ["policy.yaml: [--policy] policy is larger than"],
     False),
    ("policy-is-a-directory", policy_dir, ["policy.yaml: [--policy] policy path is a directory"], False),
    ("policy-missing", lambda tmp, cells: [str(cells["cell"]), "--policy", str(tmp / "nope.yaml")],
     ["nope.yaml: [--policy] policy file not found"], False),
    ("many-problems-at-once", policy(MANY),
     ["7 problems in the policy", "policy.yaml:1: [threshold] unknown section",
      "policy.yaml:4: [retrieval/hit@5] min must be",
      "policy.yaml:5: [mrr@10] metric must be written section/name", "policy.yaml:6: [retrieval/ndcg@10] threshold",
      "policy.yaml:8: [hit@5] metric must be written section/name", "policy.yaml:8: [hit@5] max_drop must be",
      "policy.yaml:10: [max_error_rate] max_error_rate must be a number in [0, 1], got 5"], False),
    ("cell-without-DONE", cell_copy(lambda c: (c / "DONE").unlink()),
     ["is an unfinished cell folder (no DONE: its sweep stopped, or is still running it)",
      "fix: run the sweep's command again (it redoes unfinished cells); `rag-bench status"], False),
    ("cell-metrics-not-json", cell_copy(lambda c: (c / "metrics.json").write_text('{"retrieval": {"hit@5": 1.0,\n')),
     ["metrics.json:2: [metrics.json] unreadable"], False),
    ("cell-metrics-a-list", cell_copy(lambda c: (c / "metrics.json").write_text("[1, 2]\n")),
     ["metrics.json:1: [metrics.json] must hold a mapping, got list"], False),
    ("cell-records-not-parquet", cell_copy(lambda c: (c / "records.parquet").write_bytes(b"PAR1 nonsense")),
     ["records.parquet: [records] unreadable parquet"], False),
    ("baseline-from-another-dataset", other_dataset_baseline,
     ["[dataset_fingerprint] the two cells were computed on different datasets", "has fingerprint",
      "fix: pass a --baseline evaluated on the same dataset version"], False),
    ("junit-is-a-folder", junit_at(folder), ["reports: [--junit] is a directory, not a file", "gate.xml"], False),
    ("junit-under-a-file", junit_at(under_a_file), ["[--junit]", "plain.txt is not a directory"], False),
    ("junit-inside-the-cell", junit_at(lambda tmp, cell: cell / "metrics.json"),
     ["[--junit] would overwrite", "which the gate reads"], False),
]


@pytest.mark.parametrize(("build", "needles", "writes_junit"),
                         [pytest.param(b, n, w, id=i) for i, b, n, w in CASES])
def test_hostile_gate_input_exits_2(build: Build, needles: list[str], writes_junit: bool, cells, tmp_path, capsys,
                                    monkeypatch):
    monkeypatch.chdir(tmp_path)  # a shell command smuggled into the policy would land here
    argv = build(tmp_path, cells)
    junit = tmp_path / "out" / "gate.xml"
    if "--junit" not in argv:
        argv += ["--junit", str(junit)]
    before = {p: p.stat().st_mtime_ns for p in cells["cell"].iterdir()}
    code = cli(["gate", *argv])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    for needle in needles:
        assert needle in err, f"{needle!r} not in stderr:\n{err}"
    assert "Traceback" not in out + err and not (tmp_path / "PWNED").exists()
    if writes_junit:  # evaluated; the rule that cannot be evaluated is a JUnit <error>, not a pass or a failure
        suite = ET.parse(junit).getroot()
        assert suite.get("errors") != "0" and suite.get("failures") == "0"
        assert "CANNOT EVALUATE" in out
    else:  # could not evaluate at all: nothing written, no verdict printed
        assert not (tmp_path / "out").exists() and "rag-bench gate:" not in out
        assert not any(p.suffix == ".xml" or p.name.startswith(".gate") for p in tmp_path.rglob("*"))
    assert {p: p.stat().st_mtime_ns for p in cells["cell"].iterdir()} == before  # the cell is never touched


@pytest.mark.parametrize(("rule", "expected"), [("{min: 0.5}", 0), ("{max: 0.5}", 1), ("{min: 0, max: 1}", 0)])
def test_well_formed_policy_still_gives_a_verdict(rule: str, expected: int, cells, tmp_path, capsys):
    p = tmp_path / "policy.yaml"
    p.write_text(f"thresholds:\n  retrieval/hit@5: {rule}\nerrors:\n  max_error_rate: 0.05\n")
    junit = tmp_path / "out" / "gate.xml"
    assert cli(["gate", str(cells["cell"]), "--policy", str(p), "--baseline", str(cells["cell"]),
                "--junit", str(junit)]) == expected
    out, err = capsys.readouterr()
    assert ("PASS" if expected == 0 else "FAIL") in out and not err
    assert ET.parse(junit).getroot().get("failures") == str(expected)


def test_same_dataset_baseline_is_accepted(cells, tmp_path, capsys):
    """The fingerprint check refuses only a different dataset: the edited set's own cell is fine."""
    p = tmp_path / "policy.yaml"
    p.write_text("regressions:\n  retrieval/hit@5: {rule: not_worse_than, max_drop: 0.05}\n")
    assert cli(["gate", str(cells["other"]), "--policy", str(p), "--baseline", str(cells["other"])]) == 0
    fingerprints = {json.loads((c / "metrics.json").read_text())["dataset_fingerprint"] for c in cells.values()}
    assert len(fingerprints) == 2


def test_unexpected_error_exits_2_in_one_line(cells, tmp_path, capsys, monkeypatch):
    """A bug nobody foresaw is still "cannot evaluate" (2), never a traceback read as a failed gate (1)."""
    import rag_bench.reporting.gate as gate

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(gate, "evaluate_gate", broken)
    p = tmp_path / "policy.yaml"
    p.write_text("thresholds: {retrieval/hit@5: {min: 0.5}}\n")
    assert cli(["gate", str(cells["cell"]), "--policy", str(p), "--junit", str(tmp_path / "gate.xml")]) == 2
    out, err = capsys.readouterr()
    assert err == "error: gate could not evaluate: ZeroDivisionError: division by zero second line -- fix: check " \
                  "the cell, baseline and policy files\n"
    assert not out and not (tmp_path / "gate.xml").exists()


def test_unfinished_mlflow_run_is_refused(cells, tmp_path, capsys):
    """A run id whose MLflow run is not FINISHED (killed while logging) is unfinished work."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("gate", artifact_location=(tmp_path / "mlartifacts").as_uri())
    run_ = client.create_run(exp_id, tags={"cell_id": cells["cell"].name})
    staged = tmp_path / "staged"
    shutil.copytree(cells["cell"], staged, ignore=shutil.ignore_patterns("DONE"))
    client.log_artifacts(run_.info.run_id, str(staged))
    p = tmp_path / "policy.yaml"
    p.write_text("thresholds: {retrieval/hit@5: {min: 0.5}}\n")
    argv = ["gate", run_.info.run_id, "--policy", str(p), "--tracking-uri", uri, "--junit", str(tmp_path / "g.xml")]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert f"{run_.info.run_id}: [status] MLflow run is RUNNING, not FINISHED" in err
    assert not (tmp_path / "g.xml").exists()
    client.set_terminated(run_.info.run_id, "FINISHED")  # the same artifacts, once the run finished, are a cell
    assert cli(argv) == 0, capsys.readouterr().err
