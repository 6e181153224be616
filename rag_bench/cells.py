"""The cell folder (docs/contract.md §5): the one module that writes, marks done, reads and lists it.

Writing: the folder is written to a temporary folder, renamed, DONE last. A folder without DONE
is unfinished work: it is removed and recomputed on the next run. DONE is written through a
temporary file and ``os.replace``, so it exists either whole or not at all. Two processes
computing the same cell at once: writing the folder, tracking it and writing DONE happen under
the cell's lock (``cell_lock``), and the one that gets the lock second finds DONE and keeps the
finished cell instead of replacing it.

Reading: only finished work is read: a folder must hold ``DONE`` (written last, after the MLflow
run's artifacts were logged). A cell named by MLflow run id is downloaded, and marked done once
its run is FINISHED, by :mod:`rag_bench.tracking.download`, which reads the copy here.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd
import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_omega_conf_dumper

from rag_bench.components import LABEL_STAGES, stage_names
from rag_bench.errors import DataError, OutputError, Problem, RagBenchError
from rag_bench.locking import file_lock
from rag_bench.spreadsheet import to_csv

# Where cells go unless output.root says otherwise (the schema's default; a cell named by MLflow
# run id is looked up in <this>/mlflow.db when no tracking URI is set).
DEFAULT_OUTPUT_ROOT = "experiments"

FILES = ("config.yaml", "metrics.json", "records.parquet", "run.trec", "qrels.trec")

# The cell format (docs/contract.md §5): metrics.json's and DONE's ``format``. A cell without one is
# format 0 (written before the field): :func:`upgrade` makes it format 1 as it is read, so readers
# see one shape. A new format is a new number and one more step in :func:`upgrade`.
CELL_FORMAT = 1


class MetricsJson(TypedDict, total=False):
    """metrics.json, typed (docs/contract.md §5): ``format``; one section per stage of measures
    (``retrieval``, ``document``, ``evidence``, ``context``, ``rerank``, ``ann``, ``generation``,
    ``citation``, ``claims``, ``abstention``, ``judge``, ``security``, ``injection``,
    ``hidden_text``, ``latency``, ``cost``, ...: ``{name: number or null}``); the counts; each
    mean's ``n`` and ``ci`` by ``section/name``; ``by_tag`` and ``conditional``; ``measures``, what
    every key means; the cell's warnings and findings; the dataset's fingerprint and files, and the
    corpus's fingerprint.

    ``dataset_fingerprint`` and ``corpus_fingerprint`` are null when not known: a cell of format 0
    written before they were recorded (:func:`upgrade` writes the null; every cell written since
    holds both). Readers take a null as it comes -- one version ``unknown`` in a listing, no check
    of the two datasets or corpora -- whatever the cell's age."""

    format: int
    retrieval: dict[str, float | None]
    document: dict[str, float | None]
    generation: dict[str, float | None]
    cost: dict[str, float | None]
    latency: dict[str, float | None]
    counts: dict[str, int]
    failures: dict[str, int]
    n: dict[str, int]
    ci: dict[str, list[float | None]]
    by_tag: dict[str, dict[str, Any]]
    conditional: dict[str, Any]
    methods: dict[str, Any]
    measures: dict[str, dict[str, Any]]
    warnings: list[str]
    findings: list[str]
    dataset_fingerprint: str | None
    corpus_fingerprint: str | None
    dataset_files: Any


@dataclass(frozen=True)
class CellResult:
    """Everything a cell folder holds, computed: what :func:`write_cell` writes."""

    records: pd.DataFrame
    metrics: dict[str, Any]
    run_trec: str
    qrels_trec: str
    # Further TREC files by name (document-level run and qrels when eval.unit includes document).
    extra_files: dict[str, str] = field(default_factory=dict)
    # ``records`` as records.parquet's bytes, when they were encoded already (the cell cache stores
    # them, :mod:`rag_bench.cell_cache`): written as they are instead of encoding the frame again.
    records_parquet: bytes | None = field(default=None, compare=False, repr=False)
    # Further files rendered when the cell is written or stored (name -> a picklable callable giving its
    # text): the stored run (question-runs.jsonl, 11 ms a squad2-normans cell), which the sweep's
    # background process renders off the sweep's thread from the run it is handed.
    deferred: dict[str, Callable[[], str]] = field(default_factory=dict, compare=False, repr=False)

    def rendered(self) -> CellResult:
        """This result with its deferred files rendered into ``extra_files`` (after the others)."""
        if not self.deferred:
            return self
        made = {name: make() for name, make in self.deferred.items()}
        return dataclasses.replace(self, extra_files={**self.extra_files, **made}, deferred={})


def parquet_bytes(records: pd.DataFrame) -> bytes:
    """``records`` as the bytes of records.parquet (the one encoding: no index)."""
    out = io.BytesIO()
    records.to_parquet(out, index=False)
    return out.getvalue()


def is_done(cell_dir: Path) -> bool:
    """True when the cell finished (DONE marker present)."""
    return (cell_dir / "DONE").is_file()


def cell_lock(cell_dir: Path) -> AbstractContextManager[None]:
    """Exclusive lock (across processes) on the cell folder: hold it from writing the folder to
    writing DONE, and check ``is_done`` once it is held. Its file, ``.<cell>.lock`` beside the
    folder, is removed on release."""
    return file_lock(cell_dir.with_name(f".{cell_dir.name}.lock"))


def json_ready(obj: Any) -> Any:
    """``obj`` with every non-finite float as None: JSON has no NaN, so an undefined figure is null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    return obj


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and ``os.replace`` (whole
    or not at all)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class _ConfigDumper(getattr(yaml, "CDumper", yaml.Dumper)):  # type: ignore[misc]
    """OmegaConf's YAML dumper (its representers: strings that would read back as another type
    are quoted) on libyaml's emitter when PyYAML has it: the same text as ``OmegaConf.to_yaml``,
    about 3x faster (a test compares them over every shipped config and awkward strings). The
    one difference found: libyaml escapes characters beyond the BMP (emoji) that PyYAML's
    emitter writes as they are, so a config holding one is written by PyYAML's."""


for _type, _represent in get_omega_conf_dumper().yaml_representers.items():
    _ConfigDumper.add_representer(_type, _represent)
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _has_astral(node: Any) -> bool:
    if isinstance(node, str):
        return _ASTRAL.search(node) is not None
    if isinstance(node, dict):
        return any(_has_astral(k) or _has_astral(v) for k, v in node.items())
    if isinstance(node, (list, tuple)):
        return any(_has_astral(v) for v in node)
    return False


def config_yaml(config: Mapping[str, Any]) -> str:
    """A resolved config as ``OmegaConf.to_yaml(cfg, resolve=True)`` writes it, from the plain
    container ``OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)``."""
    dumper = get_omega_conf_dumper() if _has_astral(config) else _ConfigDumper
    return yaml.dump(config, default_flow_style=False, allow_unicode=True, sort_keys=False, Dumper=dumper)


_BLOCK = "measures"  # metrics.json's description of its keys: one line per key
_PLACEHOLDER = "\x00measures\x00"


def metrics_json(metrics: Mapping[str, Any]) -> str:
    """metrics.json's text: indented, keys sorted, NaN as null; the ``measures`` block one line per
    key (a hundred small entries indented would be most of the file, and most of its writing time:
    json's indenting encoder is pure Python)."""
    block = metrics.get(_BLOCK)
    if not isinstance(block, Mapping) or not block:
        return json.dumps(json_ready(metrics), indent=2, sort_keys=True) + "\n"
    text = json.dumps(json_ready({**metrics, _BLOCK: _PLACEHOLDER}), indent=2, sort_keys=True)
    lines = ",\n".join(f"    {json.dumps(k)}: {json.dumps(json_ready(v), sort_keys=True)}" for k, v in sorted(block.items()))
    return text.replace(json.dumps(_PLACEHOLDER), "{\n" + lines + "\n  }", 1) + "\n"


def write_cell(cell_dir: Path, cfg: DictConfig | Mapping[str, Any], result: CellResult) -> None:
    """Write every file of the cell except DONE; replaces any unfinished folder of the same cell.
    ``cfg``: the cell's resolved config (a DictConfig, or its plain container).

    Call it holding ``cell_lock(cell_dir)``, after checking the cell is not DONE."""
    result = result.rendered()
    cell_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = cell_dir.with_name(f".{cell_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True) if isinstance(cfg, DictConfig) else cfg
        (tmp / "config.yaml").write_text(config_yaml(plain), encoding="utf-8")  # type: ignore[arg-type]
        (tmp / "metrics.json").write_text(metrics_json({"format": CELL_FORMAT, **result.metrics}), encoding="utf-8")
        (tmp / "records.parquet").write_bytes(
            result.records_parquet if result.records_parquet is not None else parquet_bytes(result.records))
        (tmp / "run.trec").write_text(result.run_trec, encoding="utf-8")
        (tmp / "qrels.trec").write_text(result.qrels_trec, encoding="utf-8")
        for name, text in result.extra_files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        cols = [c for c in ("qid", "question", "answerable", "tags", "failure", "first_relevant_rank", "answer",
                            "citations", "generation_error", "parse_error") if c in result.records]
        to_csv(result.records[cols], tmp / "failures.csv")  # answers that a spreadsheet would run are quoted
        if cell_dir.exists():
            shutil.rmtree(cell_dir)
        os.replace(tmp, cell_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_cell_or_fail(cell_dir: Path, cfg: DictConfig | Mapping[str, Any], result: CellResult) -> None:
    """:func:`write_cell`, an ``OSError`` (disk full, quota, permissions) raised as
    :class:`~rag_bench.errors.OutputError` saying nothing half-written was kept."""
    try:
        write_cell(cell_dir, cfg, result)
    except OSError as exc:
        raise OutputError(f"output.root: cannot write cell {cell_dir} ({exc.strerror or exc}) -- fix: free disk "
                          "space or pass output.root=<another folder>; no partial cell was kept") from exc


def mark_done(cell_dir: Path, info: dict[str, Any] | None = None) -> None:
    """Write DONE atomically: the last step of a cell. ``info`` (e.g. the MLflow run id) is its JSON
    body, with the cell's ``format``."""
    atomic_write(cell_dir / "DONE", json.dumps({**(info or {}), "format": CELL_FORMAT}, sort_keys=True) + "\n")


def discard(cell_dir: Path) -> None:
    """Remove an unfinished cell folder (no DONE) so it is never read as a result; a folder that
    another process is writing (it holds the cell's lock) is left to that process."""
    if not cell_dir.exists():
        return
    with cell_lock(cell_dir):
        if not is_done(cell_dir):
            shutil.rmtree(cell_dir, ignore_errors=True)


# libyaml's parser when PyYAML was built with it (~10x faster: a sweep's closing reads every
# cell's config.yaml), else PyYAML's own; both build the same safe types.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MISSING = object()


@dataclass(frozen=True)
class Cell:
    """One finished cell as stored: config, aggregates, per-question records (read on first use
    when the cell was listed without them)."""

    cell_id: str
    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    done: dict[str, Any]
    _records: list[pd.DataFrame] = field(default_factory=list, repr=False, compare=False)

    @property
    def records(self) -> pd.DataFrame:
        """records.parquet: one row per question."""
        if not self._records:
            self._records.append(_read_records(self.path))
        return self._records[0]

    def _raw(self, key: str) -> Any:
        section, _, name = key.partition("/")
        block = self.metrics.get(section) if isinstance(self.metrics, dict) else None
        return block.get(name, _MISSING) if isinstance(block, dict) else _MISSING

    def reports(self, key: str) -> bool:
        """Whether metrics.json holds ``section/name`` at all (a null or a mapping included)."""
        return self._raw(key) is not _MISSING

    def metric(self, key: str) -> float | None:
        """Aggregate by ``section/name`` (e.g. ``retrieval/hit@5``); None when absent or not a finite
        number (a dict such as ``by_tag/..``, a list such as ``ci/..``, text, a bool, null, NaN)."""
        value = self._raw(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    def metric_problem(self, key: str) -> str:
        """Why :meth:`metric` gives None for ``key`` (for messages); empty when it gives a number."""
        value = self._raw(key)
        if value is _MISSING:
            return f"{key} is not in metrics.json"
        if self.metric(key) is not None:
            return ""
        kind = {dict: "a mapping", list: "a list", str: "text", bool: "a bool", type(None): "null"}.get(
            type(value), "not finite" if isinstance(value, float) else type(value).__name__)
        return (f"{key} in metrics.json is {kind}, not a number -- fix: name an aggregate such as "
                "retrieval/hit@5 (by_tag, ci and n hold groups of values)")

    @property
    def dataset_fingerprint(self) -> str | None:
        """The dataset's content fingerprint the cell was computed on (metrics.json
        ``dataset_fingerprint``; None when it is null: not known, :class:`MetricsJson`)."""
        fp = self.metrics.get("dataset_fingerprint") if isinstance(self.metrics, dict) else None
        return str(fp) if fp else None

    @property
    def corpus_fingerprint(self) -> str | None:
        """The fingerprint of the documents the cell searched, without its questions (metrics.json
        ``corpus_fingerprint``; None when it is null: not known, :class:`MetricsJson`)."""
        fp = self.metrics.get("corpus_fingerprint") if isinstance(self.metrics, dict) else None
        return str(fp) if fp else None

    @property
    def label(self) -> str:
        """Short human label: chunker/retriever/reranker names and the cell id."""
        names = stage_names(self.config, LABEL_STAGES).values() if isinstance(self.config, dict) else []
        return f"{'/'.join(n for n in names if n and n != 'none')} [{self.cell_id}]"


def check_same_dataset(reference: Cell, other: Cell, *, fix: str = "compare cells of the same dataset version") -> None:
    """Refuse two cells computed on different datasets (content fingerprints differ; a null one,
    not known, is checked against nothing)."""
    fa, fb = reference.dataset_fingerprint, other.dataset_fingerprint
    if fa and fb and fa != fb:
        raise DataError(Problem(str(other.path), 0, "dataset_fingerprint",
                                f"the two cells were computed on different datasets: {reference.path} has "
                                f"fingerprint {fa}, {other.path} has {fb}", fix))


def read_done(path: Path) -> dict[str, Any]:
    """DONE's content, upgraded to the current format (:func:`upgrade_done`)."""
    with open(path / "DONE", "rb") as fh:
        text = fh.read(1 << 16).decode("utf-8", errors="replace").strip()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = text
    return upgrade_done(data)


def upgrade_done(done: Any) -> dict[str, Any]:
    """DONE's body in the current format: format 0's plain text (or a body that is not an object)
    is an empty body, what it said of tracking not kept."""
    if not isinstance(done, dict):
        return {"format": CELL_FORMAT}
    return done if done.get("format") == CELL_FORMAT else {**done, "format": CELL_FORMAT}


# The parameters each measure family of format 0 was computed under (the catalog's declarations
# when format 1 came: rag_bench.evaluation.measures): a ``name=value`` is fixed, a dotted name is
# read from the cell's config. Format 0 is history: this table never changes (a family that gains
# a parameter changes what metrics.json means, so it is a new format and a new step in upgrade).
_RANKED = ("eval.relevance", "eval.min_coverage", "eval.relevance_level")
_COVERAGE = ("eval.min_coverage",)
_MATCH = ("eval.answer_match", "eval.f1_threshold")
_FORMAT0_PARAMS: dict[str, tuple[str, ...]] = {
    **{f"retrieval/{f}": (*_RANKED, "unit=chunk") for f in ("hit", "precision", "recall", "mrr", "map")},
    "retrieval/ndcg": (*_RANKED, "unit=chunk", "eval.gain"),
    **{f"document/{f}": ("eval.relevance_level", "unit=document") for f in ("hit", "precision", "recall", "mrr", "map")},
    "document/ndcg": ("eval.relevance_level", "eval.gain", "unit=document"),
    **{f"evidence/{f}": _COVERAGE for f in ("evidence_recall", "complete", "context_complete")},
    "generation/correct": _MATCH, "answer/correct_all": _MATCH, "answer/context_all": _COVERAGE,
    "citation/citation_precision": _COVERAGE, "citation/citation_recall": _COVERAGE,
    "context/passage_precision": _RANKED, "rerank/hit_lift": _RANKED, "query/lift": _RANKED,
    "query/kept_terms": ("rare_df=0.05",),
}
_NOT_SECTIONS = ("ci", "n", "by_tag", "conditional", "methods", "warnings", "findings", "measures", "skipped")


def _format0_block(metrics: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``measures`` block of a format-0 cell: each key of a family with parameters
    (:data:`_FORMAT0_PARAMS`), its ``params`` read against the cell's ``config`` (a key whose
    measure has none has no line: there is nothing to hold against another cell).

    >>> _format0_block({"retrieval": {"ndcg@10": 0.5}}, {"eval": {"gain": "linear"}})["retrieval/ndcg@10"]["params"]["eval.gain"]
    'linear'
    """
    def setting(key: str) -> Any:
        node: Any = config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node

    block: dict[str, dict[str, Any]] = {}
    for section, values in metrics.items():
        if section in _NOT_SECTIONS or not isinstance(values, Mapping):
            continue
        for leaf in values:
            declared = _FORMAT0_PARAMS.get(f"{section}/{str(leaf).partition('@')[0]}")
            if declared is not None:
                block[f"{section}/{leaf}"] = {"params": {p.partition("=")[0]: p.partition("=")[2] if "=" in p
                                                         else setting(p) for p in declared}}
    return block


# The config groups a format-0 cell may lack, as the cell ran without them: one written before the
# parser group read its files as parser=auto does, one written before the query group searched its
# questions as they are (query=none).
_FORMAT0_GROUPS = {"parser": {"name": "auto"}, "query": {"name": "none"}}


def upgrade(path: Path, config: dict[str, Any], metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """config.yaml and metrics.json of the cell at ``path`` in the current format
    (:data:`CELL_FORMAT`), the one step from format 0 done as it is read: the ``parser`` and
    ``query`` groups a config written before them lacks (:data:`_FORMAT0_GROUPS`), the ``measures``
    block (:func:`_format0_block`, from the cell's config), ``cost/generator_tokens`` a
    generating cell written before it lacks, from its records, and the dataset's and corpus's
    fingerprints (:func:`_format0_fingerprints`); DataError for a format this rag_bench does not
    know (a newer one)."""
    found = metrics.get("format", 0)
    if found == CELL_FORMAT:
        return config, metrics
    if found != 0:
        raise DataError(Problem(str(path / "metrics.json"), 0, "format", f"cell format {found!r}: this rag_bench "
                                f"reads formats 0..{CELL_FORMAT}", "read it with the rag_bench that wrote it, or "
                                "re-run the cell (delete the folder first)"))
    config = {**{g: dict(v) for g, v in _FORMAT0_GROUPS.items() if g not in config}, **config}
    out = {**metrics, "format": CELL_FORMAT}
    if not isinstance(out.get("measures"), dict):
        out["measures"] = _format0_block(out, config)
    cost: dict[str, Any] = out["cost"] if isinstance(out.get("cost"), dict) else {}
    if "generation" in out and "generator_tokens" not in cost:
        out["cost"] = {**cost, "generator_tokens": _mean_tokens(path)}
    out.update(_format0_fingerprints(config, out))
    return config, out


def _format0_fingerprints(config: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
    """metrics.json's ``dataset_fingerprint`` and ``corpus_fingerprint`` of a format-0 cell, null
    when it has none (written before they were recorded: a fingerprint cannot be made up). Format
    0's readers took the dataset's from the config's ``dataset.fingerprint`` first (the runner never
    wrote one there); it stays so.

    >>> _format0_fingerprints({}, {"dataset_fingerprint": "ab12"})
    {'dataset_fingerprint': 'ab12', 'corpus_fingerprint': None}
    """
    dataset = config.get("dataset")
    fp = (dataset.get("fingerprint") if isinstance(dataset, Mapping) else None) or metrics.get("dataset_fingerprint")
    return {"dataset_fingerprint": fp or None, "corpus_fingerprint": metrics.get("corpus_fingerprint") or None}


def _mean_tokens(path: Path) -> float | None:
    """Generator tokens (in + out) per question, mean, from records.parquet; None without them."""
    import pyarrow.parquet as pq

    try:
        names = set(pq.read_schema(path / "records.parquet").names)
        cols = [c for c in ("tokens_in", "tokens_out") if c in names]
        if not cols:
            return None
        frame = pq.read_table(path / "records.parquet", columns=cols).to_pandas()
    except Exception:  # noqa: BLE001 -- an unreadable file is reported by whoever reads the records
        return None
    total = frame.fillna(0).sum(axis=1)
    return float(total.mean()) if len(total) else None


def load_cell(ref: str | Path, *, records: bool = True) -> Cell:
    """A cell folder with DONE (a cell named by MLflow run id: :func:`rag_bench.tracking.download.load_cell_or_run`).

    ``records=False`` defers reading records.parquet to the first use of :attr:`Cell.records`
    (listing many cells for a leaderboard); by default it is read, and checked, now.
    """
    path = Path(ref)
    if not (path / "DONE").is_file():  # what the path is instead (an experiment, an unfinished cell, ...)
        found = folder_problem(path, "cell")
        raise FolderError(found or Problem(str(path), 0, "cell", "is no cell folder (no DONE)",
                                           "pass experiments/<experiment>/<cell_id> or a 32-character run id"))
    _require(path, ("config.yaml", "metrics.json", "records.parquet"))
    return read_cell(path, records=records)


def _require(path: Path, names: tuple[str, ...]) -> None:
    missing = [f for f in names if not (path / f).is_file()]
    if missing:
        raise DataError(Problem(str(path), 0, missing[0], f"cell folder lacks {', '.join(missing)}",
                                "re-run the cell (delete the folder first)"))


def read_cell(path: Path, *, records: bool = True) -> Cell:
    """A cell folder's files as a :class:`Cell`, finished (DONE: its body read) or not (a halving
    round's, marked PARTIAL: no DONE body); DataError naming the file when one is missing or broken
    (records.parquet read on first use when ``records`` is False)."""
    _require(path, ("config.yaml", "metrics.json", *(("records.parquet",) if records else ())))
    config = _read(path / "config.yaml", lambda t: yaml.load(t, Loader=_YAML_LOADER) or {}, dict)
    config, metrics = upgrade(path, config, _read(path / "metrics.json", json.loads, dict))
    done = read_done(path) if (path / "DONE").is_file() else {}
    return Cell(path.name, path, config, metrics, done, [_read_records(path)] if records else [])


def _read_records(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path / "records.parquet")
    except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
        raise DataError(Problem(str(path / "records.parquet"), 0, "records", f"unreadable parquet ({exc})",
                                "re-run the cell (delete the folder first)")) from exc


def _read(file: Path, parse: Any, kind: type) -> Any:
    """Parse one small cell file; any problem is a DataError naming the file (and line when known)."""
    try:
        value = parse(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
        line = getattr(exc, "lineno", 0) or getattr(getattr(exc, "problem_mark", None), "line", -1) + 1
        raise DataError(Problem(str(file), line, file.name, f"unreadable ({str(exc).splitlines()[0][:200]})",
                                "re-run the cell (delete the folder first)")) from exc
    if not isinstance(value, kind):
        raise DataError(Problem(str(file), 1, file.name, f"must hold a mapping, got {type(value).__name__}",
                                "re-run the cell (delete the folder first)"))
    return value


def experiment_cells(experiment_dir: str | Path, *, records: bool = True) -> list[Cell]:
    """Every finished cell of an experiment folder, in folder order (``records``: see :func:`load_cell`)."""
    root = Path(experiment_dir)
    if not root.is_dir():
        raise FolderError(folder_problem(root, "experiment") or Problem(str(root), 0, "", "is not a folder", ""))
    return [load_cell(p.parent, records=records) for p in sorted(root.glob("*/DONE"))]


def one_dataset(cells: list[Cell], fingerprint: str | None = None) -> tuple[list[Cell], str]:
    """The cells of one dataset version, and a notice when the list held several.

    A table that ranks cells computed on different versions of a dataset (a question edited,
    a document added: a new fingerprint, so new cells beside the old ones in the same experiment
    folder) compares numbers that measure different things. ``fingerprint`` (a prefix suffices)
    picks the version; by default it is the version of the cell finished last (its DONE is the
    newest): after an edit and a re-run, the edited dataset's cells. The notice (empty when there
    is one version) names every version with its number of cells and says how to see another one.
    Cells whose fingerprint is null (not known: :class:`MetricsJson`) form a version of their own,
    ``unknown``.
    """
    def fp(c: Cell) -> str:
        return c.dataset_fingerprint or "unknown"

    def count(n: int) -> str:
        return f"{n} cell{'' if n == 1 else 's'}"

    versions: dict[str, list[Cell]] = {}
    for c in cells:
        versions.setdefault(fp(c), []).append(c)
    if fingerprint is not None:
        chosen = [v for v in versions if v.startswith(fingerprint)]
        if len(chosen) != 1:
            listing = ", ".join(f"{v} ({count(len(cs))})" for v, cs in versions.items())
            raise DataError(Problem(str(cells[0].path.parent) if cells else "", 0, "--fingerprint",
                                    f"{fingerprint!r} {'names several' if chosen else 'is not the'} dataset "
                                    f"version{'s' if chosen else ''} of these cells", f"pass one of: {listing}"))
        return versions[chosen[0]], ""
    if len(versions) <= 1:
        return cells, ""

    def finished(c: Cell) -> float:
        try:
            return (c.path / "DONE").stat().st_mtime
        except OSError:
            return 0.0

    newest = fp(max(cells, key=finished))
    others = [v for v in versions if v != newest]
    listing = "; ".join(f"{v} ({count(len(versions[v]))}{', finished last: shown' if v == newest else ''})"
                        for v in [newest, *others])
    notice = (f"warning: {cells[0].path.parent} holds cells of {len(versions)} dataset versions (fingerprints: "
              f"{listing}); their numbers are not comparable, so only the {count(len(versions[newest]))} of "
              f"{newest} {'is' if len(versions[newest]) == 1 else 'are'} shown -- fix: pass --fingerprint {others[0]} "
              "to see the other version, or delete the folders of the version you no longer need (or give each "
              "version its own experiment.name)")
    return versions[newest], notice



# ---------------------------------------------------------------------------------------------
# What a folder given to a command is: the commands that take an experiment folder (leaderboard,
# report, status, compare EXPERIMENT) and those that take a cell (gate, export, compare A B) say
# what they were given instead, and the command that fits it.

FOLDER_KINDS = ("cell", "unfinished cell", "experiment", "output root", "missing", "file", "nothing")
_RUN_ID_SHAPE = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class Folder:
    """What a path is to rag_bench (:func:`folder_kind`): ``kind`` is one of :data:`FOLDER_KINDS`.
    ``cells``/``unfinished``: an experiment folder's finished cells and cell folders without DONE;
    ``experiments``: an output root's experiment folders (names)."""

    path: Path
    kind: str
    cells: int = 0
    unfinished: int = 0
    experiments: tuple[str, ...] = ()


def _subfolders(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _swept(path: Path) -> bool:
    """A sweep ran here: Hydra's ``.hydra`` records (a local sweep) or submitit's ``.submitit`` job
    folders (a cluster sweep), even before its first cell is done."""
    return (path / ".hydra").is_dir() or (path / ".submitit").is_dir()


def _written_cell(path: Path) -> bool:
    """A cell folder's files are there (finished or not)."""
    return any((path / f).is_file() for f in ("DONE", *FILES))


def folder_kind(path: str | Path) -> Folder:
    """What ``path`` is: a ``cell`` (holds DONE), an ``unfinished cell`` (a cell's files without
    DONE: its sweep stopped, or is still running it), an ``experiment`` (holds cell folders, or
    the ``.hydra``/``.submitit`` folder a sweep writes), an ``output root`` (holds experiment folders, or the
    sweeps' ``mlflow.db``), ``missing``, a ``file``, or ``nothing`` rag_bench wrote."""
    p = Path(path)
    if not p.exists():
        return Folder(p, "missing")
    if not p.is_dir():
        return Folder(p, "file")
    if is_done(p):
        return Folder(p, "cell")
    if _written_cell(p):
        return Folder(p, "unfinished cell")
    subs = _subfolders(p)
    done = sum(is_done(s) for s in subs)
    partial = sum(not is_done(s) and _written_cell(s) for s in subs)
    if done or partial or _swept(p):
        return Folder(p, "experiment", done, partial)
    experiments = tuple(s.name for s in subs if _swept(s) or any(_written_cell(c) for c in _subfolders(s)))
    if experiments or (p / "mlflow.db").is_file():
        return Folder(p, "output root", experiments=experiments)
    return Folder(p, "nothing")


class FolderError(DataError):
    """A command was given a path of the wrong kind: the message, one line, says what the path is
    and the command that fits (``.problems`` holds it as a :class:`~rag_bench.errors.Problem`)."""

    def __init__(self, problem: Problem) -> None:
        self.problems = [problem]
        RagBenchError.__init__(self, f"{problem.file} {problem.message}" + (f" -- fix: {problem.hint}" if problem.hint
                                                                               else ""))


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _listing(names: tuple[str, ...] | list[str], most: int = 6) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def folder_problem(path: str | Path, takes: str, command: str = "", *, experiment_fix: str = "",
                   finished: bool = True) -> Problem | None:
    """None when ``path`` is what the command takes (``takes``: ``cell``, ``experiment`` or
    ``cell or experiment``; a cell command also takes an MLflow run id); else the problem, saying
    what the path is and the command that fits. ``command``: the command's name for the fix
    (``leaderboard``); ``experiment_fix``: how the command picks a cell of an experiment folder
    (``add --cell best``), for a cell command given one; ``finished=False``: an experiment folder
    without finished cells will do (``status`` of a sweep that has not finished one)."""
    f = folder_kind(path)
    takes_ = takes.split(" or ")
    asked = _Asked(f, command or "this command", f"rag-bench {command}" if command else "the command",
                   "cell" in takes_, "experiment" in takes_, experiment_fix)
    if f.kind == "cell":
        if asked.wants_cell:
            return None
        return asked.problem(f"is a cell folder: {asked.name} takes its experiment folder, {f.path.parent}",
                             f"{asked.run} {f.path.parent}")
    if f.kind == "experiment":
        return _experiment_problem(asked, finished)
    if f.kind == "unfinished cell":
        p, name, wants_cell = f.path, asked.name, asked.wants_cell
        return asked.problem("is an unfinished cell folder (no DONE: its sweep stopped, or is still running it)"
                             + (f": {name} takes its experiment folder, {p.parent}" if not wants_cell else ""),
                             (f"{asked.run} {p.parent} reads its finished cells; " if not wants_cell else "")
                             + "run the sweep's command again (it redoes unfinished cells); `rag-bench status "
                             f"{p.parent}` shows each cell's state")
    if f.kind == "output root":
        return _output_root_problem(asked)
    if f.kind == "file":
        if f.path.name in (*FILES, "DONE", "failures.csv"):
            folder = f.path.parent
            fits = folder if asked.wants_cell else folder.parent
            return asked.problem(f"is a file of the cell folder {folder}: {asked.name} takes {asked.wanted}",
                                 f"{asked.run} {fits}")
        return asked.problem(f"is a file, not a folder: {asked.name} takes {asked.wanted}", asked.near())
    if f.kind == "missing":
        if _RUN_ID_SHAPE.match(str(path)):
            if asked.wants_cell:
                return None  # an MLflow run id: looked up in the tracking store
            return asked.problem(f"is no folder but looks like an MLflow run id (one cell): {asked.name} takes "
                                 f"{asked.wanted}", "pass the experiment folder the run's cell is in, e.g. "
                                 "experiments/<experiment.name>")
        return asked.problem("does not exist", asked.near())
    return asked.problem(f"holds no cell folder (folders with DONE) and no experiment folder: {asked.name} takes "
                         f"{asked.wanted}", asked.near())


@dataclass(frozen=True)
class _Asked:
    """What :func:`folder_problem` was asked: the folder found, the command's name and how to run it,
    whether it takes a cell and/or an experiment folder, and how it picks a cell of an experiment."""

    found: Folder
    name: str
    run: str
    wants_cell: bool
    wants_experiment: bool
    experiment_fix: str

    @property
    def wanted(self) -> str:
        """What the command takes, in words."""
        return " or ".join(("a cell folder (or an MLflow run id)",) * self.wants_cell
                           + ("an experiment folder",) * self.wants_experiment)

    def problem(self, message: str, hint: str) -> Problem:
        return Problem(str(self.found.path), 0, self.found.kind, message, hint)

    def near(self) -> str:
        """The fix for a path that holds nothing the command takes (:func:`_near`)."""
        return _near(self.found.path, self.wanted, self.run if self.wants_experiment else '')


def _experiment_problem(asked: _Asked, finished: bool) -> Problem | None:
    """:func:`folder_problem` of an experiment folder: fine for a command that takes one (unless it has
    no finished cell and ``finished``), else the cell to pass."""
    f, p = asked.found, asked.found.path
    if not (asked.wants_experiment or f.cells == 0):
        return asked.problem(f"is an experiment folder ({_count(f.cells, 'finished cell')}): {asked.name} takes "
                             "one cell", asked.experiment_fix or f"pass one of its cell folders, e.g. "
                             f"{p / _first_done(p)}")
    if f.cells or (asked.wants_experiment and not finished):
        return None
    if f.unfinished:
        return asked.problem(f"is an experiment folder whose {_count(f.unfinished, 'cell folder')} "
                             f"{'is' if f.unfinished == 1 else 'are all'} unfinished (no DONE: the sweep stopped, or "
                             "is still running)", f"run the sweep's command again (it redoes unfinished cells); "
                             f"`rag-bench status {p}` shows each cell's state")
    return asked.problem("is an experiment folder without cell folders (its sweep wrote no cell: every cell failed, or "
                         "it has not finished one yet)", f"`rag-bench status {p}` shows its jobs and cells; see "
                         f"{p / '.hydra' / 'rag_bench.log'} and run the sweep's command again")


def _output_root_problem(asked: _Asked) -> Problem:
    """:func:`folder_problem` of an output root: the experiment folder (or its cell) to pass instead."""
    f, p, name, wanted = asked.found, asked.found.path, asked.name, asked.wanted
    if not f.experiments:
        return asked.problem(f"is an output root (it holds the sweeps' mlflow.db, no experiment folder): {name} takes "
                             f"{wanted}", "run a sweep first (rag-bench run -m ...): its cells land in "
                             "<output.root>/<experiment.name>/")
    target = p / f.experiments[0]
    held = f"is an output root holding the experiment folders {_listing(f.experiments)}"
    if asked.wants_experiment:
        return asked.problem(f"{held}: {name} takes one of them", f"{asked.run} {target}")
    if asked.experiment_fix.startswith("add "):  # the command picks a cell of an experiment folder itself
        return asked.problem(f"{held}: {name} takes a cell folder (or an MLflow run id)",
                             f"{asked.run} {target} {asked.experiment_fix[4:]}")
    return asked.problem(f"{held}: {name} takes {wanted}", f"pass a cell folder of one of them, e.g. "
                         f"{target / _first_done(target)}")


def _first_done(experiment: Path) -> str:
    """The name of an experiment folder's first finished cell (``<cell_id>`` when none)."""
    return next((s.name for s in _subfolders(experiment) if is_done(s)), "<cell_id>")


def _near(p: Path, wanted: str, run: str = "") -> str:
    """The fix for a path that is not there (or holds nothing of rag_bench): a folder of the same
    parent with a close name, what the nearest existing folder holds, or how cells come to be.
    ``run``: the command, when it takes an experiment folder (the fix then runs it on one)."""
    import difflib

    parent = p.parent
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent
    if parent.is_dir():
        names = [s.name for s in _subfolders(parent) if s.name != p.name]
        close = difflib.get_close_matches(p.name, names, n=1) if p.parent == parent and not p.exists() else []
        if close:
            return f"did you mean {parent / close[0]}?"
        here = folder_kind(parent)
        if here.kind == "output root" and here.experiments:
            if run:
                return f"{run} {parent / here.experiments[0]} ({parent} holds {_listing(here.experiments)})"
            return f"pass {wanted}; {parent} holds the experiment folders {_listing(here.experiments)}"
        if here.kind == "experiment" and here.cells:
            if run:
                return f"{run} {parent} (an experiment folder: {_count(here.cells, 'finished cell')})"
            return f"pass {wanted}; {parent} is an experiment folder ({_count(here.cells, 'finished cell')})"
    return (f"pass {wanted}: a sweep (rag-bench run -m ...) writes its cells to <output.root>/<experiment.name>/<cell_id>/"
            f" (default {DEFAULT_OUTPUT_ROOT}/)")


def check_folder(path: str | Path, takes: str, command: str = "", *, experiment_fix: str = "",
                 finished: bool = True) -> Folder:
    """:func:`folder_kind` of ``path``, or :class:`FolderError` when the command does not take it
    (:func:`folder_problem`)."""
    found = folder_problem(path, takes, command, experiment_fix=experiment_fix, finished=finished)
    if found is not None:
        raise FolderError(found)
    return folder_kind(path)
