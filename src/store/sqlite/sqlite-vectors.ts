import type { SQLInputValue } from 'node:sqlite';
import type * as Sqlite from './database.js';
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
  VectorMetric,
  VectorStorePatch,
  VectorStoreRecord,
  VectorStoreStore,
  OwnerVectorUsage,
  VectorUsage,
} from '../vector-contract.js';
import {
  FILE_COLUMNS,
  STORE_COLUMNS,
  batchOf,
  countsOf,
  fileOf,
  pageOf,
  pageSql,
  storeOf,
  type Cursor,
  type FileRow,
  type OwnerCountRow,
  type OwnerStoresRow,
  type StoreRow,
  usageOf,
  usageSql,
  MAX_NEAREST_K,
} from '../vector-rows.js';
import type { HnswIndexes } from '../hnsw/hnsw-indexes.js';
import { SqliteHnsw } from './sqlite-hnsw.js';
import { SqliteVectorChunks, type ChunkQuery } from './sqlite-vector-chunks.js';
import { VectorSearchClient } from './vector-search-client.js';
import { SqliteFileCompletion } from './sqlite-vector-completion.js';
import { prepareStagingStatements, prepareVectorStatements as prepare } from './sqlite-vector-statements.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/**
 * Chunks dropped per transaction when a store is deleted or expires: a vec0 delete costs ~0.2 ms at 1,536
 * dimensions here, so ~12 ms a slice.
 */
const DROP_SLICE = 64;

/**
 * The embedded vector store (docs/retrieval.md): migration 27's tables, the vectors in sqlite-vec's vec0 tables
 * (`sqlite-vector-chunks.ts`). Writes go through the database's group-commit batcher, each in its own savepoint:
 * `completeFile` writes a file's chunks and its `completed` status together or not at all. File counts and bytes
 * are read with GROUP BY over the files, so they are exact. Searches run on a thread of their own with its own
 * connection (`vector-search-client.ts`), so vec0's brute-force scan never holds the serving thread; a deleted or
 * expired store's chunks are dropped a slice per transaction (`drain`).
 */
export class SqliteVectors implements VectorStoreStore {
  readonly capabilities: VectorCapabilities = {
    backend: 'sqlite',
    metrics: ['cosine', 'euclidean'],
    indexes: ['flat', 'hnsw'],
  };
  private readonly batcher: SqliteWriteBatcher;
  private readonly chunks: SqliteVectorChunks;
  private readonly s: ReturnType<typeof prepare> & ReturnType<typeof prepareStagingStatements>;
  private readonly completion: SqliteFileCompletion;
  private readonly pages = new Map<string, Sqlite.Statement<unknown[], Record<string, unknown>>>();

  /** The search thread (`vector-search-client.ts`); none for an in-memory database, which no other connection sees. */
  private readonly searches: VectorSearchClient | undefined;
  /** The `hnsw` stores' graphs and their versions (`sqlite-hnsw.ts`). */
  private readonly graphs: SqliteHnsw;

  constructor(
    private readonly db: Sqlite.Database,
    options: { hnswBytes?: number } = {},
  ) {
    this.batcher = writeBatcherFor(db);
    this.chunks = new SqliteVectorChunks(db);
    this.s = { ...prepare(db), ...prepareStagingStatements(db) };
    this.completion = new SqliteFileCompletion(this.batcher, this.s, this.chunks);
    const main = (db.pragma('database_list') as { name: string; file: string }[]).find((d) => d.name === 'main');
    this.searches = main?.file ? new VectorSearchClient({ path: main.file, busyTimeoutMs: 5_000 }) : undefined;
    const read = (sql: string, args: SQLInputValue[]) =>
      this.searches ? this.searches.query(sql, args) : Promise.resolve(this.graphs.here(sql, args));
    const store = { row: (id: string) => this.storeRow(id), dropping: (id: string) => this.dropping(id), read };
    this.graphs = new SqliteHnsw(db, this.chunks, store, options.hnswBytes);
  }

  /** The `hnsw` stores' graphs in this process, for tests and metrics. */
  get hnsw(): HnswIndexes {
    return this.graphs.graphs;
  }

  /** Whether searches run on a thread of their own (a database file) rather than on this one (in memory). */
  get searchesOffThread(): boolean {
    return this.searches !== undefined;
  }

  async createStore(store: NewVectorStore): Promise<VectorStoreRecord> {
    if (!this.capabilities.metrics.includes(store.metric) || !this.capabilities.indexes.includes(store.index))
      throw new RangeError(`the embedded vector store cannot build ${store.index} / ${store.metric}`);
    await this.batcher.run(() =>
      this.s.insertStore.run(
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
        store.dimensions !== null ? 1 : 0,
        store.metric,
        store.index,
      ),
    );
    return { ...store, dimensionsDeclared: store.dimensions !== null, expiredMs: null, ...countsOf([]) };
  }

  async getStore(owner: string, id: string): Promise<VectorStoreRecord | undefined> {
    const row = this.s.getStore.get(id, owner);
    return row ? this.recordOf(row) : undefined;
  }

  async listStores(owner: string, query: ListQuery): Promise<ListPage<VectorStoreRecord>> {
    const cursor = (id?: string) => (id === undefined ? undefined : this.s.storeCursor.get(id, owner));
    const rows = this.page<StoreRow>({
      table: 'vector_stores',
      columns: STORE_COLUMNS,
      idColumn: 'id',
      where: ['owner = ?'],
      args: [owner],
      query,
      cursors: { after: cursor(query.after), before: cursor(query.before) },
    });
    return { data: rows.data.map((row) => this.recordOf(row)), hasMore: rows.hasMore };
  }

  async updateStore(
    owner: string,
    id: string,
    patch: VectorStorePatch,
  ): Promise<VectorStoreRecord | undefined | 'holds_vectors'> {
    const outcome = await this.batcher.run(() => {
      const row = this.s.getStore.get(id, owner);
      if (!row) return undefined;
      const model = patch.embeddingModel ?? row.embedding_model;
      if (model !== row.embedding_model && this.chunks.holdsChunks(id)) return 'holds_vectors' as const;
      this.s.updateStore.run(
        patch.name ?? row.name,
        patch.metadata === undefined ? row.metadata : patch.metadata === null ? null : JSON.stringify(patch.metadata),
        patch.expiresAfterDays === undefined ? row.expires_after_days : patch.expiresAfterDays,
        model,
        id,
      );
      return 'updated' as const;
    });
    return outcome === 'updated' ? this.getStore(owner, id) : outcome;
  }

  async deleteStore(owner: string, id: string): Promise<boolean> {
    const deleted = await this.batcher.run(() => {
      const row = this.s.getStore.get(id, owner);
      if (!row) return false;
      this.s.startDrop.run(id, row.dimensions === null ? null : Number(row.dimensions), row.metric);
      this.s.deleteStoreStagings.run(id); // its rows are dropped with the store's (no search sees a store dropping)
      this.s.deleteStoreFiles.run(id);
      this.s.deleteStoreBatches.run(id);
      this.s.deleteStore.run(id);
      return true;
    });
    if (deleted) {
      this.graphs.forget(id);
      await this.drain(id);
    }
    return deleted;
  }

  async touchStore(id: string, nowMs: number): Promise<void> {
    await this.batcher.run(() => this.s.touchStore.run(nowMs, id));
  }

  async sweepExpired(nowMs: number, limit: number): Promise<number> {
    const expired = await this.batcher.run(() =>
      this.s.expiring.all(nowMs, limit).map((row) => {
        this.s.markExpired.run(nowMs, row.id);
        // No one embeds for an expired store: its files still in progress are cancelled, the others hold no chunks.
        this.s.emptyFiles.run(row.id);
        this.s.startDrop.run(row.id, row.dimensions === null ? null : Number(row.dimensions), row.metric);
        this.s.deleteStoreStagings.run(row.id);
        return row.id;
      }),
    );
    for (const id of expired) this.graphs.forget(id);
    // These stores' chunks, and those of drops a restart cut off.
    for (const id of new Set([...expired, ...(this.s.pendingDrops.all(limit) as string[])])) await this.drain(id);
    // And the staged chunks of files whose holder died mid-write.
    await this.completion.collectAbandoned(limit, (storeId) => this.s.storeById.get(storeId)?.metric as VectorMetric);
    return expired.length;
  }

  async addFiles(
    files: NewVectorFile[],
    batch?: Omit<VectorFileBatchRecord, 'fileCounts' | 'cancelledMs'>,
  ): Promise<void> {
    await this.batcher.run(() => {
      if (batch) this.s.insertBatch.run(batch.id, batch.storeId, batch.owner, batch.createdMs);
      for (const file of files) {
        const store = this.storeRow(file.storeId);
        if (!store) throw new RangeError(`no vector store ${file.storeId}`);
        const { dimensions, metric } = storeOf(store, []);
        this.dropFileChunks(file.storeId, file.fileId, dimensions, metric);
        this.s.upsertFile.run(
          file.storeId,
          file.fileId,
          file.owner,
          file.batchId ?? batch?.id ?? null,
          file.filename,
          file.createdMs,
          JSON.stringify(file.attributes),
          file.chunking.maxTokens,
          file.chunking.overlapTokens,
        );
      }
    });
    for (const storeId of new Set(files.map((file) => file.storeId))) this.graphs.changed(storeId);
  }

  async getFile(owner: string, storeId: string, fileId: string): Promise<VectorFileRecord | undefined> {
    const row = this.s.getFile.get(storeId, fileId, owner);
    return row ? fileOf(row) : undefined;
  }

  async listFiles(
    owner: string,
    storeId: string,
    query: ListQuery & { status?: VectorFileStatus; batchId?: string },
  ): Promise<ListPage<VectorFileRecord>> {
    const cursor = (id?: string): Cursor | undefined => {
      const row = id === undefined ? undefined : this.s.getFile.get(storeId, id, owner);
      return row ? { createdMs: Number(row.created_ms), id: row.file_id } : undefined;
    };
    const where = ['store_id = ?', 'owner = ?'];
    const args: unknown[] = [storeId, owner];
    if (query.status !== undefined) where.push('status = ?') && args.push(query.status);
    if (query.batchId !== undefined) where.push('batch_id = ?') && args.push(query.batchId);
    const rows = this.page<FileRow>({
      table: 'vector_store_files',
      columns: FILE_COLUMNS,
      idColumn: 'file_id',
      where,
      args,
      query,
      cursors: { after: cursor(query.after), before: cursor(query.before) },
    });
    return { data: rows.data.map(fileOf), hasMore: rows.hasMore };
  }

  async updateAttributes(
    owner: string,
    storeId: string,
    fileId: string,
    attributes: VectorAttributes,
  ): Promise<VectorFileRecord | undefined> {
    const changed = await this.batcher.run(
      () => this.s.updateAttributes.run(JSON.stringify(attributes), storeId, fileId, owner).changes,
    );
    return changed === 0 ? undefined : this.getFile(owner, storeId, fileId);
  }

  async deleteFile(owner: string, storeId: string, fileId: string): Promise<boolean> {
    const deleted = await this.batcher.run(() => {
      if (!this.s.getFile.get(storeId, fileId, owner)) return false;
      const store = this.storeRow(storeId);
      if (store) {
        const { dimensions, metric } = storeOf(store, []);
        this.dropFileChunks(storeId, fileId, dimensions, metric);
      }
      this.s.deleteFile.run(storeId, fileId);
      return true;
    });
    if (deleted) this.graphs.changed(storeId);
    return deleted;
  }

  async fileChunks(owner: string, storeId: string, fileId: string): Promise<string[] | undefined> {
    if (!this.s.getFile.get(storeId, fileId, owner)) return undefined;
    return this.dropping(storeId) ? [] : this.chunks.texts(storeId, fileId);
  }

  async getBatch(owner: string, storeId: string, batchId: string): Promise<VectorFileBatchRecord | undefined> {
    const row = this.s.getBatch.get(batchId, storeId, owner);
    return row ? batchOf(row, this.s.batchCounts.all(batchId, storeId)) : undefined;
  }

  async cancelBatch(
    owner: string,
    storeId: string,
    batchId: string,
    nowMs: number,
  ): Promise<VectorFileBatchRecord | undefined> {
    const found = await this.batcher.run(() => {
      if (!this.s.getBatch.get(batchId, storeId, owner)) return false;
      this.s.cancelBatch.run(nowMs, batchId);
      this.s.cancelBatchFiles.run(batchId, storeId);
      return true;
    });
    return found ? this.getBatch(owner, storeId, batchId) : undefined;
  }

  async claimFiles(
    holder: string,
    leaseMs: number,
    limit: number,
    nowMs: number,
  ): Promise<{ file: VectorFileRecord; store: VectorStoreRecord }[]> {
    const claimed = await this.batcher.run(() => {
      const keys = this.s.claimable.all(nowMs, limit);
      for (const key of keys) this.s.lease.run(holder, nowMs + leaseMs, key.store_id, key.file_id);
      return keys;
    });
    const claims: { file: VectorFileRecord; store: VectorStoreRecord }[] = [];
    for (const key of claimed) {
      const file = this.s.fileByKey.get(key.store_id, key.file_id);
      const store = this.storeRow(key.store_id);
      if (file && store) claims.push({ file: fileOf(file), store: this.recordOf(store) });
    }
    return claims;
  }

  async renewLease(storeId: string, fileId: string, holder: string, leaseMs: number, nowMs: number): Promise<boolean> {
    return this.batcher.run(() => this.s.renew.run(nowMs + leaseMs, storeId, fileId, holder).changes > 0);
  }

  async completeFile(storeId: string, fileId: string, holder: string, chunks: NewChunk[]): Promise<CompleteOutcome> {
    const outcome = await this.completion.complete(storeId, fileId, holder, chunks);
    if (outcome.kind === 'completed') this.graphs.changed(storeId);
    return outcome;
  }

  async endFile(
    storeId: string,
    fileId: string,
    holder: string,
    status: 'failed' | 'cancelled',
    error: VectorFileError | null,
  ): Promise<boolean> {
    return this.batcher.run(
      () => this.s.end.run(status, error?.code ?? null, error?.message ?? null, storeId, fileId, holder).changes > 0,
    );
  }

  async searchableFiles(storeId: string): Promise<SearchableFile[]> {
    return this.s.searchable.all(storeId).map((row) => ({
      fileId: row.file_id,
      filename: row.filename,
      attributes: JSON.parse(row.attributes) as VectorAttributes,
    }));
  }

  async nearest(query: {
    store: VectorStoreRecord;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]> {
    const { store } = query;
    if (store.dimensions === null || query.k < 1 || this.dropping(store.id)) return [];
    if (query.vector.length !== store.dimensions)
      throw new RangeError(`a query of ${query.vector.length} dimensions for a store of ${store.dimensions}`);
    const k = Math.min(query.k, MAX_NEAREST_K);
    const graphHits = store.index === 'hnsw' ? this.graphs.nearest(store, { ...query, k }) : undefined;
    if (graphHits) return graphHits;
    return this.read(
      this.chunks.nearestQuery({ ...query, storeId: store.id, dimension: store.dimensions, metric: store.metric }),
    );
  }

  async matchText(query: {
    storeId: string;
    text: string;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]> {
    return query.k < 1 || this.dropping(query.storeId) ? [] : this.read(this.chunks.matchQuery(query));
  }

  async indexReady(store: VectorStoreRecord): Promise<boolean> {
    return store.index === 'hnsw' && this.graphs.graphs.ready(store);
  }

  async close(): Promise<void> {
    this.graphs.close();
    // The connection is the embedded store's: closed with it. The search thread is this store's.
    await this.searches?.close();
  }

  /** Runs a search query: on the search thread for a database file, here for an in-memory one (tests). */
  private async read(query: ChunkQuery | undefined): Promise<ChunkHit[]> {
    if (!query) return [];
    return this.searches ? query.hits(await this.searches.query(query.sql, query.args)) : this.chunks.runHere(query);
  }

  /**
   * Drops a deleted or expired store's chunks (listed in vector_store_drops), DROP_SLICE per transaction, the event
   * loop served between them (each is a batcher turn).
   */
  private async drain(storeId: string): Promise<void> {
    for (;;) {
      const done = await this.batcher.run(() => {
        const drop = this.s.dropOf.get(storeId);
        if (!drop) return true;
        const metric = drop.metric as VectorMetric;
        if (this.chunks.dropSlice(storeId, drop.dimensions, metric, DROP_SLICE) === DROP_SLICE) return false;
        this.s.endDrop.run(storeId);
        return true;
      });
      if (done) return;
    }
  }

  /** Drops a file's chunks, staged ones included (of the staging's dimension), and its staging. */
  private dropFileChunks(storeId: string, fileId: string, dimensions: number | null, metric: VectorMetric): void {
    const staging = this.s.stagingOf.get(storeId, fileId);
    if (staging) this.chunks.dropFile(storeId, fileId, staging.dimensions, metric, 'staged');
    this.chunks.dropFile(storeId, fileId, dimensions, metric);
    this.s.unstage.run(storeId, fileId);
  }

  /** Whether the store's chunks are being dropped (deleted or expired): it has none to show meanwhile. */
  private dropping(storeId: string): boolean {
    return this.s.dropOf.get(storeId) !== undefined;
  }

  async usage(limit: number): Promise<{ total: VectorUsage; owners: OwnerVectorUsage[] }> {
    const sql = usageSql('');
    const stores = this.db.prepare<[], OwnerStoresRow>(sql.stores).all();
    const files = this.db.prepare<[], OwnerCountRow>(sql.files).all();
    return usageOf(stores, files, limit);
  }

  private storeRow(id: string): StoreRow | undefined {
    return this.s.storeById.get(id);
  }

  private recordOf(row: StoreRow): VectorStoreRecord {
    return storeOf(row, this.s.storeCounts.all(row.id));
  }

  /** One page of a list (`pageSql`), its statement prepared once per shape. */
  private page<T>(spec: {
    table: string;
    columns: string;
    idColumn: string;
    where: string[];
    args: unknown[];
    query: ListQuery;
    cursors: { after?: Cursor; before?: Cursor };
  }): ListPage<T> {
    const args = [...spec.args];
    const page = pageSql(spec.query, spec.cursors, spec.idColumn, (value) => {
      args.push(value);
      return '?';
    });
    const sql = `SELECT ${spec.columns} FROM ${spec.table} WHERE ${[...spec.where, ...page.where].join(' AND ')}
      ${page.orderBy} LIMIT ?`;
    let statement = this.pages.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[], Record<string, unknown>>(sql);
      this.pages.set(sql, statement);
    }
    const rows = statement.all(...args, spec.query.limit + 1) as T[];
    return pageOf(rows, spec.query.limit, page.reverse);
  }
}
