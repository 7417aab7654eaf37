"""The hostile corpus through `add` and `sync`: each entry gets its expected outcome,
the rest is indexed, nothing hangs, nothing outside the source is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import docshelf.parse as parse_mod
from docshelf import views
from docshelf.cli import app
from docshelf.search.engines import own_engines
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.fakes import HashEmbedder
from tests.hostile.corpus import HUGE_BYTES, Expected, build


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Expected]]:
    monkeypatch.setenv("DOCSHELF_MAX_FILE_MB", "0.5")
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", HUGE_BYTES // 2)
    root = tmp_path / "corpus"
    return root, build(root, tmp_path / "outside")


def _check(
    shelf: Shelf, source_id: str, failures: dict[str, str], expected: list[Expected]
) -> None:
    indexed = set(shelf.store.files_of_source(source_id))
    for e in expected:
        if e.indexed:
            assert e.path in indexed, (e.name, failures.get(e.path))
        else:
            assert e.path not in indexed, e.name
            assert e.reason in failures.get(e.path, "(not reported)"), (
                e.name,
                failures.get(e.path),
            )
    assert set(failures) == {e.path for e in expected if not e.indexed}
    assert indexed == {e.path for e in expected if e.indexed}


def _ids(shelf: Shelf, word: str) -> list[str]:
    return [cid for cid, _ in own_engines(shelf.store).lexical.search([word], 10, SearchFilters())]


def test_each_hostile_file_gets_its_outcome(
    isolated_home: Path, corpus: tuple[Path, list[Expected]]
) -> None:
    root, expected = corpus
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        report = shelf.add(root)
        assert report.source_id is not None
        _check(shelf, report.source_id, {f.path: f.reason for f in report.failures}, expected)
        assert not _ids(shelf, "tangerine")  # the escaping symlink's target was not read
        assert not _ids(shelf, "lollollol")  # the entity bomb was not expanded
        assert _ids(shelf, "harbour") and _ids(shelf, "laughs")
        status = shelf.status()
        assert status.failure_count == len(report.failures)
        json.dumps(views.report(report))  # every reported path is text JSON can hold

        again = shelf.sync()
        assert again.added == again.updated == again.removed == 0
        _check(shelf, report.source_id, {f.path: f.reason for f in again.failures}, expected)


def test_the_cli_reports_the_corpus_in_one_envelope(corpus: tuple[Path, list[Expected]]) -> None:
    root, expected = corpus
    runner = CliRunner()
    env = {"DOCSHELF_EMBEDDER": "none"}
    result = runner.invoke(app, ["--json", "add", str(root)], env=env)
    assert result.exit_code == 0, result.output
    envelope = json.loads(result.stdout)
    reported = {f["path"] for f in envelope["result"]["failures"]}
    assert reported == {e.path for e in expected if not e.indexed}
    status = runner.invoke(app, ["--json", "status"], env=env)
    assert status.exit_code == 0 and json.loads(status.stdout)["result"]["failed"] == len(reported)
