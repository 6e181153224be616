"""Leaderboard: one row per finished cell of an experiment, read from the cell folders only."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

IDENTITY_GROUPS = ("chunker", "embedder", "index", "retriever", "reranker")
ANN_COLUMNS = ("ann/ann_recall@10", "ann/ann_p50_ms", "ann/exact_p50_ms")
DEFAULT_COLUMNS = ("retrieval/hit@1", "retrieval/hit@5", "retrieval/mrr@10", "retrieval/ndcg@10",
                   "retrieval/recall@10", "evidence/evidence_recall@5", "evidence/complete@5",
                   "generation/correct", "citation/citation_precision", "abstention/false_refusal_rate",
                   "abstention/correct_refusal_rate")


def _labels(nodes: list[dict]) -> list[str]:
    """Option name plus only the parameters that differ between cells of the same option."""
    by_name: dict[str, list[dict]] = {}
    for n in nodes:
        by_name.setdefault(str(n.get("name", "?")), []).append(n)
    out = []
    for n in nodes:
        peers = by_name[str(n.get("name", "?"))]
        varying = [k for k in n if k not in ("_target_", "name")
                   and len({repr(p.get(k)) for p in peers}) > 1]
        params = ",".join(f"{k}={n[k]}" for k in varying)
        out.append(f"{n.get('name', '?')}({params})" if params else str(n.get("name", "?")))
    return out


def load_cells(experiment_dir: str | Path) -> pd.DataFrame:
    """One row per DONE cell: identity columns + every metric as ``section/metric``."""
    rows = []
    for cell in sorted(Path(experiment_dir).glob("*/DONE")):
        folder = cell.parent
        cfg = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
        metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        row = {"cell": folder.name, **{g: cfg.get(g) or {} for g in IDENTITY_GROUPS},
               "k": cfg.get("pipeline", {}).get("k")}
        for tag, values in metrics.get("by_tag", {}).items():
            for key, v in values.items():
                row[f"tag:{tag}/{key}"] = v
        for section, values in metrics.items():
            if section in ("ci", "n", "by_tag") or not isinstance(values, dict):
                continue
            for key, v in values.items():
                row[f"{section}/{key}"] = v
        for key, v in metrics.get("ci", {}).items():
            row[f"ci/{key}"] = v
        for key, v in metrics.get("n", {}).items():
            row[f"n/{key}"] = v
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        for g in IDENTITY_GROUPS:
            frame[f"{g}_config"] = frame[g]
            frame[g] = _labels(list(frame[g]))
    return frame


def format_leaderboard(cells: pd.DataFrame, *, sort_by: str = "retrieval/ndcg@10",
                       columns: tuple[str, ...] = DEFAULT_COLUMNS) -> str:
    """Plain-text table, best first, with the sort metric's 95% CI and its n."""
    cols = [c for c in (*columns, *ANN_COLUMNS) if c in cells.columns]
    key = sort_by if sort_by in cells.columns else cols[0]
    table = cells.sort_values(key, ascending=False, na_position="last")
    # Always name the chunker and retriever; other stages only when they differ between cells.
    ident = ["cell", "chunker", "retriever"] + [g for g in ("embedder", "index", "reranker")
                                                if g in table and table[g].nunique() > 1]
    out = table[[*ident, "k"]].copy()
    for c in cols:
        out[c.split("/", 1)[1]] = table[c].map(lambda v: "" if v is None or pd.isna(v) else f"{v:.3f}")
    ci = table.get(f"ci/{key}")
    if ci is not None:
        out[f"{key.split('/', 1)[1]} 95% CI"] = ci.map(
            lambda v: f"[{v[0]:.2f}, {v[1]:.2f}]" if isinstance(v, list) else "")
    n = table.get(f"n/{key}")
    if n is not None:
        out["n"] = n
    return out.to_string(index=False)
