/**
 * A real node:http server speaking Anthropic's Message Batches API on the wire (https://docs.anthropic.com/en/api/
 * creating-message-batches and the pages after it): `POST /v1/messages/batches` with `{requests: [{custom_id,
 * params}]}` (custom ids checked against `^[a-zA-Z0-9_-]{1,64}$`, `stream` refused in params), `GET
 * /v1/messages/batches/{id}` (a MessageBatch: `processing_status` in_progress | canceling | ended and its
 * `request_counts`), `POST .../{id}/cancel`, `GET .../{id}/results` (JSONL of `{custom_id, result}`), Anthropic's
 * error body and its required headers (`x-api-key`, `anthropic-version`). A batch stays `in_progress` for
 * `pollsBeforeDone` reads, then ends: each request answered with a message, a request whose last message says `ERR`
 * errored (invalid_request_error), one that says `EXPIRE` expired. A cancel makes it `canceling`; the next read ends
 * it with the first `answeredBeforeCancel` requests answered and the rest canceled. `POST /v1/messages` answers too,
 * so a batch the gateway runs itself is seen call by call.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';

export interface MockAnthropicBatchOptions {
  /** Batch reads answered `in_progress` before it ends (Infinity: until cancelled). */
  pollsBeforeDone: number;
  /** The create answers this status with Anthropic's error body (a refusal). */
  createStatus?: number;
  /** The requests a cancelled batch still answered (the rest are canceled). */
  answeredBeforeCancel?: number;
  /** The results as written (raw JSONL text) replace the generated ones: hostile results. */
  rawResults?: string;
  /** Usage of each answer. */
  usage?: Record<string, unknown>;
  /** The key the mock requires in `x-api-key`. */
  requiredKey?: string;
}

interface BatchRequest {
  custom_id: string;
  params: Record<string, unknown>;
}

export interface MockAnthropicBatch {
  id: string;
  requests: BatchRequest[];
  status: 'in_progress' | 'canceling' | 'ended';
  reads: number;
  results: Array<{ custom_id: string; result: Record<string, unknown> }>;
  cancelled: boolean;
}

export interface MockAnthropicBatches {
  baseUrl: string;
  requests: RecordedHttpRequest[];
  options: MockAnthropicBatchOptions;
  batches: Map<string, MockAnthropicBatch>;
  of(method: string, prefix: string): RecordedHttpRequest[];
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_mock_batches' });
  res.end(JSON.stringify(body));
}

function error(res: ServerResponse, status: number, type: string, message: string): void {
  send(res, status, { type: 'error', error: { type, message }, request_id: 'req_mock_batches' });
}

/** The text of a request's last message (a string, or its text blocks joined). */
function lastText(params: Record<string, unknown>): string {
  const messages = Array.isArray(params.messages) ? (params.messages as Array<{ content?: unknown }>) : [];
  const content = messages.at(-1)?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Array<{ text?: unknown }>).map((b) => (typeof b.text === 'string' ? b.text : '')).join('');
}

function messageOf(request: BatchRequest, options: MockAnthropicBatchOptions) {
  return {
    id: `msg_${request.custom_id}`,
    type: 'message',
    role: 'assistant',
    model: request.params.model,
    content: [{ type: 'text', text: `answer to ${lastText(request.params)}` }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: options.usage ?? { input_tokens: 10, output_tokens: 20 },
  };
}

function resultOf(request: BatchRequest, options: MockAnthropicBatchOptions): Record<string, unknown> {
  const text = lastText(request.params);
  if (text === 'ERR')
    return {
      type: 'errored',
      error: {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'messages: the last message is not acceptable' },
        request_id: `req_${request.custom_id}`,
      },
    };
  if (text === 'EXPIRE') return { type: 'expired' };
  return { type: 'succeeded', message: messageOf(request, options) };
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', '.100435Z');
}

/** A MessageBatch object as Anthropic's API answers it. */
function view(batch: MockAnthropicBatch, origin: string) {
  const count = (type: string) => batch.results.filter((r) => r.result.type === type).length;
  const ended = batch.status === 'ended';
  return {
    id: batch.id,
    type: 'message_batch',
    processing_status: batch.status,
    request_counts: {
      processing: ended ? 0 : batch.requests.length,
      succeeded: count('succeeded'),
      errored: count('errored'),
      canceled: count('canceled'),
      expired: count('expired'),
    },
    ended_at: ended ? iso(1_724_180_000) : null,
    created_at: iso(1_724_170_000),
    expires_at: iso(1_724_256_400),
    archived_at: null,
    cancel_initiated_at: batch.cancelled ? iso(1_724_175_000) : null,
    results_url: ended ? `${origin}/v1/messages/batches/${batch.id}/results` : null,
  };
}

/** A create body's problem, as Anthropic's validation would name it, or undefined. */
function invalidCreate(body: Record<string, unknown> | undefined): string | undefined {
  const requests = body?.requests;
  if (!Array.isArray(requests) || requests.length === 0) return 'requests: a non-empty list is required';
  const seen = new Set<string>();
  for (const [i, r] of (requests as Array<Partial<BatchRequest>>).entries()) {
    if (typeof r.custom_id !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(r.custom_id))
      return `requests.${i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    if (seen.has(r.custom_id)) return `requests.${i}.custom_id: duplicate custom_id`;
    seen.add(r.custom_id);
    const params = r.params;
    if (typeof params?.model !== 'string') return `requests.${i}.params.model: Field required`;
    if (typeof params.max_tokens !== 'number') return `requests.${i}.params.max_tokens: Field required`;
    if ('stream' in params) return `requests.${i}.params.stream: Extra inputs are not permitted`;
  }
  return undefined;
}

export async function startMockAnthropicBatches(
  initial: MockAnthropicBatchOptions = { pollsBeforeDone: 1 },
): Promise<MockAnthropicBatches> {
  const batches = new Map<string, MockAnthropicBatch>();
  const mock = { options: { ...initial } } as MockAnthropicBatches;
  let counter = 0;
  const end = (batch: MockAnthropicBatch) => {
    const { options } = mock;
    const answered = batch.cancelled ? (options.answeredBeforeCancel ?? 0) : batch.requests.length;
    batch.results = batch.requests.map((r, i) => ({
      custom_id: r.custom_id,
      result: i < answered ? resultOf(r, options) : { type: 'canceled' },
    }));
    batch.status = 'ended';
  };
  let origin = '';
  const server = await startRecordingServer((request, res) => {
    const path = request.url.split('?')[0] ?? '';
    const { options } = mock;
    const key = request.headers['x-api-key'];
    if (typeof key !== 'string' || (options.requiredKey !== undefined && key !== options.requiredKey))
      return error(res, 401, 'authentication_error', 'invalid x-api-key');
    if (request.headers['anthropic-version'] !== '2023-06-01')
      return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (request.method === 'POST' && path === '/v1/messages/batches') {
      if (options.createStatus !== undefined)
        return error(
          res,
          options.createStatus,
          options.createStatus === 413 ? 'request_too_large' : 'permission_error',
          'this batch is not accepted',
        );
      const problem = invalidCreate(request.body);
      if (problem) return error(res, 400, 'invalid_request_error', problem);
      const id = `msgbatch_01mock${String(++counter).padStart(6, '0')}`;
      const batch: MockAnthropicBatch = {
        id,
        requests: request.body?.requests as BatchRequest[],
        status: 'in_progress',
        reads: 0,
        results: [],
        cancelled: false,
      };
      batches.set(id, batch);
      return send(res, 200, view(batch, origin));
    }
    const match = /^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(path);
    const batch = match ? batches.get(decodeURIComponent(match[1] ?? '')) : undefined;
    if (match && !batch) return error(res, 404, 'not_found_error', 'message batch not found');
    if (batch && match?.[2] === '/cancel' && request.method === 'POST') {
      if (batch.status === 'in_progress') {
        batch.status = 'canceling';
        batch.cancelled = true;
      }
      return send(res, 200, view(batch, origin));
    }
    if (batch && match?.[2] === '/results' && request.method === 'GET') {
      if (batch.status !== 'ended')
        return error(res, 400, 'invalid_request_error', 'the batch is still processing; results are not ready');
      res.writeHead(200, { 'content-type': 'application/binary', 'request-id': 'req_mock_results' });
      return void res.end(options.rawResults ?? batch.results.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    if (batch && !match?.[2] && request.method === 'GET') {
      batch.reads += 1;
      if (batch.status === 'canceling') end(batch);
      else if (batch.status === 'in_progress' && batch.reads > options.pollsBeforeDone) end(batch);
      return send(res, 200, view(batch, origin));
    }
    if (request.method === 'POST' && path === '/v1/messages') {
      const params = (request.body ?? {}) as Record<string, unknown>;
      return send(res, 200, messageOf({ custom_id: `live_${++counter}`, params }, options));
    }
    if (request.method === 'GET' && path === '/v1/models')
      return send(res, 200, { data: [], has_more: false, first_id: null, last_id: null });
    return error(res, 404, 'not_found_error', `no route ${request.method} ${path}`);
  });
  origin = server.origin;
  return Object.assign(mock, {
    baseUrl: `${server.origin}/v1`,
    requests: server.requests,
    batches,
    of: (method: string, prefix: string) =>
      server.requests.filter((r) => r.method === method && r.url.startsWith(prefix)),
    close: () => server.close(),
  });
}
