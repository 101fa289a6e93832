import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import type { GatewayConfig } from '../config/types.js';
import type { FileService } from '../core/files/file-service.js';
import { PresignService } from '../core/files/presign-service.js';
import type { RateLimitService } from '../core/limits/rate-limit-service.js';
import { StoredFileService } from '../core/files/stored-file-service.js';
import { UploadService } from '../core/files/upload-service.js';
import { makeFileHandlers } from '../routes/files-routes.js';
import { mountFiles } from '../routes/mount-files.js';
import { makeUploadHandlers } from '../routes/uploads.js';
import { presignKey } from '../secrets/presigned.js';
import { FileForwarding } from '../core/files/file-forwarding.js';
import { sweepStraysInBackground } from './file-strays-wiring.js';
import { UpstreamFileCleanup } from '../core/files/upstream-file-cleanup.js';
import type { UpstreamFiles } from '../providers/provider-contract.js';
import type { FileStore, ForwardedFile, ForwardedFileStore, UploadStore } from '../store/file-contract.js';
import type { StorageUseStore } from '../store/storage-use.js';
import { StorageQuota } from '../core/files/storage-quota.js';

const SWEEP_BATCH = 500;

export interface WiredFiles {
  /** The files of every caller, for the other services (the batches): core/files/file-service.ts. */
  service: FileService;
  /** The caller's files a model request names, made available to its upstream (core/files/file-forwarding.ts). */
  forwarding: FileForwarding;
  /** Deletes the upstream copies of deleted files (core/files/upstream-file-cleanup.ts); its counts feed the metrics. */
  cleanup: UpstreamFileCleanup;
  /** The storage quotas (core/files/storage-quota.ts), which a batch's lines count against too. */
  quota: StorageQuota;
}

type Stores = { files: FileStore; uploads: UploadStore; forwarded?: ForwardedFileStore; storage?: StorageUseStore };

/** What the files wiring is handed: the stores (absent: no files), who may call, the limits, each upstream's files API. */
export interface FilesWiring {
  stores: Stores | undefined;
  auth: Authenticator;
  limits: RateLimitService;
  filesOf: (upstream: string) => UpstreamFiles | undefined;
}

/**
 * Files and uploads (docs/files.md): the services over the stores, OpenAI's paths, and the sweep of expired files
 * and uploads (every `files.sweep_interval_seconds`, stopped when the app closes), and of the bytes a crash left
 * with no record (file-strays.ts). Without stores nothing is mounted (`/v1/files` is then a 404) and `service` is
 * undefined.
 */
export function wireFiles(
  app: FastifyInstance,
  config: GatewayConfig,
  { stores, auth, limits, filesOf }: FilesWiring,
): WiredFiles | undefined {
  if (!stores) return undefined;
  const forwarded = stores.forwarded ?? memoryForwardedFiles();
  const cleanup = new UpstreamFileCleanup({ store: forwarded, filesOf, log: app.log });
  // Storage quotas (docs/files.md): a reservation a crash left expires like the bytes it left (stray_grace_seconds).
  const quota = new StorageQuota(stores.storage, { ...config.files, reservationTtlMs: config.files.strayGraceMs });
  const files = new StoredFileService(stores.files, config.files, Date.now, (id) => cleanup.fileDeleted(id), quota);
  const uploads = new UploadService(stores.uploads, files, config.files, Date.now, quota);
  const presigned = new PresignService(
    stores.uploads,
    uploads,
    presignKey(config.adminTokens[0]),
    config.files.presignTtlMs,
  );
  mountFiles(app, auth, limits, {
    files: makeFileHandlers(files, config.files.maxFileBytes),
    uploads: makeUploadHandlers(uploads, presigned, config.files.maxPartBytes),
  });
  let sweeping: Promise<void> | undefined;
  const timer = setInterval(() => {
    sweeping ??= sweep({ ...stores, forwarded })
      .then(() => undefined)
      .catch((error: unknown) => app.log.warn({ err: error }, 'sweeping expired files failed'))
      .finally(() => (sweeping = undefined));
  }, config.files.sweepIntervalMs);
  timer.unref();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await sweeping;
    await cleanup.close();
  });
  sweepStraysInBackground(app, stores, config.files.strayGraceMs);
  const forwarding = new FileForwarding({
    files,
    store: forwarded,
    maxFiles: config.files.forwardMaxFiles,
    maxInlineBytes: config.files.forwardInlineMaxBytes,
    cleanup,
  });
  return { service: files, forwarding, cleanup, quota };
}

/** One round of the sweep: expired files, then expired uploads, then reservations a crash left, a batch at a time. */
export async function sweep(stores: Stores, nowMs = Date.now()): Promise<number> {
  let removed = 0;
  for (let n = SWEEP_BATCH; n === SWEEP_BATCH; removed += n) n = await stores.files.sweep(nowMs, SWEEP_BATCH);
  for (let n = SWEEP_BATCH; n === SWEEP_BATCH; removed += n) n = await stores.uploads.sweep(nowMs, SWEEP_BATCH);
  const { storage } = stores;
  if (storage) for (let n = SWEEP_BATCH; n === SWEEP_BATCH; removed += n) n = await storage.sweep(nowMs, SWEEP_BATCH);
  const { forwarded } = stores;
  if (forwarded)
    for (let n = SWEEP_BATCH; n === SWEEP_BATCH; removed += n) n = await forwarded.sweep(nowMs, SWEEP_BATCH);
  return removed;
}

/** For stores given without a forwarded-file store (tests' own): this process's memory, bounded by the sweep. */
function memoryForwardedFiles(): ForwardedFileStore {
  const entries = new Map<string, ForwardedFile>();
  const keyOf = (fileId: string, sha256: string, upstream: string) => `${fileId}\n${sha256}\n${upstream}`;
  return {
    lookup: async (fileId, sha256, upstream, nowMs = Date.now()) => {
      const entry = entries.get(keyOf(fileId, sha256, upstream));
      return entry && entry.expiresMs > nowMs ? entry.upstreamFileId : undefined;
    },
    record: async (entry) => {
      entries.set(keyOf(entry.fileId, entry.sha256, entry.upstream), entry);
    },
    removeFile: async (fileId) => {
      const removed: ForwardedFile[] = [];
      for (const [key, entry] of entries) if (entry.fileId === fileId && entries.delete(key)) removed.push(entry);
      return removed;
    },
    sweep: async (nowMs, limit) => {
      let removed = 0;
      for (const [key, entry] of entries) {
        if (removed >= limit) break;
        if (entry.expiresMs <= nowMs && entries.delete(key)) removed++;
      }
      return removed;
    },
  };
}
