"""A character n-gram TF-IDF retriever: robust to typos and to identifiers written differently
("KB DW 4410" vs "KB-DW-4410"). It implements rag_bench's Retriever protocol (``fit`` and
``search``) and nothing else: rag_bench checks that shape before any work."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.retrieval.base import AccessFilter, strictly_decreasing, top_k


class CharNgramRetriever:
    """Cosine of character n-gram TF-IDF vectors (word-bounded n-grams, sublinear tf).

    Parameters
    ----------
    n:
        n-gram length.
    """

    def __init__(self, n: int = 3) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 6:
            raise ValueError(f"retriever.n must be an integer in [2, 6], got {n!r}")
        self.n = n
        self._vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(n, n), sublinear_tf=True)
        self._matrix = None

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Index the chunks' texts."""
        self._matrix = self._vectorizer.fit_transform([c.text for c in chunks])

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Top-``depth`` readable chunks per question (the access mask applied before the cut)."""
        if self._matrix is None:
            raise RuntimeError("CharNgramRetriever.search called before fit")
        out = []
        for q in questions:
            scores = (self._matrix @ self._vectorizer.transform([q.question]).T).toarray().ravel()
            idx, sc = top_k(np.asarray(scores, np.float64), depth, access.mask(q.asker))
            out.append(Ranking(q.qid, tuple(int(i) for i in idx), tuple(strictly_decreasing(sc).tolist())))
        return out
