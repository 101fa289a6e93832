/**
 * The bytes each caller stores on the gateway, and all callers together (docs/files.md, "Storage quotas"): a ledger
 * kept by the database itself. Triggers on the files, upload parts and reservations tables add and subtract each
 * row's bytes in the same statement that writes or removes the row (SQLite migration 24, PostgreSQL
 * postgres-storage-use.ts), so no code path (a delete, the expiry sweep, a crash between two steps) can leave the
 * ledger out of step with what is stored.
 *
 * A write reserves its bytes before its first byte is stored: `reserve` checks the owner's and everyone's bytes
 * (stored and reserved) against the limits and records the reservation in one atomic step (an immediate
 * transaction in SQLite, row locks in PostgreSQL), so two writes racing for the last bytes of a quota cannot both
 * pass. The reservation ends when the write's record is inserted (the same trigger moves its bytes from reserved to
 * stored), when the write fails (`release`), or, left by a crash, when the sweep finds it past its expiry.
 */

/** The ledger row that holds every owner's bytes together (no caller id is `*`: they are `admin`, `key:…`, ...). */
export const ALL_OWNERS = '*';

/** Stored and reserved bytes, of one owner and of all. */
export interface StorageUse {
  owner: number;
  total: number;
}

export interface StorageLimits {
  perOwner: number;
  total: number;
}

/**
 * What `reserve` answers: done, or which limit it would pass and the bytes that limit already holds besides this
 * write's own reservation (so `usedBytes + bytes > limitBytes`).
 */
export type ReserveOutcome =
  { reserved: true } | { reserved: false; limit: 'owner' | 'total'; usedBytes: number; limitBytes: number };

export interface StorageUseStore {
  /**
   * Reserves `bytes` for the write `id` (a file id, a part id) of `owner`, only if the owner's bytes and everyone's
   * stay within `limits` with it (without `limits`: counted, never refused), in one atomic step. Called again for
   * the same id it raises the reservation to `bytes` (only the difference is checked) and renews `expiresMs`; a
   * smaller `bytes` only renews it.
   */
  reserve(id: string, owner: string, bytes: number, expiresMs: number, limits?: StorageLimits): Promise<ReserveOutcome>;
  /** Ends the reservation `id` (a write that failed); nothing when it already ended. */
  release(id: string): Promise<void>;
  /** The owner's stored and reserved bytes, and everyone's. */
  use(owner: string): Promise<StorageUse>;
  /** Ends up to `limit` reservations past their expiry at `nowMs` (a crash's leftovers); returns how many. */
  sweep(nowMs: number, limit: number): Promise<number>;
}
