"""Backfill from a manifest (issue 38, SPEC §5): enrichment computed elsewhere, matched by
sha256 or path, written with no LLM call (an LLM is configured, on a fake server that
records every request, and none comes); bad lines reported with their number and why,
losing nothing else; tags and concepts the taxonomy does not know listed; filters and
``show`` see what was written; a second run changes nothing."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.testing

from docshelf.cli import app
from docshelf.knowledge.manifest import ManifestReport
from docshelf.llm.openai import OpenAILLM
from docshelf.model import Document, Enrichment, Tier
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters, SearchStore
from tests.fake_llm import Script, fake_llm_server
from tests.screen import plain
from tests.test_store import put


class Recording(Script):
    """A fake LLM with no replies: every request it gets is recorded (and fails)."""

    url = ""


@pytest.fixture
def llm_requests() -> Iterator[Recording]:
    script = Recording()
    with fake_llm_server(script) as url:
        script.url = url
        yield script


@pytest.fixture
def library(shelf: Shelf, notes: Path, llm_requests: Recording) -> Shelf:
    """The notes indexed with enrichment off (none pending is done), then an LLM
    configured and enrichment on: anything that enriched would ask it."""
    shelf.add(notes)
    shelf.llm = OpenAILLM(
        llm_requests.url,
        "fake-model",
        backoff=0.01,
        attempts=1,
        timeout=2.0,
    )
    shelf.settings = dataclasses.replace(shelf.settings, enrich="auto")
    return shelf


def _doc(shelf: Shelf, rel: str) -> Document:
    return next(d for d in shelf.documents() if d.rel_path == rel)


def _write(path: Path, *lines: object) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def _manifest(shelf: Shelf, notes: Path, tmp_path: Path) -> Path:
    cooking, raft = _doc(shelf, "cooking.md"), _doc(shelf, "projects/raft.md")
    return _write(
        tmp_path / "manifest.jsonl",
        {  # 1: by sha256
            "sha256": cooking.sha256.upper(),
            "summary": "How to  bake sourdough bread.",
            "document_type": "Report",
            "tags": ["recipes", "#Sourdough club", "baking", "sourdough  Club", "Baking"],
            "concepts": ["Food and cooking", "no-such-concept"],
            "title": "ignored",
        },
        {  # 2: by a path relative to its source
            "path": "projects/raft.md",
            "summary": "Raft: leader election and log replication.",
            "document_type": "manual",
            "category": "Distributed systems",
            "tags": ["raft-notes"],
        },
        {  # 3: by an absolute path
            "path": str(notes / "todo.txt"),
            "summary": "Chores to do.",
            "category": "Chores",
        },
        '{"sha256": ',  # 4: not JSON
        {"path": "cooking.md", "summary": 3},  # 5: a field of the wrong type
        {"sha256": "0" * 64, "summary": "Nothing has these bytes."},  # 6: no such sha256
        {"path": "missing.md", "summary": "Nowhere."},  # 7: no such path
        {"path": "cooking.md", "document_type": "novel"},  # 8: not a document type
        "",  # blank: skipped, not counted
        [1, 2],  # 10: not an object
        # 11: sha256 wins over the path beside it
        {"sha256": raft.sha256, "path": "cooking.md", "tags": ["by-sha"]},
        {"summary": "Names no document."},  # 12
    )


def _unmatched(report: dict[str, Any]) -> dict[int, str]:
    return {u["line"]: u["reason"] for u in report["unmatched"]}


def _state(shelf: Shelf) -> dict[str, tuple[object, ...]]:
    return {
        d.rel_path: (
            d.summary,
            d.document_type,
            d.category,
            d.tags,
            d.concept_ids,
            d.concept_source,
            d.enrichment_mode,
        )
        for d in shelf.documents()
    }


def test_a_manifest_is_written_with_no_llm_call(
    library: Shelf, notes: Path, tmp_path: Path, llm_requests: Recording
) -> None:
    from docshelf import views

    manifest = _manifest(library, notes, tmp_path)
    raft_before = library.store.chunks_of_document(
        _doc(library, "projects/raft.md").id, Tier.SNIPPET
    )
    report = views.manifest_report(library.enrich_from_manifest(manifest))

    assert llm_requests.requests == []  # no LLM call, with one configured
    assert report["lines"] == 11 and report["matched"] == 4 and not report["dry_run"]
    assert report["matched_by"] == {"sha256": 2, "path": 2}
    assert report["llm_calls"] == 0
    bad = _unmatched(report)
    assert sorted(bad) == [4, 5, 6, 7, 8, 10, 12]
    assert bad[4].startswith("not JSON")
    assert bad[5] == "summary must be a string, not a number"
    assert bad[6] == f"no document has sha256 {'0' * 64}"
    assert bad[7] == "no document at missing.md in any source"
    assert "document_type 'novel' is not one of paper, book" in bad[8]
    assert bad[10] == "a JSON list, not an object"
    assert bad[12].startswith("names no document")
    unmapped = {(u["field"], u["value"]): u["lines"] for u in report["unmapped"]}
    assert unmapped == {
        ("concepts", "no-such-concept"): [1],
        ("tags", "Sourdough club"): [1],
        ("tags", "raft-notes"): [2],
        ("category", "Chores"): [3],
        ("tags", "by-sha"): [11],
    }
    assert report["ignored_fields"] == {"title": 1}

    cooking = _doc(library, "cooking.md")
    assert cooking.summary == "How to bake sourdough bread."
    assert (cooking.document_type, cooking.enrichment_mode) == ("report", "manifest")
    assert cooking.tags == ("baking", "food", "recipes", "Sourdough club")  # its own first
    assert cooking.concept_ids == ("food",) and cooking.concept_source == "manifest"
    assert cooking.category == "food" and cooking.enriched_at is not None
    raft = _doc(library, "projects/raft.md")
    assert (raft.document_type, raft.category) == ("manual", "distributed-systems")
    assert raft.concept_ids == ("distributed-systems",) and raft.primary_concept_id == (
        "distributed-systems"
    )
    assert raft.tags == ("raft-notes", "by-sha")  # line 11 named it by sha256, not cooking.md
    todo = _doc(library, "todo.txt")
    assert (todo.summary, todo.category, todo.concept_ids) == ("Chores to do.", "Chores", ())
    assert todo.document_type == "note"  # left out: the offline rule, from its structure
    # The manifest's concepts are in the retrieval header: raft's snippets re-embedded.
    raft_after = library.store.chunks_of_document(raft.id, Tier.SNIPPET)
    assert [c.id for c in raft_after] == [c.id for c in raft_before]
    assert all("[CONCEPTS: Distributed systems]" in c.header for c in raft_after)
    written = {d["line"]: d for d in report["documents"]}
    assert written[2]["document_id"] == raft.id and written[2]["matched_by"] == "path"
    assert written[2]["reembedded"] == len(raft_after) > 0
    assert written[11]["reembedded"] == 0  # the same concepts: the header stands

    # Filters and `show` see it.
    def found(query: str) -> set[str]:
        return {h.document.rel_path for h in library.search(query, mode="lexical").hits}

    assert found("flour doctype:report") == {"cooking.md"}
    assert found("flour tag:recipes") == {"cooking.md"}
    assert found("leader doctype:manual concept:distributed-systems") == {"projects/raft.md"}
    assert found("leader concept:computing") == {"projects/raft.md"}  # a narrower one's
    assert found("leader tag:by-sha") == {"projects/raft.md"}
    view = views.document_view(library.document(cooking.id))
    assert view["summary"] == "How to bake sourdough bread." and view["document_type"] == "report"
    assert view["enrichment_mode"] == "manifest" and "recipes" in view["tags"]

    # They count as enriched: nothing is pending, so no LLM is asked for them later.
    assert library.status().enrichment == {"manifest": 3}
    assert library.enrich_pending() == []
    assert llm_requests.requests == []

    # A second run is the same report and changes nothing.
    before = _state(library)
    again = views.manifest_report(library.enrich_from_manifest(manifest))
    assert _state(library) == before
    assert again["reembedded"] == 0 and llm_requests.requests == []
    keep = ("lines", "matched", "matched_by", "unmatched", "unmapped", "ignored_fields")
    assert {k: again[k] for k in keep} == {k: report[k] for k in keep}
    # The guard is live: an enrichment asked for now does go to the (failing) LLM.
    [forced] = library.enrich([todo.id])
    assert llm_requests.requests and forced.notice and "LLM failed" in forced.notice


def test_a_dry_run_reports_and_writes_nothing(library: Shelf, notes: Path, tmp_path: Path) -> None:
    before = _state(library)
    report = library.enrich_from_manifest(_manifest(library, notes, tmp_path), dry_run=True)
    assert report.dry_run and len(report.applied) == 4 and len(report.unmatched) == 7
    assert ("tags", "raft-notes") in report.unmapped and report.reembedded == 0
    assert _state(library) == before
    assert all(d.enriched_at is None for d in library.documents())


def test_fields_left_out_keep_what_the_document_has(library: Shelf) -> None:
    library.llm = None
    raft = _doc(library, "projects/raft.md")
    [done] = library.enrich([raft.id])  # offline: summary, type, key claims
    claims = library.store.distillates_of(raft.id)
    assert done.mode == "offline" and claims
    line = json.dumps({"sha256": raft.sha256, "tags": ["consensus"]}).encode()
    report = library.enrich_from_manifest(io.BytesIO(line))  # a stream of the bytes
    assert report.manifest == "-" and len(report.applied) == 1 and not report.unmatched
    after = _doc(library, "projects/raft.md")
    assert (after.summary, after.document_type) == (done.enrichment.summary, "note")
    assert after.tags == ("consensus",) and after.enrichment_mode == "manifest"
    # a tag that names a concept (an alternative label) gives it
    assert after.concept_ids == ("distributed-systems",)
    assert library.store.distillates_of(raft.id) == claims  # kept, still the offline ones


def test_a_later_enrichment_keeps_the_manifests_concepts(library: Shelf) -> None:
    library.llm = None
    raft = _doc(library, "projects/raft.md")
    line = {"sha256": raft.sha256, "summary": "About Raft.", "concepts": ["databases"]}
    library.enrich_from_manifest(io.BytesIO(json.dumps(line).encode()))
    [redone] = library.enrich([raft.id])  # forced, offline
    after = _doc(library, "projects/raft.md")
    assert redone.mode == "offline" and after.summary != "About Raft."
    assert after.concept_ids == ("databases",) and after.concept_source == "manifest"


def test_a_document_not_enriched_yet_needs_a_summary(library: Shelf) -> None:
    todo = _doc(library, "todo.txt")
    line = json.dumps({"sha256": todo.sha256, "tags": ["chores"]}).encode()
    report = library.enrich_from_manifest(io.BytesIO(line))
    [(n, why)] = report.unmatched
    assert n == 1 and "no summary, and the document has none yet" in why
    assert _doc(library, "todo.txt").tags == ()


def test_a_relative_path_in_several_sources(shelf: Shelf, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, words in ((one, "apples and pears"), (two, "boats and sails")):
        folder.mkdir()
        (folder / "a.md").write_text(f"# A\n\n{words}\n")
        shelf.add(folder)
    line = {"path": "a.md", "summary": "Boats."}
    manifest = _write(
        tmp_path / "m.jsonl",
        line,
        {**line, "source": str(two)},
        {**line, "source": "src_nope"},
        {"path": "./a.md", "source": str(one), "summary": "Fruit."},
    )
    report = shelf.enrich_from_manifest(manifest)
    why = dict(report.unmatched)
    assert "names different documents in several sources" in why[1]
    assert why[3] == "no source 'src_nope'"
    assert [a.line for a in report.applied] == [2, 4]
    by_source = {s.path: s.id for s in shelf.sources()}
    docs = {d.source_id: d for d in shelf.documents()}
    assert docs[by_source[str(two)]].summary == "Boats."
    assert docs[by_source[str(one)]].summary == "Fruit."


def test_hostile_lines_lose_nothing_else(
    library: Shelf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docshelf.knowledge import manifest as mod

    monkeypatch.setattr(mod, "MAX_LINE", 4096)
    monkeypatch.setattr(mod, "MAX_SUMMARY", 100)
    raft = _doc(library, "projects/raft.md")
    good = json.dumps({"sha256": raft.sha256, "summary": "Fine."}).encode()
    lines = [
        b"\xef\xbb\xbf" + good,  # a byte-order mark before the first line
        b'{"path": "x", "summary": "\xff"}',  # not UTF-8
        b"[" * 3000,  # nested deeper than JSON is read
        b'{"summary": "' + b"x" * 10_000 + b'"}',  # longer than a line may be
        json.dumps({"sha256": "abc", "summary": "x"}).encode(),
        json.dumps({"path": "cooking.md", "tags": ["x"] * 500}).encode(),
        json.dumps({"path": "cooking.md", "summary": "x" * 200}).encode(),
        json.dumps({"path": "cooking.md"}).encode(),
        good,
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\r\n".join(lines))
    report = library.enrich_from_manifest(path)
    assert [a.line for a in report.applied] == [1, 9]
    why = dict(report.unmatched)
    assert why[2] == "not UTF-8"
    assert why[3].startswith("not JSON")
    assert why[4] == "longer than 4096 bytes"
    assert why[5] == "sha256 must be 64 hexadecimal characters"
    assert why[6] == "tags: 500 of them, more than 200"
    assert why[7] == "summary longer than 100 characters"
    assert why[8].startswith("gives nothing to write")
    assert report.lines == 9
    with pytest.raises(Exception, match="Cannot read the manifest"):
        library.enrich_from_manifest(tmp_path / "absent.jsonl")


def test_tags_and_kept_distillates_in_the_store(store: SearchStore) -> None:
    """The store's side, on both stores: tags written with an enrichment that carries
    them, distillates kept by one whose claims are None."""
    doc = put(store, 1, "raft leader log", tags=("own",))
    chunk = store.chunks_of_document(doc.id, Tier.SNIPPET)[0].id
    offline = Enrichment(
        "S.", "note", "general", (), None, None, (("A claim.", (chunk,)),), "offline"
    )
    assert store.put_enrichment(doc.id, offline, 1.0)
    backfill = Enrichment(
        "T.",
        "report",
        "databases",
        ("databases",),
        "manifest",
        "t1",
        None,
        "manifest",
        tags=("own", "more"),
    )
    assert store.put_enrichment(doc.id, backfill, 2.0)
    got = store.get_document(doc.id)
    assert got is not None and got.tags == ("own", "more") and got.summary == "T."
    assert [(d.text, d.mode) for d in store.distillates_of(doc.id)] == [("A claim.", "offline")]
    assert store.documents_matching(SearchFilters(tags=("MORE",))) == {doc.id}
    untagged = dataclasses.replace(backfill, tags=None)
    assert store.put_enrichment(doc.id, untagged, 3.0)
    assert store.get_document(doc.id).tags == ("own", "more")  # type: ignore[union-attr]


# -- the CLI ------------------------------------------------------------------------------------
@pytest.fixture
def cli_library(
    notes: Path, isolated_home: Path, llm_requests: Recording, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The notes added by the CLI's library, with an LLM configured for every command."""
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    monkeypatch.setenv("DOCSHELF_LLM_URL", llm_requests.url)
    monkeypatch.setenv("DOCSHELF_LLM_MODEL", "fake-model")
    result = typer.testing.CliRunner().invoke(app, ["--json", "add", str(notes)])
    assert result.exit_code == 0, result.output
    return isolated_home


def _cli(*args: str, stdin: str | None = None) -> dict[str, Any]:
    result = typer.testing.CliRunner().invoke(app, ["--json", *args], input=stdin)
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_cli_enrich_from_manifest(
    cli_library: Path, notes: Path, tmp_path: Path, llm_requests: Recording
) -> None:
    with Shelf(cli_library, embedder=None) as shelf:
        manifest = _manifest(shelf, notes, tmp_path)
    dry = _cli("enrich", "--from-manifest", str(manifest), "--dry-run")
    assert dry["ok"] and dry["command"] == "enrich"
    assert dry["result"]["dry_run"] and dry["result"]["matched"] == 4
    assert dry["next_actions"][0]["command"].startswith("docshelf enrich --from-manifest ")
    env = _cli("enrich", "--from-manifest", str(manifest))
    assert env["ok"] and not env["result"]["dry_run"] and env["result"]["matched"] == 4
    assert sorted(_unmatched(env["result"])) == [4, 5, 6, 7, 8, 10, 12]
    assert {"field": "category", "value": "Chores", "lines": [3]} in env["result"]["unmapped"]
    raft = next(d for d in env["result"]["documents"] if d["path"] == "projects/raft.md")
    shown = _cli("show", raft["document_id"])["result"]
    assert shown["document_type"] == "manual" and shown["concept_source"] == "manifest"
    hits = _cli("search", "leader doctype:manual", "--mode", "lexical")["result"]["hits"]
    assert hits and {h["document_id"] for h in hits} == {raft["document_id"]}
    line = json.dumps({"path": "todo.txt", "summary": "From stdin."})
    piped = _cli("enrich", "--from-manifest", "-", stdin=line + "\n")
    assert piped["ok"] and piped["result"]["manifest"] == "-" and piped["result"]["matched"] == 1
    assert llm_requests.requests == []  # not one LLM call, with DOCSHELF_LLM_URL set

    for wrong in (
        ["enrich", "--from-manifest", str(manifest), "--all"],
        ["enrich", "--dry-run", "--all"],
        ["enrich", "--from-manifest", str(tmp_path / "absent.jsonl")],
    ):
        env = _cli(*wrong)
        assert not env["ok"] and env["error"]["code"] == "invalid_input", wrong


def test_cli_manifest_report_on_a_terminal(
    cli_library: Path, notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        typer.testing._NamedTextIOWrapper,
        "isatty",
        lambda self: self.name == "<stdout>",
        raising=False,
    )
    with Shelf(cli_library, embedder=None) as shelf:
        manifest = _manifest(shelf, notes, tmp_path)
    result = typer.testing.CliRunner().invoke(
        app,
        ["enrich", "--from-manifest", str(manifest)],
        env={"COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    out = plain(result.output)
    assert "Wrote the enrichment of 4 of 11 lines" in out and "with no LLM call" in out
    assert "line 7: no document at missing.md in any source" in out
    assert "category 'Chores' (line 3)" in out and "tags 'raft-notes' (line 2)" in out
    assert "ignored: title (1)" in out
    assert "docshelf show doc_" in out  # the next action
    assert "{" not in out.split("Not written")[0]  # no JSON, no Python repr


def test_the_report_type_is_what_shelf_returns(library: Shelf) -> None:
    report = library.enrich_from_manifest(io.BytesIO(b"\n\n"))
    assert isinstance(report, ManifestReport) and report.lines == 0 and not report.applied
