"""The semantic support judge (rag_bench/metrics/semantic.py, issue 55): units and their narrowing,
the model's three-way verdict, the claims scorer's ``eval.claims_judge=semantic`` (undecided counted,
never guessed), the option keeping every lexical cell's id, and the shipped model reproduced from its
training data."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rag_bench.domain import Answer, Dataset, Passage, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import ScoringInput, Settings
from rag_bench.evaluation.scorers import claims
from rag_bench.metrics import semantic
from rag_bench.metrics.semantic import SemanticJudge, Similarity, Weights, candidates, units
from rag_bench.runner.config import cell_id, validate
from tests.conftest import REPO, SHARED, compose_config
from tests.fakes import KeywordEmbedder

NORMANDY = "Rollo was a Viking. He became the first ruler of Normandy in 911. His son was William Longsword."


def test_units_are_sentences_and_pairs_of_one_passage() -> None:
    spans = units(NORMANDY)
    assert [NORMANDY[s:e] for s, e in spans][:3] == [
        "Rollo was a Viking.", "Rollo was a Viking. He became the first ruler of Normandy in 911.",
        "He became the first ruler of Normandy in 911."]
    assert len(spans) == 5  # 3 sentences + 2 pairs


def test_a_long_passage_is_narrowed_to_the_units_sharing_most_words() -> None:
    filler = " ".join(f"Sentence {i} talks about weather and rain." for i in range(40))
    text = filler + " Rollo ruled Normandy from Rouen."
    spans = [(0, s, e) for s, e in units(text)]
    picked = candidates("Rollo ruled Normandy", [text], spans)
    assert len(picked) == semantic.MAX_UNITS < len(spans)
    assert any("Rollo ruled Normandy" in text[spans[j][1]:spans[j][2]] for j in picked)
    assert candidates("Rollo ruled Normandy", [NORMANDY], [(0, s, e) for s, e in units(NORMANDY)]) == list(range(5))


def test_similarity_finds_the_unit_and_passage_of_a_claim() -> None:
    (m,) = Similarity(KeywordEmbedder()).best(["William Longsword was his son"], ["Paris is big.", NORMANDY])
    assert m.passage == 1 and NORMANDY[m.start:m.end].endswith("His son was William Longsword.")
    assert m.cosine > 0.5


def test_the_rule_decides_yes_no_or_undecided_between_its_thresholds() -> None:
    w = Weights(high=0.8, low=0.5, mostly=0.75)
    # cosine, coverage, numbers_ok, names_ok, negation_ok, lexical verdict, lexical within 2 sentences, antonym,
    # about the speaker
    assert w.verdict((0.9, 0.2, 1, 1, 1, 0, 0, 0, 0)) is True  # a paraphrase: other words, the same meaning
    assert w.verdict((0.3, 0.2, 1, 1, 1, 0, 0, 0, 0)) is False
    assert w.verdict((0.6, 0.2, 1, 1, 1, 0, 0, 0, 0)) is None  # ambiguous: counted, not guessed
    assert w.verdict((0.95, 0.9, 0, 1, 1, 0, 0, 0, 0)) is False  # a changed number is no paraphrase
    assert w.verdict((0.1, 1.0, 1, 1, 1, 1, 1, 0, 0)) is True  # the lexical judge's yes within two sentences stands
    # words pooled from a long passage: the cosine decides
    assert w.verdict((0.6, 1.0, 1, 1, 1, 1, 0, 0, 0)) is None and w.verdict((0.3, 1.0, 1, 1, 1, 1, 0, 0, 0)) is False
    assert w.verdict((0.99, 1.0, 1, 1, 1, 1, 1, 1, 0)) is False  # an antonym in place of the evidence's word
    assert w.answer([True, True, True, False]) is True and w.answer([True, False, False]) is False
    assert w.answer([True, True, None, None]) is None and w.answer([]) is None
    assert Weights(0.8, 0.5).answer([True, True, False]) is False  # mostly = 1: every claim
    assert Weights.from_json(w.as_json()) == w
    with pytest.raises(ValueError, match="features"):
        Weights.from_json({**w.as_json(), "features": ["cosine"]})


def test_an_antonym_swap_against_the_best_unit_is_found_and_a_paraphrase_is_not() -> None:
    unit = "The BBC reports that the EC has ordered its 32,000 employees to remove TikTok from their company phones."
    assert semantic.antonym_swap("The EU ordered its 32,000 employees to keep TikTok on their phones", unit) == (
        "keep", "remov")
    assert semantic.antonym_swap("The EU ordered its staff to delete TikTok from their phones", unit) is None
    # both words in the evidence: no swap ("rose, then fell" against "rose ... fell"), nor when the
    # claim's word stands elsewhere in its passages (the best unit is another statement)
    assert semantic.antonym_swap("Shares fell", "Shares rose early and fell later.") is None
    assert semantic.antonym_swap("a longer return window for large appliances", "Small appliances: 30 days.",
                                 ["Small appliances: 30 days. Large appliances: a longer return window."]) is None
    assert all(semantic.antonyms()[b] >= {a} for a, bs in semantic.antonyms().items() for b in bs)  # both ways


def test_a_statement_about_the_speaker_is_no_claim_a_passage_supports() -> None:
    assert semantic.about_speaker("i played wide receiver in high school") and semantic.about_speaker("It is my favourite.")
    for text in ("Richard I of Normandy forged a principality.", "King David I of Scotland, whose brother Alexander I",
                 'The documentary "I\'ll Sleep When I\'m Dead" came out in 2016.', "Rollo ruled Normandy."):
        assert not semantic.about_speaker(text), text
    w = Weights(0.8, 0.5)
    assert w.verdict((0.99, 1.0, 1, 1, 1, 1, 1, 0, 1)) is False  # "I was born in Normandy" against a passage about Rollo


def test_pieces_that_assert_nothing_are_not_judged() -> None:
    for text in ("Here are the general steps to grant access:", "For example:", "``` { \"selector\": {} } ```",
                 "I hope this helps!", "If you have any other questions, feel free to ask.",
                 "Following these steps should help you resolve any issues with your query."):
        assert semantic.non_claim(text), text
    for text in ("Rollo became the first ruler of Normandy in 911.", "You can deploy clusters worldwide.",
                 "The image-deprecate command marks an image as deprecated.", "Support can help you reset a password."):
        assert not semantic.non_claim(text), text
    answer = "Here is what the passage says: [1]. Rollo became the first ruler of Normandy in 911 [1]. I hope this helps!"
    judged = SemanticJudge(KeywordEmbedder(), Weights(0.8, 0.5, 0.6)).judge_claims(answer, (1,), [(1, NORMANDY)])
    assert [v.claim.text for v in judged] == ["Rollo became the first ruler of Normandy in 911"]
    assert judged[0].supported


def test_the_shipped_model_loads_with_the_features_of_the_code() -> None:
    w = semantic.load_weights()
    assert 0 <= w.low < w.high <= 1 and 0.5 <= w.mostly <= 1
    doc = json.loads(semantic.WEIGHTS_FILE.read_text())
    assert set(doc["data"]) == {"begin-wow-dev", "wice-claim-dev", "summedits-dev", "mtrag-cloud-dev"}


# --- the claims scorer with eval.claims_judge=semantic ------------------------------------------------------------

PASSAGES = (Passage(1, "c1", "d1", 0, len(NORMANDY), NORMANDY),)


def _context(answers: list[Answer], judge: str) -> ScoringInput:
    qs, runs = [], []
    for i, a in enumerate(answers):
        q = Question(f"q{i}", "?", True)
        empty = Ranking(q.qid, (), ())
        qs.append(q)
        runs.append(QuestionRun(q, empty, empty, context=PASSAGES, answer=a))
    run = SystemRun(Dataset("d", "", "native", {}, tuple(qs)), [], tuple(runs))
    return ScoringInput(run, Settings(ks=(5,), k=3, claims_judge=judge), Grades((), {}))


def test_the_scorer_counts_undecided_claims_and_leaves_the_answer_undecided(monkeypatch) -> None:
    w = Weights(high=0.6, low=0.4, mostly=1.0)  # cosine >= 0.6 yes, < 0.4 no, in between undecided
    monkeypatch.setattr(semantic, "semantic_judge", lambda: SemanticJudge(KeywordEmbedder(), w))
    answers = [Answer("Rollo became the first ruler of Normandy in 911 [1].", (1,)),
               Answer("Bananas grow quickly in tropical gardens [1].", (1,))]
    ctx = _context(answers, "semantic")
    assert claims.CLAIMS_UNDECIDED in claims.SCORER.measures(ctx.run, ctx.settings)
    (part,) = claims.SCORER.score(ctx)
    assert part.sections["methods"]["claims"] == "offline_claim_semantic_judge"
    assert part.columns["answer_supported"] == [1.0, 0.0]
    assert part.columns["claims_undecided"] == [0.0, 0.0]
    assert part.columns["claims"][0][0]["undecided"] is False
    # thresholds no cosine of this claim reaches nor falls under: undecided, the answer undefined, not guessed
    monkeypatch.setattr(semantic, "semantic_judge", lambda: SemanticJudge(KeywordEmbedder(), Weights(1.01, -1.0)))
    paraphrase = Answer("Rollo's boy was named William Longsword [1].", (1,))  # the lexical judge: no (3 of 5 words)
    (part,) = claims.SCORER.score(_context([paraphrase], "semantic"))
    assert math.isnan(part.columns["answer_supported"][0]) and part.columns["claims_undecided"] == [1.0]
    assert part.columns["claims"][0][0]["undecided"] is True and part.columns["claim_support"] == [0.0]


def test_the_lexical_judge_keeps_its_measures_and_records() -> None:
    ctx = _context([Answer("Rollo became the first ruler of Normandy in 911 [1].", (1,))], "lexical")
    assert claims.CLAIMS_UNDECIDED not in claims.SCORER.measures(ctx.run, ctx.settings)
    (part,) = claims.SCORER.score(ctx)
    assert "claims_undecided" not in part.columns and "undecided" not in part.columns["claims"][0][0]
    assert part.sections["methods"]["claims"] == claims.METHOD


def test_claims_judge_lexical_keeps_every_cell_id_and_semantic_makes_new_cells() -> None:
    cfg = compose_config([])
    assert cfg.eval.claims_judge == "lexical"
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(cfg, resolve=True)
    del plain["eval"]["claims_judge"]  # the config as composed before the option existed
    assert cell_id(cfg, "fp") == cell_id(OmegaConf.create(plain), "fp")
    assert cell_id(compose_config(["eval.claims_judge=semantic"]), "fp") != cell_id(cfg, "fp")
    with pytest.raises(ConfigError, match="eval.claims_judge.*lexical, semantic"):
        validate(compose_config(["eval.claims_judge=semantik"]))


# --- the shipped model and its training ---------------------------------------------------------------------------

TRAIN = REPO / "benchmarks" / "train_support_judge.py"


def test_refitting_the_shipped_features_reproduces_the_shipped_model() -> None:
    out = subprocess.run([sys.executable, str(TRAIN), "--from-features"], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "the shipped model is reproduced" in out.stdout


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "datasets" / "human-judgments" / "begin-wow-dev").is_dir(),
                    reason="../shared/datasets/human-judgments is absent")
def test_the_shipped_features_are_recomputed_from_the_shared_data(tmp_path: Path) -> None:
    # the first 25 answers of one set (the shortest to embed), cold cache: their claims' features as
    # the training script computes them now
    sys.path.insert(0, str(REPO / "benchmarks"))
    import train_support_judge as t

    root = SHARED / "datasets" / "human-judgments"
    now = t.claim_features(root, str(tmp_path), ("begin-wow-dev",), limit=25)
    shipped = [r for r in t.load_features() if r[0] == "begin-wow-dev"][:len(now)]
    assert len(now) == len(shipped)
    for (s, y, xs), (s2, y2, xs2) in zip(now, shipped, strict=True):
        assert (s, y, len(xs)) == (s2, y2, len(xs2))
        assert all(a == pytest.approx(b, abs=1e-3) for x, x2 in zip(xs, xs2, strict=True) for a, b in zip(x, x2))
    assert t.provenance(root, ("begin-wow-dev",)) == {
        "begin-wow-dev": json.loads(semantic.WEIGHTS_FILE.read_text())["data"]["begin-wow-dev"]}


def test_the_views_mark_an_undecided_claim() -> None:
    from rag_bench.reporting import claims_view

    (c,) = claims_view.shown([{"text": "Rollo's boy was William", "citations": [1], "supported": False,
                               "undecided": True, "passage": 1, "span_start": 0, "span_end": 5}], [NORMANDY])
    assert c["undecided"] is True and c["supported"] is False and c["evidence"]["kind"] == "short"
    assert claims_view.shown([{"text": "x", "supported": True}], [])[0]["undecided"] is False  # lexical records
    for script in ("report.js", "label.js"):
        text = (REPO / "rag_bench" / "reporting" / script).read_text(encoding="utf-8")
        assert "c.undecided" in text and "undecided (the evidence is ambiguous)" in text
