"""The structural header that goes before each chunk's text when it is embedded and
searched: the document's title, the heading path and the concepts, within a budget."""

from __future__ import annotations

from collections.abc import Sequence

from docshelf.chunk.tokens import TokenCounter, approx_tokens, largest


def build_header(
    title: str,
    heading_path: Sequence[str],
    concepts: Sequence[str],
    max_tokens: int,
    count_tokens: TokenCounter = approx_tokens,
) -> str:
    """The structural header: ``[DOC: …]``, ``[PATH: a > b]``, ``[CONCEPTS: x, y]`` lines.

    Empty lines are left out. Over ``max_tokens`` the header is shortened: concepts
    are dropped (last first), then the path from the left, then the title is cut
    (at words, then characters), down to "" if nothing fits.
    """
    title = _one_line(title)
    path = [p for p in map(_one_line, heading_path) if p]
    if path and path[0].casefold() == title.casefold():
        path = path[1:]  # an H1 that repeats the title says nothing new
    names = [c for c in map(_one_line, concepts) if c]

    def fits(header: str) -> bool:
        return not header or count_tokens(header) <= max_tokens

    while names or path:
        header = _render_header(title, path, names)
        if fits(header):
            return header
        if names:
            names.pop()
        else:
            path.pop(0)
    words = title.split(" ")
    keep = largest(lambda k: fits(_render_header(" ".join(words[:k]), [], [])), len(words))
    if keep:
        return _render_header(" ".join(words[:keep]), [], [])
    first = words[0]
    keep = largest(lambda k: fits(_render_header(first[:k], [], [])), len(first))
    return _render_header(first[:keep], [], []) if keep else ""


def _render_header(title: str, path: Sequence[str], concepts: Sequence[str]) -> str:
    lines = []
    if title:
        lines.append(f"[DOC: {title}]")
    if path:
        lines.append(f"[PATH: {' > '.join(path)}]")
    if concepts:
        lines.append(f"[CONCEPTS: {', '.join(concepts)}]")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def header_parts(header: str) -> tuple[str, list[str]]:
    """The title and heading path a header names (``build_header``'s inverse for both, but
    for a heading that holds " > " itself, read as two; ``("", [])`` for an empty header)."""
    title, path = "", []
    for line in header.splitlines():
        if line.startswith("[DOC: ") and line.endswith("]"):
            title = line[6:-1]
        elif line.startswith("[PATH: ") and line.endswith("]"):
            path = line[7:-1].split(" > ")
    return title, path
