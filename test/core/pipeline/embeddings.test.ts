import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { embed, embedMany } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { mockVector } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway, useGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { startGeminiUpstream, type GeminiUpstream } from '../../helpers/upstreams/gemini.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../../helpers/upstreams/anthropic.js';
import { newApiKey } from '../../../src/auth/api-key.js';
import { SqliteKeyStore } from '../../../src/store/sqlite/sqlite-keys.js';

const UPSTREAM_KEY = 'sk-embeddings-upstream-key-0123456789';
const MODELS = [
  'models:',
  '  - { id: embed-small, upstream: default, upstream_model: text-embedding-3-small, type: embedding, dimensions: 4, pricing: { input_per_million: 20 } }',
  '  - { id: chatty, upstream: default, upstream_model: gpt-4o-mini, type: chat }',
  'default_upstream: default',
  'retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 2 }',
].join('\n');

describe('embeddings through an OpenAI-compatible upstream, with real clients', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: UPSTREAM_KEY },
    configFile: { name: 'models.yaml', text: MODELS },
  });
  const sdk = () => new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  const upstreamCalls = () => fixture.mock.requests.filter((r) => r.path === '/v1/embeddings');

  test('openai SDK: base64 (its default) decodes to the upstream vectors; float as asked; the upstream model name is sent', async () => {
    const b64 = await sdk().embeddings.create({ model: 'embed-small', input: ['one', 'two'] });
    assert.deepEqual(
      b64.data.map((d) => d.embedding),
      [mockVector(0, 4), mockVector(1, 4)],
    );
    assert.equal((upstreamCalls()[0]?.json as { encoding_format?: string }).encoding_format, 'base64');
    assert.equal((upstreamCalls()[0]?.json as { model: string }).model, 'text-embedding-3-small');
    assert.equal(upstreamCalls()[0]?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
    assert.equal(b64.usage.prompt_tokens, 10);

    const floats = await sdk().embeddings.create({
      model: 'embed-small',
      input: 'one',
      encoding_format: 'float',
      dimensions: 3,
    });
    assert.deepEqual(floats.data[0]?.embedding, mockVector(0, 3));
    assert.equal((upstreamCalls()[1]?.json as { dimensions?: number }).dimensions, 3);
  });

  test('the AI SDK (embed, embedMany) and LangChain (OpenAIEmbeddings) get the vectors', async () => {
    const provider = createOpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: ADMIN_TOKEN });
    const one = await embed({ model: provider.embedding('embed-small'), value: 'hello' });
    assert.deepEqual(one.embedding, mockVector(0, 4));
    const many = await embedMany({ model: provider.embedding('embed-small'), values: ['a', 'b', 'c'] });
    assert.deepEqual(many.embeddings, [mockVector(0, 4), mockVector(1, 4), mockVector(2, 4)]);

    const lc = new OpenAIEmbeddings({
      model: 'embed-small',
      apiKey: ADMIN_TOKEN,
      configuration: { baseURL: `${fixture.gw.url}/v1` },
      maxRetries: 0,
    });
    assert.deepEqual(await lc.embedQuery('q'), mockVector(0, 4));
    assert.deepEqual(await lc.embedDocuments(['x', 'y']), [mockVector(0, 4), mockVector(1, 4)]);
  });

  test('?route=embeddings: the same; usage is priced (input only) and recorded; token arrays pass through', async () => {
    const answer = await call(fixture.url('/v1/?route=embeddings'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'embed-small', input: [[1, 2, 3]] }),
    });
    assert.equal(answer.status, 200);
    assert.deepEqual((answer.json as { data: Array<{ embedding: number[] }> }).data[0]?.embedding, mockVector(0, 4));
    assert.deepEqual((upstreamCalls().at(-1)?.json as { input: unknown }).input, [[1, 2, 3]]);
    const line = fixture.gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.route === 'embeddings')
      .at(-1);
    assert.equal(line?.prompt_tokens, 5);
    assert.equal(line?.cost_usd, 0.0001); // 5 tokens at $20 per million
  });

  test('bad input is a 400 naming the field; a model declared for chat is refused here and an embedding model on chat', async () => {
    const bad = await call(fixture.url('/v1/embeddings'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'embed-small', input: [], encoding_format: 'hex' }),
    });
    assert.equal(bad.status, 400);
    const fields = (bad.json as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field);
    assert.ok(
      fields.some((f) => f.includes('input')) && fields.some((f) => f.includes('encoding_format')),
      JSON.stringify(fields),
    );

    const chatModel = await call(fixture.url('/v1/embeddings'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'chatty', input: 'x' }),
    });
    assert.equal(chatModel.status, 400);
    assert.equal((chatModel.json as { code: string }).code, 'capability_not_supported');
    const embedOnChat = await call(fixture.url('/v1/chat/completions'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'embed-small', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(embedOnChat.status, 400);
    assert.equal((embedOnChat.json as { code: string }).code, 'capability_not_supported');
    assert.equal(fixture.mock.chatRequests().length, 0);
  });

  test('a scoped key needs the embeddings right; an upstream 500 is retried like chat and then a 502', async () => {
    const issued = newApiKey('dev');
    await new SqliteKeyStore(fixture.gw.store.db).create({
      keyId: issued.keyId,
      environment: 'dev',
      hash: issued.hash,
      name: 'chat-only',
      routes: ['chat'],
      models: ['*'],
      createdMs: Date.now(),
    });
    const refused = await call(fixture.url('/v1/embeddings'), {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'embed-small', input: 'x' }),
    });
    assert.equal(refused.status, 403);
    assert.equal((refused.json as { code: string }).code, 'route_not_allowed');

    fixture.mock.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 500 });
    const failed = await call(fixture.url('/v1/embeddings'), {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'embed-small', input: 'x' }),
    });
    assert.equal(failed.status, 502);
    assert.equal((failed.json as { code: string }).code, 'upstream_error');
    assert.equal(upstreamCalls().length, 2, 'tried twice (retry.attempts: 2), as a chat call is');
  });
});

describe('embeddings through Gemini (batchEmbedContents) and Anthropic (none)', () => {
  let gemini: GeminiUpstream;
  let anthropic: AnthropicUpstream;
  let gw: TestGateway;
  before(async () => {
    gemini = await startGeminiUpstream({ requiredKey: 'gemini-key-0123456789' });
    anthropic = await startAnthropicUpstream();
    gw = await startGateway({
      env: { GEMINI_TEST_KEY: 'gemini-key-0123456789', ANTHROPIC_TEST_KEY: 'sk-ant-0123456789' },
      configFile: {
        name: 'providers.yaml',
        text: [
          'upstreams:',
          '  - { name: google, kind: gemini, base_url: "' + gemini.baseUrl + '", api_key_env: GEMINI_TEST_KEY }',
          '  - { name: claude, kind: anthropic, base_url: "' +
            anthropic.baseUrl +
            '", api_key_env: ANTHROPIC_TEST_KEY }',
          'models:',
          '  - { id: gemini-embed, upstream: google, upstream_model: text-embedding-004, type: embedding }',
          '  - { id: claude-fast, upstream: claude, upstream_model: claude-haiku-4-5 }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw.close();
    await gemini.close();
    await anthropic.close();
  });
  const sdk = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });

  test('Gemini: one request per input, the key in a header, vectors back as base64 or floats, usage estimated', async () => {
    const b64 = await sdk().embeddings.create({ model: 'gemini-embed', input: ['alpha', 'beta'], dimensions: 2 });
    assert.deepEqual(
      b64.data.map((d) => d.embedding),
      [
        [0.5, 0.25],
        [1, 0.75],
      ],
    );
    const sent = gemini.requests.at(-1);
    assert.equal(sent?.url, '/v1beta/models/text-embedding-004:batchEmbedContents');
    assert.equal(sent?.headers['x-goog-api-key'], 'gemini-key-0123456789');
    assert.deepEqual((sent?.body as { requests: unknown[] }).requests, [
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'alpha' }] }, outputDimensionality: 2 },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'beta' }] }, outputDimensionality: 2 },
    ]);
    assert.equal(b64.usage.prompt_tokens, 3, 'estimated: ceil(5/4) + ceil(4/4)');
    const floats = await call(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gemini-embed', input: 'alpha', encoding_format: 'float' }),
    });
    assert.deepEqual((floats.json as { data: Array<{ embedding: number[] }> }).data[0]?.embedding, [0.5, 0.25, 0]);
    const tokens = await call(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'gemini-embed', input: [1, 2] }),
    });
    assert.equal(tokens.status, 400);
    assert.equal((tokens.json as { code: string }).code, 'capability_not_supported');
  });

  test('Anthropic has no embeddings: a clear 400 naming the upstream, and nothing is sent to it', async () => {
    await assert.rejects(sdk().embeddings.create({ model: 'claude-fast', input: 'x' }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal(e.code, 'capability_not_supported');
      return true;
    });
    const answer = await call(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'claude-fast', input: 'x' }),
    });
    assert.deepEqual((answer.json as { details: Record<string, unknown> }).details.upstream, 'claude');
    assert.equal(anthropic.requests.length, 0);
  });
});
