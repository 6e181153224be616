"""Budgets of one ``rag-bench run -m`` invocation (docs/search.md, "Budgets"):
``search.max_llm_calls`` and ``search.budget_s``.

The rule, chosen so that "no half cell" and "at most N calls" are both true:

* **LLM calls, strict.** Before the generator is handed a cell's prompts that the generation cache
  does not hold, the calls they need are counted against the budget; if they do not all fit, *none*
  is made and the cell stops there, unfinished: no ``DONE`` (a later run discards and recomputes
  it), nothing tracked. So a sweep makes at most ``max_llm_calls`` calls, and every cell it marks
  ``DONE`` is whole. Cache hits cost nothing.
* **Seconds, at cell boundaries.** A cell not yet started when ``budget_s`` wall seconds have passed
  is not started; a cell running then finishes (stopping it would waste its work). The sweep may
  overrun ``budget_s`` by the one cell that was running.

Once the budget is reached every later cell of the sweep is skipped (a cell already ``DONE`` is
still read and counted as finished). The budget is per invocation: its counters start at zero on
every run, and re-running the same command resumes (finished cells are not recomputed; their
answers are in the generation cache, so they cost no calls).

The state is process-wide: rag_bench's launcher runs a sweep's cells in the sweeper's process.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class BudgetReached(Exception):  # noqa: N818 (a stop, not an error: the sweep exits 0)
    """The running cell must stop: the budget does not allow it (nothing half-written is kept)."""


@dataclass
class Budget:
    """One invocation's budget and what it spent."""

    max_llm_calls: int | None = None
    budget_s: float | None = None
    started: float = field(default_factory=time.monotonic)
    llm_calls: int = 0
    reached: str | None = None  # why the sweep stopped (None: it did not)
    finished: list[str] = field(default_factory=list)  # cell folders finished (or already DONE)
    left: list[str] = field(default_factory=list)  # the overrides of the cells not finished

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def before_cell(self) -> None:
        """Raise :class:`BudgetReached` when no new cell may start."""
        if self.reached is None and self.budget_s is not None and self.elapsed() >= self.budget_s:
            self.reached = f"search.budget_s={self.budget_s:g}: {self.elapsed():.1f} s passed"
        if self.reached is not None:
            raise BudgetReached(self.reached)

    def spend_llm_calls(self, n: int) -> None:
        """Count ``n`` calls about to be made, or raise :class:`BudgetReached` (none made) when they
        do not fit in what is left."""
        if self.reached is not None:
            raise BudgetReached(self.reached)
        if self.max_llm_calls is not None and self.llm_calls + n > self.max_llm_calls:
            self.reached = (f"search.max_llm_calls={self.max_llm_calls}: {self.llm_calls} calls made, the next cell "
                            f"needs {n} more")
            raise BudgetReached(self.reached)
        self.llm_calls += n

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "started": None, "elapsed_s": round(self.elapsed(), 3)}

    def report(self) -> str:
        """What the sweep finished and what is left, for the terminal."""
        head = f"budget reached ({self.reached})" if self.reached else "budget not reached"
        lines = [f"{head}: {len(self.finished)} cells finished, {len(self.left)} left; "
                 f"{self.llm_calls} LLM calls, {self.elapsed():.1f} s in this run"]
        lines += [f"  finished: {Path(cell).name}" for cell in self.finished]
        lines += [f"  left: {cell}" for cell in self.left]
        if self.left:
            lines.append("  re-run the same command to resume (finished cells are not recomputed)")
        return "\n".join(lines)

    def write(self, path: Path) -> None:
        """Append this invocation's :meth:`summary` as one JSON line (a resumed sweep has the same
        sweep id: one line per invocation)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(self.summary()) + "\n")


_CURRENT: Budget | None = None


def start(max_llm_calls: int | None, budget_s: float | None) -> Budget | None:
    """Start this process's budget (None when neither limit is set)."""
    global _CURRENT
    _CURRENT = None if max_llm_calls is None and budget_s is None else Budget(max_llm_calls, budget_s)
    return _CURRENT


def current() -> Budget | None:
    return _CURRENT


def stop() -> None:
    global _CURRENT
    _CURRENT = None


def spend_llm_calls(n: int) -> None:
    """Count ``n`` LLM calls against the running budget (no-op without one)."""
    if _CURRENT is not None and n:
        _CURRENT.spend_llm_calls(n)


def before_cell() -> None:
    """Stop before a cell when the running budget is reached (no-op without one)."""
    if _CURRENT is not None:
        _CURRENT.before_cell()
