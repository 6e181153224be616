"""What a component is: the stages of a pipeline named once, the null component, and how a
component is held to its stage's protocol (required methods, optional capabilities).

Every list of stage names in the package comes from :data:`STAGES`: the config groups the runner
builds, the sweep's loop order, the identity columns of leaderboards and reports, the MLflow tags
of a cell (live and synced alike). A stage's *protocol* (``typing.Protocol`` in the stage's
``base.py``) says what a component must provide; methods decorated :func:`optional` are
capabilities with a declared no-op default, looked up through :func:`capability` so a component
that does not offer one still works. Which protocol a config group's components implement is the
runner's table (:data:`rag_bench.runner.config.PROTOCOLS`): this module imports no stage. "No
component" is a null object deriving from :class:`Null` (``reranker=none``, ``generator=none``,
``judge=none``, ``tracking=none``), tested with :func:`is_null` and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# The pipeline's stages, in data-flow order (docs/contract.md §2); each is a config group of conf/.
STAGES = ("chunker", "embedder", "index", "retriever", "reranker", "generator", "judge")
# Where results go besides the cell folder: a config group too, but not a stage of the pipeline.
TRACKING = "tracking"
# How document files (.pdf, .html, .docx) become text, before chunking (rag_bench.parsing): a
# config group of its own, not one of STAGES (a leaderboard's identity columns, a cell's tags),
# so the cells of datasets without such files stay what they were.
PARSER = "parser"
# What the retriever searches for, made from the question and its conversation (rag_bench.query):
# a config group between the question and retrieval, not one of STAGES either, so the cells
# without a transform (query=none, the default) stay what they were.
QUERY = "query"
COMPONENT_GROUPS = (PARSER, QUERY, *STAGES, TRACKING)
# The stages that make up the retrieval pipeline: the identity columns of a leaderboard.
RETRIEVAL_STAGES = STAGES[:5]
# The stages a short cell label names (others only when they vary).
LABEL_STAGES = ("chunker", "retriever", "reranker")
# The stages a cell's console summary line names.
CONSOLE_STAGES = ("chunker", "retriever", "reranker", "index", "generator")
# Override keys in loop order for the sweeper: the dataset, then every stage; others innermost.
SWEEP_ORDER = ("dataset", PARSER, *STAGES[:4], QUERY, *STAGES[4:])

class Null:
    """Marker base of the null objects that stand for "no component" in a stage."""


def is_null(component: Any) -> bool:
    """True for the null object of a stage (``reranker=none``, ``generator=none``, ...)."""
    return isinstance(component, Null)


def optional(method: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a protocol method as an optional capability; its body is the default behaviour."""
    method.__rag_bench_optional__ = True  # type: ignore[attr-defined]
    return method


def required_methods(proto: type) -> tuple[str, ...]:
    """Public methods of the protocol ``proto`` that a component must have (optional ones excluded)."""
    names = []
    for klass in reversed(proto.__mro__):
        for name, value in vars(klass).items():
            if (name.startswith("_") or not callable(value) or getattr(value, "__rag_bench_optional__", False)
                    or klass.__module__ in ("typing", "builtins")):
                continue
            if name not in names:
                names.append(name)
    return tuple(names)


def missing_methods(cls: type, proto: type) -> list[str]:
    """Required methods of the protocol ``proto`` that ``cls`` lacks (empty when it implements it)."""
    return [m for m in required_methods(proto) if not callable(getattr(cls, m, None))]


def capability(component: Any, proto: type, name: str) -> Callable[..., Any]:
    """The component's optional method ``name``, or the protocol's declared default bound to it."""
    default = getattr(proto, name, None)
    if not getattr(default, "__rag_bench_optional__", False):
        raise AttributeError(f"{name} is not an optional capability of the {proto.__name__} protocol")
    own = getattr(component, name, None)
    if callable(own):
        return own  # type: ignore[no-any-return]
    return lambda *args, **kwargs: default(component, *args, **kwargs)  # type: ignore[misc]


def stage_names(config: Mapping[str, Any], stages: tuple[str, ...] = STAGES) -> dict[str, str]:
    """``{stage: option name}`` of a (resolved, plain) config, e.g. ``{"chunker": "section", ...}``."""
    out = {}
    for g in stages:
        node = config.get(g)
        out[g] = str(node.get("name", "")) if isinstance(node, Mapping) else ""
    return out

