import type { Readable } from 'node:stream';
import type { Pool } from 'pg';
import type {
  FileListPage,
  FileStore,
  ForwardedFileStore,
  NewFile,
  StoredFile,
  UploadStore,
} from '../file-contract.js';
import { migrateUnderLock } from './migrate.js';
import { PostgresBlobs, inTransaction } from './postgres-blobs.js';
import { PostgresUploadStore } from './postgres-uploads.js';
import { forwardedSchema, PostgresForwardedFileStore } from './postgres-forwarded-files.js';
import { PostgresStorageUseStore, storageUseSchema } from './postgres-storage-use.js';
import type { StorageUseStore } from '../storage-use.js';
import { FILE_COLUMNS as COLUMNS, fileOf, fileValuesOf, type FileRow } from '../file-rows.js';

const schema = (p: string) => `
CREATE TABLE IF NOT EXISTS ${p}blob_chunks (blob TEXT NOT NULL, seq INTEGER NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (blob, seq));
ALTER TABLE ${p}blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS ${p}files (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, purpose TEXT NOT NULL, filename TEXT NOT NULL, bytes BIGINT NOT NULL,
  sha256 TEXT NOT NULL, mime_type TEXT, created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ${p}files_owner_order ON ${p}files (owner, created_ms, id);
CREATE INDEX IF NOT EXISTS ${p}files_expiry ON ${p}files (expires_ms);
CREATE TABLE IF NOT EXISTS ${p}uploads (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, filename TEXT NOT NULL, purpose TEXT NOT NULL, bytes BIGINT NOT NULL,
  mime_type TEXT NOT NULL, created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL, file_ttl_ms BIGINT,
  status TEXT NOT NULL, file_id TEXT, presign_nonce TEXT, presign_used BOOLEAN NOT NULL DEFAULT false);
CREATE INDEX IF NOT EXISTS ${p}uploads_expiry ON ${p}uploads (expires_ms);
CREATE TABLE IF NOT EXISTS ${p}upload_parts (
  seq BIGSERIAL PRIMARY KEY, upload_id TEXT NOT NULL, id TEXT NOT NULL, bytes BIGINT NOT NULL,
  created_ms BIGINT NOT NULL, UNIQUE (upload_id, id));`;

/**
 * Files in PostgreSQL (`files.store: postgres`, docs/files.md): the record in `<prefix>files`, the bytes in
 * chunk rows (postgres-blobs.ts), both written in one transaction, so every instance sharing the database sees a
 * file whole or not at all.
 */
export class PostgresFileStore implements FileStore {
  readonly kind = 'postgres';

  constructor(
    private readonly pool: Pool,
    private readonly blobs: PostgresBlobs,
    private readonly p: string,
  ) {}

  async put(
    id: string,
    content: AsyncIterable<Uint8Array>,
    maxBytes: number,
    describe: () => NewFile,
  ): Promise<StoredFile> {
    return inTransaction(this.pool, async (client) => {
      const digest = await this.blobs.write(client, id, content, maxBytes);
      const file: StoredFile = { ...describe(), id, ...digest };
      await client.query(
        `INSERT INTO ${this.p}files (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        fileValuesOf(file),
      );
      return file;
    });
  }

  async get(owner: string, id: string, nowMs = Date.now()): Promise<StoredFile | undefined> {
    const result = await this.pool.query<FileRow>(
      `SELECT ${COLUMNS} FROM ${this.p}files WHERE id = $1 AND owner = $2 AND expires_ms > $3`,
      [id, owner, nowMs],
    );
    const row = result.rows[0];
    return row ? fileOf(row) : undefined;
  }

  async read(
    owner: string,
    id: string,
    nowMs = Date.now(),
  ): Promise<{ file: StoredFile; stream: Readable } | undefined> {
    const file = await this.get(owner, id, nowMs);
    return file ? { file, stream: this.blobs.read(id, file.bytes) } : undefined;
  }

  async list(
    owner: string,
    query: { after?: string; limit: number; order: 'asc' | 'desc'; purpose?: string },
    nowMs = Date.now(),
  ): Promise<FileListPage> {
    const after = query.after === undefined ? undefined : await this.get(owner, query.after, nowMs);
    const cmp = query.order === 'asc' ? '>' : '<';
    const dir = query.order === 'asc' ? 'ASC' : 'DESC';
    const args: unknown[] = [owner, nowMs];
    const where = ['owner = $1', 'expires_ms > $2'];
    if (query.purpose !== undefined) {
      args.push(query.purpose);
      where.push(`purpose = $${args.length}`);
    }
    if (after) {
      args.push(after.createdMs, after.id);
      where.push(`(created_ms, id) ${cmp} ($${args.length - 1}, $${args.length})`);
    }
    args.push(query.limit + 1);
    const result = await this.pool.query<FileRow>(
      `SELECT ${COLUMNS} FROM ${this.p}files WHERE ${where.join(' AND ')} ORDER BY created_ms ${dir}, id ${dir} LIMIT $${args.length}`,
      args,
    );
    return { files: result.rows.slice(0, query.limit).map(fileOf), hasMore: result.rows.length > query.limit };
  }

  async delete(owner: string, id: string, nowMs = Date.now()): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const removed = await client.query(
        `DELETE FROM ${this.p}files WHERE id = $1 AND owner = $2 AND expires_ms > $3`,
        [id, owner, nowMs],
      );
      if ((removed.rowCount ?? 0) === 0) return false;
      await this.blobs.remove([id], client);
      return true;
    });
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const removed = await client.query<{ id: string }>(
        `DELETE FROM ${this.p}files WHERE id IN (SELECT id FROM ${this.p}files WHERE expires_ms <= $1 LIMIT $2) RETURNING id`,
        [nowMs, limit],
      );
      await this.blobs.remove(
        removed.rows.map((row) => row.id),
        client,
      );
      return removed.rows.length;
    });
  }
}

/** Both stores over one pool; `prefix` names the tables (tests use their own). */
export class PostgresFileStores {
  private constructor(
    private readonly pool: Pool,
    readonly files: FileStore,
    readonly uploads: UploadStore,
    readonly forwarded: ForwardedFileStore,
    readonly storage: StorageUseStore,
  ) {}

  static async open(url: string, prefix = 'gw_'): Promise<PostgresFileStores> {
    if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) throw new RangeError(`invalid table prefix ${prefix}`);
    const { default: pg } = await import('pg');
    // Each write holds a client for its transaction (as long as its bytes take to arrive): room for several.
    const pool = new pg.Pool({ connectionString: url, max: 16 });
    pool.on('error', () => {
      // An idle client lost its connection: the next query reconnects (and reports its own error).
    });
    await migrateUnderLock(pool, schema(prefix) + forwardedSchema(prefix) + storageUseSchema(prefix));
    const blobs = new PostgresBlobs(pool, `${prefix}blob_chunks`);
    return new PostgresFileStores(
      pool,
      new PostgresFileStore(pool, blobs, prefix),
      new PostgresUploadStore(pool, blobs, prefix),
      new PostgresForwardedFileStore(pool, prefix),
      new PostgresStorageUseStore(pool, prefix),
    );
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
