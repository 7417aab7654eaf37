"""A hostile corpus, made at test time, with the outcome expected for each entry.

``build(root, outside)`` writes a folder of good and hostile files under
``root`` (and a few targets in ``outside``, which symlinks in ``root`` point
to) and returns one :class:`Expected` per entry: the file's path as the
report or the store shows it, whether it is indexed, and for a failure a
piece of the reason. Nothing is downloaded; everything is a few hundred KB
at most, so adding the corpus takes seconds.

The huge one-line file is over ``parse.IN_PROCESS_BYTES`` only when the test
lowers that threshold (``HUGE_BYTES`` is its size), so that it goes through
the parser sandbox without costing a 25 MB file's time.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

HUGE_BYTES = 200_000
TOO_LARGE_BYTES = 600_000  # over the 0.5 MB limit the test sets (DOCSHELF_MAX_FILE_MB)
DEPTH = 40  # folders deep


@dataclass(frozen=True)
class Expected:
    path: str  # as shown: absolute, with bytes that are not UTF-8 as \xNN
    indexed: bool
    reason: str = ""  # a piece of the failure reason (when not indexed)
    name: str = ""  # what the entry is, for assertion messages


def _words(n: int) -> str:
    vocab = ["raft", "quorum", "ledger", "harbour", "lantern", "meadow", "copper", "violet"]
    return " ".join(vocab[i % len(vocab)] + str(i % 97) for i in range(n))


def _docx_bomb() -> bytes:
    """A DOCX whose document part inflates 2,000-fold (about 40 MB from 20 KB)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with zf.open("word/document.xml", "w") as part:
            part.write(b'<?xml version="1.0"?><w:document>')
            block = b" " * (1 << 20)
            for _ in range(40):
                part.write(block)
            part.write(b"</w:document>")
    return out.getvalue()


_XML_BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    + "]>\n<html><body><p>&lol9;</p><p>billion laughs</p></body></html>\n"
)


def build(root: Path, outside: Path) -> list[Expected]:
    root.mkdir(parents=True)
    outside.mkdir(parents=True)
    out: list[Expected] = []

    def expect(path: Path | bytes, indexed: bool, reason: str = "", name: str = "") -> None:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        out.append(Expected(shown, indexed, reason, name or shown))

    good = root / "good.md"
    good.write_text("# Good\n\nA plain note about the harbour lantern.\n")
    expect(good, True, name="a good note")
    (root / "plain.txt").write_text("Copper and violet.\n\nA second paragraph.\n")
    expect(root / "plain.txt", True, name="a good text file")

    # -- not regular files: reported from their stat, never opened ----------------------
    os.mkfifo(root / "pipe.md")
    expect(root / "pipe.md", False, "not a regular file", "a FIFO")

    # -- names that are not UTF-8 -----------------------------------------------------------
    bad = os.path.join(os.fsencode(root), b"caf\xe9.md")
    Path(os.fsdecode(bad)).write_text("# Latin-1 name\n\nThe text itself is fine.\n")
    expect(bad, False, "not valid UTF-8", "a Latin-1 file name")
    bad_dir = os.path.join(os.fsencode(root), b"dir\xff")
    os.mkdir(bad_dir)
    Path(os.fsdecode(bad_dir), "inside.md").write_text("# Inside\n\nUnder a bad folder name.\n")
    expect(bad_dir, False, "not valid UTF-8", "a folder name that is not UTF-8")

    # -- symlinks ------------------------------------------------------------------------------
    secret = outside / "secret.md"
    secret.write_text("# Secret\n\nThe outside passphrase is tangerine.\n")
    (outside / "folder").mkdir()
    (outside / "folder" / "elsewhere.md").write_text("# Elsewhere\n\nOutside too.\n")
    (root / "escape.md").symlink_to(secret)
    expect(root / "escape.md", False, "outside the source", "a file symlink leading outside")
    (root / "escape-dir").symlink_to(outside / "folder", target_is_directory=True)
    expect(root / "escape-dir", False, "outside the source", "a folder symlink leading outside")
    (root / "alias.md").symlink_to(good)
    expect(root / "alias.md", True, name="a symlink to a file inside the source")
    (root / "loop").symlink_to(root, target_is_directory=True)
    expect(root / "loop", False, "symlink loop", "a folder symlink to the source itself")
    (root / "a-loop.md").symlink_to(root / "b-loop.md")
    (root / "b-loop.md").symlink_to(root / "a-loop.md")
    expect(root / "a-loop.md", False, "unreadable", "a file symlink loop (a)")
    expect(root / "b-loop.md", False, "unreadable", "a file symlink loop (b)")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    expect(root / "dangling.md", False, "unreadable", "a dangling symlink")

    # -- contents --------------------------------------------------------------------------------
    (root / "empty.md").write_bytes(b"")
    expect(root / "empty.md", False, "empty", "an empty file")
    (root / "blank.txt").write_bytes(b" \n\t\n")
    expect(root / "blank.txt", False, "empty", "a file of whitespace")
    (root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    expect(root / "image.md", False, "binary", "binary bytes named .md")
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    expect(root / "latin1.txt", False, "UTF-8", "text that is not UTF-8")
    huge = root / "huge-line.md"
    huge.write_text("# Huge\n\n" + _words(HUGE_BYTES // 8)[: HUGE_BYTES - 9] + "\n")
    expect(huge, True, name="a huge one-line file (parsed in the sandbox)")
    with (root / "too-large.md").open("wb") as fh:
        fh.truncate(TOO_LARGE_BYTES)
    expect(root / "too-large.md", False, "too large", "a file over the size limit")
    (root / "quotes.md").write_text("> " * 5000 + "deep quote\n\n" + "- " * 5000 + "deep list\n")
    expect(root / "quotes.md", True, name="markdown nested 5,000 deep")
    (root / "escapes.md").write_text("# \x1b]0;owned\x07Title\n\nText \x1b[2J with escapes.\n")
    expect(root / "escapes.md", True, name="terminal escapes in the text")
    (root / "bomb.docx").write_bytes(_docx_bomb())
    expect(root / "bomb.docx", False, "bomb", "a DOCX zip bomb")
    (root / "laughs.html").write_text(_XML_BOMB)
    expect(root / "laughs.html", True, name="an XML entity bomb (entities not expanded)")

    deep = root.joinpath(*[f"d{i}" for i in range(DEPTH)])
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("# Bottom\n\nForty folders down.\n")
    expect(deep / "bottom.md", True, name=f"a note {DEPTH} folders deep")
    return out
