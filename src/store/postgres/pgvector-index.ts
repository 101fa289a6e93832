import type { Pool, PoolClient } from 'pg';
import type { VectorMetric } from '../vector-contract.js';

/**
 * Everything that knows pgvector (https://github.com/pgvector/pgvector), used only when the server offers the
 * extension (`PgvectorIndex.open` finds it in pg_available_extensions); then the store's capabilities add `hnsw`.
 * The vectors stay in the `embedding` bytea column (the source of truth, what the exact scan reads); this adds a
 * copy as `vector` in `embedding_vector` and, per dimension and metric, a partial HNSW index over it.
 *
 * NOT TESTED HERE: this machine's PostgreSQL 15 has no pgvector and Debian's repositories here do not offer it
 * (docs/plans/retrieval-research.md section 2). The contract suite tests only the detection (absent); the
 * statements below follow pgvector 0.8's documentation and must be run by the suite wherever the extension exists
 * before `hnsw` is relied on.
 *
 * The column is `vector` without a dimension (stores differ), so each index is on the expression
 * `embedding_vector::vector(n)` restricted to the rows of that dimension; a search repeats both to use it.
 */
export class PgvectorIndex {
  private readonly indexes = new Set<string>();

  private constructor(
    private readonly pool: Pool,
    private readonly table: string,
  ) {}

  /** Whether the server could load pgvector (it need not be installed in this database yet). */
  static async available(pool: Pick<Pool, 'query'>): Promise<boolean> {
    const { rows } = await pool.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    return rows.length > 0;
  }

  /** The index over `table` (the chunks), or undefined when the server has no pgvector. */
  static async open(pool: Pool, table: string): Promise<PgvectorIndex | undefined> {
    if (!(await PgvectorIndex.available(pool))) return undefined;
    await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    await pool.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS embedding_vector vector`);
    return new PgvectorIndex(pool, table);
  }

  /** Copies the new chunks' vectors (rows `ids`, already inserted by `client`'s transaction) into the column. */
  async write(client: PoolClient, ids: readonly number[], vectors: readonly Float32Array[]): Promise<void> {
    await client.query(
      `UPDATE ${this.table} AS c SET embedding_vector = v.value::vector
         FROM unnest($1::bigint[], $2::text[]) AS v(id, value) WHERE c.id = v.id`,
      [ids, vectors.map((vector) => `[${Array.from(vector).join(',')}]`)],
    );
  }

  /** Builds the HNSW index of one dimension and metric once (CONCURRENTLY: writes go on meanwhile). */
  async ensureIndex(dimension: number, metric: VectorMetric): Promise<void> {
    const name = `${this.table}_hnsw_d${dimension}_${metric}`;
    if (this.indexes.has(name)) return;
    await this.pool.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${this.table}
         USING hnsw ((embedding_vector::vector(${dimension})) ${OPERATOR_CLASS[metric]})
         WHERE vector_dims(embedding_vector) = ${dimension}`,
    );
    this.indexes.add(name);
  }

  /**
   * The `k` nearest chunks of a store by the HNSW index (approximate), with what `similarityScore` takes:
   * `<=>` is the cosine distance (1 - cos), `<#>` the negated inner product, `<->` the euclidean distance.
   * Iterative scans (0.8) keep filling the k when the store and file filters reject the graph's first candidates.
   */
  async nearest(query: {
    storeId: string;
    dimension: number;
    metric: VectorMetric;
    vector: Float32Array;
    k: number;
    fileIds?: readonly string[];
  }): Promise<{ id: number; value: number }[]> {
    const n = query.dimension;
    const operator = OPERATOR[query.metric];
    const args: unknown[] = [`[${Array.from(query.vector).join(',')}]`, query.storeId, query.k];
    const files = query.fileIds === undefined ? '' : 'AND file_id = ANY($4::text[])';
    if (query.fileIds !== undefined) args.push(query.fileIds);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("SET LOCAL hnsw.iterative_scan = 'relaxed_order'");
      const { rows } = await client.query<{ id: string; distance: number }>(
        `SELECT id, embedding_vector::vector(${n}) ${operator} $1::vector(${n}) AS distance FROM ${this.table}
          WHERE vector_dims(embedding_vector) = ${n} AND store_id = $2 ${files}
          ORDER BY embedding_vector::vector(${n}) ${operator} $1::vector(${n}) LIMIT $3`,
        args,
      );
      await client.query('COMMIT');
      return rows.map((row) => ({ id: Number(row.id), value: valueOf(query.metric, Number(row.distance)) }));
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

const OPERATOR_CLASS: Record<VectorMetric, string> = {
  cosine: 'vector_cosine_ops',
  dot: 'vector_ip_ops',
  euclidean: 'vector_l2_ops',
};
const OPERATOR: Record<VectorMetric, string> = { cosine: '<=>', dot: '<#>', euclidean: '<->' };

/** pgvector's distance as the value `similarityScore` takes: cos, the inner product, the euclidean distance. */
function valueOf(metric: VectorMetric, distance: number): number {
  if (metric === 'cosine') return 1 - distance;
  if (metric === 'dot') return -distance;
  return distance;
}
