"""Hostile and odd TREC files through the real command line (in process), ``rag-bench score-run``.

Numbers are read as trec_eval's C code reads them (``atof`` for scores, ``atol`` for levels),
not as Python does: ``"1_0"`` is 1, not 10. Every refused file exits 2 and names file:line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag_bench.cli import main as cli

MB10 = 10 * 1024 * 1024


def all_value(out: str, measure: str) -> str:
    """The ``all`` value of ``measure`` in trec_eval text output."""
    rows = [line.split("\t") for line in out.splitlines()]
    (value,) = [v for name, topic, v in rows if name.strip() == measure and topic == "all"]
    return value


RunCli = Callable[..., tuple[int, str, str, Path, Path]]


@pytest.fixture
def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> RunCli:
    """``run_cli(qrels_bytes, run_bytes, *options)`` -> (exit code, stdout, stderr, qrels, run)."""

    def go(qrels: bytes, run: bytes, *options: str) -> tuple[int, str, str, Path, Path]:
        q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
        q.write_bytes(qrels)
        r.write_bytes(run)
        code = cli(["score-run", str(q), str(r), *options])
        captured = capsys.readouterr()
        return code, captured.out, captured.err, q, r

    return go


# --------------------------------------------------------------------------- read as C reads


def test_score_1_0_ranks_as_1_not_10(run_cli: RunCli) -> None:
    # Python's float("1_0") is 10.0, which would put the non-relevant "b" first (MAP 0.5,
    # P@1 0); trec_eval's atof reads 1.0, so the relevant "a" (9.0) is first.
    code, out, err, _, _ = run_cli(b"1 0 a 1\n1 0 b 0\n",
                                   b"1 Q0 a 1 9 tag\n1 Q0 b 2 1_0 tag\n", "-m", "map", "-m", "P.1")
    assert code == 0, err
    assert all_value(out, "map") == "1.0000" and all_value(out, "P_1") == "1.0000"


def test_relevance_1_0_is_level_1(run_cli: RunCli) -> None:
    # atol("1_0") is 1: with -l 2 only "b" (level 2) is relevant, found at rank 2 -> MAP 0.5.
    # Read as Python's int("1_0") == 10, "a" would be relevant too and MAP 1.0.
    code, out, err, _, _ = run_cli(b"1 0 a 1_0\n1 0 b 2\n",
                                   b"1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n", "-m", "map", "-l", "2")
    assert code == 0, err
    assert all_value(out, "map") == "0.5000"


@pytest.mark.parametrize(("score", "expected"), [("inf", "1.0000"), ("-inf", "0.5000"),
                                                 ("0x1p3", "1.0000"), ("1e400", "1.0000")])
def test_infinite_and_hex_scores_are_numbers(run_cli: RunCli, score: str, expected: str) -> None:
    # atof accepts them: "a" (relevant) ranks first unless its score is -inf.
    code, out, err, _, _ = run_cli(b"1 0 a 1\n1 0 b 0\n",
                                   f"1 Q0 a 1 {score} t\n1 Q0 b 2 7.5 t\n".encode(), "-m", "map")
    assert code == 0, err
    assert all_value(out, "map") == expected


def test_negative_relevance_is_judged_non_relevant(run_cli: RunCli) -> None:
    code, out, err, _, _ = run_cli(b"1 0 a -1\n1 0 b 1\n",
                                   b"1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n", "-m", "map")
    assert code == 0, err
    assert all_value(out, "map") == "0.5000"


# --------------------------------------------------------------------------- refused files


def test_huge_relevance_is_refused(run_cli: RunCli) -> None:
    # atol saturates at 2**63 - 1 and trec_eval then allocates max_rel + 1 counters: it fails.
    code, out, err, qrels, _ = run_cli(b"1 0 a 1\n1 0 b 99999999999999999999\n",
                                       b"1 Q0 a 1 1 t\n", "-m", "map")
    assert code == 2 and out == ""
    assert f"{qrels}:2: [level]" in err and "out of range" in err


def test_fractional_relevance_is_refused(run_cli: RunCli) -> None:
    code, out, err, qrels, _ = run_cli(b"1 0 a 0.5\n", b"1 Q0 a 1 1 t\n", "-m", "map")
    assert code == 2 and out == ""
    assert f"{qrels}:1: [level]" in err and "trec_eval would read it as 0" in err


def test_nan_score_is_refused(run_cli: RunCli) -> None:
    code, out, err, _, run = run_cli(b"1 0 a 1\n", b"1 Q0 a 1 1 t\n1 Q0 b 2 NaN t\n", "-m", "map")
    assert code == 2 and out == ""
    assert f"{run}:2: [score]" in err and "NaN" in err


@pytest.mark.parametrize(
    ("qrels", "run", "bad", "line", "needle"),
    [
        (b"1 0 a 1\n1 0 b\n", b"1 Q0 a 1 1 t\n", "qrels", 2, "found 3"),
        (b"1 0 a 1 extra\n", b"1 Q0 a 1 1 t\n", "qrels", 1, "found 5"),
        (b"1 0 a 1\n", b"1 Q0 a 1 1 t\n1 Q0 b 2 0.5\n", "run", 2, "found 5"),
        # Old-Mac "\r" line ends are whitespace to trec_eval: one 8-column line.
        (b"1 0 a 1\r1 0 b 1\r", b"1 Q0 a 1 1 t\n", "qrels", 1, "found 8"),
    ],
    ids=["qrels-3-columns", "qrels-5-columns", "run-5-columns", "cr-line-ends"],
)
def test_wrong_field_count_is_refused(
    run_cli: RunCli, qrels: bytes, run: bytes, bad: str, line: int, needle: str
) -> None:
    code, out, err, q, r = run_cli(qrels, run, "-m", "map")
    assert code == 2 and out == ""
    assert f"{q if bad == 'qrels' else r}:{line}:" in err and needle in err


@pytest.mark.parametrize(
    ("qrels", "run", "bad", "line"),
    [
        (b"1 0 a 1\n \t 0 b 1\n", b"1 Q0 a 1 1 t\n", "qrels", 2),
        (b"1 0 a 1\n", b"1 Q0 a 1 1 t\n\t \v Q0 b 2 1 t\n", "run", 2),
    ],
    ids=["qrels", "run"],
)
def test_whitespace_only_qid_shifts_columns_and_is_refused(
    run_cli: RunCli, qrels: bytes, run: bytes, bad: str, line: int
) -> None:
    # A qid of C whitespace is no qid: the line has a column too few, as trec_eval also finds.
    code, out, err, q, r = run_cli(qrels, run, "-m", "map")
    assert code == 2 and out == ""
    assert f"{q if bad == 'qrels' else r}:{line}:" in err and "expected" in err


def test_unicode_whitespace_qid_is_an_ordinary_qid(run_cli: RunCli) -> None:
    # U+00A0 is not whitespace to C's isspace(): trec_eval keeps it as the qid, and so do we.
    code, out, err, _, _ = run_cli("\u00a0 0 a 1\n".encode(), "\u00a0 Q0 a 1 1 t\n".encode(),
                                   "-m", "map", "-q")
    assert code == 0, err
    assert "map                   \t\u00a0\t1.0000\n" in out


def test_nul_byte_is_refused(run_cli: RunCli) -> None:
    code, out, err, _, run = run_cli(b"1 0 a 1\n", b"1 Q0 a 1 1 t\n1 Q0 b\x00c 2 0.5 t\n",
                                     "-m", "map")
    assert code == 2 and out == ""
    assert f"{run}:2:" in err and "NUL byte" in err


def test_non_utf8_docno_is_refused(run_cli: RunCli) -> None:
    code, out, err, qrels, _ = run_cli(b"1 0 a 1\n1 0 caf\xe9 1\n", b"1 Q0 a 1 1 t\n", "-m", "map")
    assert code == 2 and out == ""
    assert f"{qrels}:2:" in err and "not UTF-8" in err


def test_10mb_garbage_score_is_refused_with_a_short_message(run_cli: RunCli) -> None:
    run = b"1 Q0 a 1 1 t\n1 Q0 b 2 " + b"x" * MB10 + b" t\n"
    code, out, err, _, path = run_cli(b"1 0 a 1\n", run, "-m", "map")
    assert code == 2 and out == ""
    assert f"{path}:2: [score]" in err and f"({MB10} characters)" in err
    assert len(err) < 2000


def test_10mb_line_without_whitespace_is_refused(run_cli: RunCli) -> None:
    code, out, err, qrels, _ = run_cli(b"1 0 a 1\n" + b"7" * MB10 + b"\n", b"1 Q0 a 1 1 t\n",
                                       "-m", "map")
    assert code == 2 and out == ""
    assert f"{qrels}:2:" in err and "found 1" in err and len(err) < 2000


def test_10mb_docno_and_10mb_score_are_read(run_cli: RunCli) -> None:
    # trec_eval has no line length limit; a 10 MB docno is just a docno and a 10 MB score is
    # a number (here 1e10485759 -> inf, ranked first).
    docno = b"d" * MB10
    run = b"1 Q0 " + docno + b" 1 0.5 t\n1 Q0 a 2 1" + b"0" * MB10 + b" t\n"
    code, out, err, _, _ = run_cli(b"1 0 " + docno + b" 1\n1 0 a 0\n", run,
                                   "-m", "map", "-m", "num_ret")
    assert code == 0, err
    assert all_value(out, "map") == "0.5000" and all_value(out, "num_ret") == "2"
