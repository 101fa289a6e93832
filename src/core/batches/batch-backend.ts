import type { ErrorCode } from '../../errors/codes.js';
import type { BatchLine, BatchRecord, LineUsage } from '../../store/batch-contract.js';
import type { RateState } from '../limits/rate-limit-headers.js';

/** The runner's hold on a batch: `lost` once another runner may have it (the lease could not be renewed). */
export interface BatchLease {
  readonly lost: boolean;
  /** Aborted when the lease is lost or the process stops. */
  readonly signal: AbortSignal;
}

/**
 * Who runs a batch's lines. `GatewayRunBackend` (gateway-run-backend.ts) runs them itself, line by line, through the
 * gateway's own call pipeline; `NativeBatchBackend` (native-backend.ts) hands the whole batch to the upstream's own
 * batch API (OpenAI's, Anthropic's Message Batches, Gemini's) and polls it. Both record each line's outcome through
 * the same store call (`recordOutcome`), so results, files, counts and webhooks stay the runner's.
 */
export interface BatchBackend {
  readonly name: string;
  /** Whether this backend runs the batch (decided once and kept in the store where it matters). */
  takes(batch: BatchRecord): boolean | Promise<boolean>;
  /**
   * Works on a claimed `in_progress` batch until it has no pending line, stops being `in_progress` (cancel), expires,
   * or the lease is lost; it returns only once no line it started is still in flight.
   */
  run(batch: BatchRecord, lease: BatchLease): Promise<void>;
  /**
   * The batch is being cancelled or has reached the end of its window: work started elsewhere (an upstream batch)
   * is stopped and what it did recorded, before the runner closes the lines still pending.
   */
  beforeClose?(batch: BatchRecord, lease: BatchLease): Promise<void>;
}

/** One line's answer, as the gateway gave it to the batch owner. */
export interface LineAnswer {
  status: number;
  /** The answer's body (JSON text). */
  body: string;
  requestId: string | null;
  /** The error code the call ended with (absent: answered). */
  code?: ErrorCode;
  /** The line's tokens (absent: the answer used none the gateway knows of). */
  usage?: LineUsage;
  /** Retry-After of a refusal, milliseconds. */
  retryAfterMs?: number;
  /** The owner's limit closest to refusing it. */
  rate?: RateState;
}

/** Runs one line as a call of the batch's owner (line-executor.ts: `CallAs`, the same pipeline as any call). */
export type LineExecutor = (batch: BatchRecord, line: BatchLine) => Promise<LineAnswer>;
