"""The corpus a draft is drawn from, read through the parser axis as a sweep reads it (the
loader's :func:`~rag_bench.data.native.read_documents` and the shared parse cache), and the
retrieval index the planner and the filters search (the project's chunker and BM25 retriever)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.domain import Chunk, Document, Question
from rag_bench.drafting.records import Quote
from rag_bench.errors import DataError


@dataclass(frozen=True)
class Corpus:
    """The documents of ``docs_dir`` (``root/docs`` of a dataset folder, or a plain folder of
    documents), parsed; ``meta`` is the dataset's docs.jsonl when it has one."""

    root: Path
    docs_dir: Path
    documents: dict[str, Document]
    meta: Path | None
    parser: str


def read_corpus(path: Path, parser: Any = None) -> Corpus:
    """The corpus at ``path`` (a dataset folder or a folder of documents); a :class:`DataError` with
    every problem (a folder with nothing readable among them) otherwise."""
    from rag_bench.data.native import read_documents
    from rag_bench.data.problems import ProblemLog
    from rag_bench.errors import Problem

    if not path.is_dir():
        raise DataError(Problem(str(path), 0, "DOCS_OR_DATASET", "no such folder",
                                "give a dataset folder (with docs/) or a folder of documents"))
    docs_dir = path / "docs" if (path / "docs").is_dir() else path
    _some_document(docs_dir)
    log = ProblemLog(path)
    documents, state = read_documents(path, log, parser, docs_dir=docs_dir)
    log.raise_if_any(f"{path}: no corpus to draft from")
    if state is not None and state.failed:
        import logging

        logging.getLogger(__name__).warning("%d document(s) could not be parsed and are left out: %s",
                                            len(state.failed), "; ".join(sorted(state.failed)[:5]))
    meta = path / "docs.jsonl" if docs_dir != path and (path / "docs.jsonl").is_file() else None
    name = "auto" if parser is None else str(parser.name)
    return Corpus(path, docs_dir, documents, meta, name)


def _some_document(docs_dir: Path) -> None:
    """A :class:`DataError` when ``docs_dir`` holds no file of a kind a document is read from, naming
    the kinds it holds instead (the loader's message named .md and .txt only, whatever the folder held)."""
    from pathlib import PurePosixPath

    from rag_bench.data.files import DOCUMENT_SUFFIXES, PARSED_SUFFIXES, document_kind
    from rag_bench.errors import Problem

    files = [p.relative_to(docs_dir) for p in docs_dir.rglob("*") if p.is_file()]
    if any(document_kind(PurePosixPath(f.as_posix())) for f in files):
        return
    kinds = sorted({f.suffix.lower() or f.name for f in files})
    held = (f"its {len(files)} file(s) are of other kinds ({', '.join(kinds[:6])}{', ...' if len(kinds) > 6 else ''})"
            if files else "the folder is empty")
    raise DataError(Problem(str(docs_dir), 0, "DOCS_OR_DATASET", f"no documents to draft from: {held}",
                            f"add at least one document: {', '.join(DOCUMENT_SUFFIXES)} (read as they are) or "
                            f"{', '.join(PARSED_SUFFIXES)} (parsed, parser=...: docs/parsing.md)"))


class Index:
    """The corpus chunked (``chunker``) and indexed by ``retriever`` (BM25 by default): what ranks a
    draft's source passage (round trip), what an unanswerable draft is checked against."""

    def __init__(self, documents: dict[str, Document], chunker: Any, retriever: Any) -> None:
        from rag_bench.retrieval.base import AccessFilter

        self.documents = documents
        self.chunks: list[Chunk] = [c for c in chunker.chunk(list(documents.values())) if not c.is_parent]
        self.retriever = retriever
        retriever.fit(self.chunks)
        self.access = AccessFilter(self.chunks, documents)

    def search(self, texts: Sequence[str], k: int) -> list[list[Chunk]]:
        """The top ``k`` chunks for each text."""
        qs = [Question(f"q{i}", t, True) for i, t in enumerate(texts)]
        rankings = self.retriever.search(qs, k, self.access)
        return [[self.chunks[i] for i in r.indices] for r in rankings]

    def holds(self, chunk: Chunk, quote: Quote) -> bool:
        """Whether ``chunk`` overlaps the quote's characters (at least half of the quote, or of the chunk)."""
        if chunk.doc_id != quote.doc_id:
            return False
        overlap = min(chunk.end, quote.end) - max(chunk.start, quote.start)
        return overlap > 0 and overlap >= 0.5 * min(chunk.end - chunk.start, quote.end - quote.start)
