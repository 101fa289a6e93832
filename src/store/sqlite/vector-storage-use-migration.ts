/**
 * SQLite migration 28 (docs/retrieval.md, "Operators"): a vector store file's `usage_bytes` (its chunks' text and
 * vectors) counts in the stored bytes ledger of migration 24 (`storage_use`) for the store's owner, kept by
 * triggers in the statement that changes the bytes (a completion, an add again, an expiry) or removes the row (a
 * file or a store deleted), as the files' bytes are. A completion also ends the reservation ingestion made under
 * `vsf:<store>:<file>` (`vectorReservationId`): its bytes move from reserved to stored in that statement.
 *
 * The ledger counts them in the database that holds the vector stores: the quotas see them when the files are in
 * the same database (`files.store` and `vector_stores.store` both embedded).
 */
export const VECTOR_STORAGE_USE_SQL = `
CREATE TRIGGER vector_store_files_storage_update AFTER UPDATE OF usage_bytes ON vector_store_files BEGIN
  UPDATE storage_use SET bytes = bytes - OLD.usage_bytes WHERE owner IN ('*', OLD.owner) AND OLD.usage_bytes <> 0;
  INSERT INTO storage_use (owner, bytes)
    SELECT '*', NEW.usage_bytes WHERE NEW.usage_bytes <> 0
    UNION ALL SELECT NEW.owner, NEW.usage_bytes WHERE NEW.usage_bytes <> 0
    ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
  DELETE FROM storage_reservations WHERE id = 'vsf:' || NEW.store_id || ':' || NEW.file_id;
END;
CREATE TRIGGER vector_store_files_storage_delete AFTER DELETE ON vector_store_files WHEN OLD.usage_bytes <> 0 BEGIN
  UPDATE storage_use SET bytes = bytes - OLD.usage_bytes WHERE owner IN ('*', OLD.owner);
END;
CREATE TRIGGER vector_store_files_storage_insert AFTER INSERT ON vector_store_files WHEN NEW.usage_bytes <> 0 BEGIN
  INSERT INTO storage_use (owner, bytes) VALUES ('*', NEW.usage_bytes), (NEW.owner, NEW.usage_bytes)
    ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

INSERT INTO storage_use (owner, bytes)
  SELECT owner, sum(usage_bytes) FROM vector_store_files WHERE usage_bytes <> 0 GROUP BY owner
  ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
INSERT INTO storage_use (owner, bytes)
  SELECT '*', coalesce(sum(usage_bytes), 0) FROM vector_store_files WHERE true
  ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
`;
