import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';
import { readStream } from '../helpers/sse-client.js';

/** Each timeout ends in a 504 with its own code, so an operator can tell a dead host from a slow model. */
describe('upstream timeouts and unreachable upstreams', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: {
        UPSTREAM_BASE_URL: mock.baseUrl,
        UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300',
        UPSTREAM_IDLE_TIMEOUT_MS: '300',
        UPSTREAM_TOTAL_TIMEOUT_MS: '5000',
      },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  test('no headers in time: 504 upstream_first_byte_timeout, and the upstream call is cancelled', async () => {
    mock.reset();
    mock.enqueue({ kind: 'hang' });
    const started = performance.now();
    const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const elapsed = performance.now() - started;
    assert.equal(answer.status, 504);
    assert.equal(answer.json.code, 'upstream_first_byte_timeout');
    assert.ok(elapsed >= 250 && elapsed < 3000, `took ${elapsed.toFixed(0)} ms`);
    assert.equal(await mock.chatRequests()[0]?.aborted, true);
  });

  test('a body that stalls after the headers: 504 upstream_idle_timeout', async () => {
    mock.reset();
    mock.enqueue({
      kind: 'raw',
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-1","object":"chat.completion",');
      },
    });
    const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    assert.equal(answer.status, 504);
    assert.equal(answer.json.code, 'upstream_idle_timeout');
  });

  test('a stream that keeps trickling past the total budget: upstream_total_timeout as the final event', async () => {
    const slow = await startOpenAiUpstream();
    const gwTotal = await startGateway({ env: { UPSTREAM_BASE_URL: slow.baseUrl, UPSTREAM_TOTAL_TIMEOUT_MS: '400' } });
    try {
      slow.enqueue({ kind: 'stream', content: Array.from({ length: 40 }, (_, i) => `w${i} `), delayMs: 50 });
      const answer = await readStream(`${gwTotal.url}${CHAT_PATH}`, chatBody({ stream: true }), authHeaders());
      assert.equal(answer.status, 200);
      assert.match(answer.text, /event: error\ndata: \{"code":"upstream_total_timeout"/);
      assert.ok(!answer.text.includes('data: [DONE]'));
      assert.equal(await slow.chatRequests()[0]?.aborted, true);
    } finally {
      await gwTotal.close();
      await slow.close();
    }
  });

  test('a non-streamed call past the total budget: 504 upstream_total_timeout', async () => {
    const slow = await startOpenAiUpstream();
    const gwTotal = await startGateway({ env: { UPSTREAM_BASE_URL: slow.baseUrl, UPSTREAM_TOTAL_TIMEOUT_MS: '300' } });
    try {
      slow.enqueue({ kind: 'json', delayMs: 1500 });
      const answer = await call(`${gwTotal.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody(),
      });
      assert.equal(answer.status, 504);
      assert.equal(answer.json.code, 'upstream_total_timeout');
      assert.equal(answer.json.details?.timeout_ms, 300);
    } finally {
      await gwTotal.close();
      await slow.close();
    }
  });

  test('a connection that never completes (TLS handshake unanswered): 504 upstream_connect_timeout', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket); // accept TCP, never answer the TLS ClientHello
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gwConnect = await startGateway({
      env: { UPSTREAM_BASE_URL: `https://127.0.0.1:${port}/v1`, UPSTREAM_CONNECT_TIMEOUT_MS: '300' },
    });
    try {
      const answer = await call(`${gwConnect.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody(),
      });
      assert.equal(answer.status, 504);
      assert.equal(answer.json.code, 'upstream_connect_timeout');
    } finally {
      await gwConnect.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  test('nothing listening: 503 upstream_unreachable; health degraded', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const gwDown = await startGateway({ env: { UPSTREAM_BASE_URL: `http://127.0.0.1:${port}/v1` } });
    try {
      const answer = await call(`${gwDown.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody(),
      });
      assert.equal(answer.status, 503);
      assert.equal(answer.json.code, 'upstream_unreachable');
      assert.equal(answer.json.details?.reason, 'ECONNREFUSED');
      const health = await call(`${gwDown.url}/v1/?route=health`);
      assert.equal(health.json.status, 'degraded');
    } finally {
      await gwDown.close();
    }
  });

  test('with no upstream configured, chat is 503 no_upstream_configured telling how to configure one', async () => {
    const bare = await startGateway({ env: { GATEWAY_ENV: 'staging' } });
    try {
      const answer = await call(`${bare.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody(),
      });
      assert.equal(answer.status, 503);
      assert.equal(answer.json.code, 'no_upstream_configured');
      assert.match(String(answer.json.details?.configure), /UPSTREAM_BASE_URL/);
      const echo = await call(`${bare.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: authHeaders(),
        body: chatBody({ model: 'echo' }),
      });
      assert.equal(echo.status, 503, 'the echo model is never served outside dev');
      const health = await call(`${bare.url}/v1/?route=health`);
      assert.equal(health.json.status, 'degraded');
    } finally {
      await bare.close();
    }
  });
});
