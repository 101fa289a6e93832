import type * as Sqlite from './database.js';
import type { ResponseCacheStore, StoredResponse } from '../store-contract.js';
import { durationMs, wholeMs } from '../time-arguments.js';
import { writeBatcherFor, type SqliteWriteBatcher } from './write-batcher.js';

/** A hit refreshes its entry's last use at most this often (a write per hit would make hits cost a commit each). */
const TOUCH_EVERY_MS = 1_000;
/** Expired entries deleted by each put, at most (through the expiry index). */
const EXPIRED_PER_PUT = 64;
/** Least recently used entries deleted per step while the total is over the bound (one: evict no more than needed). */
const EVICT_STEP = 1;

interface Row {
  status: number;
  kind: string;
  headers: string;
  body: string;
  stored_ms: number;
  used_ms: number;
}

/**
 * The response cache in the embedded store (table `response_cache`, migration 9). The total of body bytes is kept
 * in `response_cache_size` by triggers, so a put knows in one read whether it must evict; eviction takes the least
 * recently used rows (index on `used_ms`) until the total fits `maxBytes`. Expired rows are dropped when read and,
 * a few at a time, by every put. Writes go through the database's group-commit batcher.
 */
export class SqliteResponseCache implements ResponseCacheStore {
  private readonly select: Sqlite.Statement<[string, number], Row>;
  private readonly touch: Sqlite.Statement<[number, string, number]>;
  private readonly remove: Sqlite.Statement<[string]>;
  private readonly insert: Sqlite.Statement<unknown[]>;
  private readonly purgeExpired: Sqlite.Statement<[number, number]>;
  private readonly total: Sqlite.Statement<[], { bytes: number }>;
  private readonly evictOldest: Sqlite.Statement<[number]>;
  private readonly count: Sqlite.Statement<[], { entries: number }>;
  private readonly batcher: SqliteWriteBatcher;

  constructor(
    db: Sqlite.Database,
    /** The bound on the body bytes of all entries together. */
    private readonly maxBytes: number,
  ) {
    this.select = db.prepare(
      'SELECT status, kind, headers, body, stored_ms, used_ms FROM response_cache WHERE key = ? AND expires_ms > ?',
    );
    this.touch = db.prepare('UPDATE response_cache SET used_ms = ? WHERE key = ? AND used_ms < ?');
    this.remove = db.prepare('DELETE FROM response_cache WHERE key = ?');
    this.insert = db.prepare(
      'INSERT INTO response_cache (key, status, kind, headers, body, bytes, stored_ms, expires_ms, used_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.purgeExpired = db.prepare(
      'DELETE FROM response_cache WHERE key IN (SELECT key FROM response_cache WHERE expires_ms <= ? LIMIT ?)',
    );
    this.total = db.prepare('SELECT bytes FROM response_cache_size WHERE id = 1');
    this.evictOldest = db.prepare(
      'DELETE FROM response_cache WHERE key IN (SELECT key FROM response_cache ORDER BY used_ms LIMIT ?)',
    );
    this.count = db.prepare('SELECT count(*) AS entries FROM response_cache');
    this.batcher = writeBatcherFor(db);
  }

  async get(key: string, nowMs = Date.now()): Promise<StoredResponse | undefined> {
    const now = wholeMs('nowMs', nowMs);
    const row = this.select.get(key, now);
    if (!row) return undefined;
    if (row.used_ms < now - TOUCH_EVERY_MS)
      void this.batcher.run(() => this.touch.run(now, key, now - TOUCH_EVERY_MS)).catch(() => undefined);
    return {
      status: row.status,
      kind: row.kind === 'sse' ? 'sse' : 'json',
      headers: JSON.parse(row.headers) as Record<string, string>,
      body: row.body,
      storedAt: new Date(row.stored_ms).toISOString(),
    };
  }

  async put(key: string, response: StoredResponse, ttlMs: number, nowMs = Date.now()): Promise<number> {
    const now = wholeMs('nowMs', nowMs);
    const expires = now + durationMs('ttlMs', ttlMs);
    const bytes = Buffer.byteLength(response.body);
    if (bytes > this.maxBytes) return 0;
    return this.batcher.run(() => {
      this.remove.run(key);
      this.purgeExpired.run(now, EXPIRED_PER_PUT);
      this.insert.run(
        key,
        response.status,
        response.kind,
        JSON.stringify(response.headers),
        response.body,
        bytes,
        Date.parse(response.storedAt) || now,
        expires,
        now,
      );
      let evicted = 0;
      while ((this.total.get()?.bytes ?? 0) > this.maxBytes) {
        const removed = Number(this.evictOldest.run(EVICT_STEP).changes);
        if (removed === 0) break;
        evicted += removed;
      }
      return evicted;
    });
  }

  async size(): Promise<{ entries: number; bytes: number }> {
    return { entries: this.count.get()?.entries ?? 0, bytes: this.total.get()?.bytes ?? 0 };
  }
}
