"""``Accounts``: the users of a library and their tokens, as ``Shelf`` (shelf.py) offers
them; a mixin of its own module, so the facade's stays within the house's 600 lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from docshelf.runtime import OnRuntime, Runtime

if TYPE_CHECKING:
    from docshelf.model import User
    from docshelf.store import SearchStore


class Accounts:
    """The users of a library and their tokens (accounts/users.py), as ``Shelf`` offers them."""

    runtime: Runtime
    store: OnRuntime[SearchStore] = OnRuntime("store")

    def create_user(self, name: str, *, admin: bool = False) -> tuple[User, str]:
        """A new user and their bearer token (shown once; only its hash is kept)."""
        from docshelf.accounts import users as users_mod

        return users_mod.create_user(self.store, name, admin=admin)

    def users(self) -> list[User]:
        return self.store.list_users()

    def revoke_user(self, name_or_id: str) -> User:
        from docshelf.accounts import users as users_mod

        return users_mod.revoke(self.store, name_or_id)

    def authenticate(self, token: str) -> User | None:
        """The user a bearer token names; None if it is unknown or revoked."""
        return self.authenticate_many([token])[0]

    def authenticate_many(self, tokens: Sequence[str]) -> list[User | None]:
        """``authenticate`` of several tokens in one store query (requests that came together)."""
        from docshelf.accounts import users as users_mod

        return users_mod.authenticate(self.store, tokens)

    def local_admin_token(self) -> str | None:
        """On a home with no token yet, create the local admin's and return it (once)."""
        from docshelf.accounts import users as users_mod

        return users_mod.local_admin_token(self.store)
