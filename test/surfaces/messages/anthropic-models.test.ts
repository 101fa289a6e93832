/**
 * Anthropic's models API on the drop-in paths: `GET /v1/models` and `/v1/models/{id}` called by an Anthropic client
 * (x-api-key or anthropic-version) answer Anthropic's shape, through the real @anthropic-ai/sdk (auto-paging,
 * retrieve) and raw calls for the paging edges, with the same rights as the OpenAI shape.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { ADMIN_TOKEN, useGateway } from '../../helpers/gateway.js';
import { call, type Answer } from '../../helpers/http.js';
import { keysCommand } from '../../../src/cli/keys-command.js';
import { SqliteKeyStore } from '../../../src/store/sqlite/sqlite-keys.js';

const CONFIG = {
  name: 'models.json',
  text: JSON.stringify({
    models: [
      {
        id: 'claude-haiku-4-5',
        upstream: 'default',
        upstream_model: 'gpt-4o-mini',
        created_at: '2025-10-01T12:30:00+02:00',
        context_window: 200000,
        aliases: ['claude-haiku-4-5-20251001'],
      },
      { id: 'claude-opus-4-1', upstream: 'default', upstream_model: 'gpt-4o' },
      { id: 'claude-sonnet-4-5', upstream: 'default', upstream_model: 'gpt-4o', created_at: '2025-09-29T00:00:00Z' },
      {
        id: 'text-embed',
        upstream: 'default',
        upstream_model: 'text-embedding-3-small',
        type: 'embedding',
        dimensions: 4,
      },
    ],
  }),
};
/** What the admin sees in Anthropic's shape: the declared chat models, the default upstream's two, the dev echo; by id. */
const ALL = ['claude-haiku-4-5', 'claude-opus-4-1', 'claude-sonnet-4-5', 'echo', 'gpt-4o', 'gpt-4o-mini'];

interface ModelList {
  data: Array<{ type: string; id: string; display_name: string; created_at: string; max_input_tokens?: number }>;
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

describe("Anthropic's models API (GET /v1/models with x-api-key or anthropic-version)", () => {
  const fixture = useGateway({ configFile: CONFIG });
  const sdk = (apiKey = ADMIN_TOKEN) => new Anthropic({ baseURL: fixture.gw.url, apiKey, maxRetries: 0 });
  /** As Claude Code calls it: x-api-key and the 2023-06-01 version. */
  const get = (path: string, key = ADMIN_TOKEN): Promise<Answer> =>
    call(fixture.url(path), { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
  const ids = (answer: Answer) => (answer.json as unknown as ModelList).data.map((m) => m.id);
  let messagesKey = '';
  let chatKey = '';

  before(async () => {
    const keys = new SqliteKeyStore(fixture.gw.store.db);
    const create = async (...args: string[]): Promise<string> => {
      const out: string[] = [];
      assert.equal(
        await keysCommand(keys, 'dev', ['create', ...args], { out: (l) => out.push(l), err: (l) => out.push(l) }),
        0,
        out.join('\n'),
      );
      return out.find((l) => l.startsWith('key: '))?.slice(5) ?? '';
    };
    // Claude Code's key: the messages right only, two models (one of them by its alias only).
    messagesKey = await create(
      '--name',
      'claude-code',
      '--models',
      'claude-sonnet-4-5,claude-haiku-4-5-20251001',
      '--routes',
      'messages',
    );
    chatKey = await create('--name', 'chat-only', '--models', '*', '--routes', 'chat');
  });

  test('the SDK lists every model across pages (limit 2: auto-paging by after_id) and retrieves one', async () => {
    const client = sdk();
    const seen: string[] = [];
    const page = await client.models.list({ limit: 2 });
    assert.deepEqual(
      [page.data.map((m) => m.id), page.has_more, page.first_id, page.last_id],
      [ALL.slice(0, 2), true, ALL[0], ALL[1]],
    );
    for await (const model of client.models.list({ limit: 2 })) {
      assert.equal(model.type, 'model');
      assert.match(model.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, 'RFC 3339');
      assert.equal(typeof model.display_name, 'string');
      seen.push(model.id);
    }
    assert.deepEqual(seen, ALL, 'every chat model once, in order; the embedding model is not a Messages model');
    const one = await client.models.retrieve('claude-haiku-4-5');
    assert.deepEqual(one, {
      type: 'model',
      id: 'claude-haiku-4-5',
      display_name: 'claude-haiku-4-5',
      created_at: '2025-10-01T10:30:00Z',
      max_input_tokens: 200000,
    });
    assert.equal(
      (await client.models.retrieve('claude-haiku-4-5-20251001')).id,
      'claude-haiku-4-5',
      'an alias resolves to its model, as Anthropic does',
    );
    await assert.rejects(client.models.retrieve('no-such-model'), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError, String(e));
      assert.deepEqual((e.error as { type: string; error: { type: string } }).error.type, 'not_found_error');
      return true;
    });
  });

  test("Claude Code's discovery call (x-api-key, limit=1000): one page, Anthropic's fields, a request-id", async () => {
    const answer = await get('/v1/models?limit=1000');
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.headers['request-id']);
    const list = answer.json as unknown as ModelList;
    assert.deepEqual(
      [ids(answer), list.has_more, list.first_id, list.last_id],
      [ALL, false, 'claude-haiku-4-5', 'gpt-4o-mini'],
    );
    assert.deepEqual(
      list.data.find((m) => m.id === 'claude-opus-4-1'),
      { type: 'model', id: 'claude-opus-4-1', display_name: 'claude-opus-4-1', created_at: '1970-01-01T00:00:00Z' },
    );
    assert.equal(ids(await get('/v1/models')).length, ALL.length, 'default limit 20 holds them all');
    // Without Anthropic's headers, the same path is OpenAI's list.
    const openai = await call(fixture.url('/v1/models'), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(openai.json.object, 'list');
    assert.ok((openai.json.data as Array<{ id: string }>).some((m) => m.id === 'text-embed'));
  });

  test('paging edges: after_id, before_id (backwards, has_more meaning "more before"), ids not listed, the end', async () => {
    const page = async (query: string) => {
      const answer = await get(`/v1/models?${query}`);
      assert.equal(answer.status, 200, answer.text);
      const list = answer.json as unknown as ModelList;
      return [ids(answer), list.has_more, list.first_id, list.last_id];
    };
    assert.deepEqual(await page('limit=2&after_id=claude-opus-4-1'), [
      ['claude-sonnet-4-5', 'echo'],
      true,
      'claude-sonnet-4-5',
      'echo',
    ]);
    assert.deepEqual(await page('limit=3&after_id=echo'), [['gpt-4o', 'gpt-4o-mini'], false, 'gpt-4o', 'gpt-4o-mini']);
    assert.deepEqual(await page('after_id=gpt-4o-mini'), [[], false, null, null]);
    assert.deepEqual(
      await page('limit=2&after_id=d'),
      [['echo', 'gpt-4o'], true, 'echo', 'gpt-4o'],
      'a place in the order, listed or not',
    );
    assert.deepEqual(await page('limit=2&before_id=echo'), [
      ['claude-opus-4-1', 'claude-sonnet-4-5'],
      true,
      'claude-opus-4-1',
      'claude-sonnet-4-5',
    ]);
    assert.deepEqual(await page('limit=2&before_id=claude-opus-4-1'), [
      ['claude-haiku-4-5'],
      false,
      'claude-haiku-4-5',
      'claude-haiku-4-5',
    ]);
    assert.deepEqual(await page('before_id=a'), [[], false, null, null]);
    // The SDK pages backwards from a before_id by first_id until has_more is false.
    const back: string[] = [];
    for await (const model of sdk().models.list({ limit: 2, before_id: 'gpt-4o-mini' })) back.push(model.id);
    assert.deepEqual(back.sort(), ALL.slice(0, -1));
  });

  test("invalid paging is a 400 in Anthropic's error shape with our code and details", async () => {
    for (const [query, parameter] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1e2', 'limit'],
      ['after_id=', 'after_id'],
      ['after_id=a&after_id=b', 'after_id'],
      [`before_id=${'x'.repeat(1025)}`, 'before_id'],
      ['after_id=a&before_id=b', 'before_id'],
    ] as const) {
      const answer = await get(`/v1/models?${query}`);
      const body = answer.json as {
        type?: string;
        error?: { type?: string; message?: string };
        code?: string;
        details?: { parameter?: string };
      };
      assert.deepEqual(
        [answer.status, body.type, body.error?.type, body.code, body.details?.parameter],
        [400, 'error', 'invalid_request_error', 'invalid_query_parameter', parameter],
        `${query}: ${answer.text}`,
      );
      assert.equal(typeof body.error?.message, 'string');
    }
    const post = await call(fixture.url('/v1/models'), {
      method: 'POST',
      headers: { 'x-api-key': ADMIN_TOKEN, 'anthropic-version': '2023-06-01' },
    });
    assert.deepEqual(
      [post.status, post.headers.allow, (post.json as { error?: { type?: string } }).error?.type, post.json.code],
      [405, 'GET, HEAD', 'invalid_request_error', 'method_not_allowed'],
    );
    assert.equal((await get('/v1/models?limit=1000')).status, 200);
    assert.equal((await get('/v1/models?limit=1')).status, 200);
  });

  test("rights: a key with the messages right lists only the models it may call; others are refused in Anthropic's shape", async () => {
    const listed = await get('/v1/models', messagesKey);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      ids(listed),
      ['claude-haiku-4-5-20251001', 'claude-sonnet-4-5'],
      'a model allowed only by its alias is listed under that alias',
    );
    assert.equal((await get('/v1/models/claude-sonnet-4-5', messagesKey)).status, 200);
    for (const hidden of ['claude-haiku-4-5', 'claude-opus-4-1', 'echo']) {
      const answer = await get(`/v1/models/${hidden}`, messagesKey);
      assert.deepEqual(
        [answer.status, (answer.json as { error?: { type?: string } }).error?.type, answer.json.code],
        [404, 'not_found_error', 'model_not_found'],
        hidden,
      );
    }
    // The SDK (Bearer, anthropic-version) with the same key.
    const viaSdk: string[] = [];
    for await (const model of sdk(messagesKey).models.list()) viaSdk.push(model.id);
    assert.deepEqual(viaSdk, ['claude-haiku-4-5-20251001', 'claude-sonnet-4-5']);

    const chatOnly = await get('/v1/models', chatKey);
    assert.deepEqual(
      [
        chatOnly.status,
        (chatOnly.json as { error?: { type?: string } }).error?.type,
        chatOnly.json.code,
        chatOnly.json.details?.allowed_routes,
      ],
      [403, 'permission_error', 'route_not_allowed', ['chat']],
    );
    const refusedHeaders: Array<Record<string, string>> = [
      { 'x-api-key': 'wrong-key', 'anthropic-version': '2023-06-01' },
      { 'anthropic-version': '2023-06-01' },
      { 'x-api-key': 'wrong-key' },
    ];
    for (const headers of refusedHeaders) {
      const refused = await call(fixture.url('/v1/models'), { headers });
      const body = refused.json as { type?: string; error?: { type?: string } };
      assert.deepEqual(
        [refused.status, body.type, body.error?.type],
        [401, 'error', 'authentication_error'],
        JSON.stringify(headers),
      );
    }
    await assert.rejects(sdk('wrong-key').models.list(), (e: unknown) => e instanceof Anthropic.AuthenticationError);
  });
});
