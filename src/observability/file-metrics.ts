import type { Registry } from 'prom-client';
import { CollectedCounter } from './fast-metrics.js';

/** What the file metrics read: this process's deletes of upstream copies of deleted files. */
export interface FileMetricsSource {
  upstreamDeletes(): { deleted: number; failed: number; left: number };
}

/**
 * `llmgw_upstream_file_deletes_total{outcome}` (docs/metrics.md): the copies the gateway had uploaded to an
 * upstream's Files API for a file its caller then deleted (docs/files.md, "Files in requests"), per process
 * (summed across workers).
 */
export function registerFileMetrics(registry: Registry, source: FileMetricsSource): void {
  new CollectedCounter(
    'llmgw_upstream_file_deletes_total',
    "Upstream copies of deleted gateway files, by outcome: deleted (or already gone), failed (left to expire by their upstream ttl), left (uploaded with a caller's own upstream key: left to expire)",
    () => {
      const counts = source.upstreamDeletes();
      return [
        { labels: { outcome: 'deleted' }, value: counts.deleted },
        { labels: { outcome: 'failed' }, value: counts.failed },
        { labels: { outcome: 'left' }, value: counts.left },
      ];
    },
    registry,
  );
}
