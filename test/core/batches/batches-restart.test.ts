/**
 * A batch of 10,000 lines finishes across a gateway restart: the real process is killed (SIGKILL) mid-batch and
 * started again on the same data directory. Every line is answered exactly once in the output file (one answer
 * per custom_id, all 200); the upstream saw every line, and a line twice only if it was in flight at the kill
 * (at most `concurrency` of them: a line whose answer was recorded is never run again).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import OpenAI from 'openai';
import {
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../../helpers/spawn-gateway.js';
import { resultLines, chatBatchLines, createChatBatch } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';

const TOKEN = 'batch-restart-admin-token-0123456789';
const LINES = 10_000;
const CONCURRENCY = 16;

describe('batches across processes: a kill -9 and a restart, two workers on one data folder', () => {
  let mock: OpenAiUpstream;
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
    mock = await startOpenAiUpstream();
    dataDir = makeTempDir('gw-batch-restart-');
    configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      [
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
    const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    const jsonl = chatBatchLines(
      LINES,
      (i) => `line-${i}`,
      (i) => `n${i}`,
    );
    const created = await createChatBatch(client(gw.url), jsonl, 'ten-thousand.jsonl');

    await waitFor('a fifth of the lines at the upstream', () => mock.chatRequests().length >= LINES / 5, 60_000);
    gw.signal('SIGKILL');
    await gw.waitForExit(10_000);
    const atKill = mock.chatRequests().length;
    assert.ok(atKill < LINES, `the batch was not cut: ${atKill} lines answered before the kill`);

    gw = await startGatewayProcess({ env: env(), dataDir });
    const openai = client(gw.url);
    const ended = await waitForValue(
      'the batch to complete',
      () => openai.batches.retrieve(created.id),
      (b) => b.status === 'completed',
      120_000,
    );
    assert.deepEqual(ended.request_counts, { total: LINES, completed: LINES, failed: 0 });
    assert.equal(ended.error_file_id, null);

    // The output file: one answer per line, each custom_id once, in the input's order.
    const lines = await resultLines<{
      custom_id: string;
      response: { status_code: number; body: { usage: { prompt_tokens: number; completion_tokens: number } } };
    }>(openai, ended.output_file_id);
    assert.equal(lines.length, LINES);
    // The batch's usage, summed as lines were recorded on both sides of the kill, is its answers' usage exactly:
    // no line counted twice (one in flight at the kill runs again, but is recorded once), none lost.
    const sum = (pick: (u: { prompt_tokens: number; completion_tokens: number }) => number) =>
      lines.reduce((n, l) => n + pick(l.response.body.usage), 0);
    assert.equal(
      ended.usage?.input_tokens,
      sum((u) => u.prompt_tokens),
    );
    assert.equal(
      ended.usage?.output_tokens,
      sum((u) => u.completion_tokens),
    );
    assert.equal(ended.model, 'gpt-4o-mini');
    assert.deepEqual(
      lines.map((l) => l.custom_id),
      Array.from({ length: LINES }, (_, i) => `line-${i}`),
    );
    assert.ok(lines.every((l) => l.response.status_code === 200));

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
  test(
    'two worker processes on one data folder: the lease gives each batch one runner, no line runs twice',
    {
      timeout: 120_000,
    },
    async () => {
      mock.reset();
      const gw = await startGatewayProcess({
        env: { ...env(), WORKERS: '2' },
        dataDir: makeTempDir('gw-batch-workers-'),
      });
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const count = 2_000;
      // Four batches, created through whichever worker the connection lands on: both runners claim work.
      const ids: string[] = [];
      for (let b = 0; b < 4; b++) {
        const jsonl = chatBatchLines(count / 4, (i) => `b${b}-${i}`);
        ids.push((await createChatBatch(openai, jsonl, `b${b}.jsonl`)).id);
      }
      for (const id of ids)
        await waitForValue(
          'each batch to complete',
          () => openai.batches.retrieve(id),
          (b) => b.status === 'completed',
          60_000,
        );
      const seen = mock.chatRequests().map(content);
      assert.equal(seen.length, count, 'each line reached the upstream exactly once');
      assert.equal(new Set(seen).size, count);
      await gw.kill();
    },
  );
  test(
    'SIGTERM: the lines in flight finish and are recorded, the lease is given back, the process exits 0',
    {
      timeout: 60_000,
    },
    async () => {
      mock.reset();
      mock.defaultBehavior = { kind: 'json', delayMs: 100 };
      const dir = makeTempDir('gw-batch-term-');
      const gw = await startGatewayProcess({ env: env(), dataDir: dir });
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
      const created = await createChatBatch(
        openai,
        chatBatchLines(400, (i) => `t${i}`),
        't.jsonl',
      );
      await waitFor('some lines at the upstream', () => mock.chatRequests().length >= 40, 30_000);
      gw.signal('SIGTERM');
      assert.deepEqual(await gw.waitForExit(20_000), { code: 0, signal: null });
      const db = new DatabaseSync(join(dir, 'gateway.db'), { readOnly: true });
      const batch = db.prepare('SELECT status, succeeded, lease_holder FROM batches WHERE id = ?').get(created.id) as {
        status: string;
        succeeded: number;
        lease_holder: string | null;
      };
      db.close();
      assert.equal(batch.status, 'in_progress');
      assert.equal(batch.lease_holder, null);
      // Every call the upstream received was recorded: nothing was cut and left to run again.
      assert.equal(batch.succeeded, mock.chatRequests().length);
      mock.defaultBehavior = { kind: 'json' };
    },
  );
});
