import type * as Sqlite from './database.js';

interface Pending {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for the embedded store. Writes asked for during one turn of the event loop (all the requests
 * whose bytes arrived in the same poll) run in ONE `BEGIN IMMEDIATE` transaction on the next `setImmediate`,
 * each inside its own savepoint, in the order they were asked. A commit (a WAL append, the write lock taken
 * and given back) is the expensive part of a small write, so under load its cost is shared by the whole batch;
 * at low load a batch is one write and the only cost is one event-loop hop.
 *
 * Semantics are those of one transaction per write: each `work` sees every earlier one of the batch, a `work`
 * that throws is rolled back to its savepoint alone and rejects its own promise only, and a promise resolves
 * only after the batch committed. If BEGIN or COMMIT fails (the file busy past busy_timeout, a full disk),
 * every write of the batch rejects and none of them happened. `work` must be synchronous SQLite work only.
 */
export class SqliteWriteBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly runAll: Sqlite.Transaction<(batch: Pending[]) => Array<{ ok: boolean; value: unknown }>>;

  constructor(db: Sqlite.Database) {
    // Called inside the outer transaction, a transaction function runs as a SAVEPOINT (./database.ts).
    const savepoint = db.transaction((work: () => unknown) => work());
    this.runAll = db.transaction((batch: Pending[]) =>
      batch.map((item) => {
        try {
          return { ok: true, value: savepoint(item.work) };
        } catch (error) {
          return { ok: false, value: error };
        }
      }),
    );
  }

  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    let results: Array<{ ok: boolean; value: unknown }>;
    try {
      results = this.runAll.immediate(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const result = results[i];
      if (result?.ok) item.resolve(result.value);
      else item.reject(result?.value);
    });
  }
}

const batchers = new WeakMap<Sqlite.Database, SqliteWriteBatcher>();

/** The one batcher of a database, shared by every store on it, so their writes of one turn commit together. */
export function writeBatcherFor(db: Sqlite.Database): SqliteWriteBatcher {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new SqliteWriteBatcher(db);
    batchers.set(db, batcher);
  }
  return batcher;
}
