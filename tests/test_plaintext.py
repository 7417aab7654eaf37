"""Plain text from snippets' markup: what extractive answers and terminal previews read."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from docshelf import plaintext

RST = """Registering Blueprints
----------------------

So how do you register that blueprint?  Like this::

    from flask import Flask
    app = Flask(__name__)

Use :meth:`app.register_blueprint() <Flask.register_blueprint>` and :func:`~flask.url_for`,
see `the tutorial <https://example.org/tutorial>`_.

.. code-block:: python

    bp = Blueprint("students", __name__, cli_group=None)

Back to prose with a snake_case_name.
"""


def test_rst_roles_links_and_literal_blocks_read_as_text() -> None:
    assert plaintext.plain_units(RST) == [
        "So how do you register that blueprint? Like this:",
        "Use app.register_blueprint() and flask.url_for, see the tutorial.",
        "Back to prose with a snake_case_name.",
    ]


def test_a_preview_keeps_code_as_it_is_in_reading_order() -> None:
    assert plaintext.preview(RST, 1000) == (
        "So how do you register that blueprint? Like this: from flask import Flask "
        "app = Flask(__name__) Use app.register_blueprint() and flask.url_for, see the "
        'tutorial. bp = Blueprint("students", __name__, cli_group=None) Back to prose '
        "with a snake_case_name."
    )


def test_a_reference_link_reads_as_its_text_and_an_index_stays() -> None:
    line = "Traits come in [Chapter 10][traits]<!-- ignore --> and [the book][]."
    assert plaintext.preview(line, 200) == "Traits come in Chapter 10 and the book."
    assert plaintext.inline_plain("The cell `grid[i][j]` and a[0][1].") == (
        "The cell grid[i][j] and a[0][1]."
    )


def test_code_is_kept_as_written_and_only_html_tags_go() -> None:
    line = (
        "A `Vec<T>` or `HashMap<K, V>` (not Option<String>) calls `__init__` and "
        '`a*b*c`; <span class="filename">Filename: src/main.rs</span><br/>.'
    )
    assert plaintext.inline_plain(line) == (
        "A Vec<T> or HashMap<K, V> (not Option<String>) calls __init__ and a*b*c; "
        "Filename: src/main.rs."
    )
    # a link's text may be code; a role's backticks are not code marks
    assert plaintext.inline_plain("[`flask run`](https://x) and :func:`url_for`.") == (
        "flask run and url_for."
    )


def test_markdown_preview_drops_headings_links_and_images() -> None:
    md = (
        "## Obsidian Updates\n\n* The team's [About page](https://obsidian.md/about) has "
        "[[Note|an alias]], **bold** and _emphasis_.\n* [![](https://example.org/x.png)]"
        "(https://example.org/y)\n\n```python\nx = a_b * c_d\n```\n"
    )
    assert plaintext.preview(md, 300) == (
        "The team's About page has an alias, bold and emphasis. x = a_b * c_d"
    )


def test_a_heading_after_a_paragraph_line_is_not_read_as_text() -> None:
    assert plaintext.plain_units("Title\n-----\n\nBody.\n") == ["Body."]


def test_a_preview_of_only_markup_is_the_text_itself_and_is_cut_with_an_ellipsis() -> None:
    assert plaintext.preview("## Only a heading", 100) == "## Only a heading"
    footer = "# Zettelkasten\n\n%% Hub footer: Please don't edit below this line %%\n"
    assert plaintext.preview(footer, 100) == "# Zettelkasten"  # comments stay unseen
    assert plaintext.preview("%% only a comment %%", 100) == "%% only a comment %%"
    assert plaintext.preview("word " * 100, 20) == "word word word word…"


@given(text=st.text(max_size=400), limit=st.integers(min_value=1, max_value=200))
def test_a_preview_is_one_line_within_its_limit(text: str, limit: int) -> None:
    out = plaintext.preview(text, limit)
    assert "\n" not in out
    assert len(out) <= limit + 1
