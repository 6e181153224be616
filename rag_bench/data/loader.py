"""Load a dataset folder (native or BEIR layout), validate it all, and fingerprint it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from rag_bench.data.beir import is_beir, load_beir
from rag_bench.data.files import dataset_files, is_question_file
from rag_bench.data.native import load_questions, read_documents, read_manifest
from rag_bench.data.problems import ProblemLog
from rag_bench.digests import file_digest
from rag_bench.domain import Dataset
from rag_bench.errors import DataError, Problem

MANIFEST = "dataset.yaml"  # the dataset's name and description: in its fingerprint, not in its corpus's


def fingerprint(root: Path, files: list[Path]) -> str:
    """sha256 over the dataset's files (relative path + bytes; :func:`dataset_files`): changes when
    any of them does, and only then."""
    return fingerprints(root, files)[0]


def fingerprints(root: Path, files: list[Path]) -> tuple[str, str, tuple[str, ...]]:
    """The dataset's fingerprint (:func:`fingerprint`), its corpus's (the same over the documents
    and their metadata only: not the questions and their judgments, nor dataset.yaml, whose name and
    description change no document -- a drafted set beside people's, over the same documents, has
    the corpus of people's set, which `rag-bench agree` checks) and the files' relative paths, in
    one pass (each cell of a sweep loads the dataset: an edit shows in its next cell)."""
    whole, corpus = hashlib.sha256(), hashlib.sha256()
    covered = []
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        covered.append(rel)
        entry = rel.encode() + b"\0" + file_digest(path)
        whole.update(entry)
        if not is_question_file(PurePosixPath(rel)) and rel != MANIFEST:
            corpus.update(entry)
    return whole.hexdigest()[:16], corpus.hexdigest()[:16], tuple(covered)


@dataclass(frozen=True)
class _Parser:
    """A parser as an argument of the cached load: equal and hashed by its key (class, name,
    version) alone, so each cell's new parser object finds the load of an equal one."""

    key: str
    parser: Any = field(compare=False, hash=False)


def load_dataset(path: str | Path, *, split: str = "test", parser: Any = None) -> Dataset:
    """Load and validate a dataset; raise :class:`DataError` listing *every* problem found.
    ``parser`` reads the .pdf/.html/.docx documents (rag_bench.parsing; None: ``auto``)."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataError(Problem(str(root), 0, "dataset.path", "dataset folder does not exist",
                                "pass dataset.path=DIR with docs/ + questions.jsonl (or a BEIR folder)"))
    log = ProblemLog(root)
    files = dataset_files(root, log, split)  # links out of the folder, devices, FIFOs: refused before any read
    log.raise_if_any(f"dataset {log.rel(root)} is invalid")
    whole, corpus, covered = fingerprints(root, files)
    chosen = None
    if parser is not None:
        from rag_bench.parsing.files import parser_key

        chosen = _Parser(parser_key(parser), parser)
    return _load_cached(str(root.resolve()), split, whole, covered, corpus, chosen)


@lru_cache(maxsize=4)
def _load_cached(root_s: str, split: str, fp: str, files: tuple[str, ...], corpus_fp: str,
                 chosen: _Parser | None = None) -> Dataset:
    # Keyed by fingerprint: a sweep in one process parses the dataset once, an edit reloads it.
    root = Path(root_s)
    log = ProblemLog(root)
    manifest = read_manifest(root, log)
    state = None
    if is_beir(root):
        documents, questions = load_beir(root, split, log)
        layout = "beir"
    else:
        documents, state = read_documents(root, log, None if chosen is None else chosen.parser)
        questions = load_questions(root / "questions.jsonl", documents, log, state)
        layout = "native"
    log.raise_if_any(f"dataset {log.rel(root)} is invalid")
    if state is not None:
        # The corpus is the parse: chunks and indexes of one parser are not another's.
        from rag_bench.parsing.auto import AutoParser
        from rag_bench.parsing.files import parser_key

        key = chosen.key if chosen is not None else parser_key(AutoParser())
        corpus_fp = hashlib.sha256(f"{corpus_fp}\0{key}".encode()).hexdigest()[:16]
        # A question whose quotes this parse lost is kept (Question.lost): the cell counts it as the
        # loss it is and labels it ``parsing`` (a parser that loses everything scores 0, not an error).
    return Dataset(name=str(manifest.get("name") or root.name), root=root_s, layout=layout,
                   documents=documents, questions=tuple(questions), fingerprint=fp, files=files,
                   corpus_fingerprint=corpus_fp, parse=None if state is None else state.final())
