import {
  MAX_USAGE_OWNERS,
  type OwnerVectorUsage,
  type VectorStoreStore,
  type VectorUsage,
} from '../../store/vector-contract.js';

/** How long one reading of the stores' usage is shown again (scrapes and dashboard views in between share it). */
export const USAGE_FRESH_MS = 10_000;

export interface VectorUsageView {
  total: VectorUsage;
  /** The owners holding the most bytes, at most MAX_USAGE_OWNERS. */
  owners: OwnerVectorUsage[];
  /** When it was read (ms). */
  readMs: number;
}

/**
 * The vector stores' usage for operators (the metrics and the dashboard): `usage` passes over every store and file,
 * so it is read at most once per USAGE_FRESH_MS whoever asks, and concurrent askers share the one reading.
 */
export class VectorUsageReader {
  #last: VectorUsageView | undefined;
  #reading: Promise<VectorUsageView> | undefined;

  constructor(
    private readonly store: VectorStoreStore,
    private readonly now: () => number = Date.now,
  ) {}

  read(): Promise<VectorUsageView> {
    const last = this.#last;
    if (last && this.now() - last.readMs < USAGE_FRESH_MS) return Promise.resolve(last);
    this.#reading ??= this.store
      .usage(MAX_USAGE_OWNERS)
      .then((usage) => (this.#last = { ...usage, readMs: this.now() }))
      .finally(() => (this.#reading = undefined));
    return this.#reading;
  }
}
