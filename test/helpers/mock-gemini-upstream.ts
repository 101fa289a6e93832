/**
 * A real node:http server speaking the Gemini API on the wire: `POST /v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent?alt=sse` (each event a whole GenerateContentResponse, CRLF-separated, no end marker:
 * the connection closes), `:countTokens`, `GET /v1beta/models`, Google's error body, and the Batch API
 * (mock-gemini-batches.ts). Shapes follow the documented examples.
 */
import type { ServerResponse } from 'node:http';
import { startRecordingServer, type RecordedHttpRequest } from './recording-server.js';
import { MockGeminiBatches } from './mock-gemini-batches.js';

/** A request as the mock received it (`url`: path and query). */
export type GeminiRecorded = RecordedHttpRequest;

export type GeminiBehavior =
  | { kind: 'answer'; text?: string; finishReason?: string }
  | { kind: 'stream'; text?: string[]; cutBeforeFinish?: boolean }
  | { kind: 'blocked'; reason: string }
  | { kind: 'error'; status: number; grpcStatus: string; message: string }
  /** A 200 JSON answer of exactly this body (JSON-encoded): for hostile answers. */
  | { kind: 'json'; body: unknown }
  /** A stream of exactly these events' data (each `data: <text>` event one write), then the end: for hostile streams. */
  | { kind: 'raw-stream'; data: string[] };

export interface MockGemini {
  baseUrl: string;
  requests: GeminiRecorded[];
  generateRequests(): GeminiRecorded[];
  /** The Batch API's batches and the script of the next ones. */
  batches: MockGeminiBatches;
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

export async function startMockGemini(options: { requiredKey?: string } = {}): Promise<MockGemini> {
  let queue: GeminiBehavior[] = [];
  const batches = new MockGeminiBatches();
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
    const behavior = queue.shift() ?? (stream ? { kind: 'stream' } : { kind: 'answer' });
    answer(res, body, behavior, match[1] ?? 'gemini');
  });
  return {
    baseUrl: `${server.origin}/v1beta`,
    requests: server.requests,
    generateRequests: () =>
      server.requests.filter((r) => r.method === 'POST' && !/:batchGenerateContent$|\/batches\//.test(r.url)),
    batches,
    enqueue: (...behaviors) => queue.push(...behaviors),
    reset() {
      server.requests.length = 0;
      queue = [];
      batches.reset();
    },
    close: () => server.close(),
  };
}

function googleError(res: ServerResponse, status: number, grpcStatus: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify({ error: { code: status, message, status: grpcStatus } }));
}

function answer(res: ServerResponse, body: Record<string, unknown>, behavior: GeminiBehavior, model: string): void {
  const withTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (behavior.kind === 'error') return googleError(res, behavior.status, behavior.grpcStatus, behavior.message);
  if (behavior.kind === 'json') {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(behavior.body));
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
