"""Formats through the whole pipeline: folders, uploads, citations with pages,
hostile files reported per file while the rest is indexed."""

from __future__ import annotations

import random
from pathlib import Path

from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf
from tests.fixtures_formats import docx_bytes, encrypted_pdf, paged_pdf, png_bytes

FILL = [f"Line {i} of ordinary prose that fills the page with plain words." for i in range(12)]


def good_pdf() -> bytes:
    return paged_pdf(
        [
            ["Raft keeps a replicated log consistent across servers.", *FILL],
            [],  # a scanned page: no text layer
            ["Leader election starts when a follower's heartbeat timer expires.", *FILL],
        ],
        headings=["Consensus", None, "Elections"],
        title="Raft notes",
    )


def test_a_folder_of_formats_with_hostile_files(shelf: Shelf, tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (root / "raft.pdf").write_bytes(good_pdf())
    (root / "report.docx").write_bytes(docx_bytes())
    (root / "page.html").write_text(
        "<html><head><title>Bees</title></head><body><nav>Home | About</nav>"
        "<main><h1>Bees</h1><p>Honey bees dance to share directions.</p></main></body></html>"
    )
    (root / "guide.rst").write_text("Guide\n=====\n\nInstall it with pip.\n")
    (root / "truncated.pdf").write_bytes(good_pdf()[:300])
    (root / "image.pdf").write_bytes(png_bytes())
    (root / "locked.pdf").write_bytes(encrypted_pdf())
    (root / "noise.docx").write_bytes(random.Random(1).randbytes(4000))
    report = shelf.add(root)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert set(reasons) == {"truncated.pdf", "image.pdf", "locked.pdf", "noise.docx"}
    assert "encrypted" in reasons["locked.pdf"]
    assert "PDF" in reasons["image.pdf"]
    assert report.added == 4
    docs = {d.rel_path: d for d in shelf.documents()}
    pdf = docs["raft.pdf"]
    assert (pdf.page_count, pdf.pages_without_text) == (3, 1)
    assert shelf.status().pages_without_text == 1
    hit = shelf.search("heartbeat timer", mode="lexical").hits[0]
    assert hit.document.rel_path == "raft.pdf"
    assert hit.citation.page_start == 3
    assert hit.citation.label.endswith("(raft.pdf p.3)")
    bees = shelf.search("dance directions", mode="lexical").hits[0]
    assert bees.document.title == "Bees" and "Home" not in bees.chunk.text


def test_uploaded_formats_and_a_hostile_pdf_keep_the_worker_going(shelf: Shelf) -> None:
    user = shelf.create_user("alice")[0].id
    bad = shelf.upload(user, "broken.pdf", b"%PDF-1.7\n garbage " * 10)
    good = shelf.upload(user, "raft.pdf", good_pdf())
    worker = Worker(shelf)
    while worker.run_once():
        pass
    assert shelf.job(bad.document_id).status == "failed"
    assert shelf.job(bad.document_id).last_error
    assert shelf.job(good.document_id).status == "complete"
    view = shelf.document(good.document_id, user)
    assert view.document.pages_without_text == 1
    assert shelf.search("replicated log", user_id=user).hits[0].citation.page_start == 1


# An ELF executable's first bytes: magic, class, data, version, then zero padding.
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00" + bytes(200)


def test_files_with_no_text_fail_with_a_reason_and_repeated_pages_keep_their_text(
    shelf: Shelf, tmp_path: Path
) -> None:
    """Issue 41: a PDF whose every page holds the same short text was "complete" with no
    chunk (the text was taken for a running head); a file that parses to no text at
    all was complete and found by nothing; an executable named .html was indexed."""
    root = tmp_path / "library"
    root.mkdir()
    (root / "repeats.pdf").write_bytes(paged_pdf([["Quarterly figures, unchanged."]] * 40))
    (root / "numbers.pdf").write_bytes(paged_pdf([[str(n)] for n in range(1, 8)]))
    (root / "front-matter.md").write_text("---\ntitle: Only a title\ntags: [empty]\n---\n")
    (root / "program.html").write_bytes(ELF + b"<p>strings the linker left</p>")
    (root / "fine.md").write_text("# Fine\n\nA note with words in it.\n")
    report = shelf.add(root)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert reasons == {
        "numbers.pdf": "no text to index",
        "front-matter.md": "no text to index",
        "program.html": "binary content, not text",
    }
    assert report.added == 2
    docs = {d.rel_path: d for d in shelf.documents()}
    assert set(docs) == {"repeats.pdf", "fine.md"}
    assert all(d.status == "complete" and d.chunk_counts["snippet"] for d in docs.values())
    hit = shelf.search("quarterly figures", mode="lexical").hits[0]
    assert hit.document.rel_path == "repeats.pdf"


def test_an_upload_with_no_text_or_binary_content_fails_for_good_with_the_reason(
    shelf: Shelf,
) -> None:
    user = shelf.create_user("alice")[0].id
    elf = shelf.upload(user, "program.html", ELF)
    bare = shelf.upload(user, "bare.md", b"---\ntitle: nothing below\n---\n")
    repeats = shelf.upload(user, "repeats.pdf", paged_pdf([["Same words each page."]] * 30))
    worker = Worker(shelf)
    while worker.run_once():
        pass
    for up, reason in ((elf, "binary content, not text"), (bare, "no text to index")):
        job = shelf.job(up.document_id)
        assert (job.status, job.last_error) == ("failed", reason)
    assert shelf.job(repeats.document_id).status == "complete"
    assert shelf.search("same words each page", user_id=user).hits
