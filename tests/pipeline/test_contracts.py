"""Stage-boundary contracts, unit by unit (the CLI cases are in tests/bad_inputs/test_hostile_components.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_bench.domain import Asker, Chunk, Document, Question, Ranking, Section
from rag_bench.errors import ComponentError
from rag_bench.pipeline import contracts, stages
from rag_bench.retrieval.base import AccessFilter

TEXT = "# Plans\n\nAnnual plans cost less.\n\n# Refunds\n\nA full refund within 14 days."
DOCS = {
    "billing": Document("billing", TEXT, sections=(Section(("Plans",), 1, 0, 9, 34), Section(("Refunds",), 1, 34, 45, len(TEXT)))),
    "staff": Document("staff", "Root password rotation is quarterly.", acl=("staff",)),
}
Q = Question("q1", "refund?", True, asker=Asker(None, ("customers",)))


def chunk(cid: str = "billing#0", doc: str = "billing", start: int = 9, end: int = 32, **kw) -> Chunk:
    body = kw.pop("body", DOCS[doc].text[start:end] if doc in DOCS else "x")
    return Chunk(cid, doc, start, end, body, **kw)


def test_chunks_that_are_slices_of_their_documents_pass_unchanged():
    good = [chunk(), chunk("billing#1", start=45, end=len(TEXT), prefix="Refunds\n\n", heading_path=("Refunds",)),
            chunk("staff#0", "staff", 0, 10)]
    assert contracts.check_chunks(good, DOCS, component="c") == good


@pytest.mark.parametrize(("bad", "needle"), [
    (chunk(body="Root password rotation"), "body is not the document's text"),
    (chunk(prefix="Root password rotation is quarterly.\n\n", heading_path=("Plans",)), "is not the heading path"),
    (chunk(prefix="Plans\n\n", heading_path=("Nowhere",)), "is not the heading path"),
    (chunk(prefix="Plans\n\n"), "is not the heading path"),  # a prefix without a heading path
    (chunk(doc="ghost"), "not in the corpus"),
    (chunk(start=5, end=5, body=""), "is not inside the document"),
    (chunk(start=-1, end=4, body=TEXT[-1:4]), "is not inside the document"),
    (chunk(end=len(TEXT) + 1, body=TEXT[9:]), "is not inside the document"),
    (Chunk("billing#0", "billing", 9.0, 32, TEXT[9:32]), "must be integers"),  # type: ignore[arg-type]
    (Chunk("billing#0", "billing", True, 32, TEXT[1:32]), "must be integers"),  # type: ignore[arg-type]
    (chunk(cid="has space"), "without whitespace"),
    (chunk(parent_id="staff#p0"), "is not a parent chunk of the same document"),
    ("a string", "not a rag_bench.domain.Chunk"),
])
def test_a_chunk_that_is_not_its_documents_slice_is_refused(bad, needle):
    with pytest.raises(ComponentError, match="chunker c broke the chunker contract") as err:
        contracts.check_chunks([bad], DOCS, component="c")
    assert needle in str(err.value) and "fix:" in str(err.value)


def test_duplicate_chunk_ids_and_many_violations_are_listed_briefly():
    with pytest.raises(ComponentError, match="duplicate chunk_id"):
        contracts.check_chunks([chunk(), chunk()], DOCS, component="c")
    with pytest.raises(ComponentError, match=r"\(9 violation\(s\)\)[\s\S]*and 4 more"):
        contracts.check_chunks([chunk(f"b{i}", doc="ghost") for i in range(9)], DOCS, component="c")


def ranking(ids, scores, qid="q1") -> list[Ranking]:
    return [Ranking(qid, tuple(ids), tuple(scores))]


def test_a_valid_ranking_comes_back_strict_in_the_order_given():
    got = contracts.check_ranking(ranking([np.int64(2), 0, 1], [np.float32(1.0), 1.0, 0.5]), Q, n=3, depth=3,
                                  component="r")
    assert got.indices == (2, 0, 1) and all(type(i) is int for i in got.indices)
    assert got.scores[0] == 1.0 and got.scores[0] > got.scores[1] > got.scores[2]  # the tie made strict, order kept


@pytest.mark.parametrize(("out", "needle"), [
    (ranking([0, 0, 1], [3, 2, 1]), "duplicate chunk indices [0]"),
    (ranking([-1, 0], [2, 1]), "never wrapped"),
    (ranking([3], [1]), "outside [0, 3)"),
    (ranking([0.0], [1]), "not integers"),
    (ranking([0, 1], [1, math.nan]), "finite real numbers"),
    (ranking([0, 1], [1, math.inf]), "finite real numbers"),
    (ranking([0, 1], [1, "2"]), "finite real numbers"),
    (ranking([0, 1], [1, 2]), "scores increase"),
    (ranking([0, 1, 2], [3, 2, 1]), "more than the depth asked (2)"),
    (ranking([0, 1], [3]), "2 indices but 1 scores"),
    (ranking([0], [1], qid="q9"), "is for question 'q9'"),
    ([], "returned 0 items for 1 question"),
    (ranking([0], [1]) * 2, "returned 2 items for 1 question"),
    ([{"qid": "q1"}], "not a rag_bench.domain.Ranking"),
    (None, "returned NoneType"),
])
def test_a_broken_ranking_is_refused(out, needle):
    with pytest.raises(ComponentError, match="retriever r broke the retriever contract") as err:
        contracts.check_ranking(out, Q, n=3, depth=2, component="r")
    assert needle in str(err.value)


def test_access_is_enforced_again_and_what_is_dropped_counted():
    chunks = [chunk(), chunk("staff#0", "staff", 0, 10), chunk("billing#1", start=45, end=len(TEXT))]
    access = AccessFilter(chunks, DOCS)
    r = Ranking("q1", (1, 0, 2), (3.0, 2.0, 1.0))
    kept, dropped = contracts.enforce_access(r, Q, access)
    assert kept == Ranking("q1", (0, 2), (2.0, 1.0)) and dropped == 1
    staff = Question("q2", "x", True, asker=Asker(None, ("staff",)))
    assert contracts.enforce_access(r, staff, access) == (r, 0)
    assert contracts.enforce_access(r, Question("q3", "x", True), access) == (r, 0)  # no asker: unrestricted


@pytest.mark.parametrize(("out", "needle"), [
    ([np.array([1.0, np.nan])], "must be finite"),
    ([np.array([1.0])], "1 scores for a shortlist of 2"),
    ([np.ones((2, 2))], "4 scores for a shortlist of 2"),
    ([["a", "b"]], "scores are not numbers"),
    ([], "returned 0 items for 1 shortlist"),
])
def test_broken_rerank_scores_are_refused(out, needle):
    with pytest.raises(ComponentError, match=needle.replace("(", r"\(")):
        contracts.check_rerank_scores(out, Q, 2, component="rr")
    assert list(contracts.check_rerank_scores([[2, 1]], Q, 2, component="rr")) == [2.0, 1.0]


def test_embeddings_are_checked_for_shape_width_and_finiteness():
    class Emb:
        identity = "fake"

        def __init__(self):
            self.out = np.ones((2, 3), np.float32)

        def embed_documents(self, texts):
            return self.out[: len(texts)]

        def embed_queries(self, texts):
            return self.out[: len(texts)]

    inner = Emb()
    emb = stages.CheckedEmbedder(inner)
    assert emb.embed_documents(["a", "b"]).shape == (2, 3) and emb.identity == "fake"
    assert emb.embed_queries([]).shape == (0, 3)
    inner.out = np.ones((2, 4), np.float32)
    with pytest.raises(ComponentError, match=r"expected \(1, 3\)"):
        emb.embed_queries(["a"])
    inner.out = np.array([[np.nan, 1, 1]], np.float32)
    with pytest.raises(ComponentError, match="NaN or infinite"):
        emb.embed_documents(["a"])
    with pytest.raises(ComponentError, match="expected"):
        contracts.check_embeddings(np.ones(3), 3, component="e")


def test_judge_scores_outside_their_range_are_refused():
    contracts.check_judge_scores({"a": 0.5, "b": None, "c": math.nan, "d": -0.2}, component="j", item=0)
    for bad in (1.5, "high", True, math.inf):
        with pytest.raises(ComponentError, match="item 3"):
            contracts.check_judge_scores({"a": bad}, component="j", item=3)
