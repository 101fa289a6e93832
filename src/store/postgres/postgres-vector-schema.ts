/**
 * The PostgreSQL vector store's tables (docs/retrieval.md), under the prefix: the columns of SQLite's migration
 * 27 (`../sqlite/vector-migration.ts`), with the vectors in the chunks' `embedding` (bytea, Float32 little-endian)
 * and a generated tsvector with its GIN index for full-text search. `chunks_version` is bumped by every write or
 * delete of a store's chunks: the exact scan's in-memory copy is valid while it is unchanged (`vector-scan.ts`).
 * pgvector's column and indexes are added by `pgvector-index.ts`, only where the server has the extension.
 *
 * A file's `usage_bytes` counts in the stored bytes ledger of its owner (the storage quotas, docs/retrieval.md
 * "Operators") when the files' tables are in this database (`postgres-storage-use.ts`): a trigger moves the ledger
 * in the statement that changes or removes the row and ends the completion's reservation (`vsf:<store>:<file>`),
 * as SQLite's migration 28 does; applied after the files' text, the ledger is counted again with these bytes.
 */
export const vectorSchema = (p: string) => `
CREATE TABLE IF NOT EXISTS ${p}vector_stores (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, principal TEXT NOT NULL, name TEXT NOT NULL, metadata TEXT,
  created_ms BIGINT NOT NULL, last_active_ms BIGINT NOT NULL, expires_after_days INTEGER, expired_ms BIGINT,
  embedding_model TEXT NOT NULL, dimensions INTEGER, dimensions_declared BOOLEAN NOT NULL DEFAULT false, metric TEXT NOT NULL CHECK (metric IN ('cosine', 'dot', 'euclidean')),
  index_kind TEXT NOT NULL CHECK (index_kind IN ('flat', 'hnsw')), chunks_version BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS ${p}vector_stores_owner_order ON ${p}vector_stores (owner, created_ms, id);
CREATE INDEX IF NOT EXISTS ${p}vector_stores_expiring ON ${p}vector_stores (last_active_ms)
  WHERE expires_after_days IS NOT NULL AND expired_ms IS NULL;
CREATE TABLE IF NOT EXISTS ${p}vector_store_files (
  store_id TEXT NOT NULL, file_id TEXT NOT NULL, owner TEXT NOT NULL, batch_id TEXT, filename TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled')),
  error_code TEXT, error_message TEXT, attributes TEXT NOT NULL, max_tokens INTEGER NOT NULL,
  overlap_tokens INTEGER NOT NULL, usage_bytes BIGINT NOT NULL DEFAULT 0, chunk_count INTEGER NOT NULL DEFAULT 0,
  holder TEXT, lease_until_ms BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (store_id, file_id));
CREATE INDEX IF NOT EXISTS ${p}vector_store_files_order ON ${p}vector_store_files (store_id, created_ms, file_id);
CREATE INDEX IF NOT EXISTS ${p}vector_store_files_counts ON ${p}vector_store_files (store_id, status, usage_bytes);
CREATE INDEX IF NOT EXISTS ${p}vector_store_files_batch ON ${p}vector_store_files (batch_id, status)
  WHERE batch_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ${p}vector_store_files_claimable ON ${p}vector_store_files (lease_until_ms)
  WHERE status = 'in_progress';
CREATE TABLE IF NOT EXISTS ${p}vector_file_batches (
  id TEXT PRIMARY KEY, store_id TEXT NOT NULL, owner TEXT NOT NULL, created_ms BIGINT NOT NULL, cancelled_ms BIGINT);
CREATE INDEX IF NOT EXISTS ${p}vector_file_batches_store ON ${p}vector_file_batches (store_id);
CREATE TABLE IF NOT EXISTS ${p}vector_chunks (
  id BIGSERIAL PRIMARY KEY, store_id TEXT NOT NULL, file_id TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL,
  tokens INTEGER NOT NULL, embedding BYTEA NOT NULL,
  tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED);
CREATE UNIQUE INDEX IF NOT EXISTS ${p}vector_chunks_file ON ${p}vector_chunks (store_id, file_id, seq);
CREATE INDEX IF NOT EXISTS ${p}vector_chunks_store ON ${p}vector_chunks (store_id, id);
CREATE INDEX IF NOT EXISTS ${p}vector_chunks_tsv ON ${p}vector_chunks USING GIN (tsv);
CREATE OR REPLACE FUNCTION ${p}vector_files_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF to_regprocedure('${p}storage_add(text,bigint)') IS NULL THEN RETURN NULL; END IF;
  IF TG_OP <> 'INSERT' AND OLD.usage_bytes <> 0 THEN PERFORM ${p}storage_add(OLD.owner, -OLD.usage_bytes); END IF;
  IF TG_OP <> 'DELETE' AND NEW.usage_bytes <> 0 THEN PERFORM ${p}storage_add(NEW.owner, NEW.usage_bytes); END IF;
  IF TG_OP = 'UPDATE' THEN
    EXECUTE 'DELETE FROM ${p}storage_reservations WHERE id = $1' USING 'vsf:' || NEW.store_id || ':' || NEW.file_id;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ${p}vector_files_storage ON ${p}vector_store_files;
CREATE TRIGGER ${p}vector_files_storage AFTER INSERT OR DELETE OR UPDATE OF usage_bytes ON ${p}vector_store_files
  FOR EACH ROW EXECUTE FUNCTION ${p}vector_files_storage();
DO $$ BEGIN
  IF to_regprocedure('${p}storage_recount()') IS NOT NULL THEN PERFORM ${p}storage_recount(); END IF;
END $$;`;
