"""Whether an offline answer answers: the rule that lets ``ask`` say "No passage in your
library answers this" (``Answer.answered``) instead of splicing the nearest sentences.

The evidence is the extract's (``answer.extract``): ``coverage``, the largest share of the
question's key terms one candidate sentence holds (each term weighted by its rarity among
the candidates, a term only the sentence's headings hold counting in part), and
``similarity``, the largest cosine of a candidate sentence to the question. A question
is answered when a sentence holds some of its key words and one comes near it in
meaning; the threshold was chosen on docqa-dev's 80 answerable and 20 unanswerable
questions (docs/benchmarks/enrichment-and-answers.md, "Abstaining"). It catches questions far from
everything the library holds; a question on the library's topic whose particular fact it
does not state (a near miss) is answered with the nearest sentences — telling those
apart needs the claim itself read, which this rule does not do.
"""

from __future__ import annotations

# No sentence nearer the question in meaning than this (cosine) answers it, by model: a
# threshold holds for the model it was measured with only. With the packaged model, on
# docqa-dev the answerable questions' nearest sentence is at 0.35 or more, the off-domain
# ones' (a World Cup winner asked of the Rust book) at 0.32 or less.
SIMILARITY = {"all-MiniLM-L6-v2": 0.33}


def answers(coverage: float, similarity: float | None, model: str | None) -> bool:
    """Whether the best sentences' evidence answers the question (else the library has
    no answer): some sentence holds a key term of it (``coverage`` above 0), and, for a
    ``model`` measured here, one comes near it in meaning (``similarity``)."""
    if coverage <= 0:
        return False
    floor = SIMILARITY.get(model or "")
    return similarity is None or floor is None or similarity >= floor
