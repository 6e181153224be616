"""One registry shape for every table of named things: measures, scorers, stage protocols and the
value tables that ``eval.*`` settings choose from (relevance modes, gains, units, answer matching).

A :class:`Registry` maps names to entries. An entry is the object itself, or -- for a plugin's
object only -- a lazy ``"module:object"`` string imported on first use, so a registry of the
package's own things is a static import (the import graph shows it) and only a user's plugin is
imported by name. One lookup (:meth:`Registry.get`), one error: an unknown name is a
:class:`~rag_bench.errors.ConfigError` naming the key, the valid names and the closest ones.

>>> gains = Registry("eval.gain", {"linear": "level", "exponential": "2^level - 1"})
>>> gains.get("linear")
'level'
>>> gains.get("lineal")
Traceback (most recent call last):
...
rag_bench.errors.ConfigError: eval.gain: 'lineal' is not one of linear, exponential -- fix: eval.gain=linear (did you mean linear?)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from rag_bench.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind (``kind`` names the config key or vocabulary in messages)."""

    def __init__(self, kind: str, entries: Mapping[str, T | str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = dict(entries or {})

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """Every name, in registration order."""
        return tuple(self._entries)

    def add(self, name: str, entry: T | str) -> None:
        """Register ``entry`` under ``name``; a second, different entry under one name is an error
        (one name, one thing)."""
        known = self._entries.get(name)
        if known is not None and known is not entry and known != entry:
            raise ValueError(f"{self.kind}: {name!r} is registered twice")
        self._entries[name] = entry

    def get(self, name: Any) -> T:
        """The entry named ``name`` (a lazy ``"module:object"`` entry imported now); ConfigError
        for an unknown name, with the valid ones and the closest."""
        if not isinstance(name, str) or name not in self._entries:
            raise ConfigError(self.unknown(name))
        entry = self._entries[name]
        if isinstance(entry, str) and self._lazy(entry):
            entry = self._entries[name] = _load(entry, f"{self.kind}: {name!r}")
        return entry  # type: ignore[return-value]

    def check(self, name: Any) -> str:
        """``name`` when it is registered, else ConfigError (as :meth:`get`) -- for value tables."""
        if not isinstance(name, str) or name not in self._entries:
            raise ConfigError(self.unknown(name))
        return name

    def unknown(self, name: Any) -> str:
        """The message for an unknown ``name``: the valid names, a fix and the closest match."""
        names = list(self._entries)
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        fix = f"{self.kind}={names[0]}" if names and "." in self.kind else f"one of {', '.join(names[:8])}"
        return f"{self.kind}: {name!r} is not one of {', '.join(names)} -- fix: {fix}{hint}"

    def _lazy(self, entry: str) -> bool:
        # Only a "module:object" string is an import; a registry of strings (a value table) holds text.
        return ":" in entry and all(part.isidentifier() for part in entry.replace(":", ".").split("."))


def _load(spec: str, what: str) -> Any:
    """The object a ``"module:object"`` entry names (a plugin's: the package's own entries are objects)."""
    import importlib  # plugin entries only: see the module docstring

    module, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: {spec!r} cannot be imported ({exc}) -- fix: check the spelling, and that "
                          "the plugin's package is installed or on PYTHONPATH") from exc
    return obj
