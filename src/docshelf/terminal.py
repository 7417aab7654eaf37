"""Text made safe to print on a terminal.

File names and document text are the library's data, not ours: an escape
sequence in either (``ESC [2J``, an OSC 8 hyperlink, a title-setting OSC)
would be obeyed by the terminal that prints it. Human CLI output passes every
string it shows through :func:`printable`, which writes control characters
(C0 and C1, DEL) and the bidirectional overrides that can reorder what is
shown as visible escapes (``\\x1b``, ``\\u202e``). Line feeds and tabs stay.
JSON output is left alone: JSON escapes what it must, and it is data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["printable", "printable_tree"]

_KEEP = {"\n", "\t"}
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_TABLE: dict[int, str] = {
    code: _escape(code)
    for code in (*range(0x20), *range(0x7F, 0xA0), *_BIDI)
    if chr(code) not in _KEEP
}


def printable(text: str) -> str:
    """``text`` with control characters and bidirectional overrides shown as escapes."""
    return text.translate(_TABLE)


def printable_tree(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings, numbers) with every string,
    key or value, made :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_tree(v) for v in value]
    return value
