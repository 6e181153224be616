"""Shared fixtures: the demo and tiny datasets, config composition, the shared/ folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import settings as hypothesis_settings
from omegaconf import DictConfig

from rag_bench.data.loader import load_dataset
from rag_bench.domain import Dataset
from rag_bench.runner.config import CONF_DIR, DEMO_DATASET, register_configs

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny"
SHARED = REPO.parent / "shared"

register_configs()

# Property tests draw the same examples on every run: CI results do not depend on luck.
hypothesis_settings.register_profile("rag_bench", derandomize=True, deadline=None)
hypothesis_settings.load_profile("rag_bench")


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache(tmp_path_factory):
    """Tests never write to the user's ~/.cache: one embedding cache per test session. Cells are
    computed, never served from the session's cache (RAG_BENCH_REUSE=0): a test's monkeypatched
    code is not in a stored cell's key (tests/runner/test_reuse.py turns reuse on)."""
    import os

    old = os.environ.get("RAG_BENCH_CACHE")
    os.environ["RAG_BENCH_CACHE"] = str(tmp_path_factory.mktemp("embedding-cache"))
    os.environ["RAG_BENCH_REUSE"] = "0"
    yield
    if old is None:
        os.environ.pop("RAG_BENCH_CACHE", None)
    else:
        os.environ["RAG_BENCH_CACHE"] = old


@pytest.fixture(scope="session", autouse=True)
def _no_mlflow_files_in_the_working_folder():
    """Tests keep MLflow's files in their tmp_path: an experiment a test creates without an
    artifact_location keeps its runs' artifacts in ``<cwd>/mlruns`` (MLflow's default), in the
    checkout (tests/tracking/test_concurrency.py and test_mlflow_tracker.py did)."""
    stray = Path.cwd() / "mlruns"
    before = stray.exists()
    yield
    if not before and stray.exists():
        raise AssertionError(f"a test wrote MLflow artifacts to {stray} -- fix: create its experiment with "
                             "artifact_location=(tmp_path / 'mlartifacts').as_uri()")


def demo_subset(root: Path, ids: tuple[str, ...]) -> Path:
    """A copy of the demo set at ``root`` holding only the questions ``ids``, without its labels
    (they name the stand-in's answers: a real model's would not match them)."""
    import json
    import shutil

    shutil.copytree(DEMO_DATASET, root)
    rows = [line for line in (root / "questions.jsonl").read_text().splitlines()
            if line.strip() and json.loads(line)["id"] in ids]
    (root / "questions.jsonl").write_text("\n".join(rows) + "\n")
    (root / "labels.jsonl").unlink(missing_ok=True)
    return root


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The config `rag-bench run` would see for these overrides (without Hydra's runtime)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides or [])


@pytest.fixture
def compose_cfg() -> Callable[..., DictConfig]:
    """Function composing the project config from overrides."""
    return compose_config


@pytest.fixture(scope="session")
def demo_dataset() -> Dataset:
    """The built-in demo dataset, loaded and validated."""
    return load_dataset(DEMO_DATASET)


@pytest.fixture(scope="session")
def tiny_dataset() -> Dataset:
    """Three hand-made documents, six questions."""
    return load_dataset(TINY)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (conformance vectors, external datasets); tests skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: it holds the external conformance data and datasets")
    return SHARED


@pytest.fixture(scope="session")
def packaged_gguf(tmp_path_factory) -> Path:
    """The packaged GGUF (gemma3-270m, ~250 MB) assembled once per test session and worker, not once per
    test: each copy is disk (the suite once ran a CI machine out of it). Tests needing a cold model
    cache of their own (RAG_BENCH_CACHE) still assemble it there."""
    from rag_bench.errors import ConfigError
    from rag_bench.generation.llama_cpp import resolve_gguf

    try:
        return resolve_gguf("gemma3-270m", tmp_path_factory.mktemp("models"))
    except ConfigError as exc:  # the llm extra is not installed
        pytest.skip(str(exc))
