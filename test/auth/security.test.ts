import { after, before, describe, test } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { ADMIN_TOKEN, CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call, type Answer } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';

const UPSTREAM_KEY = 'sk-security-configured-key-ABCDEFGHIJ';
const CALLER_KEY = 'sk-caller-supplied-key-KLMNOPQRSTUV';
const SECOND_ADMIN = 'second-admin-token-for-rotation-xyz';

describe('security', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  const answers: Answer[] = [];
  const record = async (promise: Promise<Answer>) => {
    const answer = await promise;
    answers.push(answer);
    return answer;
  };
  before(async () => {
    mock = await startOpenAiUpstream({ requiredKey: UPSTREAM_KEY });
    gw = await startGateway({
      env: {
        ADMIN_TOKEN: `${ADMIN_TOKEN}, ${SECOND_ADMIN}`,
        UPSTREAM_BASE_URL: mock.baseUrl,
        UPSTREAM_API_KEY: UPSTREAM_KEY,
      },
      // These tests map single upstream answers; a 429 must not pause the upstream for the tests after it.
      configFile: {
        name: 'no-pause.yaml',
        text: 'limits:\n  upstream_pause_max_seconds: 0\ncircuit_breaker:\n  failure_threshold: 1000\n',
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  describe('admin token', () => {
    test('missing: 401 authentication_required with WWW-Authenticate: Bearer', async () => {
      const answer = await record(
        call(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: chatBody(),
        }),
      );
      assert.equal(answer.status, 401);
      assert.equal(answer.json.code, 'authentication_required');
      assert.match(String(answer.headers['www-authenticate']), /^Bearer realm="llm-gateway"/);
    });

    test('wrong, or another scheme: 401 invalid_token before the (broken) body is parsed', async () => {
      for (const authorization of [
        'Bearer not-the-token',
        `Basic ${Buffer.from('admin:pw').toString('base64')}`,
        'Bearer ',
        ADMIN_TOKEN,
      ]) {
        const answer = await record(
          call(`${gw.url}${CHAT_PATH}`, {
            method: 'POST',
            headers: { authorization, 'content-type': 'application/json' },
            body: '{broken',
          }),
        );
        assert.equal(answer.status, 401, authorization);
        assert.equal(answer.json.code, 'invalid_token', 'not invalid_json: the body was never parsed');
        assert.match(
          String(answer.headers['www-authenticate']),
          /^Bearer realm="llm-gateway", error="invalid_(token|request)"/,
        );
      }
      assert.equal(mock.chatRequests().length, 0);
    });

    test('every token of a comma-separated ADMIN_TOKEN works (rotation), the scheme is case-insensitive', async () => {
      for (const authorization of [`Bearer ${ADMIN_TOKEN}`, `Bearer ${SECOND_ADMIN}`, `bearer ${SECOND_ADMIN}`]) {
        const answer = await record(call(`${gw.url}/v1/?route=models`, { headers: { authorization } }));
        assert.equal(answer.status, 200, authorization);
      }
    });

    test('a prefix or extension of a valid token is refused', async () => {
      for (const token of [ADMIN_TOKEN.slice(0, -1), `${ADMIN_TOKEN}x`, `${ADMIN_TOKEN},${SECOND_ADMIN}`]) {
        const answer = await record(
          call(`${gw.url}/v1/?route=models`, { headers: { authorization: `Bearer ${token}` } }),
        );
        assert.equal(answer.status, 401);
      }
    });
  });

  describe('credentials in the URL', () => {
    const names = [
      'key',
      'api_key',
      'API_KEY',
      'token',
      'access_token',
      'Auth',
      'password',
      'secret',
      'signature',
      'x-upstream-key',
      'client_secret',
      'accessToken',
      'clientSecret',
      'apiKey',
    ];
    for (const name of names) {
      test(`?${name}=... is refused with 400 credentials_in_query, even with a valid header`, async () => {
        const secret = `leaked-${name}-value-123456789`;
        const answer = await record(call(`${gw.url}/v1/?route=models&${name}=${secret}`, { headers: authHeaders() }));
        assert.equal(answer.status, 400);
        assert.equal(answer.json.code, 'credentials_in_query');
        assert.deepEqual(answer.json.details?.parameters, [name]);
        assert.ok(!answer.text.includes(secret));
        const logged = gw.logLines.join('');
        assert.ok(!logged.includes(secret), 'the URL is logged redacted');
        assert.ok(logged.includes(`${name}=[REDACTED]`));
      });
    }

    test('on any path, including unknown ones and the root', async () => {
      for (const path of [
        '/?token=abcdefgh12345',
        '/nowhere?api_key=abcdefgh12345',
        '/v1/?route=health&secret=abcdefgh12345',
      ]) {
        const answer = await record(call(`${gw.url}${path}`));
        assert.equal(answer.status, 400, path);
        assert.equal(answer.json.code, 'credentials_in_query');
      }
    });

    // Spellings frameworks read as a credential name: brackets (PHP, Rails, qs), encodings, separators, padding.
    const variants = [
      'key[]',
      'key%5B%5D',
      'token[a]',
      'token%00',
      'token%20',
      '%20token',
      'token.',
      'api+key',
      'api.key',
      'api_key%5B0%5D',
      'a[token]',
      'API-Key',
      '%2574oken',
    ];
    for (const name of variants) {
      test(`the variant ?${name}=... is refused too, and its value never reaches the answer or the log`, async () => {
        const secret = `leaked-variant-value-${variants.indexOf(name)}-987654321`;
        const answer = await record(call(`${gw.url}/v1/?route=models&${name}=${secret}`, { headers: authHeaders() }));
        assert.equal(answer.status, 400, answer.text);
        assert.equal(answer.json.code, 'credentials_in_query');
        assert.equal((answer.json.details?.parameters as unknown[]).length, 1);
        assert.ok(!answer.text.includes(secret));
        assert.ok(!gw.logLines.join('').includes(secret));
      });
    }

    test('the access log redacts every query value, not only credential-looking ones (route and limit stay readable)', async () => {
      const value = 'sk-live-looks-like-nothing-we-know-1234';
      const answer = await record(
        call(`${gw.url}/v1/?route=models&limit=2&q=${value}&flag`, { headers: authHeaders() }),
      );
      assert.equal(answer.status, 200);
      const id = String(answer.headers['x-request-id']);
      let line: { url?: string } | undefined;
      for (let waited = 0; line === undefined && waited < 2000; waited += 20) {
        line = gw.logLines
          .map((l) => JSON.parse(l) as { request_id?: string; msg?: string; url?: string })
          .find((l) => l.request_id === id && l.msg === 'request');
        if (line === undefined) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(line?.url, '/v1/?route=models&limit=2&q=[REDACTED]&[REDACTED]');
      assert.ok(!gw.logLines.join('').includes(value));
    });

    test('our own parameters (route, limit, next_token) are not mistaken for credentials', async () => {
      const answer = await record(call(`${gw.url}/v1/?route=models&limit=2`, { headers: authHeaders() }));
      assert.equal(answer.status, 200);
    });
  });

  describe('upstream credentials', () => {
    test("a refused configured key is the operator's fault: 502 upstream_auth_failed", async () => {
      mock.requiredKey = 'sk-some-other-key-the-mock-wants';
      const answer = await record(
        call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() }),
      );
      mock.requiredKey = UPSTREAM_KEY;
      assert.equal(answer.status, 502);
      assert.equal(answer.json.code, 'upstream_auth_failed');
      assert.equal(answer.json.details?.upstream_status, 401);
    });

    test("a refused X-Upstream-Key is the caller's: 401 upstream_key_rejected, the key masked or removed", async () => {
      const answer = await record(
        call(`${gw.url}${CHAT_PATH}`, {
          method: 'POST',
          headers: authHeaders({ 'x-upstream-key': CALLER_KEY }),
          body: chatBody(),
        }),
      );
      assert.equal(answer.status, 401);
      assert.equal(answer.json.code, 'upstream_key_rejected');
      assert.equal(answer.json.details?.upstream_code, 'invalid_api_key');
      assert.ok(!answer.text.includes(CALLER_KEY));
      assert.ok(!answer.text.includes('sk-ca'), 'not even the masked prefix the provider echoed');
    });

    test("upstream 4xx stays 4xx with the provider's code in details; 5xx becomes 502", async () => {
      mock.enqueue(
        {
          kind: 'error',
          status: 400,
          body: {
            error: {
              message: 'Invalid value for temperature',
              type: 'invalid_request_error',
              param: 'temperature',
              code: 'invalid_value',
            },
          },
        },
        {
          kind: 'error',
          status: 404,
          body: {
            error: {
              message: 'The model `nope` does not exist',
              type: 'invalid_request_error',
              param: null,
              code: 'model_not_found',
            },
          },
        },
        { kind: 'error', status: 429, headers: { 'retry-after': '12' } },
        { kind: 'error', status: 500 },
        { kind: 'error', status: 503, body: 'upstream down for maintenance' },
        { kind: 'json', body: 'this is not json' },
        { kind: 'json', body: { no: 'choices' } },
      );
      const expectations: Array<[number, string]> = [
        [400, 'upstream_rejected_request'],
        [404, 'upstream_rejected_request'],
        [429, 'upstream_rate_limited'],
        [502, 'upstream_error'],
        [502, 'upstream_error'],
        [502, 'upstream_invalid_response'],
        [502, 'upstream_invalid_response'],
      ];
      for (const [status, code] of expectations) {
        const answer = await record(
          call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() }),
        );
        assert.equal(answer.status, status, code);
        assert.equal(answer.json.code, code);
        assert.equal(answer.json.details?.upstream, 'default');
        if (status === 400) assert.equal(answer.json.details?.upstream_message, 'Invalid value for temperature');
        if (status === 429) assert.equal(answer.headers['retry-after'], '12');
      }
    });
  });

  test("a provider that echoes the caller's key mid-stream: the key reaches neither the caller nor the log", async () => {
    const echoKey = (kind: 'error' | 'malformed') => ({
      kind: 'raw' as const,
      handler: (req: IncomingMessage, res: ServerResponse) => {
        const key = String(req.headers.authorization ?? '').slice(7);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n',
        );
        res.end(
          kind === 'error'
            ? `data: {"error":{"message":"bad key ${key}","code":{"nested":"${key}"}}}\n\n`
            : `data: not json ${key}\n\n`,
        );
      },
    });
    for (const kind of ['error', 'malformed'] as const) {
      mock.requiredKey = undefined;
      mock.enqueue(echoKey(kind));
      const answer = await readStream(
        `${gw.url}${CHAT_PATH}`,
        chatBody({ stream: true }),
        authHeaders({ 'x-upstream-key': CALLER_KEY }),
      );
      mock.requiredKey = UPSTREAM_KEY;
      assert.match(
        answer.text,
        kind === 'error' ? /"code":"upstream_stream_error"/ : /"code":"upstream_stream_malformed"/,
      );
      assert.ok(!answer.text.includes(CALLER_KEY), `${kind}: the event echoes the key`);
      assert.ok(!answer.text.includes('nested'), 'a non-string provider code is dropped');
      answers.push({ status: 200, headers: {}, text: answer.text, json: {} as Answer['json'] });
    }
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(!gw.logLines.join('').includes(CALLER_KEY));
  });

  test('no secret appears in any log line or any answer, after all of the above plus streams', async () => {
    await readStream(
      `${gw.url}${CHAT_PATH}`,
      chatBody({ stream: true }),
      authHeaders({ 'x-upstream-key': UPSTREAM_KEY }),
    );
    mock.enqueue({ kind: 'reset', afterChunks: 1 });
    await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    await new Promise((r) => setTimeout(r, 50));
    const everything = [...gw.logLines, ...answers.map((a) => `${JSON.stringify(a.headers)} ${a.text}`)].join('\n');
    assert.ok(gw.logLines.length > 20, 'logs were captured');
    for (const secret of [ADMIN_TOKEN, SECOND_ADMIN, UPSTREAM_KEY, CALLER_KEY]) {
      assert.ok(!everything.includes(secret), `a secret leaked: ${secret.slice(0, 6)}...`);
    }
    assert.ok(!/"stack"/.test(answers.map((a) => a.text).join('')), 'no stack in an error body');
  });
});
