"""Every private Hydra / OmegaConf / CPython name the speed wing (rag_bench.fast, fast/compose.py,
fast/launcher.py, the sweeper and launcher plugins) uses is still there, with the
parameters it is called with; and the Hydra functions whose steps the wing copies are unchanged.

An upgrade that removes or changes one fails here, naming it, instead of in a user's sweep. When one
fails: read the new Hydra code, adapt the wing (or run RAG_BENCH_STOCK_HYDRA=1 meanwhile), then
update the pin.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import inspect
import re
from typing import Any

import pytest

# (module, dotted attribute, the parameters the wing passes or None for a non-callable / no check)
NAMES: list[tuple[str, str, tuple[str, ...] | None]] = [
    ("hydra._internal.defaults_list", "_create_interpolation_map", ("overrides", "defaults_list", "self_added")),
    ("hydra._internal.defaults_list", "create_defaults_list", ("repo", "config_name", "overrides_list", "prepend_hydra",
                                                                 "skip_missing")),
    ("hydra._internal.config_loader_impl", "get_overrides_dirname", ("overrides", "exclude_keys", "item_sep", "kv_sep")),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl._apply_overrides_to_config", ("overrides", "cfg")),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl._process_config_searchpath",
     ("self", "config_name", "parsed_overrides", "repo")),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl._load_single_config", ("self", "default", "repo")),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl.ensure_main_config_source_available", ("self",)),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl.validate_sweep_overrides_legal",
     ("overrides", "run_mode", "from_shell")),  # a staticmethod
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl.load_configuration",
     ("self", "config_name", "overrides", "run_mode", "from_shell", "validate_sweep_overrides")),
    ("hydra._internal.config_repository", "CachingConfigRepository.load_config", ("self", "config_path")),
    ("hydra._internal.config_repository", "IConfigRepository", None),
    ("hydra._internal.hydra", "Hydra.create_main_hydra2", ("task_name", "config_search_path")),
    ("hydra._internal.deprecation_warning", "deprecation_warning", ("message",)),
    ("hydra._internal.core_plugins.basic_launcher", "BasicLauncher.launch", ("self", "job_overrides", "initial_job_idx")),
    ("hydra._internal.core_plugins.basic_sweeper", "BasicSweeper.split_arguments", ("overrides", "max_batch_size")),
    ("hydra._internal.core_plugins.basic_sweeper", "BasicSweeper.validate_batch_is_legal", ("self", "batch")),
    ("hydra._internal.core_plugins.basic_sweeper", "BasicSweeper._parse_config", ("self",)),
    ("hydra.core.utils", "_flush_loggers", ()),
    ("hydra.core.utils", "_save_config", ("cfg", "filename", "output_dir")),
    ("omegaconf.base", "parse", None),  # the interpolation parser, memoised where OmegaConf calls it
    ("omegaconf._utils", "parse", None),
    ("omegaconf.grammar_parser", "parse", ("value", "parser_rule", "lexer_mode")),
    ("omegaconf", "DictConfig._get_parent", ("self",)),
    ("omegaconf", "DictConfig._set_parent", ("self", "parent")),
    ("omegaconf", "DictConfig._get_flag", ("self", "flag")),
    ("omegaconf", "DictConfig._set_flag", ("self", "flags", "values")),
    ("omegaconf", "DictConfig._is_missing", ("self",)),
    ("omegaconf", "DictConfig._is_none", ("self",)),
]

# Functions whose steps the wing repeats (launcher.run_job is hydra.core.utils.run_job step by
# step; ComposeOnce._merge resumes _compose_config_from_defaults_list): their source, hashed.
COPIED: dict[str, str] = {
    "hydra.core.utils.run_job": "26777ed243485b7d",
    "hydra._internal.core_plugins.basic_launcher.BasicLauncher.launch": "6fb28562de94e1c1",
    "hydra._internal.config_loader_impl.ConfigLoaderImpl._load_configuration_impl": "3e21317d46cd512c",
    "hydra._internal.config_loader_impl.ConfigLoaderImpl._compose_config_from_defaults_list": "ce80effcba94d4df",
}


def _resolve(module: str, dotted: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in dotted.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj


@pytest.mark.parametrize(("module", "dotted", "params"), NAMES, ids=[f"{m}.{d}" for m, d, _ in NAMES])
def test_a_private_name_the_wing_uses_is_there(module, dotted, params):
    try:
        obj = _resolve(module, dotted)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{module}.{dotted} is gone ({exc}): the speed wing uses it")
    if params is not None:
        got = tuple(p for p in inspect.signature(obj).parameters if p not in ("cls",))
        assert got[:len(params)] == params, f"{module}.{dotted} now takes {got}, the wing passes {params}"


def test_the_loader_keeps_its_repository():
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    assert "self.repository" in inspect.getsource(ConfigLoaderImpl.__init__), \
        "ConfigLoaderImpl.repository is gone: ComposeOnce._repo wraps it"


def test_the_exit_hook_runner_is_there():
    assert callable(getattr(atexit, "_run_exitfuncs", None)), \
        "atexit._run_exitfuncs is gone: rag_bench.fast.exit_now falls back to sys.exit (slower, still correct)"


def _digest(dotted: str) -> str:
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = _resolve(".".join(parts[:i]), ".".join(parts[i:]))
            break
        except (ImportError, AttributeError):
            continue
    source = re.sub(r"\s+", " ", inspect.getsource(obj))
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@pytest.mark.parametrize("dotted", sorted(COPIED))
def test_a_hydra_function_the_wing_repeats_is_unchanged(dotted):
    assert _digest(dotted) == COPIED[dotted], \
        f"{dotted} changed in this Hydra: compare it with the wing's copy of its steps, then update the pin"
