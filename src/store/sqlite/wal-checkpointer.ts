import { once } from 'node:events';
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Database } from './database.js';
import { CHECKPOINT_BOUNDS, type CheckpointBounds, type CheckpointThreadData } from './wal-bounds.js';

/** SQLite's own default for `wal_autocheckpoint`, put back when the checkpointing thread is lost. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/** A closing thread finishing a checkpoint is waited for this long, then stopped. */
const CLOSE_WAIT_MS = 5_000;

/**
 * Keeps a store's WAL bounded without holding the event loop. SQLite's automatic checkpoint runs in the commit
 * that takes the WAL past 1000 pages, on the thread that commits (a 4 MB copy and two fsyncs, held on the event
 * loop); here a thread of its own (wal-checkpoint-thread.ts), with its own connection, does the copying, and
 * the serving connection's automatic checkpoint is moved out to `maxWalBytes`. The thread is started only once
 * the WAL first passes `walBytes`, so a store opened briefly or written little (the CLI, the migrating config
 * child) never starts it. One per process: several processes on one file (WORKERS > 1) each run one, and PASSIVE
 * checkpoints neither wait for nor block one another's writers.
 *
 * The WAL starts over only when a commit finds it all copied. Under writes that never pause for as long as a copy
 * takes (two fsyncs), or that come faster than the disk takes the copies, it would grow without end: then the
 * commit that takes it past `maxWalBytes` checkpoints what the thread has not copied yet, and the next starts it
 * over. That is back-pressure, once per `maxWalBytes` of such writes instead of every 4 MB of any. Should the
 * thread fail, the connection checkpoints as SQLite does by default again: slower commits, never an unbounded WAL.
 */
export class WalCheckpointer {
  readonly #db: Database;
  readonly #path: string;
  readonly #bounds: CheckpointBounds;
  #watch: NodeJS.Timeout | undefined;
  #thread: Worker | undefined;
  #closed = false;

  constructor(db: Database, path: string, bounds: CheckpointBounds = CHECKPOINT_BOUNDS) {
    this.#db = db;
    this.#path = path;
    this.#bounds = bounds;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.pragma(`wal_autocheckpoint = ${Math.ceil(bounds.maxWalBytes / pageSize)}`);
    db.pragma(`journal_size_limit = ${bounds.walBytes}`);
    this.#watch = setInterval(() => this.#look(), bounds.pollMs).unref();
  }

  /** True once the checkpointing thread runs (the WAL has passed `walBytes`). */
  get threadStarted(): boolean {
    return this.#thread !== undefined;
  }

  #look(): void {
    const size = statSync(`${this.#path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    if (size > this.#bounds.walBytes) this.#start();
  }

  #start(): void {
    clearInterval(this.#watch);
    this.#watch = undefined;
    // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source, which Node's own type
    // stripping runs (no loader in the thread: it starts in milliseconds); built, it is .js.
    const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
    const thread = new Worker(new URL(`./wal-checkpoint-thread.${extension}`, import.meta.url), {
      workerData: { path: this.#path, ...this.#bounds } satisfies CheckpointThreadData,
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 32 },
    });
    thread.unref(); // never what keeps a process alive; close() ends it
    thread.on('error', () => this.#gone(thread));
    thread.on('exit', () => this.#gone(thread));
    this.#thread = thread;
  }

  /** The thread failed or exited on its own: the connection checkpoints as SQLite does by default again. */
  #gone(thread: Worker): void {
    if (this.#thread !== thread || this.#closed) return;
    this.#thread = undefined;
    if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
  }

  /** Stops looking and ends the thread (after the checkpoint it may be running), its connection closed first. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watch);
    this.#watch = undefined;
    const thread = this.#thread;
    this.#thread = undefined;
    if (!thread) return;
    const exited = once(thread, 'exit').catch(() => undefined); // an 'error' first: it exits all the same
    thread.postMessage('close');
    const timer = setTimeout(() => void thread.terminate(), CLOSE_WAIT_MS);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
