"""``rag-bench run -m … --plan`` through the real CLI (tracking=none, the tiny set, the packaged
MiniLM embedder, the openai generator against a local fake OpenAI-compatible endpoint so every
prompt sent is an HTTP request the test counts): the plan of a grid whose embeddings are half
cached counts the texts the run then embeds exactly and brackets the prompts it sends (exact for
the cells whose retrieval it could compute, a bound for the rest), and ``--plan=exact`` (the
missing vectors embedded in memory) counts them exactly; once every vector is cached the plain plan
counts the prompts exactly too; it prints money and time; and it changes nothing -- the output tree
and the cache folder are byte-identical before and after."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TINY
from tests.servers import JsonEndpoint, good_reply, serving

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
GRID = ["chunker=fixed,section", "retriever=bm25,dense", "pipeline.k=1,2"]  # 8 cells


class Chat(JsonEndpoint):
    def answer(self, body: Any) -> tuple[int, bytes]:
        return 200, json.dumps(good_reply(self.path, body)).encode()


def cli(tmp: Path, *args: str, reuse: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    env["RAG_BENCH_CACHE"] = str(tmp / "cache")
    if reuse:  # the cell cache on (tests/conftest.py turns it off for in-process tests)
        env["RAG_BENCH_REUSE"] = "1"
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"dataset.path={TINY}", "tracking=none",
                           f"output.root={tmp / 'out'}", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def tree(tmp: Path) -> dict[str, bytes]:
    """Every file of the output tree and the cache folder, with its bytes (an existing ``-shm``
    file's bytes aside: SQLite's shared-memory index of a database left in WAL mode, whose read
    marks any read-only reader updates; it holds no row and must not appear nor vanish)."""
    return {str(p.relative_to(tmp)): b"" if p.name.endswith("-shm") else p.read_bytes()
            for p in sorted(tmp.rglob("*")) if p.is_file()}


def planned(tmp: Path, *args: str, flag: str = "--plan", reuse: bool = False) -> dict[str, Any]:
    """Run ``--plan`` (or ``flag``); check it changed nothing; its figures."""
    before = tree(tmp)
    done = cli(tmp, *args, flag, reuse=reuse)
    assert done.returncode == 0, done.stderr[-3000:]
    assert tree(tmp) == before, "--plan changed a file"
    out = done.stdout
    emb = re.search(r"^\s+minilm:all-MiniLM-L6-v2\s+([\d,]+)\s+([\d,]+)$", out, re.M)
    gen = re.search(r"^\s+openai:local\s+([\d,]+)\s+([\d,]+)\s+([\d,]+|-)$", out, re.M)
    cells = re.search(r"cells: (\d+) in the grid, (\d+) already DONE, (?:(\d+) served by the cell cache \(.*?\), )?"
                      r"(\d+) to compute", out)
    assert cells, out

    def n(s: str) -> int:
        return 0 if s == "-" else int(s.replace(",", ""))

    return {"out": out, "cells": (int(cells[1]), int(cells[2]), int(cells[4])), "served": int(cells[3] or 0),
            "texts": (n(emb.group(1)), n(emb.group(2))) if emb else (0, 0),
            "prompts": (n(gen.group(1)), n(gen.group(2)), n(gen.group(3))) if gen else (0, 0, 0)}


def rows(path: Path, table: str) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        count = int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    conn.close()
    return count


def computed(exp: Path) -> int:
    """The texts the run's cells encoded (metrics.json cost/embeddings_computed, summed)."""
    return sum(json.loads(p.read_text())["cost"]["embeddings_computed"] for p in exp.glob("*/metrics.json"))


def test_plan_of_a_half_cached_grid_predicts_what_the_run_computes(tmp_path):
    cache = tmp_path / "cache"
    # Half of the grid's embeddings: the section chunks and the questions (one dense cell, no answers).
    half = cli(tmp_path, "chunker=section", "retriever=dense", "pipeline.k=1", "generator=none", "experiment.name=half")
    assert half.returncode == 0, half.stderr[-3000:]
    with serving(Chat) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        gen = ["generator=openai", f"generator.base_url={url}", "generator.concurrency=1", "+prices=example",
               "experiment.name=p"]
        plan = planned(tmp_path, *GRID, *gen)
        assert plan["cells"] == (8, 0, 8)
        new_texts, cached_texts = plan["texts"]
        assert new_texts > 0 and cached_texts > 0, plan["out"]  # half cached
        exact, cached_prompts, bound = plan["prompts"]
        assert exact > 0 and bound > 0 and cached_prompts == 0, plan["out"]  # fixed-chunk dense cells: a bound
        assert "(approximate)" not in plan["out"]
        # money: the local embedder at $/hour on the seconds the half run measured; the endpoint's model unpriced
        assert re.search(r"embedder minilm:all-MiniLM-L6-v2: \$[\d.]+ \(local: [\d,]+ texts x [\d.]+ ms measured",
                         plan["out"]), plan["out"]
        assert "generator openai:local: unpriced (set prices.models.local)" in plan["out"]
        assert re.search(rf"embedding {new_texts} texts \(minilm:all-MiniLM-L6-v2\): [\d.]+ s", plan["out"])
        assert "generating at most" in plan["out"] and "no measured throughput yet" in plan["out"]  # no answer yet
        assert "in memory" not in plan["out"]  # the fast plan encodes nothing

        # --plan=exact: the missing vectors embedded in memory (none stored), every prompt exact
        exact_plan = planned(tmp_path, *GRID, *gen, flag="--plan=exact")
        assert exact_plan["cells"] == (8, 0, 8) and exact_plan["texts"] == plan["texts"], exact_plan["out"]
        in_memory = re.search(r"exact: embedded ([\d,]+) texts in memory in [\d.]+ s"
                              r"( \(\+ [\d.]+ s loading the model\))?; not cached", exact_plan["out"])
        assert in_memory and int(in_memory.group(1).replace(",", "")) == new_texts, exact_plan["out"]
        exact_new, exact_cached, exact_bound = exact_plan["prompts"]
        assert exact_bound == 0 and exact_cached == 0, exact_plan["out"]
        assert exact <= exact_new <= exact + bound, (exact, bound, exact_new)
        assert "generating at most" not in exact_plan["out"], exact_plan["out"]

        vectors = rows(cache / "embeddings.sqlite", "vectors")
        done = cli(tmp_path, *GRID, *gen)
        assert done.returncode == 0, done.stderr[-3000:]
        # texts: exactly what the plan said, as the cells recorded them and as the cache grew
        assert computed(tmp_path / "out" / "p") == new_texts
        assert rows(cache / "embeddings.sqlite", "vectors") - vectors == new_texts
        # prompts: each distinct new prompt is one request; the plan's exact count and its bound bracket them
        sent = len(server.requests)
        assert sent == rows(cache / "generations.sqlite", "generations")
        assert exact <= sent <= exact + bound, (exact, bound, sent)
        assert sent == exact_new, (exact_new, sent)  # the exact plan's prompts: what the run sent

        again = planned(tmp_path, *GRID, *gen)
        assert again["cells"] == (8, 8, 0) and again["texts"] == (0, 0) and again["prompts"] == (0, 0, 0)

        # Every vector cached now: another generator config's prompts are counted exactly.
        other = [*GRID, *gen[:-1], "generator.max_tokens=64", "experiment.name=q"]
        plan = planned(tmp_path, *other)
        assert plan["texts"][0] == 0 and plan["prompts"][2] == 0, plan["out"]
        exact = plan["prompts"][0]
        assert exact > 0 and plan["prompts"][1] == 0
        assert re.search(r"generating \d+ answers \(openai:local\): [\d.]+ s", plan["out"]), plan["out"]  # measured now
        done = cli(tmp_path, *other)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) - sent == exact
        assert computed(tmp_path / "out" / "q") == 0
    prompts = [json.dumps([r["messages"], r["max_tokens"]], sort_keys=True) for r in server.requests]
    assert len(prompts) == len(set(prompts))


def test_plan_with_a_config_typo_exits_2_with_the_usual_error(tmp_path):
    done = cli(tmp_path, "chunker=fixd,section", "--plan")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "did you mean chunker=fixed" in done.stderr and "Traceback" not in done.stderr
    done = cli(tmp_path, "pipeline.kk=1,2", "--plan")
    assert done.returncode == 2 and "fix:" in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    done = cli(tmp_path, "chunker=fixed", "--plan=exactly")
    assert done.returncode == 2 and "--plan=exact" in done.stderr and "fix:" in done.stderr, done.stderr[-3000:]
    done = cli(tmp_path, "chunker=fixed", "--plan", "--plan=exact")
    assert done.returncode == 2 and "cannot be combined" in done.stderr, done.stderr[-3000:]
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_run_help_mentions_plan():
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "--plan" in done.stdout and "--plan=exact" in done.stdout


def test_exact_plan_of_a_remote_embedder_exits_2_and_nothing_is_created(tmp_path):
    """--plan=exact never calls a remote embedder (here a closed port): it says how many texts it would
    send and how to proceed, exit 2. Neither plan creates a file or folder -- before the fix, building
    the openai embedder made the cache folder (its cache was opened in the constructor)."""
    remote = ["embedder=openai", "embedder.base_url=http://127.0.0.1:9/v1", "retriever=dense", "generator=none"]
    done = cli(tmp_path, *remote, "--plan=exact")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert re.search(r"error: --plan=exact .* \d+ texts not cached for embedder openai:local "
                     r"\(http://127\.0\.0\.1:9/v1/embeddings\).* -- fix: ", done.stderr), done.stderr
    assert list(tmp_path.iterdir()) == []
    done = cli(tmp_path, *remote, "--plan")
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^\s+openai:local\s+\d+\s+0$", done.stdout, re.M), done.stdout
    assert list(tmp_path.iterdir()) == []


class ChatAndJudge(JsonEndpoint):
    """The generator's answers and rewrites (two claims, no citation) and the claim judge's verdicts (1)."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        judged = "Statement: " in body["messages"][-1]["content"]
        content = json.dumps({"verdict": 1}) if judged else json.dumps(
            {"answer": "Refunds take five days. Invoices are monthly.", "sources": []})
        return 200, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                                "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()


def test_plan_times_transform_and_judge_calls_and_leaves_out_cells_served_without_a_pipeline(tmp_path):
    """Issue 56 item 5: the query transform's calls and the judge's are in the time estimate (from
    the throughputs a run measured); cells DONE or served by the cell cache are counted apart,
    with no time; and the transform's prompts the plan counts are the requests the run sends."""
    pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")
    from rag_bench.query.llm import REPLY

    with serving(ChatAndJudge) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        args = ["pipeline.k=1,2", "retriever=bm25", "generator=openai", f"generator.base_url={url}",
                "generator.concurrency=1", "query=rewrite", "judge=ragas", f"judge.base_url={url}",
                "judge.metrics=[claim_faithfulness]", "judge.max_retries=0"]
        first = cli(tmp_path, *args, "experiment.name=a", reuse=True)  # measures the rates, fills the cell cache
        assert first.returncode == 0, first.stderr[-3000:]
        done = planned(tmp_path, *args, "experiment.name=a", reuse=True)
        assert done["cells"] == (2, 2, 0) and "nothing to compute" in done["out"], done["out"]
        served = planned(tmp_path, *args, "experiment.name=b", reuse=True)
        assert served["cells"] == (2, 0, 0) and served["served"] == 2, served["out"]
        assert "nothing to compute" in served["out"], served["out"]

        other = [*args, "generator.max_tokens=64", "experiment.name=c"]  # new prompts for the transform and the answers
        plan = planned(tmp_path, *other, reuse=True)
        out = plan["out"]
        assert plan["cells"] == (2, 0, 2), out
        rewrites = re.search(r"transforming (\d+) query transform calls \(openai:local \(query=rewrite\)\): [\d.]+ s "
                             r"\([\d.]+ ms/call\)", out)
        judged = re.search(r"judging at most ([\d,]+) calls \(ragas:local\): [\d.]+ s", out)
        assert rewrites and judged, out
        sent = len(server.requests)
        run = cli(tmp_path, *other, reuse=True)
        assert run.returncode == 0, run.stderr[-3000:]
        made = server.requests[sent:]
        assert sum(REPLY in r["messages"][-1]["content"] for r in made) == int(rewrites.group(1))
        # the judge's calls: at most the plan's (its cache serves the same answers again: none here)
        assert sum("Statement: " in r["messages"][-1]["content"] for r in made) <= int(judged.group(1).replace(",", ""))
