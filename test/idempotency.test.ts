import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startMockUpstream, type MockUpstream } from './helpers/mock-openai-upstream.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from './helpers/gateway.js';
import { call } from './helpers/http.js';
import { readStream } from './helpers/sse-client.js';

describe('Idempotency-Key on chat (embedded SQLite store)', () => {
  let mock: MockUpstream;
  let gw: TestGateway;
  let n = 0;
  const freshKey = () => `key-${Date.now()}-${++n}`;
  const keyed = (key: string, extra: Record<string, string> = {}) => authHeaders({ 'idempotency-key': key, ...extra });
  before(async () => {
    mock = await startMockUpstream();
    gw = await startGateway({ env: { UPSTREAM_BASE_URL: mock.baseUrl } });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  test('same key, same body: the stored answer is replayed, marked, and the upstream is called once', async () => {
    const key = freshKey();
    const first = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(first.status, 200);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const again = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text, 'byte for byte');
    assert.match(String(again.headers['content-type']), /^application\/json/);
    assert.equal(mock.chatRequests().length, 1);
  });

  test('the same request serialised differently (key order, spacing) is still the same request', async () => {
    const key = freshKey();
    await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello?"}]}' });
    const again = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: '{ "messages": [ {"content":"Hello?","role":"user"} ], "model": "gpt-4o-mini" }' });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(mock.chatRequests().length, 1);
  });

  test('same key, different body: 422 idempotency_key_mismatch, nothing sent upstream', async () => {
    const key = freshKey();
    await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    const other = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody({ temperature: 0.1 }) });
    assert.equal(other.status, 422);
    assert.equal(other.json.code, 'idempotency_key_mismatch');
    assert.equal(mock.chatRequests().length, 1);
  });

  test('same key while the first call still runs: 409 with Retry-After, then the replay', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'json', delayMs: 400 });
    const first = call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    while (mock.chatRequests().length === 0) await new Promise((r) => setTimeout(r, 5));
    const during = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(during.status, 409);
    assert.equal(during.json.code, 'idempotency_in_progress');
    assert.ok(Number(during.headers['retry-after']) >= 1);
    assert.equal((await first).status, 200);
    const afterwards = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(afterwards.headers['idempotent-replayed'], 'true');
    assert.equal(mock.chatRequests().length, 1);
  });

  test('20 concurrent duplicates make exactly one upstream call', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'json', delayMs: 100 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() })),
    );
    assert.equal(mock.chatRequests().length, 1);
    assert.equal(answers.filter((a) => a.status === 200).length + answers.filter((a) => a.status === 409).length, 20);
  });

  test('a failed call (upstream 5xx) does not pin its failure to the key: the retry runs and succeeds', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'error', status: 500 });
    const failed = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(failed.status, 502);
    const retry = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(mock.chatRequests().length, 2);
  });

  test('a request the upstream rejects (4xx) is answered the same way on retry, without calling it again', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'error', status: 400 });
    const first = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    const again = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(first.status, 400);
    assert.equal(again.status, 400);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(mock.chatRequests().length, 1);
  });

  test('a stream is stored whole and replayed as the same stream', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'stream', content: ['Hel', 'lo ', '👋'] });
    const first = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    const again = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.ok(first.text.endsWith('data: [DONE]\n\n'));
    assert.equal(again.text, first.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(mock.chatRequests().length, 1);
  });

  test('a stream cut by the upstream frees the key: the retry runs again', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'reset', afterChunks: 1 }, { kind: 'stream' });
    const cut = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.match(cut.text, /event: error/);
    await new Promise((r) => setTimeout(r, 30));
    const retry = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.ok(retry.text.endsWith('data: [DONE]\n\n'));
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(mock.chatRequests().length, 2);
  });

  test('a key over 255 characters or with control characters is a 400', async () => {
    for (const key of ['k'.repeat(256), 'bad\tkey']) {
      const answer = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
      assert.equal(answer.status, 400);
      assert.equal(answer.json.code, 'invalid_idempotency_key');
    }
    assert.equal(mock.chatRequests().length, 0);
  });
});
