import type { UsageRecord, UsageStore } from '../store/contract.js';
import { UsageColumns } from './usage-columns.js';

const MAX_BUFFERED = 20_000;
const PURGE_EVERY_MS = 3_600_000;

export interface UsageLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Usage records leave the request path at once: a record goes into a columnar buffer (`buffer().push(...)`, no
 * allocation), written to the store in batches (every second, or at 500 records) — one transaction or one
 * multi-row INSERT per batch. If the store is down, records wait in memory (up to 20,000, then the oldest are
 * dropped and counted in the log) and are retried with the next batch. Records older than the retention are
 * purged hourly.
 */
export class UsageRecorder {
  private readonly columns: UsageColumns;
  /** Records taken out of the columns: being written, or waiting after a failed write. */
  private pending: UsageRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private purgeTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;

  constructor(
    private readonly options: { store: UsageStore; retentionMs: number; log: UsageLog; flushMs?: number; maxBatch?: number },
  ) {
    this.columns = new UsageColumns(Math.max(1, options.maxBatch ?? 500));
  }

  /** Where the next record goes; it is never full. Call `added()` after each push. */
  buffer(): UsageColumns {
    return this.columns;
  }

  /** After a push into `buffer()`: writes the batch when it is full, or makes sure a write is due. */
  added(): void {
    if (this.columns.full) {
      this.takeColumns();
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.options.flushMs ?? 1_000);
      this.timer.unref();
    }
  }

  /** One record given as an object (tests, tools); the request path uses `buffer()`. */
  add(record: UsageRecord): void {
    this.columns.pushRecord(record);
    this.added();
  }

  /** Writes what is buffered; resolves when it is stored (or failed and was kept for the next try). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Several callers may wait for the same write: each goes on only once no write is in flight.
    while (this.flushing) await this.flushing;
    this.takeColumns();
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
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
        this.pending = batch.concat(this.pending);
        this.cap();
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

  /** Moves the columns' records to `pending` as objects (the columns are reused at once). */
  private takeColumns(): void {
    if (this.columns.length === 0) return;
    const records = this.columns.toRecords();
    this.columns.clear();
    this.pending = this.pending.length === 0 ? records : this.pending.concat(records);
    this.cap();
  }

  /** Keeps the newest MAX_BUFFERED records; the others are dropped and counted. */
  private cap(): void {
    const excess = this.pending.length - MAX_BUFFERED;
    if (excess > 0) {
      this.pending = this.pending.slice(excess);
      this.dropped += excess;
    }
  }
}
