"""Reading TREC qrels and run files: valid input, and malformed files -> DataError at file:line."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_bench.errors import DataError
from rag_bench.metrics import trec
from rag_bench.metrics.trec import MAX_RELEVANCE_LEVEL, c_atof, c_atol, read_qrels, read_run
from rag_bench.metrics.trec_cli import main


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems_of(excinfo: pytest.ExceptionInfo[DataError]) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in excinfo.value.problems]


# --------------------------------------------------------------------------- valid input


def test_read_qrels(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "# judged by NIST\n1 0 a 1\n\n1 0 b -1\n2 0 a 0\n10 Q0 c 3\n")
    assert read_qrels(path) == {"1": {"a": 1, "b": -1}, "2": {"a": 0}, "10": {"c": 3}}


def test_read_run_keeps_file_order_and_ignores_trailing_text(tmp_path: Path) -> None:
    # results.trunc in the NIST test files has junk after the tag; trec_eval ignores it.
    path = write(
        tmp_path, "run",
        "1 Q0 b 2 0.5 tag\n1 Q0 a 1 1e-3 tag more junk here\n2\tQ0\tx\t1\t-7\ttag\n",
    )
    run = read_run(path)
    assert run == {"1": {"b": 0.5, "a": 0.001}, "2": {"x": -7.0}}
    assert list(run["1"]) == ["b", "a"]


# --------------------------------------------------------------------------- malformed qrels


def test_qrels_wrong_column_count(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "1 0 a 1\n1 0 b\n1 0 c 1 extra\n")
    with pytest.raises(DataError) as info:
        read_qrels(path)
    assert problems_of(info) == [(2, ""), (3, "")]
    message = str(info.value)
    assert f"{path}:2:" in message and f"{path}:3:" in message
    assert "expected 4 columns" in message and "found 3" in message and "found 5" in message


def test_qrels_non_integer_level(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "1 0 a 1\n1 0 b high\n1 0 c 0.5\n")
    with pytest.raises(DataError) as info:
        read_qrels(path)
    assert problems_of(info) == [(2, "level"), (3, "level")]
    assert f"{path}:2: [level] relevance level 'high' is not an integer" in str(info.value)


def test_qrels_duplicate_docno(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "1 0 a 1\n2 0 a 1\n1 0 a 0\n")
    with pytest.raises(DataError) as info:
        read_qrels(path)
    assert problems_of(info) == [(3, "docno")]
    assert "'a' is judged twice for topic '1'" in str(info.value)


def test_qrels_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "# nothing\n\n")
    with pytest.raises(DataError, match="no judgments") as info:
        read_qrels(path)
    assert problems_of(info) == [(0, "")]


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    with pytest.raises(DataError, match="cannot read file") as info:
        read_qrels(path)
    assert info.value.problems[0].file == str(path)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "qrels.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    with pytest.raises(DataError, match="not UTF-8"):
        read_qrels(path)


def test_problem_list_is_capped(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "bad\n" * 500)
    with pytest.raises(DataError, match="500 problem") as info:
        read_qrels(path)
    assert len(info.value.problems) == 50


# --------------------------------------------------------------------------- malformed runs


def test_run_too_few_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "1 Q0 a 1 0.5 tag\n1 Q0 b 2 0.4\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert problems_of(info) == [(2, "")]
    assert f"{path}:2:" in str(info.value) and "expected 6 columns" in str(info.value)


# "0.5.1" used to be refused too; trec_eval's atof reads it as 0.5, and so do we now
# (test_run_scores_read_as_c_atof).
@pytest.mark.parametrize("score", ["high", "nan", "NaN", "+", ".", "-nan", "nan(1)", "x1"])
def test_run_non_numeric_score(tmp_path: Path, score: str) -> None:
    path = write(tmp_path, "run", f"1 Q0 a 1 0.5 tag\n1 Q0 b 2 {score} tag\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert problems_of(info) == [(2, "score")]
    assert f"score {score!r} is not a number" in str(info.value)


def test_run_duplicate_docno(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "1 Q0 a 1 0.5 t\n2 Q0 a 1 0.5 t\n1 Q0 a 2 0.4 t\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert problems_of(info) == [(3, "docno")]
    assert "'a' is retrieved twice for topic '1'" in str(info.value)


def test_run_reports_every_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "1 Q0 a 1 x t\n1 Q0 b\n1 Q0 c 3 0.1 t\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert problems_of(info) == [(1, "score"), (2, "")]


# --------------------------------------------------------------------------- C number parsing
# trec_eval reads scores with atof (get_trec_results.c) and levels with atol (get_qrels.c).

PLAIN_DECIMAL = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?"


def same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@given(st.from_regex(re.compile(PLAIN_DECIMAL, re.ASCII), fullmatch=True))
@example("1e400")
@example("-0")
@example("4.9e-324")
@example("2.4703282292062328e-324")  # just above half the smallest subnormal: rounds up
def test_c_atof_is_float_on_plain_decimals(text: str) -> None:
    assert same_float(c_atof(text), float(text))


@given(st.floats(allow_nan=False))
def test_c_atof_reads_back_python_floats(value: float) -> None:
    assert same_float(c_atof(repr(value)), value)
    assert same_float(c_atof(value.hex()), value)


@given(st.integers(-(2**63), 2**63 - 1))
def test_c_atol_is_int_on_plain_integers(value: int) -> None:
    assert c_atol(str(value)) == value
    assert c_atol(f"+{value}" if value >= 0 else str(value)) == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1_0", 1.0),  # float("1_0") == 10.0
        (" 1.5x", 1.5),
        ("\t\v\f\r\n 2", 2.0),  # C whitespace is skipped...
        ("\u00a02", 0.0),  # ...but not Unicode whitespace, which float() skips
        ("1e", 1.0),
        ("1e+", 1.0),
        ("1e-x", 1.0),
        ("1.e2", 100.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("-.5e-1z", -0.05),
        ("+3", 3.0),
        ("0.5.1", 0.5),
        ("1,5", 1.0),  # the "C" locale's decimal point is "."
        ("0x10", 16.0),
        ("0X1P3", 8.0),
        ("0x1.8p1", 3.0),
        ("-0x.8", -0.5),
        ("0x", 0.0),  # "0" then junk
        ("0xg", 0.0),
        ("0x1p", 1.0),
        ("0x1p99999", math.inf),
        ("-0x1p99999", -math.inf),
        ("inf", math.inf),
        ("-INF", -math.inf),
        ("Infinity", math.inf),
        ("infinit", math.inf),  # "inf" then junk
        ("infx", math.inf),
        ("nAn", math.nan),
        ("-nan", math.nan),
        ("nan(0x1_a)", math.nan),
        ("nan(", math.nan),
        ("na", 0.0),
        ("in", 0.0),
        ("", 0.0),
        ("abc", 0.0),
        ("+", 0.0),
        ("-", 0.0),
        (".", 0.0),
        ("e5", 0.0),
        ("- 1", 0.0),
        ("\u0661", 0.0),  # ARABIC-INDIC DIGIT ONE: float() reads 1.0, C reads nothing
        ("1e400", math.inf),
        ("-1e400", -math.inf),
        ("1e-400", 0.0),
        ("9" * 400, math.inf),
        ("1" + "0" * 1000 + "e-1000", 1.0),
        ("1e" + "9" * 5000, math.inf),
    ],
)
def test_c_atof_odd_inputs(text: str, expected: float) -> None:
    assert same_float(c_atof(text), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1_0", 1),  # int("1_0") == 10
        (" \t-2x", -2),
        ("+7", 7),
        ("007", 7),
        ("0.9", 0),
        ("1e3", 1),
        ("0x10", 0),
        ("inf", 0),
        ("", 0),
        ("high", 0),
        ("+", 0),
        ("- 1", 0),
        ("\u0661", 0),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", 2**63 - 1),  # saturates, as glibc's strtol
        ("-9223372036854775808", -(2**63)),
        ("-9223372036854775809", -(2**63)),
        ("0" * 100_000 + "5", 5),
        ("9" * 100_000, 2**63 - 1),  # no int() on it: sys.int_max_str_digits would refuse
    ],
)
def test_c_atol_odd_inputs(text: str, expected: int) -> None:
    assert c_atol(text) == expected


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if platform.libc_ver()[0] != "glibc" or name is None:
        return None
    libc = ctypes.CDLL(name)
    libc.atof.restype, libc.atof.argtypes = ctypes.c_double, [ctypes.c_char_p]
    libc.atol.restype, libc.atol.argtypes = ctypes.c_long, [ctypes.c_char_p]
    libc.strtod.restype = ctypes.c_double
    libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
    libc.strtol.restype = ctypes.c_long
    libc.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
    return libc


def _used(buffer: ctypes.Array[ctypes.c_char], end: ctypes.c_char_p) -> int:
    """How many bytes of ``buffer`` strtod/strtol consumed (``end - buffer``)."""
    address = ctypes.cast(end, ctypes.c_void_p).value
    assert address is not None
    return address - ctypes.addressof(buffer)


LIBC = _glibc()
NUMBERISH = st.text(alphabet="0123456789.eEpPxX+-_() \t\n\v\f\rinfatyINFATYnabcdef\u00a0",
                    max_size=16)


@pytest.mark.skipif(LIBC is None, reason="needs glibc to compare with")
@settings(max_examples=2000)
@given(NUMBERISH)
@example("0x1.fffffffffffff8p1023")  # rounds up to overflow
@example("0x1p-1075")  # half the smallest subnormal: ties to even (0)
@example("0x1.0000000000001p-1075")
def test_c_atof_and_c_atol_agree_with_glibc(text: str) -> None:
    assert LIBC is not None
    raw = text.encode()
    assert same_float(c_atof(text), LIBC.atof(raw))
    assert c_atol(text) == LIBC.atol(raw)
    # How much of the field each reads (the readers use it): ASCII, so characters == bytes.
    if text.isascii():
        buffer, end = ctypes.create_string_buffer(raw), ctypes.c_char_p()
        value = LIBC.strtod(buffer, ctypes.byref(end))
        assert (trec._strtod(text)[1], same_float(trec._strtod(text)[0], value)) == (
            _used(buffer, end), True)
        value = LIBC.strtol(buffer, ctypes.byref(end), 10)
        assert trec._strtol(text) == (value, _used(buffer, end))


# --------------------------------------------------------------------------- read like trec_eval


def test_run_scores_read_as_c_atof(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "".join(
        f"1 Q0 d{i} {i} {score} tag\n"
        for i, score in enumerate(["1_0", "0.5.1", "2.5e", "0x1p3", "inf", "-Infinity", "1e400"])
    ))
    assert read_run(path) == {"1": {"d0": 1.0, "d1": 0.5, "d2": 2.5, "d3": 8.0, "d4": math.inf,
                                    "d5": -math.inf, "d6": math.inf}}


@pytest.mark.parametrize(
    ("text", "level"),
    [("1_0", 1), ("2x", 2), ("+3", 3), ("007", 7), ("2.0", 2), ("1e0", 1), ("-1", -1),
     ("-5.0", -5), (str(MAX_RELEVANCE_LEVEL), MAX_RELEVANCE_LEVEL)],
)
def test_qrels_levels_read_as_c_atol(tmp_path: Path, text: str, level: int) -> None:
    path = write(tmp_path, "qrels", f"1 0 a {text}\n")
    assert read_qrels(path) == {"1": {"a": level}}


@pytest.mark.parametrize(
    ("text", "why"),
    [("0.5", "would read it as 0"), ("1.5x", "would read it as 1"), ("1e3", "would read it as 1"),
     ("0x1", "would read it as 0"), ("inf", "would read it as 0"), ("nan", "would read it as 0"),
     ("x", "is not an integer"), ("+", "is not an integer"),
     (str(MAX_RELEVANCE_LEVEL + 1), "out of range"), ("-" + "9" * 30, "out of range")],
)
def test_qrels_levels_trec_eval_would_misread(tmp_path: Path, text: str, why: str) -> None:
    path = write(tmp_path, "qrels", f"1 0 a 1\n1 0 b {text}\n")
    with pytest.raises(DataError) as info:
        read_qrels(path)
    assert problems_of(info) == [(2, "level")]
    assert f"{path}:2: [level] relevance level" in str(info.value) and why in str(info.value)


def test_columns_split_on_c_whitespace_only(tmp_path: Path) -> None:
    # \v, \f and a stray \r separate columns as in C; U+00A0 and \x1c do not (str.split()
    # would split on them), so they stay inside the qid/docno as trec_eval keeps them.
    qrels = tmp_path / "qrels"
    qrels.write_bytes(b"1\v0\fa\r1\n1 0 \xc2\xa0b 1\n1 0 c\x1cd 1\r\n")
    assert read_qrels(qrels) == {"1": {"a": 1, "\u00a0b": 1, "c\x1cd": 1}}


def test_lone_carriage_returns_do_not_end_lines(tmp_path: Path) -> None:
    # Old-Mac line ends: trec_eval sees one line of 8 columns ("Malformed line"), not 2 lines.
    path = tmp_path / "qrels"
    path.write_bytes(b"1 0 a 1\r1 0 b 1\r")
    with pytest.raises(DataError, match="found 8") as info:
        read_qrels(path)
    assert problems_of(info) == [(1, "")]


def test_non_utf8_and_nul_are_reported_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "run"
    path.write_bytes(b"1 Q0 a 1 1.0 t\n1 Q0 caf\xe9 2 0.5 t\n1 Q0 b\x00c 3 0.1 t\n# caf\xe9\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert problems_of(info) == [(2, ""), (3, "")]
    message = str(info.value)
    assert f"{path}:2: not UTF-8 text" in message and f"{path}:3: NUL byte" in message


def test_long_fields_are_shortened_in_messages(tmp_path: Path) -> None:
    path = write(tmp_path, "run", f"1 Q0 a 1 {'x' * 100_000} t\n")
    with pytest.raises(DataError) as info:
        read_run(path)
    assert "(100000 characters)" in str(info.value) and len(str(info.value)) < 1000


# --------------------------------------------------------------------------- command line


def test_cli_reports_data_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = write(tmp_path, "qrels", "1 0 a 1\n")
    run = write(tmp_path, "run", "1 Q0 a 1 oops tag\n")
    assert main([str(qrels), str(run)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{run}:1: [score]" in captured.err


def test_cli_unknown_measure_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = write(tmp_path, "qrels", "1 0 a 1\n")
    run = write(tmp_path, "run", "1 Q0 a 1 1.0 tag\n")
    assert main([str(qrels), str(run), "-m", "bpref"]) == 2
    assert "unknown measure 'bpref'" in capsys.readouterr().err


def test_cli_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = write(tmp_path, "qrels", "1 0 a 1\n1 0 b 1\n2 0 a 0\n")
    run = write(tmp_path, "run", "1 Q0 x 1 2.0 t\n1 Q0 a 2 1.0 t\n2 Q0 a 1 1.0 t\n")
    assert main([str(qrels), str(run), "-q", "-m", "recip_rank", "-m", "num_rel"]) == 0
    assert capsys.readouterr().out == (
        "num_rel               \t1\t2\n"
        "recip_rank            \t1\t0.5000\n"
        "num_rel               \t2\t0\n"
        "recip_rank            \t2\t0.0000\n"
        "num_rel               \tall\t2\n"
        "recip_rank            \tall\t0.2500\n"
    )


def test_cli_help_mentions_measures(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "score-run" in out and "ndcg_cut" in out and "--json" in out


def test_run_lines_is_what_read_run_reads(tmp_path: Path) -> None:
    """The one reader of run lines (score-run and `evaluate --trec` both use it)."""
    path = write(tmp_path, "run", "# c\n1 Q0 a 1 1_0 t\n1 Q0 b 2 high t\n2 Q0 c 1 0x1p3 t more\n")
    problems: list = []
    lines = list(trec.run_lines(path, problems))
    assert lines == [(2, "1", "a", 1.0), (4, "2", "c", 8.0)]
    assert [(p.line, p.field) for p in problems] == [(3, "score")]
    fixed = write(tmp_path, "fixed", "# c\n1 Q0 a 1 1_0 t\n2 Q0 c 1 0x1p3 t more\n")
    assert read_run(fixed) == {q: {d: s} for _, q, d, s in lines}


@given(st.lists(st.floats(allow_nan=False, width=32) | st.sampled_from([1.0, 1.00000001, 0.0, -0.0]),
                max_size=12))
def test_trec_order_is_c_float_score_then_docno_descending(scores: list[float]) -> None:
    docnos = [f"d{i:02d}" for i in range(len(scores))][::-1]  # file order is not docno order
    expected = sorted(range(len(scores)), key=lambda i: (float(np.float32(scores[i])), docnos[i]), reverse=True)
    assert trec.trec_order(scores, docnos) == expected
