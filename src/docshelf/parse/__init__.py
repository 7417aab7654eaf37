"""Parsers: a file's bytes in, a :class:`~docshelf.model.ParsedDocument` out.

One module per format (``markdown.py``, ``text.py``). This module owns what they
share: choosing a parser from a file type and decoding bytes to text. Decoding
rejects empty, binary and non-UTF-8 input with :class:`InvalidInput`, strips a
UTF-8 byte-order mark and normalises CRLF and CR line ends to LF, so every body
a parser sees, and every span into it, uses ``\\n`` line ends. (The document
fingerprint is taken elsewhere, on the raw bytes.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from docshelf.errors import InvalidInput
from docshelf.model import ParsedDocument
from docshelf.parse.markdown import parse_markdown
from docshelf.parse.text import parse_text

FILE_TYPES: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
}

_PARSERS: dict[str, Callable[[str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "text": parse_text,
}

_BINARY_SNIFF_BYTES = 8192
_BOM = "\ufeff"


def file_type_for(path: str) -> str | None:
    """The file type for a path by its extension (case-insensitive), or None if unsupported."""
    return FILE_TYPES.get(PurePath(path).suffix.lower())


def decode_text(data: bytes) -> str:
    """Decode a text file's bytes: UTF-8, no BOM, LF line ends.

    Raises InvalidInput for empty or whitespace-only input, NUL bytes in the
    first 8 KiB (binary content) and invalid UTF-8 (naming the byte offset).
    """
    if not data.strip():
        raise InvalidInput("empty file")
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        raise InvalidInput("binary content, not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"invalid UTF-8 at byte {exc.start}") from None
    text = text.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InvalidInput("empty file")
    return text


def parse(data: bytes, file_type: str) -> ParsedDocument:
    """Parse a file's bytes as ``file_type`` ("markdown" or "text")."""
    parser = _PARSERS.get(file_type)
    if parser is None:
        supported = ", ".join(sorted(_PARSERS))
        raise InvalidInput(f"unsupported file type {file_type!r}; supported types: {supported}")
    return parser(decode_text(data))


__all__ = ["FILE_TYPES", "decode_text", "file_type_for", "parse"]
