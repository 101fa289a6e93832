import type { StoredToolCall, ToolCallStore } from '../store/tool-call-contract.js';
import type { UsageLog } from './usage-log.js';

/** Records held while the store is down; past it the oldest are dropped (and counted in the log). */
const MAX_WAITING = 20_000;

/**
 * MCP tool-call records leave the call's path at once, as usage records do (usage-recorder.ts): `add` only pushes
 * onto a list, and the list is written to the store in batches (every second, or at 500 records), one transaction
 * each. If the store fails, the records wait for the next write (at most 20,000: then the oldest are dropped and
 * the log says how many). Unlike usage records they have no local spool: a process killed while its store is down
 * loses the calls of its last second or of the outage.
 */
export class ToolCallRecorder {
  private waiting: StoredToolCall[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private dropped = 0;

  constructor(
    private readonly options: {
      store: ToolCallStore;
      log: Pick<UsageLog, 'warn'>;
      flushMs?: number;
      maxBatch?: number;
    },
  ) {}

  add(record: StoredToolCall): void {
    this.waiting.push(record);
    if (this.waiting.length > MAX_WAITING) {
      const excess = this.waiting.length - MAX_WAITING;
      this.waiting.splice(0, excess);
      this.dropped += excess;
    }
    if (this.waiting.length >= (this.options.maxBatch ?? 500)) void this.flush();
    else if (!this.timer) this.schedule(this.options.flushMs ?? 1_000);
  }

  /** Writes what waits; resolves once it is stored (or failed and kept for the next write). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    if (this.waiting.length === 0) return;
    const batch = this.waiting;
    this.waiting = [];
    this.writing = this.write(batch).finally(() => (this.writing = undefined));
    await this.writing;
  }

  async close(): Promise<void> {
    await this.flush();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async write(batch: StoredToolCall[]): Promise<void> {
    try {
      await this.options.store.appendToolCalls(batch);
      if (this.dropped > 0) {
        this.options.log.warn(
          { dropped: this.dropped },
          'MCP tool-call records were dropped from memory while the usage store was unavailable',
        );
        this.dropped = 0;
      }
    } catch (error) {
      this.options.log.warn(
        { err: error, records: batch.length },
        'MCP tool-call records could not be written; kept for the next batch',
      );
      this.waiting = batch.concat(this.waiting);
      const excess = this.waiting.length - MAX_WAITING;
      if (excess > 0) {
        this.waiting.splice(0, excess);
        this.dropped += excess;
      }
      if (!this.timer) this.schedule(5_000);
    }
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => void this.flush(), delayMs);
    this.timer.unref();
  }
}
