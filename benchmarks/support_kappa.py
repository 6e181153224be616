"""How well do offline support verdicts agree with people's? (issues 42, 55)

For each human-judgment set (``begin-wow-dev``, ``wice-claim-dev``, ``summedits-dev``,
``mtrag-cloud-dev``; see its README.md) one run prints, per measure:

- ``n``: labelled items; ``undec``: the share the measure leaves undecided (not judged: no claim to
  judge, or evidence the judge calls ambiguous) -- counted, never guessed;
- ``yes``: the measure's "yes" rate on the items it decides, ``people``: people's "yes" rate on the
  same items, ``bias``: the difference in points (the error of a faithfulness figure read from it);
- ``kappa [95% CI]``: Cohen's kappa on the decided items with its bootstrap CI
  (:func:`rag_bench.calibration.agreement.kappa_ci`, the code ``rag-bench calibrate`` uses).

Measures:

- ``proxy``: the lexical proxy (:func:`rag_bench.metrics.generation.faithfulness` >= 1 on the cited
  passages, as :mod:`rag_bench.calibration.standins` reads it);
- ``claims (lexical)``: the claims scorer's ``answer_supported`` with the lexical judge (the default,
  :mod:`rag_bench.metrics.support`);
- ``claims (semantic)``: ``answer_supported`` with the semantic judge (:mod:`rag_bench.metrics.semantic`,
  ``eval.claims_judge=semantic``), its shipped weights (``rag_bench/metrics/semantic_weights.json``);
- ``semantic, held out``: the same judge with weights refitted without the set being measured
  (``benchmarks/train_support_judge.py``'s leave-one-set-out): what it does on a kind of text it
  has never been fitted to.

``--variants`` adds the lexical judge's variants of issue 42 (one rule, one threshold each).

    python benchmarks/support_kappa.py [DIR] [--variants] [--cache-dir D]
    # DIR: default ../shared/datasets/human-judgments; embeddings cached under --cache-dir
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rag_bench

from rag_bench.calibration.agreement import cohen_kappa, kappa_ci
from rag_bench.domain import Answer, Passage
from rag_bench.metrics.generation import faithfulness
from rag_bench.metrics.support import support_answer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sets' reader beside this script
from human_judgments import DEFAULT, SETS, read_set, scorer_inputs  # noqa: E402

# name -> keyword arguments of support_answer (issue 42's variants of the lexical judge; --variants).
VARIANTS: dict[str, dict[str, Any]] = {
    "A all words, 2-sent window, strict": {"min_coverage": 1.0, "max_sentences": 2},
    "C as A, 1-sent window": {"min_coverage": 1.0, "max_sentences": 1},
    "E as A, whole passage": {"min_coverage": 1.0, "max_sentences": 0},
    "G 80% words, 2-sent window, strict": {"min_coverage": 0.8, "max_sentences": 2},
    "I 80% words, whole passage, strict (default)": {"min_coverage": 0.8, "max_sentences": 0},
    "I- as I, not strict": {"min_coverage": 0.8, "max_sentences": 0, "strict": False},
    "I70 70% words, whole passage, strict": {"min_coverage": 0.7, "max_sentences": 0},
    "K 60% words, 2-sent window, not strict": {"min_coverage": 0.6, "max_sentences": 2, "strict": False},
}

Verdict = int | None  # 1 yes, 0 no, None undecided / not judged


def _proxy(row: dict[str, Any]) -> Verdict:
    answer = Answer(row["answer"], tuple(row.get("citations", ())), refused=bool(row.get("refused", False)))
    passages = [Passage(i + 1, f"c{i}", p.get("doc_id", ""), 0, len(p["text"]), p["text"])
                for i, p in enumerate(row["retrieved"])]
    return int(faithfulness(answer, passages) >= 1.0)


def _variant(row: dict[str, Any], kw: dict[str, Any]) -> Verdict:
    if row.get("refused"):
        return 0
    cited = [p["text"] for i, p in enumerate(row["retrieved"]) if i + 1 in set(row.get("citations", ()))]
    verdict, _ = support_answer(row["answer"], cited, **kw)
    return None if verdict is None else int(verdict)


def _answer_supported(values: dict[str, float]) -> Verdict:  # NaN: undecided / not judged
    from rag_bench.evaluation.scorers.claims import ANSWER_SUPPORTED

    v = values[ANSWER_SUPPORTED.column]
    return None if v != v else int(v >= 1.0)


def _lexical(row: dict[str, Any]) -> Verdict:
    from rag_bench.evaluation.scorers import claims
    from rag_bench.metrics.support import judge_claims

    inputs = scorer_inputs(row)
    return _answer_supported(claims.question_values(None if inputs is None else judge_claims(*inputs)))


def semantic_measure(weights: Any, cache_dir: str | None) -> Callable[[dict[str, Any]], Verdict]:
    """The semantic judge's answer verdict with ``weights`` (None: the shipped ones)."""
    from rag_bench.evaluation.scorers import claims
    from rag_bench.metrics.semantic import SemanticJudge, default_embedder

    judge = SemanticJudge(default_embedder(cache_dir), weights)

    def measure(row: dict[str, Any]) -> Verdict:
        inputs = scorer_inputs(row)
        judged = None if inputs is None else judge.judge_claims(*inputs)
        return _answer_supported(claims.question_values(judged, True, judge.weights.mostly))

    return measure


def line(name: str, people: Sequence[int], auto: Sequence[Verdict], seconds: float) -> str:
    """One measure's row: undecided share, yes-rate vs people's on the decided items, kappa with CI."""
    pairs = [(p, a) for p, a in zip(people, auto, strict=True) if a is not None]
    undecided = 1 - len(pairs) / len(people)
    if not pairs:
        return f"  {name:<46} undec {undecided:5.2f}  (nothing decided)"
    ps, qs = [p for p, _ in pairs], [a for _, a in pairs]
    yes, base = sum(qs) / len(qs), sum(ps) / len(ps)
    k = cohen_kappa(ps, qs, categories=[0, 1])
    ci = kappa_ci(ps, qs, categories=[0, 1])
    interval = f"[{ci.low:.2f}, {ci.high:.2f}]" if ci.defined else "(no CI)"
    return (f"  {name:<46} undec {undecided:5.2f}  yes {yes:5.2f} people {base:5.2f} bias {100 * (yes - base):+6.1f}"
            f"  kappa {k:6.3f} {interval:<14} {seconds:6.1f}s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT, help="folder holding the sets (default: %(default)s)")
    ap.add_argument("--variants", action="store_true", help="also issue 42's variants of the lexical judge")
    ap.add_argument("--lexical-only", action="store_true", help="only the proxy and the lexical judge (no model)")
    ap.add_argument("--cache-dir", default=None, help="embedding cache folder (default: $RAG_BENCH_CACHE)")
    args = ap.parse_args(argv)
    found = [s for s in SETS if (args.root / s / "labels.jsonl").is_file() and (args.root / s / "outputs.jsonl").is_file()]
    if not found:
        print(f"no human-judgment sets under {args.root} (looked for {', '.join(SETS)}, each with outputs.jsonl and "
              "labels.jsonl): nothing measured -- fix: pass the folder as the argument", file=sys.stderr)
        return 2
    for s in SETS:
        if s not in found:
            print(f"{s}: absent under {args.root}, skipped", file=sys.stderr)
    measures: list[tuple[str, Callable[[str], Callable[[dict[str, Any]], Verdict]]]] = [
        ("proxy (faithfulness >= 1)", lambda s: _proxy),
        ("claims (lexical): answer_supported", lambda s: _lexical),
    ]
    if not args.lexical_only:
        from rag_bench.metrics.semantic import load_weights

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from train_support_judge import held_out_weights

        measures.append(("claims (semantic): answer_supported", lambda s: semantic_measure(None, args.cache_dir)))
        held = held_out_weights(args.root, args.cache_dir) if len(found) > 1 else {}
        if held:
            measures.append(("claims (semantic), held out", lambda s: semantic_measure(held[s], args.cache_dir)))
        print(f"semantic judge: shipped weights {load_weights().source}")
    if args.variants:
        measures += [(name, lambda s, kw=kw: (lambda r: _variant(r, kw))) for name, kw in VARIANTS.items()]
    for s in found:
        items = read_set(args.root / s)
        people = [p for p, _ in items]
        print(f"{s}: n {len(items)}, people's yes-rate {sum(people) / len(people):.2f}")
        for name, make in measures:
            fn = make(s)
            t = time.perf_counter()
            auto = [fn(r) for _, r in items]
            print(line(name, people, auto, time.perf_counter() - t), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
