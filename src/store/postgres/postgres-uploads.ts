import type { Readable } from 'node:stream';
import type { Pool } from 'pg';
import {
  UploadBytesExceeded,
  type StoredPart,
  type StoredUpload,
  type UploadStatus,
  type UploadStore,
} from '../file-contract.js';
import { inTransaction, type PostgresBlobs } from './postgres-blobs.js';
import { UPLOAD_COLUMNS as COLUMNS, uploadOf, uploadValuesOf, type UploadRow } from '../file-rows.js';

const COMPLETING_GRACE_MS = 86_400_000;

const partKey = (uploadId: string, partId: string) => `${uploadId}.${partId}`;

/**
 * Uploads in PostgreSQL: records in `<prefix>uploads` / `<prefix>upload_parts`, each part's bytes chunk rows
 * written with its record in one transaction, which first locks the upload's row (`FOR UPDATE`) to check it is
 * still pending and under its part count.
 */
export class PostgresUploadStore implements UploadStore {
  readonly kind = 'postgres';

  constructor(
    private readonly pool: Pool,
    private readonly blobs: PostgresBlobs,
    private readonly p: string,
  ) {}

  async create(u: StoredUpload): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.p}uploads (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      uploadValuesOf(u, u.presignUsed),
    );
  }

  async get(owner: string, id: string): Promise<StoredUpload | undefined> {
    const result = await this.pool.query<UploadRow>(
      `SELECT ${COLUMNS} FROM ${this.p}uploads WHERE id = $1 AND owner = $2`,
      [id, owner],
    );
    return result.rows[0] ? uploadOf(result.rows[0]) : undefined;
  }

  async byId(id: string): Promise<StoredUpload | undefined> {
    const result = await this.pool.query<UploadRow>(`SELECT ${COLUMNS} FROM ${this.p}uploads WHERE id = $1`, [id]);
    return result.rows[0] ? uploadOf(result.rows[0]) : undefined;
  }

  async putPart(
    uploadId: string,
    partId: string,
    content: AsyncIterable<Uint8Array>,
    bounds: { maxBytes: number; maxParts: number; maxHeldBytes?: number },
    nowMs = Date.now(),
  ): Promise<StoredPart | undefined> {
    return inTransaction(this.pool, async (client) => {
      const { bytes } = await this.blobs.write(client, partKey(uploadId, partId), content, bounds.maxBytes);
      // Locked only now, once the bytes are in: a slow part does not hold up the upload's other parts.
      const state = await client.query<{ status: string }>(
        `SELECT status FROM ${this.p}uploads WHERE id = $1 FOR UPDATE`,
        [uploadId],
      );
      // Counted under the upload's lock, which every part's transaction takes: none of them interleave.
      const held = await client.query<{ parts: string; held: string }>(
        `SELECT count(*) AS parts, coalesce(sum(bytes), 0) AS held FROM ${this.p}upload_parts WHERE upload_id = $1`,
        [uploadId],
      );
      const row = state.rows[0];
      const parts = Number(held.rows[0]?.parts ?? 0);
      if (!row || row.status !== 'pending' || parts >= bounds.maxParts) {
        throw new NotRecorded();
      }
      const heldBytes = Number(held.rows[0]?.held ?? 0);
      if (bounds.maxHeldBytes !== undefined && heldBytes + bytes > bounds.maxHeldBytes) {
        throw new UploadBytesExceeded(heldBytes, bytes);
      }
      await client.query(
        `INSERT INTO ${this.p}upload_parts (upload_id, id, bytes, created_ms) VALUES ($1, $2, $3, $4)`,
        [uploadId, partId, bytes, nowMs],
      );
      return { id: partId, uploadId, bytes, createdMs: nowMs };
    }).catch((error: unknown) => {
      if (error instanceof NotRecorded) return undefined;
      throw error;
    });
  }

  async parts(uploadId: string): Promise<StoredPart[]> {
    const result = await this.pool.query<{ id: string; bytes: string; created_ms: string }>(
      `SELECT id, bytes, created_ms FROM ${this.p}upload_parts WHERE upload_id = $1 ORDER BY seq`,
      [uploadId],
    );
    return result.rows.map((row) => ({
      id: row.id,
      uploadId,
      bytes: Number(row.bytes),
      createdMs: Number(row.created_ms),
    }));
  }

  async readPart(uploadId: string, partId: string): Promise<Readable> {
    const result = await this.pool.query<{ bytes: string }>(
      `SELECT bytes FROM ${this.p}upload_parts WHERE upload_id = $1 AND id = $2`,
      [uploadId, partId],
    );
    const row = result.rows[0];
    if (!row) throw new Error(`the bytes of part ${partId} are missing`);
    return this.blobs.read(partKey(uploadId, partId), Number(row.bytes));
  }

  async transition(id: string, from: UploadStatus, to: UploadStatus, fileId?: string): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE ${this.p}uploads SET status = $1, file_id = coalesce($2, file_id) WHERE id = $3 AND status = $4`,
      [to, fileId ?? null, id, from],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async setPresign(id: string, nonce: string): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE ${this.p}uploads SET presign_nonce = $1, presign_used = false WHERE id = $2 AND status = 'pending'`,
      [nonce, id],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async takePresign(id: string, nonce: string): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE ${this.p}uploads SET presign_used = true
       WHERE id = $1 AND presign_nonce = $2 AND NOT presign_used AND status = 'pending'`,
      [id, nonce],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async releasePresign(id: string, nonce: string): Promise<void> {
    await this.pool.query(`UPDATE ${this.p}uploads SET presign_used = false WHERE id = $1 AND presign_nonce = $2`, [
      id,
      nonce,
    ]);
  }

  async dropParts(uploadId: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const removed = await client.query<{ id: string }>(
        `DELETE FROM ${this.p}upload_parts WHERE upload_id = $1 RETURNING id`,
        [uploadId],
      );
      await this.blobs.remove(
        removed.rows.map((row) => partKey(uploadId, row.id)),
        client,
      );
    });
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    const result = await this.pool.query<{ id: string }>(
      `SELECT id FROM ${this.p}uploads WHERE expires_ms <= $1 AND (status <> 'completing' OR expires_ms <= $2) LIMIT $3`,
      [nowMs, nowMs - COMPLETING_GRACE_MS, limit],
    );
    for (const { id } of result.rows) {
      await this.dropParts(id);
      await this.pool.query(`DELETE FROM ${this.p}uploads WHERE id = $1`, [id]);
    }
    return result.rows.length;
  }
}

/** The part was not recorded (its upload is no longer pending, or has all its parts): its bytes are rolled back. */
class NotRecorded extends Error {}
