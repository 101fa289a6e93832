/**
 * How each translating provider ends a stream, and what it sends upstream with every call: the pieces the
 * OpenAI-compatible, Anthropic and Gemini providers share (the truncated-stream error, the call's request id and
 * trace context, the chunk the Anthropic and Gemini translators write). Real sockets: a node:http upstream writes
 * each provider's wire format and ends its body cleanly or in the middle of an event.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { UpstreamConfig } from '../../src/config/types.js';
import { isGatewayError } from '../../src/errors/gateway-error.js';
import type { CallContext, StreamBatch } from '../../src/providers/provider-contract.js';
import { AnthropicProvider } from '../../src/providers/anthropic/anthropic-provider.js';
import { GeminiProvider } from '../../src/providers/gemini/gemini-provider.js';
import { OpenAiCompatibleProvider } from '../../src/providers/openai-compatible/openai-compatible-provider.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** What the upstream writes next: the event stream's text, ended there. */
let script = '';
const received: Array<{ url: string; headers: IncomingHttpHeaders }> = [];

function upstreamConfig(kind: string, baseUrl: string): UpstreamConfig {
  return {
    name: `up-${kind}`,
    kind,
    auth: 'bearer',
    deploymentInPath: false,
    apiVersion: undefined,
    streamUsage: 'off',
    baseUrl,
    apiKey: 'sk-configured-0123456789',
    maxConnections: undefined,
    maxConcurrent: undefined,
    queueTimeoutMs: 1000,
    timeouts: { connectMs: 2000, firstByteMs: 5000, idleMs: 5000, totalMs: 10_000 },
    healthCheck: 'none',
    defaultMaxTokens: 1024,
    batch: 'gateway',
  };
}

const context = (requestId: string): CallContext => ({
  apiKeyOverride: undefined,
  signal: AbortSignal.timeout(10_000),
  requestId,
  bodyJson: undefined,
  traceparent: TRACEPARENT,
});

const chatBody = { model: 'm-1', stream: true, messages: [{ role: 'user' as const, content: 'hi' }] };

/** Every batch until the stream ends; the failure it ended with, if any. */
async function readAll(stream: AsyncIterable<StreamBatch>): Promise<{ batches: StreamBatch[]; failure: unknown }> {
  const batches: StreamBatch[] = [];
  try {
    for await (const batch of stream) batches.push(batch);
    return { batches, failure: undefined };
  } catch (failure) {
    return { batches, failure };
  }
}

function assertTruncated(failure: unknown, upstream: string, reason: string): void {
  assert.ok(isGatewayError(failure), `expected a GatewayError, got ${String(failure)}`);
  assert.equal(failure.code, 'upstream_stream_truncated');
  assert.deepEqual(failure.details, { upstream, reason });
}

const sse = (data: unknown, event?: string) =>
  `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
/** The first half of an event: the body ends in the middle of it. */
const CUT = 'data: {"half":';

describe('translating providers: how a stream ends, what goes upstream', () => {
  let server: Server;
  let baseUrl: string;
  let openai: OpenAiCompatibleProvider;
  let anthropic: AnthropicProvider;
  let gemini: GeminiProvider;

  before(async () => {
    server = createServer((req, res) => {
      received.push({ url: req.url ?? '', headers: req.headers });
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(script);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    openai = new OpenAiCompatibleProvider(upstreamConfig('openai', baseUrl), { userAgent: 'ua-test' });
    anthropic = new AnthropicProvider(upstreamConfig('anthropic', baseUrl), { userAgent: 'ua-test' });
    gemini = new GeminiProvider(upstreamConfig('gemini', baseUrl), { userAgent: 'ua-test' });
  });
  after(async () => {
    await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const openaiChunk = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm-1',
    choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }],
  };
  const anthropicStart = sse(
    {
      type: 'message_start',
      message: { id: 'msg_7', model: 'claude-x', usage: { input_tokens: 3, output_tokens: 0 } },
    },
    'message_start',
  );
  const anthropicText = sse(
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
    'content_block_delta',
  );
  const geminiPart = sse({
    candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }],
    modelVersion: 'gemini-x',
  });

  test('OpenAI-compatible: no [DONE] is a truncated stream; so is a body cut in an event', async () => {
    script = sse(openaiChunk);
    const clean = await readAll(openai.streamChat({ ...chatBody }, context('req-o1')));
    assertTruncated(clean.failure, 'up-openai', 'the stream ended without its end marker');
    assert.equal(clean.batches.flat()[0]?.chunk.choices[0]?.delta.content, 'Hel');

    script = sse(openaiChunk) + CUT;
    const cut = await readAll(openai.streamChat({ ...chatBody }, context('req-o2')));
    assertTruncated(cut.failure, 'up-openai', 'the connection closed in the middle of an event');

    script = `${sse(openaiChunk)}data: [DONE]\n\n`;
    const whole = await readAll(openai.streamChat({ ...chatBody }, context('req-o3')));
    assert.equal(whole.failure, undefined);
  });

  test('Anthropic: no message_stop is a truncated stream; chunks carry the message id and model', async () => {
    script = anthropicStart + anthropicText;
    const clean = await readAll(anthropic.streamChat({ ...chatBody }, context('req-a1')));
    assertTruncated(clean.failure, 'up-anthropic', 'the stream ended without message_stop');
    const chunks = clean.batches.flat().map((c) => c.chunk);
    const text = chunks.find((c) => c.choices[0]?.delta.content === 'Hel');
    assert.ok(text, JSON.stringify(chunks));
    assert.deepEqual(Object.keys(text), ['id', 'object', 'created', 'model', 'choices']);
    assert.equal(text.id, 'msg_7');
    assert.equal(text.object, 'chat.completion.chunk');
    assert.equal(text.model, 'claude-x');
    assert.equal(typeof text.created, 'number');
    assert.deepEqual(text.choices, [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }]);

    script = anthropicStart + CUT;
    const cut = await readAll(anthropic.streamChat({ ...chatBody }, context('req-a2')));
    assertTruncated(cut.failure, 'up-anthropic', 'the connection closed in the middle of an event');
  });

  test('Gemini: a clean end before a finished candidate is truncated; chunks carry the model version', async () => {
    script = geminiPart;
    const clean = await readAll(gemini.streamChat({ ...chatBody }, context('req-g1')));
    assertTruncated(clean.failure, 'up-gemini', 'the stream ended before the answer finished');
    const text = clean.batches
      .flat()
      .map((c) => c.chunk)
      .find((c) => c.choices[0]?.delta.content === 'Hel');
    assert.ok(text);
    assert.deepEqual(Object.keys(text), ['id', 'object', 'created', 'model', 'choices']);
    assert.equal(text.object, 'chat.completion.chunk');
    assert.equal(text.model, 'gemini-x');
    assert.deepEqual(text.choices, [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }]);

    script = geminiPart + CUT;
    const cut = await readAll(gemini.streamChat({ ...chatBody }, context('req-g2')));
    assertTruncated(cut.failure, 'up-gemini', 'the connection closed in the middle of an event');
  });

  test('native Gemini: a clean end before a candidate finished is truncated, a cut body says it was cut', async () => {
    const native = gemini.native.gemini;
    assert.ok(native);
    script = geminiPart;
    const clean = await readAll(native.stream({ model: 'gemini-x', stream: true, contents: [] }, context('req-n1')));
    assertTruncated(clean.failure, 'up-gemini', 'the stream ended before a candidate finished');

    script = geminiPart + CUT;
    const cut = await readAll(native.stream({ model: 'gemini-x', stream: true, contents: [] }, context('req-n2')));
    assertTruncated(cut.failure, 'up-gemini', 'the connection closed in the middle of an event');
  });

  test('every call sends its request id and trace context upstream, with the key and user agent', () => {
    for (const [id, key] of [
      ['req-o1', ['authorization', 'Bearer sk-configured-0123456789']],
      ['req-a1', ['x-api-key', 'sk-configured-0123456789']],
      ['req-g1', ['x-goog-api-key', 'sk-configured-0123456789']],
    ] as const) {
      const call = received.find((r) => r.headers['x-request-id'] === id);
      assert.ok(call, `no upstream request for ${id}`);
      assert.equal(call.headers.traceparent, TRACEPARENT);
      assert.equal(call.headers['user-agent'], 'ua-test');
      assert.equal(call.headers[key[0]], key[1]);
    }
  });
});
