import type { Pool } from 'pg';
import type { ForwardedFile, ForwardedFileStore } from '../file-contract.js';
import { FORWARDED_FILE_COLUMNS, forwardedFileOf, type ForwardedFileRow } from '../file-rows.js';

export const forwardedSchema = (p: string) => `
CREATE TABLE IF NOT EXISTS ${p}forwarded_files (
  file_id TEXT NOT NULL, sha256 TEXT NOT NULL, upstream TEXT NOT NULL, upstream_file_id TEXT NOT NULL,
  created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL, PRIMARY KEY (file_id, sha256, upstream));
CREATE INDEX IF NOT EXISTS ${p}forwarded_files_expiry ON ${p}forwarded_files (expires_ms);`;

/** Files forwarded to upstreams, in PostgreSQL (`files.store: postgres`): shared by every instance. */
export class PostgresForwardedFileStore implements ForwardedFileStore {
  constructor(
    private readonly pool: Pool,
    private readonly p: string,
  ) {}

  async lookup(fileId: string, sha256: string, upstream: string, nowMs = Date.now()): Promise<string | undefined> {
    const result = await this.pool.query<{ upstream_file_id: string }>(
      `SELECT upstream_file_id FROM ${this.p}forwarded_files
       WHERE file_id = $1 AND sha256 = $2 AND upstream = $3 AND expires_ms > $4`,
      [fileId, sha256, upstream, nowMs],
    );
    return result.rows[0]?.upstream_file_id;
  }

  async record(entry: ForwardedFile): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.p}forwarded_files (file_id, sha256, upstream, upstream_file_id, created_ms, expires_ms)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (file_id, sha256, upstream) DO UPDATE SET
         upstream_file_id = EXCLUDED.upstream_file_id, created_ms = EXCLUDED.created_ms, expires_ms = EXCLUDED.expires_ms`,
      [entry.fileId, entry.sha256, entry.upstream, entry.upstreamFileId, entry.createdMs, entry.expiresMs],
    );
  }

  async removeFile(fileId: string): Promise<ForwardedFile[]> {
    const result = await this.pool.query<ForwardedFileRow>(
      `DELETE FROM ${this.p}forwarded_files WHERE file_id = $1 RETURNING ${FORWARDED_FILE_COLUMNS}`,
      [fileId],
    );
    return result.rows.map(forwardedFileOf);
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    const result = await this.pool.query(
      `DELETE FROM ${this.p}forwarded_files WHERE ctid IN
         (SELECT ctid FROM ${this.p}forwarded_files WHERE expires_ms <= $1 LIMIT $2)`,
      [nowMs, limit],
    );
    return result.rowCount ?? 0;
  }
}
