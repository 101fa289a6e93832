// Mock upstream that answers instantly: OpenAI Chat Completions (POST /v1/chat/completions), Anthropic
// Messages (POST /v1/messages) and Gemini (POST /v1/models/{model}:generateContent and
// :streamGenerateContent?alt=sse), the same answer in each provider's wire format.
//   node --import tsx bench/mock-upstream.ts      (PORT from env, default 0 = any free port)
// Prints `LISTENING <port>` on stdout once listening on 127.0.0.1.
// STREAM_CHUNKS=N (env) makes every OpenAI stream N content chunks (the first with the role, the last with
// finish_reason), a usage chunk when the request asked for `stream_options.include_usage`, then `[DONE]`, all
// written at once: what a chunk costs (issue 33's "streams of 100 chunks"). Unset: the 5-piece answer below.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exitWithParent } from './lib/proc.js';

const CREATED = 1700000000;
const MODEL = 'bench-model';

const COMPLETION = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench-0001',
    object: 'chat.completion',
    created: CREATED,
    model: MODEL,
    system_fingerprint: 'fp_bench',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Hello from the bench!' },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
  }),
);

const PIECES = ['Hello', ' from', ' the', ' bench', '!'];
const STREAM_EVENTS: Buffer[] = [
  ...PIECES.map((content, i) =>
    Buffer.from(
      `data: ${JSON.stringify({
        id: 'chatcmpl-bench-0001',
        object: 'chat.completion.chunk',
        created: CREATED,
        model: MODEL,
        choices: [
          {
            index: 0,
            delta: i === 0 ? { role: 'assistant', content } : { content },
            finish_reason: i === PIECES.length - 1 ? 'stop' : null,
          },
        ],
      })}\n\n`,
    ),
  ),
  Buffer.from('data: [DONE]\n\n'),
];

/** N content chunks, a usage chunk (only when asked for), `[DONE]`: the stream of STREAM_CHUNKS=N. */
function chunkedStream(n: number): { events: Buffer[]; usage: Buffer; done: Buffer } {
  const base = { id: 'chatcmpl-bench-0001', object: 'chat.completion.chunk', created: CREATED, model: MODEL };
  const events = Array.from({ length: n }, (_, i) =>
    Buffer.from(
      `data: ${JSON.stringify({
        ...base,
        system_fingerprint: 'fp_bench',
        choices: [
          {
            index: 0,
            delta: i === 0 ? { role: 'assistant', content: 'tok' } : { content: ' tok' },
            logprobs: null,
            finish_reason: i === n - 1 ? 'stop' : null,
          },
        ],
      })}\n\n`,
    ),
  );
  const usage = Buffer.from(
    `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: n, total_tokens: 12 + n } })}\n\n`,
  );
  return { events, usage, done: Buffer.from('data: [DONE]\n\n') };
}
const STREAM_CHUNKS = Number(process.env.STREAM_CHUNKS ?? 0);
if (!Number.isInteger(STREAM_CHUNKS) || STREAM_CHUNKS < 0 || STREAM_CHUNKS > 100_000)
  throw new Error(`STREAM_CHUNKS must be a whole number from 0 to 100000, got ${process.env.STREAM_CHUNKS ?? ''}`);
const CHUNKED = STREAM_CHUNKS > 0 ? chunkedStream(STREAM_CHUNKS) : undefined;

const ANTHROPIC_MESSAGE = Buffer.from(
  JSON.stringify({
    id: 'msg_bench_0001',
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content: [{ type: 'text', text: 'Hello from the bench!' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 5 },
  }),
);

const anthropicEvent = (type: string, data: unknown): Buffer =>
  Buffer.from(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
const ANTHROPIC_STREAM: Buffer[] = [
  anthropicEvent('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_bench_0001',
      type: 'message',
      role: 'assistant',
      content: [],
      model: MODEL,
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  }),
  anthropicEvent('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  }),
  ...PIECES.map((text) =>
    anthropicEvent('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    }),
  ),
  anthropicEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
  anthropicEvent('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 5 },
  }),
  anthropicEvent('message_stop', { type: 'message_stop' }),
];

// Gemini generateContent (JSON) and streamGenerateContent?alt=sse (data-only events, the last with finishReason).
const geminiCandidate = (text: string, finishReason?: string) => ({
  content: { role: 'model', parts: [{ text }] },
  index: 0,
  ...(finishReason ? { finishReason } : {}),
});
const GEMINI_USAGE = { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 };
const GEMINI_RESPONSE = Buffer.from(
  JSON.stringify({
    candidates: [geminiCandidate('Hello from the bench!', 'STOP')],
    usageMetadata: GEMINI_USAGE,
    modelVersion: MODEL,
    responseId: 'bench-0001',
  }),
);
const GEMINI_STREAM: Buffer[] = PIECES.map((text, i) =>
  Buffer.from(
    `data: ${JSON.stringify({
      candidates: [geminiCandidate(text, i === PIECES.length - 1 ? 'STOP' : undefined)],
      usageMetadata: i === PIECES.length - 1 ? GEMINI_USAGE : { promptTokenCount: 12, totalTokenCount: 12 },
      modelVersion: MODEL,
      responseId: 'bench-0001',
    })}\r\n\r\n`,
  ),
);

// One list that satisfies every provider's model-list probe: OpenAI/Anthropic read `data`, Gemini reads `models`.
const MODELS = Buffer.from(
  JSON.stringify({
    object: 'list',
    data: [{ id: MODEL, object: 'model', created: CREATED, owned_by: 'bench' }],
    models: [{ name: `models/${MODEL}`, displayName: MODEL, inputTokenLimit: 128000 }],
  }),
);

/** One 8-number embedding, as OpenAI answers float vectors. */
const EMBEDDING = Buffer.from(
  JSON.stringify({
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8] }],
    model: MODEL,
    usage: { prompt_tokens: 7, total_tokens: 7 },
  }),
);

function sendJson(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

/** Whether the body asks for a stream (undefined: not a JSON object), and for a usage chunk at its end. */
function wantsStream(raw: Buffer): { stream: boolean; usage: boolean } | undefined {
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const body = parsed as { stream?: unknown; stream_options?: { include_usage?: unknown } };
    return { stream: body.stream === true, usage: body.stream_options?.include_usage === true };
  } catch {
    return undefined;
  }
}

type WireFormat = 'openai' | 'anthropic' | 'gemini';
const ANSWERS: Record<WireFormat, { json: Buffer; stream: Buffer[] }> = {
  openai: { json: COMPLETION, stream: STREAM_EVENTS },
  anthropic: { json: ANTHROPIC_MESSAGE, stream: ANTHROPIC_STREAM },
  gemini: { json: GEMINI_RESPONSE, stream: GEMINI_STREAM },
};

/** Gemini says "stream" in the path (`:streamGenerateContent`), the others in the body. */
function onChat(req: IncomingMessage, res: ServerResponse, format: WireFormat, streamByPath?: boolean): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const inBody = wantsStream(Buffer.concat(chunks));
    const stream = streamByPath ?? inBody?.stream;
    if (inBody === undefined || stream === undefined) {
      sendJson(res, 400, Buffer.from('{"error":{"message":"invalid JSON body","type":"invalid_request_error"}}'));
      return;
    }
    if (!stream) {
      sendJson(res, 200, ANSWERS[format].json);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (format === 'openai' && CHUNKED !== undefined) {
      for (const ev of CHUNKED.events) res.write(ev);
      if (inBody.usage) res.write(CHUNKED.usage);
      res.end(CHUNKED.done);
      return;
    }
    for (const ev of ANSWERS[format].stream) res.write(ev);
    res.end();
  });
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (req.method === 'POST' && path === '/v1/chat/completions') {
    onChat(req, res, 'openai');
    return;
  }
  if (req.method === 'POST' && path === '/v1/embeddings') {
    req.resume();
    req.on('end', () => sendJson(res, 200, EMBEDDING));
    return;
  }
  if (req.method === 'POST' && path === '/v1/messages') {
    onChat(req, res, 'anthropic');
    return;
  }
  if (req.method === 'POST' && path.startsWith('/v1/models/') && path.endsWith('enerateContent')) {
    onChat(req, res, 'gemini', path.endsWith(':streamGenerateContent'));
    return;
  }
  req.resume();
  // Webhook receivers for the webhook targets: one that answers at once, one that never answers.
  if (req.method === 'POST' && path === '/hooks/ok') {
    res.writeHead(204).end();
    return;
  }
  if (req.method === 'POST' && path === '/hooks/hang') {
    setTimeout(() => res.destroy(), 60_000).unref();
    return;
  }
  if (req.method === 'GET' && path === '/v1/models') {
    sendJson(res, 200, MODELS);
    return;
  }
  sendJson(res, 404, Buffer.from('{"error":{"message":"not found","type":"not_found"}}'));
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

exitWithParent();
process.on('SIGTERM', () => process.exit(0));

const port = Number(process.env.PORT ?? 0);
server.listen(Number.isInteger(port) && port >= 0 ? port : 0, '127.0.0.1', () => {
  const addr = server.address();
  if (typeof addr === 'object' && addr !== null) process.stdout.write(`LISTENING ${addr.port}\n`);
});
