"""rag_bench.text.tokenize: the words of a text, with the shortcut for a text without an unspaced script."""

from __future__ import annotations

import random

from rag_bench.text import tokenize as tok


def test_a_text_without_an_unspaced_script_has_the_words_each_word_search_finds() -> None:
    # BM25 and the lexical faithfulness tokenise every chunk and answer: a text with no Han, Hiragana
    # or Katakana (every ASCII text) is split by one scan instead of a regex search per word.
    pieces = ["Rollo", " ", "KB-DW-4410", "café", "naïve", "Ошибка", "東京都", "に住む", "カタカナ", "ー", "e21",
              ".", ",", "\n", "résumé", "x\u0301", "١٢٣", "ß", "İ"]
    rng = random.Random(57)
    texts = ["".join(rng.choices(pieces, k=rng.randint(0, 12))) for _ in range(3000)]
    for text in texts:
        low = tok._fold(text)
        assert tok._words(low) == tok._words_each(low), text  # the shortcut against the per-word path
    assert tok.tokenize("Call KB-DW-4410 now") == ["call", "kb", "dw", "4410", "kbdw4410"]
    assert tok.tokenize("東京都に住む") == ["東京", "京都", "都に", "に住", "住む"]
