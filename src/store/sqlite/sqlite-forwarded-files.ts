import type * as Sqlite from './database.js';
import type { ForwardedFile, ForwardedFileStore } from '../file-contract.js';
import { FORWARDED_FILE_COLUMNS, forwardedFileOf, type ForwardedFileRow } from '../file-rows.js';

/** The embedded store of files forwarded to upstreams (table `forwarded_files`, migration 19). */
export class SqliteForwardedFileStore implements ForwardedFileStore {
  private readonly one: Sqlite.Statement<[string, string, string, number], string>;
  private readonly upsert: Sqlite.Statement<[string, string, string, string, number, number]>;
  private readonly expired: Sqlite.Statement<[number, number]>;
  private readonly ofFile: Sqlite.Statement<[string], ForwardedFileRow>;

  constructor(db: Sqlite.Database) {
    this.one = db
      .prepare<[string, string, string, number], string>(
        'SELECT upstream_file_id FROM forwarded_files WHERE file_id = ? AND sha256 = ? AND upstream = ? AND expires_ms > ?',
      )
      .pluck();
    this.upsert = db.prepare(
      `INSERT INTO forwarded_files (file_id, sha256, upstream, upstream_file_id, created_ms, expires_ms)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (file_id, sha256, upstream) DO UPDATE SET
         upstream_file_id = excluded.upstream_file_id, created_ms = excluded.created_ms, expires_ms = excluded.expires_ms`,
    );
    this.expired = db.prepare(
      'DELETE FROM forwarded_files WHERE rowid IN (SELECT rowid FROM forwarded_files WHERE expires_ms <= ? LIMIT ?)',
    );
    // One statement: the rows it removed are the ones it returns (the primary key starts with file_id).
    this.ofFile = db.prepare<[string], ForwardedFileRow>(
      `DELETE FROM forwarded_files WHERE file_id = ? RETURNING ${FORWARDED_FILE_COLUMNS}`,
    );
  }

  async lookup(fileId: string, sha256: string, upstream: string, nowMs = Date.now()): Promise<string | undefined> {
    return this.one.get(fileId, sha256, upstream, nowMs);
  }

  async record(entry: ForwardedFile): Promise<void> {
    this.upsert.run(entry.fileId, entry.sha256, entry.upstream, entry.upstreamFileId, entry.createdMs, entry.expiresMs);
  }

  async removeFile(fileId: string): Promise<ForwardedFile[]> {
    return this.ofFile.all(fileId).map(forwardedFileOf);
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    return Number(this.expired.run(nowMs, limit).changes);
  }
}
