"""The real packaged model, end to end (offline)."""

from __future__ import annotations

import json
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


def test_same_vectors_as_sentence_transformers_without_importing_it() -> None:
    """The PyTorch path builds the model from its sentence-transformers configuration
    (encoder, mean pooling, normalisation) without that library: same vectors, in a
    batch mixing lengths (padding) and a text past the window (truncation)."""
    import subprocess
    import sys

    texts = [
        "a cat sits on the mat",
        "Ünïcödé façade — a résumé of naïve coöperation",
        "tokenisation " * 400,
        "x",
    ]
    code = (
        "import sys, json, numpy as np\n"
        "from docshelf.embed.local import LocalEmbedder\n"
        "e = LocalEmbedder(batch_size=3, precision='fp32')\n"
        f"v = e.embed({texts!r})\n"
        "print(json.dumps(['sentence_transformers' in sys.modules, v.tolist()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, ours = json.loads(out.stdout.strip().splitlines()[-1])
    assert imported is False
    from sentence_transformers import SentenceTransformer

    from docshelf.embed.local import _model_dir

    reference = SentenceTransformer(str(_model_dir()), device="cpu").encode(
        texts, batch_size=16, normalize_embeddings=True
    )
    cosines = (np.asarray(ours, dtype=np.float32) * reference).sum(axis=1)
    assert cosines.min() > 0.99999


def test_bf16_arithmetic_gives_the_fp32_vectors() -> None:
    """bf16 autocast (the default where the CPU computes bf16 natively) is the same model:
    every vector within a cosine of 0.9999 of fp32's, so a library needs no re-embedding
    when it moves between machines."""
    from docshelf.embed.local import LocalEmbedder

    texts = [
        "a cat sits on the mat",
        "Ünïcödé façade — a résumé of naïve coöperation",
        "tokenisation " * 400,
        "x",
        "## Leader election\n\nA follower that hears no heartbeat becomes a candidate.",
    ]
    fp32 = LocalEmbedder(precision="fp32").embed(texts)
    bf16 = LocalEmbedder(precision="bf16")
    vectors = bf16.embed(texts)
    assert bf16.bf16 and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float((vectors * fp32).sum(axis=1).min()) >= 0.9999


def test_an_unknown_precision_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from docshelf.errors import InvalidInput

    monkeypatch.setenv("DOCSHELF_EMBED_PRECISION", "fp8")
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "torch")
    with pytest.raises(InvalidInput, match="DOCSHELF_EMBED_PRECISION='fp8' is not known"):
        make_embedder("local")
