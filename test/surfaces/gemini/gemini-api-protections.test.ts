/**
 * Google's Gemini API on the real gateway gets every protection the other surfaces have, in Gemini's own terms:
 * credentials (`x-goog-api-key` or `Authorization: Bearer`: the admin token, a scoped key with the `gemini` right,
 * an OAuth token with `gemini:write`; an empty key is none; `?key=` refused with a hint naming the header), Gemini's
 * error body (`{error: {code, message, status, details}}` beside ours: RetryInfo on a 429; a data-only frame in a
 * stream that the SDK raises as an ApiError), limits and budgets, the JSON-array stream, an Idempotency-Key replay of
 * a stream, the response cache, usage records with cost, metrics, traces and webhook events. Real node:http
 * upstreams (Gemini, chat completions), a real webhook receiver, OTLP collector and JWKS issuer.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, GoogleGenAI } from '@google/genai';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { MOCK_CONTENT, MOCK_STREAM_CONTENT } from '../../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, authHeaders } from '../../helpers/gateway.js';
import { call, type Answer } from '../../helpers/http.js';
import { captureSecrets } from '../../helpers/capture.js';
import { closeThreeUpstreams, startThreeUpstreams, type ThreeUpstreams } from '../../helpers/gemini-api-gateway.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { startOtlpCollector, type OtlpCollector } from '../../helpers/otlp-collector.js';
import { waitForValue } from '../../helpers/wait.js';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';

const ISSUER = 'https://login.test.example/';
const AUDIENCE = 'llm-gateway';
const BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
const JSON_TYPE = { 'content-type': 'application/json' };

interface GeminiErrorJson {
  code: string;
  details: Record<string, unknown>;
  error: { code: number; message: string; status: string; details: Array<Record<string, unknown>> };
}

/** The gateway's body of an SDK ApiError (the SDK puts the whole JSON body in its message). */
function bodyOf(error: unknown): GeminiErrorJson {
  assert.ok(error instanceof ApiError, String(error));
  // An error answer's message is its body; an error inside a stream's is `got status: <status>. <body>`.
  return JSON.parse(error.message.slice(error.message.indexOf('{'))) as GeminiErrorJson;
}

async function failureOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  return assert.fail('it did not fail');
}

describe("the Gemini API's protections on the real gateway", () => {
  let fx: ThreeUpstreams;
  let receiver: WebhookReceiver;
  let collector: OtlpCollector;
  let jwks: Server;
  let signingKey: Awaited<ReturnType<typeof generateKeyPair>>;
  let usage: SqliteUsageStore;
  const ai = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: fx.gw.url, apiVersion: 'v1beta' } });
  const post = (path: string, headers: Record<string, string>, body = BODY) =>
    call(`${fx.gw.url}${path}`, { method: 'POST', headers: { ...JSON_TYPE, ...headers }, body });
  const asAdmin = { 'x-goog-api-key': ADMIN_TOKEN };
  const createKey = async (fields: Record<string, unknown>): Promise<string> => {
    const created = await call(`${fx.gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ name: 'gemini-test', models: ['*'], ...fields }),
      disclosesKey: true,
    });
    assert.equal(created.status, 201, created.text);
    const key = String(created.json.key);
    // Sent by the SDK too (x-goog-api-key), which the capture of `call` does not see.
    captureSecrets([key]);
    return key;
  };
  const token = async (scope: string) => {
    const jwt = await new SignJWT({ scope })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('gemini-client')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signingKey.privateKey);
    captureSecrets([jwt]);
    return jwt;
  };

  before(async () => {
    signingKey = await generateKeyPair('RS256', { extractable: true });
    const published = [{ ...(await exportJWK(signingKey.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
    jwks = createServer((_req, res) => res.writeHead(200, JSON_TYPE).end(JSON.stringify({ keys: published })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    receiver = await startWebhookReceiver();
    collector = await startOtlpCollector();
    fx = await startThreeUpstreams(
      [
        '  - { id: limited-flash, upstream: google, upstream_model: gemini-2.0-flash }',
        'limits:',
        '  models:',
        '    limited-flash: { requests: { limit: 1, window_seconds: 60 } }',
        'retry: { attempts: 1 }',
        'cache: { enabled: true }',
        'tracing: { enabled: true, endpoint: "' + collector.url + '", export_delay_ms: 20 }',
        'auth:',
        '  oauth:',
        `    issuer: "${ISSUER}"`,
        `    audience: ${AUDIENCE}`,
        `    jwks_url: "http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json"`,
        'webhooks:',
        '  allow_private_addresses: true',
        '  poll_interval_ms: 50',
        // A kind added after the first release starts in the canary stage (docs/webhooks.md): turned on here.
        '  rollout: { gemini.completed: all, gemini.failed: all }',
        '  subscriptions:',
        `    - { id: rx, url: "${receiver.url}", secrets: [{ env: WH_SECRET }], events: [gemini.completed, gemini.failed], include_content: true }`,
      ],
      { WH_SECRET: 'gemini-webhook-secret-0123456789' },
    );
    usage = new SqliteUsageStore(fx.gw.store.db);
  });
  after(async () => {
    await closeThreeUpstreams(fx);
    await receiver.close();
    await collector.close();
    await new Promise((resolve) => jwks.close(resolve));
  });
  beforeEach(() => {
    fx.gemini.reset();
    fx.openai.reset();
  });

  describe('credentials', () => {
    test("?key= is refused before anything else, in Gemini's shape, with a hint that names x-goog-api-key", async () => {
      for (const path of ['/v1beta/models/flash:generateContent?key=abc', '/v1/models/flash:generateContent?key=abc']) {
        const refused = await post(path, asAdmin);
        assert.equal(refused.status, 400, path);
        const body = refused.json as unknown as GeminiErrorJson;
        assert.equal(body.code, 'credentials_in_query');
        assert.deepEqual(body.details.parameters, ['key']);
        assert.match(String(body.details.hint), /x-goog-api-key/);
        assert.deepEqual([body.error.code, body.error.status], [400, 'INVALID_ARGUMENT']);
      }
      const listed = await call(`${fx.gw.url}/v1beta/models?key=abc`, { headers: asAdmin });
      assert.equal(listed.json.code, 'credentials_in_query');
      // Gemini's own query names are not credentials on its paths: the models list's second page.
      const paged = await call(`${fx.gw.url}/v1beta/models?pageSize=1&pageToken=`, { headers: asAdmin });
      assert.equal(paged.status, 200, paged.text);
      assert.equal(fx.gemini.requests.length, 0);
    });

    test('no key, or an empty x-goog-api-key (Gemini CLI without one sends it), is a 401 UNAUTHENTICATED', async () => {
      for (const headers of [{}, { 'x-goog-api-key': '' }] as Array<Record<string, string>>) {
        const refused = await post('/v1beta/models/flash:generateContent', headers);
        assert.equal(refused.status, 401);
        const body = refused.json as unknown as GeminiErrorJson;
        assert.equal(body.code, 'authentication_required');
        assert.deepEqual([body.error.code, body.error.status], [401, 'UNAUTHENTICATED']);
      }
      // A wrong key names the header it came in, not a bearer token (issue 42).
      const wrong = await post('/v1beta/models/flash:generateContent', { 'x-goog-api-key': 'nope' });
      assert.equal(wrong.status, 401);
      const wrongBody = wrong.json as unknown as GeminiErrorJson;
      assert.equal(wrongBody.code, 'invalid_token');
      assert.match(wrongBody.error.message, /key sent in the x-goog-api-key header/);
      assert.equal(fx.gemini.requests.length, 0);
    });

    test('a scoped key: with the gemini right it may call, list models, count and embed; without it, 403 PERMISSION_DENIED', async () => {
      const gemini = await createKey({ routes: ['gemini'] });
      assert.equal(
        (await ai(gemini).models.generateContent({ model: 'flash', contents: 'Hi' })).text,
        'Hello from Gemini',
      );
      const bearer = await post('/v1beta/models/flash:generateContent', { authorization: `Bearer ${gemini}` });
      assert.equal(bearer.status, 200, bearer.text);
      assert.ok(((await ai(gemini).models.countTokens({ model: 'gpt-4o-mini', contents: 'x' })).totalTokens ?? 0) > 0);
      const embedded = await ai(gemini).models.embedContent({ model: 'embed-small', contents: 'x' });
      assert.equal(embedded.embeddings?.length, 1);
      const names = [];
      for await (const model of await ai(gemini).models.list()) names.push(model.name);
      assert.ok(names.includes('models/flash'));

      const chatOnly = await createKey({ routes: ['chat'] });
      const refused = bodyOf(
        await failureOf(() => ai(chatOnly).models.generateContent({ model: 'flash', contents: 'Hi' })),
      );
      assert.equal(refused.code, 'route_not_allowed');
      assert.deepEqual([refused.error.code, refused.error.status], [403, 'PERMISSION_DENIED']);
      const modelsOnly = await createKey({ routes: ['models'] });
      assert.equal((await ai(modelsOnly).models.get({ model: 'flash' })).name, 'models/flash');
      const notGenerate = bodyOf(
        await failureOf(() => ai(modelsOnly).models.generateContent({ model: 'flash', contents: 'Hi' })),
      );
      assert.equal(notGenerate.error.status, 'PERMISSION_DENIED');
    });

    test('an OAuth token: gemini:write lets in, through x-goog-api-key or Authorization; chat:write does not', async () => {
      const granted = await token('gemini:write');
      assert.equal(
        (await ai(granted).models.generateContent({ model: 'flash', contents: 'Hi' })).text,
        'Hello from Gemini',
      );
      const bearer = await post('/v1beta/models/flash:generateContent', { authorization: `Bearer ${granted}` });
      assert.equal(bearer.status, 200, bearer.text);
      const other = await token('chat:write');
      const refused = bodyOf(
        await failureOf(() => ai(other).models.generateContent({ model: 'flash', contents: 'Hi' })),
      );
      assert.equal(refused.code, 'route_not_allowed');
    });

    test("OpenAI's GET /v1/models is unchanged for an OpenAI client; Google's client gets Gemini's list there", async () => {
      const openai = await call(`${fx.gw.url}/v1/models`, { headers: authHeaders() });
      assert.equal(openai.json.object, 'list');
      const google = await call(`${fx.gw.url}/v1/models?pageSize=2`, { headers: asAdmin });
      assert.equal((google.json.models as unknown[]).length, 2);
      assert.equal(typeof google.json.nextPageToken, 'string');
    });
  });

  describe('errors, limits and budgets', () => {
    test('a model over its request limit: 429 RESOURCE_EXHAUSTED with a RetryInfo of its Retry-After', async () => {
      await ai(ADMIN_TOKEN).models.generateContent({ model: 'limited-flash', contents: 'Hi' });
      const limited = await failureOf(() =>
        ai(ADMIN_TOKEN).models.generateContent({ model: 'limited-flash', contents: 'Hi' }),
      );
      assert.equal((limited as ApiError).status, 429);
      const body = bodyOf(limited);
      assert.equal(body.code, 'rate_limited');
      assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
      const retry = body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
      assert.deepEqual(retry, {
        '@type': 'type.googleapis.com/google.rpc.RetryInfo',
        retryDelay: `${String(body.details.retry_after_seconds)}s`,
      });
      assert.equal(fx.gemini.generateRequests().length, 1);
    });

    test("a key's spent token budget: 429 budget_exceeded, its RetryInfo past what Gemini CLI waits for", async () => {
      const key = await createKey({ routes: ['gemini'], budget: { tokens: 10, period_seconds: 86_400 } });
      await ai(key).models.generateContent({ model: 'flash', contents: 'Hi' });
      const spent = bodyOf(await failureOf(() => ai(key).models.generateContent({ model: 'flash', contents: 'Hi' })));
      assert.equal(spent.code, 'budget_exceeded');
      const retry = spent.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
      assert.ok(Number(/^(\d+)s$/.exec(String(retry?.retryDelay))?.[1]) > 300, JSON.stringify(retry));
    });

    test('a stream that fails after it started: the text so far, then one data-only error frame the SDK raises', async () => {
      // Translated: a chat upstream's in-stream error after one chunk.
      fx.openai.enqueue({ kind: 'stream-error-event', afterChunks: 1 });
      let text = '';
      const translated = await failureOf(async () => {
        const stream = await ai(ADMIN_TOKEN).models.generateContentStream({ model: 'gpt-4o-mini', contents: 'Hi' });
        for await (const chunk of stream) text += chunk.text ?? '';
      });
      assert.equal(text, MOCK_STREAM_CONTENT[0]);
      assert.equal((translated as ApiError).status, 502);
      assert.equal(bodyOf(translated).code, 'upstream_stream_error');
      // Forwarded: Gemini's own `{error}` event after a text event; the bytes the caller got.
      fx.gemini.enqueue({
        kind: 'raw-stream',
        data: [
          JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'partial' }] }, index: 0 }] }),
          JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }),
        ],
      });
      const raw = await post('/v1beta/models/flash:streamGenerateContent?alt=sse', asAdmin);
      assert.equal(raw.status, 200);
      const frames = raw.text.split('\r\n\r\n');
      assert.equal(frames.at(-1), '', 'each frame ends with a blank line');
      assert.match(frames[0] ?? '', /^data: .*"partial"/);
      const failure = JSON.parse((frames.at(-2) ?? '').replace(/^data: /, '')) as GeminiErrorJson;
      assert.equal(failure.code, 'upstream_stream_error');
      assert.deepEqual([failure.error.code, failure.error.status], [502, 'INTERNAL']);
      assert.ok(!/^(event|id):/m.test(raw.text), 'data lines only');
    });

    test('an unknown action is a 404 naming the actions; a bad alt a 400; an unknown model a 404 NOT_FOUND', async () => {
      const unknown = await post('/v1beta/models/flash:predict', asAdmin);
      assert.equal(unknown.status, 404);
      assert.deepEqual(unknown.json.details?.actions, [
        'generateContent',
        'streamGenerateContent',
        'countTokens',
        'embedContent',
        'batchEmbedContents',
      ]);
      assert.equal((unknown.json as unknown as GeminiErrorJson).error.status, 'NOT_FOUND');
      const alt = await post('/v1beta/models/flash:streamGenerateContent?alt=proto', asAdmin);
      assert.deepEqual([alt.status, alt.json.code], [400, 'invalid_query_parameter']);
      const missing = bodyOf(await failureOf(() => ai(ADMIN_TOKEN).models.get({ model: 'no-such-model' })));
      assert.deepEqual([missing.code, missing.error.status], ['model_not_found', 'NOT_FOUND']);
      assert.equal(fx.gemini.requests.length, 0);
    });
  });

  describe('streams, replays, the cache and the records', () => {
    test('without alt, the stream is one JSON array (application/json), forwarded or translated', async () => {
      for (const model of ['flash', 'gpt-4o-mini']) {
        if (model === 'gpt-4o-mini') fx.openai.enqueue({ kind: 'stream' });
        const array = await post(`/v1beta/models/${model}:streamGenerateContent`, asAdmin);
        assert.equal(array.status, 200, array.text);
        assert.match(String(array.headers['content-type']), /^application\/json/);
        const responses = JSON.parse(array.text) as Array<{
          candidates?: Array<{ content?: { parts?: Array<{ text?: string }> }; finishReason?: string }>;
        }>;
        const text = responses.map((r) => r.candidates?.[0]?.content?.parts?.[0]?.text ?? '').join('');
        assert.equal(text, model === 'flash' ? 'Hello from Gemini' : MOCK_CONTENT);
        assert.equal(responses.at(-1)?.candidates?.[0]?.finishReason, 'STOP');
      }
      assert.equal(
        fx.gemini.generateRequests()[0]?.url,
        '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse',
      );
    });

    test('an Idempotency-Key replays a stream byte for byte, in its own form, without a second upstream call', async () => {
      for (const [path, type] of [
        ['/v1beta/models/flash:streamGenerateContent?alt=sse', /^text\/event-stream/],
        ['/v1beta/models/flash:streamGenerateContent', /^application\/json/],
      ] as const) {
        const key = { ...asAdmin, 'idempotency-key': `replay-${path}` };
        const first = await post(path, key);
        const again = await post(path, key);
        assert.equal(first.status, 200, first.text);
        assert.equal(again.text, first.text);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.match(String(again.headers['content-type']), type);
      }
      assert.equal(fx.gemini.generateRequests().length, 2, 'one upstream call per stream form');
      // The same key on another model's URL is another request: a conflict, not a replay of the first.
      const other = await post('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse', {
        ...asAdmin,
        'idempotency-key': 'replay-/v1beta/models/flash:streamGenerateContent?alt=sse',
      });
      assert.notEqual(other.headers['idempotent-replayed'], 'true');
    });

    test('the cache: generationConfig.temperature 0 and no tools is served again; another model in the URL is not', async () => {
      const fixed = JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }], generationConfig: { temperature: 0 } });
      const first = await post('/v1beta/models/gpt-4o-mini:generateContent', asAdmin, fixed);
      const again = await post('/v1beta/models/gpt-4o-mini:generateContent', asAdmin, fixed);
      assert.deepEqual([first.headers['x-cache'], again.headers['x-cache']], ['miss', 'hit']);
      assert.equal(again.text, first.text);
      const otherModel = await post('/v1beta/models/flash:generateContent', asAdmin, fixed);
      assert.equal(otherModel.headers['x-cache'], 'miss');
      const sampled = await post('/v1beta/models/gpt-4o-mini:generateContent', asAdmin);
      assert.notEqual(sampled.headers['x-cache'], 'hit');
      assert.equal(fx.openai.chatRequests().length, 2);
    });

    test('usage records with cost, metrics, a trace, and the gemini.completed / gemini.failed events', async () => {
      const native = await post('/v1beta/models/flash:generateContent', asAdmin);
      fx.openai.enqueue({ kind: 'stream' });
      const translated = await post('/v1beta/models/gpt-4o-mini:streamGenerateContent?alt=sse', asAdmin);
      fx.openai.enqueue({
        kind: 'error',
        status: 400,
        body: { error: { message: 'no', type: 'invalid_request_error' } },
      });
      const failed = await post('/v1beta/models/gpt-4o-mini:generateContent', asAdmin);
      assert.deepEqual([native.status, translated.status, failed.status], [200, 200, 400]);
      const ids = [native, translated, failed].map((a: Answer) => String(a.headers['x-request-id']));

      const records = await waitForValue(
        'the usage records of the three calls',
        () => usage.recent(50, false),
        (rows) => ids.every((id) => rows.some((r) => r.requestId === id)),
      );
      const [first, second, third] = ids.map((id) => records.find((r) => r.requestId === id));
      // Gemini's usageMetadata (8 prompt, 6 candidates) at the model's prices: 1 and 2 USD per million.
      assert.deepEqual(
        [first?.route, first?.model, first?.upstream, first?.stream, first?.promptTokens, first?.completionTokens],
        ['gemini', 'flash', 'google', false, 8, 6],
      );
      assert.equal(first?.costUsd, (8 * 1 + 6 * 2) / 1e6);
      assert.deepEqual([second?.route, second?.stream, second?.upstream], ['gemini', true, 'oai']);
      const cost = ((second?.promptTokens ?? 0) * 3 + (second?.completionTokens ?? 0) * 5) / 1e6;
      assert.ok(cost > 0 && Math.abs((second?.costUsd ?? 0) - cost) < 1e-9, `${second?.costUsd} vs ${cost}`);
      assert.deepEqual([third?.route, third?.status], ['gemini', 400]);

      const metrics = await call(`${fx.gw.url}/metrics`, { headers: authHeaders() });
      assert.match(metrics.text, /llmgw_requests_total\{[^}]*route="gemini"[^}]*model="flash"[^}]*\} \d+/);

      const span = await waitForValue(
        'the trace of the forwarded call',
        () => collector.spans.find((s) => s.kind === 2 && s.attributes['llmgw.request_id'] === ids[0]),
        (s) => s !== undefined,
      );
      assert.equal(span?.name, 'POST gemini');
      assert.equal(span?.attributes['llmgw.upstream'], 'google');
      assert.match(String(fx.gemini.generateRequests()[0]?.headers.traceparent), new RegExp(`^00-${span?.traceId}-`));

      const events = await waitForValue(
        'the events of the three calls',
        () => receiver.deliveries.map((d) => JSON.parse(d.body) as { event: string; data: Record<string, unknown> }),
        (all) => ids.every((id) => all.some((e) => e.data.request_id === id)),
      );
      const [done, streamed, refused] = ids.map((id) => events.find((e) => e.data.request_id === id));
      assert.equal(done?.event, 'gemini.completed');
      assert.equal(done?.data.cost_usd, (8 * 1 + 6 * 2) / 1e6);
      assert.deepEqual(done?.data.content, {
        contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
        answer: null,
      });
      assert.deepEqual([streamed?.event, streamed?.data.stream], ['gemini.completed', true]);
      assert.deepEqual((streamed?.data.content as { answer: unknown }).answer, MOCK_CONTENT);
      assert.deepEqual([refused?.event, refused?.data.code], ['gemini.failed', 'upstream_rejected_request']);
    });
  });
});
