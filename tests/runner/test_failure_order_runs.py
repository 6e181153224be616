"""The whole failure order through the real command line (issue 42): for each label before generation
a tiny dataset where a real pipeline makes it the first failing stage -- a two-document question at k=1
(``partial_evidence``), a token budget of a few words (``context``), an archived version included in
the index (``stale_version``), a retriever that ignores the asker's access rights (``unauthorized``) --
read back from metrics.json, records.parquet, failures.csv and the sweep's console table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from rag_bench.cli import main as cli

PLUGINS = "hydra.searchpath=[pkg://tests.bad_inputs.hostile_plugins.conf]"


def dataset(root: Path, docs: dict[str, str], questions: list[dict], meta: list[dict] | None = None) -> Path:
    """A native dataset folder: ``docs`` (id -> Markdown), questions.jsonl, docs.jsonl when ``meta``."""
    (root / "docs").mkdir(parents=True)
    for doc_id, text in docs.items():
        (root / "docs" / f"{doc_id}.md").write_text(text, encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    if meta:
        (root / "docs.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta), encoding="utf-8")
    (root / "dataset.yaml").write_text("name: order\ndescription: a failure-order test\nlicense: CC0\n"
                                       "source: rag_bench tests\n", encoding="utf-8")
    return root


def cells(out: Path) -> list[Path]:
    return sorted(done.parent for done in out.glob("*/*/DONE"))


def labels(cell: Path) -> dict[str, str]:
    """Each question's label as records.parquet and failures.csv hold it (they agree)."""
    records = pd.read_parquet(cell / "records.parquet")
    csv = pd.read_csv(cell / "failures.csv", dtype=str)
    by_records = dict(zip(records["qid"], records["failure"].fillna("")))
    assert by_records == dict(zip(csv["qid"], csv["failure"].fillna(""))), cell
    return by_records


def failures(cell: Path) -> dict[str, int]:
    return json.loads((cell / "metrics.json").read_text())["failures"]


def run(out: Path, data: Path, *overrides: str) -> list[Path]:
    assert cli(["run", f"dataset.path={data}", f"output.root={out}", "tracking=none", "experiment.name=order",
                "chunker=section", "retriever=bm25", *overrides]) == 0
    return cells(out)


TWO_DOCS = {
    "ovens": "# Ovens\n\n## Model OV-9\n\nThe OV-9 oven has a 70 litre cavity and pyrolytic cleaning.\n",
    "delivery": "# Delivery\n\n## Installation fee\n\nInstalling built-in appliances will cost 49 pounds.\n",
    "stores": "# Stores\n\n## Hours\n\nOur stores open at nine on weekdays.\n",
}
TWO_HOP = {"id": "m1", "question": "How big is the OV-9 oven cavity and what does installing it cost?",
           "answerable": True, "facts": ["70 litre", "49 pounds"],
           "evidence": [{"doc_id": "ovens", "quote": "The OV-9 oven has a 70 litre cavity"},
                        {"doc_id": "delivery", "quote": "Installing built-in appliances will cost 49 pounds."}]}


def test_partial_evidence_two_spans_in_two_documents_and_k_1(tmp_path):
    data = dataset(tmp_path / "data", TWO_DOCS, [TWO_HOP])
    (cell,) = run(tmp_path / "k1", data, "pipeline.k=1", "eval.ks=[1]", "generator=extractive")
    assert labels(cell) == {"m1": "partial_evidence"}
    assert failures(cell)["partial_evidence"] == 1
    records = pd.read_parquet(cell / "records.parquet")
    assert records["first_relevant_rank"].iloc[0] == 1 and records["evidence_recall@1"].iloc[0] == 0.5
    # Retrieval only: the label applies before generation; k=2 holds both spans.
    (cell,) = run(tmp_path / "retrieval", data, "pipeline.k=1", "eval.ks=[1]", "generator=none")
    assert labels(cell) == {"m1": "partial_evidence"}
    assert "context" not in failures(cell)  # no context in a cell that does not generate
    (cell,) = run(tmp_path / "k2", data, "pipeline.k=2", "eval.ks=[2]", "generator=none")
    assert labels(cell) == {"m1": "in_context"}


def test_context_the_token_budget_cuts_the_second_span_and_the_sweep_table_says_so(tmp_path, capsys):
    data = dataset(tmp_path / "data", TWO_DOCS, [TWO_HOP])
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={data}", f"output.root={out}", "tracking=none", "experiment.name=order",
                "chunker=section", "retriever=bm25", "generator=extractive", "pipeline.k=2", "eval.ks=[2]",
                "pipeline.token_budget=5,2000"]) == 0
    printed = capsys.readouterr().out
    by_budget = {yaml.safe_load((c / "config.yaml").read_text())["pipeline"]["token_budget"]: c for c in cells(out)}
    tight, roomy = by_budget[5], by_budget[2000]
    assert labels(tight) == {"m1": "context"} and failures(tight)["context"] == 1
    assert labels(roomy)["m1"] != "context" and failures(roomy)["context"] == 0
    records = pd.read_parquet(tight / "records.parquet")
    assert records["complete@2"].iloc[0] == 1.0 and records["context_complete"].iloc[0] == 0.0
    # The sweep's console table of where questions were lost: a context column, 1 for the tight budget.
    table = printed.split("Where questions were lost", 1)[1].split("\n\n", 2)[1].splitlines()
    heads = table[0].split()
    rows = {line.split()[0]: line.split()[1:] for line in table[1:]}
    assert rows["token_budget=5"][heads.index("context") - 1] == "1"
    assert rows["token_budget=2000"][heads.index("context") - 1] == "0"


POLICY = "# Returns\n\n## Refund window\n\nItems can be returned for a refund within {days} days of delivery.\n"


def test_stale_version_the_archived_policy_wins_when_archived_documents_are_indexed(tmp_path):
    # The archived version words the rule as the question does; the current one does not.
    docs = {"returns": "# Returns\n\n## Refund window\n\nA refund is available up to thirty days after delivery.\n",
            "returns-2023": "# Returns\n\n## Refund window\n\nHow many days do I have to return items for a refund? "
                            "Items can be returned for a refund within 14 days.\n",
            "other": "# Delivery\n\n## Slots\n\nDelivery slots are booked online.\n"}
    meta = [{"doc_id": "returns", "title": "Returns", "version": "2", "effective_at": "2024-03-01", "status": "current"},
            {"doc_id": "returns-2023", "title": "Returns", "version": "1", "effective_at": "2023-01-01",
             "status": "archived"},
            {"doc_id": "other", "title": "Delivery"}]
    q = {"id": "s1", "question": "How many days do I have to return items for a refund?", "answerable": True,
         "facts": ["thirty days"], "evidence": [{"doc_id": "returns", "quote": "up to thirty days after delivery"}]}
    data = dataset(tmp_path / "data", docs, [q], meta)
    (cell,) = run(tmp_path / "archived", data, "pipeline.k=1", "eval.ks=[1]", "generator=extractive",
                  "pipeline.include_archived=true")
    assert labels(cell) == {"s1": "stale_version"} and failures(cell)["stale_version"] == 1
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["security"]["stale_retrievals"] >= 1
    records = pd.read_parquet(cell / "records.parquet")
    assert records["chunk_ids"].iloc[0][0].startswith("returns-2023")
    # The default (archived versions not indexed): the current one is found, nothing is stale.
    (cell,) = run(tmp_path / "current", data, "pipeline.k=1", "eval.ks=[1]", "generator=extractive")
    assert labels(cell)["s1"] != "stale_version" and failures(cell)["stale_version"] == 0


def test_unauthorized_a_retriever_that_ignores_the_access_filter_spends_the_depth_on_staff_passages(tmp_path):
    docs = {"billing": "# Billing\n\n## Refunds\n\nRefunds are paid back to the original card.\n",
            "staff": "# Staff notes\n\n## Refund approvals\n\nWho approves a refund to the card? "
                     "Refund approvals above 500 pounds need a manager.\n"}
    meta = [{"doc_id": "billing", "title": "Billing", "tenant": "acme", "acl": []},
            {"doc_id": "staff", "title": "Staff notes", "tenant": "acme", "acl": ["staff"]}]
    q = {"id": "u1", "question": "Who approves a refund to the card?", "answerable": True,
         "facts": ["original card"], "asker": {"tenant": "acme", "groups": ["customers"]},
         "evidence": [{"doc_id": "billing", "quote": "Refunds are paid back to the original card."}]}
    data = dataset(tmp_path / "data", docs, [q], meta)
    # Depth 1: the leaking retriever's only passage is the staff one, dropped before anything saw it.
    (cell,) = run(tmp_path / "leak", data, PLUGINS, "retriever=hostile", "retriever.mode=leak", "pipeline.k=1",
                  "eval.ks=[1]", "generator=extractive")
    assert labels(cell) == {"u1": "unauthorized"} and failures(cell)["unauthorized"] == 1
    records = pd.read_parquet(cell / "records.parquet")
    assert records["unauthorized_from_retriever"].iloc[0] == 1 and list(records["chunk_ids"].iloc[0]) == []
    # The same retriever applying the filter finds the evidence.
    (cell,) = run(tmp_path / "ok", data, PLUGINS, "retriever=hostile", "retriever.mode=ok", "pipeline.k=1",
                  "eval.ks=[1]", "generator=extractive")
    assert labels(cell)["u1"] not in ("unauthorized", "retrieval_miss") and failures(cell)["unauthorized"] == 0
