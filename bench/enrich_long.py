"""Offline enrichment of one long note in lexical-only mode (issue 41): the time of the
enrichment step alone.

The note is generated: paragraphs of made-up words (about 440,000 unique ones in
3.5 MB), so the document's vocabulary grows with its size. It is added with
``DOCSHELF_ENRICH=off`` and no embedder, then ``Shelf.enrich()`` is timed.
``--baseline DIR`` runs the same in a child process importing another checkout's
``src/`` first (the step was quadratic in the note's unique words: 431 s for 3.5 MB).

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/enrich_long.py \\
        [--mb 3.5] [--baseline ../main-checkout/src]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def long_note(path: Path, size: int, seed: int = 7) -> None:
    """``size`` bytes of paragraphs of made-up sentences (3 to 10 letter words)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    parts = ["# A long note\n\n"]
    written = len(parts[0])
    while written < size:
        sentences = []
        for _ in range(rng.randrange(3, 7)):
            words = [
                "".join(rng.choice(letters) for _ in range(rng.randrange(3, 11)))
                for _ in range(rng.randrange(8, 20))
            ]
            sentences.append(" ".join(words).capitalize() + ".")
        paragraph = " ".join(sentences) + "\n\n"
        parts.append(paragraph)
        written += len(paragraph)
    path.write_text("".join(parts)[:size])


def measure(note: Path) -> dict[str, float]:
    os.environ["DOCSHELF_ENRICH"] = "off"
    os.environ["DOCSHELF_EMBEDDER"] = "none"
    from docshelf.model import Tier
    from docshelf.shelf import Shelf

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "notes")
        folder.mkdir()
        (folder / note.name).write_bytes(note.read_bytes())
        with Shelf(Path(tmp, "home"), embedder=None) as shelf:
            started = time.perf_counter()
            shelf.add(folder)
            added = time.perf_counter() - started
            doc = shelf.documents()[0]
            snippets = len(shelf.store.chunks_of_document(doc.id, Tier.SNIPPET))
            started = time.perf_counter()
            shelf.enrich()
            enriched = time.perf_counter() - started
    return {"add_s": added, "snippets": snippets, "enrich_s": enriched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=3.5)
    parser.add_argument("--baseline", type=Path, help="another checkout's src/ to time first")
    parser.add_argument("--note", type=Path, help=argparse.SUPPRESS)  # the child's input
    args = parser.parse_args()
    if args.note is not None:  # a child measuring one checkout
        print(json.dumps(measure(args.note)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        note = Path(tmp, "long.md")
        long_note(note, int(args.mb * 2**20))
        unique = len(set(note.read_text().split()))
        print(f"note: {note.stat().st_size / 2**20:.1f} MB, {unique:,} unique words")
        runs = [("baseline", args.baseline)] if args.baseline else []
        for label, src in [*runs, ("this checkout", Path(__file__).parent.parent / "src")]:
            env = {**os.environ, "PYTHONPATH": str(src.resolve())}
            out = subprocess.run(
                [sys.executable, __file__, "--note", str(note)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            r = json.loads(out.splitlines()[-1])
            print(
                f"{label}: add {r['add_s']:.1f} s ({r['snippets']:,} snippets); "
                f"enrich {r['enrich_s']:.2f} s"
            )


if __name__ == "__main__":
    main()
