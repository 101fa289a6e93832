/**
 * Issue 29: the ids an upstream keeps for a natively forwarded call (a Responses API response and its items, a
 * code-interpreter container, an Anthropic code-execution container) belong to the caller that made them. Another
 * caller's reference to one, and a reference to an id the gateway never saw made, is the same 404 as an unknown
 * stored response, and nothing is sent upstream. Real sockets: the real gateway in front of real mock upstreams.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startOpenAiUpstream, type Behavior, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { connectRedis } from '../../src/store/redis/connect.js';
import { RedisKeyStore } from '../../src/store/redis/redis-keys.js';
import { namedEvents, readStream } from '../helpers/sse-client.js';
import { newApiKey } from '../../src/auth/api-key.js';
import { scopedKey } from '../helpers/scoped-key.js';

const UPSTREAM_KEY = 'sk-native-owner-upstream-key-0123456789';
const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '')}`;

const bearer = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** OpenAI's answer to a native call: a code-interpreter call in `container` and a message, with the given ids. */
function nativeJson(ids: { response: string; message: string; container: string }): Behavior {
  const output = [
    {
      type: 'code_interpreter_call',
      id: unique('ci'),
      container_id: ids.container,
      status: 'completed',
      code: 'print(1)',
      outputs: null,
    },
    {
      type: 'message',
      id: ids.message,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'private to its caller', annotations: [] }],
    },
  ];
  return {
    kind: 'raw',
    handler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: ids.response,
          object: 'response',
          created_at: 1,
          model: 'gpt-4o-mini',
          status: 'completed',
          output,
          usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
        }),
      );
    },
  };
}

/** A native event stream for response `id`: `response.created`, a delta, then `response.completed` unless `cut`. */
function nativeStream(id: string, cut = false): Behavior {
  return {
    kind: 'raw',
    handler: (_req, res: ServerResponse) => {
      const base = {
        id,
        object: 'response',
        created_at: 1,
        model: 'gpt-4o-mini',
        status: 'in_progress',
        output: [] as unknown[],
      };
      const send = (type: string, data: Record<string, unknown>, n: number) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...data })}\n\n`);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      send('response.created', { response: base }, 0);
      send('response.output_text.delta', { item_id: 'msg_s', output_index: 0, content_index: 0, delta: 'streamed' }, 1);
      if (!cut) {
        const message = {
          type: 'message',
          id: unique('msg'),
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'streamed', annotations: [] }],
        };
        send(
          'response.completed',
          {
            response: {
              ...base,
              status: 'completed',
              output: [message],
              usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 },
            },
          },
          2,
        );
      }
      res.end();
    },
  };
}

describe('native Responses ids belong to the caller that made them', () => {
  const fixture = useGateway({ env: { UPSTREAM_API_KEY: UPSTREAM_KEY, UPSTREAM_KIND: 'openai' } });
  const nativeCalls = () => fixture.mock.requests.filter((r) => r.path === '/v1/responses');
  const create = (headers: Record<string, string>, fields: Record<string, unknown>) =>
    call(fixture.url('/v1/responses'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 'more', tools: [{ type: 'web_search' }], ...fields }),
    });

  test("another caller's previous_response_id, item_reference or container is a 404 like an unknown id; nothing goes upstream", async () => {
    const ids = { response: unique('resp'), message: unique('msg'), container: unique('cntr') };
    fixture.mock.enqueue(nativeJson(ids));
    const made = await create(authHeaders(), { input: 'my private input' });
    assert.equal(made.status, 200);
    assert.equal((made.json as { id?: string }).id, ids.response);

    const other = bearer(await scopedKey(fixture.gw.store, ['responses']));
    const sent = nativeCalls().length;
    const unknown = await create(other, { previous_response_id: unique('resp') });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.code, 'response_not_found');
    const refusals = [
      { fields: { previous_response_id: ids.response }, id: ids.response, field: 'previous_response_id' },
      {
        fields: {
          input: [
            { role: 'user', content: 'more' },
            { type: 'item_reference', id: ids.message },
          ],
        },
        id: ids.message,
        field: 'input[1].id',
      },
      {
        fields: {
          input: [
            { type: 'reasoning', id: ids.message, summary: [] },
            { role: 'user', content: 'more' },
          ],
        },
        id: ids.message,
        field: 'input[0].id',
      },
      {
        fields: { tools: [{ type: 'code_interpreter', container: ids.container }] },
        id: ids.container,
        field: 'tools[0].container',
      },
    ];
    for (const { fields, id, field } of refusals) {
      const refused = await create(other, fields);
      assert.equal(refused.status, 404, `${JSON.stringify(fields)}: ${refused.text}`);
      // The same answer as for an id nobody made: nothing tells another caller's id from an unknown one.
      assert.equal(refused.json.code, unknown.json.code);
      assert.equal(refused.json.message, unknown.json.message);
      assert.deepEqual(refused.json.details, { id, field });
    }
    assert.equal(nativeCalls().length, sent, 'no refused request reached the upstream');

    // Its owner continues it: the request goes upstream untouched, previous_response_id and all.
    const mine = [
      { previous_response_id: ids.response },
      {
        input: [
          { role: 'user', content: 'more' },
          { type: 'item_reference', id: ids.message },
        ],
      },
      { tools: [{ type: 'code_interpreter', container: ids.container }] },
    ];
    for (const fields of mine) {
      const body = JSON.stringify({ model: 'gpt-4o-mini', input: 'more', tools: [{ type: 'web_search' }], ...fields });
      const continued = await call(fixture.url('/v1/responses'), { method: 'POST', headers: authHeaders(), body });
      assert.equal(continued.status, 200, continued.text);
      assert.equal(nativeCalls().at(-1)?.body, body);
    }
  });

  test('an id the gateway never saw made is refused even to the admin; a conversation (never made here) too', async () => {
    const sent = nativeCalls().length;
    for (const fields of [
      { previous_response_id: unique('resp') },
      { conversation: unique('conv') },
      { conversation: { id: unique('conv') } },
    ]) {
      const refused = await create(authHeaders(), fields);
      assert.equal(refused.status, 404, JSON.stringify(fields));
      assert.equal(refused.json.code, 'response_not_found');
    }
    assert.equal(nativeCalls().length, sent);
  });

  test("a streamed response is its caller's from response.created on, also when the stream is cut before it completes", async () => {
    const other = bearer(await scopedKey(fixture.gw.store, ['responses']));
    for (const cut of [false, true]) {
      const id = unique('resp');
      fixture.mock.enqueue(nativeStream(id, cut));
      const streamed = await readStream(
        fixture.url('/v1/responses'),
        JSON.stringify({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], stream: true }),
        authHeaders(),
      );
      const events = namedEvents(streamed.text).map((e) => e.event);
      assert.deepEqual(
        events,
        cut
          ? ['response.created', 'response.output_text.delta', 'error']
          : ['response.created', 'response.output_text.delta', 'response.completed'],
      );
      const refused = await create(other, { previous_response_id: id });
      assert.equal(refused.status, 404, `cut: ${cut}`);
      const continued = await create(authHeaders(), { previous_response_id: id });
      assert.equal(continued.status, 200, `cut: ${cut}: ${continued.text}`);
    }
  });

  test('a native response made with store: false is kept nowhere: nothing to continue, by anyone', async () => {
    const ids = { response: unique('resp'), message: unique('msg'), container: unique('cntr') };
    fixture.mock.enqueue(nativeJson(ids));
    assert.equal((await create(authHeaders(), { store: false })).status, 200);
    assert.equal((await create(authHeaders(), { previous_response_id: ids.response })).status, 404);
  });

  test('GET and DELETE /v1/responses/{id} of a native id are not forwarded: a 404 for everyone, owner included', async () => {
    const ids = { response: unique('resp'), message: unique('msg'), container: unique('cntr') };
    fixture.mock.enqueue(nativeJson(ids));
    assert.equal((await create(authHeaders(), {})).status, 200);
    const sent = fixture.mock.requests.length;
    for (const method of ['GET', 'DELETE']) {
      const answer = await call(fixture.url(`/v1/responses/${ids.response}`), {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(answer.status, 404, method);
      assert.equal(answer.json.code, 'response_not_found');
    }
    assert.equal(fixture.mock.requests.length, sent, 'nothing asked upstream');
  });
});

describe('an Anthropic code-execution container belongs to the caller whose call made it', () => {
  const KEY = 'sk-ant-native-owner-key-0123456789';
  const fixture = useGateway({
    upstream: 'anthropic',
    key: KEY,
    models: ['- { id: claude, upstream: claude, upstream_model: claude-sonnet-4-5 }'],
  });
  const send = (credential: string, fields: Record<string, unknown>) =>
    call(`${fixture.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': credential, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'run it' }],
        ...fields,
      }),
    });

  test("JSON and streamed: the container is its maker's; another caller naming it gets a 404 in Anthropic's shape", async () => {
    const other = await scopedKey(fixture.gw.store, ['messages']);
    for (const stream of [false, true]) {
      const container = unique('container');
      fixture.mock.enqueue(stream ? { kind: 'stream', container } : { kind: 'message', container });
      const made = stream
        ? await readStream(
            `${fixture.gw.url}/v1/messages`,
            JSON.stringify({
              model: 'claude',
              max_tokens: 16,
              stream: true,
              messages: [{ role: 'user', content: 'run it' }],
            }),
            { 'x-api-key': ADMIN_TOKEN, 'content-type': 'application/json' },
          )
        : await send(ADMIN_TOKEN, {});
      assert.equal(made.status, 200);
      assert.ok(made.text.includes(container));
      const sent = fixture.mock.messageRequests().length;
      for (const reference of [container, { id: container }]) {
        const refused = await send(other, { container: reference });
        assert.equal(refused.status, 404, `stream: ${stream}`);
        assert.equal(refused.json.code, 'response_not_found');
        assert.equal((refused.json as { error?: { type?: string } }).error?.type, 'not_found_error');
        assert.deepEqual(refused.json.details, { id: container, field: 'container' });
      }
      assert.equal(fixture.mock.messageRequests().length, sent);
      const reused = await send(ADMIN_TOKEN, { container });
      assert.equal(reused.status, 200, reused.text);
      assert.equal(
        (fixture.mock.messageRequests().at(-1)?.body as { container?: string } | undefined)?.container,
        container,
      );
    }
  });
});

describe('with Redis, every replica knows whose native id it is', { skip: await redisSkipReason() }, () => {
  let mock: OpenAiUpstream | undefined;
  let replicas: TestGateway[] = [];
  const issued = newApiKey('dev');
  before(async () => {
    mock = await startOpenAiUpstream();
    const env = { UPSTREAM_BASE_URL: mock.baseUrl, UPSTREAM_API_KEY: UPSTREAM_KEY, UPSTREAM_KIND: 'openai', REDIS_URL };
    replicas = [await startGateway({ env }), await startGateway({ env })];
  });
  after(async () => {
    for (const replica of replicas) await replica.close();
    await mock?.close();
    const client = await connectRedis(REDIS_URL);
    await client.hdel('gw:keys:dev', issued.keyId);
    await client.quit();
  });

  test('made through one replica: continued by its owner through the other, refused to another caller there', async () => {
    const [one, two] = replicas as [TestGateway, TestGateway];
    const client = await connectRedis(REDIS_URL);
    try {
      await new RedisKeyStore(client, 'gw:keys:dev').create({
        keyId: issued.keyId,
        environment: 'dev',
        hash: issued.hash,
        name: 'other',
        routes: ['responses'],
        models: ['*'],
        createdMs: Date.now(),
      });
    } finally {
      await client.quit();
    }
    const ids = { response: unique('resp'), message: unique('msg'), container: unique('cntr') };
    mock?.enqueue(nativeJson(ids));
    const body = (fields: Record<string, unknown>) =>
      JSON.stringify({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'web_search' }], ...fields });
    assert.equal(
      (await call(`${one.url}/v1/responses`, { method: 'POST', headers: authHeaders(), body: body({}) })).status,
      200,
    );
    const refused = await call(`${two.url}/v1/responses`, {
      method: 'POST',
      headers: bearer(issued.key),
      body: body({ previous_response_id: ids.response }),
    });
    assert.equal(refused.status, 404);
    const continued = await call(`${two.url}/v1/responses`, {
      method: 'POST',
      headers: authHeaders(),
      body: body({ previous_response_id: ids.response }),
    });
    assert.equal(continued.status, 200, continued.text);
  });
});
