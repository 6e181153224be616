"""Cost in money: the price table of a cell (``prices.*``) and what a run cost under it.

A model is priced by the name its stage's config gives it: ``model`` (``generator.model=gemma3-270m``,
``embedder.model=all-MiniLM-L6-v2``), else the option's ``name`` (``extractive``, ``mmr``). Its
entry in ``prices.models`` says how:

* generator and judge: ``usd_per_1m_input_tokens`` and ``usd_per_1m_output_tokens`` on the
  tokens the endpoint reported;
* embedder: ``usd_per_1k_texts`` on the texts sent to it (cache hits included). Per text, not per
  token: the embedders report how many texts they embedded, not their tokens, so a per-token price
  would need a token count we would have to invent;
* reranker: ``usd_per_1k_calls``, one call per question reranked (a /rerank request);
* otherwise the model runs on our machine: its stage's measured seconds at ``usd_per_hour`` (the
  entry's, else ``prices.usd_per_hour``).

A stage whose config names no ``model`` (the extractive generator, bm25, the mmr and dense
rerankers) is our own code: its seconds at ``prices.usd_per_hour`` (an entry under its option's
name overrides). Retrieval is always local compute. A price that is not given is *unpriced*, never 0:
the share is absent, and so are the totals, with a warning naming the config key to set.

A cached answer carries its original cost, as ``cost/generator_tokens`` counts its original tokens: its
tokens, or the seconds the generator took when it produced it (kept in the generation cache), so
cells compare whatever the cache held when they ran. Retrieval and rerank latencies are each
question's own (shared between cells as measured). Two exceptions are said in docs/metrics.md: the
embedder's share is what this cell's run sent to the embedder (an index built in memory by an
earlier cell of the same process is counted once, by that cell), and judgements served by the judge
cache carry no tokens or seconds (the judge cache keeps scores only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_bench.budget import PRICED_STAGES
from rag_bench.evaluation.run import SystemRun

SHARES = ("generator", "judge", "embedder", "reranker", "retrieval", "query")
HOUR_S = 3600.0


@dataclass(frozen=True)
class ModelPrice:
    """One model's prices in US dollars (None: not priced that way)."""

    usd_per_1m_input_tokens: float | None = None
    usd_per_1m_output_tokens: float | None = None
    usd_per_1k_texts: float | None = None
    usd_per_1k_calls: float | None = None
    usd_per_hour: float | None = None

    @property
    def by_use(self) -> bool:
        """Priced by tokens, texts or calls (an API), not by the hour (our machine)."""
        return any(v is not None for v in (self.usd_per_1m_input_tokens, self.usd_per_1m_output_tokens,
                                           self.usd_per_1k_texts, self.usd_per_1k_calls))


@dataclass(frozen=True)
class StageModel:
    """The model a stage of the cell names: ``name`` (its ``model``, else its option's name) and
    whether the config named a ``model`` (then it needs an entry in the table)."""

    stage: str
    name: str
    named_model: bool


@dataclass(frozen=True)
class Prices:
    """A cell's price table and the models of its stages: hashable (part of the evaluation's
    :class:`~rag_bench.evaluation.settings.Settings`)."""

    usd_per_hour: float | None = None
    models: tuple[tuple[str, ModelPrice], ...] = ()
    stages: tuple[StageModel, ...] = ()

    def of(self, stage: str) -> StageModel | None:
        """The model ``stage`` names (None: the cell's config has no such stage)."""
        return next((s for s in self.stages if s.stage == stage), None)

    def entry(self, name: str) -> ModelPrice | None:
        """The table's entry for the model ``name``."""
        return next((p for n, p in self.models if n == name), None)


def from_config(cfg: Any) -> Prices | None:
    """The price table of a composed config (``prices.*``) with the model each stage names; None when
    the config sets no price at all (no money measures, and no warning: nobody asked for them)."""
    table = cfg.get("prices") if hasattr(cfg, "get") else None
    if table is None:
        return None
    models = {str(k): v for k, v in (table.get("models") or {}).items()}
    hourly = table.get("usd_per_hour")
    if hourly is None and not models:
        return None
    entries = tuple((name, ModelPrice(**{k: (None if v is None else float(v)) for k, v in dict(e).items()}))
                    for name, e in sorted(models.items()))
    stages = []
    for stage in PRICED_STAGES:
        node = cfg.get(stage)
        if node is None or not hasattr(node, "get"):
            continue
        try:
            model = node.get("model")
        except Exception:  # a ??? model: the cell failed to build before it could be priced
            model = None
        named = isinstance(model, str) and bool(model)
        stages.append(StageModel(stage, str(model) if named else str(node.get("name", stage)), named))
    return Prices(None if hourly is None else float(hourly), entries, tuple(stages))


@dataclass(frozen=True)
class Bill:
    """What a run cost: each share's dollars per question of the run (a share absent: unpriced, or
    the stage did not run), the dollars each question cost (None: something unpriced) and what is
    unpriced, one line each naming the model and the config key to set."""

    shares: Mapping[str, float] = field(default_factory=dict)
    per_question: tuple[float, ...] | None = None
    unpriced: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what a priced share leaves out (judgements from the judge cache)

    @property
    def total(self) -> float | None:
        """The run's dollars in all (None: something is unpriced)."""
        return None if self.per_question is None else float(sum(self.per_question))


def _missing(what: str, key: str) -> str:
    return f"{what}: set {key}"


def _hourly(prices: Prices, entry: ModelPrice | None, stage: StageModel | None) -> tuple[float | None, str]:
    """The $/hour a local stage is priced at, and the key that sets it."""
    if entry is not None and entry.usd_per_hour is not None:
        return entry.usd_per_hour, ""
    key = "prices.usd_per_hour" if stage is None else \
        f"prices.usd_per_hour (or prices.models.{stage.name}.usd_per_hour)"
    return prices.usd_per_hour, key


def _local(prices: Prices, stage: StageModel | None, seconds: np.ndarray, what: str,
           unpriced: list[str]) -> np.ndarray | None:
    entry = prices.entry(stage.name) if stage is not None else None
    hourly, key = _hourly(prices, entry, stage)
    if hourly is None:
        unpriced.append(_missing(f"{what} (local compute, priced on its measured seconds)", key))
        return None
    return seconds * hourly / HOUR_S


def _model(prices: Prices, stage: StageModel, unpriced: list[str]) -> tuple[ModelPrice | None, bool]:
    """The stage's entry, and whether it can be priced at all: a stage naming a ``model`` needs one."""
    entry = prices.entry(stage.name)
    if entry is None and stage.named_model:
        unpriced.append(_missing(f"{stage.stage} model {stage.name!r} has no price",
                                 f"prices.models.{stage.name} (its $ per use, or usd_per_hour for local compute)"))
        return None, False
    return entry, True


def _tokens(prices: Prices, stage: StageModel, tokens_in: np.ndarray, tokens_out: np.ndarray, seconds: np.ndarray,
            unpriced: list[str]) -> np.ndarray | None:
    entry, ok = _model(prices, stage, unpriced)
    if not ok:
        return None
    if entry is not None and entry.by_use:
        need = [k for k in ("usd_per_1m_input_tokens", "usd_per_1m_output_tokens") if getattr(entry, k) is None]
        if need:
            unpriced.append(_missing(f"{stage.stage} model {stage.name!r} is priced by tokens but lacks {need[0]}",
                                     f"prices.models.{stage.name}.{need[0]}"))
            return None
        return token_usd(entry, tokens_in, tokens_out)
    return _local(prices, stage, seconds, f"{stage.stage} {stage.name!r}", unpriced)


def token_usd(entry: ModelPrice, tokens_in: Any, tokens_out: Any) -> Any:
    """Dollars of ``tokens_in`` prompt and ``tokens_out`` completion tokens at ``entry``'s prices (both
    set): what the cost scorer charges per question and what ``budget.usd`` counts."""
    assert entry.usd_per_1m_input_tokens is not None and entry.usd_per_1m_output_tokens is not None
    return (tokens_in * entry.usd_per_1m_input_tokens + tokens_out * entry.usd_per_1m_output_tokens) / 1e6


@dataclass(frozen=True)
class Rate:
    """How ``budget.usd`` charges a stage's model calls (rag_bench.budget), as :func:`bill`
    prices them: a generator or judge by tokens (an API model's ``usd_per_1m_*_tokens``), an embedder
    per text sent (``usd_per_1k_texts``), a reranker per call (``usd_per_1k_calls``); else by its
    measured seconds at ``usd_per_hour`` (a model on this machine)."""

    stage: str
    model: str
    entry: ModelPrice | None
    usd_per_hour: float | None
    usd_per_unit: float | None = None  # an embedder's text, a reranker's call

    @property
    def by_tokens(self) -> bool:
        return self.entry is not None and self.entry.usd_per_1m_input_tokens is not None \
            and self.entry.usd_per_1m_output_tokens is not None

    def usd(self, tokens_in: int, tokens_out: int, seconds: float, units: int = 0) -> float:
        """What calls that used these tokens or units (priced by use) or took these seconds (by the
        hour) cost."""
        if self.by_tokens:
            assert self.entry is not None
            return float(token_usd(self.entry, tokens_in, tokens_out))
        if self.usd_per_unit is not None:
            return units * self.usd_per_unit
        return seconds * (self.usd_per_hour or 0.0) / HOUR_S


def rate(prices: Prices | None, stage: str) -> tuple[Rate | None, str | None]:
    """The rate ``budget.usd`` charges ``stage``'s calls at, or (None, what to set) when the
    stage cannot be priced: (None, None) when the config has no such stage. A model priced by tokens
    needs both token prices; any other by its hour (its entry's ``usd_per_hour``, else
    ``prices.usd_per_hour``). A stage naming no ``model`` is our own code, priced by the hour too."""
    table = prices or Prices()
    model = table.of(stage)
    if model is None:
        return None, None
    entry = table.entry(model.name)
    use = {"embedder": "usd_per_1k_texts", "reranker": "usd_per_1k_calls"}.get(stage)
    if entry is None and model.named_model:
        how = use or "usd_per_1m_input_tokens and usd_per_1m_output_tokens"
        return None, (f"{stage} model {model.name!r} has no price -- fix: set prices.models.{model.name} "
                      f"({how}, or usd_per_hour for a local model)")
    if use is not None and entry is not None and getattr(entry, use) is not None:
        return Rate(stage, model.name, entry, None, getattr(entry, use) / 1000.0), None
    if use is None and entry is not None and entry.by_use:
        need = [k for k in ("usd_per_1m_input_tokens", "usd_per_1m_output_tokens") if getattr(entry, k) is None]
        if need:
            return None, (f"{stage} model {model.name!r} is priced by tokens but lacks {need[0]} -- fix: set "
                          f"prices.models.{model.name}.{need[0]}")
        return Rate(stage, model.name, entry, None), None
    hourly, key = _hourly(table, entry, model)
    if hourly is None:
        return None, (f"{stage} {model.name!r} runs on this machine and no $/hour prices its seconds -- fix: set "
                      f"{key}")
    return Rate(stage, model.name, entry, hourly), None


def _judge(prices: Prices, judge: StageModel, run: SystemRun, per_q: dict[str, np.ndarray | None], notes: list[str],
           unpriced: list[str]) -> None:
    """The judge's share per question (its tokens, else its seconds), and the note when some
    judgements came from the judge cache (which keeps no usage)."""
    js = [q.judge for q in run.questions]
    per_q["judge"] = _tokens(prices, judge, np.array([j.tokens_in if j else 0 for j in js], np.float64),
                             np.array([j.tokens_out if j else 0 for j in js], np.float64),
                             np.array([j.seconds if j else 0.0 for j in js], np.float64), unpriced)
    cached = sum(1 for j in js if j is not None and j.calls == 0 and any(v is not None for v in j.scores.values()))
    if cached and per_q["judge"] is not None:
        notes.append(f"cost: {cached} judgement(s) came from the judge cache, which keeps scores, not tokens or "
                     "seconds: cost/usd_judge counts only the judge calls made in this run (a lower bound)")


def spent_seconds(generation: Any) -> float:
    """The generator's seconds for an answer as it was produced: a cached answer's original time
    (kept in the generation cache), else this call's."""
    original = getattr(generation, "original_seconds", None)
    return float(original) if generation.cached and original is not None else float(generation.seconds)


def _retrieval(prices: Prices, run: SystemRun, unpriced: list[str]) -> np.ndarray | None:
    """Retrieval's share per question: always local compute, its measured seconds by the hour (None:
    unpriced, or no question was retrieved)."""
    if not any(q.retrieve_ms is not None for q in run.questions):
        return None
    ms = np.array([q.retrieve_ms or 0.0 for q in run.questions], np.float64)
    return _local(prices, None, ms / 1000.0, "retrieval", unpriced)


def _reranker(prices: Prices, run: SystemRun, unpriced: list[str]) -> np.ndarray | None:
    """The reranker's share per question: per call (one per question reranked), else its seconds."""
    rerank, reranked = prices.of("reranker"), [q.rerank_ms is not None for q in run.questions]
    if rerank is None or not any(reranked):
        return None
    entry, ok = _model(prices, rerank, unpriced)
    if not ok:
        return None
    if entry is not None and entry.usd_per_1k_calls is not None:
        return np.asarray(reranked, np.float64) * entry.usd_per_1k_calls / 1000.0
    ms = np.array([q.rerank_ms or 0.0 for q in run.questions], np.float64)
    return _local(prices, rerank, ms / 1000.0, f"reranker {rerank.name!r}", unpriced)


def _generator(prices: Prices, run: SystemRun, unpriced: list[str]) -> np.ndarray | None:
    """The generator's share per question: its tokens, else the seconds it took to produce the answer."""
    gen = prices.of("generator")
    if gen is None or not run.answered:
        return None
    gs = [q.generation for q in run.questions]
    return _tokens(prices, gen, np.array([(g.tokens_in or 0) if g else 0 for g in gs], np.float64),
                   np.array([(g.tokens_out or 0) if g else 0 for g in gs], np.float64),
                   np.array([spent_seconds(g) if g else 0.0 for g in gs], np.float64), unpriced)


def _query(prices: Prices, run: SystemRun, unpriced: list[str]) -> np.ndarray | None:
    """A model-written query transform's share per question: the cell's generator wrote it, so its
    tokens (or seconds) at the generator's price."""
    gen, plans = prices.of("generator"), [q.query for q in run.questions]
    if gen is None or not any(t is not None and t.calls for t in plans):
        return None
    return _tokens(prices, gen, np.array([t.tokens_in if t else 0 for t in plans], np.float64),
                   np.array([t.tokens_out if t else 0 for t in plans], np.float64),
                   np.array([t.seconds if t else 0.0 for t in plans], np.float64), unpriced)


def _embedder(prices: Prices, run: SystemRun, unpriced: list[str]) -> np.ndarray | None:
    """The embedder's share, per text sent (else its encoding seconds), spread over the questions."""
    emb, e, n = prices.of("embedder"), run.embedding, len(run.questions)
    if emb is None or not (e.requested or e.encode_s):
        return None
    entry, ok = _model(prices, emb, unpriced)
    total: float | None = None
    if ok and entry is not None and entry.usd_per_1k_texts is not None:
        total = e.requested * entry.usd_per_1k_texts / 1000.0
    elif ok:
        local = _local(prices, emb, np.array([e.encode_s], np.float64), f"embedder {emb.name!r}", unpriced)
        total = None if local is None else float(local[0])
    return None if total is None else np.full(n, total / n)


def _shares(per_q: Mapping[str, np.ndarray | None], n: int) -> dict[str, float]:
    """Each priced share's dollars per question of the run."""
    return {name: float(v.sum()) / n for name, v in per_q.items() if v is not None}


def _external_bill(run: SystemRun, prices: Prices) -> Bill:
    """An external system's run (rag-bench evaluate): only the judge is ours to price."""
    unpriced = ["an external system's own stages (retrieval, generation): rag_bench does not see their "
                "usage, so no price table can price them; the judge's share is priced"]
    notes: list[str] = []
    per_q: dict[str, np.ndarray | None] = {}
    judge = prices.of("judge")
    if judge is not None and run.judge is not None:
        _judge(prices, judge, run, per_q, notes, unpriced)
    return Bill(_shares(per_q, len(run.questions)), None, tuple(unpriced), tuple(notes))


def bill(run: SystemRun, prices: Prices) -> Bill:
    """What ``run`` cost under ``prices``, share by share (docs/metrics.md, cost in money)."""
    n = len(run.questions)
    if not n:
        return Bill()
    if run.latency != "pipeline":
        return _external_bill(run, prices)
    unpriced: list[str] = []
    notes: list[str] = []
    # a share is None when unpriced or when its stage did not run; the order is the order of the sum
    per_q: dict[str, np.ndarray | None] = {
        "retrieval": _retrieval(prices, run, unpriced), "reranker": _reranker(prices, run, unpriced),
        "generator": _generator(prices, run, unpriced), "query": _query(prices, run, unpriced)}
    judge = prices.of("judge")
    if judge is not None and run.judge is not None:
        _judge(prices, judge, run, per_q, notes, unpriced)
    per_q["embedder"] = _embedder(prices, run, unpriced)
    priced = [v for v in per_q.values() if v is not None]
    per_question = None if unpriced else tuple(float(x) for x in
                                               (np.sum(priced, axis=0) if priced else np.zeros(n)))
    return Bill(_shares(per_q, n), per_question, tuple(dict.fromkeys(unpriced)), tuple(notes))


def per_correct(total: float | None, correct: Sequence[Any] | None) -> float | None:
    """Dollars per correct answer: the run's dollars over its questions answered correctly (None
    when unpriced, not answered, or no answer was correct)."""
    if total is None or correct is None:
        return None
    values = np.asarray(correct, np.float64)
    right = int(np.nansum(values == 1.0))
    return total / right if right else None
