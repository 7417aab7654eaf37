"""The packaged model adapted to a library: the training pairs (pure), the header read back,
and a short fine-tune of the real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.chunk.header import build_header, header_parts
from docshelf.embed import local_available
from docshelf.embed.adapt import AdaptSettings, Pair, fine_tune, training_pairs

_LETTERS = st.characters(categories=("L", "N"), include_characters=" -'[]()")
_NAME = st.text(_LETTERS, min_size=1, max_size=20).map(lambda s: " ".join(s.split())).filter(bool)


@given(_NAME, st.lists(_NAME, max_size=4))
def test_a_header_gives_back_its_title_and_path(title: str, path: list[str]) -> None:
    header = build_header(title, path, [], max_tokens=10_000)
    kept = path[1:] if path and path[0].casefold() == title.casefold() else path
    assert header_parts(header) == (title, kept)


def test_an_empty_header_names_nothing() -> None:
    assert header_parts("") == ("", [])


_BODY = (
    "The quick switcher opens any note by its name. It is a core plugin and ships on. "
    "Press the hotkey and type a few letters of the note you want to open now."
)


def test_a_heading_names_its_section_and_a_sentence_its_snippet() -> None:
    header = "[DOC: Core plugins]\n[PATH: Navigation > Quick switcher]"
    pairs = training_pairs([(header, f"## Quick switcher\n\n{_BODY}")])
    named = [p for p in pairs if p.query == "Core plugins Quick switcher"]
    assert named == [Pair("Core plugins Quick switcher", _BODY)]  # the heading line left out
    (cloze,) = [p for p in pairs if p is not named[0]]
    assert cloze.query in _BODY and cloze.passage.startswith(header)
    assert cloze.query not in cloze.passage  # left out (nine times in ten; seed 0: out)


def test_short_snippets_and_headless_ones_give_what_they_can() -> None:
    assert training_pairs([("[DOC: A]", "Too short to teach anything.")]) == []
    pairs = training_pairs([("", _BODY)])
    assert len(pairs) == 1 and pairs[0].query in _BODY  # a sentence; no heading to name it


def test_the_pairs_are_shuffled_the_same_way_and_cut() -> None:
    snippets = [(f"[DOC: Note {n}]\n[PATH: Part {n}]", _BODY) for n in range(40)]
    settings = AdaptSettings(pairs=25)
    first = training_pairs(snippets, settings)
    assert first == training_pairs(snippets, settings) and len(first) == 25
    assert first != training_pairs(snippets, AdaptSettings(pairs=25, seed=1))


@pytest.mark.model
@pytest.mark.skipif(not local_available(), reason="the `local` extra is not installed")
def test_a_fine_tune_writes_a_model_that_ranks_its_pairs_higher(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from docshelf.embed.local import _model_dir

    pairs = [
        Pair(f"zorbit rule {n}", f"The glimmer procedure number {n} is filed under zorbit.")
        for n in range(8)
    ]
    steps: list[int] = []
    settings = AdaptSettings(batch=4, epochs=3, learning_rate=1e-4)
    report = fine_tune(
        _model_dir(), pairs, tmp_path / "adapted", settings, lambda s, n, loss: steps.append(n)
    )
    assert report.steps == 6 and steps == [6] * 6 and report.pairs == 8
    assert {p.name for p in _model_dir().iterdir()} <= {
        p.name for p in (tmp_path / "adapted").iterdir()
    }

    def agreement(model_dir: Path) -> float:
        model = SentenceTransformer(str(model_dir), device="cpu")
        q = model.encode([p.query for p in pairs], normalize_embeddings=True)
        d = model.encode([p.passage for p in pairs], normalize_embeddings=True)
        return float(np.mean(np.sum(q * d, axis=1)))

    assert agreement(tmp_path / "adapted") > agreement(_model_dir())


def test_too_few_pairs_for_a_batch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 32"):
        fine_tune(tmp_path, [Pair("a", "b")], tmp_path / "out")
