"""Locating gold quotes in a parse: exact, normalised, bounded fuzzy, or not at all."""

from __future__ import annotations

from rag_bench.parsing.locate import locate, normalise


def test_exact_quote_is_found_verbatim():
    text = "Intro.\nItems may be returned within thirty days."
    s, e, method = locate(text, "returned within thirty days")
    assert method == "exact" and text[s:e] == "returned within thirty days"


def test_ligature_hyphenation_dash_case_and_whitespace_are_normalised():
    text = "The ﬁrst refund is paid with-\nin   five days \u2013 Card ONLY."
    s, e, method = locate(text, "first refund is paid within five days - card only")
    assert method == "normalised"
    assert text[s:e] == "ﬁrst refund is paid with-\nin   five days \u2013 Card ONLY"


def test_markdown_emphasis_and_table_pipes_do_not_hide_a_quote():
    text = "## **Paragraph 0**\n\n| Late return | 12 EUR |"
    s, e, method = locate(text, "Late return 12 EUR")
    assert method == "normalised" and text[s:e] == "Late return | 12 EUR"


def test_a_compact_table_row_keeps_its_cells_apart():
    # pymupdf4llm writes "|Late return|12 EUR|per day|": a pipe is a cell boundary (a space), not
    # nothing -- dropped, the cells ran together ("12 eurper day") and a short quote was lost.
    text = "|Fee|Amount|When|\n|---|---|---|\n|Late return|12 EUR|per day|\n|Lost card|5 EUR|once|"
    s, e, method = locate(text, "12 EUR per day")
    assert method == "normalised" and text[s:e] == "12 EUR|per day"
    assert locate(text, "5 EUR once")[2] == "normalised"


def test_fuzzy_finds_a_quote_with_a_few_wrong_characters():
    text = "Preamble. " * 20 + "Refunds are paid to the original card within five working days. " + "Tail. " * 20
    s, e, method = locate(text, "Refunds are paid to the original cart within five workin days.")
    assert method == "fuzzy"
    assert "original card within five working" in text[s:e]


def test_a_quote_the_parse_lost_is_not_located():
    assert locate("Nothing of the kind is here, only other words about tables.", "refunds within five days") is None
    assert locate("short", "") is None


def test_normalise_maps_every_character_back_to_the_text():
    text = "A\u00adB ﬁ  X"
    norm, where = normalise(text)
    assert norm == "ab fi x"
    assert len(where) == len(norm) and all(0 <= w < len(text) for w in where)


def test_fuzzy_work_is_bounded_and_running_out_is_said():
    from rag_bench.parsing.locate import OVER_BOUND

    text = "Preamble. " * 20 + "Refunds are paid to the original card within five working days. " + "Tail. " * 20
    quote = "Refunds are paid to the original cart within five workin days."
    assert locate(text, quote)[2] == "fuzzy"
    # the same search with too little work for one window's ratio: not located within the bound
    assert locate(text, quote, work=len(text) * 2) == (-1, -1, OVER_BOUND)
    # a quote that is nowhere, searched to the end within the bound, is simply not located
    assert locate(text, "Nothing of this sentence occurs in the text at all, anywhere.") is None


def test_fuzzy_work_does_not_grow_with_the_text():
    import time

    words = ("refund card days policy fee return item box working original paid within " * 40).split()
    text = " ".join(words[i % len(words)] + ("s" if i % 7 == 0 else "") for i in range(70_000))  # ~400,000 chars
    quote = " ".join(words[:300])  # ~1,900 characters of the same words: alike everywhere, matched nowhere exactly
    started = time.perf_counter()
    locate(text, quote + " zebra")
    assert time.perf_counter() - started < 30  # unbounded: minutes
