"""The shared human-judgment dev sets (``../shared/datasets/human-judgments``) as the support
benchmarks read them: people's verdicts matched to output rows, and a row as the claims scorer
reads it. Used by ``support_kappa.py`` (the kappa table) and ``train_support_judge.py`` (the
semantic judge's rule), so neither imports the other's reading."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SETS = ("begin-wow-dev", "wice-claim-dev", "summedits-dev", "mtrag-cloud-dev")
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "human-judgments"


def read_set(folder: Path) -> list[tuple[int, dict[str, Any]]]:
    """(people's verdict, output row) per labelled item, matched by qid and the answer's SHA-256."""
    labels = {}
    for line in (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            lb = json.loads(line)
            labels[lb["qid"]] = lb
    out = []
    for line in (folder / "outputs.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        lb = labels.get(row["id"])
        if lb and lb["answer_sha256"] == hashlib.sha256(row["answer"].encode("utf-8")).hexdigest():
            out.append((int(lb["value"]), row))
    return out


def scorer_inputs(row: dict[str, Any]) -> tuple[str, tuple[int, ...], list[tuple[int, str]]] | None:
    """(answer, valid citations, numbered passages) as the claims scorer reads an output row; None: a refusal."""
    if row.get("refused"):
        return None
    nums = {i + 1 for i in range(len(row["retrieved"]))}
    cites = tuple(n for n in dict.fromkeys(row.get("citations", ())) if n in nums)
    return row["answer"], cites, [(i + 1, p["text"]) for i, p in enumerate(row["retrieved"])]
