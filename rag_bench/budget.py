"""Budgets of one ``rag-bench run -m`` invocation (docs/search.md, "Budgets"):
``budget.max_llm_calls``, ``budget.usd`` and ``budget.seconds`` (spelled ``search.max_llm_calls``, ``search.budget_usd``
and ``search.budget_s`` before: accepted for one release).

The rule, chosen so that "no half cell" and "at most N calls / $X" are both true:

* **LLM calls, strict.** Before the generator is handed a cell's prompts that the generation cache
  does not hold, the calls they need are counted against the budget; if they do not all fit, *none*
  is made and the cell stops there, unfinished: no ``DONE`` (a later run discards and recomputes
  it), nothing tracked. So a sweep makes at most ``max_llm_calls`` calls, and every cell it marks
  ``DONE`` is whole. Cache hits cost nothing. The judge's calls count too, strictly where a
  judgement's number of calls is known before (``claim_faithfulness``: one per claim; ragas'
  faithfulness: at most 2; response relevancy: 3), otherwise after the judge's batch (a judged cell
  may then overrun the budget by its own judge calls).
* **Dollars, strict where a batch can be bounded.** Before a batch of prompts is sent to a model
  priced by tokens, its cost is bounded from above: every prompt's input tokens by the UTF-8 bytes
  of its request's messages as JSON (a token covers at least one byte; the JSON's keys and quotes
  pay for the chat template's role markers), its output by the model's ``max_tokens``. If
  spent + bound > ``budget_usd`` the batch is refused whole. After the calls the spend is their real
  cost (the tokens the replies report, at the cost scorer's prices: ``prices.token_usd``). A model
  priced by the hour (it runs on this machine), and the judge (whose prompts ragas writes as it
  goes), cannot be bounded before: their measured seconds or reported tokens are charged after the
  batch, so the sweep may overrun ``budget_usd`` by that one batch.
* **Seconds, at cell boundaries.** A cell not yet started when ``budget_s`` wall seconds have passed
  is not started; a cell running then finishes (stopping it would waste its work). The sweep may
  overrun ``budget_s`` by the one cell that was running.

Once the budget is reached every later cell of the sweep is skipped (a cell already ``DONE`` is
still read and counted as finished). The budget is per invocation: its counters start at zero on
every run, and re-running the same command resumes (finished cells are not recomputed; their
answers are in the generation cache, so they cost no calls). Without any limit the counters still
run: the sweeper records what an invocation spent when it made LLM calls.

The state is process-wide: rag_bench's launcher runs a sweep's cells in the sweeper's process.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

log = logging.getLogger(__name__)
PRICED_STAGES = ("generator", "judge", "embedder", "reranker")  # the stages whose model calls budget_usd charges


class BudgetReached(Exception):  # noqa: N818 (a stop, not an error: the sweep exits 0)
    """The running cell must stop: the budget does not allow it (nothing half-written is kept)."""


@dataclass(frozen=True)
class Hold:
    """What a batch about to be sent was counted at (its calls, and its bound in dollars: None when
    it cannot be bounded), until :meth:`Budget.charge` replaces it by what the batch spent."""

    stage: str
    calls: int
    usd: float | None


def request_bytes(messages: Any) -> int:
    """The upper bound of a request's input tokens: the UTF-8 bytes of its messages (and output
    schema) as JSON. A byte-level BPE or byte-fallback tokenizer never makes more tokens than bytes,
    and each message's JSON keys and quotes (30 bytes or more) outnumber the role markers a chat
    template adds (3 to 5 tokens)."""
    return len(json.dumps(messages).encode("utf-8"))


@dataclass
class Budget:
    """One invocation's budget and what it spent."""

    max_llm_calls: int | None = None
    budget_s: float | None = None
    budget_usd: float | None = None
    started: float = field(default_factory=time.monotonic)
    llm_calls: int = 0
    usd: float = 0.0  # dollars spent by priced calls (the record says null when some call was unpriced)
    judge_calls: int = 0  # of llm_calls, the judge's
    reached: str | None = None  # why the sweep stopped (None: it did not)
    finished: list[str] = field(default_factory=list)  # cell folders finished (or already DONE)
    left: list[str] = field(default_factory=list)  # the overrides of the cells not finished
    unpriced: list[str] = field(default_factory=list)  # stage models that made calls with no price
    rates: dict[str, Any] = field(default_factory=dict)  # the running cell's prices.Rate per stage

    @property
    def limited(self) -> bool:
        return self.max_llm_calls is not None or self.budget_s is not None or self.budget_usd is not None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def before_cell(self) -> None:
        """Raise :class:`BudgetReached` when no new cell may start."""
        if self.reached is None and self.budget_s is not None and self.elapsed() >= self.budget_s:
            self.reached = f"budget.seconds={self.budget_s:g}: {self.elapsed():.1f} s passed"
        if self.reached is not None:
            raise BudgetReached(self.reached)

    def spend_llm_calls(self, n: int) -> None:
        """Count ``n`` calls about to be made, or raise :class:`BudgetReached` (none made) when they
        do not fit in what is left."""
        self.hold("generator", n)

    def hold(self, stage: str, calls: int, usd: float | None = None) -> Hold:
        """Count a batch of ``calls`` about to be made, bounded by ``usd`` dollars (None: it cannot be
        bounded, it is charged after), or raise :class:`BudgetReached` -- none of it made -- when it
        does not fit in what is left."""
        if self.reached is not None:
            raise BudgetReached(self.reached)
        if self.max_llm_calls is not None and self.llm_calls + calls > self.max_llm_calls:
            self._refuse(f"budget.max_llm_calls={self.max_llm_calls}: {self.llm_calls} calls made, the next cell needs "
                         f"{calls} more ({stage})", calls > self.max_llm_calls, f"budget.max_llm_calls={calls}")
        if self.budget_usd is not None and usd is not None and self.usd + usd > self.budget_usd:
            batch = f"{calls} {stage} calls" if calls else f"{stage} batch"
            self._refuse(f"budget.usd={self.budget_usd:g}: ${self.usd:.6f} spent, the next cell's {batch} may "
                         f"cost up to ${usd:.6f}", usd > self.budget_usd,
                         f"budget.usd={math.ceil(usd * 100) / 100:g}")
        self.llm_calls += calls
        self.usd += usd or 0.0
        if stage == "judge":
            self.judge_calls += calls
        return Hold(stage, calls, usd)

    def _refuse(self, why: str, whole: bool, fix: str) -> NoReturn:
        """Stop the sweep for ``why``; ``whole``: the batch needs more than the whole budget (``fix``
        names the setting that would let it through)."""
        self.reached = why + (f"; more than the whole budget: no re-run with it can finish that cell -- fix: {fix} "
                              "or more" if whole else "")
        raise BudgetReached(self.reached)

    def charge(self, held: Hold, calls: int, usd: float | None) -> None:
        """Replace what ``held`` counted by what its batch spent: ``calls`` made and ``usd`` dollars
        (None: unpriced). A batch charged past ``budget_usd`` or ``max_llm_calls`` (one that could
        not be bounded) stops the sweep after it: the next batch of any stage is refused, so the
        running cell stops unfinished unless that was its last batch (what it paid for is cached:
        the re-run that finishes it does not pay it again)."""
        self.llm_calls += calls - held.calls
        if held.stage == "judge":
            self.judge_calls += calls - held.calls
        if usd is not None:
            if held.usd is not None and usd > held.usd + 1e-12:
                log.warning("%s: %d calls cost $%.6f, more than their bound $%.6f (an endpoint counting more tokens "
                            "than its request's bytes?)", held.stage, calls, usd, held.usd)
            self.usd += usd - (held.usd or 0.0)
        else:
            self.usd -= held.usd or 0.0
        if self.max_llm_calls is not None and self.llm_calls > self.max_llm_calls and self.reached is None:
            self.reached = (f"budget.max_llm_calls={self.max_llm_calls}: {self.llm_calls} calls made (the judge's, "
                            "counted after its batch)")
        if self.budget_usd is not None and self.usd > self.budget_usd and self.reached is None:
            self.reached = (f"budget.usd={self.budget_usd:g}: ${self.usd:.6f} spent ({held.stage}: charged "
                            "after its batch)")

    def summary(self) -> dict[str, Any]:
        # an unpriced call makes the invocation's dollars unknown: null, never a sum that reads as all of it
        out = {**asdict(self), "started": None, "elapsed_s": round(self.elapsed(), 3),
               "usd": None if self.unpriced else round(self.usd, 9)}
        out.pop("rates")
        return out

    def report(self) -> str:
        """What the sweep finished and what is left, for the terminal."""
        head = f"budget reached ({self.reached})" if self.reached else "budget not reached"
        money = f", ${self.usd:.6f} of ${self.budget_usd:g}" if self.budget_usd is not None else \
            (f", ${self.usd:.6f}" if self.usd and not self.unpriced else "")
        judge = f" ({self.judge_calls} the judge's)" if self.judge_calls else ""
        lines = [f"{head}: {len(self.finished)} cells finished, {len(self.left)} left; "
                 f"{self.llm_calls} LLM calls{judge}{money}, {self.elapsed():.1f} s in this run"]
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


def start(max_llm_calls: int | None, budget_s: float | None, budget_usd: float | None = None) -> Budget:
    """Start this process's budget (without a limit it only counts: the invocation's record)."""
    global _CURRENT
    _CURRENT = Budget(max_llm_calls, budget_s, budget_usd)
    return _CURRENT


def current() -> Budget | None:
    return _CURRENT


def stop() -> None:
    global _CURRENT
    _CURRENT = None


def set_rates(rates: dict[str, Any]) -> None:
    """Price the running cell's model calls: ``rates`` maps a stage of :data:`PRICED_STAGES` to its
    ``rag_bench.evaluation.prices.Rate`` (the caller reads the cell's ``prices.*``: this module sits
    below the evaluation and imports none of it); a stage left out is charged nothing and named in
    the record (under ``budget_usd`` the sweeper refused such a grid before any cell ran)."""
    if _CURRENT is not None:
        _CURRENT.rates = {stage: rate for stage, rate in rates.items() if stage in PRICED_STAGES and rate is not None}


def spend_llm_calls(n: int) -> None:
    """Count ``n`` LLM calls against the running budget (no-op without one)."""
    if _CURRENT is not None and n:
        _CURRENT.spend_llm_calls(n)


def hold(stage: str, calls: int, input_bytes: Callable[[], Sequence[int]] | None = None,
         max_tokens: int | None = None, units: int | None = None) -> Hold | None:
    """Count a batch of ``stage``'s ``calls`` (LLM calls: the generator's, the judge's; 0 for an
    embedder or reranker) about to be made (None without a budget). Bounded in dollars when the stage
    is priced by tokens and every prompt's input bound (``input_bytes()``, each :func:`request_bytes`)
    and ``max_tokens`` are known, or priced per unit (an embedder's ``units`` texts, a reranker's
    calls); else charged after."""
    if _CURRENT is None:
        return None
    rate = _CURRENT.rates.get(stage)
    bound = None
    if rate is not None and rate.by_tokens and input_bytes is not None and max_tokens is not None:
        sizes = list(input_bytes())
        if len(sizes) == calls:
            bound = rate.usd(sum(sizes), calls * int(max_tokens), 0.0)
    elif rate is not None and rate.usd_per_unit is not None and units is not None:
        bound = rate.usd(0, 0, 0.0, units)
    return _CURRENT.hold(stage, calls, bound)


def charge(held: Hold | None, calls: int, tokens_in: int = 0, tokens_out: int = 0, seconds: float = 0.0,
           units: int = 0) -> None:
    """Charge ``held``'s batch what it spent: ``calls`` made, their reported tokens, the units sent
    or the seconds taken, at the stage's rate (no-op without a budget)."""
    if _CURRENT is None or held is None:
        return
    rate = _CURRENT.rates.get(held.stage)
    if rate is None and (calls or units) and held.stage not in _CURRENT.unpriced:
        _CURRENT.unpriced.append(held.stage)
    _CURRENT.charge(held, calls, None if rate is None else rate.usd(tokens_in, tokens_out, seconds, units))


def before_cell() -> None:
    """Stop before a cell when the running budget is reached (no-op without one)."""
    if _CURRENT is not None:
        _CURRENT.before_cell()
