/**
 * SQLite migration 27 (docs/retrieval.md): vector stores, their files and file batches, and the chunks' text in
 * ordinary tables; an FTS5 index over the chunks' text (external content, kept by triggers) for full-text search.
 * The vectors themselves live in sqlite-vec's vec0 tables, one per dimension and metric, created when a store's
 * first vector is written (`sqlite-vector-tables.ts`): a migration runs on connections that may not have the
 * extension loaded (the CLI, another process), and vec0 tables cannot be created without it.
 *
 * `vector_stagings`: files whose chunks are being written a slice per transaction (`sqlite-vector-completion.ts`):
 * their rows are `live = 0` and their vectors carry the staging's `gen`, which every search excludes inside vec0's
 * KNN until the file is completed (AUTOINCREMENT: a gen is never reused, so rows made live stay visible).
 *
 * `vector_store_drops`: stores deleted or expired whose chunks are still being dropped, a slice per transaction (a
 * store's chunks can take seconds to drop; the event loop is served between slices). A drop cut off by a restart is
 * finished by the next `sweepExpired`; searches of a store listed there find nothing meanwhile.
 *
 * A file's counts and bytes are not kept in columns: they are read with GROUP BY over the files (indexes
 * `vector_store_files_counts` and `vector_store_files_batch` cover it), so they are exact by construction.
 */
export const VECTOR_STORES_MIGRATION = `CREATE TABLE vector_stores (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    principal TEXT NOT NULL,
    name TEXT NOT NULL,
    metadata TEXT,
    created_ms INTEGER NOT NULL,
    last_active_ms INTEGER NOT NULL,
    expires_after_days INTEGER,
    expired_ms INTEGER,
    embedding_model TEXT NOT NULL,
    dimensions INTEGER,
    dimensions_declared INTEGER NOT NULL DEFAULT 0 CHECK (dimensions_declared IN (0, 1)),
    metric TEXT NOT NULL CHECK (metric IN ('cosine', 'dot', 'euclidean')),
    index_kind TEXT NOT NULL CHECK (index_kind IN ('flat', 'hnsw')),
    -- Moved on after every committed write of the store's chunks: what each process's hnsw graph is synced to.
    chunks_version INTEGER NOT NULL DEFAULT 0
  ) STRICT;
  CREATE INDEX vector_stores_owner_order ON vector_stores (owner, created_ms, id);
  CREATE INDEX vector_stores_expiring ON vector_stores (last_active_ms)
    WHERE expires_after_days IS NOT NULL AND expired_ms IS NULL;
  CREATE TABLE vector_store_files (
    store_id TEXT NOT NULL,
    file_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    batch_id TEXT,
    filename TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled')),
    error_code TEXT,
    error_message TEXT,
    attributes TEXT NOT NULL,
    max_tokens INTEGER NOT NULL,
    overlap_tokens INTEGER NOT NULL,
    usage_bytes INTEGER NOT NULL DEFAULT 0,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    holder TEXT,
    lease_until_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (store_id, file_id)
  ) STRICT;
  CREATE INDEX vector_store_files_order ON vector_store_files (store_id, created_ms, file_id);
  CREATE INDEX vector_store_files_counts ON vector_store_files (store_id, status, usage_bytes);
  CREATE INDEX vector_store_files_batch ON vector_store_files (batch_id, status) WHERE batch_id IS NOT NULL;
  CREATE INDEX vector_store_files_claimable ON vector_store_files (lease_until_ms) WHERE status = 'in_progress';
  CREATE TABLE vector_file_batches (
    id TEXT PRIMARY KEY,
    store_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    cancelled_ms INTEGER
  ) STRICT;
  CREATE INDEX vector_file_batches_store ON vector_file_batches (store_id);
  CREATE TABLE vector_chunks (
    id INTEGER PRIMARY KEY,
    store_id TEXT NOT NULL,
    file_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    live INTEGER NOT NULL DEFAULT 1
  ) STRICT;
  CREATE UNIQUE INDEX vector_chunks_file ON vector_chunks (store_id, file_id, seq);
  CREATE TABLE vector_stagings (
    gen INTEGER PRIMARY KEY AUTOINCREMENT,
    store_id TEXT NOT NULL,
    file_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    UNIQUE (store_id, file_id)
  ) STRICT;
  CREATE TABLE vector_store_drops (
    store_id TEXT PRIMARY KEY,
    dimensions INTEGER,
    metric TEXT NOT NULL
  ) STRICT;
  CREATE VIRTUAL TABLE vector_chunks_fts USING fts5(
    text, content = 'vector_chunks', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
  );
  CREATE TRIGGER vector_chunks_fts_insert AFTER INSERT ON vector_chunks BEGIN
    INSERT INTO vector_chunks_fts (rowid, text) VALUES (new.id, new.text);
  END;
  CREATE TRIGGER vector_chunks_fts_delete AFTER DELETE ON vector_chunks BEGIN
    INSERT INTO vector_chunks_fts (vector_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
  END;`;
