"""RAG_BENCH_STOCK_HYDRA=1 (stock Hydra: its composition, basic launcher, normal exit) and the wing
(ComposeOnce, hydra/launcher=rag_bench, covering validation, exit_now) write the same cell folders.

The sub-grid chunker=fixed,section x pipeline.k=3,5 of the demo covers every trick of the wing: a
group override and a value override (ComposeOnce's template per group choice and value replay),
four jobs through the launcher, the covering validation (2 of 4 jobs composed when fast), and the
console script's exit. Compared byte for byte, except what is a measured time or the output root:

* metrics.json: the ``latency`` section (chunk_s, index_s, retrieve_s, score_s, retrieve_p50/p95_ms)
  are wall-clock timings, different on every run;
* records.parquet: the ``retrieve_ms`` column (per-question wall-clock retrieval time);
* config.yaml: ``output.root`` (each run writes to its own folder).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag_bench.fast import STOCK_ENV

BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"
TIMING_COLUMNS = {"retrieve_ms"}


def _sweep(out: Path, stock: bool) -> dict[str, dict[str, bytes]]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", STOCK_ENV)}
    # Each run its own cache: both cold, so cost/* (cache hits, generations_cached) compare too.
    env.update({"TQDM_DISABLE": "1", "RAG_BENCH_CACHE": str(out / "cache"), **({STOCK_ENV: "1"} if stock else {})})
    done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", "pipeline.k=3,5",
                           f"output.root={out}", "tracking=none"], env=env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    hydra = yaml.safe_load((out / "default" / ".hydra" / "multirun.yaml").read_text())["hydra"]
    assert hydra["runtime"]["choices"]["hydra/launcher"] == ("basic" if stock else "rag_bench")  # the switch reached Hydra
    return {cell.name: {f.name: f.read_bytes() for f in sorted(cell.iterdir())}
            for cell in sorted((out / "default").iterdir()) if not cell.name.startswith(".") and cell.name != "cache"}


def _without_timings(name: str, data: bytes, root: Path) -> object:
    if name == "metrics.json":
        metrics = json.loads(data)
        assert set(metrics.pop("latency")) >= {"chunk_s", "index_s", "retrieve_s"}
        return metrics
    if name == "records.parquet":
        frame = pd.read_parquet(io.BytesIO(data))
        assert TIMING_COLUMNS <= set(frame.columns)
        return frame.drop(columns=sorted(TIMING_COLUMNS)).to_json(orient="split", double_precision=15)
    if name == "config.yaml":
        return data.replace(str(root).encode(), b"<root>")
    if name == "question-runs.jsonl":  # the stored run: its timings are measured on each run
        return [_untimed(json.loads(line)) for line in data.splitlines()]
    return data


def _untimed(value: object) -> object:
    """A stored run's line without what is measured (stage timings, latencies, seconds)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items()
                if k not in ("timings", "seconds") and not k.endswith(("_ms", "_s"))}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


@pytest.mark.slow
def test_stock_hydra_and_the_wing_write_the_same_cells(tmp_path):
    stock, fast = _sweep(tmp_path / "stock", stock=True), _sweep(tmp_path / "fast", stock=False)
    assert len(stock) == 4 and set(stock) == set(fast)
    for cell, files in stock.items():
        assert set(files) == set(fast[cell]), cell
        for name, data in files.items():
            assert _without_timings(name, data, tmp_path / "stock") == \
                _without_timings(name, fast[cell][name], tmp_path / "fast"), f"{cell}/{name}"
