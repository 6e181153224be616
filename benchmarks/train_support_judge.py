"""Fit the semantic support judge's model (rag_bench/metrics/semantic_weights.json; issue 55).

Data: the four shared human-judgment dev sets (``../shared/datasets/human-judgments``: begin-wow-dev,
wice-claim-dev, summedits-dev, mtrag-cloud-dev; their README gives sources and licences). Read from
there, never copied: the weights file records each file's SHA-256 instead.

Per labelled answer (a refusal left out), each claim the claims scorer judges (its own cited passages,
:func:`rag_bench.metrics.support.judge_claims`; not the pieces that assert nothing,
:func:`rag_bench.metrics.semantic.non_claim`) gives the features of
:func:`rag_bench.metrics.semantic.features`: the best cosine between the claim and a sentence or
two-sentence window of those passages (packaged all-MiniLM-L6-v2), the lexical judge's coverage,
its number/name/negation checks, its verdict over the whole passage and within two sentences, and
an antonym swap against the best unit. The model (:class:`rag_bench.metrics.semantic.Weights`):
two cosine thresholds (supported at or above ``high``, not below ``low``, undecided between) and the
share of an answer's claims that must be supported (``mostly``), chosen on a small grid to maximise
:func:`objective` -- per set, kappa minus half the "yes" rate's distance from people's minus 0.3 x
the undecided share, every set weighing the same, so no set dominates. (A logistic regression over
the same features was tried first: held out, it carried each set's base rate to the others.)

Fit nothing to one set: ``--held-out`` prints, per set, the figures of a model fitted on the other
three (what the judge does on a kind of text it has never seen); ``benchmarks/support_kappa.py``
prints the same beside the shipped model's.

    python benchmarks/train_support_judge.py [DIR] [--write] [--held-out] [--cache-dir D]

``--write`` writes the model and the claims' features it was fitted on
(``benchmarks/support_judge_features.json``: numbers only -- set, people's label, each claim's
features -- no text of the sets). Without it the script fits again and compares with the shipped
model (exit 1 when they differ); ``--from-features`` fits from the shipped features instead of
embedding the sets (seconds; ``tests/metrics/test_semantic.py`` runs it, and re-computes one set's
features from the shared data when it is present).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rag_bench

from rag_bench.metrics.semantic import (
    FEATURES,
    WEIGHTS_FILE,
    SemanticJudge,
    Weights,
    default_embedder,
    features,
    non_claim,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sets' reader beside this script
from human_judgments import DEFAULT, SETS, read_set, scorer_inputs  # noqa: E402

FEATURES_FILE = Path(__file__).resolve().with_name("support_judge_features.json")

Rows = list[tuple[str, int, list[tuple[float, ...]]]]  # (set, people's label, features of each claim)


def _read(folder: Path) -> list[tuple[int, dict[str, Any]]]:
    return read_set(folder)


def claim_features(root: Path, cache_dir: str | None = None, sets: tuple[str, ...] = SETS,
                   limit: int | None = None) -> Rows:
    """(set, label, [features per claim]) per labelled, non-refused answer with a claim to judge
    (of each set's first ``limit`` labelled answers when given)."""
    from rag_bench.metrics.support import judge_claims


    sim = SemanticJudge(default_embedder(cache_dir), Weights(1.0, 0.0)).similarity
    out: Rows = []
    for s in sets:
        for label, row in _read(root / s)[:limit]:
            inputs = scorer_inputs(row)
            if inputs is None:
                continue
            answer, cites, passages = inputs
            text = dict(passages)
            xs = []
            for v in judge_claims(answer, cites, passages):
                if v.own is None or non_claim(v.claim.text):
                    continue
                cited = [text[n] for n in v.citations]
                match = sim.best([v.claim.text], cited)[0]
                unit = cited[match.passage][match.start:match.end] if match.passage >= 0 else ""
                xs.append(tuple(round(f, 6) for f in features(v.claim, v.own, match, cited, unit)))  # as the file keeps them
            if xs:
                out.append((s, label, xs))
    return out


HIGHS = (0.7, 0.75, 0.8, 0.85, 0.9)
LOWS = (0.3, 0.4, 0.5, 0.6)
MOSTLY = (1.0, 0.75, 0.6)


def _stats(rows: Rows, w: Weights) -> tuple[float, float, float]:
    """(kappa on the decided answers, yes-rate minus people's there, undecided share) of ``w``."""
    from rag_bench.calibration.agreement import cohen_kappa

    people, auto, open_ = [], [], 0
    for _, label, xs in rows:
        said = w.answer([w.verdict(x) for x in xs])
        if said is None:
            open_ += 1
            continue
        people.append(label)
        auto.append(int(said))
    if not people:
        return 0.0, 0.0, 1.0
    k = cohen_kappa(people, auto, categories=[0, 1])
    return (0.0 if k != k else k), (sum(auto) - sum(people)) / len(people), open_ / len(rows)


def objective(rows: Rows, w: Weights) -> float:
    """What the fit maximises, summed over the sets (each the same weight): kappa, minus half the
    yes-rate's distance from people's (a faithfulness figure's error), minus 0.3 x the undecided share
    (an undecided answer is no figure)."""
    total = 0.0
    for s in sorted({r[0] for r in rows}):
        k, bias, open_ = _stats([r for r in rows if r[0] == s], w)
        total += k - 0.5 * abs(bias) - 0.3 * open_
    return total


def fit(rows: Rows, source: str = "") -> Weights:
    """The rule (thresholds ``high``/``low``, answer share ``mostly``) of the grid maximising
    :func:`objective` on ``rows``; the first of equals in grid order (deterministic)."""
    best: tuple[float, Weights] | None = None
    for mostly in MOSTLY:
        for high in HIGHS:
            for low in LOWS:
                if low >= high:
                    continue
                w = Weights(high, low, mostly, source)
                score = objective(rows, w)
                if best is None or score > best[0] + 1e-12:
                    best = (score, w)
    assert best is not None
    return best[1]


def provenance(root: Path, sets: tuple[str, ...] = SETS) -> dict[str, Any]:
    """What the model was fitted on: each set's files by SHA-256 (the data stays where it is)."""
    return {s: {f: hashlib.sha256((root / s / f).read_bytes()).hexdigest() for f in ("outputs.jsonl", "labels.jsonl")}
            for s in sets if (root / s / "labels.jsonl").is_file()}


_FEATURES_MEMO: dict[tuple[str, str | None], Rows] = {}


def _features(root: Path, cache_dir: str | None) -> Rows:
    key = (str(root), cache_dir)
    if key not in _FEATURES_MEMO:
        _FEATURES_MEMO[key] = claim_features(root, cache_dir, tuple(s for s in SETS if (root / s / "labels.jsonl").is_file()))
    return _FEATURES_MEMO[key]


def load_features(path: Path = FEATURES_FILE) -> Rows:
    """The shipped training features (``--write`` wrote them)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [(s, int(y), [tuple(float(v) for v in x) for x in xs]) for s, y, xs in doc["rows"]]


def held_out_weights(root: Path, cache_dir: str | None = None) -> dict[str, Weights]:
    """Per set, the model fitted on the other sets (leave one set out)."""
    rows = _features(root, cache_dir)
    sets = sorted({s for s, _, _ in rows})
    return {s: fit([r for r in rows if r[0] != s], source=f"fitted without {s}") for s in sets}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--write", action="store_true", help=f"write {WEIGHTS_FILE.name}")
    ap.add_argument("--cache-dir", default=None, help="embedding cache folder (default: $RAG_BENCH_CACHE)")
    ap.add_argument("--from-features", action="store_true", help=f"fit from the shipped {FEATURES_FILE.name}")
    args = ap.parse_args(argv)
    if args.from_features:
        rows = load_features()
        shipped_doc = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
        model = fit(rows, source=str(WEIGHTS_FILE))
        if shipped_doc["model"] != model.as_json():
            print(f"differs from the shipped {WEIGHTS_FILE.name}: {shipped_doc['model']} vs {model.as_json()}",
                  file=sys.stderr)
            return 1
        print(json.dumps(model.as_json()))
        print("the shipped model is reproduced (from the shipped features)")
        return 0
    missing = [s for s in SETS if not (args.root / s / "labels.jsonl").is_file()]
    if missing:
        print(f"sets absent under {args.root}: {', '.join(missing)} -- the model is fitted on all four; "
              "fix: pass the folder holding them", file=sys.stderr)
        return 2
    rows = _features(args.root, args.cache_dir)
    model = fit(rows, source=str(WEIGHTS_FILE))
    doc = {"about": "semantic support judge of rag_bench.metrics.semantic: its decision rule over FEATURES (Weights), fitted by "
                    "benchmarks/train_support_judge.py on the shared human-judgment dev sets (issue 55)",
           "model": model.as_json(), "grid": {"high": HIGHS, "low": LOWS, "mostly": MOSTLY},
           "embedder": "all-MiniLM-L6-v2 (packaged, torch)",
           "claims": len([x for _, _, xs in rows for x in xs]), "answers": len(rows),
           "data": provenance(args.root)}
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.write:
        WEIGHTS_FILE.write_text(text, encoding="utf-8")
        FEATURES_FILE.write_text(json.dumps({"features": list(FEATURES), "rows": [
            [s, y, [[round(v, 6) for v in x] for x in xs]] for s, y, xs in rows]}, separators=(",", ":")) + "\n",
            encoding="utf-8")
        print(f"wrote {WEIGHTS_FILE} and {FEATURES_FILE}")
    print(json.dumps(doc["model"]))
    shipped = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")) if WEIGHTS_FILE.is_file() else None
    if shipped is None or shipped["model"] != doc["model"]:
        print(f"differs from the shipped {WEIGHTS_FILE.name}: {shipped and shipped['model']}", file=sys.stderr)
        return 1
    print("the shipped model is reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
