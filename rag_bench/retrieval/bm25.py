"""BM25 retrieval. The scoring backend is swappable (``backend=``); rank-bm25 is the default."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from rag_bench.errors import ConfigError
from rag_bench.records import Chunk, Question, Ranking
from rag_bench.retrieval.base import AccessFilter, strictly_decreasing, top_k
from rag_bench.retrieval.tokenize import STOPWORD_SETS, tokenize


class Bm25Backend(Protocol):
    """Scores every indexed document for one tokenised query."""

    def scores(self, query: list[str]) -> np.ndarray:
        """BM25 score of every document, in index order."""
        ...


def _rank_bm25(corpus: list[list[str]], k1: float, b: float) -> Bm25Backend:
    from rank_bm25 import BM25Okapi

    model = BM25Okapi(corpus, k1=k1, b=b)

    class _Backend:
        def scores(self, query: list[str]) -> np.ndarray:
            return np.asarray(model.get_scores(query), dtype=np.float64)

    return _Backend()


BACKENDS: dict[str, Callable[[list[list[str]], float, float], Bm25Backend]] = {"rank_bm25": _rank_bm25}


class Bm25Retriever:
    """Okapi BM25 over the chunks' indexed text (heading prefix included).

    Parameters
    ----------
    k1, b:
        Okapi BM25 term-frequency saturation and length normalisation.
    backend:
        Name in :data:`BACKENDS`.
    stopwords:
        ``english`` or ``none``.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, backend: str = "rank_bm25",
                 stopwords: str = "english") -> None:
        if not (isinstance(k1, (int, float)) and np.isfinite(k1) and k1 >= 0):
            raise ConfigError(f"retriever.k1 must be a finite number >= 0, got {k1!r} -- fix: retriever.k1=1.5")
        if not (isinstance(b, (int, float)) and 0 <= b <= 1):
            raise ConfigError(f"retriever.b must be in [0, 1], got {b!r} -- fix: retriever.b=0.75")
        if backend not in BACKENDS:
            raise ConfigError(f"retriever.backend {backend!r} is unknown -- fix: one of {sorted(BACKENDS)}")
        if stopwords not in STOPWORD_SETS:
            raise ConfigError(f"retriever.stopwords {stopwords!r} is unknown -- fix: one of {sorted(STOPWORD_SETS)}")
        self.k1, self.b, self.backend_name = float(k1), float(b), backend
        self.stopwords = STOPWORD_SETS[stopwords]
        self._backend: Bm25Backend | None = None

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Tokenise and index the chunks."""
        corpus = [tokenize(c.text, self.stopwords) for c in chunks]
        self._backend = BACKENDS[self.backend_name](corpus, self.k1, self.b)

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Top-``depth`` readable chunks per question."""
        if self._backend is None:
            raise RuntimeError("Bm25Retriever.search called before fit")
        out = []
        for q in questions:
            scores = self._backend.scores(tokenize(q.question, self.stopwords))
            idx, sc = top_k(scores, depth, access.mask(q.asker))
            out.append(Ranking(q.qid, tuple(int(i) for i in idx), tuple(strictly_decreasing(sc).tolist())))
        return out
