import type { SpoolMark, UsageRecord, UsageRows, UsageStore } from '../store/store-contract.js';
import { UsageRowsRefused, recordRows } from '../store/usage-sql.js';
import { UsageColumns, type WaitingRecord } from './usage-columns.js';
import { writeAroundRefused } from './refused-records.js';
import { marksOf } from './spool-lines.js';
import type { UsageLog } from './usage-log.js';
import type { UsageSpool } from './usage-spool.js';
import { writeStranded } from './spool-reader.js';

const MAX_BUFFERED = 20_000;

/**
 * Usage records leave the request path at once: a record goes into a columnar buffer (`buffer().push(...)`, no
 * allocation) and, with a spool, is appended to it (`added()`, before the answer's last bytes: src/usage/usage-spool.ts),
 * then written to the store in batches (every second, or at 500 records) straight from the columns — one
 * transaction or one INSERT per write, no object per record on the way, the spool's marks of those records in the
 * same write. If the store is down, records wait in memory as objects (up to 20,000, then the oldest are dropped
 * from memory and counted in the log; a spooled one stays in the spool, written from it once the store is back)
 * and are retried with the next batch. A record the database refuses (a value it will not store) is set aside, never retried: the
 * batch is written around it (src/usage/refused-records.ts). Records age out in src/usage/usage-retention.ts.
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
  private pending: WaitingRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;
  /** The pass writing stranded records from the spool, while one runs. */
  private recovering: Promise<void> | undefined;
  private setAside = 0;

  constructor(
    private readonly options: {
      store: UsageStore;
      log: Pick<UsageLog, 'warn' | 'error'>;
      flushMs?: number;
      maxBatch?: number;
      /** The local write-ahead spool (none: records live only in memory until written). */
      spool?: UsageSpool;
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
    const spool = this.options.spool;
    if (spool) {
      const row = this.columns.length - 1;
      this.columns.setSeq(row, spool.append(this.columns, row));
    }
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
  private async write(rows: UsageRows[], retried: WaitingRecord[], batches: UsageColumns[]): Promise<void> {
    let failure: unknown;
    const marks = this.marksOf(retried, batches);
    try {
      await this.options.store.appendRows(rows, marks);
      if (marks) this.options.spool?.confirm(marks);
    } catch (error) {
      failure = error;
    }
    let waiting: WaitingRecord[] = [];
    if (failure instanceof UsageRowsRefused) {
      const records = retried.concat(...batches.map((b) => b.toWaiting()));
      ({ unwritten: waiting, error: failure } = await writeAroundRefused(
        (part) => this.writeRecords(part),
        records,
        failure,
        (record, error) => this.deadLetter(record, error),
      ));
    } else if (failure !== undefined) {
      waiting = retried.concat(...batches.map((b) => b.toWaiting()));
    }
    if (waiting.length === 0) {
      if (this.dropped > 0) {
        this.options.log.warn(
          { dropped: this.dropped, spooled: this.options.spool !== undefined },
          'usage records were dropped from memory while the usage store was unavailable',
        );
        this.dropped = 0;
      }
      if (this.options.spool?.hasStranded) this.recoverStranded(this.options.spool);
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

  /** The spool's marks of the records of one write (undefined without a spool). */
  private marksOf(retried: readonly WaitingRecord[], batches: readonly UsageColumns[]): SpoolMark[] | undefined {
    const spool = this.options.spool;
    if (!spool) return undefined;
    const seqs = retried.map((record) => record.spoolSeq);
    for (const batch of batches) for (let i = 0; i < batch.length; i++) seqs.push(batch.seqAt(i));
    return marksOf(spool.id, seqs);
  }

  /** One part of a write around a refused record, with its marks. */
  private async writeRecords(records: readonly WaitingRecord[]): Promise<void> {
    const spool = this.options.spool;
    const marks = spool
      ? marksOf(
          spool.id,
          records.map((record) => record.spoolSeq),
        )
      : undefined;
    await this.options.store.appendRows([recordRows(records)], marks);
    if (marks) spool?.confirm(marks);
  }

  /** A record the database refuses: never retried (it would block every batch after it), logged whole instead. */
  private deadLetter(waiting: WaitingRecord, error: UsageRowsRefused): void {
    this.setAside += 1;
    const { spoolSeq, ...record } = waiting;
    // Done with: a replay of the spool would only set it aside again.
    if (this.options.spool && spoolSeq > 0) this.options.spool.confirm(marksOf(this.options.spool.id, [spoolSeq]));
    this.options.log.error(
      { err: error, usage_record: record, dead_lettered: this.setAside },
      'a usage record the usage store refused was set aside (dead-lettered): it is in this line, not in the store',
    );
  }

  async close(): Promise<void> {
    await this.flush();
    await this.recovering;
    await this.options.spool?.close();
  }

  /** The store takes records again: those dropped from memory are written from the spool (one pass at a time). */
  private recoverStranded(spool: UsageSpool): void {
    this.recovering ??= writeStranded(spool, this.options.store, this.options.log)
      .then(() => undefined)
      .catch((error: unknown) =>
        this.options.log.warn({ err: error }, 'usage records kept only in the spool could not be written yet'),
      )
      .finally(() => (this.recovering = undefined));
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
        this.pending = oldest.toWaiting();
        this.recycle(oldest);
      }
      const n = Math.min(excess, this.pending.length);
      // A spooled record dropped here is only in the spool now: it is written from there later (`recoverStranded`).
      this.options.spool?.strand(this.pending.slice(0, n).map((record) => record.spoolSeq));
      this.pending = this.pending.slice(n);
      this.dropped += n;
      excess -= n;
    }
  }
}
