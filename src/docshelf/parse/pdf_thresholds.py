"""Every threshold and pattern of the PDF rules, in one place.

Each number a rule of ``parse.pdf*`` compares against and each regular
expression it matches is named here, with what it measures and its unit. Units:
*pt* is a PDF point (1/72 inch); *em* is the font size of the text in question
(so ``1.5`` em is one and a half times that size); a *share* is a fraction from
0 to 1; a count is a plain number. The rules themselves, in the order they
apply, are listed in ``parse.pdf.RULES``.

A pure module (``re`` only): ``bench/pdf_quality.py`` loads ``parse/pdf_text.py``
and this file from a checkout by path, to score another docshelf by this one's
rules.
"""

from __future__ import annotations

import re

# -- marks and limits ----------------------------------------------------------------------

# Where a word was broken at a line end. PDFium itself reports a line-end hyphen as
# U+FFFE; the layout marks a literal "-" at a line end the same way.
HYPHEN_MARK = "\ufffe"
HEADER_WINDOW = 1024  # bytes: the %PDF- header must be this close to the start
EOF_WINDOW = 16 * 1024  # bytes: the %%EOF marker must be this close to the end (junk may follow)
MAX_OUTLINE_ITEMS = 5000  # count: outline entries (bookmarks) read at most
MAX_RULE_OBJECTS = 5000  # count: path objects looked at per page for ruling lines
RULE_OBJECT_DEPTH = 2  # count: levels of nested forms searched for ruling lines
MIN_EM = 1.0  # pt: an em is taken as at least this (a zero font size must not make gaps wide)
SIZE_STEP = 0.5  # pt: font sizes are told apart to this step (heading levels, size counts)
HEADING_LEVELS = 6  # count: heading levels there are (deeper ones are level 6)

# -- a page's words (parse.pdf_page) ------------------------------------------------------

WORD = re.compile(r"\S+")  # a word of a page's text: characters between white space
# PDFium's line-end hyphen after a letter (U+0002 read char by char, U+FFFE in its text).
LINE_END_HYPHEN = re.compile("(?<=[^\\W\\d_])[\x02\ufffe]")
TURNED_ANGLE = 0.01  # radians: a character turned further than this from upright is rotated
WORD_JUMP_BACK_EM = 1.0  # em: a word's character starting this far left of the last one's end
WORD_JUMP_LINE_SHARE = 0.5  # share of a character's height its centre or top may move in a word
RULE_THICKNESS = 3.0  # pt: a path object at most this thick may be a ruling line ...
RULE_MIN_LENGTH = 4 * RULE_THICKNESS  # pt: ... when it is at least this long

# -- text quality (parse.pdf_text) ---------------------------------------------------------

MIN_WORDS_TO_JUDGE = 12  # count: a page of fewer words is too little text to call unreadable
SAMPLE_WORDS = 200  # count: a page is judged on an even sample of about this many words
MIN_READABLE_SHARE = 0.4  # share of words that look like words, below which text is gibberish
VOWELLESS_LETTERS = 3  # count: a Latin word longer than this has a vowel
CASE_FLIPS = 2  # count: more changes of case inside a word than this is not camelCase
# Punctuation that may open or close a word (quotes, brackets, dashes, marks).
EDGE_PUNCTUATION = (
    "\"'()[]{}<>.,;:!?*%/-"
    "\u00ab\u00bb\u201c\u201d\u2018\u2019\u201e\u201a\u2020\u2021\u00a7\u00b6\u2026\u2013\u2014"
)
VOWELS = frozenset("aeiouyAEIOUY")  # what a longer Latin word has at least one of
BROKEN_CATEGORIES = ("Cc", "Co", "Cn", "Cs")  # Unicode categories no readable word has
ASCII_LETTERS = re.compile(r"[A-Za-z]+")  # a word of Latin letters only
NUMBER = re.compile(r"[+-]?\d[\d.,:/]*[a-zA-Z%]{0,3}")  # a number, with a short unit
# The common word, decided by one match: ASCII in one case pattern, with a vowel when
# longer than VOWELLESS_LETTERS, between edge punctuation.
PLAIN_WORD = re.compile(
    r"[(\[\"'\u201c\u2018]*"
    rf"(?:[a-z]{{1,{VOWELLESS_LETTERS}}}|[A-Z][a-z]{{0,{VOWELLESS_LETTERS - 1}}}"
    rf"|[A-Z]{{1,{VOWELLESS_LETTERS}}}|(?=[A-Za-z]*[aeiouyAEIOUY])(?:[a-z]+|[A-Z][a-z]+|[A-Z]+))"
    r"(?:['\u2019-][a-z]+)*[)\]\"'\u201d\u2019.,;:!?]*"
)
ASCII_BROKEN = re.compile("[\x00-\x1f\x7f]")  # a control character in ASCII text
ALNUM = re.compile(r"[^\W_]")  # a letter or digit: a token without one is not counted
WORD_JOINER = re.compile(r"['\u2019-]")  # an apostrophe or hyphen inside a word
MARKED_BREAK = re.compile(rf"(\w+){HYPHEN_MARK}(\w+)")  # a word broken at a marked line end
TOKEN = re.compile(r"\w+(?:[-'\u2019]\w+)*")  # a word of the vocabulary (compounds whole)

# -- heading candidates turned down (parse.pdf_text) ---------------------------------------

CAPTION = re.compile(  # a figure's or table's caption: "Figure 3:", "Table 2.", "Fig. 10."
    r"(?:fig(?:ure)?|tab(?:le)?|listing|algorithm|chart|plate|exhibit|scheme|example)\.?"
    r"\s*[\dIVXivx]+[a-z]?(?:\.\d+)*\s*[:.|\u2014\u2013-]",
    re.I,
)
# A page number alone ("12", "iv", "Page 3 of 9"), once PAGE_NUMBER_DASHES are stripped.
PAGE_NUMBER = re.compile(r"(?:page\s+)?[\divxlc]{1,6}(?:\s*(?:of|/)\s*\d+)?", re.I)
PAGE_NUMBER_DASHES = " -\u2013"  # what may stand around a page number ("- 4 -")
RELATION = re.compile("\\S\\s*[=\u2264\u2265\u2260\u2248\u2208\u21d2\u2192]\\s*\\S")  # a = b
# Operators and relations (not Greek letters: they are words in Greek text).
MATH = frozenset(
    "=<>+*/^_{}|~\u2211\u220f\u222b\u221a\u2264\u2265\u2260\u2248\u00b1\u00d7\u00f7"
    "\u2208\u2209\u2282\u2286\u222a\u2229\u2200\u2203\u2192\u2190\u2194\u21d2\u21d4"
    "\u221e\u2202\u2207"
)
FORMULA_SYMBOLS = 2  # count: a text with this many MATH symbols ...
LETTERS_PER_SYMBOL = 4  # count: ... and at most this many letters per symbol is a formula
FORMULA_LETTER_SHARE = 0.5  # share: a text fewer of whose visible characters are letters
FORMULA_TOKENS = 4  # count: a text of this many tokens, most of one character, is a formula
TOKEN_BRACKETS = "()[],.;:"  # what may stand around a one-character token of a formula
UNREADABLE_WORDS = 2  # count: words a heading candidate needs to be judged on its share
GARBLED_SYMBOLS = 2  # count: this many symbols inside a word with letters garble it
IN_WORD_PUNCTUATION = "'\u2019-."  # punctuation a word may have inside it
# An e-mail address, a space by its @ allowed ("newsham @securenetworks.com",
# "{nygren, ramesh}@akamai.com").
EMAIL = re.compile(r"[\w.+}-]\s?@\s?[\w-]+(?:\.[\w-]+)+")
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
)
_DAYS = "\\d{1,2}(?:\\s*[-\u2013]\\s*\\d{1,2})?"  # "7", "6-8"
# A date alone ("September 1996", "January, 1998", "April 7, 2010", "6-8 October 2014").
DATE = re.compile(rf"(?:{_DAYS}\s+)?{_MONTH},?\s+(?:{_DAYS},?\s+)?\d{{4}}\.?", re.I)
# A line that says where its text goes on or came from: "(Continued on p. 583)",
# "C. A. R. HOARE--cont'd from page 580".
PAGE_REFERENCE = re.compile(
    r"\bcont(?:inued|['\u2019]d|\.)\s+(?:from|on)\s+(?:page|p\.|pg\.)\s*\d+", re.I
)
# A lone mark between two words of a title or heading: a speck of dust OCR read
# ("Replicated . Database"), or a stray dot of the layout.
STRAY_MARK = re.compile("(?<=\\w)\\s+[.,\u00b7\u02d9'`\u2018\u2019]\\s+(?=\\w)")

# -- who wrote it, and where (parse.pdf_bylines) -------------------------------------------

# The marks that send an author's name to its affiliation's footnote, after the name
# ("Gilbert\u2217", "Sitaraman\u2020\u2021", "Lynch2").
AUTHOR_MARK = re.compile("[*\u2217\u2020\u2021\u00a7\u00b6]|(?<=[^\\W\\d_])\\d{1,2}(?!\\w)")
# What stands between the names of an author list: commas, "and", "&", those marks.
NAME_SEPARATOR = re.compile(f"(?:\\s*(?:[,;&]|\\band\\b|{AUTHOR_MARK.pattern}))+\\s*")
NAME_MIN_WORDS = 2  # count: words of a person's name (initials and particles count) ...
NAME_MAX_WORDS = 5  # count: ... at least and at most
INITIALS = re.compile(r"(?:[A-Z]\.-?){1,3}")  # "W.", "A.R.", "J.-"
# Lower-case words inside a name ("Robbert van Renesse").
NAME_PARTICLES = frozenset(
    {"van", "von", "de", "der", "den", "del", "della", "di", "da", "du", "dos", "das", "la"}
    | {"le", "ter", "ten", "bin", "al", "zu", "y"}
)
# What names an institution: a university, a department, a laboratory, a company.
INSTITUTION = re.compile(
    r"\b(?:universit(?:y|ies|\u00e4t|at|\u00e9|e|\u00e0|a|eit)|institut(?:e|o)?|department"
    r"|dept\.|laborator(?:y|ies|ium)|labs?|college|school\s+of|faculty\s+of|inc\.|ltd\.?"
    r"|llc|corp\.|corporation|gmbh)(?!\w)",
    re.I,
)
# E-mail and web addresses, whose lower-case words are often names ("jim.waldo@sun.com",
# "{nygren, ramesh}@akamai.com"): not counted among a document's lower-case words.
ADDRESSES = re.compile(r"\{[^{}]*\}\s?@\s?\S+|\S+\s?@\s?\S+|\S+://\S+|\bwww\.\S+")
POSTAL_CODE = re.compile(r"\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b")  # a US state and ZIP code
# Lower-case words an affiliation's name or address may have ("Department of Computer
# Science and Engineering", "Universit\u00e9 de Paris").
AFFILIATION_LINKS = frozenset(
    {"of", "and", "for", "the", "at", "in", "on", "de", "di", "du", "des", "la", "le", "y"}
    | {"f\u00fcr"}
)
# The heading of an abstract ("Abstract", "ABSTRACT:", "Abstract\u2014Controlled sharing
# ..."): the title on page 1 comes before it.
ABSTRACT = re.compile("abstract(?:\\s*[:.\u2014\u2013-]|\\s*$)", re.I)

# -- rows and columns (parse.pdf_layout) ---------------------------------------------------

ROW_TOLERANCE = 0.45  # share of the taller word's height: centres closer than this share a row
DUPLICATE_OFFSET_EM = 0.2  # em: the same word drawn again closer than this to the side
SEGMENT_GAP_EM = 1.0  # em: a horizontal gap wider than this splits a row into segments
MAX_COLUMN_DEPTH = 3  # count: a column is split into columns again at most this deep
GUTTER_MIN_ROWS = 6  # count: rows a part of a page needs before a gutter is looked for
GUTTER_MIN_WIDTH = 100  # pt: text narrower than this is not split into columns
GUTTER_ZONE_START = 0.2  # share of the text's width: a gutter lies right of this ...
GUTTER_ZONE_END = 0.8  # share of the text's width: ... and left of this
COLUMN_MIN_ROWS = 3  # count: rows with text on each side of a gutter, at least
GUTTER_CROSSING_SHARE = 0.5  # share of the fuller side's rows that may cross a gutter
COLUMN_MIN_WIDTH_SHARE = 0.25  # share of the text's width each column spans, at least
COLUMN_LINE_SHARE = 0.5  # share of its column the median segment spans (lines, not cells)
EDGE_GRAIN = 2  # pt: segments' left edges are counted to this grain for a column's edge
EDGE_NEAR_EM = 3  # em: a segment starting this close to a column's edge starts at it
COLUMN_LINE_FILL = 0.7  # share of its column's width a line of the column's prose spans
WIDE_ROW_CELLS = 3  # count: segments of a row with cells on both sides: a wide table's row

# -- paragraphs and tables (parse.pdf_layout) ----------------------------------------------

TABLE_MIN_ROWS = 2  # count: rows of a run of rows with cells that may be a table
TABLE_ROW_GAP_EM = 2.5  # em: rows of one table are at most this far apart
RULE_MARGIN_EM = 1.5  # em: ruling lines this far above or below a run still belong to it
RULE_BESIDE_EM = 1.0  # em: a vertical ruling line this far beside a run still belongs to it
RULE_SPAN_SHARE = 0.6  # share of a run's width (or height) a ruling line spans, at least
RULES_ACROSS = 2  # count: horizontal ruling lines across a run that make it a table
GRID_MIN_ROWS = 3  # count: without ruling lines, a table needs this many rows on one grid
SHORT_CELL_WORDS = 4  # count: the median cell of an unruled table has at most this many words
GRID_TOLERANCE_EM = 0.5  # em: cell edges this close share a grid column
GRID_COLUMN_SHARE = 0.5  # share of a run's rows (and GRID_COLUMN_ROWS) an edge is on ...
GRID_COLUMN_ROWS = 2  # count: ... to be a grid column
GRID_ALIGNED_SHARE = 0.75  # share of a run's rows with an edge on the grid, at least
PROSE_CELL_WORDS = 5  # count: cells this long (median) are lines of prose, not table cells
PROSE_SIDE_SHARE = 0.5  # share of a run's rows (and PROSE_SIDE_ROWS) a prose column is on
PROSE_SIDE_ROWS = 2  # count: rows a prose column beside a table is on, at least
SIZE_CHANGE_SHARE = 0.05  # share of the font size: lines this much apart in size differ
PITCH_SPREAD = 1.3  # share of the usual line pitch a line may be further below ...
PITCH_SLACK = 0.5  # pt: ... plus this, and still be in the same paragraph
PITCH_FALLBACK_EM = 1.6  # em: the same without a usual pitch (a region of few lines)
PITCH_MIN_EM = 0.8  # em: a line pitch counted for the usual one is at least this ...
PITCH_MAX_EM = 3  # em: ... and at most this
INDENT_EM = 0.8  # em: a line starting this far right of the margin is indented
SHORT_LINE_EM = 1.5  # em: a line ending this far short of the right margin ends short

# -- across pages (parse.pdf_structure) ----------------------------------------------------

FURNITURE_MIN_PAGES = 3  # count: pages a running head or footer repeats on, at least ...
FURNITURE_PAGE_SHARE = 0.25  # share: ... and this share of the pages with text
FURNITURE_EDGE_PIECES = 2  # count: pieces at the top and at the bottom of a page looked at
FURNITURE_MAX_ROWS = 2  # count: lines of a running head, footer or page number, at most
FURNITURE_MAX_CHARS = 120  # count: characters of one, at most
DIGITS = re.compile(r"\d+")  # numbers, which change from page to page in a running head
# A running head that opens or closes with its page's number ("48 2 Concurrency",
# "2.3 Concurrency 49").
RUNNING_HEAD_NUMBER = re.compile(r"(?P<opening>\d{1,4})\s+\S.*|.*\S\s+(?P<closing>\d{1,4})")
NON_WORD = re.compile(r"\W+")  # what texts compared loosely ignore
ENDS_BROKEN = re.compile(f"[^\\W\\d_](?:-|{HYPHEN_MARK})$")  # a text ending in a broken word

# -- headings and title (parse.pdf_structure) ----------------------------------------------

HEADING_RATIO = 1.08  # share of the body size: a heading is set at least this much larger
SMALL_CAPS_RATIO = 0.85  # share of the body size: a body-size line is at least this large
HEADING_MAX_ROWS = 3  # count: lines of a heading, at most
HEADING_MAX_CHARS = 200  # count: characters of a heading, at most
HEADING_MIN_LETTERS = 2  # count: letters of a heading, at least
REPEATED_MIN_PAGES = 3  # count: a short text on this many pages is a running head
OUTLINE_LENGTH_SPREAD = 1.3  # share: a text starting with an outline entry's title may be ...
OUTLINE_LENGTH_SLACK = 5  # count: ... this much longer, plus this many characters
OUTLINE_MIN_TAIL = 3  # count: characters of an entry's title's end a text may be, at least
# A section number before an outline entry's title ("Chapter 3", "2.1", "A", "iv").
OUTLINE_NUMBERING = re.compile(
    r"(?:(?:chapter|section|part|appendix)\s+)?(?:(?:\d{1,3}|[a-z]|[ivxlc]{1,5})\s*){1,5}"
)
# A section's number and title on a line of their own: a Roman numeral, a capital letter
# (a subsection of one) or dotted Arabic numbers, then a title starting with a capital
# letter, without a full stop or a page number at its end.
SECTION_LINE = re.compile(
    r"(?P<number>[IVX]{1,5}|[A-H]|\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+"
    r"(?P<title>[A-Z][^.!?]{0,80}?)(?<![\s\d])"
)
SECTION_WORDS = 12  # count: words of a numbered heading's title, at most
TITLE_RATIO = 1.25  # share of the body size: page 1's title is set at least this large
TITLE_MAX_LINES = 3  # count: pieces a title set on several lines is joined from, at most
TITLE_LINE_SIZE_TOLERANCE = 0.5  # pt: the title's further lines are this close to its size
TITLE_MAX_CHARS = 200  # count: characters of a title joined from lines, at most
TITLE_PAGES = 2  # count: the first heading names the document if it is on these first pages
# A metadata title that names nothing: a placeholder, a file name, an arXiv identifier.
PLACEHOLDER_TITLE = re.compile(
    r"^(untitled|unknown|none|title|document\d*)$|\.(pdf|docx?|dvi|tex|ps|rtf|odt|txt|md)$"
    r"|^arxiv:\S+|^proceedings template\b",
    re.I,
)
WORD_PROCESSOR_PREFIX = "Microsoft Word - "  # what a word processor puts before the title
PDFIUM_REASON = re.compile(r"\(PDFium: ([^)]*)\)")  # PDFium's reason in its error message
