"""The real packaged model, end to end (offline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docshelf.embed import Embedder, local_available, make_embedder
from docshelf.model import Tier
from docshelf.shelf import Shelf

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(not local_available(), reason="the `local` extra is not installed"),
]


@pytest.fixture(scope="module")
def local() -> Embedder:
    embedder = make_embedder("local")
    assert embedder is not None
    return embedder


def test_vectors_are_unit_length_and_meaningful(local: Embedder) -> None:
    v = local.embed(["a cat sits on the mat", "a kitten rests on a rug", "tax law in 1850"])
    assert v.shape == (3, local.dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]


def test_snippets_fit_the_model_window(local: Embedder, tmp_path: Path, notes: Path) -> None:
    (notes / "long.md").write_text(
        "# Long\n\n" + "\n\n".join(f"Paragraph {i} " + "tokenisation " * 80 for i in range(20))
    )
    with Shelf(tmp_path / "home", embedder=local) as shelf:
        shelf.add(notes)
        for doc in shelf.documents():
            for chunk in shelf.store.chunks_of_document(doc.id, Tier.SNIPPET):
                assert local.count_tokens(chunk.retrieval_text) + 2 <= local.window
        result = shelf.search("how does a candidate win an election")
        assert result.mode == "hybrid"
        assert result.hits[0].document.rel_path == "projects/raft.md"
        assert result.hits[0].scores.vector is not None
