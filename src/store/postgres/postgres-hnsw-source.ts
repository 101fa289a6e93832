import type { Pool } from 'pg';
import { rowsOf, type HnswSource, type SourceRows } from '../hnsw/hnsw-indexes.js';

/** Rows read per query while a graph is built (a page is decoded in one go on the serving thread: ~1-3 ms). */
const PAGE_ROWS = 512;

/**
 * What the PostgreSQL store tells `HnswIndexes` (`hnsw-indexes.ts`) about a store: its version is the
 * `chunks_version` counter every chunk write and drop bumps in its own transaction (the one the exact scan's cache
 * checks), so each instance brings its own graph up to date from it; its files and vectors are read from
 * `vector_chunks` (by the `(store_id, id)` index), a page at a time.
 */
export class PostgresHnswSource implements HnswSource {
  constructor(
    private readonly pool: Pool,
    private readonly p: string,
  ) {}

  async version(storeId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ chunks_version: string }>(
      `SELECT chunks_version FROM ${this.p}vector_stores WHERE id = $1 AND expired_ms IS NULL`,
      [storeId],
    );
    return rows[0]?.chunks_version;
  }

  async files(storeId: string): Promise<{ fileId: string; firstId: number; count: number }[]> {
    const { rows } = await this.pool.query<{ file_id: string; first_id: string; n: string }>(
      `SELECT file_id, min(id) AS first_id, count(*) AS n FROM ${this.p}vector_chunks WHERE store_id = $1
        GROUP BY file_id`,
      [storeId],
    );
    return rows.map((row) => ({ fileId: row.file_id, firstId: Number(row.first_id), count: Number(row.n) }));
  }

  async *vectors(storeId: string, fileIds: readonly string[], dimension: number): AsyncIterable<SourceRows> {
    let after = 0;
    for (;;) {
      const { rows } = await this.pool.query<{ id: string; file_id: string; embedding: Buffer }>(
        `SELECT id, file_id, embedding FROM ${this.p}vector_chunks
          WHERE store_id = $1 AND id > $2 AND file_id = ANY($3::text[]) ORDER BY id LIMIT ${PAGE_ROWS}`,
        [storeId, after, fileIds],
      );
      yield rowsOf(rows, dimension);
      if (rows.length < PAGE_ROWS) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }
}
