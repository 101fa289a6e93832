import type { Pool } from 'pg';
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
import { migrateUnderLock } from './migrate.js';
import { retentionSql } from './postgres-usage-retention.js';
import { SIZE_SLOTS, usageRollupSchema } from './usage-rollup-schema.js';

const schema = (table: string) => `
CREATE TABLE IF NOT EXISTS ${table} (
  seq BIGSERIAL,
  time_ms BIGINT NOT NULL,
  request_id TEXT NOT NULL,
  caller TEXT NOT NULL,
  environment TEXT NOT NULL,
  route TEXT NOT NULL,
  model TEXT,
  upstream TEXT,
  status INTEGER NOT NULL,
  code TEXT,
  latency_ms DOUBLE PRECISION NOT NULL,
  ttfb_ms DOUBLE PRECISION,
  stream INTEGER NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  cost_usd DOUBLE PRECISION,
  attempts INTEGER NOT NULL,
  replay INTEGER NOT NULL
);
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS seq BIGSERIAL;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS cache_hit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS usage_anomaly INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS cache_read_tokens INTEGER;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS cache_write_tokens INTEGER;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS reasoning_tokens INTEGER;
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS cache_savings_usd DOUBLE PRECISION;
CREATE INDEX IF NOT EXISTS ${table}_time ON ${table} (time_ms);
CREATE INDEX IF NOT EXISTS ${table}_seq ON ${table} (seq);
CREATE INDEX IF NOT EXISTS ${table}_caller_time ON ${table} (caller, time_ms);
CREATE TABLE IF NOT EXISTS ${marksTable(table)} (
  spool TEXT NOT NULL,
  first_seq BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  stored_ms BIGINT NOT NULL,
  PRIMARY KEY (spool, first_seq)
);`;

/**
 * The marks of the local usage spools (docs/usage.md, "Durability"): which records of which instance's spool are
 * in the table, written by the same statement as those records.
 */
function marksTable(table: string): string {
  return `${table}_spool_marks`;
}

/** The PostgreSQL type of each of USAGE_COLUMNS, in order (the `unnest` arrays of a batch INSERT). */
const PG_TYPES = [
  'bigint',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'integer',
  'text',
  'double precision',
  'double precision',
  'integer',
  'integer',
  'integer',
  'double precision',
  'integer',
  'integer',
  'integer',
  'integer',
  'integer',
  'integer',
  'integer',
  'double precision',
] as const;

/**
 * Whether PostgreSQL refused a value of the statement, not the statement's delivery: SQLSTATE class 22 (data
 * exception: `22003` out of range, `22P02` not an integer) or 23 (integrity constraint violation). A lost
 * connection, a shutdown or a timeout has another class (08, 57, 53...) or a Node code (ECONNREFUSED).
 */
function refusesAValue(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

/**
 * Usage records in PostgreSQL (`DATABASE_URL`): one table every instance writes to, so the CLI of any instance
 * sees all traffic. A batch is one INSERT of arrays. `pg` is imported only when this store is opened. Times are
 * milliseconds since 1970, as in the embedded store; the day is computed in UTC by each.
 */
export class PostgresUsageStore implements UsageStore {
  private readonly sql: ReturnType<typeof retentionSql>;
  private readonly hours: string;

  private constructor(
    private readonly pool: Pool,
    private readonly table: string,
  ) {
    this.sql = retentionSql(table);
    this.hours = `${table}_hours`;
  }

  static async open(url: string, table = 'usage_records'): Promise<PostgresUsageStore> {
    // At most 51 characters: `<table>_spool_marks` (and `<table>_latency`) must fit PostgreSQL's 63.
    if (!/^[a-z_][a-z0-9_]{0,50}$/.test(table)) throw new RangeError(`invalid table name ${table}`);
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on('error', () => {
      // An idle client lost its connection: the next query reconnects (and reports its own error).
    });
    await migrateUnderLock(pool, schema(table));
    await migrateUnderLock(pool, usageRollupSchema(table));
    return new PostgresUsageStore(pool, table);
  }

  async append(records: readonly UsageRecord[]): Promise<void> {
    await this.appendRows([recordRows(records)]);
  }

  /**
   * One statement for every row of every batch (all or none): one array parameter per column, expanded by
   * `unnest`, so the statement has 23 parameters however many rows it carries (a VALUES list of one placeholder
   * per value stops at PostgreSQL's 65,535 parameters: 3,855 records, fewer than the recorder may retry at once).
   * The same statement counts them in one slot of `<table>_size` (a random one: instances do not queue on it).
   */
  async appendRows(batches: readonly UsageRows[], marks?: readonly SpoolMark[]): Promise<void> {
    const columns: unknown[][] = USAGE_COLUMNS.map(() => []);
    const row: unknown[] = new Array(USAGE_COLUMNS.length);
    for (const batch of batches) {
      for (let i = 0; i < batch.length; i++) {
        batch.writeValues(i, row, 0);
        for (let c = 0; c < row.length; c++) (columns[c] as unknown[]).push(row[c] ?? null);
      }
    }
    if ((columns[0] as unknown[]).length === 0) return;
    const arrays = USAGE_COLUMNS.map((_, c) => `$${c + 1}::${PG_TYPES[c]}[]`).join(', ');
    try {
      const insert = `INSERT INTO ${this.table} (${USAGE_COLUMNS.join(', ')}) SELECT * FROM unnest(${arrays})`;
      const slot = 1 + Math.floor(Math.random() * (SIZE_SLOTS - 1));
      const counted = this.sql.counted(insert, USAGE_COLUMNS.length + 1);
      if (marks === undefined || marks.length === 0) await this.pool.query(counted, [...columns, slot]);
      else {
        // The same one statement (so one transaction) writes the rows' spool marks: a data-modifying WITH runs either way.
        const m = USAGE_COLUMNS.length + 1;
        const marked = `marked AS (INSERT INTO ${marksTable(this.table)} (spool, first_seq, last_seq, stored_ms)
          SELECT *, $${m + 4}::bigint FROM unnest($${m + 1}::text[], $${m + 2}::bigint[], $${m + 3}::bigint[])), `;
        await this.pool.query(counted.replace(/^WITH /, `WITH ${marked}`), [
          ...columns,
          slot,
          marks.map((mark) => mark.spool),
          marks.map((mark) => mark.first),
          marks.map((mark) => mark.last),
          Date.now(),
        ]);
      }
    } catch (error) {
      throw refusesAValue(error) ? new UsageRowsRefused(error) : error;
    }
  }

  async spoolMarks(spool: string): Promise<SpoolMark[]> {
    const result = await this.pool.query(
      `SELECT first_seq, last_seq FROM ${marksTable(this.table)} WHERE spool = $1 ORDER BY first_seq`,
      [spool],
    );
    return (result.rows as Array<{ first_seq: string; last_seq: string }>).map((row) => ({
      spool,
      first: Number(row.first_seq),
      last: Number(row.last_seq),
    }));
  }

  async forgetSpool(spool: string, beforeSeq?: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${marksTable(this.table)} WHERE spool = $1 AND last_seq < $2`, [
      spool,
      beforeSeq ?? Number.MAX_SAFE_INTEGER,
    ]);
  }

  async summarizeCallers(callers: readonly string[], fromMs: number, toMs: number): Promise<UsageSummaryRow[]> {
    if (callers.length === 0) return [];
    const result = await this.pool.query(summarySql('caller', 'postgres', this.table, this.hours, true), [
      fromMs,
      toMs,
      hourOf(fromMs),
      [...callers],
    ]);
    return (result.rows as Array<Record<string, unknown>>).map(summaryRow);
  }

  async summarize(grouping: UsageGrouping, fromMs: number, toMs: number): Promise<UsageSummaryRow[]> {
    const result = await this.pool.query(summarySql(grouping, 'postgres', this.table, this.hours), [
      fromMs,
      toMs,
      hourOf(fromMs),
    ]);
    return (result.rows as Array<Record<string, unknown>>).map(summaryRow);
  }

  async timeline(fromMs: number, toMs: number, bucketMs: number): Promise<UsageTimelineRow[]> {
    const result = await this.pool.query(timelineSql('postgres', this.table, this.hours, `${this.table}_latency`), [
      Math.max(1, Math.floor(bucketMs)),
      fromMs,
      toMs,
      hourOf(fromMs),
    ]);
    return (result.rows as Array<Record<string, unknown>>).map(timelineRow);
  }

  async recent(limit: number, failuresOnly: boolean): Promise<UsageRecord[]> {
    const where = failuresOnly ? 'WHERE status >= 400 OR code IS NOT NULL' : '';
    const result = await this.pool.query(
      `SELECT ${USAGE_COLUMNS.join(', ')} FROM ${this.table} ${where} ORDER BY time_ms DESC LIMIT $1`,
      [Math.max(0, Math.floor(limit))],
    );
    return (result.rows as Array<Record<string, unknown>>).map(recordFromRow);
  }

  async stored(afterSeq: number | undefined, limit: number): Promise<Array<{ seq: number; record: UsageRecord }>> {
    const count = Math.max(0, Math.floor(limit));
    const columns = `seq, ${USAGE_COLUMNS.join(', ')}`;
    const result =
      afterSeq === undefined
        ? await this.pool.query(`SELECT ${columns} FROM ${this.table} ORDER BY seq DESC LIMIT $1`, [count])
        : await this.pool.query(`SELECT ${columns} FROM ${this.table} WHERE seq > $1 ORDER BY seq LIMIT $2`, [
            afterSeq,
            count,
          ]);
    const rows = result.rows as Array<Record<string, unknown>>;
    if (afterSeq === undefined) rows.reverse();
    return rows.map((row) => ({ seq: Number(row.seq), record: recordFromRow(row) }));
  }

  async purge(beforeMs: number, limit?: number): Promise<number> {
    return this.count(this.sql.purge, [beforeMs, limit ?? null]);
  }

  async purgeHours(beforeMs: number, limit?: number): Promise<number> {
    return this.count(this.sql.purgeHours, [beforeMs, limit ?? null]);
  }

  async rollOldest(limit: number): Promise<number> {
    return this.count(this.sql.roll, [Math.max(0, Math.floor(limit))]);
  }

  async footprint(): Promise<UsageFootprint> {
    const row = ((await this.pool.query(this.sql.footprint)).rows[0] ?? {}) as Record<string, unknown>;
    return {
      records: Number(row.records ?? 0),
      recordBytes: Number(row.record_bytes ?? 0),
      hours: Number(row.hours ?? 0),
      hourBytes: Number(row.hour_bytes ?? 0),
    };
  }

  private async count(sql: string, values: unknown[]): Promise<number> {
    const result = await this.pool.query<{ n: number }>(sql, values);
    return Number(result.rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** For tests: drops the tables. */
  async dropTable(): Promise<void> {
    await this.pool.query(
      `DROP TABLE IF EXISTS ${this.table}, ${this.hours}, ${this.table}_latency, ${this.table}_size, ${marksTable(this.table)}`,
    );
  }
}
