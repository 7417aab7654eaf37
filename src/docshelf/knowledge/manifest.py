"""Backfill: enrichment computed elsewhere, written from a manifest with no LLM call
(SPEC §5 "Backfill"; docs/knowledge.md, "Backfill from a manifest").

A manifest is JSON Lines, one object per document:

    {"sha256": "9f86d0…", "summary": "…", "document_type": "report",
     "category": "Databases", "tags": ["backups", "wal"], "concepts": ["databases"]}
    {"path": "projects/raft.md", "source": "~/notes", "summary": "…"}

- A line names its document by ``sha256`` (the fingerprint of its bytes) or by
  ``path``: absolute (a file of a source, as ``docshelf show`` lists its files) or
  relative to a source's folder (the document's ``rel_path``), in every source unless
  ``source`` (an id or the folder) says which. ``sha256`` wins when both are given: a
  file changed since the manifest was made is not written with its old enrichment.
- Each field given replaces the document's; a field left out keeps what it has. Tags
  are added to the document's own. Concepts (ids or labels), the category and the tags
  are resolved through the taxonomy; what maps to no concept is reported, never dropped
  without a word (tags and an unknown category are kept as free text).
- The document is written as an enrichment is (``Enricher.write``): one transaction,
  concepts in the retrieval header (its snippets re-embedded when it changes),
  ``enrichment_mode`` and ``concept_source`` ``manifest``, distillates kept. It then
  counts as enriched; later producers keep its concepts as they keep a note's own.
- A bad line (not JSON, a field of the wrong type, no such document) is reported with
  its number and why, and loses nothing of the others (SPEC §8).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from docshelf.errors import InvalidInput, NotFound
from docshelf.knowledge.enrich import GENERAL, guess_document_type
from docshelf.knowledge.enricher import StoredChunks, Wiring
from docshelf.model import DOCUMENT_TYPES, Document, Enrichment, document_id
from docshelf.progress import Progress, ProgressEvent

MODE = "manifest"  # the enrichment mode and concept source of what a manifest wrote
MAX_LINE = 1 << 20  # bytes; a longer line is reported, not read
MAX_SUMMARY = 10_000  # characters
MAX_TAGS = 200  # tags or concepts on one line
FIELDS = ("sha256", "path", "source", "summary", "document_type", "category", "tags", "concepts")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class BadLine(Exception):
    """Why a line is not written (its number is the report's)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Line:
    """One line of a manifest, read and checked: None for each field it leaves out."""

    n: int
    sha256: str | None = None
    path: str | None = None
    source: str | None = None
    summary: str | None = None
    document_type: str | None = None
    category: str | None = None
    tags: tuple[str, ...] | None = None
    concepts: tuple[str, ...] | None = None
    ignored: tuple[str, ...] = ()  # keys it has that a manifest does not know


@dataclass(frozen=True)
class Applied:
    """A line written (or, in a dry run, that would be) to its document."""

    line: int
    document_id: str
    path: str  # the document's, relative to its source
    by: str  # "sha256" | "path"
    concept_ids: tuple[str, ...]
    tags: tuple[str, ...]  # the document's tags after it
    reembedded: int = 0


@dataclass
class ManifestReport:
    manifest: str
    dry_run: bool
    lines: int = 0  # lines read, blank ones aside
    applied: list[Applied] = field(default_factory=list)
    unmatched: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    # (field, value as given) -> the lines it is on: tags, concepts and categories that
    # name no concept of the taxonomy
    unmapped: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    ignored_fields: Counter[str] = field(default_factory=Counter)
    taxonomy_version: str = ""
    seconds: float = 0.0

    @property
    def reembedded(self) -> int:
        return sum(a.reembedded for a in self.applied)


# -- reading ---------------------------------------------------------------------------------
def read_line(n: int, raw: bytes) -> Line | None:
    """Line ``n`` checked (None when blank); ``BadLine`` says what is wrong with it."""
    try:
        text = raw.decode("utf-8-sig" if n == 1 else "utf-8").strip()
    except UnicodeDecodeError:
        raise BadLine("not UTF-8") from None
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise BadLine("not JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise BadLine(f"a JSON {type(data).__name__}, not an object")
    fields: dict[str, Any] = {"n": n}
    for key in ("sha256", "path", "source", "summary", "document_type", "category"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise BadLine(f"{key} must be a string, not {_kind(value)}")
        value = value.strip() if key in ("path", "source") else " ".join(value.split())
        if value:
            fields[key] = value
    for key in ("tags", "concepts"):
        fields[key] = _strings(key, data.get(key))
    line = Line(**fields, ignored=tuple(k for k in data if k not in FIELDS))
    return _checked(line)


def _kind(value: object) -> str:
    return {bool: "true/false", int: "a number", float: "a number", list: "a list"}.get(
        type(value), "an object"
    )


def _strings(key: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadLine(f"{key} must be a list of strings")
    if len(value) > MAX_TAGS:
        raise BadLine(f"{key}: {len(value)} of them, more than {MAX_TAGS}")
    cleaned = (" ".join(v.split()).lstrip("#").strip() for v in value)
    first: dict[str, str] = {}  # each once, as first spelt
    for v in cleaned:
        if v:
            first.setdefault(v.casefold(), v)
    return tuple(first.values())


def _checked(line: Line) -> Line:
    if line.sha256 is None and line.path is None:
        raise BadLine("names no document: give sha256 or path")
    if line.sha256 is not None:
        sha = line.sha256.lower()
        if not _SHA256.fullmatch(sha):
            raise BadLine("sha256 must be 64 hexadecimal characters")
        line = dataclasses.replace(line, sha256=sha)
    if line.summary is not None and len(line.summary) > MAX_SUMMARY:
        raise BadLine(f"summary longer than {MAX_SUMMARY} characters")
    if line.document_type is not None:
        kind = line.document_type.casefold()
        if kind not in DOCUMENT_TYPES:
            raise BadLine(
                f"document_type {line.document_type!r} is not one of {', '.join(DOCUMENT_TYPES)}"
            )
        line = dataclasses.replace(line, document_type=kind)
    given = (line.summary, line.document_type, line.category, line.tags, line.concepts)
    if all(v is None for v in given):
        raise BadLine("gives nothing to write (summary, document_type, category, tags, concepts)")
    return line


def raw_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(number, bytes) per line of ``stream``; None for a line longer than ``MAX_LINE``
    (skipped to its end, never held whole)."""
    n = 0
    while True:
        raw = stream.readline(MAX_LINE + 1)
        if not raw:
            return
        n += 1
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            yield n, None
        else:
            yield n, raw


# -- matching --------------------------------------------------------------------------------
class Matcher:
    """A line's document: by its fingerprint, or by a file's path (absolute, or relative
    to a source's folder). The sources' files are read once, when a path first needs them."""

    def __init__(self, rt: Wiring) -> None:
        self.store = rt.store
        # a dry run's documents as the lines before would have left them
        self.previewed: dict[str, Document] = {}
        self._absolute: dict[str, str] | None = None
        self._relative: dict[str, dict[str, str]] = {}  # source id -> rel path -> document

    def __call__(self, line: Line) -> tuple[Document, str]:
        """(the document, "sha256" or "path"); ``BadLine`` when none (or more than one)."""
        doc, by = self._match(line)
        return self.previewed.get(doc.id, doc), by

    def _match(self, line: Line) -> tuple[Document, str]:
        if line.sha256 is not None:
            doc = self.store.get_document(document_id(line.sha256))
            if doc is not None and doc.sha256 == line.sha256:
                return doc, "sha256"
            hint = ""
            if line.path is not None:
                try:
                    self._by_path(line)
                    hint = f"; the file at {line.path} holds other bytes now"
                except BadLine:
                    pass
            raise BadLine(f"no document has sha256 {line.sha256}{hint}")
        return self._by_path(line), "path"

    def _by_path(self, line: Line) -> Document:
        assert line.path is not None
        path = os.path.expanduser(line.path)
        if os.path.isabs(path):
            found = {self._files().get(os.path.normpath(path))} - {None}
            where = ""
        else:
            rel = PurePosixPath(os.path.normpath(path.replace("\\", "/"))).as_posix()
            found, where = self._relative_matches(rel, line.source)
        if not found:
            raise BadLine(f"no document at {line.path}{where}")
        if len(found) > 1:
            raise BadLine(
                f"{line.path} names different documents in several sources: give the "
                "absolute path, the source, or the sha256"
            )
        doc = self.store.get_document(found.pop() or "")
        if doc is None:
            raise BadLine(f"no document at {line.path}{where}")
        return doc

    def _relative_matches(self, rel: str, source: str | None) -> tuple[set[str | None], str]:
        if source is not None:
            from docshelf.ingest.sync import named

            try:
                sources = [named(self.store, source)]
            except NotFound:
                raise BadLine(f"no source {source!r}") from None
            where = f" in the source {sources[0].path}"
        else:
            sources = self.store.list_sources()
            where = " in any source"
        found: set[str | None] = set()
        for s in sources:
            if s.id not in self._relative:
                files = self.store.files_of_source(s.id)
                self._relative[s.id] = {s.relative(p): f.document_id for p, f in files.items()}
            found.add(self._relative[s.id].get(rel))
        return found - {None}, where

    def _files(self) -> dict[str, str]:
        if self._absolute is None:
            self._absolute = {
                path: f.document_id
                for s in self.store.list_sources()
                for path, f in self.store.files_of_source(s.id).items()
            }
        return self._absolute


# -- writing ---------------------------------------------------------------------------------
def enrichment_of(rt: Wiring, doc: Document, line: Line, report: ManifestReport) -> Enrichment:
    """The enrichment ``line`` makes of ``doc``: its fields over the document's, concepts
    resolved through the taxonomy (what maps to none noted in ``report``)."""
    if doc.status != "complete":
        raise BadLine(f"the document is not indexed yet ({doc.status}); run this again later")
    summary = line.summary or doc.summary
    if not summary:
        raise BadLine(
            "gives no summary, and the document has none yet: add one, or run "
            "`docshelf enrich` on it first"
        )
    taxonomy = rt.taxonomy

    def unmapped(kind: str, value: str) -> None:
        report.unmapped.setdefault((kind, value), []).append(line.n)

    tags = doc.tags
    if line.tags is not None:
        known = {t.casefold() for t in doc.tags}
        tags = (*doc.tags, *(t for t in line.tags if t.casefold() not in known))
        for tag in taxonomy.map_tags(line.tags)[1]:
            unmapped("tags", tag)
    named: list[str] = []
    for name in line.concepts or ():
        concept = taxonomy.resolve(name)
        if concept is None:
            unmapped("concepts", name)
        else:
            named.append(concept)
    category = line.category
    if category is not None:
        as_concept = taxonomy.resolve(category)
        if as_concept is None:
            unmapped("category", category)
        else:
            category = as_concept
            named.insert(0, as_concept)  # the category is the primary concept
    tag_concepts = taxonomy.map_tags(tags)[0]  # the document's own tags' and the line's
    decides = bool(named) or line.concepts is not None
    decides = decides or bool(line.tags and taxonomy.map_tags(line.tags)[0])
    concept_ids, source, version = doc.concept_ids, doc.concept_source, doc.taxonomy_version
    if decides:
        concept_ids = tuple(dict.fromkeys([*named, *tag_concepts]))
        source, version = (MODE if concept_ids else None), taxonomy.version
    if category is None:
        category = concept_ids[0] if decides and concept_ids else doc.category
        category = category or (concept_ids[0] if concept_ids else GENERAL)
    kind = line.document_type or doc.document_type
    if not kind:  # the offline producer's rule: from the document's structure
        kind = guess_document_type(doc, StoredChunks(rt.store, doc.id))
    return Enrichment(
        summary=summary,
        document_type=kind,
        category=category,
        concept_ids=concept_ids,
        concept_source=source,
        taxonomy_version=version,
        claims=None,
        mode=MODE,
        tags=tags if line.tags is not None else None,
    )


def backfill(
    rt: Wiring,
    manifest: str | Path | IO[bytes],
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ManifestReport:
    """Write the enrichment a manifest holds (see the module's docstring); with
    ``dry_run``, only report what would be written. ``manifest``: a file, or a stream of
    its bytes. Never calls the LLM."""
    started = time.perf_counter()
    if isinstance(manifest, str | Path):
        path = Path(manifest).expanduser()
        try:
            stream: IO[bytes] = path.open("rb")
        except OSError as exc:
            raise InvalidInput(f"Cannot read the manifest {path}: {exc.strerror or exc}") from None
        total: int | None = _count_lines(path)
        name = str(path)
    else:
        stream, total, name = manifest, None, "-"
    report = ManifestReport(name, dry_run, taxonomy_version=rt.taxonomy.version)
    match = Matcher(rt)
    try:
        for n, raw in raw_lines(stream):
            if progress:
                progress(ProgressEvent("enrich", n - 1, total, "lines", name))
            _one(rt, n, raw, match, report)
    finally:
        if stream is not manifest:
            stream.close()
    if report.applied and not dry_run:
        rt.enriched()
    if progress and report.lines:
        progress(ProgressEvent("enrich", report.lines, report.lines, "lines", "done"))
    report.seconds = time.perf_counter() - started
    return report


def _one(rt: Wiring, n: int, raw: bytes | None, match: Matcher, report: ManifestReport) -> None:
    """Read, match and write line ``n``; a bad one goes to the report."""
    if raw is not None and not raw.removeprefix(b"\xef\xbb\xbf").strip():
        return  # a blank line
    report.lines += 1
    try:
        if raw is None:
            raise BadLine(f"longer than {MAX_LINE} bytes")
        line = read_line(n, raw)
        if line is None:
            return
        report.ignored_fields.update(line.ignored)
        doc, by = match(line)
        e = enrichment_of(rt, doc, line, report)
        reembedded = 0
        if report.dry_run:
            match.previewed[doc.id] = _as_written(doc, e)
        else:
            try:
                reembedded = rt.enricher.write(doc, e)
            except NotFound:  # removed meanwhile
                raise BadLine(f"the document {doc.id} was removed meanwhile") from None
        tags = e.tags if e.tags is not None else doc.tags
        report.applied.append(Applied(n, doc.id, doc.rel_path, by, e.concept_ids, tags, reembedded))
    except BadLine as exc:
        report.unmatched.append((n, exc.reason))


def _as_written(doc: Document, e: Enrichment) -> Document:
    """``doc`` as writing ``e`` would leave it (what a dry run's later lines see)."""
    return dataclasses.replace(
        doc,
        summary=e.summary,
        document_type=e.document_type,
        category=e.category,
        concept_ids=e.concept_ids,
        primary_concept_id=e.concept_ids[0] if e.concept_ids else None,
        concept_source=e.concept_source,
        taxonomy_version=e.taxonomy_version,
        tags=doc.tags if e.tags is None else e.tags,
        enrichment_mode=e.mode,
    )


def _count_lines(path: Path) -> int | None:
    """The lines of a file, read a block at a time (a progress bar's total)."""
    try:
        with path.open("rb") as f:
            count, last = 0, b"\n"
            while block := f.read(1 << 20):
                count += block.count(b"\n")
                last = block[-1:]
            return count + (last != b"\n")
    except OSError:
        return None
