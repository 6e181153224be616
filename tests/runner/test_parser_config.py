"""The parser group: auto changes no cell id (cells computed before the group existed resume), any
other parser makes new cells; a parser component is held to its protocol like every stage's."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf, open_dict

from rag_bench.errors import ConfigError
from rag_bench.runner.config import PROTOCOLS, build, cell_id, validate
from tests.conftest import compose_config


def test_auto_parser_keeps_the_cell_id_of_a_config_without_the_group():
    cfg = compose_config([])
    assert cfg.parser.name == "auto"
    before = compose_config([])
    with open_dict(before):
        del before["parser"]  # the config as composed before the parser group existed
    validate(before)  # a config without the group is still valid: it reads documents as auto
    assert cell_id(cfg, "fp") == cell_id(before, "fp")
    assert cell_id(compose_config(["parser=pypdf"]), "fp") != cell_id(cfg, "fp")
    assert cell_id(compose_config(["parser=pdfplumber"]), "fp") != cell_id(compose_config(["parser=pypdf"]), "fp")


def test_the_default_history_window_keeps_cell_ids_and_another_changes_them():
    before = OmegaConf.create(OmegaConf.to_container(compose_config([])))  # plain: its keys can be removed
    del before.pipeline["history_turns"], before.pipeline["history_chars"]  # before conversations existed
    assert cell_id(compose_config([]), "fp") == cell_id(before, "fp")
    assert cell_id(compose_config(["pipeline.history_turns=0"]), "fp") != cell_id(before, "fp")
    with pytest.raises(ConfigError, match=r"pipeline.history_chars must be >= 0.*fix: pipeline.history_chars=2000"):
        validate(compose_config(["pipeline.history_chars=-1"]))


@pytest.mark.parametrize("option", ["auto", "pypdf", "pdfplumber", "pymupdf4llm", "markitdown", "html2text",
                                    "python_docx"])
def test_every_parser_option_builds_and_meets_the_protocol(option):
    pytest.importorskip("pymupdf", reason="the parse extra is not installed")
    if option == "markitdown":
        pytest.importorskip("markitdown.converters", reason="the parse extra is not installed")
    parser = build(compose_config([f"parser={option}"]).parser, "parser")
    assert parser.name == option
    assert isinstance(parser.version(), str) and parser.version()
    assert PROTOCOLS.get("parser").__name__ == "Parser"


def test_an_unknown_parser_key_fails_before_any_work():
    cfg = compose_config(["parser=pypdf"])
    with open_dict(cfg):
        cfg.parser.tables = True  # pdfplumber's key, not pypdf's
    with pytest.raises(ConfigError, match="tables"):
        build(cfg.parser, "parser")
