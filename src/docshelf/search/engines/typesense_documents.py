"""A library's documents in Typesense (``<base>_documents``), beside its text and vector
collections (``typesense_lexical.py``, ``typesense.py``): one Typesense document a
docshelf document, with what a team's other search filters and facets by — title, file
name and type, document type, category, tags, concept ids, summary, page count, size,
when it was added, its date, path and sha256 (``SCHEMA``).

- **In step**: the text index's upkeep (``TypesenseLexicalIndex.maintain``) brings it in
  line with the store whenever the store's generation moved: every document is read, and
  those whose fields changed (a fingerprint of them, kept in ``documents-seen.json``
  beside the text index's record) are upserted, those the store no longer holds deleted.
  The record ``documents.json`` names the generation it holds; only a collection at the
  store's generation answers (else the store does, as before).
- **Filters**: search's metadata filters are said in Typesense's own syntax
  (``filter_by``: ``file_type:=`pdf` && tag_keys:=[`raft`] && dated:>=…``) and asked of
  this collection; the ids it answers narrow the text and vector queries (Typesense 0.24
  has no joins). What only the store knows — a caller's access, their own sources,
  folders and dates, a notebook, named documents — the store resolves to ids, ANDed in.
  The store checks every hit again (``collections.fetched``): the engine narrows, it is
  never trusted over the store.
- **Facets**: counted by Typesense (``facet_by``) for a filter it can say whole (no
  caller, no notebook); else by the store, which counts a caller's access.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from docshelf import durable
from docshelf.model import Document
from docshelf.search.engines.collections import pushed
from docshelf.search.engines.sidecar import SidecarStore
from docshelf.search.engines.typesense import PAGE as PAGE_HITS
from docshelf.search.engines.typesense import TypesenseServer
from docshelf.store.base import FACETS, SearchFilters

RECORD = "documents.json"  # {where, collection, generation, count}
SEEN = "documents-seen.json"  # {document id: fingerprint of what Typesense holds}
PAGE = 1_000  # documents read and written at a time
LAYOUT = 2  # the fields below; a collection of another layout is filled again

SCHEMA: list[dict[str, Any]] = [
    {"name": "document_id", "type": "string"},
    {"name": "title", "type": "string"},
    {"name": "file_name", "type": "string"},
    {"name": "file_type", "type": "string", "facet": True},
    {"name": "document_type", "type": "string", "facet": True, "optional": True},
    {"name": "category", "type": "string", "facet": True, "optional": True},
    {"name": "tags", "type": "string[]", "facet": True},
    {"name": "tag_keys", "type": "string[]", "facet": True},  # lowercased (``tag_key``)
    {"name": "concept_ids", "type": "string[]", "facet": True},
    {"name": "summary", "type": "string", "optional": True},
    {"name": "page_count", "type": "int32", "optional": True},
    {"name": "size", "type": "int64"},
    {"name": "added_at", "type": "float"},
    {"name": "dated", "type": "float"},  # its file's last change, else when it was added
    {"name": "year", "type": "string", "facet": True},  # of ``dated``, UTC
    {"name": "path", "type": "string"},
    {"name": "rel_path", "type": "string"},
    {"name": "folders", "type": "string[]"},  # every folder above it, each ending in "/"
    {"name": "source_id", "type": "string", "facet": True, "optional": True},
    {"name": "sha256", "type": "string"},
    {"name": "status", "type": "string", "facet": True},
]

# a facet of ``store.FACETS`` -> the field Typesense counts it by
FACET_FIELDS = {
    "type": "file_type",
    "doctype": "document_type",
    "source": "source_id",
    "tag": "tag_keys",
    "concept": "concept_ids",
    "date": "year",
}


@dataclasses.dataclass(frozen=True)
class Held:
    """What the collection holds: the store as of one generation."""

    where: str
    collection: str
    generation: int
    count: int
    layout: int = 0


# -- what a document is in Typesense --------------------------------------------------------
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def tag_key(tag: str) -> str:
    """A tag as the store matches and counts it: in any case, SQLite's ``lower()``
    (which folds ASCII letters only)."""
    return tag.translate(_ASCII_LOWER)


def folders(path: str) -> list[str]:
    """Every folder above ``path``, each ending in "/": ``a/b/c.md`` → ``a/``, ``a/b/``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) + "/" for n in range(len(parts))]


def year(when: float) -> str:
    try:
        return str(time.gmtime(when).tm_year)
    except (OverflowError, OSError, ValueError):  # no calendar date
        return ""


def as_typesense(doc: Document, dated: float) -> dict[str, Any]:
    """The Typesense document of a store's document (its id the document's), ``dated``
    its date (``DATE_SQL``)."""
    document: dict[str, Any] = {
        "id": doc.id,
        "document_id": doc.id,
        "title": doc.title,
        "file_name": PurePosixPath(doc.rel_path or doc.path).name,
        "file_type": doc.file_type,
        "tags": list(doc.tags),
        "tag_keys": list(dict.fromkeys(tag_key(t) for t in doc.tags)),
        "concept_ids": list(doc.concept_ids),
        "size": doc.size_bytes,
        "added_at": doc.added_at,
        "dated": dated,
        "year": year(dated),
        "path": doc.path,
        "rel_path": doc.rel_path,
        "folders": sorted({*folders(doc.path), *folders(doc.rel_path)}),
        "sha256": doc.sha256,
        "status": doc.status,
    }
    optional = {
        "document_type": doc.document_type,
        "category": doc.category,
        "summary": doc.summary,
        "page_count": doc.page_count,
        "source_id": doc.source_id,
    }
    document.update({k: v for k, v in optional.items() if v is not None})
    return document


def fingerprint(document: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(document, sort_keys=True).encode()).hexdigest()


# -- search's filters in Typesense's syntax --------------------------------------------------
def quoted(value: str) -> str | None:
    """A string value for ``filter_by``, in backticks (commas, spaces, brackets and
    ``&&`` are then its own); None for one holding a backtick, which cannot be said."""
    return None if "`" in value else f"`{value}`"


def _any_of(field: str, values: Sequence[str]) -> str | None:
    said = [quoted(v) for v in values]
    if not said or any(v is None for v in said):
        return None
    return f"{field}:=[{', '.join(v for v in said if v)}]"


def store_part(filters: SearchFilters) -> SearchFilters:
    """What of ``filters`` only the store can say: a caller's access (and, with a caller,
    their own sources, paths and dates: ``date_sql``), a notebook, named documents, a
    path prefix that is not a folder."""
    keep = SearchFilters(
        user_id=filters.user_id,
        document_ids=filters.document_ids,
        notebook=filters.notebook,
    )
    if filters.user_id:
        return dataclasses.replace(
            keep,
            source_id=filters.source_id,
            path_prefix=filters.path_prefix,
            dated_from=filters.dated_from,
            dated_before=filters.dated_before,
        )
    if filters.path_prefix and not filters.path_prefix.endswith("/"):
        return dataclasses.replace(keep, path_prefix=filters.path_prefix)
    return keep


def filter_by(filters: SearchFilters, documents: Collection[str] | None = None) -> str | None:
    """``filters`` but ``store_part(filters)`` in Typesense's syntax, ANDed with the ids
    ``documents`` (what the store resolved); "" for no condition, None when a value
    cannot be said (a backtick in it: the store answers)."""
    parts: list[str | None] = []
    if filters.file_type:
        parts.append(_any_of("file_type", [filters.file_type]))
    if filters.document_type:
        parts.append(_any_of("document_type", [filters.document_type]))
    parts += [_any_of("tag_keys", [tag_key(tag)]) for tag in filters.tags]
    parts += [_any_of("concept_ids", group) for group in filters.concept_groups]
    if not filters.user_id:
        if filters.source_id:
            parts.append(_any_of("source_id", [filters.source_id]))
        if filters.path_prefix and filters.path_prefix.endswith("/"):
            parts.append(_any_of("folders", [filters.path_prefix]))
        if filters.dated_from is not None:
            parts.append(f"dated:>={filters.dated_from:.6f}")
        if filters.dated_before is not None:
            parts.append(f"dated:<{filters.dated_before:.6f}")
    if documents is not None:
        parts.append(_any_of("document_id", sorted(documents)))
    if any(p is None for p in parts):
        return None
    return " && ".join(p for p in parts if p)


class TypesenseDocuments:
    """The ``<base>_documents`` collection: kept in step by ``sync`` (under the text
    index's lock), read by ``pushed`` and ``facet_counts``."""

    def __init__(
        self,
        store: SidecarStore,
        server: TypesenseServer,
        directory: Path,
        base: Callable[[], str],
    ) -> None:
        self._store = store
        self.server = server
        self.directory = directory
        self._base = base  # the library's collections' name (the URL's, else minted)
        self._held: tuple[int, Held | None] = (-1, None)

    @property
    def collection(self) -> str:
        return f"{self._base()}_documents"

    # -- reading ---------------------------------------------------------------------------
    def held(self) -> Held | None:
        """The record, when it may answer: of this server, at the store's generation."""
        try:
            stamp = (self.directory / RECORD).stat().st_mtime_ns
        except OSError:
            return None
        if stamp != self._held[0]:
            self._held = (stamp, self._record())
        record = self._held[1]
        if record is None or record.where != self.server.where or record.layout != LAYOUT:
            return None
        return record if record.generation == self._store.generation() else None

    def pushed(self, filters: SearchFilters, most: int) -> frozenset[str] | None:
        """The documents ``filters`` let through, asked of Typesense in its filter syntax
        (the store's part resolved by the store), when at most ``most``; None: no filter,
        or too many (the store checks each candidate). The store answers while this
        collection is behind it."""
        if filters.empty:
            return None
        if self.held() is None:
            return pushed(self._store, filters, most)
        rest = store_part(filters)
        ids = None if rest.empty else self._store.matching_documents(rest)
        if ids is not None and (not ids or len(ids) > most):
            return frozenset() if not ids else pushed(self._store, filters, most)
        said = filter_by(filters, ids)
        if said is None:
            return pushed(self._store, filters, most)
        if not said:
            return None
        if ids is not None and not filter_by(filters):
            return ids  # (all the store's to say: nothing for Typesense to narrow)
        query = {"q": "*", "filter_by": said, "include_fields": "document_id"}
        [(hits, found)] = self.server.search_each(self.collection, [query], min(most, PAGE_HITS))
        if found > most:
            return None
        if found > len(hits):  # (more than a page, fewer than ``most``)
            [(hits, _)] = self.server.search_each(self.collection, [query], found)
        return frozenset(h["document"]["document_id"] for h in hits)

    def facet_counts(
        self, filters: SearchFilters, facets: Sequence[str] = FACETS
    ) -> dict[str, dict[str, int]] | None:
        """Typesense's counts of each of ``facets`` over the documents ``filters`` let
        through, ordered as the store orders them; None when the collection is behind or
        the filter needs the store (a caller, a notebook, named documents)."""
        if self.held() is None or not store_part(filters).empty:
            return None
        said = filter_by(filters)
        if said is None:
            return None
        query: dict[str, Any] = {
            "q": "*",
            "facet_by": ",".join(FACET_FIELDS[f] for f in facets),
            "max_facet_values": 10_000,
            "per_page": 0,
            **({"filter_by": said} if said else {}),
        }
        result = self.server.client.collections[self.collection].documents.search(query)
        counted = {c["field_name"]: c["counts"] for c in result.get("facet_counts", ())}
        out: dict[str, dict[str, int]] = {}
        for facet in facets:
            counts = {
                str(c["value"]): int(c["count"])
                for c in counted.get(FACET_FIELDS[facet], ())
                if c["value"] != ""
            }
            if facet == "date":
                out[facet] = dict(sorted(counts.items(), reverse=True))
            else:
                out[facet] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return out

    def _record(self) -> Held | None:
        data = durable.read_pointer(self.directory, RECORD)
        try:
            return Held(**data) if data is not None else None
        except TypeError:  # (of another shape: filled again)
            return None

    # -- writing (under the text index's folder lock) ----------------------------------------
    def sync(self) -> int:
        """Bring the collection in line with the store (idempotent: a crash half-way is
        healed by doing it again). Returns how many documents were written or deleted."""
        generation, collection = self._store.generation(), self.collection
        record, present = self._record(), collection in self.server.names()
        seen: dict[str, str] = {}
        if (
            record is not None
            and (record.where, record.collection, record.layout)
            == (self.server.where, collection, LAYOUT)
            and present
            and self.server.count(collection) == record.count
        ):
            if record.generation == generation:
                return 0
            seen = durable.read_pointer(self.directory, SEEN) or {}
        else:  # new, of another server or layout, or not what it was: filled again
            if present:
                self.server.drop(collection)
            self.server.client.collections.create({"name": collection, "fields": SCHEMA})
        changed = self._write(seen)
        durable.publish_pointer(self.directory, seen, SEEN)
        count = self.server.count(collection)
        held = Held(self.server.where, collection, generation, count, LAYOUT)
        durable.publish_pointer(self.directory, dataclasses.asdict(held), RECORD)
        return changed

    def _write(self, seen: dict[str, str]) -> int:
        """Upsert what changed, delete what is gone; ``seen`` updated to match."""
        changed, kept = 0, set()
        for entries in self._pages():
            documents = [as_typesense(d, dated) for d, dated in entries]
            marks = [fingerprint(d) for d in documents]
            fresh = [d for d, m in zip(documents, marks, strict=True) if seen.get(d["id"]) != m]
            if fresh:
                self.server.upsert(self.collection, fresh)
                changed += len(fresh)
            for d, m in zip(documents, marks, strict=True):
                seen[d["id"]] = m
                kept.add(d["id"])
        gone = sorted(set(seen) - kept)
        for start in range(0, len(gone), PAGE):
            part = gone[start : start + PAGE]
            said = _any_of("document_id", part)
            if said is not None:
                self.server.client.collections[self.collection].documents.delete(
                    {"filter_by": said}
                )
        for document_id in gone:
            del seen[document_id]
        return changed + len(gone)

    def _pages(self) -> Iterator[list[tuple[Document, float]]]:
        after = ""
        while entries := self._store.dated_documents(after, PAGE):
            yield entries
            after = entries[-1][0].id
