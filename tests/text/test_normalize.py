"""rag_bench.text.normalize: lenient_words is the word set of lenient_normalize, whatever the text."""

from __future__ import annotations

import random

from rag_bench.text.normalize import lenient_normalize, lenient_words


def test_lenient_words_are_the_words_of_lenient_normalize() -> None:
    # The claims judge and the lexical faithfulness read a text's words by lenient_words (issue 57:
    # no join and split again, the odd words found in C); they must be lenient_normalize's words.
    pieces = ["The", "the", "a", "An", " ", "\t", "\n", "fee", "$1,250.00", "1,000", "50%", "(the fee)!", "é",
              "x\u0301", "\u2014", "“quoted”", "don't", "an$", "a%b", "\u00ad", "東京", "Ωmega", "_", "-", "1.5"]
    rng = random.Random(57)
    texts = ["".join(rng.choices(pieces, k=rng.randint(0, 12))) for _ in range(3000)]
    for text in texts:
        assert lenient_words(text) == set(lenient_normalize(text).split()), text
