"""The offline support kernels (rag_bench.metrics.support) on texts written here."""

from __future__ import annotations

import pytest

from rag_bench.domain import Answer, Passage
from rag_bench.metrics.generation import faithfulness
from rag_bench.metrics.support import (
    Claim,
    content_words,
    names,
    negated,
    numbers,
    quantities,
    read,
    split_claims,
    support_answer,
    support_claim,
    windows,
)

NORMANDY = ("Rollo was a Viking leader. In 911 he became the first ruler of Normandy. "
            "The French king Charles the Simple granted him the land.")


def _claim(text: str) -> Claim:
    return Claim(text, 0, len(text))


def test_split_claims_cuts_sentences_semicolons_and_two_facts_joined_by_and_or_but() -> None:
    claims = split_claims("Rollo led the Vikings [1]. He settled Normandy in 911; Charles granted the land, "
                          "and the French king kept Paris. Rollo seized Rouen but the Franks defended Chartres.")
    assert [c.text for c in claims] == ["Rollo led the Vikings", "He settled Normandy in 911",
                                        "Charles granted the land", "the French king kept Paris.",
                                        "Rollo seized Rouen", "the Franks defended Chartres."]


def test_a_citation_marker_ends_a_claim_so_each_part_is_checked_against_its_own_source() -> None:
    # Found on the demo sweep: an extractive answer joining a table row cited [1] and a sentence
    # cited [2] on one line was one claim, which neither passage held (> 1/5 of its words missing).
    table = "| Zone | Area covered | Standard delivery | Next-day delivery |"
    prose = "Silver members earn 1.5 points per $1 and get free standard delivery in Zone A and Zone B."
    answer = f"{table} [1] {prose} [2]"
    assert [c.text for c in split_claims(answer)] == [table, prose]
    assert support_answer(answer, [table, prose])[0] is True


def test_split_claims_keeps_lists_and_short_clauses_whole() -> None:
    text = "It sold chalk, crayons, and colored pencils. Tea and coffee are drinks."
    assert [c.text for c in split_claims(text)] == ["It sold chalk, crayons, and colored pencils.",
                                                    "Tea and coffee are drinks."]


def test_claim_spans_point_into_the_answer() -> None:
    text = "Rollo led the Vikings [1]. Vikings settled Normandy in 911; the French king paid tribute."
    for c in split_claims(text):
        assert c.text.replace(".", "") in text[c.start:c.end].replace(".", "")
    assert "[1]" not in " ".join(c.text for c in split_claims(text))


def test_content_words_are_stemmed_and_drop_fillers_only_when_asked() -> None:
    assert content_words("jumping") == content_words("jumps")
    assert "well" in content_words("Yes, well, dogs bark")
    assert content_words("Yes, well, dogs bark", frozenset({"yes", "well"})) == content_words("dogs bark")
    assert numbers("born 12 May 1990, the 3rd child") == {"12", "1990", "3"}
    assert names("Yesterday Rollo met the King of France.") == content_words("Rollo King France")
    assert negated("He didn't win") and negated("He never won") and not negated("He won")


def test_supported_claim_names_its_passage_and_window() -> None:
    passages = ["Bananas are yellow.", NORMANDY]
    v = support_claim(_claim("Rollo became the first ruler of Normandy in 911"), passages, max_sentences=2)
    assert v.supported and v.passage == 1 and v.coverage == 1.0 and v.missing == ()
    assert passages[1][v.start:v.end] == "Rollo was a Viking leader. In 911 he became the first ruler of Normandy."
    # one sentence holds all but "Rollo" ("he"): 5 of 6 words, still >= 0.8
    v = support_claim(_claim("Rollo became the first ruler of Normandy in 911"), passages, max_sentences=1)
    assert v.supported and v.missing == ("rollo",)
    assert passages[1][v.start:v.end] == "In 911 he became the first ruler of Normandy."


def test_a_wrong_number_is_a_no_even_when_every_other_word_is_there() -> None:
    v = support_claim(_claim("In 912 Rollo became the first ruler of Normandy"), [NORMANDY])
    assert not v.supported and not v.numbers_ok and v.coverage >= 0.8
    assert support_claim(_claim("In 912 Rollo became the first ruler of Normandy"), [NORMANDY], strict=False).supported


def test_a_name_absent_from_the_evidence_is_a_no() -> None:
    v = support_claim(_claim("In 911 Rollo became the first ruler of Normandy under Charlemagne"), [NORMANDY])
    assert not v.supported and not v.names_ok and "charlemagn" in v.missing


def test_a_negated_claim_needs_a_negation_in_the_evidence() -> None:
    v = support_claim(_claim("Rollo wasn't the first ruler of Normandy in 911"), [NORMANDY])
    assert not v.supported and not v.negation_ok and v.coverage == 1.0
    said = ["Rollo was never the first ruler of Normandy in 911."]
    assert support_claim(_claim("Rollo wasn't the first ruler of Normandy in 911"), said).supported


def test_partial_support_is_a_no() -> None:
    verdict, claims = support_answer("Rollo became the first ruler of Normandy in 911. "
                                     "He later conquered England with a large fleet of ships.", [NORMANDY])
    assert verdict is False
    assert [c.supported for c in claims] == [True, False]
    # one claim only half found is a no too
    v = support_claim(_claim("Rollo became the ruler of Normandy, Brittany, Flanders and Aquitaine"), [NORMANDY])
    assert not v.supported and 0.0 < v.coverage < 0.8


def test_a_long_passage_that_pools_the_words_supports_nothing_within_a_window() -> None:
    # Every word of the claim is in the passage, each in another sentence about something else.
    passage = ("The museum opened a new wing. Its director is a former chemist. Visitors praised the cafe. "
               "The garden has a famous rose. The chemist who founded the company studied roses. "
               "A new company bought the cafe. The museum garden won a prize.")
    claim = "The chemist founded the museum and won a prize for a new rose"
    answer = Answer(claim + " [1].", (1,))
    # today's proxy counts it supported: its words are all somewhere in the cited passage
    assert faithfulness(answer, [Passage(1, "c", "d", 0, len(passage), passage)]) == 1.0
    verdict, claims = support_answer(claim, [passage], max_sentences=2)
    assert verdict is False and claims[0].coverage < 0.8
    # the stated limit: with the whole passage as one window its own words still pool
    assert support_answer(claim, [passage], max_sentences=0)[0] is True


def test_windows_never_span_two_passages() -> None:
    claim = _claim("Rollo became the first ruler of Normandy in 911")
    split = ["Rollo was a Viking leader. In 911 he became", "the first ruler of Normandy."]
    assert not support_claim(claim, split).supported
    assert support_claim(claim, [" ".join(split)]).supported


def test_windows_are_runs_of_consecutive_sentences() -> None:
    text = "One apple. Two bees. Three cats."
    assert [text[s:e] for s, e in windows(text, 2)] == ["One apple.", "One apple. Two bees.", "Two bees.",
                                                        "Two bees. Three cats.", "Three cats."]
    assert windows(text, 0) == ((0, len(text)),)
    assert windows("  ", 2) == () and windows("  ", 0) == ()


def test_an_answer_with_nothing_to_judge_is_none_and_fillers_do_not_block_support() -> None:
    assert support_answer("Yes, well, I think so!", [NORMANDY]) == (None, ())
    assert support_answer("Yes, well, I think Rollo really became the first ruler of Normandy in 911.",
                          [NORMANDY])[0] is True
    assert support_answer("Rollo became the first ruler of Normandy in 911.", [])[0] is False


def test_a_question_is_no_claim():
    # A question asserts nothing: a clarifying question, a dialogue's question back.
    assert [c.text for c in split_claims("Paris is the capital of France. Have you been there?")] == [
        "Paris is the capital of France."]
    assert split_claims("Is it an annual plan, and when did it renew?") == ()
    verdict, claims = support_answer("Do you like the Eiffel tower?", ["Paris is the capital of France."])
    assert verdict is None and not claims  # nothing to judge


def test_numbers_written_out_are_numbers() -> None:
    # "two platinum" is "2 platinum" and "June 7th" is "June 7"; "one" stays a word (a pronoun as often).
    assert numbers("They earned two platinum and five gold albums") == {"2", "5"}
    assert numbers("a twelve-bar blues song, released June 7th") == {"12", "7"}
    assert numbers("one of the most famous") == set()
    passage = ["The duo has earned two platinum and five gold albums."]
    assert support_answer("They have earned 2 platinum and 5 gold albums.", passage)[0] is True
    assert support_answer("They have earned 3 platinum and 5 gold albums.", passage)[0] is False


def test_no_cut_inside_parentheses():
    text = "The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) gave their name to Normandy."
    assert [c.text for c in split_claims(text)] == [text]


# Issue 52 item 12: crafted false claims the rules were fooled by, against one passage.
CRAFTED = ("Rollo was a Viking leader who had 3 sons and 12 ships. In 911 he became the first ruler of Normandy. "
           "The tower he built is 50 metres tall. He never lost a battle.")


def _yes(claim: str) -> bool | None:
    return support_answer(claim, [CRAFTED])[0]


def test_a_number_must_keep_its_unit_and_noun() -> None:
    assert _yes("Rollo had 12 sons.") is False  # a number swapped within the passage (12 ships, 3 sons)
    assert _yes("The tower he built is 50 feet tall.") is False  # a unit swapped (metres)
    assert _yes("Rollo had twelve ships.") is True and _yes("Rollo had 3 sons.") is True
    assert _yes("In 911 Rollo became the first ruler of Normandy.") is True  # a name after a number binds nothing


def test_a_negation_must_come_from_the_claims_own_sentence() -> None:
    assert _yes("Rollo was not a Viking leader.") is False  # "never" is another sentence's
    assert _yes("Rollo never lost a battle.") is True


def test_zero_width_and_look_alike_letters_do_not_hide_a_negation() -> None:
    assert _yes("Rollo was n\u200bot a Viking leader.") is False  # zero-width space inside "not"
    assert _yes("Rollo was n\u043et a Viking leader.") is False  # a Cyrillic o inside "not"
    assert _yes("Rollo was \u03b7\u03bf\u03c4 a Viking leader.") is False  # "not" in Greek letters
    assert _yes("Rollo was a Viking l\u0435ader.") is True  # a Cyrillic e in a word that is there
    assert content_words("Привет мир") == content_words("Привет мир")  # a word wholly Cyrillic stays itself


def test_a_claim_that_denies_itself_is_negated() -> None:
    assert _yes("It is untrue that Rollo became the first ruler of Normandy.") is False
    assert _yes("Rollo became the first ruler of Normandy - false.") is False
    assert _yes("Rollo became the first ruler of Normandy.") is True


def test_a_question_mark_does_not_hide_a_statement() -> None:
    answer = "Rollo became the first ruler of Normandy. Rollo was also the king of England?"
    assert [c.text for c in split_claims(answer)] == ["Rollo became the first ruler of Normandy.",
                                                     "Rollo was also the king of England?"]
    assert support_answer(answer, [CRAFTED])[0] is False
    # Questions still assert nothing: a question word or an auxiliary first, or a short follow-up.
    assert split_claims("Did you know it opened in 1900? What else do you need? Anything else? Fine?") == ()
    # A statement before the question is judged ("..., do you like them?").
    tagged = split_claims("Rollo was the king of England, do you like him?")
    assert [c.text for c in tagged] == ["Rollo was the king of England,"]
    assert support_answer("Rollo was the king of England, do you like him?", [CRAFTED])[0] is False


def test_each_text_is_read_once_and_each_claim_weighed_once_per_passage(monkeypatch) -> None:
    # Issue 57: the claims scorer re-tokenised the same cited passages for every claim of every cell
    # (half of a squad2-normans cell). A text is read once per content; a (claim, passage) pair is
    # weighed once; another cell's context (k=10 after k=5) reads only the passages it adds.
    from rag_bench.metrics import support

    for memo in (support._READINGS, support._CLAIM_READINGS, support._FITS, support._SPLITS, support._CITED,
                 support._JUDGED):
        memo.clear()
    read: list[str] = []
    raw = support._raw_words
    monkeypatch.setattr(support, "_raw_words", lambda text: read.append(text) or raw(text))
    p1, p2 = "Rollo was a Viking leader.", "In 911 Rollo became the first ruler of Normandy."
    p3 = "The French king Charles the Simple granted him the land."
    answer = "In 911 Rollo became ruler of Normandy [2]. Rollo was a Viking [1]."
    k5 = support.judge_claims(answer, [1, 2], [(1, p1), (2, p2)])
    assert sorted(set(read)) == sorted(read)  # nothing read twice within the cell
    read.clear()
    k10 = support.judge_claims(answer, [1, 2], [(1, p1), (2, p2), (3, p3)])
    assert read == [p3]
    assert [v.supported for v in k10] == [v.supported for v in k5] == [True, True]
    read.clear()
    assert support.judge_claims(answer, [1, 2], [(1, p1), (2, p2)]) is k5 and read == []
    # The remembered verdicts are the ones a fresh computation gives.
    for memo in (support._READINGS, support._CLAIM_READINGS, support._FITS, support._SPLITS, support._CITED,
                 support._JUDGED):
        memo.clear()
    assert support.judge_claims(answer, [1, 2], [(1, p1), (2, p2), (3, p3)]) == k10


def test_the_judges_memos_are_bounded_and_kept_with_sharing_off(monkeypatch) -> None:
    from rag_bench import switches
    from rag_bench.metrics import support

    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(share=False))
    monkeypatch.setattr(support._READINGS, "size", 2)
    support._READINGS.clear()
    for text in ("one fact", "two facts", "three facts"):
        support.read(text)
    assert len(support._READINGS) == 2  # the oldest dropped
    assert support.read("three facts") is support.read("three facts")  # a pure function's memo: kept


def test_the_stems_memo_is_bounded_and_a_clear_keeps_what_is_being_read(monkeypatch) -> None:
    # Issue 57: each distinct word is stemmed once per process (_STEMS), the memo cleared past its
    # bound. A clear while a text is read must not lose the words known a moment before (a KeyError).
    from rag_bench.metrics import support

    monkeypatch.setattr(support, "_STEMS_KEPT", 4)
    monkeypatch.setattr(support, "_STEMS", {})
    assert support._stems(["jumping", "fences"]) == {"jump", "fenc"}
    assert support._stems(["jumping", "fences", "horses", "riders", "walls"]) == {"jump", "fenc", "hors", "rider",
                                                                               "wall"}
    assert len(support._STEMS) <= 5  # cleared once past the bound, then this text's words
    assert support._stem("jumped") == "jump" and support._stem("jumped") is support._STEMS["jumped"]
    stems = support._stems(["ships", "sons"])
    assert all(s is support.sys.intern(s) for s in stems)  # interned: the passages' sets share them
    fresh = support._snowball().stemWords(["jumping", "fences", "horses"])
    assert fresh == ["jump", "fenc", "hors"]


def test_a_verdict_built_field_by_field_is_the_dataclasses_own() -> None:
    # _verdict builds its Support without the frozen dataclass's __init__ (issue 57): the same object
    # in every respect (equality, hash, repr, replace, frozen), every field given.
    import dataclasses

    from rag_bench.metrics import support

    values = (support.Claim("Rollo ruled", 0, 11), True, 2, 5, 40, 0.75, ("rule",), True, False, True, False)
    fast, slow = support._new(support.Support, *values), support.Support(*values)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert dataclasses.replace(fast, supported=False) == dataclasses.replace(slow, supported=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.supported = False  # type: ignore[misc]
    with pytest.raises(ValueError):
        support._new(support.Support, *values[:-1])  # a field left out is an error, not a missing attribute
    claim = support.Claim("Rollo ruled", 0, 11)
    assert support._new(support.Claim, "Rollo ruled", 0, 11) == claim
    read = support.read("Rollo ruled in 911")
    assert support._new(support.Reading, read.key, read.words, read.numbers, read.negated, read.text) == read


def test_list_numbering_is_no_number_of_the_claim() -> None:
    # issue 55: long answers number their steps; "2." is numbering, not a fact the passage must hold
    # (111 of the 124 number failures of people-approved MTRAG answers were such numbers)
    p = ["Delete any models that you do not need. Upgrade your plan to get more space."]
    assert support_claim(Claim("2. Delete any models that you do not need.", 0, 43), p).supported
    assert support_claim(Claim("3) Upgrade your plan to get more space.", 0, 39), p).supported
    assert support_claim(Claim("You can free up space as follows: 1.", 0, 36), ["You can free up space as follows."]).numbers_ok
    # a number the claim states is still checked
    assert not support_claim(Claim("Delete 2 models that you do not need.", 0, 37), p).supported
    assert not support_claim(Claim("Upgrade your plan to get 2 GB more space.", 0, 41), p).supported


def test_a_readings_quantities_are_found_when_first_asked_and_equal_the_texts():
    # A passage is read for its words; its quantities (a costly regex) only when a claim binds a
    # number to a unit -- the same set as quantities() of the text.
    text = "Rollo had 3 sons and twelve ships in 911; he didn't return."
    r = read(text)
    assert "quantities" not in vars(r)
    assert r.quantities == quantities(text) == {("3", "son"), ("12", "ship")}
    assert sorted(r.numbers) == ["12", "3", "911"] and r.negated
    assert support_claim(_claim("Rollo had twelve ships"), [text]).numbers_ok
    assert not support_claim(_claim("Rollo had 12 sons"), [text]).numbers_ok


def test_the_judges_shortcuts_find_what_its_regexes_find() -> None:
    # Issue 57: a cold cell's claims scorer scanned every text with regexes that the engine tries at
    # every character (a lookbehind or a \s* first); the shortcuts give the same spans and words.
    import random
    import re

    from rag_bench.metrics import support as s
    from rag_bench.text.normalize import lenient_normalize

    def raw_words(text: str) -> set[str]:  # the rule as first written (before the shortcuts)
        words = set(lenient_normalize(s._NT.sub(" nt", s.visible(text))).split())
        spelt = words.intersection(s.NUMBER_WORDS)
        digits = {w for w in words if w[0].isdigit()}
        return (words - spelt - digits) | {s.NUMBER_WORDS[w] for w in spelt} | {s._ORDINAL.sub(r"\1", w) for w in digits}

    pieces = ["Rollo", " ", "  ", "\t", "\n", "[1]", "[2, 3]", "[x]", "[", "]", " [4]", "12", "3rd", "2nd", "1,000", "4.5",
              "two", "Twelve", "TEN", "often", "sixty-", "tenth", "%", "$", "/", ".", ",", "-", "_", "sons", "ships",
              "not", "n't", "don't", "Isn't", "false", "- false", "untrue that", "It is wrong that", "wrong", "true",
              "not true", "é", "\u2014", "ſeven", "\u212a", "nоt", "a", "an", "the", "The", "e.g.", ":", "1.", "2)", "?",
              " but ", "BUT", ", and ", ",\tAnd\n", "band", ";", "\u00a0", ". Paris", "! The", "? In", "# ", "| "]
    rng = random.Random(57)
    texts = ["".join(rng.choices(pieces, k=rng.randint(0, 16))) for _ in range(3000)]
    texts += ["Rollo had 3 sons and twelve ships, 50% of them in 911 [1]. In 911 Rollo came [2, 3]."]
    for t in texts:
        assert s._citations(t) == [m.span() for m in s._CITE.finditer(t)], t
        assert s._blank_citations(t) == s._CITE.sub(lambda m: " " * len(m.group()), t), t
        assert [m.span() for m in s._quantity_matches(t)] == [m.span() for m in s._QUANTITY.finditer(t)], t
        assert s._tokens(t) == s._TOKEN.findall(t), t
        assert s._has_digit(t) == bool(re.search(r"\d", t)), t
        assert s._denies(t) == bool(s._DENIAL.search(s.visible(t))), t
        if t.isascii():
            assert not s._SPLIT.search(t) or s._may_split(t, t.lower(), 0, len(t)), t
        spaced = " ".join(t.split())
        assert bool(s._BEFORE_STOP.search(spaced)) == bool(s._SPACE_STOP.search(spaced)), t
        slow = set()  # names as first written: every sentence split out first
        for a, b in s.sentence_spans(s.visible(t)) or [(0, len(s.visible(t)))]:
            slow.update(w.lower() for w in s._tokens(s.visible(t)[a:b])[1:] if w[0].isupper())
        slow -= s.ENGLISH_STOPWORDS | s.NEGATIONS
        assert s.names(t) == frozenset(s._snowball().stemWords(sorted(slow))), t
        words, other = s._raw_words(t)
        assert words == raw_words(t), t
        assert other == {w for w in words if not w.isalpha()}, t  # where the numbers are looked for
        assert s.read(t).numbers == {w for w in words if not w.isalpha() and re.search(r"\d", w)}, t


def test_a_claims_verdicts_are_those_of_its_passages_each_judged_alone_and_together() -> None:
    # Issue 57: judge_claims fits a claim to each passage of the context once and reads its cited
    # passages' verdict, each cited passage's and the context's from those fits: the same verdicts
    # as support_claim over those passages (a number cited twice, or outside the context, included).
    from rag_bench.metrics import support

    passages = [(1, "Rollo was a Viking leader."), (2, NORMANDY), (3, "In 911 Rollo became the first ruler of Normandy."),
                (2, "The French king Charles the Simple granted Rollo the land in 911.")]
    answer = ("Rollo was a Viking [1]. In 911 Rollo became ruler of Normandy [3, 2]. Charles granted him the land [2]. "
              "Rollo did not rule Normandy [5]. Rollo was king of England [1, 3].")
    texts = dict(passages)
    for memo in (support._READINGS, support._CLAIM_READINGS, support._FITS, support._SPLITS, support._CITED,
                 support._JUDGED):
        memo.clear()
    verdicts = support.judge_claims(answer, [1, 2, 3], passages)
    assert len(verdicts) == 5
    assert [v.supported for v in verdicts] == [True, True, True, False, False]
    # The whole fit is made only for the passages a verdict needs (issue 57): every setting, a blank
    # passage cited and in the context, gives support_claim's verdicts all the same.
    blank = [*passages, (4, "  \n ")]
    texts[4] = "  \n "
    for settings in ({}, {"max_sentences": 2}, {"min_coverage": 0.5, "strict": False}, {"min_coverage": 1.0}):
        for context in (passages, blank):
            judged = support.judge_claims(answer + " Rollo ruled [4].", [1, 2, 3, 4], context, **settings)
            assert len(judged) == 6
            for v in judged:
                assert all(n in texts for n in v.citations)
                own = support_claim(v.claim, [texts[n] for n in v.citations], **settings) if v.citations else None
                assert v.own == own
                assert v.by_citation == tuple(support_claim(v.claim, [texts[n]], **settings).supported
                                              for n in v.citations)
                assert v.context == support_claim(v.claim, [t for _, t in context], **settings)
                assert v.own_passage == (v.citations[own.passage] if own is not None and own.passage >= 0 else None)
                assert v.context_passage == (context[v.context.passage][0] if v.context.passage >= 0 else None)


def test_an_answers_markers_are_found_once_for_its_claims_and_their_citations() -> None:
    from rag_bench.metrics import support

    answer = "Rollo led the Normans [1]. He ruled Normandy from Rouen [2, 3]."
    support._MARKED.clear()
    claims = support.split_claims(answer)
    assert support.claim_citations(answer, claims, [1, 2, 3]) == ((1,), (2, 3))
    assert len(support._MARKED) == 1  # one entry, found by the split and read by the citations
    spans, blank = next(iter(support._MARKED.values()))
    assert [answer[s:e].strip() for s, e in spans] == ["[1]", "[2, 3]"]
    assert len(blank) == len(answer) and "[" not in blank
