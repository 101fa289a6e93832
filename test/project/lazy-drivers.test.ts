import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startOpenAiUpstream } from '../helpers/upstreams/openai.js';
import { CHAT_PATH, authHeaders, chatBody, startGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

// CommonJS packages imported from ESM still go through the CJS loader, so require.cache shows what was loaded.
// Each test file runs in its own process, so nothing else here can have loaded ioredis.
const loaded = (name: string) =>
  Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes(`/node_modules/${name}/`));
// Node's own modules are listed in process.moduleLoadList once loaded (`NativeModule sqlite` for node:sqlite).
const builtinLoaded = (name: string) =>
  (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes(`NativeModule ${name}`);

test('the embedded default never loads the Redis driver, even with limits and idempotency in use', async () => {
  // The gateway's modules (imported above through the helpers) load the SQLite driver only when the store opens.
  assert.equal(builtinLoaded('sqlite'), false, 'node:sqlite is not loaded by importing the code');
  const mock = await startOpenAiUpstream();
  const gw = await startGateway({
    env: { UPSTREAM_BASE_URL: mock.baseUrl },
    configFile: { name: 'l.yaml', text: 'limits:\n  caller:\n    requests: { limit: 100, window_seconds: 60 }\n' },
  });
  try {
    const answer = await call(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: authHeaders({ 'idempotency-key': 'lazy-1' }),
      body: chatBody(),
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['ratelimit-limit'], '100');
    assert.equal(builtinLoaded('sqlite'), true, 'the check itself works: node:sqlite is loaded once the store is open');
    assert.equal(loaded('ioredis'), false, 'ioredis must not be loaded without REDIS_URL');
  } finally {
    await gw.close();
    await mock.close();
  }
});
