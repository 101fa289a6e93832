import type * as Sqlite from './database.js';
import type {
  BatchApi,
  BatchLine,
  BatchRecord,
  BatchStamp,
  BatchStatus,
  BatchStore,
  LineOutcome,
  LineState,
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
} from '../batch-rows.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

type Row = Record<string, unknown>;

/**
 * Batches in the embedded store (migrations 17, 18, 20, 21, 25 and 26). Every write goes through the database's group-commit batcher, so
 * the answers of many lines finishing in one turn share one commit. A line's outcome is written only while it is
 * `pending` (`recordOutcome`): the one place exactly-once is decided.
 */
export class SqliteBatches implements BatchStore {
  private readonly batcher: SqliteWriteBatcher;
  private readonly statements: ReturnType<typeof prepare> & ReturnType<typeof prepareEnded>;

  constructor(private readonly db: Sqlite.Database) {
    this.batcher = writeBatcherFor(db);
    this.statements = { ...prepare(db), ...prepareEnded(db) };
  }

  async create(batch: BatchRecord): Promise<void> {
    await this.batcher.run(() => {
      this.statements.insert.run(...insertValuesOf(batch));
      this.statements.endCreate.run(batch.id);
    });
  }

  async get(owner: string, id: string): Promise<BatchRecord | undefined> {
    const row = this.statements.get.get(id, owner);
    return row ? recordOf(row) : undefined;
  }

  async list(owner: string, api: BatchApi, after: string | undefined, limit: number): Promise<BatchRecord[]> {
    let before = Number.MAX_SAFE_INTEGER;
    if (after !== undefined) {
      const seq = this.statements.seqOf.get(after, owner);
      if (seq === undefined) return [];
      before = seq;
    }
    return this.statements.list.all(owner, api, before, limit).map(recordOf);
  }

  async transition(id: string, from: readonly BatchStatus[], to: BatchStatus, stamp: BatchStamp): Promise<boolean> {
    const sets = ['status = ?'];
    const values: Array<string | number | null> = [to];
    for (const [key, value] of Object.entries(stamp) as Array<[keyof BatchStamp, unknown]>) {
      sets.push(`${STAMP_COLUMNS[key]} = ?`);
      values.push(key === 'errors' ? JSON.stringify(value) : (value as string | number | null));
    }
    const sql = `UPDATE batches SET ${sets.join(', ')} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`;
    return this.batcher.run(() => this.db.prepare(sql).run(...values, id, ...from).changes === 1);
  }

  async delete(owner: string, id: string): Promise<boolean> {
    return this.batcher.run(() => {
      const removed = this.statements.deleteBatch.run(id, owner).changes === 1;
      if (removed) {
        this.statements.deleteLines.run(id);
        this.statements.deleteNative.run(id);
      }
      return removed;
    });
  }

  async addLines(batchId: string, lines: readonly NewBatchLine[]): Promise<void> {
    await this.batcher.run(() => {
      let added = 0;
      for (const line of lines)
        added += this.statements.addLine.run(batchId, line.index, line.customId, line.url, line.body).changes;
      if (added > 0) this.statements.addTotal.run(added, batchId);
    });
  }

  async beginCreate(batchId: string, startedMs: number): Promise<void> {
    await this.batcher.run(() => this.statements.beginCreate.run(batchId, startedMs));
  }

  async discardLines(batchId: string): Promise<number> {
    return this.batcher.run(() => {
      this.statements.endCreate.run(batchId);
      return Number(this.statements.discardLines.run(batchId, batchId).changes);
    });
  }

  /**
   * One transaction: the oldest marks first, each create's lines by its key (batch_id, idx) within what is left of
   * the step. Writes are synchronous here, so the step's bounds are what keep the event loop free (the caller steps
   * on with a turn of the loop between steps).
   */
  async sweepCreates(startedBeforeMs: number, step: SweepStep): Promise<SweptCreates> {
    return this.batcher.run(() => {
      const budget = new SweepBudget(step);
      let creates = 0;
      const marks = this.statements.oldCreates.all(startedBeforeMs, step.lines).map((row) => row.batch_id as string);
      for (const [id, lines, bytes] of budget.over(marks)) {
        const removed = this.statements.sweepLines.all(id, id, lines, bytes, id);
        budget.took(removed);
        if (removed.length === 0 || this.statements.anyLine.get(id) === undefined)
          creates += Number(this.statements.endCreate.run(id).changes);
      }
      return { lines: budget.lines, creates };
    });
  }

  async claim(holder: string, nowMs: number, leaseMs: number, limit: number): Promise<BatchRecord[]> {
    return this.batcher.run(() => {
      const ids = this.statements.claimable.all(holder, nowMs, limit).map((row) => row.id as string);
      for (const id of ids) this.statements.lease.run(holder, nowMs + leaseMs, id);
      return ids.flatMap((id) => {
        const row = this.statements.byId.get(id);
        return row ? [recordOf(row)] : [];
      });
    });
  }

  async leasesHeldBy(prefix: string, limit: number): Promise<HeldLease[]> {
    return this.statements.heldBy
      .all(prefix, prefix, limit)
      .map((row) => ({ id: row.id as string, holder: row.lease_holder as string }));
  }

  /**
   * One transaction, like `sweepCreates`: the batches due first, each one's lines by its key (batch_id, idx) from
   * the lowest, within what is left of the step; a batch whose lines are all gone has its mark cleared.
   */
  async sweepEndedLines(nowMs: number, step: SweepStep): Promise<SweptLines> {
    return this.batcher.run(() => {
      const budget = new SweepBudget(step);
      let batches = 0;
      const due = this.statements.linesDue.all(nowMs, step.lines).map((row) => row.id as string);
      for (const [id, lines, bytes] of budget.over(due)) {
        const removed = this.statements.sweepEnded.all(id, id, lines, bytes);
        budget.took(removed);
        if (removed.length === 0 || this.statements.anyLine.get(id) === undefined) {
          batches += Number(this.statements.linesGone.run(id, nowMs).changes);
          this.statements.deleteNative.run(id);
        }
      }
      return { lines: budget.lines, batches };
    });
  }

  async renew(id: string, holder: string, untilMs: number): Promise<boolean> {
    return this.batcher.run(() => this.statements.renew.run(untilMs, id, holder).changes === 1);
  }

  async release(id: string, holder: string): Promise<void> {
    await this.batcher.run(() => this.statements.release.run(id, holder));
  }

  async pendingLines(batchId: string, afterIndex: number, nowMs: number, limit: number): Promise<BatchLine[]> {
    return this.statements.pending.all(batchId, afterIndex, nowMs, limit).map(lineOf);
  }

  async pendingCount(batchId: string): Promise<number> {
    return Number(this.statements.pendingCount.get(batchId) ?? 0);
  }

  async recordOutcome(batchId: string, index: number, outcome: LineOutcome): Promise<boolean> {
    return this.batcher.run(() => {
      const { statusCode, response, requestId, error, state } = outcome;
      const changed =
        this.statements.record.run(state, statusCode, response, requestId, error, batchId, index).changes === 1;
      if (changed) {
        this.db.prepare(countSql(state)).run(1, batchId);
        if (outcome.usage) this.statements.addUsage.run(...usageValuesOf(outcome.usage), batchId);
      }
      return changed;
    });
  }

  async defer(batchId: string, index: number, notBeforeMs: number): Promise<void> {
    await this.batcher.run(() => this.statements.defer.run(notBeforeMs, batchId, index));
  }

  async closePending(batchId: string, state: 'canceled' | 'expired', error: string): Promise<number> {
    return this.batcher.run(() => {
      const closed = Number(this.statements.closePending.run(state, error, batchId).changes);
      if (closed > 0) this.db.prepare(countSql(state)).run(closed, batchId);
      return closed;
    });
  }

  async lines(batchId: string, afterIndex: number, limit: number): Promise<BatchLine[]> {
    return this.statements.lines.all(batchId, afterIndex, limit).map(lineOf);
  }

  async active(limit: number): Promise<BatchRecord[]> {
    return this.statements.active.all(limit).map(recordOf);
  }

  async nativeState(batchId: string): Promise<NativeBatchState | undefined> {
    const row = this.statements.getNative.get(batchId);
    return row ? nativeStateOf(row) : undefined;
  }

  async saveNativeState(batchId: string, state: NativeBatchState): Promise<void> {
    await this.batcher.run(() => this.statements.saveNative.run(batchId, ...nativeValuesOf(state)));
  }
}

function countSql(state: Exclude<LineState, 'pending'>): string {
  const column = COUNT_COLUMN[state];
  return `UPDATE batches SET ${column} = ${column} + ? WHERE id = ?`;
}

function prepare(db: Sqlite.Database) {
  return {
    insert: db.prepare(
      `INSERT INTO batches (id, owner, principal, api, endpoint, input_file_id, completion_window, metadata, status,
         total, created_ms, expires_ms, output_ttl_s, model, results_until_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    addUsage: db.prepare<[number, number, number, number, number, number, string]>(
      `UPDATE batches SET usage_lines = usage_lines + ?, input_tokens = input_tokens + ?,
         cached_tokens = cached_tokens + ?, output_tokens = output_tokens + ?, reasoning_tokens = reasoning_tokens + ?,
         total_tokens = total_tokens + ? WHERE id = ?`,
    ),
    get: db.prepare<[string, string], Row>('SELECT * FROM batches WHERE id = ? AND owner = ?'),
    byId: db.prepare<[string], Row>('SELECT * FROM batches WHERE id = ?'),
    seqOf: db.prepare<[string, string], number>('SELECT seq FROM batches WHERE id = ? AND owner = ?').pluck(),
    list: db.prepare<[string, string, number, number], Row>(
      'SELECT * FROM batches WHERE owner = ? AND api = ? AND seq < ? ORDER BY seq DESC LIMIT ?',
    ),
    deleteBatch: db.prepare<[string, string]>(
      `DELETE FROM batches WHERE id = ? AND owner = ? AND status NOT IN (${ACTIVE_SQL})`,
    ),
    deleteLines: db.prepare<[string]>('DELETE FROM batch_lines WHERE batch_id = ?'),
    discardLines: db.prepare<[string, string]>(
      'DELETE FROM batch_lines WHERE batch_id = ? AND NOT EXISTS (SELECT 1 FROM batches WHERE id = ?)',
    ),
    deleteNative: db.prepare<[string]>('DELETE FROM batch_native WHERE batch_id = ?'),
    beginCreate: db.prepare<[string, number]>(
      'INSERT OR IGNORE INTO batch_creates (batch_id, started_ms) VALUES (?, ?)',
    ),
    endCreate: db.prepare<[string]>('DELETE FROM batch_creates WHERE batch_id = ?'),
    oldCreates: db.prepare<[number, number], Row>(
      'SELECT batch_id FROM batch_creates WHERE started_ms < ? ORDER BY started_ms LIMIT ?',
    ),
    // In index order until `lines` lines, or the line that reaches `bytes` bytes (the first always goes). A batch
    // that exists keeps its lines whatever its mark says (the mark goes with the record's write).
    sweepLines: db.prepare<[string, string, number, number, string], Row>(
      `DELETE FROM batch_lines WHERE batch_id = ? AND idx IN (SELECT idx FROM (SELECT idx,
           coalesce(sum(octet_length(body)) OVER (ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
             AS before_bytes FROM batch_lines WHERE batch_id = ? ORDER BY idx LIMIT ?) WHERE before_bytes < ?)
         AND NOT EXISTS (SELECT 1 FROM batches WHERE id = ?)
       RETURNING octet_length(body) AS bytes`,
    ),
    anyLine: db.prepare<[string], Row>('SELECT 1 FROM batch_lines WHERE batch_id = ? LIMIT 1'),
    getNative: db.prepare<[string], Row>('SELECT * FROM batch_native WHERE batch_id = ?'),
    saveNative: db.prepare(
      `INSERT OR REPLACE INTO batch_native (batch_id, mode, upstream, phase, upstream_file_id, upstream_batch_id, reason)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    addLine: db.prepare<[string, number, string, string, string]>(
      `INSERT OR IGNORE INTO batch_lines (batch_id, idx, custom_id, url, body, state) VALUES (?, ?, ?, ?, ?, 'pending')`,
    ),
    addTotal: db.prepare<[number, string]>('UPDATE batches SET total = total + ? WHERE id = ?'),
    claimable: db.prepare<[string, number, number], Row>(
      `SELECT id FROM batches WHERE status IN (${ACTIVE_SQL}) AND (lease_holder = ? OR lease_until_ms <= ?)
       ORDER BY seq LIMIT ?`,
    ),
    lease: db.prepare<[string, number, string]>('UPDATE batches SET lease_holder = ?, lease_until_ms = ? WHERE id = ?'),
    renew: db.prepare<[number, string, string]>(
      'UPDATE batches SET lease_until_ms = ? WHERE id = ? AND lease_holder = ?',
    ),
    release: db.prepare<[string, string]>(
      'UPDATE batches SET lease_holder = NULL, lease_until_ms = 0 WHERE id = ? AND lease_holder = ?',
    ),
    pending: db.prepare<[string, number, number, number], Row>(
      `SELECT * FROM batch_lines WHERE batch_id = ? AND state = 'pending' AND idx > ? AND not_before_ms <= ?
       ORDER BY idx LIMIT ?`,
    ),
    pendingCount: db
      .prepare<[string], number>(`SELECT count(*) FROM batch_lines WHERE batch_id = ? AND state = 'pending'`)
      .pluck(),
    record: db.prepare<[string, number | null, string | null, string | null, string | null, string, number]>(
      `UPDATE batch_lines SET state = ?, status_code = ?, response = ?, request_id = ?, error = ?, attempts = attempts + 1
       WHERE batch_id = ? AND idx = ? AND state = 'pending'`,
    ),
    defer: db.prepare<[number, string, number]>(
      `UPDATE batch_lines SET not_before_ms = ?, attempts = attempts + 1 WHERE batch_id = ? AND idx = ? AND state = 'pending'`,
    ),
    closePending: db.prepare<[string, string, string]>(
      `UPDATE batch_lines SET state = ?, error = ? WHERE batch_id = ? AND state = 'pending'`,
    ),
    lines: db.prepare<[string, number, number], Row>(
      'SELECT * FROM batch_lines WHERE batch_id = ? AND idx > ? ORDER BY idx LIMIT ?',
    ),
    active: db.prepare<[number], Row>(`SELECT * FROM batches WHERE status IN (${ACTIVE_SQL}) ORDER BY seq LIMIT ?`),
  };
}

/** The statements of the sweep of ended batches' lines and of the leases looked up by name (migration 25). */
function prepareEnded(db: Sqlite.Database) {
  return {
    linesDue: db.prepare<[number, number], Row>(
      `SELECT id FROM batches WHERE lines_until_ms IS NOT NULL AND lines_until_ms <= ?
       ORDER BY lines_until_ms LIMIT ?`,
    ),
    // The first `lines` lines by index (only those are read), summed in that order: until the line that reaches
    // `bytes` bytes of request, answer and error (the first always goes).
    sweepEnded: db.prepare<[string, string, number, number], Row>(
      `DELETE FROM batch_lines WHERE batch_id = ? AND idx IN (SELECT idx FROM (SELECT idx,
           coalesce(sum(size) OVER (ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before_bytes
           FROM (SELECT idx, ${LINE_SIZE_SQL} AS size FROM batch_lines WHERE batch_id = ? ORDER BY idx LIMIT ?))
         WHERE before_bytes < ?)
       RETURNING ${LINE_SIZE_SQL} AS bytes`,
    ),
    linesGone: db.prepare<[string, number]>(
      'UPDATE batches SET lines_until_ms = NULL WHERE id = ? AND lines_until_ms <= ?',
    ),
    heldBy: db.prepare<[string, string, number], Row>(
      `SELECT id, lease_holder FROM batches WHERE status IN (${ACTIVE_SQL}) AND lease_holder IS NOT NULL
         AND substr(lease_holder, 1, length(?)) = ? LIMIT ?`,
    ),
  };
}
