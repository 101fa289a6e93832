import { GatewayError } from '../../errors/gateway-error.js';
import type { FileSearch } from './file-search.js';

/**
 * How ingestion ended for a file this process worked on: `completed` (stored), `failed` (its `last_error` set),
 * `cancelled` (cancelled by its caller while it was being ingested), `lost` (removed meanwhile, or taken over by
 * another process after this one's lease ran out).
 */
export type IngestionOutcome = 'completed' | 'failed' | 'cancelled' | 'lost';
export const INGESTION_OUTCOMES: readonly IngestionOutcome[] = ['completed', 'failed', 'cancelled', 'lost'];

/**
 * This process's retrieval tallies for the metrics (docs/metrics.md): files ingested by outcome, chunks embedded,
 * and searches by outcome (`ok` or the error code they were answered with: the codes of errors/codes.ts, a bounded
 * set; anything else counts as `server_error`). Plain numbers: nothing is allocated per file or search.
 */
export class RetrievalStats {
  readonly files: Record<IngestionOutcome, number> = { completed: 0, failed: 0, cancelled: 0, lost: 0 };
  chunksEmbedded = 0;
  readonly #searches = new Map<string, number>();

  countFile(outcome: IngestionOutcome): void {
    this.files[outcome] += 1;
  }

  countChunks(n: number): void {
    this.chunksEmbedded += n;
  }

  countSearch(outcome: string): void {
    this.#searches.set(outcome, (this.#searches.get(outcome) ?? 0) + 1);
  }

  /** Searches by outcome so far. */
  get searches(): ReadonlyMap<string, number> {
    return this.#searches;
  }
}

/**
 * `search` counted in `stats`: each call once, by outcome. Every search goes through it (`POST .../search` and each
 * `file_search` run), so the count is of searches whoever asked.
 */
export function countedSearch(search: FileSearch, stats: RetrievalStats): FileSearch {
  return async (request) => {
    try {
      const result = await search(request);
      stats.countSearch('ok');
      return result;
    } catch (error) {
      stats.countSearch(error instanceof GatewayError ? error.code : 'server_error');
      throw error;
    }
  };
}
