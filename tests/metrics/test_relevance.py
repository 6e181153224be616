"""Section relevance (``eval.relevance=section``): a chunk is relevant when it lies inside the section
its evidence names, sub-sections included; evidence naming no section keeps its own span."""

from rag_bench.chunking.base import make_chunks
from rag_bench.domain import Document, EvidenceSpan, Question, Section
from rag_bench.metrics.relevance import ChunkIndex, evidence_section, relevant_chunks

TEXT = ("# A\nalpha body.\n## B\nbeta one. beta two.\n# C\ngamma body.\n")
A, B, C = TEXT.index("# A"), TEXT.index("## B"), TEXT.index("# C")
DOC = Document("d", TEXT, sections=(
    Section(("A",), 1, A, A + 4, B), Section(("A", "B"), 2, B, B + 5, C), Section(("C",), 1, C, C + 4, len(TEXT))))
CHUNKS = make_chunks(DOC, [(A + 4, B), (B + 5, B + 14), (B + 15, C), (C + 4, len(TEXT))])
QUOTE = TEXT.index("alpha")


def test_a_documents_section_span_holds_its_sub_sections():
    assert DOC.section_span(DOC.sections[0]) == (A + 4, C)  # A with its sub-section B
    assert DOC.section_span(DOC.sections[1]) == (B + 5, C)
    assert DOC.section_span(DOC.sections[2]) == (C + 4, len(TEXT))


def test_section_mode_takes_the_named_section_with_its_sub_sections():
    ev = EvidenceSpan("d", QUOTE, QUOTE + 5, heading_path=("A",))
    assert evidence_section(ev, {"d": DOC}) == (A + 4, C)
    q = Question("q", "?", True, evidence=(ev,))
    rel, grades, found = relevant_chunks(q, ChunkIndex(CHUNKS), mode="section", documents={"d": DOC})
    assert rel.tolist() == [0, 1, 2] and grades.tolist() == [1, 1, 1] and found.tolist() == [True]


def test_section_mode_without_a_named_section_keeps_the_span():
    ev = EvidenceSpan("d", A + 4, B)
    assert evidence_section(ev, {"d": DOC}) == evidence_section(ev, None) == (A + 4, B)
    q = Question("q", "?", True, evidence=(ev,))
    rel, _, _ = relevant_chunks(q, ChunkIndex(CHUNKS), mode="section", documents={"d": DOC})
    assert rel.tolist() == [0]
