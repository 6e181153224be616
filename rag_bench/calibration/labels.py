"""``labels.jsonl``: people's judgments of answers, validated like every input (file:line, field, fix).

One JSON object per line::

    {"qid": "q001", "answer_sha256": "9f2c…", "cell": "578a9f40275d", "measure": "correct",
     "value": 1, "labeller": "author-a", "note": "45 days, as the policy says"}

- ``qid``: the question's id in the dataset.
- which answer it judges: ``answer_sha256`` (:func:`answer_digest` of the answer text: the label
  follows that exact answer to every cell that gave it, so labels survive new cells and cell-id
  changes) and/or ``cell`` (a cell id: the label applies to that cell's answer only; with both,
  the cell's answer must still have that digest, else the label is stale and is not used).
- ``measure``: what the person judged — ``correct`` (the answer answers the question right; a
  refusal of an unanswerable question is correct) or ``faithfulness`` (everything the answer says
  is supported by the passages it was given; a refusal is faithful).
- ``value``: ``0``/``1`` (``false``/``true``), or a grade ``0..scale`` with ``"scale": G``
  (graded labels: quadratically weighted kappa and Spearman instead of kappa).
- ``labeller``: who labelled (two labellers on the same items give the ceiling a measure can reach).
- ``note``: optional free text.
- ``sample``: written by the labelling page: ``{"cell": ID, "seed": S}`` (and ``"stratify": COLUMN``)
  -- the answer was shown in the page's draw of that cell's answers with that seed
  (:mod:`rag_bench.calibration.sampling`); the gate uses a PPI mean only from such labels.

One line per labeller, answer and measure: a line naming an answer another line of the same
labeller and measure already names (the same digest, or the same cell, where the other key agrees
or is absent) is refused here; one naming it by cell where the other names it by digest is refused
where the cell's answer turns out to be that digest (:func:`check_conflicts`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.data.problems import ProblemLog, check_id, check_text, read_jsonl
from rag_bench.errors import DataError, Problem

MEASURES = ("correct", "faithfulness")
CORRECT, FAITHFULNESS = MEASURES  # what a person labels (compared with generation/correct, judge_faithfulness)
FIELDS = ("qid", "answer_sha256", "cell", "measure", "value", "scale", "labeller", "note", "sample")
SAMPLE_FIELDS = ("cell", "seed", "stratify")
_SHA = re.compile(r"[0-9a-f]{64}")


def answer_digest(answer: str) -> str:
    """The SHA-256 of an answer's text (UTF-8), as labels.jsonl's ``answer_sha256``."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


EMPTY_DIGEST = answer_digest("")


def label_digest(answer: Any, error: Any = None) -> str | None:
    """The digest a label names a cell's answer by, or None when there is no answer to label: no
    text (a cell without a generator, a failed generation) or a generation ``error``. The empty
    text is every failed generation's, so a label on it would follow to all of them."""
    if answer is None or (isinstance(answer, float) and answer != answer) or not str(answer).strip():
        return None
    if error is not None and not (isinstance(error, float) and error != error) and str(error).strip():
        return None
    return answer_digest(str(answer))


@dataclass(frozen=True)
class Sample:
    """How a labelled answer was chosen: shown in the labelling page's draw of ``cell``'s answers
    with ``seed``, uniform, or stratified by the records column ``stratify``."""

    cell: str
    seed: int
    stratify: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The ``sample`` field of a label line."""
        return {"cell": self.cell, "seed": self.seed, **({"stratify": self.stratify} if self.stratify else {})}


@dataclass(frozen=True)
class Label:
    """One person's judgment of one answer."""

    qid: str
    measure: str
    value: int
    labeller: str
    scale: int = 1  # 1: binary; G: a grade 0..G
    answer_sha256: str | None = None
    cell: str | None = None
    note: str = ""
    line: int = 0
    path: str = ""  # the labels file, as messages show it
    sample: Sample | None = None

    @property
    def where(self) -> str:
        """``file:line`` of the label."""
        return f"{self.path}:{self.line}"

    @property
    def score(self) -> float:
        """The value on [0, 1] (a grade divided by its scale)."""
        return self.value / self.scale

    def applies_to(self, cell_id: str, qid: str, digest: str | None) -> bool:
        """Whether this label judges the answer ``cell_id`` gave to question ``qid``, named by its
        :func:`label_digest` ``digest`` (None: no answer, which no label judges)."""
        if digest is None or qid != self.qid or (self.cell is not None and self.cell != cell_id):
            return False
        return self.answer_sha256 is None or self.answer_sha256 == digest


def _value(obj: dict[str, Any], path: Path, lineno: int, log: ProblemLog) -> tuple[int, int] | None:
    scale = obj.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= 100:
        log.add(path, lineno, "scale", f"scale must be an integer 1..100, got {scale!r}",
                "omit it for yes/no labels, or give the top grade (e.g. 4 for grades 0-4)")
        return None
    value = obj.get("value")
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= scale:
        log.add(path, lineno, "value", f"value must be an integer 0..{scale}, got {value!r}",
                "0/1 (or false/true) for yes/no; a grade 0..scale with \"scale\" for graded labels")
        return None
    return value, scale


def _label(obj: dict[str, Any], path: Path, lineno: int, log: ProblemLog) -> Label | None:
    before = len(log.problems)
    for key in obj:
        if key not in FIELDS:
            log.add(path, lineno, key, f"unknown field {key!r}", f"fields are: {', '.join(FIELDS)}")
    qid = check_id(obj.get("qid"), path, lineno, "qid", log, "question id")
    measure = obj.get("measure")
    if measure not in MEASURES:
        log.add(path, lineno, "measure", f"measure must be one of {', '.join(MEASURES)}, got {measure!r}",
                "label what a person can judge: correct or faithfulness")
    labeller = obj.get("labeller")
    if not isinstance(labeller, str) or not labeller.strip():
        log.add(path, lineno, "labeller", "labeller missing or empty", 'add "labeller": "your name or initials"')
    digest, cell = obj.get("answer_sha256"), obj.get("cell")
    if digest is None and cell is None:
        log.add(path, lineno, "answer_sha256", "no answer named: give answer_sha256 and/or cell",
                "answer_sha256 is the SHA-256 of the answer text (rag-bench label writes it)")
    if digest is not None and (not isinstance(digest, str) or not _SHA.fullmatch(digest)):
        log.add(path, lineno, "answer_sha256", f"not 64 lower-case hex digits: {str(digest)[:80]!r}",
                "copy it from the labelling page's download, or hashlib.sha256(answer.encode()).hexdigest()")
    elif digest == EMPTY_DIGEST:
        log.add(path, lineno, "answer_sha256", "names the empty answer, which every failed generation has: the "
                "label would judge all of them", "label answers with text; drop this line")
    if cell is not None:
        check_id(cell, path, lineno, "cell", log, "cell id")
    note = obj.get("note", "")
    if not isinstance(note, str):
        log.add(path, lineno, "note", f"note must be text, got {type(note).__name__}", "quote it")
    for field, text in (("labeller", labeller), ("note", note)):
        if isinstance(text, str):
            check_text(text, path, lineno, field, log)
    sample = _sample(obj.get("sample"), path, lineno, log) if "sample" in obj else None
    value = _value(obj, path, lineno, log)
    if len(log.problems) > before or value is None or qid is None:
        return None
    return Label(qid=qid, measure=str(measure), value=value[0], scale=value[1], labeller=str(labeller).strip(),
                 answer_sha256=digest, cell=cell, note=str(note), line=lineno, path=log.rel(path), sample=sample)


def _sample(raw: Any, path: Path, lineno: int, log: ProblemLog) -> Sample | None:
    hint = 'as the labelling page writes it: {"cell": "<cell id>", "seed": 0} (or drop the field)'
    if not isinstance(raw, dict):
        log.add(path, lineno, "sample", f"sample must be an object, got {type(raw).__name__}", hint)
        return None
    for key in raw:
        if key not in SAMPLE_FIELDS:
            log.add(path, lineno, f"sample.{key}", f"unknown field {key!r}", f"fields are: {', '.join(SAMPLE_FIELDS)}")
    cell = check_id(raw.get("cell"), path, lineno, "sample.cell", log, "cell id")
    seed, stratify = raw.get("seed"), raw.get("stratify")
    if isinstance(seed, bool) or not isinstance(seed, int):
        log.add(path, lineno, "sample.seed", f"seed must be an integer, got {seed!r}", hint)
        return None
    if stratify is not None and (not isinstance(stratify, str) or not stratify):
        log.add(path, lineno, "sample.stratify", f"stratify must be a records column, got {stratify!r}", hint)
        return None
    return None if cell is None else Sample(cell, seed, stratify)


def _same_answer(a: Label, b: Label) -> bool:
    """Whether two labels (of one labeller, question and measure) certainly judge one answer: the
    same digest where neither names another cell, or the same cell where neither names another digest."""
    cells_agree = a.cell is None or b.cell is None or a.cell == b.cell
    digests_agree = a.answer_sha256 is None or b.answer_sha256 is None or a.answer_sha256 == b.answer_sha256
    return (a.answer_sha256 is not None and a.answer_sha256 == b.answer_sha256 and cells_agree) or \
        (a.cell is not None and a.cell == b.cell and digests_agree)


def check_conflicts(applying: list[Label], cell_id: str) -> None:
    """DataError (exit 2) when one labeller has two of ``applying`` (the labels that judge one answer
    of ``cell_id`` for one measure): one names it by cell, the other by its digest."""
    by: dict[str, Label] = {}
    for lb in applying:
        first = by.setdefault(lb.labeller, lb)
        if first is not lb:
            raise DataError([Problem(lb.path, lb.line, "labeller", f"{lb.labeller} labelled this answer's "
                                     f"{lb.measure} already on line {first.line} ({lb.qid} in cell {cell_id}: there "
                                     f"by {_key(first)}, here by {_key(lb)})",
                                     "keep one line per labeller, answer and measure")], "labels")


def _key(lb: Label) -> str:
    return " and ".join(k for k, v in (("cell", lb.cell), ("answer digest", lb.answer_sha256)) if v is not None)


def load_labels(path: str | Path) -> list[Label]:
    """Every label of the file, or a DataError listing every problem (exit 2)."""
    path = Path(path)
    log = ProblemLog(path.parent)
    if not path.is_file():
        log.add(path, 0, "", "no such labels file", "pass the labels.jsonl that `rag-bench label` downloads")
        log.raise_if_any("labels")
    labels: list[Label] = []
    seen: dict[tuple[str, str, str], list[Label]] = {}
    for lineno, obj in read_jsonl(path, log):
        label = _label(obj, path, lineno, log)
        if label is None:
            continue
        same = seen.setdefault((label.qid, label.measure, label.labeller), [])
        first = next((lb for lb in same if _same_answer(lb, label)), None)
        if first is not None:
            log.add(path, lineno, "labeller", f"{label.labeller} labelled this answer's {label.measure} already "
                    f"on line {first.line}", "keep one line per labeller, answer and measure")
            continue
        same.append(label)
        labels.append(label)
    if not labels and not log.problems:
        log.add(path, 0, "", "no labels in the file", "label some answers first (rag-bench label CELL)")
    log.raise_if_any("labels")
    return labels
