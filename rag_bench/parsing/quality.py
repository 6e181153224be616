"""Two signs a parse is not the document's text, measured on the parse alone (pure):

- **glued** words: a parser that drops the spaces between words (pdfplumber on some PDFs) returns
  ``Itemsmaybereturnedwithinthirtydays``; quotes are still located by fuzzy matching, so the located
  share looks fine while BM25 and the embedder see one token per line. :func:`glued_share` is the share
  of letters in runs of :data:`GLUED_RUN` or more letters (English words that long are rare); a document
  at :data:`GLUED_MIN` or more is glued.
- an **almost empty** parse: a scan with a thin text layer (page numbers, a header) parses without error
  into a few characters a page. :func:`chars_per_page` below :data:`SPARSE_CHARS_PER_PAGE` is almost empty.
"""

from __future__ import annotations

import re

GLUED_RUN = 20
GLUED_MIN = 0.2
SPARSE_CHARS_PER_PAGE = 40
_LETTERS = re.compile(r"[^\W\d_]+")


def glued_share(text: str) -> float:
    """Share of the letters of ``text`` in runs of :data:`GLUED_RUN`+ letters (0.0 for no letters).

    >>> glued_share("Items may be returned within thirty days.")
    0.0
    >>> glued_share("Itemsmaybereturnedwithinthirtydays of delivery") > 0.7
    True
    """
    runs = [len(m.group()) for m in _LETTERS.finditer(text)]
    total = sum(runs)
    return sum(r for r in runs if r >= GLUED_RUN) / total if total else 0.0


def chars_per_page(text: str, pages: tuple[int, ...]) -> float | None:
    """Non-space characters per page (None without a page map: HTML, Word).

    >>> chars_per_page("12\\n\\n13", (0, 4))
    2.0
    """
    if not pages:
        return None
    return sum(not c.isspace() for c in text) / len(pages)
