import type { StorageQuota } from '../files/storage-quota.js';

/**
 * After a batch's `lines_until_ms` the sweep of ended lines removes them within its interval (an hour,
 * batch-line-sweep.ts): their bytes count until then.
 */
const SWEEP_MARGIN_MS = 3_600_000;

/**
 * A batch's lines in the storage quotas (docs/files.md, "Storage quotas"): each line's request is stored in the
 * database, a copy that outlives the input file (OpenAI's: a caller may delete it once the batch is validated) or
 * the only one (Anthropic's create). Their bytes are one entry of the ledger under the batch's id, checked before
 * a line is stored (a refusal keeps nothing), and counted until the lines are due to go: `until` moves it to the
 * batch's `lines_until_ms` when it ends, `release` ends it when they go at once (a refused create, a deleted
 * batch). An entry whose batch a crash cut short ends at its expiry (the files' sweep of reservations).
 */
export class BatchLinesQuota {
  constructor(
    private readonly quota: StorageQuota,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts `bytes` of the lines of `batchId` for `owner` until `untilMs` (the latest they can be kept), or throws
   * the quota's refusal (`storage_quota_exceeded`, `storage_full`, `exceeds_storage_quota`) when they do not fit.
   * Called again with more bytes, only the difference is checked.
   */
  async hold(owner: string, batchId: string, bytes: number, untilMs: number): Promise<void> {
    await this.quota.take({
      owner,
      id: batchId,
      bytes,
      floor: bytes,
      checked: true,
      expiresMs: untilMs + SWEEP_MARGIN_MS,
    });
  }

  /** The batch ended: its lines count until `linesUntilMs` (its files' or results' expiry), then the sweep's. */
  async until(owner: string, batchId: string, linesUntilMs: number): Promise<void> {
    if (linesUntilMs <= this.now()) return this.release(batchId);
    await this.quota.take({
      owner,
      id: batchId,
      bytes: 0,
      floor: 0,
      checked: false,
      expiresMs: linesUntilMs + SWEEP_MARGIN_MS,
    });
  }

  release(batchId: string): Promise<void> {
    return this.quota.release(batchId);
  }
}
