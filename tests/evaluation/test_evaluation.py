"""The evaluation of a cell: its ranking units follow eval.unit; a run reads question by question."""

from rag_bench.evaluation.evaluation import RANKING_UNITS, Evaluation
from rag_bench.evaluation.scorers.chunk_ranking import CHUNK
from rag_bench.evaluation.scorers.document_ranking import DOCUMENT
from rag_bench.runner.config import UNITS
from tests.conftest import TINY, compose_config


def test_every_eval_unit_names_its_ranking_scorers():
    assert RANKING_UNITS.keys() == UNITS.keys()
    for name, units in RANKING_UNITS.items():
        assert tuple(u.name for u in units) == UNITS[name]


def test_the_chunk_ranking_columns_are_kept_when_only_documents_are_reported():
    ev = Evaluation.from_config(compose_config(["tracking=none", f"dataset.path={TINY}", "eval.unit=document"]))
    assert ev.units == (DOCUMENT,) and ev.scored_units == (CHUNK, DOCUMENT)
