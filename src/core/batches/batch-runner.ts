import type { BatchRecord, BatchStore } from '../../store/batch-contract.js';
import type { BatchBackend, BatchLease } from './batch-backend.js';
import type { BatchFiles } from './batch-files.js';
import { writeResultFiles } from './batch-results.js';
import type { BatchLimits } from './batch-service.js';
import { validateInput, type HoldLines, type JsonLineReader } from './batch-validate.js';
import type { BatchLinesQuota } from './batch-lines-quota.js';
import { isDeadPredecessor, pidExists, runnerName, type RunnerName } from './runner-identity.js';

export interface BatchRunnerOptions {
  store: BatchStore;
  files: BatchFiles | undefined;
  limits: BatchLimits;
  /** Tried in order; the first that `takes` a batch runs its lines (the gateway's own backend takes every one). */
  backends: readonly BatchBackend[];
  /** How long a claim holds a batch without being renewed (a crashed runner's batches are taken over after it). */
  leaseMs: number;
  /** How often the runner looks for work it was not woken for (another process's batches, a dead runner's). */
  pollMs: number;
  /** Batches worked on at once by this process. */
  maxBatches: number;
  /** A batch ended (completed, failed, expired, cancelled): once per batch. */
  onEnded(batch: BatchRecord): void;
  /** How an input file's lines are read as JSON (the gateway's body reader: a key sent twice is refused). */
  readLine: JsonLineReader;
  /** The storage quotas a batch's lines count against (batch-lines-quota.ts); none: not counted. */
  linesQuota?: BatchLinesQuota;
  /**
   * This process's instance identity (INSTANCE_ID, else host name and data folder): at start, the leases an earlier
   * process of the same identity held when it died are taken back at once instead of after `leaseMs`
   * (runner-identity.ts). Undefined: none are.
   */
  identity?: string;
  /** Whether a pid is a live process here (tests replace it). */
  pidExists?: (pid: number) => boolean;
  log: {
    info?(object: object, message: string): void;
    warn(object: object, message: string): void;
    error(object: object, message: string): void;
  };
  now?: () => number;
}

/** Leases of this identity looked at when the runner starts, at most (a process works on `max_batches` ≤ 100). */
const TAKE_BACK_LIMIT = 1_000;

const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

/**
 * The batch runner of one process: it claims active batches with a lease in the store (one runner per batch across
 * processes and instances; a dead runner's lease runs out and another takes the batch over where its store says),
 * and drives each through its states: `validating` (the input file read into lines), `in_progress` (a backend runs
 * the lines), `finalizing` (the output and error files written), and `cancelling` / expiry. Every step can be run
 * again after a crash: lines are added only once, an answered line is never run again, and a status moves only
 * from the one it was in.
 */
export class BatchRunner {
  private readonly name: RunnerName;
  readonly holder: string;
  /** Whether the leases of a dead predecessor were looked for (once, at the first claim). */
  private tookBack = false;
  private readonly working = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** The claim under way, if any (`stop` waits for it: what it claims must not start after the store closed). */
  private ticking: Promise<void> | undefined;
  private again = false;
  private readonly now: () => number;

  constructor(private readonly options: BatchRunnerOptions) {
    this.now = options.now ?? Date.now;
    this.name = runnerName(options.identity);
    this.holder = this.name.holder;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Batches being worked on by this process. */
  get active(): number {
    return this.working.size;
  }

  /** Looks for work now (a batch was created or cancelled here). */
  wake(): void {
    if (this.stopping.signal.aborted) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.claim()
      .catch((error: unknown) => this.options.log.error({ err: error }, 'batch runner: claiming failed'))
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops claiming, lets the lines in flight finish, and gives the leases back (another process may go on at once). */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    await Promise.all(this.working.values());
  }

  /**
   * The leases a dead process of this identity held (killed, crashed, restarted on the same data folder) are given
   * back, so this runner (or another) claims their batches now rather than after `lease_seconds`. A live sibling's
   * lease (same identity, another live pid) is left alone.
   */
  private async takeBack(): Promise<void> {
    const { store } = this.options;
    if (this.name.prefix === undefined) return;
    const exists = this.options.pidExists ?? pidExists;
    const held = await store.leasesHeldBy(this.name.prefix, TAKE_BACK_LIMIT);
    let released = 0;
    for (const lease of held) {
      if (!isDeadPredecessor(lease.holder, this.name, process.pid, exists)) continue;
      await store.release(lease.id, lease.holder);
      released += 1;
    }
    if (released > 0)
      this.options.log.info?.(
        { batches: released },
        'batch runner: took back the leases a dead process of this instance held',
      );
  }

  private async claim(): Promise<void> {
    const { store, leaseMs, maxBatches } = this.options;
    if (!this.tookBack) {
      this.tookBack = true;
      await this.takeBack();
    }
    const room = maxBatches - this.working.size;
    if (room <= 0) return;
    const claimed = await store.claim(this.holder, this.now(), leaseMs, room + this.working.size);
    for (const batch of claimed) {
      if (this.working.has(batch.id)) continue;
      if (this.stopping.signal.aborted || this.working.size >= maxBatches) {
        // Claimed while this runner stopped (or past its room): given back at once, another process may take it.
        await store.release(batch.id, this.holder).catch(() => undefined);
        continue;
      }
      const work = this.work(batch)
        .catch((error: unknown) =>
          this.options.log.error({ err: error, batch_id: batch.id }, 'batch runner: a batch step failed'),
        )
        .finally(async () => {
          // Given back before `stop` resolves: the store is still open, and another process may go on at once.
          await store.release(batch.id, this.holder).catch(() => undefined);
          this.working.delete(batch.id);
          this.wake();
        });
      this.working.set(batch.id, work);
    }
  }

  private async work(claimed: BatchRecord): Promise<void> {
    const { store, leaseMs } = this.options;
    const controller = new AbortController();
    const lease = { lost: false, signal: controller.signal };
    const onStop = () => controller.abort();
    this.stopping.signal.addEventListener('abort', onStop);
    const renewal = setInterval(() => {
      void store.renew(claimed.id, this.holder, this.now() + leaseMs).then(
        (held) => {
          if (!held) {
            lease.lost = true;
            controller.abort();
          }
        },
        () => undefined,
      );
    }, leaseMs / 3);
    try {
      let batch: BatchRecord | undefined = claimed;
      while (batch && !ENDED.has(batch.status) && !controller.signal.aborted) {
        await this.step(batch, lease);
        batch = await store.get(batch.owner, batch.id);
      }
    } finally {
      clearInterval(renewal);
      this.stopping.signal.removeEventListener('abort', onStop);
    }
  }

  private async step(batch: BatchRecord, lease: BatchLease): Promise<void> {
    const { store, files, limits } = this.options;
    const now = this.now();
    if (batch.status !== 'cancelling' && now >= batch.expiresMs) {
      await this.beforeClose(batch, lease);
      if (lease.lost || lease.signal.aborted) return;
      await store.closePending(batch.id, 'expired', JSON.stringify({ code: 'batch_expired', message: EXPIRED }));
      await this.end(batch, 'expired', { expiredMs: now });
      return;
    }
    switch (batch.status) {
      case 'validating': {
        const { errors, model } = await validateInput(batch, {
          files,
          store,
          limits,
          readLine: this.options.readLine,
          holdLines: this.holdLines(batch),
        });
        if (errors.length > 0) await this.end(batch, 'failed', { failedMs: now, errors });
        else await store.transition(batch.id, ['validating'], 'in_progress', { inProgressMs: now, model });
        return;
      }
      case 'in_progress': {
        const backend = await this.backendFor(batch);
        await backend?.run(batch, lease);
        if (!lease.lost && !lease.signal.aborted && (await store.pendingCount(batch.id)) === 0)
          await store.transition(batch.id, ['in_progress'], 'finalizing', { finalizingMs: this.now() });
        return;
      }
      case 'finalizing':
        await this.end(batch, 'completed', { completedMs: now });
        return;
      case 'cancelling':
        await this.beforeClose(batch, lease);
        if (lease.lost || lease.signal.aborted) return;
        await store.closePending(batch.id, 'canceled', JSON.stringify({ code: 'batch_cancelled', message: CANCELLED }));
        await this.end(batch, 'cancelled', { cancelledMs: now });
        return;
      default:
        return;
    }
  }

  /**
   * Counts an OpenAI batch's lines against its owner's storage quota until the latest they can be kept: the end of
   * its window, then its output files' age (`end` sets the real date).
   */
  private holdLines(batch: BatchRecord): HoldLines | undefined {
    const { linesQuota, limits } = this.options;
    if (!linesQuota) return undefined;
    const ttlSeconds = batch.outputTtlSeconds ?? limits.maxOutputTtlSeconds ?? 30 * 86_400;
    return (bytes) => linesQuota.hold(batch.owner, batch.id, bytes, batch.expiresMs + ttlSeconds * 1000);
  }

  /** The first backend that takes the batch (the gateway's own takes every one). */
  private async backendFor(batch: BatchRecord): Promise<BatchBackend | undefined> {
    for (const backend of this.options.backends) if (await backend.takes(batch)) return backend;
    return undefined;
  }

  private async beforeClose(batch: BatchRecord, lease: BatchLease): Promise<void> {
    for (const backend of this.options.backends) await backend.beforeClose?.(batch, lease);
  }

  /** The batch's last step: its result files written (from its lines as the store has them), then its final status. */
  private async end(
    batch: BatchRecord,
    to: 'completed' | 'failed' | 'expired' | 'cancelled',
    stamp: Parameters<BatchStore['transition']>[3],
  ): Promise<void> {
    const { store, files } = this.options;
    const current = (await store.get(batch.owner, batch.id)) ?? batch;
    const now = this.now();
    let linesUntilMs = now;
    let written = {};
    if (to !== 'failed') {
      const { filesUntilMs, ...ids } = await writeResultFiles(store, files, current);
      written = ids;
      // The lines (requests and answers) are kept as long as what shows them: OpenAI's output and error files,
      // Anthropic's results. A failed batch's (it has none, unless a crash cut its storing short) go at once.
      linesUntilMs = (current.api === 'openai' ? filesUntilMs : current.resultsUntilMs) ?? now;
    }
    const moved = await store.transition(batch.id, [batch.status], to, { ...stamp, ...written, linesUntilMs });
    if (!moved) return;
    // Its lines count as long as they are kept; a failure leaves the longer count of its validation.
    await this.options.linesQuota
      ?.until(batch.owner, batch.id, linesUntilMs)
      .catch((error: unknown) => this.options.log.warn({ err: error, batch_id: batch.id }, 'batch lines quota'));
    const ended = await store.get(batch.owner, batch.id);
    if (ended) this.options.onEnded(ended);
  }
}

const EXPIRED = 'This request could not be executed before the completion window expired.';
const CANCELLED = 'This request was not executed: the batch was cancelled.';
