"""A halving sweep's jobs (``search=halving``, docs/search.md): each round's cell on that round's
questions, merged with what the round before left in the cell's folder.

A job of a round before the last computes the cell on the round's questions only and leaves its
results in the cell's folder with a :data:`~rag_bench.runner.rounds.PARTIAL` marker instead of
DONE (no other command reads it as a finished cell); the last round's job finishes the cell on
every question. Both run the cell through the runner's public calls (:func:`~rag_bench.runner.main.prepare`,
:func:`~rag_bench.runner.main.run_questions`,
:func:`~rag_bench.runner.main.finish`): the questions a round before ran are read back from the
cell's stored run (:data:`~rag_bench.evaluation.run_io.FILE`, data, never a pickle) and only the
new ones computed.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench.cells import CellResult, atomic_write, cell_lock, discard, is_done, write_cell_or_fail
from rag_bench.data.files import MAX_FILE_BYTES
from rag_bench.domain import Dataset
from rag_bench.errors import ConfigError
from rag_bench.evaluation import run_io
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.memo import SharedWork
from rag_bench.runner import rounds
from rag_bench.runner.config import dataset_path
from rag_bench.runner.main import cell_folder, finish, prepare, run_questions, stored_config
from rag_bench.runner.sweep_context import SweepContext

log = logging.getLogger("rag_bench")


def run_round_cell(cfg: DictConfig, work: SharedWork, sweep: SweepContext | None = None) -> Path:
    """The job ``cfg`` of halving round ``search.round``: a round before the last leaves the cell's
    results on the round's questions (:func:`_finish_round`); the last finishes the cell on every
    question, merged with the round before's when there is one. Returns the cell's folder."""
    job = prepare(cfg, work)
    round_, fractions = int(cfg.search.round), rounds.rounds_of(cfg.search)
    if round_ != len(fractions) - 1:
        return _finish_round(cfg, job.parts, job.dataset, job.cid, round_, work)
    prior = prior_round(cfg, job.dataset, cell_folder(cfg, job.cid)) if incremental(cfg) else None
    if prior is None:
        return finish(cfg, job.dataset, job.cid, lambda cid: _scored(job.parts, run_questions(
            job.parts, job.dataset, work)[0], cid, work), sweep, work)
    computed: dict[str, Any] = {}

    def merged(cid: str) -> CellResult:  # the questions its rounds before did not see
        run, computed["questions_computed"] = run_questions(job.parts, job.dataset, work, prior=prior)
        computed["questions_reused"] = len(prior)
        return _scored(job.parts, run, cid, work)

    return finish(cfg, job.dataset, job.cid, merged, sweep, work, done_extra=lambda: {"search": computed})


def _scored(parts: Any, run: SystemRun, cid: str, work: SharedWork) -> CellResult:
    """The cell's files from its ``run``, the run among them (what the next round merges)."""
    return run_io.stored(parts.evaluation.evaluate(run, cid, work), run)


def round_covered(cell_dir: Path, fraction: float, seed: int) -> bool:
    """Whether ``cell_dir`` holds the cell's results on (at least) the questions of a halving round
    with ``fraction`` of them drawn with ``seed``: the whole cell (DONE), or a round's results
    (:data:`~rag_bench.runner.rounds.PARTIAL`) on a fraction as large with the same seed (the
    rounds' subsets are nested)."""
    if is_done(cell_dir):
        return True
    try:
        marker = json.loads((cell_dir / rounds.PARTIAL).read_text(encoding="utf-8"))
        return int(marker["seed"]) == seed and float(marker["fraction"]) >= fraction
    except (OSError, ValueError, KeyError, TypeError):
        return False


def incremental(cfg: DictConfig) -> bool:
    """Whether a cell's halving rounds merge with the round before: not when its index is tuned to
    a recall target, which is tuned on the questions it runs on (a round's tuning on its subset is
    not the whole cell's)."""
    return OmegaConf.select(cfg, "index.target_recall", default=None) is None


def prior_round(cfg: DictConfig, dataset: Dataset, cell_dir: Path) -> tuple[QuestionRun, ...] | None:
    """The question runs a halving round before left in ``cell_dir`` (its PARTIAL marker and
    stored run), when they are this cell's on this dataset with this sweep's seed; None otherwise
    (nothing to merge: the round computes all its questions)."""
    if is_done(cell_dir):
        return None
    try:
        marker = json.loads((cell_dir / rounds.PARTIAL).read_text(encoding="utf-8"))
        if int(marker["seed"]) != int(cfg.search.seed) or marker["dataset_fingerprint"] != dataset.fingerprint:
            return None
        runs = read_runs(cell_dir)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if rounds.questions_digest([r.qid for r in runs]) != marker.get("questions_digest"):
        return None
    return runs


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


def read_runs(cell_dir: Path) -> tuple[QuestionRun, ...]:
    """The question runs of the stored run in ``cell_dir``; ValueError for anything else (a
    symlink, a file over the dataset file limit, another format, a field of the wrong type). Read
    as typed data: an experiment folder travels (a CI artifact, a colleague's copy), and nothing in
    it is run."""
    blob = _read_private(cell_dir / run_io.FILE, MAX_FILE_BYTES)
    if blob is None:
        raise ValueError(f"{cell_dir / run_io.FILE}: missing, not a regular file, or too large")
    try:
        return run_io.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{cell_dir / run_io.FILE}: not {run_io.FORMAT} text") from exc


def _finish_round(cfg: DictConfig, parts: Any, dataset: Dataset, cid: str, round_: int, work: SharedWork) -> Path:
    """A cell on the questions of halving round ``round_`` (not the last): computed on that subset
    and written to the cell's folder with a PARTIAL marker instead of DONE (so no other command
    reads it as a finished cell, and a grid run over the folder computes the whole cell), unless
    the folder already covers the round (resume). Incremental: the questions a round before left
    in the folder (:func:`prior_round`) are merged, only the new ones computed; the marker says
    how many (``computed``). Not tracked: the cell's run is logged when it runs on every question."""
    fractions = rounds.rounds_of(cfg.search)
    if not 0 <= round_ < len(fractions) - 1:
        raise ConfigError(f"search.round={round_}: a halving sweep's rounds before the last are 0..{len(fractions) - 2} "
                          "-- fix: leave search.round to the sweeper")
    fraction, seed = fractions[round_], int(cfg.search.seed)
    cell_dir = cell_folder(cfg, cid)
    if round_covered(cell_dir, fraction, seed):
        log.info("cell %s: round %d already done, skipping (%s)", cid, round_ + 1, cell_dir)
        return cell_dir
    cell_dir.parent.mkdir(parents=True, exist_ok=True)
    qids = list(rounds.round_questions(dataset.questions, fraction, seed))
    prior = prior_round(cfg, dataset, cell_dir) if incremental(cfg) else None
    plain = stored_config(cfg, str(dataset_path(cfg).resolve()))
    run, computed = run_questions(parts, dataset, work, qids, prior or ())
    result = _scored(parts, run, cid, work)
    discard(cell_dir)  # the round before's results (read above), or a folder half-written when a run was killed
    with cell_lock(cell_dir):
        if round_covered(cell_dir, fraction, seed):
            return cell_dir
        write_cell_or_fail(cell_dir, plain, result)  # its stored run among its files: what the next round merges
        atomic_write(cell_dir / rounds.PARTIAL, json.dumps(
            {"round": round_, "fraction": fraction, "seed": seed, "questions": len(qids),
             "questions_digest": rounds.questions_digest(qids), "dataset_fingerprint": dataset.fingerprint,
             "computed": computed, "reused": len(qids) - computed}, sort_keys=True) + "\n")
    log.info("cell %s round %d (%d questions, %d new) done", cid, round_ + 1, len(qids), computed)
    return cell_dir
