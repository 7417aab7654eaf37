"""Concepts: the SKOS-lite taxonomy, tags mapped to it, filters, facets, status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docshelf.errors import InvalidInput
from docshelf.ingest.worker import Worker
from docshelf.knowledge.taxonomy import DEFAULT, load_taxonomy
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters


def write(tmp_path: Path, concepts: list[dict[str, object]]) -> Path:
    path = tmp_path / "tax.json"
    path.write_text(json.dumps({"version": "t1", "concepts": concepts}))
    return path


def test_the_default_taxonomy_loads() -> None:
    tax = load_taxonomy(DEFAULT)
    assert tax.resolve("Raft") == "distributed-systems"
    assert tax.resolve("#Baking") == "food"
    assert "distributed-systems" in tax.narrower_or_same("computing")


@pytest.mark.parametrize(
    ("concepts", "message"),
    [
        ([{"id": "a"}, {"id": "a"}], "duplicate concept ids: a"),
        ([{"id": "a", "broader": "zzz"}], "do not exist: a -> zzz"),
        ([{"id": "a", "broader": "b"}, {"id": "b", "broader": "a"}], "cycle"),
        ([{"id": "a", "broader": "a"}], "cycle"),
        ([{"prefLabel": "no id"}], "no string id"),
        ([{"id": "a", "altLabels": "not a list"}], "malformed labels"),
    ],
)
def test_bad_taxonomies_are_clear_errors(
    tmp_path: Path, concepts: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        load_taxonomy(write(tmp_path, concepts))


def test_unreadable_or_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="Cannot read"):
        load_taxonomy(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(InvalidInput, match="not JSON"):
        load_taxonomy(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(InvalidInput, match="concepts"):
        load_taxonomy(tmp_path / "list.json")


def test_tags_map_to_concepts_and_unmapped_ones_are_kept(tmp_path: Path) -> None:
    tax = load_taxonomy(
        write(
            tmp_path,
            [
                {"id": "cs", "prefLabel": "Computing"},
                {
                    "id": "ds",
                    "prefLabel": "Distributed systems",
                    "altLabels": ["consensus"],
                    "broader": "cs",
                },
            ],
        )
    )
    assert tax.map_tags(["Consensus", "#distributed-systems", "gardening", "cs"]) == (
        ["ds", "cs"],
        ["gardening"],
    )
    assert tax.narrower_or_same("cs") == {"cs", "ds"}


def test_concepts_flow_into_documents_headers_filters_and_facets(shelf: Shelf, notes: Path) -> None:
    (notes / "paxos.md").write_text(
        "---\ntags: [consensus, reading-list]\n---\n# Paxos\n\nAcceptors promise ballots.\n"
    )
    shelf.add(notes)
    docs = {d.rel_path: d for d in shelf.documents()}
    paxos = docs["paxos.md"]
    assert paxos.concept_ids == ("distributed-systems",)
    assert paxos.primary_concept_id == "distributed-systems"
    assert paxos.concept_source == "frontmatter" and paxos.taxonomy_version
    assert docs["cooking.md"].concept_ids == ("food",)
    snippet = shelf.search("acceptors ballots", mode="lexical").hits[0].chunk
    assert "[CONCEPTS: Distributed systems]" in snippet.header
    # a broader concept includes the narrower ones; a query field works the same
    hits = shelf.search("acceptors ballots flour", mode="lexical", filters=SearchFilters()).hits
    assert {h.document.rel_path for h in hits} >= {"paxos.md", "cooking.md"}
    computing = shelf.search("acceptors ballots flour concept:computing", mode="lexical").hits
    assert {h.document.rel_path for h in computing} == {"paxos.md"}
    food = shelf.search("acceptors ballots flour concept:Food", mode="lexical").hits
    assert {h.document.rel_path for h in food} == {"cooking.md"}
    assert shelf.search("flour concept:no-such-thing", mode="lexical").hits == []
    assert shelf.search("acceptors ballots flour", mode="lexical").facets == {}
    facets = shelf.search("acceptors ballots flour", mode="lexical", facets=True).facets
    assert facets["concept"] == {"distributed-systems": 1, "food": 1}
    assert facets["type"]["markdown"] >= 2 and facets["tag"]["baking"] == 1
    assert shelf.status().unmapped_tags == {"reading-list": 1}


def test_uploads_get_concepts_too(shelf: Shelf) -> None:
    user = shelf.create_user("alice")[0].id
    up = shelf.upload(user, "r.md", b"---\ntags: [raft]\n---\n# R\n\nLeaders and terms.\n")
    assert Worker(shelf).run_once()
    doc = shelf.document(up.document_id, user).document
    assert doc.concept_ids == ("distributed-systems",)
    assert shelf.search("leaders concept:computing", user_id=user).hits
