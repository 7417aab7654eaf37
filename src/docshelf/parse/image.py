"""Images (PNG, JPEG) as documents: their text, read by OCR (``parse.ocr``).

Taken only when DOCSHELF_OCR_IMAGES asks (``ParseLimits.reads_images``): a vault's
images are mostly photos and diagrams, so by default a folder's images are not
documents. An image's text is tesseract's paragraphs, each a block marked with its
words' mean confidence; it has no pages, and its title is its file name. The image's
size is read from its header first: one too large to OCR (over ``MAX_PIXELS``) fails
with the reason, before any pixel is decoded.
"""

from __future__ import annotations

import struct

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse._blocks import BodyBuilder
from docshelf.parse.ocr import Ocr, OcrFailed, read_image, unavailable

__all__ = ["MAX_PIXELS", "image_size", "parse_image"]

MAX_PIXELS = 60_000_000  # a 12-megapixel photo is 12 M; tesseract needs ~10 bytes a pixel
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
# JPEG markers that start a frame (SOF0-SOF15 but DHT, JPG and DAC): its size follows
_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def parse_image(data: bytes, *, ocr: Ocr | None = None) -> ParsedDocument:
    """The text of a PNG or JPEG image, by OCR. Raises InvalidInput with the reason."""
    width, height = image_size(data)
    if width * height > MAX_PIXELS:
        raise InvalidInput(
            f"image too large to OCR: {width} x {height} pixels "
            f"(at most {MAX_PIXELS // 1_000_000} million)"
        )
    if ocr is None:
        raise InvalidInput("no text read from the image: OCR is off (DOCSHELF_OCR)")
    why = unavailable(ocr)
    if why is not None:
        raise InvalidInput(f"no text read from the image: {why}")
    try:
        found = read_image(data, ocr)
    except OcrFailed as exc:
        raise InvalidInput(f"no text read from the image: OCR failed ({exc})") from None
    builder = BodyBuilder()
    for paragraph in found:
        builder.add(BlockKind.PARAGRAPH, "\n".join(paragraph.lines), ocr=paragraph.confidence)
    if not builder.blocks:
        raise InvalidInput("no text found in the image by OCR")
    return builder.build(ocr_pages=1)


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's or a JPEG's header; InvalidInput for anything else."""
    if data.startswith(_PNG) and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data.startswith(_JPEG):
        size = _jpeg_size(data)
        if size is not None:
            return size
        raise InvalidInput("malformed JPEG image (no frame header)")
    if data.startswith(_PNG):
        raise InvalidInput("malformed PNG image (no header)")
    raise InvalidInput("not a PNG or JPEG image")


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The size in a JPEG's first frame header, walking its markers' segments."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill bytes before a marker
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _FRAMES and at + 9 <= len(data):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        at += 2 + length
    return None
