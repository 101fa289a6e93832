/**
 * The access line is serialized by hand (issue 33): it must be the line pino wrote from the same fields, byte for
 * byte apart from the time, secrets scrubbed the same way; and the default destination is asynchronous and
 * bounded: a disk that cannot keep up loses lines (counted, said once), never a call's time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogger, droppedLogLines, writeAccessLine } from '../../src/observability/logger.js';
import { accessLineFields } from '../../src/http/request-end.js';
import { redactUrl } from '../../src/secrets/redact.js';
import { USAGE_ANOMALIES } from '../../src/providers/provider-contract.js';
import type { RequestRecord } from '../../src/request/request-record.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'sk-known-upstream-secret-1234567890';

/** The line as the gateway wrote it before issue 33: pino's generic walk over these fields. */
function oldLine(log: pino.Logger, record: RequestRecord, dropped: readonly string[] | undefined): void {
  const usage = record.usage;
  log.info(
    {
      request_id: record.id,
      method: record.method,
      url: redactUrl(record.url),
      route: record.route,
      status: record.status,
      ms: Math.round(record.latencyMs * 100) / 100,
      caller: record.caller,
      model: record.model,
      upstream: record.upstream,
      prompt_tokens: usage?.prompt_tokens,
      completion_tokens: usage?.completion_tokens,
      cache_read_tokens: usage?.cache_read_tokens,
      cache_write_tokens: usage?.cache_write_tokens,
      cache_write_1h_tokens: usage?.cache_write_1h_tokens,
      reasoning_tokens: usage?.reasoning_tokens,
      cost_usd: usage?.cost_usd,
      cache_savings_usd: usage?.cache_savings_usd,
      usage_anomaly: usage?.[USAGE_ANOMALIES],
      code: record.code,
      dropped_fields: dropped?.join(','),
      replay_not_stored: record.replayNotStored,
      cache: record.cacheResult,
    },
    'request',
  );
}

function record(extra: Partial<RequestRecord>): RequestRecord {
  return {
    method: 'POST',
    route: 'chat',
    id: 'req-1',
    traceparent: undefined,
    status: 200,
    latencyMs: 12.34567,
    endedAtMs: Date.now(),
    caller: 'team-a',
    model: undefined,
    upstream: undefined,
    stream: false,
    url: '/v1/chat/completions',
    usage: undefined,
    code: undefined,
    errorDetails: undefined,
    body: undefined,
    answerText: undefined,
    firstByteMs: undefined,
    attempts: 1,
    replayed: false,
    cacheHit: false,
    cacheResult: undefined,
    replayNotStored: undefined,
    trace: undefined,
    ...extra,
  } as RequestRecord;
}

const withoutTime = (line: string) => line.replace(/,"time":"[^"]*"/, '');

test('the hand-serialized access line is the line pino wrote from the same fields, byte for byte', () => {
  const usage = {
    prompt_tokens: 120,
    completion_tokens: 7,
    total_tokens: 127,
    cache_read_tokens: 100,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 3,
    reasoning_tokens: 2,
    cost_usd: 0.000123,
    cache_savings_usd: -0.5,
    [USAGE_ANOMALIES]: ['negative', 'too_large'],
  };
  const records = [
    record({}),
    record({ route: undefined, status: 404, code: 'not_found' as never, latencyMs: 0.001 }),
    record({
      id: `x-${SECRET}-"quoted"\\\n\u2028é`,
      url: `/v1/chat/completions?api_key=${SECRET}&x=1`,
      model: `model-${SECRET}`,
      upstream: 'openai "main"',
      usage: usage as never,
      cacheResult: 'miss',
      replayNotStored: 'too_large',
      status: 499,
      code: 'client_closed_request' as never,
      latencyMs: Number.NaN,
    }),
  ];
  for (const base of [undefined, { worker: 2 }]) {
    for (const [index, r] of records.entries()) {
      const dropped = index === 2 ? ['logprobs', `n-${SECRET}`] : undefined;
      const before: string[] = [];
      const after: string[] = [];
      const old = createLogger({
        level: 'info',
        secrets: [SECRET],
        base,
        destination: { write: (l) => void before.push(l) },
      });
      const now = createLogger({
        level: 'info',
        secrets: [SECRET],
        base,
        destination: { write: (l) => void after.push(l) },
      });
      oldLine(old, r, dropped);
      writeAccessLine(now, accessLineFields(now, r, dropped));
      assert.equal(after.length, 1);
      assert.equal(withoutTime(after[0] ?? ''), withoutTime(before[0] ?? ''));
      assert.ok(!(after[0] ?? '').includes(SECRET), 'a known secret is scrubbed from the line');
      assert.match(after[0] ?? '', /"time":"\d{4}-\d\d-\d\dT[\d:.]+Z"/);
    }
  }
});

test('no access line below the info level', () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'warn', secrets: [], destination: { write: (l) => void lines.push(l) } });
  writeAccessLine(log, accessLineFields(log, record({}), undefined));
  assert.deepEqual(lines, []);
});

test('a destination that cannot keep up drops lines without blocking, counts them, says so once; flushing writes the rest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'access-line-'));
  const file = join(dir, 'log');
  // A tiny bound: every line written while the first write is still in flight and the buffer is full is dropped.
  const destination = pino.destination({ dest: file, sync: false, maxLength: 2048, mkdir: true });
  await new Promise((resolve) => destination.once('ready', resolve));
  const log = createLogger({ level: 'info', secrets: [], destination });
  const droppedBefore = droppedLogLines();
  const started = performance.now();
  for (let i = 0; i < 500; i++) writeAccessLine(log, accessLineFields(log, record({ id: `req-${i}` }), undefined));
  const elapsed = performance.now() - started;
  const dropped = droppedLogLines() - droppedBefore;
  assert.ok(dropped > 0, 'lines past the bound are dropped');
  assert.ok(dropped < 500, 'the lines that fit are kept');
  assert.ok(elapsed < 1000, `500 lines took ${elapsed} ms: a write must not wait for the disk`);
  // Said once, when the buffer has drained; more drops after that do not repeat it.
  await waitFor('the one line about dropped lines', () =>
    readFileSync(file, 'utf8').includes('log destination cannot keep up'),
  );
  for (let i = 0; i < 500; i++) writeAccessLine(log, accessLineFields(log, record({ id: `late-${i}` }), undefined));
  // Read before the next line, which may itself be dropped (and counted) while the buffer is still full.
  const droppedRequests = droppedLogLines() - droppedBefore;
  log.info('last line');
  // What shutdown does before a process.exit: the buffered lines reach the file.
  destination.flushSync();
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; request_id?: string });
  assert.equal(lines.filter((l) => l.msg.startsWith('log destination cannot keep up')).length, 1);
  const requests = lines.filter((l) => l.msg === 'request');
  assert.equal(requests.length + droppedRequests, 1000, 'every line was either written or counted');
  destination.end();
});
