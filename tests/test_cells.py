"""rag_bench.cells: the cell's config.yaml is written exactly as OmegaConf.to_yaml writes it, and read
back (with libyaml's parser) as the config it was written from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from rag_bench.cells import _YAML_LOADER, config_yaml
from tests.conftest import compose_config

CONF = Path(__file__).resolve().parents[1] / "rag_bench" / "conf"
GROUPS = ["chunker", "embedder", "index", "retriever", "reranker", "generator", "judge", "tracking"]
AWKWARD = ["null", "~", "true", "No", "1e3", "0x1F", "012", "1_000", ".inf", "", " lead", "trail ", "a: b",
           "- x", "#c", "x #c", "'q'", '"dq"', "multi\nline\n", "tab\tin", "ünïcødé — ☃", "日本語のテキスト",
           "\u200b", "back\\slash", "%x", "@at", "`tick`", "{a: 1}", "[1, 2]", "*ref", "&anchor",
           "!tag", "? q", "x" * 300, " ".join(["word"] * 80), "2026-12-01", "12:30:00", "=", "<<"]


def _same(cfg) -> None:
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    text = config_yaml(plain)
    assert text == OmegaConf.to_yaml(cfg, resolve=True)
    assert yaml.safe_load(text) == plain
    assert yaml.load(text, Loader=_YAML_LOADER) == plain  # how load_cell reads it back (libyaml)


@pytest.mark.parametrize("group", GROUPS)
def test_config_yaml_equals_omegaconf_for_every_shipped_option(group):
    for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
        _same(compose_config([f"{group}={option}"]))


@pytest.mark.parametrize("extra", [[], ["emoji 🙂"]], ids=["libyaml", "beyond-bmp"])
def test_config_yaml_equals_omegaconf_for_awkward_values(extra):
    values = {f"v{i}": s for i, s in enumerate(AWKWARD + extra)}
    values.update(nums=[0, -1, 1.5, 1e-12, 1e300, float("inf"), True, None], nested={"deep": {"list": AWKWARD[:8]}},
                  **{k: 1 for k in ("null", "1", "yes", "a b", "ü")})
    _same(OmegaConf.create(values))


def test_metrics_json_reads_back_as_written_with_its_measures_block_one_line_per_key():
    import json
    import math

    from rag_bench.cells import metrics_json

    metrics = {"retrieval": {"hit@5": 0.5, "mrr": math.nan}, "ci": {"retrieval/hit@5": [0.25, 0.75]},
               "measures": {"retrieval/hit@5": {"direction": "higher", "params": {"eval.gain": "linear"}},
                            "retrieval/mrr": {"direction": "higher", "params": {}}}, "warnings": []}
    text = metrics_json(metrics)
    back = json.loads(text)
    assert back["retrieval"] == {"hit@5": 0.5, "mrr": None} and back["measures"] == metrics["measures"]
    assert back["ci"] == metrics["ci"] and back["warnings"] == []
    block = text[text.index('"measures": {'):].splitlines()
    assert block[1].startswith('    "retrieval/hit@5": {') and block[2].startswith('    "retrieval/mrr": {')
    assert json.loads(metrics_json({"retrieval": {"hit@5": 1.0}})) == {"retrieval": {"hit@5": 1.0}}
