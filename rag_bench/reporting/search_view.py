"""The report's section on a halving sweep (docs/search.md): the rounds, and every cell the
rounds dropped -- at which round, on how many questions, by how much it trailed the round's
leader and what the paired test said -- read from the sweep's summary
(``.hydra/search-<sweep id>.json``) and the dropped cells' folders (their ``config.yaml``)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import yaml

from rag_bench import naming
from rag_bench.cells import Cell
from rag_bench.reporting import page


def latest_halving(exp: Path) -> dict[str, Any] | None:
    """The newest halving summary of the experiment folder ``exp``, None when it has none."""
    found: list[tuple[float, dict[str, Any]]] = []
    for path in (exp / ".hydra").glob("search-*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("mode") == "halving" and isinstance(data.get("pruned"), dict):
            found.append((path.stat().st_mtime, data))
    return max(found, key=lambda f: f[0])[1] if found else None


def _config(exp: Path, cell_id: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load((exp / cell_id / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def section(exp: Path, cells: list[Cell]) -> str:
    """The section's HTML ('' when the experiment holds no halving sweep). ``cells``: the
    experiment's finished cells (the dropped cells are named among them)."""
    summary = latest_halving(exp)
    if summary is None:
        return ""
    pruned: dict[str, dict[str, Any]] = summary["pruned"]
    finished = {c.cell_id for c in cells}
    others = sorted({*pruned, *(str(b.get("leader")) for b in pruned.values())} - finished)  # read from their folders
    ids = [c.cell_id for c in cells] + others
    configs = [c.config for c in cells] + [_config(exp, cid) for cid in others]
    names = dict(zip(ids, naming.labels(configs, ids)))
    prune = str(summary.get("prune") or "significance")
    rounds = [{"round": r["round"] + 1, "questions": r["questions"], "cells in": r["cells"], "kept": r["kept"],
               "dropped": r["cells"] - r["kept"], "cell-questions computed": r.get("questions_computed")}
              for r in summary.get("rounds", [])]
    rows = []
    for cid, b in sorted(pruned.items(), key=lambda kv: (kv[1].get("pruned_after_round", 0), kv[1].get("behind", 0))):
        behind, p = b.get("behind"), b.get("p")
        worse = b.get("significantly_worse", prune == "significance")
        rows.append({"cell": names.get(cid, cid), "dropped after round": b.get("pruned_after_round"),
                     "questions seen": b.get("questions"),
                     "behind the leader": round(float(behind), 3) if behind is not None else "",
                     "p": round(float(p), 4) if p is not None else "",
                     "significantly worse": "yes" if worse else "no",
                     "leader": names.get(str(b.get("leader")), str(b.get("leader")))})
    grid = int(summary.get("grid_cells") or 0) * int(summary.get("questions") or 0)
    spent = summary.get("cell_questions")
    rule = (f"keep the top {float(summary.get('keep') or 0):.3g} of each round by its mean (a rank cut: "
            f"{summary.get('dropped_not_significantly_worse')} of the {len(pruned)} dropped cells were not significantly "
            "worse than the round's leader)" if prune == "rank" else
            f"drop the cells outside the round's model confidence set (alpha {summary.get('alpha_per_round')} per round, "
            f"{summary.get('alpha')} over the search)")
    guard = summary.get("guard") or []
    body = (f"<p>This experiment was searched with <code>search=halving search.prune={html.escape(prune)}</code> "
            f"on {html.escape(str(summary.get('measure')))}: {html.escape(rule)}. Cell-questions computed: {spent} of the "
            f"full grid's {grid}{f' ({spent / grid:.0%})' if grid and spent is not None else ''}. The dropped cells keep "
            "their partial results (a <code>search</code> block in their metrics.json) and are not in the tables above; "
            "'behind the leader' is the cell's mean minus the leader's on the questions it saw (in the measure's better "
            "direction). docs/search.md.</p>"
            + page.table(rounds)
            + (f"<p class='bad'>The guard found {len(guard)} dropped cell(s) significantly better than the final best on "
               "the questions they saw: " + html.escape(", ".join(names.get(g['cell'], g['cell']) for g in guard))
               + " -- rerun with a larger search.keep or search=grid.</p>" if guard else "")
            + page.table(rows, sortable=True, left=1))
    return body
