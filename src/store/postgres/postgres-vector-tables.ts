import type { Pool, PoolClient } from 'pg';
import type { ListPage, ListQuery, NewChunk, VectorStoreRecord } from '../vector-contract.js';
import {
  FILE_COLUMNS,
  STORE_COLUMNS,
  pageOf,
  pageSql,
  storeOf,
  type CountRow,
  type Cursor,
  type FileRow,
  type StoreRow,
} from '../vector-rows.js';
import type { PgvectorIndex } from './pgvector-index.js';
import { vectorBytes } from './vector-scan.js';

/** Chunks written per INSERT (unnest of arrays): a 1,536-dimension batch is ~6 MB of parameters. */
const INSERT_ROWS = 1000;

/**
 * The PostgreSQL vector store's row-level statements, shared by its store side (`postgres-vectors.ts`) and its
 * ingestion side (`postgres-vector-ingest.ts`): rows read as records, pages of lists, a file's chunks written
 * and dropped (each moving the store's version, which the exact scan's cache is checked against).
 */
export class PostgresVectorTables {
  constructor(
    private readonly pool: Pool,
    private readonly p: string,
    private readonly pgvector: PgvectorIndex | undefined,
  ) {}

  async end(
    db: Pick<Pool, 'query'>,
    to: {
      storeId: string;
      fileId: string;
      holder: string;
      status: string;
      code: string | null;
      message: string | null;
    },
  ): Promise<boolean> {
    const ended = await db.query(
      `UPDATE ${this.p}vector_store_files SET status = $1, error_code = $2, error_message = $3, holder = NULL,
         lease_until_ms = 0 WHERE store_id = $4 AND file_id = $5 AND holder = $6 AND status = 'in_progress'`,
      [to.status, to.code, to.message, to.storeId, to.fileId, to.holder],
    );
    return (ended.rowCount ?? 0) > 0;
  }

  /** Writes a file's chunks, INSERT_ROWS at a time, and their pgvector copies where the server has it. */
  async insertChunks(client: PoolClient, storeId: string, fileId: string, chunks: readonly NewChunk[]) {
    for (let at = 0; at < chunks.length; at += INSERT_ROWS) {
      const slice = chunks.slice(at, at + INSERT_ROWS);
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO ${this.p}vector_chunks (store_id, file_id, seq, text, tokens, embedding)
         SELECT $1::text, $2::text, * FROM unnest($3::int[], $4::text[], $5::int[], $6::bytea[]) RETURNING id`,
        [
          storeId,
          fileId,
          slice.map((chunk) => chunk.seq),
          slice.map((chunk) => chunk.text),
          slice.map((chunk) => chunk.tokens),
          slice.map((chunk) => vectorBytes(chunk.vector)),
        ],
      );
      await this.pgvector?.write(
        client,
        rows.map((row) => Number(row.id)),
        slice.map((chunk) => chunk.vector),
      );
    }
    if (chunks.length > 0) await this.bumpVersion(client, storeId);
  }

  async dropFileChunks(client: PoolClient, storeId: string, fileId: string): Promise<void> {
    const dropped = await client.query(`DELETE FROM ${this.p}vector_chunks WHERE store_id = $1 AND file_id = $2`, [
      storeId,
      fileId,
    ]);
    if ((dropped.rowCount ?? 0) > 0) await this.bumpVersion(client, storeId);
  }

  /** Every change of a store's chunks moves its version: the scan's cached copy of the store is then stale. */
  async bumpVersion(client: PoolClient, storeId: string): Promise<void> {
    await client.query(`UPDATE ${this.p}vector_stores SET chunks_version = chunks_version + 1 WHERE id = $1`, [
      storeId,
    ]);
  }

  async storeRow(db: Pick<Pool, 'query'>, id: string, owner?: string, lock = ''): Promise<StoreRow | undefined> {
    const args = owner === undefined ? [id] : [id, owner];
    const { rows } = await db.query<StoreRow>(
      `SELECT ${STORE_COLUMNS} FROM ${this.p}vector_stores WHERE id = $1 ${owner === undefined ? '' : 'AND owner = $2'} ${lock}`,
      args,
    );
    return rows[0];
  }

  async fileRow(db: Pick<Pool, 'query'>, storeId: string, fileId: string, owner: string): Promise<FileRow | undefined> {
    const { rows } = await db.query<FileRow>(
      `SELECT ${FILE_COLUMNS} FROM ${this.p}vector_store_files WHERE store_id = $1 AND file_id = $2 AND owner = $3`,
      [storeId, fileId, owner],
    );
    return rows[0];
  }

  async recordOf(row: StoreRow): Promise<VectorStoreRecord> {
    const { rows } = await this.pool.query<CountRow>(
      `SELECT status, count(*) AS n, sum(usage_bytes) AS bytes FROM ${this.p}vector_store_files
        WHERE store_id = $1 GROUP BY status`,
      [row.id],
    );
    return storeOf(row, rows);
  }

  /** One page of a list (`pageSql`). */
  async page<T extends object>(spec: {
    table: string;
    columns: string;
    idColumn: string;
    where: string[];
    args: unknown[];
    query: ListQuery;
    cursors: { after?: Cursor; before?: Cursor };
  }): Promise<ListPage<T>> {
    const args = [...spec.args];
    const page = pageSql(spec.query, spec.cursors, spec.idColumn, (value) => `$${args.push(value)}`);
    args.push(spec.query.limit + 1);
    const { rows } = await this.pool.query<T & Record<string, unknown>>(
      `SELECT ${spec.columns} FROM ${this.p}${spec.table} WHERE ${[...spec.where, ...page.where].join(' AND ')}
        ${page.orderBy} LIMIT $${args.length}`,
      args,
    );
    return pageOf(rows as T[], spec.query.limit, page.reverse);
  }
}
