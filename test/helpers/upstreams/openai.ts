/**
 * The mock OpenAI upstream every OpenAI-style test uses: a real `node:http` server on 127.0.0.1 (random port) that
 * speaks OpenAI's wire — chat completions (JSON and SSE), its own Responses API, embeddings, models, files and
 * batches — records every request it receives, and misbehaves on demand (stall, reset, malformed SSE, errors,
 * hangs...). Its parts live in `openai/`: the chat wire (chat.ts), the behaviour kinds (behaviors.ts), embeddings
 * and the Responses API (native.ts), the Batch API (batches.ts, on with `startOpenAiUpstream({ batches })`).
 *
 * Usage:
 * ```ts
 * const upstream = await startOpenAiUpstream();
 * upstream.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
 * // point the gateway at upstream.baseUrl, e.g. http://127.0.0.1:PORT/v1
 * upstream.requests; // what it received
 * await upstream.close();
 * ```
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parseMultipart } from '../multipart-form.js';
import { runBehavior, sendJson, type Behavior, type Exchange } from './openai/behaviors.js';
import {
  bearerKey,
  DEFAULT_MODEL_CREATED,
  DEFAULT_MODELS,
  defaultErrorBody,
  maskKey,
  openAIError,
  requestModel,
  wantsUsage,
  type Completion,
  type JsonObject,
} from './openai/chat.js';
import { OpenAiBatches, type BatchOptions } from './openai/batches.js';
import { embeddings, nativeResponses } from './openai/native.js';

export type { Behavior } from './openai/behaviors.js';

/** The paths `respond` may answer. */
const MODEL_CALLS = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'];
export {
  MOCK_CONTENT,
  MOCK_STREAM_CONTENT,
  MOCK_STREAM_ERROR,
  MOCK_TOOL_ARGUMENTS,
  mockTokenCount,
} from './openai/chat.js';
export { mockVector } from './openai/native.js';
export type { BatchOptions, OpenAiBatches, UpstreamBatch } from './openai/batches.js';

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

/** A running mock upstream. */
export interface OpenAiUpstream {
  /** `http://127.0.0.1:PORT/v1` */
  baseUrl: string;
  port: number;
  /** Every request received (chat completions, model listing, and anything else), in arrival order. */
  requests: RecordedRequest[];
  /** Only the `POST /v1/chat/completions` requests. */
  chatRequests(): RecordedRequest[];
  /** The requests of this method whose target (path and query) starts with `prefix`. */
  requestsTo(method: string, prefix: string): RecordedRequest[];
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
  /**
   * OpenAI's Batch API over the files taken (openai/batches.ts): off (404, as an OpenAI-compatible server without
   * it) unless started with `batches`; its `options` may change as a test goes, `created` holds the batches made.
   */
  batches: OpenAiBatches;
  /** Queue behaviors for the next chat requests, in order; when the queue is empty `defaultBehavior` applies. */
  enqueue(...behaviors: Behavior[]): void;
  /** Behavior for chat requests when the queue is empty; initially `{ kind: 'json' }`. */
  defaultBehavior: Behavior;
  /**
   * When set, answers a model call (chat, Responses, embeddings) that finds the queue empty, by the request's path
   * and parsed body, before `defaultBehavior` or the mock's own answer (undefined: those); for raw answers.
   */
  respond: ((path: string, body: unknown) => Behavior | undefined) | undefined;
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

class OpenAiUpstreamServer implements OpenAiUpstream {
  readonly requests: RecordedRequest[] = [];
  readonly uploadedFiles: UploadedFile[] = [];
  readonly deletedFiles: string[] = [];
  fileDeleteBehavior: Behavior | undefined;
  private uploadHold: Promise<void> | undefined;
  defaultBehavior: Behavior = { kind: 'json' };
  respond: OpenAiUpstream['respond'] = undefined;
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

  readonly batches: OpenAiBatches;

  constructor(
    private readonly initialKey: string | undefined,
    batchOptions: BatchOptions | undefined,
  ) {
    this.requiredKey = initialKey;
    this.batches = new OpenAiBatches(batchOptions !== undefined, { pollsBeforeDone: 1, ...batchOptions }, (id) =>
      this.deletedFiles.includes(id) ? undefined : this.uploadedFiles.find((f) => f.id === id)?.bytes.toString('utf8'),
    );
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

  requestsTo(method: string, prefix: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(prefix));
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
    this.respond = undefined;
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
    const modelCall = method === 'POST' && MODEL_CALLS.includes(path);
    const responded = modelCall && this.queue.length === 0 ? this.respond?.(path, ex.json) : undefined;
    if (responded) return runBehavior(ex, responded);
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
    } else if (this.batches.route(ex, method, path)) {
      return;
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
    if (this.batches.deleteFile(id)) return sendJson(ex, 200, { id, object: 'file', deleted: true });
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
export async function startOpenAiUpstream(
  options: { requiredKey?: string; batches?: BatchOptions } = {},
): Promise<OpenAiUpstream> {
  const mock = new OpenAiUpstreamServer(options.requiredKey, options.batches);
  await mock.listen();
  return mock;
}
