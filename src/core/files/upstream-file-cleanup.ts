import { isGatewayError } from '../../errors/gateway-error.js';
import type { CallContext, UpstreamFiles } from '../../providers/provider-contract.js';
import type { ForwardedFile, ForwardedFileStore } from '../../store/file-contract.js';

/** Upstream deletes running at once, per process. */
export const DELETE_CONCURRENCY = 4;
/** Upstream deletes waiting for a slot; past it a copy is left to expire by its upstream ttl (and counted). */
export const MAX_QUEUED_DELETES = 1_000;
/** Each upstream delete's bound, beside the upstream's own connect and first-byte timeouts. */
export const DELETE_TIMEOUT_MS = 10_000;

export interface CleanupLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/**
 * What became of the upstream copies of deleted files (`llmgw_upstream_file_deletes_total{outcome}`):
 * `deleted` (the upstream answered it, or its 404: already gone), `failed` (an error, a timeout, an unreadable
 * answer, no room in the queue, the upstream no longer configured), `left` (uploaded with a caller's own
 * X-Upstream-Key, which the gateway never keeps: left to expire by the ttl it was uploaded with).
 */
export interface UpstreamDeleteCounts {
  deleted: number;
  failed: number;
  left: number;
}

export interface UpstreamFileCleanupOptions {
  store: ForwardedFileStore;
  /** The Files API of the configured upstream of this name now (undefined: gone from the config, or has none). */
  filesOf: (upstream: string) => UpstreamFiles | undefined;
  log: CleanupLog;
  concurrency?: number;
  maxQueued?: number;
  timeoutMs?: number;
}

/**
 * Deletes the copies the gateway uploaded to upstreams of a file its caller deleted (docs/files.md, "Files in
 * requests: forwarded to the upstream"). Off the caller's path: `fileDeleted` returns at once and never throws;
 * the mappings are removed from the store and each copy uploaded with the upstream's configured key is deleted
 * there in the background, at most `concurrency` at a time, each within `timeoutMs`, failures logged and counted
 * (nothing retried: the copy still expires by the ttl it was uploaded with). Closing aborts what runs.
 */
export class UpstreamFileCleanup {
  readonly counts: UpstreamDeleteCounts = { deleted: 0, failed: 0, left: 0 };
  private readonly concurrency: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;
  private readonly queue: ForwardedFile[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly closing = new AbortController();

  constructor(private readonly options: UpstreamFileCleanupOptions) {
    this.concurrency = options.concurrency ?? DELETE_CONCURRENCY;
    this.maxQueued = options.maxQueued ?? MAX_QUEUED_DELETES;
    this.timeoutMs = options.timeoutMs ?? DELETE_TIMEOUT_MS;
  }

  /** The gateway file `fileId` was deleted: its upstream copies go too, in the background. */
  fileDeleted(fileId: string): void {
    if (this.closing.signal.aborted) return;
    this.track(this.forget(fileId));
  }

  /** Deletes under way or waiting (for tests and the dashboard's curiosity). */
  pending(): number {
    return this.queue.length + this.running.size;
  }

  /** Drops what waits and aborts what runs; resolves once nothing runs. */
  async close(): Promise<void> {
    this.closing.abort();
    this.counts.failed += this.queue.length;
    this.queue.length = 0;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async forget(fileId: string): Promise<void> {
    let copies: ForwardedFile[];
    try {
      copies = await this.options.store.removeFile(fileId);
    } catch (error) {
      this.options.log.warn({ file_id: fileId, reason: reasonOf(error) }, 'forgetting the upstream copies failed');
      return;
    }
    for (const copy of copies) {
      if (this.closing.signal.aborted) {
        this.counts.failed += 1;
      } else if (copy.upstream.includes('#key:')) {
        // The caller's own key uploaded it; the gateway never keeps that key, so the copy lives out its ttl.
        this.counts.left += 1;
      } else if (this.queue.length >= this.maxQueued) {
        this.counts.failed += 1;
        this.options.log.warn(describe(copy, 'queue_full'), 'upstream copy of a deleted file left to expire');
      } else {
        this.queue.push(copy);
      }
    }
    this.next();
  }

  /** Starts waiting deletes while there is room. */
  private next(): void {
    while (this.running.size < this.concurrency && this.queue.length > 0 && !this.closing.signal.aborted) {
      const copy = this.queue.shift() as ForwardedFile;
      const run = this.deleteCopy(copy).finally(() => {
        this.running.delete(run);
        this.next();
      });
      this.running.add(run);
    }
  }

  private async deleteCopy(copy: ForwardedFile): Promise<void> {
    const files = this.options.filesOf(copy.upstream);
    if (!files) {
      this.counts.failed += 1;
      this.options.log.warn(
        describe(copy, 'upstream_not_configured'),
        'upstream copy of a deleted file left to expire',
      );
      return;
    }
    const context: CallContext = {
      apiKeyOverride: undefined,
      signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.timeoutMs)]),
      requestId: `delete-${copy.fileId}`,
      bodyJson: undefined,
    };
    try {
      await files.delete(copy.upstreamFileId, context);
      this.counts.deleted += 1;
    } catch (error) {
      this.counts.failed += 1;
      this.options.log.warn(
        { ...describe(copy, reasonOf(error)), ...statusOf(error) },
        'deleting the upstream copy of a deleted file failed; it expires by its upstream ttl',
      );
    }
  }

  /** Keeps a background task from ever rejecting unhandled. */
  private track(task: Promise<void>): void {
    task.catch((error: unknown) => this.options.log.warn({ reason: reasonOf(error) }, 'upstream file cleanup failed'));
  }
}

/** What a log line says of a copy: ids and the upstream's name, never a key (a caller's appears only hashed). */
function describe(copy: ForwardedFile, reason: string): Record<string, unknown> {
  return { file_id: copy.fileId, upstream: copy.upstream, upstream_file_id: copy.upstreamFileId, reason };
}

/** An error's code or name, never its message or whole object (which could carry what the log must not). */
function reasonOf(error: unknown): string {
  if (isGatewayError(error)) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code.slice(0, 64);
  return error instanceof Error ? error.name : 'unknown';
}

function statusOf(error: unknown): Record<string, unknown> {
  const status = isGatewayError(error) ? error.details.upstream_status : undefined;
  return status === undefined ? {} : { upstream_status: status };
}
