/**
 * What the batch tests share: scoped keys made through the admin keys API (two callers, to show one cannot see the
 * other's batches), the config lines that make the runner quick, polling a batch until it ended, reading its
 * result files, and a batch record for the runner's unit tests.
 */
import { randomUUID } from 'node:crypto';
import type { BatchRecord } from '../../src/store/batch-contract.js';
import type OpenAI from 'openai';
import { authHeaders } from './gateway.js';
import { call } from './http.js';
import { captureSecrets } from './capture.js';
import { waitForValue } from './wait.js';

/** The runner looks for work every 20 ms in tests (the default is a second). */
export const QUICK_BATCHES = ['batches:', '  poll_ms: 20', '  concurrency: 8'].join('\n');

/** A scoped key with every route a batch needs, made by the admin. */
export async function makeKey(gatewayUrl: string, name: string, models: string[] = ['*']): Promise<string> {
  const answer = await call(`${gatewayUrl}/v1/?route=keys`, {
    method: 'POST',
    headers: authHeaders(),
    disclosesKey: true,
    body: JSON.stringify({ name, models, routes: ['chat', 'messages', 'embeddings', 'responses', 'files', 'batches'] }),
  });
  if (answer.status !== 201) throw new Error(`key not created: ${answer.status} ${answer.text}`);
  const key = answer.json.key as string;
  captureSecrets([key]);
  return key;
}

/** Polls `get` until the status is final (OpenAI's statuses, or Anthropic's `ended`). */
export function untilEnded<T extends { status?: string; processing_status?: string }>(
  what: string,
  get: () => Promise<T>,
  timeoutMs = 20_000,
): Promise<T> {
  return waitForValue(
    what,
    get,
    (b) =>
      b.processing_status === 'ended' ||
      ['completed', 'failed', 'expired', 'cancelled'].includes(b.status ?? 'pending'),
    timeoutMs,
  );
}

/** One line of an OpenAI batch's output or error file. */
export interface BatchResultLine<Body = Record<string, unknown>> {
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: Body } | null;
  error: { code: string; message: string } | null;
}

/** A batch's output or error file, read through the openai SDK, one parsed line each (none: no such file). */
export async function resultLines<Line = BatchResultLine>(
  client: OpenAI,
  fileId: string | null | undefined,
): Promise<Line[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Line);
}

/** A batch in progress owned by `alice` (for the runner and store unit tests). */
export function batchRecord(counts: { total: number }): BatchRecord {
  const now = Date.now();
  return {
    id: `batch_${randomUUID()}`,
    owner: 'alice',
    principal: '{}',
    api: 'openai',
    endpoint: '/v1/chat/completions',
    inputFileId: 'file-x',
    completionWindow: '24h',
    metadata: null,
    status: 'in_progress',
    counts: { total: counts.total, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    errors: null,
    outputFileId: null,
    errorFileId: null,
    createdMs: now,
    expiresMs: now + 86_400_000,
    inProgressMs: now,
    finalizingMs: null,
    completedMs: null,
    failedMs: null,
    expiredMs: null,
    cancellingMs: null,
    cancelledMs: null,
    outputTtlSeconds: null,
    model: null,
    usage: { lines: 0, input: 0, cached: 0, output: 0, reasoning: 0, total: 0 },
  };
}
