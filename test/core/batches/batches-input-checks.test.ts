/**
 * An OpenAI batch's input file is checked whole before any line is stored (issue 41): a file one line past
 * `batches.max_lines` (50,001 lines with the default 50,000) or with a bad line near its end fails the batch with
 * no line row left in the store; a line whose JSON repeats a key (`{"model":"a","model":"b"}`) is refused with
 * the line named, as an interactive call's body is, and never reaches the upstream; a UTF-8 byte order mark
 * before the first line is skipped.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { useGateway } from '../../helpers/gateway.js';
import { QUICK_BATCHES, makeKey, resultLines, untilEnded } from '../../helpers/batch-fixtures.js';

const chatLine = (customId: string, content = 'hi') =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] },
  });

describe('OpenAI batch input: checked whole before a line is stored', () => {
  const fixture = useGateway({ configFile: { name: 'gw.yaml', text: QUICK_BATCHES } });
  /** The line rows the store holds for a batch (the SQLite file the gateway writes). */
  const storedLines = (batchId: string): number =>
    Number(
      (
        fixture.gw.store.db.prepare('SELECT count(*) AS n FROM batch_lines WHERE batch_id = ?').get(batchId) as {
          n: number;
        }
      ).n,
    );
  const client = async (name: string) =>
    new OpenAI({ baseURL: `${fixture.gw.url}/v1`, apiKey: await makeKey(fixture.gw.url, name), maxRetries: 0 });
  const run = async (openai: OpenAI, content: Buffer) => {
    const input = await openai.files.create({ file: await toFile(content, 'input.jsonl'), purpose: 'batch' });
    const created = await openai.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    return untilEnded(`batch ${created.id} to end`, () => openai.batches.retrieve(created.id), 60_000);
  };

  test(
    '50,001 lines: the batch fails naming line 50,001, and no line row is stored',
    { timeout: 120_000 },
    async () => {
      const openai = await client('big');
      const lines = Array.from({ length: 50_001 }, (_, i) => chatLine(`c-${i}`));
      const ended = await run(openai, Buffer.from(`${lines.join('\n')}\n`));
      assert.equal(ended.status, 'failed');
      assert.deepEqual(
        ended.errors?.data?.map((e) => [e.code, e.line]),
        [['too_many_requests', 50_001]],
      );
      assert.equal(storedLines(ended.id), 0, 'a failing batch stores none of its lines');
      assert.equal(fixture.mock.chatRequests().length, 0);
    },
  );

  test('a bad line after 1,200 good ones: failed, no line row stored', async () => {
    const openai = await client('late-error');
    const lines = [...Array.from({ length: 1_200 }, (_, i) => chatLine(`c-${i}`)), '{"custom_id": "x", nope}'];
    const ended = await run(openai, Buffer.from(lines.join('\n')));
    assert.equal(ended.status, 'failed');
    assert.deepEqual(
      ended.errors?.data?.map((e) => [e.code, e.line]),
      [['invalid_json_line', 1_201]],
    );
    assert.equal(storedLines(ended.id), 0);
  });

  test('a line whose JSON repeats a key is refused with its line named; the upstream sees nothing', async () => {
    const openai = await client('dup');
    const twice =
      '{"custom_id":"b","method":"POST","url":"/v1/chat/completions",' +
      '"body":{"model":"forbidden-model","model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}}';
    const topTwice =
      '{"custom_id":"c","custom_id":"d","method":"POST","url":"/v1/chat/completions",' +
      '"body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}}';
    const ended = await run(openai, Buffer.from([chatLine('a'), twice, topTwice].join('\n')));
    assert.equal(ended.status, 'failed');
    const errors = ended.errors?.data ?? [];
    assert.deepEqual(
      errors.map((e) => [e.code, e.line]),
      [
        ['invalid_json_line', 2],
        ['invalid_json_line', 3],
      ],
    );
    assert.match(errors[0]?.message ?? '', /the key "model" appears more than once in body/);
    assert.match(errors[1]?.message ?? '', /the key "custom_id" appears more than once/);
    assert.equal(storedLines(ended.id), 0);
    assert.equal(fixture.mock.chatRequests().length, 0, 'no line ran, on either model');
  });

  test('a UTF-8 byte order mark before the first line is skipped: the batch completes', async () => {
    const openai = await client('bom');
    const text = `${[chatLine('first', 'one'), chatLine('second', 'two')].join('\r\n')}\r\n`;
    const ended = await run(openai, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    assert.equal(ended.status, 'completed', JSON.stringify(ended.errors));
    assert.deepEqual(ended.request_counts, { total: 2, completed: 2, failed: 0 });
    const output = await resultLines(openai, ended.output_file_id);
    assert.deepEqual(
      output.map((l) => [l.custom_id, l.response?.status_code]),
      [
        ['first', 200],
        ['second', 200],
      ],
    );
  });
});
