import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { CHAT_PATH, authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';

/** Sends raw bytes on a fresh socket and returns everything the server answered before closing. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setTimeout(3000, () => socket.destroy(new Error('no answer')));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.write(bytes);
  });
}

function bodyOf(raw: string): { code: string; details: Record<string, unknown> } {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { code: string; details: Record<string, unknown> };
}

describe('malformed requests still get {code, message, details}', () => {
  const fixture = useGateway({
    // A model whose body the gateway re-serialises (another upstream model name): deep JSON broke that too.
    configFile: {
      name: 'renamed.yaml',
      text: 'models:\n  - id: renamed\n    upstream: default\n    upstream_model: gpt-4o-mini\n',
    },
  });

  test('a URL with bad percent-encoding: 400 bad_request, with a request id, the URL not echoed', async () => {
    const answer = await call(`${fixture.gw.url}/v1/%zz?route=health`);
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'bad_request');
    assert.ok(answer.headers['x-request-id']);
    assert.ok(!answer.text.includes('%zz'));
  });

  test('a bad URL that also carries a credential: credentials_in_query, and the log has it redacted', async () => {
    const answer = await call(`${fixture.gw.url}/v1/%zz?token=SEKRIT-1234567890&route=health`);
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'credentials_in_query');
    assert.ok(!answer.text.includes('SEKRIT'));
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(!fixture.gw.logLines.join('').includes('SEKRIT'));
  });

  const parserCases: Array<{ name: string; head: string; status: number; code: string; reason: RegExp }> = [
    {
      name: 'a non-numeric Content-Length',
      head: 'Content-Length: abc\r\n',
      status: 400,
      code: 'bad_request',
      reason: /Content-Length header is invalid/,
    },
    {
      name: 'two different Content-Lengths',
      head: 'Content-Length: 2\r\nContent-Length: 3\r\n',
      status: 400,
      code: 'bad_request',
      reason: /^the Content-Length header is sent more than once$/,
    },
    {
      name: 'two equal Content-Lengths',
      head: 'Content-Length: 2\r\nContent-Length: 2\r\n',
      status: 400,
      code: 'bad_request',
      reason: /^the Content-Length header is sent more than once$/,
    },
    {
      name: 'Content-Length with Transfer-Encoding',
      head: 'Content-Length: 2\r\nTransfer-Encoding: chunked\r\n',
      status: 400,
      code: 'bad_request',
      reason: /^Content-Length and Transfer-Encoding must not both be sent/,
    },
    {
      name: 'headers over the limit',
      head: `X-Big: ${'a'.repeat(20_000)}\r\n`,
      status: 431,
      code: 'headers_too_large',
      reason: /too large/,
    },
  ];
  for (const c of parserCases) {
    test(`${c.name}: ${c.status} ${c.code} on a closed connection, with the right reason`, async () => {
      const raw = await rawExchange(fixture.gw.port, `POST ${CHAT_PATH} HTTP/1.1\r\nHost: x\r\n${c.head}\r\n{}`);
      assert.match(raw, new RegExp(`^HTTP/1.1 ${c.status} `));
      assert.match(raw, /connection: close/i);
      assert.equal(bodyOf(raw).code, c.code);
      assert.match(String(bodyOf(raw).details.reason), c.reason);
    });
  }

  test('HTTP/1.1 without a Host header, or with two: 400 bad_request in JSON naming the header, connection closed', async () => {
    for (const head of [
      'GET /v1/?route=health HTTP/1.1\r\n\r\n',
      'GET /v1/?route=health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
    ]) {
      const raw = await rawExchange(fixture.gw.port, head);
      assert.match(raw, /^HTTP\/1.1 400 /, raw);
      assert.match(raw, /connection: close/i);
      assert.match(raw, /content-type: application\/json/i);
      const body = bodyOf(raw);
      assert.equal(body.code, 'bad_request');
      assert.equal(body.details.header, 'host');
      assert.match(String(body.details.reason), /Host header/);
    }
    // HTTP/1.0 has no Host requirement.
    const old = await rawExchange(fixture.gw.port, 'GET /v1/?route=health HTTP/1.0\r\n\r\n');
    assert.match(old, /^HTTP\/1.1 200 /);
  });

  test('a single-valued header sent twice is a 400 naming it, even when both copies agree (nothing reaches the upstream)', async () => {
    fixture.mock.reset();
    const body = chatBody();
    const send = (headers: string) =>
      rawExchange(
        fixture.gw.port,
        `POST ${CHAT_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${headers}\r\n${body}`,
      );
    const auth = `Authorization: ${authHeaders().authorization}\r\n`;
    const cases = [
      { headers: auth + auth, code: 'invalid_header', header: 'authorization' },
      {
        headers: `${auth}authorization: Bearer someone-else-0123456789\r\n`,
        code: 'invalid_header',
        header: 'authorization',
      },
      {
        headers: `${auth}Idempotency-Key: a1\r\nIdempotency-Key: a1\r\n`,
        code: 'invalid_idempotency_key',
        header: 'idempotency-key',
      },
      {
        headers: `${auth}X-Upstream-Key: sk-one-1234567890\r\nx-upstream-key: sk-one-1234567890\r\n`,
        code: 'invalid_header',
        header: 'x-upstream-key',
      },
    ];
    for (const c of cases) {
      const raw = await send(c.headers);
      assert.match(raw, /^HTTP\/1.1 400 /, raw);
      const answer = bodyOf(raw);
      assert.equal(answer.code, c.code);
      assert.equal(answer.details.header, c.header);
      assert.match(String(answer.details.problem), /sent once/);
      assert.ok(!raw.includes('sk-one'), 'the value is not echoed');
    }
    assert.equal(fixture.mock.chatRequests().length, 0);
    // Sent once each, the same request runs.
    assert.match(await send(`${auth}Idempotency-Key: a1\r\n`), /^HTTP\/1.1 200 /);
  });

  test('a long model id in /v1/models/{id} is a 404 model_not_found, a path segment past 1024 characters says so', async () => {
    const long = await call(`${fixture.gw.url}/v1/models/${'m'.repeat(300)}`, { headers: authHeaders() });
    assert.equal(long.status, 404, long.text);
    assert.equal(long.json.code, 'model_not_found');
    const tooLong = await call(`${fixture.gw.url}/v1/models/${'m'.repeat(1100)}`, { headers: authHeaders() });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.json.code, 'bad_request');
    assert.equal(tooLong.json.details?.reason, 'a path segment is longer than 1024 characters');
    assert.equal(
      (tooLong.json as { error?: { code?: string } }).error?.code,
      'bad_request',
      "an OpenAI-shaped path: OpenAI's error object too",
    );
    assert.ok(!tooLong.text.includes('mmmmmmmmmm'), 'the URL is not echoed');
    const badEncoding = await call(`${fixture.gw.url}/v1/%zz`);
    assert.match(String(badEncoding.json.details?.reason), /percent-encoding/);
  });

  test('a chunked body over the limit is a 413 too', async () => {
    const big = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(1_100_000) }] });
    const chunked = `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    const raw = await rawExchange(
      fixture.gw.port,
      `POST ${CHAT_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authHeaders().authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunked}`,
    );
    assert.match(raw, /^HTTP\/1.1 413 /);
    assert.equal(bodyOf(raw).code, 'payload_too_large');
  });

  test('a body with __proto__ or constructor.prototype keys is refused, and nothing reaches the upstream', async () => {
    fixture.mock.reset();
    for (const body of [
      '{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":{"polluted":true}}',
      '{"model":"m","messages":[{"role":"user","content":"x"}],"constructor":{"prototype":{"polluted":true}}}',
    ]) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
      assert.equal(answer.status, 400);
      assert.equal(answer.json.code, 'invalid_json');
      assert.match(String(answer.json.details?.reason), /__proto__/);
    }
    assert.equal(fixture.mock.chatRequests().length, 0);
  });

  test('bodies that are JSON but not an object: null, a string, a number', async () => {
    for (const body of ['null', '"hello"', '42']) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
      assert.equal(answer.status, 400, body);
      assert.equal(answer.json.code, 'validation_failed');
      assert.deepEqual(answer.json.details?.errors, [{ field: 'body', problem: 'must be object' }]);
    }
  });

  test('JSON nested deeper than 128 levels: 400 invalid_json saying so, with an Idempotency-Key or on a re-serialised body (both were 500)', async () => {
    fixture.mock.reset();
    const deep = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"extra":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const renamed = deep.replace('"gpt-4o-mini"', '"renamed"');
    for (const [headers, body] of [
      [authHeaders({ 'idempotency-key': 'deep-1' }), deep],
      [authHeaders(), renamed],
    ] as const) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers, body });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.json.code, 'invalid_json');
      assert.equal(answer.json.details?.max_depth, 128);
      assert.match(String(answer.json.details?.reason), /nested deeper than 128 levels/);
      assert.equal(answer.json.details?.position, body.indexOf('[[') + 127, 'where level 129 opens');
    }
    // A broken body that deep is located without recursing a million times: a 400 too, never a 500.
    const broken = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: `{"model":"m","x":${'['.repeat(200_000)}`,
    });
    assert.equal(broken.status, 400);
    assert.equal(broken.json.code, 'invalid_json');
    assert.equal(fixture.mock.chatRequests().length, 0);
    // At the bound it runs, and the key's fingerprint (a recursive walk) copes.
    const atBound = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"extra":${'['.repeat(127)}${']'.repeat(127)}}`;
    for (let i = 0; i < 2; i++) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders({ 'idempotency-key': 'deep-at-bound' }),
        body: atBound,
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers['idempotent-replayed'], i === 0 ? undefined : 'true');
    }
    assert.equal(fixture.mock.chatRequests().length, 1);
  });

  test('a key repeated in any object is refused, naming it and where it is, and nothing reaches the upstream', async () => {
    fixture.mock.reset();
    const messages = '"messages":[{"role":"user","content":"x"}]';
    for (const [body, key, path] of [
      [`{"model":"forbidden","model":"gpt-4o-mini",${messages}}`, 'model', ''],
      [`{"model":"gpt-4o-mini","stream":false,${messages},"str\u0065am":true}`, 'stream', ''],
      // Nested: the gateway would read one content (its estimate, its checks) and the upstream perhaps the other.
      [
        '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"short","content":"a very long prompt"}]}',
        'content',
        'messages[0]',
      ],
      [
        '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"},{"role":"user","content":"say \\",\\"model\\":\\"x","name":"a","name":"b"}]}',
        'name',
        'messages[1]',
      ],
      [
        '{"model":"gpt-4o-mini",' +
          messages +
          ',"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","type":"string"}}}]}',
        'type',
        'tools[0].function.parameters',
      ],
    ] as const) {
      const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
      assert.equal(answer.status, 400, body);
      assert.equal(answer.json.code, 'invalid_json');
      assert.equal(answer.json.details?.key, key);
      assert.equal(answer.json.details?.path, path);
      assert.match(
        String(answer.json.details?.reason),
        new RegExp(
          `"${key}" appears more than once ${path === '' ? 'at the top level' : `in ${path.replace(/[[\].]/g, '\\$&')}`}`,
        ),
      );
    }
    assert.equal(fixture.mock.chatRequests().length, 0);
    // The same key in two different objects is fine; a key's name inside a string is not a key.
    const fine = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders(),
      body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"say \\",\\"model\\":\\"x","name":"a"},{"role":"user","content":"y","name":"a"}]}',
    });
    assert.equal(fine.status, 200, fine.text);
  });

  test('a UTF-8 byte order mark before the JSON is dropped, also from the body forwarded upstream', async () => {
    fixture.mock.reset();
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(chatBody())]);
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body });
    assert.equal(answer.status, 200, answer.text);
    const [sent] = fixture.mock.chatRequests();
    assert.ok(sent);
    assert.notEqual(sent.body.charCodeAt(0), 0xfeff, 'the upstream got no byte order mark');
    assert.equal(sent.body.charAt(0), '{');
  });

  test('a compressed body is a 415 (only identity encoding is accepted)', async () => {
    const answer = await call(`${fixture.gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'content-encoding': 'gzip' }),
      body: chatBody(),
    });
    assert.equal(answer.status, 415);
    assert.equal(answer.json.code, 'unsupported_media_type');
  });

  test('named non-data events in an upstream stream (ping) are skipped, not fatal', async () => {
    fixture.mock.enqueue({
      kind: 'stream',
      chunks: [
        'event: ping\ndata: {}\n\n',
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n',
        'event: ping\ndata: {}\n\n',
        'data: [DONE]\n\n',
      ],
    });
    const answer = await readStream(`${fixture.gw.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
    assert.equal(
      answer.text,
      'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\ndata: [DONE]\n\n',
    );
  });
});
