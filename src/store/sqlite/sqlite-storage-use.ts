import type * as Sqlite from './database.js';
import {
  ALL_OWNERS,
  type ReserveOutcome,
  type StorageLimits,
  type StorageUse,
  type StorageUseStore,
} from '../storage-use.js';

/**
 * The embedded ledger of stored bytes (tables `storage_use` and `storage_reservations`, migration 24, kept by its
 * triggers). A reservation is checked and written in one immediate transaction: it holds the database's write lock
 * from its first read, so processes sharing the file (WORKERS > 1) take reservations one at a time.
 */
export class SqliteStorageUseStore implements StorageUseStore {
  private readonly useOf: Sqlite.Statement<[string], number>;
  private readonly reservedOf: Sqlite.Statement<[string], number>;
  private readonly upsert: Sqlite.Statement<[string, string, number, number]>;
  private readonly renew: Sqlite.Statement<[number, string]>;
  private readonly remove: Sqlite.Statement<[string]>;
  private readonly expired: Sqlite.Statement<[number, number]>;
  private readonly take: (
    id: string,
    owner: string,
    bytes: number,
    expiresMs: number,
    limits: StorageLimits | undefined,
  ) => ReserveOutcome;

  constructor(db: Sqlite.Database) {
    this.useOf = db.prepare<[string], number>('SELECT bytes FROM storage_use WHERE owner = ?').pluck();
    this.reservedOf = db.prepare<[string], number>('SELECT bytes FROM storage_reservations WHERE id = ?').pluck();
    this.upsert = db.prepare(
      `INSERT INTO storage_reservations (id, owner, bytes, expires_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET bytes = excluded.bytes, expires_ms = excluded.expires_ms`,
    );
    this.renew = db.prepare('UPDATE storage_reservations SET expires_ms = ? WHERE id = ?');
    this.remove = db.prepare('DELETE FROM storage_reservations WHERE id = ?');
    this.expired = db.prepare(
      'DELETE FROM storage_reservations WHERE id IN (SELECT id FROM storage_reservations WHERE expires_ms <= ? LIMIT ?)',
    );
    const take = db.transaction(
      (id: string, owner: string, bytes: number, expiresMs: number, limits: StorageLimits | undefined) => {
        const current = this.reservedOf.get(id) ?? 0;
        const more = bytes - current;
        if (more <= 0) {
          this.renew.run(expiresMs, id);
          return { reserved: true } as const;
        }
        if (limits) {
          const mine = this.useOf.get(owner) ?? 0;
          if (mine + more > limits.perOwner)
            return { reserved: false, limit: 'owner', usedBytes: mine - current, limitBytes: limits.perOwner } as const;
          const all = this.useOf.get(ALL_OWNERS) ?? 0;
          if (all + more > limits.total)
            return { reserved: false, limit: 'total', usedBytes: all - current, limitBytes: limits.total } as const;
        }
        this.upsert.run(id, owner, bytes, expiresMs);
        return { reserved: true } as const;
      },
    );
    this.take = (...args) => take.immediate(...args);
  }

  async reserve(
    id: string,
    owner: string,
    bytes: number,
    expiresMs: number,
    limits?: StorageLimits,
  ): Promise<ReserveOutcome> {
    return this.take(id, owner, bytes, expiresMs, limits);
  }

  async release(id: string): Promise<void> {
    this.remove.run(id);
  }

  async use(owner: string): Promise<StorageUse> {
    return { owner: this.useOf.get(owner) ?? 0, total: this.useOf.get(ALL_OWNERS) ?? 0 };
  }

  async sweep(nowMs: number, limit: number): Promise<number> {
    return this.expired.run(nowMs, limit).changes;
  }
}
