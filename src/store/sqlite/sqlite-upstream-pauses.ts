import type * as Sqlite from './database.js';
import type { UpstreamPauseStore } from '../store-contract.js';
import { gcraNow } from '../gcra.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** Upstream pauses in the embedded store (table `upstream_pauses`, migration 4): one row per paused scope. */
export class SqliteUpstreamPauses implements UpstreamPauseStore {
  private readonly batcher: SqliteWriteBatcher;
  private readonly extend: Sqlite.Statement<[string, number]>;
  private readonly read: Sqlite.Statement<[string, number], number>;
  private readonly purge: Sqlite.Statement<[number]>;
  private readonly active: Sqlite.Statement<[number, number], { scope: string; untilMs: number }>;

  constructor(db: Sqlite.Database) {
    this.batcher = writeBatcherFor(db);
    // A pause only grows; an ended one is overwritten by the next.
    this.extend = db.prepare(
      `INSERT INTO upstream_pauses (scope, until_ms) VALUES (?, ?)
       ON CONFLICT (scope) DO UPDATE SET until_ms = MAX(until_ms, excluded.until_ms)`,
    );
    this.read = db
      .prepare<[string, number], number>('SELECT until_ms FROM upstream_pauses WHERE scope = ? AND until_ms > ?')
      .pluck();
    this.purge = db.prepare('DELETE FROM upstream_pauses WHERE until_ms <= ?');
    this.active = db.prepare<[number, number], { scope: string; untilMs: number }>(
      'SELECT scope, until_ms AS untilMs FROM upstream_pauses WHERE until_ms > ? ORDER BY until_ms DESC LIMIT ?',
    );
  }

  async pause(scope: string, untilMs: number, nowMs?: number): Promise<void> {
    const now = gcraNow(nowMs);
    const until = gcraNow(untilMs);
    if (until <= now) return;
    await this.batcher.run(() => {
      this.purge.run(now); // a handful of rows at most: one per upstream (and caller key) that said 429
      this.extend.run(scope, until);
    });
  }

  async pausedUntil(scope: string, nowMs?: number): Promise<number | undefined> {
    return this.read.get(scope, gcraNow(nowMs));
  }

  async list(nowMs?: number, limit = 100): Promise<Array<{ scope: string; untilMs: number }>> {
    // Plain objects: the driver's rows have a null prototype.
    return this.active.all(gcraNow(nowMs), limit).map(({ scope, untilMs }) => ({ scope, untilMs }));
  }
}
