import type { BatchLine, BatchRecord, BatchStore, LineOutcome } from '../../store/batch-contract.js';
import type { BatchBackend, BatchLease, LineAnswer, LineExecutor } from './batch-backend.js';
import { GatewayError } from '../../errors/gateway-error.js';

/** A process's bound on lines in flight, shared by every batch it runs. */
export class LineSlots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  get inFlight(): number {
    return this.used;
  }

  async acquire(): Promise<void> {
    if (this.used < this.size) {
      this.used += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.used -= 1;
  }
}

export interface LineCounters {
  succeeded: number;
  errored: number;
  /** Lines refused by a limit, to be tried again later. */
  deferred: number;
}

export interface GatewayRunOptions {
  store: BatchStore;
  execute: LineExecutor;
  slots: LineSlots;
  /** The share of the owner's rate limit a batch may use (0..1]: past it, the batch waits for the window's reset. */
  rateShare: number;
  /** How often a waiting loop looks again (a cancel from another process, deferred lines coming due). */
  pollMs: number;
  counters: LineCounters;
  /** Where a line's unexpected failure is logged (its text never reaches the batch's owner). */
  log: { error(object: object, message: string): void };
  now?: () => number;
}

const PAGE = 64;
/** A line whose run threw (a bug, not an answer): what its owner sees, whatever the exception said. */
export const LINE_INTERNAL_ERROR =
  'The gateway failed unexpectedly running this request; its batch_id and custom_id identify it in the logs.';
/** A refusal without Retry-After is tried again after this long. */
const DEFAULT_RETRY_MS = 1_000;

/** Whether a line's answer was a limit's refusal (to wait and try again) rather than its answer. */
export function refusedByLimit(answer: LineAnswer): boolean {
  if (answer.status === 429) return true;
  return answer.status === 503 && answer.code === 'upstream_busy';
}

/**
 * Runs a batch's lines through the gateway itself, at most `slots` at once in this process (interactive calls keep
 * the rest of the upstreams and limits), each as a call of the batch's owner (`execute`). A line refused by a limit
 * is deferred to its Retry-After and the owner's lines hold until then; a line whose answer leaves less than
 * `1 - rateShare` of the owner's window holds them until the window resets. A line's answer is recorded once
 * (`recordOutcome` moves it from pending only).
 */
export class GatewayRunBackend implements BatchBackend {
  readonly name = 'gateway';
  /** Per owner: no new line before this time. */
  private readonly holds = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: GatewayRunOptions) {
    this.now = options.now ?? Date.now;
  }

  takes(): boolean {
    return true;
  }

  async run(batch: BatchRecord, lease: BatchLease): Promise<void> {
    const { store, slots, pollMs } = this.options;
    const inFlight = new Map<number, Promise<void>>();
    let queue: BatchLine[] = [];
    let cursor = -1;
    let checkedMs = this.now();
    let wake: (() => void) | undefined;
    // A line whose outcome could not be stored (the store failing, or closed under a shutdown): no new line starts,
    // and the run rejects once the others are done (the runner logs it; the line stays pending for the next claim).
    // Kept here, not left on the line's promise: a rejection nobody awaits yet is an unhandled one.
    let failed: { error: unknown } | undefined;
    const waitFor = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(1, ms));
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    try {
      while (!failed && !lease.lost && !lease.signal.aborted && this.now() < batch.expiresMs) {
        if (this.now() - checkedMs >= pollMs) {
          checkedMs = this.now();
          const fresh = await store.get(batch.owner, batch.id);
          if (fresh?.status !== 'in_progress' || this.now() >= fresh.expiresMs) return;
        }
        const hold = (this.holds.get(batch.owner) ?? 0) - this.now();
        if (hold > 0) {
          await waitFor(Math.min(hold, pollMs));
          continue;
        }
        if (queue.length === 0) {
          // Lines in flight when the look is sent are skipped even if they have ended by its answer: on PostgreSQL
          // the answer can predate their recorded outcome (another pool connection), and they would run twice.
          const busy = new Set(inFlight.keys());
          queue = (await store.pendingLines(batch.id, cursor, this.now(), PAGE)).filter((l) => !busy.has(l.index));
          if (queue.length === 0 && cursor !== -1) {
            cursor = -1; // from the start again: deferred lines may have come due
            continue;
          }
          if (queue.length === 0) {
            if (inFlight.size === 0 && (await store.pendingCount(batch.id)) === 0) return;
            await waitFor(pollMs);
            continue;
          }
        }
        await slots.acquire();
        if (failed) {
          slots.release(); // a line failed while this one waited for its slot: it does not start
          break;
        }
        const line = queue.shift() as BatchLine;
        cursor = line.index;
        const running = this.runLine(batch, line)
          .catch((error: unknown) => {
            failed ??= { error };
          })
          .finally(() => {
            slots.release();
            inFlight.delete(line.index);
            wake?.();
          });
        inFlight.set(line.index, running);
      }
    } finally {
      // Nothing is left in flight when the batch moves on (a cancel ends only the lines that never started).
      await Promise.all(inFlight.values());
    }
    if (failed) throw failed.error;
  }

  private async runLine(batch: BatchRecord, line: BatchLine): Promise<void> {
    const { store, execute, counters, rateShare } = this.options;
    let answer: LineAnswer;
    try {
      answer = await execute(batch, line);
    } catch (error) {
      // Internal text (a stack's message, a path, a store's error) is for the log, never for the owner's output.
      this.options.log.error(
        { err: error, batch_id: batch.id, line: line.index, custom_id: line.customId },
        'batch: a line failed with an unexpected error',
      );
      const details = { batch_id: batch.id, custom_id: line.customId };
      const failure = new GatewayError('internal_error', details, { message: LINE_INTERNAL_ERROR });
      answer = { status: failure.status, body: JSON.stringify(failure.toBody()), requestId: null };
    }
    if (refusedByLimit(answer)) {
      const until = this.now() + (answer.retryAfterMs ?? DEFAULT_RETRY_MS);
      this.holdOwner(batch.owner, until);
      counters.deferred += 1;
      await store.defer(batch.id, line.index, until);
      return;
    }
    const { rate } = answer;
    if (rate && rate.limit > 0 && rate.remaining < rate.limit * (1 - rateShare))
      this.holdOwner(batch.owner, this.now() + rate.resetMs);
    const ok = answer.status >= 200 && answer.status < 300;
    const outcome: LineOutcome = {
      state: ok ? 'succeeded' : 'errored',
      statusCode: answer.status,
      response: answer.body,
      requestId: answer.requestId,
      error: null,
      usage: ok ? answer.usage : undefined,
    };
    if (await store.recordOutcome(batch.id, line.index, outcome)) {
      if (ok) counters.succeeded += 1;
      else counters.errored += 1;
    }
  }

  private holdOwner(owner: string, untilMs: number): void {
    if ((this.holds.get(owner) ?? 0) < untilMs) this.holds.set(owner, untilMs);
    if (this.holds.size > 10_000) for (const [key, until] of this.holds) if (until < this.now()) this.holds.delete(key);
  }
}
