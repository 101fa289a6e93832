import { setImmediate as nextTurn } from 'node:timers/promises';
import type { UsageStore } from '../store/store-contract.js';
import type { ToolCallStore } from '../store/tool-call-contract.js';

/** How often the sweep looks at the usage tables (docs/usage.md, "Retention"). */
export const SWEEP_EVERY_MS = 10_000;
/** Rows per step: one transaction (one statement in PostgreSQL) of its own, a few ms at most; the loop turns between. */
export const STEP_ROWS = 250;
/** The share of the size bound the rollups may hold alone; past it their oldest hours go (they never are raw again). */
const HOURS_SHARE = 0.5;

export interface RetentionLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** What one sweep did. */
export interface SweepOutcome {
  /** Records older than the retention in days, deleted. */
  purged: number;
  /** Rollup rows of hours older than the retention in days, deleted. */
  purgedHours: number;
  /** Records rolled into their hours and deleted, the store being over its size bound. */
  rolled: number;
  /** Rollup rows deleted because the rollups alone held more than half the size bound. */
  droppedHours: number;
  /** MCP tool-call records older than the retention in days, deleted. */
  purgedToolCalls: number;
}

/**
 * Ages usage records out (docs/usage.md, "Retention"), every 10 s, in steps of at most 250 rows:
 *
 * 1. by age: records that arrived more than `usage.retention_days` ago are deleted, and rollup hours that ended
 *    before then (nothing older is kept), and MCP tool-call records as old (they have no rollup);
 * 2. by size: while the records and the rollups hold more than `usage.retention_max_bytes` (as counted by the store:
 *    `footprint()`), the oldest records are rolled into their hours and deleted, one transaction per step. Reports
 *    and budgets read the rollups for that part, so their totals do not change (an hour × caller keeps 64 models
 *    by name, the rest rolled into `(other)`: rolling a caller's records never grows them). The rollups may hold
 *    half the bound: past it their oldest hours are deleted, and that is logged.
 *
 * One sweep at a time per process; every instance sweeps (steps of several processes or instances never take
 * the same rows: SQLite's write lock, PostgreSQL's `SKIP LOCKED`). A step that fails is logged; the next sweep
 * goes on from where the tables are.
 */
export class UsageRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly options: {
      store: UsageStore;
      /** The MCP tool-call records: aged out by the same retention in days (not rolled up, not counted in the size bound). */
      toolCalls?: Pick<ToolCallStore, 'purgeToolCalls'> | undefined;
      retentionMs: number;
      maxBytes: number;
      log: RetentionLog;
      everyMs?: number;
      now?: () => number;
    },
  ) {}

  /** The first sweep now, then one every `everyMs` after the last one ended. */
  start(): void {
    this.schedule(0);
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One sweep (tests call it directly; `start` runs it on its timer). */
  async sweep(): Promise<SweepOutcome> {
    const { store, maxBytes } = this.options;
    const before = (this.options.now ?? Date.now)() - this.options.retentionMs;
    const outcome: SweepOutcome = {
      purged: await this.steps(() => store.purge(before, STEP_ROWS)),
      purgedHours: await this.steps(() => store.purgeHours(before, STEP_ROWS)),
      rolled: 0,
      droppedHours: 0,
      purgedToolCalls: 0,
    };
    const toolCalls = this.options.toolCalls;
    if (toolCalls) outcome.purgedToolCalls = await this.steps(() => toolCalls.purgeToolCalls(before, STEP_ROWS));
    const hoursBound = maxBytes * HOURS_SHARE;
    let size = await store.footprint();
    while (!this.stopped && (size.recordBytes + size.hourBytes > maxBytes || size.hourBytes > hoursBound)) {
      const dropping = size.records === 0 || size.hourBytes > hoursBound;
      await nextTurn();
      const n = dropping
        ? await store.purgeHours(Number.MAX_SAFE_INTEGER, STEP_ROWS)
        : await store.rollOldest(STEP_ROWS);
      if (n === 0) break; // nothing left to take: the counts are ahead of the tables (see docs/usage.md)
      if (dropping) outcome.droppedHours += n;
      else outcome.rolled += n;
      size = await store.footprint();
    }
    if (outcome.droppedHours > 0) {
      this.options.log.warn(
        { dropped_rollup_rows: outcome.droppedHours, max_bytes: maxBytes, rollup_bytes: size.hourBytes },
        'usage rollups held more than half of usage.retention_max_bytes: their oldest hours were deleted',
      );
    }
    return outcome;
  }

  /** Runs `step` until it takes fewer than a step's rows (or the sweep is stopped); the loop turns before each. */
  private async steps(step: () => Promise<number>): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      await nextTurn();
      const n = await step();
      total += n;
      if (n < STEP_ROWS) break;
    }
    return total;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweep()
        .catch((error: unknown) => this.options.log.warn({ err: error }, 'usage records could not be aged out'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.options.everyMs ?? SWEEP_EVERY_MS);
        });
    }, delayMs);
    this.timer.unref();
  }
}
