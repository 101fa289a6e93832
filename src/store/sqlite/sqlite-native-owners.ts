import type * as Sqlite from './database.js';
import type { NativeOwnerStore } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Expired rows are deleted every PURGE_EVERY recorded ids, at most PURGE_BATCH at a time. */
const PURGE_EVERY = 512;
const PURGE_BATCH = 1_000;

/**
 * The owners of upstream-held ids in the embedded store (table `native_owners`, migration 12): one row per id. A
 * claim writes through the database's group-commit batcher (the ids of one answer in one write); a row whose
 * expiry has passed is taken over by the next claim.
 */
export class SqliteNativeOwners implements NativeOwnerStore {
  private readonly batcher: SqliteWriteBatcher;
  private readonly upsert: Sqlite.Statement<[string, string, number, number]>;
  private readonly owner: Sqlite.Statement<[string, number], string>;
  private readonly purge: Sqlite.Statement<[number, number]>;
  private claimed = 0;

  constructor(db: Sqlite.Database) {
    this.batcher = writeBatcherFor(db);
    this.upsert = db.prepare(
      `INSERT INTO native_owners (id, caller, expires_ms) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET caller = excluded.caller, expires_ms = excluded.expires_ms WHERE native_owners.expires_ms <= ?`,
    );
    this.owner = db
      .prepare<[string, number], string>('SELECT caller FROM native_owners WHERE id = ? AND expires_ms > ?')
      .pluck();
    this.purge = db.prepare(
      'DELETE FROM native_owners WHERE id IN (SELECT id FROM native_owners WHERE expires_ms <= ? LIMIT ?)',
    );
  }

  async claim(caller: string, ids: readonly string[], ttlMs: number, nowMs = Date.now()): Promise<void> {
    const now = wholeMs('nowMs', nowMs);
    const expires = now + durationMs('ttlMs', ttlMs);
    if (ids.length === 0) return;
    await this.batcher.run(() => {
      for (const id of ids) this.upsert.run(id, caller, expires, now);
      this.claimed += ids.length;
      if (this.claimed >= PURGE_EVERY) {
        this.claimed = 0;
        this.purge.run(now, PURGE_BATCH);
      }
    });
  }

  async firstNotOwned(caller: string, ids: readonly string[], nowMs = Date.now()): Promise<string | undefined> {
    const now = wholeMs('nowMs', nowMs);
    for (const id of ids) if (this.owner.get(id, now) !== caller) return id;
    return undefined;
  }
}
