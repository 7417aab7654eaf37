"""Numbered migrations of the SQLite store.

Each migration is applied together with its row in ``schema_migrations`` in
one transaction, so a crash can never leave a migration applied but
unrecorded (or recorded but not applied). Append new migrations; never edit
one that has shipped. A line ``{name}`` is a table both stores share, written
once in store/sql/schema.py and put in with SQLite's column types.
"""

from __future__ import annotations

from docshelf.store.sql.dialect import SQLITE
from docshelf.store.sql.schema import Migration

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "core",
        SQLITE.ddl(
            """
        {meta}

        {sources}

        {documents}
        CREATE INDEX documents_rel_path ON documents(rel_path);

        {files}

        -- Chunk text lives here and only here; the lexical index and the
        -- vectors refer to chunks by their integer key.
        CREATE TABLE chunks (
            seq          INTEGER PRIMARY KEY,
            {chunk_columns}
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

        {failures}

        CREATE TABLE embedding_cache (
            model     TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            embedding BLOB NOT NULL,
            PRIMARY KEY (model, text_hash)
        ) WITHOUT ROWID;
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        2,
        "users_jobs_events",
        SQLITE.ddl(
            """
        {users}

        {access}

        -- The durable record of a document's trip through the pipeline.
        -- `stage` is where the job is; `status` whether it waits, runs or ended.
        {jobs}

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
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        3,
        "links",
        SQLITE.ddl(
            """
        {links}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        4,
        "enrichment",
        SQLITE.ddl(
            """
        {enrichment_columns}

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
        {enrichment_cache}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        5,
        "vector_log",
        """
        -- Which snippet vectors changed, in commit order, while the sidecar ANN index
        -- is on (meta vector_index = 'ann:<epoch>'; search/ann.py). The index file is a
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
        SQLITE.ddl(
            """
        -- A reindex's next generation, one document at a time: its chunks (JSON) and
        -- snippet vectors, made for one target (model and chunking). Search keeps
        -- answering from the live tables until every document is staged; then one
        -- transaction swaps them in.
        {reindex_staging}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        7,
        "lexical_log",
        """
        -- Which snippets were added or removed, in commit order, while the sidecar
        -- lexical index is on (meta lexical_index = 'tantivy:<epoch>'; search/lexical.py).
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

MIGRATIONS += (
    Migration(
        12,
        "failures_settled",
        """
        -- A failure the file's bytes decide (not a time or memory limit) is kept with the
        -- file as it failed: its size, mtime and fingerprint, what read it (docshelf's
        -- and its parsers' versions, the settings a parse depends on) and when. Sync
        -- passes over the file until one of them changes, and says so.
        ALTER TABLE failures ADD COLUMN size INTEGER;
        ALTER TABLE failures ADD COLUMN mtime_ns INTEGER;
        ALTER TABLE failures ADD COLUMN sha256 TEXT;
        ALTER TABLE failures ADD COLUMN parser TEXT;
        ALTER TABLE failures ADD COLUMN tried_at REAL;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        13,
        "enrich_lease_owner",
        """
        -- Who holds a document's enrichment lease: a token naming the process (owners.py:
        -- host, pid, when it started). A lease whose owner has died on this host is taken
        -- at once, not when its time runs out (issue 41). Leases are few at any time.
        ALTER TABLE documents ADD COLUMN enrich_lease_owner TEXT;
        CREATE INDEX documents_enrich_owner ON documents(enrich_lease_owner)
            WHERE enrich_lease_owner IS NOT NULL;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        14,
        "embed_pending",
        """
        -- Two-phase ingest (issue 39): a document is searchable by its words once written,
        -- and by meaning once its snippets' vectors land. ``embed_pending`` marks one
        -- written without them; a process embedding it holds a lease as enrichment does
        -- (owner: a token naming the process, owners.py). Pending documents are few and
        -- found through the partial index.
        ALTER TABLE documents ADD COLUMN embed_pending INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE documents ADD COLUMN embed_lease_owner TEXT;
        ALTER TABLE documents ADD COLUMN embed_lease_until REAL;
        CREATE INDEX documents_embed_pending ON documents(added_at, id)
            WHERE embed_pending = 1;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        15,
        "notebooks",
        SQLITE.ddl(
            """
        -- Notebooks (issue 40): a user's named sets of sources and documents to search
        -- and ask within, shared read-only with other users. Their rows follow the
        -- sources, documents and users they name (ON DELETE CASCADE).
        {notebooks}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        16,
        "ocr",
        """
        -- OCR of scanned PDF pages and images (issue 40, parse/ocr.py): how many pages of
        -- a document OCR read (``status`` counts them), and each chunk's mean word
        -- confidence of the text OCR read in it (NULL: none of it), which a hit shows.
        ALTER TABLE documents ADD COLUMN ocr_pages INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE chunks ADD COLUMN ocr_confidence REAL;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        17,
        "conversations",
        SQLITE.ddl(
            """
        -- Conversations (issue 37): a user's thread of questions and answers, so that a
        -- follow-up is searched with the turns before it. Rows follow their user.
        {conversations}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        18,
        "repeats",
        SQLITE.ddl(
            """
        -- Blocks repeated across files (issue 36): each document's snippets by key, so
        -- search passes over a footer many files hold. Filled as documents are written
        -- (chunker version 6 asks for a reindex of what was written before).
        {repeats}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        19,
        "chunk_page_breaks",
        """
        -- Where each later page a PDF snippet runs onto starts in it, as JSON text:
        -- [[start, page], ...] (store/rows.py encode_breaks): a search cites a hit at the
        -- page its query's words are on. Chunks written before have none and are cited at
        -- their first page; chunker version 8 asks for a reindex.
        ALTER TABLE chunks ADD COLUMN page_breaks TEXT NOT NULL DEFAULT '[]';
        """,
    ),
)
