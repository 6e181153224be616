"""Every quote of a parsed document (.pdf, .html, .docx) looked for in the parse, as ``rag-bench validate``
does: a quote the chosen parse lost is looked for in the other parser options' texts of that document
(through the parse cache). Found in another parser's text: the parser's loss, which a sweep counts as
``parsing`` -- a note. In no parser's text: the user's typo -- a problem, with the file:line, the field and
the fix, before any sweep blames a parser for it.

The chosen parse locates a quote as the loader does (rag_bench.data.native: exact, normalised, bounded
fuzzy, inside its ``section`` when the parse has that heading); another parser's text by
:func:`rag_bench.parsing.locate.locate`. Sections and offsets of a parsed document are checked by the
loader itself (against the parse: an unknown heading or an offset past the text is a problem).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.domain import Dataset
from rag_bench.errors import Problem


@dataclass(frozen=True)
class LostQuote:
    """A quote the chosen parse lost: where it is written and which other parsers' texts hold it."""

    line: int
    field: str
    qid: str
    doc_id: str
    quote: str
    found_in: tuple[str, ...]  # the other parser options whose text of the document holds the quote
    looked_in: tuple[str, ...]  # every other parser option that read the document

    @property
    def typo(self) -> bool:
        """In no parser's text: the quote is not the document's (looked for in at least one other parse)."""
        return bool(self.looked_in) and not self.found_in

    def problem(self, chosen: str) -> Problem:
        """The typo as the loader's problems are said."""
        where = ", ".join((chosen, *self.looked_in))
        return Problem("questions.jsonl", self.line, f"{self.field}.quote",
                       f"quote not found in document {self.doc_id!r} in any parser's text ({where}): "
                       f"{self.quote[:60]!r}",
                       f"copy the exact sentence from the document (`rag-bench parse DIR parser={chosen}` prints the "
                       "text the sweep reads)")

    def note(self, chosen: str) -> str:
        """The parser's loss, in one line (or, with no other parser to read the document, that it cannot tell)."""
        if not self.looked_in:
            return (f"questions.jsonl:{self.line}: [{self.field}.quote] not in parser={chosen}'s text of "
                    f"{self.doc_id!r}, and no other parser is installed to tell a typo from the parser's loss -- "
                    "to tell: pip install 'rag-bench-harness[parse]'")
        return (f"questions.jsonl:{self.line}: [{self.field}.quote] not in parser={chosen}'s text of "
                f"{self.doc_id!r} but in {', '.join(self.found_in)}'s: the parser's loss (a sweep counts "
                f"question {self.qid} as `parsing`), not a typo -- to keep it: parser={self.found_in[0]}")


def lost_quotes(ds: Dataset, parsers: Callable[[str], list[Any]]) -> list[LostQuote]:
    """The quotes of ``ds``'s parsed documents its parse lost (questions.jsonl order), each looked for in
    the texts of ``parsers(suffix)`` (the other parser options for the file type, built; each one's text
    from the parse cache). Empty when the dataset has no parse or lost nothing."""
    from rag_bench.data.native import _locate_parsed

    if ds.parse is None or not ds.parse.lost:
        return []
    lost_ids = set(ds.parse.lost)
    docs = ds.documents
    texts: dict[tuple[str, str], str | None] = {}
    out: list[LostQuote] = []
    path = Path(ds.root) / "questions.jsonl"
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        obj = json.loads(raw)
        qid = str(obj.get("id"))
        if qid not in lost_ids:
            continue
        for i, loc in enumerate(obj.get("evidence") or ()):
            doc = docs.get(str(loc.get("doc_id")))
            quote = loc.get("quote")
            if doc is None or not doc.path or not isinstance(quote, str) or not quote.strip():
                continue
            if Path(doc.path).suffix.lower() not in (".pdf", ".html", ".htm", ".docx"):
                continue
            if _locate_parsed(doc, quote, loc.get("section")) is not None:
                continue
            found, looked = [], []
            for parser in parsers(Path(doc.path).suffix.lower()):
                key = (doc.doc_id, parser.name)
                if key not in texts:
                    texts[key] = _text(Path(ds.root) / doc.path, parser)
                if texts[key] is None:
                    continue
                looked.append(parser.name)
                if _holds(texts[key] or "", quote):
                    found.append(parser.name)
            out.append(LostQuote(lineno, f"evidence[{i}]", qid, doc.doc_id, quote, tuple(found), tuple(looked)))
    return out


def _text(path: Path, parser: Any) -> str | None:
    from rag_bench.parsing.files import cache_store, parse_files

    (outcome,) = parse_files([path], parser, cache_store())
    return None if outcome.parsed is None else outcome.parsed.text


def _holds(text: str, quote: str) -> bool:
    from rag_bench.parsing.locate import locate

    return locate(text, quote) is not None
