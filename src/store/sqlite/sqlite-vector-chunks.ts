import type { SQLInputValue } from 'node:sqlite';
import * as sqliteVec from 'sqlite-vec';
import type * as Sqlite from './database.js';
import { similarityScore, type ChunkHit, type NewChunk, type VectorMetric } from '../vector-contract.js';
import { MAX_NEAREST_K, queryWords, textScore } from '../vector-rows.js';

type Row = Record<string, unknown>;

/** A read-only query of chunks, and how its rows read as hits. */
export interface ChunkQuery {
  sql: string;
  args: SQLInputValue[];
  hits(rows: Row[]): ChunkHit[];
}

/**
 * The chunks of the embedded vector store: their text in `vector_chunks` (migration 27, with its FTS5 index kept
 * by triggers) and their vectors in sqlite-vec's vec0 tables, one per dimension and metric (`vec_d1536_cosine`),
 * each partitioned by store: a search reads its own store's vectors only (the partition key is what makes vec0's
 * brute-force scan affordable: 10% of the rows, 10% of the time; docs/plans/retrieval-research.md section 1).
 *
 * vec0 has no dot-product metric (`distance_metric=dot` is refused), so this backend offers cosine and euclidean
 * (`l2`) only; the published 0.1.9 binaries search by brute force (exact): an `hnsw` store's vectors are here too,
 * and its graph is built from them in memory (`hnsw/hnsw-indexes.ts`).
 *
 * The writes are synchronous SQLite work inside the caller's transaction. vec0 writes cost ~0.5-1 ms per chunk at
 * 1,536 dimensions on this machine, so a big file is written a few chunks per transaction, staged until it is
 * published (`sqlite-vector-completion.ts`). The searches are only built here (`nearestQuery`, `matchQuery`): `SqliteVectors` runs
 * them on its search thread.
 */
export class SqliteVectorChunks {
  /** The vec0 tables known to exist (created once, never dropped). */
  private readonly tables = new Set<string>();
  private readonly statements: ReturnType<typeof prepare>;
  private readonly cached = new Map<string, Sqlite.Statement<unknown[], Row>>();

  constructor(private readonly db: Sqlite.Database) {
    // Lazily, here: the serving connection loads sqlite-vec when the vector store is opened, not before.
    db.loadExtension(sqliteVec.getLoadablePath());
    this.statements = prepare(db);
  }

  /**
   * Writes `chunks` of one file (their vectors of `dimension`): live at once, or staged (`live = 0`, the vectors
   * marked with the staging's `gen`, which searches exclude) until `publish`.
   */
  write(
    file: { storeId: string; fileId: string; metric: VectorMetric; dimension: number },
    chunks: readonly NewChunk[],
    stage?: { gen: number },
  ): void {
    if (chunks.length === 0) return;
    const { storeId, fileId } = file;
    const table = this.ensureTable(file.dimension, file.metric);
    const insertVector = this.statement(
      `INSERT INTO ${table} (chunk_id, store_id, file_id, gen, embedding) VALUES (?, ?, ?, ?, ?)`,
    );
    const gen = BigInt(stage?.gen ?? 0);
    const live = stage ? 0 : 1;
    for (const chunk of chunks) {
      const { lastInsertRowid } = this.statements.insertChunk.run(
        storeId,
        fileId,
        chunk.seq,
        chunk.text,
        chunk.tokens,
        live,
      );
      // vec0 takes integers only as integers: node:sqlite binds a JS number as REAL, so a BigInt.
      insertVector.run(BigInt(lastInsertRowid), storeId, fileId, gen, bytesOf(chunk.vector));
    }
  }

  /** Makes a file's staged chunks live (their vectors become visible once the staging's row is gone). */
  publish(storeId: string, fileId: string): void {
    this.statements.publish.run(storeId, fileId);
  }

  /** Drops one file's chunks (text, full-text rows, vectors): all of them, or only the live ones or the staged ones. */
  dropFile(
    storeId: string,
    fileId: string,
    dimension: number | null,
    metric: VectorMetric,
    which: 'all' | 'live' | 'staged' = 'all',
  ): void {
    this.dropFileSlice(storeId, fileId, dimension, metric, which, Number.MAX_SAFE_INTEGER);
  }

  /** Drops up to `limit` of one file's chunks; returns how many. */
  dropFileSlice(
    storeId: string,
    fileId: string,
    dimension: number | null,
    metric: VectorMetric,
    which: 'all' | 'live' | 'staged',
    limit: number,
  ): number {
    const ids = this.statements.fileChunkIds.all(
      storeId,
      fileId,
      which === 'all' ? -1 : which === 'live' ? 1 : 0,
      limit,
    ) as number[];
    const vectors =
      dimension !== null && this.exists(dimension, metric)
        ? this.statement(`DELETE FROM ${tableName(dimension, metric)} WHERE chunk_id = ?`)
        : undefined;
    for (const id of ids) {
      vectors?.run(BigInt(id));
      this.statements.dropChunk.run(id);
    }
    return ids.length;
  }

  /**
   * Drops up to `limit` chunks of a store (text, full-text rows, vectors); returns how many. A store's chunks are
   * dropped a slice at a time (`SqliteVectors.drain`), so a 100k-chunk store never holds the event loop at once.
   */
  dropSlice(storeId: string, dimension: number | null, metric: VectorMetric, limit: number): number {
    const ids = this.statements.storeChunkIds.all(storeId, limit) as number[];
    const vectors =
      dimension !== null && this.exists(dimension, metric)
        ? this.statement(`DELETE FROM ${tableName(dimension, metric)} WHERE chunk_id = ?`)
        : undefined;
    for (const id of ids) {
      vectors?.run(BigInt(id));
      this.statements.dropChunk.run(id);
    }
    return ids.length;
  }

  holdsChunks(storeId: string): boolean {
    return this.statements.anyChunk.get(storeId) !== undefined;
  }

  texts(storeId: string, fileId: string): string[] {
    return this.statements.texts.all(storeId, fileId) as string[];
  }

  /**
   * The query of the `k` nearest chunks of the store by vec0's KNN, inside its partition, and how its rows read
   * as hits; undefined when nothing can match. `fileIds` is applied inside the KNN (`file_id IN (json_each)`):
   * vec0 applies `=` and `IN` while it takes the top k, whereas OR and NOT IN would be applied after it and lose
   * rows silently. The query only reads: `SqliteVectors` runs it on the search thread when there is one.
   */
  nearestQuery(query: {
    storeId: string;
    dimension: number;
    metric: VectorMetric;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): ChunkQuery | undefined {
    if (!this.exists(query.dimension, query.metric) || query.fileIds?.length === 0) return undefined;
    const files = query.fileIds === undefined ? '' : 'AND file_id IN (SELECT value FROM json_each(?2))';
    const sql = `WITH knn AS MATERIALIZED (
         SELECT chunk_id, distance FROM ${tableName(query.dimension, query.metric)}
          WHERE embedding MATCH ?3 AND k = ?4 AND store_id = ?1 ${files} ${STAGED_EXCLUDED})
       SELECT c.store_id, c.file_id, c.seq, c.text, knn.distance FROM knn JOIN vector_chunks c ON c.id = knn.chunk_id
        WHERE c.live = 1 ORDER BY knn.distance, c.id`;
    const fileIds = query.fileIds === undefined ? null : JSON.stringify(query.fileIds);
    const args: SQLInputValue[] = [query.storeId, fileIds, bytesOf(query.vector), Math.min(query.k, MAX_NEAREST_K)];
    const { metric } = query;
    return {
      sql,
      args,
      hits: (rows) =>
        rows.map((row) => {
          const distance = row.distance as number;
          // vec0's cosine distance is 1 - cos; its l2 distance is the euclidean distance itself.
          const score =
            metric === 'cosine' ? similarityScore('cosine', 1 - distance) : similarityScore('euclidean', distance);
          return hitOf(row, score);
        }),
    };
  }

  /** The FTS5 query over the chunks' text: any of the query's words (queryWords), ranked by BM25, scored by textScore. */
  matchQuery(query: { storeId: string; text: string; k: number; fileIds?: readonly string[] }): ChunkQuery | undefined {
    const words = queryWords(query.text);
    if (words.length === 0 || query.fileIds?.length === 0) return undefined;
    const files = query.fileIds === undefined ? '' : 'AND c.file_id IN (SELECT value FROM json_each(?))';
    const sql = `SELECT c.store_id, c.file_id, c.seq, c.text, -bm25(vector_chunks_fts) AS rank
         FROM vector_chunks_fts JOIN vector_chunks c ON c.id = vector_chunks_fts.rowid
        WHERE vector_chunks_fts MATCH ? AND c.store_id = ? AND c.live = 1 ${files}
        ORDER BY rank DESC, c.id LIMIT ?`;
    const args: SQLInputValue[] = [words.map((word) => `"${word}"`).join(' OR '), query.storeId];
    if (query.fileIds !== undefined) args.push(JSON.stringify(query.fileIds));
    args.push(Math.min(query.k, MAX_NEAREST_K));
    return { sql, args, hits: (rows) => rows.map((row) => hitOf(row, textScore(row.rank as number))) };
  }

  /** Runs a search query on this connection (an in-memory database has no search thread). */
  runHere(query: ChunkQuery): ChunkHit[] {
    return query.hits(this.statement(query.sql).all(...query.args));
  }

  /** The vec0 table of this dimension and metric when it exists (what an `hnsw` store's graph is read from). */
  vectorTable(dimension: number, metric: VectorMetric): string | undefined {
    return this.exists(dimension, metric) ? tableName(dimension, metric) : undefined;
  }

  private exists(dimension: number, metric: VectorMetric): boolean {
    const table = tableName(dimension, metric);
    if (this.tables.has(table)) return true;
    if (this.statements.tableExists.get(table) === undefined) return false;
    this.tables.add(table);
    return true;
  }

  private ensureTable(dimension: number, metric: VectorMetric): string {
    const table = tableName(dimension, metric);
    if (this.exists(dimension, metric)) return table;
    this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING vec0(
      store_id TEXT PARTITION KEY,
      file_id TEXT,
      gen INTEGER,
      chunk_id INTEGER PRIMARY KEY,
      embedding FLOAT[${dimension}] distance_metric=${metric === 'cosine' ? 'cosine' : 'l2'}
    )`);
    this.tables.add(table);
    return table;
  }

  /** A statement prepared once per text (the vec0 statements name their table). */
  private statement(sql: string): Sqlite.Statement<unknown[], Row> {
    let statement = this.cached.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[], Row>(sql);
      this.cached.set(sql, statement);
    }
    return statement;
  }
}

/** How many files of one store may be staged at once (`sqlite-vector-completion.ts`); more complete at once. */
export const MAX_STAGINGS = 8;

/**
 * The KNN's exclusion of staged vectors: one `gen != (the store's i-th staging)` per slot. vec0 applies `!=` on a
 * metadata column inside the KNN (OR and NOT IN only after it), and the subqueries are read in the query's own
 * snapshot, so a file staged or completed meanwhile is seen consistently.
 */
const STAGED_EXCLUDED = Array.from(
  { length: MAX_STAGINGS },
  (_, i) =>
    `AND gen != coalesce((SELECT gen FROM vector_stagings WHERE store_id = ?1 ORDER BY gen LIMIT 1 OFFSET ${i}), -1)`,
).join(' ');

/** The vec0 table of one dimension and metric; the store's record says which (both are fixed once set). */
function tableName(dimension: number, metric: VectorMetric): string {
  if (!Number.isInteger(dimension) || dimension < 1) throw new RangeError(`invalid dimension ${dimension}`);
  if (metric === 'dot') throw new RangeError('sqlite-vec has no dot-product metric');
  return `vec_d${dimension}_${metric === 'cosine' ? 'cosine' : 'l2'}`;
}

/** The vector's own bytes (Float32, the platform's little-endian), which vec0 reads as FLOAT[n]. */
function bytesOf(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

function hitOf(row: Row, score: number): ChunkHit {
  return {
    storeId: row.store_id as string,
    fileId: row.file_id as string,
    seq: row.seq as number,
    text: row.text as string,
    score,
  };
}

function prepare(db: Sqlite.Database) {
  return {
    insertChunk: db.prepare<[string, string, number, string, number, number]>(
      'INSERT INTO vector_chunks (store_id, file_id, seq, text, tokens, live) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    fileChunkIds: db
      .prepare<[string, string, number, number]>(
        'SELECT id FROM vector_chunks WHERE store_id = ? AND file_id = ? AND (?3 < 0 OR live = ?3) LIMIT ?4',
      )
      .pluck(),
    publish: db.prepare<[string, string]>(
      'UPDATE vector_chunks SET live = 1 WHERE store_id = ? AND file_id = ? AND live = 0',
    ),
    storeChunkIds: db.prepare<[string, number]>('SELECT id FROM vector_chunks WHERE store_id = ? LIMIT ?').pluck(),
    dropChunk: db.prepare<[number]>('DELETE FROM vector_chunks WHERE id = ?'),
    anyChunk: db.prepare<[string]>('SELECT 1 FROM vector_chunks WHERE store_id = ? LIMIT 1').pluck(),
    texts: db
      .prepare<[string, string]>(
        'SELECT text FROM vector_chunks WHERE store_id = ? AND file_id = ? AND live = 1 ORDER BY seq',
      )
      .pluck(),
    tableExists: db.prepare<[string]>("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").pluck(),
  };
}
