/**
 * Issue 41, attacked again: a token budget must not be switched off by what a caller sends. A caller that streams
 * without `max_tokens` is charged up front the prompt and our default guess of the completion (1,024 tokens), to be
 * corrected by the usage the upstream reports at the stream's end. On main, a caller that closed its connection
 * once the text it wanted had arrived, before the usage chunk, was never corrected: a stream that delivered 15,000
 * tokens of text cost a 10,000-token budget about 1,000, so the key could take ten times its budget an hour. Here,
 * over real sockets with the real app: the cut stream is charged at least what it delivered (four characters a
 * token, the gateway's one estimate), and the budget refuses the next call.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const HOUR_MS = 3_600_000;
const KEYS = '/v1/?route=keys';
const CHAT = '/v1/chat/completions';

function configText(mock: OpenAiUpstream): string {
  return JSON.stringify({
    auth: { key_cache_seconds: 0 },
    limits: { upstream_pause_max_seconds: 0 },
    upstreams: [{ name: 'oai', kind: 'openai', base_url: mock.baseUrl, api_key_env: 'CUT_UPSTREAM_KEY' }],
    models: [{ id: 'fast', upstream: 'oai', upstream_model: 'gpt-4o-mini' }],
  });
}

/** Streams a chat call and destroys the connection once `until` bytes of the answer arrived; resolves the bytes. */
function streamAndCut(base: string, key: string, body: string, until: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${base}${CHAT}`);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (data: string) => {
          text += data;
          if (text.length >= until) {
            req.destroy();
            resolve(text);
          }
        });
        res.on('end', () => reject(new Error(`the stream ended before it was cut: ${text.slice(0, 300)}`)));
      },
    );
    req.on('error', (error) => {
      if (!req.destroyed) reject(error);
    });
    req.end(body);
  });
}

describe('a stream cut before its usage is charged what it delivered', () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway;
  before(async () => {
    mock = await startOpenAiUpstream();
    gw = await startGateway({
      env: { CUT_UPSTREAM_KEY: 'sk-cut-upstream-0123456789' },
      configFile: { name: 'cut.json', text: configText(mock) },
    });
  });
  after(async () => {
    await gw.close();
    await mock.close();
  });

  const storedTat = (key: string): number =>
    (gw.store.db.prepare('SELECT tat_ms FROM rate_limits WHERE key = ?').get(key) as { tat_ms: number } | undefined)
      ?.tat_ms ?? 0;

  test('15,000 tokens of text delivered, the usage never read: a 10,000-token budget is spent and refuses the next call', async () => {
    const created = await call(`${gw.url}${KEYS}`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({
        name: 'cut',
        models: ['*'],
        routes: ['chat'],
        budget: { tokens: 10_000, period_seconds: 3600 },
      }),
    });
    assert.equal(created.status, 201, created.text);
    const { id, key } = created.json as { id: string; key: string };
    const budgetKey = `tokens:budget:key:${id}:${HOUR_MS}`;

    // 60,000 characters of text at once; the rest (and the usage after it) only 30 s later: the caller has gone.
    const text = 'word '.repeat(12_000);
    mock.enqueue({ kind: 'stream', content: [text, '.'], delayMs: 30_000 });
    const body = JSON.stringify({ model: 'fast', stream: true, messages: [{ role: 'user', content: 'Write a lot.' }] });
    const received = await streamAndCut(gw.url, key, body, text.length);
    assert.ok(received.includes('word word'), 'the text was delivered');

    // 15,000 tokens on a budget of 10,000 an hour (0.36 s a token): the window is 1.5 hours ahead, not 0.1.
    await waitFor('the cut stream is charged what it delivered', () => storedTat(budgetKey) > Date.now() + HOUR_MS);
    const next = await call(`${gw.url}${CHAT}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'More?' }] }),
    });
    assert.equal(next.status, 429, next.text);
    assert.equal(next.json.code, 'budget_exceeded');
    assert.equal(next.headers['ratelimit-remaining'], '0');
  });
});
