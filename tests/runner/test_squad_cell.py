"""A cell's SQuAD v2 figures equal the official script's: the conformance predictions without
citation markers (`sentence`, `empty`) given to `rag-bench evaluate` as an application's outputs,
over a native dataset built from the conformance gold file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from rag_bench.tracking.base import tracked_metrics
from tests.conftest import SHARED

# metrics.json key (a fraction) -> the official script's key (percent)
KEYS = {"squad_exact": "exact", "squad_f1": "f1", "squad_hasans_exact": "HasAns_exact",
        "squad_hasans_f1": "HasAns_f1", "squad_noans_exact": "NoAns_exact", "squad_noans_f1": "NoAns_f1",
        "exact_match": "HasAns_exact", "token_f1": "HasAns_f1"}


def _vectors() -> Path:
    folder = SHARED / "conformance" / "squad_v2"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: it holds the official SQuAD 2.0 script's output (conformance vectors)")
    return folder


def _dataset(gold: dict, root: Path) -> tuple[Path, dict[str, dict]]:
    """The gold file as a native dataset: one document per paragraph (its context), questions with
    every gold answer as a reference and the first answer's span as evidence. Returns the folder
    and, per question id, the passage an application would have retrieved (its paragraph)."""
    (root / "docs").mkdir(parents=True)
    questions, passages = [], {}
    for a, article in enumerate(gold["data"]):
        for p, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"a{a}p{p}"
            (root / "docs" / f"{doc_id}.txt").write_text(paragraph["context"], encoding="utf-8")
            for qa in paragraph["qas"]:
                answers = [x["text"] for x in qa["answers"]]
                first = qa["answers"][0] if answers else None
                questions.append({
                    "id": qa["id"], "question": qa["question"], "answerable": bool(answers), "answers": answers,
                    "evidence": [{"doc_id": doc_id, "start": first["answer_start"],
                                  "end": first["answer_start"] + len(first["text"])}] if first else []})
                passages[qa["id"]] = {"doc_id": doc_id, "start": 0, "end": len(paragraph["context"])}
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (root / "dataset.yaml").write_text("name: squad-conformance\nlicense: CC BY-SA 4.0 (SQuAD 2.0 dev set)\n")
    return root, passages


@pytest.mark.parametrize("system", ["sentence", "empty"])
def test_an_applications_answers_give_the_official_squad_v2_figures(tmp_path, capsys, system):
    folder = _vectors()
    expected = json.loads((folder / "expected.json").read_text())[system]
    data, passages = _dataset(json.loads((folder / "gold.json").read_text()), tmp_path / "data")
    preds = json.loads((folder / f"pred_{system}.json").read_text())
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("".join(json.dumps({"id": qid, "retrieved": [passages[qid]], "answer": answer}) + "\n"
                               for qid, answer in preds.items()), encoding="utf-8")
    assert cli(["evaluate", str(outputs), "--dataset", str(data), "tracking=none", f"output.root={tmp_path}",
                "experiment.name=squad"]) == 0, capsys.readouterr().err
    (cell,) = [p.parent for p in (tmp_path / "squad").glob("*/DONE")]
    metrics = json.loads((cell / "metrics.json").read_text())
    for ours, theirs in KEYS.items():
        assert 100 * metrics["generation"][ours] == pytest.approx(expected["aggregate"][theirs], abs=1e-9), ours
    n, agg = metrics["n"], expected["aggregate"]
    assert (n["generation/squad_exact"], n["generation/squad_hasans_exact"], n["generation/squad_noans_exact"]) == (
        agg["total"], agg["HasAns_total"], agg["NoAns_total"])
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    for qid, want in expected["per_question"].items():
        assert records.loc[qid, "squad_exact"] == want["exact"], qid
        assert records.loc[qid, "squad_f1"] == pytest.approx(want["f1"], abs=1e-9), qid
    # Every consumer takes them from the measure registry: the console line, MLflow, the report.
    assert f"squad_em={metrics['generation']['squad_exact']:.3f}" in capsys.readouterr().err
    assert {f"generation/{k}" for k in KEYS} <= set(tracked_metrics(metrics))
    if system == "sentence":
        assert cli(["report", str(tmp_path / "squad"), "--out", str(tmp_path / "reports"), "--no-mlflow"]) == 0
        page = (tmp_path / "reports" / "squad" / "index.html").read_text()
        assert "Answer measures: lenient and SQuAD-exact" in page and "squad_f1" in page
        assert f"{metrics['generation']['squad_f1']:.3f}" in page
