"""A large file is parsed *and* chunked in the parser sandbox's child (issue 17, item 7:
health endpoints never blocked by ingest), with the same chunks as in-process; the
chunks come back in batches; ``serve``'s pool loads the model before it serves."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import docshelf.parse as parse_mod
from docshelf.blobs.local import LocalBlobStore
from docshelf.chunk import ChunkSettings, approx_tokens
from docshelf.embed import local_available
from docshelf.errors import InvalidInput
from docshelf.ingest.prepare import Chunking, chunk_file, chunk_parsed, portable_counter
from docshelf.ingest.uploads import intake_of
from docshelf.ingest.worker import Worker, WorkerPool, WorkerSettings
from docshelf.model import Tier
from docshelf.parse import parse
from docshelf.parse.sandbox import Batched, run_limited
from docshelf.shelf import Shelf


def _big_markdown(words: int = 60_000) -> bytes:
    """One line of words after a title and a heading: over a lowered IN_PROCESS_BYTES."""
    body = " ".join(f"w{i % 997}x" for i in range(words))
    return f"# Big one\n\n## Part\n\n{body} [[Other note]]\n".encode()


def _pairs(n: bytes) -> Batched[str]:
    return Batched("head", [(i, str(i)) for i in range(int(n))])


def test_a_batched_answer_comes_back_whole_across_many_messages() -> None:
    answer = run_limited(_pairs, b"5001", "test")
    assert answer.head == "head"
    assert answer.items == [(i, str(i)) for i in range(5001)]  # three batches of 2,000
    seen: list[tuple[str, int]] = []
    streamed = run_limited(
        _pairs, b"5001", "test", on_part=lambda head, part: seen.append((head, len(part)))
    )
    assert streamed.head == "head" and streamed.items == []  # each batch used as it came
    assert seen == [("head", 2000), ("head", 2000), ("head", 1001)]


def test_a_large_text_is_chunked_in_a_child_with_the_chunks_of_an_in_process_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _big_markdown()
    chunking = Chunking(ChunkSettings(), approx_tokens)
    here = chunk_parsed(parse(data, "markdown"), fp="f" * 64, title="Big one", chunking=chunking)
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", 1024)
    away = chunk_file(
        data, file_type="markdown", fp="f" * 64, title=None, fallback_title="x", chunking=chunking
    )
    assert away.pid != os.getpid()  # parsed and chunked in another process
    assert len(away.chunks) > 50
    assert away.chunks == here.chunks
    assert away.fields == here.fields()
    assert away.links == here.links("markdown") and len(away.links) == 1
    assert away.characters == len(parse(data, "markdown").body)


@pytest.mark.parametrize("in_process_bytes", [1 << 20, 1024])
def test_a_file_with_no_text_to_chunk_is_refused_here_and_in_the_child(
    monkeypatch: pytest.MonkeyPatch, in_process_bytes: int
) -> None:
    """Front matter and nothing else: no chunk, so not a document search could never
    find (issue 41), whether chunked here or, large, in the sandbox's child."""
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", in_process_bytes)
    data = ("---\ntitle: Only this\nnote: " + "words " * 400 + "\n---\n").encode()
    assert len(data) > 1024
    with pytest.raises(InvalidInput, match=r"^no text to index$"):
        chunk_file(
            data,
            file_type="markdown",
            fp="c" * 64,
            title=None,
            fallback_title="x",
            chunking=Chunking(ChunkSettings(), approx_tokens),
        )


def test_a_small_file_is_chunked_here(monkeypatch: pytest.MonkeyPatch) -> None:
    small = b"# Small\n\nA short note.\n"
    chunking = Chunking(ChunkSettings(), approx_tokens)
    done = chunk_file(
        small, file_type="markdown", fp="e" * 64, title=None, fallback_title="x", chunking=chunking
    )
    assert done.pid == os.getpid()
    assert done.fields["title"] == "Small"


def test_a_counter_that_cannot_leave_the_process_keeps_the_chunking_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", 1024)

    def local_counter(text: str) -> int:  # a closure: not importable by name
        return approx_tokens(text)

    assert portable_counter(local_counter) is None
    done = chunk_file(
        _big_markdown(5_000),
        file_type="markdown",
        fp="d" * 64,
        title=None,
        fallback_title="x",
        chunking=Chunking(ChunkSettings(), local_counter),
    )
    assert done.pid == os.getpid()
    assert done.chunks


@pytest.mark.skipif(not local_available(), reason="the packaged model is not installed")
def test_the_packaged_models_counter_goes_to_the_child_as_its_tokenizer_file() -> None:
    from docshelf.embed.local import LocalEmbedder

    model = LocalEmbedder()
    counter = portable_counter(model.count_tokens)
    assert counter is not None and counter is not model.count_tokens
    for text in ("", "plain words", "Ünïcode — and punctuation!", "tokenization " * 40):
        assert counter(text) == model.count_tokens(text)


def test_the_worker_chunks_a_large_upload_in_a_child_and_completes_it(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", 1024)
    seen: list[int] = []
    given: list[object] = []
    real = chunk_file

    def watched(*args: object, **kwargs: object) -> object:
        given.append(args[0])
        done = real(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(done.pid)
        return done

    monkeypatch.setattr("docshelf.ingest.worker.chunk_file", watched)
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "big.md", _big_markdown())
        assert Worker(shelf).run_once()
        assert shelf.job(up.document_id).status == "complete"
        assert seen and seen[0] != os.getpid()
        assert isinstance(given[0], Path)  # a local blob: the child reads it, not this process
        doc = shelf.store.get_document(up.document_id)
        assert doc is not None and doc.title == "Big one"
        assert doc.chunk_counts[Tier.SNIPPET.value] > 50
        assert shelf.store.get_payload(up.document_id, "parsing") is None
        stages = [e.stage for e in shelf.events(document_id=up.document_id, user_id=user)]
        assert stages == ["queued", "parsing", "chunking", "embedding", "indexing", "complete"]
        assert shelf.search("w5x", user_id=user).hits


def test_the_pool_loads_a_local_model_before_its_workers_start(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[float, list[str]]] = []

    class Packaged:  # stands for the packaged model: what the pool recognises by module
        model_id, dim, window = "packaged", 4, 256

        def count_tokens(self, text: str) -> int:
            return approx_tokens(text)

        def embed(self, texts: list[str]) -> object:
            import numpy as np

            calls.append((time.monotonic(), list(texts)))
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    Packaged.__module__ = "docshelf.embed.local"
    with Shelf(isolated_home, embedder=Packaged()) as shelf:
        started: list[float] = []
        monkeypatch.setattr(Worker, "run", lambda self, stop: started.append(time.monotonic()))
        pool = WorkerPool(shelf, 1)
        pool.start()
        pool.stop()
        assert calls and calls[0][1] == ["warm up"]
        assert started and calls[0][0] <= started[0]


def test_an_in_process_worker_lets_an_upload_being_received_pass_first(
    isolated_home: Path,
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "a.md", b"# A\n\nSome words to index.\n")
        intake = intake_of(shelf.runtime)
        reached = threading.Event()
        worker = Worker(
            shelf,
            WorkerSettings(yield_seconds=60),
            on_stage=lambda job, stage: reached.set(),
        )
        with intake.receiving():
            assert intake.busy == 1
            thread = threading.Thread(target=worker.run_once)
            thread.start()
            assert reached.wait(10)
            time.sleep(0.3)  # it waits for the upload: the stage has not run
            assert shelf.job(up.document_id).stage.value == "parsing"
        thread.join(10)  # the upload answered: the worker goes on at once
        assert not thread.is_alive()
        assert shelf.job(up.document_id).status == "complete"


def test_a_steady_stream_of_uploads_does_not_starve_the_worker(isolated_home: Path) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "a.md", b"# A\n\nSome words to index.\n")
        with intake_of(shelf.runtime).receiving():  # never quiet while the worker runs
            assert Worker(shelf, WorkerSettings(yield_seconds=0.01)).run_once()
        assert shelf.job(up.document_id).status == "complete"


def test_a_duplicate_upload_leaves_the_stored_blob_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known bytes: no fsync, no rename over the blob (the same file stays), no temp left."""
    blobs = LocalBlobStore(tmp_path / "blobs")
    with blobs.writer(1 << 20) as first:
        first.write(b"the same bytes")
        sha = first.commit()
    inode = blobs.path(sha).stat().st_ino
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with blobs.writer(1 << 20) as again:
        again.write(b"the same bytes")
        assert again.commit() == sha
    assert synced == []
    assert blobs.path(sha).stat().st_ino == inode
    assert blobs.read(sha) == b"the same bytes"
    assert not list(blobs.tmp.iterdir())
    with blobs.writer(1 << 20) as other:
        other.write(b"new bytes")
        other.commit()
    # new bytes: the file, its folder, and the parents of the two fan-out folders made for it
    assert len(synced) == 4


def test_a_large_files_chunks_go_in_several_transactions_and_survive_a_crash_between(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", 1024)
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "big.md", _big_markdown())
        writer = shelf.runtime.writer
        real_add = writer.add_chunks
        calls: list[int] = []

        def crash_on_the_third(doc: object, chunks: list[object]) -> None:
            calls.append(len(chunks))
            if len(calls) == 3:
                raise RuntimeError("killed between two batches")
            real_add(doc, chunks)  # type: ignore[arg-type]

        monkeypatch.setattr(writer, "add_chunks", crash_on_the_third)
        settings = WorkerSettings(write_batch=25, backoff_base=0.0, yield_seconds=0.0)
        assert Worker(shelf, settings).run_once()  # fails mid-way, retried later
        job = shelf.job(up.document_id)
        assert job.status == "queued" and job.stage.value == "chunking"  # no payload: parses again
        assert Worker(shelf, settings).run_once()
        assert shelf.job(up.document_id).status == "complete"
        assert len(calls) > 4 and set(calls[:-1]) == {25}
        doc = shelf.store.get_document(up.document_id)
        assert doc is not None
        stored = [
            c.id for tier in Tier for c in shelf.store.chunks_of_document(up.document_id, tier)
        ]
        assert len(stored) == len(set(stored)) == sum(doc.chunk_counts.values())


def _two_phases(marked: bytes) -> str:
    from docshelf.parse.sandbox import next_phase

    time.sleep(3.0)
    if marked == b"yes":
        next_phase()
    time.sleep(3.0)
    return "done"


def _ready(data: bytes) -> str:
    return "ready"


def test_each_phase_of_the_childs_work_gets_the_time_limit() -> None:
    """Parse, then chunk: each within the limit passes, though both together exceed it.
    (Each phase leaves 2 s of the limit to spare, for a child started on a busy machine;
    the fork server is started first, so its start-up is not the first phase's.)"""
    assert run_limited(_ready, b"", "markdown", timeout_s=120.0) == "ready"
    assert run_limited(_two_phases, b"yes", "markdown", timeout_s=5.0) == "done"
    with pytest.raises(InvalidInput, match="exceeded the 5 s time limit"):
        run_limited(_two_phases, b"no", "markdown", timeout_s=5.0)


def test_cutting_a_huge_block_renews_the_childs_time_limit_as_it_advances(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In the child: one phase mark after the parse, then one per PHASE_CHARACTERS cut (in
    either tier's pass), so a 25 MB line that is being cut is not failed for taking longer
    than one limit; the chunks are those of an ordinary chunking."""
    import docshelf.ingest.prepare as prepare
    import docshelf.parse.sandbox as sandbox

    marks: list[int] = []
    monkeypatch.setattr(sandbox, "next_phase", lambda: marks.append(1))
    monkeypatch.setattr(prepare, "PHASE_CHARACTERS", 100_000)
    body = " ".join(f"word{i % 50}" for i in range(60_000))  # ~0.4 MB on one line
    chunking = Chunking(ChunkSettings(), approx_tokens)
    answer = prepare._chunk_in_child(
        "text", "f" * 64, "t", "t", chunking, (None, None), 500, body.encode()
    )
    # parsed, then both passes cut about the whole line: ~4 marks each
    assert 1 + 6 <= len(marks) <= 1 + 2 * len(body) // 100_000
    want = chunk_parsed(parse(body.encode(), "text"), fp="f" * 64, title="t", chunking=chunking)
    assert [c.id for c in answer.items] == [c.id for c in want.chunks]
