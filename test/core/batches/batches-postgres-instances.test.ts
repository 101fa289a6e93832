/**
 * Batches across instances (issue 34): two gateway processes on separate data folders share one PostgreSQL
 * (`files.store: postgres`, which batches follow). Instance A runs a 2,000-line batch and renews its lease while
 * B is up and claiming; A is killed (SIGKILL) mid-batch and B takes the batch over when the lease runs out. Every
 * line is in the output file once; the upstream saw every line, a line twice only if it was in flight at the kill.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import pg from 'pg';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { killAllGateways, makeTempDir, removeTempDirs, startGatewayProcess } from '../../helpers/spawn-gateway.js';
import { postgresSkipReason } from '../../helpers/services.js';
import { scratchPostgresSchema } from '../../helpers/scratch-postgres-schema.js';
import { resultLines, chatBatchLines, createChatBatch } from '../../helpers/batch-fixtures.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';

const TOKEN = 'batch-pg-instances-admin-token-0123456789';
const LINES = 2_000;
const CONCURRENCY = 8;
const skip = await postgresSkipReason();

describe('batches in PostgreSQL: two instances, a lease renewed, then taken over after a kill -9', { skip }, () => {
  let mock: OpenAiUpstream;
  let configFile: string;
  let db: pg.Client;
  // A schema of its own: a batch another run left unfinished in the shared database is not claimed here.
  let scratch: Awaited<ReturnType<typeof scratchPostgresSchema>>;
  before(async () => {
    scratch = await scratchPostgresSchema();
    mock = await startOpenAiUpstream();
    mock.defaultBehavior = { kind: 'json', delayMs: 15 };
    configFile = join(makeTempDir('gw-batch-pg-conf-'), 'gateway.yaml');
    writeFileSync(
      configFile,
      ['usage:', '  enabled: false', 'files:', '  store: postgres', 'batches:', `  concurrency: ${CONCURRENCY}`]
        .concat(['  poll_ms: 20', '  lease_seconds: 3'])
        .join('\n'),
    );
    db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await db?.end();
    await scratch?.drop();
    await mock?.close();
  });
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    DATABASE_URL: scratch.url,
    LOG_LEVEL: 'warn',
  });
  const lease = async (id: string) => {
    const { rows } = await db.query<{ lease_holder: string | null; lease_until_ms: string }>(
      'SELECT lease_holder, lease_until_ms FROM gw_batches WHERE id = $1',
      [id],
    );
    return { holder: rows[0]?.lease_holder ?? null, until: Number(rows[0]?.lease_until_ms ?? 0) };
  };
  const content = (r: { json: unknown }) =>
    (r.json as { messages: Array<{ content: string }> }).messages.at(-1)?.content ?? '';
  /** Each line the upstream saw more than once: when each copy arrived, against the kill (for a failure's message). */
  const repeats = (killedMs: number) => {
    const arrivals = new Map<string, number[]>();
    for (const r of mock.chatRequests()) arrivals.set(content(r), [...(arrivals.get(content(r)) ?? []), r.receivedAt]);
    return [...arrivals]
      .filter(([, at]) => at.length > 1)
      .map(([line, at]) => `${line} at ${at.map((ms) => `${ms - killedMs} ms`).join(', ')} after the kill`);
  };

  test('every line answered exactly once', { timeout: 120_000 }, async (t) => {
    const a = await startGatewayProcess({ env: env(), dataDir: makeTempDir('gw-batch-pg-a-') });
    const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    const tag = `${Date.now()}`;
    const jsonl = chatBatchLines(
      LINES,
      (i) => `line-${i}`,
      (i) => `${tag}-${i}`,
    );
    const created = await createChatBatch(client(a.url), jsonl, 'two-thousand.jsonl');
    await waitFor('A to start the batch', () => mock.chatRequests().length >= 50, 30_000);
    const first = await lease(created.id);
    assert.ok(first.holder, 'A holds the lease');

    // B is up and claims every 20 ms; A keeps the lease by renewing it (every second) past its first term. A 3 s
    // lease: with 1 s, a loaded CI machine delayed A's renewal past its term and B took the lease legitimately.
    const b = await startGatewayProcess({ env: env(), dataDir: makeTempDir('gw-batch-pg-b-') });
    const renewed = await waitForValue(
      'the lease renewed past its first term',
      () => lease(created.id),
      (l) => l.until >= first.until + 1000,
      20_000,
    );
    assert.equal(renewed.holder, first.holder, 'still A: B did not take a live lease');

    const atKill = mock.chatRequests().length;
    assert.ok(atKill < LINES, `the batch was not cut: ${atKill} lines answered before the kill`);
    const killedMs = Date.now();
    a.signal('SIGKILL');
    await a.waitForExit(10_000);

    const openai = client(b.url);
    const ended = await waitForValue(
      'B to finish the batch',
      () => openai.batches.retrieve(created.id),
      (r) => r.status === 'completed',
      90_000,
    );
    assert.deepEqual(ended.request_counts, { total: LINES, completed: LINES, failed: 0 });
    const takenOver = await lease(created.id);
    assert.notEqual(takenOver.holder, first.holder, 'B took the batch over');

    const out = await resultLines<{ custom_id: string; response: { status_code: number } }>(
      openai,
      ended.output_file_id,
    );
    assert.deepEqual(
      out.map((l) => l.custom_id),
      Array.from({ length: LINES }, (_, i) => `line-${i}`),
    );
    assert.ok(out.every((l) => l.response.status_code === 200));

    const seen = mock
      .chatRequests()
      .map(content)
      .filter((c) => c.startsWith(`${tag}-`));
    assert.equal(new Set(seen).size, LINES, 'the upstream saw every line');
    const twice = seen.length - LINES;
    assert.ok(
      twice >= 0 && twice <= CONCURRENCY,
      `${twice} lines ran twice (at most ${CONCURRENCY} were in flight): ${repeats(killedMs).join('; ')}; A's log ends: ${a.stdout().slice(-2000)}`,
    );
    t.diagnostic(`${LINES} lines; ${atKill} at the upstream before the kill; ${twice} ran twice`);
    await b.kill();
  });
});
