"""The PDF rules across pages, one focused test each: furniture, joins, headings and the
title (``parse.pdf_structure``, ``parse.pdf_text``), then the rules together.

Inputs are small and synthetic (tests/pdf_builders.py). tests/test_pdf_rules.py checks
that every rule of ``parse.pdf.RULES`` has its test here or in
tests/test_pdf_layout_rules.py.
"""

from __future__ import annotations

from collections import Counter

from docshelf.model import BlockKind
from docshelf.parse.pdf_bylines import (
    is_affiliation,
    is_author_list,
    is_person_name,
    lower_case_words,
)
from docshelf.parse.pdf_structure import (
    Numbered,
    apply_font_sizes,
    apply_outline,
    body_line,
    body_size,
    bylines,
    continues_broken_word,
    follows,
    joined_across_breaks,
    numbered_headings,
    numbered_list,
    numbered_running_heads,
    outline_match,
    page_edges,
    repeated_texts,
    running_furniture,
    section_number,
    set_larger,
    short,
    without_furniture,
)
from docshelf.parse.pdf_text import (
    HYPHEN_MARK,
    is_caption,
    is_formula,
    is_garbled,
    is_page_number,
    is_page_reference,
    real_hyphen,
    without_stray_marks,
)
from docshelf.parse.pdf_title import (
    one_title_heading,
    placeholder_title,
    title,
    title_above_authors,
    title_lines,
)
from tests.pdf_builders import PROSE, piece

# -- across pages ------------------------------------------------------------------------------


def test_page_edges() -> None:
    page = [piece(f"p{i}") for i in range(6)]
    page[0] = piece("a paragraph of many lines", lines=5)
    assert [p.text for p in page_edges(page)] == ["p1", "p4", "p5"]
    assert [p.text for p in page_edges(page[1:3])] == ["p1", "p2"]
    two_lines, three_lines = piece("head", lines=2), piece("head", lines=3)
    assert page_edges([two_lines, three_lines]) == [two_lines]
    assert page_edges([piece("x" * 120), piece("x" * 121)]) == [piece("x" * 120)]


def test_is_page_number() -> None:
    for text in ("12", "iv", "Page 3 of 9", "- 4 -", "7/20"):
        assert is_page_number(text), text
    assert not is_page_number("Introduction") and not is_page_number("2024 results")


def test_running_furniture() -> None:
    pages = [
        [
            piece(f"Journal of Systems, Vol. {n}", size=8),
            piece(PROSE, lines=9),
            piece(str(n), size=8),
        ]
        for n in range(8)
    ]
    pages[3].insert(0, piece("Once at the top", size=8))
    assert running_furniture(pages) == {("journal of systems, vol. #", 8), ("#", 8)}
    assert running_furniture(pages[:2]) == set()  # on too few pages
    pages[5].insert(0, piece("Draft", size=8))
    pages[7].insert(0, piece("Draft", size=8))
    assert ("draft", 8) not in running_furniture(pages)  # on two of eight pages
    pages[6].insert(0, piece("Draft", size=8))
    assert ("draft", 8) in running_furniture(pages)  # three of eight: a quarter
    assert ("draft", 8) not in running_furniture(pages + [[piece(PROSE)]] * 5)  # of 13


def test_numbered_running_heads() -> None:
    pages = [
        [piece(f"{n - 22} 2 Concurrency", page=n, size=8), piece(PROSE, page=n, lines=9)]
        if n % 2 == 0
        else [piece(f"2.3 Concurrency {n - 22}", page=n, size=8), piece(PROSE, page=n, lines=9)]
        for n in range(68, 74)
    ]
    heads = numbered_running_heads(pages, body=10)
    assert heads == {id(page[0]) for page in pages}  # the page less 22, on six pages
    assert numbered_running_heads(pages[:2], body=10) == set()  # on too few pages
    assert numbered_running_heads(pages, body=7) == set()  # set larger than the body
    # a section's number at a page's top, once, is no page number
    sections = [
        [piece(f"{n} Results", page=at), piece(PROSE, page=at)]
        for n, at in ((1, 3), (4, 5), (9, 12))
    ]
    assert numbered_running_heads(sections, body=10) == set()


def test_continues_broken_word() -> None:
    last = piece("the client waits for an inaccessi-")
    assert continues_broken_word(last, piece("ble file server to return"))
    assert continues_broken_word(piece(f"inaccessi{HYPHEN_MARK}"), piece("ble file"))
    assert not continues_broken_word(last, piece("Section 2 starts here"))
    assert not continues_broken_word(piece("ends whole."), piece("and goes on"))
    assert not continues_broken_word(last, piece("ble | 3", kind=BlockKind.TABLE))


def test_real_hyphen() -> None:
    words = Counter({"production": 1, "well-known": 2})
    assert not real_hyphen("produc", "tion", words)  # the joined word occurs
    assert real_hyphen("well", "known", words)  # the hyphenated one does, not the joined
    assert not real_hyphen("compu", "ting", Counter())  # no evidence: joined
    assert real_hyphen("Anti", "Entropy", Counter())  # a capital after the break


def test_body_size() -> None:
    found = [piece("x" * 40, size=10), piece("y" * 30, size=9), piece("z" * 5, size=14)]
    assert body_size(found) == 10
    assert body_size([piece("a" * 10, size=10), piece("b" * 10, size=9)]) == 9  # a tie
    assert body_size([]) == 0.0


def test_outline_match() -> None:
    assert outline_match("leader election", "leader election")
    assert outline_match("2 1 leader election", "leader election")  # its number apart
    assert outline_match("leader election 7", "leader election")  # a short tail
    assert outline_match("leader election 1 2 3 45", "leader election")  # 24 characters
    assert not outline_match("leader election 1 2 3 456", "leader election")
    assert outline_match("ion", "leader election")
    assert not outline_match("leader election and what the followers do then", "leader election")
    assert outline_match("election", "leader election")  # the entry's end
    assert not outline_match("on", "leader election")
    assert not outline_match("", "")


def test_short() -> None:
    assert short(piece("Introduction"))
    assert short(piece("Introduction", lines=3)) and short(piece("x" * 200))
    assert not short(piece("Introduction", lines=4))
    assert not short(piece("x" * 201))
    assert not short(piece("4.2a"))  # fewer than two letters
    assert short(piece("4.2ab"))


def test_set_larger() -> None:
    assert set_larger(piece("Introduction", size=11), body=10)
    assert set_larger(piece("Introduction", size=10.9), body=10)
    assert not set_larger(piece("Introduction", size=10.7), body=10)
    assert not set_larger(piece("Server | Term", size=12, kind=BlockKind.TABLE), body=10)
    assert not set_larger(piece(PROSE * 5, size=12), body=10)  # not short


def test_is_caption() -> None:
    for text in ("Figure 3: Mesos architecture", "Table 2. Results", "Fig. 10. Left", "Listing 1:"):
        assert is_caption(text), text
    assert not is_caption("Figures of merit") and not is_caption("Table manners")


def test_is_formula() -> None:
    assert is_formula("Paccept = C[pi(1 - pi)]")  # a relation
    assert is_formula("x_i + y_j")  # mostly symbols
    assert is_formula("a b c d")  # mostly one-letter tokens
    assert not is_formula("a b c")  # too few tokens to tell
    assert is_formula("(1) [2] {3}") and is_formula("Q 2024")  # few letters
    assert not is_formula("Top 10")
    assert is_formula("ab+cd+efgh")  # two symbols, four letters to a symbol
    assert not is_formula("ab+cd+efghi") and not is_formula("TCP+TLS")
    assert not is_formula("O(log n) Operations") and not is_formula("2.1 Leader Election")


def test_is_garbled() -> None:
    assert is_garbled("NcbedV]_fRWgcZJdVh IJACKLM")  # letters mixed with symbols
    assert is_garbled("xkqz bvwp")  # no vowels: not words
    assert not is_garbled("xkq bvw")  # three letters need none
    assert not is_garbled("Xkqzt")  # one word is too few to judge
    assert is_garbled("aBcD eFgH")  # case flipping to and fro
    assert not is_garbled("iPhone getValue") and not is_garbled("AT&T Labs")
    assert not is_garbled("TAO: Facebook\u2019s Data Store") and not is_garbled("iPhone")


def test_is_page_reference() -> None:
    assert is_page_reference("C. A. R. HOARE--cont'd from page 580")
    assert is_page_reference("(Continued on p. 583)")
    assert not is_page_reference("Continued Fractions") and not is_page_reference("Page 3")


def test_bylines() -> None:
    title_piece = piece("Consensus for Everyone", size=18)
    authors = piece("Diego Ongaro, Ann Wollrath and Sam Kendall", size=14)
    name = piece("Chris Okasaki", size=14)
    heading = piece("Leader Election", size=14)  # its words are the body's too
    late = piece("Chris Okasaki", size=14, page=3)  # past the first pages
    body = piece("the leader election starts when a follower hears nothing", lines=9)
    found = [title_piece, authors, name, heading, body, late]
    assert bylines(found) == {id(authors), id(name)}  # the name beside the author list
    assert bylines([title_piece, name, body]) == set()  # a name alone beside no byline
    email = piece("okasaki@cs.cmu.edu")
    assert bylines([title_piece, name, heading, email, body]) == {id(email)}  # not beside
    second = piece("Chris Okasaki", size=18)  # in the title's size, right after it
    assert bylines([title_piece, second, email, body]) == {id(email)}  # the title goes on
    numbered = piece("2 Raft Basics", size=14)
    assert bylines([numbered, body]) == set()  # a numbered section is no byline


def test_is_author_list() -> None:
    common = lower_case_words(["the leader sends heartbeats; a single chain with no failures"])
    for text in (
        "Jim Waldo, Geoff Wyant, Ann Wollrath, and Sam Kendall",
        "Seth Gilbert\u2217 Nancy Lynch\u2217",  # footnote marks between the names
        "Peter W. Shor\u2020",  # one name, with a footnote mark
        "Ding Yuan, Yu Luo, and Michael Stumm, University of Toronto",
        "Debra A. Lelewer and Daniel S. Hirschberg",
    ):
        assert is_author_list(text, common), text
    for text in (
        "Single Chain, No Failures",  # the document's own words
        "Categories and Subject Descriptors",  # "Categories" is no name
        "Atomic, Partition Tolerant",
        "Peter W. Shor",  # one name, no mark: is_person_name's to judge
    ):
        assert not is_author_list(text, common), text


def test_is_person_name() -> None:
    common = lower_case_words(["lazy rebuilding is a chain of thunks", "jim.waldo@sun.com"])
    assert is_person_name("Chris Okasaki", common)
    assert is_person_name("Robbert van Renesse", common)
    assert is_person_name("C. A. R. HOARE", common)
    assert is_person_name("Jim Waldo", common)  # an e-mail address's words are not counted
    assert not is_person_name("Lazy Rebuilding", common)  # words the document uses
    assert not is_person_name("Okasaki", common)  # one word
    assert not is_person_name("Glossary of Symbols", common)


def test_is_affiliation() -> None:
    for text in (
        "The Queen's University of Belfast,* Northern Ireland",
        "Department of Computer Science, University of Massachusetts, Amherst, MA 01002",
        "Akamai Technologies, 8 Cambridge Center, Cambridge, MA 02142",
        "Secure Networks, Inc.",
    ):
        assert is_affiliation(text), text
    assert not is_affiliation("Mesos: A Platform for Resource Sharing in the Data Center")
    assert not is_affiliation("This research was done at the University of Toronto")


def test_repeated_texts() -> None:
    found = [piece("Notes On Consensus", page=n) for n in (1, 2, 3)]
    found += [piece(f"{2 * n} Epidemic Algorithms", page=n) for n in (1, 2, 3)]
    found.append(piece("Once Only", page=1))
    assert repeated_texts(found) == {"notes on consensus"}
    assert repeated_texts(found, digits=False) == {"notes on consensus", " epidemic algorithms"}
    assert repeated_texts([piece(PROSE * 5, page=n) for n in (1, 2, 3)]) == set()  # not short
    assert repeated_texts(found[:2]) == set()  # on two pages


def test_section_number() -> None:
    assert section_number("II. MOTIVATION") == ("roman", (2,))
    assert section_number("A. Concepts and Constructions") == ("letter", (1,))
    assert section_number("3.1 Design Philosophy") == ("arabic", (3, 1))
    assert section_number("IIII. Not Roman") is None
    assert section_number("3.1 A sentence that ends.") is None
    assert section_number("1.3 Contributions 3") is None  # a page number at its end
    assert section_number("2 " + " ".join(["Word"] * 12)) == ("arabic", (2,))
    assert section_number("2 " + " ".join(["Word"] * 13)) is None  # too long a title


def test_body_line() -> None:
    assert body_line(piece("2.1 Remote Calls"), body=10)
    assert body_line(piece("A. CONCEPTS", size=8.6), body=10)  # small capitals
    assert not body_line(piece("A. CONCEPTS", size=8.4), body=10)  # a footnote's size
    assert not body_line(piece("2.1 Remote Calls", lines=2), body=10)
    assert not body_line(piece("2 Related Work", size=12), body=10)  # found by its size
    rotated = piece("2.1 Remote Calls")
    rotated.rotated = True
    assert not body_line(rotated, body=10)


def _numbered(at: int, text: str) -> Numbered:
    found = section_number(text)
    assert found is not None
    return Numbered(piece(text), at, *found)


def test_numbered_list() -> None:
    one, two = _numbered(5, "1. Install the package"), _numbered(6, "2. Run the first command")
    assert numbered_list([one, two]) == {id(one.piece), id(two.piece)}
    apart = _numbered(9, "2. Run the first command")  # text between them
    assert numbered_list([one, apart]) == set()
    child = _numbered(6, "1.1 Terminology")  # one deeper
    assert numbered_list([one, child]) == set()
    heading = _numbered(6, "2. Related Work")
    heading.piece.kind = BlockKind.HEADING  # found by its size: kept
    assert numbered_list([one, heading]) == {id(one.piece)}


def test_follows() -> None:
    assert follows(None, (1,)) and follows(None, (2, 1)) and not follows(None, (2,))
    assert follows((3,), (3, 1)) and follows((3,), (4,)) and not follows((3,), (3, 2))
    assert follows((3, 1), (3, 2)) and follows((3, 1), (4,)) and not follows((3, 1), (5,))


def test_title_lines() -> None:
    found = [
        piece("Polynomial-Time Algorithms for Prime Factorization", size=17),
        piece("and Discrete Logarithms on a Quantum Computer", size=17),
        piece("Peter W. Shor", size=12),
        piece(PROSE),
    ]
    assert [p.size for p in title_lines(found, body=10)] == [17, 17]
    assert title_lines(found, body=14) == []  # not a quarter larger than the body
    found[1].size = 16.4
    assert len(title_lines(found, body=10)) == 1  # the next line in another size
    found[1].size = 16.6
    assert len(title_lines(found, body=10)) == 2
    lines = [piece(f"Title line {n}", size=17) for n in range(4)]
    assert len(title_lines([*lines, piece(PROSE)], body=10)) == 3
    on_page_2 = [piece("Title", size=17, page=2), piece(PROSE)]
    assert title_lines(on_page_2, body=10) == []
    caption = [piece("Figure 1: Overview", size=17), piece(PROSE)]
    assert title_lines(caption, body=10) == []
    above = [piece("University of Leeds", size=18), piece("Raft", size=16), piece(PROSE)]
    assert [p.text for p in title_lines(above, body=10)] == ["Raft"]  # not the affiliation
    after = [piece("Raft", size=14), piece("Abstract", size=16), piece("Safety", size=18)]
    assert [p.text for p in title_lines([*after, piece(PROSE)], body=10)] == ["Raft"]


def test_title_above_authors() -> None:
    found = [
        piece("Data Compression", size=11),
        piece("Debra A. Lelewer and Daniel S. Hirschberg", size=11),
        piece("Abstract", size=9),
        piece("data compression is often referred to as coding", size=11, lines=9),
    ]
    assert title_above_authors(found, body=11) == [found[0]]
    assert title_above_authors(found, body=12) == []  # smaller than the body
    assert title_above_authors([found[0], found[2], found[1], found[3]], body=11) == []
    assert title_above_authors([found[0], found[3]], body=11) == []  # no authors


def test_without_stray_marks() -> None:
    assert without_stray_marks("Replicated . Database") == "Replicated Database"
    assert without_stray_marks("Items , Lists \u00b7 Sets") == "Items Lists Sets"
    for kept in ("3.1. Axiom of Assignment", "TAO: Facebook\u2019s Store", "Search & Transfer"):
        assert without_stray_marks(kept) == kept


def test_one_title_heading() -> None:
    first, second = piece("Macaroons: Cookies with", size=20), piece("Contextual Caveats", size=20)
    body = piece("macaroons are cookies with contextual caveats")
    for p in (first, second):
        p.kind, p.level = BlockKind.HEADING, 1
    found = one_title_heading([first, second, body], body=10)
    assert [p.text for p in found] == ["Macaroons: Cookies with Contextual Caveats", body.text]
    second.kind = BlockKind.PARAGRAPH  # not all of its lines are headings: left alone
    third = piece("Contextual Caveats", size=20)
    assert one_title_heading([first, third, body], body=10) == [first, third, body]


def test_placeholder_title() -> None:
    for text in ("", "untitled", "Document1", "paper.pdf", "arXiv:2101.00001v2"):
        assert placeholder_title(text), text
    assert placeholder_title("Proceedings Template - WORD")
    assert not placeholder_title("Raft Explained")


def test_title() -> None:
    found = [piece("Raft", size=20), piece(PROSE)]
    assert title(found, body=10) == "Raft"
    assert title([piece("In Search . of Consensus", size=20), piece(PROSE)], body=10) == (
        "In Search of Consensus"
    )
    heading = piece("In Search of Consensus", size=12, page=2)
    heading.kind = BlockKind.HEADING
    assert title([piece(PROSE), heading], body=10) == "In Search of Consensus"
    heading.page = 3
    assert title([piece(PROSE), heading], body=10) is None  # too far in


# -- the rules together ----------------------------------------------------------------------


def test_without_furniture_drops_running_heads_and_page_numbers() -> None:
    pages = [
        [piece("Notes on Raft", page=n), piece(PROSE, page=n, lines=9), piece(str(n), page=n)]
        for n in (1, 2, 3)
    ]
    kept = without_furniture([p for page in pages for p in page])
    assert [p.text for p in kept] == [PROSE] * 3
    two_pages = [p for page in pages[:2] for p in page]
    assert without_furniture(two_pages) == two_pages  # too few pages to tell


def test_joined_across_breaks() -> None:
    found = [piece("an inaccessi-", page=1), piece("ble file server", page=2), piece("Next")]
    joined = joined_across_breaks(found)
    assert [p.text for p in joined] == [f"an inaccessi{HYPHEN_MARK}ble file server", "Next"]
    assert joined[0].rows == 2


def test_apply_outline() -> None:
    found = [piece("1 Introduction"), piece(PROSE), piece("Introduction", page=2)]
    assert apply_outline(found, [(1, "Introduction", 1)])
    assert [(p.kind, p.level) for p in found][:2] == [
        (BlockKind.HEADING, 1),
        (BlockKind.PARAGRAPH, 0),
    ]
    assert found[2].kind is BlockKind.PARAGRAPH  # on another page than the entry's
    assert not apply_outline([piece(PROSE)], [(1, "Introduction", 1)])


def test_apply_font_sizes_levels_by_size() -> None:
    found = [
        piece("Raft", size=18),
        piece("Safety", size=14),
        piece(PROSE),
        piece("Liveness", size=14),
    ]
    found.append(piece("Figure 2: States", size=14))
    assert apply_font_sizes(found, body=10) == 2
    assert [(p.text, p.level) for p in found if p.kind is BlockKind.HEADING] == [
        ("Raft", 1),
        ("Safety", 2),
        ("Liveness", 2),
    ]


def test_numbered_headings_follow_on() -> None:
    found = [
        piece("1 Introduction", size=14),
        piece(PROSE),
        piece("1.1 Terminology"),
        piece(PROSE),
        piece("7 Reasons a Reader Counts"),  # follows nothing, nothing follows it
        piece(PROSE),
        piece("1.2 Latency"),
    ]
    found[0].kind = BlockKind.HEADING
    depths = [(p.text, depth) for p, depth in numbered_headings(found, body=10)]
    assert depths == [("1.1 Terminology", 2), ("1.2 Latency", 2)]
