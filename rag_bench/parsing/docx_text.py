"""``parser=python_docx``: Word (.docx) by python-docx: paragraphs in body order, ``Heading N``
and ``Title`` styles as ``#`` headings, list styles as list items, tables as Markdown tables.
Macros and embedded objects are never run (a .docx cannot hold macros; embedded parts are not read).
Runs a person does not see -- hidden (``w:vanish``, directly or by the character style), white
(``FFFFFF``) or below 2pt -- are dropped and counted in a ``hidden text`` warning
(rag_bench.parsing.hidden)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, markdown_table, package_version, require
from rag_bench.parsing.hidden import MIN_SIZE, RULES, warning

Counts = dict[str, int]


def _run_hidden(run: Any) -> str:
    """Why a person does not see ``run`` ('' when they do): vanish, white or tiny."""
    font = run.font
    style_font = getattr(getattr(run, "style", None), "font", None)
    if font.hidden or (font.hidden is None and style_font is not None and style_font.hidden):
        return "vanish"
    rgb = font.color.rgb if font.color is not None and font.color.type is not None else None
    if rgb is not None and str(rgb).upper() == "FFFFFF":
        return "white"
    if font.size is not None and font.size.pt < MIN_SIZE:
        return "tiny"
    return ""


def _visible_text(p: Any, counts: Counts) -> str:
    """A paragraph's text without its hidden runs (python-docx's ``text`` when none is hidden)."""
    parts: list[str] = []
    hid = False
    for item in p.iter_inner_content():
        for run in (item.runs if hasattr(item, "runs") else [item]):
            why = _run_hidden(run)
            if why:
                counts[why] += sum(not c.isspace() for c in run.text)
                hid = True
            else:
                parts.append(run.text)
    return "".join(parts) if hid else str(p.text)

MAX_UNPACKED = 256 << 20  # a zip bomb is refused before python-docx unpacks it


def _paragraph(p: Any, counts: Counts) -> str:
    text = " ".join(_visible_text(p, counts).split())
    if not text:
        return ""
    style = str(getattr(p.style, "name", "") or "")
    if style == "Title":
        return "# " + text
    if style.startswith("Heading"):
        level = style.removeprefix("Heading").strip()
        n = int(level) if level.isdigit() else 1
        return "#" * min(n + 1, 6) + " " + text
    if style.startswith("List Number"):
        return "1. " + text
    if style.startswith("List"):
        return "- " + text
    return text



def check_unpacked(data: bytes) -> None:
    """Refuse a DOCX (a zip) that unpacks past :data:`MAX_UNPACKED` before any of it is read
    (a zip bomb); a file that is not a zip raises ``zipfile.BadZipFile``."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        unpacked = sum(i.file_size for i in z.infolist())
    if unpacked > MAX_UNPACKED:
        raise ParseFailure(f"unpacks to {unpacked >> 20} MiB (limit {MAX_UNPACKED >> 20} MiB)")

class DocxParser:
    """DOCX paragraphs, headings, lists and tables, in body order."""

    suffixes: tuple[str, ...] = (".docx",)

    def __init__(self, name: str = "python_docx") -> None:
        self.name = name
        require("docx", "python-docx", name)

    def version(self) -> str:
        """python-docx's version."""
        return f"{package_version('python-docx')}+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The document's Markdown."""
        docx = require("docx", "python-docx", self.name)
        try:
            check_unpacked(data)
            document = docx.Document(io.BytesIO(data))
            blocks: list[str] = []
            counts: Counts = {"vanish": 0, "white": 0, "tiny": 0}
            for item in document.iter_inner_content():
                if hasattr(item, "rows"):
                    blocks.append(markdown_table([["\n".join(_visible_text(p, counts) for p in c.paragraphs)
                                                   for c in row.cells] for row in item.rows]))
                else:
                    blocks.append(_paragraph(item, counts))
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable DOCX ({type(exc).__name__}: {str(exc)[:200]})") from exc
        text = _join(blocks)
        if not text.strip():
            raise ParseFailure("no text in the DOCX")
        return Parsed(text=text, warnings=tuple(warning(counts, dropped=True)))


def _join(blocks: list[str]) -> str:
    """Blocks separated by blank lines, consecutive list items kept together."""
    out: list[str] = []
    for b in blocks:
        if not b:
            continue
        is_item = b.startswith(("- ", "1. "))
        if out and is_item and out[-1].split("\n")[-1].startswith(("- ", "1. ")):
            out[-1] += "\n" + b
        else:
            out.append(b)
    return "\n\n".join(out) + "\n"
