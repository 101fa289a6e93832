import type { UsageRecord, UsageRows, UsageStore } from '../store/contract.js';
import { UsageRowsRefused, recordRows } from '../store/usage-sql.js';
import { UsageColumns } from './usage-columns.js';
import { writeAroundRefused } from './refused-records.js';

const MAX_BUFFERED = 20_000;

export interface UsageLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Usage records leave the request path at once: a record goes into a columnar buffer (`buffer().push(...)`, no
 * allocation), written to the store in batches (every second, or at 500 records) straight from the columns — one
 * transaction or one INSERT per write, no object per record on the way. If the store is down, records wait in
 * memory as objects (up to 20,000, then the oldest are dropped and counted in the log) and are retried with the
 * next batch. A record the database refuses (a value it will not store) is set aside, never retried: the batch
 * is written around it (src/usage/refused-records.ts). Records age out in src/usage/usage-retention.ts.
 */
export class UsageRecorder {
  private readonly batchSize: number;
  /** Where records go now. */
  private columns: UsageColumns;
  /** Full (or flushed) buffers not yet handed to the store, oldest first. */
  private ready: UsageColumns[] = [];
  /** Emptied buffers kept for reuse. */
  private spare: UsageColumns[] = [];
  /** Records of writes that failed, waiting for the next one. */
  private pending: UsageRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;
  private setAside = 0;

  constructor(
    private readonly options: {
      store: UsageStore;
      log: UsageLog;
      flushMs?: number;
      maxBatch?: number;
    },
  ) {
    this.batchSize = Math.max(1, options.maxBatch ?? 500);
    this.columns = new UsageColumns(this.batchSize);
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
    if (this.pending.length === 0 && this.ready.length === 0) return;
    const retried = this.pending;
    const batches = this.ready;
    this.pending = [];
    this.ready = [];
    const rows: UsageRows[] = retried.length > 0 ? [recordRows(retried), ...batches] : batches;
    this.flushing = this.write(rows, retried, batches).finally(() => {
      for (const batch of batches) this.recycle(batch);
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /** Usage records the database refused, set aside (logged whole at error level) since this recorder started. */
  get deadLettered(): number {
    return this.setAside;
  }

  /**
   * One write of everything waiting. If the database refused a value in it, the rest is written around the
   * refused record(s), which are set aside (dead-lettered: the log line holds the record); if the store failed
   * otherwise (down, busy), every record waits for the next try.
   */
  private async write(rows: UsageRows[], retried: UsageRecord[], batches: UsageColumns[]): Promise<void> {
    let failure: unknown;
    try {
      await this.options.store.appendRows(rows);
    } catch (error) {
      failure = error;
    }
    let waiting: UsageRecord[] = [];
    if (failure instanceof UsageRowsRefused) {
      const records = retried.concat(...batches.map((b) => b.toRecords()));
      ({ unwritten: waiting, error: failure } = await writeAroundRefused(
        this.options.store,
        records,
        failure,
        (record, error) => this.deadLetter(record, error),
      ));
    } else if (failure !== undefined) {
      waiting = retried.concat(...batches.map((b) => b.toRecords()));
    }
    if (waiting.length === 0) {
      if (this.dropped > 0) {
        this.options.log.warn(
          { dropped: this.dropped },
          'usage records were dropped while the usage store was unavailable',
        );
        this.dropped = 0;
      }
      return;
    }
    this.options.log.warn(
      { err: failure, records: waiting.length },
      'usage records could not be written; kept for the next batch',
    );
    this.pending = waiting.concat(this.pending);
    this.cap();
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), 5_000);
      this.timer.unref();
    }
  }

  /** A record the database refuses: never retried (it would block every batch after it), logged whole instead. */
  private deadLetter(record: UsageRecord, error: UsageRowsRefused): void {
    this.setAside += 1;
    this.options.log.error(
      { err: error, usage_record: record, dead_lettered: this.setAside },
      'a usage record the usage store refused was set aside (dead-lettered): it is in this line, not in the store',
    );
  }

  async close(): Promise<void> {
    await this.flush();
  }

  /** Hands the current buffer to the next write (if it holds anything) and starts a new one. */
  private takeColumns(): void {
    if (this.columns.length === 0) return;
    this.ready.push(this.columns);
    this.columns = this.spare.pop() ?? new UsageColumns(this.batchSize);
    this.cap();
  }

  /** A written (or failed and copied) buffer, emptied for reuse; two are kept, the rest left to the GC. */
  private recycle(batch: UsageColumns): void {
    batch.clear();
    if (this.spare.length < 2) this.spare.push(batch);
  }

  /**
   * Keeps the newest MAX_BUFFERED records waiting (failed ones, then full buffers: buffers wait only while a write
   * is in flight); the oldest are dropped and counted.
   */
  private cap(): void {
    let excess = this.pending.length + this.ready.reduce((n, b) => n + b.length, 0) - MAX_BUFFERED;
    while (excess > 0) {
      if (this.pending.length === 0) {
        // The oldest buffer becomes records, so that exactly the oldest `excess` go.
        const oldest = this.ready.shift() as UsageColumns;
        this.pending = oldest.toRecords();
        this.recycle(oldest);
      }
      const n = Math.min(excess, this.pending.length);
      this.pending = this.pending.slice(n);
      this.dropped += n;
      excess -= n;
    }
  }
}
