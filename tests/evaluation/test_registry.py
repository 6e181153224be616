"""The measure registry finds the measures scorers declare in their own files."""

import pytest

from rag_bench.metrics import measures
from rag_bench.evaluation.measures import Measure


@pytest.fixture
def fam():
    fam = Measure("test_only_share", "test_only", cut="required", description="a test family")
    yield fam
    measures._BY_FAMILY.pop((fam.section, fam.family), None)  # the registry as it was
    if fam in measures._REGISTERED:
        measures._REGISTERED.remove(fam)


def test_a_scorer_family_is_registered_once_and_a_clash_is_an_error(fam):
    assert measures.register(fam) == (fam,)
    assert measures.register(fam) == (fam,)  # the same declaration again: nothing new
    assert measures.measure("test_only/test_only_share@3") == fam.at(3)
    assert measures.measure("test_only/test_only_share") is None  # needs its cutoff, as hit does
    assert "test_only" in measures.registry_sections()
    assert measures.known_names("test_only", (2,)) == ["test_only/test_only_share@2"]
    with pytest.raises(ValueError, match="declared twice"):
        measures.register(Measure("test_only_share", "test_only", higher_is_better=False))
    with pytest.raises(ValueError, match="declared twice"):
        measures.register(Measure("hit", "retrieval"))


def test_unknown_names_stay_unknown():
    assert measures.measure("retrieval/no_such_measure@5") is None
    with pytest.raises(KeyError):
        measures.family("nowhere", "nothing")
