"""One registry shape: named entries, lazy plugin entries, one did-you-mean error."""

from __future__ import annotations

import pytest

from rag_bench.errors import ConfigError
from rag_bench.registry import Registry


def test_a_name_gives_its_entry_and_an_unknown_name_the_valid_ones():
    r: Registry[int] = Registry("eval.thing", {"alpha": 1, "beta": 2})
    assert r.get("alpha") == 1 and r.names() == ("alpha", "beta") and "beta" in r and len(r) == 2
    with pytest.raises(ConfigError, match=r"eval.thing: 'alpa' is not one of alpha, beta -- fix: eval.thing=alpha "
                                          r"\(did you mean alpha\?\)"):
        r.get("alpa")
    for odd in (None, 3, ["alpha"]):
        with pytest.raises(ConfigError, match="is not one of"):
            r.check(odd)


def test_a_plugin_entry_is_imported_on_first_use_and_a_bad_one_says_so():
    r: Registry[object] = Registry("scorer", {"json": "json:dumps", "gone": "no_such_module_x:thing"})
    import json

    assert r.get("json") is json.dumps
    with pytest.raises(ConfigError, match="cannot be imported"):
        r.get("gone")


def test_one_name_one_thing():
    r: Registry[int] = Registry("x", {"a": 1})
    r.add("a", 1)  # the same again: fine
    with pytest.raises(ValueError, match="registered twice"):
        r.add("a", 2)


def test_the_value_tables_match_what_the_kernels_accept():
    from rag_bench.metrics.generation import ANSWER_MATCH_MODES
    from rag_bench.metrics.ranking import GAINS
    from rag_bench.metrics.relevance import RELEVANCE_MODES
    from rag_bench.runner.config import ANSWER_MATCH, GAIN, RELEVANCE, UNITS

    assert RELEVANCE.names() == RELEVANCE_MODES and set(GAIN.names()) == set(GAINS)
    assert ANSWER_MATCH.names() == ANSWER_MATCH_MODES and UNITS.names() == ("chunk", "document", "both")
