"""Does the two-level interval of a judged measure cover its true mean? (issue 27)

Each run draws a golden set of ``n`` questions from a population (a question's true verdict is 1
with probability ``base_rate``) and judges each ``samples`` times with a judge that flips its
verdict with probability ``flip`` independently per call. The true mean is the population's
expected verdict, ``base_rate * (1 - flip) + (1 - base_rate) * flip``. Per run, two 95% intervals
over the same per-question means: the two-level bootstrap (questions, then each question's
samples: :func:`rag_bench.metrics.bootstrap.two_level_bootstrap_ci`, what metrics.json reports)
and the questions-only bootstrap of the per-question means (:func:`bootstrap_ci`, what it reported
before). Coverage = the share of runs whose interval holds the true mean.

The first ``http_runs`` runs go through the real plumbing: the scripted judge
(``tests/judging/scripted_judge.py``) serves ragas' faithfulness prompts over HTTP and
:class:`~rag_bench.judging.ragas_judge.RagasJudge` with ``samples`` judges every item; the samples
it returns must equal the verdicts the direct simulation draws for those runs (same seeds), so the
other runs call the statistics directly on those draws.

    python benchmarks/judge_coverage.py [--runs 1000] [--n 15] [--samples 3] [--flip 0.2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's tests/ helpers

from rag_bench.metrics.bootstrap import bootstrap_ci, question_means, two_level_bootstrap_ci  # noqa: E402


def draw(run: int, *, n: int, samples: int, flip: float, base_rate: float) -> tuple[dict[int, bool], np.ndarray]:
    """Run ``run``'s golden set (true verdict per item) and its ``(n, samples)`` verdicts."""
    from tests.judging.scripted_judge import verdict

    truth = {q: bool(t) for q, t in enumerate(np.random.default_rng([run, 10**6]).random(n) < base_rate)}
    verdicts = np.array([[verdict(run, q, s, truth=truth[q], flip=flip) for s in range(samples)] for q in range(n)],
                        dtype=np.float64)
    return truth, verdicts


def over_http(run: int, truth: dict[int, bool], *, samples: int, flip: float, cache_dir: Path) -> np.ndarray:
    """The ``(n, samples)`` faithfulness samples RagasJudge gets from the scripted judge over HTTP."""
    from rag_bench.judging.base import JudgeSample
    from rag_bench.judging.ragas_judge import RagasJudge
    from tests.judging.scripted_judge import ScriptedJudge
    from tests.servers import serving

    with serving(ScriptedJudge, run=run, truth=truth, flip=flip) as server:
        judge = RagasJudge(base_url=f"http://127.0.0.1:{server.server_port}/v1", metrics=["faithfulness"],
                           samples=samples, concurrency=4, max_retries=0, timeout_s=30)
        items = [JudgeSample(f"item {q}", f"The answer of item {q}.", (f"Context of item {q}.",)) for q in truth]
        results = judge.judge(items, cache_dir=cache_dir)
    return np.array([[np.nan if v is None else v for v in r.samples["faithfulness"]] for r in results])


def simulate(*, runs: int, n: int, samples: int, flip: float, base_rate: float = 0.6, n_resamples: int = 1000,
             http_runs: int = 1) -> dict[str, Any]:
    """Coverage of both intervals over ``runs`` runs (the first ``http_runs`` through HTTP)."""
    true_mean = base_rate * (1 - flip) + (1 - base_rate) * flip
    covered = {"two_level": 0, "questions_only": 0}
    width = {"two_level": 0.0, "questions_only": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            truth, verdicts = draw(run, n=n, samples=samples, flip=flip, base_rate=base_rate)
            if run < http_runs:
                got = over_http(run, truth, samples=samples, flip=flip, cache_dir=Path(tmp) / str(run))
                if not np.array_equal(got, verdicts):
                    raise AssertionError(f"run {run}: the judge's samples over HTTP differ from the scripted verdicts")
            for name, (lo, hi) in (("two_level", two_level_bootstrap_ci(verdicts, n_resamples=n_resamples, seed=run)),
                                   ("questions_only", bootstrap_ci(question_means(verdicts), n_resamples=n_resamples,
                                                                   seed=run))):
                covered[name] += lo <= true_mean <= hi
                width[name] += hi - lo
    return {"settings": {"runs": runs, "n": n, "samples": samples, "flip": flip, "base_rate": base_rate,
                         "n_resamples": n_resamples, "http_runs": http_runs, "true_mean": true_mean},
            "coverage": {k: v / runs for k, v in covered.items()},
            "mean_width": {k: v / runs for k, v in width.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--n", type=int, default=15, help="questions per golden set")
    parser.add_argument("--samples", type=int, default=3, help="judge samples per question")
    parser.add_argument("--flip", type=float, default=0.2, help="probability the judge flips a verdict")
    parser.add_argument("--base-rate", type=float, default=0.6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--http-runs", type=int, default=2)
    a = parser.parse_args()
    t0 = time.perf_counter()
    out = simulate(runs=a.runs, n=a.n, samples=a.samples, flip=a.flip, base_rate=a.base_rate,
                   n_resamples=a.resamples, http_runs=a.http_runs)
    s = out["settings"]
    print("settings: " + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in s.items()))
    for name in ("two_level", "questions_only"):
        print(f"{name:>15}: 95% CI covers the true mean in {out['coverage'][name]:.1%} of runs "
              f"(mean width {out['mean_width'][name]:.3f})")
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
