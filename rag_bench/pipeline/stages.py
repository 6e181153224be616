"""The stages of one cell, each a function from the previous stage's result to a frozen result.

chunk → index → (tune) → query → retrieve → rerank → answer → judge, and the index's ANN report. Work that cells of a sweep share
(chunks, indexes, rankings, reranked rankings, ANN reports) goes through the
:class:`~rag_bench.memo.SharedWork` passed in, keyed by what determines it: a sweep over ``k`` or
``eval.*`` re-chunks, re-indexes, re-retrieves and re-ranks nothing. Latencies of shared work are
those measured when it was done.

Each stage calls its component under :func:`calling` (a plugin that raises is refused with a
:class:`~rag_bench.errors.ComponentError`, never a traceback) and checks what it got against
:mod:`rag_bench.pipeline.contracts` before anything downstream uses it; the embedder, which other
components call, is wrapped once in a :class:`CheckedEmbedder` instead.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from rag_bench import memo
from rag_bench.components import capability, is_null
from rag_bench.domain import Answer, Chunk, Dataset, Question, Ranking
from rag_bench.errors import ComponentError, EndpointError, RagBenchError
from rag_bench.generation.answer import parse_answer
from rag_bench.generation.base import GenerationInput, Generator, generate_cached
from rag_bench.generation.context import build_context
from rag_bench.generation.prompt import HistoryWindow, build_prompt
from rag_bench.indexing.ann_report import AnnReport, probe_report, tune_probe
from rag_bench.indexing.tuning import TuneResult
from rag_bench.judging import samples as judge_samples
from rag_bench.judging.base import Judge, JudgeResult, JudgeSample
from rag_bench.memo import SharedWork
from rag_bench.pipeline import contracts
from rag_bench.pipeline.parts import CellSettings
from rag_bench.pipeline.results import Answered, Chunked, Indexed, Queried, Reranked, Retrieved
from rag_bench.query.base import QueryTransform, Transformed
from rag_bench.reranking.base import Reranker, apply_rerank
from rag_bench.retrieval.base import AccessFilter, Retriever, strictly_decreasing
from rag_bench.retrieval.hybrid import rrf

_tracebacks = logging.getLogger("component_tracebacks")


def component_name(component: Any) -> str:
    """``module.Class`` of a component, as a message names it."""
    cls = type(component)
    return f"{cls.__module__}.{cls.__qualname__}"


@contextmanager
def calling(stage: str, component: Any, doing: str) -> Iterator[None]:
    """Run a call into ``component``; when it is a plugin (a class outside rag_bench) and raises,
    the cell is refused with a :class:`ComponentError` naming the component, what it was doing
    (``doing``: "searching question 'q1'") and where in its code it failed -- exit 2 and nothing
    written, instead of a traceback. rag_bench's own components keep their tracebacks (a bug of
    ours), and rag_bench's own errors pass through unchanged."""
    try:
        yield
    except (RagBenchError, MemoryError):
        raise
    except Exception as exc:
        if type(component).__module__.startswith("rag_bench."):
            raise
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if "rag_bench" not in Path(f.filename).parts] or frames
        where = f" at {own[-1].filename}:{own[-1].lineno} in {own[-1].name}" if own else ""
        # The plugin's traceback goes to the experiment's log file only (a logger outside
        # rag_bench's names: the console shows rag_bench's own lines).
        _tracebacks.error("%s %s raised while %s", stage, component_name(component), doing, exc_info=True)
        raise ComponentError(f"{stage} {component_name(component)} raised {type(exc).__name__}: {exc} while {doing}"
                             f"{where}; nothing was written -- fix: the bug is in the component's code (the "
                             "traceback is in the experiment's .hydra/rag_bench.log)") from exc


class CheckedEmbedder:
    """An embedder whose every output is checked (:func:`~rag_bench.pipeline.contracts.check_embeddings`): one finite row per
    text, and the same width on every call. Everything else is the wrapped embedder's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._name = component_name(inner)
        self._dim: int | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "_inner" not in self.__dict__:  # copy/pickle probes, half-built objects
            raise AttributeError(name)
        return getattr(self._inner, name)

    def _checked(self, vectors: Any, count: int) -> np.ndarray:
        array = contracts.check_embeddings(vectors, count, component=self._name, dim=self._dim)
        if count:
            self._dim = array.shape[1]
        return array

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The wrapped embedder's chunk vectors, checked."""
        return self._checked(self._inner.embed_documents(texts), len(texts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The wrapped embedder's question vectors, checked."""
        return self._checked(self._inner.embed_queries(texts), len(texts))


@dataclass(frozen=True)
class ContextRule:
    """How a ranking becomes the generator's context (:func:`rag_bench.generation.context.build_context`):
    its top ``k``, parents expanded or not, within a token budget; and how much of a conversation
    question's history the prompt shows (:class:`~rag_bench.generation.prompt.HistoryWindow`)."""

    k: int
    token_budget: int
    expand_parents: bool = False
    parents: Mapping[str, Chunk] = field(default_factory=dict)
    history: HistoryWindow = HistoryWindow()


def chunk(*, dataset: Dataset, key: str, chunker: Any, work: SharedWork) -> Chunked:
    """Every chunk of the corpus, by ``chunker``, once per ``key`` (dataset + chunker config);
    checked against the documents (:func:`~rag_bench.pipeline.contracts.check_chunks`)."""
    def run() -> list[Chunk]:
        with calling("chunker", chunker, "chunking the corpus"):
            chunks = chunker.chunk(list(dataset.documents.values()))
        return contracts.check_chunks(chunks, dataset.documents, component=component_name(chunker))

    t0 = time.perf_counter()
    chunks = work.get_or("chunks", key, run)
    return Chunked(chunks, time.perf_counter() - t0)


def index(*, dataset: Dataset, chunked: Chunked, key: str, retriever: Retriever, include_archived: bool,
          work: SharedWork) -> Indexed:
    """``retriever`` fitted on the searchable chunks (children, current versions unless
    ``include_archived``), once per ``key`` (a retriever fitted by an earlier cell under the same key
    is used instead); plus the access filter over those chunks."""
    def build() -> tuple[Retriever, list[Chunk], AccessFilter]:
        searchable = [c for c in chunked.chunks if not c.is_parent
                      and (include_archived or not dataset.documents[c.doc_id].archived)]
        with calling("retriever", retriever, f"indexing {len(searchable)} chunks"):
            retriever.fit(searchable)
        return retriever, searchable, AccessFilter(searchable, dataset.documents)

    t0 = time.perf_counter()
    retriever, searchable, access = work.get_or("indexes", key, build)
    return Indexed(retriever, searchable, access, key, time.perf_counter() - t0)


def _probe(*, indexed: Indexed, questions: Sequence[Question], work: SharedWork, questions_key: str) -> Any:
    """The retriever's index laid open (``ann_probe``: the index, its exact reference, the question
    vectors and access masks), or None: once per index and question set, for :func:`tune` and
    :func:`ann` alike (the question vectors and masks cost every cell ~1 ms otherwise)."""
    def lay_open() -> Any:
        with calling("retriever", indexed.retriever, "laying its index open for tuning and the ANN report"):
            return capability(indexed.retriever, Retriever, "ann_probe")(questions, indexed.access)
    return work.get_or("probes", memo.key(indexed.key, questions_key), lay_open)


def tune(*, indexed: Indexed, questions: Sequence[Question], work: SharedWork,
         questions_key: str = "") -> TuneResult | None:
    """Tune the index's search knob to ``index.target_recall`` on ``questions`` before retrieval
    (:func:`rag_bench.indexing.ann_report.tune_index`: half to tune, half held out), once per
    index and question set; the knob is set to the choice on every call. None: no approximate
    index, or no target."""
    probe = _probe(indexed=indexed, questions=questions, work=work, questions_key=questions_key)
    if probe is None:
        return None
    result: TuneResult | None = work.get_or("tuned", memo.key(indexed.key, questions_key), lambda: tune_probe(probe))
    if result is not None:
        setattr(probe.index, result.knob, result.chosen)
    return result


def query(*, transform: QueryTransform, questions: Sequence[Question], key: str, work: SharedWork) -> Queried:
    """What each question is searched with (:mod:`rag_bench.query`), once per ``key`` (the
    question set and the transform's identity), checked at the boundary
    (:func:`~rag_bench.pipeline.contracts.check_queries`). The null transform (``query=none``)
    changes nothing and is not run."""
    if is_null(transform):
        return Queried(None, key)

    def run() -> tuple[list[Transformed], float]:
        t0 = time.perf_counter()
        with calling("query", transform, f"transforming {len(questions)} questions"):
            got = transform.transform(list(questions))
        return contracts.check_queries(got, questions, component=component_name(transform)), time.perf_counter() - t0

    plans, seconds = work.get_or("queries", key, run)
    return Queried(plans, key, seconds)


def retrieve(*, indexed: Indexed, questions: Sequence[Question], depth: int, work: SharedWork,
             questions_key: str = "", queried: Queried | None = None) -> Retrieved:
    """Top-``depth`` rankings, one question at a time (so each latency is one query's), once per
    index, depth and question set (``questions_key``: what determines ``questions`` beyond the
    index, e.g. the dataset split -- one corpus, two splits, two sets of rankings -- and the query
    transform).

    ``queried``: what each question is searched with (:func:`query`); several texts are each
    searched and their rankings fused by reciprocal rank (:func:`rag_bench.retrieval.hybrid.rrf`),
    the latency theirs together (a latency is the retriever's calls alone, never our checks or the
    fusion: what a deployment of the retriever would spend). Each ranking is checked
    (:func:`~rag_bench.pipeline.contracts.check_ranking`) and the asker's access enforced again:
    chunks the retriever returned that the asker may not read are dropped here and counted
    (``Retrieved.unauthorized``)."""
    name = component_name(indexed.retriever)
    n = len(indexed.searchable)
    plans = queried.plans if queried is not None else None

    def search(q: Question) -> tuple[Ranking, int, float]:
        """The question's checked ranking, the chunks dropped from it, and the retriever's own seconds."""
        with calling("retriever", indexed.retriever, f"searching question {q.qid!r}"):
            t = time.perf_counter()
            got = indexed.retriever.search([q], depth, indexed.access)
            seconds = time.perf_counter() - t
        return (*contracts.enforce_access(contracts.check_ranking(got, q, n=n, depth=depth, component=name), q,
                                          indexed.access), seconds)

    def run() -> tuple[list[Ranking], list[float], list[int], list[tuple[Ranking, ...]]]:
        per_q: list[float] = []
        out: list[Ranking] = []
        dropped: list[int] = []
        each: list[tuple[Ranking, ...]] = []  # with a transform: each text's own ranking, before any fusion
        for i, q in enumerate(tqdm(questions, desc="retrieve", unit="q", disable=None, leave=False)):
            texts = plans[i].queries if plans is not None else (q.question,)
            if len(texts) == 1:
                ranking, lost, seconds = search(q if texts[0] == q.question else dataclasses.replace(q, question=texts[0]))
            else:
                found = [search(dataclasses.replace(q, question=text)) for text in texts]
                items, scores = rrf([r.indices for r, _, _ in found], weights=[1.0] * len(found), depth=depth)
                ranking = Ranking(q.qid, tuple(items), tuple(strictly_decreasing(np.asarray(scores)).tolist()))
                lost = max(x for _, x, _ in found)
                seconds = sum(s for _, _, s in found)  # their searches together (the fusion is ours)
                each.append(tuple(r for r, _, _ in found))
            if plans is not None and len(texts) == 1:
                each.append((ranking,))
            per_q.append(seconds * 1000)
            out.append(ranking)
            dropped.append(lost)
        return out, per_q, dropped, each

    key = memo.key(indexed.key, depth, questions_key)
    rankings, latency, unauthorized, per_text = work.get_or("rankings", key, run)
    return Retrieved(rankings, latency, depth, key, unauthorized, per_text)


def rerank(*, reranker: Reranker, key: Any, retrieved: Retrieved, indexed: Indexed,
           questions: Sequence[Question], work: SharedWork) -> Reranked:
    """The head (``reranker.depth``) of every ranking reordered by the reranker; the null reranker
    keeps the retrieved rankings. ``key`` identifies the reranker's config."""
    if is_null(reranker):
        return Reranked(retrieved.rankings, key=retrieved.key)
    searchable = indexed.searchable
    name = component_name(reranker)

    def run() -> tuple[list[Ranking], list[float], float, list[int]]:
        shortlists = [[searchable[i] for i in r.indices[: reranker.depth]] for r in retrieved.rankings]
        t = time.perf_counter()
        with calling("reranker", reranker, "prefetching the shortlists"):
            capability(reranker, Reranker, "prefetch")(questions, shortlists)  # bi-encoders: one batched pass
        prefetch_s = time.perf_counter() - t
        reranked, ms, dropped = [], [], []
        for q, r, shortlist in zip(questions, retrieved.rankings, shortlists):
            t = time.perf_counter()
            with calling("reranker", reranker, f"scoring question {q.qid!r}"):
                got = reranker.scores([q], [shortlist])
            ms.append((time.perf_counter() - t) * 1000)
            scores = contracts.check_rerank_scores(got, q, len(shortlist), component=name)
            # A reranker only reorders the shortlist it was given; access is enforced again all
            # the same (defence in depth: nothing after this stage trusts the one before it).
            ranking, lost = contracts.enforce_access(apply_rerank(r, scores), q, indexed.access)
            reranked.append(ranking)
            dropped.append(lost)
        return reranked, ms, prefetch_s, dropped

    reranked_key = memo.key(retrieved.key, key)
    rankings, ms, prefetch_s, unauthorized = work.get_or("reranked", reranked_key, run)
    return Reranked(rankings, ms, prefetch_s, reranked_key, unauthorized)


def ann(*, indexed: Indexed, questions: Sequence[Question], ks: Sequence[int], work: SharedWork,
        questions_key: str = "", tuned: TuneResult | None = None) -> AnnReport | None:
    """ANN vs exact on the same vectors and filter (:func:`rag_bench.indexing.ann_report.report`)
    once per index, ks and question set, with the tuning (:func:`tune`); None when the retriever
    has no index to lay open. A flat index is its own reference: recall 1."""
    probe = _probe(indexed=indexed, questions=questions, work=work, questions_key=questions_key)
    if probe is None:
        return None
    report: AnnReport = work.get_or("ann", memo.key(indexed.key, list(ks), questions_key),
                                    lambda: probe_report(probe, ks))
    return report if tuned is None else dataclasses.replace(report, tuning=tuned)


def context_rule(settings: CellSettings, parents: Mapping[str, Chunk]) -> ContextRule:
    """A cell's :class:`ContextRule` from its settings and its chunking's parents."""
    return ContextRule(settings.k, settings.token_budget, settings.expand_parents, parents, settings.history)


def generation_inputs(questions: Sequence[Question], rankings: Sequence[Ranking], passages: Sequence[Chunk],
                      context: ContextRule) -> list[GenerationInput]:
    """What the generator is sent for each question (its context and prompt) from its final
    ranking (indices into ``passages``): :func:`answer`'s input, and what ``--plan`` counts."""
    items = []
    for q, r in zip(questions, rankings):
        given = build_context([passages[i] for i in r.indices[:context.k]], k=context.k, parents=context.parents,
                              expand_parents=context.expand_parents, token_budget=context.token_budget)
        items.append(GenerationInput(q.question, tuple(given), build_prompt(q.question, given, context.history.of(q.history))))
    return items


def answer(*, generator: Generator, questions: Sequence[Question], rankings: Sequence[Ranking],
           passages: Sequence[Chunk], context: ContextRule) -> Answered:
    """What the generator produced: the context and prompt of each question from its final
    ranking (indices into ``passages``), the (cached) generations and the parsed answers. Nothing
    is scored here."""
    items = generation_inputs(questions, rankings, passages, context)
    t0 = time.perf_counter()
    name = component_name(generator)
    with calling("generator", generator, f"answering {len(items)} questions"):
        gens = generate_cached(generator, items,
                               check=lambda out, count: contracts.check_generations(out, count, component=name))
    wall = time.perf_counter() - t0
    answers = [Answer("", error=g.error, raw=g.raw) if g.error else parse_answer(g.raw, len(it.passages))
               for g, it in zip(gens, items)]
    return Answered(items, list(gens), answers, wall)


def judge(*, judge: Judge, questions: Sequence[Question], answered: Answered,
          history: HistoryWindow = HistoryWindow()) -> list[JudgeResult] | None:
    """Judge every answered question (refusals, failed calls and unparseable outputs are not
    judged), a conversation question with the window of its history the generator saw
    (``history``): one result per question; None for the null judge. Raises EndpointError when more
    judgements failed than ``judge.max_failure_rate`` allows: scores over a biased subset are not
    reported."""
    if is_null(judge):
        return None
    samples: list[JudgeSample | None] = []
    for q, item, a in zip(questions, answered.items, answered.answers):
        ok = a.error is None and a.parse_error is None and not a.refused and bool(a.text)
        samples.append(JudgeSample(q.question, a.text, tuple(p.text for p in item.passages), q.reference,
                                   a.citations, history.of(q.history)) if ok else None)
    with calling("judge", judge, f"judging {sum(s is not None for s in samples)} answers"):
        results = judge.judge(samples)
    name = component_name(judge)
    if not isinstance(results, list) or len(results) != len(samples) \
            or not all(isinstance(r, JudgeResult) for r in results):
        raise contracts.judge_shape_error(results, len(samples), component=name)
    for n, r in enumerate(results):
        contracts.check_judge_scores(r.scores, component=name, item=n)
        contracts.check_judge_scores({f"{m} sample {i}": v for m, vs in r.samples.items() for i, v in enumerate(vs)},
                                     component=name, item=n)  # every judge sample too
    cost = judge_samples.tally(results)
    rate = cost["failures"] / max(1, cost["attempted"])
    if rate > judge.max_failure_rate:
        first = next(json.dumps(r.failures) for r in results if r.failures)
        raise EndpointError(f"judge: {cost['failures']} of {cost['attempted']} judgements failed ({rate:.0%} > "
                            f"judge.max_failure_rate={judge.max_failure_rate}); first reason: {first} -- fix: check "
                            "the judge endpoint or raise judge.max_failure_rate")
    return results
