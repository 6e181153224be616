"""Leaderboard: one row per finished cell of an experiment, read from the cell folders only.

Cells are named by the parameters that vary between them (:mod:`rag_bench.naming`), the same
labels as the report and the MLflow run names, and ranked by the experiment's primary measure with
the tie rule of :mod:`rag_bench.decision.decide`. ``format_leaderboard`` prints the table as text,
CSV, JSON or Markdown.
"""

from __future__ import annotations

import json
import logging
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from rag_bench import naming, spreadsheet
from rag_bench.cells import Cell, experiment_cells, one_dataset
from rag_bench.components import QUERY, RETRIEVAL_STAGES
from rag_bench.decision import decide, params
from rag_bench.evaluation import measures
from rag_bench.failure_labels import NOT_LOST, in_attribution_order

if TYPE_CHECKING:
    from rag_bench.decision.verdict import Verdict

# The main measure of each stage: the leaderboard's default columns (the report adds the rest; the
# ranking measure always comes first, so auto's context_all is shown when it ranks).
DEFAULT_COLUMNS = tuple(m.key for m in measures.MAIN if m not in (measures.CONTEXT_COMPLETE, measures.CONTEXT_ALL))
# ``--columns all``: every headline measure and the ANN latencies.
ALL_COLUMNS = tuple(m.key for m in (*measures.HEADLINE, *measures.ANN_LATENCY))
FORMATS = ("table", "csv", "json", "markdown")
# Money (a price table given: prices.*): $ per question joins the default columns; a cell without
# it is shown "unpriced", never 0 (rag_bench.evaluation.scorers.cost).
USD_COLUMN = "cost/usd_per_question"
UNPRICED_COLUMN = "cost/unpriced"
UNPRICED = "unpriced"
log = logging.getLogger(__name__)


def _option_labels(nodes: list[dict]) -> list[str]:
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


def load_cells(experiment_dir: str | Path, *, fingerprint: str | None = None,
               found: list[Cell] | None = None) -> pd.DataFrame:
    """One row per DONE cell of one dataset version: ``label`` (its values on the varying
    parameters), identity columns and every metric as ``section/metric`` (no rows when the folder
    does not exist: a sweep whose every cell was refused). ``found``: the folder's finished cells
    when the caller read them already (``experiment_cells(experiment_dir, records=False)``).

    Cells of another dataset version (``fingerprint``, else the one finished last; see
    :func:`rag_bench.cells.one_dataset`) are left out with a warning naming every version."""
    if not Path(experiment_dir).is_dir():
        return pd.DataFrame()
    rows = []
    cells, notice = one_dataset(experiment_cells(experiment_dir, records=False) if found is None else found,
                                fingerprint)
    if notice:
        log.warning(notice)
    for cell, label in zip(cells, naming.labels([c.config for c in cells], [c.cell_id for c in cells])):
        cfg, metrics = cell.config, cell.metrics
        row = {"label": label, "cell": cell.cell_id, **{g: cfg.get(g) or {} for g in RETRIEVAL_STAGES},
               "k": cfg.get("pipeline", {}).get("k"),
               # the query transform (rag_bench.query): a column only when a cell has one
               QUERY: str((cfg.get(QUERY) or {}).get("name") or "none"),
               # the tie rule's costs and the configured primary measure (private: never shown)
               "_latency_ms": decide.latency_ms(metrics), "_tokens": decide.tokens(cell),
               "_primary": decide.configured_primary([cfg]), "_stand_in": decide.stand_in(metrics),
               "_described": params.describe(cell, label)}  # what each measure means (private)
        for tag, values in metrics.get("by_tag", {}).items():
            for key, v in values.items():
                if key == "ci" and isinstance(v, dict):  # a tag's intervals, beside the cell's own
                    row.update({f"ci/tag:{tag}/{m}": ci for m, ci in v.items()})
                elif not isinstance(v, dict):  # its outcomes and failure counts are read from metrics.json
                    row[f"tag:{tag}/{key}"] = v
        for section, values in metrics.items():
            if section in ("ci", "n", "by_tag", "measures", "skipped") or not isinstance(values, dict):
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
            frame[g] = _option_labels(list(frame[g]))
    return frame


def tag_of(column: str) -> str | None:
    """The question tag of a per-tag column ``tag:<tag>/<measure>``, else None. A tag may hold
    ``/`` (``billing/refunds``); a measure name never does, so the tag ends at the last one.

    >>> tag_of("tag:billing/refunds/hit@5"), tag_of("retrieval/hit@5")
    ('billing/refunds', None)
    """
    return column[4:].rpartition("/")[0] if column.startswith("tag:") else None


def question_tags(cells: pd.DataFrame) -> list[str]:
    """The question tags of the cells' per-tag columns, sorted."""
    return sorted({t for c in cells.columns if (t := tag_of(c)) is not None})


def tag_columns(cells: pd.DataFrame, tag: str) -> tuple[str, ...]:
    """The measure columns of questions tagged ``tag`` (its count ``n`` left out): exactly that
    tag, never another that starts with it (``a`` is not ``a/b``)."""
    return tuple(c for c in cells.columns if tag_of(c) == tag and not c.endswith("/n"))


def _lower_is_better(column: str) -> bool:
    """Direction of a leaderboard column: ``section/name`` (a measure, count, cost, failure tally or
    duration: :func:`rag_bench.evaluation.measures.direction`), or ``tag:<tag>/name`` (a ranking
    measure). A column with no better direction (descriptive, or declaring none) is listed largest
    first, as a display order only: no verdict is drawn from it."""
    try:
        up = measures.direction(f"retrieval/{column.rpartition('/')[2]}" if column.startswith("tag:") else column)
    except ValueError:
        return False
    return up is False


def resolve_columns(cells: pd.DataFrame, spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """``--columns``: None → the main measure of each stage; ``all`` → every headline measure;
    else comma-separated ``section/name`` keys (or bare names, found in the registry's sections).
    Unknown names raise ValueError naming the choices."""
    if spec is None:
        return DEFAULT_COLUMNS
    if isinstance(spec, str):
        if spec.strip() == "all":
            return ALL_COLUMNS
        spec = [s.strip() for s in spec.split(",") if s.strip()]
    metric_cols = [c for c in cells.columns if "/" in c and not c.startswith(("ci/", "n/", "tag:"))]
    out = []
    for name in spec:
        if name in metric_cols:
            out.append(name)
            continue
        matches = [c for c in metric_cols if c.split("/", 1)[1] == name]
        if len(matches) > 1:  # a measure before a tally of the same name (generation/correct, failures/correct)
            matches = [c for c in matches if measures.measure(c) is not None] or matches
        if len(matches) != 1:
            import difflib

            close = difflib.get_close_matches(name, metric_cols + [c.split("/", 1)[1] for c in metric_cols], n=3)
            raise ValueError(f"--columns: {name!r} is {'ambiguous' if matches else 'not a metric of these cells'}"
                             f"{' (' + ', '.join(matches) + ')' if matches else ''} -- fix: section/name"
                             f"{', e.g. ' + ', '.join(close) if close else ''}, or --columns all")
        out.append(matches[0])
    return tuple(out)


def primary(cells: pd.DataFrame) -> str:
    """The experiment's primary measure (:func:`rag_bench.decision.decide.choose_primary`):
    ``experiment.primary`` of the cells, ``auto`` → correct when they generated answers, else nDCG@10;
    ConfigError naming the measures the cells have when none has it."""
    configured = str(cells["_primary"].mode().iloc[0]) if "_primary" in cells and len(cells) else decide.AUTO
    keys = decide.rankable(c for c in cells.columns if "/" in c and not c.startswith(("ci/", "n/", "tag:")))
    have = [c for c in keys if bool(pd.to_numeric(cells[c], errors="coerce").notna().any())]
    return decide.choose_primary(configured, have, stand_in="_stand_in" in cells and bool(cells["_stand_in"].any()))


def best_first(cells: pd.DataFrame, key: str) -> pd.DataFrame:
    """``cells`` best first by ``key``'s direction; exact ties broken by the tie rule of
    :func:`rag_bench.decision.decide.rank` (the faster parse, fewer generator tokens; then name, then cell id --
    never latency, which is measured and differs between runs): the leaderboard, the report, the
    notebook, ``compare`` and the sweep's MLflow parent run name the same best cell (an unstable sort
    once broke a tie one way in the report and the other way everywhere else)."""
    cols = [key, *(c for c in ("_tokens", "label") if c in cells), "cell"]
    return cells.sort_values(cols, ascending=[_lower_is_better(key)] + [True] * (len(cols) - 1),
                             na_position="last", kind="mergesort")


def tie_line(cells: pd.DataFrame, key: str, *, named: bool = True) -> str:
    """``3 cells tied at 0.787 on generation/correct (...)`` when the best cells tie on ``key``,
    else '' (``named=False``: without ``on <key>``)."""
    if key not in cells or cells.empty:
        return ""
    values = pd.to_numeric(best_first(cells, key)[key], errors="coerce")
    top = values.iloc[0]
    return decide.tie_note(int((values == top).sum()), key if named else "", None if pd.isna(top) else float(top))


def leaderboard_table(cells: pd.DataFrame, *, sort_by: str | None = None,
                      columns: Sequence[str] = DEFAULT_COLUMNS, verdict: Verdict | None = None) -> pd.DataFrame:
    """The leaderboard as numbers, best first (by the sort measure's direction; default the
    primary measure, :func:`primary`): ``label``, ``cell``, ``k``, the measure columns (named
    ``section/name``; the sort measure first when it is not among them), the sort measure's 95% CI
    as ``ci_lo``/``ci_hi`` and its ``n``; with ``verdict`` (on the sort measure), ``not_worse``:
    whether the cell is in the set not significantly worse than the best."""
    sort_by = sort_by or primary(cells)
    columns = _shown_columns(cells, sort_by, columns)
    cols = [c for c in columns if c in cells.columns]
    if "_described" in cells:  # cells whose shown measures mean different things are not ranked together
        params.check_described(list(cells["_described"]), [c for c in cols if "/" in c and ":" not in c],
                               fix="or show other measures (--columns)")
    key = sort_by if sort_by in cells.columns else (cols[0] if cols else None)
    table = best_first(cells, key) if key else cells
    out = table[_identity_columns(table)].copy()
    if USD_COLUMN in columns and USD_COLUMN not in cols:
        cols.append(USD_COLUMN)  # every cell unpriced: the column says so
    for c in cols:
        out[c] = pd.to_numeric(table[c], errors="coerce") if c in table else math.nan
    _add_interval(out, table, key)
    if verdict is not None and verdict.measure == key:
        out["not_worse"] = out["cell"].isin(verdict.close)
    return out.reset_index(drop=True)


def _shown_columns(cells: pd.DataFrame, sort_by: str, columns: Sequence[str]) -> tuple[str, ...]:
    """The measure columns asked for: the money first among the defaults when cells are priced, the
    ranking measure first of all."""
    if tuple(columns) == DEFAULT_COLUMNS and (USD_COLUMN in cells.columns or UNPRICED_COLUMN in cells.columns):
        columns = (USD_COLUMN, *columns)  # priced: the money is a default column, beside the ranking measure
    if sort_by in cells.columns and "/" in sort_by:  # the ranking measure first
        columns = (sort_by, *(c for c in columns if c != sort_by))
    return tuple(columns)


def _identity_columns(table: pd.DataFrame) -> list[str]:
    """What names a row: label, cell, the retrieval stages swept, the query transform when one ran, k."""
    transformed = QUERY in table and bool((table[QUERY] != "none").any())
    return ["label", "cell", *[g for g in RETRIEVAL_STAGES if g in table], *([QUERY] if transformed else []), "k"]


def _add_interval(out: pd.DataFrame, table: pd.DataFrame, key: str | None) -> None:
    """The ranking measure's 95% CI (``ci_lo``, ``ci_hi``) and ``n`` into ``out``, where the cells have them."""
    ci = table.get(f"ci/{key}")
    if ci is not None:
        out["ci_lo"] = ci.map(lambda v: float(v[0]) if isinstance(v, list) else math.nan)
        out["ci_hi"] = ci.map(lambda v: float(v[1]) if isinstance(v, list) else math.nan)
    n = table.get(f"n/{key}")
    if n is not None:
        out["n"] = n


def _short(column: str) -> str:
    if column.startswith("tag:"):
        column = f"retrieval/{column.rpartition('/')[2]}"  # the table's heading names the tag
    section, _, name = column.partition("/")
    m = measures.measure(column)
    shown = (m.display if m is not None else name) if section not in ("document",) else f"doc:{name}"
    return FAILURE_HEADS.get(shown, shown)  # correct_refusal -> corr_ref, as the failure table heads it


def terminal_width() -> int:
    """The width of the terminal standard output is (``COLUMNS`` when set), 120 characters when
    it is no terminal (a file, a pipe, a CI log: the console's bar; ``--format csv`` gives every column)."""
    import shutil

    return max(40, shutil.get_terminal_size((120, 24)).columns)


NOT_WORSE = "≈best"  # the text column marking the cells not significantly worse than the best


def _text_frame(table: pd.DataFrame, key: str) -> pd.DataFrame:
    width = int(table["label"].str.len().max()) if len(table) else 0
    out = pd.DataFrame({"cell": table["label"].str.ljust(width)})
    if "not_worse" in table:
        out[NOT_WORSE] = table["not_worse"].map(lambda v: "*" if v else "")
    for c in table.columns:
        if c.startswith("cost/usd_"):  # dollars: small numbers, three significant digits
            none = UNPRICED if c in (USD_COLUMN, "cost/usd_per_1k_queries") else ""  # absent only when unpriced
            out[_short(c)] = table[c].map(lambda v, none=none: none if v is None or pd.isna(v) else f"{v:.3g}")
        elif "/" in c:
            out[_short(c)] = table[c].map(lambda v: "" if v is None or pd.isna(v) else f"{v:.3f}")
            if c == key:  # the ranking measure's interval and count beside it
                if "ci_lo" in table:
                    out["95% CI"] = [f"[{lo:.2f}, {hi:.2f}]" if not (pd.isna(lo) or pd.isna(hi))
                                                    else "" for lo, hi in zip(table["ci_lo"], table["ci_hi"])]
                if "n" in table:
                    out["n"] = table["n"].map(lambda v: "" if v is None or pd.isna(v) else str(int(v)))
    out["id"] = table["cell"]
    return out


def fit(frame: pd.DataFrame, width: int | None, keep: int) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` (the text leaderboard) without its rightmost optional columns until its lines fit
    ``width`` characters (None: no limit); the first ``keep`` columns always stay. Returns the frame
    and the names of the columns left out, for a note that says so."""
    dropped: list[str] = []
    if width is None:
        return frame, dropped
    optional = [c for c in frame.columns[keep:] if c != "id"] [::-1]
    order = (["id"] if "id" in frame.columns else []) + optional  # the id first: labels name cells too
    while len(frame.to_string(index=False).split("\n", 1)[0]) > width and order:
        name = order.pop(0)
        frame = frame.drop(columns=[name])
        dropped.append(name)
    return frame, dropped


def _markdown(frame: pd.DataFrame) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(frame.columns))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def format_leaderboard(cells: pd.DataFrame, *, sort_by: str | None = None,
                       columns: Sequence[str] = DEFAULT_COLUMNS, fmt: str = "table",
                       verdict: Verdict | None = None, width: int | None = None, said: bool = True) -> str:
    """The leaderboard as ``fmt``: ``table`` (aligned text, three decimals, under the verdict's
    lines when one is given -- else a line naming the ranking measure and any tie for first place
    -- its columns cut to ``width`` characters with a note naming those left out), ``csv`` and
    ``json`` (full precision, ``section/name`` column names, for scripts; json with the verdict),
    or ``markdown`` (a pipe table for a pull request or a design doc). ``verdict`` (on the sort
    measure) marks the cells not significantly worse than the best, and is said above the table
    unless ``said`` is False (the sweep's console says it last)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    sort_by = sort_by or primary(cells)
    table = leaderboard_table(cells, sort_by=sort_by, columns=columns, verdict=verdict)
    key = sort_by if sort_by in cells.columns else next((c for c in columns if c in cells.columns), sort_by)
    if fmt == "csv":
        return str(spreadsheet.to_csv(table))  # text cells that a spreadsheet would run are quoted
    if fmt == "json":
        rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in table.to_dict(orient="records")]
        return json.dumps({"sort_by": key, "tie": tie_line(cells, key), "rows": rows,
                           "verdict": verdict.as_dict() if verdict is not None else None}, indent=1, default=str)
    text = _text_frame(table, key)
    if fmt == "markdown":
        line = f"{verdict.text()}\n\n" if verdict is not None and verdict.measure == key else ""
        return line + _markdown(text)
    head: list[str]
    if verdict is not None and verdict.measure == key and said:
        # prose wrapped to the terminal (a pipe: 120 columns); the verdict's own line whole, to grep for
        head = [line if line.startswith("Best: ") else textwrap.fill(line, width or 120, break_on_hyphens=False)
                for line in verdict.lines()]
    else:
        tie = tie_line(cells, key, named=False)
        head = [f"ranked by {key}{'; ' + tie if tie else ''}"]
    if "not_worse" in table and len(table) > 1:
        head.append(f"({NOT_WORSE} *: not significantly worse than the best.)")
    keep = 2 + ("not_worse" in table) + ("ci_lo" in table) + ("n" in table)  # cell, mark, measure, CI, n
    text, dropped = fit(text, width, keep)
    if dropped:
        head.append(textwrap.fill(f"({len(dropped)} column(s) left out to fit {width} characters: "
                                  f"{', '.join(dropped)}; --format csv or a wider terminal shows them)",
                                  width or 120, break_on_hyphens=False))
    return "\n".join(head) + "\n" + text.to_string(index=False)


def format_failures(cells: pd.DataFrame, *, sort_by: str | None = None, top: int = 10) -> str:
    """The failure table: for the ``top`` cells (by ``sort_by``), how many questions each lost at
    each stage (labels no cell has are left out)."""
    found = [c.split("/", 1)[1] for c in cells.columns if c.startswith("failures/")
             and pd.to_numeric(cells[c], errors="coerce").fillna(0).any()]
    cols = [f"failures/{lab}" for lab in in_attribution_order(found)]
    if not cols:
        return ""
    sort_by = sort_by or primary(cells)
    key = sort_by if sort_by in cells.columns else cols[0]
    table = best_first(cells, key).head(top)
    width = int(table["label"].str.len().max())
    out = pd.DataFrame({"cell": table["label"].str.ljust(width)})
    shortened = []
    for c in cols:
        label = c.split("/", 1)[1]
        head = FAILURE_HEADS.get(label, label)
        if head != label:
            shortened.append(f"{head} = {label}")
        out[head] = pd.to_numeric(table[c], errors="coerce").fillna(0).astype(int)
    legend = f"\n({'; '.join(shortened)})" if shortened else ""
    return out.to_string(index=False) + legend


# Column heads of the failure table: the long label names made the demo's table 136 characters wide;
# with these it fits a 120-column terminal, and a legend line under the table names them in full.
FAILURE_HEADS = {"retrieval_miss": "retr_miss", "false_refusal": "false_ref", "correct_refusal": "corr_ref",
                 "unauthorized": "unauth", "stale_version": "stale", "partial_evidence": "partial",
                 "hallucinated_answer": "halluc", "excluded_no_relevant_chunk": "no_rel_chunk"}


# The by-tag table of one cell (console and report): ranking with its interval, the three outcomes
# of a turn (answer, refuse, clarify) and where the tag's questions were lost.
TAG_RANKING = (measures.HIT.at(5).column, measures.NDCG.at(10).column)
TAG_OUTCOMES = ((measures.CORRECT_ALL.column, "right"), (measures.CORRECT_REFUSAL_RATE.column, "refused_ok"),
                (measures.CLARIFY[1].column, "clarified"))




def _with_ci(values: dict[str, Any], key: str) -> str:
    v = values.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return "-"
    ci = (values.get("ci") or {}).get(key)
    return f"{v:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if isinstance(ci, list) and len(ci) == 2 else f"{v:.3f}"


def tag_rows(metrics: dict[str, Any]) -> list[dict[str, str]]:
    """One row per tag of a cell's ``by_tag`` (metrics.json): its questions, their expected outcomes
    (``a/r/c``: answer, refuse, clarify), hit@5 and ndcg@10 with their 95 % CIs, the share with the
    right outcome over all of them (``answer/correct_all``), correct refusals and clarifications, and its
    failure table (first failing stage: count, attribution order; the labels of questions not lost,
    :data:`rag_bench.failure_labels.NOT_LOST`, left out: the "right" and "refused_ok" columns say
    them). ``-``: not defined for the tag."""
    rows = []
    for tag, values in sorted((metrics.get("by_tag") or {}).items()):
        if not isinstance(values, dict):
            continue
        outcomes = values.get("outcomes") or {}
        failures = values.get("failures") or {}
        row = {"tag": str(tag), "n": str(values.get("n", "")),
               "a/r/c": "/".join(str(outcomes.get(o, 0)) for o in ("answer", "refuse", "clarify"))}
        row.update({key: _with_ci(values, key) for key in TAG_RANKING})
        row.update({head: _with_ci({k: values.get(k)}, k) for k, head in TAG_OUTCOMES})
        row["failures"] = " ".join(f"{FAILURE_HEADS.get(lab, lab)}:{failures[lab]}"
                                   for lab in in_attribution_order(failures) if failures[lab] and lab not in NOT_LOST)
        rows.append(row)
    return rows


def format_tags(metrics: dict[str, Any], *, width: int = 120) -> str:
    """:func:`tag_rows` as a console table within ``width``: the failures column (last) continues on
    indented lines under itself when a row's is too long (cut with … only on a terminal too narrow
    for it)."""
    rows = tag_rows(metrics)
    if not rows:
        return ""
    cols = list(rows[0])
    wide = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols[:-1]}
    lead = sum(wide.values()) + len(wide)  # where the failures column starts
    lines = [" ".join([*(c.ljust(wide[c]) for c in cols[:-1]), cols[-1]])]
    for r in rows:
        start = " ".join(r[c].ljust(wide[c]) for c in cols[:-1]) + " "
        parts = textwrap.wrap(r[cols[-1]], max(20, width - lead)) or [""]
        lines += [(start + parts[0]).rstrip(), *(" " * lead + p for p in parts[1:])]
    return "\n".join(line if len(line) <= width else line[:width - 1] + "…" for line in lines)
