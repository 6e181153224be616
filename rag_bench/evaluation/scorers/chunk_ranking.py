"""Chunk ranking: the cell's final ranking of chunks scored against the chunk judgments derived
from the evidence spans (metrics.json ``retrieval``; run.trec and qrels.trec are always written)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_bench.evaluation.results import Judgment, Qrels
from rag_bench.metrics import measures
from rag_bench.metrics.measures import Measure
from rag_bench.records import Chunk, Question


@dataclass(frozen=True)
class ChunkRanking:
    """The chunk unit: a chunk's grade is the highest grade of the evidence spans it covers."""

    name: str = "chunk"
    section: str = "retrieval"
    prefix: str = ""
    families: tuple[Measure, ...] = measures.RANKING
    qrels_field: str = "chunks"

    def judge(self, q: Question, top: Sequence[Chunk], scores: Sequence[float], chunk: Judgment,
              relevance_level: int) -> Judgment:
        """The chunk judgment itself."""
        return chunk

    def counts(self, frame: pd.DataFrame, answerable: np.ndarray, ks: Sequence[int]) -> dict[str, int]:
        """None beyond the cell's own (``evaluated`` counts the chunk measures' questions)."""
        return {}

    def trec_files(self, frame: pd.DataFrame, questions: Sequence[Question], qrels: Qrels, tag: str) -> dict[str, str]:
        """None beyond run.trec and qrels.trec."""
        return {}


CHUNK = ChunkRanking()
