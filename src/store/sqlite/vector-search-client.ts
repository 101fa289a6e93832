import { Worker } from 'node:worker_threads';
import type { SQLInputValue } from 'node:sqlite';
import { VectorSearchBusy } from '../vector-contract.js';
import type { SearchReply, SearchRequest, SearchThreadData } from './vector-search-thread.js';

type Row = Record<string, unknown>;

/** Searches waiting for the thread at most: past it a search fails at once (no hidden queue). */
export const MAX_PENDING_SEARCHES = 256;

/** Thrown when MAX_PENDING_SEARCHES searches already wait for the search thread. */
export class SearchQueueFull extends VectorSearchBusy {
  constructor() {
    super(MAX_PENDING_SEARCHES);
    this.name = 'SearchQueueFull';
  }
}

/**
 * Sends the embedded vector store's read queries to a thread of their own (`vector-search-thread.ts`), started on
 * the first search and ended by `close`. Should the thread die, the searches waiting fail and the next one starts
 * another.
 */
export class VectorSearchClient {
  #thread: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (rows: Row[]) => void; reject: (error: Error) => void }>();
  #closed = false;

  constructor(private readonly data: SearchThreadData) {}

  query(sql: string, args: SQLInputValue[]): Promise<Row[]> {
    if (this.#closed) return Promise.reject(new Error('the vector store is closed'));
    if (this.#pending.size >= MAX_PENDING_SEARCHES) return Promise.reject(new SearchQueueFull());
    const thread = this.#thread ?? this.#start();
    const id = this.#nextId++;
    return new Promise<Row[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      thread.ref(); // a search waiting keeps the process alive until it is answered
      thread.postMessage({ id, sql, args } satisfies SearchRequest);
    });
  }

  #start(): Worker {
    // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source, which Node's own type
    // stripping runs; built, it is .js (as wal-checkpointer.ts does).
    const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
    const thread = new Worker(new URL(`./vector-search-thread.${extension}`, import.meta.url), {
      workerData: this.data,
      execArgv: [],
    });
    thread.unref();
    thread.on('message', (reply: SearchReply) => {
      const waiting = this.#pending.get(reply.id);
      if (!waiting) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) thread.unref();
      if ('rows' in reply) waiting.resolve(reply.rows);
      else waiting.reject(new Error(reply.error));
    });
    const gone = (error: Error) => {
      if (this.#thread !== thread) return;
      this.#thread = undefined;
      for (const waiting of this.#pending.values()) waiting.reject(error);
      this.#pending.clear();
    };
    thread.on('error', gone);
    thread.on('exit', (code) => gone(new Error(`the vector search thread exited (${code})`)));
    this.#thread = thread;
    return thread;
  }

  /** Ends the thread (after the query it runs); searches still waiting fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const thread = this.#thread;
    if (!thread) return;
    const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    thread.ref(); // the caller awaits its end: the process stays until it has closed its connection
    thread.postMessage('close');
    await exited;
  }
}
