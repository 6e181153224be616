"""A run stored as data: a cell's :class:`~rag_bench.evaluation.run.SystemRun` -- the dataset it
ran on, the passages its rankings index, its run-level figures and one
:class:`~rag_bench.evaluation.run.QuestionRun` per question (the question, its rankings, context,
generation, answer and judgement) -- written to and read from a versioned JSON-lines file, never a
pickle, so a file from a folder that travelled (a CI artifact, a colleague's copy) is read as data
and nothing in it runs.

The file (:data:`FILE` in every cell folder, docs/contract.md §5): a first line
``{"format": "rag_bench.question_runs", "version": 2, "questions": N}``; then ``{"dataset": ...}``
(the dataset without its questions: name, fingerprints, files, documents, the parse report) and
``{"run": ...}`` (the run-level fields of SystemRun: passages, documents, chunks, depth, ANN report,
timings, counts, ...); then one JSON object per question run. Fields are those of the dataclasses
(nested objects for nested dataclasses, lists for tuples, ``NaN``/``Infinity`` as Python's
:mod:`json` writes them); the lines after the header are compact (no spaces), keys sorted, written
by orjson when it is installed, else by json -- the same data either way. Reading is typed: every
value is checked against the field's annotation, an unknown field or a wrong type is a ValueError,
and only the dataclasses a run is made of are built. Version 1 (halving's rounds before: question
runs only, no dataset or run line) is upgraded on read for what it holds (:func:`loads`); a whole
run cannot be made of it (:func:`load_run`).

What reads it: halving's next round (merges the question runs), ``rag-bench rescore`` (scores the
run again under other ``eval.*`` settings, no pipeline) and the report's drill-down (the texts the
cell saw, no dataset parsed again).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import numbers
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:  # the fast writer of the stored run, when installed (not a dependency: json writes the same data)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None  # type: ignore[assignment]

from rag_bench.cells import CellResult
from rag_bench.domain import Dataset, Question
from rag_bench.evaluation.run import QuestionRun, SystemRun

FORMAT = "rag_bench.question_runs"
VERSION = 2
FILE = "question-runs.jsonl"  # in every cell folder (and a halving round's PARTIAL one)
# SystemRun's fields kept on the run line: all but the dataset and questions (their own lines) and
# the key of the rankings in a sweep's shared work (a process's, not the run's)
_RUN_FIELDS = ("passages", "documents", "chunks", "depth", "ann", "index_name", "timings", "counts", "latency",
               "embedding", "generate_s", "generator", "judge", "attribute_chunking", "min_relevant")


class VersionError(ValueError):
    """A run file this rag_bench cannot make a run of (another format version); its message says the fix."""


def stored(result: CellResult, run: SystemRun) -> CellResult:
    """The cell's files ``result`` (its evaluation of ``run``) with ``run`` itself among them
    (:data:`FILE`: what ``rag-bench rescore``, the report's drill-down and halving's next round read),
    rendered when the cell is written: by the sweep's background process, from the run it is handed
    (issue 57: 11 ms of a squad2-normans cell off the sweep's thread)."""
    return dataclasses.replace(result, deferred={**result.deferred, FILE: functools.partial(dumps_run, run)})


def restricted(run: SystemRun) -> set[str]:
    """The ids of the run's documents with access rights (a tenant or an ACL): their text is never
    copied into the stored run (docs/trust.md: a cell's files hold no text some asker may not read,
    and cell folders travel further than the corpus -- MLflow artifacts, CI uploads)."""
    docs = [*run.dataset.documents.values(), *(run.documents or {}).values()]
    return {d.doc_id for d in docs if d.tenant is not None or d.acl}


def _withheld(data: Any, ids: set[str]) -> Any:
    """``data`` (documents or passages as data) with the text of those of ``ids`` blanked."""
    if isinstance(data, dict) and "doc_id" in data:
        return {k: ("" if k in ("text", "body") and data["doc_id"] in ids else v) for k, v in data.items()}
    if isinstance(data, dict):
        return {k: _withheld(v, ids) for k, v in data.items()}
    if isinstance(data, list):
        return [_withheld(v, ids) for v in data]
    return data


def dumps_run(run: SystemRun) -> str:
    """The whole ``run`` as the file's text (version :data:`VERSION`). The text of documents with
    access rights (:func:`restricted`), and the bodies of their passages, are withheld: the header
    lists them (``withheld``); :func:`restore` puts them back from the dataset on disk (``rag-bench
    rescore``, checked by its fingerprint). Halving's rounds and the drill-down need no such text."""
    ids = restricted(run)
    head = {"format": FORMAT, "version": VERSION, "questions": len(run.questions),
            **({"withheld": sorted(ids)} if ids else {})}
    dataset = {f.name: to_data(getattr(run.dataset, f.name)) for f in dataclasses.fields(run.dataset)
               if f.name != "questions"}
    run_line = {name: to_data(getattr(run, name)) for name in _RUN_FIELDS}
    if ids:
        dataset = {k: (_withheld(v, ids) if k == "documents" else v) for k, v in dataset.items()}
        run_line = {k: (_withheld(v, ids) if k in ("passages", "documents") else v) for k, v in run_line.items()}
    lines = [json.dumps(head, sort_keys=True), _line({"dataset": dataset}), _line({"run": run_line})]
    lines += [_line(to_data(r)) for r in run.questions]
    return "\n".join(lines) + "\n"


def _line(data: Any) -> str:
    """One line of the file: ``data`` (what :func:`to_data` made) as compact JSON, keys sorted. Every
    cell writes its run (~0.5 MB a demo cell), so orjson writes it when it is installed (~20x
    json's speed); a NaN or infinity (a :class:`_NonFinite` of :func:`to_data`) is written as
    Python's json writes it, and a text orjson refuses (a lone surrogate) goes through json."""
    if orjson is not None:
        try:
            return orjson.dumps(data, default=_non_finite, option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:
            pass
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _non_finite(value: Any) -> Any:
    """orjson's hook for what it cannot write: a NaN or infinity as json's token (orjson writes null)."""
    if type(value) is _NonFinite:
        return orjson.Fragment(b"NaN" if value != value else b"Infinity" if value > 0 else b"-Infinity")
    raise TypeError(f"{type(value).__name__} is not JSON")


class _NonFinite(float):
    """A NaN or infinite float of the run as :func:`to_data` gives it: json writes it as a float
    (``NaN``, ``Infinity``), and :func:`_line` knows it for orjson, which has no such token."""


def load_run(text: str) -> SystemRun:
    """The run a :func:`dumps_run` text holds; :class:`VersionError` for a file of another version
    (version 1 holds the question runs of a halving round, not a whole run), ValueError for a file
    that is not this format."""
    version, body = _body(text)
    if version != VERSION:
        raise VersionError(f"{FORMAT} version {version}: holds a halving round's question runs only, not the whole "
                           "run this command needs -- fix: run the cell again (rag-bench run with its config.yaml's "
                           f"overrides), which writes version {VERSION}")
    if len(body) < 2 or "dataset" not in body[0] or "run" not in body[1]:
        raise ValueError(f"{FORMAT} version {VERSION}: the dataset and run lines are missing")
    questions = tuple(from_data(q, QuestionRun) for q in body[2:])
    dataset = _dataset(body[0]["dataset"], tuple(q.question for q in questions))
    run_hints = _hints(SystemRun)
    line = body[1]["run"]
    if not isinstance(line, dict) or set(line) - set(_RUN_FIELDS):
        raise ValueError(f"{FORMAT}: the run line holds unknown fields")
    return SystemRun(dataset=dataset, questions=questions,
                     **{k: from_data(v, run_hints[k]) for k, v in line.items()})


def withheld(text: str) -> list[str]:
    """The documents whose text a stored run's ``text`` withholds (its header's ``withheld``)."""
    head = json.loads(text.split("\n", 1)[0])
    ids = head.get("withheld") if isinstance(head, dict) else None
    return [str(i) for i in ids] if isinstance(ids, list) else []


def restore(run: SystemRun, ids: Sequence[str], dataset: Dataset) -> SystemRun:
    """``run`` with the withheld texts of documents ``ids`` back from ``dataset`` (the same dataset
    version, loaded again: the caller checks its fingerprint): their text, and their passages'
    bodies (``document.text[start:end]``, as a chunk's body always is)."""
    keep = set(ids)
    docs = {k: (dataset.documents[k] if k in keep else d) for k, d in run.dataset.documents.items()}
    corpus = {**run.corpus, **{k: dataset.documents[k] for k in keep if k in dataset.documents}}

    def back(c: Any) -> Any:
        if getattr(c, "doc_id", None) in keep and hasattr(c, "body"):
            return dataclasses.replace(c, body=corpus[c.doc_id].text[c.start:c.end])
        return c

    passages = [back(c) for c in run.passages]
    return dataclasses.replace(run, dataset=dataclasses.replace(run.dataset, documents=docs), passages=passages,
                               documents=None if run.documents is None else
                               {k: corpus.get(k, d) for k, d in run.documents.items()})


def dumps(runs: Sequence[QuestionRun]) -> str:
    """``runs`` alone as version 1's text (header line, then one line per run: what halving's rounds
    wrote before a cell stored its whole run; read back by :func:`loads`).

    >>> from rag_bench.domain import Question, Ranking
    >>> run = QuestionRun(Question("q1", "Who?", True), Ranking("q1", (2, 0), (0.5, float("nan"))),
    ...                   Ranking("q1", (2, 0), (0.5, float("nan"))))
    >>> text = dumps([run])
    >>> text.splitlines()[0]
    '{"format": "rag_bench.question_runs", "questions": 1, "version": 1}'
    >>> loads(text)[0].ranked.indices, loads(text)[0].question == run.question
    ((2, 0), True)
    """
    lines = [json.dumps({"format": FORMAT, "version": 1, "questions": len(runs)}, sort_keys=True)]
    lines += [json.dumps(to_data(r), sort_keys=True) for r in runs]
    return "\n".join(lines) + "\n"


def read_dataset(path: Path) -> Dataset:
    """The dataset of the run stored at ``path`` as the cell saw it (its documents, questions and
    parse report), without building the run's passages and question runs; ValueError for a file
    that is not version :data:`VERSION` of this format."""
    version, body = _body(path.read_text(encoding="utf-8"))
    if version != VERSION:
        raise VersionError(f"{FORMAT} version {version}: holds no dataset")
    questions = tuple(from_data(line.get("question"), Question) for line in body[2:])
    return _dataset(body[0].get("dataset"), questions)


def _dataset(raw: Any, questions: tuple[Question, ...]) -> Dataset:
    """The dataset line ``raw`` with ``questions``."""
    fields = _hints(Dataset)
    if not isinstance(raw, dict) or set(raw) - set(fields) or "questions" in raw:
        raise ValueError(f"{FORMAT}: the dataset line is not a dataset without its questions")
    return Dataset(**{k: from_data(v, fields[k]) for k, v in raw.items()}, questions=questions)


def load_or_refuse(path: Path) -> SystemRun:
    """The run stored at ``path`` (a cell's :data:`FILE`); a :class:`~rag_bench.errors.ConfigError`
    naming the file and the fix when it is missing, of another version or not this format."""
    from rag_bench.errors import ConfigError

    fix = "-- fix: run the cell again (rag-bench run with the overrides of its config.yaml) to store its run"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: missing: the cell was written before cells stored their run {fix}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc}) {fix}") from exc
    try:
        return load_run(text)
    except VersionError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{path}: not a {FORMAT} file of version {VERSION} ({str(exc)[:200]}) {fix}") from exc


def loads(text: str) -> tuple[QuestionRun, ...]:
    """The question runs of a file's ``text``, version 1 upgraded (its lines are version 2's
    question lines); ValueError when it is not this format (a missing or extra line, a field of
    the wrong type), :class:`VersionError` for a version this rag_bench does not know."""
    version, body = _body(text)
    if version == VERSION:
        body = body[2:]
    return tuple(from_data(line, QuestionRun) for line in body)


def _body(text: str) -> tuple[int, list[Any]]:
    """The version a file's ``text`` says and its lines after the header, as JSON; the header's
    count of questions checked."""
    lines = text.splitlines()
    try:
        head = json.loads(lines[0]) if lines else None
    except ValueError as exc:
        raise ValueError(f"not a {FORMAT} file: its first line is not JSON") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} file (no header naming the format)")
    version = head.get("version")
    if version not in (1, VERSION):
        raise VersionError(f"{FORMAT} version {version!r}: this rag_bench reads versions 1 and {VERSION} -- fix: run "
                           "the cell again with this rag_bench (or read it with the rag_bench that wrote it)")
    body = [json.loads(line) for line in lines[1:] if line.strip()]
    runs = len(body) - (2 if version == VERSION else 0)
    if head.get("questions") != runs:
        raise ValueError(f"{FORMAT}: the header says {head.get('questions')!r} questions, the file holds {runs}")
    return int(version), body


_PLAIN = frozenset({str, bool, int, float, type(None)})  # written as they are
_SCALARS = frozenset({str, bool, int, type(None)})  # a list of only these: as it is
_NUMBERS = frozenset({int, float})  # a list of only these: as it is when every float is finite


@functools.lru_cache(maxsize=128)  # the run's dataclasses: a handful, each looked at once per process
def _field_names(kind: type) -> tuple[str, ...] | None:
    """The fields of the dataclass ``kind``, None when it is no dataclass."""
    return tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None


def to_data(value: Any) -> Any:
    """``value`` (a dataclass of the run, or what its fields hold) as JSON-ready data (every cell
    writes its run: the common types are looked at first, by their exact type)."""
    kind = type(value)
    if kind is float:
        return value if value - value == 0.0 else _NonFinite(value)  # x - x is NaN for NaN and infinities
    if kind in _PLAIN:
        return value
    if kind is tuple or kind is list:
        kinds = set(map(type, value))  # a ranking's indices and scores: hundreds of plain numbers a question
        if kinds <= _SCALARS:
            return list(value)
        if kinds <= _NUMBERS:
            total = sum(value)
            if total - total == 0.0:  # every one finite (a NaN or infinity, or a sum too large: one by one)
                return list(value)
        return [to_data(v) for v in value]
    names = _field_names(kind)  # type: ignore[arg-type]  # a class is hashable
    if names is not None:  # most fields hold a text or a number: taken here, without a call each
        out = {}
        for name in names:
            field_value = getattr(value, name)
            field_kind = type(field_value)
            if field_kind in _SCALARS:
                out[name] = field_value
            elif field_kind is float:
                out[name] = field_value if field_value - field_value == 0.0 else _NonFinite(field_value)
            elif field_kind is tuple and not field_value:
                out[name] = []
            else:
                out[name] = to_data(field_value)
        return out
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, (bool, str)):
        return value
    if kind.__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar
        return to_data(value.item())
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return to_data(float(value))
    raise TypeError(f"a question run holds a {kind.__name__}, which {FORMAT} cannot store")


@functools.lru_cache(maxsize=64)  # the run's dataclasses: a handful, each resolved once per process
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(data: Any, hint: Any) -> Any:
    """``data`` read as the type ``hint`` (a dataclass of the run, a container of them or a plain
    value); ValueError when it does not fit."""
    if hint is Any:
        return data
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _from_union(data, hint, args)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _from_object(data, hint)
    if origin in (tuple, list):
        return _from_list(data, hint, origin, args)
    if origin is typing.Literal:
        if any(data == a and type(data) is type(a) for a in args):
            return data
        raise ValueError(f"{data!r:.80} is not one of {args}")
    if origin in (dict, Mapping):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {hint}, got {type(data).__name__}")
        return {str(k): from_data(v, args[1] if args else Any) for k, v in data.items()}
    return _plain(data, hint)


def _from_union(data: Any, hint: Any, args: tuple[Any, ...]) -> Any:
    """``data`` read as the first option of the union ``hint`` it fits (None where the union allows it)."""
    if data is None and type(None) in args:
        return None
    for option in (a for a in args if a is not type(None)):
        try:
            return from_data(data, option)
        except ValueError:
            continue
    raise ValueError(f"{data!r:.80} is none of {hint}")


def _from_object(data: Any, hint: type) -> Any:
    """``data`` (an object) read as the dataclass ``hint``, each field as its own type."""
    if not isinstance(data, dict):
        raise ValueError(f"{hint.__name__}: expected an object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(hint) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{hint.__name__}: unknown fields {unknown}")
    hints = _hints(hint)
    try:
        return hint(**{k: from_data(v, hints[k]) for k, v in data.items()})
    except TypeError as exc:  # a required field missing
        raise ValueError(f"{hint.__name__}: {exc}") from exc


def _from_list(data: Any, hint: Any, origin: Any, args: tuple[Any, ...]) -> Any:
    """``data`` (a list) read as the list or tuple ``hint`` (a fixed tuple item by item)."""
    if not isinstance(data, list):
        raise ValueError(f"expected a list for {hint}, got {type(data).__name__}")
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        if len(args) != len(data):
            raise ValueError(f"expected {len(args)} items for {hint}, got {len(data)}")
        return tuple(from_data(v, a) for v, a in zip(data, args))
    items = [from_data(v, args[0] if args else Any) for v in data]
    return tuple(items) if origin is tuple else items


def _plain(data: Any, hint: Any) -> Any:
    if hint is type(None) or hint is None:
        if data is None:
            return None
    elif hint is bool:
        if isinstance(data, bool):
            return data
    elif hint is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
    elif hint is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return data  # an int a component put in a float field stays the int it was
    elif hint is str:
        if isinstance(data, str):
            return data
    else:
        raise ValueError(f"{FORMAT} cannot read a {hint}")
    raise ValueError(f"expected {getattr(hint, '__name__', hint)}, got {data!r:.80}")
