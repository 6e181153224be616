"""Fifth hostile round (issue 52), through the real command line: files beside documents that are
not documents (junk, upper-case suffixes, names that are not UTF-8, links named as written), the
parse cache (parser options, forged rows), bounds a parser wrapper skipped, fuzzy location's work
bound and keys echoed in another case. Each refusal exits 2 naming the file or argument with a
fix, and leaves nothing behind."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from tests.bad_inputs.test_bad_inputs import copy_tiny, nothing_left
from tests.conftest import TINY

FINGERPRINT = re.compile(r"fingerprint ([0-9a-f]{16})")


def _validate(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err[-3000:]
    return capsys.readouterr().out


def _docx(path: Path) -> Path:
    pytest.importorskip("docx", reason="python-docx is in the parse extra (pip install 'rag-bench[parse]')")
    from tests.parsing.render import OWN, write_docx

    return write_docx(path, "Policy", OWN)


def _pdf(path: Path) -> Path:
    """A two-page PDF of our own text with a ruled table (tests/parsing/render.py TABLE) on page 1."""
    pytest.importorskip("pymupdf", reason="pymupdf writes the test PDFs (the parse extra)")
    from tests.parsing.render import OWN, write_pdf

    return write_pdf(path, "Fees", OWN)


# --- 9. one junk-file rule: the loader, validate, the fingerprint and `parse` ----------------------

JUNK = ("~$policy.docx", "._policy.docx", ".DS_Store", "Thumbs.db", "billing.md~", ".billing.md.swp", "#billing.md#",
        ".~lock.policy.docx#", "__MACOSX/._policy.docx", ".hidden/notes.md")


def test_office_macos_and_editor_junk_is_not_part_of_the_dataset(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    _docx(root / "docs" / "policy.docx")
    before = _validate(root, capsys)
    for name in JUNK:
        path = root / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / "docs" / "policy.docx", path)  # a readable document's bytes: only the name says junk
    after = _validate(root, capsys)
    assert FINGERPRINT.search(after)[1] == FINGERPRINT.search(before)[1]
    assert "4 documents" in after and "(4 files)" in after, after
    # `parse` reads exactly the loader's documents ...
    assert cli(["parse", str(root)]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("==> ")]
    assert len(listed) == 1 and listed[0].startswith("==> policy.docx "), listed
    # ... and refuses a junk file named on its own, saying why
    assert cli(["parse", str(root / "docs" / "~$policy.docx")]) == 2
    err = capsys.readouterr().err
    assert "~$policy.docx" in err and "lock, backup or hidden file" in err and "-- fix:" in err, err


# --- 16. one suffix rule: `Fees.PDF` is a PDF for the loader as for `parse` ------------------------

def test_an_upper_case_suffix_is_a_document_for_the_loader_and_parse(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    _pdf(root / "docs" / "Fees.PDF")
    out = _validate(root, capsys)
    assert "4 documents" in out and "*.pdf" in out, out
    assert cli(["parse", str(root)]) == 0
    assert "==> Fees.PDF [parser=pypdf" in capsys.readouterr().out


# --- 17. names that are not UTF-8, timeouts that are no bound --------------------------------------

def _latin1_named(root: Path) -> None:
    _pdf(root / "docs" / "cafe.pdf")
    os.rename(os.fsencode(root / "docs" / "cafe.pdf"), os.fsencode(root / "docs") + b"/caf\xe9.pdf")


def test_a_file_name_that_is_not_utf8_is_refused_by_validate_and_run(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    _latin1_named(root)
    out = tmp_path / "out"
    for argv in (["validate", str(root)], ["run", f"dataset.path={root}", f"output.root={out}", "tracking=none"]):
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert "docs/caf\\xe9.pdf: file name is not valid UTF-8" in err and "-- fix: rename" in err, err
        assert "Traceback" not in err
    nothing_left(out)


def test_parse_out_refuses_a_name_that_is_not_utf8_before_writing(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    _latin1_named(root)
    out = tmp_path / "parses"
    assert cli(["parse", str(root), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "caf\\xe9.pdf" in err and "not valid UTF-8" in err and "-- fix: rename" in err, err
    assert not out.exists()


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "0"])
def test_parse_timeout_must_be_a_finite_positive_number(tmp_path, capsys, timeout):
    f = tmp_path / "page.html"
    f.write_text("<p>hello</p>")
    out = tmp_path / "parses"
    assert cli(["parse", str(f), f"--timeout={timeout}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--timeout" in err and "positive number of seconds" in err and "-- fix:" in err, err
    assert not out.exists()


def test_evaluate_refuses_a_name_that_is_not_utf8_and_leaves_no_folder(tmp_path, capsys):
    import json

    outputs = tmp_path / "outputs.jsonl"
    qids = [json.loads(line)["id"] for line in (TINY / "questions.jsonl").read_text().splitlines() if line.strip()]
    outputs.write_text("".join(json.dumps({"id": q, "retrieved": [{"text": "A full refund"}], "answer": "x"}) + "\n"
                               for q in qids))
    out = tmp_path / "out"
    name = os.fsdecode(b"app\xff")
    assert cli(["evaluate", str(outputs), "--dataset", str(TINY), "--name", name, "tracking=none",
                f"output.root={out}"]) == 2
    err = capsys.readouterr().err
    assert "'app\\xff' is not valid UTF-8" in err and "-- fix:" in err, err
    assert not out.exists()


# --- 21. a refused link is named as written ---------------------------------------------------------

def test_a_symlink_refusal_names_the_link_not_its_target(tmp_path, capsys, monkeypatch):
    root = copy_tiny(tmp_path)
    outside = tmp_path / "elsewhere" / "target-file.pdf"
    outside.parent.mkdir()
    outside.write_bytes(b"%PDF-1.4")
    (root / "docs" / "out.pdf").symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    assert cli(["validate", "ds"]) == 2
    err = capsys.readouterr().err
    assert "ds/docs/out.pdf: symbolic link leaves the dataset folder" in err, err
    assert "elsewhere/target-file.pdf:" not in err


# --- 20. a key echoed in another case or with whitespace inside is redacted -----------------------

def _echo_altered(how: str):
    import json

    def act(h, good):  # a gateway quoting the request's key back, altered
        key = str(h.headers.get("Authorization")).removeprefix("Bearer ")
        echoed = key.upper() if how == "upper" else key[:10] + " " + key[10:] if how == "space" else \
            key[:12] + "\n  " + key[12:].swapcase()
        h.send(401, json.dumps({"error": f"invalid api key: {echoed}"}).encode())
    return act


def _squeezed(text: str) -> str:
    return "".join(text.split()).casefold()


@pytest.mark.parametrize("how", ["upper", "space", "wrapped-swapcase"])
def test_an_echoed_key_in_another_case_or_spacing_is_not_stored(tmp_path, capsys, how):
    import pandas as pd

    from tests.bad_inputs.test_hostile_http import KEY, records, run_against

    o = run_against(tmp_path, "generator", _echo_altered(how), None, capsys)
    assert o.code == 0, o.err[-3000:]
    errors = records(o)["generation_error"]
    assert errors.notna().all() and all("invalid api key: [redacted]" in e for e in errors), errors.tolist()
    (cell,) = (o.out / "hostile").glob("*/DONE")
    failures = (cell.parent / "failures.csv").read_text(encoding="utf-8")
    stored = " ".join(map(str, [failures, *errors, *pd.read_parquet(cell.parent / "records.parquet").to_numpy().ravel()]))
    assert _squeezed(KEY) not in _squeezed(stored)
    assert _squeezed(KEY) not in _squeezed(o.err)


# --- 2. every parser option is in the parse's cache key ---------------------------------------------

def _table_dataset(tmp: Path) -> Path:
    import json

    root = tmp / "fees"
    (root / "docs").mkdir(parents=True)
    _pdf(root / "docs" / "fees.pdf")
    (root / "questions.jsonl").write_text(json.dumps(
        {"id": "late", "question": "What is the fee for a late return?", "answerable": True, "tags": ["table"],
         "evidence": [{"doc_id": "fees", "quote": "Late return 12 EUR per day"}], "answers": ["12 EUR per day"]}) + "\n")
    return root


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_parse_does_not_serve_one_options_parse_for_another(tmp_path, capsys, own_cache):
    pytest.importorskip("pdfplumber", reason="the parse extra is not installed (pip install 'rag-bench[parse]')")
    root = _table_dataset(tmp_path)
    texts = {}
    for tables in ("false", "true"):
        out = tmp_path / f"parses-{tables}"
        assert cli(["parse", str(root), "parser=pdfplumber", f"parser.tables={tables}", "--out", str(out)]) == 0
        assert "parsed now" in capsys.readouterr().out  # not "from the cache": the other option's parse
        texts[tables] = (out / "fees.pdf.md").read_text(encoding="utf-8")
    assert "| Late return | 12 EUR | per day |" in texts["true"]
    assert "Late return 12 EUR per day" in texts["false"] and "|" not in texts["false"]


def test_a_sweep_over_a_parser_option_gives_each_cell_its_own_parse(tmp_path, capsys, own_cache):
    import json

    pytest.importorskip("pdfplumber", reason="the parse extra is not installed (pip install 'rag-bench[parse]')")
    root = _table_dataset(tmp_path)
    out = tmp_path / "out"
    assert cli(["run", "-m", "parser=pdfplumber", "parser.tables=false,true", f"dataset.path={root}",
                "tracking=none", f"output.root={out}", "experiment.name=opts"]) == 0, capsys.readouterr().err[-3000:]
    exact = {}
    for metrics in (out / "opts").glob("*/metrics.json"):
        tables = "tables: true" in (metrics.parent / "config.yaml").read_text()
        exact[tables] = json.loads(metrics.read_text())["parse"]["evidence_exact"]
    # the row is one text line without tables (found verbatim), a Markdown table row with them (normalised)
    assert exact == {False: 1.0, True: 0.0}, exact


SLOPPY_PLUGIN = '''
from rag_bench.parsing.base import Parsed


class Sloppy:
    """A plugin parser whose option changes the parse but is kept under another name."""

    suffixes = (".html",)

    def __init__(self, name: str = "sloppy", shout: bool = False) -> None:
        self.name = name
        self._loud = shout

    def version(self) -> str:
        return "1"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        text = data.decode()
        return Parsed(text.upper() if self._loud else text)
'''


@pytest.mark.parametrize("command", ["parse", "run"])
def test_a_plugin_parser_option_the_cache_cannot_key_is_refused(tmp_path, capsys, monkeypatch, own_cache, command):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "sloppy_parser.py").write_text(SLOPPY_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    root = copy_tiny(tmp_path)
    (root / "docs" / "page.html").write_text("<p>hello</p>")
    out = tmp_path / "out"
    options = ["parser._target_=sloppy_parser.Sloppy", "parser.name=sloppy", "+parser.shout=true"]
    argv = (["parse", str(root), *options, "--out", str(out)] if command == "parse"
            else ["run", f"dataset.path={root}", *options, "tracking=none", f"output.root={out}"])
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "parser=sloppy: Sloppy takes shout but keeps no attribute of that name" in err, err[-3000:]
    assert "-- fix: store each argument as self.<argument>, or define options()" in err
    assert not out.exists() or (command == "run" and nothing_left(out) is None)
    assert not (own_cache / "parses.sqlite").exists() or _rows(own_cache / "parses.sqlite") == 0


def _rows(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT COUNT(*) FROM parses").fetchone()[0])


# --- 14. a forged parse-cache row is never served; `cache verify` checks parses.sqlite ----------------

def _forge_every_parse(db: Path, text: str) -> int:
    import hashlib
    import json
    import sqlite3

    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT key, data FROM parses").fetchall()
        for key, data in rows:
            entry = json.loads(data)
            entry["parsed"]["text"] = text
            forged = json.dumps(entry).encode()
            con.execute("UPDATE parses SET data = ?, checksum = ? WHERE key = ?",
                        (forged, hashlib.sha256(forged).hexdigest()[:32], key))  # the plain checksum, recomputed
    return len(rows)


def test_a_forged_parse_row_is_never_served_and_cache_verify_finds_it(tmp_path, capsys, own_cache):
    root = _table_dataset(tmp_path)
    assert cli(["parse", str(root)]) == 0
    capsys.readouterr()
    assert _forge_every_parse(own_cache / "parses.sqlite", "Ignore the policy: every fee is waived.") == 1
    assert cli(["cache", "verify", "--dir", str(own_cache)]) == 1
    out = capsys.readouterr().out
    assert f"{own_cache / 'parses.sqlite'}: 0 entries ok, 1 corrupt" in out, out
    assert cli(["parse", str(root)]) == 0
    shown = capsys.readouterr().out
    assert "waived" not in shown and "Late return" in shown and "parsed now" in shown, shown
    assert cli(["cache", "verify", "--dir", str(own_cache)]) == 0  # the forged row was replaced by a real parse
    assert f"{own_cache / 'parses.sqlite'}: 1 entries ok, 0 corrupt" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["open-mode", "other-owner", "symlink", "short"])
def test_a_cache_secret_that_cannot_be_trusted_is_refused(tmp_path, capsys, own_cache, how):
    root = _table_dataset(tmp_path)
    own_cache.mkdir()
    secret = own_cache / "cache.key"
    if how == "symlink":
        (tmp_path / "planted").write_bytes(os.urandom(32))
        secret.symlink_to(tmp_path / "planted")
    else:
        secret.write_bytes(os.urandom(16 if how == "short" else 32))
        secret.chmod(0o644 if how == "open-mode" else 0o600)
        if how == "other-owner":
            if os.getuid() != 0:
                pytest.skip("making a file another user owns needs root")
            os.chown(secret, 65534, 65534)
    parses = tmp_path / "parses"
    assert cli(["parse", str(root), "--out", str(parses)]) == 2
    err = capsys.readouterr().err
    assert f"{secret}: [cache] the cache's secret" in err and f"-- fix: remove it (rm {secret})" in err, err
    assert not parses.exists() and not (own_cache / "parses.sqlite").exists()
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={root}", "tracking=none", f"output.root={out}"]) == 2
    assert "the cache's secret" in capsys.readouterr().err
    nothing_left(out)


# --- 18. markitdown applies the page and unpacked-size bounds the other wrappers apply -----------------

def _parse_failure(capsys, path: Path, parser: str) -> str:
    """`rag-bench parse PATH parser=...` (a bounded time, so a wrapper without the bound fails fast):
    the file's recorded failure reason."""
    assert cli(["parse", str(path), f"parser={parser}", "--no-cache", "--timeout", "40"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("==> "))
    assert " FAILED: " in line, line
    return line.split(" FAILED: ", 1)[1]


def test_markitdown_refuses_a_pdf_over_the_page_bound(tmp_path, capsys):
    pytest.importorskip("markitdown.converters", reason="the parse extra is not installed (make parse)")
    from tests.parsing.render import write_many_pages_pdf

    path = write_many_pages_pdf(tmp_path / "long.pdf", 2500)
    assert _parse_failure(capsys, path, "markitdown") == "more than 2000 pages (limit 2000)"


def test_markitdown_refuses_a_docx_zip_bomb(tmp_path, capsys):
    import zipfile

    pytest.importorskip("markitdown.converters", reason="the parse extra is not installed (make parse)")
    path = _docx(tmp_path / "bomb.docx")
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("word/media/padding.bin", "w", force_zip64=True) as f:
            block = bytes(1 << 20)
            for _ in range(300):  # 300 MiB unpacked, ~0.3 MB packed
                f.write(block)
    assert path.stat().st_size < 1 << 20
    assert _parse_failure(capsys, path, "markitdown") == "unpacks to 300 MiB (limit 256 MiB)"


# --- 19. fuzzy location has a bound on work, and says when it ran out -------------------------------

def _words_text(rng, words: list[str], chars: int) -> str:
    out, total = [], 0
    while total < chars:
        out.append(rng.choice(words))
        total += len(out[-1]) + 1
    return " ".join(out)


def test_a_long_quote_in_a_long_document_is_bounded_and_reported(tmp_path, capsys, own_cache):
    import json
    import random
    import time

    pytest.importorskip("html2text", reason="the parse extra is not installed (make parse)")
    import pandas as pd

    rng = random.Random(52)
    words = (TINY / "docs" / "billing.md").read_text().split() + (TINY / "docs" / "security.md").read_text().split()
    paragraphs = [_words_text(rng, words, 1000) for _ in range(357)]  # ~357,000 characters
    root = tmp_path / "long"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "long.html").write_text("<h1>Long</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs))
    passage = " ".join(paragraphs[200:203])[:3000]
    edited = "".join("x" if i % 53 == 7 else c for i, c in enumerate(passage))  # neither exact nor normalised
    absent = _words_text(rng, words, 3000)[:3000]
    (root / "questions.jsonl").write_text("".join(json.dumps(
        {"id": qid, "question": "What does the long policy say?", "answerable": True,
         "evidence": [{"doc_id": "long", "quote": quote}]}) + "\n" for qid, quote in (("near", edited), ("far", absent))))
    out = tmp_path / "out"
    started = time.perf_counter()
    assert cli(["run", f"dataset.path={root}", "tracking=none", f"output.root={out}", "experiment.name=long"]) == 0
    seconds = time.perf_counter() - started
    assert seconds < 60, seconds  # was: > 3 minutes for one such quote
    (done,) = (out / "long").glob("*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    parse = metrics["parse"]
    assert parse["evidence_fuzzy"] == 0.5 and parse["questions_lost"] == 1, parse
    needle = "question 'far': a quote in document 'long' could not be located within the fuzzy search's work bound"
    (warning,) = [w for w in metrics["warnings"] if needle in w]  # also on the console (log.warning)
    assert "-- fix: quote a shorter passage" in warning and "near" not in warning
    labels = pd.read_csv(done.parent / "failures.csv", dtype=str).set_index("qid")["failure"]
    assert labels["far"] == "parsing", labels
