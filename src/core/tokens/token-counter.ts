import { Worker } from 'node:worker_threads';
import { GatewayError } from '../../errors/gateway-error.js';
import { ClientGoneError } from '../../errors/client-gone.js';
import { loaderArguments } from './loader-arguments.js';
import type { CountReply, CountRequest, Encoding } from './token-count-lane.js';

export interface CounterBounds {
  /** What the counting thread may have to count at once (a million random letters take it about 2 to 4 s). */
  maxBacklogChars: number;
  /** A count of at most this many characters is taken whatever the backlog (most context-window checks). */
  smallCountChars: number;
}

const BOUNDS: CounterBounds = { maxBacklogChars: 16 * 1024 * 1024, smallCountChars: 64 * 1024 };
/** A thread with nothing to count for this long is ended (its tokenizer is large); the next count starts another. */
const IDLE_MS = 60_000;
/** How often a count in progress checks whether its caller is still there. */
const CLIENT_CHECK_MS = 100;

/** The caller's side of a count (a call's ClientWatch): a count for a caller that left is dropped. */
export interface CountClient {
  readonly gone: boolean;
}

interface Pending {
  resolve(counts: number[]): void;
  reject(error: Error): void;
  chars: number;
  client: CountClient | undefined;
}

/**
 * Counts tokens on a thread of its own (token-count-worker.ts), so no count, however long or hostile its text, holds
 * the gateway's event loop: the thread is started on the first count (never at start-up), shared by every request,
 * and ended when idle. Its backlog is bounded: a large count that would take it over `maxBacklogChars` is a 503
 * `tokenizer_busy` (small counts, such as most context-window checks, are always taken).
 */
export class TokenCounter {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private backlog = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private clientTimer: NodeJS.Timeout | undefined;

  constructor(private readonly bounds: CounterBounds = BOUNDS) {}

  count(encoding: Encoding, texts: string[], client: CountClient | undefined): Promise<number[]> {
    let chars = 0;
    for (const text of texts) chars += text.length;
    const { maxBacklogChars, smallCountChars } = this.bounds;
    if (chars > smallCountChars && this.backlog + chars > maxBacklogChars) {
      const details = { characters: chars, backlog_characters: this.backlog, max_backlog_characters: maxBacklogChars };
      return Promise.reject(new GatewayError('tokenizer_busy', details, { headers: { 'retry-after': '1' } }));
    }
    const worker = this.started();
    const id = this.nextId++;
    this.backlog += chars;
    const counted = new Promise<number[]>((resolve, reject) =>
      this.pending.set(id, { resolve, reject, chars, client }),
    );
    worker.postMessage({ id, encoding, texts } satisfies CountRequest);
    if (client && !this.clientTimer)
      this.clientTimer = setInterval(() => this.dropGoneClients(), CLIENT_CHECK_MS).unref();
    return counted;
  }

  private started(): Worker {
    clearTimeout(this.idleTimer);
    if (this.worker) {
      if (this.pending.size === 0) this.worker.ref();
      return this.worker;
    }
    // Under a TypeScript loader (tsx: tests, `npm run dev`) this module is the .ts source; built, it is .js.
    const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
    const worker = new Worker(new URL(`./token-count-worker.${extension}`, import.meta.url), {
      execArgv: loaderArguments(process.execArgv),
      // A backstop: the tokenizer and its caches need about 100 MB. Past this the thread dies, its counts fail.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    worker.on('message', (reply: CountReply) => this.settle(reply));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`the token-counting thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private settle(reply: CountReply): void {
    const pending = this.finish(reply.id);
    if (!pending) return;
    if ('counts' in reply) pending.resolve(reply.counts);
    else pending.reject(new GatewayError('internal_error', {}, { cause: new Error(reply.error) }));
  }

  /** Forgets count `id`; once nothing is pending, the thread no longer keeps the process alive and may idle out. */
  private finish(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    this.backlog -= pending.chars;
    if (this.pending.size > 0) return pending;
    clearInterval(this.clientTimer);
    this.clientTimer = undefined;
    const worker = this.worker;
    if (worker) {
      worker.unref();
      this.idleTimer = setTimeout(() => this.end(worker), IDLE_MS).unref();
    }
    return pending;
  }

  private dropGoneClients(): void {
    for (const [id, pending] of this.pending) {
      if (!pending.client?.gone) continue;
      this.worker?.postMessage({ cancel: id } satisfies CountRequest);
      this.finish(id)?.reject(new ClientGoneError());
    }
  }

  private end(worker: Worker): void {
    if (this.worker !== worker || this.pending.size > 0) return;
    this.worker = undefined;
    void worker.terminate();
  }

  /** The thread failed or exited: its counts in progress fail (a 500), and the next count starts a new thread. */
  private lost(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    for (const id of [...this.pending.keys()])
      this.finish(id)?.reject(new GatewayError('internal_error', {}, { cause: error }));
    clearTimeout(this.idleTimer);
  }
}

let shared: TokenCounter | undefined;

/** The BPE tokens of each text, counted off the event loop. A 503 `tokenizer_busy` when the thread is full. */
export function countTexts(encoding: Encoding, texts: string[], client?: CountClient): Promise<number[]> {
  shared ??= new TokenCounter();
  return shared.count(encoding, texts, client);
}
