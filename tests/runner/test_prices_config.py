"""The price table in config (``prices.*``, issue 44): typed like every key, checked, and never
part of the cell id -- prices change no output, so re-pricing keeps every cell."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hydra.errors import ConfigCompositionException

from rag_bench.errors import ConfigError
from rag_bench.evaluation.evaluation import Evaluation
from rag_bench.runner.config import cell_id, validate
from tests.conftest import REPO, compose_config


def test_a_changed_price_keeps_the_cell_id():
    plain = compose_config([])
    example = compose_config(["+prices=example"])
    changed = compose_config(["+prices=example", "prices.usd_per_hour=9.5",
                              "+prices.models.gemma3-270m.usd_per_1m_input_tokens=3.0"])
    assert example.prices.usd_per_hour == 0.2 and changed.prices.usd_per_hour == 9.5
    assert cell_id(plain, "fp") == cell_id(example, "fp") == cell_id(changed, "fp")
    assert cell_id(compose_config(["pipeline.k=3"]), "fp") != cell_id(plain, "fp")  # a real change still counts


def test_the_example_table_reaches_the_evaluation_with_the_stages_models():
    cfg = compose_config(["+prices=example", "retriever=dense"])
    validate(cfg)
    p = Evaluation.from_config(cfg).settings.prices
    assert p is not None and p.usd_per_hour == 0.2
    assert p.of("embedder").name == "all-MiniLM-L6-v2" and p.entry("all-MiniLM-L6-v2") is not None
    assert p.of("generator").name == "extractive" and not p.of("generator").named_model
    assert Evaluation.from_config(compose_config([])).settings.prices is None  # no table: no money


def test_a_negative_price_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"prices\.models\.example-api-llm\.usd_per_1m_input_tokens.*fix:"):
        validate(compose_config(["+prices=example", "prices.models.example-api-llm.usd_per_1m_input_tokens=-1"]))
    with pytest.raises(ConfigError, match=r"prices\.usd_per_hour must be a price >= 0"):
        validate(compose_config(["prices.usd_per_hour=-0.5"]))


def test_a_misspelt_price_key_is_refused_with_the_right_name():
    with pytest.raises(ConfigCompositionException):  # not in the schema: Hydra asks for `+`
        compose_config(["+prices=example", "prices.models.example-api-llm.usd_per_1m_input=1.0"])
    # `+` adds the key anyway: the check refuses it before any work, naming the right one
    with pytest.raises(ConfigError, match=r"did you mean prices\.models\.example-api-llm\.usd_per_1m_input_tokens"):
        validate(compose_config(["+prices=example", "+prices.models.example-api-llm.usd_per_1m_input=1.0"]))


def test_a_sweep_over_prices_is_refused_it_would_be_one_cell_computed_twice(tmp_path):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rag_bench.runner.sweeper import stage_order

    parse = OverridesParser.create().parse_overrides
    with pytest.raises(ConfigError, match=r"prices\.usd_per_hour is swept.*fix:"):
        stage_order(parse(["retriever=bm25,dense", "prices.usd_per_hour=0.1,0.2"]))
    with pytest.raises(ConfigError, match="prices is swept"):
        stage_order(parse(["+prices=example,other"]))
    assert len(stage_order(parse(["retriever=bm25,dense", "prices.usd_per_hour=0.1"]))) == 2  # one price: fine

    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", "prices.usd_per_hour=0.1,0.2",
                           "tracking=none", f"output.root={tmp_path}", "experiment.name=x"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "prices are not part of the cell id" in done.stderr + done.stdout
    assert not list(tmp_path.glob("x/*/DONE"))


def test_prices_never_name_a_cell():
    from omegaconf import OmegaConf

    from rag_bench import naming

    configs = [OmegaConf.to_container(compose_config(o), resolve=True) for o in
               (["+prices=example"], ["+prices=example", "prices.usd_per_hour=0.9", "chunker=fixed"])]
    assert naming.labels(configs, ["a", "b"]) == ["section", "fixed"]
