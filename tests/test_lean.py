"""The lean query embedder: the ingest model's vectors and tokens from ONNX Runtime and
``tokenizers`` alone, the export found without hashing the weights, and chosen for
query vectors only when no runtime is configured."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from docshelf.embed import local_available, make_embedder
from docshelf.embed.lean import KEY_FILE, LeanEmbedder
from docshelf.embed.local import LocalEmbedder
from docshelf.embed.onnx import OnnxEmbedder
from docshelf.errors import Unavailable

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        not local_available() or importlib.util.find_spec("onnxruntime") is None,
        reason="the `local` extra (with onnxruntime) is not installed",
    ),
]

# Varied on purpose: short and long (past the 256-token window), non-ASCII scripts,
# code, numbers, markup, and texts with (almost) nothing in them.
TEXTS = [
    "",
    " ",
    "\n\t\n",
    "x",
    "?",
    "a cat sits on the mat",
    "how are chunks cited",
    "What does the leader do when a follower's log is behind?",
    "RAFT raft Raft rAfT",
    "[DOC: Raft]\n[PATH: Leader election]\n\nA follower without a heartbeat becomes a candidate.",
    "Ünïcödé — 東京 ✓",
    "Über die Brücke gehen zwölf Männer.",
    "Το γρήγορο καφέ αλεπού πηδάει",  # noqa: RUF001
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "مرحبا بالعالم، هذا اختبار",
    "日本語の文章を検索できますか？東京都庁は新宿にあります。",  # noqa: RUF001
    "안녕하세요 세계",
    "emoji 🚀🔥 and a flag 🇫🇷",
    "def f(x: int) -> int:\n    return x ** 2  # squares",
    '{"key": [1, 2, 3], "nested": {"a": null}}',
    "SELECT id, name FROM users WHERE age > 30 ORDER BY name;",
    "3.14159 2.71828 1e-9 0xFF 1,000,000",
    "https://example.org/path?q=search&lang=en#section-2",
    "supercalifragilisticexpialidocious" * 20,
    "tokenisation " * 400,  # far past the window: cut where the ingest model cuts
    " ".join(f"word{i}" for i in range(300)),
    "The quick brown fox. " * 60,  # just past the window
    "- item one\n- item two\n  - nested item\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    "Ω≈ç√∫˜µ≤≥÷ ¡™£¢∞§¶•ªº",  # noqa: RUF001
    "\u200b\u200bzero width\u200b spaces and\u00a0nbsp",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


# The cache's model files right after the module's export (later tests add to the cache).
_EXPORTED: list[str] = []


@pytest.fixture(scope="module")
def lean(cache: Path) -> LeanEmbedder:
    embedder = LeanEmbedder(cache)
    embedder.model_path()  # the export, once for the module
    _EXPORTED[:] = sorted(p.name for p in cache.glob("*.onnx*"))
    return embedder


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The PyTorch ingest model's vectors for ``TEXTS``."""
    return LocalEmbedder(precision="fp32").embed(TEXTS)


def test_the_ingest_models_vectors_one_query_at_a_time(
    lean: LeanEmbedder, reference: np.ndarray
) -> None:
    one_by_one = np.concatenate([lean.embed([t]) for t in TEXTS])
    assert one_by_one.shape == reference.shape == (len(TEXTS), 384)
    assert one_by_one.dtype == np.float32
    assert np.allclose(np.linalg.norm(one_by_one, axis=1), 1.0, atol=1e-5)
    cosines = (one_by_one * reference).sum(axis=1)
    assert float(cosines.min()) >= 0.9999, dict(zip(TEXTS, cosines.round(6).tolist(), strict=True))


def test_the_ingest_models_vectors_in_batches(lean: LeanEmbedder, reference: np.ndarray) -> None:
    batched = lean.embed(TEXTS)  # padded batches: the mask must keep padding out
    assert float((batched * reference).sum(axis=1).min()) >= 0.9999
    assert lean.embed([]).shape == (0, 384)


def test_the_same_model_for_the_library(lean: LeanEmbedder) -> None:
    torch_path = LocalEmbedder()
    assert lean.model_id == torch_path.model_id == "all-MiniLM-L6-v2"
    assert (lean.dim, lean.window) == (torch_path.dim, torch_path.window) == (384, 256)
    assert [lean.count_tokens(t) for t in TEXTS] == [torch_path.count_tokens(t) for t in TEXTS]


def test_tokens_as_the_sentence_transformers_model_reads_them(lean: LeanEmbedder) -> None:
    """Truncation at the window, [CLS]/[SEP] and the mask, against transformers' own
    tokenizer of the packaged model (the one sentence-transformers calls)."""
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(lean._dir))
    for text in TEXTS:
        feed = lean._encode_batch([text])
        expected = reference(text, truncation=True, max_length=lean.window)
        assert feed["input_ids"][0].tolist() == expected["input_ids"], text
        assert feed["attention_mask"][0].tolist() == expected["attention_mask"], text
        assert feed["token_type_ids"][0].tolist() == expected["token_type_ids"], text
    cut = lean._encode_batch([TEXTS[24]])["input_ids"][0]
    assert len(cut) == lean.window and cut[-1] == reference.sep_token_id


def test_the_export_is_found_without_hashing_the_weights(
    lean: LeanEmbedder, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = lean.model_path()
    key = json.loads((cache / KEY_FILE).read_text())
    assert key["file"] == expected.name and key["size"] > 10_000_000
    # The query model is the export's graph, its weights in a file of their own.
    assert expected.stat().st_size < 1_000_000
    assert expected.with_name(f"{expected.name}.data").stat().st_size > 80_000_000
    # the export it was made from is not kept: the same weights a second time
    assert [expected.name, f"{expected.name}.data"] == _EXPORTED

    def no_hash(*args: object, **kwargs: object) -> None:
        raise AssertionError("hashed the weights")

    monkeypatch.setattr(hashlib, "sha256", no_hash)
    monkeypatch.setattr(subprocess, "run", no_hash)
    assert LeanEmbedder(cache).model_path() == expected


def test_a_stale_key_is_not_trusted(lean: LeanEmbedder, cache: Path) -> None:
    """Weights changed since the key was written (another mtime): the export is named by
    the hash again, and the key is rewritten for the next start."""
    expected = lean.model_path()
    key_file = cache / KEY_FILE
    key = json.loads(key_file.read_text())
    key_file.write_text(json.dumps({**key, "mtime_ns": key["mtime_ns"] + 1, "file": "x.onnx"}))
    assert LeanEmbedder(cache).model_path() == expected
    assert json.loads(key_file.read_text()) == key
    key_file.write_text("{not json")
    assert LeanEmbedder(cache).model_path() == expected
    assert json.loads(key_file.read_text()) == key


def test_a_lost_weights_file_is_made_again(lean: LeanEmbedder, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    export = lean.model_path().with_name(lean.model_path().name.replace("-lean", ""))
    # the hashed export, as onnx.py left it: a link (to a place of this test's, so that
    # the export made through it never lands in the module's cache)
    (models / export.name).symlink_to(tmp_path / export.name)
    first = LeanEmbedder(models).model_path()
    data = first.with_name(f"{first.name}.data")
    data.unlink()
    assert LeanEmbedder(models).model_path() == first and data.exists()
    again = LeanEmbedder(models).embed(["hello"])
    assert float((again * lean.embed(["hello"])).sum()) > 0.9999


def test_a_failed_split_says_why(
    lean: LeanEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    export = lean.model_path().with_name(lean.model_path().name.replace("-lean", ""))
    (models / export.name).symlink_to(tmp_path / export.name)  # as above
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing")
    with pytest.raises((Unavailable, OSError)):
        LeanEmbedder(models).embed(["hello"])
    assert not (models / KEY_FILE).exists()


def test_a_query_process_never_imports_torch_or_transformers(
    lean: LeanEmbedder, cache: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    for f in cache.iterdir():  # the cached models and the key, as in a data dir
        (home / "models" / f.name).symlink_to(f)
    code = (
        "import sys; from pathlib import Path; from docshelf.embed import make_embedder; "
        f"e = make_embedder('local', purpose='query', home=Path({str(home)!r})); "
        "assert type(e).__name__ == 'LeanEmbedder', type(e); "
        "v = e.embed(['hello world']); assert v.shape == (1, 384); "
        "heavy = {'torch', 'transformers', 'sentence_transformers', 'onnx'}; "
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DOCSHELF_EMBED_BACKEND"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


def test_query_purpose_picks_lean_only_when_no_runtime_is_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    assert isinstance(make_embedder("local", purpose="query", home=tmp_path), LeanEmbedder)
    made_by_onnx = make_embedder(
        "local", purpose="query", home=tmp_path, library_model="all-MiniLM-L6-v2"
    )
    assert isinstance(made_by_onnx, LeanEmbedder)  # fp32: the same vectors either way
    int8 = make_embedder(
        "local", purpose="query", home=tmp_path, library_model="all-MiniLM-L6-v2-int8"
    )
    assert type(int8) is OnnxEmbedder and int8.model_id.endswith("-int8")
    assert type(make_embedder("local", home=tmp_path)) is LocalEmbedder  # ingest: unchanged
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "torch")
    assert type(make_embedder("local", purpose="query", home=tmp_path)) is LocalEmbedder
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "onnx")
    assert type(make_embedder("local", purpose="query", home=tmp_path)) is OnnxEmbedder
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "lean")
    assert isinstance(make_embedder("local", home=tmp_path), LeanEmbedder)
    with pytest.raises(ValueError):
        make_embedder("local", purpose="ingest")


def test_a_cli_search_on_the_lean_runtime(
    lean: LeanEmbedder, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library indexed by the PyTorch runtime, searched by `docshelf search` as a new
    process on the lean one: no reindex asked for, the same hits, and no torch,
    transformers or onnx imported on the way."""
    from docshelf.shelf import Shelf

    golden = Path(__file__).parent / "golden" / "library"
    home = tmp_path / "home"
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "local")
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "torch")
    monkeypatch.setenv("DOCSHELF_HOME", str(home))
    query = "how does a follower become a candidate"
    with Shelf(home) as shelf:
        shelf.add(golden)
        expected = [h.chunk.id for h in shelf.search(query, limit=5).hits]
    assert expected
    (home / "models").mkdir()
    for f in cache.iterdir():  # the module's export, as a data dir that made it would have
        (home / "models" / f.name).symlink_to(f)
    env = {**os.environ, "DOCSHELF_EMBED_BACKEND": "lean"}
    code = "import sys; from docshelf.cli import main; sys.argv[0] = 'docshelf'; main()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "search", query, "-n", "5", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    hits = json.loads(done.stdout)["result"]["hits"]
    assert [h["chunk_id"] for h in hits] == expected
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "onnxruntime" in imported and "tokenizers" in imported
    assert not {"torch", "transformers", "sentence_transformers", "onnx"} & imported


def test_an_index_process_prepares_the_query_model_of_its_own_model_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``add`` makes ready what the next search as a new process embeds with (the export
    took ~9 s in the first search after an add), only for the library's own model."""
    from docshelf.shelf import Shelf
    from tests.fakes import HashEmbedder

    prepared: list[Path] = []

    def model_path(self: LeanEmbedder) -> Path:
        prepared.append(self._cache_dir)
        return self._cache_dir / "query.onnx"

    monkeypatch.setattr(LeanEmbedder, "model_path", model_path)
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "local")
    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    with Shelf(tmp_path / "home") as shelf:  # the local model, from the settings
        assert shelf.runtime.prepare_query_model()
    assert prepared == [tmp_path / "home" / "models"]
    with Shelf(tmp_path / "fake", embedder=HashEmbedder()) as shelf:  # another model
        assert not shelf.runtime.prepare_query_model()
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "onnx")  # queries run what is configured
    with Shelf(tmp_path / "onnx") as shelf:
        assert not shelf.runtime.prepare_query_model()
    assert len(prepared) == 1


def test_add_prepares_the_query_model_while_it_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the command line, the export (seconds, in child processes) runs beside the
    indexing, not after it; the command still waits for it, and a path that does not
    exist starts none."""
    import threading

    from typer.testing import CliRunner

    from docshelf.cli import app
    from docshelf.runtime import Runtime
    from docshelf.shelf import Shelf
    from tests.fakes import HashEmbedder

    started, indexed, finished = threading.Event(), threading.Event(), threading.Event()
    seen_during_add: list[bool] = []

    def prepare(self: Runtime) -> bool:
        started.set()
        indexed.wait(10)  # (longer than the add: the command must wait for it)
        finished.set()
        return True

    real_add = Shelf.add

    def add(self: Shelf, *args: object, **kwargs: object) -> object:
        seen_during_add.append(started.wait(10))
        try:
            return real_add(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            indexed.set()

    monkeypatch.setattr(Runtime, "prepare_query_model", prepare)
    monkeypatch.setattr(Shelf, "add", add)
    monkeypatch.setattr(  # a library with a model (a lexical one makes no query model)
        Runtime, "_bind_embedder", lambda self, given, check: HashEmbedder("hash-model", dim=8)
    )
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nSome words.\n")
    monkeypatch.setenv("DOCSHELF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    result = CliRunner().invoke(app, ["--json", "add", str(tmp_path / "notes")])
    assert result.exit_code == 0, result.output
    assert seen_during_add == [True] and finished.is_set()

    started.clear()
    monkeypatch.setattr(Shelf, "add", real_add)
    result = CliRunner().invoke(app, ["--json", "add", str(tmp_path / "no-such-folder")])
    assert result.exit_code != 0
    assert not started.is_set()


def test_a_process_that_ingests_on_pytorch_searches_on_the_lean_runtime_once_ready(
    lean: LeanEmbedder,
    cache: Path,
    reference: np.ndarray,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server or the library ingests on PyTorch; its queries take the lean runtime of
    the same weights (graph optimised, a thread per core) once the export is ready, and
    PyTorch until then — never an export inside a search."""
    from docshelf.shelf import Shelf

    home = tmp_path / "home"
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "local")
    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    with Shelf(home) as shelf:
        runtime = shelf.runtime
        assert isinstance(runtime.embedder, LocalEmbedder)
        assert runtime.query_embedder() is runtime.embedder  # no export yet: PyTorch
        (home / "models").mkdir(exist_ok=True)
        for f in cache.iterdir():  # the module's export, as `add` would have made it
            (home / "models" / f.name).symlink_to(f)
        assert runtime.query_embedder() is runtime.embedder  # looked once, until prepared
        assert runtime.prepare_query_model()
        query = runtime.query_embedder()
        assert isinstance(query, LeanEmbedder) and query.optimise
        assert query.model_id == runtime.embedder.model_id
        assert runtime.retriever.embedder is query  # what a search embeds with
        vectors = np.concatenate([query.embed([t]) for t in TEXTS])
        assert float((vectors * reference).sum(axis=1).min()) >= 0.9999
        runtime.embedder = None  # swapped: the choice follows the embedder
        assert runtime.query_embedder() is None
    monkeypatch.setenv("DOCSHELF_EMBED_BACKEND", "torch")  # named: queries keep it
    with Shelf(home) as shelf:
        assert shelf.runtime.query_embedder() is shelf.runtime.embedder


def test_the_search_helper_keeps_the_query_model_for_many_queries(
    lean: LeanEmbedder, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resident helper answers many searches: it swaps the one-query session (no
    graph optimisation, one thread) for the optimised one before its first."""
    from docshelf.cli.resident import Helper
    from docshelf.shelf import Shelf

    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    for f in cache.iterdir():
        (home / "models" / f.name).symlink_to(f)
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "local")
    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    with Shelf(home, embed_purpose="query") as shelf:
        assert isinstance(shelf.embedder, LeanEmbedder) and not shelf.embedder.optimise
        Helper(shelf, 60).warm()
        assert isinstance(shelf.embedder, LeanEmbedder) and shelf.embedder.optimise
        assert shelf.runtime.retriever.embedder is shelf.embedder


def test_eval_searches_on_the_query_model_users_get(
    lean: LeanEmbedder, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An eval library's settings name the model id, not `local`: its queries still take
    the lean runtime once prepared, as a CLI search's and a server's do."""
    from docshelf.evaluate.beir import eval_settings
    from docshelf.shelf import Shelf

    monkeypatch.delenv("DOCSHELF_EMBED_BACKEND", raising=False)
    home = tmp_path / "eval"
    (home / "models").mkdir(parents=True)
    for f in cache.iterdir():
        (home / "models" / f.name).symlink_to(f)
    model = LocalEmbedder()
    with Shelf(settings=eval_settings(home, model.model_id), embedder=model) as shelf:
        assert shelf.runtime.prepare_query_model()
        query = shelf.runtime.query_embedder()
        assert isinstance(query, LeanEmbedder) and query.optimise


def test_the_exports_are_private_whatever_the_umask(tmp_path: Path) -> None:
    # The export and the query model hold nothing of the library, but they are docshelf's
    # files in its home: owner-only like the rest (issue 41), though torch and ONNX
    # Runtime write them with the umask's modes.
    models = tmp_path / "home" / "models"
    old = os.umask(0o022)
    try:
        LeanEmbedder(models).model_path()
    finally:
        os.umask(old)
    made = [models.parent, *models.parent.rglob("*")]
    assert len(made) >= 4  # models/, the query model, its weights, the key (and the lock)
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in made} == {
        p.name: "0o700" if p.is_dir() else "0o600" for p in made
    }
