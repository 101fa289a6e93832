import { Readable } from 'node:stream';
import type { Pool, PoolClient } from 'pg';
import { countedPieces, type ContentDigest } from '../content-stream.js';

/** The size of one `bytea` row: big enough that a row's overhead is nothing, small enough to hold in memory. */
export const CHUNK_BYTES = 1024 * 1024;

/**
 * Bytes in PostgreSQL as numbered `bytea` rows of CHUNK_BYTES (table `<prefix>blob_chunks`), written inside the
 * caller's transaction (so a write that fails or is cut off leaves nothing: ROLLBACK) and read back one row at a
 * time, so neither side ever holds more than a chunk or two. Chosen over large objects (lo_*): plain rows are
 * replicated, dumped and deleted like any row, and need no `lo_unlink` bookkeeping (docs/files.md).
 */
export class PostgresBlobs {
  constructor(
    private readonly pool: Pool,
    private readonly table: string,
  ) {}

  /** Writes `content` as blob `key` through `client` (inside its open transaction). */
  async write(
    client: PoolClient,
    key: string,
    content: AsyncIterable<Uint8Array>,
    maxBytes: number,
  ): Promise<ContentDigest> {
    const counted = countedPieces(content, maxBytes);
    let seq = 0;
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      const data = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await client.query(`INSERT INTO ${this.table} (blob, seq, data) VALUES ($1, $2, $3)`, [key, seq++, data]);
    };
    for await (const piece of counted.pieces) {
      let at = 0;
      while (at < piece.byteLength) {
        const take = Math.min(piece.byteLength - at, CHUNK_BYTES - pendingBytes);
        pending.push(piece.subarray(at, at + take));
        pendingBytes += take;
        at += take;
        if (pendingBytes === CHUNK_BYTES) await flush();
      }
    }
    await flush();
    return counted.digest();
  }

  /**
   * The bytes of blob `key` (`bytes` long), a row at a time. A blob deleted while it is read ends the stream with an
   * error, never early as if whole: a reader (a download, a batch's input stored in its second pass) then fails
   * rather than keep a shorter copy.
   */
  read(key: string, bytes: number): Readable {
    const { pool, table } = this;
    async function* rows(): AsyncGenerator<Buffer> {
      let read = 0;
      for (let seq = 0; read < bytes; seq++) {
        const result = await pool.query<{ data: Buffer }>(`SELECT data FROM ${table} WHERE blob = $1 AND seq = $2`, [
          key,
          seq,
        ]);
        const row = result.rows[0];
        if (!row) throw new BlobGone(key, read, bytes);
        read += row.data.byteLength;
        yield row.data;
      }
    }
    return Readable.from(rows(), { objectMode: false, highWaterMark: 1 });
  }

  async remove(keys: readonly string[], client: Pick<Pool, 'query'> = this.pool): Promise<void> {
    if (keys.length > 0) await client.query(`DELETE FROM ${this.table} WHERE blob = ANY($1)`, [keys]);
  }
}

/** A blob removed (its file deleted) while it was being read: the reader gets this, not a shorter stream. */
export class BlobGone extends Error {
  constructor(key: string, read: number, bytes: number) {
    super(`the stored bytes of ${key} were removed while being read (${read} of ${bytes} bytes read)`);
    this.name = 'BlobGone';
  }
}

/** Runs `fn` in a transaction on one client of `pool` (ROLLBACK when it throws). */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
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
