"""Numbered migrations of the SQLite store.

Each migration is applied together with its row in ``schema_migrations`` in
one transaction, so a crash can never leave a migration applied but
unrecorded (or recorded but not applied). Append new migrations; never edit
one that has shipped.
"""

from __future__ import annotations

from typing import NamedTuple


class Migration(NamedTuple):
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "core",
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        CREATE TABLE sources (
            id       TEXT PRIMARY KEY,
            path     TEXT NOT NULL UNIQUE,
            kind     TEXT NOT NULL CHECK (kind IN ('folder', 'file')),
            host     TEXT NOT NULL,
            added_at REAL NOT NULL
        );

        CREATE TABLE documents (
            id                 TEXT PRIMARY KEY,
            sha256             TEXT NOT NULL UNIQUE,
            title              TEXT NOT NULL,
            path               TEXT NOT NULL,
            rel_path           TEXT NOT NULL,
            source_id          TEXT REFERENCES sources(id) ON DELETE SET NULL,
            source_host        TEXT NOT NULL,
            file_type          TEXT NOT NULL,
            size_bytes         INTEGER NOT NULL,
            added_at           REAL NOT NULL,
            updated_at         REAL NOT NULL,
            status             TEXT NOT NULL,
            tags               TEXT NOT NULL DEFAULT '[]',
            concept_ids        TEXT NOT NULL DEFAULT '[]',
            primary_concept_id TEXT,
            concept_source     TEXT,
            taxonomy_version   TEXT,
            document_type      TEXT,
            category           TEXT,
            summary            TEXT,
            page_count         INTEGER,
            pages_without_text INTEGER NOT NULL DEFAULT 0,
            embedding_model    TEXT
        );
        CREATE INDEX documents_source ON documents(source_id);
        CREATE INDEX documents_rel_path ON documents(rel_path);

        -- The connector's view: which file on disk holds which document.
        CREATE TABLE files (
            path        TEXT PRIMARY KEY,
            source_id   TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            size        INTEGER NOT NULL,
            mtime_ns    INTEGER NOT NULL
        );
        CREATE INDEX files_source ON files(source_id);
        CREATE INDEX files_document ON files(document_id);

        -- Chunk text lives here and only here; the lexical index and the
        -- vectors refer to chunks by their integer key.
        CREATE TABLE chunks (
            seq          INTEGER PRIMARY KEY,
            id           TEXT NOT NULL UNIQUE,
            document_id  TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tier         TEXT NOT NULL CHECK (tier IN ('section', 'snippet')),
            ord          INTEGER NOT NULL,
            parent_id    TEXT,
            prev_id      TEXT,
            next_id      TEXT,
            heading_path TEXT NOT NULL DEFAULT '[]',
            page_start   INTEGER,
            page_end     INTEGER,
            char_start   INTEGER NOT NULL,
            char_end     INTEGER NOT NULL,
            token_count  INTEGER NOT NULL,
            header       TEXT NOT NULL,
            text         TEXT NOT NULL
        );
        CREATE INDEX chunks_document ON chunks(document_id, tier, ord);

        CREATE TABLE vectors (
            chunk_seq INTEGER PRIMARY KEY REFERENCES chunks(seq) ON DELETE CASCADE,
            embedding BLOB NOT NULL
        );

        -- External-content FTS5: the index stores no text of its own. Only
        -- snippets are indexed (search is snippet-first). The header column
        -- carries title and heading path, so bm25() can weight it apart.
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            header, text,
            content='chunks', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.tier = 'snippet'
        BEGIN
            INSERT INTO chunks_fts(rowid, header, text) VALUES (new.seq, new.header, new.text);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.tier = 'snippet'
        BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, header, text)
            VALUES ('delete', old.seq, old.header, old.text);
        END;
        CREATE TRIGGER chunks_no_update BEFORE UPDATE OF header, text ON chunks
        BEGIN
            SELECT RAISE(ABORT, 'chunks are immutable: replace the document instead');
        END;

        -- Files that could not be indexed at the last sync, with the reason.
        CREATE TABLE failures (
            path      TEXT PRIMARY KEY,
            source_id TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            reason    TEXT NOT NULL,
            seen_at   REAL NOT NULL
        );

        CREATE TABLE embedding_cache (
            model     TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            embedding BLOB NOT NULL,
            PRIMARY KEY (model, text_hash)
        ) WITHOUT ROWID;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        2,
        "users_jobs_events",
        """
        CREATE TABLE users (
            id          TEXT PRIMARY KEY,
            name        TEXT NOT NULL UNIQUE,
            token_hash  TEXT UNIQUE,
            is_admin    INTEGER NOT NULL DEFAULT 0,
            created_at  REAL NOT NULL,
            revoked_at  REAL
        );

        -- A user's right to a document, with that user's own title and tags.
        CREATE TABLE access (
            user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            title       TEXT,
            tags        TEXT NOT NULL DEFAULT '[]',
            added_at    REAL NOT NULL,
            PRIMARY KEY (user_id, document_id)
        );
        CREATE INDEX access_document ON access(document_id);

        ALTER TABLE sources ADD COLUMN user_id TEXT REFERENCES users(id);

        -- The durable record of a document's trip through the pipeline.
        -- `stage` is where the job is; `status` whether it waits, runs or ended.
        CREATE TABLE jobs (
            document_id      TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            stage            TEXT NOT NULL,
            status           TEXT NOT NULL
                             CHECK (status IN ('queued', 'running', 'complete', 'failed')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            next_attempt_at  REAL NOT NULL,
            lease_owner      TEXT,
            lease_expires_at REAL,
            last_error       TEXT,
            blob_sha256      TEXT NOT NULL,
            file_type        TEXT NOT NULL,
            name             TEXT NOT NULL,
            created_at       REAL NOT NULL,
            updated_at       REAL NOT NULL
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);

        -- A stage's output that the next stage reads (e.g. the parsed document).
        CREATE TABLE job_payloads (
            document_id TEXT PRIMARY KEY REFERENCES jobs(document_id) ON DELETE CASCADE,
            stage       TEXT NOT NULL,
            payload     BLOB NOT NULL
        );

        -- Stage changes and lifecycle events, in commit order (seq = SSE event id).
        CREATE TABLE events (
            seq          INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id  TEXT NOT NULL,
            user_id      TEXT,  -- set when the event concerns one user only
            kind         TEXT NOT NULL,
            stage        TEXT,
            progress_pct INTEGER,
            message      TEXT NOT NULL DEFAULT '',
            created_at   REAL NOT NULL
        );
        CREATE INDEX events_document ON events(document_id, seq);
        """,
    ),
)

MIGRATIONS += (
    Migration(
        3,
        "links",
        """
        -- [[wikilinks]] by the name they use; resolved against note_names when read.
        CREATE TABLE links (
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord         INTEGER NOT NULL,
            target      TEXT NOT NULL,
            heading     TEXT,
            alias       TEXT,
            embed       INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (document_id, ord)
        );
        CREATE INDEX links_target ON links(target);

        -- The names a note answers to: its path and file name ('path'), title and aliases.
        CREATE TABLE note_names (
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            name        TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('path', 'title')),
            PRIMARY KEY (document_id, name)
        );
        CREATE INDEX note_names_name ON note_names(name);
        """,
    ),
)

MIGRATIONS += (
    Migration(
        4,
        "enrichment",
        """
        -- Enrichment (summary, type, concepts, distillates) follows indexing; NULL
        -- enriched_at means pending. The lease keeps two workers off one document.
        ALTER TABLE documents ADD COLUMN enriched_at REAL;
        ALTER TABLE documents ADD COLUMN enrichment_mode TEXT;
        ALTER TABLE documents ADD COLUMN enrich_lease_until REAL;
        CREATE INDEX documents_enrich ON documents(enriched_at) WHERE enriched_at IS NULL;

        -- Distillates: a document's key claims, each citing the chunks it came from.
        -- Kept apart from the evidence (chunks) and searchable on their own.
        CREATE TABLE distillates (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord         INTEGER NOT NULL,
            text        TEXT NOT NULL,
            chunk_ids   TEXT NOT NULL,  -- JSON list
            mode        TEXT NOT NULL,
            UNIQUE (document_id, ord)
        );
        CREATE VIRTUAL TABLE distillates_fts USING fts5(
            text, content='distillates', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER distillates_fts_insert AFTER INSERT ON distillates BEGIN
            INSERT INTO distillates_fts(rowid, text) VALUES (new.seq, new.text);
        END;
        CREATE TRIGGER distillates_fts_delete AFTER DELETE ON distillates BEGIN
            INSERT INTO distillates_fts(distillates_fts, rowid, text)
            VALUES ('delete', old.seq, old.text);
        END;

        -- Enrichment results by (fingerprint, locale, producer): re-enriching the same
        -- bytes (a re-add, a reindex, another user's copy) costs nothing.
        CREATE TABLE enrichment_cache (
            sha256     TEXT NOT NULL,
            locale     TEXT NOT NULL,
            producer   TEXT NOT NULL,
            data       TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (sha256, locale, producer)
        );
        """,
    ),
)

MIGRATIONS += (
    Migration(
        5,
        "vector_log",
        """
        -- Which snippet vectors changed, in commit order, while the sidecar ANN index
        -- is on (meta vector_index = 'ann:<epoch>'; search/engines/usearch.py). The index file is a
        -- checkpoint at one log position; the entries after it are the delta search
        -- overlays exactly, so a crash between a commit and the index can hide nothing.
        CREATE TABLE vector_log (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_seq INTEGER NOT NULL
        );
        CREATE TRIGGER vectors_log_insert AFTER INSERT ON vectors
        WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'vector_index' AND value LIKE 'ann:%')
        BEGIN
            INSERT INTO vector_log(chunk_seq) VALUES (new.chunk_seq);
        END;
        CREATE TRIGGER vectors_log_update AFTER UPDATE ON vectors
        WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'vector_index' AND value LIKE 'ann:%')
        BEGIN
            INSERT INTO vector_log(chunk_seq) VALUES (new.chunk_seq);
        END;
        CREATE TRIGGER vectors_log_delete AFTER DELETE ON vectors
        WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'vector_index' AND value LIKE 'ann:%')
        BEGIN
            INSERT INTO vector_log(chunk_seq) VALUES (old.chunk_seq);
        END;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        6,
        "reindex_staging",
        """
        -- A reindex's next generation, one document at a time: its chunks (JSON) and
        -- snippet vectors, made for one target (model and chunking). Search keeps
        -- answering from the live tables until every document is staged; then one
        -- transaction swaps them in.
        CREATE TABLE reindex_staging (
            document_id TEXT PRIMARY KEY,
            target      TEXT NOT NULL,
            data        TEXT NOT NULL,
            vectors     BLOB
        );
        """,
    ),
)

MIGRATIONS += (
    Migration(
        7,
        "lexical_log",
        """
        -- Which snippets were added or removed, in commit order, while the sidecar
        -- lexical index is on (meta lexical_index = 'tantivy:<epoch>'; search/engines/tantivy.py).
        -- The index records the log position it holds; until it has caught up with the
        -- log, FTS5 answers, so a crash between a commit and the index hides nothing.
        CREATE TABLE lexical_log (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_seq INTEGER NOT NULL
        );
        CREATE TRIGGER chunks_lexical_log_insert AFTER INSERT ON chunks
        WHEN new.tier = 'snippet'
            AND EXISTS (SELECT 1 FROM meta WHERE key = 'lexical_index' AND value LIKE 'tantivy:%')
        BEGIN
            INSERT INTO lexical_log(chunk_seq) VALUES (new.seq);
        END;
        CREATE TRIGGER chunks_lexical_log_delete AFTER DELETE ON chunks
        WHEN old.tier = 'snippet'
            AND EXISTS (SELECT 1 FROM meta WHERE key = 'lexical_index' AND value LIKE 'tantivy:%')
        BEGIN
            INSERT INTO lexical_log(chunk_seq) VALUES (old.seq);
        END;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        8,
        "source_follow_symlinks",
        """
        -- A source may follow symlinks that lead outside its folder (off by default:
        -- `docshelf add DIR --follow-symlinks` turns it on).
        ALTER TABLE sources ADD COLUMN follow_symlinks INTEGER NOT NULL DEFAULT 0;
        """,
    ),
)

# The header split into the fields of the lexical index (store/lexical_fields.py's
# header_fields, in SQL); `{h}` stands for the header column of the row at hand.
_FIRST = "substr({h}, 1, instr({h} || char(10), char(10)) - 1)"
_IS_TITLED = "substr({h}, 1, 6) = '[DOC: '"
_TITLE = f"CASE WHEN {_IS_TITLED} THEN substr({_FIRST}, 7, length({_FIRST}) - 7) ELSE '' END"
_HEADINGS = (
    f"replace(replace(CASE WHEN {_IS_TITLED} THEN substr({{h}}, length({_FIRST}) + 2) "
    "ELSE {h} END, '[PATH: ', ''), '[CONCEPTS: ', '')"
)


def _title(h: str) -> str:
    return _TITLE.replace("{h}", h)


def _headings(h: str) -> str:
    return _HEADINGS.replace("{h}", h)


MIGRATIONS += (
    Migration(
        9,
        "fielded_lexical",
        f"""
        -- The lexical index in three fields (title, heading path, body) with their own
        -- bm25() weights (store/lexical_fields.py), rebuilt from the chunks. Its
        -- external content is a view that derives the fields from the chunk's own
        -- header, so a delete always removes exactly what was added.
        DROP TRIGGER chunks_fts_insert;
        DROP TRIGGER chunks_fts_delete;
        DROP TABLE chunks_fts;
        CREATE VIEW chunks_lexical AS
            SELECT seq, {_title("header")} AS title, {_headings("header")} AS headings, text
            FROM chunks WHERE tier = 'snippet';
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, headings, text,
            content='chunks_lexical', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.tier = 'snippet'
        BEGIN
            INSERT INTO chunks_fts(rowid, title, headings, text)
            VALUES (new.seq, {_title("new.header")}, {_headings("new.header")}, new.text);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.tier = 'snippet'
        BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, title, headings, text)
            VALUES ('delete', old.seq, {_title("old.header")}, {_headings("old.header")}, old.text);
        END;
        INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
        """,
    ),
)

MIGRATIONS += (
    Migration(
        10,
        "chunk_inner_headings",
        """
        -- The places of the headings a snippet packs after its first content, as JSON
        -- [[start, [heading path]], ...] (store/rows.py encode_inner): a search cites a hit
        -- under the one whose part holds the query's words. Chunks made before are left
        -- without; `docshelf status` says a reindex is due (meta chunker_version).
        ALTER TABLE chunks ADD COLUMN inner_headings TEXT NOT NULL DEFAULT '[]';
        """,
    ),
)

MIGRATIONS += (
    Migration(
        11,
        "documents_incomplete",
        """
        -- The documents search may not show (on their way through the pipeline, or
        -- failed): few at any time, read by every search that the sidecar indexes answer.
        CREATE INDEX documents_incomplete ON documents(id) WHERE status != 'complete';
        """,
    ),
)
