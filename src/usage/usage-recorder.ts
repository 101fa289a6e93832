import type { UsageRecord, UsageStore } from '../store/contract.js';

const MAX_BUFFERED = 20_000;
const PURGE_EVERY_MS = 3_600_000;

export interface UsageLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Usage records leave the request path at once: `add` only pushes to a buffer, written to the store in batches
 * (every second, or at 500 records) — one transaction or one multi-row INSERT per batch. If the store is down,
 * records wait in memory (up to 20,000, then the oldest are dropped and counted in the log) and are retried with
 * the next batch. Records older than the retention are purged hourly.
 */
export class UsageRecorder {
  private buffer: UsageRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private purgeTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;

  constructor(
    private readonly options: { store: UsageStore; retentionMs: number; log: UsageLog; flushMs?: number; maxBatch?: number },
  ) {}

  add(record: UsageRecord): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(record);
    if (this.buffer.length >= (this.options.maxBatch ?? 500)) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.options.flushMs ?? 1_000);
      this.timer.unref();
    }
  }

  /** Writes what is buffered; resolves when it is stored (or failed and was kept for the next try). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.options.store
      .append(batch)
      .then(() => {
        if (this.dropped > 0) {
          this.options.log.warn({ dropped: this.dropped }, 'usage records were dropped while the usage store was unavailable');
          this.dropped = 0;
        }
      })
      .catch((error: unknown) => {
        this.options.log.warn({ err: error, records: batch.length }, 'usage records could not be written; kept for the next batch');
        this.buffer = [...batch, ...this.buffer].slice(-MAX_BUFFERED);
        if (!this.timer) {
          this.timer = setTimeout(() => void this.flush(), 5_000);
          this.timer.unref();
        }
      })
      .finally(() => {
        this.flushing = undefined;
      });
    await this.flushing;
  }

  startRetention(): void {
    const purge = () => {
      const before = Date.now() - this.options.retentionMs;
      this.options.store.purge(before).catch((error: unknown) => this.options.log.warn({ err: error }, 'old usage records could not be purged'));
    };
    purge();
    this.purgeTimer = setInterval(purge, PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  async close(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.flush();
  }
}
