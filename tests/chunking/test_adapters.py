"""Adapters for the splitters teams use: LangChain text splitters and semchunk, with exact spans
(run with the real libraries, the `splitters` extra)."""

from __future__ import annotations

import pytest

from rag_bench.chunking.langchain import LangChainChunker
from rag_bench.chunking.semchunk import SemchunkChunker
from rag_bench.errors import ConfigError

pytest.importorskip("langchain_text_splitters", reason="pip install 'rag-bench-harness[splitters]'")
pytest.importorskip("semchunk", reason="pip install 'rag-bench-harness[splitters]'")


def _exact(chunks, docs):
    for c in chunks:
        assert docs[c.doc_id].text[c.start:c.end] == c.body and c.body.strip() == c.body and c.body


@pytest.mark.parametrize("splitter", ["langchain_text_splitters.RecursiveCharacterTextSplitter",
                                      "langchain_text_splitters.MarkdownTextSplitter",
                                      "langchain_text_splitters.CharacterTextSplitter"])
def test_langchain_splitters_give_exact_spans(demo_dataset, splitter):
    docs = demo_dataset.documents
    chunks = LangChainChunker(splitter=splitter, size=300, overlap=50).chunk(list(docs.values()))
    _exact(chunks, docs)
    assert len(chunks) > len(docs)
    if splitter.endswith("RecursiveCharacterTextSplitter"):
        assert max(len(c.body) for c in chunks) <= 300
        # overlap: some consecutive pieces of one document share characters
        assert any(a.doc_id == b.doc_id and b.start < a.end for a, b in zip(chunks, chunks[1:]))


def test_a_missing_splitter_says_how_to_install_it():
    with pytest.raises(ConfigError, match=r"rag-bench-harness\[splitters\]"):
        LangChainChunker(splitter="langchain_text_splitters.NoSuchSplitter")
    with pytest.raises(ConfigError, match="does not take these arguments"):
        LangChainChunker(options={"colour": "red"})


@pytest.mark.parametrize(("unit", "overlap"), [("words", 0.0), ("chars", 0.0), ("words", 0.2)])
def test_semchunk_gives_exact_spans_within_size(demo_dataset, unit, overlap):
    docs = demo_dataset.documents
    chunks = SemchunkChunker(size=60 if unit == "words" else 400, unit=unit, overlap=overlap).chunk(list(docs.values()))
    _exact(chunks, docs)
    size = (lambda t: len(t.split())) if unit == "words" else len
    assert len(chunks) > len(docs) and max(size(c.body) for c in chunks) <= (60 if unit == "words" else 400)
    if overlap:
        assert any(a.doc_id == b.doc_id and b.start < a.end for a, b in zip(chunks, chunks[1:]))
