"""Metrics (Prometheus) and tracing (OpenTelemetry), both cheap when unused.

Metric names follow SPEC §7. The OpenTelemetry API is a no-op until an SDK is
configured: ``configure_tracing()`` installs one with an OTLP exporter only
when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (exporter off by default). LLM calls
are generation spans with OpenTelemetry's GenAI attributes and docshelf's
correlation fields (``llm_call``, ``generation_attributes``), which Langfuse's
OTLP endpoint reads as generations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from docshelf.config import otlp_endpoint, trace_environment

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge, Histogram


class _Lazy:
    """A Prometheus metric made (and registered) on first use: prometheus_client
    imports http.server and ssl, which a CLI command does not need. A scrape shows
    every metric (``realise_metrics``), used or not."""

    def __init__(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._spec = (kind, args, kwargs)
        self._metric: Any = None
        _LAZY.append(self)

    def realise(self) -> Any:
        if self._metric is None:
            import prometheus_client

            kind, args, kwargs = self._spec
            self._metric = getattr(prometheus_client, kind)(*args, **kwargs)
        return self._metric

    def __getattr__(self, name: str) -> Any:
        if self._metric is None and not _RECORDING:
            return getattr(_DISCARD, name)
        return getattr(self.realise(), name)


class _Discard:
    """What a metric is in a process that records none: every call is accepted."""

    def __getattr__(self, name: str) -> Any:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


_DISCARD = _Discard()
_LAZY: list[_Lazy] = []
_RECORDING = True


def stop_recording_metrics() -> None:
    """For a one-shot process (``sync``, ``status`` or ``search`` through cli/quick.py):
    nothing scrapes it, so metrics not made yet are dropped instead of importing
    prometheus_client to count them."""
    global _RECORDING
    _RECORDING = False


def lazy_metric(kind: str, *args: Any, **kwargs: Any) -> Any:
    """``prometheus_client.<kind>(*args, **kwargs)``, made when first used."""
    return _Lazy(kind, args, kwargs)


def realise_metrics() -> None:
    """Make every metric, so that a scrape lists them all (a process that serves
    /metrics calls this; a CLI command never does)."""
    for metric in _LAZY:
        metric.realise()


_STAGE_BUCKETS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)

INGEST_JOBS: Counter = lazy_metric("Counter", "ingest_jobs", "Pipeline stages completed", ["stage"])
INGEST_FAILURES: Counter = lazy_metric(
    "Counter", "ingest_failures", "Pipeline stage failures", ["stage", "reason"]
)
INGEST_LATENCY: Histogram = lazy_metric(
    "Histogram",
    "ingest_latency_ms",
    "Time spent in a pipeline stage (ms)",
    ["stage"],
    buckets=_STAGE_BUCKETS,
)
EMBEDDING_UPSERTS: Counter = lazy_metric(
    "Counter", "embedding_upserts", "Snippet vectors written, by embedding-cache outcome", ["dedup"]
)
SEARCH_LATENCY: Histogram = lazy_metric(
    "Histogram",
    "search_latency_ms",
    "Search latency (ms)",
    ["mode"],
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 1000),
)
QUEUE_DEPTH: Gauge = lazy_metric(
    "Gauge", "ingest_queue_depth", "Jobs waiting or running", ["status"]
)
STAGE_OLDEST: Gauge = lazy_metric(
    "Gauge",
    "ingest_stage_oldest_seconds",
    "Age of the longest-unchanged queued or running job in each stage (s)",
    ["stage"],
)
EMBEDDING_COVERAGE: Gauge = lazy_metric(
    "Gauge",
    "embedding_coverage_ratio",
    "Share of snippets that have a vector (1 when there are none)",
)
UPLOAD_LATENCY: Histogram = lazy_metric(
    "Histogram",
    "upload_latency_ms",
    "Time to answer POST /v1/documents (ms), accepted or refused",
    ["outcome"],
    buckets=(5, 10, 25, 50, 100, 200, 400, 800, 1600, 5000),
)
RETRIEVAL_CACHE: Counter = lazy_metric(
    "Counter", "retrieval_cache_lookups", "Searches looked up in the retrieval cache", ["outcome"]
)
WORKERS: Gauge = lazy_metric(
    "Gauge", "ingest_workers", "Ingest workers in this process, by state", ["state"]
)
LEASE_RENEWALS: Counter = lazy_metric(
    "Counter", "ingest_lease_renewals", "Job lease renewals by workers, by outcome", ["outcome"]
)
WORKER_HEARTBEAT: Gauge = lazy_metric(
    "Gauge",
    "ingest_worker_heartbeat_timestamp_seconds",
    "When each ingest worker of this process last showed it is alive (Unix time)",
    ["worker"],
)


class Metrics:
    """The few calls the rest of docshelf makes; the metric objects stay here."""

    def stage_done(self, stage: str, ms: float) -> None:
        INGEST_JOBS.labels(stage=stage).inc()
        INGEST_LATENCY.labels(stage=stage).observe(ms)

    def failure(self, stage: str, reason: str) -> None:
        INGEST_FAILURES.labels(stage=stage, reason=reason).inc()

    def embedded(self, *, cached: int, computed: int) -> None:
        if cached:
            EMBEDDING_UPSERTS.labels(dedup="hit").inc(cached)
        if computed:
            EMBEDDING_UPSERTS.labels(dedup="miss").inc(computed)

    def searched(self, mode: str, ms: float) -> None:
        SEARCH_LATENCY.labels(mode=mode).observe(ms)

    def queue(self, counts: dict[str, int]) -> None:
        for status in ("queued", "running", "failed"):
            QUEUE_DEPTH.labels(status=status).set(counts.get(status, 0))

    def library(
        self, oldest: dict[str, float], coverage: float, stages: Iterable[str], now: float
    ) -> None:
        """What the store says at scrape time: how long each stage's oldest unfinished
        job has waited (0 for a stage with none) and the embedding coverage."""
        realise_metrics()  # a scrape follows: every metric listed
        for stage in stages:
            STAGE_OLDEST.labels(stage=stage).set(
                max(0.0, now - oldest[stage]) if stage in oldest else 0
            )
        EMBEDDING_COVERAGE.set(coverage)

    def uploaded(self, outcome: str, ms: float) -> None:
        UPLOAD_LATENCY.labels(outcome=outcome).observe(ms)


class WorkerGauges:
    """One worker's share of the pool metrics: busy or idle while it runs, its
    heartbeat (each turn of its loop and each lease renewal), its renewals."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._running = False
        self._busy = False

    def started(self) -> None:
        realise_metrics()  # a worker's probe serves /metrics
        self._running, self._busy = True, False
        WORKERS.labels(state="idle").inc()
        self.beat()

    def stopped(self) -> None:
        if self._running:
            WORKERS.labels(state=self._state()).dec()
            WORKER_HEARTBEAT.remove(self.name)
        self._running = self._busy = False

    def beat(self) -> None:
        if self._running:
            WORKER_HEARTBEAT.labels(worker=self.name).set(time.time())

    def busy(self, busy: bool) -> None:
        if self._running and busy != self._busy:
            WORKERS.labels(state=self._state()).dec()
            self._busy = busy
            WORKERS.labels(state=self._state()).inc()
        self._busy = busy

    def renewed(self, ok: bool) -> None:
        LEASE_RENEWALS.labels(outcome="renewed" if ok else "lost").inc()
        if ok:
            self.beat()

    def _state(self) -> str:
        return "busy" if self._busy else "idle"


class RateLimiter:
    """At most ``rate`` calls per second (a token bucket of one); ``None`` = unbounded."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            time.sleep(delay)


# -- LLM calls as GenAI generation spans ------------------------------------------------------
@dataclass(frozen=True)
class LLMCall:
    """What an LLM call is for: the correlation fields on its span."""

    component: str  # answer | enrich | rerank
    action: str  # ask | ask.stream | enrich | judge
    run_id: str  # one per higher-level operation: the calls of one answer share it
    attributes: dict[str, str] = field(default_factory=dict)  # e.g. the document id


_LLM_CALL: ContextVar[LLMCall | None] = ContextVar("docshelf_llm_call", default=None)
T = TypeVar("T")


def new_run_id() -> str:
    import uuid  # (it imports platform: not at every command's start-up)

    return uuid.uuid4().hex


@contextmanager
def llm_call(
    component: str, action: str, *, run_id: str | None = None, **attributes: str
) -> Iterator[LLMCall]:
    """Every LLM call made inside the block carries these correlation fields (a new run
    id unless given: pass one to tie several blocks to one operation). Never yield
    inside the block (a generator may be resumed in another context): wrap a stream
    in :func:`llm_stream` instead."""
    call = LLMCall(component, action, run_id or new_run_id(), attributes)
    token = _LLM_CALL.set(call)
    try:
        yield call
    finally:
        _LLM_CALL.reset(token)


def llm_stream(component: str, action: str, pieces: Iterator[T]) -> Iterator[T]:
    """``pieces`` (an LLM's stream, not started yet), each step of it inside one
    :func:`llm_call` block — so the call's span, opened at the first step, carries
    the correlation fields, and no block spans a ``yield``."""
    run_id = new_run_id()
    while True:
        with llm_call(component, action, run_id=run_id):
            try:
                piece = next(pieces)
            except StopIteration:
                return
        yield piece


def generation_attributes(
    system: str, model: str, *, max_tokens: object = None, temperature: object = None
) -> dict[str, str | int | float]:
    """A generation span's attributes: OpenTelemetry's GenAI conventions (``gen_ai.*``),
    what Langfuse reads (``langfuse.*``), and the correlation fields — component,
    action, run id (from :func:`llm_call`), a fresh event id, the environment."""
    environment = trace_environment()
    call = _LLM_CALL.get() or LLMCall("unknown", "unknown", new_run_id())
    attributes: dict[str, str | int | float] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": system,
        "gen_ai.provider.name": system,  # the name newer conventions give gen_ai.system
        "gen_ai.request.model": model,
        "langfuse.observation.type": "generation",
        "langfuse.environment": environment,
        "deployment.environment": environment,
        "docshelf.component": call.component,
        "docshelf.action": call.action,
        "docshelf.run_id": call.run_id,
        "docshelf.event_id": new_run_id(),
    }
    for key, value in call.attributes.items():
        attributes[f"docshelf.{key}"] = value
    if isinstance(max_tokens, int):
        attributes["gen_ai.request.max_tokens"] = max_tokens
    if isinstance(temperature, int | float):
        attributes["gen_ai.request.temperature"] = float(temperature)
    return attributes


_tracer: Any = None


def configure_tracing() -> None:
    """Export spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; else keep no-op."""
    if not otlp_endpoint():
        return
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "docshelf"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)


@contextmanager
def span(name: str, **attributes: str | int | float) -> Iterator[Any]:
    """One OpenTelemetry span (a no-op unless tracing is configured); yields the span,
    so a caller can add what it learns on the way (``set_attribute``)."""
    global _tracer
    if _tracer is None:
        from opentelemetry import trace

        _tracer = trace.get_tracer("docshelf")
    with _tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current
