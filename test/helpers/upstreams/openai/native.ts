/** The mock's answers to OpenAI's embeddings and its own Responses API (the gateway's native forwarding). */
import { sendJson, type Exchange } from './behaviors.js';

/** The mock's embedding of input `index`: `dimensions` numbers, each exact in float32. */
export function mockVector(index: number, dimensions: number): number[] {
  return Array.from({ length: dimensions }, (_, d) => (index + 1) * 0.5 - d * 0.25);
}

/**
 * `POST /v1/embeddings`: OpenAI's list with, per input, `mockVector(index, dimensions ?? 4)` as floats or (with
 * `encoding_format: base64`) little-endian float32 in base64; usage 5 tokens per input. A queued behaviour other
 * than json/stream (an error, a hang...) applies to it instead.
 */
export function embeddings(ex: Exchange): void {
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
export function nativeResponses(ex: Exchange): void {
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
