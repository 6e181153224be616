"""Two cells set side by side must measure the same thing under each shared name.

A measure's number depends on settings beside the run (``eval.gain`` for nDCG, ``eval.relevance_level``
for every ranking measure, ``eval.answer_match`` for ``correct``...): a cell records them per key in
metrics.json's ``measures`` block. :func:`check_comparable` refuses -- ConfigError, exit 2,
naming the key, the parameter, each cell's value and the fix -- to compare, gate, rank or report
cells whose shared measures differ in a parameter, as :func:`rag_bench.cells.check_same_dataset`
refuses two dataset versions; and a measure some cells lack because of their ``eval.unit`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_bench.cells import Cell
from rag_bench.errors import ConfigError

UNIT_SECTIONS = {"retrieval": "chunk", "document": "document"}  # the sections eval.unit decides


@dataclass(frozen=True)
class Described:
    """What a cell's measures mean: each key's parameters, and the cell's ``eval.unit``."""

    name: str
    params: Mapping[str, Mapping[str, Any]]
    unit: str


def _setting(config: Mapping[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def describe(cell: Cell, name: str = "") -> Described:
    """The parameters of every measure of ``cell``: its ``measures`` block (a cell written before
    the block has one as it is read: :func:`rag_bench.cells.upgrade`)."""
    block = cell.metrics.get("measures")
    params = {k: dict(v.get("params") or {}) for k, v in (block or {}).items() if isinstance(v, Mapping)} \
        if isinstance(block, Mapping) else {}
    return Described(name or str(cell.path), params, str(_setting(cell.config, "eval.unit") or "chunk"))


def check_described(cells: Sequence[Described], keys: Sequence[str], *, fix: str = "") -> None:
    """ConfigError when a measure of ``keys`` means different things in ``cells`` (a parameter
    differs), or is missing from some of them only because their ``eval.unit`` leaves its section out."""
    tail = f"; {fix}" if fix else ""
    for key in dict.fromkeys(keys):
        present = [c for c in cells if key in c.params]
        lacking = [c for c in cells if key not in c.params]
        section = key.partition("/")[0]
        if section in UNIT_SECTIONS and present and lacking:
            odd = [c for c in lacking if c.unit not in (UNIT_SECTIONS[section], "both")]
            if odd:
                raise ConfigError(f"{key}: {odd[0].name} was scored with eval.unit={odd[0].unit}, which reports no "
                                  f"{section} measures, while {present[0].name} was scored with eval.unit="
                                  f"{present[0].unit} -- fix: re-run the cells with the same eval.unit (eval.unit=both "
                                  f"reports chunks and documents){tail}")
        for param in sorted({p for c in present for p in c.params[key]}):
            seen: dict[str, list[str]] = {}
            for c in present:
                value = c.params[key].get(param, "(not recorded)")
                seen.setdefault(str(value), []).append(c.name)
            if len(seen) > 1:
                said = "; ".join(f"{param}={v} in {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
                                 for v, names in seen.items())
                raise ConfigError(f"{key} is not the same measure in these cells: {said} -- fix: set side by side "
                                  f"cells scored with the same {param} (re-run one with the other's {param}, or keep "
                                  f"each setting in an experiment of its own){tail}")


def check_comparable(cells: Sequence[Cell], keys: Sequence[str], *, names: Mapping[str, str] | None = None,
                     fix: str = "") -> None:
    """:func:`check_described` of ``cells`` (``names``: cell id -> the name to say)."""
    check_described([describe(c, (names or {}).get(c.cell_id, "")) for c in cells], keys, fix=fix)
