import { z } from 'zod';

const MB = 1024 * 1024;
const DAY = 86_400;

/**
 * The `files` section: OpenAI's Files and Uploads APIs on the gateway (docs/files.md). The defaults are OpenAI's
 * bounds (512 MB a file, 8 GB an upload in parts of at most 64 MB, an upload open for an hour, `expires_after`
 * between an hour and 30 days).
 */
export const filesSectionSchema = z
  .object({
    /** Where files live: `embedded` (metadata in the SQLite file, bytes under DATA_DIR/files), or `postgres` (DATABASE_URL). */
    store: z.enum(['embedded', 'postgres']).default('embedded'),
    /** The largest file `POST /v1/files` takes, bytes. */
    max_file_bytes: z
      .number()
      .int()
      .min(1)
      .max(64 * 1024 * MB)
      .default(512 * MB),
    /** The largest upload (`POST /v1/uploads` `bytes`), and so the largest file it makes. */
    max_upload_bytes: z
      .number()
      .int()
      .min(1)
      .max(1024 * 1024 * MB)
      .default(8 * 1024 * MB),
    /** The largest part of an upload. */
    max_part_bytes: z
      .number()
      .int()
      .min(1)
      .max(1024 * MB)
      .default(64 * MB),
    /** Parts of one upload at most (OpenAI's: 8 GB / 64 MB would be 128; small parts need more). */
    max_parts: z.number().int().min(1).max(100_000).default(10_000),
    /** A file's age when the caller sends no `expires_after`. */
    default_ttl_seconds: z
      .number()
      .int()
      .min(60)
      .max(3650 * DAY)
      .default(30 * DAY),
    /** The longest `expires_after[seconds]` accepted. */
    max_ttl_seconds: z
      .number()
      .int()
      .min(60)
      .max(3650 * DAY)
      .default(30 * DAY),
    /** How long an upload takes parts before it expires (OpenAI's: an hour). */
    upload_ttl_seconds: z
      .number()
      .int()
      .min(60)
      .max(7 * DAY)
      .default(3600),
    /** How long a presigned URL works (never past its upload's expiry). */
    presign_ttl_seconds: z.number().int().min(1).max(DAY).default(900),
    /** How often expired files and uploads are swept. */
    sweep_interval_seconds: z.number().int().min(1).max(DAY).default(300),
    /**
     * How old (by last write) bytes on disk with no record must be before the embedded store removes them
     * (docs/files.md, "Storage"): younger ones may belong to a write in progress in another process.
     */
    stray_grace_seconds: z
      .number()
      .int()
      .min(60)
      .max(30 * DAY)
      .default(3600),
    /**
     * Stored bytes one caller may hold (files, the parts of its uploads, writes in progress), and all callers
     * together (docs/files.md, "Storage quotas"). Past either, a write is refused before its bytes are stored.
     */
    quota_bytes_per_caller: z
      .number()
      .int()
      .min(1)
      .max(1024 * 1024 * 1024 * MB)
      .default(10 * 1024 * MB),
    quota_bytes_total: z
      .number()
      .int()
      .min(1)
      .max(1024 * 1024 * 1024 * MB)
      .default(20 * 1024 * MB),
    /** Gateway file ids one model request may name (docs/files.md, "Files in requests"). */
    forward_max_files: z.number().int().min(1).max(100).default(10),
    /** Bytes of gateway files sent inline to a translated upstream, per request (before base64). */
    forward_inline_max_bytes: z
      .number()
      .int()
      .min(1)
      .max(64 * MB)
      .default(20 * MB),
  })
  .strict()
  .prefault({});

export type FilesSection = z.infer<typeof filesSectionSchema>;

/** The `files` section as the program reads it (ms where a duration). */
export interface FilesConfig {
  store: 'embedded' | 'postgres';
  maxFileBytes: number;
  maxUploadBytes: number;
  maxPartBytes: number;
  maxParts: number;
  defaultTtlMs: number;
  maxTtlMs: number;
  uploadTtlMs: number;
  presignTtlMs: number;
  sweepIntervalMs: number;
  strayGraceMs: number;
  forwardMaxFiles: number;
  forwardInlineMaxBytes: number;
  quotaBytesPerCaller: number;
  quotaBytesTotal: number;
}

export function toFiles(section: FilesSection): FilesConfig {
  return {
    store: section.store,
    maxFileBytes: section.max_file_bytes,
    maxUploadBytes: section.max_upload_bytes,
    maxPartBytes: section.max_part_bytes,
    maxParts: section.max_parts,
    defaultTtlMs: Math.min(section.default_ttl_seconds, section.max_ttl_seconds) * 1000,
    maxTtlMs: section.max_ttl_seconds * 1000,
    uploadTtlMs: section.upload_ttl_seconds * 1000,
    presignTtlMs: section.presign_ttl_seconds * 1000,
    sweepIntervalMs: section.sweep_interval_seconds * 1000,
    strayGraceMs: section.stray_grace_seconds * 1000,
    forwardMaxFiles: section.forward_max_files,
    forwardInlineMaxBytes: section.forward_inline_max_bytes,
    quotaBytesPerCaller: section.quota_bytes_per_caller,
    quotaBytesTotal: section.quota_bytes_total,
  };
}
