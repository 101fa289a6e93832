import type * as Sqlite from './database.js';
import type { ResponseStore, StoredConversationTurn } from '../contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Expired rows are deleted every PURGE_EVERY writes, at most PURGE_BATCH at a time. */
const PURGE_EVERY = 256;
const PURGE_BATCH = 1_000;

/** Rows in groups of ROWS_PER_INSERT: one statement step for many responses (as the usage store does). */
const ROWS_PER_INSERT = 16;
const COLUMNS = 6;
/**
 * At most one write of stored responses per GATHER_MS. A commit (the WAL append) is what a small write costs: one
 * commit per 2 ms instead of one per event-loop turn took the Responses route with storage from ~67 % to ~77 % of
 * the chat route's throughput (docs/benchmarks.md). The wait is paid only under load, when it buys throughput:
 * a write that carried several puts (calls overlap) makes the next GATHER_WRITES writes wait and gather; once
 * writes carry one put each for that long (one caller at a time), a put is written at once (the next turn).
 */
const GATHER_MS = 2;
const GATHER_WRITES = 16;

interface PendingPut {
  row: unknown[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Row {
  response: string;
  input_items: string;
  conversation: string;
}

/**
 * Stored Responses API responses in the embedded store (table `stored_responses`, migration 8): one row per
 * (caller, id), its three JSON texts in their own columns (never encoded twice). The puts of one event-loop turn
 * within GATHER_MS are written together (one write of the database's group-commit batcher, multi-row INSERTs),
 * each put resolving once that write committed.
 */
export class SqliteResponseStore implements ResponseStore {
  private readonly insert: Sqlite.Statement<unknown[]>;
  private readonly insertMany: Sqlite.Statement<unknown[]>;
  private pending: PendingPut[] = [];
  /** How many more writes wait to gather puts (reset to GATHER_WRITES by a write that carried several). */
  private gatherFor = 0;
  private readonly select: Sqlite.Statement<[string, string, number], Row>;
  private readonly remove: Sqlite.Statement<[string, string, number]>;
  private readonly purge: Sqlite.Statement<[number, number]>;
  private readonly batcher: SqliteWriteBatcher;
  private writes = 0;

  constructor(db: Sqlite.Database) {
    const insert = 'INSERT OR REPLACE INTO stored_responses (caller, id, response, input_items, conversation, expires_ms) VALUES ';
    this.insert = db.prepare(`${insert}(?, ?, ?, ?, ?, ?)`);
    this.insertMany = db.prepare(insert + Array.from({ length: ROWS_PER_INSERT }, () => '(?, ?, ?, ?, ?, ?)').join(', '));
    this.select = db.prepare('SELECT response, input_items, conversation FROM stored_responses WHERE caller = ? AND id = ? AND expires_ms > ?');
    this.remove = db.prepare('DELETE FROM stored_responses WHERE caller = ? AND id = ? AND expires_ms > ?');
    this.purge = db.prepare('DELETE FROM stored_responses WHERE rowid IN (SELECT rowid FROM stored_responses WHERE expires_ms <= ? LIMIT ?)');
    this.batcher = writeBatcherFor(db);
  }

  async put(caller: string, id: string, turn: StoredConversationTurn, ttlMs: number, nowMs = Date.now()): Promise<void> {
    const expires = wholeMs('nowMs', nowMs) + durationMs('ttlMs', ttlMs);
    const row = [caller, id, turn.response, turn.inputItems, turn.conversation, expires];
    if (this.pending.length === 0) {
      const now = wholeMs('nowMs', nowMs);
      if (this.gatherFor > 0) setTimeout(() => this.flush(now), GATHER_MS);
      else setImmediate(() => this.flush(now));
    }
    return new Promise<void>((resolve, reject) => this.pending.push({ row, resolve, reject }));
  }

  /** One batcher write for every put since the last one. */
  private flush(now: number): void {
    let batch: PendingPut[] = [];
    this.batcher
      .run(() => {
        batch = this.pending;
        this.pending = [];
        this.gatherFor = batch.length > 1 ? GATHER_WRITES : Math.max(0, this.gatherFor - 1);
        this.insertRows(batch);
        this.writes += batch.length;
        if (this.writes >= PURGE_EVERY) {
          this.writes = 0;
          this.purge.run(now, PURGE_BATCH);
        }
      })
      .then(
        () => {
          for (const put of batch) put.resolve();
        },
        (error: unknown) => {
          for (const put of batch) put.reject(error);
        },
      );
  }

  private insertRows(batch: readonly PendingPut[]): void {
    let i = 0;
    for (; i + ROWS_PER_INSERT <= batch.length; i += ROWS_PER_INSERT) {
      const values: unknown[] = new Array(ROWS_PER_INSERT * COLUMNS);
      for (let j = 0; j < ROWS_PER_INSERT; j++) {
        const row = (batch[i + j] as PendingPut).row;
        for (let c = 0; c < COLUMNS; c++) values[j * COLUMNS + c] = row[c];
      }
      this.insertMany.run(...values);
    }
    for (; i < batch.length; i++) this.insert.run(...(batch[i] as PendingPut).row);
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const row = this.select.get(caller, id, wholeMs('nowMs', nowMs));
    return row ? { response: row.response, inputItems: row.input_items, conversation: row.conversation } : undefined;
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const now = wholeMs('nowMs', nowMs);
    const result = await this.batcher.run(() => this.remove.run(caller, id, now));
    return Number(result.changes) > 0;
  }
}
