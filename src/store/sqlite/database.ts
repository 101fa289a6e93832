/**
 * The one place that knows the SQLite driver: Node's built-in `node:sqlite` (DatabaseSync), behind exactly what
 * the embedded store uses — prepare -> run/get/all (and `pluck`), exec, pragma, a transaction helper
 * (BEGIN IMMEDIATE at the top, a SAVEPOINT when nested), open/close. The shape is better-sqlite3's, which the
 * store used until Node 24 (ADR 0005), so the store files did not change with the driver.
 *
 * Only types are imported here at load time: `node:sqlite` itself is imported by `openDatabase`, so code that
 * never opens the store never loads the driver.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';

/** What `run` reports. `changes` is a number: integers are read as numbers (no `readBigInts`). */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement. `P` is the argument list (positional values, or one object for `@name` parameters: bare
 * names, extra keys ignored); `R` is what a row reads as. Rows are null-prototype objects (node:sqlite): compare
 * them with `deepEqual` after spreading, not with `deepStrictEqual` against object literals.
 */
export interface Statement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): RunResult;
  get(...params: P): R | undefined;
  all(...params: P): R[];
  /** Rows read as their first column's value (better-sqlite3's `pluck()`): the statement returned is the one to use. */
  pluck(): this;
}

/** A function that runs `fn` in a transaction: BEGIN (or a SAVEPOINT when already inside one) ... COMMIT. */
export interface Transaction<F extends (...args: never[]) => unknown> {
  (...args: Parameters<F>): ReturnType<F>;
  /** BEGIN IMMEDIATE: takes the write lock before `fn` reads, so a read-then-write cannot interleave with another's. */
  immediate(...args: Parameters<F>): ReturnType<F>;
}

type StatementFor<P, R> = P extends unknown[] ? Statement<P, R> : Statement<[P], R>;

/** The store's handle on one SQLite database. Synchronous, like the driver: nothing here awaits. */
export class Database {
  readonly #db: DatabaseSync;
  // Transaction control, prepared once (better-sqlite3's transaction helper did the same).
  readonly #begin: StatementSync;
  readonly #beginImmediate: StatementSync;
  readonly #commit: StatementSync;
  readonly #rollback: StatementSync;
  readonly #savepoint: StatementSync;
  readonly #release: StatementSync;
  readonly #rollbackTo: StatementSync;
  /** The extensions loaded into this connection (`loadExtension`). */
  readonly #extensions = new Set<string>();

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#begin = db.prepare('BEGIN');
    this.#beginImmediate = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#savepoint = db.prepare('SAVEPOINT store_tx');
    this.#release = db.prepare('RELEASE store_tx');
    this.#rollbackTo = db.prepare('ROLLBACK TO store_tx');
  }

  get open(): boolean {
    return this.#db.isOpen;
  }

  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }

  /**
   * The driver's own statement, with `pluck` added: run/get/all are node:sqlite's, with no wrapper on the hot path.
   * Arguments must be null, numbers, bigints, strings or bytes (booleans bind as 1/0 on Node 24+); never
   * `undefined`, which Node 24 refuses (Node 26 binds it as NULL).
   */
  prepare<P extends unknown[] | {} = unknown[], R = unknown>(sql: string): StatementFor<P, R> {
    const statement = this.#db.prepare(sql);
    // better-sqlite3 ignored object keys that name no parameter; the idempotency store passes such objects.
    statement.setAllowUnknownNamedParameters(true);
    return Object.assign(statement, { pluck: () => pluck(statement) }) as unknown as StatementFor<P, R>;
  }

  exec(sql: string): this {
    this.#db.exec(sql);
    return this;
  }

  /**
   * `PRAGMA <source>`; the rows it returns, or with `simple` the first column of the first row (better-sqlite3's
   * `pragma(source, { simple: true })`).
   */
  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const statement = this.#db.prepare(`PRAGMA ${source}`);
    if (!options.simple) return statement.all();
    statement.setReturnArrays(true);
    return (statement.get() as unknown as SQLInputValue[] | undefined)?.[0];
  }

  /**
   * Wraps `fn` in a transaction, as better-sqlite3's `db.transaction` did: called outside a transaction it runs
   * in BEGIN (or BEGIN IMMEDIATE with `.immediate`) ... COMMIT, rolled back if `fn` throws; called inside one it
   * runs in a SAVEPOINT, released on success and rolled back to alone if `fn` throws, so one failed write of a
   * group commit undoes only itself. `fn` must be synchronous.
   */
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F> {
    const run = (begin: StatementSync, args: Parameters<F>): ReturnType<F> => {
      const nested = this.#db.isTransaction;
      const after = nested ? this.#release : this.#commit;
      (nested ? this.#savepoint : begin).run();
      try {
        const result = fn(...args) as ReturnType<F>;
        if (result instanceof Promise) throw new TypeError('a transaction function cannot return a promise');
        after.run();
        return result;
      } catch (error) {
        // A failed COMMIT (the file busy past the busy timeout) leaves the transaction open: roll it back too.
        if (this.#db.isTransaction) {
          (nested ? this.#rollbackTo : this.#rollback).run();
          if (nested) after.run();
        }
        throw error;
      }
    };
    const transaction = (...args: Parameters<F>) => run(this.#begin, args);
    transaction.immediate = (...args: Parameters<F>) => run(this.#beginImmediate, args);
    return transaction;
  }

  /**
   * Loads the SQLite extension at `path` into this connection (sqlite-vec for the vector store), once per path, then
   * locks extension loading again, so nothing later (no SQL, no other code) can load another. The connection is
   * opened with extension loading allowed for this (`openDatabase`); only the C-level API is enabled by that, never
   * SQL's `load_extension()`.
   */
  loadExtension(path: string): void {
    if (this.#extensions.has(path)) return;
    this.#db.enableLoadExtension(true);
    try {
      this.#db.loadExtension(path);
      this.#extensions.add(path);
    } finally {
      this.#db.enableLoadExtension(false);
    }
  }

  close(): void {
    this.#db.close();
  }
}

/** The first column of each row: reads rows as arrays (no object built) and takes element 0. */
function pluck(statement: StatementSync): Statement<unknown[], unknown> {
  statement.setReturnArrays(true);
  const plucked: Statement<unknown[], unknown> = {
    run: (...params) => statement.run(...(params as SQLInputValue[])) as RunResult,
    get: (...params) => (statement.get(...(params as SQLInputValue[])) as unknown as unknown[] | undefined)?.[0],
    all: (...params) => (statement.all(...(params as SQLInputValue[])) as unknown as unknown[][]).map((row) => row[0]),
    pluck: () => plucked,
  };
  return plucked;
}

/** SQLite's primary result codes for a value it will not store: too big, a constraint (STRICT types, NOT NULL), a type mismatch. */
const SQLITE_TOOBIG = 18;
const SQLITE_CONSTRAINT = 19;
const SQLITE_MISMATCH = 20;

/**
 * True when `error` says a value of the statement was refused (the same values would be refused again), not that
 * the database is unavailable: SQLite's TOOBIG, CONSTRAINT or MISMATCH, or node:sqlite refusing to bind a value
 * (`ERR_INVALID_ARG_VALUE`, `ERR_INVALID_ARG_TYPE`: a BigInt too large, a value of no SQL type).
 */
export function isRefusedValueError(error: unknown): boolean {
  const { errcode, code } = (error ?? {}) as { errcode?: unknown; code?: unknown };
  if (typeof errcode === 'number') return [SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH].includes(errcode & 0xff);
  return code === 'ERR_INVALID_ARG_VALUE' || code === 'ERR_INVALID_ARG_TYPE';
}

/** SQLite's primary result code for "the file is locked by another connection" (extended codes keep it in the low byte). */
const SQLITE_BUSY = 5;

/** True when `error` is SQLite's SQLITE_BUSY (or one of its extended codes): another connection holds the lock. */
export function isBusyError(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === SQLITE_BUSY;
}

/**
 * Opens (creating it if needed) the SQLite file at `path`, or an in-memory database for `:memory:`, with SQLite's
 * busy handler waiting up to `busyTimeoutMs` for another connection's lock. Imports `node:sqlite` on first use.
 * Extension loading is allowed when opened but switched off until `Database.loadExtension` asks for it.
 */
export async function openDatabase(path: string, busyTimeoutMs: number): Promise<Database> {
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs, allowExtension: true });
  db.enableLoadExtension(false); // on again only inside `Database.loadExtension`
  return new Database(db);
}
