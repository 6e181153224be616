"""How well do offline support verdicts agree with people's? (issue 42)

For each human-judgment set (``begin-wow-dev``, ``wice-claim-dev``; see its README.md), one run
prints n, people's yes-rate, and Cohen's kappa with its 95 % bootstrap CI
(:func:`rag_bench.calibration.agreement.kappa_ci`, the same code ``rag-bench calibrate`` uses) for:

- ``proxy``: the lexical proxy the scorer uses today (:func:`rag_bench.metrics.generation.faithfulness`,
  called with the answer and the passages it cites, verdict ``>= 1`` as in
  :mod:`rag_bench.calibration.standins`);
- ``scorer``: the claims scorer's columns (:mod:`rag_bench.evaluation.scorers.claims`) as
  ``rag-bench calibrate`` reads them: ``answer_supported`` (the stand-in ``faithfulness (offline claim
  judge)``) and ``citation_precision_claims >= 1`` (``citation support per claim``), each claim
  judged by its own citations (here: the answer's ``citations`` list, no markers);
- the claim/window judge of :mod:`rag_bench.metrics.support`, in every variant tried (one rule and
  one threshold per variant for both sets; nothing fitted per set).

An answer the judge has nothing to judge in (no content word) counts as "no", as does a refusal.

``--embed`` adds the packaged MiniLM (all-MiniLM-L6-v2, offline) as a signal: per claim, the best
cosine between the claim and a sentence of the passages; an answer's score is its worst claim's.
Printed alone (score >= t) and combined with the default judge (AND, OR), for t in 0.5 .. 0.9.
It encodes every passage sentence (minutes on 2 cores), so it is off by default.

    python benchmarks/support_kappa.py [DIR] [--embed]   # DIR: default ../shared/datasets/human-judgments
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rag_bench

from rag_bench.calibration.agreement import cohen_kappa, kappa_ci
from rag_bench.domain import Answer, Passage
from rag_bench.metrics.generation import faithfulness
from rag_bench.metrics.support import judge_claims, support_answer

SETS = ("begin-wow-dev", "wice-claim-dev")
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "human-judgments"

# name -> keyword arguments of support_answer, one rule and one threshold for both sets. In the order
# tried: A was chosen on principle before measuring (every informative word of each claim, every
# number, name and negation, in one window of <= 2 sentences); it is too strict for paraphrase, so
# the others relax one thing at a time. The default of support_answer is I (see the report of issue 42).
VARIANTS: dict[str, dict[str, Any]] = {
    "A all words, 2-sent window, strict": {"min_coverage": 1.0, "max_sentences": 2},
    "B as A, fillers counted": {"min_coverage": 1.0, "max_sentences": 2, "ignore": frozenset()},
    "C as A, 1-sent window": {"min_coverage": 1.0, "max_sentences": 1},
    "D as A, 3-sent window": {"min_coverage": 1.0, "max_sentences": 3},
    "E as A, whole passage": {"min_coverage": 1.0, "max_sentences": 0},
    "F as A, not strict": {"min_coverage": 1.0, "max_sentences": 2, "strict": False},
    "G 80% words, 2-sent window, strict": {"min_coverage": 0.8, "max_sentences": 2},
    "H 80% words, 3-sent window, strict": {"min_coverage": 0.8, "max_sentences": 3},
    "H5 80% words, 5-sent window, strict": {"min_coverage": 0.8, "max_sentences": 5},
    "H10 80% words, 10-sent window, strict": {"min_coverage": 0.8, "max_sentences": 10},
    "I 80% words, whole passage, strict": {"min_coverage": 0.8, "max_sentences": 0},
    "I- as I, not strict": {"min_coverage": 0.8, "max_sentences": 0, "strict": False},
    "I90 90% words, whole passage, strict": {"min_coverage": 0.9, "max_sentences": 0},
    "I70 70% words, whole passage, strict": {"min_coverage": 0.7, "max_sentences": 0},
    "J 60% words, 2-sent window, strict": {"min_coverage": 0.6, "max_sentences": 2},
    "K 60% words, 2-sent window, not strict": {"min_coverage": 0.6, "max_sentences": 2, "strict": False},
}


def _read(folder: Path) -> list[tuple[int, dict[str, Any]]]:
    """(people's verdict, output row) per labelled item, matched by qid and the answer's SHA-256."""
    labels = {}
    for line in (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            lb = json.loads(line)
            labels[lb["qid"]] = lb
    out = []
    for line in (folder / "outputs.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        lb = labels.get(row["id"])
        if lb and lb["answer_sha256"] == hashlib.sha256(row["answer"].encode("utf-8")).hexdigest():
            out.append((int(lb["value"]), row))
    return out


def _proxy(row: dict[str, Any]) -> int:
    answer = Answer(row["answer"], tuple(row.get("citations", ())), refused=bool(row.get("refused", False)))
    passages = [Passage(i + 1, f"c{i}", p.get("doc_id", ""), 0, len(p["text"]), p["text"])
                for i, p in enumerate(row["retrieved"])]
    return int(faithfulness(answer, passages) >= 1.0)


def _judge(row: dict[str, Any], kw: dict[str, Any]) -> int:
    if row.get("refused"):
        return 0
    cited = [p["text"] for i, p in enumerate(row["retrieved"]) if i + 1 in set(row.get("citations", ()))]
    verdict, _ = support_answer(row["answer"], cited, **kw)
    return int(bool(verdict))


def _scorer(row: dict[str, Any]) -> dict[str, float]:
    """The claims scorer's per-question values for one output row (NaN: undefined)."""
    from rag_bench.evaluation.scorers import claims

    if row.get("refused"):
        return claims.question_values(None)
    nums = {i + 1 for i in range(len(row["retrieved"]))}
    cites = tuple(n for n in dict.fromkeys(row.get("citations", ())) if n in nums)
    passages = [(i + 1, p["text"]) for i, p in enumerate(row["retrieved"])]
    return claims.question_values(judge_claims(row["answer"], cites, passages))


def _cosines(rows: list[dict[str, Any]]) -> list[float]:
    """Per answer: min over its claims of the max cosine between the claim and a passage sentence."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from rag_bench.embedding.models import resolve_model
    from rag_bench.metrics.support import FILLERS, content_words, split_claims
    from rag_bench.text.sentences import sentence_spans

    model = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")
    out = []
    for r in rows:
        claims = [c.text for c in split_claims(r["answer"]) if content_words(c.text, FILLERS)]
        sents = [p["text"][s:e] for p in r["retrieved"] for s, e in sentence_spans(p["text"])]
        if r.get("refused") or not claims or not sents:
            out.append(0.0)
            continue
        c = model.encode(claims, normalize_embeddings=True, batch_size=64)
        v = model.encode(sents, normalize_embeddings=True, batch_size=64)
        out.append(float(np.min(np.max(c @ v.T, axis=1))))
    return out


def _line(name: str, people: list[int], auto: list[int], seconds: float) -> str:
    k = cohen_kappa(people, auto, categories=[0, 1])
    ci = kappa_ci(people, auto, categories=[0, 1])
    interval = f"[{ci.low:.2f}, {ci.high:.2f}]" if ci.defined else f"(no CI: {ci.reason})"
    return f"  {name:<42} yes {sum(auto) / len(auto):5.2f}  kappa {k:6.3f} {interval:<14} {seconds:6.1f}s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT, help="folder holding the sets (default: %(default)s)")
    ap.add_argument("--embed", action="store_true", help="also the MiniLM cosine signal (slow)")
    args = ap.parse_args(argv)
    found = [s for s in SETS if (args.root / s / "labels.jsonl").is_file() and (args.root / s / "outputs.jsonl").is_file()]
    if not found:
        print(f"no human-judgment sets under {args.root} (looked for {', '.join(SETS)}, each with outputs.jsonl and "
              "labels.jsonl): nothing measured -- fix: pass the folder as the argument", file=sys.stderr)
        return 2
    for s in SETS:
        if s not in found:
            print(f"{s}: absent under {args.root}, skipped", file=sys.stderr)
    for s in found:
        items = _read(args.root / s)
        people = [p for p, _ in items]
        print(f"{s}: n {len(items)}, people's yes-rate {sum(people) / len(people):.2f}")
        t = time.perf_counter()
        print(_line("proxy (faithfulness >= 1, today's scorer)", people, [_proxy(r) for _, r in items],
                    time.perf_counter() - t))
        from rag_bench.evaluation.scorers import claims

        t = time.perf_counter()
        scored = [_scorer(r) for _, r in items]
        seconds = time.perf_counter() - t
        for label, col in (("scorer answer_supported (stand-in)", claims.ANSWER_SUPPORTED.column),
                           ("scorer citation_precision_claims >= 1", claims.CITATION_PRECISION_CLAIMS.column)):
            vals = [v[col] for v in scored]
            undefined = sum(v != v for v in vals)  # NaN: calibrate leaves these out, here they count as "no"
            print(_line(f"{label} [undef {undefined}]", people, [int(v >= 1.0) for v in vals], seconds))
        for name, kw in VARIANTS.items():
            t = time.perf_counter()
            print(_line(name, people, [_judge(r, kw) for _, r in items], time.perf_counter() - t))
        if args.embed:
            t = time.perf_counter()
            worst = _cosines([r for _, r in items])
            seconds = time.perf_counter() - t
            judge = [_judge(r, {}) for _, r in items]
            for th in (0.5, 0.6, 0.7, 0.8, 0.9):
                emb = [int(c >= th) for c in worst]
                print(_line(f"M cosine >= {th}", people, emb, seconds))
                print(_line(f"M I and cosine >= {th}", people, [a & b for a, b in zip(judge, emb, strict=True)], 0.0))
                print(_line(f"M I or cosine >= {th}", people, [a | b for a, b in zip(judge, emb, strict=True)], 0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
