"""What a person reads on a terminal: the text without its styling (bold, dim, colours).

A test's terminal is styled as a person's is (rich decides by the stream it prints to,
and the terminal settings the test gives: tests/conftest.py clears the caller's); the
tests read the words and the layout, never the escape codes."""

from __future__ import annotations

import re

_STYLE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    return _STYLE.sub("", text)
