"""Parsing (metrics.json ``parse``): how a cell's parser read the dataset's document files
(.pdf, .html, .docx; rag_bench.parsing) -- present only when the dataset holds such files.

``evidence_located`` is the share of gold quotes in parsed documents that were found in the parse
(exact, normalised or bounded fuzzy: rag_bench.parsing.locate), ``evidence_exact`` the share found
verbatim; a quote of a document that failed to parse counts as not located. ``failed_documents``
counts the files no text came from, each with its reason in the ``parse_failures`` section and a
warning. ``seconds`` is the parse time of the files (recorded with each parse, so a cached parse
reports what it cost); ``parsed_documents`` the files parsed by this load and ``cache_hits`` the
ones the parse cache served (a second sweep parses nothing). ``questions_lost``: answerable
questions with a gold quote the parse lost -- evaluated, the lost quote counted as relevant and
never retrieved, and labelled ``parsing`` when nothing later lost them (metrics.json ``failures``;
it replaces ``questions_dropped``: such questions are no longer left out of the cell).

``table_rows_intact``: of the questions tagged ``table`` with a quote in a parsed document, the
share whose every such quote (the row's cells in reading order) was found exactly or normalised and
within one line of the parse -- one Markdown table row or one line of text (a fuzzy match of glued
cells, a row split over lines, a lost row: not intact). ``headings_found``: of the distinct
``(document, section)`` names the locators of parsed documents give, the share that are a heading
of the parse (normalised: emphasis, case and spacing aside) -- computable from the dataset alone.
Both are absent when the dataset gives nothing to count (no table question, no section).
"""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.parsing.locate import FUZZY_WORK, OVER_BOUND
from rag_bench.parsing.quality import GLUED_MIN, GLUED_RUN, SPARSE_CHARS_PER_PAGE, chars_per_page, glued_share

PARSE = figures("parse", (
    ("evidence_located", True, "share of gold quotes in parsed documents found in the parse (exact, normalised or "
     "bounded fuzzy)"),
    ("evidence_exact", True, "share of gold quotes in parsed documents found verbatim in the parse"),
    ("evidence_normalised", None, "share found only after normalising (whitespace, dashes, ligatures, hyphenation, "
     "case)"),
    ("evidence_fuzzy", None, "share found only by bounded fuzzy matching"),
    ("failed_documents", False, "document files no text could be parsed from (malformed, encrypted, empty, no text "
     "layer, over a bound)"),
    ("seconds", False, "parse time of the document files (as recorded with each parse, cached ones too)"),
    ("documents", None, "document files parsed (.pdf, .html, .docx)"),
    ("parsed_documents", None, "document files parsed by this load (parse cache misses)"),
    ("cache_hits", None, "document files the parse cache served"),
    ("questions_lost", False, "answerable questions with a gold quote not located in the parse (evaluated as lost: "
     "the parsing label)"),
    ("table_rows_intact", True, "share of table-tagged questions whose evidence row sits in one line of the parse "
     "(a Markdown table row or a text line; found exactly or normalised)"),
    ("headings_found", True, "share of the locators' section names (document, section) that are headings of the "
     "parse (a heading's number, e.g. '2.4', aside)"),
    ("glued_documents", False, "parsed documents whose words are glued together (missing spaces: a fifth or more of "
     "their letters in runs of 20+ letters)"),
    ("sparse_documents", False, "parsed documents with almost no text (under 40 characters a page: a scan with a "
     "thin text layer)"),
))
(EVIDENCE_LOCATED, EVIDENCE_EXACT, EVIDENCE_NORMALISED, EVIDENCE_FUZZY, FAILED_DOCUMENTS, SECONDS, DOCUMENTS,
 PARSED_DOCUMENTS, CACHE_HITS, QUESTIONS_LOST, TABLE_ROWS_INTACT, HEADINGS_FOUND, GLUED_DOCUMENTS,
 SPARSE_DOCUMENTS) = PARSE
FAILURES_SECTION = "parse_failures"
# metrics.json: per parsed document, its quotes and how many the parse located (exactly), its
# locator sections and how many are headings, and whether its text reads as glued or thin.
DOCUMENTS_SECTION = "parse_documents"
DOCUMENT_FIGURES = ("quotes", "located", "exact", "sections", "headings_found", "glued", "sparse")


class Parsing:
    """The scorer of :data:`PARSE` (datasets with document files to parse)."""

    name = "parsing"
    requires: tuple[str, ...] = ("parse",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Every parse figure when the dataset was parsed, else none."""
        return list(PARSE)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The parse report's figures, the failures by document and a warning per failure."""
        report = scoring.run.dataset.parse
        assert report is not None  # requires
        methods = [m for _, _, m in report.evidence]
        n = len(methods)

        def share(*wanted: str) -> float | None:
            return sum(m in wanted for m in methods) / n if n else None

        values: dict[str, Any] = {
            EVIDENCE_LOCATED.key: share("exact", "normalised", "fuzzy"), EVIDENCE_EXACT.key: share("exact"),
            EVIDENCE_NORMALISED.key: share("normalised"), EVIDENCE_FUZZY.key: share("fuzzy"),
            FAILED_DOCUMENTS.key: len(report.failures), SECONDS.key: round(report.seconds, 4),
            DOCUMENTS.key: report.documents, PARSED_DOCUMENTS.key: report.parsed, CACHE_HITS.key: report.cache_hits,
            QUESTIONS_LOST.key: len(report.lost),
            TABLE_ROWS_INTACT.key: (sum(ok for _, ok in report.table_rows) / len(report.table_rows)
                                    if report.table_rows else None),
            HEADINGS_FOUND.key: (sum(ok for _, ok in report.headings) / len(report.headings)
                                 if report.headings else None)}
        glued, sparse = text_signs(scoring.run, report)
        values[GLUED_DOCUMENTS.key], values[SPARSE_DOCUMENTS.key] = len(glued), len(sparse)
        values = {k: v for k, v in values.items() if v is not None}
        warnings = tuple(f"parser {report.parser}: document {doc_id!r} reads as glued words ({share:.0%} of its letters "
                         f"in runs of {GLUED_RUN}+ letters: the spaces were lost), so BM25 and the embedder see few, "
                         f"long tokens -- fix: another parser (rag-bench parse DIR parser=pymupdf4llm shows its text)"
                         for doc_id, share in glued)
        warnings += tuple(f"parser {report.parser}: document {doc_id!r} has almost no text ({per:.0f} characters a "
                          f"page): a scan with a thin text layer? -- fix: OCR it first, or leave it out of docs/"
                          for doc_id, per in sparse)
        warnings += tuple(f"parser {report.parser}: document {doc_id!r} could not be parsed: {reason}"
                         for doc_id, reason in report.failures)
        over = [(qid, doc_id) for qid, doc_id, m in report.evidence if m == OVER_BOUND]
        warnings += tuple(f"parser {report.parser}: question {qid!r}: a quote in document {doc_id!r} could not be "
                          f"located within the fuzzy search's work bound ({FUZZY_WORK:,} comparisons; counted as lost) "
                          "-- fix: quote a shorter passage, exactly as the document has it, or give its section"
                          for qid, doc_id in over)
        if report.lost:
            warnings += (f"parser {report.parser}: {len(report.lost)} answerable question(s) with evidence not located "
                         f"in the parse (counted as lost; failures/parsing): {', '.join(report.lost[:10])}",)
        sections: dict[str, Any] = {FAILURES_SECTION: dict(report.failures)} if report.failures else {}
        sections[DOCUMENTS_SECTION] = per_document(report, {d for d, _ in glued}, {d for d, _ in sparse})
        return [Part("parse", values=values, sections=sections, warnings=warnings)]


def per_document(report: Any, glued: set[str], sparse: set[str]) -> dict[str, dict[str, Any]]:
    """Each parsed document's figures (:data:`DOCUMENT_FIGURES`): the report's quotes and locator
    sections by document."""
    out: dict[str, dict[str, Any]] = {doc: {} for doc in sorted(report.pages)}
    for _, doc_id, method in report.evidence:
        d = out.setdefault(doc_id, {})
        d["quotes"] = d.get("quotes", 0) + 1
        d["located"] = d.get("located", 0) + (method in ("exact", "normalised", "fuzzy"))
        d["exact"] = d.get("exact", 0) + (method == "exact")
    for (doc_id, _), found in report.headings:
        d = out.setdefault(doc_id, {})
        d["sections"] = d.get("sections", 0) + 1
        d["headings_found"] = d.get("headings_found", 0) + bool(found)
    for doc_id, d in out.items():
        d["glued"], d["sparse"] = doc_id in glued, doc_id in sparse
    return out


def text_signs(run: SystemRun, report: Any) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The parsed documents whose text reads as glued words (with the share of letters in long runs) and
    those with almost no text (with their characters a page): rag_bench.parsing.quality."""
    glued: list[tuple[str, float]] = []
    sparse: list[tuple[str, float]] = []
    for doc_id, pages in sorted(report.pages.items()):
        doc = run.dataset.documents.get(doc_id)
        if doc is None:
            continue
        share = glued_share(doc.text)
        if share >= GLUED_MIN:
            glued.append((doc_id, share))
        per = chars_per_page(doc.text, pages)
        if per is not None and per < SPARSE_CHARS_PER_PAGE:
            sparse.append((doc_id, per))
    return glued, sparse


SCORER = Parsing()
