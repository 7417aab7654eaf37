"""What the store keeps of conversations (knowledge/conversations.py): a part of the
``Store`` port. A conversation is its user's; its turns are kept in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what it got."""

    n: int
    question: str  # as asked
    asked: str  # as searched: the question with what it follows up
    answer: str
    answered: bool
    at: float


class ConversationRecords(Protocol):
    def conversation(self, conversation_id: str) -> tuple[str, list[Turn]] | None:
        """(its user id, its turns in order), or None for an unknown id."""
        ...

    def add_turn(self, conversation_id: str, user_id: str, turn: Turn) -> None:
        """``turn`` at the end of the conversation (made, for ``user_id``, when new)."""
        ...
