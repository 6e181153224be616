"""Fit the semantic support judge's model (rag_bench/metrics/semantic_weights.json; issue 55).

Data: the four shared human-judgment dev sets (``../shared/datasets/human-judgments``: begin-wow-dev,
wice-claim-dev, summedits-dev, mtrag-cloud-dev; their README gives sources and licences). Read from
there, never copied: the weights file records each file's SHA-256 instead.

Per labelled answer (a refusal left out), each claim the claims scorer judges (its own cited passages,
:func:`rag_bench.metrics.support.judge_claims`) gives the features of
:func:`rag_bench.metrics.semantic.features`: the best cosine between the claim and a sentence or
two-sentence window of those passages (packaged all-MiniLM-L6-v2), the lexical judge's coverage,
its number/name/negation checks and its verdict. Every claim takes its answer's label (people judged
answers, not claims). The model: L2-regularised logistic regression fitted by Newton's method
(numpy, deterministic), every set weighing the same in total and every answer the same within its
set (its weight split over its claims), so no set, and no long answer, dominates the fit.

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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rag_bench

from rag_bench.metrics.semantic import FEATURES, WEIGHTS_FILE, SemanticJudge, Weights, default_embedder, features

SETS = ("begin-wow-dev", "wice-claim-dev", "summedits-dev", "mtrag-cloud-dev")
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "human-judgments"
L2 = 0.01  # ridge on the coefficients (not the intercept); the sample weights sum to 1
BAND = 0.1  # undecided when P(supported) is within this of 0.5
FEATURES_FILE = Path(__file__).resolve().with_name("support_judge_features.json")

Rows = list[tuple[str, int, list[tuple[float, ...]]]]  # (set, people's label, features of each claim)


def _read(folder: Path) -> list[tuple[int, dict[str, Any]]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from support_kappa import read_set

    return read_set(folder)


def claim_features(root: Path, cache_dir: str | None = None, sets: tuple[str, ...] = SETS) -> Rows:
    """(set, label, [features per claim]) per labelled, non-refused answer with a claim to judge."""
    from rag_bench.metrics.support import judge_claims

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from support_kappa import scorer_inputs

    sim = SemanticJudge(default_embedder(cache_dir), Weights((0.0,) * len(FEATURES), 0.0)).similarity
    out: Rows = []
    for s in sets:
        for label, row in _read(root / s):
            inputs = scorer_inputs(row)
            if inputs is None:
                continue
            answer, cites, passages = inputs
            text = dict(passages)
            xs = []
            for v in judge_claims(answer, cites, passages):
                if v.own is None:
                    continue
                match = sim.best([v.claim.text], [text[n] for n in v.citations])[0]
                xs.append(tuple(round(f, 6) for f in features(v.own, match)))  # as the features file keeps them
            if xs:
                out.append((s, label, xs))
    return out


def fit(rows: Rows, l2: float = L2, band: float = BAND, source: str = "") -> Weights:
    """The logistic model over ``rows`` (weights as the module docstring says); Newton's method."""
    sets = sorted({s for s, _, _ in rows})
    per_set = {s: sum(1 for r in rows if r[0] == s) for s in sets}
    x, y, w = [], [], []
    for s, label, xs in rows:
        for f in xs:
            x.append(f)
            y.append(label)
            w.append(1.0 / (per_set[s] * len(xs) * len(sets)))
    X = np.hstack([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))])
    Y, W = np.asarray(y, dtype=np.float64), np.asarray(w, dtype=np.float64)
    ridge = np.full(X.shape[1], l2)
    ridge[-1] = 0.0
    beta = np.zeros(X.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(X @ beta)))
        grad = X.T @ (W * (p - Y)) + ridge * beta
        hess = (X * (W * p * (1 - p))[:, None]).T @ X + np.diag(ridge)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return Weights(tuple(float(round(b, 6)) for b in beta[:-1]), float(round(beta[-1], 6)), band, source)


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
    doc = {"about": "semantic support judge of rag_bench.metrics.semantic: logistic model over FEATURES, fitted by "
                    "benchmarks/train_support_judge.py on the shared human-judgment dev sets (issue 55)",
           "model": model.as_json(), "l2": L2, "embedder": "all-MiniLM-L6-v2 (packaged, torch)",
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
