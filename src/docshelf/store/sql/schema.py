"""The tables both stores share, written once: each engine's migrations
(store/sqlite_schema.py, store/postgres_schema.py) name them where they create them,
and ``spelled`` puts them in, in that engine's column types (``Dialect.ddl``).

A migration that has shipped must never change, so neither may a table here that one
of them names: a new table or column goes into a new migration, and
tests/test_migrate.py holds every migration's SQL to what it was.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from typing import NamedTuple


class Migration(NamedTuple):
    """One numbered step of a store's schema, applied with its record in one transaction."""

    version: int
    name: str
    sql: str


_SHARED = {
    # -- 1 core ------------------------------------------------------------------------
    "meta": """
        CREATE TABLE meta (
            key   {text} PRIMARY KEY,
            value {text} NOT NULL
        );
    """,
    "sources": """
        CREATE TABLE sources (
            id       {text} PRIMARY KEY,
            path     {text} NOT NULL UNIQUE,
            kind     {text} NOT NULL CHECK (kind IN ('folder', 'file')),
            host     {text} NOT NULL,
            added_at {real} NOT NULL
        );
    """,
    "documents": """
        CREATE TABLE documents (
            id                 {text} PRIMARY KEY,
            sha256             {text} NOT NULL UNIQUE,
            title              {text} NOT NULL,
            path               {text} NOT NULL,
            rel_path           {text} NOT NULL,
            source_id          {text} REFERENCES sources(id) ON DELETE SET NULL,
            source_host        {text} NOT NULL,
            file_type          {text} NOT NULL,
            size_bytes         {bigint} NOT NULL,
            added_at           {real} NOT NULL,
            updated_at         {real} NOT NULL,
            status             {text} NOT NULL,
            tags               {list} NOT NULL DEFAULT {no_items},
            concept_ids        {list} NOT NULL DEFAULT {no_items},
            primary_concept_id {text},
            concept_source     {text},
            taxonomy_version   {text},
            document_type      {text},
            category           {text},
            summary            {text},
            page_count         {int},
            pages_without_text {int} NOT NULL DEFAULT 0,
            embedding_model    {text}
        );
        CREATE INDEX documents_source ON documents(source_id);
    """,
    "files": """
        -- The connector's view: which file on disk holds which document.
        CREATE TABLE files (
            path        {text} PRIMARY KEY,
            source_id   {text} NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            size        {bigint} NOT NULL,
            mtime_ns    {bigint} NOT NULL
        );
        CREATE INDEX files_source ON files(source_id);
        CREATE INDEX files_document ON files(document_id);
    """,
    # between each engine's key column and its text, lexical index and all
    "chunk_columns": """
            id           {text} NOT NULL UNIQUE,
            document_id  {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tier         {text} NOT NULL CHECK (tier IN ('section', 'snippet')),
            ord          {int} NOT NULL,
            parent_id    {text},
            prev_id      {text},
            next_id      {text},
            heading_path {list} NOT NULL DEFAULT {no_items},
            page_start   {int},
            page_end     {int},
            char_start   {int} NOT NULL,
            char_end     {int} NOT NULL,
            token_count  {int} NOT NULL,
            header       {text} NOT NULL,
    """,
    "failures": """
        -- Files that could not be indexed at the last sync, with the reason.
        CREATE TABLE failures (
            path      {text} PRIMARY KEY,
            source_id {text} NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            reason    {text} NOT NULL,
            seen_at   {real} NOT NULL
        );
    """,
    # -- 2 users_jobs_events -----------------------------------------------------------
    "users": """
        CREATE TABLE users (
            id          {text} PRIMARY KEY,
            name        {text} NOT NULL UNIQUE,
            token_hash  {text} UNIQUE,
            is_admin    {bool} NOT NULL DEFAULT {false},
            created_at  {real} NOT NULL,
            revoked_at  {real}
        );
    """,
    "access": """
        -- A user's right to a document, with that user's own title and tags.
        CREATE TABLE access (
            user_id     {text} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            title       {text},
            tags        {list} NOT NULL DEFAULT {no_items},
            added_at    {real} NOT NULL,
            PRIMARY KEY (user_id, document_id)
        );
        CREATE INDEX access_document ON access(document_id);

        ALTER TABLE sources ADD COLUMN user_id {text} REFERENCES users(id);
    """,
    "jobs": """
        CREATE TABLE jobs (
            document_id      {text} PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            stage            {text} NOT NULL,
            status           {text} NOT NULL
                             CHECK (status IN ('queued', 'running', 'complete', 'failed')),
            attempts         {int} NOT NULL DEFAULT 0,
            next_attempt_at  {real} NOT NULL,
            lease_owner      {text},
            lease_expires_at {real},
            last_error       {text},
            blob_sha256      {text} NOT NULL,
            file_type        {text} NOT NULL,
            name             {text} NOT NULL,
            created_at       {real} NOT NULL,
            updated_at       {real} NOT NULL
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);

        -- A stage's output that the next stage reads (e.g. the parsed document).
        CREATE TABLE job_payloads (
            document_id {text} PRIMARY KEY REFERENCES jobs(document_id) ON DELETE CASCADE,
            stage       {text} NOT NULL,
            payload     {blob} NOT NULL
        );
    """,
    # -- 3 links -------------------------------------------------------------------------
    "links": """
        -- [[wikilinks]] by the name they use; resolved against note_names when read.
        CREATE TABLE links (
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord         {int} NOT NULL,
            target      {text} NOT NULL,
            heading     {text},
            alias       {text},
            embed       {bool} NOT NULL DEFAULT {false},
            PRIMARY KEY (document_id, ord)
        );
        CREATE INDEX links_target ON links(target);

        -- The names a note answers to: its path and file name ('path'), title and aliases.
        CREATE TABLE note_names (
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            name        {text} NOT NULL,
            kind        {text} NOT NULL CHECK (kind IN ('path', 'title')),
            PRIMARY KEY (document_id, name)
        );
        CREATE INDEX note_names_name ON note_names(name);
    """,
    # -- 4 enrichment --------------------------------------------------------------------
    "enrichment_columns": """
        -- Enrichment (summary, type, concepts, distillates) follows indexing; NULL
        -- enriched_at means pending. The lease keeps two workers off one document.
        ALTER TABLE documents ADD COLUMN enriched_at {real};
        ALTER TABLE documents ADD COLUMN enrichment_mode {text};
        ALTER TABLE documents ADD COLUMN enrich_lease_until {real};
        CREATE INDEX documents_enrich ON documents(enriched_at) WHERE enriched_at IS NULL;
    """,
    "enrichment_cache": """
        CREATE TABLE enrichment_cache (
            sha256     {text} NOT NULL,
            locale     {text} NOT NULL,
            producer   {text} NOT NULL,
            data       {text} NOT NULL,
            created_at {real} NOT NULL,
            PRIMARY KEY (sha256, locale, producer)
        );
    """,
    # -- 6 reindex_staging -----------------------------------------------------------------
    "reindex_staging": """
        CREATE TABLE reindex_staging (
            document_id {text} PRIMARY KEY,
            target      {text} NOT NULL,
            data        {text} NOT NULL,
            vectors     {blob}
        );
    """,
    # -- 15 notebooks ---------------------------------------------------------------------
    "notebooks": """
        -- A user's named set of sources and documents (model.Notebook); ``filters`` is
        -- a JSON list of [name, value] pairs in the public filter vocabulary.
        CREATE TABLE notebooks (
            id         {text} PRIMARY KEY,
            user_id    {text} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            name       {text} NOT NULL,
            filters    {text} NOT NULL DEFAULT '[]',
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL
        );
        CREATE UNIQUE INDEX notebooks_name ON notebooks(user_id, lower(name));
        CREATE TABLE notebook_sources (
            notebook_id {text} NOT NULL REFERENCES notebooks(id) ON DELETE CASCADE,
            source_id   {text} NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            PRIMARY KEY (notebook_id, source_id)
        );
        CREATE TABLE notebook_documents (
            notebook_id {text} NOT NULL REFERENCES notebooks(id) ON DELETE CASCADE,
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            PRIMARY KEY (notebook_id, document_id)
        );
        CREATE INDEX notebook_documents_document ON notebook_documents(document_id);
        CREATE TABLE notebook_shares (
            notebook_id {text} NOT NULL REFERENCES notebooks(id) ON DELETE CASCADE,
            user_id     {text} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            PRIMARY KEY (notebook_id, user_id)
        );
        CREATE INDEX notebook_shares_user ON notebook_shares(user_id);
    """,
    # -- 17 conversations -----------------------------------------------------------------
    "conversations": """
        -- A user's questions and answers in one thread (knowledge/conversations.py): a
        -- follow-up is searched with the earlier turns. ``asked``: what was searched.
        CREATE TABLE conversations (
            id         {text} PRIMARY KEY,
            user_id    {text} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL
        );
        CREATE TABLE conversation_turns (
            conversation_id {text} NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            n               {int} NOT NULL,
            question        {text} NOT NULL,
            asked           {text} NOT NULL,
            answer          {text} NOT NULL,
            answered        {bool} NOT NULL,
            at              {real} NOT NULL,
            PRIMARY KEY (conversation_id, n)
        );
    """,
    # -- 18 repeats ---------------------------------------------------------------------
    "repeats": """
        -- The blocks each document's snippets hold, by key (plaintext.repeat_key: their
        -- words as read, links and URLs aside). A key many documents hold is a block
        -- repeated across files (a footer, a template's boilerplate): search does not
        -- cite it (search/stages/cite.py).
        CREATE TABLE repeats (
            key         {text} NOT NULL,
            document_id {text} NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            PRIMARY KEY (key, document_id)
        );
        CREATE INDEX repeats_document ON repeats(document_id);
    """,
}
SHARED = {name: textwrap.dedent(sql).strip("\n") for name, sql in _SHARED.items()}

_PLACE = re.compile(r"^( *)\{(\w+)\}$", re.MULTILINE)  # a line that names a shared table
_TYPE = re.compile(r"\{(\w+)\}")


def spelled(script: str, types: Mapping[str, str]) -> str:
    """``script`` with each line that is only ``{name}`` replaced by the shared SQL of
    that name, indented as that line is, ``{text}`` and the like in it by ``types``."""

    def shared(place: re.Match[str]) -> str:
        indent, name = place.groups()
        sql = _TYPE.sub(lambda t: types[t[1]], SHARED[name])
        return "\n".join(indent + line if line else line for line in sql.split("\n"))

    return _PLACE.sub(shared, script)
