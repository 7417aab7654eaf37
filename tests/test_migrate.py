"""``docshelf migrate``: what a deployment's migration Job runs (deploy/k8s/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docshelf.cli import app
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
