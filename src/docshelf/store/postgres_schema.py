"""Numbered migrations of the PostgreSQL store.

The same versions and names as ``sqlite_schema`` (a test holds them equal), the
same tables and columns, written for PostgreSQL: pgvector for the vectors and a
stored, weighted ``tsvector`` column with a GIN index for the lexical index.
Each migration is applied together with its row in ``schema_migrations`` in one
transaction, under an advisory lock so concurrent first opens apply it once.
Append new migrations; never edit one that has shipped. A line ``{name}`` is
a table both stores share, written once in store/sql/schema.py and put in with
PostgreSQL's column types.

The HNSW index is not here: its dimension is only known when the library is
bound to an embedding model (meta ``embedding_dim``), so the adapter creates it
then (see ``PostgresStore.set_meta`` and docs/postgres.md).
"""

from __future__ import annotations

from docshelf.store.sql.dialect import POSTGRES
from docshelf.store.sql.schema import Migration

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "core",
        POSTGRES.ddl(
            """
        CREATE EXTENSION IF NOT EXISTS vector;

        {meta}

        {sources}

        {documents}
        CREATE INDEX documents_rel_path ON documents((rel_path COLLATE "C"), (id COLLATE "C"));

        {files}

        -- Chunk text lives here and only here; vectors refer to chunks by seq.
        -- `fts` is the lexical index of snippets (sections are not indexed):
        -- the header (title and heading path) weighs A, the text B.
        CREATE TABLE chunks (
            seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            {chunk_columns}
            text         text NOT NULL,
            fts          tsvector GENERATED ALWAYS AS (
                CASE WHEN tier = 'snippet' THEN
                    setweight(to_tsvector('english'::regconfig, header), 'A')
                    || setweight(to_tsvector('english'::regconfig, text), 'B')
                END
            ) STORED
        );
        CREATE INDEX chunks_document ON chunks(document_id, tier, ord);
        CREATE INDEX chunks_fts ON chunks USING gin (fts);

        CREATE FUNCTION chunks_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'chunks are immutable: replace the document instead';
        END
        $$;
        CREATE TRIGGER chunks_no_update BEFORE UPDATE OF header, text ON chunks
            FOR EACH ROW EXECUTE FUNCTION chunks_immutable();

        -- Untyped `vector`: the dimension is bound later (meta embedding_dim),
        -- when the HNSW expression index on embedding::vector(dim) is created.
        CREATE TABLE vectors (
            chunk_seq bigint PRIMARY KEY REFERENCES chunks(seq) ON DELETE CASCADE,
            embedding vector NOT NULL
        );

        {failures}

        -- float32 little-endian bytes, as in the SQLite store.
        CREATE TABLE embedding_cache (
            model     text NOT NULL,
            text_hash text NOT NULL,
            embedding bytea NOT NULL,
            PRIMARY KEY (model, text_hash)
        );
        """
        ),
    ),
    Migration(
        2,
        "users_jobs_events",
        POSTGRES.ddl(
            """
        {users}

        {access}

        -- The durable record of a document's trip through the pipeline.
        {jobs}

        -- Stage changes and lifecycle events, in commit order (seq = SSE event id):
        -- writers hold the adapter's writer lock from BEGIN to COMMIT, so a reader
        -- never sees seq n+1 committed before seq n.
        CREATE TABLE events (
            seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            document_id  text NOT NULL,
            user_id      text,
            kind         text NOT NULL,
            stage        text,
            progress_pct integer,
            message      text NOT NULL DEFAULT '',
            created_at   double precision NOT NULL
        );
        CREATE INDEX events_document ON events(document_id, seq);
        """
        ),
    ),
    Migration(
        3,
        "links",
        POSTGRES.ddl(
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
        POSTGRES.ddl(
            """
        {enrichment_columns}

        -- Distillates: a document's key claims, each citing the chunks it came from.
        CREATE TABLE distillates (
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord         integer NOT NULL,
            text        text NOT NULL,
            chunk_ids   text[] NOT NULL,
            mode        text NOT NULL,
            tsv         tsvector
                        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
            PRIMARY KEY (document_id, ord)
        );
        CREATE INDEX distillates_tsv ON distillates USING gin(tsv);

        -- Enrichment results by (fingerprint, locale, producer).
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
        -- The SQLite store's feed for its sidecar ANN index. PostgreSQL searches with
        -- pgvector's HNSW inside the store, so nothing writes here; the table keeps
        -- the two schemas alike.
        CREATE TABLE vector_log (
            seq       bigserial PRIMARY KEY,
            chunk_seq bigint NOT NULL
        );
        """,
    ),
)

MIGRATIONS += (
    Migration(
        6,
        "reindex_staging",
        POSTGRES.ddl(
            """
        -- A reindex's next generation, one document at a time (see the SQLite schema).
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
        -- The SQLite store's feed for its sidecar lexical index. PostgreSQL ranks with its
        -- own full-text search inside the store, so nothing writes here; the table keeps
        -- the two schemas alike.
        CREATE TABLE lexical_log (
            seq       bigserial PRIMARY KEY,
            chunk_seq bigint NOT NULL
        );
        """,
    ),
)

MIGRATIONS += (
    Migration(
        8,
        "source_follow_symlinks",
        """
        -- A source may follow symlinks that lead outside its folder (see the SQLite schema).
        ALTER TABLE sources ADD COLUMN follow_symlinks boolean NOT NULL DEFAULT false;
        """,
    ),
)

# The header split into the lexical index's fields, as store/lexical_fields.py's
# header_fields does (the SQLite schema has the same in its SQL).
_FIRST = "split_part(header, E'\\n', 1)"
_TITLED = "left(header, 6) = '[DOC: '"
_TITLE = f"CASE WHEN {_TITLED} THEN substr({_FIRST}, 7, length({_FIRST}) - 7) ELSE '' END"
_HEADINGS = (
    f"replace(replace(CASE WHEN {_TITLED} THEN substr(header, length({_FIRST}) + 2) "
    "ELSE header END, '[PATH: ', ''), '[CONCEPTS: ', '')"
)

MIGRATIONS += (
    Migration(
        9,
        "fielded_lexical",
        f"""
        -- The lexical index in three fields: title (A), heading path (B), text (C),
        -- weighted at query time by ts_rank_cd (store/lexical_fields.py); the stored
        -- column is computed again for every chunk.
        DROP INDEX chunks_fts;
        ALTER TABLE chunks DROP COLUMN fts;
        ALTER TABLE chunks ADD COLUMN fts tsvector GENERATED ALWAYS AS (
            CASE WHEN tier = 'snippet' THEN
                setweight(to_tsvector('english'::regconfig, {_TITLE}), 'A')
                || setweight(to_tsvector('english'::regconfig, {_HEADINGS}), 'B')
                || setweight(to_tsvector('english'::regconfig, text), 'C')
            END
        ) STORED;
        CREATE INDEX chunks_fts ON chunks USING gin (fts);
        """,
    ),
)

MIGRATIONS += (
    Migration(
        10,
        "chunk_inner_headings",
        """
        -- The places of a snippet's inner headings, as JSON text (see the SQLite schema).
        ALTER TABLE chunks ADD COLUMN inner_headings text NOT NULL DEFAULT '[]';
        """,
    ),
)

MIGRATIONS += (
    Migration(
        11,
        "documents_incomplete",
        """
        -- The documents search may not show (see the SQLite schema): few at any time.
        CREATE INDEX documents_incomplete ON documents(id) WHERE status <> 'complete';
        """,
    ),
)

MIGRATIONS += (
    Migration(
        12,
        "failures_settled",
        """
        -- A failure the file's bytes decide, kept with the file as it failed (see the
        -- SQLite schema).
        ALTER TABLE failures ADD COLUMN size bigint;
        ALTER TABLE failures ADD COLUMN mtime_ns bigint;
        ALTER TABLE failures ADD COLUMN sha256 text;
        ALTER TABLE failures ADD COLUMN parser text;
        ALTER TABLE failures ADD COLUMN tried_at double precision;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        13,
        "enrich_lease_owner",
        """
        -- Who holds a document's enrichment lease (see the SQLite schema).
        ALTER TABLE documents ADD COLUMN enrich_lease_owner text;
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
        -- Documents searchable by their words while their vectors are made (see the
        -- SQLite schema).
        ALTER TABLE documents ADD COLUMN embed_pending integer NOT NULL DEFAULT 0;
        ALTER TABLE documents ADD COLUMN embed_lease_owner text;
        ALTER TABLE documents ADD COLUMN embed_lease_until double precision;
        CREATE INDEX documents_embed_pending ON documents(added_at, id)
            WHERE embed_pending = 1;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        15,
        "notebooks",
        POSTGRES.ddl(
            """
        -- Notebooks (see the SQLite schema).
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
        -- Pages OCR read, and each chunk's OCR confidence (see the SQLite schema).
        ALTER TABLE documents ADD COLUMN ocr_pages integer NOT NULL DEFAULT 0;
        ALTER TABLE chunks ADD COLUMN ocr_confidence double precision;
        """,
    ),
)

MIGRATIONS += (
    Migration(
        17,
        "conversations",
        POSTGRES.ddl(
            """
        -- Conversations (see the SQLite schema).
        {conversations}
        """
        ),
    ),
)

MIGRATIONS += (
    Migration(
        18,
        "repeats",
        POSTGRES.ddl(
            """
        -- Blocks repeated across files (see the SQLite schema).
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
        -- Where each later page a PDF snippet runs onto starts in it (see the SQLite schema).
        ALTER TABLE chunks ADD COLUMN page_breaks text NOT NULL DEFAULT '[]';
        """,
    ),
)
