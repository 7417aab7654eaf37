"""Conversations: a thread of questions, where a follow-up is searched with what it
follows up ("and how do I change it?" means the setting just asked about).

A conversation belongs to one user (the command line's to the local admin) and is kept
in the store (``store/conversations.py``): its turns, each with the question as asked and
as searched. A question *follows up* when it leans on the turn before — it has a word
that points back (it, that, those, there …) or fewer than three key terms of its own —
and is then searched with the previous turn's search (at most ``CONTEXT_WORDS`` words of
it), so the thread's subject stays in the query while the new question leads. A question
that stands alone is searched as it is, even mid-conversation.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docshelf.accounts.users import LOCAL_ADMIN, ensure_local_admin
from docshelf.errors import NotFound
from docshelf.store.conversations import Turn

if TYPE_CHECKING:
    from docshelf.knowledge.answer import Answer
    from docshelf.store import Store

NEW = "new"  # the conversation id that starts one
CONTEXT_WORDS = 40  # of the earlier turns' search, at most, added to a follow-up's
POINTING = frozenset(
    [
        "it",
        "its",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "they",
        "them",
        "their",
        "there",
        "he",
        "she",
        "him",
        "her",
        "his",
        "such",
        "same",
        "one",
        "ones",
        "also",
        "else",
        "instead",
    ]
)


def follows_up(question: str) -> bool:
    """Whether ``question`` leans on the turn before it."""
    from docshelf.knowledge.answer import key_terms

    words = re.findall(r"[\w']+", question.lower())
    own = [t for t in key_terms(question) if t not in POINTING and len(t) > 1]
    return any(w in POINTING for w in words) or len(own) < 3


@dataclass
class Thread:
    """A conversation as one ask sees it: its id, its user, its turns so far."""

    id: str
    user_id: str
    turns: list[Turn] = field(default_factory=list)

    def searched(self, question: str) -> str:
        """What to search for ``question``: with the last turn's search when it follows
        up, else the question alone."""
        if not self.turns or not follows_up(question):
            return question
        before = self.turns[-1].asked.split()[:CONTEXT_WORDS]
        return f"{question} {' '.join(before)}"


class Conversations:
    def __init__(self, store: Store) -> None:
        self.store = store

    def open(self, given: str, user_id: str | None) -> Thread:
        """The conversation ``given`` of the user's (``NEW``: a new one); NotFound for
        an unknown one or another user's."""
        owner = user_id
        if owner is None:
            ensure_local_admin(self.store)
            owner = LOCAL_ADMIN
        if given == NEW:
            return Thread("cv_" + secrets.token_hex(8), owner)
        found = self.store.conversation(given)
        if found is None or found[0] != owner:
            raise NotFound(f"No conversation {given!r}; start one with conversation 'new'")
        return Thread(given, owner, found[1])

    def record(self, thread: Thread, question: str, asked: str, answer: Answer) -> Answer:
        """``answer`` (to ``asked``, searched for ``question``) kept as the thread's next
        turn; the answer as the asker sees it: to their question, in the conversation."""
        turn = Turn(
            len(thread.turns) + 1, question, asked, answer.answer, answer.answered, time.time()
        )
        self.store.add_turn(thread.id, thread.user_id, turn)
        thread.turns.append(turn)
        return dataclasses.replace(answer, question=question, conversation=thread.id)
