"""Records that flow between stages. All frozen: a stage never mutates what it was given."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Asker:
    """Who asks a question: retrieval only returns chunks this asker may read."""

    tenant: str | None = None
    groups: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str | None, frozenset[str]]:
        """Identity of the asker's access rights, used to cache per-asker access masks.

        A structural value, never a joined string: ``tenant=None`` (no tenant) and ``tenant=""``
        or ``"*"`` differ, and so do ``groups=["a,b"]`` and ``["a", "b"]``. Two askers with
        equal keys read exactly the same documents (group order and repeats do not matter).

        >>> Asker(None, ("a,b",)).key == Asker("", ("a", "b")).key
        False
        >>> Asker("t", ("b", "a", "a")).key == Asker("t", ("a", "b")).key
        True
        """
        return (self.tenant, frozenset(self.groups))

    @property
    def label(self) -> str:
        """Unambiguous display form (JSON), e.g. ``{"groups": ["staff"], "tenant": "acme"}``."""
        return json.dumps({"tenant": self.tenant, "groups": sorted(set(self.groups))}, sort_keys=True,
                          ensure_ascii=False)


@dataclass(frozen=True)
class Section:
    """A Markdown section: heading path and the character span of its own body.

    ``body_start``/``end`` exclude the heading line and stop at the next heading of any level, so
    sections never overlap; a parent section's body holds only the text before its first child.
    """

    heading_path: tuple[str, ...]
    level: int
    heading_start: int
    body_start: int
    end: int


@dataclass(frozen=True)
class Document:
    """A corpus document and its access/freshness metadata (from docs.jsonl when present)."""

    doc_id: str
    text: str
    title: str = ""
    version: str | None = None
    effective_at: str | None = None
    status: str = "current"
    tenant: str | None = None
    acl: tuple[str, ...] = ()
    source_uri: str | None = None
    path: str = ""
    sections: tuple[Section, ...] = ()
    # Hostile-document markers (docs.jsonl): the canary strings of instructions planted in the
    # document, and text planted where a person does not see it (rag_bench.evaluation.scorers.injection).
    canaries: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    @property
    def archived(self) -> bool:
        """True for superseded versions, which retrieval excludes by default."""
        return self.status == "archived"

    def section_span(self, section: Section) -> tuple[int, int]:
        """Body span of one of its ``sections`` *including* its sub-sections (what a user means by
        "the section")."""
        end = section.end
        for other in self.sections:
            if other.heading_start >= section.end and other.heading_path[: len(section.heading_path)] == \
                    section.heading_path and len(other.heading_path) > len(section.heading_path):
                end = other.end
            elif other.heading_start >= section.end:
                break
        return section.body_start, end

    def readable_by(self, asker: Asker | None) -> bool:
        """Tenant must match (when both are set) and the asker must share a group with the ACL.

        An empty ACL means every member of the tenant may read; no asker means unrestricted.
        """
        if asker is None:
            return True
        if self.tenant is not None and asker.tenant is not None and self.tenant != asker.tenant:
            return False
        return not self.acl or bool(set(self.acl) & set(asker.groups))


@dataclass(frozen=True)
class EvidenceSpan:
    """A resolved evidence locator: characters ``[start, end)`` of document ``doc_id``, with its
    relevance grade (1 unless the dataset grades it: BEIR qrels, or a native ``grade``)."""

    doc_id: str
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    grade: int = 1

    @property
    def length(self) -> int:
        """Number of characters in the span."""
        return self.end - self.start


@dataclass(frozen=True)
class LostEvidence:
    """A gold quote of a parsed document that this cell's parse lost: not located in the parse
    (``reason`` ``none``) or in a document the parser could not read (``failed``). It stays gold:
    retrieval and evidence measures count it as relevant and never retrieved (docs/metrics.md,
    the ``parsing`` label)."""

    doc_id: str
    grade: int = 1
    reason: str = "none"


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: who spoke (``user`` or ``assistant``) and what was said.
    A question's ``history`` holds them oldest first; the question is the next user turn
    (docs/contract.md §3)."""

    role: str
    content: str


@dataclass(frozen=True)
class Question:
    """A golden question with its evidence resolved to character spans.

    ``expects`` is the right outcome (docs/contract.md §3): ``answer`` (a direct answer),
    ``refuse`` (the refusal) or ``clarify`` (a question back asking for ``clarify_facts``, the facts
    about the asker's situation the answer depends on and the question does not give). None means
    the default of ``answerable``: ``answer`` when true, ``refuse`` when false (every loader that
    does not read the field). A clarify question is ``answerable``: its evidence is in the corpus
    (retrieval is measured on it), only a fact from the asker is missing.

    ``lost``: the gold quotes this cell's parser lost (:class:`LostEvidence`; datasets with .pdf,
    .html or .docx documents), beside the located ``evidence``.

    ``history``: the conversation before the question (:class:`Turn`, oldest first; empty for a
    single-turn question). ``standalone``: a people-written form of the question that needs no
    history (what a query rewrite should produce), when the dataset carries one.
    """

    qid: str
    question: str
    answerable: bool
    evidence: tuple[EvidenceSpan, ...] = ()
    facts: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    asker: Asker | None = None
    tags: tuple[str, ...] = ()
    line: int = 0
    expects: str | None = None
    clarify_facts: tuple[str, ...] = ()
    lost: tuple[LostEvidence, ...] = ()
    history: tuple[Turn, ...] = ()
    standalone: str | None = None

    @property
    def outcome(self) -> str:
        """The right outcome: ``expects``, else ``answer`` for an answerable question, ``refuse``
        for an unanswerable one.

        >>> Question("q", "?", True).outcome, Question("q", "?", False).outcome
        ('answer', 'refuse')
        """
        return self.expects or ("answer" if self.answerable else "refuse")

    @property
    def wants_answer(self) -> bool:
        """Whether a direct answer is right (answerable and not a clarify question): what the
        answer measures of answerable questions (generation/correct, false refusals) count."""
        return self.outcome == "answer"

    @property
    def reference(self) -> str | None:
        """One reference text for judges and ragas: the first reference answer, else the facts
        joined, else None."""
        return self.answers[0] if self.answers else ("; ".join(self.facts) if self.facts else None)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document. ``document.text[start:end] == body`` always holds.

    ``text`` is what gets indexed and embedded: the body, optionally preceded by ``prefix`` (a
    heading path). Parents of the parent-child chunker carry ``is_parent=True`` and are kept for
    context expansion only; retrieval never searches them.
    """

    chunk_id: str
    doc_id: str
    start: int
    end: int
    body: str
    prefix: str = ""
    heading_path: tuple[str, ...] = ()
    parent_id: str | None = None
    is_parent: bool = False

    @property
    def text(self) -> str:
        """Indexed text: prefix + body."""
        return self.prefix + self.body

    @property
    def length(self) -> int:
        """Length of the body in characters."""
        return self.end - self.start


@dataclass(frozen=True)
class Ranking:
    """Retrieval output for one question: chunk indices (into the searched chunk list) and scores.

    Scores are strictly decreasing; ties from the scorer are broken by chunk order and then made
    strict (see :func:`rag_bench.retrieval.base.strictly_decreasing`).
    """

    qid: str
    indices: tuple[int, ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class ParseReport:
    """How a dataset's document files (.pdf, .html, .docx) were parsed (rag_bench.parsing): present
    only when the dataset holds such files.

    ``parser`` the chosen option; ``documents`` the files; ``parsed`` those parsed in this load
    (cache misses), ``cache_hits`` the others; ``failures`` ``(doc_id, reason)`` of files no text
    came from; ``seconds`` the parse time of the files (recorded with each parse, cached ones too);
    ``pages`` ``doc_id -> offsets where each page starts``; ``warnings`` ``(doc_id, warning)``;
    ``evidence`` ``(question id, doc_id, method)`` per quote of a parsed document (method: exact,
    normalised, fuzzy, or none / failed / over_bound when not located: over_bound, the fuzzy search's
    work bound ran out first, rag_bench.parsing.locate); ``lost`` ids of answerable questions
    with a gold quote not located (evaluated: :attr:`Question.lost`, the ``parsing`` label);
    ``table_rows`` ``(question id, intact)`` per ``table``-tagged question with a quote in a parsed
    document; ``headings`` ``((doc_id, section), found)`` per locator section of a parsed document."""

    parser: str
    documents: int = 0
    parsed: int = 0
    cache_hits: int = 0
    failures: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    pages: dict[str, tuple[int, ...]] = field(default_factory=dict)
    warnings: tuple[tuple[str, str], ...] = ()
    evidence: tuple[tuple[str, str, str], ...] = ()
    lost: tuple[str, ...] = ()
    table_rows: tuple[tuple[str, bool], ...] = ()
    headings: tuple[tuple[tuple[str, str], bool], ...] = ()


@dataclass(frozen=True)
class Dataset:
    """A loaded, validated dataset."""

    name: str
    root: str
    layout: str
    documents: dict[str, Document] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()
    fingerprint: str = ""
    files: tuple[str, ...] = ()  # what the fingerprint covers (relative paths; rag_bench.data.files)
    # The corpus's own fingerprint (documents and their metadata, not the questions): what chunks
    # and indexes are keyed by, so two splits or an edited question set share them.
    corpus_fingerprint: str = ""
    parse: ParseReport | None = None  # how .pdf/.html/.docx files were parsed (None: no such file)

    @property
    def corpus_key(self) -> str:
        """What determines the corpus: its own fingerprint (the dataset's when not given)."""
        return self.corpus_fingerprint or self.fingerprint


@dataclass(frozen=True)
class Passage:
    """A numbered source handed to the generator: one chunk, or a parent section it expands to."""

    number: int
    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str
    heading_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A parsed generator output with its citations validated against the context.

    ``citations`` holds only passage numbers that exist; ``invalid_citations`` counts the rest.
    ``parse_error`` is set when the output was not the JSON contract (the answer is then empty
    and counted as unparseable, never repaired); ``error`` is set when the call itself failed.
    ``clarification`` is the question the generator asked back instead of answering (the
    contract's ``clarify`` field; None: it did not ask). An answer that asks is not a refusal.
    """

    text: str
    citations: tuple[int, ...] = ()
    invalid_citations: int = 0
    refused: bool = False
    parse_error: str | None = None
    error: str | None = None
    raw: str = ""
    clarification: str | None = None

    @property
    def asked(self) -> bool:
        """Whether the answer asks a clarifying question (instead of answering or refusing)."""
        return self.clarification is not None
