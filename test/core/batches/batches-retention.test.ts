/**
 * How long a batch's lines (each line's request and answer) are kept (issue 41, docs/files.md "How long batch
 * results are kept"): an OpenAI batch's until its output files expire, an Anthropic batch's until its results
 * do (`batches.anthropic_results_retention_days` after creation; then `GET .../results` is
 * `404 batch_results_expired` and the batch shows `archived_at`). The sweep of ended batches removes them, the
 * batch's record stays: here run by a gateway that starts again on the same data folder (the sweep runs once the
 * app is ready), and called on the store at the moment the output files expire.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { makeKey, untilEnded } from '../../helpers/batch-fixtures.js';
import { anthropicBatchRequest } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';
import { SqliteBatches } from '../../../src/store/sqlite/sqlite-batches.js';
import { sweepEndedLinesOnce } from '../../../src/wiring/batch-line-sweep-wiring.js';

/** Results kept 4 seconds after the batch's creation (a fraction of a day). */
const RETENTION_MS = 4_000;
const PATH = '/v1/messages/batches';

describe("batch lines and results are removed with their batch's retention", () => {
  let mock: OpenAiUpstream;
  let gw: TestGateway | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-batch-retention-'));
  const start = async () => {
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, DATA_DIR: dataDir },
      configFile: {
        name: 'gw.yaml',
        text: ['batches:', '  poll_ms: 20', `  anthropic_results_retention_days: ${RETENTION_MS / 86_400_000}`].join(
          '\n',
        ),
      },
    });
    return gw;
  };
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    await gw?.close();
    await mock.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const stored = (batchId: string) =>
    Number(
      (gw?.store.db.prepare('SELECT count(*) AS n FROM batch_lines WHERE batch_id = ?').get(batchId) as { n: number })
        .n,
    );

  test('OpenAI: the lines stay while the output files live, and go when they expire', async () => {
    const g = await start();
    const openai = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: await makeKey(g.url, 'o'), maxRetries: 0 });
    const lines = ['a', 'b', 'c'].map((id, i) =>
      JSON.stringify({
        custom_id: id,
        method: 'POST',
        url: '/v1/chat/completions',
        // The last line is refused by the chat route: the batch has an error file too.
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }], ...(i === 2 ? { n: 'x' } : {}) },
      }),
    );
    const input = await openai.files.create({
      file: await toFile(Buffer.from(lines.join('\n')), 'in.jsonl'),
      purpose: 'batch',
    });
    const created = await openai.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      output_expires_after: { anchor: 'created_at', seconds: 7_200 },
    });
    const ended = await untilEnded('the batch to complete', () => openai.batches.retrieve(created.id));
    assert.equal(ended.status, 'completed');
    assert.deepEqual(ended.request_counts, { total: 3, completed: 2, failed: 1 });
    const output = await openai.files.retrieve(ended.output_file_id ?? '');
    const errors = await openai.files.retrieve(ended.error_file_id ?? '');
    const filesUntilMs = Math.max(output.expires_at ?? 0, errors.expires_at ?? 0) * 1000;
    assert.ok(filesUntilMs > Date.now() + 7_000_000, 'the files live two hours');
    assert.equal(stored(created.id), 3);

    const store = new SqliteBatches(g.store.db);
    const never = new AbortController().signal;
    assert.deepEqual(await sweepEndedLinesOnce(store, filesUntilMs - 1, never), { lines: 0, batches: 0 });
    assert.equal(stored(created.id), 3, 'kept while the files live');
    assert.deepEqual(await sweepEndedLinesOnce(store, filesUntilMs, never), { lines: 3, batches: 1 });
    assert.equal(stored(created.id), 0, 'gone with the files');
    const after = await openai.batches.retrieve(created.id);
    assert.equal(after.status, 'completed', 'the batch itself stays');
    assert.deepEqual(after.request_counts, ended.request_counts);
    await g.close();
    gw = undefined;
  });

  test('Anthropic: results 404 batch_results_expired after the retention, lines swept at the next start', async () => {
    let g = await start();
    const headers = authHeaders({ 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
    const createdAnswer = await call(`${g.url}${PATH}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ requests: [anthropicBatchRequest(0), anthropicBatchRequest(1)] }),
    });
    assert.equal(createdAnswer.status, 200, createdAnswer.text);
    const id = createdAnswer.json.id as string;
    const createdMs = Date.parse(createdAnswer.json.created_at as string);
    const ended = await waitForValue(
      'the batch to end',
      async () => (await call(`${g.url}${PATH}/${id}`, { headers })).json,
      (b) => b.processing_status === 'ended',
    );
    assert.equal(ended.archived_at, null);
    const results = await call(`${g.url}${PATH}/${id}/results`, { headers });
    assert.equal(results.status, 200, results.text);
    assert.equal(results.text.trimEnd().split('\n').length, 2);
    assert.equal(stored(id), 2);

    await waitFor('the retention to pass', () => Date.now() >= createdMs + RETENTION_MS + 1_000, 15_000);
    const expired = await call(`${g.url}${PATH}/${id}/results`, { headers });
    assert.equal(expired.status, 404, expired.text);
    assert.equal(expired.json.code, 'batch_results_expired');
    assert.equal(expired.json.details?.batch_id, id);
    const expiredAt = Date.parse(expired.json.details?.results_expired_at as string);
    assert.ok(Math.abs(expiredAt - (createdMs + RETENTION_MS)) < 1_000, `${expiredAt} vs ${createdMs}`);
    assert.equal((expired.json as { type?: string }).type, 'error', "Anthropic's error shape");
    const batch = await call(`${g.url}${PATH}/${id}`, { headers });
    assert.equal(batch.status, 200, 'the batch itself can still be read');
    assert.equal(batch.json.archived_at, expired.json.details?.results_expired_at);

    // The sweep runs once the app is ready: a start on the same data folder removes the lines.
    await g.close();
    g = await start();
    await waitFor('the lines swept', () => stored(id) === 0);
    await waitFor('the sweep logged', () => g.logLines.some((l) => l.includes('removed the lines of ended batches')));
    const again = await call(`${g.url}${PATH}/${id}`, { headers });
    assert.equal(again.json.processing_status, 'ended');
    assert.deepEqual(again.json.request_counts, ended.request_counts);
  });
});
