"""What each parser option does to the measures: one sweep per file type over squad2-normans
rendered at run time, through the real CLI, the parse and retrieval figures per parser side by side.

    python benchmarks/parse_quality.py /tmp/parse-quality          # builds, sweeps, prints the table
    python benchmarks/parse_quality.py /tmp/parse-quality --json q.json

The renderings (squad2-normans, ``../shared/datasets/squad2-normans``: read in place, never copied;
its answerable questions, each quote's ``doc_id`` pointed at the file holding its paragraph, and two
questions tagged ``table`` on the fee table):

* ``pdf/``: paragraphs 0-19 one per page with a ruled 3x3 table on page 1 (``normans.pdf``),
  paragraphs 20-38 two per page side by side (``normans_columns.pdf``), a malformed and an
  encrypted PDF; swept ``parser=pypdf,pdfplumber,pymupdf4llm,markitdown``;
* ``html/``: all paragraphs as one page (h1, h2 per paragraph, the table), swept
  ``parser=html2text,trafilatura,markitdown``;
* ``docx/``: the same as a Word file (Title, Heading 1 per paragraph, the table) and a file that is
  not a zip, swept ``parser=python_docx,mammoth,markitdown``.

Every sweep: bm25, the section chunker, the extractive stand-in, tracking none; the parse cache
is a fresh folder under OUT (cold parses). Parsers not installed here are left out of their sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's rag_bench and the test suite's writers
NORMANS = REPO.parent / "shared" / "datasets" / "squad2-normans"
SWEEPS = {"pdf": ("pypdf", "pdfplumber", "pymupdf4llm", "markitdown"),
          "html": ("html2text", "trafilatura", "markitdown"), "docx": ("python_docx", "mammoth", "markitdown")}
SPLIT_AT = 20  # paragraphs before it one per page; the rest two per page in columns
COLUMNS = ("evidence_located", "evidence_exact", "evidence_normalised", "evidence_fuzzy", "table_rows_intact",
           "headings_found", "failed_documents", "questions_lost", "seconds")
# Two questions on the table every rendering holds (tests/parsing/render.py TABLE), tagged ``table``
# (what parse/table_rows_intact reads): one quotes the whole row, one the two cells of the answer.
TABLE_QUESTIONS = [
    {"id": "table-late", "question": "What is the fee for a late return?", "answerable": True, "tags": ["table"],
     "evidence": [{"quote": "Late return 12 EUR per day"}], "answers": ["12 EUR per day"]},
    {"id": "table-card", "question": "How much is charged for a lost card?", "answerable": True, "tags": ["table"],
     "evidence": [{"quote": "5 EUR once"}], "answers": ["5 EUR once"]},
]


def paragraphs(root: Path) -> tuple[dict[str, str], list[dict]]:
    path = root / "docs" / "Normans.md"
    if not path.is_file():
        sys.exit(f"squad2-normans not found at {root} (external data, read in place) -- fix: --normans DIR")
    parts = re.split(r"^## (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    sections = {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts), 2)}
    questions = [q for q in map(json.loads, (root / "questions.jsonl").read_text(encoding="utf-8").splitlines())
                 if q.get("answerable") and all(e.get("section") in sections for e in q["evidence"])]
    return sections, questions


def build(out: Path, sections: dict[str, str], questions: list[dict]) -> dict[str, Path]:
    from tests.parsing.render import to_html, write_docx, write_encrypted_pdf, write_malformed_pdf, write_pdf

    items = list(sections.items())
    first = dict(items[:SPLIT_AT])
    sets = {kind: out / "data" / kind for kind in SWEEPS}
    for root in sets.values():
        (root / "docs").mkdir(parents=True, exist_ok=True)
    write_pdf(sets["pdf"] / "docs" / "normans.pdf", "Normans", first)
    write_pdf(sets["pdf"] / "docs" / "normans_columns.pdf", "Normans", dict(items[SPLIT_AT:]), table=None,
              two_columns=True)
    write_encrypted_pdf(sets["pdf"] / "docs" / "locked.pdf", "The Normans' locked chronicle.")
    write_malformed_pdf(sets["pdf"] / "docs" / "broken.pdf")
    (sets["html"] / "docs" / "normans.html").write_text(to_html("Normans", sections), encoding="utf-8")
    write_docx(sets["docx"] / "docs" / "normans.docx", "Normans", sections)
    (sets["docx"] / "docs" / "broken.docx").write_bytes(b"PK\x03\x04 this is not a zip archive")
    for kind, root in sets.items():
        with open(root / "questions.jsonl", "w", encoding="utf-8") as f:
            for q in [*questions, *TABLE_QUESTIONS]:
                if "section" not in q["evidence"][0]:  # a table question: the table is in the first file
                    doc = "normans"
                elif kind == "pdf":
                    doc = "normans" if q["evidence"][0]["section"] in first else "normans_columns"
                else:
                    doc = "normans"
                f.write(json.dumps({**q, "evidence": [{**e, "doc_id": doc} for e in q["evidence"]]}) + "\n")
    return sets


def installed(option: str) -> bool:
    from hydra import compose, initialize_config_dir

    from rag_bench.errors import RagBenchError
    from rag_bench.runner.config import CONF_DIR, build, register_configs

    register_configs()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            build(compose("config", overrides=[f"parser={option}"]).parser, "parser")
    except RagBenchError:
        return False
    return True


def sweep(out: Path, kind: str, data: Path, parsers: list[str]) -> list[dict]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(out / "cache"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"parser={','.join(parsers)}",
                           f"dataset.path={data}", "tracking=none", f"output.root={out / 'experiments'}",
                           f"experiment.name={kind}"], cwd=out, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the {kind} sweep failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    rows = []
    for path in sorted((out / "experiments" / kind).glob("*/metrics.json")):
        m = json.loads(path.read_text())
        cfg = (path.parent / "config.yaml").read_text()
        name = next(p for p in parsers if f"name: {p}\n" in cfg)
        rows.append({"kind": kind, "parser": name, **{c: m["parse"].get(c) for c in COLUMNS},
                     "documents": m["parse"].get("documents"), "questions": m["counts"]["questions"],
                     "ndcg@10": m["retrieval"]["ndcg@10"], "hit@5": m["retrieval"]["hit@5"],
                     "parsing": (m.get("failures") or {}).get("parsing", 0),
                     "failures": sorted(m.get("parse_failures", {}))})
    return sorted(rows, key=lambda r: parsers.index(r["parser"]))


def _num(v: object) -> str:
    return "-" if v is None else f"{float(v):.2f}"  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="a folder for the renderings, the cells and the parse cache")
    p.add_argument("--normans", type=Path, default=NORMANS, help="the squad2-normans folder")
    p.add_argument("--json", type=Path, help="also write the rows as JSON")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    sections, questions = paragraphs(a.normans)
    sets = build(a.out, sections, questions)
    rows = []
    for kind, options in SWEEPS.items():
        here = [o for o in options if installed(o)]
        for missing in sorted(set(options) - set(here)):
            print(f"not measured: parser={missing} (its package is not installed)", file=sys.stderr)
        rows += sweep(a.out, kind, sets[kind], here)
        print(f"  swept {kind}: {', '.join(here)}", file=sys.stderr)
    print(f"\n{len(sections)} squad2-normans paragraphs, {len(questions)} answerable questions; bm25, section chunker, "
          "extractive stand-in; cold parse cache\n")
    head = (f"{'file':<5} {'parser':<12} {'located':>7} {'exact':>6} {'normal.':>7} {'fuzzy':>6} {'rows':>5} "
            f"{'heads':>5} {'failed':>6} {'lost':>5} {'parsing':>7} {'parse s':>7} {'ndcg@10':>7} {'hit@5':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['kind']:<5} {r['parser']:<12} {r['evidence_located']:>7.3f} {r['evidence_exact']:>6.3f} "
              f"{r['evidence_normalised']:>7.3f} {r['evidence_fuzzy']:>6.3f} {_num(r['table_rows_intact']):>5} "
              f"{_num(r['headings_found']):>5} {r['failed_documents']:>6} {r['questions_lost']:>5} {r['parsing']:>7} "
              f"{r['seconds']:>7.2f} {r['ndcg@10']:>7.3f} {r['hit@5']:>6.3f}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
