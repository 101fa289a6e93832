/** What the files routes share with every other route: records, limits, rights; and parts that survive a restart. */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { SqliteUsageStore } from '../../../src/store/sqlite/sqlite-usage.js';
import { ADMIN_TOKEN, authHeaders, startGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { waitForValue } from '../../helpers/wait.js';

describe('files: records, limits, rights, restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-files-restart-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('parts recorded before a restart are still there after it: the upload completes on the new process', async () => {
    const whole = randomBytes(200_000);
    const first = await startGateway({ env: { DATA_DIR: dataDir } });
    const before = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const upload = await before.uploads.create({
      filename: 'r.bin',
      purpose: 'batch',
      bytes: whole.length,
      mime_type: 'application/octet-stream',
    });
    const p1 = await before.uploads.parts.create(upload.id, { data: await toFile(whole.subarray(0, 120_000), 'a') });
    await first.close();

    const second = await startGateway({ env: { DATA_DIR: dataDir } });
    try {
      const client = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
      const p2 = await client.uploads.parts.create(upload.id, { data: await toFile(whole.subarray(120_000), 'b') });
      const done = await client.uploads.complete(upload.id, { part_ids: [p1.id, p2.id] });
      assert.equal(done.status, 'completed');
      const content = Buffer.from(await (await client.files.content(done.file!.id)).arrayBuffer());
      assert.ok(content.equals(whole));
    } finally {
      await second.close();
    }
  });

  test('each call is a usage record of the route files; the caller limit applies with RateLimit headers; the right is needed', async () => {
    const gw = await startGateway({
      configFile: { name: 'limits.yaml', text: 'limits:\n  caller:\n    requests: { limit: 3, window_seconds: 60 }\n' },
    });
    try {
      const listed = await call(`${gw.url}/v1/files`, { headers: authHeaders() });
      assert.equal(listed.status, 200);
      assert.ok(listed.headers['ratelimit-policy'] ?? listed.headers.ratelimit, 'RateLimit headers on a files call');
      const requestId = String(listed.headers['x-request-id']);
      const usage = new SqliteUsageStore(gw.store.db);
      const record = await waitForValue(
        'the usage record of the files call',
        async () => (await usage.recent(100, false)).find((r) => r.requestId === requestId),
        (r) => r !== undefined,
      );
      assert.equal(record?.route, 'files');
      assert.equal(record?.caller, 'admin');
      assert.equal(record?.promptTokens, null);
      await call(`${gw.url}/v1/files`, { headers: authHeaders() });
      await call(`${gw.url}/v1/files`, { headers: authHeaders() });
      const limited = await call(`${gw.url}/v1/files`, { headers: authHeaders() });
      assert.equal(limited.status, 429);
      assert.ok(limited.headers['retry-after']);

      const key = await call(`${gw.url}/v1/?route=keys`, {
        method: 'POST',
        headers: authHeaders(),
        disclosesKey: true,
        body: JSON.stringify({ name: 'chat-only', models: ['*'], routes: ['chat'] }),
      });
      const chatOnly = await call(`${gw.url}/v1/files`, {
        headers: authHeaders({ authorization: `Bearer ${(key.json as { key: string }).key}` }),
      });
      assert.equal(chatOnly.status, 403);
      assert.equal(
        (chatOnly.json.error as { code?: string } | undefined)?.code ?? chatOnly.json.code,
        'route_not_allowed',
      );
    } finally {
      await gw.close();
    }
  });
});
