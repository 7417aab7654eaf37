"""A portable dump of a whole library: ``docshelf export`` / ``docshelf import``.

Moves a library between stores — the embedded SQLite file to PostgreSQL, or
one PostgreSQL database to another — without parsing or embedding anything
again. The archive is one ZIP file (deflate, ZIP64) of JSON lines:

    manifest.json    format name and version, the embedding model and dimension,
                     the counts of everything below (written last)
    users.jsonl      users with the SHA-256 of their token (never the token itself)
    sources.jsonl    registered folders and files, with their remembered failures
    documents.jsonl  one line per document: its record (SPEC §9), the files that
                     hold it, its chunks of both tiers with every field, each
                     snippet's vector (base64 of little-endian float32), its access
                     links, wikilinks and names, and its ingest job
    notebooks.jsonl  users' notebooks (model.Notebook), when there are any
    blobs/<sha256>   the bytes of uploaded documents, when the blob store has them

Export reads the store inside one read-only snapshot on a connection of its
own (writers are never blocked, and a library that changes meanwhile is
dumped as it was when the export began), a page of documents at a time, and
writes to a temporary file renamed into place at the end (0600 from the first
byte, whatever the umask: it holds all the text). Import reads the
archive twice: first to check all of it — names, format version, every line,
the counts, each blob's hash, and that the embedding model fits the target —
writing nothing; then to write. Documents are written whole, a batch of them
per transaction, so an interrupted import leaves only complete documents and
running it again finishes it. What the target already has (a document, user
or source with the same id) is left as it is, so importing twice changes
nothing. Both phases keep only a page of data in memory. On PostgreSQL the
HNSW index is built once after the vectors are in, and the tables are
analysed at the end (docs/deploy.md has the figures).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from docshelf import __version__
from docshelf.blobs import BlobStore
from docshelf.durable import create_private
from docshelf.errors import Conflict, InvalidInput, NotFound, Unavailable
from docshelf.ingest.prepare import text_hash
from docshelf.ingest.writer import DocumentWriter
from docshelf.model import Document, Enrichment, Failure, Job, Notebook, Source, Tier, User
from docshelf.portable.lines import (
    DOCUMENTS,
    Entry,
    check_people,
    check_references,
    entries,
    lines,
    source_line,
    user_line,
)
from docshelf.portable.notebooks import (
    NOTEBOOKS,
    import_notebooks,
    read_notebooks,
    write_notebooks,
)
from docshelf.portable.snapshot import open_reader, refresh_statistics
from docshelf.store import Store

if TYPE_CHECKING:
    from docshelf.runtime import Runtime

FORMAT = "docshelf-export"
VERSION = 1
MANIFEST = "manifest.json"
USERS = "users.jsonl"
SOURCES = "sources.jsonl"
BLOBS = "blobs/"
PAGE = 200  # documents written per transaction (at most 20 x PAGE chunks)
_BLOB_MEMBER = re.compile(r"^blobs/([0-9a-f]{64})$")

# (done, total, what) — the same shape as ``shelf.Progress``.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ExportReport:
    path: Path
    size_bytes: int
    embedding_model: str | None
    embedding_dim: int | None
    counts: dict[str, int]


@dataclass
class ImportReport:
    path: Path
    embedding_model: str | None
    counts: dict[str, int]  # what the archive holds
    added: Counter[str] = field(default_factory=Counter)  # what this import wrote
    skipped: Counter[str] = field(default_factory=Counter)  # already in the target
    requeued: list[str] = field(default_factory=list)  # unfinished jobs, due again here


# -- export ------------------------------------------------------------------------------


def export_library(
    database_url: str,
    blobs: BlobStore,
    dest: Path,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write the whole library at ``database_url`` (and its uploads' bytes) to ``dest``."""
    dest = Path(dest).expanduser()
    if dest.is_dir():
        raise InvalidInput(f"{dest} is a folder; give the archive's file name, e.g. library.zip")
    if dest.exists() and not overwrite:
        raise Conflict(f"{dest} exists; remove it or pass --force to replace it")
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}.partial")
    counts: Counter[str] = Counter()
    try:
        with open_reader(database_url) as reader, _zip_writer(tmp, dest) as zf:
            meta = reader.meta()
            model = meta.get("embedding_model")
            dim = int(meta["embedding_dim"]) if meta.get("embedding_dim") else None
            total = reader.count_documents()
            with zf.open(USERS, "w", force_zip64=True) as out:
                for user, token in reader.users():
                    _write_line(out, {**asdict(user), "token_hash": token})
                    counts["users"] += 1
            with zf.open(SOURCES, "w", force_zip64=True) as out:
                for source, failures in reader.sources():
                    _write_line(out, {**asdict(source), "failures": failures})
                    counts["sources"] += 1
                    counts["failures"] += len(failures)
            with zf.open(DOCUMENTS, "w", force_zip64=True) as out:
                for entry in reader.documents():
                    _write_line(out, entry)
                    _count_entry(counts, entry)
                    if progress:
                        progress(counts["documents"], total, entry["document"]["rel_path"])
            counts["notebooks"] = write_notebooks(zf, reader)
            for sha in reader.blob_hashes():
                try:
                    src = blobs.open(sha)
                except NotFound:
                    continue  # deleted meanwhile, or never stored here: nothing to carry
                with src, zf.open(f"{BLOBS}{sha}", "w", force_zip64=True) as out:
                    shutil.copyfileobj(src, out, 2**20)
                counts["blobs"] += 1
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "docshelf_version": __version__,
                "created_at": time.time(),
                "embedding_model": model,
                "embedding_dim": dim,
                "counts": {k: counts[k] for k in _COUNTED},
            }
            zf.writestr(MANIFEST, json.dumps(manifest, indent=2) + "\n")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ExportReport(dest, dest.stat().st_size, model, dim, {k: counts[k] for k in _COUNTED})


_COUNTED = (
    "users",
    "sources",
    "failures",
    "documents",
    "files",
    "sections",
    "snippets",
    "vectors",
    "access",
    "links",
    "names",
    "jobs",
    "blobs",
    "notebooks",
)


def _count_entry(counts: Counter[str], entry: dict[str, Any]) -> None:
    counts["documents"] += 1
    for key in ("files", "access", "links", "names"):
        counts[key] += len(entry[key])
    for c in entry["chunks"]:
        counts["sections" if c["tier"] == Tier.SECTION.value else "snippets"] += 1
        counts["vectors"] += c.get("vector") is not None
    counts["jobs"] += entry["job"] is not None


@contextmanager
def _zip_writer(tmp: Path, dest: Path) -> Iterator[zipfile.ZipFile]:
    """A ZIP file written at ``tmp`` (renamed to ``dest`` by the caller when complete),
    readable by its owner only from its first byte: it holds all the text and the token
    hashes."""
    try:
        with (
            create_private(tmp) as fh,
            zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf,
        ):
            yield zf
    except OSError as exc:
        raise Unavailable(f"Cannot write {dest}: {exc.strerror or exc}") from exc


def _write_line(out: IO[bytes], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    out.write(b"\n")


# -- import ---------------------------------------------------------------------------------


@dataclass
class _Archive:
    """What the first (checking) pass learnt about an archive."""

    model: str | None
    dim: int | None
    counts: dict[str, int]
    users: list[tuple[User, str | None]]
    sources: list[tuple[Source, list[tuple[str, str]]]]
    blobs: list[str]
    notebooks: list[Notebook]


def import_library(
    store: Store,
    blobs: BlobStore,
    path: Path,
    *,
    database_url: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the archive at ``path`` into ``store`` (and ``blobs``). Checks everything
    first and writes nothing when anything is wrong; see the module's docstring.

    ``database_url`` (the store's) lets a PostgreSQL target refresh its planner
    statistics at the end: right after a bulk load they are empty, and the lexical
    query's plan is then many times slower until autovacuum gets round to it."""
    path = Path(path).expanduser()
    with _open_archive(path) as zf:
        archive = _check(zf, store)
        report = ImportReport(path, archive.model, archive.counts)
        deferred_dim = _bind_model(store, archive)
        try:
            _import_people(store, archive, report)
            for sha in archive.blobs:
                if blobs.exists(sha):
                    report.skipped["blobs"] += 1
                    continue
                _copy_blob(zf, blobs, sha)
                report.added["blobs"] += 1
            batch: list[Entry] = []
            done = 0
            for entry in entries(zf, archive.dim):
                batch.append(entry)
                if len(batch) >= PAGE or sum(len(e.chunks) for e in batch) >= 20 * PAGE:
                    _write_batch(store, batch, archive.model, report)
                    done += len(batch)
                    batch = []
                    if progress:
                        progress(done, archive.counts["documents"], entry.document.rel_path)
            _write_batch(store, batch, archive.model, report)
            import_notebooks(store, archive.notebooks, report.added, report.skipped)
        finally:
            if deferred_dim is not None:  # binds the size; PostgreSQL builds its HNSW index
                store.set_meta("embedding_dim", str(deferred_dim))
    if database_url and report.added["documents"]:
        _refresh_statistics(database_url)
    return report


@contextmanager
def _open_archive(path: Path) -> Iterator[zipfile.ZipFile]:
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise InvalidInput(f"No such archive: {path}") from None
    except PermissionError:
        raise InvalidInput(f"Cannot read {path}: permission denied") from None
    except IsADirectoryError:
        raise InvalidInput(
            f"{path} is a folder, not an archive made by `docshelf export`"
        ) from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidInput(
            f"{path} is not an archive made by `docshelf export`, or it is truncated ({exc})"
        ) from None
    try:
        yield zf
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError) as exc:
        # a damaged member found while reading it (bad CRC, cut short)
        raise InvalidInput(f"{path} is damaged: {exc}") from None
    finally:
        zf.close()


def _check(zf: zipfile.ZipFile, store: Store) -> _Archive:
    """The first pass: the whole archive is read and checked, the target consulted;
    nothing is written."""
    blobs = _check_members(zf)
    manifest = _manifest(zf)
    counts: Counter[str] = Counter()
    users = [user_line(obj, where) for obj, where in lines(zf, USERS)]
    counts["users"] = len(users)
    user_ids = {u.id for u, _ in users}
    sources = [source_line(obj, where, user_ids, store) for obj, where in lines(zf, SOURCES)]
    counts["sources"] = len(sources)
    counts["failures"] = sum(len(f) for _, f in sources)
    source_ids = {s.id for s, _ in sources}
    check_people(store, users, sources)
    model, dim = manifest["embedding_model"], manifest["embedding_dim"]
    needed: set[str] = set()
    documents: set[str] = set()
    for entry in entries(zf, dim):
        check_references(entry, user_ids, source_ids, store)
        documents.add(entry.document.id)
        counts["documents"] += 1
        counts["files"] += len(entry.files)
        counts["sections"] += sum(c.tier is Tier.SECTION for c in entry.chunks)
        counts["snippets"] += sum(c.tier is Tier.SNIPPET for c in entry.chunks)
        counts["vectors"] += len(entry.vectors)
        counts["access"] += len(entry.access)
        counts["links"] += len(entry.links)
        counts["names"] += sum(len(n) for n in entry.names.values())
        if entry.job is not None:
            counts["jobs"] += 1
            needed.add(entry.job.blob_sha256)
    for sha in blobs:
        _verify_blob(zf, sha)
    counts["blobs"] = len(blobs)
    notebooks = read_notebooks(zf, store, user_ids, source_ids, documents)
    counts["notebooks"] = len(notebooks)
    expected = {"notebooks": 0, **manifest["counts"]}  # none in an archive made before them
    wrong = [k for k in _COUNTED if counts[k] != expected.get(k)]
    if wrong:
        detail = ", ".join(f"{k}: {counts[k]} found, {expected.get(k)} listed" for k in wrong)
        raise InvalidInput(f"The archive does not match its manifest ({detail}); it is damaged")
    _check_model(store, model, dim)
    ordered = sorted(blobs, key=lambda s: s not in needed)  # the bytes jobs need come first
    counted = {k: counts[k] for k in _COUNTED}
    return _Archive(model, dim, counted, users, sources, ordered, notebooks)


def _check_members(zf: zipfile.ZipFile) -> list[str]:
    """Refuse names that could point outside the archive's layout; the blobs' hashes."""
    seen: set[str] = set()
    blobs: list[str] = []
    for info in zf.infolist():
        name = info.filename
        if name in seen:
            raise InvalidInput(f"The archive holds {name!r} twice; it was not made by docshelf")
        seen.add(name)
        if name in (MANIFEST, USERS, SOURCES, DOCUMENTS, NOTEBOOKS):
            continue
        match = _BLOB_MEMBER.match(name)
        if match is None:
            raise InvalidInput(
                f"The archive holds an unexpected member {name!r} (only {MANIFEST}, "
                f"{USERS}, {SOURCES}, {DOCUMENTS} and blobs/<sha256> belong there); "
                "it was not made by `docshelf export`, refusing it"
            )
        blobs.append(match.group(1))
    missing = [n for n in (MANIFEST, USERS, SOURCES, DOCUMENTS) if n not in seen]
    if missing:
        raise InvalidInput(f"The archive lacks {', '.join(missing)}; it is incomplete")
    return blobs


def _manifest(zf: zipfile.ZipFile) -> dict[str, Any]:
    try:
        data = json.loads(zf.read(MANIFEST))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{MANIFEST} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput(f"{MANIFEST} does not describe a docshelf export")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidInput(f"{MANIFEST} has no format version")
    if version != VERSION:
        newer = "a newer docshelf; upgrade this one" if version > VERSION else "an older docshelf"
        raise InvalidInput(
            f"The archive is in format version {version}, made by {newer}; "
            f"this docshelf reads version {VERSION}"
        )
    model, dim = data.get("embedding_model"), data.get("embedding_dim")
    if model is not None and not isinstance(model, str):
        raise InvalidInput(f"{MANIFEST}: embedding_model must be a string")
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0):
        raise InvalidInput(f"{MANIFEST}: embedding_dim must be a positive number")
    if not isinstance(data.get("counts"), dict):
        raise InvalidInput(f"{MANIFEST} has no counts")
    return data


def _check_model(store: Store, model: str | None, dim: int | None) -> None:
    """Vectors are only comparable with vectors of the same model: the target must be
    bound to the archive's model, or hold no documents yet (then it is bound to it)."""
    bound = store.get_meta("embedding_model")
    if model is None or bound is None or (bound == model and _dim(store) in (None, dim)):
        return
    if store.stats().documents == 0:
        return
    raise Conflict(
        f"The archive's vectors were made with {model}"
        + (f" ({dim} dimensions)" if dim else "")
        + f", but this library's with {bound}. Import into an empty library, or make the "
        "two agree first (`docshelf reindex` with the same DOCSHELF_EMBEDDER on one of them)"
    )


def _dim(store: Store) -> int | None:
    value = store.get_meta("embedding_dim")
    return int(value) if value else None


def _verify_blob(zf: zipfile.ZipFile, sha: str) -> None:
    digest = hashlib.sha256()
    with zf.open(f"{BLOBS}{sha}") as fh:
        while block := fh.read(2**20):
            digest.update(block)
    if digest.hexdigest() != sha:
        raise InvalidInput(f"blobs/{sha} does not hold the bytes its name says; it is damaged")


# -- import: the writing pass -----------------------------------------------------------


def _bind_model(store: Store, archive: _Archive) -> int | None:
    """Bind the target to the archive's model. An embedding size not bound yet is bound
    only after the vectors are in (returned, for the caller to do): PostgreSQL then
    builds its HNSW index once, in bulk, instead of inserting into it vector by
    vector — half the import's time. An import killed before that leaves the size
    unbound (search still answers, by an exact scan); running it again binds it."""
    if archive.model is None:
        return None
    with store.transaction():
        if store.get_meta("embedding_model") != archive.model:
            store.set_meta("embedding_model", archive.model)
        bound = _dim(store)
        if archive.dim is None or bound == archive.dim:
            return None
        if bound is None:
            return archive.dim
        store.set_meta("embedding_dim", str(archive.dim))  # an empty store, bound otherwise
    return None


def _refresh_statistics(database_url: str) -> None:
    if database_url.startswith(("postgres://", "postgresql://")):
        refresh_statistics(database_url)


def _import_people(store: Store, archive: _Archive, report: ImportReport) -> None:
    with store.transaction():
        for user, token in archive.users:
            if store.get_user(user.id) is not None:
                report.skipped["users"] += 1
                continue
            store.put_user(user, token)
            report.added["users"] += 1
        for source, failures in archive.sources:
            if store.get_source(source.id) is not None:
                report.skipped["sources"] += 1
                continue
            store.add_source(source)
            store.record_failures(source.id, [Failure(p, r) for p, r in failures])
            report.added["sources"] += 1


def _copy_blob(zf: zipfile.ZipFile, blobs: BlobStore, sha: str) -> None:
    info = zf.getinfo(f"{BLOBS}{sha}")
    with zf.open(info) as src, blobs.writer(max(info.file_size, 1)) as w:
        while block := src.read(2**20):
            w.write(block)
        if w.commit() != sha:  # checked in the first pass; the archive changed since
            raise InvalidInput(f"blobs/{sha} changed while importing; run the import again")


def _write_batch(
    store: Store, batch: Sequence[Entry], model: str | None, report: ImportReport
) -> None:
    if not batch:
        return
    now = time.time()
    with store.transaction():
        for entry in batch:
            doc = entry.document
            if store.get_document(doc.id) is not None:
                report.skipped["documents"] += 1
                continue
            writer = DocumentWriter(store)
            writer.put(doc, entry.chunks)  # (pending, until its vectors are in)
            ids = [c.id for c in entry.chunks if c.id in entry.vectors]
            if ids:
                matrix = np.stack([entry.vectors[i] for i in ids])
                # pending no more when it has them all; else the next sync embeds the rest
                writer.add_vectors(ids, matrix, [doc.id])
                if model and model != "none":  # later syncs need not embed this text again
                    texts = {c.id: c.retrieval_text for c in entry.chunks}
                    store.cache_embeddings(
                        model, [(text_hash(texts[i]), entry.vectors[i]) for i in ids]
                    )
            for record in entry.files:
                store.put_file(record)
            for a in entry.access:
                store.grant(a.user_id, doc.id, a.title)
            store.put_links(doc.id, entry.links)
            for kind, names in entry.names.items():
                store.put_names(doc.id, names, kind)
            if entry.distillates and doc.enriched_at is not None:  # the fields came above
                store.put_enrichment(doc.id, _enrichment(doc, entry), doc.enriched_at)
            if entry.job is not None:
                store.put_job(_resumable(entry.job, now, report))
            report.added["documents"] += 1


def _enrichment(doc: Document, entry: Entry) -> Enrichment:
    """The document's enrichment as it was recorded (its fields and distillates)."""
    return Enrichment(
        summary=doc.summary or "",
        document_type=doc.document_type or "",
        category=doc.category or "",
        concept_ids=doc.concept_ids,
        concept_source=doc.concept_source,
        taxonomy_version=doc.taxonomy_version,
        claims=tuple(entry.distillates),
        mode=doc.enrichment_mode or "",
    )


def _resumable(job: Job, now: float, report: ImportReport) -> Job:
    """An unfinished job (queued, or running in the old library) is due here now, at its
    stage; finished and failed jobs stay as they were."""
    if job.status not in ("queued", "running"):
        return job
    report.requeued.append(job.document_id)
    return Job(
        **{
            **asdict(job),
            "status": "queued",
            "next_attempt_at": now,
            "lease_owner": None,
            "lease_expires_at": None,
        }
    )


__all__ = ["ExportReport", "ImportReport", "export_library", "import_library"]


def import_into(rt: Runtime, path: Path, *, progress: Progress | None = None) -> ImportReport:
    """``import_library`` into an open library: the imported jobs wake its workers, and
    its derived indexes are brought up to date."""
    report = import_library(
        rt.store, rt.blobs, path, database_url=rt.settings.database_url, progress=progress
    )
    for doc_id in report.requeued:
        rt.wake_workers(doc_id)
    rt.maintain_indexes()
    return report
