/**
 * Closing the server: a connection that never sent a request (a browser's pre-connect, a client's spare socket)
 * must not hold the close for its keep-alive timeout (72 s), while a request in progress still finishes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startOpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

test('close ends silent connections at once and lets a request in progress finish', async () => {
  const mock = await startOpenAiUpstream();
  const gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
  try {
    const silent = connect({ host: '127.0.0.1', port: gw.port });
    await new Promise<void>((resolve) => silent.once('connect', () => resolve()));
    const silentClosed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    mock.enqueue({ kind: 'json', delayMs: 500 });
    const inFlight = call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: authHeaders(), body: chatBody() });
    const deadline = Date.now() + 5_000;
    while (mock.chatRequests().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));

    const started = Date.now();
    await gw.gateway.app.close();
    const tookMs = Date.now() - started;
    await silentClosed;
    const answer = await inFlight;
    assert.equal(answer.status, 200, 'the request in progress was answered');
    assert.ok(tookMs < 5_000, `closed in ${tookMs} ms (a silent connection used to hold it for 72 s)`);
  } finally {
    await gw.close();
    await mock.close();
  }
});
