"""Settings from the environment (SPEC §9 "Configuration"): the one module that reads it.

``Settings.from_env`` reads everything a library needs when it opens. A few values
are also read on their own where a module is used without a ``Settings`` (a
parser, an LLM client, a trace span): the small readers below, each the one place
its variable is read, whose value the module takes as an argument.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from docshelf.errors import InvalidInput

EMBEDDERS = ("local", "none")
OCR_MODES = ("auto", "off")
ENRICH_MODES = ("auto", "offline", "off")
SEARCH_HELPER_MODES = ("auto", "use", "off")


def default_home() -> Path:
    env = os.environ.get("DOCSHELF_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("docshelf", appauthor=False))


@dataclass(frozen=True)
class LLMSettings:
    """The LLM endpoint (DOCSHELF_LLM_URL, _MODEL, _API_KEY); an empty ``url``: none."""

    url: str = ""
    model: str = ""
    api_key: str | None = None  # DOCSHELF_LLM_API_KEY; else the provider's own variable

    @classmethod
    def from_env(cls) -> LLMSettings:
        return cls(
            os.environ.get("DOCSHELF_LLM_URL", ""),
            os.environ.get("DOCSHELF_LLM_MODEL", ""),
            os.environ.get("DOCSHELF_LLM_API_KEY") or None,
        )

    def key_for(self, provider: str) -> str:
        """The API key: DOCSHELF_LLM_API_KEY, else ANTHROPIC_API_KEY / OPENAI_API_KEY."""
        variable = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
        return self.api_key or os.environ.get(variable, "")


@dataclass(frozen=True)
class ParseLimits:
    """The parser process's limits (``parse/sandbox.py``), the PDF password and how pages
    without a usable text layer, and images, are read (OCR: ``parse/ocr.py``)."""

    timeout_s: float = 60.0  # DOCSHELF_PARSE_TIMEOUT_S: wall-clock seconds per file
    memory_mb: int = 1024  # DOCSHELF_PARSE_MEMORY_MB: address space on top of start-up
    pdf_password: str | None = None  # DOCSHELF_PDF_PASSWORD: tried on encrypted PDFs
    # DOCSHELF_OCR: auto (OCR a PDF's pages without a usable text layer when tesseract
    # is installed) or off (report them, as before OCR)
    ocr: str = "auto"
    ocr_languages: str = "eng"  # DOCSHELF_OCR_LANGUAGES: tesseract's codes, joined by +
    ocr_images: bool = False  # DOCSHELF_OCR_IMAGES: PNG and JPEG files are documents too

    @classmethod
    def from_env(cls) -> ParseLimits:
        ocr = os.environ.get("DOCSHELF_OCR", "").strip().lower() or cls.ocr
        if ocr not in OCR_MODES:
            raise InvalidInput(
                f"DOCSHELF_OCR={ocr!r} is not known; use one of: {', '.join(OCR_MODES)}"
            )
        return cls(
            _positive("DOCSHELF_PARSE_TIMEOUT_S", cls.timeout_s),
            int(_positive("DOCSHELF_PARSE_MEMORY_MB", cls.memory_mb)),
            os.environ.get("DOCSHELF_PDF_PASSWORD") or None,
            ocr,
            ocr_languages(os.environ.get("DOCSHELF_OCR_LANGUAGES", "")),
            _switch("DOCSHELF_OCR_IMAGES", cls.ocr_images),
        )

    @property
    def reads_images(self) -> bool:
        """Whether PNG and JPEG files are documents (their text read by OCR)."""
        return self.ocr_images and self.ocr != "off"


_LANGUAGE = re.compile(r"[A-Za-z0-9_]+")


def ocr_languages(raw: str) -> str:
    """DOCSHELF_OCR_LANGUAGES as tesseract takes it: codes (``eng``, ``deu``, ``chi_sim``)
    separated by ``+``, commas or spaces, joined by ``+``; ``eng`` when empty."""
    codes = [c for c in re.split(r"[+,\s]+", raw.strip()) if c]
    bad = [c for c in codes if not _LANGUAGE.fullmatch(c)]
    if bad:
        raise InvalidInput(
            f"DOCSHELF_OCR_LANGUAGES: {bad[0]!r} is not a tesseract language code "
            "(eng, deu, fra, chi_sim, …; several joined by +)"
        )
    return "+".join(dict.fromkeys(codes)) or ParseLimits.ocr_languages


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    embedder: str  # "local", "none", or "auto" (local when installed, else none)
    max_file_bytes: int = 25 * 1024 * 1024
    # small batches were faster on a 2-core CPU (docs/benchmarks/ingest-and-model.md, "Ingest")
    embed_batch_size: int = 16
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
    # vector search (search/engines/usearch.py); below it an exact scan. 0 = always exact.
    ann_threshold: int = 20_000
    # SQLite: from this many snippets on, a tantivy index beside the database answers
    # lexical search (search/engines/tantivy.py); below it FTS5. 0 = always FTS5.
    lexical_threshold: int = 50_000
    # SQLite: an engine of the user's own answers vector search (qdrant://, qdrant+local://,
    # milvus://, chroma://: search/engines/external.py); None: the sidecar index above.
    vector_url: str | None = None
    # SQLite: Typesense answers both lexical and vector search (typesense://KEY@HOST:PORT
    # [/prefix]: search/engines/typesense.py); None: the engines above.
    search_url: str | None = None
    # Redis shared by every API replica and worker (shared/): event fan-out to SSE
    # clients and shared caches. None: everything stays in this process, as before.
    redis_url: str | None = None
    redis_retrieval_seconds: float = 300.0  # first-turn search results kept in Redis
    # SSE streams read the store when woken, and at least this often (a lost wake-up):
    # 0.2 s in one process, 5 s when Redis carries every process's news.
    sse_poll_seconds: float = 0.2
    # SIGTERM: how long `serve` and `worker` wait for the job in flight (shutdown.py)
    drain_seconds: float = 20.0
    embed_backend: str | None = None  # torch | onnx | onnx-int8; None: the library's default
    llm: LLMSettings = field(default_factory=LLMSettings)
    taxonomy: str | None = None  # a SKOS-lite JSON file; None: the one that ships
    concept_boost: float | None = None  # None: fusion's default
    parse: ParseLimits = field(default_factory=ParseLimits)
    # `docshelf search` through a resident helper per library (cli/resident.py): auto
    # (use one, start one when none answers), use (never start one), off (in-process)
    search_helper: str = "auto"
    search_helper_idle: float = 300.0  # seconds without a search before it exits
    # /metrics of serve (and of a worker's probe) answers this bearer token, or an admin's:
    # the pipeline's counters tell what the library holds, so they are an operator's
    metrics_token: str | None = None

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
        helper = os.environ.get("DOCSHELF_SEARCH_HELPER", "auto").strip().lower() or "auto"
        if helper not in SEARCH_HELPER_MODES:
            raise InvalidInput(
                f"DOCSHELF_SEARCH_HELPER={helper!r} is not known; use one of: "
                f"{', '.join(SEARCH_HELPER_MODES)}"
            )
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
            reranker=reranker().strip() or "none",
            rerank_top_k=max(1, int(_number("DOCSHELF_RERANK_TOP_K", cls.rerank_top_k))),
            enrich=enrich,
            locale=os.environ.get("DOCSHELF_LOCALE", "en").strip() or "en",
            retrieval_cache_seconds=_number(
                "DOCSHELF_RETRIEVAL_CACHE_SECONDS", cls.retrieval_cache_seconds
            ),
            ann_threshold=int(_number("DOCSHELF_ANN_THRESHOLD", cls.ann_threshold)),
            lexical_threshold=int(_number("DOCSHELF_LEXICAL_THRESHOLD", cls.lexical_threshold)),
            vector_url=os.environ.get("DOCSHELF_VECTOR_URL", "").strip() or None,
            search_url=os.environ.get("DOCSHELF_SEARCH_URL", "").strip() or None,
            redis_url=redis_url,
            redis_retrieval_seconds=_number(
                "DOCSHELF_REDIS_RETRIEVAL_SECONDS", cls.redis_retrieval_seconds
            ),
            sse_poll_seconds=_number("DOCSHELF_SSE_POLL_SECONDS", 5.0 if redis_url else 0.2) or 0.2,
            drain_seconds=_number("DOCSHELF_DRAIN_SECONDS", cls.drain_seconds),
            embed_backend=embed_backend(),
            llm=LLMSettings.from_env(),
            taxonomy=taxonomy_path(),
            concept_boost=concept_boost(),
            parse=ParseLimits.from_env(),
            search_helper=helper,
            search_helper_idle=_number("DOCSHELF_SEARCH_HELPER_IDLE", cls.search_helper_idle),
            metrics_token=os.environ.get("DOCSHELF_METRICS_TOKEN", "").strip() or None,
        )


def one_process_engine(settings: Settings) -> bool:
    """Whether the vector engine is one whose files only one process may open at a time
    (Qdrant's local mode, Milvus Lite): no resident search helper may hold it then."""
    url = (settings.vector_url or "").split("?", 1)[0]
    return url.startswith("qdrant+local:") or (url.startswith("milvus:") and url.endswith(".db"))


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


def _switch(key: str, default: bool) -> bool:
    raw = os.environ.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise InvalidInput(f"{key}={raw!r} is not a switch; use 1 or 0")


def _positive(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise InvalidInput(f"{name} must be a positive number, not {raw!r}")
    return value


# -- values read where they are used, each in one place ---------------------------------


# What rich reads of the terminal once, when it makes a console: the width and height
# when set, whether and how to colour, whether it is interactive.
TERMINAL_SETTINGS = (
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERM",
    "COLORTERM",
)


def terminal_settings() -> tuple[str | None, ...]:
    """The terminal's settings as they are now (``TERMINAL_SETTINGS``): a console made
    under others is not the one to print with."""
    return tuple(os.environ.get(name) for name in TERMINAL_SETTINGS)


def ocr_environment() -> dict[str, str]:
    """The environment tesseract runs in (``parse/ocr.py``): this one, with OpenMP held to
    one thread unless ``OMP_THREAD_LIMIT`` says otherwise (its threads spin while they
    wait: on a busy 2-core machine a page took 50 s with two, 1.7 s with one)."""
    return {**os.environ, "OMP_THREAD_LIMIT": os.environ.get("OMP_THREAD_LIMIT") or "1"}


def embed_backend() -> str | None:
    """``DOCSHELF_EMBED_BACKEND``: the local model's runtime (checked by ``make_embedder``)."""
    return os.environ.get("DOCSHELF_EMBED_BACKEND") or None


def embed_precision() -> str:
    """``DOCSHELF_EMBED_PRECISION``: ``auto`` (bf16 where the CPU computes it natively),
    ``bf16`` or ``fp32``, for the PyTorch runtime (checked by ``make_embedder``)."""
    return (os.environ.get("DOCSHELF_EMBED_PRECISION") or "auto").strip().lower()


def concept_boost() -> float | None:
    """``DOCSHELF_CONCEPT_BOOST`` (0 turns the boost off), None when unset."""
    raw = os.environ.get("DOCSHELF_CONCEPT_BOOST", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"DOCSHELF_CONCEPT_BOOST={raw!r} is not a number") from None
    if not 0 <= value <= 10:
        raise InvalidInput(f"DOCSHELF_CONCEPT_BOOST={raw!r} must be between 0 and 10")
    return value


def reranker() -> str:
    """``DOCSHELF_RERANKER``: none | cross-encoder:/path | llm."""
    return os.environ.get("DOCSHELF_RERANKER", "none")


def taxonomy_path() -> str | None:
    """``DOCSHELF_TAXONOMY``: a taxonomy file, None for the one that ships."""
    return os.environ.get("DOCSHELF_TAXONOMY") or None


def llm_limits() -> tuple[float, float]:
    """(``DOCSHELF_LLM_CONCURRENCY``, ``DOCSHELF_LLM_RATE``): calls at once and per second
    per process; an unreadable value keeps the default (4, unbounded)."""
    return _lenient("DOCSHELF_LLM_CONCURRENCY", 4), _lenient("DOCSHELF_LLM_RATE", 0)


def _lenient(key: str, default: float) -> float:
    raw = os.environ.get(key, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def trace_environment() -> str:
    """``DOCSHELF_ENVIRONMENT``: the environment named on LLM trace spans."""
    return os.environ.get("DOCSHELF_ENVIRONMENT", "").strip() or "default"


def otlp_endpoint() -> str | None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT``: where spans go (the exporter reads it too)."""
    return os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
