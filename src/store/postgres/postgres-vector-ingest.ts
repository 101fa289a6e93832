import type { Pool } from 'pg';
import type {
  CompleteOutcome,
  NewChunk,
  VectorFileError,
  VectorFileRecord,
  VectorStoreRecord,
} from '../vector-contract.js';
import { FILE_COLUMNS, chunkBytes, dimensionOf, fileOf, storeOf, type FileRow } from '../vector-rows.js';
import type { PgvectorIndex } from './pgvector-index.js';
import { inTransaction } from './postgres-blobs.js';
import type { PostgresVectorTables } from './postgres-vector-tables.js';

/**
 * The ingestion side of the PostgreSQL vector store: files claimed under a lease (SKIP LOCKED, so instances
 * claiming at once take different files), and completed in one transaction that locks the store's row, then the
 * file's (the order every writer takes them in), so a file's chunks are written once and whole.
 */
export class PostgresVectorIngest {
  constructor(
    private readonly pool: Pool,
    private readonly p: string,
    private readonly tables: PostgresVectorTables,
    private readonly pgvector: PgvectorIndex | undefined,
  ) {}

  async claimFiles(
    holder: string,
    leaseMs: number,
    limit: number,
    nowMs: number,
  ): Promise<{ file: VectorFileRecord; store: VectorStoreRecord }[]> {
    // SKIP LOCKED: instances claiming at once each take other files, none waits for another's.
    const { rows } = await this.pool.query<FileRow>(
      `UPDATE ${this.p}vector_store_files f SET holder = $1, lease_until_ms = $2
        WHERE (f.store_id, f.file_id) IN (
          SELECT c.store_id, c.file_id FROM ${this.p}vector_store_files c
            JOIN ${this.p}vector_stores s ON s.id = c.store_id
           WHERE c.status = 'in_progress' AND c.lease_until_ms <= $3 AND s.expired_ms IS NULL
           ORDER BY c.lease_until_ms, c.created_ms LIMIT $4 FOR UPDATE OF c SKIP LOCKED)
        RETURNING ${FILE_COLUMNS.split(', ')
          .map((column) => `f.${column}`)
          .join(', ')}`,
      [holder, nowMs + leaseMs, nowMs, limit],
    );
    const claims: { file: VectorFileRecord; store: VectorStoreRecord }[] = [];
    const stores = new Map<string, VectorStoreRecord | undefined>();
    for (const row of rows) {
      if (!stores.has(row.store_id)) {
        const store = await this.tables.storeRow(this.pool, row.store_id);
        stores.set(row.store_id, store ? await this.tables.recordOf(store) : undefined);
      }
      const store = stores.get(row.store_id);
      if (store) claims.push({ file: fileOf(row), store });
    }
    return claims;
  }

  async renewLease(storeId: string, fileId: string, holder: string, leaseMs: number, nowMs: number): Promise<boolean> {
    const renewed = await this.pool.query(
      `UPDATE ${this.p}vector_store_files SET lease_until_ms = $1
        WHERE store_id = $2 AND file_id = $3 AND holder = $4 AND status = 'in_progress'`,
      [nowMs + leaseMs, storeId, fileId, holder],
    );
    return (renewed.rowCount ?? 0) > 0;
  }

  async completeFile(storeId: string, fileId: string, holder: string, chunks: NewChunk[]): Promise<CompleteOutcome> {
    const got = dimensionOf(chunks);
    const outcome = await inTransaction(this.pool, async (client): Promise<CompleteOutcome> => {
      // The store first, then the file: every writer locks in this order (addFiles, completeFile).
      const store = await this.tables.storeRow(client, storeId, undefined, 'FOR UPDATE');
      const file = await client.query<{ status: string; holder: string | null }>(
        `SELECT status, holder FROM ${this.p}vector_store_files WHERE store_id = $1 AND file_id = $2 FOR UPDATE`,
        [storeId, fileId],
      );
      const held = file.rows[0];
      if (!store || !held || held.status !== 'in_progress' || held.holder !== holder) return { kind: 'lost' };
      const expected = store.dimensions === null ? null : Number(store.dimensions);
      if (got !== undefined && expected !== null && expected !== got) {
        const message = `the file's vectors have ${got} dimensions; the vector store's have ${expected}`;
        await this.tables.end(client, { storeId, fileId, holder, status: 'failed', code: 'invalid_file', message });
        return { kind: 'dimension_mismatch', expected, got };
      }
      if (got !== undefined && expected === null)
        await client.query(`UPDATE ${this.p}vector_stores SET dimensions = $1 WHERE id = $2`, [got, storeId]);
      await this.tables.dropFileChunks(client, storeId, fileId);
      await this.tables.insertChunks(client, storeId, fileId, chunks);
      const bytes = chunks.reduce((sum, chunk) => sum + chunkBytes(chunk), 0);
      const { rows } = await client.query<FileRow>(
        `UPDATE ${this.p}vector_store_files SET status = 'completed', error_code = NULL, error_message = NULL,
           usage_bytes = $1, chunk_count = $2, holder = NULL, lease_until_ms = 0 WHERE store_id = $3 AND file_id = $4
         RETURNING ${FILE_COLUMNS}`,
        [bytes, chunks.length, storeId, fileId],
      );
      return { kind: 'completed', file: fileOf(rows[0]!) };
    });
    if (outcome.kind === 'completed' && got !== undefined && this.pgvector) {
      const store = await this.tables.storeRow(this.pool, storeId);
      if (store?.index_kind === 'hnsw') await this.pgvector.ensureIndex(got, storeOf(store, []).metric);
    }
    return outcome;
  }

  async endFile(
    storeId: string,
    fileId: string,
    holder: string,
    status: 'failed' | 'cancelled',
    error: VectorFileError | null,
  ): Promise<boolean> {
    return this.tables.end(this.pool, {
      storeId,
      fileId,
      holder,
      status,
      code: error?.code ?? null,
      message: error?.message ?? null,
    });
  }
}
