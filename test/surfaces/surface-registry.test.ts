/**
 * The API surfaces as registered descriptors (surfaces/surface-registry.ts, docs/architecture.md "API surfaces"): the
 * registry agrees with config's grantable routes and OAuth scopes and keeps `/v1/?route=` as it was; and a surface
 * the gateway has never heard of, declared only as a descriptor and handed to buildApp beside the registry's, is
 * served by the same mounting: its own paths (a plain one, and Google-style `{model}:action` paths told apart by the
 * action), its credential header, its error shape (JSON and in-stream), its own query names, its JSON-array stream,
 * its token count, its webhook events and its cache key, through the real gateway and a real upstream socket.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  startOpenAiUpstream,
  MOCK_CONTENT,
  MOCK_STREAM_CONTENT,
  type OpenAiUpstream,
} from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { SURFACES } from '../../src/surfaces/surface-registry.js';
import {
  CANARY_EVENT_KINDS,
  DEFAULT_OAUTH_SCOPES,
  GRANTABLE_ROUTES,
  WEBHOOK_EVENT_KINDS,
} from '../../src/config/schema.js';
import { API_NAMES, type ApiNames } from '../../src/names/api-names.js';
import type { SurfaceDescriptor, StreamMode } from '../../src/surfaces/descriptor.js';
import type { ApiSurface, StreamEncoder, SurfaceRequest } from '../../src/surfaces/surface.js';
import type { ErrorShape } from '../../src/request/request-state.js';
import type { ChatRequestBody } from '../../src/providers/provider-contract.js';
import { PROJECT_ROOT } from '../helpers/paths.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { waitForValue } from '../helpers/wait.js';
import { SqliteUsageStore } from '../../src/store/sqlite/sqlite-usage.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/config/config-error.js';
import { createLogger } from '../../src/observability/logger.js';
import { openDependencies } from '../../src/dependencies.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { makeSurfaceCallHandler, type PipelineDeps } from '../../src/routes/surface-call.js';

describe('the surface registry', () => {
  test('every surface is a grantable route, granted by its OAuth scope by default, with events config knows', () => {
    assert.deepEqual(
      SURFACES.map((s) => s.route),
      ['chat', 'responses', 'messages', 'gemini'],
    );
    for (const surface of SURFACES) {
      assert.ok((GRANTABLE_ROUTES as readonly string[]).includes(surface.route), surface.route);
      assert.deepEqual(DEFAULT_OAUTH_SCOPES[surface.oauthScope], [surface.route], surface.oauthScope);
      // A surface added after the first release starts its kinds in the canary stage (docs/webhooks.md).
      for (const kind of [surface.events.completed, surface.events.failed])
        assert.ok(([...WEBHOOK_EVENT_KINDS, ...CANARY_EVENT_KINDS] as readonly string[]).includes(kind), kind);
      assert.ok(
        surface.endpoints.some((e) => e.operation === 'generate'),
        `${surface.route} has a generate endpoint`,
      );
    }
  });
  test('the names of each surface are its entry in the names table: route, default scope, event kinds and stage, native API', () => {
    for (const surface of SURFACES) {
      const entry: ApiNames | undefined = API_NAMES.find((api) => api.route === surface.route);
      assert.ok(entry, `${surface.route} has an entry in src/names/api-names.ts`);
      assert.equal(entry.scope ?? `${entry.route}:write`, surface.oauthScope, surface.route);
      assert.deepEqual(entry.events, [surface.events.completed, surface.events.failed], surface.route);
      const stage = entry.stage === 'canary' ? CANARY_EVENT_KINDS : WEBHOOK_EVENT_KINDS;
      assert.ok(stage.includes(surface.events.completed) && stage.includes(surface.events.failed), surface.route);
      assert.equal(entry.native === true, surface.native !== undefined, `${surface.route}: native`);
      if (surface.native) assert.equal(surface.native.api, surface.route);
    }
  });

  test("each surface's call handler is named for its surface (stack traces, route listings)", () => {
    // Making a handler only keeps what it is given; nothing of the deps or the translation is used until a call.
    const names = SURFACES.map(
      (descriptor) => makeSurfaceCallHandler(descriptor, {} as ApiSurface, {} as PipelineDeps).name,
    );
    assert.deepEqual(names, ['chatCall', 'responsesCall', 'messagesCall', 'geminiCall']);
  });

  test('the names of the newest surface are written once: in the names table and its own folder, in no other file of src/', () => {
    const src = join(PROJECT_ROOT, 'src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const gemini = SURFACES.find((s) => s.route === 'gemini');
    assert.ok(gemini);
    // Its event kinds, its default scope, and its route beside another surface's in a list of rights or a union of
    // native APIs (a provider's wire format of the same name is the provider's own, config/provider-presets.ts).
    const names = [`'${gemini.events.completed}'`, `'${gemini.events.failed}'`, `'${gemini.oauthScope}'`];
    const written = new Set<string>();
    for (const file of files(src)) {
      const text = readFileSync(file, 'utf8');
      const path = relative(src, file).split('\\').join('/');
      if (names.some((name) => text.includes(name)) || /'messages'(, | \| )'gemini'/.test(text)) written.add(path);
    }
    assert.deepEqual(
      [...written].filter((path) => !path.startsWith('surfaces/gemini/')),
      ['names/api-names.ts'],
    );
  });
});

/** The parrot API's error shape: ours plus its own `squawk`; in a stream a data-only frame (no `event:` line). */
const PARROT_ERRORS: ErrorShape = {
  name: 'parrot',
  body: (body, status) => ({ ...body, squawk: { status, said: body.message } }),
  streamFrame: (body, status) => `data: ${JSON.stringify({ squawk: { status, code: body.code } })}\n\n`,
};

const pathCall = (request: SurfaceRequest): string => (request.params as { call: string }).call;
const modelOf = (request: SurfaceRequest): string => pathCall(request).slice(0, pathCall(request).lastIndexOf(':'));
const streamOf = (request: SurfaceRequest): StreamMode | false => {
  const alt = (request.query as { alt?: unknown }).alt;
  return alt === 'sse' ? 'sse' : alt === 'array' ? 'json-array' : false;
};
const textOf = (body: unknown): string => (body as { text: string }).text;
const asChat = (request: SurfaceRequest): ChatRequestBody => ({
  model: modelOf(request),
  messages: [{ role: 'user', content: textOf(request.body) }],
});

function parrotEncoder(mode: StreamMode | false): StreamEncoder {
  let first = true;
  const element = (json: string) => {
    const frame = mode === 'json-array' ? `${first ? '' : ','}${json}` : `data: ${json}\n\n`;
    first = false;
    return frame;
  };
  return {
    open: () => (mode === 'json-array' ? '[' : ''),
    chunk: (item) => {
      const text = item.internal === true ? undefined : item.chunk.choices[0]?.delta.content;
      return typeof text === 'string' && text !== '' ? element(JSON.stringify({ said: text })) : '';
    },
    end: () => (mode === 'json-array' ? ']' : 'data: {"done":true}\n\n'),
    fail: (error, shape) =>
      mode === 'json-array'
        ? `${element(JSON.stringify(shape.body(error.toBody(), error.status)))}]`
        : shape.streamFrame(error.toBody(), error.status),
  };
}

const PARROT_TRANSLATION: ApiSurface = {
  route: 'parrot',
  forwardsRawBody: false,
  // What the descriptor read of the URL comes with the call: the model and the stream's form.
  toChat: (body, call) => ({
    model: call.pathModel as string,
    messages: [{ role: 'user', content: textOf(body) }],
    ...(call.pathStream ? { stream: true } : {}),
  }),
  answer: (completion) =>
    JSON.stringify({
      said: (JSON.parse(completion.toString('utf8')) as { choices: Array<{ message: { content: string } }> }).choices[0]
        ?.message.content,
    }),
  encoder: (call) => parrotEncoder(call.pathStream ?? false),
  isCompleteEnd: (frame) => frame === ']' || frame === 'data: {"done":true}\n\n',
};

const textSchema = { type: 'object', required: ['text'], properties: { text: { type: 'string', minLength: 1 } } };

/**
 * A made-up API: `POST /parrot/v1/birds/{model}:say` (the chat pipeline) and `:count` (a token count), credentials in
 * `x-parrot-key`, the model in the path, streaming by `?alt=sse|array`, its own `pageToken` query. Its route `parrot`
 * and its scope `parrot:write` are its own, declared here alone (no entry in src/names/api-names.ts): mounting it
 * makes `parrot` a right a key, a scope or a Basic user can be given, and what its calls are recorded as.
 */
const PARROT: SurfaceDescriptor = {
  route: 'parrot',
  oauthScope: 'parrot:write',
  api: {
    claims: (url) => url.startsWith('/parrot/'),
    errors: PARROT_ERRORS,
    ownQuery: new Set(['pageToken']),
    credentialHint: 'send the key as "x-parrot-key: <key>"',
  },
  endpoints: [
    { method: 'POST', path: '/parrot/v1/birds/:call', action: 'say', operation: 'generate', bodySchema: textSchema },
    {
      method: 'POST',
      path: '/parrot/v1/birds/:call',
      action: 'count',
      operation: 'count_tokens',
      bodySchema: textSchema,
    },
  ],
  credential: (headers) => {
    const key = headers['x-parrot-key'];
    return typeof key === 'string' && key !== '' ? `Bearer ${key}` : undefined;
  },
  modelOf,
  streamOf,
  events: {
    completed: 'parrot.completed',
    failed: 'parrot.failed',
    prompt: (body) => ({ text: (body as { text?: unknown } | undefined)?.text ?? null }),
  },
  // Everything of the URL that changes the answer: the model and action, and the stream's form.
  cache: { cacheable: () => true, keyOf: (request) => `${pathCall(request)} ${String(streamOf(request))}` },
  translation: () => PARROT_TRANSLATION,
  tokenCount: { toChat: asChat, answer: (tokens) => ({ tokens }) },
};

const SAY = '/parrot/v1/birds/gpt-4o-mini:say';
const parrotHeaders = { 'x-parrot-key': ADMIN_TOKEN, 'content-type': 'application/json' };

const ISSUER = 'https://issuer.parrot.test';
const AUDIENCE = 'parrot-gateway';

describe('a new surface, declared only as a descriptor, mounts through the registry’s mounting', () => {
  let mock: OpenAiUpstream;
  let receiver: WebhookReceiver;
  let gw: TestGateway;
  let jwks: Server;
  let signer: Awaited<ReturnType<typeof generateKeyPair>>;
  before(async () => {
    mock = await startOpenAiUpstream();
    receiver = await startWebhookReceiver();
    signer = await generateKeyPair('RS256', { extractable: true });
    const published = [{ ...(await exportJWK(signer.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
    jwks = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const config = {
      // No scopes named: each route's default scope, the mounted surface's own (`parrot:write`) included.
      auth: {
        oauth: {
          issuer: ISSUER,
          audience: AUDIENCE,
          jwks_url: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
        },
      },
      cache: { enabled: true },
      retry: { attempts: 1 },
      webhooks: {
        allow_private_addresses: true,
        poll_interval_ms: 50,
        // A kind a new release adds starts `off` (docs/webhooks.md): the operator turns it on.
        rollout: { 'parrot.completed': 'all' },
        subscriptions: [
          {
            id: 'rx',
            url: receiver.url,
            secrets: [{ env: 'WH_SECRET' }],
            events: ['parrot.completed'],
            include_content: true,
          },
        ],
      },
    };
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, WH_SECRET: 'parrot-webhook-secret-0123456789' },
      configFile: { name: 'parrot.json', text: JSON.stringify(config) },
      surfaces: [...SURFACES, PARROT],
    });
  });
  after(async () => {
    await receiver.close();
    await gw.close();
    await mock.close();
    await new Promise((resolve) => jwks.close(resolve));
  });
  afterEach(() => mock.reset());

  test('its path runs the chat pipeline: the model from the path, the body translated, the answer in its shape, its event', async () => {
    const answer = await call(`${gw.url}${SAY}`, {
      method: 'POST',
      headers: parrotHeaders,
      body: JSON.stringify({ text: 'polly wants a cracker' }),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json, { said: MOCK_CONTENT });
    const [upstream] = mock.chatRequests();
    assert.deepEqual(upstream?.json, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'polly wants a cracker' }],
    });
    const [delivery] = await receiver.waitFor(1);
    assert.ok(delivery);
    const event = verifyWebhook({
      body: delivery.body,
      headers: delivery.headers,
      secret: 'parrot-webhook-secret-0123456789',
    });
    assert.equal(event.event, 'parrot.completed');
    assert.equal(event.data.model, 'gpt-4o-mini');
    assert.deepEqual(event.data.content, { text: 'polly wants a cracker', answer: MOCK_CONTENT });
  });

  test('its errors are in its shape: no credential, a bad body, an action it does not have', async () => {
    const unauthenticated = await call(`${gw.url}${SAY}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    });
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.json.code, 'authentication_required');
    assert.deepEqual(unauthenticated.json.squawk, { status: 401, said: unauthenticated.json.message });
    const invalid = await call(`${gw.url}${SAY}`, { method: 'POST', headers: parrotHeaders, body: '{"text":""}' });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.code, 'validation_failed');
    assert.equal((invalid.json.squawk as { status: number }).status, 400);
    const unknown = await call(`${gw.url}/parrot/v1/birds/gpt-4o-mini:sing`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"hi"}',
    });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.json.details?.actions, ['say', 'count']);
    assert.equal((unknown.json.squawk as { status: number }).status, 404);
    assert.equal(mock.chatRequests().length, 0);
  });

  test('its own query names are not credentials there (elsewhere they are), and a refusal carries its hint', async () => {
    const paged = await call(`${gw.url}${SAY}?pageToken=abc`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"hi"}',
    });
    assert.equal(paged.status, 200, paged.text);
    const onChat = await call(`${gw.url}/v1/chat/completions?pageToken=abc`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{}',
    });
    assert.equal(onChat.json.code, 'credentials_in_query');
    const keyInUrl = await call(`${gw.url}${SAY}?api_key=abc`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"hi"}',
    });
    assert.equal(keyInUrl.status, 400);
    assert.equal(keyInUrl.json.code, 'credentials_in_query');
    assert.equal(keyInUrl.json.details?.hint, 'send the key as "x-parrot-key: <key>"');
    assert.ok('squawk' in keyInUrl.json);
  });

  test('a JSON-array stream goes out as application/json; an SSE one fails with its own data-only error frame', async () => {
    mock.enqueue({ kind: 'stream' });
    const array = await call(`${gw.url}${SAY}?alt=array`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"hi"}',
    });
    assert.equal(array.status, 200, array.text);
    assert.match(String(array.headers['content-type']), /^application\/json/);
    assert.deepEqual(
      array.json,
      MOCK_STREAM_CONTENT.map((said) => ({ said })),
    );
    mock.enqueue({ kind: 'stream-error-event', afterChunks: 1 });
    const failed = await call(`${gw.url}${SAY}?alt=sse`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"hi"}',
    });
    assert.match(String(failed.headers['content-type']), /^text\/event-stream/);
    const frames = failed.text.split('\n\n').filter((f) => f !== '');
    assert.equal(frames[0], `data: ${JSON.stringify({ said: MOCK_STREAM_CONTENT[0] })}`);
    assert.equal(frames.at(-1), `data: ${JSON.stringify({ squawk: { status: 502, code: 'upstream_stream_error' } })}`);
    assert.ok(!failed.text.includes('event:'), 'no event lines');
  });

  test('its token count answers in its shape without an upstream call', async () => {
    const counted = await call(`${gw.url}/parrot/v1/birds/gpt-4o-mini:count`, {
      method: 'POST',
      headers: parrotHeaders,
      body: '{"text":"how many tokens is this"}',
    });
    assert.equal(counted.status, 200, counted.text);
    assert.equal(typeof counted.json.tokens, 'number');
    assert.ok((counted.json.tokens as number) > 0);
    assert.equal(mock.requests.length, 0);
  });

  test('its cache key holds what its URL says: the same body to another model, or streamed, is another request', async () => {
    const body = JSON.stringify({ text: `cache me ${Date.now()}` });
    const post = (path: string) => call(`${gw.url}${path}`, { method: 'POST', headers: parrotHeaders, body });
    mock.enqueue({ kind: 'json' }, { kind: 'json' }, { kind: 'stream' });
    const answers = [
      await post(SAY),
      await post(SAY),
      await post('/parrot/v1/birds/gpt-4o:say'),
      await post(`${SAY}?alt=array`),
      await post(`${SAY}?alt=array`),
    ];
    assert.deepEqual(
      answers.map((a) => a.headers['x-cache']),
      ['miss', 'hit', 'miss', 'miss', 'hit'],
    );
    assert.deepEqual(
      mock.chatRequests().map((r) => (r.json as { model: string }).model),
      ['gpt-4o-mini', 'gpt-4o', 'gpt-4o-mini'],
    );
    // A stored JSON-array stream is replayed with its own content type.
    assert.match(String(answers[4]?.headers['content-type']), /^application\/json/);
    assert.deepEqual(answers[4]?.json, answers[3]?.json);
  });

  test('an Idempotency-Key covers its URL too: the same key and body to another model is another request', async () => {
    const headers = {
      ...parrotHeaders,
      'idempotency-key': `parrot-${Date.now()}`,
      'cache-control': 'no-store, no-cache',
    };
    const body = '{"text":"once"}';
    const first = await call(`${gw.url}${SAY}`, { method: 'POST', headers, body });
    const replayed = await call(`${gw.url}${SAY}`, { method: 'POST', headers, body });
    const otherModel = await call(`${gw.url}/parrot/v1/birds/gpt-4o:say`, { method: 'POST', headers, body });
    assert.deepEqual(
      [first.status, replayed.status, replayed.headers['idempotent-replayed'], otherModel.status],
      [200, 200, 'true', 422],
    );
    assert.equal(otherModel.json.code, 'idempotency_key_mismatch');
    assert.ok('squawk' in otherModel.json);
    assert.equal(mock.chatRequests().length, 1);
  });

  const say = (key: string, path = SAY) =>
    call(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'x-parrot-key': key, 'content-type': 'application/json' },
      body: '{"text":"who may talk"}',
    });
  const createKey = (routes: string[]) =>
    call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      disclosesKey: true,
      body: JSON.stringify({ name: `parrot-test-${routes.join('-')}`, routes, models: ['*'] }),
    });

  test('its route is a right of its own: a key given only it calls it; a key without it gets 403 in its shape', async () => {
    const parrotKey = await createKey(['parrot']);
    assert.equal(parrotKey.status, 201, parrotKey.text);
    assert.deepEqual(parrotKey.json.routes, ['parrot']);
    const chatKey = await createKey(['chat']);
    assert.equal(chatKey.status, 201, chatKey.text);
    const allowed = await say(parrotKey.json.key as string);
    assert.equal(allowed.status, 200, allowed.text);
    assert.deepEqual(allowed.json, { said: MOCK_CONTENT });
    const refused = await say(chatKey.json.key as string);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.code, 'route_not_allowed');
    assert.deepEqual(refused.json.details, { route: 'parrot', allowed_routes: ['chat'] });
    assert.deepEqual(refused.json.squawk, { status: 403, said: refused.json.message });
    // The right is only that route: the same key elsewhere is refused.
    const onChat = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${parrotKey.json.key as string}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.deepEqual([onChat.status, onChat.json.code], [403, 'route_not_allowed']);
    assert.equal(mock.chatRequests().length, 1);

    // Its calls are recorded under its name: the usage records and the metrics.
    const ids = [String(allowed.headers['x-request-id']), String(refused.headers['x-request-id'])];
    const usage = new SqliteUsageStore(gw.store.db);
    const records = await waitForValue(
      'the parrot calls’ usage records',
      async () => (await usage.recent(100, false)).filter((r) => ids.includes(r.requestId)),
      (found) => found.length === 2,
    );
    assert.deepEqual(
      ids.map((id) => records.find((r) => r.requestId === id)).map((r) => [r?.route, r?.status, r?.code]),
      [
        ['parrot', 200, null],
        ['parrot', 403, 'route_not_allowed'],
      ],
    );
    const metrics = await call(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(metrics.status, 200);
    const lines = metrics.text.split('\n').filter((l) => l.startsWith('llmgw_requests_total{'));
    assert.ok(
      lines.some((l) => l.includes('route="parrot"') && l.includes('status="200"')),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => l.includes('route="parrot"') && l.includes('code="route_not_allowed"')),
      lines.join('\n'),
    );
  });

  test('the admin API grants the mounted routes and no other: an unknown route is refused, listing the mounted one', async () => {
    const unknown = await createKey(['widgets']);
    assert.equal(unknown.status, 400, unknown.text);
    const problem = (unknown.json.details as { errors: Array<{ field: string; allowed: string[] }> }).errors[0];
    assert.equal(problem?.field, 'routes[0]');
    assert.deepEqual(problem?.allowed, [...GRANTABLE_ROUTES, 'parrot']);
  });

  test('an OAuth token granted its default scope (its descriptor’s `parrot:write`, no scopes configured) calls it', async () => {
    const token = (scope: string) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ scope })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject('bird-watcher')
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(signer.privateKey);
    };
    const granted = await say(`${await token('parrot:write')}`);
    assert.equal(granted.status, 200, granted.text);
    const other = await say(`${await token('chat:write')}`);
    assert.deepEqual(
      [other.status, other.json.code, other.json.details?.allowed_routes],
      [403, 'route_not_allowed', ['chat']],
    );
  });
});

describe('a route the config grants is checked against the surfaces the app mounts', () => {
  test('OAuth scopes granting `parrot` start the app that mounts it; without the surface the start fails naming the field', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-routes-'));
    const file = join(dataDir, 'routes.json');
    writeFileSync(
      file,
      JSON.stringify({
        auth: {
          oauth: {
            issuer: ISSUER,
            audience: AUDIENCE,
            jwks_url: 'http://127.0.0.1:9/jwks.json',
            scopes: { 'birds:write': ['parrot', 'chat'] },
          },
        },
      }),
    );
    // Parsing takes any well-formed route name: the config is read before the app knows its surfaces.
    const config = loadConfig(
      {
        GATEWAY_ENV: 'dev',
        ADMIN_TOKEN,
        DATA_DIR: dataDir,
        GATEWAY_CONFIG: file,
        UPSTREAM_BASE_URL: 'http://127.0.0.1:9',
      },
      { version: '0.0.0-test' },
    );
    assert.deepEqual(config.oauth?.scopes, { 'birds:write': ['parrot', 'chat'] });
    const logger = createLogger({ level: 'silent', secrets: [], destination: { write: () => undefined } });
    const deps = await openDependencies(config, logger);
    try {
      const served = await buildApp({ ...deps, surfaces: [...SURFACES, PARROT] });
      await served.app.close();
      await assert.rejects(buildApp(deps), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, [
          `auth.oauth.scopes.birds:write: "parrot" is not a route this gateway serves (${GRANTABLE_ROUTES.join(', ')})`,
        ]);
        return true;
      });
    } finally {
      await deps.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
