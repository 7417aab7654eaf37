"""Reading ``docshelf export`` archives back: every line checked and turned into
domain values (see ``docshelf.portable`` for the format).

Nothing here trusts the archive: each field is checked against the annotation
of the dataclass it becomes, ids must derive from the document's SHA-256 as
they do when docshelf makes them, vectors must have the manifest's size and
be finite, and a line longer than ``MAX_LINE`` is refused before it is parsed.
Every error is an ``InvalidInput`` that names the member and line.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import numpy as np
import numpy.typing as npt

from docshelf.errors import Conflict, InvalidInput
from docshelf.model import (
    Chunk,
    Document,
    InnerHeading,
    Job,
    PageBreak,
    Source,
    Tier,
    User,
    chunk_id,
    document_id,
)
from docshelf.parse.links import WikiLink
from docshelf.store import FileRecord, Store

DOCUMENTS = "documents.jsonl"
MAX_LINE = 512 * 2**20  # one document's line; larger is refused as hostile
SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Access:
    user_id: str
    title: str | None


@dataclass(frozen=True)
class Entry:
    """One document of the archive, checked and turned into domain values."""

    document: Document
    chunks: list[Chunk]
    vectors: dict[str, npt.NDArray[np.float32]]  # snippet id → vector
    files: list[FileRecord]
    access: list[Access]
    links: list[WikiLink]
    names: dict[str, list[str]]  # kind → names
    job: Job | None
    distillates: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def lines(zf: zipfile.ZipFile, member: str) -> Iterator[tuple[dict[str, Any], str]]:
    with zf.open(member) as fh:
        n = 0
        while line := fh.readline(MAX_LINE + 1):
            n += 1
            where = f"{member} line {n}"
            if len(line) > MAX_LINE:
                raise InvalidInput(f"{where} is over {MAX_LINE // 2**20} MB; refusing it")
            try:
                obj = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                raise InvalidInput(f"{where} is not valid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise InvalidInput(f"{where} is not a JSON object")
            yield obj, where


def entries(zf: zipfile.ZipFile, dim: int | None) -> Iterator[Entry]:
    for obj, where in lines(zf, DOCUMENTS):
        yield _entry(obj, where, dim)


def user_line(obj: dict[str, Any], where: str) -> tuple[User, str | None]:
    user = build(User, obj, where)
    token = checked(str | None, obj.get("token_hash"), f"{where}.token_hash")
    if token is not None and not SHA256.match(token):
        raise InvalidInput(f"{where}.token_hash is not a SHA-256")
    return user, token


def source_line(
    obj: dict[str, Any], where: str, user_ids: set[str], store: Store
) -> tuple[Source, list[tuple[str, str]]]:
    source = build(Source, obj, where)
    if source.kind not in ("folder", "file"):
        raise InvalidInput(f"{where}.kind must be folder or file")
    owner = source.user_id
    if owner is not None and owner not in user_ids and store.get_user(owner) is None:
        raise InvalidInput(f"{where}: its owner {owner!r} is not in the archive")
    failures = [
        (
            checked(str, f.get("path"), f"{where}.failures.path"),
            checked(str, f.get("reason"), f"{where}.failures.reason"),
        )
        for f in checked(list[dict[str, Any]], obj.get("failures", []), f"{where}.failures")
    ]
    return source, failures


def _entry(obj: dict[str, Any], where: str, dim: int | None) -> Entry:
    record = obj.get("document")
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: no document record")
    doc = build(Document, {**record, "chunk_counts": {}}, f"{where}.document")
    if not SHA256.match(doc.sha256) or doc.id != document_id(doc.sha256):
        raise InvalidInput(f"{where}: the document id does not match its SHA-256")
    chunks: list[Chunk] = []
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    for c in checked(list[dict[str, Any]], obj.get("chunks"), f"{where}.chunks"):
        fields = {k: v for k, v in c.items() if k not in ("inner", "page_breaks")}
        chunk = build(Chunk, {**fields, "document_id": doc.id}, f"{where}.chunks")
        if c.get("inner"):
            chunk = dataclasses.replace(chunk, inner=_inner(c["inner"], chunk, where))
        if c.get("page_breaks"):
            breaks = _page_breaks(c["page_breaks"], chunk, where)
            chunk = dataclasses.replace(chunk, page_breaks=breaks)
        if chunk.id != chunk_id(doc.sha256, chunk.tier, chunk.index):
            raise InvalidInput(f"{where}: chunk id {chunk.id!r} does not match its document")
        chunks.append(chunk)
        raw = checked(str | None, c.get("vector"), f"{where}.chunks.vector")
        if raw is not None:
            vectors[chunk.id] = _vector(raw, chunk, dim, where)
    if len({c.id for c in chunks}) != len(chunks):
        raise InvalidInput(f"{where}: a chunk appears twice")
    files = [
        FileRecord(
            checked(str, f.get("path"), f"{where}.files.path"),
            checked(str, f.get("source_id"), f"{where}.files.source_id"),
            doc.id,
            checked(int, f.get("size"), f"{where}.files.size"),
            checked(int, f.get("mtime_ns"), f"{where}.files.mtime_ns"),
        )
        for f in checked(list[dict[str, Any]], obj.get("files"), f"{where}.files")
    ]
    access = [
        Access(
            checked(str, a.get("user_id"), f"{where}.access.user_id"),
            checked(str | None, a.get("title"), f"{where}.access.title"),
        )
        for a in checked(list[dict[str, Any]], obj.get("access"), f"{where}.access")
    ]
    links = [
        build(WikiLink, k, f"{where}.links")
        for k in checked(list[dict[str, Any]], obj.get("links"), f"{where}.links")
    ]
    names: dict[str, list[str]] = {}
    for n in checked(list[dict[str, Any]], obj.get("names"), f"{where}.names"):
        kind = checked(str, n.get("kind"), f"{where}.names.kind")
        if kind not in ("path", "title"):
            raise InvalidInput(f"{where}.names.kind must be path or title")
        names.setdefault(kind, []).append(checked(str, n.get("name"), f"{where}.names.name"))
    job = None
    if obj.get("job") is not None:
        job = build(Job, checked(dict[str, Any], obj["job"], f"{where}.job"), f"{where}.job")
        if job.document_id != doc.id or not SHA256.match(job.blob_sha256):
            raise InvalidInput(f"{where}.job does not belong to its document")
    snippet_ids = {c.id for c in chunks if c.tier is Tier.SNIPPET}
    distillates = []
    for x in checked(list[dict[str, Any]], obj.get("distillates", []), f"{where}.distillates"):
        text = checked(str, x.get("text"), f"{where}.distillates.text")
        cited = tuple(checked(list[str], x.get("chunk_ids"), f"{where}.distillates.chunk_ids"))
        if not set(cited) <= snippet_ids:
            raise InvalidInput(f"{where}: a distillate cites a chunk the document does not have")
        distillates.append((text, cited))
    if distillates and (doc.enriched_at is None or doc.enrichment_mode is None):
        raise InvalidInput(f"{where}: distillates on a document that was never enriched")
    return Entry(doc, chunks, vectors, files, access, links, names, job, distillates)


def _page_breaks(raw: Any, chunk: Chunk, where: str) -> tuple[PageBreak, ...]:
    """A snippet's page breaks from its archive line: ``[[start, page]…]``, each inside the
    snippet and its pages, in order (an archive written before them has none)."""
    out: list[PageBreak] = []
    for item in checked(list[Any], raw, f"{where}.chunks.page_breaks"):
        pair = checked(list[int], item, f"{where}.chunks.page_breaks")
        if len(pair) != 2:
            raise InvalidInput(f"{where}: a page break of {chunk.id} is not [start, page]")
        start, page = pair
        inside = chunk.start < start < chunk.end and (out == [] or start > out[-1].start)
        if (
            not inside
            or chunk.page_start is None
            or not (chunk.page_start <= page <= (chunk.page_end or chunk.page_start))
        ):
            raise InvalidInput(f"{where}: a page break of {chunk.id} is out of place")
        out.append(PageBreak(start, page))
    return tuple(out)


def _inner(raw: Any, chunk: Chunk, where: str) -> tuple[InnerHeading, ...]:
    """A chunk's inner headings from its archive line: ``[[start, [heading…]]…]``, each
    inside the chunk, in order (an archive written before them has none)."""
    out: list[InnerHeading] = []
    for item in checked(list[Any], raw, f"{where}.chunks.inner"):
        pair = checked(list[Any], item, f"{where}.chunks.inner")
        if len(pair) != 2:
            raise InvalidInput(f"{where}: an inner heading of {chunk.id} is not [start, path]")
        start = checked(int, pair[0], f"{where}.chunks.inner.start")
        path = checked(tuple[str, ...], pair[1], f"{where}.chunks.inner.heading_path")
        if not chunk.start <= start < chunk.end or (out and start <= out[-1].start):
            raise InvalidInput(f"{where}: an inner heading of {chunk.id} is out of place")
        out.append(InnerHeading(start, path))
    return tuple(out)


def _vector(raw: str, chunk: Chunk, dim: int | None, where: str) -> npt.NDArray[np.float32]:
    if chunk.tier is not Tier.SNIPPET:
        raise InvalidInput(f"{where}: section {chunk.id} carries a vector; only snippets have one")
    if dim is None:
        raise InvalidInput(f"{where}: vectors, but the manifest names no embedding_dim")
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{where}: the vector of {chunk.id} is not base64") from None
    if len(data) != 4 * dim:
        raise InvalidInput(f"{where}: the vector of {chunk.id} is not {dim}-dimensional")
    vec = np.frombuffer(data, dtype="<f4").astype(np.float32)
    if not np.isfinite(vec).all():
        raise InvalidInput(f"{where}: the vector of {chunk.id} holds NaN or infinity")
    return vec


def build(cls: Any, data: Any, where: str) -> Any:
    """``cls(**data)`` with every field checked against its annotation."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{where} is not a JSON object")
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise InvalidInput(f"{where}: {f.name} is missing")
            continue
        kwargs[f.name] = checked(hints[f.name], data[f.name], f"{where}.{f.name}")
    return cls(**kwargs)


def checked(tp: Any, value: Any, where: str) -> Any:
    """``value`` if it fits the type ``tp`` (tuples and enums are built from JSON)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return checked(inner, value, where)
    if origin is tuple:
        return tuple(checked(args[0], v, where) for v in checked(list[Any], value, where))
    if origin is list:
        if not isinstance(value, list):
            raise InvalidInput(f"{where} must be a list")
        return [checked(args[0], v, where) for v in value] if args[0] is not Any else value
    if origin is dict:
        if not isinstance(value, dict):
            raise InvalidInput(f"{where} must be an object")
        return value
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise InvalidInput(f"{where}: {value!r} is not a known {tp.__name__}") from None
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if tp is Any or (isinstance(value, tp) and not (tp is int and isinstance(value, bool))):
        return value
    raise InvalidInput(f"{where} must be {getattr(tp, '__name__', tp)}, not {value!r}")


def check_references(entry: Entry, user_ids: set[str], source_ids: set[str], store: Store) -> None:
    """The sources and users a document names are in the archive or the target."""
    doc = entry.document
    wanted = {f.source_id for f in entry.files} | ({doc.source_id} if doc.source_id else set())
    for source_id in wanted - source_ids:
        if store.get_source(source_id) is None:
            raise InvalidInput(f"{doc.id} refers to source {source_id!r}, not in the archive")
    for a in entry.access:
        if a.user_id not in user_ids and store.get_user(a.user_id) is None:
            raise InvalidInput(f"{doc.id} is shared with user {a.user_id!r}, not in the archive")


def check_people(
    store: Store,
    users: list[tuple[User, str | None]],
    sources: list[tuple[Source, list[tuple[str, str]]]],
) -> None:
    """Users and sources already in the target must be the same ones (same ids)."""
    for user, _ in users:
        other = store.get_user(user.name)
        if other is not None and other.id != user.id:
            raise Conflict(
                f"This library already has a user named {user.name!r} ({other.id}), another "
                f"than the archive's ({user.id}); import into an empty library, or revoke and "
                "remove one of them first"
            )
    for source, _ in sources:
        other_source = store.find_source(source.path)
        if other_source is not None and other_source.id != source.id:
            raise Conflict(f"{source.path} is already a source here, as {other_source.id}")
