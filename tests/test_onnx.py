"""The ONNX Runtime path of the packaged model: exported locally once, the same vectors
as the PyTorch path, no torch in the process that embeds, clear failures."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from docshelf.embed import local_available, make_embedder
from docshelf.embed.local import LocalEmbedder
from docshelf.embed.onnx import OnnxEmbedder
from docshelf.errors import InvalidInput, Unavailable

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        not local_available() or importlib.util.find_spec("onnxruntime") is None,
        reason="the `local` extra (with onnxruntime) is not installed",
    ),
]

TEXTS = [
    "a cat sits on the mat",
    "[DOC: Raft]\n[PATH: Leader election]\n\nA follower without a heartbeat becomes a candidate.",
    "Ünïcödé — 東京 ✓",
    "x",
    "tokenisation " * 400,  # longer than the window: truncated like the PyTorch path
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def onnx(cache: Path) -> OnnxEmbedder:
    embedder = OnnxEmbedder(cache)
    embedder.model_path()  # the export, once for the module
    return embedder


def test_same_vectors_as_the_pytorch_path(onnx: OnnxEmbedder) -> None:
    torch_path = LocalEmbedder(precision="fp32")
    a, b = onnx.embed(TEXTS), torch_path.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert float((a * b).sum(axis=1).min()) > 0.9999
    assert onnx.model_id == torch_path.model_id  # the library need not be re-embedded
    assert onnx.count_tokens(TEXTS[1]) == torch_path.count_tokens(TEXTS[1])
    assert onnx.embed([]).shape == (0, 384)


def test_the_export_is_reused(
    onnx: OnnxEmbedder, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(subprocess, "run", no_export)
    again = OnnxEmbedder(cache)
    assert again.model_path() == onnx.model_path()
    assert [p.name for p in cache.iterdir() if p.suffix == ".onnx"] == [onnx.model_path().name]


def test_a_failed_export_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing")
    with pytest.raises((Unavailable, OSError)):
        OnnxEmbedder(tmp_path / "models").embed(["hello"])
    assert not any((tmp_path / "models").glob("*.onnx"))


def test_embedding_never_imports_torch(onnx: OnnxEmbedder, cache: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from docshelf.embed import make_embedder; "
        f"e = make_embedder('local', backend='onnx', home=Path({str(cache.parent)!r}) / 'h'); "
        f"e._cache_dir = Path({str(cache)!r}); v = e.embed(['hello world']); "
        "assert v.shape == (1, 384); assert 'torch' not in sys.modules, 'torch was imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr


def test_backend_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "torch")
    assert isinstance(make_embedder("local"), LocalEmbedder)
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "onnx-int8")
    int8 = make_embedder("local", home=tmp_path)
    assert isinstance(int8, OnnxEmbedder) and int8.model_id.endswith("-int8")
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "tpu")
    with pytest.raises(InvalidInput):
        make_embedder("local")


def test_a_library_keeps_the_runtime_its_vectors_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from docshelf import embed

    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    for default in ("onnx-int8", "onnx", "torch"):
        monkeypatch.setattr(embed, "DEFAULT_BACKEND", default)
        assert embed.default_backend(None) == default  # a new library
        assert embed.default_backend("all-MiniLM-L6-v2-int8") == "onnx-int8"
        same_vectors = embed.default_backend("all-MiniLM-L6-v2")
        assert same_vectors == ("torch" if default == "torch" else "onnx")


def test_onnx_after_the_ann_index_in_one_process(onnx: OnnxEmbedder, cache: Path) -> None:
    """usearch loaded first, then ONNX Runtime: this order crashed the process before
    ``usearch_index`` imported onnxruntime ahead of usearch."""
    code = (
        "from pathlib import Path; "
        "from docshelf.search.engines.usearch_graph import usearch_index; "
        "from docshelf.embed.onnx import OnnxEmbedder; usearch_index(); "
        f"e = OnnxEmbedder(Path({str(cache)!r})); assert e.embed(['x']).shape == (1, 384)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
