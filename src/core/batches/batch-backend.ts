import type { BatchLine, BatchRecord } from '../../store/batch-contract.js';

/** The runner's hold on a batch: `lost` once another runner may have it (the lease could not be renewed). */
export interface BatchLease {
  readonly lost: boolean;
  /** Aborted when the lease is lost or the process stops. */
  readonly signal: AbortSignal;
}

/**
 * Who runs a batch's lines. `GatewayRunBackend` (gateway-run-backend.ts) runs them itself, line by line, through the
 * gateway's own call pipeline. A native backend (the model's upstream has a batch API: OpenAI's /v1/batches and
 * files, Anthropic's Message Batches, Gemini's batchGenerateContent) would hand the whole batch to the upstream and
 * poll it: `takes` says which batches it can, and `run` records each line's outcome through the same store call
 * (`recordOutcome`), so results, files, counts and webhooks stay the runner's. Not built yet: docs/files.md, "Batches".
 */
export interface BatchBackend {
  readonly name: string;
  takes(batch: BatchRecord): boolean;
  /**
   * Works on a claimed `in_progress` batch until it has no pending line, stops being `in_progress` (cancel), expires,
   * or the lease is lost; it returns only once no line it started is still in flight.
   */
  run(batch: BatchRecord, lease: BatchLease): Promise<void>;
}

/** One line's answer, as the gateway gave it to the batch owner. */
export interface LineAnswer {
  status: number;
  /** The answer's body (JSON text). */
  body: string;
  requestId: string | null;
  /** Retry-After of a refusal, milliseconds. */
  retryAfterMs?: number;
  /** The RateLimit-* headers of the owner's limit closest to refusing it. */
  rate?: { limit: number; remaining: number; resetMs: number };
}

/** Runs one line as a call of the batch's owner (routes/batch-line-executor.ts: the same pipeline as any call). */
export type LineExecutor = (batch: BatchRecord, line: BatchLine) => Promise<LineAnswer>;
