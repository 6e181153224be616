"""Leaderboard: one row per finished cell of an experiment, read from the cell folders only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rag_bench.cells import experiment_cells
from rag_bench.metrics import measures
from rag_bench.stages import LABEL_STAGES, RETRIEVAL_STAGES

DEFAULT_COLUMNS = tuple(m.key for m in (*measures.HEADLINE, *measures.ANN_LATENCY))


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
    """One row per DONE cell: identity columns + every metric as ``section/metric`` (no rows when
    the folder does not exist: a sweep whose every cell was refused)."""
    if not Path(experiment_dir).is_dir():
        return pd.DataFrame()
    rows = []
    for cell in experiment_cells(experiment_dir, records=False):
        cfg, metrics = cell.config, cell.metrics
        row = {"cell": cell.cell_id, **{g: cfg.get(g) or {} for g in RETRIEVAL_STAGES},
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
        for g in RETRIEVAL_STAGES:
            frame[f"{g}_config"] = frame[g]
            frame[g] = _labels(list(frame[g]))
    return frame


def _lower_is_better(column: str) -> bool:
    """Direction of a leaderboard column: ``section/name``, or ``tag:<tag>/name`` (a ranking measure)."""
    m = measures.measure(f"retrieval/{column.split('/', 1)[1]}" if column.startswith("tag:") else column)
    return m is not None and m.higher_is_better is False


def format_leaderboard(cells: pd.DataFrame, *, sort_by: str = measures.PRIMARY.key,
                       columns: tuple[str, ...] = DEFAULT_COLUMNS) -> str:
    """Plain-text table, best first (by the sort measure's direction), with its 95% CI and n."""
    cols = [c for c in columns if c in cells.columns]
    key = sort_by if sort_by in cells.columns else cols[0]
    table = cells.sort_values(key, ascending=_lower_is_better(key), na_position="last")
    # Always name the chunker and retriever; other stages only when they differ between cells.
    always = [g for g in LABEL_STAGES if g != "reranker"]
    ident = ["cell", *always] + [g for g in RETRIEVAL_STAGES if g not in always
                                 and g in table and table[g].nunique() > 1]
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
