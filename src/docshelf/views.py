"""The JSON shapes of SPEC §9, built from domain values (shared by every face)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docshelf import plaintext

if TYPE_CHECKING:  # the types of what is shown; importing them would slow every command
    from collections.abc import Sequence

    from docshelf.catalogue import DocumentView, Status
    from docshelf.ingest.check import Problem
    from docshelf.ingest.filing import FilingReport
    from docshelf.ingest.uploads import UploadResult
    from docshelf.knowledge.answer import Answer, AnswerCitation
    from docshelf.knowledge.enricher import EnrichResult
    from docshelf.knowledge.manifest import ManifestReport
    from docshelf.model import (
        Chunk,
        Citation,
        Distillate,
        Document,
        Event,
        Failure,
        Hit,
        Job,
        Notebook,
        Source,
        SyncReport,
        User,
    )
    from docshelf.portable import ExportReport, ImportReport
    from docshelf.search.results import ContextResult, SearchResult

JSON = dict[str, Any]


def citation(c: Citation) -> JSON:
    return {
        "label": c.label,
        "path": c.path,
        "title": c.title,
        "heading_path": list(c.heading_path),
        "chunk_index": c.chunk_index,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "anchor": c.anchor,
    }


def scores(h: Hit) -> JSON:
    out: JSON = {"lexical": h.scores.lexical, "vector": h.scores.vector, "fused": h.scores.fused}
    if h.scores.rerank is not None:
        out["rerank"] = h.scores.rerank
    return out


def hit(h: Hit) -> JSON:
    """A hit: its ``text`` as stored, and ``display_text``, that text as a person reads it
    (``plaintext.readable``); ``weak`` when it matches the query neither by its words nor
    by meaning (search/stages/weak.py)."""
    markup = plaintext.markup_of(h.document.file_type, bool(h.chunk.heading_path))
    out: JSON = {
        "chunk_id": h.chunk.id,
        "document_id": h.document.id,
        "score": h.score,
        "scores": scores(h),
        "text": h.chunk.text,
        "display_text": plaintext.readable(h.chunk.text, markup),
        "weak": h.weak,
        "citation": citation(h.citation),
    }
    if h.chunk.ocr_confidence is not None:  # its text (or part of it) read by OCR
        out["ocr"] = ocr(h.chunk)
    if h.placed_by:  # ranked above hits of higher score by these rules
        out["placed_by"] = list(h.placed_by)
    if h.context is not None:
        out["context"] = {
            "mode": "parent-section",
            "chunk_id": h.context.id,
            "heading_path": list(h.context.heading_path),
            "text": h.context.text,
        }
    return out


def search(r: SearchResult) -> JSON:
    """A search result; ``weak`` when every hit is (nothing matches the query well)."""
    out: JSON = {
        "query": r.query,
        "mode": r.mode,
        "hits": [hit(h) for h in r.hits],
        "weak": r.weak,
    }
    if r.facets:
        out["facets"] = r.facets
    if r.notice:
        out["notice"] = r.notice
    if r.backlog is not None:  # a library partly embedded: what the search covered
        documents, pending = r.backlog
        out["coverage"] = {"documents": documents, "by_meaning": documents - pending}
    return out


def ocr(c: Chunk) -> JSON:
    """How a chunk read by OCR (a scanned page, an image) was read: the mean confidence of
    its words (0 to 1), so a citation says its text may hold OCR's errors."""
    return {"confidence": c.ocr_confidence}


def chunk(c: Chunk) -> JSON:
    out: JSON = {
        "chunk_id": c.id,
        "tier": c.tier.value,
        "index": c.index,
        "heading_path": list(c.heading_path),
        "page_start": c.page_start,
        "page_end": c.page_end,
        "parent_id": c.parent_id,
        "prev_id": c.prev_id,
        "next_id": c.next_id,
        "text": c.text,
    }
    if c.ocr_confidence is not None:
        out["ocr"] = ocr(c)
    return out


def context(r: ContextResult) -> JSON:
    """A hit's context: ``text`` as stored, with ``hit`` the span of the hit's own text in
    it (``start``, ``end``: character offsets); ``display``, the same text as a person
    reads it (``plaintext.readable``) in three parts, before the hit, the hit and after
    it, to show the hit in place; ``cut``, whether the section goes on past the text."""
    text = r.text
    start, end = r.hit_span
    parts = (text[:start], text[start:end], text[end:])
    before, at, after = (plaintext.readable(p, r.markup) for p in parts)
    return {
        "chunk_id": r.chunk_id,
        "mode": r.mode,
        "text": text,
        "chunks": [chunk(c) for c in r.chunks],
        "citation": citation(r.citation),
        "hit": {"start": start, "end": end},
        "display": {"before": before.strip(), "hit": at.strip(), "after": after.strip()},
        "cut": {"before": r.cut_before, "after": r.cut_after},
    }


def document(d: Document) -> JSON:
    out = dataclasses.asdict(d)
    out["tags"] = list(d.tags)
    out["concept_ids"] = list(d.concept_ids)
    out.pop("rel_path")
    return out


def document_view(v: DocumentView) -> JSON:
    from docshelf.parse.links import is_attachment

    out = document(v.document)
    out["files"] = v.files
    out["sections"] = [
        {"chunk_id": s.id, "heading_path": list(s.heading_path), "tokens": s.token_count}
        for s in v.sections
    ]
    out["links"] = [
        {
            "target": link.target,
            "heading": link.heading,
            "alias": link.alias,
            "embed": link.embed,
            "attachment": is_attachment(link.target),  # a file, not a note (an image)
            "document_ids": targets,
        }
        for link, targets in v.links
    ]
    out["backlinks"] = [
        {"document_id": d.id, "title": d.title, "path": d.path} for d in v.backlinks
    ]
    out["distillates"] = [distillate(d) for d in v.distillates]
    return out


def distillate(d: Distillate, doc: Document | None = None) -> JSON:
    """A key claim with the chunks it cites (and, in search results, its document)."""
    out: JSON = {"n": d.n, "text": d.text, "chunk_ids": list(d.chunk_ids), "mode": d.mode}
    if doc is not None:
        out["document_id"] = doc.id
        out["title"] = doc.title
        out["path"] = doc.path
    return out


def enrich_result(r: EnrichResult) -> JSON:
    e = r.enrichment
    out: JSON = {
        "document_id": r.document_id,
        "mode": r.mode,
        "cached": r.cached,
        "summary": e.summary,
        "document_type": e.document_type,
        "category": e.category,
        "concept_ids": list(e.concept_ids),
        "concept_source": e.concept_source,
        "distillates": len(e.claims or ()),
        "reembedded": r.reembedded,
        "ms": round(r.ms, 1),
    }
    if e.model:
        out["model"] = e.model
    if r.llm_calls:
        out["llm"] = {
            "calls": r.llm_calls,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
        }
    if r.notice:
        out["notice"] = r.notice
    return out


def manifest_report(r: ManifestReport) -> JSON:
    """``docshelf enrich --from-manifest``: what was written (or would be, ``dry_run``),
    the lines that were not and why, and what maps to no concept of the taxonomy."""
    by = {"sha256": 0, "path": 0}
    for a in r.applied:
        by[a.by] += 1
    return {
        "manifest": r.manifest,
        "dry_run": r.dry_run,
        "lines": r.lines,
        "matched": len(r.applied),
        "matched_by": by,
        "unmatched": [{"line": n, "reason": why} for n, why in r.unmatched],
        "unmapped": [
            {"field": kind, "value": value, "lines": lines}
            for (kind, value), lines in r.unmapped.items()
        ],
        "ignored_fields": dict(r.ignored_fields.most_common()),
        "documents": [
            {
                "line": a.line,
                "document_id": a.document_id,
                "path": a.path,
                "matched_by": a.by,
                "concept_ids": list(a.concept_ids),
                "tags": list(a.tags),
                "reembedded": a.reembedded,
            }
            for a in r.applied
        ],
        "reembedded": r.reembedded,
        "llm_calls": 0,
        "taxonomy_version": r.taxonomy_version,
        "seconds": round(r.seconds, 3),
    }


def source(s: Source) -> JSON:
    return dataclasses.asdict(s)


def report(r: SyncReport) -> JSON:
    return {
        "source_id": r.source_id,
        "counts": {
            "added": r.added,
            "copies": r.copies,
            "updated": r.updated,
            "unchanged": r.unchanged,
            "moved": r.moved,
            "removed": r.removed,
            "failed": r.failed,
        },
        "failures": [failure(f) for f in r.failures],
        # the check after a sync (ingest/check.py): only when it had something to say
        **({"repaired": r.repaired} if r.repaired else {}),
        **({"problems": r.problems} if r.problems else {}),
    }


def failure(f: Failure) -> JSON:
    """A file that could not be read, and why; one a sync passed over (its bytes failed
    before, unchanged since) says when they were last read (``unchanged_since``)."""
    out: JSON = {"path": f.path, "reason": f.reason}
    if f.skipped and f.settled is not None:
        out["unchanged_since"] = f.settled.tried_at
    return out


def status(
    s: Status, problems: Sequence[Problem] | None = None, repaired: Sequence[Problem] | None = None
) -> JSON:
    """The library's state; with ``problems``, what its check found (the texts, and each
    one's kind, paths or ids and hint); with ``repaired``, what a repair did."""
    out: JSON = {
        "home": s.home,
        "database": s.database,
        "embedding_model": s.embedding_model,
        "documents": s.documents,
        "sources": s.sources,
        "chunks": {"section": s.sections, "snippet": s.snippets},
        "embedding_coverage": round(s.embedding_coverage, 4),
        "embedding_pending": s.embedding_pending,
        "by_status": s.by_status,
        "by_file_type": s.by_file_type,
        "pages_without_text": s.pages_without_text,
        "ocr_pages": s.ocr_pages,
        "unmapped_tags": s.unmapped_tags,
        "pending": s.by_status.get("queued", 0),
        "failed": s.failure_count + s.by_status.get("failed", 0),
        "failures": [{"path": f.path, "reason": f.reason} for f in s.failures],
        "vector_index": s.vector_index,
        "lexical_index": s.lexical_index,
        "enrichment": s.enrichment,
        "reindex_due": s.reindex_due,
    }
    if problems is not None:
        out["problems"] = [p.text for p in problems]
        out["problem_details"] = [
            {"kind": p.kind, "problem": p.text, "items": p.items, "hint": p.hint} for p in problems
        ]
    if repaired is not None:
        out["repaired"] = [p.repaired for p in repaired if p.repaired]
    return out


def upload(r: UploadResult) -> JSON:
    return {"document_id": r.document_id, "status": r.status, "fingerprint": r.fingerprint}


def retryable(reason: str | None, *, pdf_password: bool = False) -> bool:
    """Whether running a failed job again can succeed: a failure of the moment can
    (``failures.decided_by``: a time limit, a service unavailable), the bytes' never; an
    encrypted PDF can when ``pdf_password``: the server has a password to try."""
    if reason is None:
        return True
    from docshelf.failures import Decided, decided_by

    decided = decided_by(reason)
    return decided is Decided.MOMENT or (pdf_password and decided is Decided.PASSWORD)


def job(j: Job, *, pdf_password: bool = False) -> JSON:
    return {
        "document_id": j.document_id,
        "stage": j.stage.value,
        "status": j.status,
        "attempts": j.attempts,
        "last_error": j.last_error,
        "next_attempt_at": j.next_attempt_at,
        "updated_at": j.updated_at,
        "retryable": j.status == "failed" and retryable(j.last_error, pdf_password=pdf_password),
    }


def stage_event(e: Event) -> JSON:
    """The data of a stage event on ``/v1/documents/{id}/events``."""
    return {"stage": e.stage, "progress_pct": e.progress_pct, "message": e.message}


def lifecycle_event(e: Event) -> JSON:
    """The data of a ``document.*`` event on ``/v1/events``."""
    return {"document_id": e.document_id, "stage": e.stage, "message": e.message}


def answer(a: Answer) -> JSON:
    out: JSON = {
        "question": a.question,
        "answer": a.answer,
        "mode": a.mode,
        "citations": [answer_citation(c) for c in a.citations],
        "answered": a.answered,
    }
    if a.conversation:
        out["conversation"] = a.conversation
    if a.notice:
        out["notice"] = a.notice
    return out


def answer_citation(c: AnswerCitation) -> JSON:
    return {"n": c.n, "chunk_id": c.chunk_id, "label": c.label, "citation": citation(c.citation)}


def created_user(u: User, token: str) -> JSON:
    """A new user and their bearer token (shown this once)."""
    return {"user_id": u.id, "token": token}


def schema(database: str, version: int) -> JSON:
    return {"database": database, "schema_version": version}


def document_brief(d: Document) -> JSON:
    """A document in a listing of many (MCP ``list_sources``)."""
    return {
        "document_id": d.id,
        "title": d.title,
        "path": d.path,
        "file_type": d.file_type,
        "status": d.status,
        "tags": list(d.tags),
    }


def user(u: User) -> JSON:
    return {
        "user_id": u.id,
        "name": u.name,
        "admin": u.is_admin,
        "revoked": u.revoked_at is not None,
    }


def notebook_filters(pairs: Sequence[tuple[str, str]]) -> JSON:
    """A notebook's filters as a search's ``filters`` object: a tag or concept a list."""
    out: JSON = {}
    for key, value in pairs:
        name = "type" if key == "filetype" else key
        if name in ("tag", "concept"):
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


def notebook(n: Notebook, reader: str) -> JSON:
    """A notebook as ``reader`` (a user id) sees it: read-only unless it is theirs; the
    users it is shared with are its owner's business."""
    own = n.user_id == reader
    return {
        "notebook_id": n.id,
        "name": n.name,
        "owner": n.user_id,
        "read_only": not own,
        "sources": list(n.sources),
        "documents": list(n.documents),
        "filters": notebook_filters(n.filters),
        "shared_with": list(n.shared_with) if own else [],
        "created_at": n.created_at,
        "updated_at": n.updated_at,
    }


def retried(j: Job) -> JSON:
    """A job queued again (``retry``): where it resumes."""
    return {"document_id": j.document_id, "stage": j.stage.value, "status": j.status}


def filing(r: FilingReport) -> JSON:
    return {
        "filed": [{"from": a, "to": b} for a, b in r.filed],
        "failures": [{"path": f.path, "reason": f.reason} for f in r.failures],
        "repaired": r.repaired,
    }


def export_report(r: ExportReport) -> JSON:
    return {
        "path": str(r.path),
        "size_bytes": r.size_bytes,
        "embedding_model": r.embedding_model,
        "embedding_dim": r.embedding_dim,
        "counts": r.counts,
    }


def import_report(r: ImportReport) -> JSON:
    return {
        "path": str(r.path),
        "embedding_model": r.embedding_model,
        "counts": r.counts,
        "added": dict(r.added),
        "skipped": dict(r.skipped),
        "requeued": len(r.requeued),
    }
