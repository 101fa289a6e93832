/**
 * A batch of 10,000 lines finishes across a gateway restart: the real process is killed (SIGKILL) mid-batch and
 * started again on the same data directory. Every line is answered exactly once in the results (one result per
 * custom_id, all succeeded); the upstream saw every line, and a line twice only if it was in flight at the kill
 * (at most `concurrency` of them: a line whose answer was recorded is never run again).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMockUpstream, type MockUpstream } from './helpers/mock-openai-upstream.js';
import {
  bearer,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from './helpers/spawn-gateway.js';
import { waitFor, waitForValue } from './helpers/wait.js';

const TOKEN = 'batch-restart-admin-token-0123456789';
const LINES = 10_000;
const CONCURRENCY = 16;

describe('a batch of 10,000 lines across a kill -9 and a restart', () => {
  let mock: MockUpstream;
  let configFile: string;
  let dataDir: string;
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'warn',
  });
  before(async () => {
    mock = await startMockUpstream();
    dataDir = makeTempDir('gw-batch-restart-');
    configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      [
        'server:',
        `  body_limit_bytes: ${8 * 1024 * 1024}`,
        'usage:',
        '  enabled: false',
        'batches:',
        `  concurrency: ${CONCURRENCY}`,
        '  poll_ms: 20',
        // A killed runner's claim runs out after this; the restarted process then takes the batch over.
        '  lease_seconds: 1',
      ].join('\n'),
    );
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  const content = (r: { json: unknown }) =>
    (r.json as { messages: Array<{ content: string }> }).messages.at(-1)?.content ?? '';

  test('every line answered exactly once', { timeout: 180_000 }, async (t) => {
    const startedMs = Date.now();
    let gw: GatewayProcess = await startGatewayProcess({ env: env(), dataDir });
    const requests = Array.from({ length: LINES }, (_, i) => ({
      custom_id: `line-${i}`,
      params: { model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: `n${i}` }] },
    }));
    const created = await httpCall(`${gw.url}/v1/messages/batches`, {
      method: 'POST',
      headers: bearer(TOKEN, { 'content-type': 'application/json' }),
      body: JSON.stringify({ requests }),
    });
    assert.equal(created.status, 200, created.text);
    const id = (JSON.parse(created.text) as { id: string }).id;

    await waitFor('a fifth of the lines at the upstream', () => mock.chatRequests().length >= LINES / 5, 60_000);
    gw.signal('SIGKILL');
    await gw.waitForExit(10_000);
    const atKill = mock.chatRequests().length;
    assert.ok(atKill < LINES, `the batch was not cut: ${atKill} lines answered before the kill`);

    gw = await startGatewayProcess({ env: env(), dataDir });
    const get = async () =>
      JSON.parse((await httpCall(`${gw.url}/v1/messages/batches/${id}`, { headers: bearer(TOKEN) })).text) as {
        processing_status: string;
        request_counts: Record<string, number>;
      };
    const ended = await waitForValue('the batch to end', get, (b) => b.processing_status === 'ended', 120_000);
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: LINES, errored: 0, canceled: 0, expired: 0 });

    const results = await httpCall(`${gw.url}/v1/messages/batches/${id}/results`, { headers: bearer(TOKEN) });
    assert.equal(results.status, 200);
    const lines = results.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; result: { type: string } });
    assert.equal(lines.length, LINES);
    assert.equal(new Set(lines.map((l) => l.custom_id)).size, LINES);
    assert.ok(lines.every((l) => l.result.type === 'succeeded'));

    // The upstream saw every line; a line twice only if it was in flight when the process died.
    const seen = mock.chatRequests().map(content);
    assert.equal(new Set(seen).size, LINES);
    const twice = seen.length - LINES;
    assert.ok(twice >= 0 && twice <= CONCURRENCY, `${twice} lines ran twice (at most ${CONCURRENCY} were in flight)`);
    t.diagnostic(
      `${LINES} lines in ${Date.now() - startedMs} ms (two starts included); ${atKill} answered before the kill; ${twice} ran twice`,
    );
    await gw.kill();
  });
});
