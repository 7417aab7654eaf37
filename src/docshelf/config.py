"""Settings from the environment (SPEC §9 "Configuration")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from docshelf.errors import InvalidInput

EMBEDDERS = ("local", "none")
ENRICH_MODES = ("auto", "offline", "off")


def default_home() -> Path:
    env = os.environ.get("DOCSHELF_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("docshelf", appauthor=False))


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    embedder: str  # "local", "none", or "auto" (local when installed, else none)
    max_file_bytes: int = 25 * 1024 * 1024
    embed_batch_size: int = 16  # small batches were faster on a 2-core CPU (BENCHMARKS.md)
    max_upload_bytes: int = 50 * 1024 * 1024
    workers: int = 1  # in-process ingest workers of `serve` (0: API only)
    embed_rate: float | None = None  # embedding calls per second, None = unbounded
    queue_url: str = "local"  # job wake-ups: `local` or amqp://…
    blob_url: str | None = None  # uploaded bytes: $DOCSHELF_HOME/blobs, file:///… or s3://…
    reranker: str = "none"  # none | cross-encoder:/path | llm
    rerank_top_k: int = 20
    # Enrichment after indexing: auto (the LLM when configured, else offline),
    # offline (never the LLM), off (only `docshelf enrich` runs it).
    enrich: str = "auto"
    locale: str = "en"  # the language asked of LLM summaries (the cache's key part)
    retrieval_cache_seconds: float = 30.0  # identical searches answered from memory
    # SQLite: from this many vectors on, an ANN index beside the database answers
    # vector search (search/ann.py); below it an exact scan. 0 = always exact.
    ann_threshold: int = 20_000
    # SQLite: from this many snippets on, a tantivy index beside the database answers
    # lexical search (search/lexical.py); below it FTS5. 0 = always FTS5.
    lexical_threshold: int = 50_000
    # Redis shared by every API replica and worker (shared/): event fan-out to SSE
    # clients and shared caches. None: everything stays in this process, as before.
    redis_url: str | None = None
    redis_retrieval_seconds: float = 300.0  # first-turn search results kept in Redis
    # SSE streams read the store when woken, and at least this often (a lost wake-up):
    # 0.2 s in one process, 5 s when Redis carries every process's news.
    sse_poll_seconds: float = 0.2
    # SIGTERM: how long `serve` and `worker` wait for the job in flight (shutdown.py)
    drain_seconds: float = 20.0

    @classmethod
    def from_env(cls, home: Path | None = None) -> Settings:
        home = (home or default_home()).expanduser().resolve()
        db = os.environ.get("DOCSHELF_DATABASE_URL") or f"sqlite:///{home / 'docshelf.db'}"
        embedder = os.environ.get("DOCSHELF_EMBEDDER", "auto").strip().lower() or "auto"
        if embedder not in (*EMBEDDERS, "auto"):
            raise InvalidInput(
                f"DOCSHELF_EMBEDDER={embedder!r} is not known; use one of: local, none"
            )
        max_file = _number("DOCSHELF_MAX_FILE_MB", cls.max_file_bytes / 2**20)
        max_upload = _number("DOCSHELF_MAX_UPLOAD_MB", cls.max_upload_bytes / 2**20)
        rate = _number("DOCSHELF_EMBED_RATE", 0.0)
        enrich = os.environ.get("DOCSHELF_ENRICH", "auto").strip().lower() or "auto"
        if enrich not in ENRICH_MODES:
            raise InvalidInput(
                f"DOCSHELF_ENRICH={enrich!r} is not known; use one of: {', '.join(ENRICH_MODES)}"
            )
        redis_url = os.environ.get("DOCSHELF_REDIS_URL", "").strip() or None
        return cls(
            home=home,
            database_url=db,
            embedder=embedder,
            max_file_bytes=int(max_file * 2**20),
            max_upload_bytes=int(max_upload * 2**20),
            workers=int(_number("DOCSHELF_WORKERS", cls.workers)),
            embed_rate=rate or None,
            queue_url=os.environ.get("DOCSHELF_QUEUE_URL", "local").strip() or "local",
            blob_url=os.environ.get("DOCSHELF_BLOB_URL") or None,
            reranker=os.environ.get("DOCSHELF_RERANKER", "none").strip() or "none",
            rerank_top_k=max(1, int(_number("DOCSHELF_RERANK_TOP_K", cls.rerank_top_k))),
            enrich=enrich,
            locale=os.environ.get("DOCSHELF_LOCALE", "en").strip() or "en",
            retrieval_cache_seconds=_number(
                "DOCSHELF_RETRIEVAL_CACHE_SECONDS", cls.retrieval_cache_seconds
            ),
            ann_threshold=int(_number("DOCSHELF_ANN_THRESHOLD", cls.ann_threshold)),
            lexical_threshold=int(_number("DOCSHELF_LEXICAL_THRESHOLD", cls.lexical_threshold)),
            redis_url=redis_url,
            redis_retrieval_seconds=_number(
                "DOCSHELF_REDIS_RETRIEVAL_SECONDS", cls.redis_retrieval_seconds
            ),
            sse_poll_seconds=_number("DOCSHELF_SSE_POLL_SECONDS", 5.0 if redis_url else 0.2) or 0.2,
            drain_seconds=_number("DOCSHELF_DRAIN_SECONDS", cls.drain_seconds),
        )


def _number(key: str, default: float) -> float:
    raw = os.environ.get(key)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{key}={raw!r} is not a number") from None
    if value < 0:
        raise InvalidInput(f"{key}={raw!r} must not be negative")
    return value
