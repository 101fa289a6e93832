import type { Readable } from 'node:stream';
import type { FileDeleted, FileList, FileObject, FilePurpose } from '../../wire/openai-files.js';

/**
 * The files a caller keeps on the gateway (OpenAI's Files API, docs/files.md), for the routes and for other
 * services of the gateway (the batches: their input file read, their output and error files written).
 *
 * `owner` is the principal's `caller` (`admin`, `key:<key id>`, an OAuth client's id: auth/principal.ts), the id
 * every caller-scoped thing of the gateway is kept under. A file of another owner is as unknown as a made-up id:
 * `get`/`openContent` answer undefined, `delete` false, `list` never shows it. An expired file is unknown too (and
 * swept in the background).
 */
export interface FileService {
  /**
   * Stores `content` (streamed to the store, never held whole in memory) and answers its file object. Throws a
   * GatewayError `file_too_large` (413) past the configured bound (the partial content is removed), and
   * `invalid_file_expiry` for an `expiresAt` outside (now, now + max age]. Without `expiresAt` the configured
   * default age applies.
   */
  create(owner: string, input: FileCreateInput): Promise<FileObject>;
  get(owner: string, id: string): Promise<FileObject | undefined>;
  /** The file and its bytes as a stream (the caller must consume or destroy it). */
  openContent(owner: string, id: string): Promise<FileContent | undefined>;
  /** A page of the owner's live files, by creation order (ties by id); `after` is a file id of an earlier page. */
  list(owner: string, query: FileListQuery): Promise<FileList>;
  /** `deleted: false` never happens for a file of this owner: an unknown id answers undefined. */
  delete(owner: string, id: string): Promise<FileDeleted | undefined>;
}

export interface FileCreateInput {
  /** A caller's purpose (CALLER_FILE_PURPOSES) or the gateway's own (`batch_output`). */
  purpose: FilePurpose;
  /** Kept as given (at most 512 characters; the route checks it). */
  filename: string;
  content: AsyncIterable<Uint8Array>;
  /** Unix seconds, as FileObject's `expires_at`; default: now + the configured default age. */
  expiresAt?: number;
  /** Instead of `expiresAt`: the file expires this many seconds after its creation (exactly `created_at` + it). */
  ttlSeconds?: number;
  /** Declared MIME type, kept for a provider's Files API (not checked against the bytes). */
  mimeType?: string;
}

export interface FileContent {
  object: FileObject;
  stream: Readable;
  /** The MIME type declared when it was stored, if any. */
  mimeType?: string | null;
}

export interface FileListQuery {
  /** A file id: the page starts after it (in `order`). An id that is not the owner's live file: from the start. */
  after?: string;
  /** 1 to 10,000 (OpenAI's bound). */
  limit: number;
  order: 'asc' | 'desc';
  purpose?: string;
}

/**
 * The seam for forwarding a file to a provider's own Files API (native batches): not built here. A provider that
 * needs the bytes reads them with `openContent` and uploads them itself, keeping the mapping of gateway file id
 * to provider file id on its side.
 */
export type FileContentSource = Pick<FileService, 'openContent'>;
