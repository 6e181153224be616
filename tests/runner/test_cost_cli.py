"""Cost in money through the real CLI (issue 44): a two-cell sweep of the demo set with the example
price table, one cell priced and one whose embedder has no price. metrics.json holds the money
the records give by hand; the unpriced cell has none, warns naming the key, and the leaderboard
says "unpriced"; a changed price keeps the cell id; the numbers are what MLflow would log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.tracking.base import tracked_metrics
from tests.conftest import REPO

pytestmark = pytest.mark.slow
HOURLY = 0.2  # conf/prices/example.yaml usd_per_hour


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)


def _cells(folder: Path) -> dict[str, tuple[str, dict, pd.DataFrame]]:
    out = {}
    for metrics in sorted(folder.glob("*/metrics.json")):
        retriever = "dense" if "name: dense" in (metrics.parent / "config.yaml").read_text() else "bm25"
        out[retriever] = (metrics.parent.name, json.loads(metrics.read_text()),
                          pd.read_parquet(metrics.parent / "records.parquet"))
    return out


def test_a_priced_sweep_through_the_cli_gives_the_money_the_records_give(tmp_path):
    out = tmp_path / "out"
    # the example table without the packaged embedder's entry: the dense cell's embedder is unpriced
    done = _cli(tmp_path, "run", "-m", "retriever=bm25,dense", "tracking=none", "+prices=example",
                "~prices.models.all-MiniLM-L6-v2", f"output.root={out}", "experiment.name=cost")
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    cells = _cells(out / "cost")
    assert set(cells) == {"bm25", "dense"}

    bm25_id, m, records = cells["bm25"]
    c, n = m["cost"], len(records)
    # bm25 + the extractive generator: our code on our machine, priced on its seconds at $0.20/hour
    assert c["usd_retrieval"] == pytest.approx(records["retrieve_ms"].sum() / 1000.0 * HOURLY / 3600.0 / n)
    assert c["usd_generator"] == pytest.approx(records["generate_s"].sum() * HOURLY / 3600.0 / n)
    assert "usd_embedder" not in c  # bm25 sent the embedder nothing: it needs no price
    assert c["usd_per_question"] == pytest.approx(c["usd_retrieval"] + c["usd_generator"])
    assert c["usd_per_question"] > 0
    assert c["usd_per_1k_queries"] == pytest.approx(1000.0 * c["usd_per_question"])
    correct = int((records["correct"] == 1.0).sum())
    assert c["usd_per_correct_answer"] == pytest.approx(c["usd_per_question"] * n / correct)
    assert records["usd"].mean() == pytest.approx(c["usd_per_question"])
    assert m["measures"]["cost/usd_per_question"]["direction"] == "lower"
    assert "cost/usd_per_question" in tracked_metrics(m)  # what the cell's MLflow run logs

    _, dense, _ = cells["dense"]
    assert not any(k in dense["cost"] for k in ("usd_per_question", "usd_per_correct_answer", "usd_per_1k_queries"))
    assert "all-MiniLM-L6-v2" in dense["cost"]["unpriced"]
    assert any("unpriced" in w and "prices.models.all-MiniLM-L6-v2" in w for w in dense["warnings"])
    assert "prices.models.all-MiniLM-L6-v2" in done.stdout + done.stderr  # said on the console too

    board = _cli(tmp_path, "leaderboard", str(out / "cost"))
    assert board.returncode == 0, board.stderr
    rows = {line.split()[0]: line for line in board.stdout.splitlines() if line.startswith(("bm25", "dense"))}
    assert "usd_per_question" in board.stdout
    assert "unpriced" in rows["dense"] and "unpriced" not in rows["bm25"]
    assert f"{c['usd_per_question']:.3g}" in rows["bm25"]

    # another price: the same cell (id), priced anew
    again = _cli(tmp_path, "run", "retriever=bm25", "tracking=none", "+prices=example", "prices.usd_per_hour=0.4",
                 f"output.root={out}", "experiment.name=repriced")
    assert again.returncode == 0, again.stderr[-3000:]
    (cell_id, repriced, records2), = _cells(out / "repriced").values()
    assert cell_id == bm25_id
    assert repriced["cost"]["usd_retrieval"] == pytest.approx(
        records2["retrieve_ms"].sum() / 1000.0 * 0.4 / 3600.0 / len(records2))
