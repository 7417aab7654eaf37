"""OCR: the text of an image, read by Debian's tesseract (``tesseract-ocr``), with each
word's confidence.

Tesseract runs as the program (``tesseract stdin stdout -l LANGS tsv``), not through a
Python wrapper. pytesseract, the usual one, writes each image to a temporary file and
parses the same TSV output we do; the program itself takes the image on its standard
input and answers on its standard output, so a scanned page never touches the disk,
and the call is wholly ours to limit:

- a time limit per image (``Ocr.timeout_s``): past it the program is killed and the
  image is lost (:class:`OcrFailed`), nothing else;
- the parser sandbox's memory limit, which the program inherits (``RLIMIT_AS`` of the
  sandbox's child: ``parse/sandbox.py``); a program that runs out fails alone;
- it ends with the process that started it (Linux's ``PR_SET_PDEATHSIG``, set by
  util-linux's ``setpriv``, which then becomes tesseract): the sandbox kills its child
  at the file's limits, and a tesseract left behind would run on. No Python runs between
  the fork and the program (a ``preexec_fn`` would, and in a process with other threads
  it can hang on a lock one of them held at the fork: a page lost to the time limit);
- one OpenMP thread (``config.ocr_environment``): its threads spin while they wait, and
  on a busy machine a page took thirty times as long with two.

The output is TSV, one row per page, block, paragraph, line and word; a word's row has
its box and its confidence (0-100). :func:`paragraphs` turns the rows into tesseract's
paragraphs, each with its lines, its line height (the font size, near enough) and the
mean confidence of its words; a paragraph whose words are mostly guesses (mean under
``MIN_CONFIDENCE``: specks and smudges read as letters) is dropped.
"""

from __future__ import annotations

import functools
import shutil
import signal
import subprocess
from dataclasses import dataclass

from docshelf.config import ParseLimits, ocr_environment

__all__ = [
    "MIN_CONFIDENCE",
    "Ocr",
    "OcrFailed",
    "Paragraph",
    "paragraphs",
    "read_image",
    "unavailable",
]

PROGRAM = "tesseract"
INSTALL = "apt-get install tesseract-ocr"
# Each image may take this share of the parse time limit (DOCSHELF_PARSE_TIMEOUT_S): a
# page's rendering and OCR then fit in the sandbox's limit, which starts again for each
# page (``sandbox.next_phase``), so a page over its own limit is lost, not the file.
PAGE_SHARE = 0.5
MIN_CONFIDENCE = 0.40  # a paragraph's mean word confidence under this is noise, not text
_WORD_LEVEL = "5"
_TSV_COLUMNS = 12  # level, page, block, par, line, word, left, top, width, height, conf, text


class OcrFailed(Exception):
    """OCR of one image failed (over its time limit, the program crashed or ran out of
    memory); the message says why, in a few words."""


@dataclass(frozen=True)
class Ocr:
    """How to OCR: tesseract's languages (``eng+deu``) and the seconds one image may take."""

    languages: str = "eng"
    timeout_s: float = ParseLimits.timeout_s * PAGE_SHARE

    @classmethod
    def of(cls, limits: ParseLimits) -> Ocr | None:
        """From the settings (DOCSHELF_OCR, _OCR_LANGUAGES, _PARSE_TIMEOUT_S); None when
        OCR is off."""
        if limits.ocr == "off":
            return None
        return cls(limits.ocr_languages, limits.timeout_s * PAGE_SHARE)


@dataclass(frozen=True)
class Paragraph:
    """One of tesseract's paragraphs: its lines, their median height in pixels, and the
    mean confidence (0 to 1) of its words."""

    lines: tuple[str, ...]
    height: float
    confidence: float
    words: int


def unavailable(ocr: Ocr) -> str | None:
    """Why OCR cannot run (tesseract is not installed, or lacks a language's data), or None."""
    program = shutil.which(PROGRAM)
    if program is None:
        return f"OCR unavailable: tesseract is not installed ({INSTALL})"
    installed = _languages(program)
    missing = [code for code in ocr.languages.split("+") if code not in installed]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code.replace('_', '-').lower()}" for code in missing)
        return (
            f"OCR unavailable: tesseract has no data for {', '.join(missing)} "
            f"(DOCSHELF_OCR_LANGUAGES; apt-get install {packages})"
        )
    return None


@functools.cache
def _languages(program: str) -> frozenset[str]:
    """The languages tesseract has data for (``--list-langs``), asked once per process."""
    try:
        done = subprocess.run(
            [program, "--list-langs"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    return frozenset(line.strip() for line in lines[1:] if line.strip())  # after a title line


def read_image(image: bytes, ocr: Ocr, dpi: int | None = None) -> list[Paragraph]:
    """The paragraphs tesseract reads in ``image`` (any format it reads: PNG, JPEG, PGM…;
    ``dpi``: its resolution, when the format does not say). Raises OcrFailed."""
    program = shutil.which(PROGRAM)
    if program is None:
        raise OcrFailed("tesseract is not installed")
    command = [*_dying_with_parent(), program, "stdin", "stdout", "-l", ocr.languages]
    if dpi:
        command += ["--dpi", str(dpi)]
    try:
        done = subprocess.run(
            [*command, "tsv"],
            input=image,
            capture_output=True,
            timeout=ocr.timeout_s,
            env=ocr_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OcrFailed(f"over its time limit ({ocr.timeout_s:g} s)") from None
    except OSError as exc:
        raise OcrFailed(f"tesseract could not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise OcrFailed(_failure(done.returncode, done.stderr))
    return paragraphs(done.stdout.decode("utf-8", "replace"))


def _failure(code: int, stderr: bytes) -> str:
    if code == -signal.SIGKILL:
        return "tesseract was killed (over the memory limit?)"
    if code < 0:
        return f"tesseract crashed (signal {-code})"
    last = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return f"tesseract failed (exit status {code}{': ' + last[0][:200] if last[0] else ''})"


@functools.cache
def _dying_with_parent() -> tuple[str, ...]:
    """What runs tesseract so that it is killed when the parser's process ends: util-linux's
    ``setpriv --pdeathsig KILL`` (Linux), or nothing where there is none."""
    setpriv = shutil.which("setpriv")
    return (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(
        ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    )


def paragraphs(tsv: str) -> list[Paragraph]:
    """Tesseract's TSV output as its paragraphs, in its reading order, noise dropped
    (mean word confidence under MIN_CONFIDENCE)."""
    # (block, paragraph) -> line -> [(word, confidence, height)]
    found: dict[tuple[str, str], dict[str, list[tuple[str, float, int]]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < _TSV_COLUMNS or cells[0] != _WORD_LEVEL:
            continue
        text = cells[11].strip()
        try:
            confidence, height = float(cells[10]), int(cells[9])
        except ValueError:
            continue
        if not text or confidence < 0:
            continue
        lines = found.setdefault((cells[2], cells[3]), {})
        lines.setdefault(cells[4], []).append((text, confidence / 100, height))
    out = []
    for lines in found.values():
        words = [w for line in lines.values() for w in line]
        confidence = sum(c for _, c, _ in words) / len(words)
        if confidence < MIN_CONFIDENCE:
            continue
        out.append(
            Paragraph(
                lines=tuple(" ".join(t for t, _, _ in line) for line in lines.values()),
                height=_median([max(h for _, _, h in line) for line in lines.values()]),
                confidence=round(confidence, 4),
                words=len(words),
            )
        )
    return out
