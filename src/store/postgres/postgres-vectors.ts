import type { Pool } from 'pg';
import type {
  ChunkHit,
  CompleteOutcome,
  ListPage,
  ListQuery,
  NewChunk,
  NewVectorFile,
  NewVectorStore,
  SearchableFile,
  VectorAttributes,
  VectorCapabilities,
  VectorFileBatchRecord,
  VectorFileError,
  VectorFileRecord,
  VectorFileStatus,
  VectorStorePatch,
  VectorStoreRecord,
  VectorStoreStore,
  OwnerVectorUsage,
  VectorUsage,
} from '../vector-contract.js';
import {
  BATCH_COLUMNS,
  FILE_COLUMNS,
  STORE_COLUMNS,
  batchOf,
  countsOf,
  fileOf,
  type BatchRow,
  type CountRow,
  type Cursor,
  type FileRow,
  type OwnerCountRow,
  type OwnerStoresRow,
  type StoreRow,
  usageOf,
  usageSql,
} from '../vector-rows.js';
import { migrateUnderLock } from './migrate.js';
import { inTransaction } from './postgres-blobs.js';
import { HnswIndexes } from '../hnsw/hnsw-indexes.js';
import { PgvectorIndex } from './pgvector-index.js';
import { PostgresHnswSource } from './postgres-hnsw-source.js';
import { PostgresVectorIngest } from './postgres-vector-ingest.js';
import { PostgresVectorSearch } from './postgres-vector-search.js';
import { PostgresVectorTables } from './postgres-vector-tables.js';
import { vectorSchema } from './postgres-vector-schema.js';
import { VectorScanCache, assertLittleEndian } from './vector-scan.js';

const DAY_MS = 86_400_000;
/** `prefix` names the tables; the bytes the exact scan's cache and the hnsw graphs may hold in this process. */
type OpenOptions = { prefix?: string; cacheBytes?: number; hnswBytes?: number };
/** The exact scan's vectors kept in memory, all stores together (`vector-scan.ts`). */
export const DEFAULT_SCAN_CACHE_BYTES = 256 * 1024 * 1024;

/**
 * The vector store in PostgreSQL (docs/retrieval.md), shared by every instance on the database: the tables of
 * `postgres-vector-schema.ts`, vectors as bytea. Without pgvector (this machine's server) `nearest` is an exact
 * scan in this process (`postgres-vector-search.ts`) for a `flat` store and this process's own HNSW graph for an
 * `hnsw` one (`hnsw-indexes.ts`); with pgvector, an `hnsw` store is searched by pgvector's index.
 * Each write is one transaction; `completeFile` locks the file's row, so a file's chunks are written once.
 */
export class PostgresVectors implements VectorStoreStore {
  readonly capabilities: VectorCapabilities;
  private readonly search: PostgresVectorSearch;
  private readonly tables: PostgresVectorTables;
  private readonly ingest: PostgresVectorIngest;

  private constructor(
    private readonly pool: Pool,
    private readonly p: string,
    private readonly pgvector: PgvectorIndex | undefined,
    options: OpenOptions,
  ) {
    this.capabilities = {
      backend: 'postgres',
      metrics: ['cosine', 'dot', 'euclidean'],
      indexes: ['flat', 'hnsw'],
    };
    const graphs = new HnswIndexes(new PostgresHnswSource(pool, p), { maxBytes: options.hnswBytes });
    const cache = new VectorScanCache(options.cacheBytes ?? DEFAULT_SCAN_CACHE_BYTES);
    this.search = new PostgresVectorSearch(pool, p, cache, pgvector, graphs);
    this.tables = new PostgresVectorTables(pool, p, pgvector);
    this.ingest = new PostgresVectorIngest(pool, p, this.tables, pgvector);
  }

  /** Opens (creating its tables once) the store at `url`; `prefix` names the tables (tests may use their own). */
  static async open(url: string, options: OpenOptions = {}): Promise<PostgresVectors> {
    const prefix = options.prefix ?? 'gw_';
    if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) throw new RangeError(`invalid table prefix ${prefix}`);
    assertLittleEndian();
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, max: 8 });
    pool.on('error', () => {
      // An idle client lost its connection: the next query reconnects (and reports its own error).
    });
    try {
      await migrateUnderLock(pool, vectorSchema(prefix));
      const pgvector = await PgvectorIndex.open(pool, `${prefix}vector_chunks`);
      return new PostgresVectors(pool, prefix, pgvector, options);
    } catch (error) {
      await pool.end();
      throw error;
    }
  }

  /** The exact scan's cache, for tests and metrics. */
  get scanCache(): VectorScanCache {
    return this.search.cache;
  }

  async createStore(store: NewVectorStore): Promise<VectorStoreRecord> {
    if (!this.capabilities.metrics.includes(store.metric) || !this.capabilities.indexes.includes(store.index))
      throw new RangeError(`this PostgreSQL vector store cannot build ${store.index} / ${store.metric}`);
    await this.pool.query(
      `INSERT INTO ${this.p}vector_stores (id, owner, principal, name, metadata, created_ms, last_active_ms,
         expires_after_days, embedding_model, dimensions, dimensions_declared, metric, index_kind)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        store.id,
        store.owner,
        store.principal,
        store.name,
        store.metadata === null ? null : JSON.stringify(store.metadata),
        store.createdMs,
        store.lastActiveMs,
        store.expiresAfterDays,
        store.embeddingModel,
        store.dimensions,
        store.dimensions !== null,
        store.metric,
        store.index,
      ],
    );
    return { ...store, dimensionsDeclared: store.dimensions !== null, expiredMs: null, ...countsOf([]) };
  }

  async getStore(owner: string, id: string): Promise<VectorStoreRecord | undefined> {
    const row = await this.tables.storeRow(this.pool, id, owner);
    return row ? this.tables.recordOf(row) : undefined;
  }

  async listStores(owner: string, query: ListQuery): Promise<ListPage<VectorStoreRecord>> {
    const cursor = async (id?: string): Promise<Cursor | undefined> => {
      const row = id === undefined ? undefined : await this.tables.storeRow(this.pool, id, owner);
      return row ? { createdMs: Number(row.created_ms), id: row.id } : undefined;
    };
    const page = await this.tables.page<StoreRow>({
      table: 'vector_stores',
      columns: STORE_COLUMNS,
      idColumn: 'id',
      where: ['owner = $1'],
      args: [owner],
      query,
      cursors: { after: await cursor(query.after), before: await cursor(query.before) },
    });
    return { data: await Promise.all(page.data.map((row) => this.tables.recordOf(row))), hasMore: page.hasMore };
  }

  async updateStore(
    owner: string,
    id: string,
    patch: VectorStorePatch,
  ): Promise<VectorStoreRecord | undefined | 'holds_vectors'> {
    const outcome = await inTransaction(this.pool, async (client) => {
      const row = await this.tables.storeRow(client, id, owner, 'FOR UPDATE');
      if (!row) return undefined;
      const model = patch.embeddingModel ?? row.embedding_model;
      if (model !== row.embedding_model) {
        const held = await client.query(`SELECT 1 FROM ${this.p}vector_chunks WHERE store_id = $1 LIMIT 1`, [id]);
        if (held.rows.length > 0) return 'holds_vectors' as const;
      }
      await client.query(
        `UPDATE ${this.p}vector_stores SET name = $1, metadata = $2, expires_after_days = $3, embedding_model = $4
          WHERE id = $5`,
        [
          patch.name ?? row.name,
          patch.metadata === undefined ? row.metadata : patch.metadata === null ? null : JSON.stringify(patch.metadata),
          patch.expiresAfterDays === undefined ? row.expires_after_days : patch.expiresAfterDays,
          model,
          id,
        ],
      );
      return 'updated' as const;
    });
    return outcome === 'updated' ? this.getStore(owner, id) : outcome;
  }

  async deleteStore(owner: string, id: string): Promise<boolean> {
    const deleted = await inTransaction(this.pool, async (client) => {
      const removed = await client.query(`DELETE FROM ${this.p}vector_stores WHERE id = $1 AND owner = $2`, [
        id,
        owner,
      ]);
      if ((removed.rowCount ?? 0) === 0) return false;
      await client.query(`DELETE FROM ${this.p}vector_chunks WHERE store_id = $1`, [id]);
      await client.query(`DELETE FROM ${this.p}vector_store_files WHERE store_id = $1`, [id]);
      await client.query(`DELETE FROM ${this.p}vector_file_batches WHERE store_id = $1`, [id]);
      return true;
    });
    if (deleted) this.forget(id);
    return deleted;
  }

  async touchStore(id: string, nowMs: number): Promise<void> {
    // SKIP LOCKED: a search never waits for a file being completed (which holds the store's row); missing one
    // touch of a store being written to moves an expiry counted in days by nothing that matters.
    await this.pool.query(
      `UPDATE ${this.p}vector_stores SET last_active_ms = greatest(last_active_ms, $1)
        WHERE id = (SELECT id FROM ${this.p}vector_stores WHERE id = $2 FOR NO KEY UPDATE SKIP LOCKED)`,
      [nowMs, id],
    );
  }

  async sweepExpired(nowMs: number, limit: number): Promise<number> {
    const ids = await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `UPDATE ${this.p}vector_stores SET expired_ms = $1, chunks_version = chunks_version + 1
          WHERE id IN (SELECT id FROM ${this.p}vector_stores WHERE expires_after_days IS NOT NULL
                         AND expired_ms IS NULL AND last_active_ms + expires_after_days * ${DAY_MS}::bigint <= $1
                       LIMIT $2 FOR UPDATE SKIP LOCKED)
          RETURNING id`,
        [nowMs, limit],
      );
      const expired = rows.map((row) => row.id);
      if (expired.length === 0) return expired;
      await client.query(`DELETE FROM ${this.p}vector_chunks WHERE store_id = ANY($1::text[])`, [expired]);
      // No one embeds for an expired store: its files still in progress are cancelled, the others hold no chunks.
      await client.query(
        `UPDATE ${this.p}vector_store_files SET usage_bytes = 0, chunk_count = 0, holder = NULL, lease_until_ms = 0,
           status = CASE status WHEN 'in_progress' THEN 'cancelled' ELSE status END WHERE store_id = ANY($1::text[])`,
        [expired],
      );
      return expired;
    });
    for (const id of ids) this.forget(id);
    return ids.length;
  }

  async addFiles(
    files: NewVectorFile[],
    batch?: Omit<VectorFileBatchRecord, 'fileCounts' | 'cancelledMs'>,
  ): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      if (batch)
        await client.query(
          `INSERT INTO ${this.p}vector_file_batches (id, store_id, owner, created_ms) VALUES ($1, $2, $3, $4)`,
          [batch.id, batch.storeId, batch.owner, batch.createdMs],
        );
      const locked = new Set<string>();
      for (const file of files) {
        // The store's row first (as completeFile takes them), once per store.
        if (!locked.has(file.storeId)) {
          const store = await client.query(`SELECT 1 FROM ${this.p}vector_stores WHERE id = $1 FOR UPDATE`, [
            file.storeId,
          ]);
          if (store.rows.length === 0) throw new RangeError(`no vector store ${file.storeId}`);
          locked.add(file.storeId);
        }
        await this.tables.dropFileChunks(client, file.storeId, file.fileId);
        await client.query(
          `INSERT INTO ${this.p}vector_store_files (store_id, file_id, owner, batch_id, filename, created_ms, status,
             attributes, max_tokens, overlap_tokens) VALUES ($1, $2, $3, $4, $5, $6, 'in_progress', $7, $8, $9)
           ON CONFLICT (store_id, file_id) DO UPDATE SET owner = excluded.owner, batch_id = excluded.batch_id,
             filename = excluded.filename, created_ms = excluded.created_ms, status = 'in_progress', error_code = NULL,
             error_message = NULL, attributes = excluded.attributes, max_tokens = excluded.max_tokens,
             overlap_tokens = excluded.overlap_tokens, usage_bytes = 0, chunk_count = 0, holder = NULL,
             lease_until_ms = 0`,
          [
            file.storeId,
            file.fileId,
            file.owner,
            file.batchId ?? batch?.id ?? null,
            file.filename,
            file.createdMs,
            JSON.stringify(file.attributes),
            file.chunking.maxTokens,
            file.chunking.overlapTokens,
          ],
        );
      }
    });
  }

  async getFile(owner: string, storeId: string, fileId: string): Promise<VectorFileRecord | undefined> {
    const row = await this.tables.fileRow(this.pool, storeId, fileId, owner);
    return row ? fileOf(row) : undefined;
  }

  async listFiles(
    owner: string,
    storeId: string,
    query: ListQuery & { status?: VectorFileStatus; batchId?: string },
  ): Promise<ListPage<VectorFileRecord>> {
    const cursor = async (id?: string): Promise<Cursor | undefined> => {
      const row = id === undefined ? undefined : await this.tables.fileRow(this.pool, storeId, id, owner);
      return row ? { createdMs: Number(row.created_ms), id: row.file_id } : undefined;
    };
    const where = ['store_id = $1', 'owner = $2'];
    const args: unknown[] = [storeId, owner];
    if (query.status !== undefined) where.push(`status = $${args.push(query.status)}`);
    if (query.batchId !== undefined) where.push(`batch_id = $${args.push(query.batchId)}`);
    const page = await this.tables.page<FileRow>({
      table: 'vector_store_files',
      columns: FILE_COLUMNS,
      idColumn: 'file_id',
      where,
      args,
      query,
      cursors: { after: await cursor(query.after), before: await cursor(query.before) },
    });
    return { data: page.data.map(fileOf), hasMore: page.hasMore };
  }

  async updateAttributes(
    owner: string,
    storeId: string,
    fileId: string,
    attributes: VectorAttributes,
  ): Promise<VectorFileRecord | undefined> {
    const { rows } = await this.pool.query<FileRow>(
      `UPDATE ${this.p}vector_store_files SET attributes = $1 WHERE store_id = $2 AND file_id = $3 AND owner = $4
        RETURNING ${FILE_COLUMNS}`,
      [JSON.stringify(attributes), storeId, fileId, owner],
    );
    return rows[0] ? fileOf(rows[0]) : undefined;
  }

  async deleteFile(owner: string, storeId: string, fileId: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      // The store's row first, as completeFile takes them (the chunks' version is bumped on it).
      await client.query(`SELECT 1 FROM ${this.p}vector_stores WHERE id = $1 FOR UPDATE`, [storeId]);
      const removed = await client.query(
        `DELETE FROM ${this.p}vector_store_files WHERE store_id = $1 AND file_id = $2 AND owner = $3`,
        [storeId, fileId, owner],
      );
      if ((removed.rowCount ?? 0) === 0) return false;
      await this.tables.dropFileChunks(client, storeId, fileId);
      return true;
    });
  }

  async fileChunks(owner: string, storeId: string, fileId: string): Promise<string[] | undefined> {
    if (!(await this.tables.fileRow(this.pool, storeId, fileId, owner))) return undefined;
    const { rows } = await this.pool.query<{ text: string }>(
      `SELECT text FROM ${this.p}vector_chunks WHERE store_id = $1 AND file_id = $2 ORDER BY seq`,
      [storeId, fileId],
    );
    return rows.map((row) => row.text);
  }

  async getBatch(owner: string, storeId: string, batchId: string): Promise<VectorFileBatchRecord | undefined> {
    const { rows } = await this.pool.query<BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM ${this.p}vector_file_batches WHERE id = $1 AND store_id = $2 AND owner = $3`,
      [batchId, storeId, owner],
    );
    if (!rows[0]) return undefined;
    const counts = await this.pool.query<CountRow>(
      `SELECT status, count(*) AS n, sum(usage_bytes) AS bytes FROM ${this.p}vector_store_files
        WHERE batch_id = $1 AND store_id = $2 GROUP BY status`,
      [batchId, storeId],
    );
    return batchOf(rows[0], counts.rows);
  }

  async cancelBatch(
    owner: string,
    storeId: string,
    batchId: string,
    nowMs: number,
  ): Promise<VectorFileBatchRecord | undefined> {
    const found = await inTransaction(this.pool, async (client) => {
      const batch = await client.query(
        `UPDATE ${this.p}vector_file_batches SET cancelled_ms = coalesce(cancelled_ms, $1)
          WHERE id = $2 AND store_id = $3 AND owner = $4`,
        [nowMs, batchId, storeId, owner],
      );
      if ((batch.rowCount ?? 0) === 0) return false;
      await client.query(
        `UPDATE ${this.p}vector_store_files SET status = 'cancelled', holder = NULL, lease_until_ms = 0
          WHERE batch_id = $1 AND store_id = $2 AND status = 'in_progress'`,
        [batchId, storeId],
      );
      return true;
    });
    return found ? this.getBatch(owner, storeId, batchId) : undefined;
  }

  claimFiles(
    holder: string,
    leaseMs: number,
    limit: number,
    nowMs: number,
  ): Promise<{ file: VectorFileRecord; store: VectorStoreRecord }[]> {
    return this.ingest.claimFiles(holder, leaseMs, limit, nowMs);
  }

  renewLease(storeId: string, fileId: string, holder: string, leaseMs: number, nowMs: number): Promise<boolean> {
    return this.ingest.renewLease(storeId, fileId, holder, leaseMs, nowMs);
  }

  completeFile(storeId: string, fileId: string, holder: string, chunks: NewChunk[]): Promise<CompleteOutcome> {
    return this.ingest.completeFile(storeId, fileId, holder, chunks);
  }

  endFile(
    storeId: string,
    fileId: string,
    holder: string,
    status: 'failed' | 'cancelled',
    error: VectorFileError | null,
  ): Promise<boolean> {
    return this.ingest.endFile(storeId, fileId, holder, status, error);
  }

  async searchableFiles(storeId: string): Promise<SearchableFile[]> {
    const { rows } = await this.pool.query<{ file_id: string; filename: string; attributes: string }>(
      `SELECT file_id, filename, attributes FROM ${this.p}vector_store_files WHERE store_id = $1 AND status = 'completed'`,
      [storeId],
    );
    return rows.map((row) => ({
      fileId: row.file_id,
      filename: row.filename,
      attributes: JSON.parse(row.attributes) as VectorAttributes,
    }));
  }

  nearest(query: {
    store: VectorStoreRecord;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]> {
    return this.search.nearest(query);
  }

  matchText(query: { storeId: string; text: string; k: number; fileIds?: readonly string[] }): Promise<ChunkHit[]> {
    return this.search.matchText(query);
  }

  async usage(limit: number): Promise<{ total: VectorUsage; owners: OwnerVectorUsage[] }> {
    const sql = usageSql(this.p);
    const [stores, files] = await Promise.all([
      this.pool.query<OwnerStoresRow>(sql.stores),
      this.pool.query<OwnerCountRow>(sql.files),
    ]);
    return usageOf(stores.rows, files.rows, limit);
  }

  async indexReady(store: VectorStoreRecord): Promise<boolean> {
    if (store.index !== 'hnsw') return false;
    return this.pgvector !== undefined || this.search.graphs.ready(store);
  }

  /** The `hnsw` stores' graphs in this process, for tests and metrics. */
  get hnsw(): HnswIndexes {
    return this.search.graphs;
  }

  /** A store deleted or expired: its cached vectors and its graph go. */
  private forget(storeId: string): void {
    this.search.cache.drop(storeId);
    this.search.graphs.drop(storeId);
  }

  close(): Promise<void> {
    this.search.graphs.close();
    return this.pool.end();
  }
}
