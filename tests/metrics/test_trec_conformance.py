"""trec_eval conformance: NIST's own test vectors, plus small cases for each trec_eval rule.

The vectors (``../shared/conformance/trec_eval``, outside the repo) are the output of trec_eval
10.0 on its test files; every measure we support is compared per topic and for ``all``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rag_bench.metrics import trec
from rag_bench.metrics.trec import (
    SUPPORTED_MEASURES,
    evaluate,
    format_trec,
    read_qrels,
    read_run,
    to_arrays,
)
from rag_bench.metrics.trec_cli import main

VECTORS = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "trec_eval"
needs_vectors = pytest.mark.skipif(
    not VECTORS.is_dir(),
    reason=f"trec_eval conformance vectors not found at {VECTORS} "
    "(they live in the shared workspace next to the repo, not in git)",
)

TOLERANCE = 5e-5  # trec_eval prints 4 decimals
CUTOFF_MEASURES = {"P", "recall", "ndcg_cut", "success"}

# expected output file, qrels, run, evaluate() options (= the trec_eval flags used)
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("core/qrels.test__results.test__core.txt", "qrels.test", "results.test", {}),
    ("core/qrels.rel_level_l2__results.test__core.txt", "qrels.rel_level", "results.test",
     {"relevance_level": 2}),
    ("core/qrels.rel_level__results.test__ndcg_graded.txt", "qrels.rel_level", "results.test",
     {}),
    ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}),
    ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_docs": 100}),
    ("out.test.aq", "qrels.test", "results.test", {}),
    ("out.test", "qrels.test", "results.test", {}),
    ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
]


def request_for(name: str) -> str | None:
    """trec_eval output name -> the ``-m`` request that produces it, None if unsupported."""
    if name in SUPPORTED_MEASURES and name not in CUTOFF_MEASURES:
        return name
    base, _, cutoff = name.rpartition("_")
    return f"{base}.{cutoff}" if base in CUTOFF_MEASURES and cutoff.isdigit() else None


def requests_for(names: list[str]) -> list[str]:
    """The ``-m`` requests covering the supported names among ``names``."""
    return sorted({r for r in map(request_for, names) if r is not None})


def expected_values(path: Path) -> dict[tuple[str, str], float]:
    """``{(measure, topic): value}`` for the supported measures of a trec_eval output file."""
    out = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) == 3 and request_for(fields[0]):
            out[(fields[0], fields[1])] = float(fields[2])
    return out


@needs_vectors
@pytest.mark.parametrize(("expected_file", "qrels_file", "run_file", "options"), CASES,
                         ids=[case[0] for case in CASES])
def test_matches_trec_eval(
    expected_file: str, qrels_file: str, run_file: str, options: dict[str, Any]
) -> None:
    expected = expected_values(VECTORS / expected_file)
    measures = requests_for([name for name, _ in expected])
    assert len(measures) >= 7, "expected file parsed to too few measures"
    per_query, summary = evaluate(
        read_qrels(VECTORS / qrels_file), read_run(VECTORS / run_file),
        measures=measures, **options,
    )
    topics = {topic for _, topic in expected} - {"all"}
    if topics:  # files written with -q
        assert set(per_query) == topics
    mismatches = []
    for (name, topic), want in expected.items():
        got = summary[name] if topic == "all" else per_query[topic][name]
        if not abs(got - want) <= TOLERANCE:
            mismatches.append(f"{name} {topic}: trec_eval {want}, ours {got}")
    assert not mismatches, "\n".join(mismatches)


@needs_vectors
@pytest.mark.parametrize(("expected_file", "qrels_file", "options"), [
    (CASES[0][0], "qrels.test", {}),
    (CASES[1][0], "qrels.rel_level", {"relevance_level": 2}),
    (CASES[2][0], "qrels.rel_level", {}),
])
def test_text_output_is_byte_identical(
    expected_file: str, qrels_file: str, options: dict[str, Any]
) -> None:
    # These files were written with an explicit -m list, so trec_eval printed exactly those
    # measures, in its own table order, per topic (-q) then "all".
    text = (VECTORS / expected_file).read_text()
    measures = requests_for([line.split()[0] for line in text.splitlines()])
    per_query, summary = evaluate(
        read_qrels(VECTORS / qrels_file), read_run(VECTORS / "results.test"),
        measures=measures, **options,
    )
    assert format_trec(per_query, summary, True) == text


@needs_vectors
def test_ndcg_ignores_relevance_level() -> None:
    # -l2 changes every binary measure of topic 301 but not its ndcg: trec_eval's nDCG uses
    # the judged levels as gains whatever the threshold (0.1396 in both files).
    qrels, run = read_qrels(VECTORS / "qrels.rel_level"), read_run(VECTORS / "results.test")
    l1, _ = evaluate(qrels, run, measures=["ndcg", "map"])
    l2, _ = evaluate(qrels, run, measures=["ndcg", "map"], relevance_level=2)
    assert l1["301"]["ndcg"] == l2["301"]["ndcg"] == pytest.approx(0.1396, abs=TOLERANCE)
    assert l1["301"]["map"] != l2["301"]["map"]


@needs_vectors
def test_cli_json_matches_trec_eval(capsys: pytest.CaptureFixture[str]) -> None:
    expected = expected_values(VECTORS / CASES[0][0])
    measures = requests_for([name for name, _ in expected])
    argv = [str(VECTORS / "qrels.test"), str(VECTORS / "results.test"), "--json", "-q"]
    for m in measures:
        argv += ["-m", m]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"all", "per_query"}
    for (name, topic), want in expected.items():
        got = doc["all"][name] if topic == "all" else doc["per_query"][topic][name]
        assert got == pytest.approx(want, abs=TOLERANCE), (name, topic)
    assert doc["all"]["num_ret"] == 1500 and isinstance(doc["all"]["num_ret"], int)


@needs_vectors
def test_cli_default_measures_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(VECTORS / "qrels.test"), str(VECTORS / "results.trunc"), "-c", "-M", "100"]
    assert main(argv) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert all(topic == "all" for _, topic, _ in lines)  # no -q
    got = {name.strip(): value for name, _, value in lines}
    assert list(got)[:4] == ["num_ret", "num_rel", "num_rel_ret", "map"]  # trec_eval's order
    assert got["num_ret"] == "184" and got["map"] == "0.0947"  # out.test.aqcM


# --------------------------------------------------------------------------- trec_eval rules
# Small synthetic cases, one per rule; they need no vectors.


def test_ties_broken_by_docno_descending_and_rank_column_ignored() -> None:
    # Equal scores: "d10" > "d1" > "a" in string order, so the order is d10, d1, a; the float32
    # rule also ties 1.0 with 1.0 + 1e-9.
    run = {"q": {"a": 1.0, "d1": 1.0 + 1e-9, "d10": 1.0, "z": 0.5}}
    qrels = {"q": {"a": 1, "d1": 2, "d10": 3, "z": 4}}
    assert to_arrays(qrels, run).levels.tolist() == [[3, 2, 1, 4]]


def test_higher_score_wins_over_docno() -> None:
    run = {"q": {"a": 2.0, "z": 1.0, "m": -1.0, "b": float("-inf"), "c": float("inf")}}
    qrels = {"q": {"a": 1, "z": 2, "m": 3, "b": 4, "c": 5}}
    assert to_arrays(qrels, run).levels.tolist() == [[5, 1, 2, 3, 4]]


def test_scores_beyond_float32_range_tie_as_infinity() -> None:
    # C's float conversion turns 1e39 and 1e40 into +inf: a tie, so docno "b" > "a" first.
    run = {"q": {"a": 1e40, "b": 1e39, "c": 3.0e38}}
    qrels = {"q": {"a": 1, "b": 2, "c": 3}}
    assert to_arrays(qrels, run).levels.tolist() == [[2, 1, 3]]


def test_topics_in_both_files_are_evaluated_even_without_relevant_docs() -> None:
    # trec_eval evaluates qrels ∩ run: "none" has only non-relevant judgments and is averaged
    # in with 0; "runonly" has no qrels and is ignored; "missing" is not in the run.
    qrels = {"good": {"a": 1}, "none": {"a": 0}, "missing": {"a": 1}}
    run = {"good": {"a": 1.0}, "none": {"a": 1.0}, "runonly": {"a": 1.0}}
    per_query, summary = evaluate(qrels, run, measures=["map", "num_rel", "num_ret"])
    assert list(per_query) == ["good", "none"]
    assert per_query["none"] == {"num_ret": 1.0, "num_rel": 0.0, "map": 0.0}
    assert summary == {"num_ret": 2.0, "num_rel": 1.0, "map": 0.5}


def test_empty_ranking_counts_as_absent() -> None:
    qrels = {"good": {"a": 1}, "empty": {"a": 1}}
    run = {"good": {"a": 1.0}, "empty": {}}
    assert list(evaluate(qrels, run, measures=["map"])[0]) == ["good"]
    per_query, _ = evaluate(qrels, run, measures=["map", "num_rel"], complete=True)
    assert per_query["empty"] == {"num_rel": 1.0, "map": 0.0}


def test_complete_scores_missing_topics_zero() -> None:
    qrels = {"good": {"a": 1}, "missing": {"a": 1, "b": 1}}
    run = {"good": {"a": 1.0}}
    per_query, summary = evaluate(qrels, run, measures=["map", "num_rel", "num_ret"],
                                  complete=True)
    assert per_query["missing"] == {"num_ret": 0.0, "num_rel": 2.0, "map": 0.0}
    assert summary == {"num_ret": 1.0, "num_rel": 3.0, "map": 0.5}


def test_max_docs_truncates_after_ordering() -> None:
    run = {"q": {"late": 0.1, "first": 0.9, "second": 0.8}}
    qrels = {"q": {"late": 1}}
    per_query, _ = evaluate(qrels, run, measures=["num_ret", "num_rel_ret", "map"], max_docs=2)
    assert per_query["q"] == {"num_ret": 2.0, "num_rel_ret": 0.0, "map": 0.0}


def test_ndcg_uses_levels_not_threshold() -> None:
    # With -l 3 no document is relevant, yet ndcg is still computed from the gains.
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"b": 0.9, "a": 0.5}}
    per_query, _ = evaluate(qrels, run, measures=["ndcg", "map"], relevance_level=3)
    ideal = 2 + 1 / math.log2(3)
    assert per_query["q"]["ndcg"] == pytest.approx((1 + 2 / math.log2(3)) / ideal)
    assert per_query["q"]["map"] == 0.0


def test_measure_syntax_and_output_order() -> None:
    per_query, summary = evaluate(
        {"q": {"a": 1}}, {"q": {"a": 1.0}},
        measures=["success", "P.10,5", "P.5,2", "ndcg_cut", "map", "num_ret"],
    )
    assert list(summary) == (
        ["num_ret", "map", "P_2", "P_5", "P_10"]
        + [f"ndcg_cut_{k}" for k in trec.DEFAULT_CUTOFFS]
        + ["success_1", "success_5", "success_10"]
    )
    assert list(per_query["q"]) == list(summary)


@pytest.mark.parametrize("spec", ["bpref", "P.0", "P.x", "P.", "P.5,", "map.5", "P_5"])
def test_unsupported_measure_lists_the_supported_ones(spec: str) -> None:
    with pytest.raises(ValueError, match="supported") as info:
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, measures=[spec])
    assert "recip_rank" in str(info.value) and "ndcg_cut[.k1,k2,...]" in str(info.value)


def test_no_common_topic_raises() -> None:
    with pytest.raises(ValueError, match="no topic to evaluate"):
        evaluate({"a": {"d": 1}}, {"b": {"d": 1.0}}, measures=["map"])


def test_to_arrays_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="relevance_level must be an integer >= 1, got 0"):
        to_arrays({"q": {"a": 1}}, {"q": {"a": 1.0}}, relevance_level=0)
    with pytest.raises(ValueError, match="max_docs must be a positive integer or None, got 0"):
        to_arrays({"q": {"a": 1}}, {"q": {"a": 1.0}}, max_docs=0)
    with pytest.raises(ValueError, match="NaN"):
        to_arrays({"q": {"a": 1}}, {"q": {"a": float("nan")}})
    with pytest.raises(ValueError, match="qrels levels must be integers"):
        to_arrays({"q": {"a": 1.5}}, {"q": {"a": 1.0}})  # type: ignore[dict-item]


def test_to_arrays_does_not_modify_its_input() -> None:
    qrels, run = {"q": {"a": 1, "b": 2}}, {"q": {"b": 0.1, "a": 0.2}}
    to_arrays(qrels, run, max_docs=1, complete=True)
    assert qrels == {"q": {"a": 1, "b": 2}} and list(run["q"]) == ["b", "a"]


def test_trec_docstring_examples() -> None:
    import doctest

    result = doctest.testmod(trec)
    assert result.attempted > 0 and result.failed == 0
