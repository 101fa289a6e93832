/**
 * A mock OpenAI-compatible upstream for integration tests.
 *
 * It is a real `node:http` server on 127.0.0.1 (random port) that speaks the
 * OpenAI Chat Completions wire format, records every request it receives and
 * can misbehave on demand (stall, reset, malformed SSE, errors, hangs...).
 *
 * Usage:
 * ```ts
 * const mock = await startMockUpstream();
 * mock.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
 * // point the gateway at mock.baseUrl, e.g. http://127.0.0.1:PORT/v1
 * await mock.close();
 * ```
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parseMultipart } from './multipart-form.js';

/** One request as the mock received it. Recorded before any behavior runs. */
export interface RecordedRequest {
  method: string;
  /** Request target as sent, including the query string (e.g. `/v1/chat/completions?x=1`). */
  path: string;
  headers: IncomingHttpHeaders;
  /** Header names and values exactly as they arrived, alternating `[name, value, name, value, ...]`. */
  rawHeaders: string[];
  /** Raw body text (partial if the client went away while sending it). */
  body: string;
  /** The body's bytes exactly as they arrived. */
  bytes: Buffer;
  /** Parsed body, or `undefined` when the body is empty or not JSON. */
  json: unknown;
  /** `Date.now()` when the request headers arrived. */
  receivedAt: number;
  /**
   * Resolves `true` when the connection/request closed before the response
   * finished (client aborted, or the mock itself reset/closed the socket), or
   * `false` when the response finished normally. Never rejects.
   */
  aborted: Promise<boolean>;
}

/** The status line and headers are sent, then these behaviors decide what follows. */
export type Behavior =
  /**
   * A complete JSON response. Default body: a valid `chat.completion` echoing the
   * request model with content "Hello from mock" (or a tool call when the request
   * has `tools`). A string/Uint8Array `body` is sent verbatim; anything else is
   * JSON-encoded. `delayMs` waits before sending anything.
   */
  | { kind: 'json'; status?: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  /** The next `POST /v1/responses` answer (OpenAI's own Responses API), as this JSON body; chat requests skip it. */
  | { kind: 'responses-json'; body: unknown }
  /**
   * An SSE stream: role chunk, one chunk per `content` piece (default
   * `['Hello', ' from', ' mock']`), finish chunk, usage chunk (when the request
   * asked for `stream_options.include_usage` and `usage !== false`), then
   * `data: [DONE]` unless `done === false`. Each event is a separate write,
   * `delayMs` apart. With `tools` in the request and no explicit `content`, a
   * tool call is streamed instead. `chunks` are raw strings written verbatim
   * (one write each) and replace everything else, including `[DONE]`.
   */
  | { kind: 'stream'; chunks?: string[]; content?: string[]; delayMs?: number; done?: boolean; usage?: boolean }
  /** SSE headers + `afterChunks` content chunks, then silence forever (until the client leaves or `close()`). */
  | { kind: 'stall'; afterChunks: number; content?: string[]; delayMs?: number }
  /** SSE headers + `afterChunks` content chunks, then a TCP reset (`socket.resetAndDestroy()`). */
  | { kind: 'reset'; afterChunks: number; content?: string[]; delayMs?: number }
  /** `afterChunks` good chunks, then `data: {not json\n\n`, stays open briefly, ends without `[DONE]`. */
  | { kind: 'malformed'; afterChunks: number; content?: string[]; delayMs?: number }
  /** An HTTP error in OpenAI's `{error:{message,type,param,code}}` shape; 429 adds `retry-after: 1` by default. */
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Accepts the request and never sends headers. */
  | { kind: 'hang' }
  /** Waits `delayMs` before doing anything, then behaves like `then`. */
  | { kind: 'slow-headers'; delayMs: number; then: Behavior }
  /** `afterChunks` good chunks, then an in-stream `data: {"error":{...}}` event and the end (no `[DONE]`). */
  | { kind: 'stream-error-event'; afterChunks: number; content?: string[]; delayMs?: number }
  /** Full control: the request body has already been read and is passed as `body`. */
  | { kind: 'raw'; handler: (req: IncomingMessage, res: ServerResponse, body: string) => void };

/** A running mock upstream. */
export interface MockUpstream {
  /** `http://127.0.0.1:PORT/v1` */
  baseUrl: string;
  port: number;
  /** Every request received (chat completions, model listing, and anything else), in arrival order. */
  requests: RecordedRequest[];
  /** Only the `POST /v1/chat/completions` requests. */
  chatRequests(): RecordedRequest[];
  /**
   * Files uploaded with `POST /v1/files` (multipart, OpenAI's Files API), in order: the form's fields, the file
   * part's exact bytes, and the Authorization header it came with. Answered with OpenAI's file object.
   */
  uploadedFiles: UploadedFile[];
  /**
   * How `DELETE /v1/files/{id}` answers; undefined (the default): OpenAI's `{"id", "object": "file", "deleted":
   * true}` for a file it took and has not deleted yet, else its 404. Ids it deleted are in `deletedFiles`.
   */
  fileDeleteBehavior: Behavior | undefined;
  deletedFiles: string[];
  /** Holds the answers to `POST /v1/files` (the bytes are taken) until the function returned is called. */
  holdFileUploads(): () => void;
  /** Queue behaviors for the next chat requests, in order; when the queue is empty `defaultBehavior` applies. */
  enqueue(...behaviors: Behavior[]): void;
  /** Behavior for chat requests when the queue is empty; initially `{ kind: 'json' }`. */
  defaultBehavior: Behavior;
  /** Served by `GET /v1/models` (and `GET /v1/models/:id`) in OpenAI's list shape. */
  models: Array<{ id: string; owned_by?: string; created?: number }>;
  /** Status for `GET /v1/models`; default 200. Any status >= 400 answers with an OpenAI error body. */
  modelsStatus: number;
  /**
   * When set, requests whose Authorization header is not `Bearer ${requiredKey}`
   * get 401 in OpenAI's error shape, with the presented key masked. Rejected
   * requests are still recorded but do not consume a queued behavior.
   */
  requiredKey: string | undefined;
  /** Sockets currently open to the mock. */
  openConnections(): number;
  /** Clear recorded requests (in place) and the queue; restore default behavior, models, status and key. */
  reset(): void;
  /** Destroy every socket (stalled ones included) and stop the server. Idempotent. */
  close(): Promise<void>;
}

/** A file the mock took on `POST /v1/files`. */
export interface UploadedFile {
  id: string;
  fields: Record<string, string>;
  filename: string | undefined;
  contentType: string | undefined;
  bytes: Buffer;
  authorization: string | undefined;
}

/** Content of the default non-streamed answer. */
export const MOCK_CONTENT = 'Hello from mock';
/** Pieces of the default streamed answer (they assemble to {@link MOCK_CONTENT}). */
export const MOCK_STREAM_CONTENT: readonly string[] = ['Hello', ' from', ' mock'];
/** Arguments of the tool call the mock makes when the request carries `tools`. */
export const MOCK_TOOL_ARGUMENTS = '{"location":"Paris"}';
/** The in-stream error event sent by the `stream-error-event` behavior (without the `data: ` framing). */
export const MOCK_STREAM_ERROR = {
  error: {
    message: 'The server had an error while processing your request.',
    type: 'server_error',
    param: null,
    code: null,
  },
};

const DEFAULT_MODELS: ReadonlyArray<{ id: string; owned_by?: string; created?: number }> = [
  { id: 'gpt-4o-mini', owned_by: 'openai' },
  { id: 'gpt-4o', owned_by: 'openai' },
];
const DEFAULT_MODEL_CREATED = 1_700_000_000;
const MALFORMED_LINGER_MS = 50;
const TOOL_ARGUMENT_FRAGMENTS = ['{"', 'location', '":"', 'Paris', '"}'];

/**
 * Deterministic token count the mock reports in `usage`: `ceil(chars / 4)`.
 * `prompt_tokens` counts the text of all request messages, `completion_tokens`
 * the generated content (or tool name + arguments).
 */
export function mockTokenCount(text: string): number {
  return Math.ceil(text.length / 4);
}

// ---------------------------------------------------------------------------
// Request inspection
// ---------------------------------------------------------------------------

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function requestModel(json: unknown): string {
  return isObject(json) && typeof json.model === 'string' ? json.model : 'mock-model';
}

function wantsUsage(json: unknown): boolean {
  return isObject(json) && isObject(json.stream_options) && json.stream_options.include_usage === true;
}

function messageText(message: unknown): string {
  if (!isObject(message)) return '';
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function promptText(json: unknown): string {
  if (!isObject(json) || !Array.isArray(json.messages)) return '';
  return json.messages.map(messageText).join('');
}

/**
 * Name of the function the mock should call, or undefined for a plain text answer:
 * the request must have `tools`, `tool_choice` must not be "none", and the last
 * message must not already be a tool result (so round trips end in text).
 */
function toolToCall(json: unknown): string | undefined {
  if (!isObject(json) || !Array.isArray(json.tools) || json.tools.length === 0) return undefined;
  if (json.tool_choice === 'none') return undefined;
  const messages = Array.isArray(json.messages) ? (json.messages as unknown[]) : [];
  const last = messages[messages.length - 1];
  if (isObject(last) && last.role === 'tool') return undefined;
  const forced = json.tool_choice;
  if (isObject(forced) && isObject(forced.function) && typeof forced.function.name === 'string') {
    return forced.function.name;
  }
  const first: unknown = json.tools[0];
  if (isObject(first) && isObject(first.function) && typeof first.function.name === 'string') {
    return first.function.name;
  }
  return 'mock_function';
}

function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '');
  return match?.[1]?.trim();
}

/** `sk-abcdefxyz` -> `sk-ab***yz`; short keys are masked entirely. */
function maskKey(key: string): string {
  return key.length < 10 ? '***' : `${key.slice(0, 5)}***${key.slice(-2)}`;
}

// ---------------------------------------------------------------------------
// Wire format builders
// ---------------------------------------------------------------------------

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

function usageFor(json: unknown, completion: string): Usage {
  const prompt = mockTokenCount(promptText(json));
  const done = mockTokenCount(completion);
  return { prompt_tokens: prompt, completion_tokens: done, total_tokens: prompt + done };
}

function openAIError(message: string, type: string, code: string | null, param: string | null = null): JsonObject {
  return { error: { message, type, param, code } };
}

function defaultErrorBody(status: number, json: unknown): JsonObject {
  switch (status) {
    case 400:
      return openAIError('Invalid request from mock upstream.', 'invalid_request_error', 'invalid_request');
    case 401:
      return openAIError('Incorrect API key provided: sk-ab***yz.', 'invalid_request_error', 'invalid_api_key');
    case 403:
      return openAIError('You are not allowed to access this resource.', 'invalid_request_error', 'forbidden');
    case 404:
      return openAIError(
        `The model \`${requestModel(json)}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model_not_found',
      );
    case 429:
      return openAIError('Rate limit reached for requests. Please try again in 1s.', 'requests', 'rate_limit_exceeded');
    case 500:
      return openAIError(
        'The server had an error while processing your request. Sorry about that!',
        'server_error',
        null,
      );
    case 503:
      return openAIError('The engine is currently overloaded, please try again later.', 'server_error', null);
    default:
      return openAIError(
        `Mock upstream error (status ${status}).`,
        status >= 500 ? 'server_error' : 'invalid_request_error',
        null,
      );
  }
}

/** Per-response identity shared by every chunk of one completion. */
interface Completion {
  id: string;
  /** Sent as `x-request-id`, like OpenAI's `req_...` ids. */
  requestId: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

function completionBody(c: Completion, json: unknown): JsonObject {
  const tool = toolToCall(json);
  const message = tool
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: tool, arguments: MOCK_TOOL_ARGUMENTS } }],
      }
    : { role: 'assistant', content: MOCK_CONTENT };
  const completion = tool ? tool + MOCK_TOOL_ARGUMENTS : MOCK_CONTENT;
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: tool ? 'tool_calls' : 'stop' }],
    usage: usageFor(json, completion),
  };
}

function chunkEvent(c: Completion, delta: JsonObject, finishReason: string | null = null): string {
  const chunk: JsonObject = {
    id: c.id,
    object: 'chat.completion.chunk',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  // OpenAI sends "usage": null on every chunk but the last when include_usage is on.
  if (c.includeUsage) chunk.usage = null;
  return sse(chunk);
}

function usageEvent(c: Completion, usage: Usage): string {
  return sse({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices: [], usage });
}

function sse(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

const DONE_EVENT = 'data: [DONE]\n\n';

/** N content chunks; the first also carries the assistant role. Pieces cycle if N exceeds them. */
function contentChunkEvents(c: Completion, n: number, content: readonly string[] | undefined): string[] {
  const pieces = content && content.length > 0 ? content : MOCK_STREAM_CONTENT;
  return Array.from({ length: n }, (_, i) => {
    const piece = pieces[i % pieces.length] ?? '';
    return chunkEvent(c, i === 0 ? { role: 'assistant', content: piece } : { content: piece });
  });
}

function textStreamEvents(c: Completion, pieces: readonly string[]): string[] {
  return [
    chunkEvent(c, { role: 'assistant', content: '' }),
    ...pieces.map((piece) => chunkEvent(c, { content: piece })),
    chunkEvent(c, {}, 'stop'),
  ];
}

function toolStreamEvents(c: Completion, name: string): string[] {
  const head = { index: 0, id: 'call_1', type: 'function', function: { name, arguments: '' } };
  return [
    chunkEvent(c, { role: 'assistant', content: null, tool_calls: [head] }),
    ...TOOL_ARGUMENT_FRAGMENTS.map((args) =>
      chunkEvent(c, { tool_calls: [{ index: 0, function: { arguments: args } }] }),
    ),
    chunkEvent(c, {}, 'tool_calls'),
  ];
}

// ---------------------------------------------------------------------------
// Response plumbing
// ---------------------------------------------------------------------------

/** Everything a behavior needs to answer one request. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  body: string;
  bytes: Buffer;
  json: unknown;
  completion: Completion;
  /** Aborted when the response closes (finished or connection gone). */
  closed: AbortSignal;
}

/** Resolves true after `ms`, or false as soon as the response closes. */
function sleep(ex: Exchange, ms: number): Promise<boolean> {
  if (ex.closed.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      ex.closed.removeEventListener('abort', onClose);
      resolve(true);
    }, ms);
    ex.closed.addEventListener('abort', onClose, { once: true });
  });
}

/** One `res.write`, resolved once handed to the OS; false if the response is gone. */
function write(ex: Exchange, data: string): Promise<boolean> {
  if (ex.closed.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = (): void => resolve(false);
    ex.closed.addEventListener('abort', onClose, { once: true });
    ex.res.write(data, (err) => {
      ex.closed.removeEventListener('abort', onClose);
      resolve(!err && !ex.closed.aborted);
    });
  });
}

/** Writes each string separately, `delayMs` apart. Returns false if the client went away. */
async function writeAll(ex: Exchange, events: readonly string[], delayMs = 0): Promise<boolean> {
  for (const [i, event] of events.entries()) {
    if (i > 0 && !(await sleep(ex, delayMs))) return false;
    if (!(await write(ex, event))) return false;
  }
  return true;
}

function startStream(ex: Exchange): void {
  ex.res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': ex.completion.requestId,
  });
  ex.res.flushHeaders();
}

function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  ex.res.statusCode = status;
  ex.res.setHeader('content-type', 'application/json');
  ex.res.setHeader('x-request-id', ex.completion.requestId);
  for (const [name, value] of Object.entries(headers)) ex.res.setHeader(name, value);
  ex.res.setHeader('content-length', Buffer.byteLength(payload));
  ex.res.end(payload);
}

// ---------------------------------------------------------------------------
// Behaviors (one function each)
// ---------------------------------------------------------------------------

async function behaveJson(ex: Exchange, b: Extract<Behavior, { kind: 'json' }>): Promise<void> {
  if (!(await sleep(ex, b.delayMs ?? 0))) return;
  sendJson(ex, b.status ?? 200, b.body === undefined ? completionBody(ex.completion, ex.json) : b.body, b.headers);
}

async function behaveStream(ex: Exchange, b: Extract<Behavior, { kind: 'stream' }>): Promise<void> {
  startStream(ex);
  const c = ex.completion;
  let events: string[];
  if (b.chunks) {
    events = b.chunks;
  } else {
    const tool = b.content ? undefined : toolToCall(ex.json);
    const pieces = b.content ?? MOCK_STREAM_CONTENT;
    events = tool ? toolStreamEvents(c, tool) : textStreamEvents(c, pieces);
    if (c.includeUsage && b.usage !== false) {
      events.push(usageEvent(c, usageFor(ex.json, tool ? tool + MOCK_TOOL_ARGUMENTS : pieces.join(''))));
    }
    if (b.done !== false) events.push(DONE_EVENT);
  }
  if (await writeAll(ex, events, b.delayMs)) ex.res.end();
}

async function behaveStall(ex: Exchange, b: Extract<Behavior, { kind: 'stall' }>): Promise<void> {
  startStream(ex);
  await writeAll(ex, contentChunkEvents(ex.completion, b.afterChunks, b.content), b.delayMs);
  // ...and nothing more: the response stays open until the client or close() ends it.
}

async function behaveReset(ex: Exchange, b: Extract<Behavior, { kind: 'reset' }>): Promise<void> {
  startStream(ex);
  if (!(await writeAll(ex, contentChunkEvents(ex.completion, b.afterChunks, b.content), b.delayMs))) return;
  ex.res.socket?.resetAndDestroy();
}

async function behaveMalformed(ex: Exchange, b: Extract<Behavior, { kind: 'malformed' }>): Promise<void> {
  startStream(ex);
  const events = [...contentChunkEvents(ex.completion, b.afterChunks, b.content), 'data: {not json\n\n'];
  if (!(await writeAll(ex, events, b.delayMs))) return;
  if (await sleep(ex, MALFORMED_LINGER_MS)) ex.res.end();
}

async function behaveStreamErrorEvent(
  ex: Exchange,
  b: Extract<Behavior, { kind: 'stream-error-event' }>,
): Promise<void> {
  startStream(ex);
  const events = [...contentChunkEvents(ex.completion, b.afterChunks, b.content), sse(MOCK_STREAM_ERROR)];
  if (await writeAll(ex, events, b.delayMs)) ex.res.end();
}

function behaveError(ex: Exchange, b: Extract<Behavior, { kind: 'error' }>): void {
  const headers: Record<string, string> = b.status === 429 ? { 'retry-after': '1' } : {};
  sendJson(ex, b.status, b.body === undefined ? defaultErrorBody(b.status, ex.json) : b.body, {
    ...headers,
    ...b.headers,
  });
}

async function behaveSlowHeaders(ex: Exchange, b: Extract<Behavior, { kind: 'slow-headers' }>): Promise<void> {
  if (await sleep(ex, b.delayMs)) await runBehavior(ex, b.then);
}

function runBehavior(ex: Exchange, b: Behavior): Promise<void> | void {
  switch (b.kind) {
    case 'json':
      return behaveJson(ex, b);
    case 'stream':
      return behaveStream(ex, b);
    case 'stall':
      return behaveStall(ex, b);
    case 'reset':
      return behaveReset(ex, b);
    case 'malformed':
      return behaveMalformed(ex, b);
    case 'error':
      return behaveError(ex, b);
    case 'responses-json':
      // Queued for the Responses API, reached by a chat call: the test's order is wrong, said loudly.
      return sendJson(ex, 500, { error: { message: 'mock: a responses-json answer was queued, a chat call came' } });
    case 'hang':
      return; // never answer; the response closes when the client or close() goes away
    case 'slow-headers':
      return behaveSlowHeaders(ex, b);
    case 'stream-error-event':
      return behaveStreamErrorEvent(ex, b);
    case 'raw':
      return b.handler(ex.req, ex.res, ex.body);
  }
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

/** Reads the whole body; on a client abort resolves with what arrived so far. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    const finish = (): void => resolve(Buffer.concat(parts));
    req.on('data', (part: Buffer) => parts.push(part));
    req.once('end', finish);
    req.once('close', finish);
    req.once('error', finish);
  });
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

class MockUpstreamServer implements MockUpstream {
  readonly requests: RecordedRequest[] = [];
  readonly uploadedFiles: UploadedFile[] = [];
  readonly deletedFiles: string[] = [];
  fileDeleteBehavior: Behavior | undefined;
  private uploadHold: Promise<void> | undefined;
  defaultBehavior: Behavior = { kind: 'json' };
  models: Array<{ id: string; owned_by?: string; created?: number }> = DEFAULT_MODELS.map((m) => ({ ...m }));
  modelsStatus = 200;
  requiredKey: string | undefined;
  baseUrl = '';
  port = 0;

  private readonly queue: Behavior[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  private closing: Promise<void> | undefined;
  private counter = 0;

  constructor(private readonly initialKey: string | undefined) {
    this.requiredKey = initialKey;
    this.server = createServer({ noDelay: true }, (req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
    this.server.keepAliveTimeout = 10_000;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('mock upstream: no TCP address');
    this.port = address.port;
    this.baseUrl = `http://127.0.0.1:${address.port}/v1`;
  }

  chatRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && pathname(r.path) === '/v1/chat/completions');
  }

  enqueue(...behaviors: Behavior[]): void {
    this.queue.push(...behaviors);
  }

  openConnections(): number {
    return this.sockets.size;
  }

  reset(): void {
    this.requests.length = 0;
    this.uploadedFiles.length = 0;
    this.deletedFiles.length = 0;
    this.fileDeleteBehavior = undefined;
    this.queue.length = 0;
    this.defaultBehavior = { kind: 'json' };
    this.models = DEFAULT_MODELS.map((m) => ({ ...m }));
    this.modelsStatus = 200;
    this.requiredKey = this.initialKey;
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      for (const socket of this.sockets) socket.destroy();
    });
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = Date.now();
    const closed = new AbortController();
    const aborted = new Promise<boolean>((resolve) => {
      res.once('close', () => {
        resolve(!res.writableFinished);
        closed.abort();
      });
    });
    const bytes = await readBody(req);
    const body = bytes.toString('utf8');
    const json = parseJson(body);
    this.requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawHeaders: [...req.rawHeaders],
      body,
      bytes,
      json,
      receivedAt,
      aborted,
    });
    if (closed.signal.aborted) return;

    this.counter += 1;
    const serial = String(this.counter).padStart(6, '0');
    const completion: Completion = {
      id: `chatcmpl-mock${serial}`,
      requestId: `req_mock${serial}`,
      created: Math.floor(receivedAt / 1000),
      model: requestModel(json),
      includeUsage: wantsUsage(json),
    };
    const ex: Exchange = { req, res, body, bytes, json, completion, closed: closed.signal };
    await this.route(ex);
  }

  private async route(ex: Exchange): Promise<void> {
    const method = ex.req.method ?? '';
    const path = pathname(ex.req.url ?? '');
    if (!this.authorized(ex)) return;
    if (method === 'POST' && path === '/v1/chat/completions') {
      await runBehavior(ex, this.queue.shift() ?? this.defaultBehavior);
    } else if (method === 'POST' && path === '/v1/responses') {
      // A queued raw behaviour (a hostile stream) applies to it; otherwise the mock's own Responses answer.
      const next = this.queue[0];
      if (next?.kind === 'raw') await runBehavior(ex, this.queue.shift() as Behavior);
      else if (next?.kind === 'responses-json') {
        this.queue.shift();
        sendJson(ex, 200, next.body);
      } else nativeResponses(ex);
    } else if (method === 'POST' && path === '/v1/embeddings') {
      const next = this.queue[0];
      if (next && next.kind !== 'json' && next.kind !== 'stream') await runBehavior(ex, this.queue.shift() as Behavior);
      else embeddings(ex);
    } else if (method === 'POST' && path === '/v1/files') {
      await this.uploadHold;
      this.uploadFile(ex);
    } else if (method === 'DELETE' && path.startsWith('/v1/files/')) {
      await this.deleteFile(ex, decodeURIComponent(path.slice('/v1/files/'.length)));
    } else if (method === 'GET' && path === '/v1/models') {
      this.listModels(ex);
    } else if (method === 'GET' && path.startsWith('/v1/models/')) {
      this.retrieveModel(ex, decodeURIComponent(path.slice('/v1/models/'.length)));
    } else {
      sendJson(ex, 404, openAIError(`Invalid URL (${method} ${path})`, 'invalid_request_error', null));
    }
  }

  /** Answers 401 and returns false when `requiredKey` is set and not presented. */
  private authorized(ex: Exchange): boolean {
    if (this.requiredKey === undefined) return true;
    const key = bearerKey(ex.req.headers);
    if (key === this.requiredKey) return true;
    const message =
      key === undefined
        ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        : `Incorrect API key provided: ${maskKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`;
    sendJson(ex, 401, openAIError(message, 'invalid_request_error', key === undefined ? null : 'invalid_api_key'));
    return false;
  }

  /** OpenAI's `POST /v1/files`: the multipart form's `file` and fields kept, its file object answered. */
  private uploadFile(ex: Exchange): void {
    const parts = parseMultipart(ex.bytes, ex.req.headers['content-type']);
    const file = parts.find((part) => part.name === 'file' && part.filename !== undefined);
    const fields = Object.fromEntries(parts.filter((p) => p !== file).map((p) => [p.name, p.data.toString('utf8')]));
    if (!file || fields.purpose === undefined) {
      sendJson(ex, 400, openAIError('file and purpose are required', 'invalid_request_error', null));
      return;
    }
    const id = `file-mockup${String(this.uploadedFiles.length + 1).padStart(6, '0')}`;
    const { authorization } = ex.req.headers;
    this.uploadedFiles.push({
      id,
      fields,
      filename: file.filename,
      contentType: file.contentType,
      bytes: file.data,
      authorization,
    });
    const created = Math.floor(Date.now() / 1000);
    sendJson(ex, 200, {
      id,
      object: 'file',
      bytes: file.data.length,
      created_at: created,
      expires_at:
        fields['expires_after[seconds]'] === undefined ? null : created + Number(fields['expires_after[seconds]']),
      filename: file.filename,
      purpose: fields.purpose,
      status: 'processed',
    });
  }

  holdFileUploads(): () => void {
    let release!: () => void;
    this.uploadHold = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.uploadHold = undefined;
      release();
    };
  }

  /** OpenAI's `DELETE /v1/files/{id}`, or `fileDeleteBehavior`. */
  private async deleteFile(ex: Exchange, id: string): Promise<void> {
    if (this.fileDeleteBehavior) return runBehavior(ex, this.fileDeleteBehavior);
    if (!this.uploadedFiles.some((file) => file.id === id) || this.deletedFiles.includes(id)) {
      sendJson(ex, 404, openAIError(`No such File object: ${id}`, 'invalid_request_error', 'id'));
      return;
    }
    this.deletedFiles.push(id);
    sendJson(ex, 200, { id, object: 'file', deleted: true });
  }

  private listModels(ex: Exchange): void {
    if (this.modelsStatus >= 400) {
      sendJson(ex, this.modelsStatus, defaultErrorBody(this.modelsStatus, ex.json));
      return;
    }
    sendJson(ex, this.modelsStatus, { object: 'list', data: this.models.map(modelObject) });
  }

  private retrieveModel(ex: Exchange, id: string): void {
    const model = this.models.find((m) => m.id === id);
    if (model) {
      sendJson(ex, 200, modelObject(model));
      return;
    }
    const message = `The model '${id}' does not exist`;
    sendJson(ex, 404, openAIError(message, 'invalid_request_error', 'model_not_found', 'model'));
  }

  /** A behavior threw: answer 500 if still possible, otherwise cut the connection. */
  private fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.destroy(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const message = `mock upstream behavior failed: ${err instanceof Error ? err.message : String(err)}`;
    const payload = JSON.stringify(openAIError(message, 'server_error', null));
    res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
  }
}

function pathname(target: string): string {
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}

function modelObject(m: { id: string; owned_by?: string; created?: number }): JsonObject {
  return { id: m.id, object: 'model', created: m.created ?? DEFAULT_MODEL_CREATED, owned_by: m.owned_by ?? 'openai' };
}

/**
 * Starts a mock OpenAI-compatible upstream on 127.0.0.1 with a random port.
 * Always `await mock.close()` when done (e.g. in `after`/`afterEach`).
 */
export async function startMockUpstream(options: { requiredKey?: string } = {}): Promise<MockUpstream> {
  const mock = new MockUpstreamServer(options.requiredKey);
  await mock.listen();
  return mock;
}

/** The mock's embedding of input `index`: `dimensions` numbers, each exact in float32. */
export function mockVector(index: number, dimensions: number): number[] {
  return Array.from({ length: dimensions }, (_, d) => (index + 1) * 0.5 - d * 0.25);
}

/**
 * `POST /v1/embeddings`: OpenAI's list with, per input, `mockVector(index, dimensions ?? 4)` as floats or (with
 * `encoding_format: base64`) little-endian float32 in base64; usage 5 tokens per input. A queued behaviour other
 * than json/stream (an error, a hang...) applies to it instead.
 */
function embeddings(ex: Exchange): void {
  const body = (ex.json ?? {}) as { input?: unknown; dimensions?: unknown; encoding_format?: unknown; model?: unknown };
  const inputs =
    Array.isArray(body.input) && body.input.length > 0 && typeof body.input[0] !== 'number' ? body.input : [body.input];
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 4;
  const data = inputs.map((_, index) => {
    const vector = mockVector(index, dimensions);
    if (body.encoding_format !== 'base64') return { object: 'embedding', index, embedding: vector };
    const bytes = Buffer.alloc(vector.length * 4);
    vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
    return { object: 'embedding', index, embedding: bytes.toString('base64') };
  });
  sendJson(ex, 200, {
    object: 'list',
    data,
    model: typeof body.model === 'string' ? body.model : 'mock',
    usage: { prompt_tokens: 5 * inputs.length, total_tokens: 5 * inputs.length },
  });
}

/**
 * `POST /v1/responses`, OpenAI's own Responses API (for the gateway's native forwarding): a response whose output
 * is a `web_search_call` item (when a `web_search` tool was given) and a message "Native answer", usage 11 in / 3
 * out; as JSON, or as its event stream ending in `response.completed`. `metadata.fail: "yes"` streams
 * `response.created` then `response.failed`.
 */
function nativeResponses(ex: Exchange): void {
  const body = (ex.json ?? {}) as {
    model?: unknown;
    stream?: unknown;
    tools?: Array<{ type?: unknown }>;
    metadata?: { fail?: unknown };
  };
  const searched = (body.tools ?? []).some((t) => t.type === 'web_search');
  const message = {
    type: 'message',
    id: 'msg_native',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Native answer', annotations: [] }],
  };
  const output = [...(searched ? [{ type: 'web_search_call', id: 'ws_native', status: 'completed' }] : []), message];
  const base = {
    id: 'resp_native_1',
    object: 'response',
    created_at: 1,
    model: typeof body.model === 'string' ? body.model : 'mock',
    output: [] as unknown[],
    status: 'in_progress',
    usage: null as unknown,
  };
  const done = {
    ...base,
    status: 'completed',
    output,
    usage: { input_tokens: 11, output_tokens: 3, total_tokens: 14 },
  };
  if (body.stream !== true) {
    sendJson(ex, 200, done);
    return;
  }
  ex.res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (type: string, data: Record<string, unknown>, n: number) =>
    ex.res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...data })}\n\n`);
  send('response.created', { response: base }, 0);
  if (body.metadata?.fail === 'yes') {
    send(
      'response.failed',
      { response: { ...base, status: 'failed', error: { code: 'server_error', message: 'native failure' } } },
      1,
    );
    ex.res.end();
    return;
  }
  send(
    'response.output_text.delta',
    { item_id: 'msg_native', output_index: output.length - 1, content_index: 0, delta: 'Native answer' },
    1,
  );
  send('response.completed', { response: done }, 2);
  ex.res.end();
}
