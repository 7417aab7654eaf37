"""The house's seams hold: documents reach the store by one path, and configuration
is read from the environment in one module."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "docshelf"


def _calls(pattern: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(pattern, line) and not line.lstrip().startswith(("def ", "#")):
                found.setdefault(path.relative_to(SRC).as_posix(), []).append(n)
    return found


def test_documents_are_written_by_the_writer_alone() -> None:
    callers = _calls(r"\.put_document\(")
    assert set(callers) == {"ingest/writer.py"}, callers
    assert len(callers["ingest/writer.py"]) == 1
    # and so are the chunks the enricher re-heads (issue 41: a page at a time)
    reheaders = _calls(r"store\.replace_chunks\(")
    assert set(reheaders) == {"ingest/writer.py"}, reheaders


def test_the_environment_is_read_in_config_alone() -> None:
    readers = _calls(r"os\.environ|os\.getenv|getenv\(")
    # Libraries are told how to run, set, not read, before they load: the model libraries
    # to stay offline, numpy's BLAS to one thread in a one-shot command.
    told = {"embed/local.py", "rerank/cross_encoder.py", "cli/quick.py"}
    for path in told:
        lines = (SRC / path).read_text(encoding="utf-8").splitlines()
        assert all("os.environ.setdefault(" in lines[n - 1] for n in readers.pop(path, []))
    assert set(readers) == {"config.py"}
