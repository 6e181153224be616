"""Parse speed per parser, side by side: seconds per page and per MB on one multi-page document
built at run time, cold (no cache: the bounded child process a sweep uses) and warm (a cache hit).

    python benchmarks/parse.py                      # 40 pages, every installed parser option
    python benchmarks/parse.py --pages 60 --repeat 5 --json parse-bench.json

The document: squad2-normans' paragraphs (``../shared/datasets/squad2-normans``, external data,
read in place, never copied) rendered by pymupdf to a ``--pages`` PDF whose pages alternate
between one paragraph under its heading with a ruled table (each of its sentences: number, words,
opening) and two paragraphs side by side in two columns, the text repeated until the pages are
filled; the same paragraphs, headings and tables as one HTML page and as one DOCX (python-docx).
Each parser option of ``conf/parser/`` (auto left out: it is pypdf / html2text / python_docx)
reads the files of its type:

* cold: :func:`rag_bench.parsing.files.parse_files` with an empty cache (what the first cell of a
  sweep pays: a forkserver child per file, bounds, no network), the median wall time of
  ``--repeat`` runs;
* in-process: ``parser.parse(bytes)`` alone (the parser's own cost, without the child);
* warm: ``parse_files`` again on the filled cache (what every later cell and sweep pays).

s/page divides by the PDF's page count for every format (the HTML and DOCX hold the same text and
have no pages); s/MB by the file's own size. ``located`` is the share of 40 sentences sampled
from the paragraphs that :func:`rag_bench.parsing.locate.locate` finds in the parse (exact or
normalised or fuzzy), a sanity check that the parse holds the text, not a quality measure (the
sweep's parse/evidence_located is: docs/parsing.md).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's rag_bench, not an installed copy
NORMANS = REPO.parent / "shared" / "datasets" / "squad2-normans"
SAMPLES = 40


def sections(root: Path) -> list[tuple[str, str]]:
    """``(heading, paragraph)`` of squad2-normans' Normans.md."""
    path = root / "docs" / "Normans.md"
    if not path.is_file():
        sys.exit(f"squad2-normans not found at {root} (external data, read in place) -- fix: --normans DIR")
    parts = re.split(r"^## (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    return [(parts[i].strip(), parts[i + 1].strip()) for i in range(1, len(parts), 2)]


def sentence_table(text: str) -> list[list[str]]:
    """A table of the paragraph's sentences: number, word count, the first six words."""
    sents = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()][:6]
    return [["Sentence", "Words", "Opening"]] + [[str(i + 1), str(len(s.split())), " ".join(s.split()[:6])]
                                                 for i, s in enumerate(sents)]


def _table_html(rows: list[list[str]]) -> str:
    cell = "<td style='border:1px solid black;padding:2px'>{}</td>"
    body = "".join("<tr>" + "".join(cell.format(html.escape(c)) for c in row) + "</tr>" for row in rows)
    return f"<table style='border-collapse:collapse'>{body}</table>"


def layout(secs: list[tuple[str, str]], pages: int) -> list[list[tuple[str, str, bool]]]:
    """Per page, its ``(heading, text, with_table)`` items: even pages one section with a table,
    odd pages two sections in columns; the sections repeat until ``pages`` are filled."""
    out, i = [], 0
    for p in range(pages):
        n = 1 if p % 2 == 0 else 2
        out.append([(*secs[(i + j) % len(secs)], n == 1) for j in range(n)])
        i += n
    return out


def write_pdf(path: Path, title: str, pages: list[list[tuple[str, str, bool]]]) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for p, items in enumerate(pages):
        page = doc.new_page()
        w, h = page.rect.width, page.rect.height
        if len(items) == 1:
            head, body, _ = items[0]
            top = f"<h1>{html.escape(title)}</h1>" if p == 0 else ""
            page.insert_htmlbox(pymupdf.Rect(36, 36, w - 36, h - 36), f"{top}<h2>{html.escape(head)}</h2>"
                                f"<p>{html.escape(body)}</p>{_table_html(sentence_table(body))}")
        else:
            for j, (head, body, _) in enumerate(items):
                rect = pymupdf.Rect(36 + j * (w / 2 - 18), 36, (j + 1) * (w / 2 - 18), h - 36)
                page.insert_htmlbox(rect, f"<h2>{html.escape(head)}</h2><p>{html.escape(body)}</p>")
    doc.save(path)
    doc.close()
    return path


def write_html(path: Path, title: str, pages: list[list[tuple[str, str, bool]]]) -> Path:
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for items in pages:
        for head, body, table in items:
            parts.append(f"<h2>{html.escape(head)}</h2><p>{html.escape(body)}</p>")
            if table:
                parts.append(_table_html(sentence_table(body)))
    path.write_text("<html><head><meta charset='utf-8'><title>Normans</title></head><body>" + "".join(parts)
                    + "</body></html>", encoding="utf-8")
    return path


def write_docx(path: Path, title: str, pages: list[list[tuple[str, str, bool]]]) -> Path:
    import docx

    d = docx.Document()
    d.add_heading(title, level=0)
    for items in pages:
        for head, body, table in items:
            d.add_heading(head, level=1)
            d.add_paragraph(body)
            if table:
                rows = sentence_table(body)
                t = d.add_table(rows=len(rows), cols=len(rows[0]))
                for r, row in enumerate(rows):
                    for c, value in enumerate(row):
                        t.cell(r, c).text = value
    d.save(str(path))
    return path


def parsers() -> tuple[list[Any], list[str]]:
    """Every parser option of conf/parser/ that builds here (auto left out), and why others do not."""
    from hydra import compose, initialize_config_dir

    from rag_bench.errors import RagBenchError
    from rag_bench.runner.config import CONF_DIR, build, register_configs

    register_configs()
    built, skipped = [], []
    for option in sorted(p.stem for p in (CONF_DIR / "parser").glob("*.yaml")):
        if option == "auto":
            continue
        try:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                cfg = compose("config", overrides=[f"parser={option}"])
            built.append(build(cfg.parser, "parser"))
        except RagBenchError as exc:
            skipped.append(f"{option}: {str(exc).splitlines()[0][:160]}")
    return built, skipped


def located(text: str, samples: list[str]) -> float:
    from rag_bench.parsing.locate import locate

    return sum(locate(text, s) is not None for s in samples) / len(samples)


def measure(parser: Any, path: Path, repeat: int, samples: list[str]) -> dict[str, Any]:
    from rag_bench.parsing.files import ParseCache, parse_files

    cold, outcome = [], None
    with tempfile.TemporaryDirectory(prefix="parse-bench-") as tmp:
        for r in range(repeat):
            store = ParseCache(Path(tmp) / f"cold{r}.sqlite")
            t0 = time.perf_counter()
            outcome = parse_files([path], parser, store)[0]
            cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        warm_outcome = parse_files([path], parser, store)[0]
        warm = time.perf_counter() - t0
        data = path.read_bytes()
        t0 = time.perf_counter()
        try:
            parser.parse(data, path.suffix)
            inproc: float | None = time.perf_counter() - t0
        except Exception:  # noqa: BLE001 -- the cold column already records the failure
            inproc = None
    assert outcome is not None
    text = outcome.parsed.text if outcome.parsed is not None else ""
    return {"parser": parser.name, "file": path.name, "bytes": path.stat().st_size, "ok": outcome.parsed is not None,
            "reason": outcome.reason, "cold_s": statistics.median(cold), "cold_runs": cold, "inproc_s": inproc,
            "warm_s": warm, "warm_cached": warm_outcome.cached, "chars": len(text),
            "pages_in_parse": len(outcome.parsed.pages) if outcome.parsed is not None else 0,
            "located": located(text, samples) if text else 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=40, help="pages of the PDF (default 40)")
    p.add_argument("--repeat", type=int, default=3, help="cold runs per parser; the median is shown (default 3)")
    p.add_argument("--normans", type=Path, default=NORMANS, help="the squad2-normans folder")
    p.add_argument("--json", type=Path, help="also write the figures as JSON")
    a = p.parse_args(argv)
    secs = sections(a.normans)
    pages = layout(secs, a.pages)
    shown = {head: body for items in pages for head, body, _ in items}  # the paragraphs the pages hold
    sents = [s for body in shown.values() for s in re.split(r"(?<=[.!?])\s+", body) if len(s) > 40]
    samples = sents[:: max(1, len(sents) // SAMPLES)][:SAMPLES]
    built, skipped = parsers()
    rows = []
    with tempfile.TemporaryDirectory(prefix="parse-bench-docs-") as tmp:
        files = {".pdf": write_pdf(Path(tmp) / "normans.pdf", "Normans", pages),
                 ".html": write_html(Path(tmp) / "normans.html", "Normans", pages),
                 ".docx": write_docx(Path(tmp) / "normans.docx", "Normans", pages)}
        for parser in built:
            for suffix, path in files.items():
                if suffix in parser.suffixes:
                    rows.append(measure(parser, path, a.repeat, samples))
                    print(f"  measured {parser.name} on {path.name}", file=sys.stderr)
    n = a.pages
    import platform

    import rag_bench

    print(f"\nparse speed: squad2-normans rendered to a {n}-page PDF (tables on every other page, two columns on "
          f"the others) and the same text as HTML and DOCX; cold = median of {a.repeat} runs with an empty cache "
          f"through the sweep's bounded child; python {platform.python_version()}, {platform.machine()}; "
          f"{rag_bench.__file__}\n")
    head = (f"{'parser':<12} {'file':<13} {'MB':>6} {'cold s':>7} {'s/page':>7} {'s/MB':>7} {'in-proc s':>9} "
            f"{'warm s':>7} {'chars':>7} {'located':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        mb = r["bytes"] / 2**20
        if not r["ok"]:
            print(f"{r['parser']:<12} {r['file']:<13} {mb:>6.2f} FAILED: {r['reason']}")
            continue
        inproc = f"{r['inproc_s']:.3f}" if r["inproc_s"] is not None else "-"
        print(f"{r['parser']:<12} {r['file']:<13} {mb:>6.2f} {r['cold_s']:>7.3f} {r['cold_s'] / n:>7.4f} "
              f"{r['cold_s'] / mb:>7.3f} {inproc:>9} {r['warm_s']:>7.4f} {r['chars']:>7} {r['located']:>7.0%}")
    for s in skipped:
        print(f"not measured: {s}")
    print(f"\ns/page: divided by the PDF's {n} pages for every file (HTML and DOCX hold the same text, without "
          "pages); warm: a cache hit (sha256 of the file + the parser key); located: share of "
          f"{len(samples)} sampled sentences locate() finds in the parse")
    if a.json:
        a.json.write_text(json.dumps({"pages": n, "repeat": a.repeat, "rows": rows, "skipped": skipped}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
