"""SQuAD 2.0 answer matching, exactly as its official evaluation script computes it.

The script ("Official evaluation script for SQuAD version 2.0", Rajpurkar, Jia and Liang, 2018)
normalises an answer by lower-casing (``str.lower``), *deleting* every ASCII punctuation character
(``string.punctuation``: ``"days—after"`` keeps its em dash, ``"co-op"`` becomes ``coop``),
removing the words a/an/the and collapsing whitespace. Exact match is equality of normalised
texts; F1 is over the normalised whitespace tokens, with multiset overlap. When either side has no
token, EM = F1 = 1 if both are empty, else 0: an unanswerable question's gold is the empty answer,
so only an empty prediction (no answer) scores on it. A question's score is the maximum over its
gold answers; gold answers that normalise to nothing are dropped, and a question left without one
is scored against the empty answer.

``rag-bench score-answers GOLD PRED`` (:func:`main`) is that script: SQuAD-layout gold, a
``{question_id: answer}`` predictions file, the script's keys and values (checked against the
script's own outputs in tests/metrics/test_squad.py). Text is scored as given: a citation marker ``[1]`` is
punctuation and a token (``"France [1]"`` → ``france 1``), as the script scores it. Inside a cell
(:func:`rag_bench.metrics.generation.match_answer`) the ``[n]`` markers of our answer contract are
stripped first: they are the answer's format, not its text.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import string
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.errors import DataError, Problem

__all__ = ["GoldQuestion", "evaluate", "exact", "f1", "main", "normalize_answer", "read_gold", "read_predictions",
           "score"]

_DELETE_PUNCT = str.maketrans("", "", string.punctuation)  # each ASCII punctuation character deleted
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


@functools.lru_cache(maxsize=65_536)  # pure (text in, text out): each cell normalises the same answers again
def normalize_answer(text: str) -> str:
    """The official script's ``normalize_answer``: lower-case, ASCII punctuation deleted (not
    replaced by a space), articles a/an/the removed as whole words, whitespace collapsed.

    >>> normalize_answer("The  co-op's fee: $1,250.00!")
    'coops fee 125000'
    >>> normalize_answer("“Théâtre” — an opera")
    '“théâtre” — opera'
    """
    text = text.lower().translate(_DELETE_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def exact(gold: str, prediction: str) -> int:
    """1 when the normalised texts are equal, else 0 (the script's ``compute_exact``)."""
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1(gold: str, prediction: str) -> float:
    """Token F1 of the normalised texts (the script's ``compute_f1``); when either has no token,
    1 if both have none, else 0.

    >>> round(f1("10th and 11th centuries", "in the 10th century"), 4)
    0.2857
    >>> f1("", ""), f1("", "Rollo")
    (1, 0)
    """
    gold_toks, pred_toks = _tokens(gold), _tokens(prediction)
    if not gold_toks or not pred_toks:
        return int(gold_toks == pred_toks)
    same = sum((Counter(gold_toks) & Counter(pred_toks)).values())
    if same == 0:
        return 0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def score(golds: Sequence[str], prediction: str) -> tuple[int, float]:
    """``(exact, f1)`` of one prediction: the maximum over the gold answers that normalise to
    something, or against the empty answer when none does (an unanswerable question).

    >>> score(["10th and 11th centuries", "in the 10th and 11th centuries"], "In the 10th and 11th centuries.")
    (1, 1.0)
    >>> score([], ""), score([], "Rollo"), score(["France"], "")
    ((1, 1), (0, 0), (0, 0))
    """
    kept = [g for g in golds if normalize_answer(g)] or [""]
    return max(exact(g, prediction) for g in kept), max(f1(g, prediction) for g in kept)


@dataclass(frozen=True)
class GoldQuestion:
    """One question of a SQuAD-layout gold file: its id, gold answer texts (none when unanswerable)."""

    qid: str
    answers: tuple[str, ...]

    @property
    def has_answer(self) -> bool:
        """The script's ``qid_to_has_ans``: the question lists a gold answer."""
        return bool(self.answers)


def _load_json(path: Path, what: str, fix: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(Problem(str(path), 0, "", f"{what} file not found", fix)) from None
    except IsADirectoryError:
        raise DataError(Problem(str(path), 0, "", f"{what} is a directory, not a file", fix)) from None
    except UnicodeDecodeError as exc:
        raise DataError(Problem(str(path), 0, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})", fix)) from None
    except json.JSONDecodeError as exc:
        raise DataError(Problem(str(path), exc.lineno, "", f"not JSON: {exc.msg} (column {exc.colno})", fix)) from None


def read_gold(path: str | Path) -> list[GoldQuestion]:
    """The questions of a SQuAD-layout file (``{"data": [{"paragraphs": [{"qas": [{"id", "answers":
    [{"text"}]}]}]}]}``), in file order; DataError naming the file, field and fix otherwise."""
    path = Path(path)
    fix = 'give the SQuAD 2.0 layout: {"version": "v2.0", "data": [{"title": .., "paragraphs": [{"context": .., ' \
          '"qas": [{"id": .., "question": .., "answers": [{"text": .., "answer_start": ..}]}]}]}]}'
    doc = _load_json(path, "gold", fix)
    problems: list[Problem] = []
    out: list[GoldQuestion] = []
    seen: set[str] = set()
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise DataError(Problem(str(path), 0, "data", "missing or not a list of articles", fix))
    for a, article in enumerate(data):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            problems.append(Problem(str(path), 0, f"data[{a}].paragraphs", "missing or not a list", fix))
            continue
        for p, paragraph in enumerate(paragraphs):
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(qas, list):
                problems.append(Problem(str(path), 0, f"data[{a}].paragraphs[{p}].qas", "missing or not a list", fix))
                continue
            for i, qa in enumerate(qas):
                where = f"data[{a}].paragraphs[{p}].qas[{i}]"
                qid = qa.get("id") if isinstance(qa, dict) else None
                answers = qa.get("answers") if isinstance(qa, dict) else None
                if not isinstance(qid, str) or not qid:
                    problems.append(Problem(str(path), 0, f"{where}.id", "missing or not a string", fix))
                    continue
                if not isinstance(answers, list) or not all(
                        isinstance(x, dict) and isinstance(x.get("text"), str) for x in answers):
                    problems.append(Problem(str(path), 0, f"{where}.answers", f"question {qid!r}: not a list of "
                                            '{"text": ..} objects', '"answers": [] for an unanswerable question'))
                    continue
                if qid in seen:
                    problems.append(Problem(str(path), 0, f"{where}.id", f"question id {qid!r} appears twice",
                                            "give every question its own id"))
                    continue
                seen.add(qid)
                out.append(GoldQuestion(qid, tuple(x["text"] for x in answers)))
    if problems:
        raise DataError(problems)
    if not out:
        raise DataError(Problem(str(path), 0, "data", "no question found", fix))
    return out


def read_predictions(path: str | Path, gold: Sequence[GoldQuestion]) -> dict[str, str]:
    """``{question_id: answer}`` (``""`` for no answer) for every question of ``gold``.

    Refused (DataError, every problem listed): not a JSON object, a non-string answer, an id the
    gold does not hold, a question with no prediction. The official script prints ``Missing
    prediction for <id>`` and then fails (a KeyError computing the HasAns/NoAns split), so it gives
    no figure to reproduce for an incomplete file: we name the ids and the fix instead.
    """
    path = Path(path)
    fix = 'give {"question_id": "answer text", ...} with "" for "no answer"'
    preds = _load_json(path, "predictions", fix)
    if not isinstance(preds, dict):
        raise DataError(Problem(str(path), 0, "", f"not a JSON object but {type(preds).__name__}", fix))
    known = {q.qid for q in gold}
    problems = [Problem(str(path), 0, qid, f"answer is {type(v).__name__}, not a string", '"" for no answer')
                for qid, v in preds.items() if not isinstance(v, str)]
    unknown = [qid for qid in preds if qid not in known]
    if unknown:
        problems.append(Problem(str(path), 0, unknown[0], f"{len(unknown)} prediction(s) for question ids the gold "
                                f"file does not hold, e.g. {unknown[:3]}", "check that PRED answers this GOLD file"))
    missing = [q.qid for q in gold if q.qid not in preds]
    if missing:
        problems.append(Problem(str(path), 0, missing[0], f"Missing prediction for {len(missing)} question(s), e.g. "
                                f"{missing[:3]}", 'give every question an answer: "" for no answer'))
    if problems:
        raise DataError(problems)
    return dict(preds)


def evaluate(gold: Sequence[GoldQuestion], predictions: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(aggregate, per_question)`` as the official script computes them: ``exact``, ``f1`` (in
    percent), ``total``, then ``HasAns_*`` and ``NoAns_*`` for the questions with and without gold
    answers (each split only when it has questions); per question ``{"exact": 0|1, "f1": x}``."""
    per_question: dict[str, dict[str, Any]] = {}
    for q in gold:
        e, f = score(q.answers, predictions[q.qid])
        per_question[q.qid] = {"exact": e, "f1": f}

    def block(ids: Sequence[str]) -> dict[str, Any]:
        total = len(ids)
        return {"exact": 100.0 * sum(per_question[i]["exact"] for i in ids) / total,
                "f1": 100.0 * sum(per_question[i]["f1"] for i in ids) / total, "total": total}

    aggregate = block([q.qid for q in gold])
    for name, ids in (("HasAns", [q.qid for q in gold if q.has_answer]),
                      ("NoAns", [q.qid for q in gold if not q.has_answer])):
        if ids:
            aggregate.update({f"{name}_{k}": v for k, v in block(ids).items()})
    return aggregate, per_question


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rag-bench score-answers``."""
    parser = argparse.ArgumentParser(
        prog="rag-bench score-answers",
        description="Score answers exactly as SQuAD 2.0's official evaluation script does: answers lower-cased, "
        "ASCII punctuation deleted, articles a/an/the removed, whitespace collapsed; EM and token F1, each the "
        "maximum over the gold answers; an unanswerable question's gold is the empty answer. Text is scored as "
        "given (a citation marker [1] counts as a token, as in the script).",
        epilog="Prints the script's keys (exact, f1, total, HasAns_*, NoAns_*; percent). Exit status 2 on a "
        "missing or malformed file, a non-string answer, a prediction for an unknown id or a missing prediction.")
    parser.add_argument("gold", metavar="GOLD", help="gold answers in SQuAD 2.0's JSON layout")
    parser.add_argument("predictions", metavar="PRED", help='predictions: {"question_id": "answer", ...}, "" for no '
                        "answer")
    parser.add_argument("--json", action="store_true",
                        help='print {"aggregate": {...}, "per_question": {id: {"exact": 0|1, "f1": x}}}')
    return parser


def main(argv: list[str]) -> int:
    """Run ``rag-bench score-answers`` with ``argv``; 0 on success, 2 on bad input (reason on stderr)."""
    args = build_parser().parse_args(argv)
    try:
        gold = read_gold(args.gold)
        aggregate, per_question = evaluate(gold, read_predictions(args.predictions, gold))
    except DataError as exc:
        print(f"rag-bench score-answers: {exc}", file=sys.stderr)
        return 2
    doc = {"aggregate": aggregate, "per_question": per_question} if args.json else aggregate
    print(json.dumps(doc, indent=2))
    return 0
