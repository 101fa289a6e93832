import type * as Sqlite from './database.js';
import {
  BATCH_COLUMNS,
  FILE_COLUMNS,
  STORE_COLUMNS,
  type BatchRow,
  type CountRow,
  type Cursor,
  type FileRow,
  type StoreRow,
} from '../vector-rows.js';

const DAY_MS = 86_400_000;
/** A store's or a batch's files by status, with their bytes (`countsOf`). */
const COUNTS = 'SELECT status, count(*) AS n, sum(usage_bytes) AS bytes FROM vector_store_files';

/** The statements of stores and their drops. */
function storeStatements(db: Sqlite.Database) {
  return {
    insertStore: db.prepare(
      `INSERT INTO vector_stores (id, owner, principal, name, metadata, created_ms, last_active_ms, expires_after_days,
         embedding_model, dimensions, dimensions_declared, metric, index_kind)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    storeById: db.prepare<[string], StoreRow>(`SELECT ${STORE_COLUMNS} FROM vector_stores WHERE id = ?`),
    getStore: db.prepare<[string, string], StoreRow>(
      `SELECT ${STORE_COLUMNS} FROM vector_stores WHERE id = ? AND owner = ?`,
    ),
    storeCursor: db.prepare<[string, string], Cursor>(
      'SELECT created_ms AS createdMs, id FROM vector_stores WHERE id = ? AND owner = ?',
    ),
    storeCounts: db.prepare<[string], CountRow>(`${COUNTS} WHERE store_id = ? GROUP BY status`),
    updateStore: db.prepare(
      'UPDATE vector_stores SET name = ?, metadata = ?, expires_after_days = ?, embedding_model = ? WHERE id = ?',
    ),
    deleteStore: db.prepare<[string]>('DELETE FROM vector_stores WHERE id = ?'),
    deleteStoreFiles: db.prepare<[string]>('DELETE FROM vector_store_files WHERE store_id = ?'),
    deleteStoreBatches: db.prepare<[string]>('DELETE FROM vector_file_batches WHERE store_id = ?'),
    touchStore: db.prepare<[number, string]>(
      'UPDATE vector_stores SET last_active_ms = max(last_active_ms, ?) WHERE id = ?',
    ),
    expiring: db.prepare<[number, number], StoreRow>(
      `SELECT ${STORE_COLUMNS} FROM vector_stores WHERE expires_after_days IS NOT NULL AND expired_ms IS NULL
         AND last_active_ms + expires_after_days * ${DAY_MS} <= ? LIMIT ?`,
    ),
    startDrop: db.prepare<[string, number | null, string]>(
      'INSERT OR REPLACE INTO vector_store_drops (store_id, dimensions, metric) VALUES (?, ?, ?)',
    ),
    dropOf: db.prepare<[string], { dimensions: number | null; metric: string }>(
      'SELECT dimensions, metric FROM vector_store_drops WHERE store_id = ?',
    ),
    pendingDrops: db.prepare<[number]>('SELECT store_id FROM vector_store_drops LIMIT ?').pluck(),
    endDrop: db.prepare<[string]>('DELETE FROM vector_store_drops WHERE store_id = ?'),
    deleteStoreStagings: db.prepare<[string]>('DELETE FROM vector_stagings WHERE store_id = ?'),
    markExpired: db.prepare<[number, string]>('UPDATE vector_stores SET expired_ms = ? WHERE id = ?'),
    emptyFiles: db.prepare<[string]>(
      `UPDATE vector_store_files SET usage_bytes = 0, chunk_count = 0, holder = NULL, lease_until_ms = 0,
         status = CASE status WHEN 'in_progress' THEN 'cancelled' ELSE status END WHERE store_id = ?`,
    ),
    setDimensions: db.prepare<[number, string]>('UPDATE vector_stores SET dimensions = ? WHERE id = ?'),
  };
}

/** The statements of files, batches, claims and leases. */
function fileStatements(db: Sqlite.Database) {
  return {
    insertBatch: db.prepare<[string, string, string, number]>(
      'INSERT INTO vector_file_batches (id, store_id, owner, created_ms) VALUES (?, ?, ?, ?)',
    ),
    upsertFile: db.prepare(
      `INSERT INTO vector_store_files (store_id, file_id, owner, batch_id, filename, created_ms, status, attributes,
         max_tokens, overlap_tokens) VALUES (?, ?, ?, ?, ?, ?, 'in_progress', ?, ?, ?)
       ON CONFLICT (store_id, file_id) DO UPDATE SET owner = excluded.owner, batch_id = excluded.batch_id,
         filename = excluded.filename, created_ms = excluded.created_ms, status = 'in_progress', error_code = NULL,
         error_message = NULL, attributes = excluded.attributes, max_tokens = excluded.max_tokens,
         overlap_tokens = excluded.overlap_tokens, usage_bytes = 0, chunk_count = 0, holder = NULL, lease_until_ms = 0`,
    ),
    getFile: db.prepare<[string, string, string], FileRow>(
      `SELECT ${FILE_COLUMNS} FROM vector_store_files WHERE store_id = ? AND file_id = ? AND owner = ?`,
    ),
    fileByKey: db.prepare<[string, string], FileRow>(
      `SELECT ${FILE_COLUMNS} FROM vector_store_files WHERE store_id = ? AND file_id = ?`,
    ),
    holderOf: db
      .prepare<[string, string]>('SELECT holder FROM vector_store_files WHERE store_id = ? AND file_id = ?')
      .pluck(),
    updateAttributes: db.prepare<[string, string, string, string]>(
      'UPDATE vector_store_files SET attributes = ? WHERE store_id = ? AND file_id = ? AND owner = ?',
    ),
    deleteFile: db.prepare<[string, string]>('DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ?'),
    getBatch: db.prepare<[string, string, string], BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM vector_file_batches WHERE id = ? AND store_id = ? AND owner = ?`,
    ),
    batchCounts: db.prepare<[string, string], CountRow>(
      `${COUNTS} WHERE batch_id = ? AND store_id = ? GROUP BY status`,
    ),
    cancelBatch: db.prepare<[number, string]>(
      'UPDATE vector_file_batches SET cancelled_ms = coalesce(cancelled_ms, ?) WHERE id = ?',
    ),
    cancelBatchFiles: db.prepare<[string, string]>(
      `UPDATE vector_store_files SET status = 'cancelled', holder = NULL, lease_until_ms = 0
        WHERE batch_id = ? AND store_id = ? AND status = 'in_progress'`,
    ),
    claimable: db.prepare<[number, number], { store_id: string; file_id: string }>(
      `SELECT f.store_id, f.file_id FROM vector_store_files f JOIN vector_stores s ON s.id = f.store_id
        WHERE f.status = 'in_progress' AND f.lease_until_ms <= ? AND s.expired_ms IS NULL
        ORDER BY f.lease_until_ms, f.created_ms LIMIT ?`,
    ),
    lease: db.prepare<[string, number, string, string]>(
      'UPDATE vector_store_files SET holder = ?, lease_until_ms = ? WHERE store_id = ? AND file_id = ?',
    ),
    renew: db.prepare<[number, string, string, string]>(
      `UPDATE vector_store_files SET lease_until_ms = ?
        WHERE store_id = ? AND file_id = ? AND holder = ? AND status = 'in_progress'`,
    ),
    complete: db.prepare<[number, number, string, string]>(
      `UPDATE vector_store_files SET status = 'completed', error_code = NULL, error_message = NULL, usage_bytes = ?,
         chunk_count = ?, holder = NULL, lease_until_ms = 0 WHERE store_id = ? AND file_id = ?`,
    ),
    end: db.prepare<[string, string | null, string | null, string, string, string]>(
      `UPDATE vector_store_files SET status = ?, error_code = ?, error_message = ?, holder = NULL, lease_until_ms = 0
        WHERE store_id = ? AND file_id = ? AND holder = ? AND status = 'in_progress'`,
    ),
    searchable: db.prepare<[string], { file_id: string; filename: string; attributes: string }>(
      "SELECT file_id, filename, attributes FROM vector_store_files WHERE store_id = ? AND status = 'completed'",
    ),
  };
}

/** The embedded vector store's statements (migration 27's tables), prepared once per connection. */
export function prepareVectorStatements(db: Sqlite.Database) {
  return { ...storeStatements(db), ...fileStatements(db) };
}

/** The statements of files written a slice at a time (`sqlite-vector-completion.ts`). */
export function prepareStagingStatements(db: Sqlite.Database) {
  return {
    stagingOf: db.prepare<[string, string], { gen: number; holder: string; dimensions: number }>(
      'SELECT gen, holder, dimensions FROM vector_stagings WHERE store_id = ? AND file_id = ?',
    ),
    stagings: db.prepare<[string]>('SELECT count(*) FROM vector_stagings WHERE store_id = ?').pluck(),
    stage: db.prepare<[string, string, string, number], { gen: number }>(
      `INSERT INTO vector_stagings (store_id, file_id, holder, dimensions) VALUES (?, ?, ?, ?)
       ON CONFLICT (store_id, file_id) DO UPDATE SET holder = excluded.holder RETURNING gen`,
    ),
    restage: db.prepare<[number, string, string]>(
      'UPDATE vector_stagings SET dimensions = ? WHERE store_id = ? AND file_id = ?',
    ),
    unstage: db.prepare<[string, string]>('DELETE FROM vector_stagings WHERE store_id = ? AND file_id = ?'),
    /** Stagings no one works on any more: the file is gone, not in progress, or held by another holder (or none). */
    abandoned: db.prepare<[number], { store_id: string; file_id: string; holder: string }>(
      `SELECT st.store_id, st.file_id, st.holder FROM vector_stagings st
         LEFT JOIN vector_store_files f ON f.store_id = st.store_id AND f.file_id = st.file_id
        WHERE f.status IS NULL OR f.status != 'in_progress' OR f.holder IS NULL OR f.holder != st.holder LIMIT ?`,
    ),
  };
}
