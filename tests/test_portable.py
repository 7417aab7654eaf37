"""`docshelf export` / `docshelf import`: a whole library moved between stores without
re-embedding — SQLite to SQLite, SQLite to PostgreSQL — idempotent, and refusing
hostile archives before writing anything."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from docshelf import portable
from docshelf.cli import app
from docshelf.config import Settings
from docshelf.errors import Conflict, InvalidInput
from docshelf.ingest.worker import Worker
from docshelf.model import Stage, Tier
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.fakes import HashEmbedder
from tests.pg import fresh_schema

PAXOS = b"# Paxos\n\nAcceptors promise ballots to a proposer; a majority decides.\n"
QUEUED = b"# Gossip\n\nEpidemic protocols spread rumours between random peers.\n"


def drain(shelf: Shelf) -> None:
    worker = Worker(shelf, name="test")
    while worker.run_once():
        pass


@pytest.fixture
def library(shelf: Shelf, notes: Path) -> dict[str, Any]:
    """An embedded library with a bit of everything: a folder source (with a failure and
    wikilinks), users with tokens, a completed upload, a failed one and a queued one."""
    (notes / "links.md").write_text("# Links\n\nSee [[raft]] and [[cooking|bread]] for more.\n")
    (notes / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe not UTF-8\n")
    report = shelf.add(notes)
    assert report.added == 4 and report.failed == 1
    alice, token = shelf.create_user("alice")
    bob, _ = shelf.create_user("bob")
    shelf.revoke_user("bob")
    done = shelf.upload(alice.id, "paxos.md", PAXOS)
    failed = shelf.upload(alice.id, "poison.md", b"# Poison\n\n\xc3\x28 broken\n")
    drain(shelf)
    queued = shelf.upload(alice.id, "gossip.md", QUEUED)  # no worker runs after this one
    assert shelf.job(done.document_id).status == "complete"
    assert shelf.job(failed.document_id).status == "failed"
    assert len(shelf.enrich_pending()) == 5  # the indexed ones: summaries and distillates
    shelf.notebooks.create("Notes", sources=[str(notes)], filters=["type=markdown"])
    shelf.notebooks.create("Papers", alice.id, documents=[done.document_id])
    return {
        "alice": alice.id,
        "bob": bob.id,
        "token": token,
        "done": done.document_id,
        "failed": failed.document_id,
        "queued": queued.document_id,
        "queued_sha": queued.fingerprint,
    }


def dump(shelf: Shelf) -> dict[str, Any]:
    """Everything a library holds, as comparable values."""
    store = shelf.store
    docs = store.list_documents()
    snap = store.vector_snapshot()
    order = np.argsort(snap.chunk_ids)
    return {
        "meta": (store.get_meta("embedding_model"), store.get_meta("embedding_dim")),
        "documents": docs,
        "chunks": {
            d.id: [store.chunks_of_document(d.id, t) for t in (Tier.SECTION, Tier.SNIPPET)]
            for d in docs
        },
        "vector_ids": [snap.chunk_ids[i] for i in order],
        "vectors": snap.matrix[order].tobytes(),
        "files": {d.id: store.files_of_document(d.id) for d in docs},
        "links": {d.id: store.links_of(d.id) for d in docs},
        "backlinks": {d.id: store.backlinks(d.id) for d in docs},
        "users": [(u, store.has_token(u.id)) for u in store.list_users()],
        "access": {
            (u.id, d.id): store.has_access(u.id, d.id) for u in store.list_users() for d in docs
        },
        "jobs": {d.id: store.get_job(d.id) for d in docs},
        "distillates": {d.id: store.distillates_of(d.id) for d in docs},
        "sources": store.list_sources(),
        "failures": store.list_failures(),
        "notebooks": sorted(
            {n for u in store.list_users() for n in store.notebooks_for(u.id)},
            key=lambda n: n.id,
        ),
    }


def same_except_requeued(before: dict[str, Any], after: dict[str, Any], queued: str) -> None:
    """Equal dumps, except that the unfinished job's due time moved to the import."""
    for key in before:
        if key == "jobs":
            for doc_id, job in before["jobs"].items():
                other = after["jobs"][doc_id]
                if doc_id == queued:
                    assert (other.stage, other.status) == (job.stage, job.status)
                else:
                    assert other == job, doc_id
        else:
            assert after[key] == before[key], key


def hits(shelf: Shelf, query: str, mode: str, **kw: Any) -> list[str]:
    """The hits' chunk ids, best first (equal scores in id order: ties may come in
    either order from a scan)."""
    found = shelf.search(query, mode=mode, limit=50, **kw).hits
    return [h.chunk.id for h in sorted(found, key=lambda h: (-round(h.score, 5), h.chunk.id))]


QUERIES = ["leader election heartbeat", "sourdough starter flour", "plumber leak"]


def test_round_trip_sqlite_to_sqlite(shelf: Shelf, library: dict[str, Any], tmp_path: Path) -> None:
    archive = tmp_path / "library.zip"
    exported = shelf.export_library(archive)
    assert exported.embedding_model == "fake-hash-64" and exported.embedding_dim == 64
    c = exported.counts
    assert (c["documents"], c["users"], c["sources"], c["failures"], c["jobs"]) == (7, 3, 1, 1, 3)
    assert c["vectors"] == c["snippets"] > 0 and c["blobs"] == 3 and c["links"] == 2
    assert c["notebooks"] == 2
    with zipfile.ZipFile(archive) as zf:
        assert json.loads(zf.read("manifest.json"))["counts"] == c
    with pytest.raises(Conflict):
        shelf.export_library(archive)  # never overwrites without asking

    target_embedder = HashEmbedder()
    with Shelf(tmp_path / "target", embedder=target_embedder) as target:
        report = target.import_library(archive)
        assert report.added["documents"] == 7 and report.added["users"] == 3
        assert report.added["blobs"] == 3 and report.requeued == [library["queued"]]
        assert report.added["notebooks"] == 2
        assert len(dump(target)["notebooks"]) == 2
        assert hits(target, "flour", "lexical", notebook="Notes") == hits(
            shelf, "flour", "lexical", notebook="Notes"
        )
        assert target_embedder.embedded == []  # nothing embedded again
        before, after = dump(shelf), dump(target)
        same_except_requeued(before, after, library["queued"])
        assert target.check() == []
        assert target.authenticate(library["token"]).id == library["alice"]  # type: ignore[union-attr]
        for query in QUERIES:
            for mode in ("hybrid", "lexical", "vector"):
                assert hits(target, query, mode) == hits(shelf, query, mode), (query, mode)
        alice = library["alice"]
        assert hits(target, "acceptors ballots", "hybrid", user_id=alice) == hits(
            shelf, "acceptors ballots", "hybrid", user_id=alice
        )

        # importing again changes nothing
        generation = target.store.generation()
        again = target.import_library(archive)
        assert dict(again.added) == {}
        assert again.skipped["documents"] == 7 and again.skipped["blobs"] == 3
        assert target.store.generation() == generation
        assert dump(target) == after

        # the queued upload's bytes came along: a worker here finishes it
        assert target.blobs.exists(library["queued_sha"])
        drain(target)
        assert target.job(library["queued"]).status == "complete"
        assert hits(target, "epidemic rumours", "lexical")


def test_sqlite_to_postgres_gives_the_same_hits(
    shelf: Shelf, library: dict[str, Any], tmp_path: Path
) -> None:
    archive = tmp_path / "library.zip"
    shelf.export_library(archive)
    with fresh_schema() as url:
        settings = Settings(home=tmp_path / "pg", database_url=url, embedder="none")
        embedder = HashEmbedder()
        with Shelf(settings=settings, embedder=embedder) as target:
            report = target.import_library(archive)
            assert report.added["documents"] == 7 and embedder.embedded == []
            same_except_requeued(dump(shelf), dump(target), library["queued"])
            assert target.check() == []
            for query in QUERIES:
                assert hits(target, query, "vector") == hits(shelf, query, "vector"), query
                assert hits(target, query, "hybrid")[0] == hits(shelf, query, "hybrid")[0]
                assert hits(target, query, "lexical")[0] == hits(shelf, query, "lexical")[0]
            filters = SearchFilters(tags=("baking",))
            assert hits(target, "flour", "hybrid", filters=filters) == hits(
                shelf, "flour", "hybrid", filters=filters
            )
            assert target.authenticate(library["token"]) is not None

            # and back out of PostgreSQL: the same archive, line for line
            again = tmp_path / "again.zip"
            target.export_library(again)
            assert entries(again) == entries(archive)
            assert target.import_library(archive).added == {}


def entries(path: Path) -> list[dict[str, Any]]:
    """An archive's lines, without what an import sets anew (the access link's date and
    the due time of a requeued job)."""
    out = []
    with zipfile.ZipFile(path) as zf:
        for member in ("users.jsonl", "sources.jsonl", "documents.jsonl"):
            for line in zf.read(member).decode().splitlines():
                obj = json.loads(line)
                for access in obj.get("access", []):
                    access.pop("added_at")
                for f in obj.get("failures", []):
                    f.pop("seen_at")
                if obj.get("job"):
                    for key in ("next_attempt_at", "updated_at", "lease_owner", "status"):
                        obj["job"].pop(key)
                out.append(obj)
        assert sorted(n for n in zf.namelist() if n.startswith("blobs/")) == sorted(
            n for n in zf.namelist() if n.startswith("blobs/")
        )
    return out


# -- hostile and damaged archives ------------------------------------------------------------


def rewrite(
    src: Path,
    dst: Path,
    change: Callable[[str, bytes], bytes | None] = lambda name, data: data,
    extra: dict[str, bytes] | None = None,
) -> Path:
    """A copy of an archive with members changed (None drops one) or added."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)
    return dst


def manifest_with(**fields: Any) -> Callable[[str, bytes], bytes | None]:
    def change(name: str, data: bytes) -> bytes:
        if name != "manifest.json":
            return data
        return json.dumps({**json.loads(data), **fields}).encode()

    return change


def line_changed(n: int, new: bytes | None) -> Callable[[str, bytes], bytes | None]:
    def change(name: str, data: bytes) -> bytes:
        if name != "documents.jsonl":
            return data
        lines = data.splitlines(keepends=True)
        lines[n - 1 : n] = [] if new is None else [new]
        return b"".join(lines)

    return change


@pytest.fixture
def archive(shelf: Shelf, library: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "good.zip"
    shelf.export_library(path)
    return path


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Shelf]:
    with Shelf(tmp_path / "target", embedder=HashEmbedder()) as s:
        yield s


def untouched(shelf: Shelf) -> None:
    stats = shelf.store.stats()
    assert (stats.documents, stats.sources, stats.snippets) == (0, 0, 0)
    assert shelf.store.list_users() == []
    assert shelf.store.get_meta("embedding_model") is None
    assert not (shelf.settings.home / "blobs").exists() or not any(
        p.is_file() for p in (shelf.settings.home / "blobs").rglob("*")
    )


def with_a_line_edited(archive: Path, edit: Callable[[dict[str, Any]], None]) -> Callable[..., Any]:
    """Edit the first document that has vectors."""
    with zipfile.ZipFile(archive) as zf:
        lines = zf.read("documents.jsonl").splitlines()
    n, obj = next(
        (n, obj)
        for n, obj in enumerate(map(json.loads, lines), start=1)
        if any(c["vector"] for c in obj["chunks"])
    )
    edit(obj)
    return line_changed(n, json.dumps(obj).encode() + b"\n")


def _bad_vector(obj: dict[str, Any]) -> None:
    snippet = next(c for c in obj["chunks"] if c["vector"])
    snippet["vector"] = snippet["vector"][:-8]


def _foreign_chunk(obj: dict[str, Any]) -> None:
    obj["chunks"][0]["id"] = "chunk_000000000000_0"


def _unknown_user(obj: dict[str, Any]) -> None:
    obj["access"] = [{"user_id": "usr_nobody", "title": None}]


def _bad_type(obj: dict[str, Any]) -> None:
    obj["document"]["size_bytes"] = "large"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncated", "truncated"),
        ("not a zip", "not an archive made by `docshelf export`"),
        ("version", "format version 99"),
        ("format", "does not describe a docshelf export"),
        ("traversal", "unexpected member '../../evil.md'"),
        ("absolute", "unexpected member '/etc/passwd'"),
        ("blob traversal", "unexpected member 'blobs/../x'"),
        ("no documents", "lacks documents.jsonl"),
        ("bad json", "documents.jsonl line 3 is not valid JSON"),
        ("missing line", "does not match its manifest"),
        ("bad blob", "does not hold the bytes its name says"),
        ("bad vector", "is not 64-dimensional"),
        ("foreign chunk", "does not match its document"),
        ("unknown user", "shared with user 'usr_nobody', not in the archive"),
        ("bad type", "size_bytes must be int"),
    ],
)
def test_a_hostile_or_damaged_archive_writes_nothing(
    archive: Path, target: Shelf, tmp_path: Path, damage: str, message: str
) -> None:
    bad = tmp_path / "bad.zip"
    if damage == "truncated":
        data = archive.read_bytes()
        bad.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "not a zip":
        bad.write_text("hello")
    elif damage == "version":
        rewrite(archive, bad, manifest_with(version=99))
    elif damage == "format":
        rewrite(archive, bad, manifest_with(format="something-else"))
    elif damage == "traversal":
        rewrite(archive, bad, extra={"../../evil.md": b"# evil\n"})
    elif damage == "absolute":
        rewrite(archive, bad, extra={"/etc/passwd": b"root:x:0:0\n"})
    elif damage == "blob traversal":
        rewrite(archive, bad, extra={"blobs/../x": b"x"})
    elif damage == "no documents":
        rewrite(archive, bad, lambda name, data: None if name == "documents.jsonl" else data)
    elif damage == "bad json":
        rewrite(archive, bad, line_changed(3, b"{not json\n"))
    elif damage == "missing line":
        rewrite(archive, bad, line_changed(5, None))
    elif damage == "bad blob":
        rewrite(archive, bad, lambda name, data: b"other" if name.startswith("blobs/") else data)
    else:
        edit = {
            "bad vector": _bad_vector,
            "foreign chunk": _foreign_chunk,
            "unknown user": _unknown_user,
            "bad type": _bad_type,
        }[damage]
        rewrite(archive, bad, with_a_line_edited(archive, edit))
    with pytest.raises(InvalidInput) as err:
        target.import_library(bad)
    assert message in err.value.message
    untouched(target)


def test_a_damaged_member_is_caught_by_its_checksum(
    archive: Path, target: Shelf, tmp_path: Path
) -> None:
    """Flipped bytes inside the compressed documents: zip's CRC, before any write."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("documents.jsonl")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle : middle + 4] = bytes(b ^ 0xFF for b in data[middle : middle + 4])
    bad = tmp_path / "flipped.zip"
    bad.write_bytes(bytes(data))
    with pytest.raises(InvalidInput):
        target.import_library(bad)
    untouched(target)


def test_another_model_is_refused_unless_the_target_is_empty(
    archive: Path, tmp_path: Path, notes: Path
) -> None:
    with Shelf(tmp_path / "other", embedder=HashEmbedder(model_id="other-model")) as other:
        other.add(notes / "todo.txt")
        before = dump(other)
        with pytest.raises(Conflict) as err:
            other.import_library(archive)
        assert "fake-hash-64" in err.value.message and "other-model" in err.value.message
        assert dump(other) == before
    # bound to another model but empty (nothing written yet): the archive's model wins
    with Shelf(tmp_path / "empty", embedder=HashEmbedder(model_id="other-model")) as empty:
        empty.store.set_meta("embedding_model", "other-model")
        empty.import_library(archive)
        assert empty.store.get_meta("embedding_model") == "fake-hash-64"


def test_a_user_name_taken_by_another_user_is_a_conflict(archive: Path, target: Shelf) -> None:
    target.create_user("alice")
    with pytest.raises(Conflict) as err:
        target.import_library(archive)
    assert "already has a user named 'alice'" in err.value.message
    assert target.store.stats().documents == 0


def test_an_interrupted_import_leaves_whole_documents_and_finishes_when_rerun(
    shelf: Shelf,
    archive: Path,
    target: Shelf,
    library: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Documents are written a batch per transaction: a failure inside a batch rolls
    the batch back; what was committed before is whole; the next run completes it."""
    monkeypatch.setattr(portable, "PAGE", 2)
    calls = {"n": 0}
    put_links = target.store.put_links

    def failing(document_id: str, links: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 4:  # inside the second batch
            raise OSError("disk full")
        put_links(document_id, links)

    monkeypatch.setattr(target.store, "put_links", failing)
    with pytest.raises(OSError):
        target.import_library(archive)
    assert target.store.stats().documents == 2  # the first batch, whole
    assert target.check() == []
    for doc in target.store.list_documents():
        original = shelf.store.get_document(doc.id)
        assert original is not None and doc.chunk_counts == original.chunk_counts
    monkeypatch.setattr(target.store, "put_links", put_links)
    report = target.import_library(archive)
    assert report.skipped["documents"] == 2 and report.added["documents"] == 5
    same_except_requeued(dump(shelf), dump(target), library["queued"])


def test_a_running_job_is_due_again_after_the_move(shelf: Shelf, tmp_path: Path) -> None:
    alice = shelf.create_user("alice")[0].id
    up = shelf.upload(alice, "gossip.md", QUEUED)
    claimed = shelf.store.claim_job("old-worker", 600, 1e12)  # leased far into the future
    assert claimed is not None and claimed.status == "running"
    shelf.export_library(tmp_path / "lib.zip")
    with Shelf(tmp_path / "target", embedder=HashEmbedder()) as target:
        assert target.import_library(tmp_path / "lib.zip").requeued == [up.document_id]
        job = target.job(up.document_id)
        assert (job.status, job.lease_owner, job.stage) == ("queued", None, Stage.QUEUED)
        drain(target)
        assert target.job(up.document_id).status == "complete"


def test_an_empty_library_round_trips(tmp_path: Path) -> None:
    with Shelf(tmp_path / "a", embedder=HashEmbedder()) as a:
        report = a.export_library(tmp_path / "empty.zip")
        assert report.embedding_model is None and set(report.counts.values()) == {0}
    with Shelf(tmp_path / "b", embedder=HashEmbedder()) as b:
        assert dict(b.import_library(tmp_path / "empty.zip").added) == {}


# -- the commands --------------------------------------------------------------------------

runner = CliRunner()


def cli(home: Path, *args: str) -> dict[str, Any]:
    env = {"DOCSHELF_EMBEDDER": "none", "DOCSHELF_HOME": str(home)}
    result = runner.invoke(app, ["--json", *args], env=env)
    envelope: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert envelope["command"] == args[0]
    assert (result.exit_code == 0) == envelope["ok"], result.stdout
    return envelope


def test_export_and_import_commands(notes: Path, tmp_path: Path) -> None:
    src, dst, path = tmp_path / "src", tmp_path / "dst", tmp_path / "lib.zip"
    assert cli(src, "add", str(notes))["ok"]
    out = cli(src, "export", str(path))
    assert out["result"]["counts"]["documents"] == 3 and out["result"]["embedding_model"] == "none"
    assert out["next_actions"][0]["command"].startswith("docshelf --home")
    again = cli(src, "export", str(path))
    assert again["error"]["code"] == "conflict" and "--force" in again["error"]["message"]
    assert cli(src, "export", str(path), "--force")["ok"]

    first = cli(dst, "import", str(path))
    assert first["result"]["added"] == {"users": 1, "sources": 1, "documents": 3}
    second = cli(dst, "import", str(path))
    assert second["result"]["added"] == {} and second["result"]["skipped"]["documents"] == 3
    found = cli(dst, "search", "leader election")["result"]["hits"]
    assert found and found[0]["citation"]["label"].startswith("Raft")

    missing = cli(dst, "import", str(tmp_path / "nope.zip"))
    assert missing["error"]["code"] == "invalid_input"


def test_the_archive_covers_every_table_and_column(shelf: Shelf) -> None:
    """A column added to the schema must be exported (or deliberately left out here)."""
    from docshelf.store import rows

    db = shelf.store._db  # type: ignore[attr-defined]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = {t for t in tables if not t.startswith(("chunks_fts", "distillates_fts", "sqlite_"))}
    carried = {"meta", "sources", "failures", "documents", "files", "chunks", "vectors"}
    carried |= {"users", "access", "jobs", "links", "note_names", "distillates"}
    carried |= {"notebooks", "notebook_sources", "notebook_documents", "notebook_shares"}
    left_out = {"embedding_cache", "enrichment_cache", "job_payloads", "events"}
    left_out |= {"schema_migrations"}
    left_out |= {"vector_log"}  # the ANN index's feed: the importing library builds its own
    left_out |= {"lexical_log"}  # the lexical sidecar's feed, likewise
    left_out |= {"reindex_staging"}  # a reindex in progress belongs to its library
    left_out |= {"conversations", "conversation_turns"}  # threads of asks, not the library
    left_out |= {"repeats"}  # the chunks' block keys: made again as they are written
    assert tables == carried | left_out

    def columns(table: str) -> set[str]:
        return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}

    def listed(cols: str) -> set[str]:
        return {c.strip() for c in cols.split(",")}

    # A lease is the exporting library's business, not the document's; so is the work
    # still to do (vectors: the importing library finds what lacks them, ``import_into``).
    lease = {"enrich_lease_until", "enrich_lease_owner"}
    lease |= {"embed_pending", "embed_lease_until", "embed_lease_owner"}
    assert columns("documents") - lease == listed(rows.DOCUMENT_COLUMNS)
    assert columns("distillates") == {"seq", "document_id", "ord", "text", "chunk_ids", "mode"}
    assert columns("chunks") - {"seq"} == listed(rows.CHUNK_COLUMNS)
    assert columns("jobs") == listed(rows.JOB_COLUMNS)
    assert columns("users") == {"id", "name", "token_hash", "is_admin", "created_at", "revoked_at"}
    assert columns("access") == {"user_id", "document_id", "title", "tags", "added_at"}
    assert columns("sources") == {
        *("id", "path", "kind", "host", "added_at", "user_id", "follow_symlinks")
    }
    assert columns("files") == {"path", "source_id", "document_id", "size", "mtime_ns"}
    assert columns("links") == {"document_id", "ord", "target", "heading", "alias", "embed"}
    assert columns("note_names") == {"document_id", "name", "kind"}
    # the file as it failed (what sync passes over) is this library's memo, as the caches
    # are: the importing library's first sync reads such a file once more
    settled = {"size", "mtime_ns", "sha256", "parser", "tried_at"}
    assert columns("failures") - settled == {"path", "source_id", "reason", "seen_at"}
