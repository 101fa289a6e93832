/**
 * OpenAI's Files and Uploads APIs (`/v1/files`, `/v1/uploads`): the objects the gateway answers with, as the
 * openai SDK types them (`resources/files.d.ts`, `resources/uploads/*.d.ts`), plus the gateway's extra field
 * `sha256` on a file (docs/files.md). Times are Unix seconds, as OpenAI's.
 */

/** The purposes a caller may upload with (`FilePurpose` of the SDK). */
export const CALLER_FILE_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;
export type CallerFilePurpose = (typeof CALLER_FILE_PURPOSES)[number];

/** OpenAI's bounds of an `expires_after.seconds` (a file's, a batch's output files'): an hour to 30 days. */
export const EXPIRES_AFTER_MIN_SECONDS = 3600;
export const EXPIRES_AFTER_MAX_SECONDS = 30 * 86_400;

/** A purpose a file may have: the caller's, or one the gateway gives its own output files (batch results). */
export type FilePurpose = CallerFilePurpose | 'batch_output' | 'assistants_output' | 'fine-tune-results';

export interface FileObject {
  /** `file-` and 24 random characters. */
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  /** Unix seconds; null when the file never expires (never the case on this gateway: files have a maximum age). */
  expires_at: number | null;
  filename: string;
  purpose: FilePurpose;
  /** Always `processed` once stored: the gateway does no processing of its own. */
  status: 'uploaded' | 'processed' | 'error';
  status_details?: string | null;
  /** The gateway's extra: SHA-256 of the content, lower-case hex. */
  sha256: string;
}

export interface FileList {
  object: 'list';
  data: FileObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface FileDeleted {
  id: string;
  object: 'file';
  deleted: boolean;
}

export interface UploadObject {
  /** `upload_` and 24 random characters. */
  id: string;
  object: 'upload';
  bytes: number;
  created_at: number;
  expires_at: number;
  filename: string;
  purpose: FilePurpose;
  status: 'pending' | 'completed' | 'cancelled' | 'expired';
  /** The file the completed upload made; null before. */
  file: FileObject | null;
  /** The gateway's extra: the MIME type declared at creation. */
  mime_type?: string;
}

export interface UploadPartObject {
  /** `part_` and 24 random characters. */
  id: string;
  object: 'upload.part';
  created_at: number;
  upload_id: string;
  /** The gateway's extra: the part's size. */
  bytes?: number;
}
