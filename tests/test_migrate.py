"""``docshelf migrate``: what a deployment's migration Job runs (deploy/k8s/)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.search.engines import own_engines
from docshelf.store import open_store, postgres_schema, sqlite_schema
from tests import pg

runner = CliRunner()


def migrate(env: dict[str, str]) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, ["--json", "migrate"], env=env)
    return result.exit_code, json.loads(result.stdout)


def test_migrate_brings_a_new_sqlite_store_up_to_date(isolated_home: Path) -> None:
    code, out = migrate({})
    assert code == 0 and out["ok"] is True
    latest = max(m.version for m in sqlite_schema.MIGRATIONS)
    assert out["result"] == {
        "database": f"sqlite:///{isolated_home / 'docshelf.db'}",
        "schema_version": latest,
    }
    store = open_store(f"sqlite:///{isolated_home / 'docshelf.db'}")
    assert store.schema_version() == latest
    store.close()
    assert migrate({})[1]["result"] == out["result"]  # again: nothing to do


def test_migrate_brings_a_postgres_schema_up_to_date(isolated_home: Path) -> None:
    with pg.fresh_schema() as url:
        code, out = migrate({"DOCSHELF_DATABASE_URL": url})
        assert code == 0, out
        result = out["result"]
        assert isinstance(result, dict)
        assert result["schema_version"] == max(m.version for m in postgres_schema.MIGRATIONS)


@pytest.mark.parametrize(
    ("url", "code"),
    [("mysql://x@y/z", "invalid_input"), ("sqlite:///", "invalid_input")],
)
def test_migrate_names_a_bad_database_url(isolated_home: Path, url: str, code: str) -> None:
    exit_code, out = migrate({"DOCSHELF_DATABASE_URL": url})
    assert exit_code != 0 and out["ok"] is False
    error = out["error"]
    assert isinstance(error, dict) and error["code"] == code


# The SHA-256 (its first 16 hex digits) of each migration's SQL as it shipped. A migration
# that has run must never change, and its SQL is partly made of the tables both stores
# share (store/sql/schema.py), so an edit there would change every migration that names
# one: this holds them all. A new migration adds its line here.
SHIPPED = {
    ("sqlite", 1): "1ca6aea80c3947ec",
    ("sqlite", 2): "12e5e284cbc2cc92",
    ("sqlite", 3): "90bf0409a0590a3e",
    ("sqlite", 4): "be8ea430f2fd8683",
    ("sqlite", 5): "9d25cc73ae678c8a",
    ("sqlite", 6): "16d0dd246ef0e57b",
    ("sqlite", 7): "52530bae81d205cc",
    ("sqlite", 8): "405d9590233b0735",
    ("sqlite", 9): "39629b4b4ca0e093",
    ("sqlite", 10): "4a2e21e9a78916c7",
    ("sqlite", 11): "fa1d8172b5b0a727",
    ("sqlite", 12): "b9113611bec30cff",
    ("sqlite", 13): "3f787449276503ef",
    ("sqlite", 14): "987c5c7660468caa",
    ("sqlite", 15): "e59f2e8897ee4148",
    ("sqlite", 16): "c51a0e6c38f67795",
    ("sqlite", 17): "fe86ae9f763bddd9",
    ("sqlite", 18): "4a66b60234611f25",
    ("sqlite", 19): "5dd6138a86a02bf7",
    ("postgres", 1): "b4a0bbd142fcabee",
    ("postgres", 2): "6c5ceee58397bae3",
    ("postgres", 3): "7d66e84455327272",
    ("postgres", 4): "73dc352f2033cf58",
    ("postgres", 5): "7d7c6d46ac68e029",
    ("postgres", 6): "27b59b937278a5f6",
    ("postgres", 7): "5d5d3ddb02b48c81",
    ("postgres", 8): "cf377e9968e3d7e0",
    ("postgres", 9): "d88841fc0451a64c",
    ("postgres", 10): "517771aa97a02b5f",
    ("postgres", 11): "ec08cd228781707b",
    ("postgres", 12): "ef25bade030e7379",
    ("postgres", 13): "b41d2d15bf93d0bb",
    ("postgres", 14): "ef6afada95738b4e",
    ("postgres", 15): "4c675361ceba0135",
    ("postgres", 16): "e3e42810335f9d28",
    ("postgres", 17): "6ff6e2403f0f91d6",
    ("postgres", 18): "44e9a8b8d188b0d6",
    ("postgres", 19): "15ded89ed6db4da5",
}


def test_no_shipped_migration_changes() -> None:
    made = {
        (store, m.version): hashlib.sha256(m.sql.encode()).hexdigest()[:16]
        for store, schema in (("sqlite", sqlite_schema), ("postgres", postgres_schema))
        for m in schema.MIGRATIONS
    }
    changed = sorted(k for k in SHIPPED if made.get(k) != SHIPPED[k])
    assert not changed, f"shipped migrations changed (append a new one instead): {changed}"
    new = {k: v for k, v in made.items() if k not in SHIPPED}
    assert not new, f"record each new migration in SHIPPED: {new}"


def _old_store_with_notes(url: str, monkeypatch: pytest.MonkeyPatch, module: str) -> str:
    """A store at schema 8 (the lexical index in two columns) holding one note, closed;
    the id of the snippet whose heading names `configuration`."""
    from docshelf.chunk import build_header
    from docshelf.model import Chunk, Document, Tier, chunk_id, document_id
    from docshelf.store import rows

    schema = sqlite_schema if module == "sqlite" else postgres_schema
    with monkeypatch.context() as patch:
        patch.setattr(f"docshelf.store.{module}.MIGRATIONS", schema.MIGRATIONS[:8])
        # chunk rows as they were written then (before migration 10's inner_headings, 16's
        # ocr_confidence and 19's page_breaks), and document rows (before 16's ocr_pages)
        old_columns = rows.CHUNK_COLUMNS.removesuffix(
            ", inner_headings, ocr_confidence, page_breaks"
        )
        assert old_columns != rows.CHUNK_COLUMNS
        patch.setattr("docshelf.store.sql.documents.CHUNK_COLUMNS", old_columns)
        patch.setattr(
            "docshelf.store.sql.documents.chunk_row", lambda c, e: rows.chunk_row(c, e)[:15]
        )
        old_fields = rows.DOCUMENT_FIELDS[:-1]
        patch.setattr("docshelf.store.sql.documents.DOCUMENT_FIELDS", old_fields)
        patch.setattr("docshelf.store.sql.documents.DOCUMENT_COLUMNS", ", ".join(old_fields))
        patch.setattr(
            "docshelf.store.sql.documents._DOC_UPDATES",
            ", ".join(f"{c} = excluded.{c}" for c in old_fields[1:]),
        )
        patch.setattr(
            "docshelf.store.sql.documents.document_row", lambda d, e: rows.document_row(d, e)[:-1]
        )
        patch.setattr("docshelf.store.sql.documents.PENDING", "SELECT ?, ?")  # (migration 14)
        patch.setattr(  # (migration 18)
            "docshelf.store.sql.documents.DocumentsSQL._put_repeats", lambda *_, **__: None
        )
        store = open_store(url)
        assert store.schema_version() == 8
        sha = "ab" * 32
        doc = Document(
            id=document_id(sha),
            sha256=sha,
            title="Team meeting notes",
            path="/n.md",
            rel_path="n.md",
            source_id=None,
            source_host="h",
            file_type="markdown",
            size_bytes=1,
            added_at=1.0,
            updated_at=1.0,
            status="complete",
        )
        sections = [("Agenda", "budget and hiring"), ("Configuration", "set the port")]
        chunks = [
            Chunk(
                id=chunk_id(sha, Tier.SNIPPET, i),
                document_id=doc.id,
                tier=Tier.SNIPPET,
                index=i,
                text=body,
                header=build_header(doc.title, (doc.title, h), (), 48),
                start=0,
                end=len(body),
                heading_path=(doc.title, h),
            )
            for i, (h, body) in enumerate(sections)
        ]
        with store.transaction():
            store.put_document(doc, chunks, None)
        store.close()
    return chunks[1].id


def _check_fielded_after_migration(url: str, configured: str) -> None:
    from docshelf.store import SearchFilters

    store = open_store(url)
    try:
        assert store.schema_version() == max(m.version for m in sqlite_schema.MIGRATIONS)
        none = SearchFilters()
        # the rebuilt index knows the title and the heading as fields of their own
        assert len(own_engines(store).lexical.search(["team", "meeting"], 10, none)) == 2
        assert own_engines(store).lexical.search(["configuration"], 10, none)[0][0] == configured
        doc = store.list_documents()[0]
        with store.transaction():
            store.delete_document(doc.id)  # the index's delete path matches what was added
        assert own_engines(store).lexical.search(["team", "configuration"], 10, none) == []
    finally:
        store.close()


def test_the_fielded_lexical_migration_rebuilds_the_sqlite_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'docshelf.db'}"
    configured = _old_store_with_notes(url, monkeypatch, "sqlite")
    _check_fielded_after_migration(url, configured)
    import sqlite3

    con = sqlite3.connect(tmp_path / "docshelf.db")
    con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    con.close()


def test_the_fielded_lexical_migration_rebuilds_the_postgres_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pg.fresh_schema() as url:
        configured = _old_store_with_notes(url, monkeypatch, "postgres")
        _check_fielded_after_migration(url, configured)
