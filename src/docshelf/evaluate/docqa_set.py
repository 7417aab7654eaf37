"""The docqa format: questions over real document collections, each answered by one
cited place — a file and its heading, or a PDF and its page.

Layout (``docshelf eval DIR`` recognises it by ``qa.jsonl`` beside ``corpora/``)::

    DIR/qa.jsonl                 {"id", "collection", "question", "kind",
                                  "answers": [{"path", "heading", "page"}], ...}
    DIR/corpora/<collection>/    the files, indexed where they live

This module reads and checks the set and scores cited places the way the set's
reference scorer (``score.py``) does; ``evaluate.docqa`` indexes and runs it.

- A hit's **path** is its document's path relative to the collection folder.
- Its **heading** is the last element of its heading path; headings are compared
  after ``norm_heading`` (marks, link syntax, attribute blocks and pictographs
  removed; case kept).
- Its **page** matches a gold page inside the hit's page range.
- **Duplicates count once**: of several hits on one (path, heading) — or (path, page)
  when the gold is a PDF page — only the first keeps a rank.
- **File level**: the same with one entry per path, heading and page ignored.
"""

from __future__ import annotations

import json
import re
import statistics
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from docshelf.errors import InvalidInput

QA_FILE = "qa.jsonl"
CORPORA = "corpora"
HIT_DEPTHS = (1, 3, 5)  # hit@n reported besides hit@k
_KEYS = {"id", "collection", "question", "answers", "kind"}


@dataclass(frozen=True)
class Gold:
    path: str  # relative to the collection folder, "/" separators
    heading: str | None
    page: int | None  # 1-based physical page of a PDF


@dataclass(frozen=True)
class Question:
    id: str
    collection: str
    question: str
    kind: str
    answers: tuple[Gold, ...]

    @property
    def by_page(self) -> bool:
        """Whether duplicates are judged by (path, page) rather than (path, heading)."""
        return any(a.path.lower().endswith(".pdf") for a in self.answers)


@dataclass(frozen=True)
class DocqaSet:
    name: str
    path: Path
    questions: tuple[Question, ...]
    collections: dict[str, Path]  # the collections the questions use -> their folder


@dataclass(frozen=True)
class Cited:
    """Where one hit points, in the set's terms."""

    path: str
    heading: str | None
    page_start: int | None
    page_end: int | None


def is_docqa(path: str | Path) -> bool:
    root = Path(path).expanduser()
    return (root / QA_FILE).is_file() and (root / CORPORA).is_dir()


def norm_heading(heading: str | None) -> str | None:
    """A heading as the scorer compares it: the last element of a ``A > B`` path, no
    leading ``#``, no trailing ``{#id .class}``, wikilinks and Markdown links replaced by
    their visible text, no `` ` ``/``*``/``_`` marks, no emoji or variation selectors,
    whitespace collapsed. Case is kept."""
    if heading is None:
        return None
    h = unicodedata.normalize("NFC", heading)
    h = h.split(" > ")[-1].strip().lstrip("#").strip()
    h = re.sub(r"\s*\{[^{}]*\}\s*$", "", h)
    h = re.sub(r"\[\[[^\]|]*\|([^\]]*)\]\]", r"\1", h)
    h = re.sub(r"\[\[([^\]]*)\]\]", r"\1", h)
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[`*_]", "", h)
    h = "".join(c for c in h if unicodedata.category(c) != "So" and c not in "\ufe0e\ufe0f\u200d")
    return " ".join(h.split())


def _field(line: int, row: dict[str, Any], key: str, kind: type) -> Any:
    value = row.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) or value == "":
        raise InvalidInput(f"{QA_FILE} line {line}: {key!r} must be a non-empty {kind.__name__}")
    return value


def _gold(line: int, raw: object) -> Gold:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"]:
        raise InvalidInput(f"{QA_FILE} line {line}: each answer needs a 'path'")
    path = raw["path"].replace("\\", "/")
    parts = PurePosixPath(path).parts
    if path.startswith("/") or ".." in parts:
        raise InvalidInput(f"{QA_FILE} line {line}: answer path {path!r} leaves its collection")
    heading, page = raw.get("heading"), raw.get("page")
    if heading is not None and not isinstance(heading, str):
        raise InvalidInput(f"{QA_FILE} line {line}: 'heading' must be text or null")
    if page is not None and (not isinstance(page, int) or isinstance(page, bool) or page < 1):
        raise InvalidInput(f"{QA_FILE} line {line}: 'page' must be a page number (1, 2, …)")
    return Gold(path, heading, page)


def _question(line: int, row: object) -> Question:
    if not isinstance(row, dict):
        raise InvalidInput(f"{QA_FILE} line {line}: expected a JSON object")
    missing = sorted(_KEYS - set(row))
    if missing:
        raise InvalidInput(f"{QA_FILE} line {line}: missing {', '.join(missing)}")
    answers = row["answers"]
    if not isinstance(answers, list) or not answers:
        raise InvalidInput(f"{QA_FILE} line {line}: 'answers' must be a non-empty list")
    return Question(
        id=_field(line, row, "id", str),
        collection=_field(line, row, "collection", str),
        question=_field(line, row, "question", str),
        kind=_field(line, row, "kind", str),
        answers=tuple(_gold(line, a) for a in answers),
    )


def load_docqa(path: str | Path) -> DocqaSet:
    """Read and check a docqa set: every line well formed, ids unique, every collection
    a folder under ``corpora/`` and every gold file present in it."""
    root = Path(path).expanduser()
    if not (root / QA_FILE).is_file():
        raise InvalidInput(f"{root} is not a docqa set: {QA_FILE} is missing")
    if not (root / CORPORA).is_dir():
        raise InvalidInput(f"{root} is not a docqa set: the {CORPORA}/ folder is missing")
    known = sorted(p.name for p in (root / CORPORA).iterdir() if p.is_dir())
    questions: list[Question] = []
    seen: set[str] = set()
    for line, row in _numbered_rows(root / QA_FILE):
        q = _question(line, row)
        if q.id in seen:
            raise InvalidInput(f"{QA_FILE} line {line}: question id {q.id!r} appears twice")
        seen.add(q.id)
        if q.collection not in known:
            raise InvalidInput(
                f"{QA_FILE} line {line}: unknown collection {q.collection!r}; "
                f"{CORPORA}/ holds {', '.join(known) or 'no folders'}"
            )
        for gold in q.answers:
            if not (root / CORPORA / q.collection / gold.path).is_file():
                raise InvalidInput(
                    f"{QA_FILE} line {line}: {q.id}'s answer {gold.path!r} is not a file "
                    f"of collection {q.collection!r}"
                )
        questions.append(q)
    if not questions:
        raise InvalidInput(f"{root / QA_FILE} holds no questions")
    used = dict.fromkeys(q.collection for q in questions)
    return DocqaSet(
        root.resolve().name,
        root,
        tuple(questions),
        {c: root / CORPORA / c for c in used},
    )


def _numbered_rows(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed JSON) for each non-blank line; bad JSON or bad UTF-8 is
    reported with its line."""
    try:
        with path.open("rb") as fh:
            for n, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InvalidInput(f"{QA_FILE} line {n}: not valid UTF-8") from None
                if not line.strip():
                    continue
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"{QA_FILE} line {n}: not JSON ({exc.msg})") from None
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror or exc}") from None


def as_result(cited: Cited, q: Question) -> dict[str, Any]:
    """One hit in the scorer's run-file form ``{"path", "heading", "page"}``: the page is
    the gold page when the hit's page range holds it, else the range's first page."""
    page = cited.page_start
    if cited.page_start is not None:
        end = cited.page_end if cited.page_end is not None else cited.page_start
        for gold in q.answers:
            if gold.path == cited.path and gold.page and cited.page_start <= gold.page <= end:
                page = gold.page
                break
    return {"path": cited.path, "heading": cited.heading, "page": page}


def _key(result: dict[str, Any], by_page: bool) -> tuple[str, object]:
    return (result["path"], result["page"] if by_page else norm_heading(result["heading"]))


def is_hit(result: dict[str, Any], q: Question) -> bool:
    for gold in q.answers:
        if result["path"] != gold.path:
            continue
        if gold.page is not None and result["page"] != gold.page:
            continue
        if gold.heading is not None and norm_heading(result["heading"]) != norm_heading(
            gold.heading
        ):
            continue
        return True
    return False


def ranks(results: Sequence[dict[str, Any]], q: Question, k: int) -> tuple[int | None, int | None]:
    """(rank of the first right place, rank of the first right file) within the top ``k``
    after duplicates are dropped; None when not found."""
    seen: set[tuple[str, object]] = set()
    places = []
    for r in results:
        key = _key(r, q.by_page)
        if key not in seen:
            seen.add(key)
            places.append(r)
    place = next((i for i, r in enumerate(places[:k], 1) if is_hit(r, q)), None)
    paths = list(dict.fromkeys(r["path"] for r in results))
    gold_paths = {a.path for a in q.answers}
    file = next((i for i, p in enumerate(paths[:k], 1) if p in gold_paths), None)
    return place, file


@dataclass(frozen=True)
class DocqaQueryResult:
    query_id: str
    collection: str
    kind: str
    rank: int | None
    file_rank: int | None
    k: int
    ms: float
    results: tuple[dict[str, Any], ...]  # the cited places, best first (scorer's form)

    def _within(self, rank: int | None, n: int) -> float:
        return float(rank is not None and rank <= n)

    @property
    def hit1(self) -> float:
        return self._within(self.rank, 1)

    @property
    def hit3(self) -> float:
        return self._within(self.rank, 3)

    @property
    def hit5(self) -> float:
        return self._within(self.rank, 5)

    @property
    def hitk(self) -> float:
        return self._within(self.rank, self.k)

    @property
    def mrr(self) -> float:
        return 1.0 / self.rank if self.rank is not None and self.rank <= self.k else 0.0

    @property
    def file_hit1(self) -> float:
        return self._within(self.file_rank, 1)

    @property
    def file_hit5(self) -> float:
        return self._within(self.file_rank, 5)

    def as_json(self, k: int) -> dict[str, Any]:
        return {
            "id": self.query_id,
            "collection": self.collection,
            "kind": self.kind,
            "rank": self.rank,
            "file_rank": self.file_rank,
            "ms": round(self.ms, 2),
            "results": list(self.results[:k]),
        }


def metric_names(k: int) -> tuple[tuple[str, str], ...]:
    """(name in the output, attribute of a per-query result)."""
    depths = tuple((f"hit@{n}", f"hit{n}") for n in HIT_DEPTHS if n < k)
    return (
        *depths,
        (f"hit@{k}", "hitk"),
        (f"mrr@{k}", "mrr"),
        ("hit@1-file", "file_hit1"),
        ("hit@5-file", "file_hit5"),
    )


def summarise(rows: Sequence[DocqaQueryResult], k: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for name, attr in metric_names(k):
        out[name] = round(statistics.fmean(getattr(r, attr) for r in rows), 4) if rows else 0.0
    out["no_results"] = sum(not r.results for r in rows)
    return out


def grouped(rows: Sequence[DocqaQueryResult], k: int) -> dict[str, Any]:
    """The summary overall, per collection and per kind (groups in name order)."""
    out: dict[str, Any] = {"all": summarise(rows, k)}
    for field in ("collection", "kind"):
        names = sorted({getattr(r, field) for r in rows})
        out[field] = {n: summarise([r for r in rows if getattr(r, field) == n], k) for n in names}
    return out
