/** The official `openai` npm package as a client of the drop-in paths: only baseURL and apiKey changed. */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MOCK_CONTENT, startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

describe('the official openai SDK against the gateway', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: { name: 'sdk.yaml', text: 'limits:\n  upstream_pause_max_seconds: 0\n' },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  test('chat.completions.create: the answer, and the upstream got the request (not the admin token)', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(completion.choices[0]?.message.content, MOCK_CONTENT);
    const [sent] = mock.chatRequests();
    assert.equal((sent?.json as { model?: string } | undefined)?.model, 'gpt-4o-mini');
    assert.ok(!JSON.stringify(sent?.headers ?? {}).includes(ADMIN_TOKEN));
  });

  test('streaming through the SDK: the content arrives in chunks and the stream ends cleanly', async () => {
    mock.enqueue({ kind: 'stream' });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, 'Hello from mock');
    assert.ok(chunks >= 3);
  });

  test('models.list and models.retrieve', async () => {
    mock.models = [{ id: 'gpt-4o-mini', owned_by: 'openai', created: 1_721_260_800 }];
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.ok(ids.includes('gpt-4o-mini'), ids.join(','));
    const one = await client.models.retrieve('gpt-4o-mini');
    assert.equal(one.object, 'model');
    await assert.rejects(client.models.retrieve('no-such-model'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  test('errors reach the SDK as its own classes with our message; the body keeps our code and details', async () => {
    const wrongKey = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'not-the-admin-token-000', maxRetries: 0 });
    await assert.rejects(
      wrongKey.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.AuthenticationError);
        assert.equal(e.code, 'invalid_token');
        return true;
      },
    );
    await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [] }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.code, 'validation_failed');
      assert.equal(e.param, 'messages');
      return true;
    });
    mock.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '3' } });
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.RateLimitError,
    );

    const raw = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"model":"x"}',
    });
    assert.equal(raw.status, 400);
    assert.equal(raw.json.code, 'validation_failed');
    assert.deepEqual((raw.json as { error?: { type?: string; code?: string } }).error?.type, 'invalid_request_error');
    const get = await call(`${gw.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'POST');
  });

  test('an OpenAI path the gateway does not serve: the SDK raises NotFoundError with our message, not "(no body)"', async () => {
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['assistants', () => client.beta.assistants.list()],
      ['fine-tuning', () => client.fineTuning.jobs.list()],
      ['anything', () => client.post('/anything/at/all', { body: {} })],
    ];
    for (const [name, run] of calls) {
      await assert.rejects(run(), (e: unknown) => {
        assert.ok(e instanceof OpenAI.NotFoundError, `${name}: ${String(e)}`);
        assert.match(
          e.message,
          /^404 This OpenAI API path is not served by this gateway; it serves POST \/v1\/chat\/completions/,
          name,
        );
        assert.doesNotMatch(e.message, /no body|lives under \/v1\//);
        assert.equal(e.code, 'not_found');
        return true;
      });
    }
    assert.equal(mock.chatRequests().length, 0);
  });

  test('every other early answer on a drop-in path carries the error object too: 405, and a credential in the query', async () => {
    await assert.rejects(client.post('/models', { body: {} }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.APIError && e.status === 405, String(e));
      assert.match(e.message, /does not accept that method/);
      assert.equal(e.code, 'method_not_allowed');
      return true;
    });
    const leaky = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: ADMIN_TOKEN,
      maxRetries: 0,
      defaultQuery: { api_key: 'sk-in-the-url-0123456789' },
    });
    await assert.rejects(leaky.models.list(), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.match(e.message, /must not be sent in the URL/);
      assert.equal(e.code, 'credentials_in_query');
      return true;
    });
  });

  test('a stream that fails midway surfaces as an SDK error, not as a complete answer', async () => {
    mock.enqueue({ kind: 'reset', afterChunks: 2 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    let text = '';
    await assert.rejects(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })(),
      (e: unknown) => e instanceof OpenAI.APIError && /reset|upstream/i.test(e.message),
    );
    assert.ok(text.length > 0, 'the chunks before the failure arrived');
  });
});
