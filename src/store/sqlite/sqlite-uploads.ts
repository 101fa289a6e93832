import type { Readable } from 'node:stream';
import type * as Sqlite from './database.js';
import {
  UploadBytesExceeded,
  type StoredPart,
  type StoredUpload,
  type StraySweep,
  type UploadStatus,
  type UploadStore,
} from '../file-contract.js';
import type { DiskContent } from './disk-content.js';
import { removeStrays } from './stray-bytes.js';
import { UPLOAD_COLUMNS as COLUMNS, uploadOf, uploadValuesOf, type UploadRow } from '../file-rows.js';

interface PartRow {
  id: string;
  upload_id: string;
  bytes: number;
  created_ms: number;
}

/** How long after its expiry an upload caught `completing` (a process that died mid-completion) is swept. */
const COMPLETING_GRACE_MS = 86_400_000;

const partOf = (row: PartRow): StoredPart => ({
  id: row.id,
  uploadId: row.upload_id,
  bytes: row.bytes,
  createdMs: row.created_ms,
});

/** A part's file name under DATA_DIR/uploads (both ids are the gateway's own: `upload_...`, `part_...`). */
const partName = (uploadId: string, partId: string) => `${uploadId}.${partId}`;

/**
 * The embedded upload store: uploads and their parts in the SQLite file (tables `uploads`, `upload_parts`,
 * migration 16), each part's bytes a file under DATA_DIR/uploads. A part is recorded only after its bytes are on
 * disk, in the same step that checks the upload is still pending: parts survive a restart, and a part cut off
 * mid-way leaves no record (its bytes are removed), so the caller sends it again. A crash between a part's bytes and
 * its record (or, dropping parts, between the records and the bytes) leaves bytes no record names: `sweepStrays`
 * removes them once old enough (stray-bytes.ts).
 */
export class SqliteUploadStore implements UploadStore {
  readonly kind = 'embedded';
  private readonly insert: Sqlite.Statement;
  private readonly one: Sqlite.Statement<[string, string], UploadRow>;
  private readonly anyOwner: Sqlite.Statement<[string], UploadRow>;
  private readonly status: Sqlite.Statement<[string], string>;
  private readonly partCount: Sqlite.Statement<[string], number>;
  private readonly heldBytes: Sqlite.Statement<[string], number>;
  private readonly insertPart: Sqlite.Statement<[string, string, number, number]>;
  private readonly partRows: Sqlite.Statement<[string], PartRow>;
  private readonly move: Sqlite.Statement<[string, string | null, string, string]>;
  private readonly presign: Sqlite.Statement<[string, string]>;
  private readonly take: Sqlite.Statement<[string, string]>;
  private readonly release: Sqlite.Statement<[string, string]>;
  private readonly removeParts: Sqlite.Statement<[string]>;
  private readonly expired: Sqlite.Statement<[number, number, number], string>;
  private readonly removeUpload: Sqlite.Statement<[string]>;
  private readonly partExists: Sqlite.Statement<[string, string], number>;

  constructor(
    private readonly db: Sqlite.Database,
    private readonly content: DiskContent,
  ) {
    this.insert = db.prepare(`INSERT INTO uploads (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.one = db.prepare(`SELECT ${COLUMNS} FROM uploads WHERE id = ? AND owner = ?`);
    this.anyOwner = db.prepare(`SELECT ${COLUMNS} FROM uploads WHERE id = ?`);
    this.status = db.prepare<[string], string>('SELECT status FROM uploads WHERE id = ?').pluck();
    this.partCount = db.prepare<[string], number>('SELECT count(*) FROM upload_parts WHERE upload_id = ?').pluck();
    this.heldBytes = db
      .prepare<[string], number>('SELECT coalesce(sum(bytes), 0) FROM upload_parts WHERE upload_id = ?')
      .pluck();
    this.insertPart = db.prepare('INSERT INTO upload_parts (upload_id, id, bytes, created_ms) VALUES (?, ?, ?, ?)');
    this.partRows = db.prepare(
      'SELECT id, upload_id, bytes, created_ms FROM upload_parts WHERE upload_id = ? ORDER BY seq',
    );
    this.move = db.prepare('UPDATE uploads SET status = ?, file_id = coalesce(?, file_id) WHERE id = ? AND status = ?');
    this.presign = db.prepare(
      `UPDATE uploads SET presign_nonce = ?, presign_used = 0 WHERE id = ? AND status = 'pending'`,
    );
    this.take = db.prepare(
      `UPDATE uploads SET presign_used = 1 WHERE id = ? AND presign_nonce = ? AND presign_used = 0 AND status = 'pending'`,
    );
    this.release = db.prepare('UPDATE uploads SET presign_used = 0 WHERE id = ? AND presign_nonce = ?');
    this.removeParts = db.prepare('DELETE FROM upload_parts WHERE upload_id = ?');
    this.expired = db
      .prepare<[number, number, number], string>(
        `SELECT id FROM uploads WHERE expires_ms <= ? AND (status <> 'completing' OR expires_ms <= ?) LIMIT ?`,
      )
      .pluck();
    this.removeUpload = db.prepare('DELETE FROM uploads WHERE id = ?');
    this.partExists = db
      .prepare<[string, string], number>('SELECT 1 FROM upload_parts WHERE upload_id = ? AND id = ?')
      .pluck();
  }

  /** Whether a record names the part (its upload in any state): its bytes are then not a stray. */
  hasPart(uploadId: string, partId: string): boolean {
    return this.partExists.get(uploadId, partId) !== undefined;
  }

  sweepStrays(sweep: StraySweep): Promise<number> {
    return removeStrays(this.content.dir, (name) => this.strayPart(name), sweep);
  }

  /** A part file (`<upload id>.<part id>`, partName) no record names; another name is not this store's. */
  private strayPart(name: string): boolean {
    const dot = name.indexOf('.');
    if (dot <= 0 || dot === name.length - 1) return false;
    return !this.hasPart(name.slice(0, dot), name.slice(dot + 1));
  }

  async create(u: StoredUpload): Promise<void> {
    this.insert.run(...uploadValuesOf(u, u.presignUsed ? 1 : 0));
  }

  async get(owner: string, id: string): Promise<StoredUpload | undefined> {
    const row = this.one.get(id, owner);
    return row ? uploadOf(row) : undefined;
  }

  async byId(id: string): Promise<StoredUpload | undefined> {
    const row = this.anyOwner.get(id);
    return row ? uploadOf(row) : undefined;
  }

  async putPart(
    uploadId: string,
    partId: string,
    content: AsyncIterable<Uint8Array>,
    bounds: { maxBytes: number; maxParts: number; maxHeldBytes?: number },
    nowMs = Date.now(),
  ): Promise<StoredPart | undefined> {
    const name = partName(uploadId, partId);
    const { bytes } = await this.content.write(name, content, bounds.maxBytes);
    // One immediate transaction: the checks and the insert cannot interleave with another part's.
    const recorded = this.db.transaction((): true | false | UploadBytesExceeded => {
      if (this.status.get(uploadId) !== 'pending' || this.partCount.get(uploadId)! >= bounds.maxParts) return false;
      const held = this.heldBytes.get(uploadId)!;
      if (bounds.maxHeldBytes !== undefined && held + bytes > bounds.maxHeldBytes)
        return new UploadBytesExceeded(held, bytes);
      this.insertPart.run(uploadId, partId, bytes, nowMs);
      return true;
    });
    let outcome: true | false | UploadBytesExceeded;
    try {
      outcome = recorded.immediate();
    } catch (error) {
      await this.content.remove(name);
      throw error;
    }
    if (outcome === true) return { id: partId, uploadId, bytes, createdMs: nowMs };
    await this.content.remove(name);
    if (outcome instanceof UploadBytesExceeded) throw outcome;
    return undefined;
  }

  async parts(uploadId: string): Promise<StoredPart[]> {
    return this.partRows.all(uploadId).map(partOf);
  }

  async readPart(uploadId: string, partId: string): Promise<Readable> {
    const stream = await this.content.open(partName(uploadId, partId));
    if (!stream) throw new Error(`the bytes of part ${partId} are missing`);
    return stream;
  }

  async transition(id: string, from: UploadStatus, to: UploadStatus, fileId?: string): Promise<boolean> {
    return this.move.run(to, fileId ?? null, id, from).changes > 0;
  }

  async setPresign(id: string, nonce: string): Promise<boolean> {
    return this.presign.run(nonce, id).changes > 0;
  }

  async takePresign(id: string, nonce: string): Promise<boolean> {
    return this.take.run(id, nonce).changes > 0;
  }

  async releasePresign(id: string, nonce: string): Promise<void> {
    this.release.run(id, nonce);
  }

  async dropParts(uploadId: string): Promise<void> {
    const parts = this.partRows.all(uploadId);
    this.removeParts.run(uploadId);
    for (const part of parts) await this.content.remove(partName(uploadId, part.id));
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    const ids = this.expired.all(nowMs, nowMs - COMPLETING_GRACE_MS, limit);
    for (const id of ids) {
      await this.dropParts(id);
      this.removeUpload.run(id);
    }
    return ids.length;
  }
}
