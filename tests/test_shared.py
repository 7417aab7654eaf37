"""Redis as the shared layer of several processes: the broadcast that wakes event
streams, and the summary and search caches — against a real Redis.

Two ``Shelf`` objects on one library stand for two replicas (each its own
connections, its own memory); only Redis is shared between them besides the store.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.search.cache import RetrievalCache
from docshelf.shared import open_shared
from docshelf.shared.caches import SharedRetrievalCache, SummaryCache
from docshelf.shared.local import LocalBroadcast
from docshelf.shared.redis import RedisBroadcast, RedisCache, decode_message, parse_url
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.redis_service import fresh_prefix


@pytest.fixture
def redis_url() -> Iterator[str]:
    with fresh_prefix() as (url, _):
        yield url


def replica(home: Path, redis_url: str | None) -> Shelf:
    settings = Settings.from_env(home)
    settings = Settings(**{**settings.__dict__, "redis_url": redis_url})
    return Shelf(settings=settings, embedder=HashEmbedder())


def counted(cache: str, result: str) -> float:
    """This process's count of shared-cache lookups with that outcome (/metrics)."""
    labels = {"cache": cache, "result": result}
    return REGISTRY.get_sample_value("shared_cache_requests_total", labels) or 0.0


# -- the URL ---------------------------------------------------------------------------------
def test_the_prefix_comes_off_the_url_and_defaults() -> None:
    target = parse_url("redis://127.0.0.1:6379/2?prefix=lib-a:&socket_keepalive=true")
    assert target.prefix == "lib-a:" and target.channel == "lib-a:events"
    assert target.url == "redis://127.0.0.1:6379/2?socket_keepalive=true"
    assert parse_url("redis://h:6379/0").prefix == "docshelf:"
    assert parse_url("redis://u:secret@h:6379/0").shown == "redis://u:***@h:6379/0"


@pytest.mark.parametrize("url", ["redis://h/0?prefix=", "redis://h/0?prefix=a%20b"])
def test_a_bad_prefix_is_refused(url: str) -> None:
    with pytest.raises(InvalidInput, match="prefix"):
        parse_url(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "127.0.0.1:6379", "amqp://x"])
def test_a_url_that_is_not_redis_names_the_fix(url: str) -> None:
    with pytest.raises(InvalidInput, match="redis://host:6379/0"):
        open_shared(url)


def test_without_a_url_everything_stays_in_the_process(isolated_home: Path) -> None:
    broadcast, cache = open_shared(None)
    assert isinstance(broadcast, LocalBroadcast) and cache is None
    with replica(isolated_home, None) as shelf:
        assert isinstance(shelf._cache, RetrievalCache)  # as before Redis existed
        assert shelf.summaries.cache is None


# -- messages ---------------------------------------------------------------------------------
@given(st.binary(max_size=200))
def test_any_bytes_on_the_channel_decode_or_are_ignored(data: bytes) -> None:
    ids = decode_message(data)
    assert ids is None or (ids and all(isinstance(i, str) for i in ids))


@pytest.mark.parametrize("data", [b"", b"nope", b"{}", b"[]", b"[1, 2]", b'"doc_a"', b"\xff"])
def test_malformed_messages_are_ignored(data: bytes) -> None:
    assert decode_message(data) is None


def test_a_list_of_ids_decodes() -> None:
    assert decode_message(json.dumps(["doc_a", "doc_b"]).encode()) == ["doc_a", "doc_b"]


# -- the broadcast ------------------------------------------------------------------------------
async def _heard(broadcast: object, publish: object, want: int) -> list[Sequence[str] | None]:
    """What a listener on ``broadcast`` hears while ``publish()`` runs in another thread."""
    heard: list[Sequence[str] | None] = []
    enough = asyncio.Event()

    def on_events(ids: Sequence[str] | None) -> None:
        heard.append(ids)
        if sum(1 for h in heard if h is not None) >= want:
            enough.set()

    async with broadcast.listening(on_events):  # type: ignore[attr-defined]
        await asyncio.sleep(0.2)  # subscribed
        await asyncio.to_thread(publish)  # type: ignore[arg-type]
        await asyncio.wait_for(enough.wait(), 10)
    return heard


async def test_local_broadcast_reaches_this_loop_from_another_thread() -> None:
    broadcast = LocalBroadcast()
    heard = await _heard(broadcast, lambda: broadcast.publish(["doc_a"]), want=1)
    assert heard == [["doc_a"]]


async def test_redis_broadcast_reaches_another_process_and_skips_garbage(redis_url: str) -> None:
    import redis

    target = parse_url(redis_url)
    sender, receiver = RedisBroadcast(target), RedisBroadcast(target)  # two processes' worth
    raw = redis.Redis.from_url(target.url)

    def publish() -> None:
        raw.publish(target.channel, b"not json")  # someone else's noise: ignored
        sender.publish(["doc_a", "doc_b"])
        sender.publish(["doc_c"])

    try:
        heard = await _heard(receiver, publish, want=2)
    finally:
        for closing in (sender, receiver, raw):
            closing.close()
    assert heard[0] is None  # on subscribing: "look at the store"
    assert [h for h in heard if h is not None] == [["doc_a", "doc_b"], ["doc_c"]]


def test_commits_are_announced_once_and_rollbacks_never(isolated_home: Path) -> None:
    told: list[Sequence[str]] = []
    with replica(isolated_home, None) as shelf:
        shelf.store.notices.listener = told.append
        with shelf.store.transaction():
            shelf.store.add_event("doc_a", "stage", stage="parsing")
            with shelf.store.transaction():  # a savepoint: part of the same commit
                shelf.store.add_event("doc_b", "stage", stage="parsing")
            shelf.store.add_event("doc_a", "stage", stage="chunking")
            assert told == []  # not before the commit
        assert told == [["doc_a", "doc_b"]]
        with pytest.raises(RuntimeError), shelf.store.transaction():
            shelf.store.add_event("doc_c", "stage", stage="parsing")
            raise RuntimeError("rolled back")
        shelf.store.add_event("doc_d", "stage", stage="parsing")
        assert told == [["doc_a", "doc_b"], ["doc_d"]]  # doc_c never happened


def test_a_failing_listener_never_fails_the_commit(isolated_home: Path) -> None:
    def broken(ids: Sequence[str]) -> None:
        raise ConnectionError("redis is down")

    with replica(isolated_home, None) as shelf:
        shelf.store.notices.listener = broken
        seq = shelf.store.add_event("doc_a", "stage", stage="parsing")
        assert [e.seq for e in shelf.store.events_after(0)] == [seq]


# -- the cache ------------------------------------------------------------------------------------
def test_cache_keys_live_under_the_prefix_with_their_ttl(redis_url: str) -> None:
    import redis

    target = parse_url(redis_url)
    cache = RedisCache(target)
    raw = redis.Redis.from_url(target.url)
    try:
        cache.put("k1", b"v1", 60)
        cache.incr("n")
        cache.incr("n")
        assert cache.get_many(["k1", "n", "absent"]) == [b"v1", b"2", None]
        assert 0 < raw.pttl(f"{target.prefix}k1") <= 60_000
        assert raw.get("k1") is None  # nothing outside the prefix
    finally:
        cache.close()
        raw.close()


def test_a_redis_that_is_down_is_a_miss_never_an_error() -> None:
    cache = RedisCache(parse_url("redis://127.0.0.1:1/0"))  # nothing listens on port 1
    assert cache.get_many(["a", "b"]) == [None, None]
    cache.put("a", b"x", 10)
    cache.incr("n")
    broadcast = RedisBroadcast(parse_url("redis://127.0.0.1:1/0"))
    broadcast.publish(["doc_a"])  # logged and dropped: the store is the truth


def test_search_results_are_shared_between_replicas(
    isolated_home: Path, notes: Path, redis_url: str
) -> None:
    with replica(isolated_home, redis_url) as a, replica(isolated_home, redis_url) as b:
        assert isinstance(a._cache, SharedRetrievalCache)
        a.add(notes)
        first = a.search("leader election")
        assert (a._cache.hits, a._cache.misses) == (0, 1)
        again = b.search("leader election")  # computed by A, answered to B from Redis
        assert (b._cache.hits, b._cache.misses) == (1, 0)
        assert again == first  # the same value, through JSON and back
        assert again.hits and again.hits[0].citation.label == first.hits[0].citation.label


def test_search_results_never_cross_users(isolated_home: Path, notes: Path, redis_url: str) -> None:
    with replica(isolated_home, redis_url) as a, replica(isolated_home, redis_url) as b:
        a.add(notes)
        assert a.search("leader election").hits  # the local admin's
        carol, _ = b.create_user("carol")
        assert b.search("leader election", user_id=carol.id).hits == []
        assert b._cache.misses == 1 and b._cache.hits == 0


def test_a_change_to_the_library_is_never_answered_from_before_it(
    isolated_home: Path, notes: Path, redis_url: str
) -> None:
    with replica(isolated_home, redis_url) as a, replica(isolated_home, redis_url) as b:
        a.add(notes)
        a.search("leader election")
        (notes / "extra.md").write_text("# Elections\n\nA leader election needs a quorum.\n")
        b.sync()  # another replica changes the library: a new generation
        again = a.search("leader election")
        assert any(h.document.rel_path == "extra.md" for h in again.hits)
        a.search("leader election")
        b.enrich()  # changes what search shows without touching chunks: a new epoch
        assert a._cache.misses == 2
        a.search("leader election")
        assert a._cache.misses == 3


def test_an_unreadable_entry_is_recomputed(
    isolated_home: Path, notes: Path, redis_url: str
) -> None:
    import redis

    target = parse_url(redis_url)
    raw = redis.Redis.from_url(target.url)
    with replica(isolated_home, redis_url) as a:
        a.add(notes)
        first = a.search("leader election")
        for key in raw.scan_iter(match=f"{target.prefix}ret:v1:*:*:*"):
            raw.set(key, b'{"epoch": 0, "value": {"hits": "garbage"}}')
        assert a.search("leader election").hits == first.hits  # recomputed
        assert a._cache.misses == 2
    raw.close()


def test_a_summary_computed_by_one_replica_is_a_cache_hit_on_another(
    tmp_path: Path, notes: Path, redis_url: str
) -> None:
    import redis

    target = parse_url(redis_url)
    raw = redis.Redis.from_url(target.url)
    # two libraries with the same file: only Redis can carry A's summary to B
    with replica(tmp_path / "a", redis_url) as a, replica(tmp_path / "b", redis_url) as b:
        a.add(notes / "cooking.md")
        b.add(notes / "cooking.md")
        doc = a.store.list_documents()[0]
        hits = counted("summary", "hit")
        [made] = a.enrich([doc.id])
        assert not made.cached
        key = f"{target.prefix}{SummaryCache.key(doc.sha256, 'en')}"
        assert 23 * 3600 < raw.ttl(key) <= 24 * 3600
        assert json.loads(raw.get(key) or b"{}")["producer"] == a.enricher.producer()
        [found] = b.enrich([b.store.list_documents()[0].id])
        assert found.cached and found.enrichment == made.enrichment
        assert counted("summary", "hit") == hits + 1
    raw.close()


def test_a_summary_of_another_producer_or_garbage_is_a_miss(
    isolated_home: Path, notes: Path, redis_url: str
) -> None:
    import redis

    target = parse_url(redis_url)
    raw = redis.Redis.from_url(target.url)
    with replica(isolated_home, redis_url) as a:
        a.add(notes / "cooking.md")
        doc = a.store.list_documents()[0]
        cache = a.summaries
        key = f"{target.prefix}{SummaryCache.key(doc.sha256, 'en')}"
        for junk in (b"\xff", b"[]", json.dumps({"producer": "llm:other", "enrichment": "{}"})):
            raw.set(key, junk)
            assert cache.get(doc.sha256, "en", a.enricher.producer()) is None
        [result] = a.enrich([doc.id])
        assert not result.cached  # computed, and the entry is good again
        assert cache.get(doc.sha256, "en", a.enricher.producer()) is not None
    raw.close()


def test_the_in_process_broadcast_wakes_streams_of_the_same_process(
    isolated_home: Path,
) -> None:
    """Without Redis a commit still wakes this process's streams (a thread commits)."""
    with replica(isolated_home, None) as shelf:

        async def run() -> list[Sequence[str] | None]:
            def commit() -> None:
                threading.Thread(target=shelf.store.add_event, args=("doc_x", "stage")).start()

            return await _heard(shelf.broadcast, commit, want=1)

        assert asyncio.run(run()) == [["doc_x"]]


def test_settings_read_redis_polling_and_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = Settings.from_env()
    assert (plain.redis_url, plain.sse_poll_seconds, plain.drain_seconds) == (None, 0.2, 20.0)
    monkeypatch.setenv("DOCSHELF_REDIS_URL", " redis://h:6379/1 ")
    monkeypatch.setenv("DOCSHELF_DRAIN_SECONDS", "5")
    shared = Settings.from_env()
    assert (shared.redis_url, shared.sse_poll_seconds, shared.drain_seconds) == (
        "redis://h:6379/1",
        5.0,  # Redis carries the news: the store is read less often
        5.0,
    )
    monkeypatch.setenv("DOCSHELF_SSE_POLL_SECONDS", "-1")
    with pytest.raises(InvalidInput, match="DOCSHELF_SSE_POLL_SECONDS"):
        Settings.from_env()
