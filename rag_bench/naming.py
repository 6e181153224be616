"""Cell names from the parameters that vary: the same short label in report tables and charts,
the leaderboard and MLflow run names; and a config's flat ``stage.key`` form (:func:`flat_params`),
which MLflow logs as params.

An *axis* is a config key whose value differs between the cells of a sweep: a stage's option
(``chunker`` → its ``name``), a parameter of one option (``chunker.size`` among ``fixed`` cells),
or any other key (``pipeline.k``). A cell's label lists its value on every axis, in stage order,
so ``fixed k=3`` and ``fixed k=5`` are told apart and no label carries a hash. Keys that never
change results (output folders, tracking) are never axes.

>>> configs = [{"chunker": {"name": "fixed", "size": 400}, "retriever": {"name": "bm25"}, "pipeline": {"k": k}}
...            for k in (3, 5)]
>>> labels(configs)
['k=3', 'k=5']
>>> label(configs[0], ["chunker", "retriever", "pipeline.k"])
'fixed bm25 k=3'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_bench.components import PARSER, QUERY, STAGES

# The groups a cell is named by: the parser (when a sweep varies it: parser=pypdf), the stages and
# the query transform (when a sweep varies it: q=rewrite).
NAMED = (PARSER, *STAGES[:4], QUERY, *STAGES[4:])

# Never axes: where results go, not what they are (nor what they cost: prices).
IGNORED = ("experiment", "output", "tracking", "hydra", "system.source", "system.sha256", "system.format",
           "dataset.fingerprint", "prices")
# Stages whose option names read on their own; the others get a prefix (``rr=dense``), so a
# dense reranker is not mistaken for a dense retriever.
BARE = ("chunker", "retriever")
PREFIX = {"query": "q", "embedder": "emb", "index": "idx", "reranker": "rr", "generator": "gen", "judge": "judge"}
MAX_VALUE = 24


def flat_params(config: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as ``{"chunker.size": 300, ...}`` (MLflow params).

    >>> flat_params({"chunker": {"name": "fixed", "size": 3}, "seed": 0})
    {'chunker.name': 'fixed', 'chunker.size': 3, 'seed': 0}
    """
    out: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = node

    walk("", config)
    return out


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: node}


def _ignored(key: str) -> bool:
    return any(key == p or key.startswith(p + ".") for p in IGNORED) or key.endswith("._target_")


def _value(v: Any) -> str:
    if isinstance(v, float):
        text = f"{v:g}"
    elif isinstance(v, (list, tuple)):
        text = ",".join(_value(x) for x in v)
    else:
        text = str(v)
    if len(text) > MAX_VALUE:  # a path: its last part names it
        text = text.rstrip("/").rsplit("/", 1)[-1]
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def axes(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The keys that vary across ``configs``, in stage order: a stage (``chunker``) when its option
    differs, ``stage.param`` when a parameter differs between cells of the same option, then every
    other varying key (``pipeline.k``)."""
    flats = [_flat(c) for c in configs]
    out: list[str] = []

    def varies(key: str, among: Iterable[dict[str, Any]]) -> bool:
        return len({repr(f.get(key)) for f in among}) > 1

    for g in NAMED:
        if varies(f"{g}.name", flats):
            out.append(g)
        params = sorted({k for f in flats for k in f if k.startswith(g + ".") and k != f"{g}.name"})
        by_option: dict[str, list[dict[str, Any]]] = {}
        for f in flats:
            by_option.setdefault(repr(f.get(f"{g}.name")), []).append(f)
        out += [k for k in params if not _ignored(k) and any(varies(k, peers) for peers in by_option.values())]
    rest = sorted({k for f in flats for k in f if k.split(".", 1)[0] not in NAMED})
    out += [k for k in rest if not _ignored(k) and varies(k, flats)]
    return out


def system(config: Mapping[str, Any]) -> str | None:
    """The name of the external system whose outputs a cell scored (``rag-bench evaluate``), else None.

    >>> system({"system": {"name": "kettleby_app"}}), system({"chunker": {"name": "fixed"}})
    ('kettleby_app', None)
    """
    node = config.get("system")
    name = node.get("name") if isinstance(node, Mapping) else None
    return str(name) if name else None


def label(config: Mapping[str, Any], keys: Sequence[str]) -> str:
    """``config``'s values on ``keys`` (axes, see :func:`axes`) as one short label; an external
    system is named by what it is, ``app=<name>`` (its stages are not ours to name).

    >>> label({"system": {"name": "kettleby_app"}, "retriever": {"name": "kettleby_app"}}, ["retriever"])
    'app=kettleby_app'
    """
    app = system(config)
    if app is not None:
        return f"app={_value(app)}"
    flat = _flat(config)
    leaves = [k.rsplit(".", 1)[-1] for k in keys if k not in NAMED]
    parts = []
    for key in keys:
        if key in NAMED:
            name = _value(flat.get(f"{key}.name", "?"))
            parts.append(name if key in BARE else f"{PREFIX.get(key, key)}={name}")
            continue
        if key not in flat:
            continue  # a parameter of another option
        leaf = key.rsplit(".", 1)[-1]
        shown = leaf if leaves.count(leaf) == 1 else key
        parts.append(f"{shown}={_value(flat[key])}")
    return " ".join(parts)


def fallback(config: Mapping[str, Any]) -> str:
    """The label of a cell alone (nothing varies): its chunker and retriever, and the reranker
    when there is one."""
    keys = ["chunker", "retriever"] + (["reranker"] if _flat(config).get("reranker.name") not in (None, "none") else [])
    return label(config, keys)


def _own(configs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [c for c in configs if system(c) is None]


def labels(configs: Sequence[Mapping[str, Any]], ids: Sequence[str] | None = None) -> list[str]:
    """One label per config from the keys that vary between them; a label two cells would share
    (same values, e.g. different datasets under one name) gets the cell id appended. The axes are
    those of the pipeline's own cells: an external system's cell (``app=<name>``) adds none."""
    keys = axes(_own(configs))
    out = [label(c, keys) if keys else fallback(c) for c in configs]
    if ids is not None:
        seen: dict[str, int] = {}
        for text in out:
            seen[text] = seen.get(text, 0) + 1
        out = [f"{t} [{i}]" if seen[t] > 1 else t for t, i in zip(out, ids)]
    return [t or fallback(c) for t, c in zip(out, configs)]


def sweep_axes(overrides: Iterable[str]) -> list[str]:
    """The axes a sweep's overrides declare (those with several values: ``chunker=fixed,section``,
    ``pipeline.k=3,5``, ``range(..)``), in the order :func:`axes` gives them. What a cell knows of
    its sweep when it names its MLflow run, before the other cells exist.

    >>> sweep_axes(["pipeline.k=3,5", "chunker=fixed,section", "tracking=none", "chunker.size=100,200"])
    ['chunker', 'chunker.size', 'pipeline.k']
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    keys = []
    for text in overrides:
        try:
            o = parser.parse_override(text)
        except Exception:  # noqa: BLE001 -- Hydra reports bad overrides itself
            continue
        key = o.get_key_element().lstrip("+~")
        if o.is_sweep_override() and "/" not in key and "@" not in key and not _ignored(key):
            keys.append(key)

    def rank(key: str) -> tuple[int, str]:
        head = key.split(".", 1)[0]
        return (NAMED.index(head) if head in NAMED else len(NAMED), key)

    return sorted(dict.fromkeys(keys), key=rank)


def value(config: Mapping[str, Any], key: str) -> str:
    """A config's value on one axis, as text: the option name for a stage, else the value.

    >>> value({"chunker": {"name": "fixed"}, "pipeline": {"k": 5}}, "chunker"), value({"pipeline": {"k": 5}}, "pipeline.k")
    ('fixed', '5')
    """
    flat = _flat(config)
    return _value(flat.get(f"{key}.name" if key in NAMED else key, "—"))
