"""The report's section "Can we trust the automatic answer measures?": per measure its kappa with
people (with CI) beside the labellers' own kappa, and raw vs PPI-corrected means of the top cells.

The labels are ``--labels FILE`` of ``rag-bench report``, else ``labels.jsonl`` beside the
dataset's questions (the demo set ships one). Without labels the section is left out; a labels
file beside the dataset that does not validate is named in the section (``--labels`` that does
not validate is an error of the command, exit 2).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

from rag_bench.calibration.agreement import Interval
from rag_bench.calibration.calibrate import Agreement, calibrate
from rag_bench.calibration.labels import load_labels
from rag_bench.cells import Cell
from rag_bench.errors import RagBenchError
from rag_bench.untrusted import visible

TITLE = "Can we trust the automatic answer measures?"


def labels_beside(cells: Sequence[Cell]) -> Path | None:
    """``labels.jsonl`` beside the dataset of the cells, when there is one."""
    for c in cells:
        ds = c.config.get("dataset") if isinstance(c.config, dict) else None
        if isinstance(ds, dict) and ds.get("path"):
            p = Path(str(ds["path"])) / "labels.jsonl"
            return p if p.is_file() else None
    return None


def _f(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.2f}"


def _ci(lo: float, hi: float, reason: str = "") -> str:
    if not math.isnan(lo):
        return f" <span class='ci'>[{lo:.2f}, {hi:.2f}]</span>"
    return f" <span class='ci' title='{html.escape(reason, quote=True)}'>[no CI: {html.escape(reason)}]</span>" \
        if reason else ""


def _interval(ci: Interval) -> str:
    return _ci(ci.low, ci.high, ci.reason)


def _agreement_table(results: Sequence[Agreement]) -> str:
    rows = []
    for a in results:
        ceiling = (f"{_f(a.labellers_kappa)}{_interval(a.labellers_kappa_ci)} (n={a.labellers_n})"
                   if a.labellers_n else "—")
        rows.append(f"<tr><td>{html.escape(a.measure)}</td><td class='l'>{html.escape(a.human)}</td><td>{a.n}</td>"
                    f"<td>{_f(a.base_rate)}</td><td>{_f(a.auto_rate)}</td>"
                    f"<td>{'wκ ' if a.weighted else ''}{_f(a.kappa)}{_interval(a.kappa_ci)}</td><td>{ceiling}</td></tr>")
    return ("<table><tr><th>measure</th><th class='l'>vs people's</th><th>n</th><th>people yes</th>"
            "<th>measure yes</th><th>kappa [95% CI]</th><th>labellers' kappa</th></tr>" + "".join(rows) + "</table>")


def _ppi_table(results: Sequence[Agreement], shown: Sequence[Cell], names: dict[str, str]) -> str:
    use = [a for a in results if a.n and "[" not in a.measure]
    if not use:
        return ""
    ids = [c.cell_id for c in shown]
    head = "".join(f"<th>{html.escape(a.measure)} raw</th><th>PPI [95% CI]</th>" for a in use)
    rows = []
    for cid in ids:
        tds = []
        for a in use:
            p = next((e for c, _, e in a.cells if c == cid), None)
            tds.append("<td></td><td></td>" if p is None else
                       f"<td>{_f(p.raw_mean)}</td><td>{_f(p.mean)}{_ci(p.low, p.high)} "
                       f"<span class='ci'>{p.n_labelled}/{p.n_all}</span></td>")
        rows.append(f"<tr><td>{html.escape(visible(names.get(cid, cid)))}</td>{''.join(tds)}</tr>")
    return (f"<table><tr><th>cell</th>{head}</tr>" + "".join(rows) + "</table>"
            "<p class='note'>PPI: the cell's mean corrected by the mean person-minus-measure difference on its "
            "labelled answers (labelled/all shown); its CI holds however poor the measure is.</p>")


def section(cells: Sequence[Cell], names: dict[str, str], shown: Sequence[Cell],
            labels_path: str | Path | None) -> str | None:
    """The section's HTML, or None when there are no labels."""
    path = Path(labels_path) if labels_path is not None else labels_beside(cells)
    if path is None:
        return None
    try:
        labels = load_labels(path)
        results = calibrate(cells, names, labels)  # refuses labels that conflict on these cells' answers
    except RagBenchError as exc:
        if labels_path is not None:
            raise
        return f"<p class='note'>{html.escape(str(path))} does not validate: {html.escape(str(exc)[:500])}</p>"
    labellers = sorted({lb.labeller for lb in labels})
    return (f"<p class='sub'>{len(labels)} labels by {html.escape(visible(', '.join(labellers)))} from "
            f"{html.escape(str(path))}; kappa: 1 = agreement as good as possible, 0 = what chance gives at those "
            "rates, n/a = no disagreement seen (the labels cannot tell); 95% CI over the labelled answers (bootstrap; "
            "the exact bound when none disagrees; none below 10 answers). "
            "The labellers' own kappa is the ceiling a measure can reach (rag-bench calibrate; docs/labels.md).</p>"
            + _agreement_table(results) + _ppi_table(results, shown, names))
