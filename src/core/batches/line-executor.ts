import type { CallAs } from '../pipeline/call-as.js';
import type { LineExecutor } from './batch-backend.js';
import { lineUsageOf, lineUsageOfAnswer } from './batch-usage.js';

/**
 * Runs a batch's line as a call of the batch's owner through `callAs` (the gateway's own request pipeline: every
 * protection of an interactive call applies to each line), its answer typed from the pipeline's own values: the
 * error code, the usage it settled, Retry-After and the binding rate limit as numbers.
 */
export function lineExecutorOf(callAs: CallAs): LineExecutor {
  return async function executeLine(batch, line) {
    const result = await callAs({ owner: batch.owner, principal: batch.principal }, { url: line.url, body: line.body });
    // An answer from the response cache settled no usage: its figures are the cached call's, as the answer shows.
    const usage = result.cacheHit ? lineUsageOfAnswer(batch.endpoint, result.body) : lineUsageOf(result.usage);
    return {
      status: result.status,
      body: result.body,
      requestId: result.requestId,
      ...(result.code !== undefined ? { code: result.code } : {}),
      ...(usage ? { usage } : {}),
      ...(result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
      // The window's reset in whole seconds, as RateLimit-Reset says it (the pacing of the lines stays what it was).
      ...(result.rate ? { rate: { ...result.rate, resetMs: Math.ceil(result.rate.resetMs / 1000) * 1000 } } : {}),
    };
  };
}
