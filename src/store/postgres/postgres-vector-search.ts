import type { Pool, PoolClient } from 'pg';
import { similarityScore, type ChunkHit, type VectorStoreRecord } from '../vector-contract.js';
import { MAX_NEAREST_K, queryWords, textScore } from '../vector-rows.js';
import type { HnswIndexes } from '../hnsw/hnsw-indexes.js';
import type { PgvectorIndex } from './pgvector-index.js';
import type { VectorScanCache } from './vector-scan.js';
import {
  BLOCK_ROWS,
  VectorSetBuilder,
  blockBytes,
  scan,
  type ScanHit,
  type VectorBlock,
  type VectorSet,
} from './vector-scan.js';

type ChunkRow = { id: string; store_id: string; file_id: string; seq: number; text: string };

/**
 * Search on PostgreSQL: `nearest` by pgvector's HNSW index for an `hnsw` store where the server has it, else by
 * this process's own graph of the store (`hnsw-indexes.ts`) when it is up to date with the store's version, otherwise
 * exact, in this process (`vector-scan.ts`): the store's vectors from the cache when its version is unchanged
 * (one indexed row read per search), else read at one snapshot in pages of BLOCK_ROWS (and kept when they fit the
 * cache), scored block by block with the event loop served in between. `matchText` is PostgreSQL's full-text
 * search over the generated tsvector.
 */
export class PostgresVectorSearch {
  /** Loads under way, by store and version: searches that miss together read the rows once. */
  private readonly loading = new Map<string, Promise<VectorSet>>();

  constructor(
    private readonly pool: Pool,
    private readonly p: string,
    readonly cache: VectorScanCache,
    private readonly pgvector: PgvectorIndex | undefined,
    readonly graphs: HnswIndexes,
  ) {}

  async nearest(query: {
    store: VectorStoreRecord;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]> {
    const { store } = query;
    if (store.dimensions === null || query.k < 1 || query.fileIds?.length === 0) return [];
    if (query.vector.length !== store.dimensions)
      throw new RangeError(`a query of ${query.vector.length} dimensions for a store of ${store.dimensions}`);
    const k = Math.min(query.k, MAX_NEAREST_K);
    let hits: readonly { id: number; value: number }[];
    if (store.index === 'hnsw' && this.pgvector) {
      hits = await this.pgvector.nearest({
        ...query,
        k,
        storeId: store.id,
        dimension: store.dimensions,
        metric: store.metric,
      });
    } else if (store.index === 'hnsw') {
      const version = await this.version(store.id);
      if (version === undefined) return [];
      hits =
        this.graphs.search(store, version, { vector: query.vector, k, fileIds: query.fileIds }) ??
        (await this.exact(store, query.vector, k, query.fileIds, version));
    } else {
      hits = await this.exact(store, query.vector, k, query.fileIds);
    }
    if (hits.length === 0) return [];
    const { rows } = await this.pool.query<ChunkRow>(
      `SELECT id, store_id, file_id, seq, text FROM ${this.p}vector_chunks WHERE id = ANY($1::bigint[])`,
      [hits.map((hit) => hit.id)],
    );
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    // A chunk removed since its vector was read is left out, not returned without its text.
    return hits.flatMap((hit) => {
      const row = byId.get(hit.id);
      return row ? [hitOf(row, similarityScore(store.metric, hit.value))] : [];
    });
  }

  /** PostgreSQL's full-text search: any of the query's words (`queryWords`), ranked by ts_rank_cd. */
  async matchText(query: {
    storeId: string;
    text: string;
    k: number;
    fileIds?: readonly string[];
  }): Promise<ChunkHit[]> {
    const words = queryWords(query.text);
    if (words.length === 0 || query.k < 1 || query.fileIds?.length === 0) return [];
    const args: unknown[] = [words.join(' or '), query.storeId, Math.min(query.k, MAX_NEAREST_K)];
    const files = query.fileIds === undefined ? '' : 'AND file_id = ANY($4::text[])';
    if (query.fileIds !== undefined) args.push(query.fileIds);
    // websearch_to_tsquery reads "a or b" as a | b; the words carry no other syntax. Normalization 0: the raw
    // rank, mapped to (0, 1) by textScore as SQLite's BM25 is.
    const { rows } = await this.pool.query<ChunkRow & { rank: number }>(
      `SELECT id, store_id, file_id, seq, text, ts_rank_cd(tsv, q) AS rank
         FROM ${this.p}vector_chunks, websearch_to_tsquery('english', $1) AS q
        WHERE tsv @@ q AND store_id = $2 ${files}
        ORDER BY rank DESC, id LIMIT $3`,
      args,
    );
    return rows.map((row) => hitOf(row, textScore(Number(row.rank))));
  }

  /**
   * The exact scan: the cached vectors at the store's current version; on a miss the rows read now, kept when the
   * store fits the cache, scored as they arrive (never held whole) when it does not.
   */
  private async exact(
    store: VectorStoreRecord,
    vector: Float32Array,
    k: number,
    fileIds: readonly string[] | undefined,
    known?: string,
  ): Promise<ScanHit[]> {
    const version = known ?? (await this.version(store.id));
    if (version === undefined) {
      this.cache.drop(store.id);
      return [];
    }
    const query = { vector, metric: store.metric, k, wanted: fileIds === undefined ? undefined : new Set(fileIds) };
    const dimension = store.dimensions!;
    let set = this.cache.get(store.id, version);
    if (!set && (await this.chunkCount(store.id)) * rowBytes(dimension) <= this.cache.maxBytes)
      set = await this.load(store.id, version, dimension);
    if (set) return scan(set.blocks, { ...query, files: set.files });
    const builder = new VectorSetBuilder(dimension);
    return this.snapshot(async (client) =>
      scan(this.pages(client, store.id, builder), { ...query, files: builder.files }),
    );
  }

  private async version(storeId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ chunks_version: string }>(
      `SELECT chunks_version FROM ${this.p}vector_stores WHERE id = $1 AND expired_ms IS NULL`,
      [storeId],
    );
    return rows[0]?.chunks_version;
  }

  private async chunkCount(storeId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT coalesce(sum(chunk_count), 0) AS n FROM ${this.p}vector_store_files WHERE store_id = $1`,
      [storeId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  private load(storeId: string, version: string, dimension: number): Promise<VectorSet> {
    const key = `${storeId}:${version}`;
    let loading = this.loading.get(key);
    if (!loading) {
      loading = this.read(storeId, dimension).finally(() => this.loading.delete(key));
      this.loading.set(key, loading);
    }
    return loading;
  }

  /** Reads a store's vectors whole at one snapshot (the version read with them) and keeps them in the cache. */
  private read(storeId: string, dimension: number): Promise<VectorSet> {
    return this.snapshot(async (client) => {
      const { rows: found } = await client.query<{ chunks_version: string }>(
        `SELECT chunks_version FROM ${this.p}vector_stores WHERE id = $1`,
        [storeId],
      );
      const builder = new VectorSetBuilder(dimension);
      const blocks: VectorBlock[] = [];
      let bytes = 0;
      for await (const block of this.pages(client, storeId, builder)) {
        blocks.push(block);
        bytes += blockBytes(block);
      }
      const set: VectorSet = {
        version: found[0]?.chunks_version ?? '',
        dimension,
        files: builder.files,
        blocks,
        bytes,
      };
      if (found[0]) this.cache.put(storeId, set);
      return set;
    });
  }

  /** A store's vectors in blocks of BLOCK_ROWS rows by chunk id, read through `client`. */
  private async *pages(client: PoolClient, storeId: string, builder: VectorSetBuilder): AsyncGenerator<VectorBlock> {
    let after = 0;
    for (;;) {
      const { rows } = await client.query<{ id: string; file_id: string; embedding: Buffer }>(
        `SELECT id, file_id, embedding FROM ${this.p}vector_chunks WHERE store_id = $1 AND id > $2
          ORDER BY id LIMIT ${BLOCK_ROWS}`,
        [storeId, after],
      );
      if (rows.length > 0) yield builder.block(rows);
      if (rows.length < BLOCK_ROWS) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }

  /**
   * Runs `fn` in a REPEATABLE READ READ ONLY transaction: the version and every page are read at one snapshot,
   * even while files are completed meanwhile.
   */
  private async snapshot<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

/** What one row costs in the cache: its vector, its id, its file's index and its norm. */
function rowBytes(dimension: number): number {
  return dimension * 4 + 8 + 4 + 4;
}

function hitOf(row: ChunkRow, score: number): ChunkHit {
  return { storeId: row.store_id, fileId: row.file_id, seq: Number(row.seq), text: row.text, score };
}
