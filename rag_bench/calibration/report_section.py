"""The report's section "Can we trust the automatic answer measures?": per measure its kappa with
people (with CI) beside the labellers' own kappa, and raw vs PPI-corrected means of the top cells.

The labels are ``--labels FILE`` of ``rag-bench report``, else ``labels.jsonl`` beside the
dataset's questions (the demo set ships one). Without labels the section is left out; a labels
file beside the dataset that does not validate is named in the section (``--labels`` that does
not validate is an error of the command, exit 2). The file is named as a reader can find it from
anywhere -- beside the dataset, or relative to the folder the report was made in -- never by the
machine's absolute path (:func:`shown_path`).

PPI-corrected means can order the cells differently from the raw means: every pair they swap is
named under the table (:func:`reorderings`), with whether the two PPI intervals overlap.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
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
    dataset = _dataset_dir(cells)
    if dataset is None:
        return None
    p = dataset / "labels.jsonl"
    return p if p.is_file() else None


def _dataset_dir(cells: Sequence[Cell]) -> Path | None:
    for c in cells:
        ds = c.config.get("dataset") if isinstance(c.config, dict) else None
        if isinstance(ds, dict) and ds.get("path"):
            return Path(str(ds["path"]))
    return None


def shown_path(path: Path, cells: Sequence[Cell], cwd: Path | None = None) -> str:
    """``path`` as the report names it, without the machine's absolute path: ``labels.jsonl
    beside the dataset (kettleby)`` for a file in the cells' dataset folder (its path inside the
    folder when deeper), relative to ``cwd`` (default: the current folder) when under it, else its
    file name alone.

    >>> shown_path(Path("/data/sets/kettleby/labels.jsonl"), [], cwd=Path("/data"))
    'sets/kettleby/labels.jsonl'
    >>> shown_path(Path("/elsewhere/people.jsonl"), [], cwd=Path("/data"))
    'people.jsonl'
    """
    here = (cwd or Path.cwd()).resolve()
    full = path if path.is_absolute() else here / path
    full = Path(*full.parts)  # normalised separators
    dataset = _dataset_dir(cells)
    if dataset is not None:
        root = dataset if dataset.is_absolute() else here / dataset
        try:
            inside = full.resolve().relative_to(root.resolve())
        except ValueError:
            pass
        else:
            return f"{inside.as_posix()} beside the dataset ({root.resolve().name})"
    if not path.is_absolute():
        return path.as_posix()
    try:
        return full.resolve().relative_to(here).as_posix()
    except ValueError:
        return path.name


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


@dataclass(frozen=True)
class Swap:
    """Two cells whose order on ``measure`` the PPI-corrected means reverse: ``above`` has the
    higher raw mean, ``below`` the higher PPI mean; ``overlap``: their PPI intervals overlap (the
    labels cannot tell the two apart)."""

    measure: str
    above: str
    below: str
    raw_above: float
    raw_below: float
    ppi_above: float
    ppi_below: float
    overlap: bool


def _ppi_measures(results: Sequence[Agreement]) -> list[Agreement]:
    return [a for a in results if a.n and "[" not in a.measure]


def reorderings(results: Sequence[Agreement], shown: Sequence[Cell]) -> list[Swap]:
    """Every pair of ``shown`` cells whose order by raw mean the PPI-corrected means reverse
    (strictly: raw a > raw b and PPI a < PPI b), per measure of the PPI table, in the cells' order;
    cells without a PPI mean (too few labelled answers) are left out."""
    out = []
    for a in _ppi_measures(results):
        est = {cid: e for cid, _, e in a.cells}
        have = [(c.cell_id, est[c.cell_id]) for c in shown
                if c.cell_id in est and not math.isnan(est[c.cell_id].mean) and not math.isnan(est[c.cell_id].raw_mean)]
        for i, (x, ex) in enumerate(have):
            for y, ey in have[i + 1:]:
                for (hi_id, h), (lo_id, lo) in (((x, ex), (y, ey)), ((y, ey), (x, ex))):
                    if h.raw_mean > lo.raw_mean and h.mean < lo.mean:
                        out.append(Swap(a.measure, hi_id, lo_id, h.raw_mean, lo.raw_mean, h.mean, lo.mean,
                                        not (h.high < lo.low or lo.high < h.low)))
    return out


def _swaps_note(swaps: Sequence[Swap], names: dict[str, str], shown: Sequence[Cell], limit: int = 6) -> str:
    if not shown:
        return ""
    if not swaps:
        return ("<p class='note'>The PPI-corrected means keep the order of the raw means for these cells (on every "
                "measure where both are given).</p>")

    def name(cid: str) -> str:
        return f"<b>{html.escape(visible(names.get(cid, cid)))}</b>"

    grouped: dict[tuple[str, str], list[Swap]] = {}
    for sw in swaps:
        grouped.setdefault((sw.measure, sw.above), []).append(sw)
    items = []
    for (measure, above), group in grouped.items():
        first = group[0]
        passed = ", ".join(f"{name(sw.below)} ({sw.raw_below:.3f} → {sw.ppi_below:.3f})" for sw in group[:limit])
        more = f" and {len(group) - limit} more" if len(group) > limit else ""
        items.append(f"<li>{html.escape(measure)}: {name(above)} (raw {first.raw_above:.3f} → PPI "
                     f"{first.ppi_above:.3f}) falls below {len(group)} cell(s) it was ahead of: {passed}{more}</li>")
    overlapping = sum(sw.overlap for sw in swaps)
    tail = ("In every swapped pair the two PPI intervals overlap: the labels cannot tell those cells apart, so "
            "neither order is established." if overlapping == len(swaps) else
            f"{len(swaps) - overlapping} of the {len(swaps)} swapped pairs have PPI intervals that do not overlap.")
    return (f"<p class='bad'><b>The PPI-corrected means reorder the cells</b>: {len(swaps)} pair(s) in the opposite "
            f"order to their raw means (raw → PPI):</p><ul>{''.join(items)}</ul><p class='note'>{html.escape(tail)} "
            "The ranking above uses the raw automatic means; PPI is indicative unless the labelled answers are a "
            "uniform sample of each cell's (docs/labels.md).</p>")


def _ppi_table(results: Sequence[Agreement], shown: Sequence[Cell], names: dict[str, str]) -> str:
    use = _ppi_measures(results)
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
            "labelled answers (labelled/all shown); its CI holds however poor the measure is.</p>"
            + _swaps_note(reorderings(results, shown), names, shown))


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
        shown_as = shown_path(path, cells)
        message = str(exc).replace(str(path.resolve()), shown_as).replace(str(path), shown_as)
        return f"<p class='note'>{html.escape(shown_as)} does not validate: {html.escape(message[:500])}</p>"
    labellers = sorted({lb.labeller for lb in labels})
    return (f"<p class='sub'>{len(labels)} labels by {html.escape(visible(', '.join(labellers)))} from "
            f"{html.escape(shown_path(path, cells))}; kappa: 1 = agreement as good as possible, 0 = what chance gives at those "
            "rates, n/a = no disagreement seen (the labels cannot tell); 95% CI over the labelled answers (bootstrap; "
            "the exact bound when none disagrees; none below 10 answers). "
            "The labellers' own kappa is the ceiling a measure can reach (rag-bench calibrate; docs/labels.md).</p>"
            + _agreement_table(results) + _ppi_table(results, shown, names))
