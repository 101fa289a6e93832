/**
 * What the mock does with a call once it is routed: one function per behaviour kind, each writing to the socket
 * event by event so a test sees exactly the bytes (and the timing, resets and stalls) it asked for.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  completionBody,
  contentChunkEvents,
  defaultErrorBody,
  DONE_EVENT,
  MALFORMED_LINGER_MS,
  MOCK_STREAM_CONTENT,
  MOCK_STREAM_ERROR,
  MOCK_TOOL_ARGUMENTS,
  sse,
  textStreamEvents,
  toolStreamEvents,
  toolToCall,
  usageEvent,
  usageFor,
  type Completion,
} from './chat.js';

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

// ---------------------------------------------------------------------------
// Response plumbing
// ---------------------------------------------------------------------------

/** Everything a behavior needs to answer one request. */
export interface Exchange {
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
export function sleep(ex: Exchange, ms: number): Promise<boolean> {
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
export async function writeAll(ex: Exchange, events: readonly string[], delayMs = 0): Promise<boolean> {
  for (const [i, event] of events.entries()) {
    if (i > 0 && !(await sleep(ex, delayMs))) return false;
    if (!(await write(ex, event))) return false;
  }
  return true;
}

export function startStream(ex: Exchange): void {
  ex.res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': ex.completion.requestId,
  });
  ex.res.flushHeaders();
}

export function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
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

export function runBehavior(ex: Exchange, b: Behavior): Promise<void> | void {
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
