/**
 * A real node:http server speaking Anthropic's API on the wire, every part of it the gateway calls:
 * - Messages: `POST /v1/messages` (JSON, or SSE with `event:` lines when `stream: true`), scripted per call
 *   (`enqueue`); event payloads follow the documented examples (https://docs.anthropic.com/en/api/messages-streaming),
 *   spacing included, so the gateway's translation is tested against what the provider sends, not our own idea.
 * - `POST /v1/messages/count_tokens` (a fixed 42 per message), `GET /v1/models`.
 * - Message Batches (https://docs.anthropic.com/en/api/creating-message-batches and the pages after it):
 *   `POST /v1/messages/batches` with `{requests: [{custom_id, params}]}` (custom ids checked against
 *   `^[a-zA-Z0-9_-]{1,64}$`, `stream` refused in params), `GET /v1/messages/batches/{id}` (a MessageBatch:
 *   `processing_status` in_progress | canceling | ended and its `request_counts`), `POST .../{id}/cancel`,
 *   `GET .../{id}/results` (JSONL of `{custom_id, result}`). A batch stays `in_progress` for `pollsBeforeDone`
 *   reads, then ends: each request answered with a message, a request whose last message says `ERR` errored
 *   (invalid_request_error), one that says `EXPIRE` expired. A cancel makes it `canceling`; the next read ends it
 *   with the first `answeredBeforeCancel` requests answered and the rest canceled.
 * Anthropic's error body and its required headers (`x-api-key` when a key is required, `anthropic-version`).
 * With `promptCache: true`, Messages with nothing queued are answered by a prompt cache that works as Anthropic's
 * does (anthropic/prompt-cache.ts), its usage measured per call in `promptCache.usages`.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';
import { PromptCache } from './anthropic/prompt-cache.js';

export type { CacheUsage, PromptCache } from './anthropic/prompt-cache.js';

/** A request as the mock received it (`url`: path and query). */
export type AnthropicRecorded = RecordedHttpRequest;

export type AnthropicBehavior =
  /**
   * A complete answer: text, or a tool_use block when the request has tools (unless `text` is given); with
   * `container`, the code-execution container it ran in (`container: {id, expires_at}`, as Anthropic answers).
   */
  | { kind: 'message'; text?: string; stopReason?: string; container?: string }
  /** A stream of `text` pieces (or a tool_use streamed as input_json_delta pieces when the request has tools); `container` in message_delta. */
  | { kind: 'stream'; text?: string[]; cutBeforeStop?: boolean; errorAfter?: number; container?: string }
  /** An HTTP error in Anthropic's `{type:"error", error:{type, message}}` shape. */
  | { kind: 'error'; status: number; type: string; message: string; headers?: Record<string, string> }
  /** A stream of exactly these SSE frames (each one write), then the end: for hostile streams. */
  | { kind: 'raw'; frames: string[] }
  /** A 200 JSON answer of this body (JSON-encoded; a string written as it is, so `1e400` can be sent): for hostile answers. */
  | { kind: 'json'; body: unknown };

export interface AnthropicUpstream {
  baseUrl: string;
  requests: AnthropicRecorded[];
  messageRequests(): AnthropicRecorded[];
  /** The requests of this method whose path and query start with `prefix`. */
  of(method: string, prefix: string): AnthropicRecorded[];
  /** The Message Batches API's batches (by id) and its options. */
  batches: AnthropicBatches;
  /** The prompt cache answering Messages when started with `promptCache: true` (its usages, knobs, `clear()`). */
  promptCache: PromptCache;
  /**
   * When set, answers `POST /v1/messages` and `/v1/messages/count_tokens` when the queue is empty, by the path and
   * parsed body, before the mock's own answer (undefined: that); for raw answers.
   */
  respond: ((path: string, body: Record<string, unknown>) => AnthropicBehavior | undefined) | undefined;
  enqueue(...behaviors: AnthropicBehavior[]): void;
  /** Forgets the requests, the queue and the batches; the batch options back to the start's. */
  reset(): void;
  close(): Promise<void>;
}

export interface AnthropicUpstreamOptions {
  /** The key the mock requires in `x-api-key` (401 otherwise). */
  requiredKey?: string;
  /** How the Message Batches API behaves (default: a batch ends on its second read). */
  batches?: AnthropicBatchOptions;
  /** Messages with nothing queued are answered by the prompt cache (`promptCache`) instead of the fixed answer. */
  promptCache?: boolean;
}

export const ANTHROPIC_MOCK_ID = 'msg_013Zva2CMHLNnXjNJJKqJ2EF';
export const ANTHROPIC_TOOL_ID = 'toolu_01T1x1fJ34qAmk2tNTrN7Up6';

function sse(res: ServerResponse, event: string, data: string): void {
  res.write(`event: ${event}\ndata: ${data}\n\n`);
}

function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

export async function startAnthropicUpstream(options: AnthropicUpstreamOptions = {}): Promise<AnthropicUpstream> {
  let queue: AnthropicBehavior[] = [];
  const batches = new AnthropicBatches(options.batches ?? { pollsBeforeDone: 1 });
  const promptCache = new PromptCache();
  const server = await startRecordingServer((req, res) => {
    // The path without a query: Anthropic's SDK beta client adds `?beta=true`, which the API takes.
    const path = req.url.split('?')[0] ?? '';
    const body = req.body;
    if (options.requiredKey !== undefined && req.headers['x-api-key'] !== options.requiredKey) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(errorBody('authentication_error', 'invalid x-api-key'));
      return;
    }
    if (!req.headers['anthropic-version']) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(errorBody('invalid_request_error', 'anthropic-version: header is required'));
      return;
    }
    if (batches.handle(req, path, res)) return;
    const modelCall = req.method === 'POST' && (path === '/v1/messages' || path === '/v1/messages/count_tokens');
    const responded = modelCall && body && queue.length === 0 ? upstream.respond?.(path, body) : undefined;
    if (responded && body) return answer(res, body, responded);
    if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          data: [
            {
              type: 'model',
              id: 'claude-haiku-4-5',
              display_name: 'Claude Haiku 4.5',
              created_at: '2025-10-01T00:00:00Z',
            },
          ],
          has_more: false,
          first_id: 'claude-haiku-4-5',
          last_id: 'claude-haiku-4-5',
        }),
      );
      return;
    }
    if (req.method === 'POST' && path === '/v1/messages/count_tokens' && body) {
      // Anthropic's count: a fixed 42 per message, so a test can tell it from the gateway's own estimate.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 42 * (Array.isArray(body.messages) ? body.messages.length : 0) }));
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages' || !body) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(errorBody('not_found_error', 'Not found'));
      return;
    }
    const queued = queue.shift();
    if (!queued && options.promptCache) return promptCache.answer(body, res);
    answer(res, body, queued ?? (body.stream === true ? { kind: 'stream' } : { kind: 'message' }));
  });
  batches.origin = server.origin;
  const upstream: AnthropicUpstream = {
    baseUrl: `${server.origin}/v1`,
    requests: server.requests,
    messageRequests: () => server.requests.filter((r) => r.url.split('?')[0] === '/v1/messages'),
    of: (method, prefix) => server.requests.filter((r) => r.method === method && r.url.startsWith(prefix)),
    batches,
    promptCache,
    respond: undefined,
    enqueue: (...behaviors) => queue.push(...behaviors),
    reset() {
      upstream.respond = undefined;
      server.requests.length = 0;
      queue = [];
      batches.reset();
      promptCache.reset();
    },
    close: () => server.close(),
  };
  return upstream;
}

function answer(res: ServerResponse, body: Record<string, unknown>, behavior: AnthropicBehavior): void {
  const model = String(body.model ?? 'claude');
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (behavior.kind === 'error') {
    res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers });
    res.end(errorBody(behavior.type, behavior.message));
    return;
  }
  if (behavior.kind === 'json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(typeof behavior.body === 'string' ? behavior.body : JSON.stringify(behavior.body));
    return;
  }
  if (behavior.kind === 'raw') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const frame of behavior.frames) res.write(frame);
    res.end();
    return;
  }
  if (behavior.kind === 'message') {
    const useTool = withTools && behavior.text === undefined;
    const content = useTool
      ? [
          { type: 'text', text: "I'll check the weather." },
          { type: 'tool_use', id: ANTHROPIC_TOOL_ID, name: 'get_weather', input: { location: 'Paris' } },
        ]
      : [{ type: 'text', text: behavior.text ?? 'Hello from Claude' }];
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_mock' });
    res.end(
      JSON.stringify({
        id: ANTHROPIC_MOCK_ID,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: behavior.stopReason ?? (useTool ? 'tool_use' : 'end_turn'),
        stop_sequence: null,
        usage: { input_tokens: 2095, output_tokens: 503 },
        ...(behavior.container ? { container: { id: behavior.container, expires_at: '2030-01-01T00:00:00Z' } } : {}),
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(
    res,
    'message_start',
    `{"type": "message_start", "message": {"id": "${ANTHROPIC_MOCK_ID}", "type": "message", "role": "assistant", "content": [], "model": "${model}", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}`,
  );
  const useTool = withTools && behavior.text === undefined;
  let sent = 0;
  const maybeFail = (): boolean => {
    sent += 1;
    if (behavior.errorAfter !== undefined && sent > behavior.errorAfter) {
      sse(res, 'error', '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}');
      res.end();
      return true;
    }
    return false;
  };
  if (useTool) {
    sse(
      res,
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    );
    sse(
      res,
      'content_block_delta',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}',
    );
    sse(res, 'content_block_stop', '{"type":"content_block_stop","index":0}');
    sse(
      res,
      'content_block_start',
      `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"${ANTHROPIC_TOOL_ID}","name":"get_weather","input":{}}}`,
    );
    for (const piece of ['', '{"location":', ' "Paris"}']) {
      if (maybeFail()) return;
      sse(
        res,
        'content_block_delta',
        JSON.stringify({
          type: 'content_block_delta',
          index: 1,
          delta: { type: 'input_json_delta', partial_json: piece },
        }),
      );
    }
    sse(res, 'content_block_stop', '{"type":"content_block_stop","index":1}');
  } else {
    sse(
      res,
      'content_block_start',
      '{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}',
    );
    sse(res, 'ping', '{"type": "ping"}');
    for (const piece of behavior.text ?? ['Hello', ' from', ' Claude']) {
      if (maybeFail()) return;
      sse(
        res,
        'content_block_delta',
        JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }),
      );
    }
    sse(res, 'content_block_stop', '{"type": "content_block_stop", "index": 0}');
  }
  const container = behavior.container
    ? `, "container": {"id": "${behavior.container}", "expires_at": "2030-01-01T00:00:00Z"}`
    : '';
  sse(
    res,
    'message_delta',
    `{"type": "message_delta", "delta": {"stop_reason": "${useTool ? 'tool_use' : 'end_turn'}", "stop_sequence":null${container}}, "usage": {"output_tokens": 15}}`,
  );
  if (behavior.cutBeforeStop) {
    res.end();
    return;
  }
  sse(res, 'message_stop', '{"type": "message_stop"}');
  res.end();
}

// Message Batches

export interface AnthropicBatchOptions {
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
}

interface BatchRequest {
  custom_id: string;
  params: Record<string, unknown>;
}

export interface AnthropicBatch {
  id: string;
  requests: BatchRequest[];
  status: 'in_progress' | 'canceling' | 'ended';
  reads: number;
  results: Array<{ custom_id: string; result: Record<string, unknown> }>;
  cancelled: boolean;
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

function messageOf(request: BatchRequest, options: AnthropicBatchOptions) {
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

function resultOf(request: BatchRequest, options: AnthropicBatchOptions): Record<string, unknown> {
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
function view(batch: AnthropicBatch, origin: string) {
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

/** The Message Batches API of the mock: its batches by id, and `options`, which a test may change between calls. */
export class AnthropicBatches extends Map<string, AnthropicBatch> {
  options: AnthropicBatchOptions;
  /** The server's origin, for `results_url`. */
  origin = '';
  private counter = 0;

  constructor(private readonly initial: AnthropicBatchOptions) {
    super();
    this.options = { ...initial };
  }

  reset(): void {
    this.clear();
    this.options = { ...this.initial };
  }

  /** Answers a Message Batches request; false when the request is not one (the mock's other routes then). */
  handle(request: RecordedHttpRequest, path: string, res: ServerResponse): boolean {
    const { options } = this;
    if (request.method === 'POST' && path === '/v1/messages/batches') {
      if (options.createStatus !== undefined) {
        error(
          res,
          options.createStatus,
          options.createStatus === 413 ? 'request_too_large' : 'permission_error',
          'this batch is not accepted',
        );
        return true;
      }
      const problem = invalidCreate(request.body);
      if (problem) {
        error(res, 400, 'invalid_request_error', problem);
        return true;
      }
      const id = `msgbatch_01mock${String(++this.counter).padStart(6, '0')}`;
      const batch: AnthropicBatch = {
        id,
        requests: request.body?.requests as BatchRequest[],
        status: 'in_progress',
        reads: 0,
        results: [],
        cancelled: false,
      };
      this.set(id, batch);
      send(res, 200, view(batch, this.origin));
      return true;
    }
    const match = /^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(path);
    if (!match) return false;
    const batch = this.get(decodeURIComponent(match[1] ?? ''));
    if (!batch) {
      error(res, 404, 'not_found_error', 'message batch not found');
      return true;
    }
    if (match[2] === '/cancel' && request.method === 'POST') {
      if (batch.status === 'in_progress') {
        batch.status = 'canceling';
        batch.cancelled = true;
      }
      send(res, 200, view(batch, this.origin));
      return true;
    }
    if (match[2] === '/results' && request.method === 'GET') {
      if (batch.status !== 'ended') {
        error(res, 400, 'invalid_request_error', 'the batch is still processing; results are not ready');
        return true;
      }
      res.writeHead(200, { 'content-type': 'application/binary', 'request-id': 'req_mock_results' });
      res.end(options.rawResults ?? batch.results.map((r) => `${JSON.stringify(r)}\n`).join(''));
      return true;
    }
    if (!match[2] && request.method === 'GET') {
      batch.reads += 1;
      if (batch.status === 'canceling') this.end(batch);
      else if (batch.status === 'in_progress' && batch.reads > options.pollsBeforeDone) this.end(batch);
      send(res, 200, view(batch, this.origin));
      return true;
    }
    return false;
  }

  private end(batch: AnthropicBatch): void {
    const { options } = this;
    const answered = batch.cancelled ? (options.answeredBeforeCancel ?? 0) : batch.requests.length;
    batch.results = batch.requests.map((r, i) => ({
      custom_id: r.custom_id,
      result: i < answered ? resultOf(r, options) : { type: 'canceled' },
    }));
    batch.status = 'ended';
  }
}
