"""The event ids a user sees on the lifecycle stream (``GET /v1/events``): opaque.

The store numbers every event in one sequence shared by all users, so a user who
saw its numbers would see gaps — the events of everyone else. Each id this stream
sends is instead the store's sequence number and the user's tag encrypted as one
AES block (a keyed permutation of 128 bits, the key kept in the store's meta, made
once): it reads as a random number, changes with nothing another user does, and
only the server can turn it back into a place in the sequence to resume after
(``Last-Event-ID``). An id altered, or sent by another user, decrypts to a wrong tag
and is refused.

One document's stage stream numbers its events itself (``Uploads.events``: 1, 2,
3 … as its caller sees them), small rising numbers that show nothing else either.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from typing import TYPE_CHECKING

from docshelf.errors import InvalidInput

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers import Cipher

    from docshelf.store import Store

__all__ = ["MAX_TOKEN", "EventIds"]

KEY = "event_id_key"
MAX_TOKEN = 2**128 - 1  # one AES block, as a decimal number (up to 39 digits)


def _tag(user_id: str) -> bytes:
    return hashlib.sha256(b"docshelf event id\0" + user_id.encode()).digest()[:8]


class EventIds:
    """Encrypts a store sequence number for one user, and back."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cipher: Cipher | None = None  # type: ignore[type-arg]
        self._lock = threading.Lock()

    def _aes(self) -> Cipher:  # type: ignore[type-arg]
        with self._lock:
            if self._cipher is None:
                from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

                key = bytes.fromhex(self.store.meta_once(KEY, secrets.token_hex(16)))
                # ECB on a single block: a keyed permutation of the 128-bit id, no more
                self._cipher = Cipher(algorithms.AES(key), modes.ECB())
            return self._cipher

    def token(self, seq: int, user_id: str) -> int:
        """The id ``user_id`` is shown for the event numbered ``seq`` in the store."""
        enc = self._aes().encryptor()
        block = enc.update(seq.to_bytes(8, "big") + _tag(user_id)) + enc.finalize()
        return int.from_bytes(block, "big")

    def seq(self, token: int, user_id: str) -> int:
        """The store's sequence number behind an id ``user_id`` was shown (0: none)."""
        if token == 0:
            return 0
        if not 0 < token <= MAX_TOKEN:
            raise InvalidInput("Last-Event-ID is not an id this stream sent")
        dec = self._aes().decryptor()
        block = dec.update(token.to_bytes(16, "big")) + dec.finalize()
        if block[8:] != _tag(user_id):
            raise InvalidInput("Last-Event-ID is not an id this stream sent")
        return int.from_bytes(block[:8], "big")
