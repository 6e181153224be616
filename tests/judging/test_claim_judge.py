"""claim_faithfulness: the ragas judge's endpoint asked once per claim of the answer (our splitter),
each claim reading its own cited passages, the item's score the share of claims supported; the
calls go through the ragas metrics' client, samples, cache, failure accounting and failure-rate
rule. The endpoint is a scripted fake (our logic under test, not the model's)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rag_bench.errors import EndpointError
from rag_bench.evaluation.scorers.judge import columns
from rag_bench.judging.base import JudgeSample
from rag_bench.judging.claim_judge import VerdictReply, claim_calls
from rag_bench.judging.ragas_judge import RagasJudge
from rag_bench.judging.samples import CLAIMS_COLUMN, tally
from tests.servers import JsonEndpoint, serving

pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")

P1 = "Rollo was a Viking leader who founded Normandy."
P2 = "The treaty of Saint-Clair-sur-Epte was signed in 911."


def _completion(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}).encode()


class ClaimEndpoint(JsonEndpoint):
    """Verdict 1 for a statement in ``server.supported``, 0 otherwise; ``server.broken`` statements
    get a verdict outside the schema (7), which fails validation. ``server.flip_seed``: the verdict
    is flipped for requests with that seed."""

    def answer(self, body):
        prompt = body["messages"][-1]["content"]
        statement = re.search(r"Statement: (.*)\n", prompt).group(1)
        server = self.server
        if statement in server.broken:
            return 200, _completion(json.dumps({"verdict": 7}))
        v = int(statement in server.supported)
        if body.get("seed") == server.flip_seed:
            v = 1 - v
        return 200, _completion(json.dumps({"verdict": v}))


@pytest.fixture
def endpoint():
    with serving(ClaimEndpoint, supported={"Rollo led the Normans"}, broken=set(), flip_seed=None) as server:
        yield server


def _judge(server, **kwargs):
    return RagasJudge(base_url=f"http://127.0.0.1:{server.server_port}/v1", metrics=["claim_faithfulness"],
                      **{"timeout_s": 10, "max_retries": 0, **kwargs})


def _statements(server):
    return [re.search(r"Statement: (.*)\n", r["messages"][-1]["content"]).group(1) for r in server.requests]


ANSWER = "Yes! Rollo led the Normans [1]. The treaty was signed in 912 [2]."


def test_one_call_per_claim_each_reading_its_own_cited_passage(endpoint, tmp_path):
    (r,) = _judge(endpoint).judge([JudgeSample("Who?", ANSWER, (P1, P2))], cache_dir=tmp_path)
    # "Yes!" has no informative word: not a claim; the other two are one call each.
    assert sorted(_statements(endpoint)) == ["Rollo led the Normans", "The treaty was signed in 912"]
    by_claim = {re.search(r"Statement: (.*)\n", q["messages"][-1]["content"]).group(1): q["messages"][-1]["content"]
                for q in endpoint.requests}
    assert P1 in by_claim["Rollo led the Normans"] and P2 not in by_claim["Rollo led the Normans"]
    assert P2 in by_claim["The treaty was signed in 912"] and P1 not in by_claim["The treaty was signed in 912"]
    # ragas' faithfulness definition: supported claims / claims
    assert r.scores == {"claim_faithfulness": 0.5} and r.samples == {"claim_faithfulness": [0.5]}
    assert r.calls == 2 and r.failures == {} and r.tokens_in == 100
    assert r.claims["claim_faithfulness"] == [
        {"claim": "Rollo led the Normans", "start": 5, "end": 26, "cited": [1], "passages": [1], "verdicts": [1]},
        {"claim": "The treaty was signed in 912", "start": 32, "end": 60, "cited": [2], "passages": [2],
         "verdicts": [0]}]


def test_a_claim_without_a_valid_citation_reads_every_passage():
    # [5] names no passage of two: not a citation (invalid_citations counts it), as for the offline judge
    calls = claim_calls("Rollo led the Normans. Vikings came in 911 [5].", 2)
    assert [(c.cited, c.shown) for c in calls] == [((), (1, 2)), ((), (1, 2))]


def test_the_llm_judge_reads_the_passages_the_offline_judge_attributes_to_each_claim():
    from rag_bench.metrics.support import judge_claims

    answer = "Rollo was a Viking chief from Scandinavia; he ruled Normandy from Rouen [2]. Paris is big [1]."
    offline = judge_claims(answer, (1, 2), [(1, P1), (2, P2)])
    assert [c.cited for c in claim_calls(answer, 2, (1, 2))] == [v.citations for v in offline]
    # an answer without markers: every claim cites the answer's sources list, in both judges
    plain = "Rollo led the Normans. The treaty was signed in 911."
    assert [c.shown for c in claim_calls(plain, 2, (2,))] == [(2,), (2,)]
    assert [v.citations for v in judge_claims(plain, (2,), [(1, P1), (2, P2)])] == [(2,), (2,)]


def test_each_request_carries_the_verdict_schema_and_the_sample_seed(endpoint, tmp_path):
    _judge(endpoint, samples=2, seed=7).judge([JudgeSample("Who?", "Rollo led the Normans [1].", (P1,))],
                                              cache_dir=tmp_path)
    assert sorted(r["seed"] for r in endpoint.requests) == [7, 8]
    assert all(r["response_format"] == {"type": "json_object", "schema": VerdictReply.model_json_schema()}
               for r in endpoint.requests)


def test_verdicts_are_cached_per_claim_and_sample(endpoint, tmp_path):
    _judge(endpoint).judge([JudgeSample("Who?", ANSWER, (P1, P2))], cache_dir=tmp_path)
    endpoint.requests.clear()
    (again,) = _judge(endpoint).judge([JudgeSample("Who?", ANSWER, (P1, P2))], cache_dir=tmp_path)
    assert endpoint.requests == [] and again.calls == 0 and again.scores == {"claim_faithfulness": 0.5}
    # Another question and answer sharing one claim (same passage read): only the new claim is asked.
    other = "Rollo led the Normans [1]. Vikings raided Paris [2]."
    (r,) = _judge(endpoint).judge([JudgeSample("Other?", other, (P1, P2))], cache_dir=tmp_path)
    assert _statements(endpoint) == ["Vikings raided Paris"] and r.scores == {"claim_faithfulness": 0.5}
    # Raising samples asks only the new sample's calls; its seed flips every verdict here.
    endpoint.requests.clear()
    endpoint.flip_seed = 1
    (two,) = _judge(endpoint, samples=2).judge([JudgeSample("Who?", ANSWER, (P1, P2))], cache_dir=tmp_path)
    assert len(endpoint.requests) == 2 and {r["seed"] for r in endpoint.requests} == {1}
    assert two.samples == {"claim_faithfulness": [0.5, 0.5]}
    assert [c["verdicts"] for c in two.claims["claim_faithfulness"]] == [[1, 0], [0, 1]]


def test_a_failed_claim_call_fails_its_sample_is_counted_and_retried(endpoint, tmp_path):
    endpoint.broken = {"The treaty was signed in 912"}
    items = [JudgeSample("Who?", ANSWER, (P1, P2)), JudgeSample("Who led?", "Rollo led the Normans [1].", (P1, P2))]
    bad, good = _judge(endpoint).judge(items, cache_dir=tmp_path)
    assert bad.scores == {"claim_faithfulness": None} and bad.samples == {"claim_faithfulness": [None]}
    assert bad.failures["claim_faithfulness"].startswith("claim 2 of 2: ")
    assert [c["verdicts"] for c in bad.claims["claim_faithfulness"]] == [[1], [None]]
    assert good.scores == {"claim_faithfulness": 1.0}
    # One judgement (item x sample) failed of two; the calls are counted per claim (the shared
    # claim was asked once).
    assert tally([bad, good]) | {"seconds": 0} == {"attempted": 2, "failures": 1, "calls": 2, "tokens_in": 100,
                                                   "tokens_out": 10, "seconds": 0}
    cols = columns([bad, good], ["claim_faithfulness"])
    assert np.isnan(cols["judge_claim_faithfulness"][0]) and cols["judge_claim_faithfulness"][1] == 1.0
    assert "claim 2 of 2" in json.loads(cols["judge_failures"][0])["claim_faithfulness"]
    # Only the failed claim is asked again (the other verdict was cached).
    endpoint.requests.clear()
    endpoint.broken = set()
    (fixed, _) = _judge(endpoint).judge(items, cache_dir=tmp_path)
    assert _statements(endpoint) == ["The treaty was signed in 912"] and fixed.scores == {"claim_faithfulness": 0.5}


def test_the_failure_rate_rule_applies_to_claim_judgements(endpoint, tmp_path, monkeypatch):
    from rag_bench.domain import Question
    from rag_bench.pipeline import stages

    endpoint.broken = {"The treaty was signed in 912"}
    questions = [Question("q1", "Who?", True), Question("q2", "Who led?", True)]

    class Answer:
        error = parse_error = None
        refused = False
        citations: tuple[int, ...] = ()  # none given: the markers that name a passage count

        def __init__(self, text):
            self.text = text

    class Item:
        passages = [type("P", (), {"text": P1})(), type("P", (), {"text": P2})()]

    class Answered:
        items = [Item(), Item()]
        answers = [Answer(ANSWER), Answer("Rollo led the Normans [1].")]

    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path))
    with pytest.raises(EndpointError, match="1 of 2 judgements failed"):
        stages.judge(judge=_judge(endpoint, max_failure_rate=0.4), questions=questions, answered=Answered())
    results = stages.judge(judge=_judge(endpoint, max_failure_rate=0.5), questions=questions, answered=Answered())
    assert [r.scores["claim_faithfulness"] for r in results] == [None, 1.0]


def test_an_answer_without_a_claim_is_not_judged(endpoint, tmp_path):
    (r,) = _judge(endpoint).judge([JudgeSample("Really?", "Yes! Well...", (P1,))], cache_dir=tmp_path)
    assert endpoint.requests == [] and r.scores == {} and r.failures == {} and r.claims == {}
    assert tally([r])["attempted"] == 0


def test_claims_column_is_not_a_judged_measure():
    from rag_bench.calibration.standins import stand_ins

    cols = columns([], ["claim_faithfulness"])
    assert CLAIMS_COLUMN not in cols  # nothing judged per claim, no column
    names = [s.column for s in stand_ins(["judge_claim_faithfulness", "judge_claim_faithfulness_samples",
                                          CLAIMS_COLUMN])]
    assert names == ["judge_claim_faithfulness"]  # calibrate compares the score with people, not the details
