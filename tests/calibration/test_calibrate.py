"""rag-bench calibrate: the stand-ins against people's labels, PPI per cell, the CLI (text, JSON, exit 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from rag_bench.calibration.calibrate import calibrate
from rag_bench.calibration.labels import answer_digest, load_labels
from rag_bench.calibration.ppi import ppi_mean
from rag_bench.cells import load_cell
from rag_bench.cli import main

# Eight answerable questions (auto correct 1,1,0,0,1,0,1,0) and two unanswerable ones (one refused).
ANSWERS = ["Forty-five days.", "Ten years.", "I cannot answer this from the provided sources.",
           '<img src=x onerror="document.body.dataset.pwned=1">Blue. </script><b>x</b>', "$95.",
           "Call us.", "13 place settings.", "Zone C.", "I cannot answer this from the provided sources.", "Paris."]
AUTO = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
PEOPLE = [1, 1, 0, 1, 1, 0, 0, 0]  # people disagree on q04 (auto missed it) and q07 (auto over-credited)


def write_cell(root: Path, cell_id: str = "c0ffee000001") -> Path:
    d = root / cell_id
    d.mkdir(parents=True)
    n = len(ANSWERS)
    pd.DataFrame({
        "qid": [f"q{i + 1:02d}" for i in range(n)], "answer": ANSWERS,
        "question": [f"Question {i + 1}?" for i in range(n)], "context_ids": [["doc#0", "doc#1"]] * n,
        "context_texts": [["Passage <b>one</b>.", "Passage two."]] * n, "citations": [["1"], ["3"]] * (n // 2),
        "refused": [a.startswith("I cannot") for a in ANSWERS],
        "answerable": [True] * 8 + [False] * 2,
        "correct": AUTO + [float("nan")] * 2,
        "correct_refusal_rate": [float("nan")] * 8 + [1.0, 0.0],
        "faithfulness": [1.0, 1.0, float("nan"), 0.5, 1.0, 1.0, 1.0, 0.0, float("nan"), 1.0],
    }).to_parquet(d / "records.parquet")
    (d / "config.yaml").write_text("pipeline: {k: 3}\n", encoding="utf-8")
    (d / "metrics.json").write_text("{}", encoding="utf-8")
    (d / "DONE").write_text("{}", encoding="utf-8")
    return d


def write_labels(path: Path, second: bool = True) -> Path:
    rows = [{"qid": f"q{i + 1:02d}", "answer_sha256": answer_digest(ANSWERS[i]), "measure": "correct", "value": v,
             "labeller": "a"} for i, v in enumerate(PEOPLE)]
    rows += [{"qid": "q09", "answer_sha256": answer_digest(ANSWERS[8]), "measure": "correct", "value": 1,
              "labeller": "a"},
             {"qid": "q10", "answer_sha256": answer_digest(ANSWERS[9]), "measure": "correct", "value": 0,
              "labeller": "a"}]
    if second:  # a second labeller on four answers, disagreeing once
        rows += [{"qid": f"q{i + 1:02d}", "answer_sha256": answer_digest(ANSWERS[i]), "measure": "correct",
                  "value": v, "labeller": "b"} for i, v in zip(range(4), [1, 0, 0, 1])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_kappa_ppi_and_labellers_agreement_on_a_cell(tmp_path):
    cell = load_cell(write_cell(tmp_path / "exp"))
    labels = load_labels(write_labels(tmp_path / "labels.jsonl"))
    by = {a.measure: a for a in calibrate([cell], {cell.cell_id: "the cell"}, labels)}
    a = by["correct"]
    assert a.n == 8 and a.n_undefined == 2  # the two unanswerable labels are correct_refusal's
    assert a.kappa == pytest.approx(cohen_kappa_score(PEOPLE, [int(x) for x in AUTO]), abs=1e-12)
    assert a.confusion == ((3, 1), (1, 3))
    assert a.base_rate == pytest.approx(0.5) and a.auto_rate == pytest.approx(0.5)
    # 8 labelled answers, fewer than agreement.MIN_ITEMS: no interval, and the reason (a percentile
    # bootstrap of a handful of answers does not hold its 95 %)
    assert not a.kappa_ci.defined and a.kappa_ci.reason.startswith("8 labelled answers, fewer than the 10")
    assert a.labellers == ("a", "b") and a.labellers_n == 4
    assert a.labellers_kappa == pytest.approx(cohen_kappa_score(PEOPLE[:4], [1, 0, 0, 1]), abs=1e-12)
    (cid, name, p), = a.cells
    assert (cid, name) == (cell.cell_id, "the cell")
    # 8 labelled answers, fewer than ppi.MIN_LABELLED: no PPI mean (a guess from a few labels would
    # come with a confident interval), the raw mean stands
    assert (p.raw_mean, p.n_labelled, p.n_all) == (0.5, 8, 8) and math.isnan(p.mean)
    ref, unclipped = ppi_mean(AUTO, PEOPLE, AUTO, min_labelled=8, bounds=(0.0, 1.0)), ppi_mean(AUTO, PEOPLE, AUTO)
    assert (ref.mean, ref.low, ref.high) == (0.5, max(0.0, unclipped.low), min(1.0, unclipped.high))
    r = by["correct_refusal"]
    assert (r.n, r.confusion) == (2, ((1, 0), (0, 1)))
    f = by["faithfulness (lexical proxy)"]
    assert f.n == 0  # nobody labelled faithfulness: no statistic, no PPI correction
    assert f.cells[0][2].n_labelled == 0


def test_a_label_of_another_answer_text_does_not_apply(tmp_path):
    cell = load_cell(write_cell(tmp_path / "exp"))
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"qid": "q01", "answer_sha256": answer_digest("Forty-five days"), "measure": "correct",
                                "value": 1, "labeller": "a"}) + "\n", encoding="utf-8")
    by = {a.measure: a for a in calibrate([cell], {}, load_labels(path))}
    assert by["correct"].n == 0


def test_cli_text_json_and_bad_labels(tmp_path, capsys):
    exp = tmp_path / "exp"
    write_cell(exp)
    labels = write_labels(tmp_path / "labels.jsonl")
    assert main(["calibrate", str(exp), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "correct_refusal" in out and "PPI" in out and "(n=4, a vs b)" in out
    assert main(["calibrate", str(exp / "c0ffee000001"), "--labels", str(labels), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    correct = next(m for m in data["measures"] if m["measure"] == "correct")
    assert correct["n"] == 8 and correct["cells"][0]["n_labelled"] == 8
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "q01", "measure": "correct", "value": 2, "labeller": "a", "cell": "c0ffee000001"}\n',
                   encoding="utf-8")
    assert main(["calibrate", str(exp), "--labels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "value" in err


def test_a_cell_judged_with_samples_is_calibrated_on_its_mean_column_only(tmp_path):
    """judge.samples=N writes judge_<m>_samples (lists) and judge_<m>_sd beside judge_<m>: only the
    mean column stands in for a judgment (calibrate and report crashed on the list column)."""
    d = write_cell(tmp_path / "exp")
    frame = pd.read_parquet(d / "records.parquet")
    n = len(frame)
    frame["judge_faithfulness"] = [1.0, 0.5] * (n // 2)
    frame["judge_faithfulness_samples"] = [[1.0, 1.0], [0.0, 1.0]] * (n // 2)
    frame["judge_faithfulness_sd"] = [0.0, 0.5] * (n // 2)
    frame.to_parquet(d / "records.parquet")
    cell = load_cell(d)
    names = [a.measure for a in calibrate([cell], {}, load_labels(write_labels(tmp_path / "labels.jsonl")))]
    assert "judge_faithfulness (judge)" in names
    assert not [m for m in names if "_samples" in m or "_sd" in m], names


def test_each_measure_prints_its_bias_and_ppi_mean_beside_kappa(tmp_path, capsys):
    # issue 55: the measure's "yes" rate beside people's, the difference in points, and the PPI mean
    from dataclasses import replace

    from rag_bench.calibration.calibrate import format_text
    from rag_bench.calibration.ppi import PpiEstimate

    exp = tmp_path / "exp"
    write_cell(exp)
    labels = write_labels(tmp_path / "labels.jsonl")
    assert main(["calibrate", str(exp), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("measure"))
    assert head.index("people") < head.index("auto") < head.index("bias") < head.index("kappa") < head.index("PPI mean")
    row = next(line for line in out.splitlines() if line.startswith("correct "))
    assert " 0.50   0.50   +0.0 " in row and "n/a" in row  # 8 labelled answers: no PPI mean (needs 10)
    assert main(["calibrate", str(exp), "--labels", str(labels), "--json"]) == 0
    correct = next(m for m in json.loads(capsys.readouterr().out)["measures"] if m["measure"] == "correct")
    assert correct["bias"] == 0.0
    cell = load_cell(exp / "c0ffee000001")
    a = next(a for a in calibrate([cell], {}, load_labels(labels)) if a.measure == "correct")
    shown = replace(a, auto_rate=0.75, cells=((cell.cell_id, "c", PpiEstimate(0.75, 0.5, 0.3, 0.7, 12, 20)),))
    row = next(line for line in format_text([shown]).splitlines() if line.startswith("correct "))
    assert "+25.0" in row and "0.500 [0.30, 0.70]" in row
