"""What every view decides the same way: the primary measure of an experiment, the order of its
cells (and so the best one), the name of a cell, and the baseline the best cell is compared with.

The leaderboard, the report, the sweep's MLflow parent run, ``compare``'s default pair, the gate
and the notebook all call these functions, so they name the same best cell under the same name.

* **Primary measure**: ``experiment.primary`` from the cells' config; ``auto`` (the default) is
  ``answer/correct_all`` (answerable questions answered right, unanswerable ones refused) when a
  model answered; ``answer/context_all`` (answerable questions whose evidence all reached the
  generator, unanswerable ones refused) when a cell's generator is a stand-in for a model (the
  extractive generator: its answers would rank its quirks; :func:`primary_reason` says so);
  else ``retrieval/ndcg@10`` (``document/ndcg@10`` when the cells rank documents only). A measure
  no cell has is an error
  naming it and the measures the cells do have -- never a silent fallback, never a NaN best --
  and a sweep whose grid cannot report it is refused before its first cell
  (:func:`check_primary_reachable`).
* **Order**: the primary measure in its better direction; then the faster parse of the dataset's
  document files (``parse/seconds`` on a twofold scale: 37 s ranks after 1.2 s, 1.2 s and 1.9 s
  are the same cost -- a cached parse keeps what it cost, a fresh one measures again; issue 56);
  then the cheaper cell by generator tokens per question (a count: the same on every run); then
  the name; then the cell id. Query
  latency is measured, so two fresh runs of one sweep measure it differently: it never breaks a
  tie (issue 52: it named a different best cell on each run). Cells equal on the primary measure
  are *tied*, and said to be ("3 cells tied at 0.787").
* **Name**: the cell's values on the axes its experiment sweeps (:func:`rag_bench.naming.labels`
  over the experiment's cells), ``app=<name>`` for an external system.
* **Baseline**: always one, said as such (:func:`baseline_of`): the cell the user names; else the
  one the sweep declared (``experiment.baseline``: a cell's name or id); else the cell whose every
  swept axis is at the config's default (``conf/config.yaml``); else the grid's first cell (each
  swept axis at the first value its override lists, from the sweep's ``.hydra/multirun.yaml``);
  else the first cell by name. A sweep that leaves a default out still has a baseline, and no
  view ends on "name one with a flag".
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag_bench import naming
from rag_bench.cells import Cell, experiment_cells, one_dataset
from rag_bench.errors import ConfigError, DataError, Problem
from rag_bench.evaluation import measures
from rag_bench.runner.primary import ANSWER_KEYS, AUTO_ORDER, STAND_IN, configured_primary

AUTO = measures.AUTO_PRIMARY
CORRECT = measures.CORRECT_KEY
check_primary = measures.check_primary  # lives with the catalog: runner/config checks it at compose


def primary_measure(cells: Sequence[Cell], configured: str | None = None) -> str:
    """The measure that ranks ``cells``: ``configured`` (else the cells' ``experiment.primary``),
    or what ``auto`` chooses (:func:`choose_primary`); ConfigError when no cell has it."""
    keys = (f"{section}/{name}" for c in cells for section, values in c.metrics.items()
            if isinstance(values, Mapping) for name, v in values.items() if _finite(v))
    return choose_primary(configured or configured_primary([c.config for c in cells]), rankable(keys),
                          stand_in=any(stand_in(c.metrics) for c in cells))


def stand_in(metrics: Mapping[str, Any]) -> bool:
    """Whether a cell's answers came from a stand-in for a model (metrics.json
    ``methods.generator_stand_in``, what its generator declared: :class:`rag_bench.generation.base.Traits`)."""
    methods = metrics.get("methods") if isinstance(metrics, Mapping) else None
    return isinstance(methods, Mapping) and methods.get("generator_stand_in") is True


def primary_reason(key: str, configured: str, generators: Collection[str] = (), stand_in: bool = False) -> str:
    """Why ``key`` ranks the cells, for a reader: the configured measure, or what ``auto`` chose and
    why (``generators``: the names of the cells' generators; ``stand_in``: one is a stand-in).

    >>> primary_reason("answer/context_all", "auto", ["extractive"], True)[:89]
    'ranked by answer/context_all (auto): the generator extractive is a stand-in for a model, '
    >>> primary_reason("generation/correct", "auto")[:107]
    'ranked by generation/correct (auto; these cells report no answer/correct_all: their eval.scorers leave out '
    """
    if configured != AUTO:
        return f"ranked by {key} (experiment.primary)"
    if key == STAND_IN and stand_in:
        gens = ", ".join(sorted(generators)) or "a stand-in"
        return (f"ranked by {key} (auto): the generator {gens} is a stand-in for a model, so an answerable question "
                "counts when all its evidence reached the generator, not by the stand-in's answer, and an "
                f"unanswerable one when refused; answer measures are still reported (plug a model, e.g. "
                f"generator=llama_cpp, to rank by {ANSWER_KEYS[0]})")
    if key == ANSWER_KEYS[0]:
        return (f"ranked by {key} (auto): answerable questions answered right and unanswerable ones refused, over "
                "all questions")
    if key in ANSWER_KEYS:  # what AUTO_ORDER's comment says: a cell of today too, not only of format 0
        return (f"ranked by {key} (auto; these cells report no {ANSWER_KEYS[0]}: their eval.scorers leave out the "
                "answer scorer, or they were written before it)")
    return f"ranked by {key} (auto: no cell generated answers)"


def reason_of(cells: Sequence[Cell], key: str) -> str:
    """:func:`primary_reason` for ``cells`` ranked by ``key``."""
    gens = {str((c.config.get("generator") or {}).get("name", "")) for c in cells if stand_in(c.metrics)}
    return primary_reason(key, configured_primary([c.config for c in cells]), gens - {""},
                          any(stand_in(c.metrics) for c in cells))


_HEADLINE = {m.key for m in (*measures.MAIN, *measures.HEADLINE)}


def choose_primary(configured: str, available: Collection[str], *, stand_in: bool = False) -> str:
    """``configured`` (checked, :func:`check_primary`) unless ``auto``; then the first of
    :data:`AUTO_ORDER` (``answer/correct_all`` when answers were generated, else nDCG@10 of the
    chunk ranking, else of the document ranking) among ``available``, the measures with a value
    in at least one cell (:func:`rankable`) -- except that with ``stand_in`` (a cell's generator
    is a stand-in for a model) its answers to answerable questions are passed over:
    ``answer/context_all`` counts those whose evidence all reached it instead. ConfigError when the
    measure is not available: ranking by a measure no cell has would put the cells in no order.

    >>> choose_primary("auto", ["answer/correct_all", "generation/correct", "retrieval/ndcg@10"])
    'answer/correct_all'
    >>> choose_primary("auto", ["answer/correct_all", "answer/context_all"], stand_in=True)
    'answer/context_all'
    >>> choose_primary("auto", ["retrieval/ndcg@10"])
    'retrieval/ndcg@10'
    >>> choose_primary("retrieval/hit@5", ["retrieval/hit@5"]), choose_primary("auto", ["document/ndcg@10"])
    ('retrieval/hit@5', 'document/ndcg@10')
    """
    chosen = check_primary(configured)
    if chosen == AUTO:
        if stand_in and STAND_IN in available:
            return STAND_IN
        found = next((k for k in AUTO_ORDER if k in available), None)
        if found is not None:
            return found
    elif chosen in available:
        return chosen
    asked = f"auto ({measures.AUTO_HELP})" if chosen == AUTO else repr(chosen)
    have = sorted(available, key=lambda k: (k not in _HEADLINE, k))  # the main measures first
    close = difflib.get_close_matches(chosen, have, n=3, cutoff=0.5) if chosen != AUTO else []
    shown = ", ".join(have[:12]) + (f" and {len(have) - 12} more" if len(have) > 12 else "") if have else "none"
    raise ConfigError(f"experiment.primary: {asked} is a measure no cell has (the cells have: {shown}) -- fix: "
                      + (f"did you mean {' or '.join(close)}? " if close else "")
                      + "set experiment.primary to a measure the cells have (or auto), or name one with "
                      "--sort-by / --metric")


def rankable(keys: Iterable[str]) -> list[str]:
    """The measures among ``keys`` (``section/name``) that can rank cells (a registered measure
    with a better direction), each once, in order."""
    out: dict[str, None] = {}
    for key in keys:
        if key not in out:
            m = measures.measure(key)
            if m is not None and m.higher_is_better is not None:
                out[key] = None
    return list(out)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def latency_ms(metrics: Mapping[str, Any]) -> float | None:
    """Query-time cost of a cell: retrieval p50 plus rerank p50 (ms per question)."""
    lat = metrics.get("latency") or {}
    r = lat.get("retrieve_p50_ms", lat.get("system_p50_ms"))
    if not isinstance(r, (int, float)):
        return None
    extra = lat.get("rerank_p50_ms")
    return float(r) + (float(extra) if isinstance(extra, (int, float)) else 0.0)


def tokens(cell: Cell) -> float | None:
    """Generator tokens (in + out) per question, mean (metrics.json ``cost/generator_tokens``; a
    cell written before it has it as it is read: :func:`rag_bench.cells.upgrade`); None when the
    cell generated nothing."""
    if "generation" not in cell.metrics:
        return None
    return cell.metric(measures.GENERATOR_TOKENS.key)


def value_of(cell: Cell, key: str) -> float | None:
    """``cell``'s value of ``key`` (``section/name`` or ``tag:<tag>/<name>``); None when it has none."""
    if key.startswith("tag:"):
        tag, _, name = key[4:].rpartition("/")
        v = (cell.metrics.get("by_tag") or {}).get(tag, {}).get(name)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
    return cell.metric(key)


def higher_is_better(key: str) -> bool:
    """Whether a higher ``key`` ranks first (a per-tag key as its ranking measure; unknown: higher)."""
    if key.startswith("tag:"):
        key = f"retrieval/{key.rpartition('/')[2]}"
    try:
        return measures.direction(key) is not False
    except ValueError:
        return True


def rank(cells: Sequence[Cell], key: str, names: Mapping[str, str] | None = None) -> list[Cell]:
    """``cells`` best first on ``key`` (a ``section/name`` or ``tag:<tag>/<name>``): the value in
    its better direction (cells without one last); ties broken by the faster parse
    (:func:`parse_class`), then the cheaper cell by generator tokens (never by latency: it is
    measured, and differs between two runs of the same cells), then by name (``names``: cell id →
    name, default :func:`names_of`), then cell id."""
    names = names if names is not None else names_of(cells)
    higher = higher_is_better(key)
    values = {c.cell_id: value_of(c, key) for c in cells}
    shared = Counter(v for v in values.values() if v is not None)

    def order(c: Cell) -> tuple[Any, ...]:
        v = values[c.cell_id]
        head = (v is None, 0.0 if v is None else (-v if higher else v))
        if v is None or shared[v] < 2:  # no tie on the measure: the cost is never read
            return (*head, 0, 0.0, names.get(c.cell_id, ""), c.cell_id)
        tok = tokens(c)
        return (*head, parse_class(c), math.inf if tok is None else tok, names.get(c.cell_id, ""), c.cell_id)

    return sorted(cells, key=order)


def parse_class(cell: Cell) -> int:
    """The cell's parse cost for the tie rule: ``parse/seconds`` on a twofold scale (``floor(log2)``:
    1.2 s and 1.9 s are class 0, 37 s class 5), 0 without document files or under a second.

    >>> from rag_bench.cells import Cell
    >>> [parse_class(Cell("c", Path("."), {}, {"parse": {"seconds": s}}, {})) for s in (0.3, 1.2, 1.9, 37.0)]
    [0, 0, 0, 5]
    """
    seconds = cell.metric("parse/seconds")
    return int(math.floor(math.log2(seconds))) if seconds is not None and seconds >= 1.0 else 0


def tied(cells: Sequence[Cell], key: str) -> list[Cell]:
    """The cells equal to the first of ``cells`` (ranked) on ``key`` (the first included)."""
    if not cells:
        return []
    v = value_of(cells[0], key)
    return [c for c in cells if v is not None and value_of(c, key) == v]


def tie_note(n_tied: int, key: str, value: float | None, *, parsed: bool = False) -> str:
    """``3 cells tied at 0.787 on generation/correct`` and the rule that picked the first; empty
    with no tie (``key`` empty: the measure is named already). ``parsed``: the tied cells parsed
    document files, so the faster parse came first (:func:`rank`).

    >>> tie_note(3, "generation/correct", 0.7866)
    '3 cells tied at 0.787 on generation/correct (first: the fewer generator tokens, then the name)'
    """
    if n_tied < 2 or value is None:
        return ""
    rule = "the faster parse, then the fewer generator tokens" if parsed else "the fewer generator tokens"
    return f"{n_tied} cells tied at {value:.3f}{' on ' + key if key else ''} (first: {rule}, then the name)"


def names_of(cells: Sequence[Cell]) -> dict[str, str]:
    """Cell id → the cell's name among ``cells`` (:func:`rag_bench.naming.labels`)."""
    return dict(zip((c.cell_id for c in cells), naming.labels([c.config for c in cells], [c.cell_id for c in cells])))


def cell_name(cell: Cell) -> str:
    """The name the leaderboard and the report give ``cell``: its label among the finished cells
    of its experiment folder (same dataset version). A cell alone (downloaded from MLflow) is
    named as its MLflow run was (its name in its sweep), else by its own stages (or ``app=<name>``)."""
    try:
        siblings, _ = one_dataset(experiment_cells(cell.path.parent, records=False), cell.dataset_fingerprint)
    except (DataError, OSError):
        siblings = []
    if cell.cell_id not in {c.cell_id for c in siblings} or len(siblings) == 1:
        if cell.done.get("mlflow_run_name"):
            return str(cell.done["mlflow_run_name"])
        siblings = [cell]
    return names_of(siblings)[cell.cell_id]


def pair_names(a: Cell, b: Cell) -> tuple[str, str]:
    """The names of two cells; when they read the same (two experiments, same axes), each gets its
    experiment folder and cell id so they can be told apart."""
    na, nb = cell_name(a), cell_name(b)
    if na == nb:
        na, nb = (f"{na} ({c.path.parent.name}/{c.cell_id})" for c in (a, b))  # type: ignore[assignment]
    return na, nb


@lru_cache(maxsize=1)  # the packaged conf/ files: they do not change while a process runs
def _defaults() -> dict[str, Any]:
    """conf/config.yaml's values with each stage's default option file (its ``name`` and parameters)."""
    import yaml

    from rag_bench.components import STAGES

    conf_dir = Path(__file__).resolve().parents[1] / "conf"  # runner.config.CONF_DIR, without importing upward

    root = yaml.safe_load((conf_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    out = {k: v for k, v in root.items() if k not in ("defaults", "hydra")}
    for entry in root.get("defaults") or []:
        if isinstance(entry, dict):
            for group, option in entry.items():
                if group in STAGES and isinstance(option, str):
                    node = yaml.safe_load((conf_dir / group / f"{option}.yaml").read_text(encoding="utf-8")) or {}
                    out[group] = {"name": option, **{k: v for k, v in node.items() if k != "defaults"}}
    return out


def defaults_cell(cells: Sequence[Cell]) -> Cell | None:
    """The cell whose every swept axis (:func:`rag_bench.naming.axes`) holds the value of the
    config's defaults (conf/config.yaml: section chunker, bm25, no reranker, k=5, ...); None when no
    cell does (or nothing is swept)."""
    own = [c for c in cells if naming.system(c.config) is None]
    axes = naming.axes([c.config for c in own])
    if not axes:
        return None
    default = _defaults()
    want = {a: naming.value(default, a) for a in axes}
    found = [c for c in own if all(naming.value(c.config, a) == v for a, v in want.items())]
    return found[0] if len(found) == 1 else None


DEFAULTS_ROLE = "the config's defaults"


def configured_baseline(cells: Sequence[Cell]) -> str | None:
    """``experiment.baseline`` of the cells (the value most cells hold), None when unset."""
    values = Counter(str(b) for c in cells for b in [((c.config.get("experiment") or {})
                                                      if isinstance(c.config, Mapping) else {}).get("baseline")] if b)
    return values.most_common(1)[0][0] if values else None


def _named(cells: Sequence[Cell], ref: str, names: Mapping[str, str]) -> Cell | None:
    """The cell whose id, unique id prefix (6+ characters) or name is ``ref``."""
    found = [c for c in cells if ref in (c.cell_id, names.get(c.cell_id))]
    if not found and len(ref) >= 6:
        found = [c for c in cells if c.cell_id.startswith(ref)]
    return found[0] if len(found) == 1 else None


def pick(cells: Sequence[Cell], ref: str, *, key: str | None = None, names: Mapping[str, str] | None = None,
         option: str = "cell", where: str = "") -> tuple[Cell, str]:
    """``(cell, why)``: the cell of ``cells`` (one experiment's) that ``ref`` names -- ``best`` (by
    ``key``, else the cells' primary measure), ``baseline``, a cell id or a unique prefix of one (6+
    characters), or the cell's name as every table prints it -- and a line saying which cell that
    is and why (empty for a cell named outright). The one picker of the CLI (``--cell``, ``compare
    EXPERIMENT A B``) and the API (``Experiment.cell``): ConfigError naming ``option`` at ``where``
    otherwise, with the closest names."""

    names = dict(names) if names is not None else names_of(cells)
    if ref == "best":
        key = key or primary_measure(cells)
        ranked = rank(cells, key, names)
        best, value = ranked[0], ranked[0].metric(key)
        tie = tie_note(len(tied(ranked, key)), "", value)
        shown = "n/a" if value is None else f"{value:.3f}"
        return best, (f"the best of {len(cells)} cell{'s' if len(cells) != 1 else ''} by {key} ({shown})"
                      + (f"; {tie}" if tie else ""))
    if ref == "baseline":
        base, how = baseline_of(cells)
        if base is None:
            raise ConfigError(str(Problem(where, 0, option, "baseline: the experiment has no finished cell",
                                          "run the sweep first")))
        said = "the cell at the config's defaults on every swept axis" if how == DEFAULTS_ROLE else how
        return base, f"the baseline: {said}"
    by_name = {v: k for k, v in names.items()}
    ids = {c.cell_id: c for c in cells}
    if ref in ids or ref in by_name:
        return ids.get(ref) or ids[by_name[ref]], ""
    prefixed = [c for c in cells if len(ref) >= 6 and c.cell_id.startswith(ref)]
    if len(prefixed) == 1:
        return prefixed[0], ""
    close = difflib.get_close_matches(ref, list(by_name), n=2, cutoff=0.6)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "") + \
        f"give best or baseline, a cell id or a name as `rag-bench leaderboard {where}` prints it" + \
        (f", e.g. {next(iter(by_name))!r}" if by_name and not close else "")
    what = f"names {len(prefixed)} cells (a prefix of several ids)" if prefixed else "names no cell of this experiment"
    raise ConfigError(str(Problem(where, 0, option, f"{ref!r} {what} ({len(cells)} finished cells)", hint)))


def grid_first(cells: Sequence[Cell]) -> Cell | None:
    """The grid's first cell: every swept axis at the first value its override lists (the sweep's
    ``<experiment>/.hydra/multirun.yaml``, ``hydra.overrides.task``); None when the file or the
    cell is not there (a pruned cell, cells copied without it)."""
    if not cells:
        return None
    import yaml
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        doc = yaml.safe_load((cells[0].path.parent / ".hydra" / "multirun.yaml").read_text(encoding="utf-8"))
        task = doc["hydra"]["overrides"]["task"]
    except Exception:  # noqa: BLE001 -- no sweep file, or not Hydra's: no grid order to read
        return None
    own = [c for c in cells if naming.system(c.config) is None]
    axes = set(naming.axes([c.config for c in own]))
    parser = OverridesParser.create()
    first: dict[str, str] = {}
    for text in task if isinstance(task, list) else []:
        try:
            o = parser.parse_override(str(text))
            key = o.get_key_element().lstrip("+~")
            if o.is_sweep_override() and key in axes:
                first[key] = str(next(iter(o.sweep_string_iterator())))
        except Exception:  # noqa: BLE001 -- a range or glob this reader does not expand: no grid order
            return None
    if not first:
        return None
    found = [c for c in own if all(naming.value(c.config, k) == v for k, v in first.items())]
    return found[0] if len(found) == 1 else None


def baseline_of(cells: Sequence[Cell], chosen: str | Path | None = None) -> tuple[Cell | None, str]:
    """The baseline the best cell is compared with and how it was chosen (said beside it): ``chosen``
    (a cell folder, a run id, or a cell id or name of ``cells``; role ``as named``), else the
    declared ``experiment.baseline``, else :func:`defaults_cell` (:data:`DEFAULTS_ROLE`), else
    :func:`grid_first`, else the first cell by name. ``(None, why)`` only without cells. DataError
    when ``chosen`` names no cell."""
    if chosen is not None:
        return baseline(cells, chosen), "as named"
    if not cells:
        return None, "no cells"
    names = names_of(cells)
    declared = configured_baseline(cells)
    lost = ""
    if declared:
        found = _named(cells, declared, names)
        if found is not None:
            return found, "experiment.baseline"
        lost = f"experiment.baseline {declared!r} names no finished cell; "
    found = defaults_cell(cells)
    if found is not None:
        return found, (lost + DEFAULTS_ROLE) if lost else DEFAULTS_ROLE
    found = grid_first(cells)
    if found is not None:
        return found, f"{lost}the grid's first cell: no cell holds the config's defaults"
    first = min(cells, key=lambda c: (names[c.cell_id], c.cell_id))
    return first, f"{lost}the first cell by name: no cell holds the config's defaults"


def baseline(cells: Sequence[Cell], chosen: str | Path | None = None) -> Cell | None:
    """The baseline the best cell is compared with: ``chosen`` (a cell folder, a run id, or a cell id
    or name of ``cells``), else :func:`baseline_of`'s choice (None only without cells). DataError
    when ``chosen`` names no cell."""
    if chosen is None:
        return baseline_of(cells)[0]
    names = names_of(cells)
    for c in cells:
        if str(chosen) in (c.cell_id, names[c.cell_id]):
            return c
    from rag_bench.tracking.download import load_cell_or_run

    try:
        return load_cell_or_run(chosen)
    except DataError as exc:
        raise DataError(Problem(str(chosen), 0, "--baseline", "names no cell of this experiment and no cell folder",
                                f"pass a cell id, a name from the leaderboard (e.g. {next(iter(names.values()), '')!r})"
                                " or a cell folder")) from exc


def default_pair(experiment_dir: str | Path, chosen: str | None = None) -> tuple[Cell, Cell, str]:
    """``compare EXPERIMENT_DIR``'s pair: the baseline (:func:`baseline`) and the best cell by the
    primary measure (:func:`rank`), with a line naming both and the measure (and any tie).
    DataError when there is no baseline, or when the baseline is the best cell."""
    exp = Path(experiment_dir)
    cells, _ = one_dataset(experiment_cells(exp, records=False))
    if not cells:
        raise DataError(Problem(str(exp), 0, "", "no finished cells (folders with DONE)", "run a sweep first"))
    key = primary_measure(cells)
    names = names_of(cells)
    ranked = rank(cells, key, names)
    base, role = baseline_of(cells, chosen)
    assert base is not None  # (cells is not empty)
    best = ranked[0]
    if base.cell_id == best.cell_id:
        raise DataError(Problem(str(exp), 0, "--baseline", f"the baseline {names[best.cell_id]!r} is the best cell "
                                f"by {key}: nothing to compare it with", "pass two cells: compare CELL_A CELL_B"))
    tie = tie_note(len(tied(ranked, key)), key, value_of(best, key))
    shown = "" if role in (DEFAULTS_ROLE, "as named") else f" ({role})"
    note = (f"A = baseline {names.get(base.cell_id, base.cell_id)}{shown}, B = best by {key} {names[best.cell_id]}"
            f"{'; ' + tie if tie else ''}")
    return base, best, note
