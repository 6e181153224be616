"""``rag-bench run -m … --plan``: what a sweep would compute, cost and take -- its figures and their arithmetic.

The counting itself (which texts the cells embed, which prompts they send, looked up in the
caches) is :mod:`rag_bench.search.plan_probe`, which reads and never writes; this module is pure:
the plan's figures (:class:`Plan`), their money under a price table (:func:`money`), their time
from the throughputs measured on this machine (:func:`duration`), the arithmetic of the search modes'
bounds (each mode's lines are its :meth:`rag_bench.search.base.Strategy.bound`) and the table printed
(:func:`render`). ``--plan=exact`` adds :class:`InMemory`:
the texts it embedded in memory to make every prompt count exact. docs/search.md, "A plan before the run".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rag_bench.evaluation.prices import ModelPrice, Prices
from rag_bench.runner.throughput import Rates

CHARS_PER_TOKEN = 4.0  # the estimate of a prompt's tokens when no tokenizer is read (said in the output)


@dataclass(frozen=True)
class EmbedWork:
    """The distinct texts (chunks and questions) one embedder is asked for by the cells to compute:
    ``new`` not in the embedding cache, ``cached`` in it. ``approximate``: some texts were asked on
    rankings that need vectors not cached (a reranker's shortlists), so they may differ."""

    key: str  # the component as the throughput history names it (rag_bench.runner.throughput)
    price_name: str  # the model the price table knows it by (its ``model``, else its option's name)
    named_model: bool
    new: int
    cached: int
    approximate: bool = False
    persistent: bool = True  # False: embedder.cache=false (nothing is looked up; counted as new)


@dataclass(frozen=True)
class PromptWork:
    """The distinct prompts one generator config is sent by the cells to compute. ``new`` and
    ``cached``: prompts built exactly (retrieval computed in-process) and looked up in the generation
    cache; ``bound``: at most this many more, from cells whose retrieval needs vectors not cached
    (questions x their distinct rankings). ``input_tokens`` estimates the new prompts' and the
    bound's input tokens (characters / :data:`CHARS_PER_TOKEN`); output tokens are at most
    ``max_tokens`` each."""

    key: str
    price_name: str
    named_model: bool
    new: int
    cached: int
    bound: int
    input_tokens: int
    bound_input_tokens: int
    max_tokens: int | None
    stand_in: bool = False  # the extractive stand-in: no LLM call, no token
    no_cache: bool = False  # not cacheable, or sharing off: every cell's prompts are sent
    # The budget's bound of the new (and bounded) prompts' input tokens: each request's bytes
    # (rag_bench.budget.request_bytes), what budget.usd checks before a cell's calls.
    input_bytes: int = 0
    bound_input_bytes: int = 0
    role: str = "answer"  # or "query": a query transform's calls (timed by Rates.per_transform_call)


@dataclass(frozen=True)
class JudgeWork:
    """Judgements one judge config would make: at most ``at_most`` (every answer judged: refusals
    and the judge cache not subtracted), of which ``bound`` from cells whose answers are bounds."""

    key: str
    at_most: int
    bound: int
    calls_each: int = 1  # judge.metrics x judge.samples: the calls one judgement makes (claim metrics: per claim)


@dataclass(frozen=True)
class ParseWork:
    """The dataset's document files one parser reads (issue 56: parse time was in no estimate):
    ``files`` of them, ``new`` not in the parse cache -- the plan parsed those itself, in
    ``seconds``, and stored nothing, so the run parses them again in about as long."""

    parser: str
    files: int
    new: int
    seconds: float


@dataclass(frozen=True)
class InMemory:
    """``--plan=exact``'s own work: the texts whose vectors were not cached, encoded in memory by the
    embedder's model (never stored) so that every cell's rankings are exact, and the seconds that took."""

    texts: int
    seconds: float
    load_s: float = 0.0  # loading the model first (the run loads it too)


@dataclass(frozen=True)
class Plan:
    """What ``rag-bench run -m <overrides>`` would do, counted without doing it."""

    command: str
    cells: int
    done: int
    chunkings: int
    indexes: int
    questions: int
    embedders: tuple[EmbedWork, ...] = ()
    prompts: tuple[PromptWork, ...] = ()
    judges: tuple[JudgeWork, ...] = ()
    mode: str = "grid"
    mode_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    in_memory: InMemory | None = None  # an exact plan (--plan=exact): what it embedded to be exact
    parses: tuple[ParseWork, ...] = ()  # the document files each parser reads (datasets of .pdf/.html/.docx)
    budget_usd: float | None = None  # budget.usd of the run, when set
    reused: int = 0  # cells the cell cache (runner/reuse.py) would serve: no pipeline runs, no time

    @property
    def to_compute(self) -> int:
        return self.cells - self.done - self.reused

    @property
    def prompts_bound(self) -> int:
        return sum(p.bound for p in self.prompts)


def _fmt_usd(x: float) -> str:
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def _fmt_s(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _entry(prices: Prices, name: str, named: bool) -> tuple[ModelPrice | None, str | None]:
    """The table's entry for ``name``, or why it is unpriced."""
    entry = prices.entry(name)
    if entry is None and named:
        return None, f"unpriced (set prices.models.{name})"
    return entry, None


def _hourly(prices: Prices, entry: ModelPrice | None) -> float | None:
    return entry.usd_per_hour if entry is not None and entry.usd_per_hour is not None else prices.usd_per_hour


def money(plan: Plan, prices: Prices | None, rates: Rates) -> list[tuple[str, str]]:
    """``(what, dollars as text)`` per embedder, generator and judge, for the plan's new work: an
    API by its price per use, a local model by its measured seconds at its $/hour. What cannot be
    priced says why ("unpriced", or no measured throughput) -- never $0.

    >>> from rag_bench.evaluation.prices import ModelPrice, Prices
    >>> p = Prices(0.36, (("api", ModelPrice(usd_per_1m_input_tokens=1.0, usd_per_1m_output_tokens=2.0)),))
    >>> plan = Plan("x", 1, 0, 1, 1, 10, prompts=(PromptWork("openai:api", "api", True, 10, 0, 0, 1000, 0, 100),))
    >>> money(plan, p, Rates())
    [('generator openai:api', '$0.0030 (input ~1,000 tokens, estimated; output at most 1,000 tokens)')]
    """
    if prices is None:
        return [("all", "no price table (+prices=example, or your own: docs/metrics.md)")]
    out: list[tuple[str, str]] = []
    for e in plan.embedders:
        entry, why = _entry(prices, e.price_name, e.named_model)
        if why:
            out.append((f"embedder {e.key}", why))
        elif entry is not None and entry.usd_per_1k_texts is not None:
            out.append((f"embedder {e.key}", f"{_fmt_usd(e.new * entry.usd_per_1k_texts / 1000)} "
                                             f"({e.new:,} new texts at ${entry.usd_per_1k_texts}/1k)"))
        else:
            hourly, rate = _hourly(prices, entry), rates.per_text.get(e.key)
            if hourly is None:
                out.append((f"embedder {e.key}", "unpriced (set prices.usd_per_hour)"))
            elif rate is None:
                out.append((f"embedder {e.key}", f"local at ${hourly}/h: no measured throughput yet"))
            else:
                out.append((f"embedder {e.key}", f"{_fmt_usd(e.new * rate * hourly / 3600)} (local: {e.new:,} texts "
                                                 f"x {rate * 1000:.1f} ms measured, at ${hourly}/h)"))
    for p in plan.prompts:
        entry, why = _entry(prices, p.price_name, p.named_model)
        what = f"generator {p.key}"
        if why:
            out.append((what, why))
            continue
        if entry is not None and entry.by_use:
            if entry.usd_per_1m_input_tokens is None or entry.usd_per_1m_output_tokens is None:
                out.append((what, f"unpriced (set prices.models.{p.price_name}.usd_per_1m_input_tokens and "
                                  "usd_per_1m_output_tokens)"))
                continue

            def cost(n: int, tokens_in: int) -> float:
                out_tokens = n * (p.max_tokens or 0)
                return (tokens_in * entry.usd_per_1m_input_tokens + out_tokens * entry.usd_per_1m_output_tokens) / 1e6  # type: ignore[operator]

            text = (f"{_fmt_usd(cost(p.new, p.input_tokens))} (input ~{p.input_tokens:,} tokens, estimated; "
                    + (f"output at most {p.new * p.max_tokens:,} tokens)" if p.max_tokens else "output tokens unknown: "
                       "no generator.max_tokens)"))
            if p.bound:
                text += f" + at most {_fmt_usd(cost(p.bound, p.bound_input_tokens))} for the bounded prompts"
            if p.max_tokens and p.input_bytes + p.bound_input_bytes:  # the plan measured the requests
                text += (f"; the budget's bound {_fmt_usd(budget_bound(p, entry))} (each request's bytes as its input "
                         "tokens, max_tokens as its output: what budget.usd checks before each cell's calls)")
            out.append((what, text))
            continue
        hourly, rate = _hourly(prices, entry), rates.per_answer.get(p.key)
        n = p.new + p.bound
        if hourly is None:
            out.append((what, "unpriced (set prices.usd_per_hour)"))
        elif rate is None:
            out.append((what, f"local at ${hourly}/h: no measured throughput yet"))
        else:
            out.append((what, f"{'at most ' if p.bound else ''}{_fmt_usd(n * rate * hourly / 3600)} (local: {n:,} "
                              f"answers x {rate * 1000:.1f} ms measured, at ${hourly}/h)"))
    for j in plan.judges:
        out.append((f"judge {j.key}", "not estimated: a judge's tokens depend on the answers (cost/usd_judge after "
                                      "the run)"))
    return out


def budget_bound(p: PromptWork, entry: ModelPrice) -> float:
    """The dollars ``budget.usd`` bounds ``p``'s new and bounded prompts by before sending them
    (rag_bench.budget.hold: each request's bytes as input tokens, ``max_tokens`` as output): the
    same figure the run's per-cell check adds up.

    >>> from rag_bench.evaluation.prices import ModelPrice
    >>> p = PromptWork("openai:api", "api", True, 10, 0, 0, 1000, 0, 100, input_bytes=5000)
    >>> budget_bound(p, ModelPrice(usd_per_1m_input_tokens=1.0, usd_per_1m_output_tokens=2.0))
    0.007
    """
    n = p.new + p.bound
    return ((p.input_bytes + p.bound_input_bytes) * (entry.usd_per_1m_input_tokens or 0.0)
            + n * (p.max_tokens or 0) * (entry.usd_per_1m_output_tokens or 0.0)) / 1e6


def budget_lines(plan: Plan, prices: Prices | None) -> list[str]:
    """Whether ``budget.usd`` covers the grid: the generators' bound (:func:`budget_bound`) against
    it; what cannot be bounded before its calls (a model priced by the hour, the judge, no
    max_tokens) is said to be charged after them. Empty without ``budget.usd``."""
    if plan.budget_usd is None:
        return []
    total, unbounded = 0.0, []
    for p in plan.prompts:
        if p.stand_in or not p.new + p.bound:
            continue
        entry = None if prices is None else _entry(prices, p.price_name, p.named_model)[0]
        if entry is None or not entry.by_use or entry.usd_per_1m_input_tokens is None or not p.max_tokens:
            unbounded.append(f"generator {p.key}")
            continue
        total += budget_bound(p, entry)
    unbounded += [f"judge {j.key}" for j in plan.judges]
    said = (f"budget.usd={plan.budget_usd:g} covers the grid's bound {_fmt_usd(total)}" if total <= plan.budget_usd
            else f"budget.usd={plan.budget_usd:g} does NOT cover the grid's bound {_fmt_usd(total)}: the sweep stops "
                 "before the first cell whose calls could pass it (no half cell; finished cells kept) -- fix: "
                 f"budget.usd={math.ceil(total * 100) / 100:g}, or a smaller grid")
    if unbounded:
        said += f" (not bounded before their calls, charged after: {', '.join(unbounded)})"
    return [f"  budget: {said}"]


def duration(plan: Plan, rates: Rates) -> tuple[float | None, list[str]]:
    """``(seconds, lines)``: the time of the plan's new work from the measured throughputs (None
    when nothing is measured), one line per part; a part with no history says so."""
    total, lines, bounded = 0.0, [], False
    measured = False
    for w in plan.parses:
        if w.new:  # parsed by the plan itself, stored nowhere: the run parses them again
            total, measured = total + w.seconds, True
            lines.append(f"parsing {w.new:,} of {w.files:,} document files ({w.parser}): {_fmt_s(w.seconds)} (timed by "
                         "this plan, which parsed them and stored nothing)")
    for e in plan.embedders:
        rate = rates.per_text.get(e.key)
        if not e.new:
            continue
        if rate is None:
            lines.append(f"embedding {e.new:,} texts ({e.key}): no measured throughput yet")
        else:
            total, measured = total + e.new * rate, True
            lines.append(f"embedding {e.new:,} texts ({e.key}): {_fmt_s(e.new * rate)} ({rate * 1000:.1f} ms/text)")
    for p in plan.prompts:
        n = p.new + p.bound
        if not n or p.stand_in and p.role == "query":
            continue
        query = p.role == "query"
        rate = (rates.per_transform_call if query else rates.per_answer).get(p.key)
        what = f"{'at most ' if p.bound else ''}{n:,} {'query transform calls' if query else 'answers'} ({p.key})"
        if rate is None:
            lines.append(f"{'transforming' if query else 'generating'} {what}: no measured throughput yet")
        else:
            total, measured, bounded = total + n * rate, True, bounded or bool(p.bound)
            lines.append(f"{'transforming' if query else 'generating'} {what}: {_fmt_s(n * rate)} "
                         f"({rate * 1000:.1f} ms/{'call' if query else 'answer'})")
    for j in plan.judges:
        calls = j.at_most * j.calls_each
        if not calls:
            continue
        rate = rates.per_judge_call.get(j.key)
        if rate is None:
            lines.append(f"judging at most {calls:,} calls ({j.key}): no measured throughput yet")
        else:
            total, measured, bounded = total + calls * rate, True, True
            lines.append(f"judging at most {calls:,} calls ({j.key}): {_fmt_s(calls * rate)} "
                         f"({rate * 1000:.1f} ms/call; the judge cache not subtracted)")
    if plan.to_compute:
        if rates.per_cell is None:
            lines.append(f"{plan.to_compute} cells' own work (chunking, indexing, retrieval, scoring): no measured throughput yet")
        else:
            total, measured = total + plan.to_compute * rates.per_cell, True
            lines.append(f"{plan.to_compute} cells' own work (chunking, indexing, retrieval, scoring): "
                         f"{_fmt_s(plan.to_compute * rates.per_cell)} ({rates.per_cell:.2f} s/cell)")
    if not measured:
        return (0.0, ["nothing to compute"]) if not lines and not plan.to_compute else (None, lines)
    return total, [("at most " if bounded else "") + f"~{_fmt_s(total)} in all (the parts measured)", *lines]


def halving_bound(cells: int, round_sizes: Sequence[int]) -> int:
    """The cell-questions a halving sweep computes at most: no cell pruned, and each question
    computed once per cell (a round runs only the questions new to it): the grid's.

    >>> halving_bound(10, [3, 6, 12])
    120
    """
    return cells * round_sizes[-1] if round_sizes else 0


def halving_floor(cells: int, round_sizes: Sequence[int]) -> int:
    """The cell-questions a halving sweep computes at least: every cell in the first round, then one
    cell (the leader) alone through the questions of the later rounds.

    >>> halving_floor(10, [3, 6, 12])
    39
    """
    return cells * round_sizes[0] + round_sizes[-1] - round_sizes[0] if round_sizes else 0


def staged_bound(axis_sizes: Sequence[int]) -> int:
    """The trials a staged search runs at most: the defaults' cell, then each axis' other values
    (fewer when a chosen value's trial was run by an earlier stage).

    >>> staged_bound([3, 3, 2, 2])
    7
    """
    return 1 + sum(n - 1 for n in axis_sizes)


def _table(rows: Sequence[Sequence[str]], indent: str = "    ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def render(plan: Plan, prices: Prices | None, rates: Rates) -> str:
    """The plan as printed: a few small tables and lines."""
    head = "nothing computed or written" if plan.in_memory is None else \
        "exact: missing vectors embedded in memory, nothing written"
    lines = [f"Plan ({head}): {plan.command}",
             f"  cells: {plan.cells} in the grid, {plan.done} already DONE, "
             + (f"{plan.reused} served by the cell cache (written from it, no pipeline run: no time), "
                if plan.reused else "") + f"{plan.to_compute} to compute",
             f"  distinct chunkings: {plan.chunkings}; distinct indexes: {plan.indexes} (of the cells to compute); "
             f"questions: {plan.questions}"]
    lines.append("  texts to embed (distinct chunk and question texts, by embedder):")
    if plan.embedders:
        rows = [["embedder", "new", "cached"]]
        rows += [[e.key + (" (approximate)" if e.approximate else "") + ("" if e.persistent else " (cache off)"),
                  f"{e.new:,}", f"{e.cached:,}"] for e in plan.embedders]
        lines += _table(rows)
    else:
        lines.append("    none (no cell to compute embeds)")
    if plan.in_memory is not None:
        m = plan.in_memory
        lines.append(f"  exact: embedded {m.texts:,} texts in memory in {m.seconds:.1f} s"
                     + (f" (+ {m.load_s:.1f} s loading the model)" if m.load_s >= 0.05 else "")
                     + "; not cached: the run embeds them again. The price of every cell's rankings, and so its "
                     "prompts, being exact")
    lines.append("  prompts to generate (distinct, by generator):")
    if plan.prompts:
        rows = [["generator", "new", "cached", "+ at most (bound)"]]
        rows += [[p.key + (" (stand-in, no LLM call)" if p.stand_in else "") + (" (no cache)" if p.no_cache else ""),
                  f"{p.new:,}", f"{p.cached:,}", f"{p.bound:,}" if p.bound else "-"] for p in plan.prompts]
        lines += _table(rows)
        if plan.prompts_bound:
            lines.append("    (bound: cells whose retrieval needs vectors not yet cached: their prompts are counted as "
                         "questions x distinct rankings, not looked up)")
    else:
        lines.append("    none (no cell to compute generates)")
    if plan.judges:
        lines.append("  judge: " + "; ".join(f"{j.key}: at most {j.at_most:,} judgements x {j.calls_each} calls (metrics x "
                                             "samples; a claim metric calls once per claim) = "
                                             f"{j.at_most * j.calls_each:,} (refusals and the judge cache not subtracted)"
                                             for j in plan.judges))
    else:
        lines.append("  judge: none")
    lines.append("  money (the new work):")
    lines += [f"    {what}: {text}" for what, text in money(plan, prices, rates)]
    if any(p.new + p.bound for p in plan.prompts if not p.stand_in):
        lines.append(f"    (input tokens estimated at {CHARS_PER_TOKEN:g} characters per token; output tokens bounded by "
                     "generator.max_tokens)")
    lines += budget_lines(plan, prices)
    total, parts = duration(plan, rates)
    lines.append("  time (from throughputs measured on this machine, <cache>/throughput.json):"
                 + ("" if total is not None else " no measured throughput yet"))
    lines += [f"    {p}" for p in parts]
    lines += [f"  {m}" for m in plan.mode_lines]
    lines += [f"  note: {n}" for n in plan.notes]
    return "\n".join(lines)
