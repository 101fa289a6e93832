/**
 * A batch line whose run throws an unexpected exception (not an answer, not a GatewayError) is answered in the
 * batch's error file with the registry's `internal_error` and a fixed message naming the batch and custom_id:
 * the exception's own text (a file path, a parser's message quoting internal data) is logged, never written to
 * the owner's output (issue 41). The exception is made real: a batch created by one gateway (`batches.run:
 * false`) whose stored principal is then unreadable, run by a second gateway on the same data folder.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { startGateway, type TestGateway } from '../../helpers/gateway.js';
import { makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';

/** Internal text the exception carries (V8 quotes a short unparsable text whole): it must reach the log only. */
const INTERNAL = 'srv-7f3a';

describe('a batch line that fails unexpectedly', () => {
  let mock: OpenAiUpstream;
  const gateways: TestGateway[] = [];
  // The data folder both gateways share (a TestGateway removes only its own temporary folder).
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-line-failure-'));
  before(async () => {
    mock = await startOpenAiUpstream();
  });
  after(async () => {
    for (const gw of gateways) await gw.close();
    await mock.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const start = async (run: boolean) => {
    const gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, DATA_DIR: dataDir },
      configFile: { name: 'gw.yaml', text: ['batches:', `  run: ${run}`, '  poll_ms: 20'].join('\n') },
    });
    gateways.push(gw);
    return gw;
  };

  test('its output line says internal_error with a fixed text; the real error is in the log', async () => {
    const creator = await start(false);
    const apiKey = await makeKey(creator.url, 'owner');
    const openai = new OpenAI({ baseURL: `${creator.url}/v1`, apiKey, maxRetries: 0 });
    const line = JSON.stringify({
      custom_id: 'only',
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
    const input = await openai.files.create({ file: await toFile(Buffer.from(line), 'in.jsonl'), purpose: 'batch' });
    const created = await openai.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    // Unreadable where the runner reads it: parsing it throws a SyntaxError that quotes it.
    creator.store.db.prepare('UPDATE batches SET principal = ? WHERE id = ?').run(`!${INTERNAL}`, created.id);
    await creator.close();
    gateways.pop();

    const runner = await start(true);
    const client = new OpenAI({ baseURL: `${runner.url}/v1`, apiKey, maxRetries: 0 });
    const ended = await untilEnded('the batch to end', () => client.batches.retrieve(created.id));
    assert.equal(ended.status, 'completed');
    assert.deepEqual(ended.request_counts, { total: 1, completed: 0, failed: 1 });
    const errorFile = await (await client.files.content(ended.error_file_id ?? '')).text();
    assert.ok(!errorFile.includes(INTERNAL), `internal text in the error file: ${errorFile}`);
    assert.ok(!/SyntaxError|not valid JSON|Unexpected token/.test(errorFile), errorFile);
    const [result] = await resultLines(client, ended.error_file_id);
    assert.equal(result?.custom_id, 'only');
    assert.equal(result?.response?.status_code, 500);
    assert.deepEqual(result?.response?.body, {
      code: 'internal_error',
      message:
        'The gateway failed unexpectedly running this request; its batch_id and custom_id identify it in the logs.',
      details: { batch_id: created.id, custom_id: 'only' },
    });
    const logged = runner.logLines.find((l) => l.includes('a line failed with an unexpected error'));
    assert.ok(logged, 'the failure is logged');
    assert.ok(logged.includes(INTERNAL), 'with its real message');
    assert.ok(logged.includes(created.id));
    assert.equal(mock.chatRequests().length, 0);
  });
});
