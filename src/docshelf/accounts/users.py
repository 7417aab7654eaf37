"""Users and bearer tokens. Only a token's SHA-256 is stored; the token is shown once."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
import time
from collections.abc import Sequence

from docshelf.errors import Conflict, InvalidInput, NotFound
from docshelf.model import User
from docshelf.store import Store

# The embedded library's owner: what the CLI acts as, and whose token `serve`
# creates on a fresh home. Documents added from the command line belong to it.
LOCAL_ADMIN = "usr_local"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "dsk_" + secrets.token_urlsafe(32)


def ensure_local_admin(store: Store) -> User:
    user = store.get_user(LOCAL_ADMIN)
    if user is None:
        user = User(LOCAL_ADMIN, "admin", is_admin=True, created_at=time.time())
        store.put_user(user, None)
    return user


def create_user(store: Store, name: str, *, admin: bool = False) -> tuple[User, str]:
    if not _NAME.match(name):
        raise InvalidInput(
            f"Bad user name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-'"
        )
    if store.get_user(name) is not None:
        raise Conflict(f"A user named {name!r} exists; revoke it or pick another name")
    user = User("usr_" + secrets.token_hex(8), name, is_admin=admin, created_at=time.time())
    token = new_token()
    store.put_user(user, token_hash(token))
    return user, token


def issue_token(store: Store, user: User) -> str:
    """A new token for an existing user (the old one stops working)."""
    token = new_token()
    store.put_user(
        User(user.id, user.name, user.is_admin, user.created_at, None), token_hash(token)
    )
    return token


def authenticate(store: Store, tokens: Sequence[str]) -> list[User | None]:
    """The user each token names (None: unknown, revoked or empty), in one query."""
    hashes = [token_hash(token) if token else "" for token in tokens]
    users = store.users_for_tokens([h for h in hashes if h])
    return [users.get(h) if h else None for h in hashes]


def revoke(store: Store, name_or_id: str) -> User:
    """Revoke a user (by name or id): their tokens stop working at once."""
    user = store.get_user(name_or_id)
    if user is None:
        raise NotFound(f"No user {name_or_id!r}")
    revoked = dataclasses.replace(user, revoked_at=time.time())
    store.put_user(revoked, None)
    return revoked


def local_admin_token(store: Store) -> str | None:
    """On a home with no token yet, create the local admin's and return it (once)."""
    admin = ensure_local_admin(store)
    if store.has_token(admin.id):
        return None
    return issue_token(store, admin)
