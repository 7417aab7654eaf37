"""Is this ``.txt`` file really Markdown? Decided by evidence in the text, never assumed.

Many manuals, READMEs and exported notes are Markdown saved as ``.txt``. Read
as plain text they lose every heading, so each hit cites "(top of the
document)". Read as Markdown by mistake, a prose file could gain false
headings, so the evidence must be clear:

- **ATX headings** (``# Title`` … ``###### Title``): a ``#`` run, a space, a
  short text; a line that opens the file or follows a blank line. A
  ``#hashtag`` (no space) or a shebang is not one.
- **fenced code**: a ```` ``` ```` or ``~~~`` fence closed by a matching one.
- **lists**: two or more consecutive lines starting ``-``, ``*``, ``+``,
  ``1.`` or ``1)`` followed by a space.
- **inline marks**: ``[text](target)`` links, ````code```` spans,
  ``**strong**``; counted together.

The text is Markdown when it has at least two headings, or one heading and
one other kind of evidence, or a closed fence and one other kind — unless its
``# …`` lines look like comments instead: more than half of its lines, or more
of them inside blocks than at their start (a commented configuration file). One heading alone,
lists alone or inline marks alone are not enough: plain prose has those too.

Only the first :data:`SCAN_CHARS` characters are examined, so the decision
costs the same on a huge file as on a small one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docshelf.model import ParsedDocument
from docshelf.parse.markdown import parse_markdown
from docshelf.parse.text import parse_text

__all__ = ["SCAN_CHARS", "Evidence", "looks_like_markdown", "markdown_evidence", "parse_txt"]

SCAN_CHARS = 256 * 1024

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+\S.{0,150}$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,12}(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_INLINE = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)|`[^`\n]+`|\*\*[^*\n]+\*\*")
_MAX_HEADING_SHARE = 0.5  # heading-like lines above this share of non-blank lines: comments


@dataclass(frozen=True, slots=True)
class Evidence:
    """What in a text looks like Markdown."""

    headings: int = 0  # ATX headings at the start of a block
    heading_like: int = 0  # every line that matches an ATX heading
    fences: int = 0  # closed fenced code blocks
    list_runs: int = 0  # runs of two or more consecutive list items
    inline_marks: int = 0  # links, code spans, strong emphasis
    lines: int = 0  # non-blank lines outside fences


def markdown_evidence(text: str) -> Evidence:
    """Count the Markdown constructs in the first :data:`SCAN_CHARS` characters of ``text``."""
    headings = heading_like = fences = list_runs = inline = lines = 0
    fence: str | None = None  # the open fence's marker
    previous_blank = True
    run = 0  # consecutive list items so far
    for line in text[:SCAN_CHARS].split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and _closes(opening.group(1), fence, line):
                fences += 1
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            run = 0
            previous_blank = False
            continue
        if not line.strip():
            previous_blank = True
            run = 0
            continue
        lines += 1
        if _HEADING.match(line):
            heading_like += 1
            headings += previous_blank
        if _LIST_ITEM.match(line):
            run += 1
            list_runs += run == 2
        else:
            run = 0
        inline += len(_INLINE.findall(line))
        previous_blank = False
    return Evidence(headings, heading_like, fences, list_runs, inline, lines)


def _closes(marker: str, fence: str, line: str) -> bool:
    """A closing fence: the opening's character, at least as long, nothing after it."""
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :]


def looks_like_markdown(text: str) -> bool:
    """True when the text carries clear Markdown structure (the rules in this module's doc)."""
    e = markdown_evidence(text)
    if e.heading_like > _MAX_HEADING_SHARE * e.lines or e.heading_like - e.headings > e.headings:
        return False
    others = (e.fences > 0) + (e.list_runs > 0) + (e.inline_marks >= 2)
    return e.headings >= 2 or (e.headings == 1 and others >= 1) or (e.fences > 0 and others >= 2)


def parse_txt(body: str) -> ParsedDocument:
    """A ``.txt`` file's decoded text: as Markdown when it looks like Markdown, else plain."""
    return parse_markdown(body) if looks_like_markdown(body) else parse_text(body)
