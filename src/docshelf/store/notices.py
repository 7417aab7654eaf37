"""News of committed events: which documents a transaction wrote events for, told
to a listener once that transaction has committed (never for a rolled-back one).

The store calls ``note`` from ``add_event``, ``take`` as its outermost transaction
commits (still under its writer lock, so a batch belongs to one transaction) and
``tell`` after releasing the lock. The listener (``shared.Broadcast.publish``) only
wakes readers: the events themselves are read from the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

log = logging.getLogger("docshelf")

Listener = Callable[[Sequence[str]], None]


class CommitNotices:
    def __init__(self) -> None:
        self.listener: Listener | None = None
        self._pending: list[str] = []

    def note(self, document_id: str) -> None:
        """An event for ``document_id`` was written in the open transaction."""
        if self.listener is not None:
            self._pending.append(document_id)

    def take(self) -> list[str]:
        """The documents of the transaction that just committed (and forget them)."""
        pending, self._pending = list(dict.fromkeys(self._pending)), []
        return pending

    def discard(self) -> None:
        """The transaction rolled back: its events never happened."""
        self._pending = []

    def tell(self, document_ids: Sequence[str]) -> None:
        """Tell the listener; a failing listener is logged, never raised: the commit
        stands, and readers still poll the store."""
        listener = self.listener
        if not document_ids or listener is None:
            return
        try:
            listener(document_ids)
        except Exception:
            log.warning("could not announce events of %s", ", ".join(document_ids), exc_info=True)
