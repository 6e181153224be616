"""Question runs as data: a run's per-question part (:class:`~rag_bench.evaluation.run.QuestionRun`:
the question, its rankings, context, generation, answer and judgement) written to and read from a
versioned JSON-lines file -- never a pickle, so a file from a folder that travelled (a CI artifact,
a colleague's copy) is read as data and nothing in it runs.

The file (``question-runs.jsonl``, docs/search.md, "Successive halving"): a first line
``{"format": "rag_bench.question_runs", "version": 1, "questions": N}``, then one JSON object per
question run, its fields those of the dataclasses (nested objects for nested dataclasses, lists for
tuples, ``NaN``/``Infinity`` as Python's :mod:`json` writes them). Reading is typed: every value is
checked against the field's annotation, an unknown field or a wrong type is a ValueError, and only
the dataclasses a :class:`QuestionRun` is made of are built.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import numbers
import types
import typing
from collections.abc import Sequence
from typing import Any

from rag_bench.evaluation.run import QuestionRun

FORMAT = "rag_bench.question_runs"
VERSION = 1


def dumps(runs: Sequence[QuestionRun]) -> str:
    """``runs`` as the file's text (header line, then one line per run).

    >>> from rag_bench.domain import Question, Ranking
    >>> run = QuestionRun(Question("q1", "Who?", True), Ranking("q1", (2, 0), (0.5, float("nan"))),
    ...                   Ranking("q1", (2, 0), (0.5, float("nan"))))
    >>> text = dumps([run])
    >>> text.splitlines()[0]
    '{"format": "rag_bench.question_runs", "questions": 1, "version": 1}'
    >>> loads(text)[0].ranked.indices, loads(text)[0].question == run.question
    ((2, 0), True)
    """
    lines = [json.dumps({"format": FORMAT, "version": VERSION, "questions": len(runs)}, sort_keys=True)]
    lines += [json.dumps(to_data(r), sort_keys=True) for r in runs]
    return "\n".join(lines) + "\n"


def loads(text: str) -> tuple[QuestionRun, ...]:
    """The question runs of a file's ``text``; ValueError when it is not this format's version
    :data:`VERSION` (another version, a missing or extra line, a field of the wrong type)."""
    lines = text.splitlines()
    try:
        head = json.loads(lines[0]) if lines else None
    except ValueError as exc:
        raise ValueError(f"not a {FORMAT} file: its first line is not JSON") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} file (no header naming the format)")
    if head.get("version") != VERSION:
        raise ValueError(f"{FORMAT} version {head.get('version')!r}: this rag_bench reads version {VERSION} "
                         "-- fix: delete the file (its round is computed again)")
    body = [line for line in lines[1:] if line.strip()]
    if head.get("questions") != len(body):
        raise ValueError(f"{FORMAT}: the header says {head.get('questions')!r} questions, the file holds {len(body)}")
    return tuple(from_data(json.loads(line), QuestionRun) for line in body)


def to_data(value: Any) -> Any:
    """``value`` (a dataclass of the run, or what its fields hold) as JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar
        return to_data(value.item())
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"a question run holds a {type(value).__name__}, which {FORMAT} cannot store")


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
        if data is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return from_data(data, option)
            except ValueError:
                continue
        raise ValueError(f"{data!r:.80} is none of {hint}")
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
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
    if origin in (tuple, list):
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {hint}, got {type(data).__name__}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise ValueError(f"expected {len(args)} items for {hint}, got {len(data)}")
            return tuple(from_data(v, a) for v, a in zip(data, args))
        items = [from_data(v, args[0] if args else Any) for v in data]
        return tuple(items) if origin is tuple else items
    if origin is typing.Literal:
        if any(data == a and type(data) is type(a) for a in args):
            return data
        raise ValueError(f"{data!r:.80} is not one of {args}")
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {hint}, got {type(data).__name__}")
        return {str(k): from_data(v, args[1] if args else Any) for k, v in data.items()}
    return _plain(data, hint)


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
