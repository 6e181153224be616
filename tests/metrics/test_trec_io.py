"""Reading TREC qrels and run files: valid input, and malformed files -> DataError at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_bench.errors import DataError
from rag_bench.metrics.trec import read_qrels, read_run
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


@pytest.mark.parametrize("score", ["high", "nan", "NaN", "0.5.1"])
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
