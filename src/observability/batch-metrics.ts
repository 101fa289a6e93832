import { Gauge, type Registry } from 'prom-client';
import { CollectedCounter } from './fast-metrics.js';

/** What the batch metrics read: this process's runner, and the batches not yet ended in the shared store. */
export interface BatchMetricsSource {
  /** Lines this process answered (succeeded, errored) and deferred (refused by a limit, to be tried again). */
  lines(): { succeeded: number; errored: number; deferred: number };
  /** Lines in flight in this process. */
  linesInFlight(): number;
  /** Batches not ended (validating, in progress, finalizing, cancelling), across every process. */
  active(): Promise<ReadonlyArray<{ status: string; api: string }>>;
}

/**
 * The batch metrics (docs/metrics.md): `llmgw_batch_lines_total{outcome}` and `llmgw_batch_lines_in_flight` per
 * process (summed across workers), `llmgw_batches_active{api,status}` from the store (the same for every worker).
 */
export function registerBatchMetrics(registry: Registry, source: BatchMetricsSource): void {
  const registers = [registry];
  new CollectedCounter(
    'llmgw_batch_lines_total',
    'Batch lines answered by this process (run by the gateway, or read back from an upstream batch), by outcome: succeeded, errored (answered with an error), deferred (refused by a limit, tried again later)',
    () => {
      const lines = source.lines();
      return [
        { labels: { outcome: 'succeeded' }, value: lines.succeeded },
        { labels: { outcome: 'errored' }, value: lines.errored },
        { labels: { outcome: 'deferred' }, value: lines.deferred },
      ];
    },
    registry,
  );
  new Gauge({
    name: 'llmgw_batch_lines_in_flight',
    help: 'Batch lines in flight in this process (bounded by batches.concurrency)',
    registers,
    aggregator: 'sum',
    collect() {
      this.set(source.linesInFlight());
    },
  });
  new Gauge({
    name: 'llmgw_batches_active',
    help: 'Batches not yet ended, by API and status (validating, in_progress, finalizing, cancelling)',
    labelNames: ['api', 'status'],
    registers,
    aggregator: 'max',
    async collect() {
      this.reset();
      const counts = new Map<string, { api: string; status: string; n: number }>();
      for (const batch of await source.active()) {
        const key = `${batch.api} ${batch.status}`;
        const entry = counts.get(key) ?? { api: batch.api, status: batch.status, n: 0 };
        entry.n += 1;
        counts.set(key, entry);
      }
      for (const { api, status, n } of counts.values()) this.set({ api, status }, n);
    },
  });
}
