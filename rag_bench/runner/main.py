"""Run one cell from a composed config: validate, skip if done, compute, write, track, mark DONE."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from rag_bench import budget, memo
from rag_bench.cells import CellResult, atomic_write, cell_lock, discard, is_done, mark_done, write_cell_or_fail
from rag_bench.components import CONSOLE_STAGES, capability, is_null
from rag_bench.data.files import MAX_FILE_BYTES
from rag_bench.data.loader import load_dataset
from rag_bench.domain import Dataset
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures as catalog
from rag_bench.evaluation import run_io
from rag_bench.evaluation.evaluation import Evaluation
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.faults import failpoint
from rag_bench.memo import SharedWork
from rag_bench.naming import flat_params
from rag_bench.pipeline import pipeline, stages
from rag_bench.runner import reuse, throughput
from rag_bench.runner import rounds as search
from rag_bench.runner.config import (
    MAX_BOOTSTRAP_BYTES,
    build,
    build_cell,
    cell_id,
    dataset_path,
    history_window,
    validate,
    wants,
)
from rag_bench.runner.context import CONTEXT_KEY, SweepContext
from rag_bench.tracking import background
from rag_bench.tracking.base import Tracker, cell_tags, dataset_info, questions_table, run_name, tracked_metrics

log = logging.getLogger("rag_bench")

@lru_cache(maxsize=1)  # one checkout per process (see the docstring)
def git_sha() -> str:
    """Commit of the code that produced a result (``unknown`` outside a git checkout).

    Asked once per process: forking ``git`` from a process holding a loaded model costs ~0.1 s,
    which every cell of a sweep would pay.
    """
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run_cell(cfg: DictConfig, work: SharedWork | None = None, sweep: SweepContext | None = None) -> Path:
    """Evaluate one configuration; return its cell folder. Raises RagBenchError on bad input.

    ``work`` holds what this cell may share with cells run before it in this process (the Hydra
    app passes one for the whole sweep); None starts from nothing. ``sweep`` is the sweep the cell
    belongs to (:mod:`rag_bench.runner.context`); None: a sweep of this cell alone.
    """
    validate(cfg)
    work = SharedWork() if work is None else work
    parts = build_cell(cfg, work)  # every component built, so a bad parameter fails before any loading
    dataset = load_dataset_of(cfg)
    round_ = _round(cfg)
    if round_ is not None and round_ != len(search.rounds_of(cfg.search)) - 1:  # a halving round before the last
        return _finish_round(cfg, dataset, cell_id(cfg, dataset.fingerprint), round_, parts, work)
    cid = cell_id(cfg, dataset.fingerprint)
    prior = _prior_round(cfg, dataset, _cell_dir(cfg, cid)) if _incremental(cfg) else None
    if prior is None:
        return _finish(cfg, dataset, cid,
                       lambda cid: parts.evaluation.evaluate(pipeline.run(parts, dataset, work), cid, work), sweep, work,
                       reusable=True)
    computed: dict[str, Any] = {}

    def merged(cid: str) -> CellResult:  # the last halving round: the questions its rounds before did not see
        run, computed["questions_computed"] = merged_run(parts, dataset, [q.qid for q in dataset.questions], prior,
                                                         work)
        computed["questions_reused"] = len(prior)
        return parts.evaluation.evaluate(run, cid, work)

    return _finish(cfg, dataset, cid, merged, sweep, work, done_extra=lambda: {"search": computed})


def compute(cfg: DictConfig, dataset: Dataset, cid: str, work: SharedWork) -> CellResult:
    """The cell ``cfg`` on ``dataset`` computed (its pipeline run, then evaluated), not written."""
    parts = build_cell(cfg, work)
    return parts.evaluation.evaluate(pipeline.run(parts, dataset, work), cid, work)


def evaluate_cell(cfg: DictConfig, *, outputs: Path | None = None, trec: Path | None = None,
                  ragas: Path | None = None, system: str = "external") -> Path:
    """The cell of an external system's results (OUTPUTS JSON lines or a TREC run) over the
    dataset of ``cfg`` (:mod:`rag_bench.adapters.external`); its config records the system's name
    and the file's content hash, so the cell id changes when the file does."""
    from rag_bench.adapters.external import read_outputs, read_ragas, read_trec_run, system_run

    validate(cfg)
    dataset = load_dataset_of(cfg)
    source = outputs or trec or ragas
    assert source is not None
    try:
        st = os.stat(source)
        # Like a dataset file: a device (/dev/zero), FIFO or huge file is refused before it is read.
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            raise ConfigError(f"{source}: not a regular file of at most {MAX_FILE_BYTES >> 30} GiB -- fix: pass the "
                              "outputs file itself")
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read ({exc.strerror}) -- fix: pass an existing outputs file") from exc
    if outputs is not None:
        results = read_outputs(outputs, dataset)
    elif ragas is not None:
        results = read_ragas(ragas, dataset)
    else:
        results = read_trec_run(source, dataset, chunk_corpus(cfg, dataset))
    stored = cfg.copy()
    with open_dict(stored):
        # The system's own stages are unknown: name them after it (a TREC run keeps the chunker
        # whose chunk ids it uses).
        for group in ("embedder", "index", "reranker") + (("chunker",) if trec is None else ()):
            stored[group] = {"name": "external"}
        stored.retriever = {"name": system}
        stored.generator = {"name": system if results.has_answers else "none"}
        stored.system = {"name": system, "source": str(source.resolve()), "sha256": digest,
                         "format": "outputs" if outputs is not None else "ragas" if ragas is not None else "trec"}

    def compute(cid: str) -> CellResult:
        judge = None
        if results.has_answers:  # built only when there are answers to judge
            embedder = build(cfg.embedder, "embedder") if wants(cfg.judge, "judge", "embedder") else None
            judge = build(cfg.judge, "judge", embedder=embedder)
        run = system_run(dataset, results, context=stages.ContextRule(int(cfg.pipeline.k), int(cfg.pipeline.token_budget),
                                                                         history=history_window(cfg)),
                         judge=judge, judge_name=str(cfg.judge.name))
        return Evaluation.from_config(cfg).evaluate(run, cid)

    return _finish(stored, dataset, cell_id(stored, dataset.fingerprint), compute)


def chunk_corpus(cfg: DictConfig, dataset: Dataset) -> list[Any]:
    """Every chunk of ``dataset`` by the config's chunker, through the pipeline's chunking stage
    (its contracts checked) -- what a sweep's cells chunk, for the commands that need chunks alone."""
    from rag_bench.memo import SharedWork

    parts = build(cfg.chunker, "chunker", embedder=build(cfg.embedder, "embedder")) \
        if wants(cfg.chunker, "chunker", "embedder") else build(cfg.chunker, "chunker")
    return stages.chunk(dataset=dataset, key="chunks", chunker=parts, work=SharedWork()).chunks


def load_dataset_of(cfg: DictConfig) -> Dataset:
    """The dataset a cell of ``cfg`` runs on (``dataset.path`` and ``split``, read by its parser), as
    the cell loads it; ConfigError when its bootstrap would not fit in memory."""
    parser = build(cfg.parser, "parser") if cfg.get("parser") is not None else None
    dataset = load_dataset(dataset_path(cfg), split=cfg.dataset.split, parser=parser)
    need = 16 * int(cfg.eval.bootstrap_resamples) * max(len(dataset.questions), 1)
    if need > MAX_BOOTSTRAP_BYTES:
        fit = MAX_BOOTSTRAP_BYTES // (16 * max(len(dataset.questions), 1))
        raise ConfigError(f"eval.bootstrap_resamples={cfg.eval.bootstrap_resamples} over {len(dataset.questions)} "
                          f"questions needs ~{need / 2**30:.1f} GiB for the bootstrap (limit "
                          f"{MAX_BOOTSTRAP_BYTES / 2**30:.0f} GiB) -- fix: eval.bootstrap_resamples<={fit}")
    return dataset


# Experiment folders found writable, once per folder and process (a write failing later is still
# an error); cleared past _PROBED_KEPT folders, which only costs a probe again.
_PROBED: set[str] = set()
_PROBED_KEPT = 1024


def _finish(cfg: DictConfig, dataset: Dataset, cid: str, compute: Callable[[str], CellResult],
            sweep: SweepContext | None = None, work: SharedWork | None = None,
            done_extra: Callable[[], dict[str, Any]] | None = None, reusable: bool = False) -> Path:
    """Skip a DONE cell, else compute it, write the folder, track it and mark it DONE. A warning
    an earlier cell of the sweep (``work``) printed with the same text is not printed again (a
    SECURITY warning always is); every cell's metrics.json keeps its own warnings. ``done_extra``
    gives more of DONE's body once the cell is computed (a halving cell: the questions it ran).
    ``reusable``: the cache's result of the same cell, code and libraries is written instead of
    computing it (:mod:`rag_bench.runner.reuse`; DONE says ``reused``).
    An unfinished folder is discarded once the cell is computed (a halving round's results are
    read by ``compute`` and kept until then, so a kill meanwhile loses nothing)."""
    tracker = build(cfg.tracking, "tracking")
    root = Path(cfg.output.root)
    cell_dir = _cell_dir(cfg, cid)
    logger = background.current()
    if logger is not None:
        logger.wait_for(cell_dir)  # the same cell met earlier in this sweep: its logging ends first
    if is_done(cell_dir):
        log.info("cell %s already done, skipping (%s)", cid, cell_dir)
        return cell_dir
    budget.before_cell()  # budget.seconds: a cell not started by then is not started
    try:
        cell_dir.parent.mkdir(parents=True, exist_ok=True)
        if str(cell_dir.parent) not in _PROBED:  # once per folder and process (a sweep's cells share it)
            probe = cell_dir.parent / f".write-probe-{os.getpid()}"
            probe.touch()
            probe.unlink()
            if len(_PROBED) >= _PROBED_KEPT:
                _PROBED.clear()
            _PROBED.add(str(cell_dir.parent))
    except OSError as exc:
        raise ConfigError(f"output.root: cannot write to {cell_dir.parent} ({exc.strerror}) "
                          "-- fix: pass output.root=<writable folder>") from exc
    sweep = sweep or SweepContext.of_command(str(cfg.experiment.name), [])
    tracker.bind(output_root=root, experiment=cfg.experiment.name, sweep_id=sweep.sweep_id,
                 parent_run=sweep.parent_run)
    tracker.check()

    plain = stored_config(cfg, str(dataset_path(cfg).resolve()))
    started = time.perf_counter()
    result, reused = reuse.result(cfg, dataset.fingerprint, lambda: compute(cid)) if reusable \
        else (compute(cid), None)
    if reused is None:
        throughput.record(cfg, result.metrics, time.perf_counter() - started)  # --plan's time estimate
    discard(cell_dir)
    with contextlib.ExitStack() as held:
        held.enter_context(cell_lock(cell_dir))  # another process on the same cell waits here, then finds DONE
        if is_done(cell_dir):
            log.info("cell %s was finished by another process meanwhile, keeping it (%s)", cid, cell_dir)
            return cell_dir
        tags = cell_tags(plain, dataset_fingerprint=dataset.fingerprint, dataset=dataset.name, git_sha=git_sha())
        summary = console_line(result.metrics, tags, int(cfg.pipeline.k))
        done = {"cell_id": cid, "dataset": dataset.name, "git_sha": git_sha(), **(done_extra() if done_extra else {}),
                **({"reused": dataclasses.asdict(reused)} if reused else {})}
        arguments = None if is_null(tracker) else dict(
            cell_id=cid, cell_dir=cell_dir, params=flat_params(plain), metrics=tracked_metrics(result.metrics),
            tags={**tags, "mlflow.note.content": summary}, run_name=run_name(plain, list(sweep.axes)),
            dataset=dataset_info(plain, result.metrics, dataset.name), table=questions_table(result.records))
        job = None if logger is None else _background_job(tracker, cid, cell_dir, arguments, done, plain, result)
        if job is not None:
            # The child writes the folder, logs the run, then writes DONE; the cell's lock goes
            # with the job and is released when the child reports the cell.
            assert logger is not None
            logger.submit(job, held.pop_all().close)
        else:
            write_cell_or_fail(cell_dir, plain, result)  # nothing half-written is left behind
            failpoint("cell_written")
            run_id = None if arguments is None else tracker.log_cell(**arguments)
            failpoint("before_done")
            mark_done(cell_dir, {**done, "mlflow_run_id": run_id, **tracker.describe()})
    # The console gets one short line (the whole summary is the MLflow run's note).
    legend = n_legend(result.metrics)
    if legend and (work is None or work.get_or("warned", memo.key("n legend", legend), lambda: cid) == cid):
        log.info("%s", legend)  # once per sweep (and process): the cells' lines then leave their (n=..) out
    log.info("cell %s done: %s", cid, console_short(result.metrics, run_name(plain, list(sweep.axes)),
                                                    n_said=legend is not None))
    for warning in result.metrics.get("warnings", []):
        first = cid if work is None or warning.startswith("SECURITY") else \
            work.get_or("warned", memo.key("warning", warning), lambda: cid)
        if first != cid:
            log.debug("warning: cell %s: the same as cell %s's (not repeated)", cid, first)
            continue
        log.warning("warning: cell %s: %s", cid, warning)
    return cell_dir


def _cell_dir(cfg: DictConfig, cid: str) -> Path:
    root = Path(cfg.output.root)
    cell_dir = root / cfg.experiment.name / cid
    # Defence in depth (validate() checked the name): lexically, so a user's own symlink is kept.
    if not Path(os.path.normpath(cell_dir)).is_relative_to(os.path.normpath(root)) or cell_dir.parent == root:
        raise ConfigError(f"experiment.name {cfg.experiment.name!r} leads outside output.root {root} "
                          "-- fix: experiment.name=<folder name>")
    return cell_dir


def round_covered(cell_dir: Path, fraction: float, seed: int) -> bool:
    """Whether ``cell_dir`` holds the cell's results on (at least) the questions of a halving round
    with ``fraction`` of them drawn with ``seed``: the whole cell (DONE), or a round's results
    (:data:`~rag_bench.runner.rounds.PARTIAL`) on a fraction as large with the same seed (the
    rounds' subsets are nested)."""
    if is_done(cell_dir):
        return True
    try:
        marker = json.loads((cell_dir / search.PARTIAL).read_text(encoding="utf-8"))
        return int(marker["seed"]) == seed and float(marker["fraction"]) >= fraction
    except (OSError, ValueError, KeyError, TypeError):
        return False


ROUND_RUNS = "question-runs.jsonl"  # a PARTIAL folder's question runs, as data (what the next round merges with)


def _round(cfg: DictConfig) -> int | None:
    """The halving round a job belongs to (``search.round``, set by the sweeper on every job of a
    halving sweep, the last round's too); None outside one."""
    searching = cfg.get("search")
    found = None if searching is None else searching.get("round")
    return None if found is None else int(found)


def _incremental(cfg: DictConfig) -> bool:
    """Whether a cell's halving rounds merge with the round before (a job of a halving round,
    :func:`_round`): not when its index is tuned to a recall target, which is tuned on the
    questions it runs on (a round's tuning on its subset is not the whole cell's), nor in a grid
    sweep (a grid run over a halving folder computes its cells whole)."""
    if _round(cfg) is None:
        return False
    return OmegaConf.select(cfg, "index.target_recall", default=None) is None


def _prior_round(cfg: DictConfig, dataset: Dataset, cell_dir: Path) -> tuple[QuestionRun, ...] | None:
    """The question runs a halving round before left in ``cell_dir`` (its PARTIAL marker and
    :data:`ROUND_RUNS`), when they are this cell's on this dataset with this sweep's seed; None
    otherwise (nothing to merge: the round computes all its questions)."""
    if is_done(cell_dir):
        return None
    try:
        marker = json.loads((cell_dir / search.PARTIAL).read_text(encoding="utf-8"))
        if int(marker["seed"]) != int(cfg.search.seed) or marker["dataset_fingerprint"] != dataset.fingerprint:
            return None
        runs = _read_runs(cell_dir)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(runs, tuple) or not all(isinstance(r, QuestionRun) for r in runs) \
            or search.questions_digest([r.qid for r in runs]) != marker.get("questions_digest"):
        return None
    return runs


def merged_run(parts: Any, dataset: Dataset, qids: list[str], prior: tuple[QuestionRun, ...],
               work: SharedWork) -> tuple[SystemRun, int]:
    """The cell's run on the questions ``qids`` of ``dataset`` (all of them: the dataset itself)
    from ``prior`` (question runs of a round before, on some of them) and the pipeline run on the
    others only; and how many questions the pipeline ran. Every question's run is the pipeline's
    for that question alone (a question's stages never read another question), and the run-level
    figures are the new run's: the chunking and index (the same corpus), the ANN report computed on
    all of ``qids`` (``report_on``); timings and embedding counts are this round's. The evaluation
    then scores the merged run like any other (aggregates and bootstrap intervals over every
    question, with the cell's seed)."""
    scope = dataset if len(qids) == len(dataset.questions) else search.subset_dataset(dataset, qids)
    wanted = set(qids)
    held = {r.qid: r for r in prior if r.qid in wanted}
    new = [q for q in qids if q not in held]
    if not new:  # the round's questions are the round before's (a tiny set): run them whole, counted
        return pipeline.run(parts, scope, work), len(qids)
    fresh = pipeline.run(parts, search.subset_dataset(dataset, new), work, report_on=scope)
    ran = {r.qid: r for r in fresh.questions}
    questions = tuple(held[q.qid] if q.qid in held else ran[q.qid] for q in scope.questions)
    # ranking_key None: the merged rankings are no set the shared work holds under a key
    return dataclasses.replace(fresh, dataset=scope, questions=questions, ranking_key=None), len(new)


def _read_private(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (not followed if a symlink), None when it is missing,
    not a regular file or larger than ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return f.read(limit + 1)


def _write_runs(cell_dir: Path, runs: tuple[QuestionRun, ...]) -> None:
    """``runs`` into ``cell_dir`` as data (:mod:`rag_bench.evaluation.run_io`: versioned JSON lines)."""
    atomic_write(cell_dir / ROUND_RUNS, run_io.dumps(runs))


def _read_runs(cell_dir: Path) -> tuple[QuestionRun, ...]:
    """What :func:`_write_runs` wrote; ValueError for anything else (a symlink, a file over the
    dataset file limit, another format or version, a field of the wrong type). Read as typed data:
    an experiment folder travels (a CI artifact, a colleague's copy), and nothing in it is run."""
    blob = _read_private(cell_dir / ROUND_RUNS, MAX_FILE_BYTES)
    if blob is None:
        raise ValueError(f"{cell_dir / ROUND_RUNS}: missing, not a regular file, or too large")
    try:
        return run_io.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{cell_dir / ROUND_RUNS}: not {run_io.FORMAT} text") from exc


def _finish_round(cfg: DictConfig, dataset: Dataset, cid: str, round_: int, parts: Any, work: SharedWork) -> Path:
    """A cell on the questions of halving round ``round_`` (not the last): computed on that subset
    and written to the cell's folder with a PARTIAL marker instead of DONE (so no other command
    reads it as a finished cell, and a grid run over the folder computes the whole cell), unless
    the folder already covers the round (resume). Incremental: the questions a round before left
    in the folder (:func:`_prior_round`) are merged, only the new ones computed
    (:func:`merged_run`); the marker says how many (``computed``). Not tracked: the cell's run is
    logged when it runs on every question."""
    fractions = search.rounds_of(cfg.search)
    if not 0 <= round_ < len(fractions) - 1:
        raise ConfigError(f"search.round={round_}: a halving sweep's rounds before the last are 0..{len(fractions) - 2} "
                          "-- fix: leave search.round to the sweeper")
    fraction, seed = fractions[round_], int(cfg.search.seed)
    cell_dir = _cell_dir(cfg, cid)
    if round_covered(cell_dir, fraction, seed):
        log.info("cell %s: round %d already done, skipping (%s)", cid, round_ + 1, cell_dir)
        return cell_dir
    cell_dir.parent.mkdir(parents=True, exist_ok=True)
    qids = list(search.round_questions(dataset.questions, fraction, seed))
    prior = _prior_round(cfg, dataset, cell_dir) if _incremental(cfg) else None
    subset = search.subset_dataset(dataset, qids)
    plain = stored_config(cfg, str(dataset_path(cfg).resolve()))
    if prior is None:
        run, computed = pipeline.run(parts, subset, work), len(qids)
    else:
        run, computed = merged_run(parts, dataset, qids, prior, work)
    result = parts.evaluation.evaluate(run, cid, work)
    discard(cell_dir)  # the round before's results (read above), or a folder half-written when a run was killed
    with cell_lock(cell_dir):
        if round_covered(cell_dir, fraction, seed):
            return cell_dir
        write_cell_or_fail(cell_dir, plain, result)
        if _incremental(cfg):
            _write_runs(cell_dir, run.questions)
        atomic_write(cell_dir / search.PARTIAL, json.dumps(
            {"round": round_, "fraction": fraction, "seed": seed, "questions": len(qids),
             "questions_digest": search.questions_digest(qids), "dataset_fingerprint": dataset.fingerprint,
             "computed": computed, "reused": len(qids) - computed}, sort_keys=True) + "\n")
    log.info("cell %s round %d (%d questions, %d new) done", cid, round_ + 1, len(qids), computed)
    return cell_dir


def stored_config(cfg: DictConfig, path: str) -> dict[str, Any]:
    """The cell's config as written: ``cfg`` resolved, with ``dataset.path`` set to ``path`` (the
    dataset's absolute path; interpolations of ``dataset.path`` see it too). The path is set on
    ``cfg`` for the duration and put back as it was (the same raw value, so an interpolation stays
    one), instead of on a copy (0.54 ms instead of 2.1 ms for a shallow copy, 6 ms for a full one;
    demo config). The raw value is read through OmegaConf's public API (no private node access). The
sweep's id (``sweep``) is left out: how the cell found its sweep's context, not what it
computes."""
    node = cfg.dataset
    if node.path == path:
        return _without_sweep(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    raw = OmegaConf.to_container(node, resolve=False)["path"]  # type: ignore[index,call-overload]
    with read_write(node):
        node.path = path
        try:
            return _without_sweep(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
        finally:
            node.path = raw


def _without_sweep(config: Any) -> dict[str, Any]:
    """A stored config without the sweep's id (how the cell found its sweep, not configuration)
    nor its ``search`` (how the sweep searched its grid: a halving sweep's cells are the grid's)
    nor its ``budget`` (what the invocation may spend)."""
    config.pop(CONTEXT_KEY, None)
    config.pop("search", None)
    config.pop("budget", None)
    return config  # type: ignore[no-any-return]


def _background_job(tracker: Any, cid: str, cell_dir: Path, arguments: dict[str, Any] | None, done: dict[str, Any],
                    plain: dict[str, Any], result: CellResult) -> background.LogJob | None:
    """The job finishing this cell in the sweep's background process (writing it, logging it,
    marking it DONE), None when it is done here: a tracker that logs in this process
    (``tracking.background=false``, MLflow skipped, or a tracker of the user's)."""
    if arguments is None:
        return background.LogJob(cell_id=cid, cell_dir=cell_dir, write=(plain, result),
                                 done={**done, "mlflow_run_id": None, **tracker.describe()})
    job = capability(tracker, Tracker, "background_job")(arguments, done)
    return None if job is None else dataclasses.replace(job, write=(plain, result))


def console_line(metrics: dict[str, Any], names: dict[str, str], k: int) -> str:
    """The one-line summary of a finished cell: its components, chunk count, headline measures
    (:data:`~rag_bench.metrics.catalog.CONSOLE`) and, when it generates, the answer measures and
    failure labels."""
    shown = " ".join(f"{g}={names.get(g, '')}" for g in CONSOLE_STAGES)
    shown_measures = [m for m in (*catalog.CONSOLE, *catalog.CONSOLE_DOCUMENT) if m.section in metrics]
    head = with_n(metrics, [(m, f"{m.section[:3] + ':' if m.section == 'document' else ''}{m.display}="
                             f"{_fmt(metrics.get(m.section, {}).get(m.name))}") for m in shown_measures])
    line = f"{shown} k={k} chunks={metrics['counts']['chunks']} {head}"
    if "generation" in metrics:
        gen = with_n(metrics, [(m, f"{m.display}={_fmt(metrics[m.section].get(m.name))}")
                               for m in catalog.CONSOLE_GENERATION])
        line += f" | {gen} failures=" + ",".join(f"{label}:{n}" for label, n in metrics["failures"].items() if n)
    leaked = _leaked(metrics)
    if leaked:
        line += " | " + red(f"SECURITY: {leaked} unauthorized retrieval(s)")
    return line


def _leaked(metrics: dict[str, Any]) -> int:
    """The cell's unauthorized retrievals (0 when it reports none)."""
    m = catalog.UNAUTHORIZED_RETRIEVALS
    return int(metrics.get(m.section, {}).get(m.name, 0))


CONSOLE_WIDTH = 120


def _console_pairs(metrics: dict[str, Any]) -> list[tuple[Any, str]]:
    """Each stage's main measure the cell has (:data:`~rag_bench.metrics.catalog.CONSOLE_SHORT`), with its text."""
    return [(m, f"{m.display}={_fmt(metrics[m.section].get(m.name))}") for m in catalog.CONSOLE_SHORT
            if m.section in metrics and metrics[m.section].get(m.name) is not None]


def n_legend(metrics: dict[str, Any]) -> str | None:
    """The line a sweep prints once above its cells' lines when their measures are means over different
    questions (None when they are not): which measure is over how many, e.g. ``(n: hit@5 mrr over 65
    questions; correct over 62; squad_em squad_f1 over 82)``, so that the cells' lines need no ``(n=..)``.

    >>> n_legend({"retrieval": {"hit@5": 0.9, "mrr": 0.7}, "generation": {"correct": 0.3},
    ...           "n": {"retrieval/hit@5": 65, "retrieval/mrr": 65, "generation/correct": 62}})
    '(n: hit@5 mrr over 65 questions; correct over 62)'
    """
    block = metrics.get("n")
    counts: dict[str, Any] = block if isinstance(block, dict) else {}
    runs: list[tuple[Any, list[str]]] = []
    for m, _ in _console_pairs(metrics):
        n = counts.get(m.key)
        if n is None:
            continue
        if runs and runs[-1][0] == n:
            runs[-1][1].append(m.display)
        else:
            runs.append((n, [m.display]))
    if len({n for n, _ in runs}) < 2:
        return None
    parts = [f"{' '.join(names)} over {n}" + (" questions" if i == 0 else "") for i, (n, names) in enumerate(runs)]
    return f"(n: {'; '.join(parts)})"


def console_short(metrics: dict[str, Any], label: str, width: int = CONSOLE_WIDTH, *, n_said: bool = False) -> str:
    """The cell's console line after ``cell <id> done: ``: its label (its values on the swept axes),
    each stage's main measure (:data:`~rag_bench.metrics.catalog.CONSOLE_SHORT`), and a red
    SECURITY alert when a component returned chunks the asker may not read. The ``(n=..)`` of
    measures over different questions (:func:`with_n`) are left out when ``n_said`` (the sweep
    printed :func:`n_legend`). The label is never cut: a line that would pass ``width`` characters,
    prefix included, goes on with its measures on a second, indented line (the alert not counted)."""
    pairs = _console_pairs(metrics)
    shown = " ".join(text for _, text in pairs) if n_said else with_n(metrics, pairs)
    fits = len("cell 0123456789ab done: ") + len(label) + 3 + len(shown) <= width
    line = f"{label} | {shown}" if fits else f"{label}\n    | {shown}"
    leaked = _leaked(metrics)
    if leaked:
        line += " | " + red(f"SECURITY: {leaked} unauthorized retrieval(s)")
    return line


def with_n(metrics: dict[str, Any], shown: list[tuple[Any, str]]) -> str:
    """``shown`` (each a measure and its ``name=value`` text) joined by spaces; when they are means
    over different numbers of questions (metrics.json ``n``: ``correct`` over the answerable
    questions, SQuAD's ``squad_em`` over all of them), each run of measures over the same questions
    ends with its ``(n=..)``, so two numbers side by side are never read as over the same questions.

    >>> from rag_bench.evaluation import measures as m
    >>> metrics = {"n": {"generation/correct": 61, "generation/squad_exact": 81, "retrieval/hit@5": 61}}
    >>> with_n(metrics, [(m.HIT.at(5), "hit@5=0.9"), (m.CORRECT, "correct=0.3"), (m.SQUAD_EXACT, "squad_em=0.2")])
    'hit@5=0.9 correct=0.3 (n=61) squad_em=0.2 (n=81)'
    >>> with_n(metrics, [(m.HIT.at(5), "hit@5=0.9"), (m.CORRECT, "correct=0.3")])
    'hit@5=0.9 correct=0.3'
    """
    block = metrics.get("n")
    counts: dict[str, Any] = block if isinstance(block, dict) else {}
    ns = [counts.get(m.key) for m, _ in shown]
    if len({n for n in ns if n is not None}) < 2:
        return " ".join(text for _, text in shown)
    parts = []
    for i, ((_, text), n) in enumerate(zip(shown, ns)):
        parts.append(text)
        if n is not None and (i + 1 == len(ns) or ns[i + 1] != n):
            parts.append(f"(n={n})")
    return " ".join(parts)


def red(text: str) -> str:
    """``text`` in red on a terminal (not when NO_COLOR is set, nor in a file or pipe)."""
    if os.environ.get("NO_COLOR") or not sys.stderr.isatty():
        return text
    return f"\033[31m{text}\033[0m"


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def argv_overrides() -> list[str]:
    """Overrides from the command line that launched this process (for the sweep identity)."""
    return [a for a in sys.argv[1:] if "=" in a]
