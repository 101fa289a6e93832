/**
 * A real node:http server speaking the Gemini API on the wire, every part of it the gateway calls:
 * - `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse` (each event a whole
 *   GenerateContentResponse, CRLF-separated, no end marker: the connection closes), scripted per call (`enqueue`);
 * - `:countTokens`, `:batchEmbedContents`, `GET /v1beta/models`;
 * - the Batch API (`batches`), in the shapes Google's API and its js-genai SDK use:
 *   `POST /v1beta/models/{model}:batchGenerateContent` with `{batch: {displayName, inputConfig: {requests: {requests:
 *   [{request, metadata: {key}}]}}}}` answers a long-running Operation whose `metadata` is the batch (`state:
 *   BATCH_STATE_PENDING`); `GET /v1beta/batches/{id}` answers it RUNNING for `runningPolls` polls, then ended
 *   (`done: true`, the output in `response` and `metadata.output`: `inlinedResponses.inlinedResponses`, or a
 *   `responsesFile` downloaded from `/download/v1beta/files/{id}:download`); `GET /v1beta/batches?pageSize&pageToken`
 *   answers `{operations, nextPageToken}`; `POST /v1beta/batches/{id}:cancel` answers `{}`, and the batch ends
 *   CANCELLED with the answers it had made.
 * Google's error body otherwise. Shapes follow the documented examples.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';

/** A request as the mock received it (`url`: path and query). */
export type GeminiRecorded = RecordedHttpRequest;

export type GeminiBehavior =
  | { kind: 'answer'; text?: string; finishReason?: string }
  | { kind: 'stream'; text?: string[]; cutBeforeFinish?: boolean }
  | { kind: 'blocked'; reason: string }
  | { kind: 'error'; status: number; grpcStatus: string; message: string }
  /** A 200 JSON answer of this body (JSON-encoded; a string written as it is, so `1e400` can be sent): for hostile answers. */
  | { kind: 'json'; body: unknown }
  /** A stream of exactly these events' data (each `data: <text>` event one write), then the end: for hostile streams. */
  | { kind: 'raw-stream'; data: string[] };

export interface GeminiUpstream {
  baseUrl: string;
  requests: GeminiRecorded[];
  generateRequests(): GeminiRecorded[];
  /** The Batch API's batches and the script of the next ones. */
  batches: GeminiBatches;
  /**
   * When set, answers `:generateContent` and `:streamGenerateContent` when the queue is empty, by the path and
   * parsed body, before the mock's own answer (undefined: that); for raw answers.
   */
  respond: ((path: string, body: Record<string, unknown>) => GeminiBehavior | undefined) | undefined;
  enqueue(...behaviors: GeminiBehavior[]): void;
  reset(): void;
  close(): Promise<void>;
}

const USAGE = { promptTokenCount: 8, candidatesTokenCount: 6, totalTokenCount: 14 };

/** What `:countTokens` answers for a request body: a token per 4 characters of its text, plus 1000 (unmistakable). */
export function mockGeminiCount(text: string): number {
  return 1000 + Math.ceil(text.length / 4);
}

function candidate(parts: unknown[], finishReason?: string): Record<string, unknown> {
  return { content: { parts, role: 'model' }, ...(finishReason ? { finishReason } : {}), index: 0 };
}

export interface GeminiUpstreamOptions {
  /** The key the mock requires in `x-goog-api-key` (Google's 400 otherwise). */
  requiredKey?: string;
}

export async function startGeminiUpstream(options: GeminiUpstreamOptions = {}): Promise<GeminiUpstream> {
  let queue: GeminiBehavior[] = [];
  const batches = new GeminiBatches();
  const server = await startRecordingServer((req, res) => {
    const { url, body } = req;
    if (options.requiredKey !== undefined && req.headers['x-goog-api-key'] !== options.requiredKey) {
      return googleError(res, 400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.');
    }
    if (batches.handle(req, res)) return;
    if (req.method === 'GET' && url === '/v1beta/models') {
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      return res.end(
        JSON.stringify({
          models: [{ name: 'models/gemini-2.0-flash', displayName: 'Gemini 2.0 Flash', inputTokenLimit: 1048576 }],
        }),
      );
    }
    const embed = /^\/v1beta\/models\/([^:/]+):batchEmbedContents$/.exec(url);
    if (req.method === 'POST' && embed && body) {
      // One vector per request, 3 numbers (or outputDimensionality), exact in float32: 0.5*(i+1) - 0.25*d.
      const requests = (body.requests as Array<{ outputDimensionality?: number }> | undefined) ?? [];
      const embeddings = requests.map((r, i) => ({
        values: Array.from({ length: r.outputDimensionality ?? 3 }, (_, d) => (i + 1) * 0.5 - d * 0.25),
      }));
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      return res.end(JSON.stringify({ embeddings }));
    }
    if (req.method === 'POST' && /^\/v1beta\/models\/[^:/]+:countTokens$/.test(url) && body) {
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      return res.end(JSON.stringify({ totalTokens: mockGeminiCount(req.text) }));
    }
    const match = /^\/v1beta\/models\/([^:/]+):(generateContent|streamGenerateContent\?alt=sse)$/.exec(url);
    if (req.method !== 'POST' || !match || !body) return googleError(res, 404, 'NOT_FOUND', 'Not found');
    const stream = match[2] !== 'generateContent';
    const responded = queue.length === 0 ? upstream.respond?.(url, body) : undefined;
    const behavior = queue.shift() ?? responded ?? (stream ? { kind: 'stream' } : { kind: 'answer' });
    answer(res, body, behavior, match[1] ?? 'gemini');
  });
  const upstream: GeminiUpstream = {
    baseUrl: `${server.origin}/v1beta`,
    requests: server.requests,
    generateRequests: () =>
      server.requests.filter((r) => r.method === 'POST' && !/:batchGenerateContent$|\/batches\//.test(r.url)),
    batches,
    respond: undefined,
    enqueue: (...behaviors) => queue.push(...behaviors),
    reset() {
      upstream.respond = undefined;
      server.requests.length = 0;
      queue = [];
      batches.reset();
    },
    close: () => server.close(),
  };
  return upstream;
}

function answer(res: ServerResponse, body: Record<string, unknown>, behavior: GeminiBehavior, model: string): void {
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (behavior.kind === 'error') {
    googleError(res, behavior.status, behavior.grpcStatus, behavior.message);
    return;
  }
  if (behavior.kind === 'json') {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(typeof behavior.body === 'string' ? behavior.body : JSON.stringify(behavior.body));
    return;
  }
  if (behavior.kind === 'raw-stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const data of behavior.data) res.write(`data: ${data}\r\n\r\n`);
    res.end();
    return;
  }
  if (behavior.kind === 'blocked') {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(
      JSON.stringify({
        promptFeedback: { blockReason: behavior.reason, safetyRatings: [] },
        usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 },
        modelVersion: model,
      }),
    );
    return;
  }
  const call = { functionCall: { name: 'get_weather', args: { location: 'Paris' } } };
  if (behavior.kind === 'answer') {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    const parts = withTools && behavior.text === undefined ? [call] : [{ text: behavior.text ?? 'Hello from Gemini' }];
    res.end(
      JSON.stringify({
        candidates: [candidate(parts, behavior.finishReason ?? 'STOP')],
        usageMetadata: USAGE,
        modelVersion: model,
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const events: Array<Record<string, unknown>> = [];
  if (withTools && behavior.text === undefined) {
    events.push({ candidates: [candidate([call], 'STOP')], usageMetadata: USAGE, modelVersion: model });
  } else {
    const pieces = behavior.text ?? ['Hello', ' from', ' Gemini'];
    pieces.forEach((text, i) => {
      const last = i === pieces.length - 1;
      events.push({
        candidates: [candidate([{ text }], last && !behavior.cutBeforeFinish ? 'STOP' : undefined)],
        usageMetadata: last ? USAGE : { promptTokenCount: 8, totalTokenCount: 8 },
        modelVersion: model,
      });
    });
  }
  for (const event of events) res.write(`data: ${JSON.stringify(event)}\r\n\r\n`);
  res.end();
}

// The Batch API

const BATCH_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch';
const OUTPUT_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput';

/** How the next batches behave (set before the create; read when each one ends). */
export interface GeminiBatchScript {
  /** GETs answered PENDING / RUNNING before the batch ends (default 1). */
  runningPolls?: number;
  /** How it ends (default BATCH_STATE_SUCCEEDED). FAILED has no output, an `error` instead. */
  end?: 'BATCH_STATE_SUCCEEDED' | 'BATCH_STATE_FAILED' | 'BATCH_STATE_EXPIRED';
  /** The answer item for the request at `position` (default: a text answer with usage). */
  answer?: (request: Record<string, unknown>, position: number) => unknown;
  /** Leave `metadata` out of the answers (Google may). */
  omitMetadata?: boolean;
  /** Answers in reverse order (only matched by key then). */
  reversed?: boolean;
  /** The whole `output` replaced by this (hostile). */
  output?: unknown;
  /** The answers as a responses file (JSONL `{key, response | error}`) instead of inline. */
  asFile?: boolean;
  /** How many answers a cancelled batch had made (default 0). */
  answeredBeforeCancel?: number;
  /** The create refused with this Google error. */
  createError?: { status: number; grpcStatus: string; message: string };
  /** The create answered with exactly this body (hostile). */
  createBody?: unknown;
}

interface MockBatch {
  name: string;
  model: string;
  displayName: string;
  requests: Array<{ request: Record<string, unknown>; metadata?: { key?: string } }>;
  polls: number;
  cancelled: boolean;
  script: GeminiBatchScript;
  createTime: string;
}

/** The default answer to a batch request: its first text echoed, with usage. */
export function mockBatchAnswer(request: Record<string, unknown>, model: string): Record<string, unknown> {
  const contents = request.contents as Array<{ parts?: Array<{ text?: string }> }> | undefined;
  const text = contents?.at(-1)?.parts?.[0]?.text ?? '';
  return {
    candidates: [
      { content: { parts: [{ text: `batch answer to ${text}` }], role: 'model' }, finishReason: 'STOP', index: 0 },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 4, totalTokenCount: 14 },
    modelVersion: model,
    responseId: `resp-${text.replace(/\W/g, '')}`,
  };
}

export class GeminiBatches {
  /** The script of the batches created from now on. */
  script: GeminiBatchScript = {};
  readonly batches = new Map<string, MockBatch>();
  /** The most batches a page of the list holds, whatever pageSize asks (Google caps it too). */
  pageCap = 1000;
  /** Answer `GET /v1beta/batches` with this status and Google's error instead (a Gemini-compatible server without it). */
  listStatus: number | undefined;
  private next = 0;
  private readonly files = new Map<string, string>();

  reset(): void {
    this.script = {};
    this.pageCap = 1000;
    this.listStatus = undefined;
    this.batches.clear();
    this.files.clear();
  }

  /** Answers a Batch API request; false when the request is not one (the mock's other routes then). */
  handle(req: RecordedHttpRequest, res: ServerResponse): boolean {
    const { method, url } = req;
    const create = /^\/v1beta\/models\/([^:/]+):batchGenerateContent$/.exec(url);
    if (method === 'POST' && create) return this.create(req, decodeURIComponent(create[1] ?? ''), res);
    const list = /^\/v1beta\/batches\?(.*)$/.exec(url);
    if (method === 'GET' && list) return this.list(new URLSearchParams(list[1]), res);
    const get = /^\/v1beta\/(batches\/[\w-]+)$/.exec(url);
    if (method === 'GET' && get) return this.get(get[1] ?? '', res);
    const cancel = /^\/v1beta\/(batches\/[\w-]+):cancel$/.exec(url);
    if (method === 'POST' && cancel) {
      const batch = this.batches.get(cancel[1] ?? '');
      if (!batch) return googleError(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
      batch.cancelled = true;
      return json(res, {});
    }
    const download = /^\/download\/v1beta\/(files\/[\w-]+):download\?alt=media$/.exec(url);
    if (method === 'GET' && download) {
      const file = this.files.get(download[1] ?? '');
      if (file === undefined) return googleError(res, 404, 'NOT_FOUND', 'File not found.');
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(file);
      return true;
    }
    return false;
  }

  private create(req: RecordedHttpRequest, model: string, res: ServerResponse): boolean {
    const script = { ...this.script };
    if (script.createError) {
      const { status, grpcStatus, message } = script.createError;
      return googleError(res, status, grpcStatus, message);
    }
    if (script.createBody !== undefined) return json(res, script.createBody);
    const batch = (req.body as { batch?: Record<string, unknown> } | undefined)?.batch;
    const requests = (batch?.inputConfig as { requests?: { requests?: unknown } } | undefined)?.requests?.requests;
    if (typeof batch?.displayName !== 'string' || !Array.isArray(requests) || requests.length === 0)
      return googleError(res, 400, 'INVALID_ARGUMENT', 'batch.display_name and batch.input_config are required.');
    for (const item of requests as Array<{ request?: { contents?: unknown } }>) {
      if (!Array.isArray(item.request?.contents))
        return googleError(res, 400, 'INVALID_ARGUMENT', 'Each request needs contents.');
    }
    this.next += 1;
    const name = `batches/mock${this.next}x${Math.random().toString(36).slice(2, 8)}`;
    const stored: MockBatch = {
      name,
      model: `models/${model}`,
      displayName: batch.displayName,
      requests: requests as MockBatch['requests'],
      polls: 0,
      cancelled: false,
      script,
      createTime: new Date().toISOString(),
    };
    this.batches.set(name, stored);
    return json(res, { name, metadata: this.metadata(stored, 'BATCH_STATE_PENDING') });
  }

  private get(name: string, res: ServerResponse): boolean {
    const batch = this.batches.get(name);
    if (!batch) return googleError(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
    batch.polls += 1;
    return json(res, this.operation(batch));
  }

  private list(query: URLSearchParams, res: ServerResponse): boolean {
    if (this.listStatus !== undefined) return googleError(res, this.listStatus, 'NOT_FOUND', 'Method not found.');
    const size = Math.min(Number(query.get('pageSize') ?? 50), this.pageCap);
    const from = Number(query.get('pageToken') ?? 0);
    const all = [...this.batches.values()].reverse();
    const page = all.slice(from, from + size).map((b) => this.operation(b, false));
    const more = from + size < all.length;
    return json(res, { operations: page, ...(more ? { nextPageToken: String(from + size) } : {}) });
  }

  /** The Operation of a batch as it stands now (`advance`: a poll of the batch itself). */
  private operation(batch: MockBatch, advance = true): Record<string, unknown> {
    const { script } = batch;
    const running = !batch.cancelled && batch.polls <= (script.runningPolls ?? 1);
    if (running || !advance) {
      const state = batch.polls <= 1 ? 'BATCH_STATE_PENDING' : 'BATCH_STATE_RUNNING';
      return { name: batch.name, metadata: this.metadata(batch, running ? state : this.endState(batch)) };
    }
    const state = this.endState(batch);
    if (state === 'BATCH_STATE_FAILED')
      return {
        name: batch.name,
        metadata: this.metadata(batch, state),
        done: true,
        error: { code: 3, message: 'The batch input was invalid: models/x is not supported.' },
      };
    const output = script.output ?? this.output(batch);
    return {
      name: batch.name,
      metadata: { ...this.metadata(batch, state), output },
      done: true,
      response: isObject(output) ? { '@type': OUTPUT_TYPE, ...output } : output,
    };
  }

  private endState(batch: MockBatch): string {
    return batch.cancelled ? 'BATCH_STATE_CANCELLED' : (batch.script.end ?? 'BATCH_STATE_SUCCEEDED');
  }

  private output(batch: MockBatch): Record<string, unknown> {
    const { script } = batch;
    let answered = batch.requests.map((item, position) => ({ item, position }));
    if (batch.cancelled) answered = answered.slice(0, script.answeredBeforeCancel ?? 0);
    if (script.reversed) answered.reverse();
    const items = answered.map(({ item, position }) => {
      const answer = script.answer?.(item.request, position) ?? {
        response: mockBatchAnswer(item.request, batch.model),
      };
      if (script.omitMetadata || !isObject(answer) || 'metadata' in answer) return answer;
      return { ...answer, metadata: item.metadata };
    });
    if (!script.asFile) return { inlinedResponses: { inlinedResponses: items } };
    const file = `files/out${batch.name.slice('batches/'.length)}`;
    this.files.set(
      file,
      items
        .map((item, i) => {
          if (!isObject(item)) return JSON.stringify(item);
          const { metadata, ...rest } = item as { metadata?: { key?: string } };
          return JSON.stringify({ ...(script.omitMetadata ? {} : { key: metadata?.key ?? `k${i}` }), ...rest });
        })
        .join('\n') + '\n',
    );
    return { responsesFile: file };
  }

  private metadata(batch: MockBatch, state: string): Record<string, unknown> {
    const total = String(batch.requests.length);
    return {
      '@type': BATCH_TYPE,
      model: batch.model,
      displayName: batch.displayName,
      createTime: batch.createTime,
      updateTime: new Date().toISOString(),
      batchStats: { requestCount: total, pendingRequestCount: state.endsWith('SUCCEEDED') ? '0' : total },
      state,
      name: batch.name,
    };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function json(res: ServerResponse, body: unknown): true {
  res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(body));
  return true;
}

function googleError(res: ServerResponse, status: number, grpcStatus: string, message: string): true {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify({ error: { code: status, message, status: grpcStatus } }));
  return true;
}
