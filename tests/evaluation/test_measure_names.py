"""No measure name is typed outside the measure registry and its scorer (issue 26).

Every string literal of rag_bench's source (docstrings aside; comments are not literals) that
spells a registered measure -- its family (``hit``, ``doc_ndcg``), with a cutoff (``hit@5``,
``f"ann_recall@{k}"``), as a key (``generation/correct``) or in MLflow's spelling
(``retrieval.hit_at_5``) -- fails this test naming file:line, unless it is in
``rag_bench/evaluation/measures.py`` or ``rag_bench/evaluation/scorers/`` (where measures are declared
and computed) or listed in :data:`ELSEWHERE` with the vocabulary it belongs to (a word two
vocabularies share, such as the failure label ``correct``). Everything else takes the name from
the :class:`~rag_bench.evaluation.measures.Measure` object (``measures.CORRECT.column``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rag_bench
from rag_bench.evaluation import measures

ROOT = Path(rag_bench.__file__).parent
OWNERS = ("evaluation/scorers/",)
_ANN = "the ann section's names in ANN code (tuning, its chart): left to the ANN work of issue 29"
_FAILURE_LABEL = "a failure label (rag_bench.failure_labels), not the generation measure"
# (file under rag_bench/, literal) -> the vocabulary the literal belongs to.
ELSEWHERE: dict[tuple[str, str], str] = {
    ("failure_labels.py", "correct"): _FAILURE_LABEL,
    ("reporting/charts.py", "correct"): _FAILURE_LABEL,
    ("reporting/compare.py", "correct"): _FAILURE_LABEL,
    ("metrics/trec.py", "map"): "trec_eval's measure names (the exact trec engine, -m map)",
    ("metrics/trec.py", "recall"): "trec_eval's measure names (the exact trec engine, -m recall)",
    ("metrics/trec.py", "ndcg"): "trec_eval's measure names (the exact trec engine, -m ndcg)",
    ("metrics/trec_cli.py", "map"): "trec_eval's measure names (its default -m list)",
    ("metrics/trec_cli.py", "ndcg"): "trec_eval's measure names (its default -m list)",
    ("judging/ragas_judge.py", "faithfulness"): "a ragas metric name (judge.metrics; reported as judge_faithfulness)",
    ("calibration/labels.py", "correct"): "labels.jsonl's measure field: what a person labels",
    ("calibration/labels.py", "faithfulness"): "labels.jsonl's measure field: what a person labels",
    ("metrics/ranking.py", "hit"): "the ranking kernels' own names (ranking_metrics: trec_eval's success)",
    ("metrics/ranking.py", "precision"): "the ranking kernels' own names (ranking_metrics: trec_eval's P)",
    ("metrics/ranking.py", "recall"): "the ranking kernels' own names (ranking_metrics: trec_eval's recall)",
    ("metrics/ranking.py", "mrr"): "the ranking kernels' own names (ranking_metrics: trec_eval's recip_rank)",
    ("metrics/ranking.py", "ndcg"): "the ranking kernels' own names (ranking_metrics: trec_eval's ndcg_cut)",
    ("metrics/ranking.py", "map"): "the ranking kernels' own names (ranking_metrics: trec_eval's map)",
    ("reporting/report.py", "hit"): "metrics.json conditional: answers when retrieval hit or missed",
    ("reporting/report.py", "correct"): "metrics.json conditional: the count of correct answers",
    ("reporting/report.py", "unparseable"): "counts/unparseable, a count (measures.COUNTS), not the measure",
    ("runner/config.py", "target_recall"): "the config key index.target_recall",
    ("tracking/traces.py", "correct"): "an MLflow assessment's name (read from measures.CORRECT's column)",
    ("tracking/traces.py", "faithfulness"): "an MLflow assessment's name (read from measures.FAITHFULNESS's column)",
    ("indexing/lancedb.py", "target_recall"): "the config key index.target_recall",
    ("indexing/ann_report.py", "target_recall"): "the index's attribute index.target_recall (its config key)",
    # ANN code is being reworked by its owner (issue 29); these name ann measures and move with it.
    ("indexing/tuning.py", "ann_recall@"): _ANN,
    ("reporting/charts.py", "ann_recall@"): _ANN,
    ("reporting/charts.py", "ann_p50_ms"): _ANN,
    ("reporting/charts.py", "exact_p50_ms"): _ANN,
    ("reporting/charts.py", "target_recall"): _ANN,
    ("reporting/charts.py", "tuned_value"): _ANN,
    ("reporting/charts.py", "recall"): _ANN,
    # injection/retrieved and injection/in_context (columns injection_retrieved, injection_in_context) share
    # their family names with older vocabularies:
    ("adapters/external.py", "retrieved"): "an application's outputs field (its first-stage ranking)",
    ("evaluation/table.py", "retrieved"): "records.parquet's column of the first stage's ranking",
    ("reporting/drill.py", "retrieved"): "records.parquet's column of the first stage's ranking",
    ("failure_labels.py", "in_context"): _FAILURE_LABEL,
    # query/calls and query/ms (issue 53) share their family names with older vocabularies:
    ("judging/ragas_judge.py", "calls"): "the judge's own call counts (judge/calls), not the query transform's",
    ("judging/samples.py", "calls"): "the judge's own call counts (judge/calls), not the query transform's",
    ("text/sentences.py", "ms"): "the abbreviation Ms. (a sentence does not end after it)",
    ("reporting/charts.py", "in_context"): _FAILURE_LABEL,
    ("reporting/compare.py", "in_context"): _FAILURE_LABEL,
}
# The frozen table of format 0's parameters (cells.upgrade): history, typed once, never read from the
# catalog (cells.py is the ground floor; a family gaining a parameter is a new format, tests/test_cells.py).
_FORMAT_0 = "cells.py's frozen table of format 0's measure parameters (history: never the catalog)"
ELSEWHERE.update({("cells.py", literal): _FORMAT_0 for literal in (
    "answer/context_all", "answer/correct_all", "citation/citation_precision", "citation/citation_recall", "complete",
    "context/passage_precision", "context_complete", "document/ndcg", "evidence_recall", "generation/correct", "hit",
    "map", "mrr", "precision", "query/kept_terms", "query/lift", "recall", "rerank/hit_lift", "retrieval/ndcg")})
ELSEWHERE.update({("runner/throughput.py", literal): "throughput.json's keys: a query transform's or judge's model "
                  "calls and milliseconds, for --plan's time" for literal in ("calls", "ms")})
_SPELLING = re.compile(r"^(?:(?P<section>[a-z_]+)[/.])?(?P<name>[A-Za-z0-9_]+?)(?:@(?:[0-9]+|\{[^}]*\})?|_at_[0-9]+)?$")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def literals(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """``(file, line, literal)`` for each measure name typed outside its owners, ELSEWHERE included."""
    families = measures.families()
    names = {m.prefix + m.family for m in families} | {m.family for m in families}
    sections = {m.section for m in families}
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(OWNERS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                continue
            match = _SPELLING.match(node.value)
            if match and match["name"] in names and (match["section"] is None or match["section"] in sections):
                found.append((rel, node.lineno, node.value))
    return sorted(found)


def typed_names(root: Path = ROOT) -> list[str]:
    """``file:line: 'literal'`` for each measure name typed outside its owners and ELSEWHERE."""
    return [f"rag_bench/{rel}:{line}: {value!r}" for rel, line, value in literals(root)
            if (rel, value) not in ELSEWHERE]


def test_no_measure_name_is_typed_outside_its_owners() -> None:
    found = typed_names()
    assert not found, ("measure names typed outside rag_bench/evaluation/scorers/ "
                       "-- fix: take them from the Measure object (measures.CORRECT.column, .name, .key):\n"
                       + "\n".join(found))


def test_the_check_finds_a_typed_name(tmp_path: Path) -> None:
    # Each spelling of a measure is found, a docstring and another word are not.
    (tmp_path / "mod.py").write_text('"""hit@5 in a docstring."""\nK = 3\n'
                                     'A = {"hit@5": 1, "generation/correct": 2, "retrieval.mrr_at_10": 3}\n'
                                     'B = f"ndcg@{K}"\nC = "doc_map"\nD = "chunker"\n', encoding="utf-8")
    found = typed_names(tmp_path)
    assert [f.split(": ", 1)[1] for f in found] == ["'generation/correct'", "'hit@5'", "'retrieval.mrr_at_10'",
                                                    "'ndcg@'", "'doc_map'"]
    assert all(f.startswith(("rag_bench/mod.py:3:", "rag_bench/mod.py:4:", "rag_bench/mod.py:5:")) for f in found)


def test_every_exception_is_still_needed() -> None:
    # An exception whose literal is gone from its file is dropped here too (the list stays short);
    # the ANN ones follow work in progress elsewhere.
    typed = {(rel, value) for rel, _, value in literals()}
    stale = [f"{rel}: {lit!r}" for (rel, lit), why in ELSEWHERE.items() if why != _ANN and (rel, lit) not in typed]
    assert not stale, f"exceptions no longer needed: {stale}"
