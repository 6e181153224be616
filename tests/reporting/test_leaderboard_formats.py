"""``rag-bench leaderboard --format table|csv|json|markdown --columns``, on real cells."""

from __future__ import annotations

import io
import json

import pandas as pd

from rag_bench.cli import main as cli


def test_formats_and_columns(demo_cells, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "140")  # the width the table is fitted to, whatever runs the test
    exp = str(demo_cells["baseline"].path.parent)
    assert cli(["leaderboard", exp, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["rows"]
    # the primary measure: the stand-in generator's cells are ranked by context or refusal, not by its answers
    assert data["sort_by"] == "answer/context_all" and len(rows) == 3
    values = [r["answer/context_all"] for r in rows]
    assert data["verdict"]["measure"] == "answer/context_all" and data["verdict"]["best"] == rows[0]["cell"]
    assert [r["not_worse"] for r in rows].count(True) == len(data["verdict"]["close"])
    assert values == sorted(values, reverse=True)
    assert {"label", "cell", "chunker", "retriever", "k", "ci_lo", "ci_hi", "n"} <= set(rows[0])
    best = demo_cells["baseline"] if demo_cells["baseline"].cell_id == rows[0]["cell"] else None
    if best is not None:
        assert rows[0]["retrieval/ndcg@10"] == best.metrics["retrieval"]["ndcg@10"]  # full precision

    assert cli(["leaderboard", exp, "--format", "csv", "--columns", "ndcg@10,generation/correct"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    # the ranking measure first, then the columns asked for; its interval, n and the verdict's mark
    assert list(frame.columns)[-7:] == ["answer/context_all", "retrieval/ndcg@10", "generation/correct", "ci_lo",
                                        "ci_hi", "n", "not_worse"]

    assert cli(["leaderboard", exp, "--format", "markdown", "--columns", "hit@5"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0].startswith("Best: ") and md[2].startswith("| cell | ≈best |") and len(md) == 7

    assert cli(["leaderboard", exp]) == 0
    text = capsys.readouterr().out
    # fits a terminal: the table and the prose above it (the verdict's own line is kept whole, to grep for)
    wide = [line for line in text.splitlines() if len(line) > 140 and not line.startswith("Best: ")]
    assert not wide, wide
    assert "k1=1.3" in text  # named by what varies


def test_unknown_column_says_what_exists(demo_cells, capsys):
    exp = str(demo_cells["baseline"].path.parent)
    assert cli(["leaderboard", exp, "--columns", "ndcgg@10"]) == 2
    assert "ndcg@10" in capsys.readouterr().err
    # a misspelt sort measure was ignored: the table came out sorted by its first column
    assert cli(["leaderboard", exp, "--sort-by", "ndcgg@10"]) == 2
    err = capsys.readouterr().err
    assert "--sort-by: 'ndcgg@10'" in err and "ndcg@10" in err
    assert cli(["leaderboard", exp, "--sort-by", "hit@5"]) == 0
    assert capsys.readouterr().out.startswith("Ranked by retrieval/hit@5.\nBest: ")


def test_sorting_follows_each_columns_declared_direction():
    """counts/* and latency/* sorted largest first (the highest latency "best") before every
    metrics.json number declared its direction."""
    from rag_bench.reporting.leaderboard import leaderboard_table

    cells = pd.DataFrame({"label": list("abc"), "cell": list("abc"), "k": [5] * 3,
                          "counts/unlocated_passages": [3, 0, 7], "latency/retrieve_p50_ms": [2.0, 9.0, 1.0],
                          "retrieval/ndcg@10": [0.5, 0.7, 0.6], "counts/chunks": [10, 30, 20]})

    def order(key):
        return list(leaderboard_table(cells, sort_by=key, columns=[key])["cell"])

    assert order("counts/unlocated_passages") == ["b", "a", "c"]
    assert order("latency/retrieve_p50_ms") == ["c", "a", "b"]
    assert order("retrieval/ndcg@10") == ["b", "c", "a"]
    assert order("counts/chunks") == ["b", "c", "a"]  # descriptive: largest first, a display order


def test_an_exact_tie_names_the_same_best_cell_in_the_leaderboard_and_the_report():
    """Ties (with no cost and equal names) are broken by cell id, ascending, in both orderings;
    pandas' default sort is not stable, and the report and the leaderboard once named different
    best cells."""
    import pandas as pd

    from rag_bench.reporting.charts import ranked
    from rag_bench.reporting.leaderboard import best_first

    ids = [f"{i:012x}" for i in (7, 3, 9, 1, 5, 2, 8, 4, 6, 0) * 3][:25]
    ids = list(dict.fromkeys(ids)) + [f"{i:012x}" for i in range(100, 120)]
    frame = pd.DataFrame({"cell": ids, "retrieval/ndcg@10": [0.5] * len(ids)})
    assert best_first(frame, "retrieval/ndcg@10")["cell"].tolist() == sorted(ids)

    class Cell:
        def __init__(self, cid):
            self.cell_id, self.config, self.metrics = cid, {}, {}

        def metric(self, name):
            return 0.5

    assert [c.cell_id for c in ranked([Cell(i) for i in ids], "retrieval/ndcg@10", None)] == sorted(ids)


def test_the_failure_table_of_a_generating_sweep_fits_120_columns():
    """The demo's failure table was 136 characters wide (long label names as column heads); with the
    labels a generating sweep of the demo has, it fits 120 columns now (all 12 labels at once, which
    no sweep has, would not)."""
    import pandas as pd

    from rag_bench.reporting.leaderboard import format_failures

    row = {"cell": "c1", "label": "sentence hybrid rr=dense k=5", "retrieval/ndcg@10": 0.5}
    row.update({f"failures/{lab}": 12 for lab in ("retrieval_miss", "ranking", "false_refusal", "generation", "citation", "correct",
                                                   "correct_refusal", "hallucinated_answer")})
    text = format_failures(pd.DataFrame([row, {**row, "cell": "c2", "label": "fixed bm25 rr=none k=3"}]))
    assert max(len(line) for line in text.splitlines()) <= 120, text
    assert "halluc = hallucinated_answer" in text


def test_the_table_fits_the_terminal_and_says_what_it_left_out(demo_cells, capsys, monkeypatch):
    """The leaderboard was 117 columns whatever the width (issue 41): at 80 characters every table
    line fits, the label and the ranking measure with its CI stay, and a note names the columns
    left out and how to see them."""
    exp = str(demo_cells["baseline"].path.parent)
    monkeypatch.setenv("COLUMNS", "80")
    assert cli(["leaderboard", exp]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.lstrip().startswith("label") or " context_all" in line)
    table = [line for line in out[header:] if line and not line.startswith("(")]
    assert table and all(len(line) <= 80 for line in table), max(table, key=len)
    assert "context_all" in out[header] and "95% CI" in out[header]
    prose = [line for line in out[:header] if not line.startswith("Best: ")]  # the verdict's line kept whole
    assert all(len(line) <= 80 for line in prose), max(prose, key=len)
    note = " ".join(out[:header])
    assert "left out to fit 80 characters" in note and "--format csv or a wider terminal shows them" in note
    monkeypatch.setenv("COLUMNS", "400")
    assert cli(["leaderboard", exp]) == 0
    assert "left out to fit" not in capsys.readouterr().out


def test_the_failure_table_shortens_the_labels_of_the_whole_order_and_names_them():
    """The labels of issue 42 (before generation) get short heads, listed in attribution order, and
    the legend line names them in full."""
    import pandas as pd

    from rag_bench.reporting.leaderboard import format_failures

    row = {"cell": "c1", "label": "parent_child dense rr=none k=3", "retrieval/ndcg@10": 0.5}
    labels = ("correct", "context", "partial_evidence", "stale_version", "unauthorized", "retrieval_miss", "generation")
    row.update({f"failures/{lab}": 3 for lab in labels})
    text = format_failures(pd.DataFrame([row]))
    head = text.splitlines()[0].split()
    assert head == ["cell", "unauth", "stale", "retr_miss", "partial", "context", "generation", "correct"]
    for short in ("unauth = unauthorized", "stale = stale_version", "partial = partial_evidence"):
        assert short in text
    assert max(len(line) for line in text.splitlines()) <= 120, text
