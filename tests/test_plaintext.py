"""Text as a person reads it (issue 42: the text shown is the text in the file): the
display text every face shows (``readable``, ``preview``), with code, HTML, Markdown and
Sphinx fixtures, and the prose units extractive answers and summaries read."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from docshelf import plaintext
from docshelf.knowledge.sentences import plain_sentences
from docshelf.plaintext import units

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
        "Use app.register_blueprint() and url_for(), see the tutorial.",
        "Back to prose with a snake_case_name.",
    ]


def test_a_reference_link_reads_as_its_text_and_an_index_stays() -> None:
    line = "Traits come in [Chapter 10][traits]<!-- ignore --> and [the book][]."
    assert plaintext.plain_units(line) == ["Traits come in Chapter 10 and the book."]
    assert plaintext.inline_plain("The cell `grid[i][j]` and a[0][1].") == (
        "The cell grid[i][j] and a[0][1]."
    )


def test_a_links_address_in_angle_brackets_or_with_parentheses_is_not_read() -> None:
    """CommonMark's destinations: ``<…>`` may hold a ")", and parentheses that pair up
    may stand in a bare address (a Wikipedia page); neither leaves ">)" or "(SOP)>)" as
    text (a vault's answer read "Leah Ferguson's File Hierarchy SOP>).")."""
    angled = "- [File Hierarchy SOP](<https://publish.example/04+SOP/File+Hierarchy+(SOP)>)."
    assert plaintext.plain_units(angled) == ["File Hierarchy SOP."]
    paired = 'See [Foo](https://en.wikipedia.org/wiki/Foo_(bar) "Foo") and ![a](x_(1).png) now.'
    assert plaintext.inline_plain(paired) == "See Foo and now."


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
        "flask run and url_for()."  # as Sphinx shows a function
    )


def test_markdown_prose_drops_headings_links_images_and_code() -> None:
    md = (
        "## Obsidian Updates\n\n* The team's [About page](https://obsidian.md/about) has "
        "[[Note|an alias]], **bold** and _emphasis_.\n* [![](https://example.org/x.png)]"
        "(https://example.org/y)\n\n```python\nx = a_b * c_d\n```\n"
    )
    assert plaintext.plain_units(md) == ["The team's About page has an alias, bold and emphasis."]


def test_a_heading_after_a_paragraph_line_is_not_read_as_text() -> None:
    assert plaintext.plain_units("Title\n-----\n\nBody.\n") == ["Body."]


# -- what a person reads: the display text of a hit or a context --------------------------

# reStructuredText as docutils stores it (search/the RST parser): code blocks and doctests
# as written, without their markup; Sphinx's roles left as they are in the file
FLASK_RST = (
    "Blueprints\n\n"
    "A :class:`Blueprint` is registered with :meth:`~flask.Flask.register_blueprint`, "
    "see :ref:`the tutorial <tutorial>` and :pep:`8`.\n\n"
    "from flask import Flask\n"
    "app = Flask(__name__)\n\n"
    "@app.route('/pages/<page>')\n"
    "def show(page):\n"
    "    return render_template(f'pages/{page}.html')\n\n"
    ">>> app.url_map\n"
    "Map([<Rule '/pages/<page>' -> show>])\n\n"
    "Use :func:`.url_for` with **kwargs, not *args, and commit :file:`.flaskenv`."
)


def test_sphinx_roles_read_as_sphinx_shows_them_and_code_stays_as_written() -> None:
    assert plaintext.readable(FLASK_RST, "rst") == (
        "Blueprints\n\n"
        "A Blueprint is registered with register_blueprint(), see the tutorial and PEP 8.\n\n"
        "from flask import Flask\n"
        "app = Flask(__name__)\n\n"
        "@app.route('/pages/<page>')\n"
        "def show(page):\n"
        "    return render_template(f'pages/{page}.html')\n\n"
        ">>> app.url_map\n"
        "Map([<Rule '/pages/<page>' -> show>])\n\n"
        "Use url_for() with **kwargs, not *args, and commit .flaskenv."
    )
    # the prose an answer reads keeps the characters of text that is not Markdown too
    assert plaintext.plain_units("It calls Flask(__name__), then *args.", "rst") == [
        "It calls Flask(__name__), then *args."
    ]


RUST_BOOK_MD = """### Updating and Uninstalling

Run `rustup update`; see [“Raw Identifiers”][raw-identifiers]<!-- ignore --> and the
[book](https://doc.rust-lang.org/book/).

<span class="filename">Filename: src/main.rs</span>

```rust
fn main() {
    let x: Vec<u8> = vec![]; // **not** emphasis, <not> a tag, [[not]] a link, 100%% sure
}
```

<!-- Old headings. Do not remove or links may break. -->
<a id="local-documentation"></a>

- one *item*
  - nested `code`
1. first
2. second

| Key | Value |
|-----|-------|
| `a` | <b>1</b> |
"""


def test_markdown_reads_as_text_and_code_as_written() -> None:
    assert plaintext.readable(RUST_BOOK_MD, "markdown") == (
        "Updating and Uninstalling\n\n"
        "Run rustup update; see “Raw Identifiers” and the book.\n\n"
        "Filename: src/main.rs\n\n"
        "fn main() {\n"
        "    let x: Vec<u8> = vec![]; // **not** emphasis, <not> a tag, [[not]] a link, "
        "100%% sure\n"
        "}\n\n"
        "• one item\n"
        "  • nested code\n\n"
        "1. first\n"
        "2. second\n\n"
        "Key | Value\n"
        "a | 1"
    )


OBSIDIAN_NOTE = """# PARA

%% Add a description below this line. It doesn't need to be long. %%

A method by [[Tiago Forte|Tiago]] for [[Projects#Active]] notes; `%%timeit` is code.
%% a comment
over lines %%
![[diagram.png]]

```python
%%timeit
```
"""


def test_obsidian_comments_are_unseen_and_wikilinks_read_as_their_text() -> None:
    assert plaintext.readable(OBSIDIAN_NOTE, "markdown") == (
        "PARA\n\n"
        "A method by Tiago for Projects > Active notes; %%timeit is code.\n\n"
        "diagram.png\n\n"
        "%%timeit"
    )
    # a note's prose (an answer's, a summary's) holds no comment either
    assert plaintext.plain_units(OBSIDIAN_NOTE) == [
        "A method by Tiago for Projects notes; %%timeit is code."
    ]


def test_html_and_other_formats_are_shown_as_they_are_stored() -> None:
    stored = "Routes like '/pages/<page>' take a *page*: >>> and __name__ stay."
    assert plaintext.readable(stored, "plain") == stored  # HTML, DOCX, PDF and text's text
    assert plaintext.markup_of("html", True) == "plain"
    assert plaintext.markup_of("markdown", False) == "markdown"
    assert plaintext.markup_of("text", True) == "markdown"  # parsed as Markdown: headings
    assert plaintext.markup_of("text", False) == "plain"
    assert plaintext.markup_of("rst", True) == "rst"


def test_a_preview_is_the_first_lines_without_the_cited_heading() -> None:
    shown = plaintext.readable(RUST_BOOK_MD, "markdown")
    assert plaintext.preview(shown, 300, skip={"Updating and Uninstalling"}, lines=3) == (
        "Run rustup update; see “Raw Identifiers” and the book.\n"
        "Filename: src/main.rs\n"
        "fn main() {…"
    )
    assert plaintext.preview("word " * 100, 20) == "word word word word…"
    assert plaintext.preview("Only a heading", 100, skip={"Only a heading"}) == "Only a heading"
    assert plaintext.preview("Raft\n\nElection\n\nText.", 100, skip={"Raft", "Election"}) == (
        "Text."
    )


@given(text=st.text(max_size=400), limit=st.integers(min_value=1, max_value=200))
def test_a_preview_is_within_its_limits(text: str, limit: int) -> None:
    out = plaintext.preview(plaintext.readable(text, "markdown"), limit, lines=4)
    assert len(out) <= limit + 1
    assert out.count("\n") <= 3
    assert "\n\n" not in out


@given(text=st.text(max_size=300))
def test_any_text_reads_without_error_and_plain_text_is_unchanged(text: str) -> None:
    plaintext.readable(text, "markdown")
    assert plaintext.readable(text, "plain") == text


def test_an_html_block_shows_the_text_a_browser_shows() -> None:
    # mdBook's <Listing> holds `Box<T>` inside an attribute: no tag is cut in two
    listing = (
        '<Listing number="15-17" file-name="src/main.rs" caption="two lists using '
        '`Box<T>` that share a third">\n'
    )
    assert plaintext.html_text(listing) == ""
    assert plaintext.html_text("<!-- Old headings. Do not remove or links may break. -->") == ""
    assert (
        plaintext.html_text("a <!-- note --> b <!-- a comment this block does not close") == "a b"
    )
    assert plaintext.html_text("<div onclick='x()'>Tom &amp; Jerry<script>x()</script></div>") == (
        "Tom & Jerry"
    )
    assert plaintext.readable(listing + "\nThe error:\n", "markdown") == "The error:"


@given(st.lists(st.text(alphabet="ab c\n", max_size=12), max_size=5))
def test_html_text_keeps_the_words_between_any_tags(words: list[str]) -> None:
    markup = "".join(f'<span title="<i>">{w}</span><!-- {w} -->' for w in words)
    expected = [" ".join(line.split()) for line in "".join(words).split("\n")]
    assert plaintext.html_text(markup) == "\n".join(line for line in expected if line)


def test_a_label_line_is_a_fact_of_its_own() -> None:
    """ "Plugin ID: `switcher`" after a sentence, and the label lines after it, are units
    of their own read as items (a full stop added), not one run-on sentence; a line with
    a colon inside a paragraph's sentence stays in it."""
    text = (
        "Use Ctrl/Cmd+O to jump to other files.\n\nPlugin ID: `switcher`\n"
        "Documentation: [Quick switcher](https://example.org/qs)\n\n"
        "The share is divided as follows:\n**Linux** — 12.1%\n**MacOS** — 34.4%\n\n"
        "We read the notes that\nnote: this line is not a label, it goes on.\n"
    )
    assert units(text) == [
        ("Use Ctrl/Cmd+O to jump to other files.", False),
        ("Plugin ID: switcher", True),
        ("Documentation: Quick switcher", True),
        ("The share is divided as follows:", False),
        ("Linux — 12.1%", True),
        ("MacOS — 34.4%", True),
        ("We read the notes that note: this line is not a label, it goes on.", False),
    ]
    assert plain_sentences(text)[1:3] == ["Plugin ID: switcher.", "Documentation: Quick switcher."]


def test_an_abbreviation_inside_a_sentence_ends_no_sentence() -> None:
    text = (
        "Plugins that render static HTML will work (i.e. Dataview) as before. Smith et al. "
        "Showed it first, cf. Figure 2. Text, e.g. The Hobbit, is read. It ends here. Next."
    )
    assert plain_sentences(text, "plain") == [
        "Plugins that render static HTML will work (i.e. Dataview) as before.",
        "Smith et al. Showed it first, cf. Figure 2.",
        "Text, e.g. The Hobbit, is read.",
        "It ends here.",
        "Next.",
    ]


def test_a_list_item_that_runs_on_into_the_next_reads_as_a_sentence_of_its_own() -> None:
    """A list written as one sentence ("• Detects failures of servers, • Halts …, and"):
    each item reads without its comma or its "and", then a full stop."""
    text = (
        "the master:\n\n• Detects failures of servers,\n\n• Halts the chain, and\n\n"
        "• Informs clients;\n"
    )
    assert plain_sentences(text, "plain") == [
        "the master:",
        "Detects failures of servers.",
        "Halts the chain.",
        "Informs clients;",
    ]


def test_a_console_session_in_text_without_code_marks_is_no_prose() -> None:
    """A parsed page or a PDF keeps a console block's lines but not its fence: from the
    prompt's line to the next blank one, the session and its output (" * Serving …", a
    bullet's look) are not sentences."""
    text = (
        "To enable debug mode, use the --debug option.\n\n"
        '$ flask --app hello run --debug\n * Serving Flask app "hello"\n * Debug mode: on\n\n'
        "The option can also be passed to the top level command.\n\n"
        ">>> app.url_map\nMap([<Rule '/' -> index>])\n\nDone."
    )
    expected = [
        "To enable debug mode, use the --debug option.",
        "The option can also be passed to the top level command.",
        "Done.",
    ]
    assert plain_sentences(text, "rst") == expected
    assert plain_sentences(text, "plain") == expected
    # in Markdown a prompt's line is text: its code is fenced
    assert plain_sentences("$ 5 is the fee.\n", "markdown") == ["$ 5 is the fee."]


def test_a_pdf_list_item_in_lower_case_goes_on_the_sentence_before_it() -> None:
    """ "… a service, called the master, that • detects failures of servers, • informs …":
    in plain text an item in lower case is part of the sentence before it, none alone; in
    Markdown an item is one ("- a lamp")."""
    text = (
        "For this purpose, we employ a service, called the master, that\n\n"
        "• detects failures of servers,\n\n• Informs clients of the new tail.\n"
    )
    assert plain_sentences(text, "plain") == ["Informs clients of the new tail."]
    assert plain_sentences("- a lamp\n- a rope\n") == ["a lamp.", "a rope."]
