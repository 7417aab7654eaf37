"""One file's trip to the store: read → fingerprint → parse → chunk → embed → write.

``prepare`` does the pure part for one file (no store, no model);
``Embedding`` turns retrieval texts into vectors through the embedding cache;
the caller (sync) batches files so the model sees many texts at once, and the
writer (``ingest/writer.py``) writes each document in its own transaction.

``chunk_file`` parses *and* chunks a large file (over ``parse.IN_PROCESS_BYTES``)
in the parser sandbox's child (a fresh interpreter: ``sandbox.run_limited(fresh=True)``),
so the caller's process (``serve``: its event loop, its health endpoints) spends
neither the time nor the memory of it: it gets the chunks back in batches, never the
body, and the child makes each batch's chunks only as it sends them.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import hashlib
import os
import stat as stat_mod
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docshelf.parse as parse_mod
from docshelf.chunk import ChunkSettings, approx_tokens, chunk_document, plan_chunks
from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.model import Chunk, Document, ParsedDocument, Tier, document_id, fingerprint
from docshelf.parse import parse, parse_here
from docshelf.parse.links import WikiLink, wikilinks
from docshelf.parse.ocr import Ocr

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.embed import Embedder
    from docshelf.ingest.sources import FoundFile
    from docshelf.parse.sandbox import Batched
    from docshelf.store.base import Store


def read_file(
    path: Path, max_bytes: int, found: FoundFile | None = None
) -> tuple[bytes, os.stat_result]:
    """The file's bytes and the stat taken with them, or ``InvalidInput`` with the reason.

    The file is opened without blocking (a FIFO would otherwise wait for a writer
    forever) and without becoming a controlling terminal, then checked to be a
    regular file before a byte is read. A file a source's walk ``found`` is opened
    without following a symlink (unless the walk found one, and followed it) and must
    be, on the descriptor read, the file the walk found and checked (``FoundFile.changed``):
    a file swapped for a symlink after the walk is a failure, not read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if found is not None and not found.link:
        flags |= os.O_NOFOLLOW
    try:
        with open(os.open(path, flags), "rb") as fh:
            st = os.fstat(fh.fileno())
            swapped = found.changed(fh.fileno(), st) if found is not None else None
            if swapped is not None:
                raise InvalidInput(f"changed while being read: {swapped}")
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
        if exc.errno == errno.ELOOP and flags & os.O_NOFOLLOW:
            raise InvalidInput("changed while being read: it is now a symlink") from None
        raise InvalidInput(f"unreadable: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InvalidInput("too large: the file grew past the size limit while being read")
    return data, st


# A file that parses to no text at all (front matter only, markup only): failed with
# this reason, never a complete document that nothing can find.
NO_TEXT = "no text to index"


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
        counts = {t: sum(c.tier is t for c in self.chunks) for t in Tier}
        return _fields(self.parsed, self.title, self.concepts, counts)

    def links(self, file_type: str) -> list[WikiLink]:
        return wikilinks(self.parsed) if file_type == "markdown" else []


def chunk_parsed(
    parsed: ParsedDocument,
    *,
    fp: str,
    title: str,
    chunking: Chunking,
    on_cut: Callable[[int], None] | None = None,
) -> Chunked:
    """The chunk and concept stages: what ``prepare`` and the worker's chunking share."""
    concepts = Concepts.of(parsed.tags, chunking.taxonomy)
    chunks = chunk_document(
        parsed,
        fp=fp,
        title=title,
        settings=chunking.settings,
        count_tokens=chunking.count_tokens,
        concepts=concepts.labels,
        on_cut=on_cut,
    )
    if not chunks:
        raise InvalidInput(NO_TEXT)
    return Chunked(parsed, title, chunks, concepts)


def _fields(
    parsed: ParsedDocument, title: str, concepts: Concepts, counts: dict[Tier, int]
) -> dict[str, Any]:
    return {
        "title": title,
        "tags": parsed.tags,
        **concepts.fields(),
        "page_count": parsed.page_count,
        "pages_without_text": parsed.pages_without_text,
        "ocr_pages": parsed.ocr_pages,
        "chunk_counts": {t.value: counts.get(t, 0) for t in Tier},
    }


@dataclass(frozen=True)
class ChunkedFile:
    """A file parsed and chunked, without its body: what the writer needs."""

    fields: dict[str, Any]  # Chunked.fields()
    chunks: list[Chunk]
    links: list[WikiLink]
    aliases: tuple[str, ...]
    warnings: tuple[str, ...]
    characters: int  # of the parsed body
    pid: int  # the process that parsed and chunked it (the sandbox's child for a large file)

    @classmethod
    def of(cls, chunked: Chunked, file_type: str) -> ChunkedFile:
        parsed = chunked.parsed
        return cls(
            chunked.fields(),
            chunked.chunks,
            chunked.links(file_type),
            parsed.aliases,
            parsed.warnings,
            len(parsed.body),
            os.getpid(),
        )

    @classmethod
    def head(
        cls,
        parsed: ParsedDocument,
        title: str,
        concepts: Concepts,
        counts: dict[Tier, int],
        file_type: str,
    ) -> ChunkedFile:
        """The answer without its chunks, which come apart (``counts``: how many)."""
        links = wikilinks(parsed) if file_type == "markdown" else []
        fields = _fields(parsed, title, concepts, counts)
        return cls(
            fields, [], links, parsed.aliases, parsed.warnings, len(parsed.body), os.getpid()
        )


def chunk_file(
    data: bytes | Path,
    *,
    file_type: str,
    fp: str,
    title: str | None,
    fallback_title: str,
    chunking: Chunking,
    limits: ParseLimits | None = None,
    on_chunks: Callable[[ChunkedFile, list[Chunk]], None] | None = None,
    batch: int = 2_000,
) -> ChunkedFile:
    """Parse and chunk a file's bytes. Its title: ``title``, else the one the parse
    finds, else ``fallback_title``.

    Over ``parse.IN_PROCESS_BYTES`` both run in the sandbox's child under
    ``limits``, when the token counter can go there (``portable_counter``); the
    chunks come back in batches (``sandbox.Batched``). Smaller files, and a
    counter that cannot leave this process, are parsed (under limits where
    ``parse`` applies them) and chunked here. With ``on_chunks``, the chunks go
    to ``on_chunks(head, batch)`` ``batch`` at a time (the head: the answer without
    chunks), never all held here at once, and the answer's ``chunks`` are empty.
    ``data`` may be a file's path instead of its bytes: a large one is then read by
    the child only (a server holds no copy of it). The child is a fresh interpreter
    (no fork server, no resource tracker beside the caller) that cuts the whole file,
    then makes and sends its chunks a batch at a time (``batch`` chunks, or fewer
    holding ``BATCH_CHARACTERS`` of text): it never holds them all either."""
    counter = portable_counter(chunking.count_tokens)
    size = data.stat().st_size if isinstance(data, Path) else len(data)
    if size <= parse_mod.IN_PROCESS_BYTES or counter is None:
        if isinstance(data, Path):
            data = data.read_bytes()
        parsed = parse(data, file_type, limits)
        named = title or parsed.title or fallback_title
        done = ChunkedFile.of(
            chunk_parsed(parsed, fp=fp, title=named, chunking=chunking), file_type
        )
        if on_chunks is None:
            return done
        bare = dataclasses.replace(done, chunks=[])
        for start in range(0, len(done.chunks), batch):
            on_chunks(bare, done.chunks[start : start + batch])
        return bare
    from docshelf.parse.sandbox import run_limited

    limits = limits or ParseLimits.from_env()
    portable = Chunking(chunking.settings, counter, chunking.taxonomy)
    job = functools.partial(
        _chunk_in_child,
        file_type,
        fp,
        title,
        fallback_title,
        portable,
        (limits.pdf_password, Ocr.of(limits)),
        batch,
    )
    source: Any = str(data) if isinstance(data, Path) else data  # a path: the child reads it
    batched = run_limited(
        job,
        source,
        file_type,
        timeout_s=limits.timeout_s,
        memory_mb=limits.memory_mb,
        on_part=on_chunks,
        fresh=True,
        preload=_PRELOAD.get(file_type, ()),
    )
    head: ChunkedFile = batched.head
    chunks = batched.items
    assert isinstance(chunks, list)  # in this process: what arrived
    return dataclasses.replace(head, chunks=chunks)


PHASE_CHARACTERS = 1_000_000  # cut in the sandbox's child per renewal of its time limit
BATCH_CHARACTERS = 2_000_000  # of chunk text per message from the child, at most (about)
# The fresh child imports its parser's libraries before its memory limit is set, as the
# fork server has them imported before it forks (the limit is the parse's, not theirs).
_PRELOAD: dict[str, tuple[str, ...]] = {
    "pdf": ("docshelf.parse.pdf",),
    "html": ("docshelf.parse.html",),
    "docx": ("docshelf.parse.docx",),
    "rst": ("docshelf.parse.rst",),
}


def _chunk_in_child(
    file_type: str,
    fp: str,
    title: str | None,
    fallback_title: str,
    chunking: Chunking,
    pdf: tuple[str | None, Ocr | None],
    batch: int,
    data: bytes | str,
) -> Batched[ChunkedFile]:
    """In the sandbox's child: parse and chunk; the chunks travel apart from the head,
    each made as its batch is sent. ``data``: the bytes, or the path to read them from;
    either way they go once decoded (the input's only reference is this frame's).
    ``pdf``: a PDF's password and how to OCR its scanned pages."""
    from docshelf.parse.sandbox import Batched, next_phase

    raw = Path(data).read_bytes() if isinstance(data, str) else data
    del data
    if parse_mod.is_text_format(file_type):  # the bytes and the text are not held at once
        text = parse_mod.decode_text(raw)
        del raw
        parsed = parse_mod.parse_text_here(text, file_type)
        del text
    else:
        parsed = parse_here(raw, file_type, *pdf)
        del raw
    next_phase()  # parsed: the chunking gets a time limit of its own
    named = title or parsed.title or fallback_title
    cut = [0]

    def on_cut(characters: int) -> None:
        # a huge block being cut is progress, not a hang: each further PHASE_CHARACTERS
        # cut gets the time limit afresh (a 25 MB line took longer than one limit to cut
        # on a busy machine; a block that stops advancing still fails at the limit)
        cut[0] += characters
        if cut[0] >= PHASE_CHARACTERS:
            cut[0] = 0
            next_phase()

    concepts = Concepts.of(parsed.tags, chunking.taxonomy)
    counts, chunks = plan_chunks(
        parsed,
        fp=fp,
        title=named,
        settings=chunking.settings,
        count_tokens=chunking.count_tokens,
        concepts=concepts.labels,
        on_cut=on_cut,
    )
    if not any(counts.values()):
        raise InvalidInput(NO_TEXT)
    head = ChunkedFile.head(parsed, named, concepts, counts, file_type)
    return Batched(head, chunks, batch, weigh=_characters, max_weight=BATCH_CHARACTERS)


def _characters(chunk: Chunk) -> int:
    return len(chunk.text)


def portable_counter(count: Callable[[str], int]) -> Callable[[str], int] | None:
    """``count`` in a form that can be sent to a child process, or None.

    A plain function goes as it is (by name). A model's counter is a method of an
    object holding the model, which must not be pickled: it goes as the model's
    tokenizer file (``tokenizer_file``), loaded once in the child."""
    owner = getattr(count, "__self__", None)
    if owner is None:  # by name: not from __main__, not a closure or a lambda
        named = getattr(count, "__module__", "__main__") != "__main__"
        return count if named and "<" not in getattr(count, "__qualname__", "<") else None
    tokenizer_file = getattr(owner, "tokenizer_file", None)
    if tokenizer_file is None:
        return None
    return functools.partial(_count_with, str(tokenizer_file))


@functools.cache
def _tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def _count_with(tokenizer_file: str, text: str) -> int:
    """The packaged model's ``count_tokens``, from its tokenizer file."""
    return len(_tokenizer(tokenizer_file).encode(text, add_special_tokens=False).ids)


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
    chunked = chunk_file(
        data,
        file_type=file_type,
        fp=fp,
        title=title,
        fallback_title=Path(rel_path).stem or rel_path,
        chunking=chunking,
        limits=limits,
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
        **chunked.fields,
    )
    return Prepared(doc, chunked.chunks, chunked.warnings, chunked.links, chunked.aliases)


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
