"""Render Markdown-ish sections (a title, headings, paragraphs, one table) to PDF, HTML and DOCX
at test time (no binary fixtures in git): pymupdf writes the PDFs, python-docx the DOCX."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

SHARED_NORMANS = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "squad2-normans"
TABLE = [["Fee", "Amount", "When"], ["Late return", "12 EUR", "per day"], ["Lost card", "5 EUR", "once"]]
OWN = {  # our own short text: heading -> paragraph
    "Returns": "Items may be returned within thirty days of delivery when they are unused and in their box.",
    "Refunds": "A refund is paid to the original card within five working days after the item arrives.",
}


def normans(n: int) -> tuple[str, dict[str, str], list[dict]]:
    """The first ``n`` paragraphs of squad2-normans (title, heading -> text) and their questions
    (answerable ones whose evidence is in those paragraphs); skips when the data is absent."""
    path = SHARED_NORMANS / "docs" / "Normans.md"
    if not path.is_file():
        pytest.skip(f"squad2-normans not found at {SHARED_NORMANS} (external data, never copied into the repo)")
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    sections = {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts), 2)}
    keep = dict(list(sections.items())[:n])
    questions = []
    for line in (SHARED_NORMANS / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q.get("answerable") and all(e.get("section") in keep for e in q["evidence"]):
            questions.append(q)
    return "Normans", keep, questions


def to_html(title: str, sections: dict[str, str], table: list[list[str]] | None = TABLE) -> str:
    """A page: h1 title, h2 per section, a paragraph each, the table after the first section."""
    out = [f"<h1>{html.escape(title)}</h1>"]
    for i, (head, body) in enumerate(sections.items()):
        out.append(f"<h2>{html.escape(head)}</h2><p>{html.escape(body)}</p>")
        if i == 0 and table:
            cell = "<td style='border:1px solid black;padding:2px'>{}</td>"  # ruled cells: lines a PDF table finder sees
            rows = "".join("<tr>" + "".join(cell.format(html.escape(c)) for c in row) + "</tr>" for row in table)
            out.append(f"<table style='border-collapse:collapse'>{rows}</table>")
    return "<html><head><meta charset='utf-8'><title>t</title></head><body>" + "".join(out) + "</body></html>"


def write_pdf(path: Path, title: str, sections: dict[str, str], table: list[list[str]] | None = TABLE,
              two_columns: bool = False) -> Path:
    """A PDF, one section per page (the first with the title and table); ``two_columns`` puts
    two sections side by side on each page."""
    import pymupdf

    doc = pymupdf.open()
    items = list(sections.items())
    per_page = 2 if two_columns else 1
    for p in range(0, len(items), per_page):
        page = doc.new_page()
        chunk = dict(items[p:p + per_page])
        if two_columns:
            w = page.rect.width
            for j, (head, body) in enumerate(chunk.items()):
                rect = pymupdf.Rect(36 + j * (w / 2 - 18), 36, (j + 1) * (w / 2 - 18), page.rect.height - 36)
                page.insert_htmlbox(rect, to_html(title, {head: body}, None).split("</h1>", 1)[1])
        else:
            body_html = to_html(title, chunk, table if p == 0 else None)
            if p:
                body_html = body_html.replace(f"<h1>{html.escape(title)}</h1>", "")
            page.insert_htmlbox(pymupdf.Rect(36, 36, page.rect.width - 36, page.rect.height - 36), body_html)
    doc.save(path)
    doc.close()
    return path


def write_docx(path: Path, title: str, sections: dict[str, str], table: list[list[str]] | None = TABLE) -> Path:
    """A DOCX with a Title, Heading 1 per section, paragraphs and the table."""
    import docx

    d = docx.Document()
    d.add_heading(title, level=0)
    for i, (head, body) in enumerate(sections.items()):
        d.add_heading(head, level=1)
        d.add_paragraph(body)
        if i == 0 and table:
            t = d.add_table(rows=len(table), cols=len(table[0]))
            for r, row in enumerate(table):
                for c, cell in enumerate(row):
                    t.cell(r, c).text = cell
    d.save(str(path))
    return path


def write_encrypted_pdf(path: Path, text: str) -> Path:
    """A PDF that needs a user password."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    doc.close()
    return path


def write_malformed_pdf(path: Path) -> Path:
    """Bytes that start like a PDF and are not one."""
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nthis is not a PDF body\n%%EOF\n")
    return path
