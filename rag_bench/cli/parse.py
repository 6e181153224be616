"""``rag-bench parse``: the parse of a dataset's documents (or of one file) as a person reads it.

The files go through the sweep's own path (:func:`rag_bench.parsing.files.parse_files`): a bounded
child process per file, no network, and the parse cache the sweeps share (a file a sweep parsed is
a cache hit here, and the other way round). Without ``--out`` each document's Markdown is printed
with ``[page N]`` lines where its pages start; with ``--out DIR`` each parse is written whole as
``DIR/<file>.md`` (the exact text chunkers and evidence offsets see) beside ``DIR/parse.json``
(page map, warnings, failures, cache hit or not, seconds: a cached parse's are those it cost when
it was computed; ``seconds_now`` what this run spent). A file the parser cannot read is a
recorded failure with its reason (exit 0); bad input exits 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from rag_bench.cli.common import config_message, fail, missing_option, say
from rag_bench.cli.table import Command
from rag_bench.errors import ConfigError, Problem, RagBenchError

EPILOG = """\
PATH is a dataset folder (its docs/ are read), a folder of documents, or one file. Only .pdf,
.html, .htm and .docx files are parsed: .md and .txt documents are read as they are by every
parser. A file of a type the chosen parser does not read goes to parser=auto's parser for its
type, as in a sweep (each document's line names the parser that read it).

examples:
  rag-bench parse datasets/policies parser=pdfplumber
  rag-bench parse datasets/policies/docs/handbook.pdf parser=pymupdf4llm
  rag-bench parse datasets/policies parser=trafilatura parser.favor_recall=false --out parses/
  ls conf/parser/        # the parser options (docs/parsing.md: choosing a parser)
"""


def _files(path: Path) -> tuple[Path, list[Path]]:
    """The folder doc ids are relative to, and the files to parse, sorted: those the loader parses
    (rag_bench.data.files.document_kind: any case of suffix, no junk file, no link)."""
    from rag_bench.data.files import PARSED_SUFFIXES, bad_name_fix, document_kind, undecodable_name

    kinds = ", ".join(PARSED_SUFFIXES)
    if not path.exists():
        raise ConfigError(str(Problem(_shown(path), 0, "PATH", "no such file or folder",
                                      f"give a dataset folder (with docs/), a folder of documents or one {kinds} file")))
    if path.is_file():
        kind = document_kind(PurePosixPath(path.name))
        if kind != "parsed":
            suffix = path.suffix.lower()
            why = ("is read as it is, by every parser (nothing to parse)" if kind == "native" else
                   "is not a document: a by-product of an editor or the operating system (lock, backup or hidden "
                   "file), which no dataset reads" if document_kind(PurePosixPath("x" + suffix)) else
                   f"is not a document type a parser reads ({suffix or 'no suffix'})")
            raise ConfigError(str(Problem(_shown(path), 0, "PATH", why, f"give a {kinds} file, or a folder of them")))
        root, files = path.parent, [path]
    else:
        root = path / "docs" if (path / "docs").is_dir() else path
        files = sorted(p for p in root.rglob("*") if document_kind(PurePosixPath(p.relative_to(root).as_posix()))
                       == "parsed" and p.is_file() and not p.is_symlink())
        if not files:
            raise ConfigError(str(Problem(_shown(root), 0, "PATH", f"no {kinds} file in this folder",
                                          "give a dataset folder whose docs/ hold PDF, HTML or Word files, or one "
                                          "such file")))
    bad = [undecodable_name(PurePosixPath(p.relative_to(root).as_posix())) for p in files]
    if any(bad):
        shown = next(b for b in bad if b)
        raise ConfigError(str(Problem(_shown(root / shown), 0, "PATH", f"{sum(map(bool, bad))} file name(s) not valid "
                                      "UTF-8 (a document id must be text)", bad_name_fix(shown))))
    return root, files


def _shown(path: Path) -> str:
    """A path as printed (bytes that are not UTF-8 as ``\\xNN``)."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def _parser(overrides: list[str]) -> Any:
    """The parser the overrides choose (``parser=NAME``, ``parser.KEY=VALUE``), built and checked."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.runner.config import CONF_DIR, build, check_group_overrides, register_configs

    for text in overrides:
        if text.lstrip("+~").split("=", 1)[0].split(".", 1)[0] != "parser" or "=" not in text:
            raise ConfigError(f"{text}: parse takes parser=NAME and parser.KEY=VALUE only -- fix: e.g. "
                              f"parser=pdfplumber parser.tables=false (the options are in {CONF_DIR}/parser/)")
    register_configs()
    check_group_overrides(overrides)
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(missing_option(exc) or f"configuration: {config_message(exc, overrides)}\n  -- fix: "
                          f"the parser options and their keys are in {CONF_DIR}/parser/") from exc
    from rag_bench.parsing.files import parser_key

    parser = build(cfg.parser, "parser")
    parser_key(parser)  # a setting the parse cache cannot key is refused before any file is read or written
    return parser


def _page_ranges(pages: tuple[int, ...], length: int) -> list[dict[str, int]]:
    return [{"page": i + 1, "start": start, "end": pages[i + 1] if i + 1 < len(pages) else length}
            for i, start in enumerate(pages)]


def _with_page_marks(text: str, pages: tuple[int, ...]) -> str:
    """The text with a ``[page N]`` line where each page starts (for printing only)."""
    if not pages:
        return text
    parts = []
    for r in _page_ranges(pages, len(text)):
        parts.append(f"[page {r['page']}]\n" + text[r["start"]:r["end"]].rstrip("\n"))
    return "\n\n".join(parts)


def run(argv: list[str]) -> int:
    """``rag-bench parse`` with the arguments ``argv``; its exit code."""
    from rag_bench.parsing.base import TIMEOUT_S
    from rag_bench.parsing.files import cache_store, parse_files, parser_for, parser_key

    p = argparse.ArgumentParser(
        prog="rag-bench parse", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Parse the PDF, HTML and Word documents of a dataset (or one file) with one parser option, "
        "exactly as a sweep's cells read them (bounded child process, no network, the shared parse cache), and "
        "print each document's Markdown, or write it with --out. Unreadable files are listed with the reason "
        "(exit 0); bad input (a missing path, an unknown parser) exits 2.")
    p.add_argument("path", metavar="PATH", help="dataset folder, folder of documents, or one .pdf/.html/.htm/.docx file")
    p.add_argument("overrides", nargs="*", metavar="parser=NAME",
                   help="the parser option (default auto: by file type) and its keys, e.g. parser=pdfplumber "
                   "parser.tables=false")
    p.add_argument("--out", metavar="DIR", help="write DIR/<file>.md per document (the exact parse) and "
                   "DIR/parse.json (page map, warnings, failures, cache hits, seconds) instead of printing the texts")
    p.add_argument("--no-cache", action="store_true", help="parse every file again; the cache is neither read "
                   "nor written")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="S",
                   help=f"seconds one file may take (default {TIMEOUT_S:g}; over it: a recorded failure)")
    a = p.parse_args(argv)
    if not (math.isfinite(a.timeout) and a.timeout > 0):  # nan and inf: no bound at all
        return fail(f"--timeout {a.timeout:g}: must be a positive number of seconds -- fix: e.g. --timeout {TIMEOUT_S:g}")
    try:
        root, files = _files(Path(a.path).expanduser())
        chosen = _parser(a.overrides)
        store = None if a.no_cache else cache_store()
        if store is not None:
            store.secret()  # a cache secret that cannot be trusted is refused before anything is written
        out = _out_dir(a.out, root) if a.out else None
    except RagBenchError as exc:
        return fail(exc)
    outcomes = parse_files(files, chosen, store, timeout=a.timeout)
    entries = []
    for path, o in zip(files, outcomes):
        rel = path.relative_to(root).as_posix()
        used = parser_for(chosen, path.suffix.lower())
        text = o.parsed.text if o.parsed is not None else ""
        pages = o.parsed.pages if o.parsed is not None else ()
        entry: dict[str, Any] = {
            "file": rel, "doc_id": str(Path(rel).with_suffix("").as_posix()), "parser": used.name,
            "parser_key": parser_key(used), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "bytes": path.stat().st_size, "ok": o.parsed is not None, "reason": o.reason, "cached": o.cached,
            "seconds": round(o.seconds, 4), "chars": len(text), "pages": _page_ranges(pages, len(text)),
            "warnings": list(o.parsed.warnings) if o.parsed is not None else []}
        if out is not None and o.parsed is not None:
            md = out / f"{rel}.md"
            md.parent.mkdir(parents=True, exist_ok=True)
            md.write_text(text, encoding="utf-8")
            entry["markdown"] = f"{rel}.md"
        entries.append(entry)
        _show(entry, text, pages, printed=out is None)
    failed = sum(not e["ok"] for e in entries)
    hits = sum(e["cached"] for e in entries)
    now = sum(o.seconds for o in outcomes if not o.cached)  # a cache hit records what its parse once cost
    summary = {"parser": chosen.name, "parser_key": parser_key(chosen), "path": _shown(root), "documents": len(entries),
               "parsed": len(entries) - failed, "failed": failed, "cache_hits": hits,
               "seconds": round(sum(o.seconds for o in outcomes), 4), "seconds_now": round(now, 4), "files": entries}
    if out is not None:
        (out / "parse.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    say(f"parser={chosen.name}: {len(entries)} document{'s' if len(entries) != 1 else ''}, "
        f"{len(entries) - failed} parsed ({hits} from the cache), {failed} failed; {now:.2f} s parsing now"
        + (f" ({summary['seconds'] - now:.2f} s recorded with the cached parses)" if hits else "")
        + (f"; written to {out}" if out is not None else ""), file=sys.stderr)
    return 0


def _out_dir(name: str, root: Path) -> Path:
    """``--out``: a folder (made when missing) outside the documents being parsed."""
    out = Path(name).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(str(Problem(str(out), 0, "--out", "is a file, not a folder", "pass a folder (made if missing)")))
    if out.resolve().is_relative_to(root.resolve()):
        raise ConfigError(str(Problem(str(out), 0, "--out", f"is inside the documents being parsed ({root}): the .md "
                                      "files written would become documents of the dataset",
                                      "pass a folder outside it, e.g. --out parses/")))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(str(Problem(str(out), 0, "--out", f"cannot create the folder ({exc.strerror or exc})",
                                      "pass a folder you can write"))) from exc
    return out


def _show(entry: dict[str, Any], text: str, pages: tuple[int, ...], printed: bool) -> None:
    """One document's header line (and, ``printed``, its warnings and text) on standard output."""
    where = f"{len(entry['pages'])} pages, " if entry["pages"] else ""
    how = "from the cache" if entry["cached"] else "parsed now"
    if not entry["ok"]:
        say(f"==> {entry['file']} [parser={entry['parser']}] FAILED: {entry['reason']}")
        return
    say(f"==> {entry['file']} [parser={entry['parser']}, {where}{entry['chars']} chars, {entry['seconds']:.2f} s, {how}]"
        + (f" -> {entry['markdown']}" if "markdown" in entry else ""))
    for w in entry["warnings"]:
        say(f"warning: {w}")
    if printed:
        say(_with_page_marks(text, pages).rstrip("\n") + "\n")


COMMAND = Command("parse", "PATH [parser=NAME] [--out DIR]",
                  "a dataset's (or one file's) PDF/HTML/Word documents as a parser reads them: printed, or written "
                  "as .md files with a JSON of page maps, warnings and failures", run)
