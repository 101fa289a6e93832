import type { Pool, QueryResult, QueryResultRow } from 'pg';
import type {
  BatchApi,
  BatchLine,
  BatchRecord,
  BatchStamp,
  BatchStatus,
  BatchStore,
  LineOutcome,
  NativeBatchState,
  NewBatchLine,
  HeldLease,
  SweepStep,
  SweptCreates,
  SweptLines,
} from '../batch-contract.js';
import {
  ACTIVE_SQL,
  COUNT_COLUMN,
  LINE_SIZE_SQL,
  STAMP_COLUMNS,
  SweepBudget,
  insertValuesOf,
  lineOf,
  nativeStateOf,
  nativeValuesOf,
  recordOf,
  usageValuesOf,
  type Row,
} from '../batch-rows.js';
import { migrateUnderLock } from './migrate.js';

/**
 * The same tables as SQLite migrations 17, 18, 20, 21, 25 and 26, under the prefix. The columns of 25 and 26 are
 * added with their backfill of the batches already ended, once (the DO blocks: this text runs again whenever it
 * changes, and a backfill run again would mark batches whose lines were already swept).
 */
export const batchSchema = (p: string) => `
CREATE TABLE IF NOT EXISTS ${p}batches (
  seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL, principal TEXT NOT NULL, api TEXT NOT NULL,
  endpoint TEXT NOT NULL, input_file_id TEXT, completion_window TEXT NOT NULL, metadata TEXT, status TEXT NOT NULL,
  total BIGINT NOT NULL DEFAULT 0, succeeded BIGINT NOT NULL DEFAULT 0, errored BIGINT NOT NULL DEFAULT 0,
  canceled BIGINT NOT NULL DEFAULT 0, expired BIGINT NOT NULL DEFAULT 0, errors TEXT, output_file_id TEXT,
  error_file_id TEXT, created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL, in_progress_ms BIGINT,
  finalizing_ms BIGINT, completed_ms BIGINT, failed_ms BIGINT, expired_ms BIGINT, cancelling_ms BIGINT,
  cancelled_ms BIGINT, lease_holder TEXT, lease_until_ms BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS ${p}batches_owner ON ${p}batches (owner, api, seq);
CREATE INDEX IF NOT EXISTS ${p}batches_active ON ${p}batches (status) WHERE status IN (${ACTIVE_SQL});
CREATE TABLE IF NOT EXISTS ${p}batch_lines (
  batch_id TEXT NOT NULL, idx INTEGER NOT NULL, custom_id TEXT NOT NULL, url TEXT NOT NULL, body TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'errored', 'canceled', 'expired')),
  status_code INTEGER, response TEXT, request_id TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
  not_before_ms BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (batch_id, idx));
CREATE INDEX IF NOT EXISTS ${p}batch_lines_pending ON ${p}batch_lines (batch_id, idx) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS ${p}batch_native (
  batch_id TEXT PRIMARY KEY, mode TEXT NOT NULL CHECK (mode IN ('gateway', 'native')), upstream TEXT,
  phase TEXT NOT NULL CHECK (phase IN ('decided', 'submitted', 'collected')), upstream_file_id TEXT,
  upstream_batch_id TEXT, reason TEXT);
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS output_ttl_s BIGINT;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS model TEXT;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS usage_lines BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS reasoning_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ${p}batches ADD COLUMN IF NOT EXISTS total_tokens BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS ${p}batch_creates (batch_id TEXT PRIMARY KEY, started_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ${p}batch_creates_started ON ${p}batch_creates (started_ms);
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${p}batches'::regclass AND attname = 'lines_until_ms'
      AND NOT attisdropped) THEN
    ALTER TABLE ${p}batches ADD COLUMN lines_until_ms BIGINT;
    UPDATE ${p}batches SET lines_until_ms = CASE
        WHEN status = 'failed' THEN coalesce(failed_ms, created_ms)
        WHEN api = 'anthropic' THEN created_ms + 29 * 86400000::bigint
        ELSE coalesce(completed_ms, expired_ms, cancelled_ms, created_ms)
          + coalesce(output_ttl_s * 1000, 30 * 86400000::bigint) END
      WHERE status IN ('completed', 'failed', 'expired', 'cancelled');
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${p}batches'::regclass AND attname = 'results_until_ms'
      AND NOT attisdropped) THEN
    ALTER TABLE ${p}batches ADD COLUMN results_until_ms BIGINT;
    UPDATE ${p}batches SET results_until_ms = created_ms + 29 * 86400000::bigint WHERE api = 'anthropic';
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS ${p}batches_lines_until ON ${p}batches (lines_until_ms) WHERE lines_until_ms IS NOT NULL;`;

/** deadlock_detected, serialization_failure: PostgreSQL aborted the statement, and it may simply be run again. */
const RETRIED_SQLSTATES = new Set(['40P01', '40001']);
const STATEMENT_TRIES = 3;

/** Lines per INSERT statement in `addLines` (5 parameters each, under PostgreSQL's 65,535). */
const INSERT_CHUNK = 1000;

/**
 * Batches in PostgreSQL (chosen with `files.store: postgres`, docs/files.md "Batches"), so every instance sharing
 * the database sees every batch and one of them runs each. Exactly-once lives in single statements: a line's
 * outcome is written by an UPDATE that matches only a `pending` row (a second writer blocks on the row lock, then
 * finds it no longer pending) and moves the batch's counts in the same statement; a lease is taken by an UPDATE
 * over rows locked with SKIP LOCKED whose lease is free, expired or already the caller's.
 */
export class PostgresBatches implements BatchStore {
  private constructor(
    private readonly pool: Pool,
    private readonly p: string,
  ) {}

  /** Opens its own pool over `url` and creates the tables (`prefix` names them: tests use their own). */
  static async open(url: string, prefix = 'gw_'): Promise<PostgresBatches> {
    if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) throw new RangeError(`invalid table prefix ${prefix}`);
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, max: 8 });
    pool.on('error', () => {
      // An idle client lost its connection: the next query reconnects (and reports its own error).
    });
    await migrateUnderLock(pool, batchSchema(prefix));
    return new PostgresBatches(pool, prefix);
  }

  close(): Promise<void> {
    return this.pool.end();
  }

  /**
   * One statement, tried again (up to three times in all, after a short random wait) when PostgreSQL aborts it as a
   * deadlock victim or a serialization failure: each statement here is its own transaction, so nothing of it took
   * effect. Without this a line whose answer hit a deadlock (another instance's statements, a schema change) stayed
   * pending and ran upstream a second time.
   */
  private async query<R extends QueryResultRow = Row>(sql: string, values: unknown[]): Promise<QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pool.query<R>(sql, values);
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (attempt >= STATEMENT_TRIES || !RETRIED_SQLSTATES.has(code ?? '')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 45));
      }
    }
  }

  private async rows(sql: string, values: unknown[]): Promise<Row[]> {
    return (await this.query<Row>(sql, values)).rows;
  }

  private async changed(sql: string, values: unknown[]): Promise<number> {
    return (await this.query(sql, values)).rowCount ?? 0;
  }

  async create(batch: BatchRecord): Promise<void> {
    // The record and the end of its create mark (beginCreate) in one statement: a mark is never left on a batch.
    await this.query(
      `WITH ended AS (DELETE FROM ${this.p}batch_creates WHERE batch_id = $1)
       INSERT INTO ${this.p}batches (id, owner, principal, api, endpoint, input_file_id, completion_window, metadata,
         status, total, created_ms, expires_ms, output_ttl_s, model, results_until_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      insertValuesOf(batch),
    );
  }

  async get(owner: string, id: string): Promise<BatchRecord | undefined> {
    const [row] = await this.rows(`SELECT * FROM ${this.p}batches WHERE id = $1 AND owner = $2`, [id, owner]);
    return row ? recordOf(row) : undefined;
  }

  async list(owner: string, api: BatchApi, after: string | undefined, limit: number): Promise<BatchRecord[]> {
    let before = Number.MAX_SAFE_INTEGER;
    if (after !== undefined) {
      const [row] = await this.rows(`SELECT seq FROM ${this.p}batches WHERE id = $1 AND owner = $2`, [after, owner]);
      if (!row) return [];
      before = Number(row.seq);
    }
    const rows = await this.rows(
      `SELECT * FROM ${this.p}batches WHERE owner = $1 AND api = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4`,
      [owner, api, before, limit],
    );
    return rows.map(recordOf);
  }

  async transition(id: string, from: readonly BatchStatus[], to: BatchStatus, stamp: BatchStamp): Promise<boolean> {
    const values: unknown[] = [to];
    const sets = ['status = $1'];
    for (const [key, value] of Object.entries(stamp) as Array<[keyof BatchStamp, unknown]>) {
      values.push(key === 'errors' ? JSON.stringify(value) : value);
      sets.push(`${STAMP_COLUMNS[key]} = $${values.length}`);
    }
    values.push(id, [...from]);
    const sql = `UPDATE ${this.p}batches SET ${sets.join(', ')} WHERE id = $${values.length - 1}
      AND status = ANY($${values.length}::text[])`;
    return (await this.changed(sql, values)) === 1;
  }

  async delete(owner: string, id: string): Promise<boolean> {
    const removed = await this.rows(
      `WITH gone AS (DELETE FROM ${this.p}batches WHERE id = $1 AND owner = $2 AND status NOT IN (${ACTIVE_SQL})
         RETURNING id), lines AS (DELETE FROM ${this.p}batch_lines WHERE batch_id IN (SELECT id FROM gone)),
         native AS (DELETE FROM ${this.p}batch_native WHERE batch_id IN (SELECT id FROM gone))
       SELECT count(*)::int AS n FROM gone`,
      [id, owner],
    );
    return Number(removed[0]?.n) === 1;
  }

  async addLines(batchId: string, lines: readonly NewBatchLine[]): Promise<void> {
    for (let start = 0; start < lines.length; start += INSERT_CHUNK) {
      const chunk = lines.slice(start, start + INSERT_CHUNK);
      const values: unknown[] = [batchId];
      const tuples = chunk.map((line) => {
        values.push(line.index, line.customId, line.url, line.body);
        const n = values.length;
        return `($1, $${n - 3}, $${n - 2}, $${n - 1}, $${n}, 'pending')`;
      });
      // The insert and the total move in one statement: a line already there adds nothing (validation again).
      await this.query(
        `WITH added AS (INSERT INTO ${this.p}batch_lines (batch_id, idx, custom_id, url, body, state)
           VALUES ${tuples.join(', ')} ON CONFLICT (batch_id, idx) DO NOTHING RETURNING idx)
         UPDATE ${this.p}batches SET total = total + (SELECT count(*) FROM added) WHERE id = $1`,
        values,
      );
    }
  }

  async beginCreate(batchId: string, startedMs: number): Promise<void> {
    await this.query(
      `INSERT INTO ${this.p}batch_creates (batch_id, started_ms) VALUES ($1, $2) ON CONFLICT (batch_id) DO NOTHING`,
      [batchId, startedMs],
    );
  }

  async discardLines(batchId: string): Promise<number> {
    const removed = await this.query(
      `WITH ended AS (DELETE FROM ${this.p}batch_creates WHERE batch_id = $1)
       DELETE FROM ${this.p}batch_lines WHERE batch_id = $1
         AND NOT EXISTS (SELECT 1 FROM ${this.p}batches WHERE id = $1)`,
      [batchId],
    );
    return removed.rowCount ?? 0;
  }

  /**
   * The oldest marks first, each create's lines by its key (batch_id, idx) within what is left of the step, one
   * statement per create: a create of 256 MiB goes over many steps, never in one long statement.
   */
  async sweepCreates(startedBeforeMs: number, step: SweepStep): Promise<SweptCreates> {
    const budget = new SweepBudget(step);
    let creates = 0;
    const marks = await this.rows(
      `SELECT batch_id FROM ${this.p}batch_creates WHERE started_ms < $1 ORDER BY started_ms LIMIT $2`,
      [startedBeforeMs, step.lines],
    );
    for (const [id, lines, bytes] of budget.over(marks.map((mark) => mark.batch_id as string))) {
      // In index order until `lines` lines, or the line that reaches the bytes left (the first always goes). A
      // batch that exists keeps its lines whatever its mark says (the mark goes with the record's write).
      const removed = await this.rows(
        `DELETE FROM ${this.p}batch_lines WHERE batch_id = $1 AND idx IN (SELECT idx FROM (SELECT idx,
             coalesce(sum(octet_length(body)) OVER (ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
               AS before_bytes FROM ${this.p}batch_lines WHERE batch_id = $1 ORDER BY idx LIMIT $2) AS head
             WHERE before_bytes < $3)
           AND NOT EXISTS (SELECT 1 FROM ${this.p}batches WHERE id = $1)
         RETURNING octet_length(body) AS bytes`,
        [id, lines, bytes],
      );
      budget.took(removed);
      // Its mark goes once no line is left (none came meanwhile), or when the batch exists after all.
      creates += await this.changed(
        `DELETE FROM ${this.p}batch_creates WHERE batch_id = $1 AND NOT EXISTS (SELECT 1 FROM ${this.p}batch_lines
             WHERE batch_id = $1 AND NOT EXISTS (SELECT 1 FROM ${this.p}batches WHERE id = $1))`,
        [id],
      );
    }
    return { lines: budget.lines, creates };
  }

  async claim(holder: string, nowMs: number, leaseMs: number, limit: number): Promise<BatchRecord[]> {
    const rows = await this.rows(
      `UPDATE ${this.p}batches SET lease_holder = $1, lease_until_ms = $3 WHERE id IN (
         SELECT id FROM ${this.p}batches WHERE status IN (${ACTIVE_SQL})
           AND (lease_holder = $1 OR lease_until_ms <= $2) ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
       AND (lease_holder = $1 OR lease_until_ms <= $2) RETURNING *`,
      [holder, nowMs, nowMs + leaseMs, limit],
    );
    return rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map(recordOf);
  }

  async leasesHeldBy(prefix: string, limit: number): Promise<HeldLease[]> {
    const rows = await this.rows(
      `SELECT id, lease_holder FROM ${this.p}batches WHERE status IN (${ACTIVE_SQL})
         AND left(lease_holder, length($1)) = $1 LIMIT $2`,
      [prefix, limit],
    );
    return rows.map((row) => ({ id: row.id as string, holder: row.lease_holder as string }));
  }

  /**
   * The batches due first, each one's lines from the lowest index within what is left of the step, one statement
   * per batch; a batch whose lines are all gone has its mark cleared (and its native state removed).
   */
  async sweepEndedLines(nowMs: number, step: SweepStep): Promise<SweptLines> {
    const budget = new SweepBudget(step);
    let batches = 0;
    const due = await this.rows(
      `SELECT id FROM ${this.p}batches WHERE lines_until_ms IS NOT NULL AND lines_until_ms <= $1
       ORDER BY lines_until_ms LIMIT $2`,
      [nowMs, step.lines],
    );
    for (const [id, lines, bytes] of budget.over(due.map((row) => row.id as string))) {
      const removed = await this.rows(
        `DELETE FROM ${this.p}batch_lines WHERE batch_id = $1 AND idx IN (SELECT idx FROM (SELECT idx,
             coalesce(sum(size) OVER (ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
               AS before_bytes
             FROM (SELECT idx, ${LINE_SIZE_SQL} AS size FROM ${this.p}batch_lines WHERE batch_id = $1
               ORDER BY idx LIMIT $2) AS head) AS summed WHERE before_bytes < $3)
         RETURNING ${LINE_SIZE_SQL} AS bytes`,
        [id, lines, bytes],
      );
      budget.took(removed);
      // Its mark goes once no line is left.
      const cleared = await this.rows(
        `WITH gone AS (UPDATE ${this.p}batches SET lines_until_ms = NULL WHERE id = $1 AND lines_until_ms <= $2
             AND NOT EXISTS (SELECT 1 FROM ${this.p}batch_lines WHERE batch_id = $1) RETURNING id),
           native AS (DELETE FROM ${this.p}batch_native WHERE batch_id IN (SELECT id FROM gone))
         SELECT count(*)::int AS n FROM gone`,
        [id, nowMs],
      );
      batches += Number(cleared[0]?.n ?? 0);
    }
    return { lines: budget.lines, batches };
  }

  async renew(id: string, holder: string, untilMs: number): Promise<boolean> {
    const sql = `UPDATE ${this.p}batches SET lease_until_ms = $1 WHERE id = $2 AND lease_holder = $3`;
    return (await this.changed(sql, [untilMs, id, holder])) === 1;
  }

  async release(id: string, holder: string): Promise<void> {
    await this.query(
      `UPDATE ${this.p}batches SET lease_holder = NULL, lease_until_ms = 0 WHERE id = $1 AND lease_holder = $2`,
      [id, holder],
    );
  }

  async pendingLines(batchId: string, afterIndex: number, nowMs: number, limit: number): Promise<BatchLine[]> {
    const rows = await this.rows(
      `SELECT * FROM ${this.p}batch_lines WHERE batch_id = $1 AND state = 'pending' AND idx > $2
         AND not_before_ms <= $3 ORDER BY idx LIMIT $4`,
      [batchId, afterIndex, nowMs, limit],
    );
    return rows.map(lineOf);
  }

  async pendingCount(batchId: string): Promise<number> {
    const sql = `SELECT count(*)::int AS n FROM ${this.p}batch_lines WHERE batch_id = $1 AND state = 'pending'`;
    const [row] = await this.rows(sql, [batchId]);
    return Number(row?.n ?? 0);
  }

  async recordOutcome(batchId: string, index: number, outcome: LineOutcome): Promise<boolean> {
    const { state, statusCode, response, requestId, error } = outcome;
    const column = COUNT_COLUMN[state];
    const [row] = await this.rows(
      `WITH moved AS (UPDATE ${this.p}batch_lines SET state = $1, status_code = $2, response = $3, request_id = $4,
           error = $5, attempts = attempts + 1 WHERE batch_id = $6 AND idx = $7 AND state = 'pending' RETURNING idx),
         counted AS (UPDATE ${this.p}batches SET ${column} = ${column} + 1, usage_lines = usage_lines + $8,
           input_tokens = input_tokens + $9, cached_tokens = cached_tokens + $10, output_tokens = output_tokens + $11,
           reasoning_tokens = reasoning_tokens + $12, total_tokens = total_tokens + $13
           WHERE id = $6 AND EXISTS (SELECT 1 FROM moved))
       SELECT count(*)::int AS n FROM moved`,
      [state, statusCode, response, requestId, error, batchId, index, ...usageValuesOf(outcome.usage)],
    );
    return Number(row?.n) === 1;
  }

  async defer(batchId: string, index: number, notBeforeMs: number): Promise<void> {
    await this.query(
      `UPDATE ${this.p}batch_lines SET not_before_ms = $1, attempts = attempts + 1
       WHERE batch_id = $2 AND idx = $3 AND state = 'pending'`,
      [notBeforeMs, batchId, index],
    );
  }

  async closePending(batchId: string, state: 'canceled' | 'expired', error: string): Promise<number> {
    const column = COUNT_COLUMN[state];
    const [row] = await this.rows(
      `WITH closed AS (UPDATE ${this.p}batch_lines SET state = $1, error = $2 WHERE batch_id = $3 AND state = 'pending'
           RETURNING idx),
         counted AS (UPDATE ${this.p}batches SET ${column} = ${column} + (SELECT count(*) FROM closed) WHERE id = $3)
       SELECT count(*)::int AS n FROM closed`,
      [state, error, batchId],
    );
    return Number(row?.n ?? 0);
  }

  async lines(batchId: string, afterIndex: number, limit: number): Promise<BatchLine[]> {
    const rows = await this.rows(
      `SELECT * FROM ${this.p}batch_lines WHERE batch_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`,
      [batchId, afterIndex, limit],
    );
    return rows.map(lineOf);
  }

  async active(limit: number): Promise<BatchRecord[]> {
    const rows = await this.rows(
      `SELECT * FROM ${this.p}batches WHERE status IN (${ACTIVE_SQL}) ORDER BY seq LIMIT $1`,
      [limit],
    );
    return rows.map(recordOf);
  }

  async nativeState(batchId: string): Promise<NativeBatchState | undefined> {
    const [row] = await this.rows(`SELECT * FROM ${this.p}batch_native WHERE batch_id = $1`, [batchId]);
    return row ? nativeStateOf(row) : undefined;
  }

  async saveNativeState(batchId: string, state: NativeBatchState): Promise<void> {
    await this.changed(
      `INSERT INTO ${this.p}batch_native (batch_id, mode, upstream, phase, upstream_file_id, upstream_batch_id, reason)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (batch_id) DO UPDATE SET mode = EXCLUDED.mode, upstream = EXCLUDED.upstream, phase = EXCLUDED.phase,
         upstream_file_id = EXCLUDED.upstream_file_id, upstream_batch_id = EXCLUDED.upstream_batch_id,
         reason = EXCLUDED.reason`,
      [batchId, ...nativeValuesOf(state)],
    );
  }
}
