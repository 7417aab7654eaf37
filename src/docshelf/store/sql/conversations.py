"""The shared SQL of conversations (``store.conversations.ConversationRecords``)."""

from __future__ import annotations

from docshelf.store.conversations import Turn
from docshelf.store.sql.core import SQLBase


class ConversationsSQL(SQLBase):
    def conversation(self, conversation_id: str) -> tuple[str, list[Turn]] | None:
        rows = self._q("SELECT user_id FROM conversations WHERE id = ?", (conversation_id,))
        if not rows:
            return None
        turns = self._q(
            "SELECT n, question, asked, answer, answered, at FROM conversation_turns "
            "WHERE conversation_id = ? ORDER BY n",
            (conversation_id,),
        )
        return str(rows[0][0]), [
            Turn(int(r[0]), r[1], r[2], r[3], bool(r[4]), float(r[5])) for r in turns
        ]

    def add_turn(self, conversation_id: str, user_id: str, turn: Turn) -> None:
        with self.transaction():
            changed = self._x(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (turn.at, conversation_id)
            )
            if not changed:
                self._x(
                    "INSERT INTO conversations(id, user_id, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?)",
                    (conversation_id, user_id, turn.at, turn.at),
                )
            self._x(
                "INSERT INTO conversation_turns(conversation_id, n, question, asked, answer, "
                "answered, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    turn.n,
                    turn.question,
                    turn.asked,
                    turn.answer,
                    turn.answered,
                    turn.at,
                ),
            )
