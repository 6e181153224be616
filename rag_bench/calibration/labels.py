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
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.data.problems import ProblemLog, check_id, read_jsonl

MEASURES = ("correct", "faithfulness")
CORRECT, FAITHFULNESS = MEASURES  # what a person labels (compared with generation/correct, judge_faithfulness)
FIELDS = ("qid", "answer_sha256", "cell", "measure", "value", "scale", "labeller", "note")
_SHA = re.compile(r"[0-9a-f]{64}")


def answer_digest(answer: str) -> str:
    """The SHA-256 of an answer's text (UTF-8), as labels.jsonl's ``answer_sha256``."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


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

    @property
    def score(self) -> float:
        """The value on [0, 1] (a grade divided by its scale)."""
        return self.value / self.scale

    def applies_to(self, cell_id: str, qid: str, answer: str) -> bool:
        """Whether this label judges ``answer`` given by ``cell_id`` to question ``qid``."""
        if qid != self.qid or (self.cell is not None and self.cell != cell_id):
            return False
        return self.answer_sha256 is None or self.answer_sha256 == answer_digest(answer)


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
    if cell is not None:
        check_id(cell, path, lineno, "cell", log, "cell id")
    note = obj.get("note", "")
    if not isinstance(note, str):
        log.add(path, lineno, "note", f"note must be text, got {type(note).__name__}", "quote it")
    value = _value(obj, path, lineno, log)
    if len(log.problems) > before or value is None or qid is None:
        return None
    return Label(qid=qid, measure=str(measure), value=value[0], scale=value[1], labeller=str(labeller).strip(),
                 answer_sha256=digest, cell=cell, note=str(note), line=lineno)


def load_labels(path: str | Path) -> list[Label]:
    """Every label of the file, or a DataError listing every problem (exit 2)."""
    path = Path(path)
    log = ProblemLog(path.parent)
    if not path.is_file():
        log.add(path, 0, "", "no such labels file", "pass the labels.jsonl that `rag-bench label` downloads")
        log.raise_if_any("labels")
    labels: list[Label] = []
    seen: dict[tuple[Any, ...], int] = {}
    for lineno, obj in read_jsonl(path, log):
        label = _label(obj, path, lineno, log)
        if label is None:
            continue
        key = (label.qid, label.measure, label.labeller, label.answer_sha256, label.cell)
        if key in seen:
            log.add(path, lineno, "labeller", f"{label.labeller} labelled this answer's {label.measure} already "
                    f"on line {seen[key]}", "keep one line per labeller, answer and measure")
            continue
        seen[key] = lineno
        labels.append(label)
    if not labels and not log.problems:
        log.add(path, 0, "", "no labels in the file", "label some answers first (rag-bench label CELL)")
    log.raise_if_any("labels")
    return labels
