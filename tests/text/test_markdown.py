"""rag_bench.text.markdown: what a line opens (line_kind), with its shortcut for a line that starts with a letter."""

from __future__ import annotations

import random

from rag_bench.text import markdown


def _by_regexes(line: str) -> str:
    """line_kind as first written: each regex in turn (before the shortcut of issue 57)."""
    if markdown._FENCE.match(line):
        return "fence"
    if not line.strip():
        return "blank"
    if markdown._HEADING.match(line.rstrip("\r")):
        return "heading"
    if markdown._TABLE.match(line):
        return "table"
    if markdown._LIST.match(line):
        return "list"
    return "text"


def test_a_line_starting_with_a_letter_is_text_as_the_regexes_say() -> None:
    # The claim judge splits every answer and claim into sentences, one short line each: a line that
    # starts with an ASCII letter is "text" without trying the five regexes (issue 57).
    pieces = ["Rollo", "a", "Z", "#", "## ", "|", "- ", "* ", "+ ", "1. ", "2) ", "```", "~~~", " ", "\t", "\r",
              "é", "Ω", "led them.", "x|y", "#tag", "1", "-", "\u00a0"]
    rng = random.Random(57)
    lines = ["".join(rng.choices(pieces, k=rng.randint(0, 6))) for _ in range(5000)]
    lines += ["Rollo led them.", "A | b |", "Rollo ```", "ok - then", "# Heading", "  - item", "3. Call"]
    for line in lines:
        assert markdown.line_kind(line) == _by_regexes(line), line
    assert markdown.line_kind("Rollo | led | them") == "text"  # a table row starts with "|"
