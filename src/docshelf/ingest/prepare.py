"""One file's trip to the store: read → fingerprint → parse → chunk → embed → write.

``prepare`` does the pure part for one file (no store, no model);
``Embedding`` turns retrieval texts into vectors through the embedding cache;
the caller (sync) batches files so the model sees many texts at once, and the
writer (``ingest/writer.py``) writes each document in its own transaction.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_mod
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.chunk import ChunkSettings, approx_tokens, chunk_document
from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.model import Chunk, Document, ParsedDocument, Tier, document_id, fingerprint
from docshelf.parse import parse
from docshelf.parse.links import WikiLink, wikilinks

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.embed import Embedder
    from docshelf.store.base import Store


def read_file(path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The file's bytes and the stat taken with them, or ``InvalidInput`` with the reason.

    The file is opened without blocking (a FIFO would otherwise wait for a writer
    forever) and without becoming a controlling terminal, then checked to be a
    regular file before a byte is read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        with open(os.open(path, flags), "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat_mod.S_ISREG(st.st_mode):
                raise InvalidInput("not a regular file")
            if st.st_size > max_bytes:
                raise InvalidInput(
                    f"too large: {st.st_size / 2**20:.1f} MB is over the "
                    f"{max_bytes / 2**20:.0f} MB limit (DOCSHELF_MAX_FILE_MB)"
                )
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise InvalidInput("file vanished before it could be read") from None
    except PermissionError:
        raise InvalidInput("permission denied") from None
    except IsADirectoryError:
        raise InvalidInput("is a folder, not a file") from None
    except OSError as exc:
        raise InvalidInput(f"unreadable: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InvalidInput("too large: the file grew past the size limit while being read")
    return data, st


@dataclass(frozen=True)
class Chunking:
    """What chunking needs from the library: its settings, token counter and taxonomy."""

    settings: ChunkSettings
    count_tokens: Callable[[str], int] = approx_tokens
    taxonomy: Taxonomy | None = None


@dataclass(frozen=True)
class Chunked:
    """A parsed document in chunks, with the concepts its tags map to."""

    parsed: ParsedDocument
    title: str
    chunks: list[Chunk]
    concepts: Concepts

    def fields(self) -> dict[str, Any]:
        """The document record's fields that parsing and chunking decide."""
        return {
            "title": self.title,
            "tags": self.parsed.tags,
            **self.concepts.fields(),
            "page_count": self.parsed.page_count,
            "pages_without_text": self.parsed.pages_without_text,
            "chunk_counts": {t.value: sum(c.tier is t for c in self.chunks) for t in Tier},
        }

    def links(self, file_type: str) -> list[WikiLink]:
        return wikilinks(self.parsed) if file_type == "markdown" else []


def chunk_parsed(parsed: ParsedDocument, *, fp: str, title: str, chunking: Chunking) -> Chunked:
    """The chunk and concept stages: what ``prepare`` and the worker's chunking share."""
    concepts = Concepts.of(parsed.tags, chunking.taxonomy)
    chunks = chunk_document(
        parsed,
        fp=fp,
        title=title,
        settings=chunking.settings,
        count_tokens=chunking.count_tokens,
        concepts=concepts.labels,
    )
    return Chunked(parsed, title, chunks, concepts)


@dataclass(frozen=True)
class Prepared:
    """A parsed and chunked file, ready to embed and write."""

    document: Document
    chunks: list[Chunk]
    warnings: tuple[str, ...]
    links: list[WikiLink] = field(default_factory=list)
    aliases: tuple[str, ...] = ()

    @property
    def snippets(self) -> list[Chunk]:
        return [c for c in self.chunks if c.tier is Tier.SNIPPET]


def prepare(
    data: bytes,
    *,
    file_type: str,
    path: str,
    rel_path: str,
    source_id: str | None,
    host: str,
    chunking: Chunking,
    title: str | None = None,
    embedding_model: str | None,
    fp: str | None = None,
    limits: ParseLimits | None = None,
) -> Prepared:
    """Parse (under ``limits``), chunk and map concepts for one file's bytes (``fp``:
    their fingerprint, when the caller has it already)."""
    fp = fp or fingerprint(data)
    parsed = parse(data, file_type, limits)
    chunked = chunk_parsed(
        parsed,
        fp=fp,
        title=title or parsed.title or Path(rel_path).stem or rel_path,
        chunking=chunking,
    )
    now = time.time()
    doc = Document(
        id=document_id(fp),
        sha256=fp,
        path=path,
        rel_path=rel_path,
        source_id=source_id,
        source_host=host,
        file_type=file_type,
        size_bytes=len(data),
        added_at=now,
        updated_at=now,
        status="complete",
        embedding_model=embedding_model,
        **chunked.fields(),
    )
    return Prepared(doc, chunked.chunks, parsed.warnings, chunked.links(file_type), parsed.aliases)


@dataclass(frozen=True)
class Concepts:
    """The concepts a document's tags map to in the taxonomy, and their labels."""

    ids: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    version: str | None = None

    @classmethod
    def of(cls, tags: Sequence[str], taxonomy: Taxonomy | None) -> Concepts:
        if taxonomy is None:
            return cls()
        ids, _ = taxonomy.map_tags(tags)
        return cls(tuple(ids), tuple(taxonomy.labels(ids)), taxonomy.version)

    def fields(self) -> dict[str, Any]:
        """The document record's concept fields (SPEC §9)."""
        return {
            "concept_ids": self.ids,
            "primary_concept_id": self.ids[0] if self.ids else None,
            "concept_source": "frontmatter" if self.ids else None,
            "taxonomy_version": self.version,
        }


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass
class EmbedCounts:
    cached: int = 0
    computed: int = 0


def embed_texts(
    store: Store,
    embedder: Embedder,
    texts: Sequence[str],
    counts: EmbedCounts | None = None,
    *,
    on_step: Callable[[int, int], None] | None = None,
) -> npt.NDArray[np.float32]:
    """Vectors for ``texts``, computing only those not in the (model, text hash) cache.

    With ``on_step`` (told texts done of total), the model is called one of its own
    batches at a time, longest texts first as it orders them itself, so that a
    progress display moves every batch instead of once per thousand snippets."""
    import numpy as np

    hashes = [text_hash(t) for t in texts]
    cached = store.cached_embeddings(embedder.model_id, list(dict.fromkeys(hashes)))
    missing = list(dict.fromkeys(h for h in hashes if h not in cached))
    if on_step is not None:
        on_step(len(hashes) - len(missing), len(hashes))
    if missing:
        first_text: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            first_text.setdefault(h, t)
        if on_step is None:
            fresh = list(embedder.embed([first_text[h] for h in missing]))
        else:
            missing.sort(key=lambda h: len(first_text[h]), reverse=True)
            step = max(1, int(getattr(embedder, "batch_size", 16)))
            fresh = []
            for start in range(0, len(missing), step):
                fresh.extend(embedder.embed([first_text[h] for h in missing[start : start + step]]))
                on_step(len(hashes) - len(missing) + len(fresh), len(hashes))
        store.cache_embeddings(embedder.model_id, list(zip(missing, fresh, strict=True)))
        cached.update(zip(missing, fresh, strict=True))
    if counts is not None:
        counts.cached += len(hashes) - len(missing)
        counts.computed += len(missing)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([cached[h] for h in hashes]).astype(np.float32, copy=False)
