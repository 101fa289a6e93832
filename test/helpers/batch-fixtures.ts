/**
 * What the batch tests share: scoped keys made through the admin keys API (two callers, to show one cannot see the
 * other's batches), the config lines that make the runner quick, polling a batch until it ended, reading its
 * result files, and a batch record for the runner's unit tests.
 */
import type { BatchRecord, BatchStore } from '../../src/store/batch-contract.js';
import { freshRecord } from '../../src/core/batches/batch-service.js';
import { toFile, type OpenAI } from 'openai';
import { authHeaders } from './gateway.js';
import { call } from './http.js';
import { captureSecrets } from './capture.js';
import { waitForValue } from './wait.js';

/**
 * An OpenAI batch input of `count` chat lines: line `i` has the custom id `id(i)` and asks `content(i)`
 * (by default its id), so the upstream's requests tell the lines apart.
 */
export function chatBatchLines(count: number, id: (i: number) => string, content: (i: number) => string = id): string {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      custom_id: id(i),
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: content(i) }] },
    }),
  ).join('\n');
}

/** Uploads `jsonl` as a batch input file named `filename` and creates a 24 h chat batch of it. */
export async function createChatBatch(openai: OpenAI, jsonl: string, filename: string): Promise<OpenAI.Batch> {
  const input = await openai.files.create({ file: await toFile(Buffer.from(jsonl), filename), purpose: 'batch' });
  return openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

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
  const spec = { endpoint: '/v1/chat/completions', inputFileId: 'file-x', metadata: null };
  const record = freshRecord('openai', 'alice', '{}', spec, now);
  return { ...record, status: 'in_progress', inProgressMs: now, counts: { ...record.counts, total: counts.total } };
}

/** `store` with some of its methods replaced, the others its own: for tests that delay or break one call. */
export function storeWith(store: BatchStore, replaced: Partial<BatchStore>): BatchStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const own = (replaced as Record<string | symbol, unknown>)[name];
      if (own !== undefined) return own;
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Request `i` of an Anthropic batch create: a Messages body of about 300 bytes, its custom_id `req-<i>`. */
export const anthropicBatchRequest = (i: number) => ({
  custom_id: `req-${i}`,
  params: {
    model: 'gpt-4o-mini',
    max_tokens: 32,
    messages: [{ role: 'user' as const, content: `request ${i}: ${'lorem ipsum dolor sit amet '.repeat(9)}` }],
  },
});
