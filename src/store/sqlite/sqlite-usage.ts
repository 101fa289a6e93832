import { setImmediate as nextTurn } from 'node:timers/promises';
import type * as Sqlite from './database.js';
import { isRefusedValueError } from './database.js';
import type {
  SpoolMark,
  UsageFootprint,
  UsageGrouping,
  UsageRecord,
  UsageRows,
  UsageStore,
  UsageSummaryRow,
  UsageTimelineRow,
} from '../store-contract.js';
import { USAGE_COLUMNS, UsageRowsRefused, recordFromRow, recordRows, summaryRow, timelineRow } from '../usage-sql.js';
import { hourOf, summarySql, timelineSql } from '../usage-rollup-sql.js';
import { SqliteUsageRetention } from './sqlite-usage-retention.js';

const ROWS_PER_INSERT = 50;
const WIDTH = USAGE_COLUMNS.length;

/**
 * Usage records in the embedded store (table `usage_records`, migration 7), and their hourly rollups
 * (`usage_hours`, migration 23: summaries read both; ./sqlite-usage-retention.ts ages records out).
 */
export class SqliteUsageStore implements UsageStore {
  private readonly retention: SqliteUsageRetention;
  private readonly insert: Sqlite.Statement<unknown[]>;
  private readonly insertMany: Sqlite.Statement<unknown[]>;
  private readonly writeBatches: Sqlite.Transaction<
    (batches: readonly UsageRows[], marks: readonly SpoolMark[] | undefined) => void
  >;
  private readonly insertMark: Sqlite.Statement<[string, number, number, number]>;
  private readonly marksOf: Sqlite.Statement<[string], { first_seq: number; last_seq: number }>;
  private readonly forgetMarks: Sqlite.Statement<[string, number]>;
  private readonly summaries = new Map<
    UsageGrouping,
    Sqlite.Statement<[number, number, number], Record<string, unknown>>
  >();
  private readonly callerSummary: Sqlite.Statement<[number, number, number, string], Record<string, unknown>>;
  private readonly latest: Sqlite.Statement<[number], Record<string, unknown>>;
  private readonly latestFailures: Sqlite.Statement<[number], Record<string, unknown>>;
  private readonly lastStored: Sqlite.Statement<[number], Record<string, unknown>>;
  private readonly storedAfter: Sqlite.Statement<[number, number], Record<string, unknown>>;
  private readonly maxSeq: Sqlite.Statement<[], { seq: number | null }>;
  private readonly buckets: Sqlite.Statement<[number, number, number, number], Record<string, unknown>>;

  constructor(db: Sqlite.Database) {
    this.retention = new SqliteUsageRetention(db);
    const row = `(${USAGE_COLUMNS.map(() => '?').join(', ')})`;
    this.insert = db.prepare(`INSERT INTO usage_records (${USAGE_COLUMNS.join(', ')}) VALUES ${row}`);
    // Rows in groups of ROWS_PER_INSERT: one statement step for many records (cheaper per record).
    this.insertMany = db.prepare(
      `INSERT INTO usage_records (${USAGE_COLUMNS.join(', ')}) VALUES ${Array.from({ length: ROWS_PER_INSERT }, () => row).join(', ')}`,
    );
    const values: unknown[] = new Array(ROWS_PER_INSERT * WIDTH);
    // The usage spool's marks (migration 22, docs/usage.md "Durability"): written with the records they name.
    this.insertMark = db.prepare(
      'INSERT INTO usage_spool_marks (spool, first_seq, last_seq, stored_ms) VALUES (?, ?, ?, ?)',
    );
    this.marksOf = db.prepare('SELECT first_seq, last_seq FROM usage_spool_marks WHERE spool = ? ORDER BY first_seq');
    this.forgetMarks = db.prepare('DELETE FROM usage_spool_marks WHERE spool = ? AND last_seq < ?');
    this.writeBatches = db.transaction((batches: readonly UsageRows[], marks: readonly SpoolMark[] | undefined) => {
      const last = this.retention.lastRowid();
      const now = Date.now();
      for (const mark of marks ?? []) this.insertMark.run(mark.spool, mark.first, mark.last, now);
      let filled = 0;
      for (const batch of batches) {
        for (let i = 0; i < batch.length; i++) {
          batch.writeValues(i, values, filled * WIDTH);
          filled += 1;
          if (filled === ROWS_PER_INSERT) {
            // Spread: node:sqlite binds positional values from the call's arguments (an array is not a parameter list).
            this.insertMany.run(...values);
            filled = 0;
          }
        }
      }
      for (let j = 0; j < filled; j++) this.insert.run(...values.slice(j * WIDTH, (j + 1) * WIDTH));
      this.retention.counted(last);
    });
    for (const grouping of ['model', 'caller', 'route', 'day'] as const) {
      this.summaries.set(grouping, db.prepare(summarySql(grouping, 'sqlite', 'usage_records', 'usage_hours')));
    }
    // Through the caller indexes (migrations 10 and 23): only the named callers' rows are read.
    this.callerSummary = db.prepare(summarySql('caller', 'sqlite', 'usage_records', 'usage_hours', true));
    this.latest = db.prepare<[number], Record<string, unknown>>(
      `SELECT ${USAGE_COLUMNS.join(', ')} FROM usage_records ORDER BY time_ms DESC, rowid DESC LIMIT ?`,
    );
    this.latestFailures = db.prepare<[number], Record<string, unknown>>(
      `SELECT ${USAGE_COLUMNS.join(', ')} FROM usage_records WHERE status >= 400 OR code IS NOT NULL ORDER BY time_ms DESC, rowid DESC LIMIT ?`,
    );
    this.lastStored = db.prepare<[number], Record<string, unknown>>(
      `SELECT rowid AS seq, ${USAGE_COLUMNS.join(', ')} FROM usage_records ORDER BY rowid DESC LIMIT ?`,
    );
    this.storedAfter = db.prepare<[number, number], Record<string, unknown>>(
      `SELECT rowid AS seq, ${USAGE_COLUMNS.join(', ')} FROM usage_records WHERE rowid > ? ORDER BY rowid LIMIT ?`,
    );
    this.maxSeq = db.prepare<[], { seq: number | null }>('SELECT max(rowid) AS seq FROM usage_records');
    this.buckets = db.prepare<[number, number, number, number], Record<string, unknown>>(
      timelineSql('sqlite', 'usage_records', 'usage_hours', 'usage_hour_latency'),
    );
  }

  async append(records: readonly UsageRecord[]): Promise<void> {
    await this.appendRows([recordRows(records)]);
  }

  /**
   * One transaction of its own on the next turn of the event loop, rows bound straight from the batches. Not
   * through the shared write batcher: its savepoint per write made SQLite journal every page the batch touched
   * (a sub-journal that spilled to a temporary file), and a batch of hundreds of rows needs no group commit.
   */
  async appendRows(batches: readonly UsageRows[], marks?: readonly SpoolMark[]): Promise<void> {
    if (!batches.some((b) => b.length > 0)) return;
    await nextTurn();
    try {
      this.writeBatches.immediate(batches, marks);
    } catch (error) {
      // The transaction was rolled back: nothing of it is stored either way.
      throw isRefusedValueError(error) ? new UsageRowsRefused(error) : error;
    }
  }

  async spoolMarks(spool: string): Promise<SpoolMark[]> {
    return this.marksOf.all(spool).map((row) => ({ spool, first: Number(row.first_seq), last: Number(row.last_seq) }));
  }

  async forgetSpool(spool: string, beforeSeq?: number): Promise<void> {
    await nextTurn();
    this.forgetMarks.run(spool, beforeSeq ?? Number.MAX_SAFE_INTEGER);
  }

  async summarizeCallers(callers: readonly string[], fromMs: number, toMs: number): Promise<UsageSummaryRow[]> {
    if (callers.length === 0) return [];
    return this.callerSummary.all(fromMs, toMs, hourOf(fromMs), JSON.stringify(callers)).map(summaryRow);
  }

  async summarize(grouping: UsageGrouping, fromMs: number, toMs: number): Promise<UsageSummaryRow[]> {
    const statement = this.summaries.get(grouping);
    if (!statement) throw new RangeError(`unknown grouping ${grouping}`);
    return statement.all(fromMs, toMs, hourOf(fromMs)).map(summaryRow);
  }

  async timeline(fromMs: number, toMs: number, bucketMs: number): Promise<UsageTimelineRow[]> {
    const size = Math.max(1, Math.floor(bucketMs));
    return this.buckets.all(size, fromMs, toMs, hourOf(fromMs)).map(timelineRow);
  }

  async recent(limit: number, failuresOnly: boolean): Promise<UsageRecord[]> {
    return (failuresOnly ? this.latestFailures : this.latest).all(Math.max(0, Math.floor(limit))).map(recordFromRow);
  }

  async stored(afterSeq: number | undefined, limit: number): Promise<Array<{ seq: number; record: UsageRecord }>> {
    const count = Math.max(0, Math.floor(limit));
    // A rowid is reused only when the table was emptied (by the retention): a position beyond the end means that.
    const after = afterSeq !== undefined && afterSeq > (this.maxSeq.get()?.seq ?? 0) ? 0 : afterSeq;
    const rows = after === undefined ? this.lastStored.all(count).reverse() : this.storedAfter.all(after, count);
    return rows.map((row) => ({ seq: Number(row.seq), record: recordFromRow(row) }));
  }

  // Each on a later turn of the event loop, as one transaction of its own (like appendRows).
  async purge(beforeMs: number, limit = -1): Promise<number> {
    await nextTurn();
    return this.retention.purge.immediate(beforeMs, limit);
  }

  async purgeHours(beforeMs: number, limit = -1): Promise<number> {
    await nextTurn();
    return this.retention.purgeHours.immediate(beforeMs, limit);
  }

  async rollOldest(limit: number): Promise<number> {
    await nextTurn();
    return this.retention.roll.immediate(Math.max(0, Math.floor(limit)));
  }

  async footprint(): Promise<UsageFootprint> {
    return this.retention.footprint();
  }
}
