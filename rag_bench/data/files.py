"""Which files of a dataset folder are the dataset, and that each is a regular file of bounded size.

The dataset is exactly the files its loader reads: native ``docs/**/*.md|*.txt`` (and the
``.pdf|.html|.htm|.docx`` files a parser reads), ``docs.jsonl``,
``questions.jsonl``; BEIR ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; both
``dataset.yaml``. Its fingerprint (in every cell id) covers these and nothing else: labels saved
beside the dataset, notes, an editor's swap file or a folder of drafts leave it unchanged.

One rule says what is a document, for the loader, ``rag-bench parse``, ``validate`` and the
fingerprint alike (:func:`document_kind`): the suffix is read whatever its case (``Fees.PDF`` is a
PDF), and a file the operating system or an editor leaves beside a document is never one
(:func:`is_junk`: Word's owner file ``~$x.docx``, macOS's ``._x.docx``/``.DS_Store``/``__MACOSX``,
``Thumbs.db``, editor backups ``x~``, ``.x.swp``, ``#x#``, any hidden name). A covered file whose
name is not valid UTF-8 is refused (its id could not be written to a record or a report).

Each of them is checked before anything is read: a symbolic link that leaves the dataset folder
(``docs/x.md -> /etc/passwd``) would put outside text into the artifacts, and a device or FIFO
(``docs.jsonl -> /dev/zero``) would be read until memory runs out. Links that stay inside the
folder are followed; links to folders are not (a loop would never end).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from rag_bench.data.beir import is_beir
from rag_bench.data.problems import ProblemLog

MAX_FILE_BYTES = 1 << 30  # one file of a dataset; larger ones are refused, not read
DOCUMENT_SUFFIXES = (".md", ".txt")  # native documents: docs/**/<id>.md or .txt
PARSED_SUFFIXES = (".pdf", ".html", ".htm", ".docx")  # documents a parser reads (rag_bench.parsing)
NATIVE_FILES = ("dataset.yaml", "docs.jsonl", "questions.jsonl")
BEIR_FILES = ("dataset.yaml", "corpus.jsonl", "queries.jsonl")


# Names an operating system or an office program leaves beside documents (compared in lower case).
JUNK_NAMES = frozenset({"thumbs.db", "desktop.ini", "__macosx"})


def is_junk(name: str) -> bool:
    """A file or folder name that is a by-product, never a dataset's: hidden (``.x``: macOS's
    AppleDouble ``._x.docx`` and ``.DS_Store``, vim's ``.x.swp``, emacs's lock ``.#x``, LibreOffice's
    ``.~lock.x#``), an Office owner file (``~$x.docx``), a backup (``x~``), an emacs autosave
    (``#x#``), Windows's ``Thumbs.db``/``desktop.ini`` or macOS's ``__MACOSX`` folder."""
    return (name.startswith((".", "~$")) or name.endswith("~") or (len(name) > 1 and name[0] == name[-1] == "#")
            or name.lower() in JUNK_NAMES)


def document_kind(rel: PurePosixPath) -> str:
    """What a file is, by its path ``rel`` inside the documents folder: ``"native"`` (.md, .txt: read
    as it is), ``"parsed"`` (.pdf, .html, .htm, .docx: read by a parser), '' (not a document: another
    type, or :func:`is_junk` in any part of the path). Suffixes are compared in lower case."""
    if not rel.parts or any(is_junk(part) for part in rel.parts):
        return ""
    suffix = rel.suffix.lower()
    return "native" if suffix in DOCUMENT_SUFFIXES else "parsed" if suffix in PARSED_SUFFIXES else ""


def is_document(rel: PurePosixPath) -> bool:
    """A native document: a .md, .txt, .pdf, .html, .htm or .docx file under docs/ (``rel`` relative
    to the docs/ folder's parent; :func:`document_kind`)."""
    return len(rel.parts) > 1 and rel.parts[0] == "docs" and bool(document_kind(PurePosixPath(*rel.parts[1:])))


def undecodable_name(path: PurePosixPath | Path) -> str:
    """'' when ``path`` (a dataset-relative path: its parts are ids) is valid UTF-8, else the path as
    shown (bad bytes as ``\\xNN``)."""
    raw = os.fsencode(str(path))
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")
    return ""


def bad_name_fix(shown: str) -> str:
    """The fix for a file name that is not UTF-8."""
    return f"rename '{shown}' to a UTF-8 name (e.g. convmv -f latin1 -t utf-8 --notest FILE)"


def is_question_file(rel: PurePosixPath) -> bool:
    """A file of the golden questions and their judgments (the rest is the corpus): native
    ``questions.jsonl``; BEIR ``queries.jsonl`` and ``qrels/``."""
    return rel.as_posix() in ("questions.jsonl", "queries.jsonl") or rel.parts[:1] == ("qrels",)


def _covers(rel: PurePosixPath, beir: bool, split: str) -> bool:
    if beir:
        return rel.as_posix() in (*BEIR_FILES, f"qrels/{split}.tsv")
    return rel.as_posix() in NATIVE_FILES or is_document(rel)


def _may_hold(rel: PurePosixPath, beir: bool) -> bool:
    """A folder inside which the dataset may have files (no other folder is walked)."""
    return rel.as_posix() == "qrels" if beir else rel.parts[0] == "docs" and not is_junk(rel.name)


def dataset_files(root: Path, log: ProblemLog, split: str = "test") -> list[Path]:
    """The files of the dataset under ``root`` (sorted), each a regular file inside the folder;
    problems with them go to ``log``. Other files in the folder are not looked at."""
    base = root.resolve()
    beir = is_beir(root)
    if beir and (not split or "/" in split or "\\" in split or split.startswith(".")):
        log.add(root / "qrels", 0, "dataset.split", f"split {split!r} is not a file name in qrels/",
                "set dataset.split to the name of a qrels/<split>.tsv file, e.g. dataset.split=test")
        return []
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        rel_here = PurePosixPath(here.relative_to(root).as_posix())
        dirnames[:] = sorted(d for d in dirnames if _may_hold(rel_here / d, beir))
        for name in list(dirnames):
            p = here / name
            if p.is_symlink():
                dirnames.remove(name)
                log.add(p, 0, "", "symbolic link to a folder (not followed)",
                        "copy the files into the dataset folder instead of linking a folder")
        for name in sorted(filenames):
            p = here / name
            if not _covers(rel_here / name, beir, split):
                continue
            shown = undecodable_name(rel_here / name)
            if shown:
                log.add(p, 0, "", "file name is not valid UTF-8 (a document id must be text)", bad_name_fix(shown))
                continue
            if p.is_symlink():
                target = Path(os.path.realpath(p))
                if not target.is_relative_to(base):
                    log.add(p, 0, "", f"symbolic link leaves the dataset folder (-> {target})",
                            "copy the file into the dataset folder; links may only point inside it")
                    continue
            try:
                st = os.stat(p)
            except OSError as exc:
                log.add(p, 0, "", f"cannot be read ({exc.strerror})", "fix the link or the permissions")
                continue
            if not stat.S_ISREG(st.st_mode):
                log.add(p, 0, "", "not a regular file (a device, FIFO or socket)",
                        "replace it with a regular file or remove it from the dataset folder")
                continue
            if st.st_size > MAX_FILE_BYTES:
                log.add(p, 0, "", f"file is {st.st_size / 2**30:.1f} GiB (limit {MAX_FILE_BYTES / 2**30:.0f} GiB)",
                        "split the corpus or remove the file from the dataset folder")
                continue
            files.append(p)
    return sorted(files)


def describe_files(files: Sequence[str]) -> list[str]:
    """The covered files (relative paths) as said to a user: each file by name, native documents
    as one entry with their count (a corpus may have thousands)."""
    docs = sum(is_document(PurePosixPath(f)) for f in files)
    rest = [f for f in files if not is_document(PurePosixPath(f))]
    parsed = any(PurePosixPath(f).suffix.lower() in PARSED_SUFFIXES for f in files if is_document(PurePosixPath(f)))
    kinds = "*.md|*.txt|*.pdf|*.html|*.htm|*.docx" if parsed else "*.md|*.txt"  # a .md/.txt set's as it always was
    return ([f"docs/**/{kinds} ({docs} files)"] if docs else []) + rest
