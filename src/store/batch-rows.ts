import {
  ACTIVE_BATCH_STATUSES,
  type BatchApi,
  type BatchLine,
  type BatchRecord,
  type BatchStamp,
  type BatchStatus,
  type LineState,
  type LineUsage,
  type NativeBatchState,
  type SweepStep,
} from './batch-contract.js';

/** A batch or line row as either backend returns it (SQLite numbers, PostgreSQL BIGINT strings): read one way. */
export type Row = Record<string, unknown>;

/** The statuses of a batch still running, as an SQL list (`status IN (…)`). */
export const ACTIVE_SQL = ACTIVE_BATCH_STATUSES.map((s) => `'${s}'`).join(', ');

/** A line's stored bytes: its request, answer and error (what the sweep of ended batches counts). */
export const LINE_SIZE_SQL =
  'octet_length(body) + coalesce(octet_length(response), 0) + coalesce(octet_length(error), 0)';

/** The column each outcome state counts in. */
export const COUNT_COLUMN: Record<Exclude<LineState, 'pending'>, string> = {
  succeeded: 'succeeded',
  errored: 'errored',
  canceled: 'canceled',
  expired: 'expired',
};

/** The column of each field of a batch's stamp. */
export const STAMP_COLUMNS: Record<keyof BatchStamp, string> = {
  inProgressMs: 'in_progress_ms',
  finalizingMs: 'finalizing_ms',
  completedMs: 'completed_ms',
  failedMs: 'failed_ms',
  expiredMs: 'expired_ms',
  cancellingMs: 'cancelling_ms',
  cancelledMs: 'cancelled_ms',
  outputFileId: 'output_file_id',
  errorFileId: 'error_file_id',
  errors: 'errors',
  model: 'model',
  linesUntilMs: 'lines_until_ms',
};

function num(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function recordOf(row: Row): BatchRecord {
  return {
    id: row.id as string,
    owner: row.owner as string,
    principal: row.principal as string,
    api: row.api as BatchApi,
    endpoint: row.endpoint as string,
    inputFileId: str(row.input_file_id),
    completionWindow: row.completion_window as string,
    metadata: typeof row.metadata === 'string' ? (JSON.parse(row.metadata) as Record<string, string>) : null,
    status: row.status as BatchStatus,
    counts: {
      total: Number(row.total),
      succeeded: Number(row.succeeded),
      errored: Number(row.errored),
      canceled: Number(row.canceled),
      expired: Number(row.expired),
    },
    errors: typeof row.errors === 'string' ? (JSON.parse(row.errors) as BatchRecord['errors']) : null,
    outputFileId: str(row.output_file_id),
    errorFileId: str(row.error_file_id),
    createdMs: Number(row.created_ms),
    expiresMs: Number(row.expires_ms),
    inProgressMs: num(row.in_progress_ms),
    finalizingMs: num(row.finalizing_ms),
    completedMs: num(row.completed_ms),
    failedMs: num(row.failed_ms),
    expiredMs: num(row.expired_ms),
    cancellingMs: num(row.cancelling_ms),
    cancelledMs: num(row.cancelled_ms),
    outputTtlSeconds: num(row.output_ttl_s),
    model: str(row.model),
    usage: {
      lines: Number(row.usage_lines ?? 0),
      input: Number(row.input_tokens ?? 0),
      cached: Number(row.cached_tokens ?? 0),
      output: Number(row.output_tokens ?? 0),
      reasoning: Number(row.reasoning_tokens ?? 0),
      total: Number(row.total_tokens ?? 0),
    },
    linesUntilMs: num(row.lines_until_ms),
    resultsUntilMs: num(row.results_until_ms),
  };
}

/** A line's usage as the values both stores add to the batch's columns (lines … total), or zeros without one. */
export function usageValuesOf(usage: LineUsage | undefined): [number, number, number, number, number, number] {
  if (!usage) return [0, 0, 0, 0, 0, 0];
  return [1, usage.input, usage.cached, usage.output, usage.reasoning, usage.total];
}

export function lineOf(row: Row): BatchLine {
  return {
    index: Number(row.idx),
    customId: row.custom_id as string,
    url: row.url as string,
    body: row.body as string,
    state: row.state as LineState,
    statusCode: num(row.status_code),
    response: str(row.response),
    requestId: str(row.request_id),
    error: str(row.error),
    attempts: Number(row.attempts),
  };
}

/** A new batch's values in the order of both stores' INSERT columns (id … model, results_until_ms). */
export function insertValuesOf(batch: BatchRecord): Array<string | number | null> {
  return [
    batch.id,
    batch.owner,
    batch.principal,
    batch.api,
    batch.endpoint,
    batch.inputFileId,
    batch.completionWindow,
    batch.metadata === null ? null : JSON.stringify(batch.metadata),
    batch.status,
    batch.counts.total,
    batch.createdMs,
    batch.expiresMs,
    batch.outputTtlSeconds,
    batch.model,
    batch.resultsUntilMs,
  ];
}

/** A `batch_native` row's values, in column order after the batch id (SQLite and PostgreSQL alike). */
export function nativeValuesOf(state: NativeBatchState): Array<string | null> {
  return [state.mode, state.upstream, state.phase, state.upstreamFileId, state.upstreamBatchId, state.reason];
}

/** A `batch_native` row as the contract's state. */
export function nativeStateOf(row: Row): NativeBatchState {
  return {
    mode: row.mode === 'native' ? 'native' : 'gateway',
    upstream: str(row.upstream),
    phase: row.phase === 'submitted' || row.phase === 'collected' ? row.phase : 'decided',
    upstreamFileId: str(row.upstream_file_id),
    upstreamBatchId: str(row.upstream_batch_id),
    reason: str(row.reason),
  };
}

/**
 * What is left of one sweep step (`sweepCreates`, `sweepEndedLines`) as both stores walk it, one batch at a time:
 * `over` gives each batch with the lines and bytes still allowed, and stops once either is spent; `took` counts
 * the lines a batch's statement removed (each row with its `bytes`).
 */
export class SweepBudget {
  lines = 0;
  private bytes = 0;

  constructor(private readonly step: SweepStep) {}

  *over(ids: readonly string[]): Generator<[id: string, lines: number, bytes: number]> {
    for (const id of ids) {
      const lines = this.step.lines - this.lines;
      if (lines <= 0 || this.bytes >= this.step.bytes) return;
      yield [id, lines, this.step.bytes - this.bytes];
    }
  }

  took(removed: readonly Row[]): void {
    this.lines += removed.length;
    for (const row of removed) this.bytes += Number(row.bytes);
  }
}
