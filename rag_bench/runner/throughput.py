"""Throughputs measured by real runs on this machine, kept for ``rag-bench run --plan``'s time estimate.

Every cell a run computes adds what it measured to ``<cache>/throughput.json`` (the cache folder:
``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``, the machine's): the texts its embedder encoded and
the seconds that took (per embedder), the answers its generator produced and the seconds that took
(per generator), its query transform's model calls and their seconds (per transform, a cached
reply at its original time), its judge's calls and their seconds (per judge), and the rest of the
cell's wall time (per cell). The plan divides: seconds per embedded text, per generated answer,
per transform call, per judge call, per cell. Sums, not a last value, so one odd cell moves the
figure little; two processes finishing cells at once may lose one's addition (the file is replaced
whole, never half written): an estimate loses a sample, nothing else does.

The arithmetic is pure (:func:`sample_of`, :func:`added`, :func:`rates`); :func:`record` (or
:func:`add` of a :func:`measured` sample) and :func:`read` are the file's I/O.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE = "throughput.json"


def component_key(node: Any) -> str:
    """How the history names a stage's component: its option's name, its model and, when not
    torch, its backend (``minilm:all-MiniLM-L6-v2``, ``openai:local``).

    >>> component_key({"name": "minilm", "model": "all-MiniLM-L6-v2", "backend": "torch"})
    'minilm:all-MiniLM-L6-v2'
    >>> component_key({"name": "extractive"})
    'extractive'
    """
    get = node.get if hasattr(node, "get") else (lambda k, d=None: d)
    parts = [str(get("name", "") or "?")]
    model = get("model", None)
    if isinstance(model, str) and model:
        parts.append(model)
    backend = get("backend", None)
    if isinstance(backend, str) and backend not in ("", "torch"):
        parts.append(backend)
    return ":".join(parts)


def transform_key(cfg: Any) -> str | None:
    """How the history names a cell's query transform with a model (its generator's
    :func:`component_key` and the transform: ``openai:local (query=rewrite)``); None without one.

    >>> transform_key({"generator": {"name": "openai", "model": "local"}, "query": {"name": "rewrite"}})
    'openai:local (query=rewrite)'
    """
    query: Any = cfg.get("query") if hasattr(cfg, "get") else None
    name = query.get("name") if query is not None and hasattr(query, "get") else None
    if not name or name == "none":
        return None
    return f"{component_key(cfg.get('generator') or {})} (query={name})"


@dataclass(frozen=True)
class Sample:
    """What one computed cell measured: ``embedded`` texts in ``embed_s`` by the embedder
    ``embedder``; ``generated`` answers in ``generate_s`` by ``generator``; the rest of its wall
    time, ``other_s``."""

    embedder: str
    embedded: int
    embed_s: float
    generator: str | None
    generated: int
    generate_s: float
    other_s: float
    transform: str | None = None  # transform_key: the query transform's model calls ...
    transformed: int = 0
    transform_s: float = 0.0  # ... and their seconds (a cached reply's original time)
    judge: str | None = None
    judged: int = 0  # judge calls made (cost/judge_calls) ...
    judge_s: float = 0.0  # ... and their seconds (cost/judge_s)


def sample_of(cfg: Any, metrics: Mapping[str, Any], wall_s: float) -> Sample:
    """The sample of a cell from its config and metrics.json (``cost``, ``latency``, ``counts``)
    and its wall seconds. Cached answers took no generator time: only those produced count."""
    cost = metrics.get("cost") or {}
    latency = metrics.get("latency") or {}
    counts = metrics.get("counts") or {}
    embedded, embed_s = int(cost.get("embeddings_computed") or 0), float(cost.get("embed_s") or 0.0)
    generate_s = float(latency.get("generate_s") or 0.0)
    answered = "generations_cached" in cost
    generated = max(int(counts.get("questions") or 0) - int(cost.get("generations_cached") or 0), 0) if answered else 0
    generator = component_key(cfg.get("generator")) if answered and cfg.get("generator") is not None else None
    query = metrics.get("query") or {}
    questions = int(counts.get("questions") or 0)
    calls = float(query.get("calls") or 0.0) * questions  # per question, cached or not
    transform = transform_key(cfg) if calls > 0 else None
    transform_s = float(query.get("ms") or 0.0) * questions / 1000 if transform else 0.0
    judged, judge_s = int(cost.get("judge_calls") or 0), float(cost.get("judge_s") or 0.0)
    judge = component_key(cfg.get("judge")) if judged and cfg.get("judge") is not None else None
    spent = embed_s + (generate_s if answered else 0.0) + float(latency.get("query_s") or 0.0) + judge_s
    return Sample(component_key(cfg.get("embedder") or {}), embedded, embed_s, generator, generated,
                  generate_s if answered else 0.0, max(wall_s - spent, 0.0),
                  transform, int(round(calls)) if transform else 0, transform_s, judge, judged, judge_s)


def added(history: Mapping[str, Any], s: Sample) -> dict[str, Any]:
    """``history`` (the file's content) with the sample ``s`` added.

    >>> h = added({}, Sample("minilm", 10, 2.0, "openai:local", 4, 1.0, 0.5))
    >>> h["embedders"]["minilm"], h["generators"]["openai:local"], h["cells"]
    ({'texts': 10, 'seconds': 2.0}, {'answers': 4, 'seconds': 1.0}, {'cells': 1, 'seconds': 0.5})
    """
    out: dict[str, Any] = {"version": 1, "embedders": dict(history.get("embedders") or {}),
                           "generators": dict(history.get("generators") or {}),
                           "cells": dict(history.get("cells") or {"cells": 0, "seconds": 0.0})}
    if s.embedded > 0:
        old = out["embedders"].get(s.embedder) or {"texts": 0, "seconds": 0.0}
        out["embedders"][s.embedder] = {"texts": int(old["texts"]) + s.embedded,
                                        "seconds": float(old["seconds"]) + s.embed_s}
    if s.generator is not None and s.generated > 0:
        old = out["generators"].get(s.generator) or {"answers": 0, "seconds": 0.0}
        out["generators"][s.generator] = {"answers": int(old["answers"]) + s.generated,
                                          "seconds": float(old["seconds"]) + s.generate_s}
    for group, name, n, seconds in (("transforms", s.transform, s.transformed, s.transform_s),
                                    ("judges", s.judge, s.judged, s.judge_s)):
        if name is not None and n > 0:
            out[group] = dict(history.get(group) or {})
            old = out[group].get(name) or {"calls": 0, "seconds": 0.0}
            out[group][name] = {"calls": int(old["calls"]) + n, "seconds": float(old["seconds"]) + seconds}
        elif history.get(group):
            out[group] = dict(history[group])
    out["cells"] = {"cells": int(out["cells"].get("cells", 0)) + 1,
                    "seconds": float(out["cells"].get("seconds", 0.0)) + s.other_s}
    return out


@dataclass(frozen=True)
class Rates:
    """Seconds per embedded text (by embedder), per generated answer (by generator), per cell (the
    rest of a cell's time); a component absent: no measured throughput yet."""

    per_text: Mapping[str, float] = field(default_factory=dict)
    per_answer: Mapping[str, float] = field(default_factory=dict)
    per_cell: float | None = None
    per_transform_call: Mapping[str, float] = field(default_factory=dict)  # by transform_key
    per_judge_call: Mapping[str, float] = field(default_factory=dict)  # by the judge's component_key


def rates(history: Mapping[str, Any]) -> Rates:
    """The history's sums turned into seconds per unit.

    >>> r = rates(added({}, Sample("minilm", 10, 2.0, "openai:local", 4, 1.0, 0.5)))
    >>> r.per_text["minilm"], r.per_answer["openai:local"], r.per_cell
    (0.2, 0.25, 0.5)
    """
    per_text = {k: float(v["seconds"]) / int(v["texts"]) for k, v in (history.get("embedders") or {}).items()
                if int(v.get("texts") or 0) > 0}
    per_answer = {k: float(v["seconds"]) / int(v["answers"]) for k, v in (history.get("generators") or {}).items()
                  if int(v.get("answers") or 0) > 0}
    cells = history.get("cells") or {}
    per_cell = float(cells["seconds"]) / int(cells["cells"]) if int(cells.get("cells") or 0) > 0 else None
    per_call = {group: {k: float(v["seconds"]) / int(v["calls"]) for k, v in (history.get(group) or {}).items()
                        if int(v.get("calls") or 0) > 0} for group in ("transforms", "judges")}
    return Rates(per_text, per_answer, per_cell, per_call["transforms"], per_call["judges"])


def path(cache_dir: str | Path | None = None) -> Path:
    """The history file of the cache folder (default: the machine's, ``$RAG_BENCH_CACHE``)."""
    from rag_bench.storage import default_cache_dir

    return Path(cache_dir or default_cache_dir()) / FILE


def _sums(entry: Any, count: str) -> dict[str, Any] | None:
    """``entry`` when it is ``{count: int >= 0, "seconds": number >= 0}``, else None."""
    if not isinstance(entry, dict):
        return None
    n, seconds = entry.get(count), entry.get("seconds")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 0):
        return None
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 <= seconds < float("inf")):
        return None
    return {count: n, "seconds": float(seconds)}


def well_formed(data: Any) -> dict[str, Any]:
    """The entries of a history file's content that have the shape :func:`added` writes; the others
    are dropped (a hand-edited or foreign file must not break a plan, nor stop the history).

    >>> well_formed({"embedders": {"a": 1, "b": {"texts": 2, "seconds": 1.0}}, "cells": {"cells": "x"}})
    {'embedders': {'b': {'texts': 2, 'seconds': 1.0}}, 'generators': {}, 'transforms': {}, 'judges': {}}
    """
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for group, count in (("embedders", "texts"), ("generators", "answers"), ("transforms", "calls"),
                         ("judges", "calls")):
        items = data.get(group)
        items = items if isinstance(items, dict) else {}
        out[group] = {str(k): v for k, e in items.items() if (v := _sums(e, count)) is not None}
    if (cells := _sums(data.get("cells"), "cells")) is not None:
        out["cells"] = cells
    return out


def read(cache_dir: str | Path | None = None) -> dict[str, Any]:
    """The history (empty when there is none yet, or it cannot be read; entries of another shape
    left out: an estimate is never an error)."""
    try:
        return well_formed(json.loads(path(cache_dir).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def record(cfg: Any, metrics: Mapping[str, Any], wall_s: float) -> None:
    """Add a computed cell's sample to the history (:func:`add`). A failure is logged, never raised:
    the cell is what matters."""
    add(measured(cfg, metrics, wall_s))


def measured(cfg: Any, metrics: Mapping[str, Any], wall_s: float) -> Sample | None:
    """:func:`sample_of`, None (logged) when the config or metrics cannot give one."""
    try:
        return sample_of(cfg, metrics, wall_s)
    except Exception as exc:  # noqa: BLE001 -- the history is a courtesy; the cell is finished
        log.debug("throughput history not updated: %s", exc)
        return None


def add(sample: Sample | None) -> None:
    """Add ``sample`` (None: nothing) to the history, written whole: a temporary file, then renamed.
    A sweep's background process adds its cells' samples (:mod:`rag_bench.tracking.finisher`), off
    the sweep's thread. A failure is logged, never raised: the cell is what matters."""
    if sample is None:
        return
    try:
        target = path()
        history = added(read(), sample)
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{FILE}.{os.getpid()}.part")
        part.write_text(json.dumps(history, sort_keys=True, indent=1), encoding="utf-8")
        os.replace(part, target)
    except Exception as exc:  # noqa: BLE001 -- the history is a courtesy; the cell is finished
        log.debug("throughput history not updated: %s", exc)
