import type { BatchRecord, BatchUsage } from '../store/batch-contract.js';

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** OpenAI's Batch object (openai SDK `Batch`): times in Unix seconds, null where a step has not happened. */
export function openAiBatch(batch: BatchRecord): Record<string, unknown> {
  const { counts } = batch;
  return {
    id: batch.id,
    object: 'batch',
    endpoint: batch.endpoint,
    errors: batch.errors
      ? {
          object: 'list',
          data: batch.errors.map((e) => ({
            code: e.code,
            message: e.message,
            param: e.param ?? null,
            line: e.line ?? null,
          })),
        }
      : null,
    input_file_id: batch.inputFileId,
    completion_window: batch.completionWindow,
    status: batch.status,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    created_at: seconds(batch.createdMs),
    in_progress_at: seconds(batch.inProgressMs),
    expires_at: seconds(batch.expiresMs),
    finalizing_at: seconds(batch.finalizingMs),
    completed_at: seconds(batch.completedMs),
    failed_at: seconds(batch.failedMs),
    expired_at: seconds(batch.expiredMs),
    cancelling_at: seconds(batch.cancellingMs),
    cancelled_at: seconds(batch.cancelledMs),
    // Lines never run because the batch was cancelled count in neither (OpenAI's counts do the same).
    request_counts: { total: counts.total, completed: counts.succeeded, failed: counts.errored + counts.expired },
    metadata: batch.metadata,
    // The model every line names; absent when they name several (OpenAI's is optional too).
    ...(batch.model === null ? {} : { model: batch.model }),
    // The succeeded lines' tokens, only when every one of them reported usage (else the sum would be short).
    ...(batch.usage.lines === counts.succeeded ? { usage: openAiUsage(batch.usage) } : {}),
  };
}

/** OpenAI's BatchUsage of a batch's summed usage. */
function openAiUsage(usage: BatchUsage): Record<string, unknown> {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.total,
  };
}

/** When a batch ended (any final status), or null. */
function endedMs(batch: BatchRecord): number | null {
  return batch.completedMs ?? batch.failedMs ?? batch.expiredMs ?? batch.cancelledMs;
}

/**
 * Anthropic's MessageBatch (`@anthropic-ai/sdk` `MessageBatch`): RFC 3339 times, `results_url` once it ended,
 * `archived_at` once its results are no longer kept (the URL then answers `404 batch_results_expired`).
 */
export function anthropicBatch(
  batch: BatchRecord,
  baseUrl: string,
  nowMs: number = Date.now(),
): Record<string, unknown> {
  const { counts } = batch;
  const ended = endedMs(batch);
  const status =
    ended !== null
      ? 'ended'
      : batch.status === 'cancelling' || batch.status === 'cancelled'
        ? 'canceling'
        : 'in_progress';
  return {
    id: batch.id,
    type: 'message_batch',
    processing_status: status,
    request_counts: {
      processing: Math.max(0, counts.total - counts.succeeded - counts.errored - counts.canceled - counts.expired),
      succeeded: counts.succeeded,
      errored: counts.errored,
      canceled: counts.canceled,
      expired: counts.expired,
    },
    ended_at: iso(ended),
    created_at: iso(batch.createdMs),
    expires_at: iso(batch.expiresMs),
    archived_at: batch.resultsUntilMs !== null && nowMs >= batch.resultsUntilMs ? iso(batch.resultsUntilMs) : null,
    cancel_initiated_at: iso(batch.cancellingMs),
    results_url: ended === null ? null : `${baseUrl}/v1/messages/batches/${batch.id}/results`,
  };
}
