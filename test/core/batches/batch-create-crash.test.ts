/**
 * An Anthropic batch create cut off by a crash: the real process is killed (SIGKILL) while a create's body is
 * still streaming in and part of its lines are stored (before any batch record: routes read the body as a stream),
 * then started again on the same data directory with batches.create_grace_seconds: 1. The sweep of abandoned
 * creates removes those lines from the SQLite file; a create that finished before the kill keeps its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { killAllGateways, makeTempDir, removeTempDirs, startGatewayProcess } from '../../helpers/spawn-gateway.js';
import { waitFor, waitForValue } from '../../helpers/wait.js';
import { anthropicBatchRequest } from '../../helpers/batch-fixtures.js';

const TOKEN = 'batch-create-crash-admin-token-0123456789';
const PATH = '/v1/messages/batches';
const GRACE_SECONDS = 1;

describe('an Anthropic batch create cut off by kill -9', () => {
  let mock: OpenAiUpstream;
  let configFile: string;
  let dataDir: string;
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'info',
  });
  before(async () => {
    mock = await startOpenAiUpstream();
    dataDir = makeTempDir('gw-batch-create-crash-');
    configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      ['usage:', '  enabled: false', 'batches:', `  create_grace_seconds: ${GRACE_SECONDS}`].join('\n'),
    );
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  /** Lines per batch id in the gateway's SQLite file, and which of those ids have a batch record. */
  const stored = (): { lines: Map<string, number>; batches: Set<string> } => {
    const db = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
    try {
      const rows = db.prepare('SELECT batch_id, count(*) AS n FROM batch_lines GROUP BY batch_id').all() as Array<{
        batch_id: string;
        n: number;
      }>;
      const ids = db.prepare('SELECT id FROM batches').all() as Array<{ id: string }>;
      return { lines: new Map(rows.map((r) => [r.batch_id, Number(r.n)])), batches: new Set(ids.map((r) => r.id)) };
    } finally {
      db.close();
    }
  };
  const orphans = () => {
    const { lines, batches } = stored();
    return [...lines].filter(([id]) => !batches.has(id));
  };

  test(
    'the lines it stored are swept after a restart; a finished create keeps its lines',
    { timeout: 120_000 },
    async () => {
      const gw = await startGatewayProcess({ env: env(), dataDir });
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      // A create that finishes: its lines belong to a batch and are never swept.
      const done = await fetch(`${gw.url}${PATH}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          requests: [anthropicBatchRequest(0), anthropicBatchRequest(1), anthropicBatchRequest(2)],
        }),
      });
      assert.equal(done.status, 200, await done.clone().text());
      const finished = ((await done.json()) as { id: string }).id;

      // A create whose body is still coming when the process dies: some of its lines are stored, no record.
      const req = httpRequest(`${gw.url}${PATH}`, {
        method: 'POST',
        headers: { ...headers, 'transfer-encoding': 'chunked' },
      });
      req.on('error', () => undefined);
      req.write('{"requests": [');
      for (let i = 0; i < 2_000; i++) req.write(`${i === 0 ? '' : ','}${JSON.stringify(anthropicBatchRequest(i))}`);
      const [orphan] = await waitForValue('lines of the unfinished create in the file', orphans, (o) => o.length > 0);
      // Its mark was written before its first line, so it is older than the grace once this much time has passed.
      const sawLinesMs = Date.now();
      assert.ok(orphan && orphan[1] > 0);
      gw.signal('SIGKILL');
      const exit = await gw.waitForExit(10_000);
      assert.equal(exit.signal, 'SIGKILL');
      req.destroy();
      const [id] = orphan;
      const atKill = stored();
      const left = atKill.lines.get(id) ?? 0;
      assert.ok(left > 0, 'the kill left lines with no batch record');
      assert.ok(!atKill.batches.has(id));

      await waitFor('the grace to pass', () => Date.now() > sawLinesMs + GRACE_SECONDS * 1000 + 100, 10_000);
      const again = await startGatewayProcess({ env: env(), dataDir });
      await waitFor('the orphan lines swept', () => !stored().lines.has(id), 20_000);
      assert.equal(stored().lines.get(finished), 3, 'the finished create keeps its lines');
      assert.deepEqual(orphans(), []);
      await waitFor('the sweep logged', () => again.stdout().includes('removed the lines of batch creates'));
      const logged = again
        .stdout()
        .split('\n')
        .filter((line) => line.includes('removed the lines of batch creates'))
        .map((line) => JSON.parse(line) as { lines: number; creates: number });
      assert.deepEqual(
        logged.map((line) => [line.lines, line.creates]),
        [[left, 1]],
      );
      await again.kill();
    },
  );
});
