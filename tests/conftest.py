from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docshelf.config import TERMINAL_SETTINGS
from docshelf.shelf import Shelf
from docshelf.store import SearchStore, open_store
from tests import pg
from tests.fakes import HashEmbedder

# The caller's terminal is none of the suite's business: a width, a colour setting or a
# TERM from the shell that runs it would reach whatever renders (rich reads them once,
# when a console is made). Tests that want a terminal say which (COLUMNS=200, ...).
for _name in TERMINAL_SETTINGS:
    os.environ.pop(_name, None)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The shuffled order's seed, however quiet the run (pytest-randomly's own header line
    is not shown under -q): a failure that depends on the order is replayed with it."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"Tests ran in a shuffled order; replay it with -p randomly --randomly-seed={seed}"
        )


@pytest.fixture(autouse=True)
def isolated_process_state() -> Iterator[None]:
    """No test leaves the process different for the next: the environment (whatever
    changed it: ``quick.main`` sets OPENBLAS_NUM_THREADS, a typer runner COLUMNS), the
    working folder, and the consoles made for a test's terminal, all put back."""
    from docshelf.cli import core

    environ, cwd = dict(os.environ), os.getcwd()
    yield
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    if os.getcwd() != cwd:
        os.chdir(cwd)
    core._CONSOLES.clear()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own DOCSHELF_HOME and none of the caller's docshelf settings
    (the DOCSHELF_TEST_* service URLs stay)."""
    for key in list(os.environ):
        if key.startswith("DOCSHELF_") and not key.startswith("DOCSHELF_TEST_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("DOCSHELF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Enrichment after indexing is tested in test_enrich.py; elsewhere it would only
    # add events and concepts the tests of other features do not expect.
    monkeypatch.setenv("DOCSHELF_ENRICH", "off")
    # A CLI search would start the library's resident search helper (cli/resident.py),
    # a process outliving the test; tests/test_resident.py turns it on where it is tested.
    monkeypatch.setenv("DOCSHELF_SEARCH_HELPER", "off")
    return home


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def shelf(isolated_home: Path, embedder: HashEmbedder) -> Iterator[Shelf]:
    with Shelf(isolated_home, embedder=embedder) as s:
        yield s


FILLER = (
    "It keeps going with more plain words so that every section is long enough to stand "
    "as a snippet of its own, which is what a real note of some length looks like."
)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A small notes folder."""
    root = tmp_path / "notes"
    (root / "projects").mkdir(parents=True)
    (root / "projects" / "raft.md").write_text(
        "# Raft\n\nRaft is a consensus algorithm for managing a replicated log. "
        + FILLER
        + "\n\n## Leader election\n\n"
        "A follower that hears no heartbeat becomes a candidate and asks for votes. "
        + FILLER
        + "\n\n## Log replication\n\nThe leader appends entries and replicates them "
        "to followers. " + FILLER + "\n"
    )
    (root / "cooking.md").write_text(
        "---\ntitle: Bread\ntags: [baking, food]\n---\n# Sourdough\n\n"
        "Feed the starter with flour and water the night before baking.\n"
    )
    (root / "todo.txt").write_text("Buy flour.\n\nCall the plumber about the leak.\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "config.md").write_text("# hidden\n\nnot indexed\n")
    return root


# The store contract runs against every backend (PostgreSQL when configured).
@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        with pg.fresh_schema() as url:
            yield url


@pytest.fixture
def store(store_url: str) -> Iterator[SearchStore]:
    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def chroma_address() -> Iterator[str]:
    """A Chroma server (``chroma run``) for the whole run, as ``HOST:PORT``."""
    from tests.chroma_server import chroma_server

    with chroma_server() as address:
        yield address


@pytest.fixture(scope="session")
def llama_url() -> Iterator[str]:
    """The packaged local model (``docshelf llm-serve``) for the whole run, as its base URL."""
    from tests.llama_server import llama_server

    with llama_server() as url:
        yield url


@pytest.fixture(scope="session")
def typesense_address() -> Iterator[str]:
    """A Typesense server for the whole run, as ``API_KEY@HOST:PORT``."""
    from tests.typesense_server import typesense_server

    with typesense_server() as address:
        yield address
