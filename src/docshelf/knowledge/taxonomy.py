"""Concepts from a SKOS-lite taxonomy: a JSON file of concepts with an id, a
preferred label, alternative labels and at most one broader concept.

    {"version": "my-taxonomy-3",
     "concepts": [{"id": "distributed-systems", "prefLabel": "Distributed systems",
                   "altLabels": ["consensus", "raft"], "broader": "computing"}, …]}

A default taxonomy ships with docshelf; ``DOCSHELF_TAXONOMY`` points to your own.
Free-form tags are kept as they are; a tag that matches a concept's id or one
of its labels (case and ``#`` aside) maps to that concept, and only mapped
concept ids drive filters. Unmapped tags are reported by ``status``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from docshelf.errors import InvalidInput

DEFAULT = Path(__file__).resolve().parent.parent / "data" / "taxonomy.json"
_PUNCTUATION = re.compile("[\\s,;:!?()\\[\\]{}\"'\u2018\u2019\u201c\u201d]+")


def _key(label: str) -> str:
    return " ".join(
        label.strip().lstrip("#").replace("-", " ").replace("_", " ").casefold().split()
    )


@dataclass(frozen=True)
class Concept:
    id: str
    label: str
    alt_labels: tuple[str, ...] = ()
    broader: str | None = None


class Taxonomy:
    def __init__(self, version: str, concepts: Sequence[Concept]) -> None:
        self.version = version
        self.concepts = {c.id: c for c in concepts}
        self._problems(concepts)
        self._by_label: dict[str, str] = {}
        for c in concepts:
            for label in (c.id, c.label, *c.alt_labels):
                self._by_label.setdefault(_key(label), c.id)

    @staticmethod
    def _problems(concepts: Sequence[Concept]) -> None:
        ids = [c.id for c in concepts]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise InvalidInput(f"Taxonomy: duplicate concept ids: {', '.join(dupes)}")
        known = set(ids)
        dangling = sorted(
            f"{c.id} -> {c.broader}" for c in concepts if c.broader and c.broader not in known
        )
        if dangling:
            raise InvalidInput(
                f"Taxonomy: broader concepts that do not exist: {', '.join(dangling)}"
            )
        parent = {c.id: c.broader for c in concepts}
        for start in ids:
            seen = [start]
            node = parent[start]
            while node is not None:
                if node in seen:
                    cycle = " -> ".join([*seen[seen.index(node) :], node])
                    raise InvalidInput(f"Taxonomy: a cycle of broader concepts: {cycle}")
                seen.append(node)
                node = parent[node]

    def map_tags(self, tags: Iterable[str]) -> tuple[list[str], list[str]]:
        """(concept ids the tags map to, in order, deduplicated; the tags that map to none)."""
        mapped: dict[str, None] = {}
        unmapped: list[str] = []
        for tag in tags:
            concept = self._by_label.get(_key(tag))
            if concept is None:
                unmapped.append(tag)
            else:
                mapped.setdefault(concept, None)
        return list(mapped), unmapped

    def resolve(self, name: str) -> str | None:
        """The concept id for an id or label, or None."""
        return self._by_label.get(_key(name))

    def mentioned(self, text: str, ignore: frozenset[str] = frozenset()) -> list[str]:
        """Concept ids whose id or label appears in ``text`` as whole words (phrases of up
        to four words), in order of first mention; single words in ``ignore`` (e.g.
        stopwords such as "it") do not count."""
        words = [w.strip(".") for w in _PUNCTUATION.split(_key(text)) if w.strip(".")]
        found: dict[str, None] = {}
        start = 0
        while start < len(words):
            step = 1
            for size in range(min(4, len(words) - start), 0, -1):
                phrase = " ".join(words[start : start + size])
                concept = self._by_label.get(phrase)
                if concept is not None and not (size == 1 and phrase in ignore):
                    found.setdefault(concept, None)
                    step = size  # the longest label wins; its words are used up
                    break
            start += step
        return list(found)

    def narrower_or_same(self, concept_id: str) -> set[str]:
        """The concept and every concept below it (a filter on a concept includes them)."""
        found = {concept_id}
        changed = True
        while changed:
            changed = False
            for c in self.concepts.values():
                if c.broader in found and c.id not in found:
                    found.add(c.id)
                    changed = True
        return found

    def labels(self, concept_ids: Iterable[str]) -> list[str]:
        return [self.concepts[c].label for c in concept_ids if c in self.concepts]


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read and validate a SKOS-lite JSON taxonomy; every problem is a clear ``InvalidInput``."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"Cannot read the taxonomy {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"The taxonomy {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("concepts"), list):
        raise InvalidInput(f'The taxonomy {path} needs an object with a "concepts" list')
    concepts = []
    for n, item in enumerate(data["concepts"], start=1):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise InvalidInput(f"Taxonomy {path}: concept {n} has no string id")
        label = item.get("prefLabel", item["id"])
        alt = item.get("altLabels", [])
        broader = item.get("broader")
        if (
            not isinstance(label, str)
            or not isinstance(alt, list)
            or not all(isinstance(a, str) for a in alt)
        ):
            raise InvalidInput(f"Taxonomy {path}: concept {item['id']!r} has malformed labels")
        if broader is not None and not isinstance(broader, str):
            raise InvalidInput(f"Taxonomy {path}: concept {item['id']!r} has a malformed broader")
        concepts.append(Concept(item["id"], label, tuple(alt), broader))
    return Taxonomy(str(data.get("version") or path.stem), concepts)


@cache
def _load_cached(path: str) -> Taxonomy:
    return load_taxonomy(path)


def configured_taxonomy(path: str | None = None) -> Taxonomy:
    """The taxonomy at ``path`` (``Settings.taxonomy``, DOCSHELF_TAXONOMY), else the
    default that ships with docshelf."""
    return _load_cached(path or str(DEFAULT))
