import type * as Sqlite from './database.js';
import type { ResponseStore, StoredConversationTurn } from '../contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Expired rows are deleted every PURGE_EVERY writes, at most PURGE_BATCH at a time. */
const PURGE_EVERY = 256;
const PURGE_BATCH = 1_000;

/** Stored Responses API responses in the embedded store (table `stored_responses`, migration 8). */
export class SqliteResponseStore implements ResponseStore {
  private readonly insert: Sqlite.Statement<[string, string, string, number]>;
  private readonly select: Sqlite.Statement<[string, string, number], { turn: string }>;
  private readonly remove: Sqlite.Statement<[string, string, number]>;
  private readonly purge: Sqlite.Statement<[number, number]>;
  private readonly batcher: SqliteWriteBatcher;
  private writes = 0;

  constructor(db: Sqlite.Database) {
    this.insert = db.prepare('INSERT OR REPLACE INTO stored_responses (caller, id, turn, expires_ms) VALUES (?, ?, ?, ?)');
    this.select = db.prepare('SELECT turn FROM stored_responses WHERE caller = ? AND id = ? AND expires_ms > ?');
    this.remove = db.prepare('DELETE FROM stored_responses WHERE caller = ? AND id = ? AND expires_ms > ?');
    this.purge = db.prepare('DELETE FROM stored_responses WHERE rowid IN (SELECT rowid FROM stored_responses WHERE expires_ms <= ? LIMIT ?)');
    this.batcher = writeBatcherFor(db);
  }

  async put(caller: string, id: string, turn: StoredConversationTurn, ttlMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    const expires = now + durationMs('ttlMs', ttlMs);
    const text = JSON.stringify(turn);
    await this.batcher.run(() => {
      this.insert.run(caller, id, text, expires);
      if (++this.writes % PURGE_EVERY === 0) this.purge.run(now, PURGE_BATCH);
    });
  }

  async get(caller: string, id: string, nowMs = Date.now()): Promise<StoredConversationTurn | undefined> {
    const row = this.select.get(caller, id, wholeMs('nowMs', nowMs));
    return row ? (JSON.parse(row.turn) as StoredConversationTurn) : undefined;
  }

  async delete(caller: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const now = wholeMs('nowMs', nowMs);
    const result = await this.batcher.run(() => this.remove.run(caller, id, now));
    return Number(result.changes) > 0;
  }
}
