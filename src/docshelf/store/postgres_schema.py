"""Numbered migrations of the PostgreSQL store.

The same versions and names as ``sqlite_schema`` (a test holds them equal), the
same tables and columns, written for PostgreSQL: pgvector for the vectors and a
stored, weighted ``tsvector`` column with a GIN index for the lexical index.
Each migration is applied together with its row in ``schema_migrations`` in one
transaction, under an advisory lock so concurrent first opens apply it once.
Append new migrations; never edit one that has shipped.

The HNSW index is not here: its dimension is only known when the library is
bound to an embedding model (meta ``embedding_dim``), so the adapter creates it
then (see ``PostgresStore.set_meta`` and docs/postgres.md).
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
        CREATE EXTENSION IF NOT EXISTS vector;

        CREATE TABLE meta (
            key   text PRIMARY KEY,
            value text NOT NULL
        );

        CREATE TABLE sources (
            id       text PRIMARY KEY,
            path     text NOT NULL UNIQUE,
            kind     text NOT NULL CHECK (kind IN ('folder', 'file')),
            host     text NOT NULL,
            added_at double precision NOT NULL
        );

        CREATE TABLE documents (
            id                 text PRIMARY KEY,
            sha256             text NOT NULL UNIQUE,
            title              text NOT NULL,
            path               text NOT NULL,
            rel_path           text NOT NULL,
            source_id          text REFERENCES sources(id) ON DELETE SET NULL,
            source_host        text NOT NULL,
            file_type          text NOT NULL,
            size_bytes         bigint NOT NULL,
            added_at           double precision NOT NULL,
            updated_at         double precision NOT NULL,
            status             text NOT NULL,
            tags               text[] NOT NULL DEFAULT '{}',
            concept_ids        text[] NOT NULL DEFAULT '{}',
            primary_concept_id text,
            concept_source     text,
            taxonomy_version   text,
            document_type      text,
            category           text,
            summary            text,
            page_count         integer,
            pages_without_text integer NOT NULL DEFAULT 0,
            embedding_model    text
        );
        CREATE INDEX documents_source ON documents(source_id);
        CREATE INDEX documents_rel_path ON documents((rel_path COLLATE "C"), (id COLLATE "C"));

        -- The connector's view: which file on disk holds which document.
        CREATE TABLE files (
            path        text PRIMARY KEY,
            source_id   text NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            size        bigint NOT NULL,
            mtime_ns    bigint NOT NULL
        );
        CREATE INDEX files_source ON files(source_id);
        CREATE INDEX files_document ON files(document_id);

        -- Chunk text lives here and only here; vectors refer to chunks by seq.
        -- `fts` is the lexical index of snippets (sections are not indexed):
        -- the header (title and heading path) weighs A, the text B.
        CREATE TABLE chunks (
            seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id           text NOT NULL UNIQUE,
            document_id  text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tier         text NOT NULL CHECK (tier IN ('section', 'snippet')),
            ord          integer NOT NULL,
            parent_id    text,
            prev_id      text,
            next_id      text,
            heading_path text[] NOT NULL DEFAULT '{}',
            page_start   integer,
            page_end     integer,
            char_start   integer NOT NULL,
            char_end     integer NOT NULL,
            token_count  integer NOT NULL,
            header       text NOT NULL,
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

        -- Files that could not be indexed at the last sync, with the reason.
        CREATE TABLE failures (
            path      text PRIMARY KEY,
            source_id text NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            reason    text NOT NULL,
            seen_at   double precision NOT NULL
        );

        -- float32 little-endian bytes, as in the SQLite store.
        CREATE TABLE embedding_cache (
            model     text NOT NULL,
            text_hash text NOT NULL,
            embedding bytea NOT NULL,
            PRIMARY KEY (model, text_hash)
        );
        """,
    ),
    Migration(
        2,
        "users_jobs_events",
        """
        CREATE TABLE users (
            id          text PRIMARY KEY,
            name        text NOT NULL UNIQUE,
            token_hash  text UNIQUE,
            is_admin    boolean NOT NULL DEFAULT false,
            created_at  double precision NOT NULL,
            revoked_at  double precision
        );

        -- A user's right to a document, with that user's own title and tags.
        CREATE TABLE access (
            user_id     text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            title       text,
            tags        text[] NOT NULL DEFAULT '{}',
            added_at    double precision NOT NULL,
            PRIMARY KEY (user_id, document_id)
        );
        CREATE INDEX access_document ON access(document_id);

        ALTER TABLE sources ADD COLUMN user_id text REFERENCES users(id);

        -- The durable record of a document's trip through the pipeline.
        CREATE TABLE jobs (
            document_id      text PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            stage            text NOT NULL,
            status           text NOT NULL
                             CHECK (status IN ('queued', 'running', 'complete', 'failed')),
            attempts         integer NOT NULL DEFAULT 0,
            next_attempt_at  double precision NOT NULL,
            lease_owner      text,
            lease_expires_at double precision,
            last_error       text,
            blob_sha256      text NOT NULL,
            file_type        text NOT NULL,
            name             text NOT NULL,
            created_at       double precision NOT NULL,
            updated_at       double precision NOT NULL
        );
        CREATE INDEX jobs_due ON jobs(status, next_attempt_at);

        -- A stage's output that the next stage reads (e.g. the parsed document).
        CREATE TABLE job_payloads (
            document_id text PRIMARY KEY REFERENCES jobs(document_id) ON DELETE CASCADE,
            stage       text NOT NULL,
            payload     bytea NOT NULL
        );

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
        """,
    ),
    Migration(
        3,
        "links",
        """
        -- [[wikilinks]] by the name they use; resolved against note_names when read.
        CREATE TABLE links (
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord         integer NOT NULL,
            target      text NOT NULL,
            heading     text,
            alias       text,
            embed       boolean NOT NULL DEFAULT false,
            PRIMARY KEY (document_id, ord)
        );
        CREATE INDEX links_target ON links(target);

        -- The names a note answers to: its path and file name ('path'), title and aliases.
        CREATE TABLE note_names (
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            name        text NOT NULL,
            kind        text NOT NULL CHECK (kind IN ('path', 'title')),
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
        ALTER TABLE documents ADD COLUMN enriched_at double precision;
        ALTER TABLE documents ADD COLUMN enrichment_mode text;
        ALTER TABLE documents ADD COLUMN enrich_lease_until double precision;
        CREATE INDEX documents_enrich ON documents(enriched_at) WHERE enriched_at IS NULL;

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
        CREATE TABLE enrichment_cache (
            sha256     text NOT NULL,
            locale     text NOT NULL,
            producer   text NOT NULL,
            data       text NOT NULL,
            created_at double precision NOT NULL,
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
        """
        -- A reindex's next generation, one document at a time (see the SQLite schema).
        CREATE TABLE reindex_staging (
            document_id text PRIMARY KEY,
            target      text NOT NULL,
            data        text NOT NULL,
            vectors     bytea
        );
        """,
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
