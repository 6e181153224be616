"""Parsing (metrics.json ``parse``): how a cell's parser read the dataset's document files
(.pdf, .html, .docx; rag_bench.parsing) -- present only when the dataset holds such files.

``evidence_located`` is the share of gold quotes in parsed documents that were found in the parse
(exact, normalised or bounded fuzzy: rag_bench.parsing.locate), ``evidence_exact`` the share found
verbatim; a quote of a document that failed to parse counts as not located. ``failed_documents``
counts the files no text came from, each with its reason in the ``parse_failures`` section and a
warning. ``seconds`` is the parse time of the files (recorded with each parse, so a cached parse
reports what it cost); ``parsed_documents`` the files parsed by this load and ``cache_hits`` the
ones the parse cache served (a second sweep parses nothing). ``questions_dropped``: answerable
questions none of whose evidence survived the parse, left out of this cell's evaluation.
"""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Context, Measure, Part, Settings, figures

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
    ("questions_dropped", False, "answerable questions none of whose evidence was located in the parse (left out)"),
))
(EVIDENCE_LOCATED, EVIDENCE_EXACT, EVIDENCE_NORMALISED, EVIDENCE_FUZZY, FAILED_DOCUMENTS, SECONDS, DOCUMENTS,
 PARSED_DOCUMENTS, CACHE_HITS, QUESTIONS_DROPPED) = PARSE
FAILURES_SECTION = "parse_failures"


class Parsing:
    """The scorer of :data:`PARSE` (datasets with document files to parse)."""

    name = "parsing"

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Every parse figure when the dataset was parsed, else none."""
        return list(PARSE) if run.dataset.parse is not None else []

    def score(self, context: Context) -> list[Part]:
        """The parse report's figures, the failures by document and a warning per failure."""
        report = context.run.dataset.parse
        if report is None:
            return []
        methods = [m for _, _, m in report.evidence]
        n = len(methods)

        def share(*wanted: str) -> float | None:
            return sum(m in wanted for m in methods) / n if n else None

        values: dict[str, Any] = {
            EVIDENCE_LOCATED.key: share("exact", "normalised", "fuzzy"), EVIDENCE_EXACT.key: share("exact"),
            EVIDENCE_NORMALISED.key: share("normalised"), EVIDENCE_FUZZY.key: share("fuzzy"),
            FAILED_DOCUMENTS.key: len(report.failures), SECONDS.key: round(report.seconds, 4),
            DOCUMENTS.key: report.documents, PARSED_DOCUMENTS.key: report.parsed, CACHE_HITS.key: report.cache_hits,
            QUESTIONS_DROPPED.key: len(report.dropped)}
        values = {k: v for k, v in values.items() if v is not None}
        warnings = tuple(f"parser {report.parser}: document {doc_id!r} could not be parsed: {reason}"
                         for doc_id, reason in report.failures)
        if report.dropped:
            warnings += (f"parser {report.parser}: {len(report.dropped)} answerable question(s) left out, none of their "
                         f"evidence was located in the parse: {', '.join(report.dropped[:10])}",)
        sections = {FAILURES_SECTION: dict(report.failures)} if report.failures else {}
        return [Part("parse", values=values, sections=sections, warnings=warnings)]


SCORER = Parsing()
