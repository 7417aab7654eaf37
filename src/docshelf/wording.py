"""Counts in words, as a person writes them: "1 document", "3 documents"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun that goes with it (``many``: an irregular plural)."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
