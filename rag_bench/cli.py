"""The ``rag-bench`` command line (docs/contract.md §9).

Exit codes: 0 success, 1 a gate failed, 2 bad input or configuration (the message names the
file, line and field and says how to fix it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from rag_bench.errors import RagBenchError
from rag_bench.metrics import measures

USAGE = """\
rag-bench COMMAND ...

commands:
  run [hydra overrides]            evaluate one cell; with -m a sweep (rag-bench run --help)
  validate DATASET                 check a dataset; every problem listed; exit 2 if any
  chunks DATASET chunker=NAME ...  print chunks as JSON lines (stdout) and stats (stderr)
  score-run QRELS RUN [-m ..]      trec_eval-compatible scoring of TREC files
  score-answers GOLD PRED [--json] SQuAD 2.0's official answer scoring (EM/F1, HasAns/NoAns)
  compare CELL_A CELL_B            paired statistics + per-question differences (--json);
                                   compare EXPERIMENT_DIR: its baseline against its best cell
  report EXPERIMENT_DIR            HTML report with charts into reports/<experiment>/
  gate CELL --policy FILE [--baseline CELL] [--junit FILE]
                                   release gate: exit 0 pass, 1 fail, 2 cannot evaluate
  embed [--shards N] [overrides]   phase 1 of a two-phase sweep: embed the grid's texts into the cache
                                   in shards (a SLURM array job with +cluster=slurm; docs/cluster.md)
  status EXPERIMENT_DIR            a cluster sweep's jobs and cells: done/running/failed, failed jobs' logs
  leaderboard EXPERIMENT_DIR       table of the finished cells (--format table|csv|json|markdown,
                                   --columns, --tag TAG)
  cache verify [--repair]          check the embedding cache's checksums
  sync EXPERIMENT_DIR              upload finished cells to MLflow after an outage (no duplicates)
  evaluate OUTPUTS --dataset DIR   score an external system's outputs (or --trec RUN) as a cell
  export CELL [--format F] [--out]  a cell's results as OUTPUTS lines or a ragas EvaluationDataset
  calibrate EXPERIMENT|CELL --labels FILE [--json]
                                   agreement of the answer measures with people's labels (kappa
                                   with CI) and PPI-corrected cell means
  label CELL [--n 50] [--seed S] [--stratify MEASURE] [--labels FILE] [--out FILE] [--scale G]
                                   a static page to label a cell's answers by key; downloads labels.jsonl

exit codes: 0 ok, 1 gate failed, 2 bad input or configuration
"""


# Keys an earlier release had: the message of an override that names one says what replaced it.
RENAMED = {"chunker.max_chars": "chunker.size, in characters, for every chunker",
           "chunker.child_chars": "chunker.size (the children's size, in characters)",
           "chunker.parent_chars": "chunker.parent_ratio (parents are size × parent_ratio characters)"}


def _fail(exc: BaseException | str) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def _exit2_on_error(body: Callable[[], int], *, also: type[Exception] | None = None, what: str = "",
                    fix: str = "") -> int:
    """Run the body of a command that reads cells, labels or a policy (gate, calibrate, label): bad input
    (RagBenchError) exits 2 with its own message; with ``also``, such an error too, in one line
    ``what: Type: message -- fix: ...`` -- never a traceback, and never exit 1 (the gate's verdict)."""
    try:
        return body()
    except RagBenchError as exc:
        return _fail(exc)
    except Exception as exc:
        if also is None or not isinstance(exc, also):
            raise
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        return _fail(f"{what}: {msg} -- fix: {fix}")


def _config_message(exc: BaseException, args: list[str] | None = None) -> str:
    """Hydra's message plus its causes (OmegaConf puts the useful part, e.g. the type, there)."""
    parts = [str(exc).strip()]
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(parts) < 4:
        text = str(cause).strip()
        if text and text not in parts[-1] and "$VALUE" not in text:
            parts.append(text)
        cause = cause.__cause__ or cause.__context__
    msg = "\n  ".join(parts)
    if "Could not override" in msg:
        msg += "\n  (no such key: check its spelling; use +key=value only to add a new key on purpose)"
        missing = re.search(r"Could not override '([^']+)'", msg)
        listing = _valid_keys(args or [], missing.group(1)) if missing else ""
        if listing:
            msg += f"\n  {listing}"
        old = missing.group(1) if missing else ""
        if old in RENAMED:
            msg += f"\n  ({old} was renamed: {RENAMED[old]})"
    return msg


def _missing_option(exc: BaseException) -> str:
    """One line for an option a config group does not have (``chunker=secton``): the option, the
    closest one and the group's options, from Hydra's own listing (which also holds the options of
    plugins and search paths); empty for every other error."""
    import difflib

    text = str(exc)
    found = re.search(r"Could not (?:find|load) '([^']+)/([^'/]+)'", text)
    if not found:
        return ""
    group, option = found.groups()
    listing = re.search(r"Available options in '[^']+':\n((?:\t[^\n]*\n?)*)", text)
    options = [line.strip() for line in listing.group(1).splitlines() if line.strip()] if listing else []
    near = difflib.get_close_matches(option, options, n=1)
    return (f"configuration: {group}={option}: {group} has no option {option!r} -- fix: "
            + (f"did you mean {group}={near[0]}? (" if near else "use one of ")
            + (f"{group}'s options: {', '.join(options)}" if options else f"the options in {group}/ of the config")
            + (")" if near else ""))


def _valid_keys(args: list[str], full_key: str) -> str:
    """``valid keys of chunker: size, overlap (did you mean size?)`` for a key that does
    not exist, from the config composed without it; empty when that cannot be composed."""
    import difflib

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import DictConfig, OmegaConf

    from rag_bench.runner.config import CONF_DIR

    parent, _, leaf = full_key.rpartition(".")
    rest = [a for a in args if not a.startswith("-") and a.lstrip("+~").split("=", 1)[0] != full_key]
    try:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=rest)
        node = OmegaConf.select(cfg, parent) if parent else cfg
    except Exception:  # noqa: BLE001 -- a listing is a courtesy; the error above stands alone
        return ""
    finally:
        GlobalHydra.instance().clear()
    if not isinstance(node, DictConfig):
        return ""
    keys = [str(k) for k in node.keys() if k not in ("_target_", "name") and not str(k).startswith("_")]
    if not keys:
        return ""
    close = difflib.get_close_matches(leaf, keys, n=1)
    return f"valid keys of {parent or 'the config'}: {', '.join(keys)}" + \
        (f" (did you mean {parent + '.' if parent else ''}{close[0]}?)" if close else "")


# Hydra's mutually exclusive modes of `run` (Hydra raises a bare ValueError when two are given).
_HYDRA_MODES = {"-r": "--run", "--run": "--run", "-m": "--multirun", "--multirun": "--multirun", "-c": "--cfg",
                "--cfg": "--cfg", "-i": "--info", "--info": "--info", "-sc": "--shell-completion",
                "--shell-completion": "--shell-completion"}


def _run(args: list[str]) -> int:
    """Hand the overrides to Hydra; turn composition errors and RagBenchError into exit 2."""
    modes = sorted({_HYDRA_MODES[a.split("=")[0]] for a in args if a.split("=")[0] in _HYDRA_MODES})
    if len(modes) > 1:
        return _fail(f"{' and '.join(modes)} cannot be combined -- fix: give one (`rag-bench run --cfg job "
                     "chunker=fixed` prints the config of one cell of a grid; `-m` runs the grid)")
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.cluster.preset import with_cluster_launcher
    from rag_bench.fast import in_hydra as compose_in_hydra
    from rag_bench.fast import launcher_overrides
    from rag_bench.runner.config import check_group_overrides, check_hydra_targets
    from rag_bench.runner.hydra_app import main as hydra_main
    from rag_bench.tracking.mlflow_tracker import finish_all

    args = with_cluster_launcher(args)  # +cluster=slurm runs on hydra/launcher=slurm
    args = launcher_overrides(args)  # RAG_BENCH_STOCK_HYDRA=1: Hydra's basic launcher
    # Make Hydra raise instead of printing and exiting 1, so bad config exits 2 here.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    sys.argv = ["rag-bench run", *args]
    try:
        check_hydra_targets(args)
        check_group_overrides(args)
        with compose_in_hydra():
            hydra_main()
    except RagBenchError as exc:
        finish_all(ok=False)
        return _fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:
        finish_all(ok=False)
        if missing := _missing_option(exc):
            return _fail(missing)
        return _fail(f"configuration: {_config_message(exc, args)}\n  -- fix: see `rag-bench run --help` for groups "
                     "and options (`rag-bench run --cfg job` prints every key), conf/ for the files")
    except BaseException:
        finish_all(ok=False)
        raise
    return 0


def _validate(argv: list[str]) -> int:
    from rag_bench.data.loader import load_dataset

    p = argparse.ArgumentParser(prog="rag-bench validate", description="Check a dataset folder (native or "
                                "BEIR layout) and list every problem with file:line, field and a fix.")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    a = p.parse_args(argv)
    try:
        ds = load_dataset(a.dataset, split=a.split)
    except RagBenchError as exc:
        return _fail(exc)
    qs = ds.questions
    n_ans = sum(q.answerable for q in qs)
    unjudged = sum(q.answerable and not q.evidence for q in qs)
    grades = sorted({s.grade for q in qs for s in q.evidence})
    print(f"ok: {ds.name} ({ds.layout}): {len(ds.documents)} documents, "
          f"{sum(len(d.text) for d in ds.documents.values())} characters, {len(qs)} questions "
          f"({n_ans} answerable, {len(qs) - n_ans} unanswerable"
          + (f", {unjudged} with no relevant judgment: excluded from ranking measures" if unjudged else "") + "), "
          + (f"grades {grades}, " if grades != [1] and grades else "") +
          f"{sum(len(q.evidence) for q in qs)} evidence spans; fingerprint {ds.fingerprint}")
    return 0


def _chunks(argv: list[str]) -> int:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.data.loader import load_dataset
    from rag_bench.runner.config import CONF_DIR, build, check_group_overrides, register_configs

    p = argparse.ArgumentParser(prog="rag-bench chunks", description="Chunk a dataset with one chunker config "
                                "and print the chunks as JSON lines (stdout) and their stats (stderr).",
                                epilog="example: rag-bench chunks datasets/kettleby chunker=section "
                                "chunker.max_chars=600")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. chunker=fixed chunker.size=500")
    p.add_argument("--stats-only", action="store_true", help="print only the stats")
    p.add_argument("--tiny", type=int, default=50, help="chunks shorter than this many chars count as tiny")
    a = p.parse_args(argv)
    register_configs()
    try:
        check_group_overrides(a.overrides)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=a.overrides)
        chunker = build(cfg.chunker, "chunker", embedder=build(cfg.embedder, "embedder"))
        ds = load_dataset(a.dataset)
    except RagBenchError as exc:
        return _fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:
        return _fail(_missing_option(exc) or f"configuration: {exc} -- fix: options are in {CONF_DIR}/chunker/")
    chunks = chunker.chunk(list(ds.documents.values()))
    out = sys.stdout
    if not a.stats_only:
        for c in chunks:
            out.write(json.dumps({"chunk_id": c.chunk_id, "doc_id": c.doc_id, "start": c.start, "end": c.end,
                                  "heading_path": list(c.heading_path), "parent_id": c.parent_id,
                                  "is_parent": c.is_parent, "text": c.text}, ensure_ascii=False) + "\n")
    searchable = [c.length for c in chunks if not c.is_parent]
    stats = {"chunker": cfg.chunker.name, "count": len(searchable), "parents": sum(c.is_parent for c in chunks),
             "min": min(searchable, default=0), "median": statistics.median(searchable) if searchable else 0,
             "max": max(searchable, default=0), f"tiny(<{a.tiny})": sum(n < a.tiny for n in searchable)}
    print("stats: " + " ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr)
    return 0


def _embed(argv: list[str]) -> int:
    from rag_bench.cluster.embed_phase import main as embed_main

    return embed_main(argv)


def _status(argv: list[str]) -> int:
    from rag_bench.cluster.status import format_status, sweep_status

    p = argparse.ArgumentParser(prog="rag-bench status", description="A (cluster) sweep's jobs and cells: done, "
                                "running, pending, failed, unfinished; the log and last error lines of every failed "
                                "job. Success is a cell's DONE, not the scheduler's word.")
    p.add_argument("experiment_dir", help="<output.root>/<experiment.name>")
    a = p.parse_args(argv)
    try:
        print(format_status(*sweep_status(a.experiment_dir)))
    except RagBenchError as exc:
        return _fail(exc)
    return 0


def _leaderboard(argv: list[str]) -> int:
    from rag_bench.reporting.leaderboard import (
        FORMATS,
        format_leaderboard,
        load_cells,
        question_tags,
        resolve_columns,
        tag_columns,
    )

    p = argparse.ArgumentParser(prog="rag-bench leaderboard", description="Print the finished cells of an "
                                "experiment folder, best first. Cells are named by the parameters that vary "
                                "between them (the labels of the report and of the MLflow runs).")
    p.add_argument("experiment_dir")
    p.add_argument("--sort-by", default=None, help="measure as section/name (default: the experiment's primary "
                   f"measure, experiment.primary: generation/correct when answers were generated, else "
                   f"{measures.PRIMARY.key}); lower-is-better measures sort ascending; ties go to the cheaper cell")
    p.add_argument("--tag", help="show metrics on the questions with this tag only (e.g. paraphrase, exact_id)")
    p.add_argument("--format", default="table", choices=FORMATS, help="table (default, aligned text), csv or "
                   "json (full precision, for scripts), markdown (for a pull request)")
    p.add_argument("--columns", help="comma-separated measures (section/name or name, e.g. ndcg@10,correct), or "
                   "'all'; default: the main measure of each stage")
    p.add_argument("--fingerprint", help="dataset version (fingerprint or a prefix of it) whose cells are shown when "
                   "the folder holds cells of several; default: the version of the cell finished last")
    a = p.parse_args(argv)
    try:  # a cell that cannot be read (or an unknown --fingerprint): exit 2, as report and gate do
        cells = load_cells(a.experiment_dir, fingerprint=a.fingerprint)
    except RagBenchError as exc:
        return _fail(exc)
    if cells.empty:
        return _fail(f"{a.experiment_dir}: no finished cells (folders with DONE) -- fix: run `rag-bench run` first")
    if a.tag:
        cols = tag_columns(cells, a.tag)
        if not cols:
            return _fail(f"--tag {a.tag!r}: no such question tag -- fix: one of {question_tags(cells)}")
        if a.format == "table":
            print(f"questions tagged {a.tag!r} (n={int(cells[f'tag:{a.tag}/n'].max())})")
        print(format_leaderboard(cells, sort_by=f"tag:{a.tag}/{measures.PRIMARY.name}", columns=cols, fmt=a.format))
        return 0
    try:
        columns = resolve_columns(cells, a.columns)
        # a measure these cells lack was once ignored silently (the table sorted by its first column)
        sort_by = resolve_columns(cells, [a.sort_by])[0] if a.sort_by else None
        table = format_leaderboard(cells, sort_by=sort_by, columns=columns, fmt=a.format)
    except ValueError as exc:
        return _fail(str(exc).replace("--columns", "--sort-by", 1) if a.sort_by and a.sort_by in str(exc) else exc)
    except RagBenchError as exc:  # experiment.primary names a measure no cell has
        return _fail(exc)
    print(table)
    return 0


def _compare(argv: list[str]) -> int:
    from rag_bench.reporting.compare import compare_cells, format_compare
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench compare", description="Paired comparison of two cells over the "
                                "same questions: by default the main measure of every stage (retrieval, evidence, "
                                "answer correct/EM/F1, citation, refusals, latency, tokens), difference B - A with a "
                                "paired bootstrap CI, a paired randomisation-test p-value (Holm-corrected over those "
                                "measures), a one-line verdict and the questions whose answer flipped. Given an "
                                "experiment folder instead: its baseline (the defaults cell, or --baseline) against "
                                "its best cell by the primary measure.")
    p.add_argument("cell_a", help="cell folder or MLflow run id (the reference, A); or an experiment folder")
    p.add_argument("cell_b", nargs="?", help="cell folder or MLflow run id (B); omitted with an experiment folder")
    p.add_argument("-m", "--metric", action="append", help="measure (repeatable) as the gate names it, e.g. "
                   "generation/correct, retrieval/ndcg@10, latency/retrieve_ms, cost/tokens, or a records column "
                   "such as hit@5; default: the main measure of each stage")
    p.add_argument("--baseline", help="with an experiment folder: the baseline cell (id, name or folder; default: the "
                   "cell at the config's defaults on every swept axis)")
    p.add_argument("--flip-metric", help="measure whose right/wrong flips are listed (default: the answer when both "
                   "cells generated, else hit@<pipeline.k>)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)
    try:
        if a.cell_b is None:
            from rag_bench.reporting.decide import default_pair

            ca, cb, note = default_pair(a.cell_a, a.baseline)
            print(note, file=sys.stderr)
        else:
            ca, cb = load_cell(a.cell_a, tracking_uri=a.tracking_uri), load_cell(a.cell_b, tracking_uri=a.tracking_uri)
        result = compare_cells(ca, cb, metrics=a.metric, n_resamples=a.resamples, seed=a.seed, alpha=a.alpha,
                               flip_metric=a.flip_metric)
    except RagBenchError as exc:
        return _fail(exc)
    print(json.dumps(result, indent=2, default=str) if a.json else format_compare(result))
    return 0


def _gate(argv: list[str]) -> int:
    from rag_bench.cells import check_same_dataset
    from rag_bench.reporting.gate import (
        check_junit_target,
        evaluate_gate,
        exit_code,
        junit_xml,
        load_policy,
        markdown,
        write_junit,
    )
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench gate", description="Check a cell against a release policy "
                                "(absolute thresholds; regression rules against a baseline). Exit 0 pass, "
                                "1 fail, 2 cannot evaluate.", epilog="policy format: conf/gate/release.yaml")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--policy", required=True, help="policy YAML, e.g. conf/gate/release.yaml")
    p.add_argument("--baseline", help="cell folder or run id to check regressions against")
    p.add_argument("--junit", help="also write JUnit XML here (one test per rule)")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)

    def gate() -> int:
        # Nothing (no JUnit file) is written unless every input was read and the policy is valid.
        policy = load_policy(a.policy)
        cell = load_cell(a.cell, tracking_uri=a.tracking_uri)
        baseline = load_cell(a.baseline, tracking_uri=a.tracking_uri) if a.baseline else None
        if baseline is not None:
            check_same_dataset(baseline, cell, fix="pass a --baseline evaluated on the same dataset version (re-run "
                               "the baseline's configuration on this dataset)")
        keep = [Path(a.policy), cell.path] + ([baseline.path] if baseline is not None else [])
        junit = check_junit_target(a.junit, keep) if a.junit else None  # before evaluating: nothing half-done
        results = evaluate_gate(cell, policy, baseline)
        summary = markdown(cell, results, baseline)
        if junit is not None:
            write_junit(junit, junit_xml(results))
        print(summary)
        for r in results:
            if r.status == "error":
                print(f"error: cannot evaluate rule {r.name!r}: {r.detail}", file=sys.stderr)
        return exit_code(results)

    # Exit 1 is a verdict: anything that goes wrong before the verdict exits 2, never 1 or a traceback
    # (a bug or an input nobody foresaw included: still "cannot evaluate", in one line).
    return _exit2_on_error(gate, also=Exception, what="gate could not evaluate",
                           fix="check the cell, baseline and policy files")


def load_cells_of(ref: str) -> list:
    """The finished cells of an experiment folder (one dataset version), or the one cell ``ref`` names."""
    from rag_bench.cells import experiment_cells, is_done, one_dataset
    from rag_bench.tracking.download import load_cell

    if Path(ref).is_dir() and not is_done(Path(ref)):
        cells, notice = one_dataset(experiment_cells(ref))
        if notice:
            print(notice, file=sys.stderr)
        return cells
    return [load_cell(ref)]


def _calibrate(argv: list[str]) -> int:
    from rag_bench.calibration.calibrate import as_json, calibrate, format_text
    from rag_bench.calibration.labels import load_labels
    from rag_bench.reporting.decide import names_of

    p = argparse.ArgumentParser(prog="rag-bench calibrate", description="How well each automatic answer measure "
                                "(correct under each answer_match, the refusal measure, the faithfulness proxy, "
                                "citation support, judged measures) agrees with people's labels: n, base rates, "
                                "confusion matrix, Cohen's kappa (quadratically weighted and Spearman for grades) "
                                "with a bootstrap CI, the two labellers' own kappa, and each cell's PPI-corrected "
                                "mean beside its raw mean.", epilog="labels format: docs/labels.md")
    p.add_argument("target", help="experiment folder or cell folder (or MLflow run id)")
    p.add_argument("--labels", required=True, help="labels.jsonl (rag-bench label writes it; docs/labels.md)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    a = p.parse_args(argv)

    def calibrate_cells() -> int:
        labels = load_labels(a.labels)
        cells = load_cells_of(a.target)
        if not cells:
            return _fail(f"{a.target}: no finished cells (folders with DONE) -- fix: run `rag-bench run` first")
        results = calibrate(cells, names_of(cells), labels, seed=a.seed)
        if not any(r.n for r in results):
            print(f"warning: no label of {a.labels} names an answer of these cells (question id and answer text)",
                  file=sys.stderr)
        print(json.dumps({"labels": str(a.labels), "measures": as_json(results)}, indent=2) if a.json
              else format_text(results))
        return 0

    return _exit2_on_error(calibrate_cells)


def _label(argv: list[str]) -> int:
    from rag_bench.calibration.labels import load_labels
    from rag_bench.reporting import label_page
    from rag_bench.reporting.decide import cell_name
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench label", description="Write a static page (opens from disk) to "
                                "label a sample of a cell's answers for correct and faithfulness by key; its "
                                "'download labels.jsonl' saves them for rag-bench calibrate and the gate.",
                                epilog="labels format: docs/labels.md")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--n", type=int, default=50, help="questions to sample (default 50)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--stratify", help="a records column (e.g. correct): one answer with it >= 0.5, one below, one "
                   "undefined, in turn, so every kind gets labelled (not a uniform sample: calibrate's PPI "
                   "mean assumes one)")
    p.add_argument("--labels", help="a labels.jsonl saved before: the page starts with it and continues")
    p.add_argument("--out", help="page to write (default reports/label-<cell_id>.html)")
    p.add_argument("--scale", type=int, default=1, help="1: yes/no labels (default); G (2-9): grades 0..G by "
                   "digit key, saved with \"scale\": G (calibrate then reports weighted kappa and Spearman)")
    a = p.parse_args(argv)
    if a.n < 1:
        return _fail(f"--n must be at least 1, got {a.n} -- fix: e.g. --n 50")
    if not 1 <= a.scale <= label_page.MAX_SCALE:
        return _fail(f"--scale must be 1 (yes/no) to {label_page.MAX_SCALE} (grades typed as one digit), "
                     f"got {a.scale} -- fix: e.g. --scale 4 for grades 0-4")

    def write_label_page() -> int:
        existing = load_labels(a.labels) if a.labels else []
        cell = load_cell(a.cell)
        if a.stratify and a.stratify not in cell.records.columns:
            cols = [c for c in cell.records.columns if cell.records[c].dtype.kind == "f"]
            return _fail(f"--stratify {a.stratify!r}: no such records column -- fix: one of {', '.join(cols[:40])}")
        rows = label_page.sample(cell.records, a.n, a.seed, a.stratify)
        shown = label_page.items(cell, rows, label_page.references(cell))
        out = Path(a.out or f"reports/label-{cell.cell_id}.html")
        if out.is_dir():
            return _fail(f"--out {out}: is a folder -- fix: name a file, e.g. {out / 'label.html'}")
        label_page.write_page(out, label_page.render(cell.cell_id, cell_name(cell), shown, existing, a.scale))
        print(f"{len(shown)} answers to label: {out} (open it in a browser; keys y/n, then 'download labels.jsonl')")
        return 0

    return _exit2_on_error(write_label_page, also=OSError, what="cannot write the page", fix="pass a writable --out")


def _report(argv: list[str]) -> int:
    from rag_bench.reporting.report import render_report

    p = argparse.ArgumentParser(prog="rag-bench report", description="Render an experiment's cells as one static "
                                "folder (reports/<experiment>/index.html) that opens from disk without a server: a "
                                "sortable, filterable leaderboard with CIs, which axis matters (main effects, an "
                                "interaction heatmap), the quality-vs-cost Pareto front, per-tag results, failure "
                                "attribution and a per-question drill-down. Also logged to the sweep's MLflow "
                                "parent run.")
    p.add_argument("experiment_dir", help="e.g. experiments/demo")
    p.add_argument("--out", default="reports", help="output root (default reports/)")
    p.add_argument("--metric", default=None, help="measure that ranks cells (section/name; default: "
                   f"generation/correct when the cells generated answers, else {measures.PRIMARY.key})")
    p.add_argument("--baseline", help="cell (id, name or folder) to compare the best cell against (default: the cell "
                   "at the config's defaults on every swept axis)")
    p.add_argument("--top", type=int, default=20, help="cells drawn in the per-cell charts (default 20; the "
                   "table always lists every cell)")
    p.add_argument("--pair", help="two swept axes for the interaction heatmap, e.g. chunker,retriever (default: the "
                   "two that move the metric most)")
    p.add_argument("--no-mlflow", action="store_true", help="do not log the report to MLflow")
    p.add_argument("--fingerprint", help="dataset version (fingerprint or a prefix of it) whose cells are reported "
                   "when the folder holds cells of several; default: the version of the cell finished last")
    p.add_argument("--labels", help="people's labels (docs/labels.md) for the section 'Can we trust the automatic "
                   "answer measures?' (default: labels.jsonl beside the dataset, when there is one)")
    a = p.parse_args(argv)
    pair = tuple(x.strip() for x in a.pair.split(",")) if a.pair else None
    if pair is not None and len(pair) != 2:
        return _fail(f"--pair {a.pair!r}: give two axes separated by a comma, e.g. --pair chunker,retriever")
    try:
        index = render_report(a.experiment_dir, out_root=a.out, metric=a.metric, baseline=a.baseline,
                              log_to_mlflow=not a.no_mlflow, top=a.top, pair=pair,  # type: ignore[arg-type]
                              fingerprint=a.fingerprint, labels_file=a.labels)
    except RagBenchError as exc:
        return _fail(exc)
    print(f"report: {index}")
    return 0


def _sync(argv: list[str]) -> int:
    from rag_bench.tracking.sync import sync_experiment

    p = argparse.ArgumentParser(prog="rag-bench sync", description="Upload an experiment's finished cells to "
                                "MLflow (after a tracking outage or tracking=none). Cells already tracked are "
                                "skipped, so running it twice adds nothing.")
    p.add_argument("experiment_dir")
    p.add_argument("--tracking-uri", help="default: $MLFLOW_TRACKING_URI, else <experiments root>/mlflow.db")
    a = p.parse_args(argv)
    if not Path(a.experiment_dir).is_dir():
        return _fail(f"{a.experiment_dir}: no such experiment folder -- fix: pass experiments/<name>")
    try:
        counts = sync_experiment(a.experiment_dir, tracking_uri=a.tracking_uri)
    except RagBenchError as exc:
        return _fail(exc)
    print(f"sync: {counts['uploaded']} cell(s) uploaded, {counts['already_tracked']} already tracked")
    return 0


def _evaluate(argv: list[str]) -> int:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.runner.config import CONF_DIR, check_group_overrides, check_hydra_targets, register_configs
    from rag_bench.runner.main import evaluate_cell
    from rag_bench.tracking.mlflow_tracker import finish_all

    p = argparse.ArgumentParser(
        prog="rag-bench evaluate", description="Score results an external system already produced (its "
        "retrieved passages, answers and citations, or a TREC run) as a normal cell folder: metrics.json, "
        "run.trec, qrels.trec, failures.csv, DONE, logged to MLflow; leaderboard, compare, report and gate "
        "read it like any cell.",
        epilog="OUTPUTS format (JSON lines, one per question): {\"id\": .., \"retrieved\": [{\"doc_id\": .., "
        "\"start\": .., \"end\": ..} | {\"doc_id\": .., \"text\": ..} | {\"text\": ..}, ...], \"answer\": .., "
        "\"citations\": [1, ..], \"refused\": false, \"latency_ms\": ..}; see rag_bench/runner/external.py. "
        "example: rag-bench evaluate app_outputs.jsonl --dataset datasets/kettleby --name my_app")
    p.add_argument("outputs", nargs="?", help="the system's outputs (JSON lines)")
    p.add_argument("--dataset", required=True, help="dataset folder the outputs answer (native or BEIR)")
    p.add_argument("--trec", help="score a TREC run (document ids, or chunk ids of chunker=...) instead of OUTPUTS")
    p.add_argument("--ragas", help="score a ragas EvaluationDataset (JSON lines: user_input, retrieved_contexts, "
                   "response) instead of OUTPUTS")
    p.add_argument("--name", default="external", help="the system's name in leaderboards and MLflow")
    p.add_argument("overrides", nargs="*", default=[], help="config overrides, e.g. eval.unit=both pipeline.k=3 "
                   "experiment.name=apps tracking=none")
    a, extra = p.parse_known_args(argv)
    overrides = [*a.overrides, *extra]
    if a.outputs and "=" in a.outputs and not Path(a.outputs).exists():  # `--trec RUN key=value`: an override
        overrides.insert(0, a.outputs)
        a.outputs = None
    if sum(x is not None for x in (a.outputs, a.trec, a.ragas)) != 1:
        return _fail("give one of OUTPUTS, --trec RUN or --ragas FILE -- fix: rag-bench evaluate outputs.jsonl "
                     "--dataset DIR")
    register_configs()
    # The cell is a sweep of one: its parent MLflow run (opened when the cell is logged) is closed
    # here, as `run`'s callbacks close a sweep's -- FINISHED, or FAILED on any error.
    try:
        check_hydra_targets(overrides)
        check_group_overrides(overrides)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[*overrides, f"dataset.path={Path(a.dataset).resolve()}"])
        cell_dir = evaluate_cell(cfg, outputs=Path(a.outputs) if a.outputs else None,
                                 trec=Path(a.trec) if a.trec else None, ragas=Path(a.ragas) if a.ragas else None,
                                 system=a.name)
    except RagBenchError as exc:
        finish_all(ok=False)
        return _fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:
        finish_all(ok=False)
        return _fail(f"configuration: {_config_message(exc, overrides)}")
    except BaseException:
        finish_all(ok=False)
        raise
    finish_all(ok=True)
    print(_where_written(cell_dir, default_experiment=not any(o.startswith("experiment.name=") for o in overrides)))
    return 0


def _where_written(cell_dir: Path, *, default_experiment: bool) -> str:
    """Where `evaluate` put its cell: the folder and the MLflow experiment, run and how to open it
    (from the cell's DONE, which records where it was logged)."""
    try:
        done = json.loads((cell_dir / "DONE").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        done = {}
    lines = [f"wrote {cell_dir}"]
    experiment = done.get("mlflow_experiment")
    if done.get("tracking") == "mlflow" and done.get("mlflow_run_id") and experiment:
        uri = done.get("tracking_uri") or ""
        lines.append(f"MLflow: experiment {experiment!r}, run {done['mlflow_run_id']} at {uri}"
                     + (f" -- open: mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite:") else ""))
    else:
        lines.append("MLflow: not logged (tracking=none); the cell folder holds the results")
    if default_experiment:
        lines.append(f"(experiment {cell_dir.parent.name!r} is the default: experiment.name=NAME files the cell "
                     "under a name of its own)")
    return "\n".join(lines)


def _score_answers(argv: list[str]) -> int:
    from rag_bench.metrics.squad import main as score_answers

    return score_answers(argv)


def _export(argv: list[str]) -> int:
    from rag_bench.runner.external import export_outputs
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench export", description="Write a cell's per-question results as "
                                "OUTPUTS JSON lines (the format `rag-bench evaluate` reads).")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--format", choices=["outputs", "ragas"], default="outputs",
                   help="outputs: rag-bench evaluate's format; ragas: an EvaluationDataset as JSON lines "
                   "(user_input, retrieved_contexts, response, reference)")
    p.add_argument("--out", help="file to write (default: standard output)")
    a = p.parse_args(argv)
    try:
        out = _output_file(a.out, "--out") if a.out else None  # before any work: nothing half-done
        cell = load_cell(a.cell)
        if a.format == "ragas":
            from rag_bench.data.loader import load_dataset
            from rag_bench.runner.external import export_ragas

            path = (cell.config.get("dataset") or {}).get("path")
            dataset = load_dataset(path) if path and Path(path).is_dir() else None
            lines = export_ragas(cell.records, dataset)
        elif "chunk_spans" not in cell.records:
            return _fail(f"{cell.path}: records.parquet has no chunk_spans (written before export existed) -- fix: "
                         "re-run the cell")
        else:
            lines = export_outputs(cell.records)
    except RagBenchError as exc:
        return _fail(exc)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        _write_output(out, text, "--out")
    except RagBenchError as exc:
        return _fail(exc)
    return 0


def _output_file(name: str, option: str) -> Path:
    """Check, before any work, that ``option``'s file can be written: not a folder, its folder exists
    and is writable. Nothing is created here."""
    from rag_bench.errors import ConfigError, Problem

    path = Path(name).expanduser()

    def bad(msg: str, fix: str) -> ConfigError:
        return ConfigError(str(Problem(str(path), 0, option, msg, fix)))

    if path.is_dir():
        raise bad("is a folder, not a file", f"pass a file inside it, e.g. {path / 'outputs.jsonl'}")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise bad(f"{folder} is a file, not a folder", "pass a file in an existing folder")
    if not folder.is_dir():
        raise bad(f"folder {folder} does not exist", f"create it first (mkdir -p {folder}) or pass a file in an "
                  "existing folder")
    if not os.access(folder, os.W_OK | os.X_OK) and not (path.exists() and os.access(path, os.W_OK)):
        raise bad(f"cannot write in {folder} (permission denied)", "pass a file in a folder you can write")
    return path


def _write_output(path: Path, text: str, option: str) -> None:
    """Write a command's output file whole or not at all: a regular file through a temporary file
    renamed over it; a device or pipe (``/dev/stdout``) written in place. An OSError (disk full,
    quota, permissions) is an OutputError naming the file; no temporary file is left."""
    from rag_bench.errors import OutputError, Problem

    special = path.exists() and not path.is_file()
    tmp = path if special else path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if not special:
                os.fsync(fh.fileno())
        if not special:
            os.replace(tmp, path)
    except OSError as exc:
        if not special:
            tmp.unlink(missing_ok=True)
        raise OutputError(str(Problem(str(path), 0, option, f"cannot write ({exc.strerror or exc})",
                                      "free disk space or pass another file; nothing was written"))) from exc


# The persistent stores a cache folder may hold: file name -> (module, class), for `cache verify`.
CACHE_STORES = {"embeddings.sqlite": ("rag_bench.embedding.cache", "EmbeddingCache"),
                "generations.sqlite": ("rag_bench.generation.base", "GenerationCache"),
                "judgements.sqlite": ("rag_bench.judging.ragas_judge", "JudgeCache"),
                "rerank_pairs.sqlite": ("rag_bench.reranking.cross_encoder", "PairScoreCache")}


def _cache(argv: list[str]) -> int:
    import importlib

    from rag_bench.errors import DataError
    from rag_bench.storage import check_cache_dir, default_cache_dir, remove_store

    p = argparse.ArgumentParser(prog="rag-bench cache", description="Inspect the persistent caches (embeddings, "
                                "generations, judge scores, reranker scores).")
    p.add_argument("action", choices=["verify"], help="verify: check every entry's checksum")
    p.add_argument("--dir", default=None, help="cache folder (default $RAG_BENCH_CACHE or ~/.cache/rag_bench)")
    p.add_argument("--repair", action="store_true", help="delete corrupt entries, and cache files SQLite cannot "
                   "read (they are recomputed on use)")
    a = p.parse_args(argv)
    try:
        path = Path(a.dir).expanduser() if a.dir else default_cache_dir()
        check_cache_dir(path, "--dir" if a.dir else "cache folder")
    except RagBenchError as exc:
        return _fail(exc)
    files = [name for name in CACHE_STORES if (path / name).is_file()]
    if not files:
        return _fail(f"{path}: no cache here (none of {', '.join(CACHE_STORES)}) -- fix: pass --dir or set "
                     "RAG_BENCH_CACHE")
    code = 0
    for name in files:
        db = path / name
        module, cls = CACHE_STORES[name]
        store = getattr(importlib.import_module(module), cls)(db)
        try:
            ok, bad = store.verify(repair=a.repair)
        except DataError as exc:  # the file itself is damaged: no entry of it can be trusted
            store.close()
            if not a.repair:
                print(f"error: {exc}", file=sys.stderr)
                code = 2
                continue
            remove_store(db)
            print(f"{db}: damaged file removed (SQLite could not read it); its entries are recomputed on use")
            continue
        finally:
            store.close()
        state = "repaired: deleted" if a.repair and bad else "corrupt"
        print(f"{db}: {ok} entries ok, {bad} {state}")
        if bad and not a.repair:
            code = max(code, 1)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rag-bench`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    from rag_bench.logs import quiet_libraries, setup_console

    quiet_libraries()
    setup_console()
    if cmd == "run":
        return _run(rest)
    if cmd == "score-run":
        from rag_bench.metrics.trec_cli import main as score_main

        return score_main(rest)
    handlers = {"validate": _validate, "chunks": _chunks, "leaderboard": _leaderboard, "cache": _cache,
                "status": _status, "embed": _embed, "compare": _compare, "gate": _gate, "report": _report,
                "sync": _sync, "evaluate": _evaluate,
                "export": _export, "score-answers": _score_answers,
                "calibrate": _calibrate, "label": _label}
    if cmd not in handlers:
        print(f"error: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return handlers[cmd](rest)
    except BrokenPipeError:  # `rag-bench leaderboard ... | head`: the reader left, as in any Unix tool
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def entry() -> None:
    """The ``rag-bench`` console script: :func:`main`; after ``run``, :func:`rag_bench.fast.exit_now`."""
    fast = sys.argv[1:2] == ["run"]  # (read first: `run` hands Hydra an argv of its own)
    code = main()
    if fast:
        from rag_bench.fast import exit_now

        exit_now(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
