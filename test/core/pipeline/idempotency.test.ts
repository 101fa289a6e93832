import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { request } from 'undici';
import { assembleContent, readStream } from '../../helpers/sse-client.js';

describe('Idempotency-Key on chat (embedded SQLite store)', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let n = 0;
  const freshKey = () => `key-${Date.now()}-${++n}`;
  const keyed = (key: string, extra: Record<string, string> = {}) => authHeaders({ 'idempotency-key': key, ...extra });
  before(async () => {
    mock = await startOpenAiUpstream();
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
    await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: keyed(key),
      body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello?"}]}',
    });
    const again = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: keyed(key),
      body: '{ "messages": [ {"content":"Hello?","role":"user"} ], "model": "gpt-4o-mini" }',
    });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(mock.chatRequests().length, 1);
  });

  test('same key, different body: 422 idempotency_key_mismatch, nothing sent upstream', async () => {
    const key = freshKey();
    await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    const other = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: keyed(key),
      body: chatBody({ temperature: 0.1 }),
    });
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
      Array.from({ length: 20 }, () =>
        call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() }),
      ),
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

describe('Idempotency-Key: answers over idempotency.max_replay_bytes reach the caller but are not stored', () => {
  const CAP = 2048;
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  let n = 0;
  const freshKey = () => `big-${Date.now()}-${++n}`;
  const keyed = (key: string) => authHeaders({ 'idempotency-key': key });
  const storedRows = (key: string) =>
    (gw.store.db.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE key = ?').get(key) as { n: number }).n;
  const accessLines = () =>
    gw.logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.route === 'chat');
  // 100 pieces of ~50 characters: about 20 KB of events, ten times the cap.
  const pieces = Array.from({ length: 100 }, (_, i) => `piece ${String(i).padStart(3, '0')} ${'x'.repeat(40)} `);
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl },
      configFile: { name: 'gateway.yaml', text: `idempotency:\n  max_replay_bytes: ${CAP}\n` },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  test('a stream over the cap: the caller gets all of it, nothing is stored, the retry runs again', async () => {
    const key = freshKey();
    mock.enqueue({ kind: 'stream', content: pieces }, { kind: 'stream', content: pieces });
    const first = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.equal(first.status, 200);
    assert.ok(first.text.length > CAP * 5);
    assert.equal(assembleContent(first.text), pieces.join(''), 'every piece reached the caller');
    assert.ok(first.text.endsWith('data: [DONE]\n\n'));
    assert.equal(storedRows(key), 0, 'neither an answer nor a claim is left for the key');
    assert.equal(accessLines().at(-1)?.replay_not_stored, 'too_large', 'the access line says why it was not stored');

    const retry = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(assembleContent(retry.text), pieces.join(''));
    assert.equal(mock.chatRequests().length, 2, 'the upstream was called again');
    assert.equal(storedRows(key), 0);
  });

  test('the key stays claimed while the oversized stream runs (a duplicate gets 409), and is freed when it ends', async () => {
    const key = freshKey();
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const frames = pieces.map(
      (p, i) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: p } : { content: p }, finish_reason: null }] })}\n\n`,
    );
    mock.enqueue(
      {
        kind: 'raw',
        handler: (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(frames.join(''));
          void released.then(() => res.end('data: [DONE]\n\n'));
        },
      },
      { kind: 'stream', content: pieces },
    );
    const response = await request(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: keyed(key),
      body: chatBody({ stream: true }),
    });
    if (response.statusCode !== 200) assert.fail(await response.body.text());
    let text = '';
    const reader = response.body[Symbol.asyncIterator]();
    while (text.length < CAP * 5) {
      const next = await reader.next();
      assert.ok(next.done !== true, 'the stream went on past the cap');
      text += Buffer.from(next.value as Buffer).toString('utf8');
    }
    const during = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: keyed(key),
      body: chatBody({ stream: true }),
    });
    assert.equal(during.status, 409, 'not recording is not a reason to let a duplicate run beside it');
    assert.equal(during.json.code, 'idempotency_in_progress');
    release();
    for (let next = await reader.next(); next.done !== true; next = await reader.next())
      text += Buffer.from(next.value as Buffer).toString('utf8');
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    assert.equal(assembleContent(text), pieces.join(''));
    assert.equal(storedRows(key), 0);
    const retry = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(key));
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(mock.chatRequests().length, 2);
  });

  test('a JSON answer over the cap is not stored either; a small stream still is', async () => {
    const key = freshKey();
    const big = {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: pieces.join('') }, finish_reason: 'stop' }],
    };
    mock.enqueue({ kind: 'json', body: big }, { kind: 'json', body: big });
    const first = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(first.status, 200);
    assert.equal(storedRows(key), 0);
    const again = await call(`${gw.url}${CHAT_PATH}`, { method: 'POST', headers: keyed(key), body: chatBody() });
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.equal(again.text, first.text);
    assert.equal(mock.chatRequests().length, 2);

    const small = freshKey();
    mock.enqueue({ kind: 'stream', content: ['Hel', 'lo'] });
    const stream = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(small));
    const replay = await readStream(`${gw.url}${CHAT_PATH}`, chatBody({ stream: true }), keyed(small));
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.text, stream.text);
    assert.equal(storedRows(small), 1);
  });
});
