"""Length and language: a question of ``min_words`` to ``max_words`` words, an answer of at most
``max_answer_words``, written in the corpus language (at least one of its stopwords, as the
retriever's tokenizer lists them, and a question mark: the drafters write questions)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict


class LengthFilter:
    """Drops a draft that is empty, too short or long, or not in the corpus language."""

    name = "length_language"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """A verdict for every draft."""
        from rag_bench.text.tokenize import stopwords_for

        t = ctx.thresholds
        stop = stopwords_for(t.language)
        out: list[Verdict | None] = []
        for d in drafts:
            words = d.question.split()
            answer_words = max((len(p.split()) for p in d.answer.split(";")), default=0)
            why = ("no question was written" if not words else
                   f"{len(words)} words (fewer than {t.min_words})" if len(words) < t.min_words else
                   f"{len(words)} words (more than {t.max_words})" if len(words) > t.max_words else
                   f"answer of {answer_words} words (more than {t.max_answer_words})"
                   if answer_words > t.max_answer_words else
                   "no question mark" if "?" not in d.question else
                   f"not {t.language}: none of its stopwords" if stop and not {w.lower().strip("?,.\"'") for w in words}
                   & stop else "")
            out.append(Verdict(self.name, not why, why or f"{len(words)} words, {t.language}"))
        return out
