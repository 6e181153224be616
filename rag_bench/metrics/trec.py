"""TREC qrels/run files and a trec_eval-compatible evaluator on top of :mod:`.ranking`.

``evaluate`` reproduces ``trec_eval`` 10.0 for the measures it supports (checked against NIST's
own test vectors in ``tests/metrics/test_trec_conformance.py`` and against pytrec_eval on random
inputs). What trec_eval does, and therefore what this module does:

* **Reading** (trec_eval's ``get_qrels.c`` and ``get_trec_results.c``). Columns are separated
  by C whitespace; qids and docnos are opaque strings. The score is read with C's ``atof`` and
  the relevance level with ``atol`` (:func:`c_atof`, :func:`c_atol`): the longest numeric
  prefix counts and the rest of the field is ignored, so ``"1_0"`` is 1 (Python would say 10),
  ``"0.5.1"`` is 0.5, ``"inf"`` and ``"0x1p3"`` are numbers. Lines trec_eval refuses (wrong
  column count, duplicates, NUL bytes) are refused with file:line; so are the few fields that
  trec_eval would silently turn into a number the file does not say (a score or level with
  no number at all, a NaN score, a level such as ``"0.5"`` that ``atol`` truncates): see
  :func:`read_qrels` and :func:`read_run`.
* **Order.** The rank column of a run is ignored. Documents are sorted by score descending,
  ties broken by docno descending in byte (``strcmp``) order. Scores are held as C ``float``
  (32 bit) by trec_eval, so two scores that differ only beyond single precision are a tie.
* **-M** (``max_docs``) keeps the first N documents of that order.
* **Topics evaluated** are those in both the qrels and the run, whether or not they have a
  relevant document (a topic whose judgments are all non-relevant scores 0 and is averaged in).
  Run topics without qrels are ignored. With **-c** (``complete``) every qrels topic is
  evaluated, a topic missing from the run scoring 0 everywhere.
* **-l** (``relevance_level``) sets the binary threshold for every measure except ``ndcg`` and
  ``ndcg_cut``, which always use the judged levels as gains (negative levels gain 0) and the
  ideal ranking of all judged documents.
* **all** is the mean over evaluated topics, except ``num_*`` counts, which are summed.
* A value that is undefined for a topic (e.g. ``map`` with no relevant document) is 0.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from rag_bench.errors import DataError, Problem
from rag_bench.metrics.ranking import (
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)

__all__ = [
    "DEFAULT_CUTOFFS",
    "MAX_RELEVANCE_LEVEL",
    "SUPPORTED_MEASURES",
    "TrecArrays",
    "c_atof",
    "c_atol",
    "evaluate",
    "format_trec",
    "read_qrels",
    "read_run",
    "run_lines",
    "to_arrays",
    "trec_order",
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

#: Cutoffs trec_eval uses for ``P``, ``recall`` and ``ndcg_cut`` given without parameters.
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

# A broken file (say, a run passed as qrels) would otherwise produce one problem per line.
_MAX_PROBLEMS = 50


# --------------------------------------------------------------------------- C number parsing

# C's isspace() in the "C" locale (trec_eval never calls setlocale): exactly the bytes that
# bytes.split() splits on. str.split() would also split on \x1c-\x1f, U+00A0, U+3000, ...
_C_SPACE = " \t\n\v\f\r"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1  # C long on LP64 (Linux, macOS)
# re.ASCII: [0-9] and the letters must not match Unicode look-alikes ("١", "ınf").
_HEX = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?", re.ASCII
)
_INF_NAN = re.compile(r"([+-]?)(?:(inf(?:inity)?)|nan(?:\([0-9a-z_]*\))?)",
                      re.ASCII | re.IGNORECASE)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER = re.compile(r"([+-]?)0*([0-9]*)", re.ASCII)


def _skip_space(text: str) -> int:
    return len(text) - len(text.lstrip(_C_SPACE))


def _strtod(text: str) -> tuple[float, int]:
    """glibc ``strtod(text, &end)``: the value and how many characters it used (0: none).

    Leading C whitespace is skipped; then the longest prefix that is a hexadecimal float
    (``0x1.8p3``), ``inf``/``infinity``/``nan``/``nan(chars)`` (any case) or a decimal float is
    converted, correctly rounded (CPython's ``float`` and ``float.fromhex`` round exactly as
    glibc does). Out of range values become +-inf or (+-)0, as glibc returns them.
    """
    # Fast path for the usual field: printable ASCII without "_" or spaces that float() accepts
    # (a decimal, "inf", "infinity" or "nan" with a sign) is read by strtod in full, to the same
    # value (float() and strtod both round correctly).
    if text.isascii() and text.isprintable() and "_" not in text and " " not in text:
        try:
            return float(text), len(text)
        except ValueError:
            pass
    start = _skip_space(text)
    match = _HEX.match(text, start)
    if match:
        digits = match.group()
        try:
            return float.fromhex(digits), match.end()
        except OverflowError:  # glibc returns +-HUGE_VAL (and sets errno, unread by atof)
            return (-math.inf if digits[0] == "-" else math.inf), match.end()
    match = _INF_NAN.match(text, start)
    if match:
        value = math.inf if match.group(2) else math.nan
        return (-value if match.group(1) == "-" else value), match.end()
    match = _DECIMAL.match(text, start)  # "0x" without hex digits lands here and reads "0"
    if match:
        return float(match.group()), match.end()
    return 0.0, 0


def _strtol(text: str) -> tuple[int, int]:
    """glibc ``strtol(text, &end, 10)``: the value (saturated to C long) and characters used."""
    if len(text) <= 18 and text.isascii() and text.isdigit():  # the usual field: "0", "12"
        return int(text), len(text)
    match = _INTEGER.match(text, _skip_space(text))
    assert match is not None  # the pattern matches the empty string
    sign, digits = match.groups()
    if not digits:
        if match.end() - match.start() > len(sign):  # only zeros: "0", "-000"
            return 0, match.end()
        return 0, 0
    if len(digits) > 19:  # beyond any C long; also keeps int() off megabyte-long digit strings
        return (_LONG_MIN if sign == "-" else _LONG_MAX), match.end()
    value = -int(digits) if sign == "-" else int(digits)
    return min(max(value, _LONG_MIN), _LONG_MAX), match.end()


def c_atof(text: str) -> float:
    """Read a number as C's ``atof`` (glibc ``strtod``) does, which is how trec_eval reads scores.

    Leading whitespace (C's: space, tab, newline, vertical tab, form feed, carriage return) is
    skipped, then the longest prefix that is a number is read and the rest ignored; with no
    such prefix the result is 0.0. Besides decimal floats, glibc reads ``inf``, ``infinity``,
    ``nan``, ``nan(...)`` in any case and C99 hexadecimal floats (``0x1.8p3``). A value too large
    for a double is +-inf. Unlike :func:`float`, no ``_`` separators, Unicode digits or
    trailing whitespace are special: they simply end the number.

    Parameters
    ----------
    text : str
        The field as found in the file.

    Returns
    -------
    float
        What ``atof(text)`` returns (a double; trec_eval then stores it as a C ``float``).

    Examples
    --------
    >>> c_atof("1_0"), float("1_0")
    (1.0, 10.0)
    >>> c_atof(" 1.5x"), c_atof(".5"), c_atof("-.5e-1z"), c_atof("1e"), c_atof("1e+")
    (1.5, 0.5, -0.05, 1.0, 1.0)
    >>> c_atof("0x10"), c_atof("0x1p3"), c_atof("0x"), c_atof("0xg")
    (16.0, 8.0, 0.0, 0.0)
    >>> c_atof("inf"), c_atof("-Infinity"), c_atof("nAn(1)"), c_atof("1e400")
    (inf, -inf, nan, inf)
    >>> c_atof(""), c_atof("abc"), c_atof("+"), c_atof("."), c_atof("\u0661")
    (0.0, 0.0, 0.0, 0.0, 0.0)
    """
    return _strtod(text)[0]


def c_atol(text: str) -> int:
    """Read an integer as C's ``atol`` (glibc ``strtol(text, NULL, 10)``), as trec_eval reads
    relevance levels.

    Leading C whitespace is skipped, then an optional sign and the longest run of decimal digits
    are read and the rest ignored; with no digit the result is 0. A value beyond the range of a
    64-bit C ``long`` saturates at -2**63 or 2**63 - 1, as glibc does. There is no octal or hex:
    ``"0x10"`` reads as 0 and ``"010"`` as 10.

    Parameters
    ----------
    text : str
        The field as found in the file.

    Returns
    -------
    int
        What ``atol(text)`` returns.

    Examples
    --------
    >>> c_atol("1_0"), int("1_0")
    (1, 10)
    >>> c_atol(" -2x"), c_atol("0.9"), c_atol("1e3"), c_atol("0x10"), c_atol("010")
    (-2, 0, 1, 0, 10)
    >>> c_atol(""), c_atol("high"), c_atol("+"), c_atol("- 1")
    (0, 0, 0, 0)
    >>> c_atol("99999999999999999999"), c_atol("-99999999999999999999")
    (9223372036854775807, -9223372036854775808)
    """
    return _strtol(text)[0]


# --------------------------------------------------------------------------- file reading

#: Relevance levels accepted by :func:`read_qrels`: trec_eval keeps a table of ``max level + 1``
#: counters per topic, which cannot be allocated (16 GiB and more) beyond this.
MAX_RELEVANCE_LEVEL = 2**31 - 1


def _show(value: str) -> str:
    """``repr(value)``, shortened so that a megabyte-long field cannot flood the terminal."""
    if len(value) <= 60:
        return repr(value)
    return f"{value[:40]!r}... ({len(value)} characters)"


def _lines(
    path: str | os.PathLike[str], problems: list[Problem]
) -> Iterator[tuple[int, list[bytes]]]:
    """Yield ``(line_number, fields)`` of the non-blank, non-comment lines of ``path``.

    Fields are split on C whitespace, as trec_eval splits them, and left as UTF-8 bytes for the
    caller to decode (each decodes: the line is valid UTF-8 and splitting on ASCII bytes never
    cuts a UTF-8 sequence). A line that is not UTF-8 or holds a NUL byte is reported in
    ``problems`` (with its line number) and not yielded.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            # Binary lines end at b"\n" only: a stray "\r" is whitespace inside the line, as in C.
            for number, line in enumerate(handle, start=1):
                raw = line.split()
                if not raw or raw[0].startswith(b"#"):
                    continue
                try:
                    if not line.isascii():
                        line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(Problem(
                        file=name, line=number, field="",
                        message=f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})",
                        hint="TREC files are plain whitespace-separated text; re-encode as UTF-8"))
                    continue
                if 0 in line:
                    problems.append(Problem(
                        file=name, line=number, field="",
                        message=f"NUL byte at byte {line.index(0) + 1}",
                        hint="trec_eval reads C strings and forbids NUL characters; "
                             "the file is probably binary or truncated"))
                    continue
                # Splitting on ASCII bytes never cuts a UTF-8 sequence, so each field decodes.
                yield number, raw
    except OSError as exc:
        raise DataError(
            Problem(file=name, line=0, field="", message=f"cannot read file: {exc.strerror}",
                    hint="check the path and permissions")
        ) from exc


def _raise_if(problems: list[Problem], name: str, what: str) -> None:
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        more = f" (first {_MAX_PROBLEMS} shown)" if len(problems) > _MAX_PROBLEMS else ""
        raise DataError(shown, summary=f"{name}: {len(problems)} problem(s) in {what}{more}")


def _level(raw: str) -> tuple[int, str]:
    """The relevance level of ``raw`` as trec_eval reads it, or ``(0, why it is refused)``."""
    if len(raw) <= 9 and raw.isascii() and raw.lstrip("-").isdigit() and raw.count("-") <= 1:
        return int(raw), ""  # the usual field: "0", "1", "-1" (within MAX_RELEVANCE_LEVEL)
    level, used = _strtol(raw)
    if not used:
        return 0, f"relevance level {_show(raw)} is not an integer (trec_eval would read it as 0)"
    if not -MAX_RELEVANCE_LEVEL <= level <= MAX_RELEVANCE_LEVEL:
        return 0, (f"relevance level {_show(raw)} is out of range "
                   f"(|level| <= {MAX_RELEVANCE_LEVEL})")
    number, _ = _strtod(raw)
    if number != level:  # "0.5", "1e3", "0x1", "inf", "nan": atol truncates what they say
        return 0, (f"relevance level {_show(raw)} is not an integer "
                   f"(trec_eval would read it as {level})")
    return level, ""


def _score(raw: str) -> tuple[float, str]:
    """The score of ``raw`` as trec_eval reads it, or ``(nan, why it is refused)``."""
    score, used = _strtod(raw)
    if not used:
        return math.nan, f"score {_show(raw)} is not a number (trec_eval would read it as 0)"
    if math.isnan(score):
        return math.nan, (f"score {_show(raw)} is not a number (NaN; trec_eval's ranking of "
                          "NaN scores is undefined)")
    return score, ""


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a TREC qrels file: lines ``qid iter docno level``, as trec_eval reads them.

    Fields are separated by C whitespace (space, tab, vertical tab, form feed, carriage
    return); ``qid`` and ``docno`` are taken byte for byte (UTF-8), ``iter`` is ignored and the
    level is read with C's ``atol`` (:func:`c_atol`): ``"1_0"`` is 1, ``"2x"`` is 2.

    Parameters
    ----------
    path : str or path-like
        The qrels file. Blank lines and lines starting with ``#`` are skipped (trec_eval
        accepts comment lines but fails on blank ones).

    Returns
    -------
    dict
        ``{qid: {docno: level}}``; levels are integers and may be negative.

    Raises
    ------
    DataError
        With one :class:`~rag_bench.errors.Problem` (file:line) per line that trec_eval would
        also refuse: not 4 columns (trec_eval: "Malformed line"), a docno judged twice for a
        topic ("duplicate docs"), a NUL byte ("File may contain no NULL characters"), a level
        above :data:`MAX_RELEVANCE_LEVEL` (trec_eval cannot allocate its table of levels), and
        per line where trec_eval would silently read a level the file does not say: no digits
        at all (``"high"``, which ``atol`` reads as 0), a number that is not an integer
        (``"0.5"``, ``"1e3"``, ``"0x1"``, ``"inf"``: ``atol`` truncates them to 0 or 1), or
        below ``-MAX_RELEVANCE_LEVEL``. Also when a line is not UTF-8, the file is unreadable or
        it holds no judgment.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "qrels"
    >>> _ = path.write_text("1 0 a 1_0\\n1 0 b 2\\r\\n1 0 c -1\\n")
    >>> read_qrels(path)
    {'1': {'a': 1, 'b': 2, 'c': -1}}
    """
    name = os.fspath(path)
    qrels: Qrels = {}
    problems: list[Problem] = []
    for number, fields in _lines(path, problems):
        if len(fields) != 4:
            problems.append(Problem(
                file=name, line=number, field="",
                message=f"expected 4 columns 'qid iter docno level', found {len(fields)}",
                hint="separate the columns with whitespace; docnos cannot contain spaces"))
            continue
        qid, docno, raw = fields[0].decode(), fields[2].decode(), fields[3].decode()
        level, refused = _level(raw)
        if refused:
            problems.append(Problem(
                file=name, line=number, field="level", message=refused,
                hint="use integer levels such as 0, 1, 2 (negative = judged non-relevant)"))
            continue
        judged = qrels.setdefault(qid, {})
        if docno in judged:
            problems.append(Problem(
                file=name, line=number, field="docno",
                message=f"document {_show(docno)} is judged twice for topic {_show(qid)}",
                hint="keep one judgment per (topic, document)"))
            continue
        judged[docno] = level
    if not qrels and not problems:
        problems.append(Problem(file=name, line=0, field="", message="no judgments in file",
                                hint="a qrels line reads 'qid 0 docno level'"))
    _raise_if(problems, name, "qrels")
    return qrels


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run file: lines ``qid Q0 docno rank score tag``, as trec_eval reads them.

    Fields are separated by C whitespace; ``qid`` and ``docno`` are taken byte for byte
    (UTF-8); the ``Q0``, rank and tag columns are ignored (the tag must be present), and so is
    any text after the tag. The score is read with C's ``atof`` (:func:`c_atof`): ``"1_0"`` is
    1.0, ``"2.5e"`` is 2.5, ``"0x1p3"`` is 8.0, ``"inf"``/``"-inf"`` are infinite (they rank
    first/last, as in trec_eval) and ``"1e400"`` is inf.

    Parameters
    ----------
    path : str or path-like
        The run file. Blank lines and lines starting with ``#`` are skipped.

    Returns
    -------
    dict
        ``{qid: {docno: score}}``, in file order (:func:`to_arrays` does the ranking).

    Raises
    ------
    DataError
        With one :class:`~rag_bench.errors.Problem` (file:line) per line that trec_eval would
        also refuse: fewer than 6 columns ("Malformed line"), a docno retrieved twice for a
        topic ("duplicate docs"), a NUL byte; and per line where trec_eval would silently use a
        score the file does not hold: no number at all (``"high"``, ``""``: ``atof`` gives 0.0,
        which usually means shifted columns) or NaN (``"nan"``: trec_eval's sort comparator is
        then inconsistent and its ranking undefined). Also when a line is not UTF-8, the file
        is unreadable or it holds no result.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> _ = path.write_text("1 Q0 a 1 1_0 t\\n1 Q0 b 2 2.5e t extra\\n1 Q0 c 3 -inf t\\n")
    >>> read_run(path)
    {'1': {'a': 1.0, 'b': 2.5, 'c': -inf}}
    """
    name = os.fspath(path)
    run: Run = {}
    problems: list[Problem] = []
    for number, qid, docno, score in run_lines(path, problems):
        ranking = run.setdefault(qid, {})
        if docno in ranking:
            problems.append(Problem(
                file=name, line=number, field="docno",
                message=f"document {_show(docno)} is retrieved twice for topic {_show(qid)}",
                hint="list each document at most once per topic"))
            continue
        ranking[docno] = score
    if not run and not problems:
        problems.append(Problem(file=name, line=0, field="", message="no results in file",
                                hint="a run line reads 'qid Q0 docno rank score tag'"))
    _raise_if(problems, name, "run")
    return run


def run_lines(
    path: str | os.PathLike[str], problems: list[Problem]
) -> Iterator[tuple[int, str, str, float]]:
    """The results of a TREC run file as trec_eval reads them, in file order.

    The one reader of run lines: :func:`read_run` (``score-run``) and ``rag-bench evaluate
    --trec`` both take their results from here, so a field means the same number to both
    (``"1_0"`` is 1.0, as C's ``atof`` reads it, where Python's ``float`` says 10.0).

    Yields ``(line_number, qid, docno, score)``; a line trec_eval refuses or would misread (see
    :func:`read_run`: fewer than 6 columns, a score with no number or NaN, a NUL byte, not
    UTF-8) is added to ``problems`` instead. A docno repeated for a topic is the caller's check.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> _ = path.write_text("1 Q0 a 1 1_0 t\\n1 Q0 b 2 high t\\n")
    >>> problems = []
    >>> list(run_lines(path, problems)), [p.line for p in problems]
    ([(1, '1', 'a', 1.0)], [2])
    """
    name = os.fspath(path)
    for number, fields in _lines(path, problems):
        if len(fields) < 6:
            problems.append(Problem(
                file=name, line=number, field="",
                message=f"expected 6 columns 'qid Q0 docno rank score tag', found {len(fields)}",
                hint="every result line needs all six columns; docnos cannot contain spaces"))
            continue
        raw = fields[4].decode()
        score, refused = _score(raw)
        if refused:
            problems.append(Problem(
                file=name, line=number, field="score", message=refused,
                hint="the 5th column is the retrieval score (a finite or infinite number, "
                     "not NaN); higher ranks first"))
            continue
        yield number, fields[0].decode(), fields[2].decode(), score


def trec_order(scores: Sequence[float], docnos: Sequence[str]) -> list[int]:
    """Positions of one topic's results in trec_eval's order: score descending as C ``float``
    (32 bit), ties by docno descending in byte order; the order :func:`evaluate` ranks by.

    >>> trec_order([1.0, 2.0, 1.0, 1.00000001], ["a", "b", "c", "d"])
    [1, 3, 2, 0]
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return []
    order = _rank_order(np.zeros(values.size, np.int64), values, lambda at: [docnos[int(i)] for i in at])
    return [int(i) for i in order]


# --------------------------------------------------------------------------- arrays


@dataclass(frozen=True)
class TrecArrays:
    """A run joined with its qrels, in the array form the ranking kernels take.

    Attributes
    ----------
    qids : list of str
        Topic of each row, in trec_eval's order (string order).
    levels : ndarray of int64, shape (n_topics, depth)
        Qrels level of each retrieved document in trec_eval rank order; 0 for unjudged
        documents and padding.
    n_relevant : ndarray of int64, shape (n_topics,)
        Judged documents with ``level >= relevance_level`` (trec_eval ``num_rel``).
    ideal : ndarray of int64, shape (n_topics, m)
        Positive judged levels, descending, padded with 0 (non-positive levels gain nothing).
    n_retrieved : ndarray of int64, shape (n_topics,)
        Documents ranked after ``max_docs`` truncation (trec_eval ``num_ret``).
    """

    qids: list[str]
    levels: np.ndarray
    n_relevant: np.ndarray
    ideal: np.ndarray
    n_retrieved: np.ndarray


def _descending_float32_key(scores: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is the descending order of ``float32(scores)``."""
    # trec_eval keeps scores as C float (beyond its range they become +-inf, as in C);
    # `+ 0.0` folds -0.0 into 0.0 so that they tie as they compare equal in C.
    with np.errstate(over="ignore"):
        bits = (scores.astype(np.float32) + np.float32(0.0)).view(np.uint32)
    # Standard order-preserving map of IEEE floats onto unsigned ints, then inverted.
    ascending = np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    return ~ascending


def _rank_order(
    row: np.ndarray, scores: np.ndarray, docnos_at: Callable[[np.ndarray], list[str]]
) -> np.ndarray:
    """Permutation putting the flat results in trec_eval order within each row.

    ``row`` is non-decreasing (results come grouped by topic), so one sort on the 64-bit key
    ``row << 32 | score_key`` orders topics and scores at once. Docnos, the costly tie-break,
    are fetched (``docnos_at(flat_indices)``) only for the results whose key is tied.
    """
    key = (row.astype(np.uint64) << np.uint64(32)) | _descending_float32_key(scores).astype(
        np.uint64
    )
    # Stable sort: timsort/radix beats quicksort here and stability is not needed for
    # correctness (ties are settled below).
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    tied_next = sorted_key[1:] == sorted_key[:-1]
    if not tied_next.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= tied_next
    tied[:-1] |= tied_next
    positions = np.flatnonzero(tied)
    members = order[positions]
    _, docno_rank = np.unique(np.array(docnos_at(members)), return_inverse=True)
    # Tied groups occupy contiguous positions in key order, so re-sorting the tied members by
    # (key, docno descending) and writing them back to the same positions fixes every group.
    regroup = np.lexsort((-docno_rank.ravel(), key[members]))
    order[positions] = members[regroup]
    return order


def _check_max_docs(max_docs: Any) -> int | None:
    if max_docs is None:
        return None
    if isinstance(max_docs, bool) or not isinstance(max_docs, (int, np.integer)) or max_docs < 1:
        raise ValueError(f"max_docs must be a positive integer or None, got {max_docs!r}")
    return int(max_docs)


def _check_relevance_level(relevance_level: Any) -> int:
    if (
        isinstance(relevance_level, bool)
        or not isinstance(relevance_level, (int, np.integer))
        or relevance_level < 1
    ):
        raise ValueError(
            f"relevance_level must be an integer >= 1, got {relevance_level!r} "
            "(level 0 also marks unjudged documents)"
        )
    return int(relevance_level)


def _scatter(
    row: np.ndarray, col: np.ndarray, values: np.ndarray, shape: tuple[int, int]
) -> np.ndarray:
    out = np.zeros(shape, dtype=np.int64)
    out[row, col] = values
    return out


def _positions(counts: np.ndarray) -> np.ndarray:
    """Position of every flat item inside its row, for rows of the given lengths."""
    starts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts).astype(
        np.int64
    )


def to_arrays(
    qrels: Qrels,
    run: Run,
    *,
    relevance_level: int = 1,
    max_docs: int | None = None,
    complete: bool = False,
) -> TrecArrays:
    """Join a run with its qrels into the arrays of :mod:`rag_bench.metrics.ranking`.

    Applies trec_eval's ordering (score descending as 32-bit float, ties by docno descending;
    no rank column is used) and its ``-M`` truncation.

    Parameters
    ----------
    qrels : dict
        ``{qid: {docno: level}}`` as returned by :func:`read_qrels`.
    run : dict
        ``{qid: {docno: score}}`` as returned by :func:`read_run`. Not modified.
    relevance_level : int, default 1
        Minimum level counted in ``n_relevant`` (trec_eval ``-l``); must be >= 1.
    max_docs : int or None, default None
        Keep only the first ``max_docs`` documents of each ranking (trec_eval ``-M``).
    complete : bool, default False
        Include every qrels topic, an absent one with an empty ranking (trec_eval ``-c``);
        otherwise only topics present in both (a topic with an empty ranking is absent).

    Returns
    -------
    TrecArrays

    Examples
    --------
    >>> a = to_arrays({"q1": {"a": 1, "b": 2, "c": 0}},
    ...               {"q1": {"a": 0.5, "b": 0.5, "x": 0.9}, "q9": {"a": 1.0}})
    >>> a.qids, a.levels.tolist(), a.n_relevant.tolist(), a.ideal.tolist()
    (['q1'], [[0, 2, 1]], [2], [[2, 1]])
    """
    rl = _check_relevance_level(relevance_level)
    limit = _check_max_docs(max_docs)
    # A topic is in a run file only through its result lines, so an empty ranking in a dict
    # counts as absent, as it would in trec_eval.
    qids = sorted(qrels.keys() if complete else qrels.keys() & {q for q, r in run.items() if r})
    n_q = len(qids)
    empty: dict[str, float] = {}
    rankings = [run.get(q, empty) for q in qids]
    judgments = [qrels[q] for q in qids]

    # Retrieved documents, flattened topic by topic; their levels come from one dict lookup
    # per document (unjudged -> 0), which is the only per-document Python work.
    n_ret = np.fromiter(map(len, rankings), dtype=np.int64, count=n_q)
    total = int(n_ret.sum())
    scores = np.fromiter(
        chain.from_iterable(r.values() for r in rankings), dtype=np.float64, count=total
    )
    if np.isnan(scores).any():
        raise ValueError("run contains NaN scores; give every retrieved document a number")
    found = np.fromiter(
        chain.from_iterable(map(j.get, r, repeat(0)) for j, r in zip(judgments, rankings)),
        dtype=np.int64,
        count=total,
    )
    row = np.repeat(np.arange(n_q, dtype=np.int64), n_ret)
    position = _positions(n_ret)

    def docnos_at(flat: np.ndarray) -> list[str]:
        # Only topics with tied scores pay for listing their docnos.
        rows = row[flat]
        names = {r: list(rankings[r]) for r in np.unique(rows).tolist()}
        return [names[r][i] for r, i in zip(rows.tolist(), position[flat].tolist())]

    # The order keeps each topic's block in place, so sorted slot j still belongs to row[j]
    # at rank position[j] + 1.
    ranked = found[_rank_order(row, scores, docnos_at)]
    if limit is not None:
        keep = position < limit
        row, position, ranked = row[keep], position[keep], ranked[keep]
        n_ret = np.minimum(n_ret, limit)
    depth = int(n_ret.max()) if n_q else 0
    levels = _scatter(row, position, ranked, (n_q, depth))

    # Judgments: counts above the threshold, and the ideal ordering of positive levels.
    n_judged = np.fromiter(map(len, judgments), dtype=np.int64, count=n_q)
    judged = np.fromiter(
        chain.from_iterable(j.values() for j in judgments),
        dtype=np.float64,
        count=int(n_judged.sum()),
    )
    if np.any(judged != np.round(judged)):
        raise ValueError("qrels levels must be integers")
    judged_row = np.repeat(np.arange(n_q, dtype=np.int64), n_judged)
    n_relevant = np.bincount(judged_row[judged >= rl], minlength=n_q).astype(np.int64)
    positive = judged > 0
    pos_row, pos_level = judged_row[positive], judged[positive].astype(np.int64)
    by_level = np.lexsort((-pos_level, pos_row))
    n_positive = np.bincount(pos_row, minlength=n_q).astype(np.int64)
    width = int(n_positive.max()) if n_q else 0
    ideal = _scatter(pos_row[by_level], _positions(n_positive), pos_level[by_level], (n_q, width))
    return TrecArrays(qids=qids, levels=levels, n_relevant=n_relevant, ideal=ideal,
                      n_retrieved=n_ret)


# --------------------------------------------------------------------------- measures


def _num_ret(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return a.n_retrieved


def _num_rel(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return a.n_relevant


def _num_rel_ret(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return np.asarray(np.count_nonzero(a.levels >= rl, axis=1))


def _map(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return average_precision(a.levels, n_relevant=a.n_relevant, relevance_level=rl)


def _rprec(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return r_precision(a.levels, n_relevant=a.n_relevant, relevance_level=rl)


def _recip_rank(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    return reciprocal_rank(a.levels, n_relevant=a.n_relevant, relevance_level=rl)


def _precision(a: TrecArrays, k: int, rl: int) -> np.ndarray:
    return precision_at_k(a.levels, n_relevant=a.n_relevant, k=k, relevance_level=rl)


def _recall(a: TrecArrays, k: int, rl: int) -> np.ndarray:
    return recall_at_k(a.levels, n_relevant=a.n_relevant, k=k, relevance_level=rl)


def _ndcg(a: TrecArrays, k: int | None, rl: int) -> np.ndarray:
    # trec_eval's nDCG ignores -l: gains are the judged levels (verified on qrels.rel_level).
    return ndcg_at_k(a.levels, a.ideal, k=k)


def _success(a: TrecArrays, k: int, rl: int) -> np.ndarray:
    return hit_at_k(a.levels, n_relevant=a.n_relevant, k=k, relevance_level=rl)


@dataclass(frozen=True)
class _TrecMeasure:
    #: (arrays, cutoff or None, relevance_level) -> one value per topic.
    compute: Callable[[TrecArrays, Any, int], np.ndarray]
    #: Cutoffs used when the measure is named without parameters; empty = takes no cutoff.
    default_cutoffs: tuple[int, ...] = ()
    #: Counts: printed as integers and summed (not averaged) over topics.
    integer: bool = False


# In trec_eval's own table order, which is also its output order.
_MEASURES: dict[str, _TrecMeasure] = {
    "num_ret": _TrecMeasure(_num_ret, integer=True),
    "num_rel": _TrecMeasure(_num_rel, integer=True),
    "num_rel_ret": _TrecMeasure(_num_rel_ret, integer=True),
    "map": _TrecMeasure(_map),
    "Rprec": _TrecMeasure(_rprec),
    "recip_rank": _TrecMeasure(_recip_rank),
    "P": _TrecMeasure(_precision, default_cutoffs=DEFAULT_CUTOFFS),
    "recall": _TrecMeasure(_recall, default_cutoffs=DEFAULT_CUTOFFS),
    "ndcg": _TrecMeasure(_ndcg),
    "ndcg_cut": _TrecMeasure(_ndcg, default_cutoffs=DEFAULT_CUTOFFS),
    "success": _TrecMeasure(_success, default_cutoffs=(1, 5, 10)),
}

#: trec_eval measure names understood by :func:`evaluate`.
SUPPORTED_MEASURES: tuple[str, ...] = tuple(_MEASURES)

_INTEGER_MEASURES = frozenset(name for name, m in _MEASURES.items() if m.integer)


def _unsupported(spec: str, why: str) -> ValueError:
    usage = ", ".join(
        f"{name}[.k1,k2,...]" if m.default_cutoffs else name for name, m in _MEASURES.items()
    )
    return ValueError(f"measures: {why} in {spec!r}; supported (trec_eval syntax): {usage}")


def _parse_measures(measures: Iterable[str] | str) -> list[tuple[str, str, int | None]]:
    """``["P.10,5", "map"]`` -> ``[("map", "map", None), ("P_5", "P", 5), ("P_10", "P", 10)]``.

    Output follows trec_eval's table order; cutoffs are sorted and merged across requests.
    """
    specs = [measures] if isinstance(measures, str) else list(measures)
    if not specs:
        raise _unsupported("", "no measure given")
    wanted: dict[str, set[int]] = {}
    for spec in specs:
        if not isinstance(spec, str):
            raise _unsupported(repr(spec), "not a string")
        name, dot, params = spec.partition(".")
        measure = _MEASURES.get(name)
        if measure is None:
            raise _unsupported(spec, f"unknown measure {name!r}")
        if dot and not measure.default_cutoffs:
            raise _unsupported(spec, f"{name!r} takes no parameters")
        if dot and not all(p.isdigit() and int(p) > 0 for p in params.split(",")):
            raise _unsupported(spec, "cutoffs must be positive integers separated by commas")
        cutoffs = {int(p) for p in params.split(",")} if dot else set(measure.default_cutoffs)
        wanted.setdefault(name, set()).update(cutoffs)
    columns: list[tuple[str, str, int | None]] = []
    for name, measure in _MEASURES.items():
        if name not in wanted:
            continue
        if measure.default_cutoffs:
            columns.extend((f"{name}_{k}", name, k) for k in sorted(wanted[name]))
        else:
            columns.append((name, name, None))
    return columns


def evaluate(
    qrels: Qrels,
    run: Run,
    *,
    measures: Iterable[str] | str,
    relevance_level: int = 1,
    max_docs: int | None = None,
    complete: bool = False,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Evaluate a run like ``trec_eval -q [-c] [-l L] [-M N] -m ... qrels run``.

    Parameters
    ----------
    qrels : dict
        ``{qid: {docno: level}}``.
    run : dict
        ``{qid: {docno: score}}``.
    measures : iterable of str
        trec_eval names and syntax: ``map``, ``Rprec``, ``recip_rank``, ``ndcg``, ``num_ret``,
        ``num_rel``, ``num_rel_ret`` and, with cutoffs, ``P.5,10`` (-> ``P_5``, ``P_10``),
        ``recall.k``, ``success.k``, ``ndcg_cut.k``. Without cutoffs ``P``, ``recall`` and
        ``ndcg_cut`` use 5,10,15,20,30,100,200,500,1000 and ``success`` 1,5,10.
    relevance_level : int, default 1
        ``-l``: minimum level that counts as relevant (not used by ``ndcg``/``ndcg_cut``).
    max_docs : int or None, default None
        ``-M``: evaluate only the first ``max_docs`` documents of each ranking.
    complete : bool, default False
        ``-c``: average over every qrels topic; topics missing from the run score 0.

    Returns
    -------
    per_query : dict
        ``{qid: {measure: value}}`` for every evaluated topic, in trec_eval's order.
    all : dict
        ``{measure: value}``: mean over evaluated topics, sum for ``num_*``.

    Raises
    ------
    ValueError
        On an unknown measure or bad parameter, or when no topic can be evaluated.

    Examples
    --------
    Relevant doc ``b`` ranks 2nd (``x`` scores higher); 2 relevant docs in the qrels.

    >>> per_query, summary = evaluate({"q1": {"a": 1, "b": 1}},
    ...                               {"q1": {"x": 0.9, "b": 0.5}},
    ...                               measures=["recip_rank", "P.2", "num_rel_ret"])
    >>> per_query["q1"]
    {'num_rel_ret': 1.0, 'recip_rank': 0.5, 'P_2': 0.5}
    """
    columns = _parse_measures(measures)
    arrays = to_arrays(
        qrels, run, relevance_level=relevance_level, max_docs=max_docs, complete=complete
    )
    if not arrays.qids:
        raise ValueError(
            "no topic to evaluate: no qid appears in both the qrels and the run "
            "(use complete=True to score missing topics as 0)"
        )
    rl = int(relevance_level)
    values = [
        # trec_eval reports an undefined value (e.g. AP without relevant docs) as 0.
        np.nan_to_num(_MEASURES[name].compute(arrays, k, rl).astype(np.float64), nan=0.0)
        for _, name, k in columns
    ]
    names = [column for column, _, _ in columns]
    per_query = {
        qid: dict(zip(names, row))
        for qid, row in zip(arrays.qids, np.stack(values, axis=1).tolist())
    }
    summary = {
        column: float(v.sum() if _MEASURES[name].integer else v.mean())
        for (column, name, _), v in zip(columns, values)
    }
    return per_query, summary


def _base_name(column: str) -> str:
    base, _, suffix = column.rpartition("_")
    return base if base in _MEASURES and suffix.isdigit() else column


def format_trec(
    per_query: dict[str, dict[str, float]],
    all: dict[str, float],  # noqa: A002 - named after trec_eval's "all" row
    per_query_output: bool,
) -> str:
    """Render results exactly as trec_eval prints them.

    One line per value, ``"%-22s\\t%s\\t%.4f"`` (measure, topic, value), counts (``num_*``)
    as integers; per-topic lines first (when ``per_query_output``), then the ``all`` lines.

    Parameters
    ----------
    per_query : dict
        ``{qid: {measure: value}}`` from :func:`evaluate`.
    all : dict
        ``{measure: value}`` from :func:`evaluate`.
    per_query_output : bool
        Print the per-topic lines too (trec_eval ``-q``).

    Returns
    -------
    str
        The text, each line ending in a newline.

    Examples
    --------
    >>> print(format_trec({"q1": {"map": 0.5, "num_ret": 3.0}},
    ...                   {"map": 0.5, "num_ret": 3.0}, per_query_output=True),
    ...       end="")  # doctest: +NORMALIZE_WHITESPACE
    map                   	q1	0.5000
    num_ret               	q1	3
    map                   	all	0.5000
    num_ret               	all	3
    """
    topics = [*per_query.items(), ("all", all)] if per_query_output else [("all", all)]
    lines = []
    for qid, values in topics:
        for column, value in values.items():
            if _base_name(column) in _INTEGER_MEASURES:
                lines.append(f"{column:<22}\t{qid}\t{int(value)}\n")
            else:
                lines.append(f"{column:<22}\t{qid}\t{value:.4f}\n")
    return "".join(lines)
