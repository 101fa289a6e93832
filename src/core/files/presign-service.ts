import { GatewayError } from '../../errors/gateway-error.js';
import { newNonce, readPresigned, signPresigned, verifyPresigned } from '../../secrets/presigned.js';
import type { UploadStore } from '../../store/file-contract.js';
import type { UploadObject } from '../../wire/openai-files.js';
import { isOwnId } from './file-ids.js';
import { UPLOAD_ID_PREFIX, type UploadService } from './upload-service.js';

/** What `POST /v1/uploads` with `presign: true` (or `POST /v1/uploads/{id}/presign`) answers under `presigned_url`. */
export interface PresignedUrl {
  url: string;
  method: 'PUT';
  /** Unix seconds. */
  expires_at: number;
  /** The exact Content-Length the PUT must send. */
  bytes: number;
}

/** The path of a presigned PUT: the token is the last segment (docs/files.md; the logger redacts it). */
export const PRESIGNED_SEGMENT = '/presigned/';

/**
 * Presigned PUTs (docs/files.md): a URL that lets whoever holds it send an upload's bytes in one PUT, once, until
 * it expires, without a key. Its signature binds the owner, the upload, the size and the expiry
 * (secrets/presigned.ts); the nonce it carries is taken in the store by the PUT, so a second PUT fails; a PUT
 * that fails midway gives it back (the URL can be tried again until it expires).
 */
export class PresignService {
  constructor(
    private readonly uploads: UploadStore,
    private readonly service: UploadService,
    private readonly key: Buffer,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new URL for the owner's pending upload (an earlier one stops working); `base` is the gateway's origin. */
  async issue(owner: string, id: string, base: string): Promise<PresignedUrl> {
    const upload = await this.service.find(owner, id);
    const status = this.service.statusOf(upload);
    const nonce = newNonce();
    if (status !== 'pending' || !(await this.uploads.setPresign(id, nonce))) {
      throw new GatewayError('upload_not_pending', { id, status });
    }
    const expires = Math.floor(Math.min(this.now() + this.ttlMs, upload.expiresMs) / 1000);
    const token = signPresigned(this.key, { owner, uploadId: id, bytes: upload.bytes, expires, nonce });
    return {
      url: `${base}/v1/uploads/${id}${PRESIGNED_SEGMENT}${token}`,
      method: 'PUT',
      expires_at: expires,
      bytes: upload.bytes,
    };
  }

  /** Takes the bytes of a presigned PUT (exactly `contentLength`, the signed size) and completes the upload. */
  async put(
    id: string,
    token: string,
    contentLength: number | undefined,
    content: AsyncIterable<Uint8Array>,
    /** Told the upload's owner once the signature holds (the request's record names it as the caller). */
    onOwner: (owner: string) => void = () => undefined,
  ): Promise<UploadObject> {
    const read = readPresigned(token);
    const upload = read && isOwnId(id, UPLOAD_ID_PREFIX) ? await this.uploads.byId(id) : undefined;
    const claims = upload &&
      read && { owner: upload.owner, uploadId: id, bytes: upload.bytes, expires: read.expires, nonce: read.nonce };
    if (!upload || !claims || !verifyPresigned(this.key, token, claims)) {
      throw new GatewayError('presigned_url_invalid', { problem: 'not a URL this gateway signed for this upload' });
    }
    onOwner(upload.owner);
    if (claims.expires * 1000 <= this.now()) {
      throw new GatewayError('presigned_url_invalid', { problem: 'expired', expired_at: claims.expires });
    }
    if (contentLength !== upload.bytes) {
      throw new GatewayError('presigned_size_mismatch', {
        header: 'content-length',
        expected: upload.bytes,
        ...(contentLength === undefined
          ? { problem: 'missing (a chunked body is not accepted)' }
          : { received: contentLength }),
      });
    }
    if (upload.presignNonce !== claims.nonce || !(await this.uploads.takePresign(id, claims.nonce))) {
      if (upload.presignNonce !== claims.nonce)
        throw new GatewayError('presigned_url_invalid', { problem: 'replaced by a newer URL' });
      throw new GatewayError('presigned_url_used', { id });
    }
    try {
      // One part of the signed size, streamed into storage: bounded by that size, not by files.max_part_bytes.
      const part = await this.service.addPart(upload.owner, id, content, { whole: true, sizeHint: contentLength });
      return await this.service.complete(upload.owner, id, [part.id]);
    } catch (error) {
      await this.uploads.releasePresign(id, claims.nonce);
      throw error;
    }
  }
}
