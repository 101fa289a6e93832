import type { ForwardedFile, StoredFile, StoredUpload, UploadStatus } from './file-contract.js';

/** An integer column as either backend returns it: a number from SQLite, a BIGINT string from PostgreSQL. */
type Int = number | string;

/** A file row of either backend (the same columns in SQLite's migration 16 and PostgreSQL's tables). */
export interface FileRow {
  id: string;
  owner: string;
  purpose: string;
  filename: string;
  bytes: Int;
  sha256: string;
  mime_type: string | null;
  created_ms: Int;
  expires_ms: Int;
}

/** An upload row of either backend; `presign_used` is SQLite's 0/1 or PostgreSQL's boolean. */
export interface UploadRow {
  id: string;
  owner: string;
  filename: string;
  purpose: string;
  bytes: Int;
  mime_type: string;
  created_ms: Int;
  expires_ms: Int;
  file_ttl_ms: Int | null;
  status: UploadStatus;
  file_id: string | null;
  presign_nonce: string | null;
  presign_used: number | boolean;
}

export const FILE_COLUMNS = 'id, owner, purpose, filename, bytes, sha256, mime_type, created_ms, expires_ms';
export const UPLOAD_COLUMNS =
  'id, owner, filename, purpose, bytes, mime_type, created_ms, expires_ms, file_ttl_ms, status, file_id, presign_nonce, presign_used';

export function fileOf(row: FileRow): StoredFile {
  return {
    id: row.id,
    owner: row.owner,
    purpose: row.purpose,
    filename: row.filename,
    bytes: Number(row.bytes),
    sha256: row.sha256,
    mimeType: row.mime_type,
    createdMs: Number(row.created_ms),
    expiresMs: Number(row.expires_ms),
  };
}

export function uploadOf(row: UploadRow): StoredUpload {
  return {
    id: row.id,
    owner: row.owner,
    filename: row.filename,
    purpose: row.purpose,
    bytes: Number(row.bytes),
    mimeType: row.mime_type,
    createdMs: Number(row.created_ms),
    expiresMs: Number(row.expires_ms),
    fileTtlMs: row.file_ttl_ms === null ? null : Number(row.file_ttl_ms),
    status: row.status,
    fileId: row.file_id,
    presignNonce: row.presign_nonce,
    presignUsed: row.presign_used === true || row.presign_used === 1,
  };
}

/** A file's values in the order of FILE_COLUMNS. */
export function fileValuesOf(file: StoredFile): unknown[] {
  return [
    file.id,
    file.owner,
    file.purpose,
    file.filename,
    file.bytes,
    file.sha256,
    file.mimeType,
    file.createdMs,
    file.expiresMs,
  ];
}

/**
 * An upload's values in the order of UPLOAD_COLUMNS, `presignUsed` written as the backend stores that flag
 * (PostgreSQL a boolean, SQLite 0 or 1).
 */
export function uploadValuesOf(u: StoredUpload, presignUsed: boolean | number): unknown[] {
  return [
    u.id,
    u.owner,
    u.filename,
    u.purpose,
    u.bytes,
    u.mimeType,
    u.createdMs,
    u.expiresMs,
    u.fileTtlMs,
    u.status,
    u.fileId,
    u.presignNonce,
    presignUsed,
  ];
}

/** A forwarded-file row of either backend (SQLite's migration 19, PostgreSQL's `gw_forwarded_files`). */
export interface ForwardedFileRow {
  file_id: string;
  sha256: string;
  upstream: string;
  upstream_file_id: string;
  created_ms: Int | bigint;
  expires_ms: Int | bigint;
}

/** The columns of a forwarded-file row, in `ForwardedFileRow`'s order (a `RETURNING` list, say). */
export const FORWARDED_FILE_COLUMNS = 'file_id, sha256, upstream, upstream_file_id, created_ms, expires_ms';

export function forwardedFileOf(row: ForwardedFileRow): ForwardedFile {
  return {
    fileId: row.file_id,
    sha256: row.sha256,
    upstream: row.upstream,
    upstreamFileId: row.upstream_file_id,
    createdMs: Number(row.created_ms),
    expiresMs: Number(row.expires_ms),
  };
}
