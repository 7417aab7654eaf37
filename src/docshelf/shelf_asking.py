"""``Asking``: notebooks and grounded answers (in conversations too), as ``Shelf``
(shelf.py) offers them; a mixin of its own module, so the facade's stays within the
house's 600 lines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from docshelf.runtime import OnRuntime, Runtime

if TYPE_CHECKING:
    from docshelf.knowledge.answer import Answer, AnswerPiece
    from docshelf.knowledge.conversations import Thread
    from docshelf.llm import LLM
    from docshelf.notebooks import Notebooks
    from docshelf.search.retriever import Retriever
    from docshelf.store import SearchFilters


class Asking:
    """Notebooks (notebooks.py) and grounded answers (knowledge/answer.py), in a
    conversation (knowledge/conversations.py) when one is named, as ``Shelf`` offers them."""

    runtime: Runtime
    retriever: OnRuntime[Retriever] = OnRuntime("retriever")
    llm: OnRuntime[LLM | None] = OnRuntime("llm")

    @property
    def notebooks(self) -> Notebooks:
        """Named sets of sources and documents to search and ask within (notebooks.py)."""
        from docshelf.notebooks import Notebooks

        return Notebooks(self.runtime.store, self.runtime.taxonomy)

    def _asking(
        self, question: str, user_id: str | None, notebook: str | None, conversation: str | None
    ) -> tuple[SearchFilters | None, Thread | None, str]:
        """The filters of the ``notebook``, the conversation's thread, what to search."""
        from docshelf.knowledge.conversations import Conversations

        within = self.notebooks.narrowed(None, notebook, user_id) if notebook else None
        if conversation is None:
            return within, None, question
        thread = Conversations(self.runtime.store).open(conversation, user_id)
        return within, thread, thread.searched(question)

    def ask(
        self,
        question: str,
        *,
        limit: int = 5,
        user_id: str | None = None,
        notebook: str | None = None,
        conversation: str | None = None,
    ) -> Answer:
        """A grounded answer: with the configured LLM, else extractive; every [n] verified;
        from a ``notebook``'s documents only when one is given; a turn of the
        ``conversation`` given ("new" starts one), a follow-up searched with the turns
        before it."""
        from docshelf.knowledge.answer import ask
        from docshelf.knowledge.conversations import Conversations

        within, thread, asked = self._asking(question, user_id, notebook, conversation)
        answer = ask(
            self.retriever, asked, limit=limit, user_id=user_id, llm=self.llm, filters=within
        )
        if thread is None:
            return answer
        return Conversations(self.runtime.store).record(thread, question, asked, answer)

    def ask_stream(
        self,
        question: str,
        *,
        limit: int = 5,
        user_id: str | None = None,
        notebook: str | None = None,
        conversation: str | None = None,
    ) -> Iterator[AnswerPiece]:
        """``ask`` as it is written: the sources, verified sentences, then the answer."""
        from docshelf.knowledge.answer import ask_stream

        within, thread, asked = self._asking(question, user_id, notebook, conversation)
        pieces = ask_stream(
            self.retriever, asked, limit=limit, user_id=user_id, llm=self.llm, filters=within
        )
        return pieces if thread is None else self._kept(pieces, thread, question, asked)

    def _kept(
        self, pieces: Iterator[AnswerPiece], thread: Thread, question: str, asked: str
    ) -> Iterator[AnswerPiece]:
        """The pieces, the last one's answer kept as the conversation's turn."""
        import dataclasses

        from docshelf.knowledge.conversations import Conversations

        for piece in pieces:
            if piece.kind == "done" and piece.answer is not None:
                kept = Conversations(self.runtime.store).record(
                    thread, question, asked, piece.answer
                )
                piece = dataclasses.replace(piece, answer=kept)
            yield piece
