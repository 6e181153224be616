"""Collects every problem in a dataset before failing, so a user fixes them all in one pass."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from rag_bench.errors import DataError, Problem
from rag_bench.untrusted import control_characters


class ProblemLog:
    """Accumulates :class:`Problem` records; :meth:`raise_if_any` turns them into one DataError."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[Problem] = []

    def rel(self, path: Path) -> str:
        """Path as shown to the user: relative to the current folder when possible, the file named
        as written (a symbolic link is named, not its target: only the folders above it are
        resolved), bytes that are not UTF-8 shown as ``\\xNN``."""
        try:
            shown = str((path.parent.resolve() / path.name).relative_to(Path.cwd().resolve()))
        except ValueError:
            shown = str(path)
        return os.fsencode(shown).decode("utf-8", "backslashreplace")

    def add(self, path: Path, line: int, field: str, message: str, hint: str = "") -> None:
        """Record one problem."""
        self.problems.append(Problem(self.rel(path), line, field, message, hint))

    def raise_if_any(self, what: str) -> None:
        """Raise a DataError listing every problem recorded so far."""
        if self.problems:
            raise DataError(self.problems, f"{what}: {len(self.problems)} problem(s)")


# Ids of documents, questions and BEIR queries (docs/contract.md §3): strings of 1-200 characters
# without whitespace or control characters. A number is not an id (7 and "7" would collide).
ID_PATTERN = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")
MAX_DEPTH = 64  # nesting of a JSON line; the formats need 4


def read_text(path: Path, log: ProblemLog) -> str | None:
    """Read a UTF-8 text file; a BOM is dropped and CRLF/CR become LF (offsets index the result)."""
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        log.add(path, line, "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                "convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8")
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_id(value: Any, path: Path, lineno: int, field: str, log: ProblemLog, what: str = "id") -> str | None:
    """``value`` when it is a valid id (:data:`ID_PATTERN`), else None with the problem logged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        log.add(path, lineno, field, f"{what} {value!r} is a number, not a string",
                f'quote it: "{field.rsplit(".", 1)[-1]}": "{value}" (ids are strings; 7 and "7" would collide)')
    elif not isinstance(value, str) or not value:
        log.add(path, lineno, field, f"{what} missing or not a string", f'add "{field}": "..."')
    elif not ID_PATTERN.fullmatch(value):
        why = "longer than 200 characters" if len(value) > 200 else "contains whitespace or control characters"
        log.add(path, lineno, field, f"{what} {value[:80]!r} {why}",
                "TREC files need ids of 1-200 characters without whitespace; rename it")
    else:
        return value
    return None


def check_text(text: str, path: Path, lineno: int, field: str, log: ProblemLog) -> bool:
    """False, with the problem logged, when ``text`` holds a control character other than tab, newline
    and carriage return (C0, DEL, C1): invisible on a page, and in a terminal an ESC or BEL sequence
    rewrites the screen of whoever prints the question."""
    found = control_characters(text)
    if not found:
        return True
    pos, code = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    log.add(path, lineno, field, f"control character {code} at character {pos}{more}",
            "remove it (only tab, newline and carriage return may appear in a text)")
    return False


def normalise_id(value: str) -> str:
    """Form under which near-identical ids meet: case, whitespace, zero-padding of numbers.

    >>> normalise_id(" CACM-0634 ") == normalise_id("cacm-634")
    True
    """
    return re.sub(r"\d+", lambda m: str(int(m.group())), "".join(value.split()).casefold())


def did_you_mean(value: Any, known: Collection[str], index: dict[str, list[str]] | None = None) -> str:
    """`` (did you mean 'X'?)`` for an unknown id whose normalised form, or a close spelling, is known.

    Pass ``index`` (:func:`id_index` of ``known``) when asking many times over a large corpus: a
    lookup is then one dict access, and the spelling search runs only on corpora of <= 5000 ids.
    """
    if not isinstance(value, str):
        return ""
    idx = index if index is not None else id_index(known)
    hits = idx.get(normalise_id(value), [])
    if not hits and len(known) <= 5000:
        hits = difflib.get_close_matches(value, known, n=1, cutoff=0.8)
    return f" (did you mean {hits[0]!r}?)" if hits else ""


def id_index(known: Iterable[str]) -> dict[str, list[str]]:
    """Normalised id -> the known ids with that form (for :func:`did_you_mean` over many lookups)."""
    out: dict[str, list[str]] = {}
    for k in known:
        out.setdefault(normalise_id(k), []).append(k)
    return out


class _DuplicateKeys(dict):  # type: ignore[type-arg]
    """A JSON object that remembers keys written twice (json.loads keeps the last silently)."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = _DuplicateKeys(pairs)
    seen: set[str] = set()
    obj.duplicates = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return obj


def _depth_ok(text: str) -> bool:
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _walk(obj: Any, path: str, out: list[tuple[str, str]]) -> None:
    # (field, problem) for lone surrogates (cannot be written as UTF-8) and duplicate keys.
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            out.append((path, "contains a lone UTF-16 surrogate (an invalid \\ud8xx escape)"))
    elif isinstance(obj, dict):
        for k in getattr(obj, "duplicates", ()):
            out.append((f"{path}.{k}" if path else k, f"key {k!r} appears twice in one object"))
        for k, v in obj.items():
            _walk(k, path, out)
            _walk(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _walk(v, f"{path}[{i}]", out)


def read_jsonl(path: Path, log: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad lines go to ``log``.

    Refused with the line named, never a traceback: malformed JSON, integers of more than 4,300
    digits, nesting deeper than :data:`MAX_DEPTH`, duplicate keys in one object (JSON would keep
    the last one silently) and lone surrogates (text that cannot be written back as UTF-8).
    """
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.add(path, lineno, "", f"not valid UTF-8 (byte {exc.start} of the line)",
                    "save the file as UTF-8")
            continue
        if text.count("[") + text.count("{") > MAX_DEPTH and not _depth_ok(text):
            log.add(path, lineno, "", f"JSON nested deeper than {MAX_DEPTH} levels",
                    "each line is one flat question/document object")
            continue
        try:
            obj = json.loads(text, object_pairs_hook=_pairs)
        except json.JSONDecodeError as exc:
            log.add(path, lineno, "", f"malformed JSON: {exc.msg} at column {exc.colno}",
                    "each line must be one complete JSON object")
            continue
        except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
            log.add(path, lineno, "", f"unreadable JSON value: {str(exc)[:120]}",
                    "numbers must be ordinary integers or decimals")
            continue
        if not isinstance(obj, dict):
            log.add(path, lineno, "", f"expected a JSON object, got {type(obj).__name__}",
                    "each line must be one JSON object {...}")
            continue
        found: list[tuple[str, str]] = []
        _walk(obj, "", found)
        for field, message in found:
            log.add(path, lineno, field, message, "fix the value (write the text as valid UTF-8)"
                    if "surrogate" in message else "keep one of the two keys")
        if found:
            continue
        yield lineno, dict(obj)
