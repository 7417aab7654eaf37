"""Parsers: a file's bytes in, a :class:`~docshelf.model.ParsedDocument` out.

One module per format: ``markdown.py``, ``text.py``, ``rst.py`` (text
formats), ``pdf.py`` (with its rules in ``pdf_page.py``, ``pdf_layout.py``,
``pdf_pieces.py``, ``pdf_structure.py`` and ``pdf_text.py``, their thresholds
in ``pdf_thresholds.py``), ``html.py`` and ``docx.py``; ``detect.py`` decides
whether a ``.txt`` file is Markdown.
This module owns what they share: choosing a parser from a file type, and
decoding the bytes of text formats to text. Decoding rejects empty, binary and
non-UTF-8 input with :class:`InvalidInput`, strips a UTF-8 byte-order mark and
normalises CRLF and CR line ends to LF, so every body a parser sees, and every
span into it, uses ``\\n`` line ends. (The document fingerprint is taken
elsewhere, on the raw bytes.) PDF, DOCX and HTML are bytes to their parsers
(they carry their own encodings) and skip these checks; HTML refuses binary content
the same way (NUL bytes early on, unless a UTF-16 byte-order mark explains them).
Images (``image.py``: PNG, JPEG) are documents only when DOCSHELF_OCR_IMAGES asks;
their text, like a scanned PDF page's, is read by OCR (``ocr.py``, ``pdf_ocr.py``).

PDF, HTML, DOCX and reStructuredText are parsed in a child process under a
time and memory limit (``parse.sandbox``), so one hostile file cannot take
down the caller. Their modules are imported only when a file of their type is
parsed. Markdown and plain text are parsed in-process up to
``IN_PROCESS_BYTES`` (a note's parse costs far less than a child process
would), larger ones under the same limits. ``parse_here`` is the parse
without a child, for code that already runs in one (the worker's preparation
of a large file: parse and chunk together in the sandbox, ``ingest.prepare``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from pathlib import PurePath

from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput, Unavailable
from docshelf.model import ParsedDocument
from docshelf.parse._blocks import BINARY_SNIFF_BYTES
from docshelf.parse.detect import parse_txt
from docshelf.parse.markdown import parse_markdown
from docshelf.parse.ocr import Ocr

FILE_TYPES: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".rst": "rst",
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".docx": "docx",
}

_PARSERS: dict[str, Callable[[str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "text": parse_txt,  # Markdown when the text shows it (parse.detect), else plain
}

# Parsed under limits: (module, function, library to name if it is missing, text format?).
_LIMITED: dict[str, tuple[str, str, str, bool]] = {
    "pdf": ("docshelf.parse.pdf", "parse_pdf", "pypdfium2", False),
    "html": ("docshelf.parse.html", "parse_html", "lxml", False),
    "docx": ("docshelf.parse.docx", "parse_docx", "python-docx", False),
    "rst": ("docshelf.parse.rst", "parse_rst", "docutils", True),
    "image": ("docshelf.parse.image", "parse_image", "its image reader", False),
}
# Read by OCR when DOCSHELF_OCR_IMAGES asks (``ParseLimits.reads_images``): not otherwise
# a file type a folder's walk takes.
IMAGE_TYPES: dict[str, str] = {".png": "image", ".jpg": "image", ".jpeg": "image"}

PDF_PASSWORD_ENV = "DOCSHELF_PDF_PASSWORD"
IN_PROCESS_BYTES = 1 << 20
_BOM = "\ufeff"


def file_type_for(path: str, *, images: bool = False) -> str | None:
    """The file type for a path by its extension (case-insensitive), or None if unsupported
    (``images``: PNG and JPEG files are documents too, read by OCR)."""
    suffix = PurePath(path).suffix.lower()
    return FILE_TYPES.get(suffix) or (IMAGE_TYPES.get(suffix) if images else None)


def decode_text(data: bytes) -> str:
    """Decode a text file's bytes: UTF-8, no BOM, LF line ends.

    Raises InvalidInput for empty or whitespace-only input, NUL bytes in the
    first 8 KiB (binary content) and invalid UTF-8 (naming the byte offset).
    """
    if not data.strip():
        raise InvalidInput("empty file")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise InvalidInput("binary content, not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"invalid UTF-8 at byte {exc.start}") from None
    text = text.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InvalidInput("empty file")
    return text


def parse(data: bytes, file_type: str, limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse a file's bytes as ``file_type`` (a value of FILE_TYPES), a child process
    under ``limits`` where needed (``Settings.parse``; read from the environment when
    not given)."""
    parser = _PARSERS.get(file_type)
    if parser is not None and len(data) <= IN_PROCESS_BYTES:
        return parser(decode_text(data))
    limits = limits or ParseLimits.from_env()
    timeout_s, memory_mb = limits.timeout_s, limits.memory_mb
    if parser is not None:  # decoded in the child too: only the bytes go there
        from docshelf.parse.sandbox import run_limited

        return run_limited(
            functools.partial(_decode_and_parse, parser),
            data,
            file_type,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            fresh=True,  # a large file: a new interpreter's start-up is small beside it
        )
    limited = _LIMITED.get(file_type)
    if limited is None:
        supported = ", ".join(sorted({*_PARSERS, *_LIMITED}))
        raise InvalidInput(f"unsupported file type {file_type!r}; supported types: {supported}")
    from docshelf.parse.sandbox import run_limited

    module, name, library, is_text = limited
    # the child does not see later changes to the environment: what it needs goes with it
    func = _bound(_load(module, name, library), file_type, limits.pdf_password, Ocr.of(limits))
    if is_text:
        return run_limited(
            func, decode_text(data), file_type, timeout_s=timeout_s, memory_mb=memory_mb
        )
    if not data.strip():
        raise InvalidInput("empty file")
    return run_limited(func, data, file_type, timeout_s=timeout_s, memory_mb=memory_mb)


def parse_here(
    data: bytes, file_type: str, pdf_password: str | None = None, ocr: Ocr | None = None
) -> ParsedDocument:
    """Parse in this process, whatever the size: for a caller that is itself the
    sandbox's child (its limits apply to all it does). ``ocr``: how to read scanned
    pages (``Ocr.of(limits)``; None: they are not read)."""
    if is_text_format(file_type):
        return parse_text_here(decode_text(data), file_type)
    limited = _LIMITED.get(file_type)
    if limited is None:
        supported = ", ".join(sorted({*_PARSERS, *_LIMITED}))
        raise InvalidInput(f"unsupported file type {file_type!r}; supported types: {supported}")
    module, name, library, _ = limited
    func = _bound(_load(module, name, library), file_type, pdf_password, ocr)
    if not data.strip():
        raise InvalidInput("empty file")
    return func(data)


def is_text_format(file_type: str) -> bool:
    """Whether ``file_type`` is parsed from decoded text (``decode_text``), not its bytes."""
    return file_type in _PARSERS or (file_type in _LIMITED and _LIMITED[file_type][3])


def parse_text_here(text: str, file_type: str) -> ParsedDocument:
    """``parse_here`` of a text format's decoded text: a caller that decodes the bytes
    itself can let them go before the parse (a large file's copies are the child's
    memory)."""
    parser = _PARSERS.get(file_type)
    if parser is not None:
        return parser(text)
    module, name, library, is_text = _LIMITED[file_type]
    if not is_text:
        raise ValueError(f"{file_type} is not a text format")
    return _load(module, name, library)(text)


def _decode_and_parse(parser: Callable[[str], ParsedDocument], data: bytes) -> ParsedDocument:
    text = decode_text(data)
    del data  # the input's last reference (``sandbox._child``): the bytes go before the parse
    return parser(text)


def _bound(
    func: Callable[..., ParsedDocument], file_type: str, pdf_password: str | None, ocr: Ocr | None
) -> Callable[..., ParsedDocument]:
    """The parser with the settings it takes: a PDF's password and OCR."""
    if file_type == "pdf":
        return functools.partial(func, password=pdf_password, ocr=ocr)
    if file_type == "image":
        return functools.partial(func, ocr=ocr)
    return func


def _load(module: str, name: str, library: str) -> Callable[..., ParsedDocument]:
    try:
        parser: Callable[..., ParsedDocument] = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise Unavailable(
            f"cannot parse this file type: {exc}; reinstall docshelf to get {library}"
        ) from None
    return parser


__all__ = [
    "FILE_TYPES",
    "IMAGE_TYPES",
    "decode_text",
    "file_type_for",
    "is_text_format",
    "parse",
    "parse_here",
    "parse_text_here",
]
