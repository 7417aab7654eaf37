"""An LLM as relevance judge: one batched prompt, a strict JSON reply, a time budget.

Passages are numbered; the model returns ``{"scores": [s1, s2, …]}`` with one
0-10 score each. A reply that is not exactly that is asked for once more; after
that, or when the LLM fails (its client's timeout is the budget), the fused
order stands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from docshelf import telemetry
from docshelf.errors import Unavailable
from docshelf.llm import LLM, Message

PROMPT = (
    "Rate how well each numbered passage answers the query, from 0 (irrelevant) to 10 "
    '(answers it fully). Reply with JSON only, exactly: {"scores": [<one number per '
    "passage, in order>]}."
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)


def parse_scores(text: str, n: int) -> list[float] | None:
    """The ``n`` scores of a judge's reply, or None when it is not what was asked."""
    match = _JSON.search(text)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, list) or len(scores) != n:
        return None
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
        return None
    return [float(s) for s in scores]


class LLMJudge:
    name = "llm"

    def __init__(self, llm: LLM, max_chars: int = 1200) -> None:
        self.llm = llm
        self.max_chars = max_chars

    def scores(self, query: str, passages: Sequence[str]) -> list[float] | None:
        if not passages:
            return []
        listing = "\n\n".join(f"[{i}] {p[: self.max_chars]}" for i, p in enumerate(passages, 1))
        messages = [
            Message("system", PROMPT),
            Message("user", f"Query: {query}\n\nPassages:\n\n{listing}"),
        ]
        with telemetry.llm_call("rerank", "judge"):
            for _ in range(2):
                try:
                    reply = self.llm.complete(messages, max_tokens=16 + 6 * len(passages))
                except Unavailable:
                    return None
                scores = parse_scores(reply.text, len(passages))
                if scores is not None:
                    return scores
        return None
