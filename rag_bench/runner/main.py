"""Run one cell from a composed config: validate, skip if done, compute, write, track, mark DONE."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Protocol

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from rag_bench import budget, cell_cache, heap, memo
from rag_bench.cells import CellResult, cell_lock, discard, is_done, mark_done, write_cell_or_fail
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
from rag_bench.runner.rounds import subset_dataset
from rag_bench.runner.sweep_context import CONTEXT_KEY, SweepContext
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


@dataclass(frozen=True)
class CellJob:
    """A cell ready to run: its components built, its dataset loaded, its id."""

    parts: Any
    dataset: Dataset
    cid: str


def prepare(cfg: DictConfig, work: SharedWork) -> CellJob:
    """The cell of ``cfg`` ready to run: the config validated, every component built (a bad
    parameter fails before any loading), the dataset loaded."""
    validate(cfg)
    parts = build_cell(cfg, work)
    dataset = load_dataset_of(cfg)
    return CellJob(parts, dataset, cell_id(cfg, dataset.fingerprint))


def run_cell(cfg: DictConfig, work: SharedWork | None = None, sweep: SweepContext | None = None) -> Path:
    """Evaluate one configuration; return its cell folder. Raises RagBenchError on bad input.

    ``work`` holds what this cell may share with cells run before it in this process (the Hydra
    app passes one for the whole sweep); None starts from nothing. ``sweep`` is the sweep the cell
    belongs to (:mod:`rag_bench.runner.sweep_context`); None: a sweep of this cell alone. A search
    strategy that runs its jobs' cells its own way (halving's rounds) does so through
    :func:`prepare`, :func:`run_questions` and :func:`finish` (:func:`cell_route`). The cell runs with
    the garbage collector tuned (:func:`rag_bench.heap.tuned`; within a sweep's batch it already is)."""
    work = SharedWork() if work is None else work
    with heap.tuned():
        job = prepare(cfg, work)

        def computed(cid: str) -> CellResult:
            run, _ = run_questions(job.parts, job.dataset, work)
            return run_io.stored(job.parts.evaluation.evaluate(run, cid, work), run)

        return finish(cfg, job.dataset, job.cid, computed, sweep, work, reusable=True)


class _Searching(Protocol):
    """What the runner asks of the strategy a job's ``search`` node builds (the search package's
    ``Strategy``, which the runner does not import): that it runs a search; its optional ``cell``
    is read by :func:`cell_route`."""

    def run(self, ctx: Any) -> None: ...


def cell_route(cfg: DictConfig) -> Callable[[DictConfig, SharedWork, SweepContext], Path]:
    """How the job ``cfg`` of a sweep is run: :func:`run_cell`, or the ``cell`` method of the search
    strategy its ``search`` node builds (``_target_``, conf/search/) when the strategy has one and
    the job is one of its own (halving's round jobs: :mod:`rag_bench.search.round_cells`) -- the
    runner names no strategy."""
    node = cfg.get("search")
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return run_cell
    route = getattr(build(node, "search", protocol=_Searching), "cell", None)
    return run_cell if route is None else route(run_cell)  # type: ignore[no-any-return]


def run_questions(parts: Any, dataset: Dataset, work: SharedWork, qids: list[str] | None = None,
                  prior: tuple[QuestionRun, ...] = ()) -> tuple[SystemRun, int]:
    """The cell's run on the questions ``qids`` of ``dataset`` (None: all of them, the dataset
    itself) and how many questions the pipeline ran: the questions ``prior`` holds runs of (a
    halving round's before) are taken from it, the pipeline runs the others only. Every question's
    run is the pipeline's for that question alone (a question's stages never read another
    question), and the run-level figures are the new run's: the chunking and index (the same
    corpus), the ANN report computed on all of ``qids`` (``report_on``); timings and embedding
    counts are this run's. The evaluation then scores a merged run like any other (aggregates and
    bootstrap intervals over every question, with the cell's seed)."""
    qids = [q.qid for q in dataset.questions] if qids is None else qids
    scope = dataset if len(qids) == len(dataset.questions) else subset_dataset(dataset, qids)
    wanted = set(qids)
    held = {r.qid: r for r in prior if r.qid in wanted}
    new = [q for q in qids if q not in held]
    merging = bool(held) and bool(new)  # else nothing to merge (or the round before's questions are all: run them whole)
    fresh = pipeline.run(parts, subset_dataset(dataset, new) if merging else scope, work, report_on=scope)
    if not merging:
        return fresh, len(qids)
    ran = {r.qid: r for r in fresh.questions}
    questions = tuple(held[q.qid] if q.qid in held else ran[q.qid] for q in scope.questions)
    # ranking_key None: the merged rankings are no set the shared work holds under a key
    return dataclasses.replace(fresh, dataset=scope, questions=questions, ranking_key=None), len(new)


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
        return run_io.stored(Evaluation.from_config(cfg).evaluate(run, cid), run)

    return finish(stored, dataset, cell_id(stored, dataset.fingerprint), compute)


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


def finish(cfg: DictConfig, dataset: Dataset, cid: str, compute: Callable[[str], CellResult],
            sweep: SweepContext | None = None, work: SharedWork | None = None,
            done_extra: Callable[[], dict[str, Any]] | None = None, *, timed: bool = True,
            reusable: bool = False) -> Path:
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
    cell_dir = cell_folder(cfg, cid)
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
    result, reused, keep = reuse.result(cfg, dataset.fingerprint, lambda: compute(cid)) if reusable \
        else (compute(cid), None, None)
    # --plan's time estimate (not a cell scored again from its stored run or served from the cell
    # cache: no pipeline ran), added to the history with the cell's folder
    sample = throughput.measured(cfg, result.metrics, time.perf_counter() - started) \
        if timed and reused is None else None
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
            # The child writes the folder, stores the cell for reuse, adds its throughput sample, logs
            # the run, then writes DONE;
            # the cell's lock goes with the job and is released when the child reports the cell.
            assert logger is not None
            logger.submit(dataclasses.replace(job, keep=keep, after_write=None if sample is None else
                                              partial(throughput.add, sample)), held.pop_all().close)
        else:
            throughput.add(sample)
            if keep is not None:
                result = cell_cache.keep(keep, result)
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


def cell_folder(cfg: DictConfig, cid: str) -> Path:
    root = Path(cfg.output.root)
    cell_dir = root / cfg.experiment.name / cid
    # Defence in depth (validate() checked the name): lexically, so a user's own symlink is kept.
    if not Path(os.path.normpath(cell_dir)).is_relative_to(os.path.normpath(root)) or cell_dir.parent == root:
        raise ConfigError(f"experiment.name {cfg.experiment.name!r} leads outside output.root {root} "
                          "-- fix: experiment.name=<folder name>")
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
