"""The slot planner: which sentences of the parse the drafts are about, the same for every drafter
(templates or a model), deterministic given the seed.

A sentence is a candidate when it holds an answer a person could ask for: a year, a century, a
number with its noun, a name (a capitalised run not opening the sentence) or a definition
(``X is a ...`` at its start). Headings, table rows and sentences under :data:`MIN_WORDS` or over
:data:`MAX_WORDS` words are not. The planner then fills each type's share of ``n``:

- ``factoid``: one candidate sentence and its answer;
- ``multi_hop``: two candidates in two documents that share a name (a question in two parts);
- ``unanswerable``: a near miss from a candidate: its number changed to one the corpus does not
  give in that sentence, or an attribute of one of its names that no passage retrieved for it
  mentions (:data:`ATTRIBUTES`; checked by retrieval in the drafting session);
- ``clarify``: one name in two sentences of different sections that give different years: asking
  for "the year" of it is ambiguous;
- ``follow_up``: two sentences of one section about the same name: the first is the conversation
  so far, the second is asked about with the name replaced by a pronoun.

A type the corpus cannot fill (``multi_hop`` in a one-document corpus) gives its slots to
``factoid``; the run says so.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_bench.domain import Document
from rag_bench.drafting.records import Quote, Settings, Slot
from rag_bench.text.markdown import heading_path_at
from rag_bench.text.sentences import sentence_spans

MIN_WORDS, MAX_WORDS = 6, 60
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
CENTURY = re.compile(r"\b\d{1,2}(?:st|nd|rd|th) century\b")
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*(?:\s*%|\s+(?:[a-z]+))\b")
NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][a-z]+)*\b")
DEFINITION = re.compile(r"^(?:The\s+|A\s+|An\s+)?(?P<term>[A-Z][\w-]*(?:\s+[\w-]+){0,3}?)\s+(?:is|are|was|were)\s+"
                        r"(?P<answer>(?:a|an|the)\s+[^,;:()]{3,80}?)(?=[,;.]|\s+(?:who|which|that)\b)")
# Attributes a near miss asks of a name: things a corpus about history, policies or products rarely
# states; each is kept only when no passage retrieved for the question mentions its word.
ATTRIBUTES = (("population", "What was the population of {e}?"),
              ("budget", "What was the annual budget of {e}?"),
              ("telephone", "What is the telephone number of {e}?"),
              ("email", "What is the email address of {e}?"),
              ("height", "What was the height of {e} in metres?"),
              ("salary", "What salary did {e} receive?"),
              ("website", "What is the website of {e}?"),
              ("employees", "How many employees did {e} have?"))
_FUNCTION = {"The", "A", "An", "In", "On", "At", "By", "For", "From", "To", "Of", "And", "But", "Or", "This", "That",
             "These", "Those", "It", "He", "She", "They", "We", "His", "Her", "Their", "Its", "As", "After",
             "Before", "During", "When", "While", "Although", "However", "With", "Without", "Some", "Many",
             "Most", "All", "One", "Two", "There", "Here", "Since", "Until", "Under", "Over", "Between"}


Free = Callable[..., bool]  # whether these quotes may start a slot (not taken, within the quota)
Take = Callable[[Slot], None]


@dataclass(frozen=True)
class Candidate:
    """A sentence of the parse with one answer span in it (``kind`` of answer) and its names."""

    quote: Quote
    answer: str
    kind: str
    names: tuple[str, ...]
    numbers: tuple[str, ...]


def sentences(doc: Document) -> list[Quote]:
    """The sentences of ``doc``'s parse a question may be drafted from (not headings, table rows or
    code; :data:`MIN_WORDS` to :data:`MAX_WORDS` words)."""
    out = []
    for s, e in sentence_spans(doc.text):
        text = doc.text[s:e]
        if text.lstrip().startswith(("#", "|", "```", "<")) or not MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            continue
        out.append(Quote(doc.doc_id, text, s, e, " > ".join(heading_path_at(doc.sections, s))))
    return out


def names_in(text: str) -> tuple[str, ...]:
    """Capitalised runs of ``text`` that do not open it (a name, not a sentence's first word),
    function words at their start dropped."""
    out = []
    for m in NAME.finditer(text):
        if m.start() == 0:
            continue
        words = m.group().split()
        while words and words[0] in _FUNCTION:
            words = words[1:]
        if words and len(" ".join(words)) > 2:
            out.append(" ".join(words))
    return tuple(dict.fromkeys(out))


def candidates(documents: Sequence[Document]) -> list[Candidate]:
    """Every sentence with an answer, each with the answer the templates prefer: a definition, a year,
    a century, a number, a name."""
    out = []
    for doc in documents:
        for q in sentences(doc):
            names = names_in(q.text)
            numbers = tuple(dict.fromkeys(YEAR.findall(q.text)))
            found = None
            d = DEFINITION.search(q.text)
            if d:
                found = (d.group("answer").strip(), "term")
            elif (c := CENTURY.search(q.text)):
                found = (c.group(), "century")
            elif numbers:
                found = (numbers[0], "year")
            elif (m := NUMBER.search(q.text)):
                found = (m.group(), "number")
            elif names:
                found = (names[-1], "name")
            if found is not None:
                out.append(Candidate(q, found[0], found[1], names, numbers))
    return out


def counts(settings: Settings) -> dict[str, int]:
    """How many slots of each type: ``n`` split by the shares (largest remainders, ties in type order).

    >>> counts(Settings(10, (("factoid", 0.5), ("unanswerable", 0.25), ("clarify", 0.25))))
    {'factoid': 5, 'unanswerable': 3, 'clarify': 2}
    """
    total = sum(s for _, s in settings.shares)
    exact = [(t, settings.n * s / total) for t, s in settings.shares]
    got = {t: int(x) for t, x in exact}
    rest = settings.n - sum(got.values())
    for t, _ in sorted(exact, key=lambda tx: -(tx[1] - int(tx[1])))[:rest]:
        got[t] += 1
    return got


def _id(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12]


def plan(documents: Sequence[Document], settings: Settings) -> tuple[list[Slot], dict[str, str]]:
    """The slots to draft, in order, and a note per type that got fewer than its share (why)."""
    rng = random.Random(settings.seed)
    cands = candidates(documents)
    rng.shuffle(cands)
    want = counts(settings)
    used: dict[str, int] = defaultdict(int)  # drafts per document (the first quote's)
    taken: set[tuple[str, int]] = set()  # sentences already the subject of a slot
    slots: list[Slot] = []
    notes: dict[str, str] = {}

    def free(*qs: Quote) -> bool:
        if any((q.doc_id, q.start) in taken for q in qs):
            return False
        return settings.per_document is None or used[qs[0].doc_id] < settings.per_document

    def take(slot: Slot) -> None:
        slots.append(slot)
        used[slot.quotes[0].doc_id] += 1
        taken.update((q.doc_id, q.start) for q in slot.quotes)

    makers = {"multi_hop": _multi_hop, "clarify": _clarify, "follow_up": _follow_up, "unanswerable": _unanswerable}
    short = 0
    for kind in ("multi_hop", "clarify", "follow_up", "unanswerable"):  # the pairs first: they are the rarer
        n = want.get(kind, 0)
        if n == 0:
            continue
        made = makers[kind](cands, n, free, take, rng, settings.seed)
        if made < n:
            notes[kind] = f"{made} of {n}: {_why_short(kind, documents)}; the other {n - made} drafted as factoid"
            short += n - made
    n_fact = want.get("factoid", 0) + short
    made = 0
    for c in cands:
        if made >= n_fact:
            break
        if free(c.quote):
            take(Slot(_id(settings.seed, "factoid", c.quote.doc_id, c.quote.start), "factoid", (c.quote,),
                      (c.answer,), (c.kind,)))
            made += 1
    if made < n_fact:
        notes["factoid"] = (f"{made} of {n_fact}: the parse has {len(cands)} sentences with a year, number, name or "
                            "definition" + (f" (and per_document={settings.per_document})"
                                            if settings.per_document else ""))
    return slots, notes


def _why_short(kind: str, documents: Sequence[Document]) -> str:
    if kind == "multi_hop" and len(documents) < 2:
        return "the corpus has one document (a multi-hop question needs evidence in two)"
    return {"multi_hop": "too few pairs of sentences in two documents that share a name",
            "clarify": "too few names with different years in two sections",
            "follow_up": "too few pairs of sentences in one section about the same name",
            "unanswerable": "too few sentences with a name or a number to start a near miss from"}[kind]


def _multi_hop(cands: list[Candidate], n: int, free: Free, take: Take, rng: random.Random, seed: int) -> int:
    by_name: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        for name in c.names:
            by_name[name].append(c)
    made = 0
    for name in sorted(by_name, key=lambda k: (rng.random(), k)):
        group = by_name[name]
        pair = next(((a, b) for a in group for b in group if a.quote.doc_id < b.quote.doc_id
                     and a.answer != name and b.answer != name and free(a.quote, b.quote)), None)
        if pair is None:
            continue
        a, b = pair
        take(Slot(_id(seed, "multi_hop", a.quote.doc_id, a.quote.start, b.quote.doc_id, b.quote.start), "multi_hop",
                  (a.quote, b.quote), (a.answer, b.answer), (a.kind, b.kind), entity=name))
        made += 1
        if made >= n:
            break
    return made


def _clarify(cands: list[Candidate], n: int, free: Free, take: Take, rng: random.Random, seed: int) -> int:
    by_name: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        if c.kind == "year":
            for name in c.names:
                by_name[name].append(c)
    made = 0
    for name in sorted(by_name, key=lambda k: (rng.random(), k)):
        group = by_name[name]
        pair = next(((a, b) for a in group for b in group if (a.quote.doc_id, a.quote.section)
                     < (b.quote.doc_id, b.quote.section) and a.answer != b.answer and free(a.quote, b.quote)), None)
        if pair is None:
            continue
        a, b = pair
        take(Slot(_id(seed, "clarify", a.quote.doc_id, a.quote.start, b.quote.doc_id, b.quote.start), "clarify",
                  (a.quote, b.quote), (a.answer, b.answer), ("year", "year"), entity=name))
        made += 1
        if made >= n:
            break
    return made


def _follow_up(cands: list[Candidate], n: int, free: Free, take: Take, rng: random.Random, seed: int) -> int:
    by_key: dict[tuple[str, str, str], list[Candidate]] = defaultdict(list)
    for c in cands:
        for name in c.names:
            by_key[(c.quote.doc_id, c.quote.section, name)].append(c)
    made = 0
    for key in sorted(by_key, key=lambda k: (rng.random(), k)):
        group = sorted(by_key[key], key=lambda c: c.quote.start)
        name = key[2]
        pair = next(((a, b) for i, a in enumerate(group) for b in group[i + 1:]
                     if b.answer != name and name not in b.answer and free(a.quote, b.quote)), None)
        if pair is None:
            continue
        a, b = pair
        take(Slot(_id(seed, "follow_up", a.quote.doc_id, a.quote.start, b.quote.start), "follow_up",
                  (b.quote, a.quote), (b.answer,), (b.kind,), entity=name))
        made += 1
        if made >= n:
            break
    return made


def changed_number(text: str, rng: random.Random) -> str:
    """``text`` (a year, a century, a number with its noun) with its number changed, an ordinal's
    suffix made to fit.

    >>> changed_number("10th century", random.Random(0)), changed_number("1066", random.Random(0))
    ('13th century', '1069')
    """
    m = re.search(r"\d+", text)
    assert m is not None
    n = int(m.group()) + rng.choice((2, 3, 7) if int(m.group()) < 30 else (-3, -2, 2, 3, 7))
    rest = text[m.end():]
    if rest[:2] in ("st", "nd", "rd", "th"):
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        rest = suffix + rest[2:]
    return text[:m.start()] + str(n) + rest


def _unanswerable(cands: list[Candidate], n: int, free: Free, take: Take, rng: random.Random, seed: int) -> int:
    made = 0
    # sentences with a number and a name first (stable: the seed's order within each group)
    for c in sorted(cands, key=lambda c: not (c.names and any(rx.search(c.quote.text) for rx in (YEAR, CENTURY, NUMBER)))):
        if made >= n:
            break
        if not free(c.quote):
            continue
        number = next((m.group() for rx in (YEAR, CENTURY, NUMBER) if (m := rx.search(c.quote.text))), None)
        names = [m for m in c.names if number is not None and number not in m and m not in number]
        if number is not None and names and rng.random() < 0.8:
            # the sentence's number (a year first) changed and the name nearest to it blanked: the blank
            # then has no answer in the corpus (SQuAD 2.0's near misses perturb answerable questions so)
            at = c.quote.text.find(number)
            name = min(names, key=lambda m: abs(c.quote.text.find(m) - at))
            take(Slot(_id(seed, "unanswerable", c.quote.doc_id, c.quote.start), "unanswerable", (c.quote,),
                      (name,), ("name",), swap=(number, changed_number(number, rng))))
            made += 1
            continue
        # a name of two words or more when there is one (one capitalised word is often an adjective: "Norman")
        names = [m for m in c.names if len(m.split()) > 1] or list(c.names)
        if names:
            name = rng.choice(names)
            attribute = rng.randrange(len(ATTRIBUTES))
            take(Slot(_id(seed, "unanswerable", c.quote.doc_id, c.quote.start), "unanswerable", (c.quote,),
                      (c.answer,), (c.kind,), entity=name, attribute=ATTRIBUTES[attribute][0]))
            made += 1
    return made
