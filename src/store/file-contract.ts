import type { Readable } from 'node:stream';

/**
 * Files and uploads (docs/files.md): metadata and bytes behind two small interfaces, one per job, each
 * implemented by the embedded store (SQLite + files under DATA_DIR) and by PostgreSQL (metadata + bytes in chunked
 * `bytea` rows), and each passing the same contract suite (test/store-contract/file-store-contract.ts).
 *
 * Bytes always arrive as an `AsyncIterable<Uint8Array>` and leave as a `Readable`: a backend streams them and
 * never holds a whole file in memory. A write is all or nothing: its record exists only once every byte is
 * stored, so an interrupted write (a caller gone mid-part) leaves nothing a reader can see, and what it wrote so
 * far is removed.
 */

/** One stored file; `owner` is the caller id it belongs to. Times in ms since 1970. */
export interface StoredFile {
  id: string;
  owner: string;
  purpose: string;
  filename: string;
  bytes: number;
  /** Lower-case hex. */
  sha256: string;
  mimeType: string | null;
  createdMs: number;
  expiresMs: number;
}

export type NewFile = Omit<StoredFile, 'bytes' | 'sha256'>;

/** Thrown (rejected) by a write whose content passed `maxBytes`; nothing of it is kept. */
export class ContentTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`content larger than ${maxBytes} bytes`);
    this.name = 'ContentTooLarge';
  }
}

/**
 * Thrown (rejected) by `putPart` when the part would take its upload's recorded parts past `maxHeldBytes` (checked
 * in the step that records the part, so concurrent parts cannot all pass); nothing of it is kept.
 */
export class UploadBytesExceeded extends Error {
  constructor(
    /** The bytes of the parts recorded before this one. */
    readonly heldBytes: number,
    /** This part's bytes. */
    readonly partBytes: number,
  ) {
    super(`the upload holds ${heldBytes} bytes; a part of ${partBytes} would pass its declared size`);
    this.name = 'UploadBytesExceeded';
  }
}

/**
 * A sweep of stray bytes (docs/files.md, "Storage"): bytes a crash left on disk with no record naming them. Only
 * a store that keeps bytes apart from its records has any (the embedded one); PostgreSQL writes both in one
 * transaction.
 */
export interface StraySweep {
  /** Only bytes last written before this (ms since 1970) are removed: younger ones may be in a write right now. */
  before: number;
  /** Stops the sweep at its next step (the app closing). */
  signal?: AbortSignal;
  /** An entry that could not be checked or removed (EACCES, ...): reported here, skipped. */
  onError?: (error: unknown, path: string) => void;
}

export interface FileListPage {
  files: StoredFile[];
  hasMore: boolean;
}

export interface FileStore {
  /** `embedded` or `postgres`, shown in health and docs. */
  readonly kind: string;
  /**
   * Streams `content` in under `id`, then records the file `describe()` gives (bytes and SHA-256 computed on the
   * way). `describe` is called once the content has ended, so a producer that learns what the file is only after
   * its bytes (a multipart form whose `purpose` follows its `file`, as the openai SDK sends them) can still say;
   * when it throws, nothing is kept and its error is the put's.
   */
  put(id: string, content: AsyncIterable<Uint8Array>, maxBytes: number, describe: () => NewFile): Promise<StoredFile>;
  /** The owner's live file (not expired at `nowMs`). */
  get(owner: string, id: string, nowMs?: number): Promise<StoredFile | undefined>;
  /** The file and a stream of its bytes; undefined like `get`. */
  read(owner: string, id: string, nowMs?: number): Promise<{ file: StoredFile; stream: Readable } | undefined>;
  /**
   * The owner's live files by (createdMs, id) in `order`, after the file `after` (its position; an id that is
   * not the owner's: from the start), at most `limit`, optionally of one purpose.
   */
  list(
    owner: string,
    query: { after?: string; limit: number; order: 'asc' | 'desc'; purpose?: string },
    nowMs?: number,
  ): Promise<FileListPage>;
  /** True when the owner's live file existed and is now gone (bytes included). */
  delete(owner: string, id: string, nowMs?: number): Promise<boolean>;
  /** Removes up to `limit` files expired at `nowMs` (records and bytes); returns how many. */
  sweep(nowMs: number, limit: number): Promise<number>;
  /** Removes bytes no file record names (a crash's leftovers); returns how many. Absent: the store has none. */
  sweepStrays?(sweep: StraySweep): Promise<number>;
}

export type UploadStatus = 'pending' | 'completing' | 'completed' | 'cancelled';

/** An upload in parts (OpenAI's Uploads API). `bytes` is what the caller declared the whole to be. */
export interface StoredUpload {
  id: string;
  owner: string;
  filename: string;
  purpose: string;
  bytes: number;
  mimeType: string;
  createdMs: number;
  expiresMs: number;
  /** The age the file it makes gets (ms), from `expires_after`; null: the default. */
  fileTtlMs: number | null;
  status: UploadStatus;
  /** The file it made, once completed. */
  fileId: string | null;
  /** The nonce of the presigned URL issued last (one at a time), and whether a PUT has taken it. */
  presignNonce: string | null;
  presignUsed: boolean;
}

export interface StoredPart {
  id: string;
  uploadId: string;
  bytes: number;
  createdMs: number;
}

export interface UploadStore {
  readonly kind: string;
  create(upload: StoredUpload): Promise<void>;
  /** The owner's upload, whatever its state (an expired one too: the service answers `expired`). */
  get(owner: string, id: string): Promise<StoredUpload | undefined>;
  /** Any owner's upload: only for a presigned PUT, whose signature is then checked against the upload's owner. */
  byId(id: string): Promise<StoredUpload | undefined>;
  /**
   * Streams a part in and records it, only if the upload is `pending` when its last byte is in (else the bytes are
   * dropped and undefined answered). At most `maxBytes`; `maxParts` parts per upload (undefined past it); with
   * `maxHeldBytes`, the upload's recorded parts with this one at most that many bytes (else UploadBytesExceeded),
   * checked in the same atomic step that records the part.
   */
  putPart(
    uploadId: string,
    partId: string,
    content: AsyncIterable<Uint8Array>,
    bounds: { maxBytes: number; maxParts: number; maxHeldBytes?: number },
    nowMs?: number,
  ): Promise<StoredPart | undefined>;
  /** The upload's parts, in the order they were recorded. */
  parts(uploadId: string): Promise<StoredPart[]>;
  /** A part's bytes. */
  readPart(uploadId: string, partId: string): Promise<Readable>;
  /** Moves the upload from `from` to `to` (and records `fileId`) in one step; false when it was not in `from`. */
  transition(id: string, from: UploadStatus, to: UploadStatus, fileId?: string): Promise<boolean>;
  /** Records a new presigned URL's nonce (the earlier one stops working); false unless the upload is pending. */
  setPresign(id: string, nonce: string): Promise<boolean>;
  /** Takes the presigned URL `nonce` for one PUT: true once; `release` gives it back when that PUT failed. */
  takePresign(id: string, nonce: string): Promise<boolean>;
  releasePresign(id: string, nonce: string): Promise<void>;
  /** Drops the bytes of the upload's parts (after it completed, was cancelled or expired). */
  dropParts(uploadId: string): Promise<void>;
  /**
   * Removes up to `limit` uploads past `expiresMs` at `nowMs`, parts included (a `completing` one only a day
   * after: its completion may still be reading them); returns how many.
   */
  sweep(nowMs: number, limit: number): Promise<number>;
  /** Removes part bytes no part record names (a crash's leftovers); returns how many. Absent: the store has none. */
  sweepStrays?(sweep: StraySweep): Promise<number>;
}

/**
 * Which of the gateway's files an upstream already holds (docs/files.md, "Files in requests"): a file uploaded to
 * an upstream's own Files API once, and its id there reused by every later request that names it. Keyed by the
 * gateway file's id and SHA-256 (content that differs is never taken for the same file) and by the upstream (its
 * name, and which key: a caller's own X-Upstream-Key names another account).
 */
export interface ForwardedFile {
  fileId: string;
  sha256: string;
  upstream: string;
  upstreamFileId: string;
  createdMs: number;
  /** Not reused past it (the gateway's file, or the upstream's copy, is gone by then). */
  expiresMs: number;
}

export interface ForwardedFileStore {
  /** The upstream's id of the file, when recorded and live at `nowMs`. */
  lookup(fileId: string, sha256: string, upstream: string, nowMs?: number): Promise<string | undefined>;
  /** Records (or replaces) a mapping. */
  record(entry: ForwardedFile): Promise<void>;
  /**
   * Removes every mapping of the gateway file `fileId` (any content, any upstream account, live or expired) in one
   * step and returns them: what was removed is what the caller now answers for (the upstream copies to delete,
   * docs/files.md), so two instances removing at once never both get the same mapping.
   */
  removeFile(fileId: string): Promise<ForwardedFile[]>;
  /** Removes up to `limit` mappings expired at `nowMs`; returns how many. */
  sweep(nowMs: number, limit: number): Promise<number>;
}
