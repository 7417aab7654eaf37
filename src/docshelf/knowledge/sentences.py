"""The sentences an offline answer chooses from: each source's snippet read as plain
sentences (``plain_sentences``: list items and label lines as sentences of their own,
a paper's own reference marks out), with the sentences of the snippets just before and
after it in the place it cites, each cited where it is, none from a list of works cited
(a paper's "References"); a lead-in that ends in ":"
brings the list or code it introduces (``with_block``). A named title with no sentence of
its own is read on to the snippet after it (``read_on``). knowledge/answer.py scores the
sentences and chooses, with ``known_item`` (what a named heading or a quoted line asks),
``spread`` (at most two a source while another has one to give) and ``with_next`` (the
best sentence brings the one after it)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docshelf import plaintext
from docshelf.model import Chunk, Citation, Hit, InnerHeading, PageBreak
from docshelf.plaintext import SENTENCE_BOUNDARY
from docshelf.search.citing import page_parts, parts, place_of
from docshelf.search.evidence import verbatim_pattern, words

if TYPE_CHECKING:
    from docshelf.search.retriever import Retriever


@dataclass(frozen=True)
class Source:
    """An answer's source ``[n]``: a hit, and the text given for it (its section while
    the token budget lasts, else its snippet)."""

    n: int
    hit: Hit
    text: str


# A candidate sentence of an extractive answer: its source, its place in reading order
# (0 is the snippet's first), its text, whether the cited snippet holds it (else a snippet
# beside it does), and the inner heading it is under or the page it is on when that is
# not the one the source cites (a snippet that packs short sections, or runs onto another
# page: the sentence is cited under its own heading, on its own page).
Candidate = tuple[Source, int, str, bool, InnerHeading | PageBreak | None]


_TERMINAL = re.compile(r"[.!?:;][\"')\]]*$")
# what a list item ends with when its list reads as one sentence: "detects failures of
# servers,", "halts rather than making erroneous state transitions, and"
_RUNS_ON = re.compile(r"(?:[\s,;]+(?:and|or))?[\s,;]*$")


def plain_sentences(text: str, markup: plaintext.Markup = "markdown") -> list[str]:
    """The sentences of ``text`` (in ``markup``) as plain text, in reading order (see
    :func:`docshelf.plaintext.plain_units`). A list item without closing punctuation
    gets a full stop, so that it reads as a sentence beside the others; other text
    without one is a heading line or a fragment (a PDF's running title, a snippet cut
    mid-sentence), not a sentence. An item's comma or "and" (its list one sentence) goes;
    in plain text (a PDF's) an item in lower case goes on a sentence before it ("called
    the master, that • detects failures of servers,"), so it is none alone."""
    out: list[str] = []
    for unit, is_item in plaintext.units(text, markup):
        for sentence in SENTENCE_BOUNDARY.split(unit):
            sentence = sentence.strip()
            if not sentence or (is_item and markup == "plain" and sentence[:1].islower()):
                continue
            if _TERMINAL.search(sentence):
                out.append(sentence)
            elif is_item:
                out.append(_RUNS_ON.sub("", sentence) + ".")
    return out


# A paper's own reference marks: "[4]", "[12, 13]", "[3-5]" after a space (never code's
# ``v[1]`` nor a Markdown reference link's ``][1]``); looked for in papers (PDFs) only, as
# a manual's prose may well show a list ``[1, 2, 3]``.
REFERENCED = frozenset({"pdf"})
_REFERENCE_MARK = re.compile(r"(?:^|(?<=\s))\[\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\](?=\W|$)")


def without_reference_marks(text: str) -> str:
    """``text`` without a paper's own numbered reference marks: beside docshelf's ``[n]``
    they would read as citations of the answer's sources (a paper's "[4]" is its
    bibliography's fourth entry, not source 4)."""
    bare = re.sub(r"[ \t]*" + _REFERENCE_MARK.pattern, "", text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", bare).lstrip(" \t")


def marks_out(hit: Hit, text: str) -> str:
    return without_reference_marks(text) if hit.document.file_type in REFERENCED else text


def whole_sentences(hit: Hit, text: str | None = None) -> list[str]:
    """The sentences of a hit's snippet (or ``text``, a part of one beside it) that are
    whole (a snippet cut out of a longer text may begin mid-sentence, in lower case),
    without its own reference marks."""
    chunk = hit.chunk
    markup = plaintext.markup_of(hit.document.file_type, bool(chunk.heading_path))
    read = chunk.text if text is None else text
    # the marks out first: "Glendenning et al. [12] built …" is one sentence, not two
    units = plain_sentences(marks_out(hit, read), markup)
    if units and units[0][:1].islower():
        units = units[1:]
    return units


def beside(hit: Hit, chunk: Chunk, after: bool) -> str:
    """The text of ``chunk``, the snippet just before or ``after`` the hit's, that is in
    the place the hit cites (under its heading; in a paged document, on its pages), so
    that a sentence of it is cited, and opens, where it is: "" when none is."""
    cited = hit.citation
    if (cited.page_start is None) != (chunk.page_start is None):
        return ""
    if cited.page_start is not None and chunk.page_start is not None:
        last, end = cited.page_end or cited.page_start, chunk.page_end or chunk.page_start
        if not cited.page_start <= chunk.page_start <= end <= last:
            return ""
    own, near = parts(hit.chunk), parts(chunk)
    (edge, _), (head, text) = (own[-1], near[0]) if after else (own[0], near[-1])
    edge_path = edge.heading_path if edge else hit.chunk.heading_path
    path = head.heading_path if head else chunk.heading_path
    return text if edge_path == path == cited.heading_path else ""


# The heading of a paper's or a book's list of the works it cites ("References", "7
# Bibliography"): an entry names another work ("Linearizability: A correctness condition
# for concurrent objects.") and says nothing of it, so none is an answer's sentence.
_WORKS_CITED = re.compile(
    r"^\s*(?:[\dIVX]+\.?\s+)?(?:references|bibliography|works cited|literature cited)\s*$",
    re.IGNORECASE,
)


def _lists_works(source: Source, at: InnerHeading | PageBreak | None) -> bool:
    """Whether a sentence of ``source`` (under ``at`` when that is an inner heading) is
    in a list of works cited."""
    path = at.heading_path if isinstance(at, InnerHeading) else source.hit.citation.heading_path
    return bool(path) and bool(_WORKS_CITED.match(path[-1]))


def sentences_of(retriever: Retriever, sources: Sequence[Source]) -> list[Candidate]:
    """The answer's candidate sentences: each source's snippet's, with those of the
    snippets just before and after it in the place it cites (a section cut in two keeps
    its answer in the other half), numbered in reading order around the snippet's; none
    of a list of works cited (``_WORKS_CITED``)."""
    ids = [i for s in sources for i in (s.hit.chunk.prev_id, s.hit.chunk.next_id) if i]
    near = {c.id: c for c in retriever.store.get_chunks(ids)} if ids else {}
    out: list[Candidate] = []
    for s in sources:
        prev, after = (near.get(i or "") for i in (s.hit.chunk.prev_id, s.hit.chunk.next_id))
        before = whole_sentences(s.hit, beside(s.hit, prev, False)) if prev else []
        later = whole_sentences(s.hit, beside(s.hit, after, True)) if after else []
        own = _parted(s.hit)
        read = [(t, None) for t in before] + own + [(t, None) for t in later]
        for i, (sentence, at) in enumerate(read, -len(before)):
            if _readable(sentence) and not _lists_works(s, at):
                out.append((s, i, sentence, 0 <= i < len(own), at))
    return out


def _readable(sentence: str) -> bool:
    """Long enough to say something (not an initial's "Fred B.", nor "See below.")."""
    return len(sentence) > 12 and len(sentence.split()) >= 3


def _parted(hit: Hit) -> list[tuple[str, InnerHeading | PageBreak | None]]:
    """The hit's own sentences, each with the inner heading it is under, or the page it
    is on, when that is not where the hit is cited (None: the hit's own place)."""
    chunk = hit.chunk
    cited = place_of(chunk, hit.citation)
    if isinstance(cited, PageBreak):  # cited at one of its pages: the others' are their own
        return [
            (t, None if page.page == cited.page else page)
            for page, text in page_parts(chunk)
            for t in whole_sentences(hit, text)
        ]
    if not chunk.inner:
        return [(t, None) for t in whole_sentences(hit)]
    out: list[tuple[str, InnerHeading | PageBreak | None]] = []
    for head, text in parts(chunk):
        place = head or InnerHeading(chunk.start, chunk.heading_path)  # the snippet's own
        at = None if place.heading_path == hit.citation.heading_path else place
        out.extend((t, at) for t in whole_sentences(hit, text))
    return out


def with_block(source: Source, _: int, sentence: str) -> str:
    """``sentence``, and when it is a lead-in ending in ":", the list or code it brings
    (``plaintext.introduced``): "run the following from your shell:" is no answer alone."""
    if not sentence.endswith(":"):
        return sentence
    chunk = source.hit.chunk
    markup = plaintext.markup_of(source.hit.document.file_type, bool(chunk.heading_path))
    # the source's text (its section's when the budget allowed, else the snippet's; its
    # reference marks out, as the sentence's are): a list may begin the next snippet
    leads = plaintext.introduced(source.text, markup)
    # the lead-in it ends with (a lead-in's key is its last line: a wrapped paragraph's
    # last few words, or a one-line paragraph that ends with the sentence), longest first
    for lead in sorted(leads, key=len, reverse=True):
        if sentence.endswith(lead.strip()) or lead.strip().endswith(sentence):
            return f"{sentence} {leads[lead]}"
    return sentence


def read_on(retriever: Retriever, hit: Hit) -> Hit:
    """``hit``, or when the query names its title (``named``) and its snippet holds no
    sentence (a paper's title block: its title, authors and their addresses), the
    snippet after it in its document, cited where that is: what a title names is what
    follows it (the abstract)."""
    chunk = hit.chunk
    if "named" not in hit.placed_by or not chunk.next_id:
        return hit
    if any(_readable(s) for s in whole_sentences(hit)):
        return hit
    after = retriever.store.get_chunks([chunk.next_id])
    if not after or after[0].document_id != chunk.document_id:
        return hit
    cited = Citation.for_chunk(after[0], hit.document)
    return dataclasses.replace(hit, chunk=after[0], citation=cited)


def known_item(
    question: str, candidates: Sequence[Candidate], first: Source, sentences: int
) -> list[int]:
    """A question that names its first hit's heading or title, or quotes a line of it
    word for word (``placed_by``: search/stages/exact.py), asks what that is: the answer
    is the section's opening sentences, or the quoted line with the one before and the
    one after it; [] for any other question."""
    mine = sorted((c[1], i) for i, c in enumerate(candidates) if c[0] is first)
    if "named" in first.hit.placed_by:
        return [i for _, i in mine[:sentences]]
    pattern = verbatim_pattern(words(question))
    if "quoted" not in first.hit.placed_by or pattern is None:
        return []
    at = next(
        (k for k, (_, i) in enumerate(mine) if pattern.search(candidates[i][2].casefold())), None
    )
    return [] if at is None else [i for _, i in mine[max(0, at - 1) : at + 2]]


def spread(candidates: Sequence[Candidate], ranked: Sequence[int], sentences: int) -> list[int]:
    """The first ``sentences`` of ``ranked`` (indexes of ``candidates``, best first), at
    most two of one source while another source's sentence is left; then the best of
    the rest (a page that alone answers gives its third sentence: "That is why the
    default opt-level for the release profile is 3.")."""
    chosen: list[int] = []
    per_source: dict[int, int] = {}
    for i in ranked:
        n = candidates[i][0].n
        if per_source.get(n, 0) < 2 and len(chosen) < sentences:
            per_source[n] = per_source.get(n, 0) + 1
            chosen.append(i)
    rest = [i for i in ranked if i not in chosen]
    return chosen + rest[: sentences - len(chosen)]


def with_next(candidates: Sequence[Candidate], chosen: list[int], sentences: int) -> list[int]:
    """The best sentence, the one after it in its snippet, then the next best: the
    sentence nearest a question often restates it, and the answer follows ("If you do
    not configure logging, Flask adds a handler." — then where it writes)."""
    if not chosen:
        return chosen
    source, at, *_ = candidates[chosen[0]]
    after = next((j for j, c in enumerate(candidates) if c[0] is source and c[1] == at + 1), None)
    if after is None or after in chosen:
        return chosen
    return [chosen[0], after, *chosen[1 : sentences - 1]]
