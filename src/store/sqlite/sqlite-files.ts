import type { Readable } from 'node:stream';
import type * as Sqlite from './database.js';
import type { FileListPage, FileStore, NewFile, StoredFile, StraySweep } from '../file-contract.js';
import type { DiskContent } from './disk-content.js';
import { removeStrays } from './stray-bytes.js';
import { FILE_COLUMNS as COLUMNS, fileOf, fileValuesOf, type FileRow } from '../file-rows.js';

/**
 * The embedded file store: records in the SQLite file (table `files`, migration 16), bytes as one file each under
 * DATA_DIR/files named by the file's id. The bytes are written (and flushed) before the record, so a record never
 * names missing bytes; a delete removes the record first, so a reader either finds both or neither. A crash between
 * the two steps leaves bytes no record names: `sweepStrays` removes them once old enough (stray-bytes.ts).
 */
export class SqliteFileStore implements FileStore {
  readonly kind = 'embedded';
  private readonly insert: Sqlite.Statement;
  private readonly one: Sqlite.Statement<[string, string, number], FileRow>;
  private readonly remove: Sqlite.Statement<[string, string, number]>;
  private readonly expired: Sqlite.Statement<[number, number], string>;
  private readonly removeById: Sqlite.Statement<[string]>;
  private readonly exists: Sqlite.Statement<[string], number>;

  constructor(
    private readonly db: Sqlite.Database,
    private readonly content: DiskContent,
  ) {
    this.insert = db.prepare(`INSERT INTO files (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.one = db.prepare(`SELECT ${COLUMNS} FROM files WHERE id = ? AND owner = ? AND expires_ms > ?`);
    this.remove = db.prepare('DELETE FROM files WHERE id = ? AND owner = ? AND expires_ms > ?');
    this.expired = db.prepare<[number, number], string>('SELECT id FROM files WHERE expires_ms <= ? LIMIT ?').pluck();
    this.removeById = db.prepare('DELETE FROM files WHERE id = ?');
    this.exists = db.prepare<[string], number>('SELECT 1 FROM files WHERE id = ?').pluck();
  }

  /** Whether a record names file `id`, expired or not (an expired one's bytes are the expiry sweep's). */
  has(id: string): boolean {
    return this.exists.get(id) !== undefined;
  }

  sweepStrays(sweep: StraySweep): Promise<number> {
    return removeStrays(this.content.dir, (name) => !this.has(name), sweep);
  }

  async put(
    id: string,
    content: AsyncIterable<Uint8Array>,
    maxBytes: number,
    describe: () => NewFile,
  ): Promise<StoredFile> {
    const digest = await this.content.write(id, content, maxBytes);
    try {
      const stored: StoredFile = { ...describe(), id, ...digest };
      this.insert.run(...fileValuesOf(stored));
      return stored;
    } catch (error) {
      await this.content.remove(id);
      throw error;
    }
  }

  async get(owner: string, id: string, nowMs = Date.now()): Promise<StoredFile | undefined> {
    const row = this.one.get(id, owner, nowMs);
    return row ? fileOf(row) : undefined;
  }

  async read(
    owner: string,
    id: string,
    nowMs = Date.now(),
  ): Promise<{ file: StoredFile; stream: Readable } | undefined> {
    const file = await this.get(owner, id, nowMs);
    if (!file) return undefined;
    const stream = await this.content.open(id);
    return stream ? { file, stream } : undefined;
  }

  async list(
    owner: string,
    query: { after?: string; limit: number; order: 'asc' | 'desc'; purpose?: string },
    nowMs = Date.now(),
  ): Promise<FileListPage> {
    const after = query.after === undefined ? undefined : this.one.get(query.after, owner, nowMs);
    const cmp = query.order === 'asc' ? '>' : '<';
    const dir = query.order === 'asc' ? 'ASC' : 'DESC';
    const where = ['owner = ?', 'expires_ms > ?'];
    const args: Array<string | number> = [owner, nowMs];
    if (query.purpose !== undefined) {
      where.push('purpose = ?');
      args.push(query.purpose);
    }
    if (after) {
      where.push(`(created_ms ${cmp} ? OR (created_ms = ? AND id ${cmp} ?))`);
      args.push(after.created_ms, after.created_ms, after.id);
    }
    // A handful of shapes (order x purpose x cursor): SQLite's statement cache is not needed for them.
    const rows = this.db
      .prepare<unknown[], FileRow>(
        `SELECT ${COLUMNS} FROM files WHERE ${where.join(' AND ')} ORDER BY created_ms ${dir}, id ${dir} LIMIT ?`,
      )
      .all(...args, query.limit + 1);
    return { files: rows.slice(0, query.limit).map(fileOf), hasMore: rows.length > query.limit };
  }

  async delete(owner: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const removed = this.remove.run(id, owner, nowMs).changes > 0;
    if (removed) await this.content.remove(id);
    return removed;
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    const ids = this.expired.all(nowMs, limit);
    for (const id of ids) {
      this.removeById.run(id);
      await this.content.remove(id);
    }
    return ids.length;
  }
}
