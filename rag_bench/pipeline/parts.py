"""A cell's pipeline, built: its components, typed settings and evaluation (what
:func:`rag_bench.runner.config.build_cell` makes from a config, and :func:`rag_bench.pipeline.pipeline.run`
runs). Nothing downstream reads the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_bench.generation.base import Traits
from rag_bench.generation.prompt import HistoryWindow


@dataclass(frozen=True)
class CellSettings:
    """The pipeline settings of one cell, typed: what the stages take instead of the config."""

    ks: tuple[int, ...]  # eval.ks, sorted, each once
    k: int  # pipeline.k: passages handed to the generator
    depth: int  # how deep the retriever searches: the largest of ks, k and the reranker's depth
    include_archived: bool
    expand_parents: bool
    token_budget: int
    split: str  # dataset.split: the questions asked (in the rankings' shared-work key)
    index_name: str
    judge_name: str = "none"  # judge.name
    history: HistoryWindow = HistoryWindow()  # pipeline.history_turns, pipeline.history_chars


@dataclass(frozen=True)
class CellParts:
    """One cell's components, built once from its config (the embedder once per config and
    process, through the shared work, so its model stays loaded), its typed settings and its
    evaluation. ``identity`` holds, for each group whose work is shared between cells, what
    determines its output -- its resolved config and what it really is beyond it
    (:func:`rag_bench.runner.config.component_provenance`), then the same of each shared component
    it is built with, in key order -- the shared-work key of a component's output is made of it."""

    settings: CellSettings
    embedder: Any
    chunker: Any
    retriever: Any
    reranker: Any
    generator: Any
    judge: Any  # None when the cell generates nothing (no answers to judge)
    traits: Traits | None  # the generator's, checked when it is built (None: the cell generates nothing)
    evaluation: Any  # rag_bench.evaluation.evaluation.Evaluation
    identity: dict[str, list[Any]]  # group -> what determines its output (the class docstring)
    query: Any = None  # the query transform (rag_bench.query); None or the null one: the question as is
