import type { SQLInputValue } from 'node:sqlite';
import type * as Sqlite from './database.js';
import { similarityScore, type ChunkHit, type VectorMetric, type VectorStoreRecord } from '../vector-contract.js';
import type { StoreRow } from '../vector-rows.js';
import type { SqliteVectorChunks } from './sqlite-vector-chunks.js';
import { HnswIndexes, rowsOf, type HnswSource, type SourceRows } from '../hnsw/hnsw-indexes.js';

type Row = Record<string, unknown>;

/** Rows read per query while a graph is built (a page is decoded in one go on the serving thread: ~1-3 ms). */
const PAGE_ROWS = 512;

/**
 * The embedded store's `hnsw` search: the stores' graphs (`hnsw-indexes.ts`) and what they are built from. A
 * store's version is its row's `chunks_version`, moved on after every committed write of its chunks (`changed`), so
 * a process's graph sees another's writes (WORKERS > 1 share the file). Files and vectors are read by `read` (on the search
 * thread when there is one), the vectors from the store's vec0 table by chunk id, a page at a time; a graph's hits
 * are read back here (a handful of rows by id), leaving out any chunk dropped since the graph was synced.
 */
export class SqliteHnsw implements HnswSource {
  readonly graphs: HnswIndexes;
  private readonly statements = new Map<string, Sqlite.Statement<unknown[], Row>>();

  constructor(
    private readonly db: Sqlite.Database,
    private readonly chunks: SqliteVectorChunks,
    private readonly store: {
      row(storeId: string): StoreRow | undefined;
      /** Whether the store's chunks are being dropped (deleted or expired). */
      dropping(storeId: string): boolean;
      /** A read query, on the search thread when there is one. */
      read(sql: string, args: SQLInputValue[]): Promise<Row[]>;
    },
    maxBytes: number | undefined,
  ) {
    this.graphs = new HnswIndexes(this, { maxBytes });
  }

  /** The `k` nearest chunks by the store's graph; undefined: not up to date, search exactly. */
  nearest(store: VectorStoreRecord, query: { vector: Float32Array; k: number; fileIds?: readonly string[] }) {
    const version = this.currentVersion(store.id);
    const hits = version === undefined ? undefined : this.graphs.search(store, version, query);
    if (!hits) return undefined;
    if (hits.length === 0) return [];
    const rows = this.here(
      // `+store_id`: by the ids (the primary key), not by the store's index (which would read all its chunks).
      `SELECT id, store_id, file_id, seq, text FROM vector_chunks
        WHERE id IN (SELECT value FROM json_each(?)) AND +store_id = ? AND live = 1`,
      [JSON.stringify(hits.map((hit) => hit.id)), store.id],
    );
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    return hits.flatMap((hit): ChunkHit[] => {
      const row = byId.get(hit.id);
      if (!row) return [];
      const chunk = { storeId: row.store_id as string, fileId: row.file_id as string, seq: Number(row.seq) };
      return [{ ...chunk, text: row.text as string, score: similarityScore(store.metric, hit.value) }];
    });
  }

  /**
   * Moves a store's version on, after a write of its chunks committed (never before: a graph synced in between
   * would claim a version whose chunks it has not read).
   */
  changed(storeId: string): void {
    this.here('UPDATE vector_stores SET chunks_version = chunks_version + 1 WHERE id = ?', [storeId]);
  }

  /** The store was deleted or expired. */
  forget(storeId: string): void {
    this.graphs.drop(storeId);
  }

  async version(storeId: string): Promise<string | undefined> {
    return this.currentVersion(storeId);
  }

  async files(storeId: string): Promise<{ fileId: string; firstId: number; count: number }[]> {
    const rows = await this.store.read(
      `SELECT file_id, min(id) AS first_id, count(*) AS n FROM vector_chunks WHERE store_id = ? AND live = 1
        GROUP BY file_id`,
      [storeId],
    );
    return rows.map((row) => ({ fileId: row.file_id as string, firstId: Number(row.first_id), count: Number(row.n) }));
  }

  async *vectors(storeId: string, fileIds: readonly string[], dimension: number): AsyncIterable<SourceRows> {
    const row = this.store.row(storeId);
    const dimensions = row?.dimensions ?? null;
    const table =
      dimensions === null ? undefined : this.chunks.vectorTable(Number(dimensions), row!.metric as VectorMetric);
    if (!table) return;
    const files = JSON.stringify(fileIds);
    let after = 0;
    for (;;) {
      const rows = (await this.store.read(
        `SELECT c.id, c.file_id, v.embedding FROM vector_chunks c JOIN ${table} v ON v.chunk_id = c.id
          WHERE c.store_id = ?1 AND c.live = 1 AND c.id > ?2 AND c.file_id IN (SELECT value FROM json_each(?3))
          ORDER BY c.id LIMIT ${PAGE_ROWS}`,
        [storeId, after, files],
      )) as { id: number; file_id: string; embedding: Uint8Array }[];
      yield rowsOf(rows, dimension);
      if (rows.length < PAGE_ROWS) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }

  close(): void {
    this.graphs.close();
  }

  private currentVersion(storeId: string): string | undefined {
    const live = this.store.row(storeId)?.expired_ms === null && !this.store.dropping(storeId);
    if (!live) return undefined;
    const [row] = this.here('SELECT chunks_version FROM vector_stores WHERE id = ?', [storeId]);
    return row === undefined ? undefined : String(row.chunks_version);
  }

  /** A read on the serving connection (statements prepared once per text: a handful). */
  here(sql: string, args: SQLInputValue[]): Row[] {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[], Row>(sql);
      this.statements.set(sql, statement);
    }
    return statement.all(...args);
  }
}
