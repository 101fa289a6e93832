import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FilesConfig } from '../../config/files-schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import {
  ContentTooLarge,
  UploadBytesExceeded,
  type StoredPart,
  type StoredUpload,
  type UploadStore,
} from '../../store/file-contract.js';
import type { FilePurpose, UploadObject, UploadPartObject } from '../../wire/openai-files.js';
import { isOwnId, randomId } from './file-ids.js';
import type { StoredFileService } from './stored-file-service.js';
import { asDiskFull, type StorageQuota } from './storage-quota.js';

export const UPLOAD_ID_PREFIX = 'upload_';
export const PART_ID_PREFIX = 'part_';

export interface UploadCreateInput {
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  mimeType: string;
  /** `expires_after[seconds]`: the age of the file the upload makes. */
  fileTtlSeconds?: number;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * OpenAI's Uploads API (docs/files.md): an upload takes parts until it is completed (its parts, in the order the
 * caller names, become one file), cancelled or expired. Parts are stored whole or not at all, so a part cut off
 * mid-way is simply sent again; parts survive a restart (they are in the store). Presigned PUTs: presign-service.ts.
 */
export class UploadService {
  constructor(
    private readonly uploads: UploadStore,
    private readonly files: StoredFileService,
    private readonly config: FilesConfig,
    private readonly now: () => number = Date.now,
    /** The storage quotas each part reserves its bytes against (none: not counted). */
    private readonly quota?: StorageQuota,
  ) {}

  async create(owner: string, input: UploadCreateInput): Promise<UploadObject> {
    if (input.bytes > this.config.maxUploadBytes) {
      throw new GatewayError('file_too_large', { field: 'bytes', max_bytes: this.config.maxUploadBytes });
    }
    const ttl = input.fileTtlSeconds;
    if (ttl !== undefined && (ttl * 1000 > this.config.maxTtlMs || ttl < 1)) {
      throw new GatewayError('invalid_file_request', {
        field: 'expires_after.seconds',
        problem: `at most ${seconds(this.config.maxTtlMs)}`,
      });
    }
    // An early answer: the parts reserve their bytes (the binding check) as they arrive.
    await this.quota?.assertRoom(owner, input.bytes);
    const createdMs = this.now();
    const upload: StoredUpload = {
      id: randomId(UPLOAD_ID_PREFIX),
      owner,
      filename: input.filename,
      purpose: input.purpose,
      bytes: input.bytes,
      mimeType: input.mimeType,
      createdMs,
      expiresMs: createdMs + this.config.uploadTtlMs,
      fileTtlMs: ttl === undefined ? null : ttl * 1000,
      status: 'pending',
      fileId: null,
      presignNonce: null,
      presignUsed: false,
    };
    await this.uploads.create(upload);
    return this.objectOf(upload, undefined);
  }

  /** The owner's upload (404 `upload_not_found` otherwise), and whether it still takes parts. */
  async find(owner: string, id: string): Promise<StoredUpload> {
    const upload = isOwnId(id, UPLOAD_ID_PREFIX) ? await this.uploads.get(owner, id) : undefined;
    if (!upload) throw new GatewayError('upload_not_found', { id: id.slice(0, 64) });
    return upload;
  }

  private assertPending(upload: StoredUpload): void {
    const status = this.statusOf(upload);
    if (status !== 'pending') throw new GatewayError('upload_not_pending', { id: upload.id, status });
  }

  /**
   * Stores one part. Its bytes are reserved against the owner's storage quota before the first is stored (all of
   * `sizeHint`, the request's Content-Length, when known), and the upload's parts are bounded by its declared
   * `bytes` in the store's step that records the part, so parts sent at once cannot together pass it.
   * A part is bounded by `files.max_part_bytes` (and the upload's size); `whole`: the part is the upload's whole
   * declared size in one (a presigned PUT, whose size is signed): bounded by that size alone.
   */
  async addPart(
    owner: string,
    id: string,
    content: AsyncIterable<Uint8Array>,
    options: { sizeHint?: number; whole?: boolean } = {},
  ): Promise<UploadPartObject> {
    const upload = await this.find(owner, id);
    this.assertPending(upload);
    const held = (await this.uploads.parts(id)).reduce((sum, part) => sum + part.bytes, 0);
    if (held >= upload.bytes) throw this.full(upload, held); // early; the store's check is the binding one
    const maxBytes = options.whole ? upload.bytes : Math.min(this.config.maxPartBytes, upload.bytes);
    const partId = randomId(PART_ID_PREFIX);
    const reservation = await this.quota?.reserve(owner, partId, {
      maxBytes,
      checked: true,
      ...(options.sizeHint === undefined ? {} : { sizeHint: options.sizeHint }),
    });
    let part: StoredPart | undefined;
    try {
      part = await this.uploads.putPart(
        id,
        partId,
        reservation ? reservation.meter(content) : content,
        { maxBytes, maxParts: this.config.maxParts, maxHeldBytes: upload.bytes },
        this.now(),
      );
    } catch (error) {
      await reservation?.release();
      if (error instanceof ContentTooLarge)
        throw new GatewayError('file_too_large', { field: options.whole ? 'body' : 'data', max_bytes: maxBytes });
      if (error instanceof UploadBytesExceeded) throw this.full(upload, error.heldBytes, error.partBytes);
      throw asDiskFull(error);
    }
    if (!part) {
      await reservation?.release();
      const now = await this.find(owner, id);
      throw new GatewayError('upload_not_pending', {
        id,
        status: this.statusOf(now),
        ...(this.statusOf(now) === 'pending' ? { problem: `at most ${this.config.maxParts} parts` } : {}),
      });
    }
    return {
      id: part.id,
      object: 'upload.part',
      created_at: seconds(part.createdMs),
      upload_id: id,
      bytes: part.bytes,
    };
  }

  /** `400 upload_incomplete`: the upload's parts would hold more than its declared bytes. */
  private full(upload: StoredUpload, heldBytes: number, partBytes?: number): GatewayError {
    return new GatewayError('upload_incomplete', {
      id: upload.id,
      problem:
        partBytes === undefined
          ? 'the upload already holds all the bytes it declared; complete it with its parts'
          : 'this part would take the upload past the bytes it declared; nothing of it was kept',
      held_bytes: heldBytes,
      ...(partBytes === undefined ? {} : { part_bytes: partBytes }),
      bytes: upload.bytes,
    });
  }

  /** Assembles the named parts, in that order, into the upload's file. */
  async complete(owner: string, id: string, partIds: readonly string[], md5?: string): Promise<UploadObject> {
    const upload = await this.find(owner, id);
    this.assertPending(upload);
    if (!(await this.uploads.transition(id, 'pending', 'completing'))) {
      throw new GatewayError('upload_not_pending', { id, status: this.statusOf(await this.find(owner, id)) });
    }
    try {
      const parts = this.orderedParts(upload, await this.uploads.parts(id), partIds);
      const digest = createHash('md5');
      const file = await this.files.create(
        owner,
        {
          purpose: upload.purpose as FilePurpose,
          filename: upload.filename,
          mimeType: upload.mimeType,
          content: this.concatenated(id, parts, digest),
          ...(upload.fileTtlMs === null ? {} : { ttlSeconds: Math.round(upload.fileTtlMs / 1000) }),
        },
        this.config.maxUploadBytes,
        // The parts' bytes count already: their copy is counted (until the parts are dropped), never refused.
        { checked: false, sizeHint: upload.bytes },
      );
      const actual = digest.digest('hex');
      if (md5 !== undefined && md5.toLowerCase() !== actual) {
        await this.files.delete(owner, file.id);
        throw new GatewayError('upload_checksum_mismatch', { field: 'md5', expected: md5.slice(0, 64), actual });
      }
      await this.uploads.transition(id, 'completing', 'completed', file.id);
      await this.uploads.dropParts(id);
      return this.objectOf({ ...upload, status: 'completed', fileId: file.id }, file);
    } catch (error) {
      await this.uploads.transition(id, 'completing', 'pending');
      throw error;
    }
  }

  private orderedParts(upload: StoredUpload, held: StoredPart[], partIds: readonly string[]): StoredPart[] {
    const byId = new Map(held.map((part) => [part.id, part]));
    const unknown = partIds.filter((partId) => !byId.has(partId));
    const repeated = partIds.filter((partId, at) => partIds.indexOf(partId) !== at);
    if (unknown.length > 0 || repeated.length > 0) {
      throw new GatewayError('upload_incomplete', {
        field: 'part_ids',
        ...(unknown.length > 0 ? { unknown_part_ids: unknown.slice(0, 20) } : {}),
        ...(repeated.length > 0 ? { repeated_part_ids: repeated.slice(0, 20) } : {}),
      });
    }
    const parts = partIds.map((partId) => byId.get(partId) as StoredPart);
    const total = parts.reduce((sum, part) => sum + part.bytes, 0);
    if (total !== upload.bytes) {
      throw new GatewayError('upload_incomplete', { field: 'part_ids', bytes: upload.bytes, parts_bytes: total });
    }
    return parts;
  }

  private async *concatenated(id: string, parts: StoredPart[], md5: ReturnType<typeof createHash>) {
    for (const part of parts) {
      const stream: Readable = await this.uploads.readPart(id, part.id);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        md5.update(chunk);
        yield chunk;
      }
    }
  }

  async cancel(owner: string, id: string): Promise<UploadObject> {
    const upload = await this.find(owner, id);
    this.assertPending(upload);
    if (!(await this.uploads.transition(id, 'pending', 'cancelled'))) {
      throw new GatewayError('upload_not_pending', { id, status: this.statusOf(await this.find(owner, id)) });
    }
    await this.uploads.dropParts(id);
    return this.objectOf({ ...upload, status: 'cancelled' }, undefined);
  }

  statusOf(upload: StoredUpload): UploadObject['status'] {
    if (upload.status === 'completed' || upload.status === 'cancelled') return upload.status;
    return upload.expiresMs <= this.now() ? 'expired' : 'pending';
  }

  async objectOf(
    upload: StoredUpload,
    file: Awaited<ReturnType<StoredFileService['create']>> | undefined,
  ): Promise<UploadObject> {
    const made = file ?? (upload.fileId ? await this.files.get(upload.owner, upload.fileId) : undefined);
    return {
      id: upload.id,
      object: 'upload',
      bytes: upload.bytes,
      created_at: seconds(upload.createdMs),
      expires_at: seconds(upload.expiresMs),
      filename: upload.filename,
      purpose: upload.purpose as FilePurpose,
      status: this.statusOf(upload),
      file: made ?? null,
      mime_type: upload.mimeType,
    };
  }
}
