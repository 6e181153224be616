"""The offline claim judge against people's labels (issue 42): ``rag-bench evaluate`` then ``rag-bench
calibrate`` on the two shared human-judgment sets, through the CLI. Skipped when the sets are absent."""

from __future__ import annotations

import json

import pytest

from rag_bench.cli import main
from tests.conftest import SHARED

JUDGMENTS = SHARED / "datasets" / "human-judgments"
# (set, the least kappa of the offline claim judge, the lexical proxy's kappa for comparison)
SETS = [("begin-wow-dev", 0.70, 0.64), ("wice-claim-dev", 0.35, 0.25)]


@pytest.mark.slow
@pytest.mark.skipif(not JUDGMENTS.is_dir(), reason="../shared/datasets/human-judgments is absent")
@pytest.mark.parametrize(("name", "least", "proxy"), SETS)
def test_calibrate_prints_the_claim_judge_above_the_proxy(tmp_path, capsys, name, least, proxy):
    folder = JUDGMENTS / name
    assert main(["evaluate", str(folder / "outputs.jsonl"), "--dataset", str(folder / "ds"), "--name", name,
                 "tracking=none", f"output.root={tmp_path}", "experiment.name=h"]) == 0
    capsys.readouterr()
    (cell,) = [d for d in (tmp_path / "h").iterdir() if (d / "DONE").is_file()]
    assert main(["calibrate", str(cell), "--labels", str(folder / "labels.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "faithfulness (offline claim judge)" in text and "citation support per claim" in text
    assert main(["calibrate", str(cell), "--labels", str(folder / "labels.jsonl"), "--json"]) == 0
    rows = {m["measure"]: m for m in json.loads(capsys.readouterr().out)["measures"]}
    judge, per_claim = rows["faithfulness (offline claim judge)"], rows["citation support per claim"]
    old_proxy, old_support = rows["faithfulness (lexical proxy)"], rows["citation support"]
    # every labelled answer matched (a question-only answer has no claim: undefined, as for ragas)
    assert judge["n"] + judge["n_undefined"] == {"begin-wow-dev": 430, "wice-claim-dev": 349}[name]
    assert judge["n_undefined"] <= 15 and judge["kappa"] >= least > old_proxy["kappa"] >= proxy - 0.01
    # the old citation support says yes to every answer; the per-claim one does not
    assert old_support["auto_rate"] == 1.0 and 0.1 < per_claim["auto_rate"] < 0.9 and per_claim["kappa"] >= least
