"""BM25 retrieval. The scoring backend is swappable (``backend=``).

``sparse`` (the default) computes Okapi BM25 exactly as rank-bm25's ``BM25Okapi`` does — same idf
with its epsilon floor, same arithmetic in the same order, so the scores are bit-identical (a
test checks it) — but stores the per-(document, term) weights as sparse postings, so a query
touches only the documents containing its terms. rank-bm25 loops over every document for every
query term in Python: ~1,000× slower at 100,000 chunks. ``rank_bm25`` remains selectable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np

from rag_bench import memo
from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.retrieval.base import AccessFilter, strictly_decreasing, top_k
from rag_bench.text.tokenize import Tokenizer


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


class SparseBm25:
    """Okapi BM25 over sparse postings; scores bit-identical to ``rank_bm25.BM25Okapi``."""

    def __init__(self, corpus: list[list[str]], k1: float, b: float, epsilon: float = 0.25) -> None:
        vocab: dict[str, int] = {}
        doc_freq: dict[str, int] = {}  # word -> number of documents containing it (first-seen order)
        rows, cols, tfs = [], [], []
        lengths = np.fromiter((len(d) for d in corpus), np.int64, len(corpus))
        for i, doc in enumerate(corpus):
            counts: dict[str, int] = {}
            for w in doc:
                counts[w] = counts.get(w, 0) + 1
            for w, c in counts.items():
                doc_freq[w] = doc_freq.get(w, 0) + 1
                rows.append(i)
                cols.append(vocab.setdefault(w, len(vocab)))
                tfs.append(c)
        n = len(corpus)
        self.size = n
        # idf as rank-bm25 computes it: log(N - df + .5) - log(df + .5), negatives floored at eps * mean.
        idf: dict[str, float] = {}
        total = 0.0
        negative = []
        for w, df in doc_freq.items():
            v = math.log(n - df + 0.5) - math.log(df + 0.5)
            idf[w] = v
            total += v
            if v < 0:
                negative.append(w)
        if idf:
            eps = epsilon * (total / len(idf))
            for w in negative:
                idf[w] = eps
        self.vocab = vocab
        idf_by_col = np.array([idf[w] for w in vocab], dtype=np.float64)
        avgdl = float(lengths.sum()) / n if n else 1.0
        row_ids, col_ids = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        tf = np.asarray(tfs, np.int64)
        # Same expression and evaluation order as BM25Okapi.get_scores, element by element.
        weights = idf_by_col[col_ids] * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[row_ids] / avgdl)))
        order = np.lexsort((row_ids, col_ids))  # postings grouped by term
        self.doc_ids, self.weights = row_ids[order], weights[order]
        self.starts = np.searchsorted(col_ids[order], np.arange(len(vocab) + 1))

    def scores(self, query: list[str]) -> np.ndarray:
        """BM25 score of every document; query terms added in query order, as rank-bm25 does."""
        out = np.zeros(self.size, dtype=np.float64)
        for w in query:
            t = self.vocab.get(w)
            if t is not None:
                lo, hi = self.starts[t], self.starts[t + 1]
                out[self.doc_ids[lo:hi]] += self.weights[lo:hi]
        return out


BACKENDS: dict[str, Callable[[list[list[str]], float, float], Bm25Backend]] = {
    "sparse": SparseBm25, "rank_bm25": _rank_bm25}


class Bm25Retriever:
    """Okapi BM25 over the chunks' indexed text (heading prefix included).

    Parameters
    ----------
    k1, b:
        Okapi BM25 term-frequency saturation and length normalisation.
    backend:
        Name in :data:`BACKENDS`.
    language:
        Language of the corpus and questions: its stopword list and stemmer
        (:class:`~rag_bench.text.tokenize.Tokenizer`; any script tokenises).
    stopwords:
        ``auto`` (the language's list), ``none``, or a language's name.
    stemmer:
        ``none`` or ``snowball`` (PyStemmer's stemmer for ``language``).
    shared:
        The runner's :class:`~rag_bench.memo.SharedWork`: an identical index built by another
        cell is reused through it (None: nothing is shared).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, backend: Literal["sparse", "rank_bm25"] = "sparse",
                 language: str = "english", stopwords: str = "auto", stemmer: Literal["none", "snowball"] = "none",
                 shared: memo.SharedWork | None = None) -> None:
        if not (isinstance(k1, (int, float)) and np.isfinite(k1) and k1 >= 0):
            raise ConfigError(f"retriever.k1 must be a finite number >= 0, got {k1!r} -- fix: retriever.k1=1.5")
        if not (isinstance(b, (int, float)) and 0 <= b <= 1):
            raise ConfigError(f"retriever.b must be in [0, 1], got {b!r} -- fix: retriever.b=0.75")
        if backend not in BACKENDS:
            raise ConfigError(f"retriever.backend {backend!r} is unknown -- fix: one of {sorted(BACKENDS)}")
        self.k1, self.b, self.backend_name = float(k1), float(b), backend
        self.tokenizer = Tokenizer(language=language, stopwords=stopwords, stemmer=stemmer)
        self._backend: Bm25Backend | None = None
        self.shared = shared

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Tokenise and index the chunks (an identical index built earlier in this process is reused,
        e.g. by the sparse branch of a hybrid retriever over the same chunks)."""
        texts = [c.text for c in chunks]

        def build() -> Bm25Backend:
            return BACKENDS[self.backend_name]([self.tokenizer(t) for t in texts], self.k1, self.b)

        if self.shared is None:
            self._backend = build()
            return
        self._backend = self.shared.get_or(
            "bm25", memo.key(self.backend_name, self.k1, self.b, self.tokenizer.identity,
                             sorted(self.tokenizer.stopword_set), memo.digest(texts)), build)

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Top-``depth`` readable chunks per question."""
        if self._backend is None:
            raise RuntimeError("Bm25Retriever.search called before fit")
        out = []
        for q in questions:
            scores = self._backend.scores(self.tokenizer(q.question))
            idx, sc = top_k(scores, depth, access.mask(q.asker))
            out.append(Ranking(q.qid, tuple(int(i) for i in idx), tuple(strictly_decreasing(sc).tolist())))
        return out
