"""The library's embedding model, as the wiring holds it: the configured embedder bound
to the model the library's vectors came from (a mismatch is refused, naming the fix),
and the model a search embeds its query with (``QueryModel``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from docshelf.embed import Embedder, make_embedder
from docshelf.errors import Conflict, DocshelfError

if TYPE_CHECKING:
    from docshelf.config import Settings
    from docshelf.embed.lean import LeanEmbedder
    from docshelf.store import Store


def bound_embedder(
    settings: Settings,
    store: Store,
    given: Embedder | object | None,
    from_settings: object,
    *,
    check_model: bool,
    purpose: str,
) -> Embedder | None:
    """The configured embedder (``given``, or the settings' when it is ``from_settings``).
    A library whose vectors came from another model is refused, since its vectors and
    the query's would not be comparable — unless ``check_model`` is off (``reindex``),
    which also lets ``auto`` pick the local model for a lexical-only library instead of
    following it."""
    if given is from_settings:
        bound = store.get_meta("embedding_model")
        if settings.embedder == "auto" and bound == "none" and check_model:
            given = None  # a lexical-only library stays lexical until reindexed
        else:
            given = make_embedder(
                settings.embedder,
                batch_size=settings.embed_batch_size,
                home=settings.home,
                library_model=bound,
                backend=settings.embed_backend,
                purpose=purpose,
            )
    embedder: Embedder | None = given  # type: ignore[assignment]
    conflict = model_conflict(store, embedder)
    if check_model and conflict and embedder is not None:
        raise Conflict(conflict)
    return embedder


def model_conflict(store: Store, embedder: Embedder | None) -> str | None:
    """Why ``embedder`` cannot write to the library in ``store`` (its vectors came from
    another model, or it has vectors and this would make none), naming the fix; None
    when it can."""
    bound = store.get_meta("embedding_model")
    model = embedder.model_id if embedder else "none"
    if bound is None or bound == model:
        return None
    if model == "none":
        return (
            f"This library is indexed with {bound}; without an embedder new documents "
            "would get no vectors. Set DOCSHELF_EMBEDDER=local (install `docshelf[local]`), "
            "or run `DOCSHELF_EMBEDDER=none docshelf reindex` to make the library lexical-only."
        )
    return (
        f"This library's vectors were made with {bound}, but the configured embedder is "
        f"{model}. Run `docshelf reindex` to re-embed everything with {model}, or set "
        "DOCSHELF_EMBEDDER to match the library."
    )


def check_writable(store: Store, embedder: Embedder | None) -> None:
    """Refuse writes whose vectors would not match the library's (naming the fix); the
    first write binds the library to ``embedder``'s model and to this chunker."""
    conflict = model_conflict(store, embedder)
    if conflict:
        raise Conflict(conflict)
    if store.get_meta("embedding_model") is None:
        with store.transaction():
            store.set_meta("embedding_model", embedder.model_id if embedder else "none")
            if embedder:
                store.set_meta("embedding_dim", str(embedder.dim))
            from docshelf.chunk import CHUNKER_META, CHUNKER_VERSION

            if store.get_meta(CHUNKER_META) is None:  # a new library: chunked by
                store.set_meta(CHUNKER_META, str(CHUNKER_VERSION))  # this one


class Parts(Protocol):
    """What the query model reads of the wiring (a ``Runtime``), as it is at each call:
    a caller may swap the embedder or the settings."""

    @property
    def settings(self) -> Settings: ...
    @property
    def store(self) -> Store: ...
    @property
    def embedder(self) -> Embedder | None: ...
    @property
    def embed_purpose(self) -> str: ...


class QueryModel:
    """What a search embeds its query with: the embedder; but in a process that ingests
    with the packaged model on PyTorch (a server, the library), the lean runtime of the
    same weights once its export is ready — ONNX Runtime with the graph optimised: the
    same vectors (tests/test_lean.py) in a third of the time
    (docs/benchmarks/search-latency.md, "Queries on ONNX Runtime in a server"). Not ready:
    the embedder, until ``prepare`` makes it (``serve`` does at start)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        # (the embedder it was chosen for, the query model or None)
        self._chosen: tuple[Embedder | None, Embedder | None] | None = None

    def prepare(self) -> bool:
        """Make ready what a search embeds its query with (the lean runtime's export in
        the home's ``models/``, made once), so the first search of a new process after
        an ``add`` does not pay for it, and this process's searches take it from now on.
        Only when this process runs the packaged model and its queries may take the lean
        runtime (``_lean_twin``); True when it was prepared (or already was)."""
        query = self._lean_twin()
        if query is None:
            return False
        try:
            query.model_path()
        except DocshelfError:
            return False  # the search prepares it then, or says why it cannot
        self._chosen = None  # found ready at the next search
        return True

    def for_search(self) -> Embedder | None:
        """The model a search embeds its query with now (looked for once per embedder,
        until ``prepare``)."""
        embedder = self.parts.embedder
        chosen = self._chosen
        if chosen is None or chosen[0] is not embedder:
            twin = self._lean_twin()
            fast = twin.for_many_queries() if twin is not None and twin.ready() else None
            chosen = self._chosen = (embedder, fast)
        return chosen[1] or embedder

    def _lean_twin(self) -> LeanEmbedder | None:
        """The lean runtime of this process's model, where its queries may take it: the
        packaged model, no runtime named for it, ONNX Runtime there."""
        from docshelf.embed.local import PackagedModel

        embedder, settings = self.parts.embedder, self.parts.settings
        if not isinstance(embedder, PackagedModel) or self.parts.embed_purpose != "index":
            return None  # (a fake, another model, or a query process's own lean runtime)
        try:
            query = make_embedder(
                "local",  # (the packaged model: the settings may name it otherwise, as eval's)
                home=settings.home,
                library_model=self.parts.store.get_meta("embedding_model"),
                backend=settings.embed_backend,
                purpose="query",
            )
        except DocshelfError:
            return None
        from docshelf.embed.lean import LeanEmbedder

        if not isinstance(query, LeanEmbedder) or query.model_id != embedder.model_id:
            return None
        return query
